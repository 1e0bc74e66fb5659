//! `headroom bench mmio TARGET` and `headroom bench mem`: CPU loads and stores on a PCI BAR
//! (or any file) by width, with DRAM beside them as the yardstick (seeds/000 section 5).
//!
//! This file parses the flags, has `bench::mmio::target` check and map the region (read-only
//! unless `--write` names the exact BDF:BAR) and hands the mapping to `bench::mmio`.

use crate::beside::{Moved, SideTarget};
use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use bench::mem::{MemConfig, MemRun};
use bench::mmio::target::{self, MmioTarget};
use bench::mmio::{self, MmioRun};
use clap::Args;
use model::mmio::{AccessOp, AccessWidth};
use model::root::SysRoot;
use probe::pci::bar;
use report::document::DocumentKind;
use report::kinds::mmio::{Memory, MmioDocument, Parameters};
use report::kinds::{KindDocument as _, Text};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// What `--help` and the notes of a BAR run say about loads (one text for both).
macro_rules! side_effects {
    () => {
        "Loads from a device are not harmless: reading a FIFO, a clear-on-read status register \
or a doorbell changes the device's state (virtio's ISR status register clears when read, and the \
driver loses the interrupt it signalled). Map only BARs whose registers you know (a RAM-like BAR \
of an FPGA or of a PCIe endpoint in a test setup)."
    };
}
const SIDE_EFFECTS: &str = side_effects!();

#[derive(Args, Debug, Clone)]
#[command(after_help = concat!(
    side_effects!(),
    "\n\n",
    "The mapping is read-only unless --write names the exact target; stores are refused while \
a driver is bound to the function and on the BAR holding its MSI-X table; loads from a function \
with a driver bound need --allow-bound.\n",
    "Rates are MB/s (10^6 B/s). Sizes and offsets: bytes, K/M/G (binary), or 0x hex.\n",
    "Examples:\n  headroom bench mmio 0000:01:00.0:2\n  \
headroom bench mmio 01:00.0:2 --width 32,128 --write 0000:01:00.0:2\n  \
headroom bench mmio /sys/bus/pci/devices/0000:01:00.0/resource2_wc --size 1M"
))]
pub struct MmioArgs {
    /// `DDDD:BB:DD.F:BAR` (or `BB:DD.F:BAR`), a sysfs `resourceN` file, or any file (a
    /// memfd, a tmpfs file; /dev/mem with --offset and --size).
    pub target: String,

    /// Access widths: 8, 16, 32, 64, 128 (SSE2 on x86_64, NEON on aarch64), memcpy (an
    /// aligned copy loop of 128-bit accesses, like memcpy_toio/fromio).
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128,memcpy")]
    pub width: Vec<AccessWidth>,

    /// Operations: load, store [default: load; load,store with --write].
    #[arg(long, value_delimiter = ',')]
    pub op: Vec<AccessOp>,

    /// Bytes of the region to sweep [default: all of it from --offset].
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Where the swept window starts in the region (a multiple of 16).
    #[arg(long, value_name = "OFFSET", default_value = "0")]
    pub offset: String,

    /// Threads, each sweeping its own slice of the window.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,

    /// Upper bound of each (width, operation) run: 1s, 500ms, 2m.
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub duration: String,

    /// Map the region writable and allow stores; give the target again, exactly
    /// (`0000:01:00.0:2`), so a typo cannot write the wrong device.
    #[arg(long, value_name = "TARGET")]
    pub write: Option<String>,

    /// Load from a BAR while a driver is bound to its function: the driver's registers are
    /// read, and a read can change the device (see below); use --offset and --size for a
    /// window whose registers you know, or unbind the driver first.
    #[arg(long)]
    pub allow_bound: bool,

    /// Map a prefetchable BAR write-combining (`resourceN_wc`).
    #[arg(long)]
    pub wc: bool,

    /// Skip the DRAM yardstick.
    #[arg(long)]
    pub no_mem: bool,

    /// Stop each run after N sweeps of the window (for tests).
    #[arg(long, hide = true, value_name = "N")]
    pub max_sweeps: Option<u64>,

    #[command(flatten)]
    pub sides: crate::beside::SideArgs,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,
}

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "The buffer is four times the last-level cache (at least 64 MiB), so \
the numbers are DRAM's. Rates are MB/s (10^6 B/s); memcpy counts bytes copied, as mbw does."
)]
pub struct MemArgs {
    /// Buffer size [default: 4 × the last-level cache, at least 64 MiB].
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Access widths: 8, 16, 32, 64, 128, memcpy.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128,memcpy")]
    pub width: Vec<AccessWidth>,

    /// Operations: load, store.
    #[arg(long, value_delimiter = ',', default_value = "load,store")]
    pub op: Vec<AccessOp>,

    /// Threads, each sweeping its own slice of the buffer.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,

    /// Upper bound of each run: 1s, 500ms, 2m.
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub duration: String,

    /// Skip the C library memcpy test.
    #[arg(long)]
    pub no_copy: bool,

    /// Stop each run after N sweeps of the buffer (for tests).
    #[arg(long, hide = true, value_name = "N")]
    pub max_sweeps: Option<u64>,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,
}

/// A refusal or failure before anything ran: one sentence, and whether it is a usage error.
struct Refusal {
    message: String,
    usage: bool,
}

fn refuse(message: impl Into<String>) -> Refusal {
    Refusal {
        message: message.into(),
        usage: false,
    }
}

fn usage(message: impl Into<String>) -> Refusal {
    Refusal {
        message: message.into(),
        usage: true,
    }
}

/// The refusal as the command's error: `console::exit_code` says it and exits 2 or 1.
fn fail(r: Refusal) -> anyhow::Error {
    if r.usage {
        crate::console::usage(r.message)
    } else {
        anyhow::Error::msg(r.message)
    }
}

/// A size or offset, checked by model (a usage error).
fn parse_bytes(flag: &str, s: &str) -> Result<u64, Refusal> {
    model::mmio::parse_bytes(flag, s).map_err(usage)
}

/// A run's time bound, checked by model (a usage error).
fn parse_time(flag: &str, s: &str) -> Result<Duration, Refusal> {
    model::mmio::parse_run_time(flag, s).map_err(usage)
}

/// The progress line of a run: what is measured, redrawn as each step begins.
fn progress<'a>(run: &'a Run<'_>, what: &'a str) -> impl Fn(&mmio::Progress) + Sync + 'a {
    move |_| run.progress(format_args!("measuring {what}"))
}

pub fn run_mem(global: &GlobalArgs, a: &MemArgs) -> anyhow::Result<ExitCode> {
    crate::driver::drive(global, a)
}

pub fn run_mmio(global: &GlobalArgs, a: &MmioArgs) -> anyhow::Result<ExitCode> {
    crate::driver::drive(global, a)
}

/// What `bench mem`'s flags ask for.
pub struct MemPlan {
    duration: Duration,
    buffer: u64,
    llc: Option<u64>,
    notes: Vec<String>,
}

impl Benchmark for MemArgs {
    type Document = MmioDocument;
    type Kept = MmioDocument;
    type Setup = MemPlan;
    const KIND: DocumentKind = DocumentKind::Mmio;

    fn kept(doc: &MmioDocument) -> &MmioDocument {
        doc
    }

    fn keep(&self) -> KeepArgs {
        self.keep.clone()
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<MemPlan> {
        let a = self;
        let duration = parse_time("--duration", &a.duration).map_err(fail)?;
        let root = SysRoot::new("/");
        let llc = probe::memory::last_level_cache_bytes(&root);
        let buffer = a
            .size
            .as_deref()
            .map(|s| parse_bytes("--size", s))
            .transpose()
            .map_err(fail)?
            .unwrap_or_else(|| model::mmio::buffer_for_llc(llc));
        let available = probe::memory::available_bytes(&root);
        let size = a.size.as_deref().unwrap_or_default();
        let notes = match model::mmio::check_buffer(buffer, size, a.threads, available, llc) {
            Ok(note) => note.into_iter().collect(),
            Err(why) => return Err(fail(usage(why))),
        };
        Ok(MemPlan {
            duration,
            buffer,
            llc,
            notes,
        })
    }

    fn run(&self, plan: MemPlan, run: &Run<'_>) -> anyhow::Result<Outcome<MmioDocument>> {
        let a = self;
        let MemPlan {
            duration,
            buffer,
            llc,
            notes,
        } = plan;
        let mut access = mmio::Config::new(a.width.clone(), a.op.clone(), duration);
        access.threads = a.threads;
        access.max_sweeps = a.max_sweeps;
        let cfg = MemConfig {
            buffer_bytes: buffer,
            access,
            copy: !a.no_copy,
        };
        let outcome = run
            .engine(MemRun { config: cfg }, progress(run, "DRAM"))
            .map_err(anyhow::Error::new)?;
        run.progress_done();
        let doc = MmioDocument {
            parameters: Parameters {
                widths: a.width.clone(),
                ops: a.op.clone(),
                threads: a.threads,
                duration_s: duration.as_secs_f64(),
                simd: mmio::instruction_128().into(),
            },
            region: None,
            results: Vec::new(),
            errors: outcome.errors,
            memory: Some(Memory {
                buffer_bytes: outcome.buffer_bytes,
                llc_bytes: llc,
                results: outcome.results,
                copy: outcome.copy,
            }),
            path: None,
            findings: Vec::new(),
            notes,
            interrupted: run.is_stopped(),
            counters: None,
        };
        Ok(Outcome::Ended(ended(doc)))
    }

    fn print(&self, ended: &Ended<MmioDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        print(ended, run)
    }
}

/// How a run that made `doc` ended: 128 + the signal when one stopped it, 1 when nothing was
/// measured.
fn ended(doc: MmioDocument) -> Ended<MmioDocument> {
    let measured =
        !doc.results.is_empty() || doc.memory.as_ref().is_some_and(|m| !m.results.is_empty());
    Ended {
        measured,
        stopped: doc
            .interrupted
            .then(|| Stopped::Interrupted(doc.stopped_with(measured))),
        failed: !measured,
        doc,
    }
}

/// The result as text or JSON, and the errors of the widths that did not run.
fn print(ended: &Ended<MmioDocument>, run: &Run<'_>) -> anyhow::Result<()> {
    let doc = &ended.doc;
    if run.global.json {
        crate::output::print_result(DocumentKind::Mmio, doc)?;
    } else if ended.measured || !doc.interrupted {
        // Stopped before the first width ran, the tables would be empty: the sentence of the
        // stop says what happened instead.
        let text = doc.text(&Text {
            style: report::terminal::Style::new(run.global.use_color()),
            ..Text::default()
        });
        // Through the one terminal writer (a file name or sysfs string shown escaped); a
        // closed stdout (`| head`) still lets the run end as it should.
        if let Err(e) = crate::out!("{text}") {
            if !e.is::<crate::console::StdoutClosed>() {
                return Err(e);
            }
        }
    }
    for e in &doc.errors {
        crate::console::warn(format_args!("{} {}: {}", e.width.label(), e.op, e.message));
    }
    Ok(())
}

/// A refusal of bench::mmio::target as this command's.
fn refusal(e: target::TargetError) -> Refusal {
    Refusal {
        usage: e.is_usage(),
        message: e.to_string(),
    }
}

/// What `bench mmio`'s flags ask for: the region, opened and mapped, and how to sweep it.
pub struct MmioPlan {
    target: MmioTarget,
    ops: Vec<AccessOp>,
    duration: Duration,
    opened: target::Opened,
}

impl Benchmark for MmioArgs {
    type Document = MmioDocument;
    type Kept = MmioDocument;
    type Setup = MmioPlan;
    const KIND: DocumentKind = DocumentKind::Mmio;

    fn kept(doc: &MmioDocument) -> &MmioDocument {
        doc
    }

    fn keep(&self) -> KeepArgs {
        self.keep.clone()
    }

    fn side_flags(&self) -> crate::beside::SideFlags {
        self.sides.flags()
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<MmioPlan> {
        let a = self;
        let root = SysRoot::new("/");
        let target = MmioTarget::parse(&a.target).map_err(|e| fail(refusal(e)))?;
        let writable = a.write.is_some();
        let ops = target
            .operations(&a.target, a.write.as_deref(), &a.op)
            .map_err(|e| fail(refusal(e)))?;
        let (duration, offset, size) = match (
            parse_time("--duration", &a.duration),
            parse_bytes("--offset", &a.offset),
            a.size
                .as_deref()
                .map(|s| parse_bytes("--size", s))
                .transpose(),
        ) {
            (Ok(d), Ok(o), Ok(s)) => (d, o, s),
            (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return Err(fail(r)),
        };
        let page = target::page_size();
        let opened = match &target {
            MmioTarget::Bar { addr, file } => {
                let facts = bar::function_facts(&root, &addr.function);
                let req = target::BarRequest {
                    file: file.clone(),
                    wc: a.wc,
                    writable,
                    allow_bound: a.allow_bound,
                    offset,
                    size,
                };
                target::open_bar(&a.target, &root, *addr, facts.as_ref(), &req, page)
            }
            MmioTarget::File(p) => target::open_file(&a.target, p, writable, offset, size, page),
        }
        .map_err(|e| fail(refusal(e)))?;
        Ok(MmioPlan {
            target,
            ops,
            duration,
            opened,
        })
    }

    fn run(&self, plan: MmioPlan, run: &Run<'_>) -> anyhow::Result<Outcome<MmioDocument>> {
        let a = self;
        let MmioPlan {
            target,
            ops,
            duration,
            opened,
        } = plan;
        let root = SysRoot::new("/");
        let region = opened.region.clone();
        let mut cfg = mmio::Config::new(a.width.clone(), ops.clone(), duration);
        cfg.threads = a.threads;
        cfg.max_sweeps = a.max_sweeps;
        // Never read a BAR beyond the accesses asked: no prefault sweep on device memory.
        cfg.prefault = region.kind != "bar";
        let mut notes = vec![format!(
            "every access is volatile, naturally aligned and exactly its width; 128-bit by {}; \
             memcpy is a loop of those 128-bit accesses, never the C library's memcpy",
            mmio::instruction_128()
        )];
        if region.kind == "bar" {
            notes.push(SIDE_EFFECTS.to_string());
        }
        let mmio_run = MmioRun {
            config: cfg.clone(),
            map: &opened.map,
            offset: opened.window_in_map,
            size: region.window_bytes,
        };
        // The BAR's function and the functions above it: their links' AER errors and changes
        // are watched while the engine runs (not with --no-watch).
        let function = match &target {
            MmioTarget::Bar { addr, .. } => Some(addr.function.to_string()),
            MmioTarget::File(_) => None,
        };
        let resolved = function
            .as_ref()
            .map(|t| probe::path::resolve(&root, Path::new(t), &probe::pci::audit_sysfs(&root)));
        let pci = match &resolved {
            Some(Ok(p)) => p.chain.pci_addresses(),
            _ => Vec::new(),
        };
        let sides = run.sides(&SideTarget::Path(&pci));
        let measured = run.engine(mmio_run, progress(run, &region.given));
        let bytes = |op: AccessOp| -> u64 {
            measured.as_ref().map_or(0, |m| {
                m.results
                    .iter()
                    .filter(|r| r.op == op)
                    .map(|r| r.bytes)
                    .sum()
            })
        };
        // Loads carry the device's data to the CPU, stores the CPU's to the device.
        let sides = sides.stop(&Moved {
            rx_bytes: bytes(AccessOp::Load),
            tx_bytes: bytes(AccessOp::Store),
            busy_s: None,
        });
        let measured = match measured {
            Ok(m) => m,
            Err(e) => return Err(fail(refuse(format!("{}: {e}", a.target)))),
        };
        let (results, errors) = (measured.results, measured.errors);
        let llc = probe::memory::last_level_cache_bytes(&root);
        notes.extend(report::kinds::mmio::findings::region_notes(
            &region, &results, llc,
        ));
        let memory = if a.no_mem || run.is_stopped() {
            None
        } else {
            let mut access = cfg.clone();
            access.prefault = true;
            let mc = MemConfig {
                buffer_bytes: model::mmio::buffer_for_llc(llc),
                access,
                copy: false,
            };
            match run.engine(MemRun { config: mc }, progress(run, "DRAM")) {
                Ok(o) => Some(Memory {
                    buffer_bytes: o.buffer_bytes,
                    llc_bytes: llc,
                    results: o.results,
                    copy: None,
                }),
                Err(e) => {
                    notes.push(format!("the DRAM yardstick did not run: {e}"));
                    None
                }
            }
        };
        run.progress_done();
        let (path, findings) = match resolved {
            Some(resolved) => {
                // A function whose path cannot be resolved has no link to judge: no finding.
                match resolved {
                    Ok(p) => {
                        let bar = region.bar.as_deref().unwrap_or_default();
                        let findings = report::kinds::mmio::findings::downgraded_links(bar, &p);
                        (Some(p), findings)
                    }
                    Err(why) => {
                        notes.push(format!("the function's path is unknown: {why}"));
                        (None, Vec::new())
                    }
                }
            }
            None => (None, Vec::new()),
        };
        let doc = MmioDocument {
            parameters: Parameters {
                widths: a.width.clone(),
                ops,
                threads: a.threads,
                duration_s: duration.as_secs_f64(),
                simd: mmio::instruction_128().into(),
            },
            region: Some(region),
            results,
            errors,
            memory,
            path,
            findings,
            notes,
            interrupted: run.is_stopped(),
            counters: sides.beside_counters(),
        };
        drop(opened.map);
        Ok(Outcome::Ended(ended(doc)))
    }

    fn print(&self, ended: &Ended<MmioDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        print(ended, run)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        a: MmioArgs,
    }

    /// `bench mmio` on a BAR watches the links of the BAR's path beside the engine, as `bench
    /// disk` and `bench net` do theirs (the side sampler itself is pinned in beside.rs);
    /// `--no-watch` turns it off.
    #[test]
    fn the_bars_links_are_watched_unless_no_watch_is_given() {
        let parse = |extra: &[&str]| {
            let argv = ["t", "0000:01:00.0:0"].iter().chain(extra).copied();
            T::try_parse_from(argv).unwrap().a
        };
        assert!(parse(&[]).side_flags().watch_links);
        assert!(!parse(&["--no-watch"]).side_flags().watch_links);
    }
}
