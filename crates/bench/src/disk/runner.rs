//! The run: every test `runs` times, each run's job threads, the progress sampler, the
//! kernel's counts before and after, and the summary of what the jobs measured.

use super::job::{run_job, JobOutcome, JobPlan, RunShared};
use super::result::{error_percent, DirectionRecorder, LatencyRecorder};
use super::{kernel_count, target, DiskError, Engine, Target};
use crate::{Bench, Phase, Phased, Stop};
use model::blockdev::DeviceNumber;
use model::disk::{
    CrossCheck, DiskResult, HostFacts, Latency, Parameters, RunResult, TestResult, TestSpec,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the caller sees while a run goes on.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    pub test: &'a str,
    pub run: u32,
    pub runs: u32,
    /// Ramp, run or pause (printed as `ramp`, `run`, `pause`).
    pub phase: Phase,
    pub elapsed: Duration,
    /// Bytes per second over the last sampling interval.
    pub bytes_per_sec: f64,
}

impl Phased for Progress<'_> {
    fn phase(&self) -> Phase {
        self.phase
    }
    fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// `bench disk` in the run shape of every engine ([`crate::Bench`]): the configuration and the
/// prepared target in; the stop flag and the progress callback come with `run`.
pub struct DiskRun<'a> {
    pub parameters: Parameters,
    pub tests: Vec<TestSpec>,
    pub engine: &'static dyn Engine,
    /// Called with the result so far after each test, so a caller can write it down: a run
    /// that is interrupted or crashes later keeps what was measured.
    pub after_test: Option<&'a (dyn Fn(&DiskResult) + Sync)>,
    /// The kernel's byte counters read around each run for the cross-check (`None`: no
    /// cross-check).
    pub kernel_counts: Option<&'a dyn kernel_count::KernelCounts>,
    pub target: &'a Target,
    pub system: HostFacts,
}

impl Bench for DiskRun<'_> {
    const KIND: &'static str = "disk";
    type Progress<'p> = Progress<'p>;
    type Measurement = DiskResult;
    type Error = DiskError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<DiskResult, DiskError>
    where
        F: for<'p> Fn(&Progress<'p>) + Sync,
    {
        let cfg = Ctx {
            parameters: self.parameters,
            tests: self.tests,
            engine: self.engine,
            stop: Arc::clone(stop),
            progress: &progress,
            after_test: self.after_test,
            kernel_counts: self.kernel_counts,
        };
        execute(&cfg, self.target, self.system)
    }

    fn interrupted(m: &DiskResult) -> bool {
        m.interrupted
    }
}

/// A [`DiskRun`] while it runs: its configuration with the stop flag and the progress
/// callback that came with [`Bench::run`].
struct Ctx<'a> {
    parameters: Parameters,
    tests: Vec<TestSpec>,
    engine: &'static dyn Engine,
    /// Set by a SIGINT/SIGTERM handler: every loop checks it and stops.
    stop: Arc<AtomicBool>,
    progress: &'a (dyn Fn(&Progress) + Sync),
    after_test: Option<&'a (dyn Fn(&DiskResult) + Sync)>,
    kernel_counts: Option<&'a dyn kernel_count::KernelCounts>,
}

/// Run every test `runs` times on `target` and collect the result.
fn execute(cfg: &Ctx, target: &Target, system: HostFacts) -> Result<DiskResult, DiskError> {
    let p = &cfg.parameters;
    let mut notes = target.notes();
    let caps = cfg.engine.caps();
    if caps.diskless {
        notes.push(format!(
            "the {} engine does no I/O: its numbers are headroom's own overhead",
            cfg.engine.name()
        ));
    }
    if !caps.asynchronous && cfg.tests.iter().any(|t| t.queue_depth > 1) {
        notes.push(format!(
            "the {} engine does one I/O at a time per job: queue depths above 1 run as QD1",
            cfg.engine.name()
        ));
    }
    if !p.direct {
        notes.push(
            "buffered I/O (--direct 0): reads may come from the page cache and writes may \
             only reach it"
                .to_string(),
        );
    }
    kernel_count::preload_own_executable();
    let mut tests = Vec::with_capacity(cfg.tests.len());
    let mut interrupted = false;
    // The test whose run a signal cut short, and the seconds it had measured.
    let mut partial: Option<(String, f64)> = None;
    'tests: for (ti, spec) in cfg.tests.iter().enumerate() {
        let mut runs = Vec::with_capacity(p.runs as usize);
        for run_no in 1..=p.runs {
            if cfg.stop.load(Ordering::Relaxed) {
                interrupted = true;
            } else if (ti > 0 || run_no > 1) && p.pause_s > 0.0 {
                match pause(cfg, spec, run_no, Duration::from_secs_f64(p.pause_s)) {
                    Ok(()) => {}
                    Err(DiskError::Interrupted) => interrupted = true,
                    Err(e) => return Err(e),
                }
            }
            if interrupted {
                // Keep the runs this test finished: they were measured in full.
                if !runs.is_empty() {
                    tests.push(TestResult::new(spec.clone(), runs));
                }
                break 'tests;
            }
            if p.drop_caches {
                if let Err(note) = target::drop_page_cache() {
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
            }
            let (r, run_notes) = match run_once(cfg, target, spec, run_no) {
                Ok((r, n)) if r.interrupted => {
                    // Cut short by a signal: kept, marked, and the run ends here.
                    interrupted = true;
                    partial = Some((spec.name(), r.seconds));
                    runs.push(r);
                    for n in n {
                        if !notes.contains(&n) {
                            notes.push(n);
                        }
                    }
                    tests.push(TestResult::new(spec.clone(), runs));
                    break 'tests;
                }
                Ok(v) => v,
                Err(DiskError::Interrupted) => {
                    interrupted = true;
                    if !runs.is_empty() {
                        tests.push(TestResult::new(spec.clone(), runs));
                    }
                    break 'tests;
                }
                Err(e) => return Err(e),
            };
            for n in run_notes {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
            runs.push(r);
        }
        tests.push(TestResult::new(spec.clone(), runs));
        if let Some(f) = cfg.after_test {
            f(&result_of(cfg, target, &system, &tests, &notes, false));
        }
    }
    // Notes on the kernel's cross-check, which a diskless engine does not have.
    if !caps.diskless
        && target.info().kind != model::disk::TargetKind::BlockDevice
        && cfg.tests.iter().any(|t| t.workload.writes())
    {
        notes.push(
            "writes to a file can also dirty the filesystem's metadata, which the kernel counts \
             toward this process: the write cross-check may read a little high (up to 1.5 MB \
             per second of run seen on one ext4; exact on a fresh ext4)"
                .to_string(),
        );
    }
    if proc_io_counts_resubmissions(cfg.engine, target) {
        notes.push(format!(
            "the kernel's cross-check is /proc/diskstats: on a block device /proc/self/io counts \
             an I/O of the {} engine again each time the block layer sends it back to be \
             issued from a worker thread (a non-blocking I/O it would have to split or queue; \
             seen +100 % at 1 MiB from 4 KiB pages), so its bytes are shown, not compared",
            cfg.engine.name()
        ));
    }
    if target.block_device().is_some() && !caps.diskless {
        notes.push(
            "the /proc/diskstats cross-check counts every process's I/O to the device: other \
             traffic during a run shows as error"
                .to_string(),
        );
    }
    if interrupted {
        let cut = partial.map_or_else(String::new, |(name, s)| {
            format!(
                "; the run of {name} was stopped after {s:.1} s and its numbers cover those \
                 seconds (marked interrupted)"
            )
        });
        let rest = if tests.len() < cfg.tests.len() {
            "; the rest did not run"
        } else {
            ""
        };
        notes.insert(
            0,
            format!(
                "interrupted: {} of {} tests measured{cut}{rest}",
                tests.len(),
                cfg.tests.len()
            ),
        );
    }
    Ok(result_of(cfg, target, &system, &tests, &notes, interrupted))
}

fn result_of(
    cfg: &Ctx,
    target: &Target,
    system: &HostFacts,
    tests: &[TestResult],
    notes: &[String],
    interrupted: bool,
) -> DiskResult {
    DiskResult {
        schema_version: 1,
        kind: "disk".to_string(),
        // The bytes the tests covered, not the --size asked for: an existing file or a device
        // smaller than --size is tested whole (its notes say so), and the size is rounded down
        // to the direct I/O alignment.
        parameters: Parameters {
            size_bytes: target.info().size_bytes,
            ..cfg.parameters.clone()
        },
        system: system.clone(),
        target: target.info().clone(),
        tests: tests.to_vec(),
        notes: notes.to_vec(),
        interrupted,
    }
}

fn pause(cfg: &Ctx, spec: &TestSpec, run_no: u32, d: Duration) -> Result<(), DiskError> {
    let start = Instant::now();
    // Bounded: at most d / 100 ms + 1 iterations.
    while start.elapsed() < d {
        if cfg.stop.load(Ordering::Relaxed) {
            return Err(DiskError::Interrupted);
        }
        (cfg.progress)(&Progress {
            test: &spec.name(),
            run: run_no,
            runs: cfg.parameters.runs,
            phase: Phase::Pause,
            elapsed: start.elapsed(),
            bytes_per_sec: 0.0,
        });
        std::thread::sleep((d - start.elapsed().min(d)).min(Duration::from_millis(100)));
    }
    Ok(())
}

fn run_once(
    cfg: &Ctx,
    target: &Target,
    spec: &TestSpec,
    run_no: u32,
) -> Result<(RunResult, Vec<String>), DiskError> {
    let p = &cfg.parameters;
    let regions = target.job_regions(spec)?;
    let shared = RunShared {
        stop: cfg.stop.clone(),
        abort: AtomicBool::new(false),
        bytes_done: AtomicU64::new(0),
    };
    let ramp = Duration::from_secs_f64(p.ramp_s);
    let runtime = Duration::from_secs_f64(p.runtime_s);
    let kc = cfg.kernel_counts;
    let io_before = kc.and_then(|k| k.process_bytes());
    let disk_before = target
        .block_device()
        .and_then(|d| kc?.device_counts(&d.name));
    let cpu_before = kernel_count::process_cpu();
    let start = Instant::now();
    let outcomes: Vec<Result<JobOutcome, DiskError>> = std::thread::scope(|s| {
        let handles: Vec<_> = regions
            .iter()
            .enumerate()
            .map(|(j, region)| {
                let shared = &shared;
                let job = JobPlan {
                    fd: target.fd(),
                    spec,
                    region: *region,
                    align: target.mem_align(),
                    buffers: p.buffers.unwrap_or(model::disk::Buffers::Pages),
                    zero: p.zero_buffers,
                    seed: 0x9E37_79B9_7F4A_7C15 ^ ((j as u64 + 1) << 32) ^ run_no as u64,
                    ramp,
                    runtime,
                    time_based: p.time_based,
                };
                s.spawn(move || {
                    let r = run_job(cfg.engine, &job, shared);
                    if r.is_err() {
                        shared.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        sample_progress(cfg, spec, run_no, &shared, start, ramp, &handles);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(DiskError::Io("a job thread panicked".into())))
            })
            .collect()
    });
    let mut jobs = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        jobs.push(o?);
    }
    let stopped = cfg.stop.load(Ordering::Relaxed);
    let fsync_s = if p.fsync_end && !stopped {
        let t = Instant::now();
        target.fsync()?;
        Some(t.elapsed().as_secs_f64())
    } else {
        None
    };
    let cpu_after = kernel_count::process_cpu();
    let io_after = kc.and_then(|k| k.process_bytes());
    let disk_after = target
        .block_device()
        .and_then(|d| kc?.device_counts(&d.name));
    let (mut r, notes) = summarize(
        &jobs,
        Counters {
            io: (io_before, io_after),
            disk: (disk_before, disk_after),
            device: target.block_device(),
            cpu: (cpu_before, cpu_after),
            block_io: target.info().no_block_io.is_none(),
            diskless: cfg.engine.caps().diskless,
            counts_resubmissions: proc_io_counts_resubmissions(cfg.engine, target),
        },
        fsync_s,
    );
    if stopped {
        // Keep the seconds measured before the signal, as fio does; nothing measured (stopped
        // in the ramp) is nothing to keep.
        if r.ios == 0 || r.seconds <= 0.0 {
            return Err(DiskError::Interrupted);
        }
        r.interrupted = true;
    }
    Ok((r, notes))
}

struct Counters<'a> {
    io: (
        Option<kernel_count::ByteCount>,
        Option<kernel_count::ByteCount>,
    ),
    disk: (
        Option<kernel_count::DeviceCount>,
        Option<kernel_count::DeviceCount>,
    ),
    device: Option<&'a DeviceNumber>,
    cpu: ((f64, f64), (f64, f64)),
    /// The target does block I/O (not tmpfs): /proc/self/io's block counts can be compared.
    block_io: bool,
    /// The engine moved no byte (fio's FIO_DISKLESSIO): the kernel's counts are kept as read
    /// but compared with nothing.
    diskless: bool,
    /// /proc/self/io counts an I/O again each time the kernel resubmits it
    /// ([`proc_io_counts_resubmissions`]): kept as read, compared with nothing.
    counts_resubmissions: bool,
}

/// Whether `/proc/self/io` counts some of `engine`'s I/Os on `target` twice, so that it is no
/// cross-check there. The task's bytes are counted when a bio is submitted: reads in
/// `submit_bio()` (block/blk-core.c), a block device's direct writes in block/fops.c. An
/// engine that issues without blocking first (io_uring: IOCB_NOWAIT, so REQ_NOWAIT bios on a
/// block device) gets an I/O back with EAGAIN when the block layer would have to wait or split
/// it (`bio_split_rw_at()`, block/blk-merge.c: "We can't sanely support splitting for a
/// REQ_NOWAIT bio"; no free request: more in flight than nr_requests), and io_uring issues it
/// again from its worker thread, which belongs to this process: counted once per submission.
/// Measured on a loop device (kernel 6.18): 1 MiB reads at QD1 from 4 KiB pages (256 segments
/// over max_segments 128) +100 %, 4 KiB reads at QD256 x 2 jobs over nr_requests 128 +72 %;
/// psync, which blocks, 0 %; /proc/diskstats, counted as the device completes requests, 0 %
/// in every case. A file's direct reads go through the filesystem (iomap), which does not
/// submit REQ_NOWAIT reads: exact there.
fn proc_io_counts_resubmissions(engine: &dyn Engine, target: &Target) -> bool {
    engine.caps().nowait_issue && target.info().kind == model::disk::TargetKind::BlockDevice
}

fn summarize(jobs: &[JobOutcome], c: Counters, fsync_s: Option<f64>) -> (RunResult, Vec<String>) {
    let mut lat = LatencyRecorder::new();
    let mut clat = LatencyRecorder::new();
    let mut dirs = [DirectionRecorder::new(), DirectionRecorder::new()];
    let (mut rb, mut wb, mut ios, mut all_r, mut all_w) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut notes = Vec::new();
    // Measured window: from the earliest job's ramp end to the latest job's last completion,
    // so the rate covers every measured byte.
    let first = jobs.iter().map(|j| j.measure_start).min();
    let last = jobs.iter().map(|j| j.measure_end).max();
    for j in jobs {
        lat.add(&j.lat);
        clat.add(&j.clat);
        for (d, jd) in dirs.iter_mut().zip(&j.dirs) {
            d.add(jd);
        }
        rb += j.measured_read;
        wb += j.measured_write;
        ios += j.measured_ios;
        all_r += j.all_read;
        all_w += j.all_write;
        for n in &j.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let seconds = match (first, last) {
        (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let bytes = rb + wb;
    let rate = if seconds > 0.0 {
        bytes as f64 / seconds
    } else {
        0.0
    };
    let (user, sys) = (c.cpu.1 .0 - c.cpu.0 .0, c.cpu.1 .1 - c.cpu.0 .1);
    let all_ios = jobs.iter().map(|j| j.measured_ios).sum::<u64>().max(1);
    let (pr, pw) = match c.io {
        (Some(a), Some(b)) => (
            Some(b.read_bytes.saturating_sub(a.read_bytes)),
            Some(b.write_bytes.saturating_sub(a.write_bytes)),
        ),
        _ => (None, None),
    };
    let (dr, dw, dqr, dqw) = match c.disk {
        (Some(a), Some(b)) => (
            Some(b.bytes.read_bytes.saturating_sub(a.bytes.read_bytes)),
            Some(b.bytes.write_bytes.saturating_sub(a.bytes.write_bytes)),
            Some(b.read_requests.saturating_sub(a.read_requests)),
            Some(b.write_requests.saturating_sub(a.write_requests)),
        ),
        _ => (None, None, None, None),
    };
    let app = all_r + all_w;
    let cross_check = CrossCheck {
        app_read_bytes: all_r,
        app_write_bytes: all_w,
        proc_io_read_bytes: pr,
        proc_io_write_bytes: pw,
        proc_io_error_percent: pr
            .zip(pw)
            .filter(|_| c.block_io && !c.diskless && !c.counts_resubmissions)
            .and_then(|(r, w)| error_percent(r + w, app)),
        diskstats_device: c.device.map(|d| d.name.clone()),
        diskstats_read_bytes: dr,
        diskstats_write_bytes: dw,
        diskstats_error_percent: dr
            .zip(dw)
            .filter(|_| !c.diskless)
            .and_then(|(r, w)| error_percent(r + w, app)),
        app_ios: jobs.iter().map(|j| j.all_ios).sum(),
        diskstats_read_requests: dqr,
        diskstats_write_requests: dqw,
    };
    let result = RunResult {
        seconds,
        bytes,
        read_bytes: rb,
        write_bytes: wb,
        ios,
        mb_per_s: rate / model::units::MB,
        mib_per_s: rate / model::units::MIB,
        iops: if seconds > 0.0 {
            ios as f64 / seconds
        } else {
            0.0
        },
        latency: if ios > 0 {
            lat.summary()
        } else {
            Latency::default()
        },
        clat: if ios > 0 {
            clat.summary()
        } else {
            Latency::default()
        },
        in_flight: jobs
            .iter()
            .map(JobOutcome::mean_in_flight)
            .sum::<Option<f64>>()
            .filter(|_| ios > 0),
        cpu_user_s: user,
        cpu_system_s: sys,
        cpu_us_per_io: (user + sys) * 1e6 / all_ios as f64,
        fsync_s,
        cross_check,
        interrupted: false,
        by_direction: Some(Box::new(model::disk::ByDirection {
            read: dirs[0].detail(),
            write: dirs[1].detail(),
        })),
    };
    (result, notes)
}

fn sample_progress<T>(
    cfg: &Ctx,
    spec: &TestSpec,
    run_no: u32,
    shared: &RunShared,
    start: Instant,
    ramp: Duration,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
) {
    let f = cfg.progress;
    let name = spec.name();
    let mut last_bytes = 0;
    let mut last_t = start;
    let finished = || handles.iter().all(|h| h.is_finished());
    // Bounded by the jobs, which are bounded by runtime (each loop checks its deadline).
    while !finished() {
        // A sample every 200 ms; the jobs' end is seen within 10 ms, so a short run is not
        // stretched to the sampling interval.
        let tick = Instant::now();
        while tick.elapsed() < Duration::from_millis(200) && !finished() {
            std::thread::sleep(Duration::from_millis(10));
        }
        if finished() {
            break;
        }
        let now = Instant::now();
        let b = shared.bytes_done.load(Ordering::Relaxed);
        let dt = (now - last_t).as_secs_f64();
        let elapsed = now - start;
        f(&Progress {
            test: &name,
            run: run_no,
            runs: cfg.parameters.runs,
            phase: if elapsed < ramp {
                Phase::Ramp
            } else {
                Phase::Run
            },
            elapsed,
            bytes_per_sec: if dt > 0.0 {
                (b - last_bytes) as f64 / dt
            } else {
                0.0
            },
        });
        last_bytes = b;
        last_t = now;
    }
}

#[cfg(test)]
mod tests {
    use super::super::null;
    use super::*;
    use model::disk::{Pattern, Workload};

    fn run_with(j: &[(u64, u64)]) -> RunResult {
        let t0 = Instant::now();
        let jobs: Vec<JobOutcome> = j
            .iter()
            .map(|&(bytes, ns)| {
                let mut lat = LatencyRecorder::new();
                lat.record(Duration::from_nanos(ns));
                // clat: the submission took 100 ns of each I/O.
                let mut clat = LatencyRecorder::new();
                clat.record(Duration::from_nanos(ns.saturating_sub(100)));
                let mut read = DirectionRecorder::new();
                read.record(
                    t0,
                    t0 + Duration::from_nanos(100),
                    t0 + Duration::from_nanos(ns),
                    bytes,
                );
                JobOutcome {
                    lat,
                    clat,
                    dirs: [read, DirectionRecorder::new()],
                    measured_read: bytes,
                    measured_write: 0,
                    measured_ios: 1,
                    all_ios: 1,
                    all_read: bytes,
                    all_write: 0,
                    measure_start: t0,
                    measure_end: t0 + Duration::from_secs(2),
                    in_flight_ns: 1e9,
                    in_flight_until: t0 + Duration::from_secs(2),
                    notes: vec![],
                }
            })
            .collect();
        let io = |r| {
            Some(kernel_count::ByteCount {
                read_bytes: r,
                write_bytes: 0,
            })
        };
        summarize(
            &jobs,
            Counters {
                io: (io(1000), io(1000 + 4_040_000)),
                disk: (None, None),
                device: None,
                cpu: ((1.0, 2.0), (1.5, 2.5)),
                block_io: true,
                diskless: false,
                counts_resubmissions: false,
            },
            None,
        )
        .0
    }

    #[test]
    fn summary_rates_use_both_units_and_cross_check_is_a_signed_percent() {
        let r = run_with(&[(2_000_000, 1000), (2_000_000, 3000)]);
        assert_eq!(r.bytes, 4_000_000);
        assert!((r.seconds - 2.0).abs() < 1e-9);
        assert!((r.mb_per_s - 2.0).abs() < 1e-9);
        assert!((r.mib_per_s - 4_000_000.0 / 2.0 / 1_048_576.0).abs() < 1e-9);
        assert!((r.iops - 1.0).abs() < 1e-9);
        assert_eq!((r.latency.min_ns, r.latency.max_ns), (1000, 3000));
        assert!((r.latency.mean_ns - 2000.0).abs() < 5.0);
        assert_eq!((r.clat.min_ns, r.clat.max_ns), (900, 2900));
        // 4.04 MB counted by the kernel against 4.00 MB by the engine: +1 %.
        assert!((r.cross_check.proc_io_error_percent.unwrap() - 1.0).abs() < 1e-9);
        assert!((r.cpu_us_per_io - 500_000.0).abs() < 1e-6);
        // Reads and writes apart, for fio's JSON: the jobs' two reads, no write; slat the
        // 100 ns each took to submit; exact mean and sample deviation (1000 and 3000 ns).
        let by = r.by_direction.as_deref().unwrap();
        assert_eq!(
            (by.read.ios, by.read.bytes, by.write.ios),
            (2, 4_000_000, 0)
        );
        let lat = &by.read.lat.moments;
        assert_eq!(
            (lat.n, lat.min_ns, lat.max_ns, lat.mean_ns),
            (2, 1000, 3000, 2000.0)
        );
        assert!((lat.stddev_ns() - 2_000_000f64.sqrt()).abs() < 1e-9);
        assert_eq!((by.read.slat.n, by.read.slat.mean_ns), (2, 100.0));
        let counted: u64 = by.read.clat.buckets.iter().map(|b| b.1).sum();
        assert_eq!(counted, 2);
    }

    /// Run `spec` with the null engine on a small prepared file: the runner's own arithmetic.
    fn null_run(spec: TestSpec, time_based: bool, runtime_s: f64) -> RunResult {
        null_run_after(spec, time_based, runtime_s, 0.0)
    }

    /// [`null_run`] after a ramp of `ramp_s`, which the measurement leaves out.
    fn null_run_after(spec: TestSpec, time_based: bool, runtime_s: f64, ramp_s: f64) -> RunResult {
        let dir = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let opts = target::TargetOptions {
            size: 4 << 20,
            direct: false,
            writes: true,
            ..Default::default()
        };
        let insp = target::inspect(dir.path()).unwrap();
        let t = target::prepare(insp, None, None, &[], &opts, &stop, None).unwrap();
        let mut parameters = crate::disk::test_parameters();
        parameters.runs = 1;
        parameters.pause_s = 0.0;
        parameters.time_based = time_based;
        parameters.runtime_s = runtime_s;
        parameters.ramp_s = ramp_s;
        parameters.direct = false;
        let r = DiskRun {
            parameters,
            tests: vec![spec],
            engine: &null::NullEngine,
            after_test: None,
            kernel_counts: None,
            target: &t,
            system: HostFacts::default(),
        }
        .run(&stop, |_: &Progress| {})
        .unwrap();
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("null engine does no I/O")));
        let run = r.tests[0].runs[0].clone();
        // Diskless (fio's FIO_DISKLESSIO): the kernel's counts are read, never compared.
        assert_eq!(run.cross_check.proc_io_error_percent, None);
        assert_eq!(run.cross_check.diskstats_error_percent, None);
        assert!(
            !r.notes.iter().any(|n| n.contains("cross-check")),
            "{:?}",
            r.notes
        );
        run
    }

    #[test]
    fn size_based_runs_cover_each_job_region_exactly_once() {
        let r = null_run(
            TestSpec::new("s", Workload::READ, 64 << 10, 8, 1),
            false,
            60.0,
        );
        assert_eq!((r.bytes, r.ios, r.read_bytes), (4 << 20, 64, 4 << 20));
        // Three sequential jobs split 4 MiB into 3 regions of 21 blocks of 64 KiB.
        let r = null_run(
            TestSpec::new("s", Workload::WRITE, 64 << 10, 4, 3),
            false,
            60.0,
        );
        assert_eq!((r.bytes, r.ios), (3 * 21 * (64 << 10), 63));
        assert_eq!(r.write_bytes, r.bytes);
        assert_eq!(r.cross_check.app_write_bytes, r.bytes);
    }

    /// A queue depth of 32 keeps 32 I/Os in flight, as fio's iodepth does: each completion's
    /// slot is refilled before the next completion is taken, so the count is 31 only while
    /// one slot is refilled, whatever the machine's speed; the result's IOPS times its mean
    /// latency (Little's law) is the same number. (Taking a whole batch of completions before
    /// refilling any would leave slots empty while the others are handled and refilled.)
    #[test]
    fn a_queue_depth_of_32_keeps_32_ios_in_flight() {
        // After a ramp, so the first fill is not measured.
        let r = null_run_after(
            TestSpec::new("q", Workload::RANDREAD, 4096, 32, 1),
            true,
            0.5,
            0.1,
        );
        let little = r.iops * r.latency.mean_ns / 1e9;
        assert!((31.0..=32.0).contains(&little), "Little's law: {little}");
        let counted = r.in_flight.unwrap();
        assert!((31.0..=32.0).contains(&counted), "counted: {counted}");
        assert!((little - counted).abs() < 0.3, "{little} vs {counted}");
        // At depth 1, one at a time: never more.
        let r = null_run_after(
            TestSpec::new("q", Workload::RANDREAD, 4096, 1, 1),
            true,
            0.5,
            0.1,
        );
        let counted = r.in_flight.unwrap();
        assert!((0.0..=1.0).contains(&counted), "counted: {counted}");
    }

    #[test]
    fn mixed_workload_follows_the_read_percentage() {
        let mix = Workload {
            pattern: Pattern::Random,
            read_percent: 70,
        };
        // Size-based: 4 MiB of 4 KiB I/Os, 1024 of them, whatever the machine's speed.
        let r = null_run(TestSpec::new("m", mix, 4096, 16, 1), false, 600.0);
        assert_eq!(r.ios, 1024);
        let reads = r.read_bytes as f64 / r.bytes as f64;
        assert!((0.65..0.75).contains(&reads), "{reads}");
        assert!(r.latency.min_ns <= r.latency.p50_ns && r.latency.p50_ns <= r.latency.max_ns);
    }
}
