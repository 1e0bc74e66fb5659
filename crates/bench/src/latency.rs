//! Wake-up latency, measured the way cyclictest (rt-tests) measures it.
//!
//! One thread per measurement, SCHED_FIFO at a priority, memory locked, `/dev/cpu_dma_latency`
//! held at 0 for the run, and an absolute-time `clock_nanosleep(CLOCK_MONOTONIC,
//! TIMER_ABSTIME)` loop: latency = the time read on wake-up minus the time programmed.
//! Thread `i` sleeps `interval + i x distance` (cyclictest's `-i`/`-d`).
//!
//! Beyond cyclictest: missed periods are counted (cyclictest skips them silently), the
//! largest latencies keep their timestamps, and the maximum of every window (a minute by
//! default) is kept, so a long run shows when its spikes happened.
//!
//! The engine measures and reports what it could set up; it never judges a number.
//! Usage: [`Session::prepare`] (privileged setup, threads parked), then [`Session::run`].

use serde::{Serialize, Serializer};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const NS_PER_US: u64 = 1_000;
const NS_PER_SEC: u64 = 1_000_000_000;

/// Highest SCHED_FIFO priority on Linux (sched(7): 1..99).
pub const MAX_PRIORITY: u8 = 99;
/// How many threads per available CPU we accept. More threads than CPUs measure each
/// other's wake-ups more than the kernel's, and every thread's stack is locked in memory.
pub const MAX_THREADS_PER_CPU: usize = 4;
/// Stack of a measuring thread. The loop needs a few KiB; under `mlockall(MCL_FUTURE)` every
/// byte of it is locked, and std's 2 MiB default would exhaust an 8 MiB RLIMIT_MEMLOCK
/// (the usual default for a non-root user) at the second thread.
const THREAD_STACK: usize = 256 << 10;
/// The largest histogram we keep per thread (1 us buckets: 1 s, 8 MB per thread).
pub const MAX_HISTOGRAM_US: u32 = 1_000_000;

fn as_us<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

fn as_s<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn opt_as_s<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Where the measuring threads run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "cpus", rename_all = "snake_case")]
pub enum Affinity {
    /// Not pinned: the scheduler places the threads.
    Free,
    /// Thread `i` pinned to `cpus[i % cpus.len()]` (cyclictest `-a CPUSET`).
    Pinned(Vec<u32>),
}

/// How the run ends (the first reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Stop after this time (cyclictest `-D`).
    #[serde(rename = "duration_s", serialize_with = "opt_as_s")]
    pub duration: Option<Duration>,
    /// Stop each thread after this many wake-ups (cyclictest `-l`).
    pub loops: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    pub threads: usize,
    pub affinity: Affinity,
    /// SCHED_FIFO priority 1..=99; 0 runs the threads at SCHED_OTHER like cyclictest `-p 0`.
    pub priority: u8,
    /// Base interval (cyclictest `-i`, default 1000 us).
    #[serde(rename = "interval_us", serialize_with = "as_us")]
    pub interval: Duration,
    /// Added per thread (cyclictest `-d`, default 500 us).
    #[serde(rename = "distance_us", serialize_with = "as_us")]
    pub distance: Duration,
    pub limits: Limits,
    /// Histogram buckets of 1 us from 0 up to this limit; above goes to the overflow count.
    pub histogram_limit_us: u32,
    /// How many of the largest latencies to keep, with their timestamps.
    pub keep_largest: usize,
    /// Length of the windows whose maxima are kept (one minute like OSADL's long-term plots).
    #[serde(rename = "window_s", serialize_with = "as_s")]
    pub window: Duration,
    /// Lock memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`, cyclictest `-m`).
    pub lock_memory: bool,
    /// Hold `/dev/cpu_dma_latency` at 0 during the run (cyclictest does by default).
    pub hold_dma_latency: bool,
    /// Skip every privileged step (scheduling class, mlock, cpu_dma_latency), as an
    /// unprivileged user would get; for tests of that path on a machine where we are root.
    pub skip_privileged_steps: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: 1,
            affinity: Affinity::Free,
            priority: MAX_PRIORITY,
            interval: Duration::from_micros(1000),
            distance: Duration::from_micros(500),
            limits: Limits {
                duration: Some(Duration::from_secs(10)),
                loops: None,
            },
            histogram_limit_us: 10_000,
            keep_largest: 10,
            window: Duration::from_secs(60),
            lock_memory: true,
            hold_dma_latency: true,
            skip_privileged_steps: false,
        }
    }
}

impl Config {
    /// The interval of thread `i`.
    pub fn interval_of(&self, i: usize) -> Duration {
        self.interval + self.distance * i as u32
    }

    /// The CPU thread `i` is pinned to, if any.
    pub fn cpu_of(&self, i: usize) -> Option<u32> {
        match &self.affinity {
            Affinity::Free => None,
            Affinity::Pinned(cpus) if cpus.is_empty() => None,
            Affinity::Pinned(cpus) => Some(cpus[i % cpus.len()]),
        }
    }

    /// Check the configuration against this machine; `available` is the CPUs this process
    /// may run on. Each error is one sentence naming the flag.
    pub fn validate(&self, available: &[u32]) -> Result<(), ConfigError> {
        if self.interval.is_zero() {
            return Err(ConfigError(
                "the interval (-i/--interval) must be at least 1 us".into(),
            ));
        }
        if self.interval > Duration::from_secs(10) || self.distance > Duration::from_secs(10) {
            return Err(ConfigError(
                "the interval and distance (-i/-d) must be at most 10 s each".into(),
            ));
        }
        if self.priority > MAX_PRIORITY {
            return Err(ConfigError(format!(
                "priority {} is out of range: SCHED_FIFO priorities are 1 to {MAX_PRIORITY} \
                 (0 = normal scheduling)",
                self.priority
            )));
        }
        let max_threads = MAX_THREADS_PER_CPU * available.len().max(1);
        if self.threads == 0 || self.threads > max_threads {
            return Err(ConfigError(format!(
                "{} threads requested: between 1 and {max_threads} are allowed here \
                 ({MAX_THREADS_PER_CPU} per available CPU; more would measure each other)",
                self.threads
            )));
        }
        if let Affinity::Pinned(cpus) = &self.affinity {
            if cpus.is_empty() {
                return Err(ConfigError("the affinity list (-a) is empty".into()));
            }
            if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
                return Err(ConfigError(format!(
                    "CPU {bad} does not exist or is not available to this process \
                     (available: {}); choose CPUs from that list with -a/--affinity",
                    model::units::format_cpu_list(available)
                )));
            }
        }
        if self.histogram_limit_us == 0 || self.histogram_limit_us > MAX_HISTOGRAM_US {
            return Err(ConfigError(format!(
                "the histogram limit (-h/--histogram) must be 1 to {MAX_HISTOGRAM_US} us"
            )));
        }
        if self.window < Duration::from_secs(1) {
            return Err(ConfigError("the maxima window must be at least 1 s".into()));
        }
        if self.limits.duration.is_none() && self.limits.loops.is_none() {
            return Err(ConfigError(
                "give a duration (-D/--duration) or a loop count (-l/--loops)".into(),
            ));
        }
        if self.limits.loops == Some(0) || self.limits.duration.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError(
                "the duration and loop count must be above 0".into(),
            ));
        }
        Ok(())
    }
}

/// A configuration the machine cannot run, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("could not start measuring thread {thread}: {reason}")]
    Thread { thread: usize, reason: String },
}

/// The CPUs this process may run on (`sched_getaffinity`).
pub fn available_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as u32)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect()
}

/// One privileged step and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum Step {
    Done,
    /// Not asked for (`-p 0`, `--no-mlock`, ...).
    NotRequested,
    /// Refused by the kernel, with its words.
    Refused(String),
}

impl Step {
    pub fn is_done(&self) -> bool {
        matches!(self, Step::Done)
    }
    pub fn is_refused(&self) -> bool {
        matches!(self, Step::Refused(_))
    }
}

/// What the setup obtained. A run without these measures something else than cyclictest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Privileges {
    /// SCHED_FIFO at the requested priority, per thread (refusals repeat, so one entry).
    pub sched_fifo: Step,
    pub memory_locked: Step,
    pub cpu_dma_latency_held: Step,
}

/// Live numbers of one thread, for a progress display (cyclictest's `T:` line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    pub thread: usize,
    pub tid: i32,
    pub cycles: u64,
    pub act_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub sum_ns: u64,
}

#[derive(Default)]
struct LiveCell {
    tid: AtomicU64,
    cycles: AtomicU64,
    act_ns: AtomicU64,
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    sum_ns: AtomicU64,
}

/// A histogram of 1 us buckets `[0, limit)` plus an overflow count. Serialised sparse
/// (`[us, count]` pairs for the non-empty buckets) so a 10 ms limit costs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub overflow: u64,
}

impl Histogram {
    fn new(limit_us: u32) -> Self {
        let mut counts = vec![0u64; limit_us as usize];
        // Touch every page now, not during the measurement (a first-touch page fault would
        // be measured as latency when memory is not locked).
        for c in counts.iter_mut() {
            *c = std::hint::black_box(0);
        }
        Histogram {
            counts,
            overflow: 0,
        }
    }

    #[inline]
    fn add(&mut self, latency_ns: u64) {
        // cyclictest truncates to whole microseconds before bucketing.
        let us = (latency_ns / NS_PER_US) as usize;
        match self.counts.get_mut(us) {
            Some(c) => *c += 1,
            None => self.overflow += 1,
        }
    }

    /// The bucket limit in us.
    pub fn limit_us(&self) -> u32 {
        self.counts.len() as u32
    }

    /// All samples, buckets and overflow.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.overflow
    }

    /// The latency (us, bucket floor) below or at which `q` (0..=1) of the samples fall;
    /// `None` when that falls in the overflow or the histogram is empty. Unlike an HDR
    /// histogram's highest equivalent value (clamped in `bench disk`), a bucket floor needs no
    /// clamp: it is the truncated value of a sample in it, so it lies between the truncated
    /// min and max that cyclictest and headroom print.
    pub fn quantile_us(&self, q: f64) -> Option<u32> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (us, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(us as u32);
            }
        }
        None
    }

    fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.overflow += other.overflow;
    }
}

impl Serialize for Histogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let buckets: Vec<(usize, u64)> = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(us, &c)| (us, c))
            .collect();
        let mut st = s.serialize_struct("Histogram", 4)?;
        st.serialize_field("bucket_us", &1)?;
        st.serialize_field("limit_us", &self.limit_us())?;
        st.serialize_field("buckets", &buckets)?;
        st.serialize_field("overflow", &self.overflow)?;
        st.end()
    }
}

/// One of the largest latencies of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Spike {
    pub latency_ns: u64,
    /// When it happened: the programmed wake-up time, since the start of the run.
    pub at_ns: u64,
    /// The wake-up number (0-based) in its thread.
    pub cycle: u64,
    pub thread: usize,
}

/// The maximum latency of one window of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowMax {
    /// Window start, seconds since the start of the run.
    pub start_s: u64,
    pub max_ns: u64,
    pub count: u64,
}

/// The numbers of one thread, or of the whole run merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Mean of the exact (ns) latencies.
    pub avg_ns: f64,
    /// Latency of the last wake-up (cyclictest's `Act`).
    pub act_ns: u64,
    /// Wake-ups that came after the next one was already due; those periods were skipped.
    pub missed_periods: u64,
    pub histogram: Histogram,
    /// The largest latencies, largest first.
    pub largest: Vec<Spike>,
    pub window_maxima: Vec<WindowMax>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadResult {
    pub thread: usize,
    pub tid: i32,
    /// The CPU it was pinned to.
    pub cpu: Option<u32>,
    /// The CPU it ran on last (where the scheduler left a free thread).
    pub last_cpu: Option<u32>,
    /// The SCHED_FIFO priority it ran at; 0 = normal scheduling (refused or `-p 0`).
    pub priority: u8,
    pub interval_us: u64,
    pub stats: Stats,
    /// CPU time the thread used (CLOCK_THREAD_CPUTIME_ID), and per wake-up.
    pub cpu_time_ns: u64,
    pub cpu_time_per_wakeup_ns: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Duration,
    Loops,
    Interrupted,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    pub privileges: Privileges,
    pub elapsed_ns: u64,
    pub stopped_by: StopReason,
    pub threads: Vec<ThreadResult>,
    pub total: Stats,
}

/// Per-thread measuring state, allocated and touched before the run starts.
struct Recorder {
    thread: usize,
    hist: Histogram,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    act_ns: u64,
    missed: u64,
    largest: Vec<Spike>,
    keep: usize,
    windows: Vec<WindowMax>,
    window_ns: u64,
}

impl Recorder {
    fn new(thread: usize, cfg: &Config) -> Self {
        let window_ns = cfg.window.as_nanos() as u64;
        // Pre-size the window list for the whole run so no allocation happens in the loop.
        let expected = cfg
            .limits
            .duration
            .map(|d| (d.as_nanos() as u64 / window_ns.max(1)) as usize + 2)
            .unwrap_or(16)
            .min(1 << 20);
        Recorder {
            thread,
            hist: Histogram::new(cfg.histogram_limit_us),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            act_ns: 0,
            missed: 0,
            largest: Vec::with_capacity(cfg.keep_largest + 1),
            keep: cfg.keep_largest,
            windows: Vec::with_capacity(expected),
            window_ns,
        }
    }

    #[inline]
    fn record(&mut self, latency_ns: u64, at_ns: u64) {
        let cycle = self.count;
        self.count += 1;
        self.sum_ns += latency_ns as u128;
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.act_ns = latency_ns;
        self.hist.add(latency_ns);
        if self.keep > 0
            && (self.largest.len() < self.keep
                || self
                    .largest
                    .last()
                    .is_some_and(|s| latency_ns > s.latency_ns))
        {
            let spike = Spike {
                latency_ns,
                at_ns,
                cycle,
                thread: self.thread,
            };
            let pos = self.largest.partition_point(|s| s.latency_ns >= latency_ns);
            self.largest.insert(pos, spike);
            self.largest.truncate(self.keep);
        }
        let w = at_ns / self.window_ns.max(1);
        let start_s = w * self.window_ns / NS_PER_SEC;
        match self.windows.last_mut() {
            Some(last) if last.start_s == start_s => {
                last.max_ns = last.max_ns.max(latency_ns);
                last.count += 1;
            }
            _ => self.windows.push(WindowMax {
                start_s,
                max_ns: latency_ns,
                count: 1,
            }),
        }
    }

    fn stats(self) -> Stats {
        Stats {
            count: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
            avg_ns: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64
            },
            act_ns: self.act_ns,
            missed_periods: self.missed,
            histogram: self.hist,
            largest: self.largest,
            window_maxima: self.windows,
        }
    }
}

/// Merge per-thread stats into the whole run's.
pub fn merge(stats: &[&Stats], keep_largest: usize) -> Stats {
    let mut hist = Histogram {
        counts: Vec::new(),
        overflow: 0,
    };
    let mut count = 0;
    let mut sum = 0.0;
    let mut min_ns = u64::MAX;
    let mut max_ns = 0;
    let mut missed = 0;
    let mut largest: Vec<Spike> = Vec::new();
    let mut windows: std::collections::BTreeMap<u64, WindowMax> = Default::default();
    for s in stats {
        hist.merge(&s.histogram);
        count += s.count;
        sum += s.avg_ns * s.count as f64;
        if s.count > 0 {
            min_ns = min_ns.min(s.min_ns);
        }
        max_ns = max_ns.max(s.max_ns);
        missed += s.missed_periods;
        largest.extend_from_slice(&s.largest);
        for w in &s.window_maxima {
            let e = windows.entry(w.start_s).or_insert(WindowMax {
                start_s: w.start_s,
                max_ns: 0,
                count: 0,
            });
            e.max_ns = e.max_ns.max(w.max_ns);
            e.count += w.count;
        }
    }
    largest.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.at_ns.cmp(&b.at_ns)));
    largest.truncate(keep_largest);
    Stats {
        count,
        min_ns: if count == 0 { 0 } else { min_ns },
        max_ns,
        avg_ns: if count == 0 { 0.0 } else { sum / count as f64 },
        act_ns: stats.last().map_or(0, |s| s.act_ns),
        missed_periods: missed,
        histogram: hist,
        largest,
        window_maxima: windows.into_values().collect(),
    }
}

fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; the clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Sleep until the absolute CLOCK_MONOTONIC time `t_ns`, retrying after a signal.
fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        // `as _`: time_t is i64 or i32 (32-bit musl), and libc deprecates naming it on musl.
        tv_sec: (t_ns / NS_PER_SEC) as _,
        tv_nsec: (t_ns % NS_PER_SEC) as libc::c_long,
    };
    // Bounded: each EINTR needs a signal; a handful is plenty.
    for _ in 0..1000 {
        // SAFETY: `ts` is valid; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

fn set_affinity(cpu: u32) -> Result<(), String> {
    // SAFETY: plain data, zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu was validated against the available set, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: valid set of the size passed; 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "pinning to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

fn set_fifo(priority: u8) -> Step {
    // musl's sched_param has more fields than glibc's (the SCHED_SPORADIC ones it reserves):
    // start from zero and set the one Linux reads, so the same code builds for both.
    // SAFETY: plain data, all-zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = i32::from(priority);
    // SAFETY: valid sched_param; pid 0 = the calling thread (Linux schedules threads).
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Step::Done
    } else {
        Step::Refused(std::io::Error::last_os_error().to_string())
    }
}

fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments, returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

fn lock_memory() -> Step {
    // SAFETY: plain flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Step::Done
    } else {
        Step::Refused(std::io::Error::last_os_error().to_string())
    }
}

/// Hold the PM QoS CPU latency request at 0 us: the request lasts while the file is open
/// (Documentation/admin-guide/pm/cpuidle.rst, "CPU latency QoS"; cyclictest does the same).
fn hold_dma_latency() -> (Step, Option<File>) {
    let path = "/dev/cpu_dma_latency";
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(mut f) => match f.write_all(&0i32.to_ne_bytes()) {
            Ok(()) => (Step::Done, Some(f)),
            Err(e) => (Step::Refused(format!("{path}: {e}")), None),
        },
        Err(e) => (Step::Refused(format!("{path}: {e}")), None),
    }
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
        if self.privileges.memory_locked.is_done() {
            // Measurement over: building the report must not run into the lock limit.
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
        if rec.count >= loops {
            break StopReason::Loops;
        }
        if next > end {
            break StopReason::Duration;
        }
        sleep_until(next);
        let now = now_ns(libc::CLOCK_MONOTONIC);
        let latency = now.saturating_sub(next);
        rec.record(latency, next - start);
        sum_ns = sum_ns.wrapping_add(latency);
        cell.cycles.store(rec.count, Ordering::Relaxed);
        cell.act_ns.store(latency, Ordering::Relaxed);
        cell.min_ns.store(rec.min_ns, Ordering::Relaxed);
        cell.max_ns.store(rec.max_ns, Ordering::Relaxed);
        cell.sum_ns.store(sum_ns, Ordering::Relaxed);
        next += interval_ns;
        // A wake-up so late that the next period is already due: cyclictest advances
        // silently; we count every period skipped (within the run: a period due after the
        // end of the run was never part of it).
        while next <= now {
            if next <= end {
                rec.missed += 1;
            }
            next += interval_ns;
        }
    };
    let cpu_time_ns = now_ns(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu0);
    let count = rec.count;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config {
            limits: Limits {
                duration: None,
                loops: Some(200),
            },
            ..Config::default()
        }
    }

    #[test]
    fn intervals_follow_cyclictest() {
        let c = Config::default();
        let v: Vec<u128> = (0..4).map(|i| c.interval_of(i).as_micros()).collect();
        assert_eq!(v, vec![1000, 1500, 2000, 2500]); // seeds/001: I:1000 ... I:2500
        let p = Config {
            affinity: Affinity::Pinned(vec![2, 3]),
            ..Config::default()
        };
        assert_eq!(
            (p.cpu_of(0), p.cpu_of(1), p.cpu_of(2)),
            (Some(2), Some(3), Some(2))
        );
    }

    #[test]
    fn bad_configs_get_a_sentence() {
        let avail = [0, 1];
        let bad = |c: Config| c.validate(&avail).unwrap_err().0;
        assert!(bad(Config {
            interval: Duration::ZERO,
            ..cfg()
        })
        .contains("interval"));
        assert!(bad(Config {
            priority: 100,
            ..cfg()
        })
        .contains("priority 100"));
        assert!(bad(Config {
            threads: 9,
            ..cfg()
        })
        .contains("between 1 and 8"));
        let e = bad(Config {
            affinity: Affinity::Pinned(vec![7]),
            ..cfg()
        });
        assert!(
            e.contains("CPU 7 does not exist") && e.contains("available: 0-1"),
            "{e}"
        );
        assert!(cfg().validate(&avail).is_ok());
    }

    #[test]
    fn quantiles_lie_between_the_printed_min_and_max() {
        let mut h = Histogram::new(1000);
        let (mut min, mut max) = (u64::MAX, 0);
        for i in 0..5000u64 {
            let ns = 165_999 + (i * 7919) % 647_000;
            h.add(ns);
            min = min.min(ns);
            max = max.max(ns);
        }
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let p = u64::from(h.quantile_us(q).unwrap());
            assert!(
                (min / NS_PER_US..=max / NS_PER_US).contains(&p),
                "q {q}: {p} outside {min}..{max} ns"
            );
        }
    }

    #[test]
    fn histogram_quantiles_and_overflow() {
        let mut h = Histogram::new(10);
        for ns in [1_500, 1_999, 2_000, 9_999, 10_000, 50_000] {
            h.add(ns);
        }
        assert_eq!(h.counts[1], 2); // truncated like cyclictest
        assert_eq!(h.counts[2], 1);
        assert_eq!(h.counts[9], 1);
        assert_eq!(h.overflow, 2);
        assert_eq!(h.total(), 6);
        assert_eq!(h.quantile_us(0.5), Some(2));
        assert_eq!(h.quantile_us(0.99), None, "p99 is in the overflow");
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json["buckets"], serde_json::json!([[1, 2], [2, 1], [9, 1]]));
        assert_eq!(json["overflow"], 2);
    }

    #[test]
    fn recorder_keeps_largest_and_windows() {
        let c = Config {
            keep_largest: 3,
            window: Duration::from_secs(60),
            ..cfg()
        };
        let mut r = Recorder::new(0, &c);
        let minute = 60 * NS_PER_SEC;
        for (lat, at) in [
            (5, 0),
            (90, 10),
            (7, minute),
            (300, minute + 1),
            (40, 3 * minute),
        ] {
            r.record(lat * NS_PER_US, at);
        }
        let s = r.stats();
        let l: Vec<u64> = s.largest.iter().map(|x| x.latency_ns / NS_PER_US).collect();
        assert_eq!(l, vec![300, 90, 40]);
        assert_eq!(s.largest[0].at_ns, minute + 1);
        assert_eq!(s.largest[0].cycle, 3);
        let w: Vec<(u64, u64)> = s
            .window_maxima
            .iter()
            .map(|w| (w.start_s, w.max_ns / NS_PER_US))
            .collect();
        assert_eq!(w, vec![(0, 90), (60, 300), (180, 40)]);
        assert_eq!(s.count, 5);
        assert_eq!(s.min_ns, 5_000);
    }

    #[test]
    fn merge_sums_counts() {
        let c = cfg();
        let mut a = Recorder::new(0, &c);
        let mut b = Recorder::new(1, &c);
        a.record(3_000, 0);
        a.record(5_000, 1);
        b.record(20_000_000, 0); // above the 10 ms limit
        let (a, b) = (a.stats(), b.stats());
        let m = merge(&[&a, &b], 10);
        assert_eq!(m.count, 3);
        assert_eq!(m.histogram.total(), 3);
        assert_eq!(m.histogram.overflow, 1);
        assert_eq!((m.min_ns, m.max_ns), (3_000, 20_000_000));
        assert_eq!(m.largest[0].thread, 1);
    }

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
