//! Wake-up latency (cyclictest's measurement): what a run is asked to do, what it obtained
//! and what it measured. `bench::latency` fills these; report judges and renders them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

pub mod flags;
mod recorder;
pub mod split;
pub mod timerlat;
pub mod trace;

pub use recorder::Recorder;

/// ns per us: the histogram has 1 us buckets.
const NS_PER_US: u64 = 1_000;

/// Highest SCHED_FIFO priority on Linux (sched(7): 1..99).
pub const MAX_PRIORITY: u8 = 99;

/// How many threads per available CPU we accept. More threads than CPUs measure each
/// other's wake-ups more than the kernel's, and every thread's stack is locked in memory.
pub const MAX_THREADS_PER_CPU: usize = 4;

/// The largest histogram we keep per thread (1 us buckets: 1 s, 8 MB per thread).
pub const MAX_HISTOGRAM_US: u32 = 1_000_000;

/// A duration as whole microseconds (`#[serde(with = "us")]`).
mod us {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_micros() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_micros)
    }
}

/// An optional duration as whole microseconds or null (`#[serde(with = "opt_us")]`).
mod opt_us {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_micros() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_micros))
    }
}

/// Seconds as a document writes them; a negative or non-finite number is an error.
fn secs(s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|e| format!("{s} is not a duration in seconds: {e}"))
}

/// A duration as seconds (`#[serde(with = "seconds")]`).
mod seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        secs(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// An optional duration as seconds or null (`#[serde(with = "opt_seconds")]`).
mod opt_seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(secs)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

/// Where the measuring threads run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "cpus", rename_all = "snake_case")]
pub enum Affinity {
    /// Not pinned: the scheduler places the threads.
    Free,
    /// Thread `i` pinned to `cpus[i % cpus.len()]` (cyclictest `-a CPUSET`).
    Pinned(Vec<u32>),
}

/// How the run ends (the first reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Stop after this time (cyclictest `-D`).
    #[serde(rename = "duration_s", with = "opt_seconds")]
    pub duration: Option<Duration>,
    /// Stop each thread after this many wake-ups (cyclictest `-l`).
    pub loops: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub threads: usize,
    pub affinity: Affinity,
    /// SCHED_FIFO priority 1..=99; 0 runs the threads at SCHED_OTHER like cyclictest `-p 0`.
    pub priority: u8,
    /// Base interval (cyclictest `-i`, default 1000 us).
    #[serde(rename = "interval_us", with = "us")]
    pub interval: Duration,
    /// Added per thread (cyclictest `-d`, default 500 us).
    #[serde(rename = "distance_us", with = "us")]
    pub distance: Duration,
    pub limits: Limits,
    /// Histogram buckets of 1 us from 0 up to this limit; above goes to the overflow count.
    pub histogram_limit_us: u32,
    /// How many of the largest latencies to keep, with their timestamps.
    pub keep_largest: usize,
    /// Length of the windows whose maxima are kept (one minute like OSADL's long-term plots).
    #[serde(rename = "window_s", with = "seconds")]
    pub window: Duration,
    /// Lock memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`, cyclictest `-m`).
    pub lock_memory: bool,
    /// Hold `/dev/cpu_dma_latency` at 0 during the run (cyclictest does by default).
    pub hold_dma_latency: bool,
    /// Skip every privileged step (scheduling class, mlock, cpu_dma_latency), as an
    /// unprivileged user would get; for tests of that path on a machine where we are root.
    pub skip_privileged_steps: bool,
    /// Hand every wake-up (the time asked for and the time read) to the caller, for the
    /// IRQ/thread split (`--split`); a thread never waits for the caller: what does not fit
    /// its queue is counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_wakeups: bool,
    /// Stop the run at the first wake-up this late or later (`--analyze US`, rtla's
    /// stop-tracing threshold).
    #[serde(
        rename = "stop_above_us",
        default,
        with = "opt_us",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_above: Option<Duration>,
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
            record_wakeups: false,
            stop_above: None,
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
                    crate::units::format_cpu_list(available)
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A histogram of 1 us buckets `[0, limit)` plus an overflow count. Serialised sparse
/// (`[us, count]` pairs for the non-empty buckets) so a 10 ms limit costs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub overflow: u64,
}

impl Histogram {
    /// An empty histogram of `limit_us` buckets, every page touched.
    pub fn new(limit_us: u32) -> Self {
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

    /// Count one latency.
    #[inline]
    pub fn add(&mut self, latency_ns: u64) {
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

    /// Add another histogram's counts (of any limit) to this one.
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.overflow += other.overflow;
    }
}

impl Histogram {
    /// The non-empty buckets as `(us, count)` pairs, lowest first: the document's form.
    pub fn buckets(&self) -> Vec<(u32, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(us, &c)| (us as u32, c))
            .collect()
    }
}

impl Serialize for Histogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Histogram", 4)?;
        st.serialize_field("bucket_us", &1)?;
        st.serialize_field("limit_us", &self.limit_us())?;
        st.serialize_field("buckets", &self.buckets())?;
        st.serialize_field("overflow", &self.overflow)?;
        st.end()
    }
}

/// Read back from the sparse form [`Serialize`] writes. A document without `limit_us`
/// gets buckets up to its highest one; a bucket at or above the limit, a limit above
/// [`MAX_HISTOGRAM_US`] or a bucket width other than 1 us is an error, not a guess.
impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Sparse {
            #[serde(default)]
            bucket_us: Option<u32>,
            #[serde(default)]
            limit_us: Option<u32>,
            #[serde(default)]
            buckets: Vec<(u32, u64)>,
            #[serde(default)]
            overflow: u64,
        }
        let h = Sparse::deserialize(d)?;
        if let Some(w) = h.bucket_us.filter(|&w| w != 1) {
            return Err(D::Error::custom(format!(
                "histogram buckets of {w} us: only 1 us buckets are read"
            )));
        }
        let highest = h.buckets.iter().map(|b| b.0 + 1).max().unwrap_or(0);
        let limit = h.limit_us.unwrap_or(highest);
        if limit > MAX_HISTOGRAM_US || highest > limit {
            return Err(D::Error::custom(format!(
                "histogram limit {limit} us with a bucket at {} us: the limit is at most \
                 {MAX_HISTOGRAM_US} us and above every bucket",
                highest.saturating_sub(1)
            )));
        }
        let mut counts = vec![0u64; limit as usize];
        for (us, c) in h.buckets {
            counts[us as usize] += c;
        }
        Ok(Histogram {
            counts,
            overflow: h.overflow,
        })
    }
}

/// One of the largest latencies of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spike {
    pub latency_ns: u64,
    /// When it happened: the programmed wake-up time, since the start of the run.
    pub at_ns: u64,
    /// The wake-up number (0-based) in its thread.
    pub cycle: u64,
    pub thread: usize,
}

/// The maximum latency of one window of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowMax {
    /// Window start, seconds since the start of the run.
    pub start_s: u64,
    pub max_ns: u64,
    pub count: u64,
}

/// The numbers of one thread, or of the whole run merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The wake-up numbers (0-based, as cyclictest counts its cycles) of the first
    /// wake-ups that overflowed the histogram, at most as many as it has buckets, as
    /// cyclictest keeps them for its `# Histogram Overflow at cycle number:` lines. Per
    /// thread only (empty in the merged stats); absent in documents written before they
    /// were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflow_cycles: Vec<u64>,
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
        overflow_cycles: Vec::new(),
    }
}

/// One privileged step and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Privileges {
    /// SCHED_FIFO at the requested priority, per thread (refusals repeat, so one entry).
    pub sched_fifo: Step,
    pub memory_locked: Step,
    pub cpu_dma_latency_held: Step,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Duration,
    Loops,
    Interrupted,
    /// A wake-up reached the `--analyze` threshold (`Config::stop_above`).
    Threshold,
}

impl StopReason {
    /// The reason in words: `duration`, `loops`, `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Duration => "duration",
            StopReason::Loops => "loops",
            StopReason::Interrupted => "interrupted",
            StopReason::Threshold => "threshold",
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub privileges: Privileges,
    pub elapsed_ns: u64,
    pub stopped_by: StopReason,
    pub threads: Vec<ThreadResult>,
    pub total: Stats,
}

/// The load average read during a run, `at_s` seconds after its start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSample {
    pub at_s: f64,
    #[serde(flatten)]
    pub load: crate::procfs::LoadAverage,
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

/// Device interrupts that arrived on the measured CPUs while the threads measured
/// (`/proc/interrupts` read just before and just after the measurement), per CPU and by
/// source: what interrupted the wake-ups there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredInterrupts {
    /// The time between the two readings, s.
    pub elapsed_s: f64,
    /// One entry per measured CPU, in CPU order (a CPU that took none has `count` 0).
    pub cpus: Vec<CpuInterrupts>,
}

/// The device interrupts one measured CPU took during the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuInterrupts {
    pub cpu: u32,
    pub count: u64,
    pub per_second: f64,
    /// By IRQ line, most first.
    pub sources: Vec<IrqSource>,
}

/// One IRQ line's interrupts on one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqSource {
    pub irq: u32,
    /// The device action name(s) of `/proc/interrupts`, e.g. `nvme0q1`.
    pub name: String,
    pub count: u64,
    pub per_second: f64,
    /// The block device(s) whose controller raises this line (`vda`, `sda, sdb`), when it is
    /// a storage controller's: what an I/O load (stress's io workers) makes interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_device: Option<String>,
}

impl MeasuredInterrupts {
    /// The interrupts on each of `cpus` over `elapsed_s`, from each CPU's arrivals as (IRQ,
    /// name, count).
    pub fn new(
        cpus: &[u32],
        elapsed_s: f64,
        arrivals: impl Fn(u32) -> Vec<(u32, String, u64)>,
    ) -> MeasuredInterrupts {
        MeasuredInterrupts {
            elapsed_s,
            cpus: cpus
                .iter()
                .map(|&cpu| CpuInterrupts::new(cpu, arrivals(cpu), elapsed_s))
                .collect(),
        }
    }

    /// Name the block devices behind the lines of `storage` (IRQ, disk names), as probe found
    /// them from each disk's controller.
    pub fn mark_block_devices(&mut self, storage: &[(u32, String)]) {
        for s in self.cpus.iter_mut().flat_map(|c| c.sources.iter_mut()) {
            s.block_device = storage
                .iter()
                .find(|(irq, _)| *irq == s.irq)
                .map(|(_, d)| d.clone());
        }
    }
}

impl CpuInterrupts {
    /// `cpu`'s interrupts from its arrivals as (IRQ, name, count) over `elapsed_s`; the
    /// sources sorted most first (then by IRQ number).
    pub fn new(cpu: u32, arrivals: Vec<(u32, String, u64)>, elapsed_s: f64) -> CpuInterrupts {
        let rate = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        let mut sources: Vec<IrqSource> = arrivals
            .into_iter()
            .filter(|a| a.2 > 0)
            .map(|(irq, name, count)| IrqSource {
                irq,
                name,
                count,
                per_second: rate(count),
                block_device: None,
            })
            .collect();
        sources.sort_by(|a, b| b.count.cmp(&a.count).then(a.irq.cmp(&b.irq)));
        let count = sources.iter().map(|s| s.count).sum();
        CpuInterrupts {
            cpu,
            count,
            per_second: rate(count),
            sources,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn interrupts_per_measured_cpu() {
        let arrivals = |cpu: u32| match cpu {
            2 => vec![
                (30, "nvme0q2".to_string(), 500),
                (0, "timer".to_string(), 0),
            ],
            _ => vec![(1, "i8042".to_string(), 3)],
        };
        let m = MeasuredInterrupts::new(&[2, 3], 10.0, arrivals);
        assert_eq!(m.elapsed_s, 10.0);
        assert_eq!((m.cpus[0].cpu, m.cpus[0].count), (2, 500));
        assert_eq!(
            m.cpus[0].sources.len(),
            1,
            "a line that did not fire is left out"
        );
        assert_eq!((m.cpus[1].cpu, m.cpus[1].count), (3, 3));
    }

    fn stats() -> Stats {
        let mut histogram = Histogram::new(100);
        for ns in [4_128, 4_900, 27_000, 250_000] {
            histogram.add(ns);
        }
        Stats {
            count: 4,
            min_ns: 4_128,
            max_ns: 250_000,
            avg_ns: 71_507.0,
            act_ns: 27_000,
            missed_periods: 0,
            histogram,
            largest: vec![Spike {
                latency_ns: 250_000,
                at_ns: 3_000_000,
                cycle: 3,
                thread: 0,
            }],
            window_maxima: vec![WindowMax {
                start_s: 0,
                max_ns: 250_000,
                count: 4,
            }],
            overflow_cycles: vec![3],
        }
    }

    #[test]
    fn a_measurement_reads_back_as_written() {
        let m = Measurement {
            privileges: Privileges {
                sched_fifo: Step::Refused("Operation not permitted".into()),
                memory_locked: Step::Done,
                cpu_dma_latency_held: Step::NotRequested,
            },
            elapsed_ns: 4_000_000,
            stopped_by: StopReason::Loops,
            threads: vec![ThreadResult {
                thread: 0,
                tid: 42,
                cpu: Some(1),
                last_cpu: Some(1),
                priority: 0,
                interval_us: 1000,
                stats: stats(),
                cpu_time_ns: 90_000,
                cpu_time_per_wakeup_ns: 22_500.0,
            }],
            total: stats(),
        };
        let json = serde_json::to_string(&m).unwrap();
        let back: Measurement = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.total.histogram.buckets(), vec![(4, 2), (27, 1)]);
        assert_eq!(back.total.histogram.overflow, 1);
        let config = Config {
            affinity: Affinity::Pinned(vec![2, 3]),
            limits: Limits {
                duration: Some(Duration::from_millis(2500)),
                loops: None,
            },
            ..Config::default()
        };
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), config);
    }

    #[test]
    fn a_histogram_that_does_not_fit_is_an_error() {
        let bad = [
            r#"{"bucket_us": 1, "limit_us": 10, "buckets": [[10, 1]], "overflow": 0}"#,
            r#"{"bucket_us": 10, "limit_us": 10, "buckets": [], "overflow": 0}"#,
            r#"{"limit_us": 2000000, "buckets": [], "overflow": 0}"#,
        ];
        for text in bad {
            assert!(serde_json::from_str::<Histogram>(text).is_err(), "{text}");
        }
        // Without a limit: up to the highest bucket.
        let h: Histogram = serde_json::from_str(r#"{"buckets": [[7, 2]], "overflow": 1}"#).unwrap();
        assert_eq!(
            (h.limit_us(), h.total(), h.quantile_us(0.5)),
            (8, 3, Some(7))
        );
    }
}
