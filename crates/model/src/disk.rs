//! `headroom bench disk`'s measurements as its document holds them: the workload of a test,
//! each run's rates, latencies and the kernel's cross-check, each test, the run-wide
//! parameters, the machine and the target. bench fills these types; report reads them back
//! from a document, so a field renamed here changes the producer and the reader together.
//!
//! Fields a document of an earlier version does not have are `#[serde(default)]` (fio's
//! `clat` beside `lat`, a run or a whole bench cut short, the CPU frequency governor, the
//! reason a target does no block I/O); every other field has been in every document since
//! the first.
//!
//! [`profiles`]: the test sets and fio's flags that make a run's tests, checked.

pub mod profiles;

use crate::blockdev::DeviceNumber;
use crate::system::SystemContext;
use crate::units::size_label;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a workload does with each I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Sequential,
    Random,
}

/// Read, write or a mix, by fio's names (`read`, `write`, `randread`, `randwrite`, `rw`,
/// `randrw` with `--rwmixread`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    pub pattern: Pattern,
    /// Percentage of I/Os that are reads: 100 = read, 0 = write.
    pub read_percent: u8,
}

impl Workload {
    pub const READ: Workload = Workload {
        pattern: Pattern::Sequential,
        read_percent: 100,
    };
    pub const WRITE: Workload = Workload {
        pattern: Pattern::Sequential,
        read_percent: 0,
    };
    pub const RANDREAD: Workload = Workload {
        pattern: Pattern::Random,
        read_percent: 100,
    };
    pub const RANDWRITE: Workload = Workload {
        pattern: Pattern::Random,
        read_percent: 0,
    };

    /// fio's `--rw` name for this workload.
    pub fn fio_name(&self) -> &'static str {
        match (self.pattern, self.read_percent) {
            (Pattern::Sequential, 100) => "read",
            (Pattern::Sequential, 0) => "write",
            (Pattern::Random, 100) => "randread",
            (Pattern::Random, 0) => "randwrite",
            (Pattern::Sequential, _) => "rw",
            (Pattern::Random, _) => "randrw",
        }
    }

    /// Whether any I/O writes.
    pub fn writes(&self) -> bool {
        self.read_percent < 100
    }

    /// The short name in a results table: `read`, `write` or `mix 70% read`.
    pub fn direction(&self) -> String {
        match self.read_percent {
            100 => "read".into(),
            0 => "write".into(),
            p => format!("mix {p}% read"),
        }
    }
}

/// One test of a profile: a workload at one block size, queue depth and job count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    /// CrystalDiskMark-style name (`SEQ1M Q8T1`, `RND4K Q32T16`) or `dd 64K`.
    pub label: String,
    pub workload: Workload,
    /// Bytes per I/O.
    pub block_size: u64,
    pub queue_depth: u32,
    pub jobs: u32,
}

impl TestSpec {
    pub fn new(
        label: &str,
        workload: Workload,
        block_size: u64,
        queue_depth: u32,
        jobs: u32,
    ) -> Self {
        TestSpec {
            label: label.to_string(),
            workload,
            block_size,
            queue_depth,
            jobs,
        }
    }

    /// The test and its direction, as the progress line and the tables show it
    /// (`SEQ1M Q8T1 read`).
    pub fn name(&self) -> String {
        format!("{} {}", self.label, self.workload.direction())
    }

    /// CrystalDiskMark's name for a test: `SEQ1M Q8T1`.
    pub fn cdm_label(workload: Workload, block_size: u64, queue_depth: u32, jobs: u32) -> String {
        let kind = match workload.pattern {
            Pattern::Sequential => "SEQ",
            Pattern::Random => "RND",
        };
        format!("{kind}{} Q{queue_depth}T{jobs}", size_label(block_size))
    }
}

/// Latency summary of one run, in nanoseconds (min and max exact, percentiles from an HDR
/// histogram with 3 significant digits: within 0.1 %).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub max_ns: u64,
}

impl Latency {
    /// The percentiles within [min, max]. HDR histograms report a bucket's highest
    /// equivalent value, up to 0.1 % above the largest sample at 3 significant digits, so
    /// documents written before `bench disk` clamped them can hold a p99.9 above the exact
    /// max; no sample lies outside the measured min and max.
    pub fn clamped(mut self) -> Latency {
        let (lo, hi) = (self.min_ns, self.max_ns.max(self.min_ns));
        for p in [
            &mut self.p50_ns,
            &mut self.p90_ns,
            &mut self.p99_ns,
            &mut self.p99_9_ns,
        ] {
            *p = (*p).clamp(lo, hi);
        }
        self
    }
}

/// Count, mean and spread of a run's latencies with their exact extremes, accumulated one
/// sample at a time (Welford's method, as fio's `add_stat_sample`): fio's `N`, `min`, `max`,
/// `mean` and `stddev`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    pub n: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// Sum of squared differences from the mean.
    m2: f64,
}

impl Moments {
    /// One sample.
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.min_ns = if self.n == 0 { ns } else { self.min_ns.min(ns) };
        self.max_ns = self.max_ns.max(ns);
        self.n += 1;
        let delta = ns as f64 - self.mean_ns;
        self.mean_ns += delta / self.n as f64;
        self.m2 += delta * (ns as f64 - self.mean_ns);
    }

    /// Another set of samples (Chan's parallel form of Welford's method).
    pub fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = (self.n + o.n) as f64;
        let delta = o.mean_ns - self.mean_ns;
        self.mean_ns += delta * o.n as f64 / n;
        self.m2 += o.m2 + delta * delta * self.n as f64 * o.n as f64 / n;
        self.n += o.n;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// The sample standard deviation (n - 1), 0 below two samples, as fio's `calc_lat`.
    pub fn stddev_ns(&self) -> f64 {
        if self.n > 1 {
            (self.m2 / (self.n - 1) as f64).sqrt()
        } else {
            0.0
        }
    }
}

/// One latency of one direction of a run: its moments and its histogram's non-empty buckets,
/// each `(ns, count)` with the ns within 0.1 % of its samples (an HDR histogram at 3
/// significant digits: every bucket lies inside one of fio's, whose width is 1/64 of a power
/// of two).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyDetail {
    pub moments: Moments,
    pub buckets: Vec<(u64, u64)>,
}

/// What one direction (reads or writes) of a run measured, apart: fio reports each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectionDetail {
    /// I/Os and bytes completed in the measured window.
    pub ios: u64,
    pub bytes: u64,
    /// From before the I/O was handed to the kernel to when the call returned (fio's slat);
    /// none for a synchronous engine, as fio records none for its sync engines.
    pub slat: Moments,
    pub clat: LatencyDetail,
    pub lat: LatencyDetail,
}

/// A run's reads and writes apart, for the formats that report them so (`bench disk
/// --output-format fio-json`). Kept in memory for the run's output only: the document
/// holds the summaries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ByDirection {
    pub read: DirectionDetail,
    pub write: DirectionDetail,
}

/// The kernel's count of the bytes a run moved, against the engine's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// I/Os the engine completed during the whole run (ramp included, as the kernel's counts
    /// are). Absent (0) in documents written before requests were counted.
    #[serde(default)]
    pub app_ios: u64,
    /// Reads and writes the device completed over the run (`/proc/diskstats` fields 1 and 5:
    /// requests of the block layer, after splitting and merging). Absent in documents
    /// written before they were counted.
    #[serde(default)]
    pub diskstats_read_requests: Option<u64>,
    #[serde(default)]
    pub diskstats_write_requests: Option<u64>,
}

impl CrossCheck {
    /// Requests the device completed per I/O the engine completed: 1 when every I/O went down
    /// as one request, 2 when the block layer split each in two (an I/O larger than the
    /// queue's limits: `max_sectors_kb`, or `max_segments` pieces of memory), below 1 when it
    /// merged neighbours. Other processes' I/O to the device counts too. `None` without the
    /// device's counts or an I/O.
    pub fn requests_per_io(&self) -> Option<f64> {
        let requests = self.diskstats_read_requests? + self.diskstats_write_requests?;
        (self.app_ios > 0).then(|| requests as f64 / self.app_ios as f64)
    }
}

/// One measured run of one test.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// `latency` for a synchronous engine (psync), whose submission is the whole I/O, as in
    /// fio. Zero in documents written before it was measured.
    #[serde(default)]
    pub clat: Latency,
    /// The mean number of I/Os in flight over the measured window, all jobs together: from
    /// just before each I/O is handed to the kernel to when its completion is taken, as fio
    /// counts its depth. By Little's law it is `iops` times the mean `latency`; at most
    /// queue depth x jobs. Absent in documents written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<f64>,
    /// CPU time of this process over the run (job threads and the kernel's io_uring workers).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// (user + system) / every I/O of the run (ramp included, as the CPU time is), in µs.
    pub cpu_us_per_io: f64,
    /// Time of the final fsync when asked (`--fsync-end`), not included in the rates.
    pub fsync_s: Option<f64>,
    pub cross_check: CrossCheck,
    /// Cut short by SIGINT/SIGTERM: the numbers cover the seconds measured before the stop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Reads and writes apart, with their latency histograms: in memory for the run's own
    /// output (fio's JSON), never in the document (`None` when read back).
    #[serde(skip)]
    pub by_direction: Option<Box<ByDirection>>,
}

/// Where the reported number comes from when a test runs several times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// The best run (CrystalDiskMark's default).
    Best,
    Mean,
}

impl Shown {
    /// `best` or `mean`, as the document spells it.
    pub fn name(self) -> &'static str {
        match self {
            Shown::Best => "best",
            Shown::Mean => "mean",
        }
    }
}

/// One test of a profile with its runs, their mean and their best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub spec: TestSpec,
    pub runs: Vec<RunResult>,
    /// Mean of the runs' MB/s (10^6 B/s) and I/Os per second.
    pub mean_mb_per_s: f64,
    pub mean_iops: f64,
    /// Index into `runs` of the best run (highest MB/s).
    pub best_run: usize,
}

impl TestResult {
    /// The runs of `spec` with their mean and their best: the complete run of the highest
    /// MB/s (a run cut short by a signal is the best only when no run is complete).
    pub fn new(spec: TestSpec, runs: Vec<RunResult>) -> TestResult {
        let n = runs.len().max(1) as f64;
        let mean_mb_per_s = runs.iter().map(|r| r.mb_per_s).sum::<f64>() / n;
        let mean_iops = runs.iter().map(|r| r.iops).sum::<f64>() / n;
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

    pub fn best(&self) -> Option<&RunResult> {
        self.runs.get(self.best_run)
    }
}

/// The few host facts a disk result carries beside its numbers (the document's `system`
/// field): what a reader needs to tell two runs' machines apart, taken from the full host
/// context ([`crate::system::SystemContext`]) by [`HostFacts::from_context`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub kernel: Option<String>,
    pub cpus: usize,
    pub hostname: Option<String>,
    /// cpufreq governor of CPU 0 (`None` where cpufreq is absent): a scaling governor lowers
    /// small-block results, so compare lists a change of it. Absent in documents written
    /// before it was recorded.
    #[serde(default)]
    pub governor: Option<String>,
    /// The DDR controller's devfreq device (`/sys/class/devfreq/dmc` on a Rockchip SoC), where
    /// the SoC has one: a DDR clock that scales moves every DMA result. Absent elsewhere and
    /// in documents written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ddr: Option<crate::system::DevFreq>,
}

impl HostFacts {
    /// The facts of the host context a disk result keeps: the kernel release and CPU 0's
    /// cpufreq governor, and the DDR controller's devfreq. `cpus` is the number of CPUs the run could use (it sizes the jobs),
    /// `hostname` the machine's name (`/proc/sys/kernel/hostname`), neither of which the host
    /// context holds.
    pub fn from_context(ctx: &SystemContext, cpus: usize, hostname: Option<String>) -> HostFacts {
        HostFacts {
            kernel: ctx.kernel.release.clone(),
            cpus,
            hostname,
            governor: ctx
                .cpufreq
                .iter()
                .find(|f| f.cpu == 0)
                .and_then(|f| f.governor.clone()),
            ddr: ctx.devfreq.iter().find(|d| d.is_memory()).cloned(),
        }
    }
}

/// The memory the I/O buffers are made of (`--buffers`). The block layer maps a buffer into
/// segments of physically contiguous memory, at most `max_segments` of them and each at most
/// `max_segment_size` per request: from 4 KiB pages a 1 MiB I/O is 256 segments, which a queue
/// with fewer (virtio-blk 254, loop 128) splits into two requests; from a huge page it is a
/// few segments of `max_segment_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Buffers {
    /// 2 MiB-aligned, asked to be backed by transparent huge pages (MADV_HUGEPAGE): the I/O the
    /// device can take, whatever an application's memory looks like (`--buffers huge`).
    HugePages,
    /// 4 KiB pages (MADV_NOHUGEPAGE), as fio's and most applications' malloc'd buffers: what
    /// fio measures with the same options (the default).
    Pages,
}

impl Buffers {
    /// `huge` or `pages`, as `--buffers` takes them.
    pub fn flag(self) -> &'static str {
        match self {
            Buffers::HugePages => "huge",
            Buffers::Pages => "pages",
        }
    }

    /// `huge pages` or `4 KiB pages`, for a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Buffers::HugePages => "huge pages",
            Buffers::Pages => "4 KiB pages",
        }
    }
}

/// Run-wide parameters, as given (after profile defaults and overrides).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    pub profile: String,
    pub engine: String,
    /// O_DIRECT (true) or buffered.
    pub direct: bool,
    pub zero_buffers: bool,
    /// Bytes of the file or device the tests cover.
    pub size_bytes: u64,
    pub runs: u32,
    /// Seconds.
    pub runtime_s: f64,
    pub ramp_s: f64,
    pub pause_s: f64,
    pub time_based: bool,
    pub fsync_end: bool,
    pub drop_caches: bool,
    pub shown: Shown,
    /// What the I/O buffers were made of. Absent in documents written before `--buffers`
    /// (their buffers were huge pages only from 2 MiB of buffers per job).
    #[serde(default)]
    pub buffers: Option<Buffers>,
}

/// What kind of target a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A file headroom creates and removes.
    NewFile,
    /// A file that was there before (read as is, or overwritten with `--overwrite`).
    ExistingFile,
    BlockDevice,
}

impl TargetKind {
    /// `new file`, `existing file`, `block device`.
    pub fn words(self) -> &'static str {
        match self {
            TargetKind::NewFile => "new file",
            TargetKind::ExistingFile => "existing file",
            TargetKind::BlockDevice => "block device",
        }
    }
}

/// What a report says about the target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The path as given on the command line.
    pub given: PathBuf,
    /// The file or device actually read and written.
    pub file: PathBuf,
    pub kind: TargetKind,
    /// Bytes of the file or device that the tests cover.
    pub size_bytes: u64,
    pub direct: bool,
    /// Direct I/O alignment of memory and of offsets/lengths (STATX_DIOALIGN, Linux 6.1), or
    /// the device's logical block size where statx does not report it.
    pub dio_mem_align: u32,
    pub dio_offset_align: u32,
    /// The block device the file lives on (or the device itself), from `/sys/dev/block`.
    pub device: Option<DeviceNumber>,
    /// Why `device` is empty (tmpfs, overlayfs, network filesystem).
    pub device_note: Option<String>,
    /// Why the target does no block I/O (tmpfs, ramfs), when it does none: the kernel's
    /// block counts are then no cross-check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_block_io: Option<String>,
    /// The request queue of the device's disk (`/sys/block/DISK/queue`): the limits that
    /// decide how many requests an I/O becomes. Absent without a device, and in documents
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<crate::inventory::block::QueueSettings>,
}

/// The measurements of `headroom bench disk`. The path's ceiling and each test's efficiency
/// are judged beside them (`report::efficiency`), not here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskResult {
    pub schema_version: u32,
    pub kind: String,
    pub parameters: Parameters,
    pub system: HostFacts,
    pub target: TargetInfo,
    pub tests: Vec<TestResult>,
    /// Things a reader must know to trust the numbers (fallbacks, page cache, other traffic).
    pub notes: Vec<String>,
    /// The run was stopped (Ctrl-C, SIGTERM) before every test ran: `tests` holds those that
    /// finished, and the finished runs of the one that was running. Absent (false) in
    /// documents written before an interrupted run was kept.
    #[serde(default)]
    pub interrupted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_names_round_trip() {
        assert_eq!(Workload::RANDWRITE.fio_name(), "randwrite");
        let mix = Workload {
            pattern: Pattern::Random,
            read_percent: 70,
        };
        assert_eq!(mix.fio_name(), "randrw");
        assert_eq!(mix.direction(), "mix 70% read");
        let t = TestSpec::new("SEQ1M Q8T1", Workload::WRITE, 1 << 20, 8, 1);
        assert_eq!(t.name(), "SEQ1M Q8T1 write");
        assert_eq!(
            TestSpec::cdm_label(Workload::RANDREAD, 4096, 32, 1),
            "RND4K Q32T1"
        );
    }

    #[test]
    fn the_best_run_is_a_complete_one() {
        let run = |mb: f64, interrupted: bool| RunResult {
            mb_per_s: mb,
            iops: mb,
            interrupted,
            ..Default::default()
        };
        let spec = TestSpec::new("dd 1M", Workload::READ, 1 << 20, 1, 1);
        let t = TestResult::new(spec.clone(), vec![run(10.0, false), run(30.0, true)]);
        assert_eq!((t.best_run, t.mean_mb_per_s), (0, 20.0));
        let t = TestResult::new(spec, vec![run(10.0, true), run(30.0, true)]);
        assert_eq!(t.best_run, 1);
    }

    #[test]
    fn clamped_percentiles_stay_within_min_and_max() {
        let l = Latency {
            min_ns: 100,
            mean_ns: 150.0,
            p50_ns: 90,
            p90_ns: 150,
            p99_ns: 210,
            p99_9_ns: 300,
            max_ns: 200,
        }
        .clamped();
        assert_eq!(
            (l.p50_ns, l.p90_ns, l.p99_ns, l.p99_9_ns),
            (100, 150, 200, 200)
        );
    }

    #[test]
    fn the_host_keeps_the_release_and_cpu_0s_governor() {
        use crate::system::{CpuFreq, Kernel, Preemption};
        let freq = |cpu: u32, governor: &str| CpuFreq {
            cpu,
            governor: Some(governor.into()),
            cur_khz: None,
            min_khz: None,
            max_khz: None,
        };
        let mut ctx = SystemContext {
            kernel: Kernel {
                release: Some("6.1.0-13-amd64".into()),
                version: None,
                preemption: Preemption::NoneOrVoluntary,
            },
            cmdline: None,
            cpus_online: Some(vec![0, 1]),
            // CPU 1 listed first: the governor is CPU 0's, not the first one found.
            cpufreq: vec![freq(1, "powersave"), freq(0, "performance")],
            devfreq: Vec::new(),
            smt_active: None,
            load_average: None,
            irqs: None,
            unreadable: Vec::new(),
        };
        assert_eq!(
            HostFacts::from_context(&ctx, 2, Some("board".into())),
            HostFacts {
                kernel: Some("6.1.0-13-amd64".into()),
                cpus: 2,
                hostname: Some("board".into()),
                governor: Some("performance".into()),
                ddr: None,
            }
        );
        // No cpufreq (a virtual machine) and no release: nothing invented.
        ctx.cpufreq.clear();
        ctx.kernel.release = None;
        let host = HostFacts::from_context(&ctx, 1, None);
        assert_eq!(
            (host.kernel, host.governor, host.hostname),
            (None, None, None)
        );
    }
}
