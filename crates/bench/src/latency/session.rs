//! A session: the measuring threads set up and parked (privileges obtained), then released
//! together, watched until their limits or the stop flag, and their results collected.

use super::config::LatencyError;
use super::rt::*;
use super::wakeups::WakeupTap;
use super::NS_PER_US;
use crate::{Bench, Phase, Phased, Stop};
use model::latency::{
    merge, Config, Live, Measurement, Privileges, Recorder, Stats, Step, StopReason, ThreadResult,
};
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Stack of a measuring thread. The loop needs a few KiB; under `mlockall(MCL_FUTURE)` every
/// byte of it is locked, and std's 2 MiB default would exhaust an 8 MiB RLIMIT_MEMLOCK
/// (the usual default for a non-root user) at the second thread.
const THREAD_STACK: usize = 256 << 10;

/// One thread's live numbers, alone on its cache lines (128 bytes: two lines, as the
/// adjacent-line prefetcher of x86 pairs them): each thread stores into its cell on every
/// wake-up, and cells sharing a line would bounce it between the measured CPUs.
#[derive(Default)]
#[repr(align(128))]
struct LiveCell {
    tid: AtomicU64,
    cycles: AtomicU64,
    act_ns: AtomicU64,
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    sum_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Parked,
    Go,
    Abort,
}

struct Shared {
    stop: AtomicBool,
    start_ns: AtomicU64,
    gate: Mutex<Gate>,
    gate_moved: Condvar,
    live: Vec<LiveCell>,
    /// `Config::record_wakeups`: each thread's wake-ups, for the caller.
    wakeups: Option<WakeupTap>,
}

impl Shared {
    fn set_gate(&self, g: Gate) {
        // A poisoned lock only means a thread panicked holding it; the state is a plain enum.
        *self.gate.lock().unwrap_or_else(|e| e.into_inner()) = g;
        self.gate_moved.notify_all();
    }

    fn wait_gate(&self, limit: Duration) -> Gate {
        let since = Instant::now();
        let mut g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        while *g == Gate::Parked && since.elapsed() < limit {
            g = self
                .gate_moved
                .wait_timeout(g, Duration::from_secs(1))
                .map_or_else(|e| e.into_inner().0, |r| r.0);
        }
        *g
    }
}

/// Threads set up and parked, privileges obtained; nothing measured yet.
pub struct Session {
    config: Config,
    privileges: Privileges,
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<(ThreadResult, StopReason)>>,
    _dma_latency: Option<File>,
}

impl Session {
    /// Validate, lock memory, hold cpu_dma_latency, start the threads with their
    /// scheduling and affinity, and park them. Privilege refusals are recorded, not errors:
    /// the caller decides whether such a run is worth measuring.
    pub fn prepare(config: Config) -> Result<Session, LatencyError> {
        let available = available_cpus();
        config.validate(&available)?;
        let skip = config.skip_privileged_steps;
        let refused_by_test = || Step::Refused("skipped (privileged steps disabled)".into());
        let (cpu_dma_latency_held, dma_file) = if !config.hold_dma_latency {
            (Step::NotRequested, None)
        } else if skip {
            (refused_by_test(), None)
        } else {
            hold_dma_latency()
        };

        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            start_ns: AtomicU64::new(0),
            gate: Mutex::new(Gate::Parked),
            gate_moved: Condvar::new(),
            live: (0..config.threads).map(|_| LiveCell::default()).collect(),
            wakeups: config
                .record_wakeups
                .then(|| WakeupTap::new(config.threads)),
        });
        let (tx, rx) = mpsc::channel::<(usize, Result<Step, String>)>();
        let mut handles = Vec::with_capacity(config.threads);
        for i in 0..config.threads {
            let cfg = config.clone();
            let shared_t = Arc::clone(&shared);
            let tx_t = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("latency-{i}"))
                .stack_size(THREAD_STACK)
                .spawn(move || measure_thread(i, &cfg, &shared_t, &tx_t));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Release the threads already parked, then report.
                    shared.set_gate(Gate::Abort);
                    drop(tx);
                    join_all(handles);
                    return Err(LatencyError::Thread {
                        thread: i,
                        reason: e.to_string(),
                    });
                }
            }
        }
        drop(tx);
        let mut sched_fifo = if config.priority == 0 {
            Step::NotRequested
        } else {
            Step::Done
        };
        let mut failure = None;
        for _ in 0..config.threads {
            match rx.recv() {
                Ok((_, Ok(step))) => {
                    if step.is_refused() && !sched_fifo.is_refused() {
                        sched_fifo = step;
                    }
                }
                Ok((i, Err(reason))) => failure = Some((i, reason)),
                Err(_) => {
                    failure = Some((0, "a measuring thread ended during setup".into()));
                    break;
                }
            }
        }
        // Lock memory once the threads exist and have allocated and touched their
        // histograms: MCL_CURRENT then covers everything the loop uses, and a locked-memory
        // limit too small for it (RLIMIT_MEMLOCK, 8 MiB for a plain user) is one refused
        // call here instead of a failed allocation later.
        let memory_locked = if !config.lock_memory {
            Step::NotRequested
        } else if skip {
            refused_by_test()
        } else {
            lock_memory()
        };
        let session = Session {
            config,
            privileges: Privileges {
                sched_fifo,
                memory_locked,
                cpu_dma_latency_held,
            },
            shared,
            handles,
            _dma_latency: dma_file,
        };
        if let Some((thread, reason)) = failure {
            drop(session);
            return Err(LatencyError::Thread { thread, reason });
        }
        Ok(session)
    }

    pub fn privileges(&self) -> &Privileges {
        &self.privileges
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The measuring threads' wake-ups as they happen (`Config::record_wakeups`), to drain
    /// while [`Session::run`] measures.
    pub fn wakeups(&self) -> Option<WakeupTap> {
        self.shared.wakeups.clone()
    }

    /// Measure until the limits, or until `interrupt` becomes true (Ctrl-C). `progress` is
    /// called about every `progress_every` with live numbers (from this thread).
    pub fn run(
        mut self,
        interrupt: &AtomicBool,
        progress_every: Duration,
        mut progress: impl FnMut(&[Live]),
    ) -> Result<Measurement, LatencyError> {
        let start = now_ns(libc::CLOCK_MONOTONIC);
        self.shared.start_ns.store(start, Ordering::SeqCst);
        self.shared.set_gate(Gate::Go);
        let started = Instant::now();
        // Bounded: the threads end by duration or loop count; the longest possible run is
        // the loop count times the longest interval, plus slack.
        let longest = self
            .config
            .interval_of(self.config.threads.saturating_sub(1));
        let by_loops = self
            .config
            .limits
            .loops
            .map(|n| longest.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX)));
        let bound = match (self.config.limits.duration, by_loops) {
            (Some(d), Some(l)) => d.min(l),
            (Some(d), None) => d,
            (None, Some(l)) => l,
            (None, None) => Duration::ZERO,
        } + longest * 2
            + Duration::from_secs(2);
        let tick = progress_every.clamp(Duration::from_millis(10), Duration::from_secs(5));
        let mut interrupted = false;
        let mut last_progress = Instant::now();
        while self.handles.iter().any(|h| !h.is_finished()) {
            if interrupt.load(Ordering::SeqCst) || started.elapsed() > bound {
                interrupted = interrupt.load(Ordering::SeqCst);
                self.shared.stop.store(true, Ordering::SeqCst);
            }
            // 10 ms, like cyclictest's main thread (100 wake-ups a second, counted from its
            // voluntary context switches): on an otherwise idle CPU, and above all in a VM
            // where an idle vCPU halts, how often the CPUs wake changes the latencies
            // measured, so the two tools must not differ here.
            std::thread::sleep(tick.min(Duration::from_millis(10)));
            if last_progress.elapsed() >= tick {
                last_progress = Instant::now();
                progress(&self.live());
            }
        }
        progress(&self.live());
        let elapsed_ns = started.elapsed().as_nanos() as u64;
        if self.privileges.memory_locked.is_done() && memlock_limited() {
            // Measurement over: building the report must not run into the lock limit (with
            // MCL_FUTURE every later allocation is locked too). Without a limit that bites
            // (root) the unlock is skipped: it walks every locked page, 0.7 ms of a short
            // run's CPU time (perf record of `bench latency -l 1`).
            // SAFETY: no arguments.
            unsafe { libc::munlockall() };
        }
        let mut threads = Vec::new();
        let mut reasons = Vec::new();
        for (i, h) in std::mem::take(&mut self.handles).into_iter().enumerate() {
            match h.join() {
                Ok((r, why)) => {
                    threads.push(r);
                    reasons.push(why);
                }
                Err(_) => {
                    return Err(LatencyError::Thread {
                        thread: i,
                        reason: "the measuring thread panicked".into(),
                    })
                }
            }
        }
        let stopped_by = if interrupted {
            StopReason::Interrupted
        } else if reasons.contains(&StopReason::Threshold) {
            StopReason::Threshold
        } else if reasons.contains(&StopReason::Duration) {
            StopReason::Duration
        } else {
            StopReason::Loops
        };
        let per: Vec<&Stats> = threads.iter().map(|t| &t.stats).collect();
        let total = merge(&per, self.config.keep_largest);
        Ok(Measurement {
            privileges: self.privileges.clone(),
            elapsed_ns,
            stopped_by,
            threads,
            total,
        })
    }

    /// The live numbers of every thread now.
    pub fn live(&self) -> Vec<Live> {
        self.shared
            .live
            .iter()
            .enumerate()
            .map(|(i, c)| Live {
                thread: i,
                tid: c.tid.load(Ordering::Relaxed) as i32,
                cycles: c.cycles.load(Ordering::Relaxed),
                act_ns: c.act_ns.load(Ordering::Relaxed),
                min_ns: c.min_ns.load(Ordering::Relaxed),
                max_ns: c.max_ns.load(Ordering::Relaxed),
                sum_ns: c.sum_ns.load(Ordering::Relaxed),
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Dropped without `run` (setup refused, caller declined): release the parked
        // threads and tell them to leave.
        if !self.handles.is_empty() {
            self.shared.set_gate(Gate::Abort);
            join_all(std::mem::take(&mut self.handles));
        }
    }
}

fn join_all(handles: Vec<JoinHandle<(ThreadResult, StopReason)>>) {
    for h in handles {
        let _ = h.join();
    }
}

fn measure_thread(
    i: usize,
    cfg: &Config,
    shared: &Shared,
    tx: &mpsc::Sender<(usize, Result<Step, String>)>,
) -> (ThreadResult, StopReason) {
    let cpu = cfg.cpu_of(i);
    let interval_ns = cfg.interval_of(i).as_nanos() as u64;
    let mut rec = Recorder::new(i, cfg);
    let cell = &shared.live[i];
    let tid = gettid();
    cell.tid.store(tid as u64, Ordering::Relaxed);
    let ring = shared.wakeups.as_ref().and_then(|t| t.ring(i));
    if let Some(r) = ring {
        r.set_tid(tid);
    }
    let stop_ns = cfg
        .stop_above
        .map_or(u64::MAX, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
    let setup = (|| {
        if let Some(c) = cpu {
            set_affinity(c)?;
        }
        Ok(if cfg.priority == 0 {
            Step::NotRequested
        } else if cfg.skip_privileged_steps {
            Step::Refused("skipped (privileged steps disabled)".into())
        } else {
            set_fifo(cfg.priority)
        })
    })();
    let setup_failed = setup.is_err();
    // The priority the thread really runs at (0 = SCHED_OTHER), as cyclictest's `P:` shows.
    let priority = match &setup {
        Ok(Step::Done) => cfg.priority,
        _ => 0,
    };
    let _ = tx.send((i, setup));
    let empty = |rec: Recorder| ThreadResult {
        thread: i,
        tid,
        cpu,
        last_cpu: current_cpu(),
        priority,
        interval_us: interval_ns / NS_PER_US,
        stats: rec.stats(),
        cpu_time_ns: 0,
        cpu_time_per_wakeup_ns: 0.0,
    };
    if setup_failed {
        return (empty(rec), StopReason::Interrupted);
    }
    // Park until `run` opens the gate (all threads then start within microseconds of each
    // other, as cyclictest's do after its barrier: their timers' phases matter when two
    // threads share a CPU), or leave when the session is dropped. Bounded: 1 h.
    if shared.wait_gate(Duration::from_secs(3600)) != Gate::Go {
        return (empty(rec), StopReason::Interrupted);
    }

    let start = shared.start_ns.load(Ordering::SeqCst);
    let end = cfg
        .limits
        .duration
        .map_or(u64::MAX, |d| start + d.as_nanos() as u64);
    let loops = cfg.limits.loops.unwrap_or(u64::MAX);
    let cpu0 = now_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    let mut next = now_ns(libc::CLOCK_MONOTONIC) + interval_ns;
    let mut sum_ns: u64 = 0;
    let why = loop {
        if shared.stop.load(Ordering::Relaxed) {
            break StopReason::Interrupted;
        }
        if rec.count() >= loops {
            break StopReason::Loops;
        }
        if next > end {
            break StopReason::Duration;
        }
        sleep_until(next);
        let now = now_ns(libc::CLOCK_MONOTONIC);
        let latency = now.saturating_sub(next);
        rec.record(latency, next - start);
        if let Some(r) = ring {
            r.push(next, now, rec.count() - 1);
        }
        sum_ns = sum_ns.wrapping_add(latency);
        cell.cycles.store(rec.count(), Ordering::Relaxed);
        cell.act_ns.store(latency, Ordering::Relaxed);
        cell.min_ns.store(rec.min_ns(), Ordering::Relaxed);
        cell.max_ns.store(rec.max_ns(), Ordering::Relaxed);
        cell.sum_ns.store(sum_ns, Ordering::Relaxed);
        if latency >= stop_ns {
            // `--analyze`: this wake-up is the one to explain; the others stop too.
            shared.stop.store(true, Ordering::Relaxed);
            break StopReason::Threshold;
        }
        next += interval_ns;
        // A wake-up so late that the next period is already due: cyclictest advances
        // silently; we count every period skipped (within the run: a period due after the
        // end of the run was never part of it).
        while next <= now {
            if next <= end {
                rec.add_missed();
            }
            next += interval_ns;
        }
    };
    let cpu_time_ns = now_ns(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu0);
    let count = rec.count();
    let last_cpu = current_cpu();
    (
        ThreadResult {
            thread: i,
            tid,
            cpu,
            last_cpu,
            priority,
            interval_us: interval_ns / NS_PER_US,
            stats: rec.stats(),
            cpu_time_ns,
            cpu_time_per_wakeup_ns: if count == 0 {
                0.0
            } else {
                cpu_time_ns as f64 / count as f64
            },
        },
        why,
    )
}

/// `bench latency`'s progress through [`Bench::run`]: every measuring thread's live numbers (cyclictest's `T:` lines).
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    pub threads: &'a [Live],
    pub elapsed: Duration,
}

impl Phased for Progress<'_> {
    fn phase(&self) -> Phase {
        // The session's threads are started and parked by `Session::prepare`: a running
        // session is measuring from its first wake-up.
        Phase::Run
    }
    fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// How often a latency session reports progress through [`Bench::run`] (the command line's
/// live display redraws as often).
pub const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The latency engine in the run shape of every engine ([`crate::Bench`]): the prepared
/// session in, the stop flag and the progress callback with `run`.
impl Bench for Session {
    const KIND: &'static str = "latency";
    type Progress<'p> = Progress<'p>;
    type Measurement = Measurement;
    type Error = LatencyError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<Measurement, LatencyError>
    where
        F: for<'p> Fn(&Progress<'p>) + Sync,
    {
        let start = std::time::Instant::now();
        Session::run(self, stop, PROGRESS_EVERY, |threads| {
            progress(&Progress {
                threads,
                elapsed: start.elapsed(),
            })
        })
    }

    fn interrupted(m: &Measurement) -> bool {
        m.stopped_by == StopReason::Interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::test_config as cfg;
    use super::*;
    use model::latency::Limits;

    fn run(c: Config) -> Measurement {
        let s = Session::prepare(c).unwrap();
        let stop = AtomicBool::new(false);
        s.run(&stop, Duration::from_millis(100), |_| {}).unwrap()
    }

    #[test]
    fn real_run_one_thread_loops() {
        let m = run(Config {
            skip_privileged_steps: true,
            ..cfg()
        });
        assert_eq!(m.threads.len(), 1);
        assert_eq!(m.stopped_by, StopReason::Loops);
        let t = &m.threads[0];
        assert_eq!(t.stats.count, 200);
        assert_eq!(t.stats.histogram.total(), 200);
        assert!(t.stats.min_ns <= t.stats.max_ns);
        assert!(m.privileges.sched_fifo.is_refused());
        assert!(m.privileges.memory_locked.is_refused());
        assert_eq!(t.priority, 0, "refused SCHED_FIFO: normal scheduling");
    }

    #[test]
    fn real_run_two_threads_duration() {
        let m = run(Config {
            threads: 2,
            skip_privileged_steps: true,
            limits: Limits {
                duration: Some(Duration::from_millis(300)),
                loops: None,
            },
            ..cfg()
        });
        assert_eq!(m.stopped_by, StopReason::Duration);
        assert_eq!(m.threads[1].interval_us, 1500);
        for t in &m.threads {
            assert!(t.stats.count > 0);
            assert_eq!(t.stats.histogram.total(), t.stats.count);
            // A 300 ms run of period P has at most 300 ms / P wake-ups plus missed ones.
            let periods = 300_000 / t.interval_us;
            assert!(t.stats.count + t.stats.missed_periods <= periods, "{t:?}");
        }
        assert_eq!(
            m.total.count,
            m.threads[0].stats.count + m.threads[1].stats.count
        );
        assert_eq!(m.total.histogram.total(), m.total.count);
    }

    #[test]
    fn interrupt_stops_early() {
        let s = Session::prepare(Config {
            skip_privileged_steps: true,
            limits: Limits {
                duration: Some(Duration::from_secs(30)),
                loops: None,
            },
            ..cfg()
        })
        .unwrap();
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let mut calls = 0;
        let m = s
            .run(&stop, Duration::from_millis(20), |_| {
                calls += 1;
                if calls == 5 {
                    stop.store(true, Ordering::SeqCst);
                }
            })
            .unwrap();
        assert_eq!(m.stopped_by, StopReason::Interrupted);
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert_eq!(m.total.histogram.total(), m.total.count);
    }

    #[test]
    fn recorded_wakeups_are_every_measured_one_and_a_threshold_stops_the_run() {
        let s = Session::prepare(Config {
            threads: 2,
            skip_privileged_steps: true,
            record_wakeups: true,
            ..cfg()
        })
        .unwrap();
        let tap = s.wakeups().unwrap();
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        let m = s
            .run(&stop, Duration::from_millis(20), |_| {
                tap.drain(&mut seen);
            })
            .unwrap();
        tap.drain(&mut seen);
        for t in &m.threads {
            let mine: Vec<_> = seen.iter().filter(|w| w.thread == t.thread).collect();
            assert_eq!(mine.len() as u64, t.stats.count);
            assert!(mine.iter().all(|w| w.tid == t.tid));
            let max = mine.iter().map(|w| w.latency_ns()).max().unwrap();
            assert_eq!(max, t.stats.max_ns);
        }
        // Stop at the first wake-up of 0 ns or more: the first one.
        let s = Session::prepare(Config {
            skip_privileged_steps: true,
            stop_above: Some(Duration::ZERO),
            ..cfg()
        })
        .unwrap();
        let m = s.run(&stop, Duration::from_millis(20), |_| {}).unwrap();
        assert_eq!(m.stopped_by, StopReason::Threshold);
        assert_eq!(m.total.count, 1);
    }

    #[test]
    fn dropping_a_prepared_session_ends_its_threads() {
        let s = Session::prepare(Config {
            threads: 2,
            skip_privileged_steps: true,
            ..cfg()
        })
        .unwrap();
        let t0 = Instant::now();
        drop(s);
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
