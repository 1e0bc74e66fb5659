//! `headroom bench disk PATH`: storage throughput, IOPS and latency, CrystalDiskMark's test
//! sets or fio's flags, with the kernel's count of the same bytes beside each number.

use crate::beside::{Moved, SideTarget};
use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use anyhow::Context;
use bench::disk::{self, target, DiskError, Progress};
use clap::Args;
use counters::Sampler;
use model::disk::profiles::{self, Profile};
use model::disk::{DiskResult, HostFacts, TargetKind};
use model::root::SysRoot;
use report::document::DocumentKind;
use report::kinds::disk::DiskDocument;
use report::kinds::{KindDocument as _, Text};
use report::terminal::Style;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Sizes are binary as in fio: 4k = 4KB = 4096 bytes, 1M = 1 MiB; 4KiB is 4096 \
bytes too (fio reads 4000) and 1.5G is 1.5 GiB (fio reads 1 byte). Times: 10 (seconds), 2.5s, 500ms, 5m, 1h. \
Rates are printed in MB/s (10^6 B/s) and MiB/s (2^20 B/s).\n\
Examples:\n  headroom bench disk /mnt/nvme --profile cdm\n  \
headroom bench disk /media/usb --profile dd --size 256M\n  \
headroom bench disk /mnt/x --rw randread --bs 4k --qd 32 --runtime 10"
)]
pub struct DiskArgs {
    /// A directory (headroom creates and removes its own test file there), a new file
    /// (`./name`, `dir/name`: a bare name must be a block device or an existing file), an
    /// existing file (read as is; written only with --overwrite), or a block device by name
    /// (`loop0`) or node (`/dev/loop0`) (read-only unless --destructive).
    pub path: PathBuf,

    /// Test set: cdm, cdm-nvme, peak, real (CrystalDiskMark 8's sets: 5 runs of 5 s per test
    /// with a 5 s pause before each, the best shown), rk (the Rockchip guide's fio commands:
    /// SEQ1M Q32T1 and RND4K Q32T1 read and write, each run once until --size or 180 s, no
    /// pause), dd (sequential sweep 4K..1M, write then read, each once until --size or 30 s).
    /// Without it: one test from --rw/--bs/--qd/--jobs, once until --size or 5 s. The plan line
    /// printed at the start says what a run will take.
    #[arg(long)]
    pub profile: Option<String>,

    /// Workload, fio's names: read, write, randread, randwrite, rw, randrw.
    #[arg(long)]
    pub rw: Option<String>,

    /// Percentage of reads for rw/randrw (default 50).
    #[arg(long)]
    pub rwmixread: Option<u8>,

    /// Block size, 512 to 64M (default 1M sequential, 4k random).
    #[arg(long, value_name = "SIZE")]
    pub bs: Option<String>,

    /// I/Os in flight per job, 1 to 1024.
    #[arg(long, visible_alias = "iodepth", value_name = "N")]
    pub qd: Option<u32>,

    /// Job threads, 1 to 4 per CPU.
    #[arg(long, visible_alias = "numjobs", value_name = "N")]
    pub jobs: Option<u32>,

    /// Bytes of the file (or device) covered by the tests (default 1G).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// Upper bound of each run (default 5s; dd: 30s; rk: 180s): 10, 2.5s, 500ms, 1m, 1h.
    #[arg(long, value_name = "TIME")]
    pub runtime: Option<String>,

    /// Time run before measuring, excluded from the results (default 0).
    #[arg(long, alias = "ramp_time", value_name = "TIME")]
    pub ramp: Option<String>,

    /// Runs of each test (default 5 for CrystalDiskMark profiles, else 1).
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// Pause before each run but the first (default 5s for CrystalDiskMark profiles, else 0).
    #[arg(long, value_name = "TIME")]
    pub pause: Option<String>,

    /// 1 = O_DIRECT, bypassing the page cache (default); 0 = buffered.
    #[arg(long, value_name = "0|1", value_parser = clap::value_parser!(u8).range(0..=1))]
    pub direct: Option<u8>,

    /// Loop over the region until --runtime, instead of stopping after --size bytes.
    #[arg(long, alias = "time_based")]
    pub time_based: bool,

    /// fsync the file after each run (timed separately, not in the rates).
    #[arg(long, alias = "end_fsync")]
    pub fsync_end: bool,

    /// Write zeros instead of incompressible random data.
    #[arg(long)]
    pub zero: bool,

    /// What the I/O buffers are made of: pages (the default: 4 KiB pages, as fio's and most
    /// applications' buffers: a 1 MiB I/O is 256 pieces of memory, which a queue with fewer
    /// max_segments splits into more requests) or huge (huge pages, so a large I/O goes down
    /// as one request when the device allows it: what the device can do, above what fio
    /// measures; the result says so).
    #[arg(long, value_name = "pages|huge", value_parser = parse_buffers)]
    pub buffers: Option<model::disk::Buffers>,

    /// I/O engine: auto (io_uring, else psync), io_uring, psync, or null (no I/O: measures
    /// headroom's own overhead, as fio's null engine).
    #[arg(long, alias = "ioengine", default_value = "auto")]
    pub engine: String,

    /// Allow writing over an existing file.
    #[arg(long)]
    pub overwrite: bool,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,

    #[command(flatten)]
    pub sides: crate::beside::SideArgs,

    /// Allow write tests on a raw block device (destroys its data; refused while mounted).
    #[arg(long)]
    pub destructive: bool,

    /// What stdout shows: normal (headroom's table), fio-json (fio 3.33's JSON of the same
    /// workload, one job per test), fio-json+ (with each latency's bins); json and json+, as
    /// fio spells them, are fio's too. --output and the history keep headroom's own document.
    #[arg(
        long = "output-format",
        alias = "output_format",
        value_name = "FORMAT",
        value_parser = parse_output_format,
        default_value = "normal"
    )]
    pub output_format: OutputFormat,
}

/// `--output-format`: what stdout shows of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// headroom's table.
    #[default]
    Normal,
    /// fio's JSON; `plus`: json+, with the latency bins.
    Fio { plus: bool },
}

fn parse_output_format(s: &str) -> Result<OutputFormat, String> {
    match s {
        "normal" => Ok(OutputFormat::Normal),
        "fio-json" | "json" => Ok(OutputFormat::Fio { plus: false }),
        "fio-json+" | "json+" => Ok(OutputFormat::Fio { plus: true }),
        _ => Err(format!(
            "{s:?} is not an output format: use normal, fio-json or fio-json+ (fio's json and \
             json+ are the same; headroom's own document is --json)"
        )),
    }
}

impl DiskArgs {
    /// The flags that override the profile, as given: model reads and checks them.
    fn overrides(&self) -> profiles::Overrides {
        profiles::Overrides {
            rw: self.rw.clone(),
            rwmixread: self.rwmixread,
            block_size: self.bs.clone(),
            queue_depth: self.qd,
            jobs: self.jobs,
            size: self.size.clone(),
            runtime: self.runtime.clone(),
            ramp: self.ramp.clone(),
            runs: self.runs,
            pause: self.pause.clone(),
            direct: self.direct.map(|d| d == 1),
            time_based: self.time_based,
            fsync_end: self.fsync_end,
            zero: self.zero,
            shown: None,
            buffers: self.buffers,
        }
    }
}

/// `--buffers pages|huge`.
fn parse_buffers(s: &str) -> Result<model::disk::Buffers, String> {
    use model::disk::Buffers;
    [Buffers::Pages, Buffers::HugePages]
        .into_iter()
        .find(|b| b.flag() == s)
        .ok_or_else(|| format!("{s:?} is not a kind of buffers: use pages or huge"))
}

/// `headroom bench disk`: a bad value (`--bs 3`) is a usage error, exit 2, as everywhere else
/// (`--output` in a missing directory too, checked by the driver before the run); a target that
/// cannot be used, exit 1.
pub fn run_disk(global: &GlobalArgs, args: &DiskArgs) -> anyhow::Result<ExitCode> {
    match crate::driver::drive(global, args) {
        Err(e) if is_usage_error(&e) => Err(crate::console::usage(crate::console::sentence(&e))),
        other => other,
    }
}

fn is_usage_error(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<DiskError>(),
        Some(DiskError::BadParameter(_))
    )
}

/// What the flags ask for: the tests, their parameters and the engine.
pub struct DiskPlan {
    parameters: model::disk::Parameters,
    tests: Vec<model::disk::TestSpec>,
    engine: &'static dyn disk::Engine,
    engine_note: Option<String>,
    cpus: usize,
}

/// Said when a stop came before the first test ended.
const NOTHING_MEASURED: &str =
    "interrupted before anything was measured; the test file headroom created was removed";

impl Benchmark for DiskArgs {
    type Document = DiskDocument;
    type Kept = DiskDocument;
    type Setup = DiskPlan;
    const KIND: DocumentKind = DocumentKind::Disk;

    fn kept(doc: &DiskDocument) -> &DiskDocument {
        doc
    }

    fn keep(&self) -> KeepArgs {
        self.keep.clone()
    }

    fn side_flags(&self) -> crate::beside::SideFlags {
        self.sides.flags()
    }

    fn plan(&self, global: &GlobalArgs) -> anyhow::Result<DiskPlan> {
        if global.json && self.output_format != OutputFormat::Normal {
            return Err(DiskError::BadParameter(
                "--json prints headroom's document and --output-format fio's JSON, both on \
                 stdout: give one (--output FILE keeps headroom's document beside fio's)"
                    .into(),
            )
            .into());
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let profile = match &self.profile {
            Some(p) => Profile::parse(p).map_err(DiskError::BadParameter)?,
            None => Profile::Custom,
        };
        let (engine, engine_note) = disk::choose_engine(&self.engine)?;
        let (parameters, tests) = profiles::build(profile, &self.overrides(), engine.name(), cpus)
            .map_err(DiskError::BadParameter)?;
        Ok(DiskPlan {
            parameters,
            tests,
            engine,
            engine_note,
            cpus,
        })
    }

    fn run(&self, plan: DiskPlan, run: &Run<'_>) -> anyhow::Result<Outcome<DiskDocument>> {
        let DiskPlan {
            parameters,
            tests,
            engine,
            engine_note,
            cpus,
        } = plan;
        // Where the target lives, at the block level; holds matter only for a device.
        let root = SysRoot::new("/");
        let given = probe::path::disk_target(&root, &self.path).map_err(DiskError::Target)?;
        let insp = target::inspect(&given)?;
        if insp.file != insp.given {
            // A directory: the test files of runs that were killed (SIGKILL, a crash) are
            // removed.
            let dir = insp.given.clone();
            for removed in target::remove_stale_files(&dir) {
                crate::console::info(removed);
            }
        }
        let (device, device_note) = match probe::block::by_number(&root, insp.dev.0, insp.dev.1) {
            Ok(Some(d)) => (Some(d), None),
            Ok(None) => (
                None,
                Some(format!(
                    "device {}:{} is not a block device in /sys/dev/block (tmpfs, overlayfs or \
                     a network filesystem?): no /proc/diskstats cross-check",
                    insp.dev.0, insp.dev.1
                )),
            ),
            Err(e) => (
                None,
                Some(format!("the block device could not be resolved: {e}")),
            ),
        };
        let writes = tests.iter().any(|t| t.workload.writes());
        let holds = match (&device, insp.kind) {
            (Some(d), TargetKind::BlockDevice) if writes => probe::block::holds(&root, d)
                .context("cannot tell whether the device is in use, so it is not written")?,
            // A file written over may back a loop device (a disk image mounted with -o loop).
            (_, TargetKind::ExistingFile) if writes && self.overwrite => {
                let (major, minor) = insp.dev;
                probe::block::loops_backed_by_file(&root, libc::makedev(major, minor), insp.ino)
                    .context(
                        "cannot tell whether the file backs a loop device, so it is not written",
                    )?
            }
            _ => Vec::new(),
        };
        let fill_progress = |done: u64, total: u64| {
            if done == total || done % (64 << 20) == 0 {
                run.progress(format_args!(
                    "preparing the test file: {} of {} MiB",
                    done >> 20,
                    total >> 20
                ));
            }
        };
        let opts = target::TargetOptions {
            size: parameters.size_bytes,
            direct: parameters.direct,
            writes,
            overwrite: self.overwrite,
            destructive: self.destructive,
        };
        // A stop (SIGINT, SIGTERM) removes the test file on the way out.
        let prepared = target::prepare(
            insp,
            device,
            device_note,
            &holds,
            &opts,
            run.stop(),
            Some(&fill_progress),
        );
        let mut target = match prepared {
            Ok(t) => t,
            Err(DiskError::Interrupted) => return Ok(nothing_measured(run)),
            Err(e) => return Err(e.into()),
        };
        // The limits that decide how many requests an I/O becomes (requests per I/O,
        // findings).
        let queue = target
            .block_device()
            .and_then(|d| probe::block::queue_of(&root, &d.disk));
        target.set_queue(queue);
        crate::console::info(report::kinds::disk::text::plan_line(&parameters, &tests));
        let progress = |p: &Progress| {
            run.progress(report::kinds::disk::text::progress_line(
                p.test,
                (p.run, p.runs),
                &p.phase,
                p.elapsed.as_secs_f64(),
                p.bytes_per_sec,
            ));
        };
        // Measured / ceiling: the path from the target to the CPU and its bottleneck link,
        // resolved once the test file exists.
        let audit = probe::pci::audit_sysfs(&root);
        let path = probe::path::resolve(&root, &given, &audit);
        let ceiling = match &path {
            Ok(p) => p.ceiling(),
            Err(why) => Err(why.clone()),
        };
        let path = path.ok();
        // An emulated or paravirtual device on the path: its link state is the emulator's.
        let emulated = path
            .as_ref()
            .and_then(|p| report::efficiency::emulated_on_path(p, &audit));
        // The null engine does no I/O: its rate is headroom's own overhead (a finding says so).
        let diskless = engine.caps().diskless;
        // Written after each test, atomically: an interrupted run keeps what it measured.
        let output_failed = AtomicBool::new(false);
        let write_partial = |partial: &DiskResult| {
            let doc = || {
                DiskDocument::judge(
                    partial,
                    ceiling.as_ref().ok(),
                    path.as_ref(),
                    diskless,
                    emulated.clone(),
                )
            };
            if self.keep.output.is_none() {
                return;
            }
            if let Err(e) = run.write_partial(&self.keep, Self::KIND, &doc()) {
                if !output_failed.swap(true, Ordering::Relaxed) {
                    crate::console::warn(crate::console::sentence(&e));
                }
            }
        };
        let kernel_counts = KernelCounters::default();
        let disk_run = disk::DiskRun {
            parameters,
            tests,
            engine,
            after_test: Some(&write_partial),
            kernel_counts: Some(&kernel_counts),
            target: &target,
            system: host(&root, cpus),
        };
        // The side samplers of the path (its devices' interrupts, its root port's PMU, its
        // links' AER errors and changes), beside the engine.
        let pci = path
            .as_ref()
            .map(|p| p.chain.pci_addresses())
            .unwrap_or_default();
        let sides = run.sides(&SideTarget::Path(&pci));
        let outcome = run.engine(disk_run, progress);
        // Remove the test file before anything is printed, whatever the outcome.
        drop(target);
        run.progress_done();
        let mut result = match outcome {
            Ok(r) => r,
            Err(DiskError::Interrupted) => return Ok(nothing_measured(run)),
            Err(e) => return Err(e.into()),
        };
        if let Some(n) = engine_note {
            result.notes.insert(0, n);
        }
        if let Err(why) = &ceiling {
            result
                .notes
                .push(format!("no ceiling, no efficiency: {why}"));
        }
        let runs: Vec<&model::disk::RunResult> =
            result.tests.iter().flat_map(|t| &t.runs).collect();
        let (rx_bytes, tx_bytes) = runs.iter().fold((0, 0), |(r, w), run| {
            (
                r + run.cross_check.app_read_bytes,
                w + run.cross_check.app_write_bytes,
            )
        });
        // With pauses between runs (CrystalDiskMark's profiles), interrupt rates are per
        // second of the runs (ramp and measured time), not of the pauses, in which the device
        // idles.
        let busy_s = (result.parameters.pause_s > 0.0 && runs.len() > 1).then(|| {
            runs.iter()
                .map(|r| r.seconds + result.parameters.ramp_s)
                .sum()
        });
        let sides = sides.stop(&Moved {
            rx_bytes,
            tx_bytes,
            busy_s,
        });
        let mut doc = DiskDocument::judge(
            &result,
            ceiling.as_ref().ok(),
            path.as_ref(),
            diskless,
            emulated,
        );
        doc.counters = sides.beside_counters();
        Ok(Outcome::Ended(Ended {
            doc,
            measured: !result.tests.is_empty(),
            stopped: result.interrupted.then(|| {
                Stopped::Said(
                    "interrupted: the results above are those measured before the stop; the \
                     test file headroom created was removed"
                        .into(),
                )
            }),
            failed: false,
        }))
    }

    fn print(&self, ended: &Ended<DiskDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        let doc = &ended.doc;
        if run.global.json {
            crate::output::print_result(Self::KIND, doc)?;
        } else if let OutputFormat::Fio { plus } = self.output_format {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            crate::console::write_data(&report::kinds::disk::fio::json(doc, plus, now))?;
        } else {
            crate::out!(
                "{}",
                doc.text(&Text {
                    style: Style::new(run.global.use_color()),
                    ..Text::default()
                })
            )?;
            if let Some(beside) = &doc.counters {
                crate::out!("{}", report::kinds::count::render_beside(beside))?;
            }
        }
        Ok(())
    }
}

/// A stop before the first test ended: nothing to keep or show.
fn nothing_measured(run: &Run<'_>) -> Outcome<DiskDocument> {
    run.progress_done();
    Outcome::Nothing(Stopped::Said(NOTHING_MEASURED.into()))
}

/// The host facts printed beside the numbers, from `probe::system` and the host name.
fn host(root: &SysRoot, cpus: usize) -> HostFacts {
    HostFacts::from_context(
        &probe::system::read_context(root),
        cpus,
        probe::system::hostname(root),
    )
}

/// The kernel's byte counters for bench disk's cross-check, from the counters crate's
/// samplers of `/proc/self/io` and `/proc/diskstats`.
#[derive(Default)]
struct KernelCounters {
    root: SysRoot,
}

impl disk::kernel_count::KernelCounts for KernelCounters {
    fn process_bytes(&self) -> Option<disk::kernel_count::ByteCount> {
        let io = counters::ProcIoSampler::own(self.root.clone())
            .snapshot()
            .ok()?
            .value;
        Some(disk::kernel_count::ByteCount {
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
        })
    }

    fn device_counts(&self, name: &str) -> Option<disk::kernel_count::DeviceCount> {
        let s = counters::DiskStatsSampler::device(self.root.clone(), name)
            .snapshot()
            .ok()?;
        let d = s.value.get(name)?;
        Some(disk::kernel_count::DeviceCount {
            bytes: disk::kernel_count::ByteCount {
                read_bytes: d.read_bytes(),
                write_bytes: d.write_bytes(),
            },
            read_requests: d.reads,
            write_requests: d.writes,
        })
    }
}
