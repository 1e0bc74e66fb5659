//! The storage engine behind `headroom bench disk`.
//!
//! Shaped after fio's pluggable ioengines (STYLE.md): an [`Engine`] is looked up by name in
//! [`engines`], opens one [`EngineWorker`] per job thread, and the worker fills the same small
//! set of hooks as fio's `ioengine_ops` (`queue`, `commit`, `getevents`). The job runner here
//! never knows which engine it drives: a synchronous engine completes an I/O inside `queue`
//! (fio's `FIO_Q_COMPLETED`), an asynchronous one completes it in `getevents`.
//!
//! One run = one [`TestSpec`] on a prepared [`target::Target`] for up to `runtime`: the ramp is
//! run and thrown away, then bytes, I/Os, an HDR latency histogram and the process's CPU time
//! are measured, and the kernel's own count of the same bytes (`/proc/self/io`,
//! `/proc/diskstats`) is read before and after for the cross-check.

pub mod io_uring;
pub mod kernel_count;
pub mod null;
pub mod profiles;
pub mod psync;
pub mod target;

use hdrhistogram::Histogram;
use model::blockdev::DeviceNumber;
use serde::Serialize;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use profiles::{Profile, TestSpec};
pub use target::Target;

/// Smallest and largest block size accepted: one 512 B sector (the smallest logical block a
/// Linux block device has) to 64 MiB (fio accepts more, but no device gains from it).
pub const MIN_BLOCK_SIZE: u64 = 512;
pub const MAX_BLOCK_SIZE: u64 = 64 << 20;
/// Largest queue depth per job: io_uring rings accept 32768 entries (IORING_MAX_ENTRIES), but
/// NVMe queues stop at 1023 usable entries (NVMe 1.4 §4.1.3: 64 Ki entries max, Linux caps
/// `io_queue_depth` at 1024), so deeper queues only wait in software.
pub const MAX_QUEUE_DEPTH: u32 = 1024;

/// Everything that can go wrong, as one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// A parameter the user gave is out of range or inconsistent.
    #[error("{0}")]
    BadParameter(String),
    /// The target cannot be used as asked (exists, mounted, no space, no permission).
    #[error("{0}")]
    Target(String),
    /// An engine cannot run here (io_uring disabled, seccomp, old kernel).
    #[error("{0}")]
    Unsupported(String),
    /// An I/O failed during a run.
    #[error("{0}")]
    Io(String),
    /// Ctrl-C (SIGINT) or SIGTERM arrived.
    #[error("interrupted: stopped before the end of the run")]
    Interrupted,
}

impl DiskError {
    /// An OS error as a sentence: what was done, on what, the OS's words, and the errno name.
    pub fn os(what: &str, err: &std::io::Error) -> DiskError {
        DiskError::Io(format!("{what}: {err}"))
    }
}

/// What a workload does with each I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Sequential,
    Random,
}

/// Read, write or a mix, by fio's names (`read`, `write`, `randread`, `randwrite`, `rw`,
/// `randrw` with `--rwmixread`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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

    /// The short name in a results table.
    pub fn direction(&self) -> String {
        match self.read_percent {
            100 => "read".into(),
            0 => "write".into(),
            p => format!("mix {p}% read"),
        }
    }
}

/// The operation of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// One I/O handed to an engine: which buffer slot, what, where, how long.
#[derive(Clone, Copy, Debug)]
pub struct IoUnit {
    pub slot: u32,
    pub op: Op,
    pub offset: u64,
    pub len: u32,
}

/// One finished I/O: its slot and the kernel's result (bytes done, or `-errno`).
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// What `queue` did with an I/O.
#[derive(Debug)]
pub enum Queued {
    /// Accepted; it completes in a later `getevents`.
    Pending,
    /// Done already (synchronous engines).
    Done(Completion),
}

/// What an engine can do, for the runner and for the report.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EngineCaps {
    /// I/Os can be in flight together (queue depth > 1 is real).
    pub asynchronous: bool,
}

/// A disk I/O engine (fio's `struct ioengine_ops`). Implementations are stateless; per-thread
/// state lives in the [`EngineWorker`] returned by `open_worker`.
pub trait Engine: Sync {
    /// The name used by `--engine` and in reports.
    fn name(&self) -> &'static str;
    fn caps(&self) -> EngineCaps;
    /// Whether the engine can run on this system; the error says why not.
    fn available(&self) -> Result<(), DiskError>;
    /// Set up one job thread's engine state for `fd` with `buffers`, `queue_depth` deep
    /// (fio's `setup` + `init`). Called on the job's own thread.
    fn open_worker<'a>(
        &self,
        fd: RawFd,
        buffers: &'a IoBuffers,
        queue_depth: u32,
    ) -> Result<Box<dyn EngineWorker + 'a>, DiskError>;
}

/// One job thread's engine state (fio's `queue`, `commit`, `getevents`, `cleanup` on drop).
pub trait EngineWorker {
    /// Queue one I/O. The slot's buffer stays untouched by the runner until it completes.
    fn queue(&mut self, io: IoUnit) -> Result<Queued, DiskError>;
    /// Send what was queued to the kernel without waiting (for engines that batch; the runner
    /// relies on `getevents` to send what is still queued).
    fn commit(&mut self) -> Result<(), DiskError> {
        Ok(())
    }
    /// Send anything still queued, wait for at least `min` completions and append every one
    /// available to `out` (io_uring does both in one `io_uring_enter`).
    fn getevents(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), DiskError>;
    /// Things the report should say about how the engine ran (e.g. buffers not registered).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Every engine, best first: `auto` picks the first that is available (`null` never comes to
/// that: psync is always available).
pub fn engines() -> [&'static dyn Engine; 3] {
    [
        &io_uring::IoUringEngine,
        &psync::PsyncEngine,
        &null::NullEngine,
    ]
}

/// The engine named `name` (`io_uring`, `psync`).
pub fn engine_by_name(name: &str) -> Option<&'static dyn Engine> {
    engines().into_iter().find(|e| e.name() == name)
}

/// The engine to use for `--engine choice` (`auto` = the first available), and a note when
/// `auto` had to fall back.
pub fn choose_engine(choice: &str) -> Result<(&'static dyn Engine, Option<String>), DiskError> {
    if choice != "auto" {
        let e = engine_by_name(choice).ok_or_else(|| {
            let names: Vec<&str> = engines().iter().map(|e| e.name()).collect();
            DiskError::BadParameter(format!(
                "--engine {choice}: no such engine; choose auto or one of {}",
                names.join(", ")
            ))
        })?;
        e.available()?;
        return Ok((e, None));
    }
    let mut why = Vec::new();
    for e in engines() {
        match e.available() {
            Ok(()) => {
                let note = (!why.is_empty())
                    .then(|| format!("{}; using the {} engine instead", why.join("; "), e.name()));
                return Ok((e, note));
            }
            Err(err) => why.push(err.to_string()),
        }
    }
    Err(DiskError::Unsupported(format!(
        "no disk engine can run here: {}",
        why.join("; ")
    )))
}

/// `queue_depth` buffers of `block_size` bytes in one allocation aligned for O_DIRECT.
///
/// Owned through a raw pointer (not a `Vec`) because the kernel writes into a slot while the
/// I/O is in flight: no Rust reference to a slot's bytes exists while its I/O is queued.
pub struct IoBuffers {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    block_size: usize,
    count: usize,
}

// SAFETY: the buffers are plain memory owned by this struct; a slot is only touched by the
// one job thread that owns the struct (the kernel touches it only while an I/O is in flight).
unsafe impl Send for IoBuffers {}

impl IoBuffers {
    /// Allocate `count` slots of `block_size` bytes aligned to `align` (a power of two), each
    /// filled with incompressible pseudo-random bytes, or zeros when `zero`.
    pub fn new(
        count: usize,
        block_size: usize,
        align: usize,
        zero: bool,
        seed: u64,
    ) -> Result<Self, DiskError> {
        let total = count
            .checked_mul(block_size)
            .filter(|t| *t > 0)
            .ok_or_else(|| DiskError::BadParameter("buffer size overflows".into()))?;
        // Buffers of 2 MiB or more are aligned to 2 MiB and asked to be backed by huge pages
        // (MADV_HUGEPAGE), so a 1 MiB buffer is physically contiguous: the kernel then maps it
        // as one segment instead of 256 pages, which a device with max_segments 254 (virtio-blk)
        // would otherwise split into two requests.
        let huge = total >= HUGE_PAGE;
        let (size, align) = if huge {
            (total.div_ceil(HUGE_PAGE) * HUGE_PAGE, align.max(HUGE_PAGE))
        } else {
            (total, align.max(4096))
        };
        let layout = std::alloc::Layout::from_size_align(size, align)
            .map_err(|e| DiskError::BadParameter(format!("buffer alignment {align}: {e}")))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(DiskError::BadParameter(format!(
                "cannot allocate {total} bytes of I/O buffers: lower --qd, --jobs or --bs"
            )));
        }
        if huge {
            // SAFETY: the range is exactly the allocation; madvise only changes how it is backed
            // (an error, e.g. THP compiled out, leaves ordinary pages: nothing to handle).
            unsafe { libc::madvise(ptr.cast(), size, libc::MADV_HUGEPAGE) };
        }
        // SAFETY: the allocation holds `size` bytes; it is initialised here before any read.
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
        let mut b = IoBuffers {
            ptr,
            layout,
            block_size,
            count,
        };
        if !zero {
            let mut rng = Rng::new(seed);
            for slot in 0..count {
                rng.fill(b.slot_mut(slot));
            }
        }
        Ok(b)
    }

    /// The start of slot `i` (for the kernel).
    pub fn slot_ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.count);
        // SAFETY: i < count, so the offset stays inside the allocation.
        unsafe { self.ptr.add(i * self.block_size) }
    }

    /// Slot `i` as bytes, while the buffers are not shared with an engine yet.
    fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        // SAFETY: the slot lies inside the allocation; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(i), self.block_size) }
    }

    /// A copy of slot `i` (for tests and checks; the slot must have no I/O in flight).
    pub fn slot_copy(&self, i: usize) -> Vec<u8> {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        // SAFETY: inside the allocation; the caller has no I/O in flight on this slot, so
        // nothing writes it while it is read.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(i), self.block_size) }.to_vec()
    }

    /// Change the first 8 bytes of every 512 B sector of slot `i`, so no two writes carry the
    /// same data (defeats deduplication; the random rest defeats compression) at 1/64 of the
    /// cost of refilling the buffer (fio's `scramble_buffers` does the same). Written through
    /// the raw pointer: the engine holds `&self` too, and the slot is free (no I/O in flight).
    pub fn scramble_slot(&self, i: usize, rng: &mut Rng) {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        let base = self.slot_ptr(i);
        let mut off = 0;
        while off + 8 <= self.block_size {
            // SAFETY: off + 8 <= block_size keeps the write inside slot i; no I/O is in flight
            // on it, so neither the kernel nor another reference reads it now.
            unsafe { std::ptr::write_unaligned(base.add(off).cast::<u64>(), rng.next_u64()) };
            off += 512;
        }
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn count(&self) -> usize {
        self.count
    }
}

impl Drop for IoBuffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// How long an asynchronous engine waits for completions before giving the runner control back.
pub const WAIT_SLICE: Duration = Duration::from_secs(1);
/// With I/Os in flight and none completing for this long, the device is taken as hung (a USB
/// stick that stopped answering) and the run ends with an error instead of waiting forever.
/// The kernel's own block-layer timeout is 30 s (`/sys/block/X/queue/io_timeout`).
pub const HUNG_AFTER: Duration = Duration::from_secs(45);

/// The x86-64 and arm64 (4 KiB granule) transparent huge page size.
const HUGE_PAGE: usize = 2 << 20;

/// xorshift64* (Vigna 2016): fast, good enough for offsets and incompressible data, and
/// reproducible from a seed. Not for secrets.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (n > 0) by Lemire's multiply-shift, without the modulo bias mattering
    /// at disk sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_ne_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

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
struct LatencyRecorder {
    hist: Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
}

impl LatencyRecorder {
    fn new() -> LatencyRecorder {
        LatencyRecorder {
            hist: Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds"),
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    fn record(&mut self, d: Duration) {
        let ns = d.as_nanos().min(HIST_MAX_NS as u128) as u64;
        self.hist.saturating_record(ns.max(1));
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    fn add(&mut self, other: &LatencyRecorder) {
        // Both histograms have the same bounds: adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    fn summary(&self) -> Latency {
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

fn error_percent(kernel: u64, app: u64) -> Option<f64> {
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

    fn new(spec: TestSpec, runs: Vec<RunResult>) -> TestResult {
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

/// What the caller sees while a run goes on.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    pub test: &'a str,
    pub run: u32,
    pub runs: u32,
    /// `"fill"`, `"ramp"`, `"run"`, `"pause"`.
    pub phase: &'static str,
    pub elapsed: Duration,
    /// Bytes per second over the last sampling interval.
    pub bytes_per_sec: f64,
}

/// How to run: the configuration of every test, the engine and the stop flag.
pub struct RunConfig<'a> {
    pub parameters: Parameters,
    pub tests: Vec<TestSpec>,
    pub engine: &'static dyn Engine,
    /// Set by a SIGINT/SIGTERM handler: every loop checks it and stops.
    pub stop: Arc<AtomicBool>,
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// Called with the result so far after each test, so a caller can write it down: a run
    /// that is interrupted or crashes later keeps what was measured.
    pub after_test: Option<&'a (dyn Fn(&DiskResult) + Sync)>,
    /// The kernel's byte counters read around each run for the cross-check (`None`: no
    /// cross-check).
    pub kernel_counts: Option<&'a dyn kernel_count::KernelCounts>,
}

/// Run every test `runs` times on `target` and collect the result.
pub fn run(
    cfg: &RunConfig,
    target: &Target,
    system: SystemContext,
) -> Result<DiskResult, DiskError> {
    let p = &cfg.parameters;
    let mut notes = target.notes();
    if !cfg.engine.caps().asynchronous && cfg.tests.iter().any(|t| t.queue_depth > 1) {
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
    if target.info().kind != target::TargetKind::BlockDevice
        && cfg.tests.iter().any(|t| t.workload.writes())
    {
        notes.push(
            "writes to a file can also dirty the filesystem's metadata, which the kernel counts \
             toward this process: the write cross-check may read a little high (up to 1.5 MB \
             per second of run seen on one ext4; exact on a fresh ext4)"
                .to_string(),
        );
    }
    // Devices whose I/O goes on to another device or file (zram is not one: it keeps its
    // pages in RAM, and its counts were exact in this project's runs).
    if let Some(d) = target.block_device().filter(|d| {
        ["loop", "dm-", "md", "nbd"]
            .iter()
            .any(|p| d.disk.starts_with(p))
    }) {
        notes.push(format!(
            "{} is a stacked device: the kernel may count a byte twice in /proc/self/io when it \
             issues the lower device's I/O from this process (loop NOWAIT, dm), so that \
             cross-check can read +100 %",
            d.name
        ));
    }
    if target.block_device().is_some() {
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
    cfg: &RunConfig,
    target: &Target,
    system: &SystemContext,
    tests: &[TestResult],
    notes: &[String],
    interrupted: bool,
) -> DiskResult {
    DiskResult {
        schema_version: 1,
        kind: "disk",
        parameters: cfg.parameters.clone(),
        system: system.clone(),
        target: target.info().clone(),
        tests: tests.to_vec(),
        notes: notes.to_vec(),
        interrupted,
    }
}

fn pause(cfg: &RunConfig, spec: &TestSpec, run_no: u32, d: Duration) -> Result<(), DiskError> {
    let start = Instant::now();
    // Bounded: at most d / 100 ms + 1 iterations.
    while start.elapsed() < d {
        if cfg.stop.load(Ordering::Relaxed) {
            return Err(DiskError::Interrupted);
        }
        if let Some(f) = cfg.progress {
            f(&Progress {
                test: &spec.name(),
                run: run_no,
                runs: cfg.parameters.runs,
                phase: "pause",
                elapsed: start.elapsed(),
                bytes_per_sec: 0.0,
            });
        }
        std::thread::sleep((d - start.elapsed().min(d)).min(Duration::from_millis(100)));
    }
    Ok(())
}

/// What one job thread measured.
struct JobOutcome {
    lat: LatencyRecorder,
    clat: LatencyRecorder,
    measured_read: u64,
    measured_write: u64,
    measured_ios: u64,
    /// Every I/O completed, ramp included (the CPU time covers them all).
    all_ios: u64,
    all_read: u64,
    all_write: u64,
    measure_start: Instant,
    measure_end: Instant,
    notes: Vec<String>,
}

/// Shared between job threads and the sampling thread of one run.
struct RunShared {
    stop: Arc<AtomicBool>,
    /// Set when one job failed: the others stop too.
    abort: AtomicBool,
    bytes_done: AtomicU64,
}

fn run_once(
    cfg: &RunConfig,
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
        .and_then(|d| kc?.device_bytes(&d.name));
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
        .and_then(|d| kc?.device_bytes(&d.name));
    let (mut r, notes) = summarize(
        &jobs,
        Counters {
            io: (io_before, io_after),
            disk: (disk_before, disk_after),
            device: target.block_device(),
            cpu: (cpu_before, cpu_after),
            block_io: target.info().no_block_io.is_none(),
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
        Option<kernel_count::ByteCount>,
        Option<kernel_count::ByteCount>,
    ),
    device: Option<&'a DeviceNumber>,
    cpu: ((f64, f64), (f64, f64)),
    /// The target does block I/O (not tmpfs): /proc/self/io's block counts can be compared.
    block_io: bool,
}

fn summarize(jobs: &[JobOutcome], c: Counters, fsync_s: Option<f64>) -> (RunResult, Vec<String>) {
    let mut lat = LatencyRecorder::new();
    let mut clat = LatencyRecorder::new();
    let (mut rb, mut wb, mut ios, mut all_r, mut all_w) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut notes = Vec::new();
    // Measured window: from the earliest job's ramp end to the latest job's last completion,
    // so the rate covers every measured byte.
    let first = jobs.iter().map(|j| j.measure_start).min();
    let last = jobs.iter().map(|j| j.measure_end).max();
    for j in jobs {
        lat.add(&j.lat);
        clat.add(&j.clat);
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
    let (dr, dw) = match c.disk {
        (Some(a), Some(b)) => (
            Some(b.read_bytes.saturating_sub(a.read_bytes)),
            Some(b.write_bytes.saturating_sub(a.write_bytes)),
        ),
        _ => (None, None),
    };
    let app = all_r + all_w;
    let cross_check = CrossCheck {
        app_read_bytes: all_r,
        app_write_bytes: all_w,
        proc_io_read_bytes: pr,
        proc_io_write_bytes: pw,
        proc_io_error_percent: pr
            .zip(pw)
            .filter(|_| c.block_io)
            .and_then(|(r, w)| error_percent(r + w, app)),
        diskstats_device: c.device.map(|d| d.name.clone()),
        diskstats_read_bytes: dr,
        diskstats_write_bytes: dw,
        diskstats_error_percent: dr.zip(dw).and_then(|(r, w)| error_percent(r + w, app)),
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
        cpu_user_s: user,
        cpu_system_s: sys,
        cpu_us_per_io: (user + sys) * 1e6 / all_ios as f64,
        fsync_s,
        cross_check,
        interrupted: false,
    };
    (result, notes)
}

/// Latencies above one hour are clamped (a run never lasts that long).
const HIST_MAX_NS: u64 = 3_600_000_000_000;

fn sample_progress<T>(
    cfg: &RunConfig,
    spec: &TestSpec,
    run_no: u32,
    shared: &RunShared,
    start: Instant,
    ramp: Duration,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
) {
    let Some(f) = cfg.progress else {
        return;
    };
    let name = spec.name();
    let mut last_bytes = 0;
    let mut last_t = start;
    // Bounded by the jobs, which are bounded by runtime (each loop checks its deadline).
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(200));
        let now = Instant::now();
        let b = shared.bytes_done.load(Ordering::Relaxed);
        let dt = (now - last_t).as_secs_f64();
        let elapsed = now - start;
        f(&Progress {
            test: &name,
            run: run_no,
            runs: cfg.parameters.runs,
            phase: if elapsed < ramp { "ramp" } else { "run" },
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

/// A job's share of the target: `len` bytes from `start`, a multiple of the block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

struct JobPlan<'a> {
    fd: RawFd,
    spec: &'a TestSpec,
    region: Region,
    align: usize,
    zero: bool,
    seed: u64,
    ramp: Duration,
    runtime: Duration,
    time_based: bool,
}

/// One job thread: keep `queue_depth` I/Os in flight until the deadline or the byte budget.
fn run_job(
    engine: &dyn Engine,
    plan: &JobPlan,
    shared: &RunShared,
) -> Result<JobOutcome, DiskError> {
    let spec = plan.spec;
    let bs = spec.block_size;
    let qd = spec.queue_depth.max(1);
    let buffers = IoBuffers::new(qd as usize, bs as usize, plan.align, plan.zero, plan.seed)?;
    let mut rng = Rng::new(plan.seed.rotate_left(17));
    let blocks = plan.region.len / bs;
    if blocks == 0 {
        return Err(DiskError::BadParameter(format!(
            "the test region ({} bytes) is smaller than one block ({bs} bytes): raise --size",
            plan.region.len
        )));
    }
    let mut worker = engine.open_worker(plan.fd, &buffers, qd)?;
    // The clock starts when the job is ready to issue (buffers filled, ring set up), as fio's
    // runtime does: setup time is not I/O time.
    let job_start = Instant::now();
    let ramp_end = job_start + plan.ramp;
    let deadline = ramp_end + plan.runtime;
    // Size-based: the job stops after its region's bytes once past the ramp; time-based: at
    // the deadline. Both are bounded by the deadline.
    let budget = if plan.time_based {
        u64::MAX
    } else {
        plan.region.len
    };
    let mut out = JobOutcome {
        lat: LatencyRecorder::new(),
        clat: LatencyRecorder::new(),
        measured_read: 0,
        measured_write: 0,
        measured_ios: 0,
        all_ios: 0,
        all_read: 0,
        all_write: 0,
        measure_start: ramp_end,
        measure_end: ramp_end,
        notes: Vec::new(),
    };
    let mut issue_start: Vec<Instant> = vec![job_start; qd as usize];
    // When the kernel had taken each slot's I/O (its submitting call returned): clat's start.
    let mut submitted: Vec<Instant> = vec![job_start; qd as usize];
    let mut slot_op: Vec<Op> = vec![Op::Read; qd as usize];
    let mut pending: Vec<bool> = vec![false; qd as usize];
    let mut free: Vec<u32> = (0..qd).rev().collect();
    let mut completions: Vec<Completion> = Vec::with_capacity(qd as usize);
    let mut seq_pos = 0u64;
    let mut issued_measured = 0u64;
    let mut inflight = 0u32;
    let mut error: Option<DiskError> = None;
    let mut last_progress = 0u64;
    let mut ramped = plan.ramp.is_zero();

    out.notes.extend(worker.notes());

    // An engine failure (not an I/O error, which is a completion) stops the job at once.
    let mut engine_error: Option<DiskError> = None;
    let mut silent_since: Option<Instant> = None;
    // Each iteration completes at least one I/O or ends the loop; the deadline bounds it.
    'run: loop {
        let now = Instant::now();
        if !ramped && now >= ramp_end {
            ramped = true;
            out.measure_start = now;
        }
        let stopping = error.is_some()
            || now >= deadline
            || issued_measured >= budget
            || shared.stop.load(Ordering::Relaxed)
            || shared.abort.load(Ordering::Relaxed);
        // Issue into every free slot (at most queue_depth I/Os per round).
        while let Some(slot) = if stopping { None } else { free.pop() } {
            let op = if spec.workload.read_percent >= 100 {
                Op::Read
            } else if spec.workload.read_percent == 0 {
                Op::Write
            } else if rng.below(100) < spec.workload.read_percent as u64 {
                Op::Read
            } else {
                Op::Write
            };
            let block = match spec.workload.pattern {
                Pattern::Sequential => {
                    let b = seq_pos % blocks;
                    seq_pos += 1;
                    b
                }
                Pattern::Random => rng.below(blocks),
            };
            if op == Op::Write && !plan.zero {
                buffers.scramble_slot(slot as usize, &mut rng);
            }
            let io = IoUnit {
                slot,
                op,
                offset: plan.region.start + block * bs,
                len: bs as u32,
            };
            slot_op[slot as usize] = op;
            issue_start[slot as usize] = Instant::now();
            if ramped {
                issued_measured += bs;
            }
            let queued = match worker.queue(io) {
                Ok(q) => q,
                Err(e) => {
                    free.push(slot);
                    engine_error = Some(e);
                    break 'run;
                }
            };
            match queued {
                Queued::Pending => {
                    pending[slot as usize] = true;
                    inflight += 1;
                    // Each I/O goes to the kernel as soon as it is ready (fio's default
                    // iodepth_batch_submit=1) rather than in one batch per round: a batch is
                    // plugged and dispatched only at its end, and on this project's virtio
                    // disk that measured 15-25 % fewer RND4K Q32T1 IOPS (bench/vs-fio.sh);
                    // leaving the last one of a round to the wait in `getevents` (one system
                    // call fewer) measured 0-10 % fewer RND4K Q32T1 write IOPS there too.
                    if let Err(e) = worker.commit() {
                        engine_error = Some(e);
                        break 'run;
                    }
                    submitted[slot as usize] = Instant::now();
                }
                Queued::Done(c) => {
                    // A synchronous engine's submission is the whole I/O: clat = lat, as fio
                    // reports for its sync engines.
                    submitted[slot as usize] = issue_start[slot as usize];
                    completions.push(c)
                }
            }
            if !completions.is_empty() || issued_measured >= budget {
                break;
            }
        }
        if inflight > 0 && completions.is_empty() {
            if let Err(e) = worker.getevents(1, &mut completions) {
                engine_error = Some(e);
                break 'run;
            }
            if completions.is_empty() {
                let since = *silent_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= HUNG_AFTER {
                    engine_error = Some(DiskError::Io(format!(
                        "{inflight} I/Os got no answer from the device for {} s: it stopped \
                         responding (see dmesg); the run was abandoned",
                        HUNG_AFTER.as_secs()
                    )));
                    break 'run;
                }
            } else {
                silent_since = None;
            }
        }
        if completions.is_empty() {
            // Nothing done: stop once nothing is in flight; else go round, to wait again (a
            // silent wait slice) or to issue (right after the budget was reached, which makes
            // the next round stop).
            if stopping && inflight == 0 {
                break;
            }
            continue;
        }
        let done_at = Instant::now();
        for c in completions.drain(..) {
            let s = c.slot as usize;
            if s >= pending.len() {
                engine_error = Some(DiskError::Io(format!(
                    "the {} engine completed an unknown I/O slot {s}",
                    engine.name()
                )));
                break 'run;
            }
            if c.result != bs as i64 && error.is_none() {
                error = Some(io_error(slot_op[s], c.result, bs));
            }
            if pending[s] {
                pending[s] = false;
                inflight -= 1;
            }
            free.push(c.slot);
            if c.result <= 0 {
                continue;
            }
            let n = c.result as u64;
            out.all_ios += 1;
            match slot_op[s] {
                Op::Read => out.all_read += n,
                Op::Write => out.all_write += n,
            }
            if ramped && issue_start[s] >= out.measure_start {
                out.lat.record(done_at - issue_start[s]);
                out.clat
                    .record(done_at.saturating_duration_since(submitted[s]));
                out.measured_ios += 1;
                match slot_op[s] {
                    Op::Read => out.measured_read += n,
                    Op::Write => out.measured_write += n,
                }
                out.measure_end = done_at;
            }
        }
        let total = out.all_read + out.all_write;
        if total - last_progress >= 1 << 20 {
            shared
                .bytes_done
                .fetch_add(total - last_progress, Ordering::Relaxed);
            last_progress = total;
        }
    }
    shared.bytes_done.fetch_add(
        (out.all_read + out.all_write).saturating_sub(last_progress),
        Ordering::Relaxed,
    );
    if let Some(e) = engine_error {
        // Reap what is still in flight (bounded: 8 wait slices), so the kernel is done with
        // the buffers.
        for _ in 0..8 {
            if inflight == 0 {
                break;
            }
            completions.clear();
            if worker.getevents(1, &mut completions).is_err() {
                break;
            }
            for c in completions.drain(..) {
                if let Some(p) = pending.get_mut(c.slot as usize).filter(|p| **p) {
                    *p = false;
                    inflight -= 1;
                }
            }
        }
        drop(worker);
        if inflight > 0 {
            // The kernel may still write into them: leak rather than free memory in use.
            std::mem::forget(buffers);
        }
        return Err(e);
    }
    if let Some(e) = error {
        return Err(e);
    }
    // Stopped by a signal: every I/O issued has completed, so what was measured until then is
    // a valid (shorter) measurement; the run decides whether to keep it.
    Ok(out)
}

fn io_error(op: Op, result: i64, bs: u64) -> DiskError {
    let what = match op {
        Op::Read => "read",
        Op::Write => "write",
    };
    if result < 0 {
        let e = std::io::Error::from_raw_os_error((-result) as i32);
        let hint = match -result as i32 {
            libc::EINVAL => {
                ": the block size or offset is not aligned for direct I/O on this \
                             device (try a multiple of the logical block size, or --direct 0)"
            }
            libc::ENOSPC => ": the filesystem is full",
            libc::EIO => ": the device reported an I/O error (see dmesg)",
            _ => "",
        };
        DiskError::Io(format!("a {what} of {bs} bytes failed: {e}{hint}"))
    } else {
        DiskError::Io(format!(
            "a {what} of {bs} bytes transferred only {result} bytes (end of device or file?)"
        ))
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn rng_below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn random_buffers_do_not_compress_and_scramble_changes_every_sector() {
        let b = IoBuffers::new(2, 4096, 4096, false, 7).unwrap();
        let before = b.slot_copy(0);
        // No 8-byte word repeats in a random 4 KiB buffer.
        let mut words: Vec<&[u8]> = before.chunks(8).collect();
        words.sort();
        words.dedup();
        assert_eq!(words.len(), 512);
        b.scramble_slot(0, &mut Rng::new(3));
        let after = b.slot_copy(0);
        for (x, y) in before.chunks(512).zip(after.chunks(512)) {
            assert_ne!(x[..8], y[..8]);
            assert_eq!(x[8..], y[8..]);
        }
        assert!(b.slot_ptr(0) as usize % 4096 == 0);
        let z = IoBuffers::new(1, 512, 512, true, 7).unwrap();
        assert!(z.slot_ptr(0) as usize % 4096 == 0);
    }

    #[test]
    fn fio_names_round_trip() {
        assert_eq!(Workload::RANDWRITE.fio_name(), "randwrite");
        let mix = Workload {
            pattern: Pattern::Random,
            read_percent: 70,
        };
        assert_eq!(mix.fio_name(), "randrw");
        assert_eq!(mix.direction(), "mix 70% read");
    }

    #[test]
    fn unknown_engine_is_a_sentence() {
        let e = choose_engine("libaio").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("--engine libaio: no such engine"), "{e}");
    }

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
                JobOutcome {
                    lat,
                    clat,
                    measured_read: bytes,
                    measured_write: 0,
                    measured_ios: 1,
                    all_ios: 1,
                    all_read: bytes,
                    all_write: 0,
                    measure_start: t0,
                    measure_end: t0 + Duration::from_secs(2),
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
    }

    /// Run `spec` with the null engine on a small prepared file: the runner's own arithmetic.
    fn null_run(spec: TestSpec, time_based: bool, runtime_s: f64) -> RunResult {
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
        let mut parameters = profiles::test_parameters();
        parameters.runs = 1;
        parameters.pause_s = 0.0;
        parameters.time_based = time_based;
        parameters.runtime_s = runtime_s;
        parameters.direct = false;
        let cfg = RunConfig {
            parameters,
            tests: vec![spec],
            engine: &null::NullEngine,
            stop,
            progress: None,
            after_test: None,
            kernel_counts: None,
        };
        let r = run(&cfg, &t, SystemContext::default()).unwrap();
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("null engine does no I/O")));
        r.tests[0].runs[0].clone()
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
