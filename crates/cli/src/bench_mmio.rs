//! `headroom bench mmio TARGET` and `headroom bench mem`: CPU loads and stores on a PCI BAR
//! (or any file) by width, with DRAM beside them as the yardstick (seeds/000 section 5).
//!
//! This file checks what may be mapped and how (read-only unless `--write` names the exact
//! BDF:BAR; stores refused while a driver is bound or on the MSI-X table's BAR), explains
//! every refusal of the kernel, and hands the mapping to `bench::mmio`.

use crate::output::GlobalArgs;
use bench::mem::{self, MemConfig, MemRun};
use bench::mmio::{self, Mapping, MmioRun};
use bench::Bench;
use clap::Args;
use model::mmio::{AccessOp, AccessWidth};
use model::root::SysRoot;
use probe::pci::bar::{self, BarAddress, FunctionFacts};
use report::kinds::mmio::{Memory, MmioDocument, Parameters, Region};
use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
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

fn fail(r: Refusal) -> ExitCode {
    eprintln!("headroom: error: {}", r.message);
    ExitCode::from(if r.usage { 2 } else { 1 })
}

/// Bytes: `4096`, `64K`, `1M`, or `0x1000`.
fn parse_bytes(flag: &str, s: &str) -> Result<u64, Refusal> {
    if let Some(hex) = s.trim().strip_prefix("0x") {
        return u64::from_str_radix(hex, 16)
            .map_err(|_| usage(format!("{flag} {s}: not a hex number")));
    }
    model::units::parse_size(s).map_err(|why| usage(format!("{flag} {s}: {why}")))
}

fn parse_time(flag: &str, s: &str) -> Result<Duration, Refusal> {
    let secs = model::units::parse_duration(s)
        .map_err(|why| usage(format!("{flag} {s}: {why}")))?
        .as_secs_f64();
    if secs <= 0.0 || secs > 3600.0 {
        return Err(usage(format!(
            "{flag} {s}: give a time above 0 and at most 1h"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The progress line of a run: what is measured, redrawn as each step begins.
fn progress(live: bool, what: &str) -> impl Fn(&mmio::Progress) + Sync + '_ {
    move |_| {
        if live {
            eprint!("\r\x1b[Kmeasuring {what}");
        }
    }
}

pub fn run_mem(global: &GlobalArgs, a: &MemArgs) -> anyhow::Result<ExitCode> {
    let duration = match parse_time("--duration", &a.duration) {
        Ok(d) => d,
        Err(r) => return Ok(fail(r)),
    };
    let root = SysRoot::new("/");
    let llc = probe::memory::last_level_cache_bytes(&root);
    let buffer = match a
        .size
        .as_deref()
        .map(|s| parse_bytes("--size", s))
        .transpose()
    {
        Ok(s) => s.unwrap_or_else(|| mem::buffer_for_llc(llc)),
        Err(r) => return Ok(fail(r)),
    };
    let mut notes = Vec::new();
    // The buffer is populated up front: never more than half of what the kernel says is
    // available, so a typo (--size 100G) cannot push the machine into swap or the OOM killer.
    if let Some(avail) = probe::memory::available_bytes(&root).filter(|&m| buffer > m / 2) {
        return Ok(fail(usage(format!(
            "--size {}: a buffer above half of the {} MiB of available memory (MemAvailable \
             in /proc/meminfo) is refused; give a smaller --size",
            a.size.as_deref().unwrap_or_default(),
            avail >> 20
        ))));
    }
    if buffer < 16 * u64::from(a.threads) {
        return Ok(fail(usage(format!(
            "--size {buffer}: the buffer needs at least 16 bytes per thread"
        ))));
    }
    if let Some(l) = llc.filter(|&l| buffer <= l) {
        notes.push(format!(
            "the {buffer}-byte buffer fits in the {} KiB last-level cache: these are cache \
             speeds, not DRAM's",
            l >> 10
        ));
    }
    let (stop, signal) = crate::terminal::stop_flag()?;
    let live = std::io::stderr().is_terminal();
    let mut access = mmio::Config::new(a.width.clone(), a.op.clone(), duration);
    access.threads = a.threads;
    access.max_sweeps = a.max_sweeps;
    let cfg = MemConfig {
        buffer_bytes: buffer,
        access,
        copy: !a.no_copy,
    };
    let outcome = MemRun { config: cfg }
        .run(&stop, progress(live, "DRAM"))
        .map_err(anyhow::Error::new)?;
    if live {
        eprint!("\r\x1b[K");
    }
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
        interrupted: stop.load(Ordering::Relaxed),
    };
    finish(global, &a.keep, &doc, &signal)
}

/// Print (text or JSON), keep, and the exit code (128 + `signal` when a signal stopped the
/// run).
fn finish(
    global: &GlobalArgs,
    keep: &crate::output::KeepArgs,
    doc: &MmioDocument,
    signal: &std::sync::atomic::AtomicUsize,
) -> anyhow::Result<ExitCode> {
    let measured =
        !doc.results.is_empty() || doc.memory.as_ref().is_some_and(|m| !m.results.is_empty());
    if measured {
        keep.keep(report::document::DocumentKind::Mmio, doc)?;
    }
    if global.json {
        crate::output::print_result(report::document::DocumentKind::Mmio, doc)?;
    } else if measured || !doc.interrupted {
        // Stopped before the first width ran, the tables would be empty: the sentence below
        // says what happened instead.
        let wrapped = report::document::wrap(
            report::document::DocumentKind::Mmio,
            env!("CARGO_PKG_VERSION"),
            doc,
        )?;
        let summary = report::kinds::summarize(&wrapped, "this run")?;
        let style = report::terminal::Style::new(global.use_color());
        let text = report::terminal::mmio::render(&summary, &style);
        // Through the one terminal writer (a file name or sysfs string shown escaped); a
        // closed stdout (`| head`) still lets the run end as it should.
        if let Err(e) = crate::out!("{text}") {
            if !e.is::<crate::terminal::StdoutClosed>() {
                return Err(e);
            }
        }
    }
    for e in &doc.errors {
        eprintln!(
            "headroom: warning: {} {}: {}",
            e.width.label(),
            e.op,
            e.message
        );
    }
    if doc.interrupted {
        return Err(crate::terminal::Interrupted {
            signal: crate::terminal::stopped_by(signal),
            kept: stopped_with(doc, measured),
        }
        .into());
    }
    if !measured {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a stop left of the run, after "interrupted by SIGINT (Ctrl-C): ".
fn stopped_with(doc: &MmioDocument, measured: bool) -> String {
    if measured {
        return "the results above are those measured before it".to_string();
    }
    match (&doc.region, &doc.memory) {
        // bench mem: every page of the buffer is written before the first width runs (so
        // none is the shared zero page), which takes a while for a large buffer.
        (None, Some(m)) => format!(
            "nothing was measured: it came while the {} MiB buffer was being filled, before \
             the first width ran",
            m.buffer_bytes >> 20
        ),
        _ => "nothing was measured: it came before the first width ran".to_string(),
    }
}

/// The target as the user named it.
enum Target {
    Bar {
        addr: BarAddress,
        file: Option<PathBuf>,
    },
    File(PathBuf),
}

fn parse_target(s: &str) -> Result<Target, Refusal> {
    if !Path::new(s).exists() && !s.contains('/') && s.contains('.') && s.contains(':') {
        // Shaped like DDDD:BB:DD.F:N: a mistake in it is a usage error, not a missing file.
        return match s.parse::<BarAddress>() {
            Ok(addr) => Ok(Target::Bar { addr, file: None }),
            Err(e) => Err(usage(e)),
        };
    }
    // /sys/bus/pci/devices/0000:01:00.0/resource2[_wc] (or the /sys/devices path).
    let p = PathBuf::from(s);
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
    let dir = p
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    if let (Some(name), Some(dir)) = (name, dir) {
        let n = name
            .strip_prefix("resource")
            .map(|r| r.trim_end_matches("_wc"));
        if let (Some(Ok(bar)), Ok(function)) = (n.map(str::parse::<u8>), dir.parse()) {
            if bar <= 5 {
                return Ok(Target::Bar {
                    addr: BarAddress { function, bar },
                    file: Some(p),
                });
            }
        }
    }
    Ok(Target::File(p))
}

/// Why the kernel said EPERM to a BAR mapping, with the lockdown mode when readable.
fn lockdown_sentence(root: &SysRoot) -> String {
    match bar::lockdown_mode(root) {
        Some(m) if m != "none" => format!(
            "the kernel is locked down in `{m}` mode (/sys/kernel/security/lockdown), which \
             forbids user-space access to PCI BARs (kernel_lockdown(7)); BAR access needs a \
             kernel without lockdown (Secure Boot off, no lockdown= on the command line, not \
             built with LOCK_DOWN_KERNEL_FORCE_*)"
        ),
        Some(_) => "the kernel refused with EPERM although lockdown is `none`: check for an \
                    LSM policy (SELinux, AppArmor) denying the mapping"
            .to_string(),
        None => "the kernel refused with EPERM: kernel lockdown forbids user-space BAR access \
                 (kernel_lockdown(7)); its mode could not be read because \
                 /sys/kernel/security/lockdown is missing (mount securityfs to see it: mount \
                 -t securityfs securityfs /sys/kernel/security)"
            .to_string(),
    }
}

fn not_root() -> bool {
    // SAFETY: a plain getter.
    unsafe { libc::geteuid() != 0 }
}

/// The sentence for an error opening or mapping a BAR.
fn explain(
    root: &SysRoot,
    what: &str,
    e: &std::io::Error,
    addr: &BarAddress,
    facts: &FunctionFacts,
) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) if not_root() => format!(
            "{what}: mapping a BAR needs root (the resource files are root's): run headroom \
             with sudo"
        ),
        Some(libc::EPERM) => format!("{what} was refused: {}", lockdown_sentence(root)),
        Some(libc::EINVAL) => match &facts.driver {
            Some(d) => format!(
                "{what} was refused (EINVAL): driver {d} claimed BAR {} and the kernel's strict \
                 iomem checks (CONFIG_IO_STRICT_DEVMEM) forbid mapping claimed regions; boot \
                 with iomem=relaxed or unbind the driver",
                addr.bar
            ),
            None => format!(
                "{what} was refused (EINVAL): the window is outside BAR {} or the architecture \
                 cannot map it from user space",
                addr.bar
            ),
        },
        _ => format!("{what}: {e}"),
    }
}

/// `/proc/bus/pci/BB/DD.F` (domain 0) or `/proc/bus/pci/DDDD:BB/DD.F`.
fn proc_file(addr: &BarAddress) -> PathBuf {
    let f = addr.function;
    let bus = if f.domain == 0 {
        format!("{:02x}", f.bus)
    } else {
        format!("{:04x}:{:02x}", f.domain, f.bus)
    };
    PathBuf::from(format!(
        "/proc/bus/pci/{bus}/{:02x}.{:x}",
        f.device, f.function
    ))
}

/// ioctls of /proc/bus/pci files (include/uapi/linux/pci.h: PCIIOC_BASE = 'P'<<24|'C'<<16|'I'<<8).
const PCIIOC_BASE: libc::c_ulong =
    (b'P' as libc::c_ulong) << 24 | (b'C' as libc::c_ulong) << 16 | (b'I' as libc::c_ulong) << 8;
const PCIIOC_MMAP_IS_MEM: libc::c_ulong = PCIIOC_BASE | 0x02;
const PCIIOC_WRITE_COMBINE: libc::c_ulong = PCIIOC_BASE | 0x04;

struct Opened {
    map: Mapping,
    region: Region,
    window_in_map: u64,
    path_target: Option<String>,
}

#[allow(clippy::too_many_arguments)]
fn open_bar(
    root: &SysRoot,
    given: &str,
    addr: BarAddress,
    file: Option<PathBuf>,
    wc: bool,
    writable: bool,
    allow_bound: bool,
    offset: u64,
    size: Option<u64>,
) -> Result<Opened, Refusal> {
    let f = addr.function;
    let facts = bar::function_facts(root, &f).ok_or_else(|| {
        refuse(format!(
            "there is no PCI function {f} (no /sys/bus/pci/devices/{f}); `lspci -D` lists them"
        ))
    })?;
    let res = facts
        .bars
        .get(addr.bar as usize)
        .copied()
        .filter(|r| r.size() > 0)
        .ok_or_else(|| {
            refuse(format!(
                "BAR {} of {f} is not implemented (size 0 in /sys/bus/pci/devices/{f}/resource); \
                 `lspci -v -s {f}` lists its regions",
                addr.bar
            ))
        })?;
    if res.is_io() {
        return Err(refuse(format!(
            "BAR {} of {f} is an I/O-port BAR: ports are reached with in/out instructions, not \
             mapped into memory; pick a memory BAR (`lspci -v -s {f}`)",
            addr.bar
        )));
    }
    if facts.enabled == Some(false) {
        return Err(refuse(format!(
            "{f} is disabled (sysfs enable = 0): its BARs do not decode and loads would return \
             all ones or fault; enable it first: echo 1 > /sys/bus/pci/devices/{f}/enable"
        )));
    }
    if writable {
        let mut why = Vec::new();
        if let Some(d) = &facts.driver {
            why.push(format!(
                "{f} is bound to driver {d}, whose state a store could corrupt (unbind it \
                 first: echo {f} > /sys/bus/pci/drivers/{d}/unbind)"
            ));
        }
        if facts.msix_table_bar == Some(addr.bar) || facts.msix_pba_bar == Some(addr.bar) {
            why.push(format!(
                "BAR {} holds the function's MSI-X table or PBA (MSI-X capability in config \
                 space): a store there can re-target or mask its interrupts",
                addr.bar
            ));
        }
        if !why.is_empty() {
            return Err(refuse(format!(
                "stores to {addr} are refused: {}; loads alone need no --write",
                why.join("; and ")
            )));
        }
    } else if let (Some(d), false) = (&facts.driver, allow_bound) {
        // Issue 22 item 10: a sweep reads every register of the BAR under the driver's feet.
        return Err(refuse(format!(
            "{f} is bound to driver {d}, and loads from BAR {} read its registers: a read can \
             change the device (virtio's ISR status clears when read, and the driver loses the \
             interrupt it signalled; a FIFO or a clear-on-read counter loses data); give \
             --allow-bound to load anyway, with --offset and --size for a window whose \
             registers you know, or unbind the driver first: echo {f} > \
             /sys/bus/pci/drivers/{d}/unbind",
            addr.bar
        )));
    }
    let bar_bytes = res.size();
    let size = size.unwrap_or(bar_bytes.saturating_sub(offset));
    if let Err(e) = mmio::check_window(
        usize::try_from(bar_bytes).unwrap_or(usize::MAX),
        offset,
        size,
        1,
    ) {
        return Err(usage(format!("{addr} ({bar_bytes} bytes): {e}")));
    }
    let dir = root.path(format!("/sys/bus/pci/devices/{f}"));
    let wc_file = dir.join(format!("resource{}_wc", addr.bar));
    let wc_available = wc_file.exists();
    let wants_wc = wc
        || file
            .as_ref()
            .is_some_and(|p| p.to_string_lossy().ends_with("_wc"));
    if wants_wc && !wc_available {
        return Err(refuse(format!(
            "BAR {} of {f} has no write-combining mapping ({} is missing: the kernel offers \
             one only for prefetchable BARs); map it without --wc",
            addr.bar,
            wc_file.display()
        )));
    }
    let sys_file = file.unwrap_or_else(|| {
        if wants_wc {
            wc_file.clone()
        } else {
            dir.join(format!("resource{}", addr.bar))
        }
    });
    let mut opts = OpenOptions::new();
    opts.read(true).write(writable);
    if writable {
        opts.custom_flags(libc::O_SYNC);
    }
    let page = 4096u64;
    let map_start = offset & !(page - 1);
    let map_len = (offset - map_start + size).div_ceil(page) * page;
    let map_len = map_len.min(bar_bytes.div_ceil(page) * page - map_start);
    let (file_used, map) = if sys_file.exists() {
        let fh = opts.open(&sys_file).map_err(|e| {
            refuse(explain(
                root,
                &format!("opening {}", sys_file.display()),
                &e,
                &addr,
                &facts,
            ))
        })?;
        let m = Mapping::of_file(&fh, map_start, map_len as usize, writable).map_err(|e| {
            refuse(explain(
                root,
                &format!("mapping {}", sys_file.display()),
                &e,
                &addr,
                &facts,
            ))
        })?;
        (sys_file, m)
    } else {
        // No resourceN file (some kernels do not create them): the older /proc/bus/pci
        // interface, which maps by the BAR's bus address.
        let pf = proc_file(&addr);
        let missing = format!(
            "{} does not exist, so {} was tried",
            sys_file.display(),
            pf.display()
        );
        let fh = opts.open(&pf).map_err(|e| {
            refuse(explain(
                root,
                &format!("{missing}; opening it"),
                &e,
                &addr,
                &facts,
            ))
        })?;
        let ioctl = |req: libc::c_ulong, arg: libc::c_ulong| -> std::io::Result<()> {
            // SAFETY: the /proc/bus/pci ioctls take an integer argument.
            let r = unsafe { libc::ioctl(fh.as_raw_fd(), req as _, arg) };
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        ioctl(PCIIOC_MMAP_IS_MEM, 0).map_err(|e| {
            refuse(explain(
                root,
                &format!("{missing}; selecting memory space on it (PCIIOC_MMAP_IS_MEM)"),
                &e,
                &addr,
                &facts,
            ))
        })?;
        if wants_wc {
            ioctl(PCIIOC_WRITE_COMBINE, 1)
                .map_err(|e| refuse(explain(root, "PCIIOC_WRITE_COMBINE", &e, &addr, &facts)))?;
        }
        let m = Mapping::of_file(&fh, res.start + map_start, map_len as usize, writable).map_err(
            |e| {
                refuse(explain(
                    root,
                    &format!("{missing}; mapping it"),
                    &e,
                    &addr,
                    &facts,
                ))
            },
        )?;
        (pf, m)
    };
    Ok(Opened {
        map,
        window_in_map: offset - map_start,
        region: Region {
            given: given.to_string(),
            kind: "bar".into(),
            file: file_used.display().to_string(),
            bar: Some(addr.to_string()),
            bar_bytes: Some(bar_bytes),
            bar_start: Some(res.start),
            prefetchable: Some(res.prefetchable()),
            is_64bit: Some(res.is_64bit()),
            write_combining: wants_wc,
            write_combining_available: Some(wc_available),
            window_offset: offset,
            window_bytes: size,
            writable,
            driver: facts.driver.clone(),
        },
        path_target: Some(f.to_string()),
    })
}

fn open_file(
    given: &str,
    p: &Path,
    writable: bool,
    offset: u64,
    size: Option<u64>,
) -> Result<Opened, Refusal> {
    let meta = std::fs::metadata(p).map_err(|e| {
        refuse(match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "{given} does not exist: give DDDD:BB:DD.F:BAR, a sysfs resourceN file or an \
                 existing file"
            ),
            _ => format!("{given}: {e}"),
        })
    })?;
    let device = meta.file_type().is_char_device();
    if meta.is_dir() {
        return Err(usage(format!(
            "{given} is a directory: give DDDD:BB:DD.F:BAR, a sysfs resourceN file or a file"
        )));
    }
    let len = if device {
        let Some(s) = size else {
            return Err(usage(format!(
                "{given} is a character device with no size: give --offset and --size of the \
                 region to map"
            )));
        };
        offset + s
    } else {
        meta.len()
    };
    if len == 0 {
        return Err(usage(format!("{given} is empty: there is nothing to map")));
    }
    let size = size.unwrap_or(len.saturating_sub(offset));
    if let Err(e) = mmio::check_window(usize::try_from(len).unwrap_or(usize::MAX), offset, size, 1)
    {
        return Err(usage(format!("{given} ({len} bytes): {e}")));
    }
    let mut opts = OpenOptions::new();
    opts.read(true).write(writable);
    let fh = opts
        .open(p)
        .map_err(|e| refuse(format!("opening {given}: {e}")))?;
    let page = 4096u64;
    let map_start = offset & !(page - 1);
    let map_len = offset - map_start + size;
    let map = Mapping::of_file(&fh, map_start, map_len as usize, writable)
        .map_err(|e| refuse(format!("mapping {given}: {e}")))?;
    Ok(Opened {
        map,
        window_in_map: offset - map_start,
        region: Region {
            given: given.to_string(),
            kind: if device { "device" } else { "file" }.into(),
            file: p.display().to_string(),
            bar: None,
            bar_bytes: None,
            bar_start: None,
            prefetchable: None,
            is_64bit: None,
            write_combining: false,
            write_combining_available: None,
            window_offset: offset,
            window_bytes: size,
            writable,
            driver: None,
        },
        path_target: None,
    })
}

/// Whether `--write X` names exactly the target.
fn write_matches(target: &Target, given: &str, w: &str) -> bool {
    match target {
        Target::Bar { addr, .. } => w.parse::<BarAddress>().is_ok_and(|x| &x == addr),
        Target::File(p) => {
            w == given
                || match (std::fs::canonicalize(p), std::fs::canonicalize(w)) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                }
        }
    }
}

pub fn run_mmio(global: &GlobalArgs, a: &MmioArgs) -> anyhow::Result<ExitCode> {
    let root = SysRoot::new("/");
    let target = match parse_target(&a.target) {
        Ok(t) => t,
        Err(r) => return Ok(fail(r)),
    };
    let writable = a.write.is_some();
    let ops = if a.op.is_empty() {
        if writable {
            vec![AccessOp::Store, AccessOp::Load]
        } else {
            vec![AccessOp::Load]
        }
    } else {
        a.op.clone()
    };
    if ops.contains(&AccessOp::Store) && !writable {
        return Ok(fail(usage(format!(
            "--op store writes to {}: it needs --write {} (the exact target, so a typo cannot \
             write another device); nothing was mapped",
            a.target,
            match &target {
                Target::Bar { addr, .. } => addr.to_string(),
                Target::File(_) => a.target.clone(),
            }
        ))));
    }
    if let Some(w) = &a.write {
        if !write_matches(&target, &a.target, w) {
            return Ok(fail(usage(format!(
                "--write {w} does not name the target {}: give the exact target (for a BAR, \
                 DDDD:BB:DD.F:N) to allow stores",
                a.target
            ))));
        }
    }
    let (duration, offset, size) = match (
        parse_time("--duration", &a.duration),
        parse_bytes("--offset", &a.offset),
        a.size
            .as_deref()
            .map(|s| parse_bytes("--size", s))
            .transpose(),
    ) {
        (Ok(d), Ok(o), Ok(s)) => (d, o, s),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return Ok(fail(r)),
    };
    let opened = match &target {
        Target::Bar { addr, file } => open_bar(
            &root,
            &a.target,
            *addr,
            file.clone(),
            a.wc,
            writable,
            a.allow_bound,
            offset,
            size,
        ),
        Target::File(p) => open_file(&a.target, p, writable, offset, size),
    };
    let opened = match opened {
        Ok(o) => o,
        Err(r) => return Ok(fail(r)),
    };
    let (stop, signal) = crate::terminal::stop_flag()?;
    let live = std::io::stderr().is_terminal();
    let mut cfg = mmio::Config::new(a.width.clone(), ops.clone(), duration);
    cfg.threads = a.threads;
    cfg.max_sweeps = a.max_sweeps;
    // Never read a BAR beyond the accesses asked: no prefault sweep on device memory.
    cfg.prefault = opened.region.kind != "bar";
    let mut notes = vec![format!(
        "every access is volatile, naturally aligned and exactly its width; 128-bit by {}; \
         memcpy is a loop of those 128-bit accesses, never the C library's memcpy",
        mmio::instruction_128()
    )];
    if opened.region.kind == "bar" {
        notes.push(SIDE_EFFECTS.to_string());
    }
    let run = MmioRun {
        config: cfg.clone(),
        map: &opened.map,
        offset: opened.window_in_map,
        size: opened.region.window_bytes,
    };
    let measured = match run.run(&stop, progress(live, &opened.region.given)) {
        Ok(m) => m,
        Err(e) => return Ok(fail(refuse(format!("{}: {e}", a.target)))),
    };
    let (results, errors) = (measured.results, measured.errors);
    for r in &results {
        if let Some(f) = &r.fault {
            notes.push(format!(
                "{} {} took {} at offset {:#x} of {} ({:#x} into the window) after {} \
                 accesses: the page behind it is gone (a truncated file) or the device did not \
                 answer; the run of that width stopped there",
                r.width.label(),
                r.op,
                f.signal,
                opened.region.window_offset + f.offset,
                opened.region.given,
                f.offset,
                r.accesses
            ));
        }
    }
    let llc = probe::memory::last_level_cache_bytes(&root);
    if let Some(l) = llc.filter(|&l| opened.region.kind != "bar" && opened.region.window_bytes <= l)
    {
        notes.push(format!(
            "the {}-byte window of a file fits in the {} KiB last-level cache: its numbers are cache speeds, above DRAM's",
            opened.region.window_bytes,
            l >> 10
        ));
    }
    let memory = if a.no_mem || stop.load(Ordering::Relaxed) {
        None
    } else {
        let mut access = cfg.clone();
        access.prefault = true;
        let mc = MemConfig {
            buffer_bytes: mem::buffer_for_llc(llc),
            access,
            copy: false,
        };
        match (MemRun { config: mc }).run(&stop, progress(live, "DRAM")) {
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
    if live {
        eprint!("\r\x1b[K");
    }
    let (path, findings) = match &opened.path_target {
        Some(t) => {
            // A function whose path cannot be resolved has no link to judge: no finding.
            match probe::path::resolve(&root, Path::new(t), &probe::pci::audit_sysfs(&root)) {
                Ok(p) => {
                    let bar = opened.region.bar.as_deref().unwrap_or_default();
                    let findings = report::findings::mmio::downgraded_links(bar, &p);
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
        region: Some(opened.region),
        results,
        errors,
        memory,
        path,
        findings,
        notes,
        interrupted: stop.load(Ordering::Relaxed),
    };
    drop(opened.map);
    finish(global, &a.keep, &doc, &signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree with one function: its `resource` lines, `enable`, and a driver link.
    fn tree(resource: &str, enable: &str, driver: Option<&str>) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("sys/bus/pci/devices/0000:01:00.0");
        std::fs::create_dir_all(&f).unwrap();
        std::fs::write(f.join("resource"), resource).unwrap();
        std::fs::write(f.join("enable"), enable).unwrap();
        if let Some(drv) = driver {
            let dd = d.path().join("sys/bus/pci/drivers").join(drv);
            std::fs::create_dir_all(&dd).unwrap();
            std::os::unix::fs::symlink(&dd, f.join("driver")).unwrap();
        }
        std::fs::create_dir_all(d.path().join("sys/kernel/security")).unwrap();
        std::fs::write(
            d.path().join("sys/kernel/security/lockdown"),
            "none [integrity] confidentiality\n",
        )
        .unwrap();
        d
    }

    const MEM_BAR: &str = "0x00000000f0000000 0x00000000f00fffff 0x0000000000040200\n";
    const IO_BAR: &str = "0x000000000000c000 0x000000000000c03f 0x0000000000040101\n";
    const NO_BAR: &str = "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

    fn refusal(d: &tempfile::TempDir, bar: u8, writable: bool) -> String {
        refusal_of(d, bar, writable, false)
    }

    fn refusal_of(d: &tempfile::TempDir, bar: u8, writable: bool, allow_bound: bool) -> String {
        let root = SysRoot::new(d.path());
        let addr: BarAddress = format!("0000:01:00.0:{bar}").parse().unwrap();
        match open_bar(
            &root,
            "x",
            addr,
            None,
            false,
            writable,
            allow_bound,
            0,
            None,
        ) {
            Err(r) => r.message,
            Ok(_) => panic!("mapped"),
        }
    }

    #[test]
    fn every_refusal_before_the_mapping_is_one_sentence_with_the_way_out() {
        let io = tree(&format!("{MEM_BAR}{IO_BAR}"), "1\n", None);
        let m = refusal(&io, 1, false);
        assert!(
            m.contains("BAR 1 of 0000:01:00.0 is an I/O-port BAR"),
            "{m}"
        );
        let off = tree(MEM_BAR, "0\n", None);
        let m = refusal(&off, 0, false);
        assert!(m.contains("is disabled (sysfs enable = 0)"), "{m}");
        assert!(
            m.contains("echo 1 > /sys/bus/pci/devices/0000:01:00.0/enable"),
            "{m}"
        );
        let m = refusal(&tree(&format!("{MEM_BAR}{NO_BAR}"), "1", None), 1, false);
        assert!(
            m.contains("BAR 1 of 0000:01:00.0 is not implemented"),
            "{m}"
        );
        let bound = tree(MEM_BAR, "1", Some("nvme"));
        let m = refusal(&bound, 0, true);
        assert!(m.contains("bound to driver nvme"), "{m}");
        assert!(
            m.contains("echo 0000:01:00.0 > /sys/bus/pci/drivers/nvme/unbind"),
            "{m}"
        );
    }

    /// Issue 22 item 10: loads from a function with a driver bound are refused before any
    /// mapping unless --allow-bound, with why; with it they go on (to the missing resource
    /// file of this tree, here).
    #[test]
    fn loads_from_a_bound_function_need_allow_bound() {
        let bound = tree(MEM_BAR, "1", Some("virtio-pci"));
        let m = refusal(&bound, 0, false);
        assert!(
            m.starts_with("0000:01:00.0 is bound to driver virtio-pci, and loads from BAR 0"),
            "{m}"
        );
        assert!(m.contains("virtio's ISR status clears when read"), "{m}");
        assert!(m.contains("give --allow-bound to load anyway"), "{m}");
        assert!(
            m.contains("echo 0000:01:00.0 > /sys/bus/pci/drivers/virtio-pci/unbind"),
            "{m}"
        );
        let m = refusal_of(&bound, 0, false, true);
        assert!(!m.contains("--allow-bound"), "{m}");
        // Without a driver, loads need no flag.
        let m = refusal(&tree(MEM_BAR, "1", None), 0, false);
        assert!(!m.contains("--allow-bound"), "{m}");
    }

    #[test]
    fn kernel_refusals_are_explained() {
        if not_root() {
            return; // the sentences below are root's; a user is told to use sudo
        }
        let d = tree(MEM_BAR, "1", Some("nvme"));
        let root = SysRoot::new(d.path());
        let addr: BarAddress = "0000:01:00.0:0".parse().unwrap();
        let facts = bar::function_facts(&root, &addr.function).unwrap();
        let einval = std::io::Error::from_raw_os_error(libc::EINVAL);
        let m = explain(&root, "mapping resource0", &einval, &addr, &facts);
        assert!(
            m.contains("driver nvme claimed BAR 0") && m.contains("iomem=relaxed"),
            "{m}"
        );
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        let m = explain(&root, "mapping resource0", &eperm, &addr, &facts);
        assert!(m.contains("locked down in `integrity` mode"), "{m}");
    }

    #[test]
    fn targets_are_told_apart() {
        assert!(matches!(
            parse_target("01:00.0:2"),
            Ok(Target::Bar { file: None, .. })
        ));
        match parse_target("/sys/bus/pci/devices/0000:01:00.0/resource2_wc") {
            Ok(Target::Bar {
                addr,
                file: Some(_),
            }) => assert_eq!(addr.to_string(), "0000:01:00.0:2"),
            _ => panic!("a resourceN_wc path is that BAR"),
        }
        assert!(matches!(parse_target("./bar.bin"), Ok(Target::File(_))));
        assert!(parse_target("01:00.0:9").is_err());
        assert_eq!(parse_bytes("--offset", "0x1000").ok(), Some(4096));
        assert_eq!(parse_bytes("--size", "64K").ok(), Some(65536));
    }
}
