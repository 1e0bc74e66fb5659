//! What a run measured, as it goes into the JSON document: latency summaries, the kernel's
//! cross-check, each run, each test, and the whole `bench disk` result.

use super::{target, TestSpec};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// Latency summary of one run, in nanoseconds (min and max exact, percentiles from an HDR
/// histogram with 3 significant digits: within 0.1 %).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Latency {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub max_ns: u64,
}

/// Latencies of one job or one run: an HDR histogram with the exact min and max.
pub(super) struct LatencyRecorder {
    pub(super) hist: Histogram<u64>,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
}

impl LatencyRecorder {
    pub(super) fn new() -> LatencyRecorder {
        LatencyRecorder {
            hist: Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds"),
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    pub(super) fn record(&mut self, d: Duration) {
        let ns = d.as_nanos().min(HIST_MAX_NS as u128) as u64;
        self.hist.saturating_record(ns.max(1));
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub(super) fn add(&mut self, other: &LatencyRecorder) {
        // Both histograms have the same bounds: adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub(super) fn summary(&self) -> Latency {
        Latency::from_histogram(&self.hist, self.min_ns, self.max_ns)
    }
}

impl Latency {
    fn from_histogram(h: &Histogram<u64>, min: u64, max: u64) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        // hdrhistogram answers a quantile with the highest value equivalent to its bucket
        // (up to 0.1 % above the samples at 3 significant digits), so a p99.9 could read
        // above the exact max (813.1 vs 812.6 us) or a p50 of one sample above it. No sample
        // lies outside [min, max]: clamp to the exact extremes kept beside the histogram.
        let q = |quantile: f64| h.value_at_quantile(quantile).clamp(min, max.max(min));
        Latency {
            min_ns: min,
            mean_ns: h.mean(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p99_9_ns: q(0.999),
            max_ns: max,
        }
    }
}

/// The kernel's count of the bytes a run moved, against the engine's own.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CrossCheck {
    /// Bytes the engine saw completed during the whole run (ramp included: the kernel counts it).
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    /// `read_bytes` / `write_bytes` of `/proc/self/io` over the run (the bytes this process
    /// sent to the block layer: Documentation/filesystems/proc.rst §3.3).
    pub proc_io_read_bytes: Option<u64>,
    pub proc_io_write_bytes: Option<u64>,
    /// (kernel − engine) / engine, in percent, reads and writes together.
    pub proc_io_error_percent: Option<f64>,
    /// The block device's sectors read and written × 512 from `/proc/diskstats`
    /// (Documentation/admin-guide/iostats.rst: always 512-byte sectors). Includes every
    /// other process's traffic to that device during the run.
    pub diskstats_device: Option<String>,
    pub diskstats_read_bytes: Option<u64>,
    pub diskstats_write_bytes: Option<u64>,
    pub diskstats_error_percent: Option<f64>,
}

pub(super) fn error_percent(kernel: u64, app: u64) -> Option<f64> {
    (app > 0).then(|| (kernel as f64 - app as f64) / app as f64 * 100.0)
}

/// One measured run of one test.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunResult {
    /// Measured window (after the ramp), in seconds.
    pub seconds: f64,
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub ios: u64,
    /// Rates over the measured window: MB/s = 10^6 B/s, MiB/s = 2^20 B/s.
    pub mb_per_s: f64,
    pub mib_per_s: f64,
    pub iops: f64,
    /// From just before an I/O is handed to the kernel to when its completion is seen: fio's
    /// `lat` (slat + clat).
    pub latency: Latency,
    /// From when the kernel took the I/O (the submitting system call returned) to when its
    /// completion is seen: fio's `clat`, whose percentiles fio prints by default. Equal to
    /// `latency` for a synchronous engine (psync), whose submission is the whole I/O, as in fio.
    pub clat: Latency,
    /// CPU time of this process over the run (job threads and the kernel's io_uring workers).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// (user + system) / every I/O of the run (ramp included, as the CPU time is), in µs.
    pub cpu_us_per_io: f64,
    /// Time of the final fsync when asked (`--fsync-end`), not included in the rates.
    pub fsync_s: Option<f64>,
    pub cross_check: CrossCheck,
    /// Cut short by SIGINT/SIGTERM: the numbers cover the seconds measured before the stop.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// Where the reported number comes from when a test runs several times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// The best run (CrystalDiskMark's default).
    Best,
    Mean,
}

/// One test of a profile with its runs, their mean and their best.
#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    pub spec: TestSpec,
    pub runs: Vec<RunResult>,
    pub mean_mb_per_s: f64,
    pub mean_iops: f64,
    /// Index into `runs` of the best run (highest MB/s).
    pub best_run: usize,
}

impl TestResult {
    pub fn best(&self) -> Option<&RunResult> {
        self.runs.get(self.best_run)
    }

    pub(super) fn new(spec: TestSpec, runs: Vec<RunResult>) -> TestResult {
        let n = runs.len().max(1) as f64;
        let mean_mb_per_s = runs.iter().map(|r| r.mb_per_s).sum::<f64>() / n;
        let mean_iops = runs.iter().map(|r| r.iops).sum::<f64>() / n;
        // A run cut short by a signal is the best only when no run is complete.
        let complete = runs.iter().any(|r| !r.interrupted);
        let best_run = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| !(complete && r.interrupted))
            .max_by(|a, b| a.1.mb_per_s.total_cmp(&b.1.mb_per_s))
            .map(|(i, _)| i)
            .unwrap_or(0);
        TestResult {
            spec,
            runs,
            mean_mb_per_s,
            mean_iops,
            best_run,
        }
    }
}

/// Machine facts printed beside the numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SystemContext {
    pub kernel: Option<String>,
    pub cpus: usize,
    pub hostname: Option<String>,
    /// cpufreq governor of CPU 0 (`None` where cpufreq is absent): a scaling governor lowers
    /// small-block results, so compare lists a change of it.
    pub governor: Option<String>,
}

/// Run-wide parameters, as given (after profile defaults and overrides).
#[derive(Clone, Debug, Serialize)]
pub struct Parameters {
    pub profile: String,
    pub engine: String,
    pub direct: bool,
    pub zero_buffers: bool,
    pub size_bytes: u64,
    pub runs: u32,
    pub runtime_s: f64,
    pub ramp_s: f64,
    pub pause_s: f64,
    pub time_based: bool,
    pub fsync_end: bool,
    pub drop_caches: bool,
    pub shown: Shown,
}

/// The measurements of `headroom bench disk`. The path's ceiling and each test's efficiency
/// are judged beside them (`report::efficiency`), not here.
#[derive(Clone, Debug, Serialize)]
pub struct DiskResult {
    pub schema_version: u32,
    pub kind: &'static str,
    pub parameters: Parameters,
    pub system: SystemContext,
    pub target: target::TargetInfo,
    pub tests: Vec<TestResult>,
    /// Things a reader must know to trust the numbers (fallbacks, page cache, other traffic).
    pub notes: Vec<String>,
    /// The run was stopped (Ctrl-C, SIGTERM) before every test ran: `tests` holds those that
    /// finished, and the finished runs of the one that was running.
    pub interrupted: bool,
}

/// Latencies above one hour are clamped (a run never lasts that long).
const HIST_MAX_NS: u64 = 3_600_000_000_000;

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    #[test]
    fn percentiles_stay_within_min_and_max() {
        // Issue 11 item 12: "p50 166.1 vs max 166.0". One sample of 166.05 us: its HDR bucket's
        // highest equivalent value lies above it.
        let mut r = LatencyRecorder::new();
        r.record(Duration::from_nanos(166_050));
        let l = r.summary();
        assert_eq!((l.min_ns, l.max_ns), (166_050, 166_050));
        for p in [l.p50_ns, l.p90_ns, l.p99_ns, l.p99_9_ns] {
            assert_eq!(p, 166_050);
        }
        // Many samples: every percentile within the exact min and max, and ordered.
        let mut r = LatencyRecorder::new();
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            r.record(Duration::from_nanos(800_000 + rng.below(12_600)));
        }
        let l = r.summary();
        let ps = [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.p99_9_ns, l.max_ns];
        assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{ps:?}");
    }
}
