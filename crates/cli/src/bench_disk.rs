//! `headroom bench disk PATH`: storage throughput, IOPS and latency, CrystalDiskMark's test
//! sets or fio's flags, with the kernel's count of the same bytes beside each number.

use crate::output::GlobalArgs;
use anyhow::Context;
use bench::disk::{self, profiles, target, DiskError, Profile, Progress};
use bench::Bench;
use clap::Args;
use counters::Sampler;
use model::disk::{DiskResult, HostFacts, TargetKind};
use model::root::SysRoot;
use report::kinds::disk::DiskDocument;
use report::terminal::Style;
use std::io::IsTerminal;
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
    fn overrides(&self) -> Result<profiles::Overrides, DiskError> {
        let bad =
            |f: &str, v: &str, why: String| DiskError::BadParameter(format!("{f} {v}: {why}"));
        let size = |f: &str, v: &Option<String>| {
            v.as_deref()
                .map(|s| model::units::parse_size(s).map_err(|why| bad(f, s, why)))
                .transpose()
        };
        let time = |f: &str, v: &Option<String>| {
            v.as_deref()
                .map(|s| {
                    model::units::parse_duration(s)
                        .map(|d| d.as_secs_f64())
                        .map_err(|why| bad(f, s, why))
                })
                .transpose()
        };
        Ok(profiles::Overrides {
            rw: self.rw.clone(),
            rwmixread: self.rwmixread,
            block_size: size("--bs", &self.bs)?,
            queue_depth: self.qd,
            jobs: self.jobs,
            size: size("--size", &self.size)?,
            runtime_s: time("--runtime", &self.runtime)?,
            ramp_s: time("--ramp", &self.ramp)?,
            runs: self.runs,
            pause_s: time("--pause", &self.pause)?,
            direct: self.direct.map(|d| d == 1),
            time_based: self.time_based,
            fsync_end: self.fsync_end,
            zero: self.zero,
            shown: None,
            buffers: self.buffers,
        })
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
/// (`--output` in a missing directory too, checked before every benchmark by `bench::run`); a
/// target that cannot be used, exit 1.
pub fn run_disk(global: &GlobalArgs, args: &DiskArgs) -> anyhow::Result<ExitCode> {
    match disk_command(global, args) {
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

fn disk_command(global: &GlobalArgs, args: &DiskArgs) -> anyhow::Result<ExitCode> {
    if global.json && args.output_format != OutputFormat::Normal {
        return Err(DiskError::BadParameter(
            "--json prints headroom's document and --output-format fio's JSON, both on stdout: \
             give one (--output FILE keeps headroom's document beside fio's)"
                .into(),
        )
        .into());
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let profile = match &args.profile {
        Some(p) => Profile::parse(p)?,
        None => Profile::Custom,
    };
    let overrides = args.overrides()?;
    let (engine, engine_note) = disk::choose_engine(&args.engine)?;
    let (parameters, tests) = profiles::build(profile, &overrides, engine.name(), cpus)?;

    // Where the target lives, at the block level; holds matter only for a device.
    let root = SysRoot::new("/");
    let given = probe::path::disk_target(&root, &args.path).map_err(DiskError::Target)?;
    let insp = target::inspect(&given)?;
    if insp.file != insp.given {
        // A directory: the test files of runs that were killed (SIGKILL, a crash) are removed.
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
                "device {}:{} is not a block device in /sys/dev/block (tmpfs, overlayfs or a \
                 network filesystem?): no /proc/diskstats cross-check",
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
        (_, TargetKind::ExistingFile) if writes && args.overwrite => {
            let (major, minor) = insp.dev;
            probe::block::loops_backed_by_file(&root, libc::makedev(major, minor), insp.ino)
                .context("cannot tell whether the file backs a loop device, so it is not written")?
        }
        _ => Vec::new(),
    };

    // SIGINT and SIGTERM both stop the run (the test file is removed on the way out); the
    // exit code is 128 + the signal.
    let interrupt = crate::console::Interrupt::install()?;
    let stop = &interrupt.stop;
    let interrupted_code = || interrupt.exit_code();
    let live = std::io::stderr().is_terminal();
    let fill_progress = |done: u64, total: u64| {
        if live && (done == total || done % (64 << 20) == 0) {
            crate::console::progress(format_args!(
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
        overwrite: args.overwrite,
        destructive: args.destructive,
    };
    let prepared = target::prepare(
        insp,
        device,
        device_note,
        &holds,
        &opts,
        stop,
        Some(&fill_progress),
    );
    let mut target = match prepared {
        Ok(t) => t,
        Err(DiskError::Interrupted) => {
            interrupted_before_measuring(live);
            return Ok(interrupted_code());
        }
        Err(e) => return Err(e.into()),
    };
    // The limits that decide how many requests an I/O becomes (requests per I/O, findings).
    let queue = target
        .block_device()
        .and_then(|d| probe::block::queue_of(&root, &d.disk));
    target.set_queue(queue);
    crate::console::info(report::kinds::disk::text::plan_line(&parameters, &tests));
    let progress = |p: &Progress| {
        if live {
            crate::console::progress(report::kinds::disk::text::progress_line(
                p.test,
                (p.run, p.runs),
                &p.phase,
                p.elapsed.as_secs_f64(),
                p.bytes_per_sec,
            ));
        }
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
    // Write after each test, atomically: an interrupted run keeps what it measured.
    let output_failed = AtomicBool::new(false);
    let write_partial = |partial: &DiskResult| {
        if let Some(out) = &args.keep.output {
            let doc = DiskDocument::judge(
                partial,
                ceiling.as_ref().ok(),
                path.as_ref(),
                diskless,
                emulated.clone(),
            );
            if let Err(e) =
                crate::output::write_result(out, report::document::DocumentKind::Disk, &doc)
            {
                if !output_failed.swap(true, Ordering::Relaxed) {
                    crate::console::warn(crate::console::sentence(&e));
                }
            }
        }
    };
    let kernel_counts = KernelCounters::default();
    let run = disk::DiskRun {
        parameters,
        tests,
        engine,
        after_test: Some(&write_partial),
        kernel_counts: Some(&kernel_counts),
        target: &target,
        system: host(&root, cpus),
    };
    // Interrupts of the path's devices, its root port's PMU and its links, beside the engine.
    crate::beside::watch_links(!args.keep.no_watch);
    let beside = crate::beside::Beside::start(
        root.clone(),
        &path
            .as_ref()
            .map(|p| p.chain.pci_addresses())
            .unwrap_or_default(),
    );
    let outcome = run.run(stop, progress);
    // Remove the test file before anything is printed, whatever the outcome.
    drop(target);
    if live {
        crate::console::progress_done();
    }
    let mut result = match outcome {
        Ok(r) => r,
        Err(DiskError::Interrupted) => {
            interrupted_before_measuring(live);
            return Ok(interrupted_code());
        }
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
    let runs = result.tests.iter().flat_map(|t| &t.runs);
    let (app_r, app_w) = runs.fold((0, 0), |(r, w), run| {
        (
            r + run.cross_check.app_read_bytes,
            w + run.cross_check.app_write_bytes,
        )
    });
    // With pauses between runs (CrystalDiskMark's profiles), interrupt rates are per second of
    // the runs (ramp and measured time), not of the pauses, in which the device idles.
    let runs: Vec<&model::disk::RunResult> = result.tests.iter().flat_map(|t| &t.runs).collect();
    let busy = (result.parameters.pause_s > 0.0 && runs.len() > 1).then(|| {
        runs.iter()
            .map(|r| r.seconds + result.parameters.ramp_s)
            .sum()
    });
    let beside = beside.finish(app_r, app_w, busy);
    let mut doc = DiskDocument::judge(
        &result,
        ceiling.as_ref().ok(),
        path.as_ref(),
        diskless,
        emulated,
    );
    doc.counters = Some(beside);
    // The results reach stdout first: whatever happens to --output or the history after.
    if global.json {
        crate::output::print_result(report::document::DocumentKind::Disk, &doc)?;
    } else if let OutputFormat::Fio { plus } = args.output_format {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        crate::console::write_data(&report::kinds::disk::fio::json(&doc, plus, now))?;
    } else {
        crate::out!("{}", doc.text(&Style::new(global.use_color())))?;
        if let Some(beside) = &doc.counters {
            crate::out!("{}", report::kinds::count::render_beside(beside))?;
        }
    }
    let kept = if result.tests.is_empty() {
        Ok(())
    } else {
        args.keep.keep(report::document::DocumentKind::Disk, &doc)
    };
    if result.interrupted {
        crate::console::info(
            "interrupted: the results above are those measured before the stop; the test file \
             headroom created was removed",
        );
    }
    // A result that could not be kept is the run's failure (exit 1), said once by
    // console::exit_code.
    kept?;
    if result.interrupted {
        return Ok(interrupted_code());
    }
    Ok(ExitCode::SUCCESS)
}

fn interrupted_before_measuring(live: bool) {
    if live {
        crate::console::progress_done();
    }
    crate::console::info(
        "interrupted before anything was measured; the test file headroom created was removed",
    );
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
