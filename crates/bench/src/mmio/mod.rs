//! CPU access to a memory-mapped region by width: a PCI BAR (`resourceN`), any file, or a
//! DRAM buffer ([`crate::mem`]). The method of section 5 of the Rockchip PCIe guide
//! (seeds/000: `resource_mmap_test.c` maps `resource2` and times 32-bit and 128-bit NEON loads
//! and stores), made safe:
//!
//! - Every access is naturally aligned and of exactly the width asked, one instruction in an
//!   `asm!` block the compiler can neither merge, split, drop nor outline ([`access`]): 8 to
//!   64 bits by the integer loads and stores of that width (`ptr::read_volatile`/
//!   `write_volatile` on other architectures); 128 bits by `movdqa` on x86_64 (SSE2), `ldr
//!   q`/`str q` on aarch64 (NEON), because the SIMD intrinsics are ordinary loads the compiler
//!   may merge, split or drop. The `memcpy` mode is a copy loop of those 128-bit accesses;
//!   the C library's memcpy never touches the region (glibc's takes SIGBUS on device memory
//!   on aarch64: its unaligned and `dc zva` tricks are not allowed there).
//! - A store on a read-only mapping is refused here, before any access.
//! - A fault during the run (SIGBUS: the page behind the access is gone, a device that did not
//!   answer) is caught and reported with its width, operation and offset, never a crash.
//!
//! ## How a fault is survived
//! A SIGBUS handler cannot return to the faulting access (it would fault again), and Rust has
//! no `sigsetjmp`: a function that returns twice is undefined behaviour for the compiler. So
//! each (width, operation) pair runs in a child process forked for it. The child's SIGBUS and
//! SIGSEGV handlers store the fault address in a page shared with the parent and `_exit`
//! (both async-signal-safe); the threads publish their counts to the same page after every
//! batch. The parent waits (bounded: it kills a child that outlives its duration by far, a
//! device that stopped answering) and reads the counts and the fault. This is how test
//! harnesses isolate crashing code; its cost (one fork per pair) is outside the timed loops.

mod access;
pub mod target;

use crate::{Bench, Phase, Phased, Stop};
use access::{Elem, UNROLL};
use model::mmio::{mb_per_s, quantile, AccessFault, AccessOp, AccessResult, AccessWidth};
use serde::Serialize;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes swept per timed batch: small enough that a batch on a slow BAR (4 MB/s for 32-bit
/// loads in the seed) takes about 16 ms, large enough that the two clock reads (~50 ns) are
/// under 1 % of a batch on DRAM.
pub const DEFAULT_CHUNK: usize = 64 * 1024;
/// Most threads a run may use.
pub const MAX_THREADS: usize = 64;
/// Batch timings kept per thread (a ring: the latest ones when a run has more).
const SAMPLES_PER_THREAD: usize = 1 << 16;
/// A child that outlives its duration by this much is killed (a device stopped answering).
const GRACE: Duration = Duration::from_secs(10);
/// Exit status of a child that caught a fault.
const FAULT_EXIT: i32 = 86;

#[derive(Debug, thiserror::Error)]
pub enum MmioError {
    #[error(
        "a store was asked on a read-only mapping: nothing was written (stores need the \
         region mapped writable)"
    )]
    ReadOnly,
    #[error(
        "the window {offset:#x}..{end:#x} is outside the mapped region of {len} bytes \
         ({len:#x}): pick --offset and --size inside it",
        end = offset + size
    )]
    OutOfBounds { offset: u64, size: u64, len: u64 },
    #[error(
        "--offset {offset:#x} is not aligned to 16 bytes: accesses must be naturally aligned \
         for every width; use a multiple of 16"
    )]
    Misaligned { offset: u64 },
    #[error(
        "the window of {size} bytes is too small for {threads} thread(s): each thread needs \
         at least 16 bytes"
    )]
    TooSmall { size: u64, threads: u32 },
    #[error("{0}-bit accesses are not available on this architecture ({arch})", arch = std::env::consts::ARCH)]
    Unsupported(u32),
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the {width}-bit {op} run did not finish {grace} s after its duration and was killed: \
         the device may have stopped answering (check `dmesg` for PCIe errors)",
        grace = GRACE.as_secs()
    )]
    Hung { width: AccessWidth, op: AccessOp },
}

fn os(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> MmioError {
    let what = what.into();
    move |source| MmioError::Os { what, source }
}

/// A region mapped into this process. Unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    base: *mut u8,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain memory (or device memory) owned by this value; the engine
// divides it between threads by disjoint slices.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes of `file` from `file_offset` (a multiple of the page size), shared,
    /// read-only unless `writable`.
    pub fn of_file(
        file: &File,
        file_offset: u64,
        len: usize,
        writable: bool,
    ) -> Result<Mapping, std::io::Error> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let off = libc::off_t::try_from(file_offset)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        // SAFETY: a fresh mapping chosen by the kernel; the fd is valid for the call.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            base: p.cast(),
            len,
            writable,
        })
    }

    /// `len` bytes of ordinary memory, shared (so the measuring child writes the same pages,
    /// without copy-on-write faults) and populated up front.
    pub fn anonymous(len: usize) -> Result<Mapping, std::io::Error> {
        // SAFETY: a fresh anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            base: p.cast(),
            len,
            writable: true,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn writable(&self) -> bool {
        self.writable
    }

    /// The start of the mapping, for callers that fill or check memory they own.
    pub fn as_ptr(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// What to run on a window of a mapping.
#[derive(Clone, Debug)]
pub struct Config {
    pub widths: Vec<AccessWidth>,
    pub ops: Vec<AccessOp>,
    /// Threads, each sweeping its own equal slice of the window.
    pub threads: u32,
    /// Upper bound of each (width, operation) run.
    pub duration: Duration,
    /// Upper bound in sweeps over each thread's slice (`None`: the duration alone).
    pub max_sweeps: Option<u64>,
    /// Bytes per timed batch (rounded down to 16; at least 16).
    pub chunk: usize,
    /// Fault the window's pages in before timing (ordinary memory and files: the child of a
    /// fork starts with no page-table entries for shared mappings). Never for a BAR: it would
    /// read the device.
    pub prefault: bool,
}

impl Config {
    pub fn new(widths: Vec<AccessWidth>, ops: Vec<AccessOp>, duration: Duration) -> Config {
        Config {
            widths,
            ops,
            threads: 1,
            duration,
            max_sweeps: None,
            chunk: DEFAULT_CHUNK,
            prefault: true,
        }
    }
}

/// One (width, operation) run, or why it did not run.
#[derive(Debug)]
pub struct PairOutcome {
    pub width: AccessWidth,
    pub op: AccessOp,
    pub result: Result<AccessResult, MmioError>,
    /// Wrapping sum of every loaded value (as u64 lanes), for the tests' exactness checks.
    pub checksum: u64,
}

/// Check a window before anything is mapped or touched.
pub fn check_window(len: usize, offset: u64, size: u64, threads: u32) -> Result<(), MmioError> {
    let end = offset.checked_add(size);
    if end.is_none_or(|e| e > len as u64) || size == 0 {
        return Err(MmioError::OutOfBounds {
            offset,
            size,
            len: len as u64,
        });
    }
    if offset % 16 != 0 {
        return Err(MmioError::Misaligned { offset });
    }
    if threads == 0 || size / u64::from(threads) < 16 {
        return Err(MmioError::TooSmall { size, threads });
    }
    Ok(())
}

/// Whether this build can make 128-bit accesses.
pub fn has_128() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

/// The 128-bit instruction used, for reports.
pub fn instruction_128() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "SSE2 movdqa"
    } else if cfg!(target_arch = "aarch64") {
        "NEON ldr/str q"
    } else {
        "none"
    }
}

/// What a run is measuring, for a progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Filling a DRAM buffer before anything is timed ([`crate::mem`]).
    Fill,
    /// One (width, operation) pair.
    Access { width: AccessWidth, op: AccessOp },
    /// The C library's memcpy on a DRAM buffer ([`crate::mem`]).
    LibcMemcpy,
}

/// The progress of an `mmio` or `mem` run: called when a step begins, from the thread that
/// called [`Bench::run`].
#[derive(Clone, Debug)]
pub struct Progress {
    pub step: Step,
    pub phase: Phase,
    /// Time since the run began.
    pub elapsed: Duration,
}

impl Progress {
    /// `step` in `phase`, `start` being when the run began.
    pub fn at(start: Instant, step: Step, phase: Phase) -> Progress {
        Progress {
            step,
            phase,
            elapsed: start.elapsed(),
        }
    }
}

impl Phased for Progress {
    fn phase(&self) -> Phase {
        self.phase
    }
    fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

use model::mmio::PairError;

/// What a run of pairs measured: a result for each pair that ran, an error for each that
/// could not.
#[derive(Debug, Serialize)]
pub struct Measured {
    pub results: Vec<AccessResult>,
    pub errors: Vec<PairError>,
    /// The stop flag ended the run (the pairs not run are left out).
    pub interrupted: bool,
}

impl Measured {
    pub(crate) fn of(pairs: Vec<PairOutcome>, stop: &AtomicBool) -> Measured {
        let mut results = Vec::new();
        let mut errors = Vec::new();
        for p in pairs {
            match p.result {
                Ok(r) => results.push(r),
                Err(e) => errors.push(PairError {
                    width: p.width,
                    op: p.op,
                    message: e.to_string(),
                }),
            }
        }
        Measured {
            results,
            errors,
            interrupted: stop.load(Ordering::Relaxed),
        }
    }
}

/// `bench mmio` in the run shape of every engine ([`crate::Bench`]): every (width, operation)
/// pair of `config` on `offset..offset+size` of a mapping.
pub struct MmioRun<'a> {
    pub config: Config,
    pub map: &'a Mapping,
    pub offset: u64,
    pub size: u64,
}

impl Bench for MmioRun<'_> {
    const KIND: &'static str = "mmio";
    type Progress<'p> = Progress;
    type Measurement = Measured;
    type Error = MmioError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<Measured, MmioError>
    where
        F: for<'p> Fn(&Progress) + Sync,
    {
        let start = Instant::now();
        let on_step = |step| progress(&Progress::at(start, step, Phase::Run));
        let pairs = run_pairs(
            &self.config,
            self.map,
            self.offset,
            self.size,
            stop,
            &on_step,
        )?;
        Ok(Measured::of(pairs, stop))
    }

    fn interrupted(m: &Measured) -> bool {
        m.interrupted
    }
}

/// Run every (width, operation) pair of `cfg` on `offset..offset+size` of `map`, each in its
/// own child process; stops early when `stop` is set (the pairs not run are left out).
/// `on_step` is called as each pair begins. [`MmioRun`] and [`crate::mem::MemRun`] run
/// through this; it is public for what needs each pair's load checksum (the example
/// `mem_vs_loop` checks the engine read what a plain loop reads).
pub fn run_pairs(
    cfg: &Config,
    map: &Mapping,
    offset: u64,
    size: u64,
    stop: &AtomicBool,
    on_step: &dyn Fn(Step),
) -> Result<Vec<PairOutcome>, MmioError> {
    check_window(map.len, offset, size, cfg.threads)?;
    if cfg.threads as usize > MAX_THREADS {
        return Err(MmioError::TooSmall {
            size,
            threads: cfg.threads,
        });
    }
    if cfg.ops.contains(&AccessOp::Store) && !map.writable {
        return Err(MmioError::ReadOnly);
    }
    let mut out = Vec::new();
    for &op in &cfg.ops {
        for &width in &cfg.widths {
            if stop.load(Ordering::Relaxed) {
                return Ok(out);
            }
            on_step(Step::Access { width, op });
            let (result, checksum) = if width.bytes() == 16 && !has_128() {
                (Err(MmioError::Unsupported(128)), 0)
            } else {
                match run_pair(cfg, map, offset, size, width, op, stop) {
                    Ok((r, c)) => (Ok(r), c),
                    Err(e) => (Err(e), 0),
                }
            };
            out.push(PairOutcome {
                width,
                op,
                result,
                checksum,
            });
        }
    }
    Ok(out)
}

/// Per-thread counters in the shared page. Only their thread writes them, by plain loads and
/// stores (relaxed atomics): the timed loop has no locked read-modify-write (`fetch_add`,
/// `fetch_max`), a full barrier on x86 that waits for the stores in flight, once per batch.
#[repr(C)]
struct Slot {
    accesses: AtomicU64,
    batches: AtomicU64,
    checksum: AtomicU64,
    /// The end of this thread's last whole batch (ns from the child's start): what the rate
    /// uses when a fault ends the child before it can note its end.
    end_ns: AtomicU64,
    samples: [AtomicU64; SAMPLES_PER_THREAD],
}

#[repr(C)]
struct Shared {
    fault_addr: AtomicU64,
    /// 0: none; else the signal number.
    fault_signal: AtomicU64,
    start_ns: AtomicU64,
    end_ns: AtomicU64,
    /// Set by the parent when its stop flag is: the child's own copy of the flag is set only
    /// by a signal handler it inherited, which a caller stopping by a deadline does not have.
    stop: AtomicBool,
    slots: [Slot; MAX_THREADS],
}

/// The shared page the child's fault handler writes to.
static FAULT_PAGE: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let page = FAULT_PAGE.load(Ordering::SeqCst);
    if !page.is_null() && !info.is_null() {
        // SAFETY: the kernel passes a valid siginfo; `page` is the shared mapping set before
        // the handler was installed. Atomic stores and _exit are async-signal-safe.
        unsafe {
            let addr = (*info).si_addr() as u64;
            (*page).fault_addr.store(addr, Ordering::SeqCst);
            (*page).fault_signal.store(sig as u64, Ordering::SeqCst);
        }
    }
    // SAFETY: ends the child at once, without running anything else of this process.
    unsafe { libc::_exit(FAULT_EXIT) }
}

struct SharedMap(*mut Shared);

impl SharedMap {
    fn new() -> Result<SharedMap, MmioError> {
        let len = std::mem::size_of::<Shared>();
        // SAFETY: a fresh zero-filled shared anonymous mapping; all-zero is a valid Shared
        // (atomics of 0).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os("cannot map the page the measuring process reports to")(
                std::io::Error::last_os_error(),
            ));
        }
        Ok(SharedMap(p.cast()))
    }

    fn get(&self) -> &Shared {
        // SAFETY: valid for the life of self; only atomics inside.
        unsafe { &*self.0 }
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: what mmap returned in new().
        unsafe {
            libc::munmap(self.0.cast(), std::mem::size_of::<Shared>());
        }
    }
}

fn run_pair(
    cfg: &Config,
    map: &Mapping,
    offset: u64,
    size: u64,
    width: AccessWidth,
    op: AccessOp,
    stop: &AtomicBool,
) -> Result<(AccessResult, u64), MmioError> {
    let shared = SharedMap::new()?;
    let threads = cfg.threads as usize;
    // Each thread's slice: equal, a multiple of 16 bytes so every width stays aligned.
    let slice = (size / threads as u64) & !15;
    let chunk = (cfg.chunk.max(16) & !15).min(slice as usize);
    // SAFETY: fork; the child runs only the measuring code below and ends with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os("cannot fork the measuring process")(
            std::io::Error::last_os_error(),
        ));
    }
    if pid == 0 {
        child(cfg, map, &shared, offset, slice, chunk, width, op, stop);
    }
    // Parent: wait, bounded.
    let limit = Instant::now() + cfg.duration + GRACE;
    let mut status: libc::c_int = 0;
    loop {
        // Ctrl-C reaches the whole foreground group, but a `kill` of this process alone, or a
        // stop set by the caller's own deadline, would leave the child measuring: pass the
        // stop on through the shared page.
        if stop.load(Ordering::Relaxed) {
            shared.get().stop.store(true, Ordering::Relaxed);
        }
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os("cannot wait for the measuring process")(e));
        }
        if Instant::now() > limit {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(MmioError::Hung { width, op });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let sh = shared.get();
    let signal = sh.fault_signal.load(Ordering::SeqCst);
    let fault = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == FAULT_EXIT && signal != 0
    {
        let addr = sh.fault_addr.load(Ordering::SeqCst);
        let base = map.base as u64 + offset;
        Some(AccessFault {
            signal: if signal == libc::SIGBUS as u64 {
                "SIGBUS".into()
            } else {
                "SIGSEGV".into()
            },
            offset: addr.wrapping_sub(base),
        })
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        None
    } else {
        return Err(os(format!(
            "the {width}-bit {op} measuring process ended abnormally (status {status:#x})"
        ))(std::io::Error::other("no result")));
    };
    let mut accesses = 0u64;
    let mut batches = 0u64;
    let mut checksum = 0u64;
    let mut samples: Vec<f64> = Vec::new();
    for s in &sh.slots[..threads] {
        let n = s.batches.load(Ordering::SeqCst);
        accesses += s.accesses.load(Ordering::SeqCst);
        batches += n;
        checksum = checksum.wrapping_add(s.checksum.load(Ordering::SeqCst));
        let kept = (n as usize).min(SAMPLES_PER_THREAD);
        samples.extend(
            s.samples[..kept]
                .iter()
                .map(|x| f64::from_bits(x.load(Ordering::SeqCst))),
        );
    }
    samples.sort_by(f64::total_cmp);
    let start = sh.start_ns.load(Ordering::SeqCst);
    // The child's own end; after a fault, the end of the last whole batch of any thread.
    let end = sh.slots[..threads]
        .iter()
        .map(|s| s.end_ns.load(Ordering::SeqCst))
        .fold(sh.end_ns.load(Ordering::SeqCst), u64::max);
    let elapsed_ns = end.saturating_sub(start);
    let bytes = accesses * width.bytes() as u64;
    Ok((
        AccessResult {
            width,
            op,
            threads: cfg.threads,
            accesses,
            bytes,
            elapsed_ns,
            mb_per_s: mb_per_s(bytes, elapsed_ns),
            ns_per_access_p50: quantile(&samples, 0.5).unwrap_or(0.0),
            ns_per_access_p99: quantile(&samples, 0.99).unwrap_or(0.0),
            batches,
            fault,
        },
        checksum,
    ))
}

/// The measuring child: never returns.
#[allow(clippy::too_many_arguments)]
fn child(
    cfg: &Config,
    map: &Mapping,
    shared: &SharedMap,
    offset: u64,
    slice: u64,
    chunk: usize,
    width: AccessWidth,
    op: AccessOp,
    stop: &AtomicBool,
) -> ! {
    FAULT_PAGE.store(shared.0, Ordering::SeqCst);
    // SAFETY: installs handlers that only store atomics and _exit.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_fault as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut());
    }
    // SAFETY: offset..offset+size was checked against the mapping's length.
    let window = unsafe { map.base.add(offset as usize) } as usize;
    let threads = cfg.threads as usize;
    if cfg.prefault {
        let advice = match op {
            AccessOp::Store => libc::MADV_POPULATE_WRITE,
            AccessOp::Load => libc::MADV_POPULATE_READ,
        };
        // Page-aligned cover of the window. A failure (an old kernel, a hole past the end of
        // a file) is fine: the timed accesses then fault the pages in, or report the fault.
        let page = target::page_size() as usize;
        let start = window & !(page - 1);
        let end = window + (slice as usize) * threads;
        // SAFETY: advice on our own mapping; MADV_POPULATE_* report errors, never signal.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, advice);
        }
    }
    let sh = shared.get();
    let barrier = std::sync::Barrier::new(threads);
    let t0 = Instant::now();
    let worker = |t: usize| {
        // SAFETY: thread t owns [t*slice, (t+1)*slice) of the window, in bounds.
        let base = (window + t * slice as usize) as *mut u8;
        let slot = &sh.slots[t];
        let mut scratch = vec![0u8; chunk + 16];
        // 16-byte aligned DRAM side of the memcpy mode.
        let pad = scratch.as_ptr().align_offset(16);
        let buf = scratch[pad..].as_mut_ptr();
        barrier.wait();
        if t == 0 {
            sh.start_ns
                .store(t0.elapsed().as_nanos() as u64, Ordering::SeqCst);
        }
        let deadline = Instant::now() + cfg.duration;
        let mut sweeps = 0u64;
        let mut sum = 0u64;
        'run: loop {
            let mut pos = 0usize;
            while pos < slice as usize {
                let len = chunk.min(slice as usize - pos);
                let n = len / width.bytes();
                let b0 = Instant::now();
                // SAFETY: base+pos..+len is inside this thread's slice; aligned to 16.
                sum = sum.wrapping_add(unsafe {
                    sweep(
                        base.add(pos),
                        n,
                        width,
                        op,
                        buf,
                        (t * slice as usize + pos) as u64,
                    )
                });
                let b1 = Instant::now();
                let ns = b1.duration_since(b0).as_nanos() as f64;
                slot.end_ns
                    .store(b1.duration_since(t0).as_nanos() as u64, Ordering::Relaxed);
                let k = slot.batches.load(Ordering::Relaxed);
                slot.samples[k as usize % SAMPLES_PER_THREAD]
                    .store((ns / n as f64).to_bits(), Ordering::Relaxed);
                let done = slot.accesses.load(Ordering::Relaxed) + n as u64;
                slot.accesses.store(done, Ordering::Relaxed);
                slot.batches.store(k + 1, Ordering::Relaxed);
                slot.checksum.store(sum, Ordering::Relaxed);
                pos += len;
                if stop.load(Ordering::Relaxed)
                    || sh.stop.load(Ordering::Relaxed)
                    || Instant::now() >= deadline
                {
                    break 'run;
                }
            }
            sweeps += 1;
            if cfg.max_sweeps.is_some_and(|m| sweeps >= m) {
                break;
            }
        }
    };
    std::thread::scope(|s| {
        for t in 1..threads {
            let w = &worker;
            s.spawn(move || w(t));
        }
        worker(0);
    });
    sh.end_ns
        .store(t0.elapsed().as_nanos() as u64, Ordering::SeqCst);
    // SAFETY: ends the child without running the parent's destructors twice.
    unsafe { libc::_exit(0) }
}

// The 8- to 64-bit loops and the 128-bit store run in passes of UNROLL accesses written out
// (`access::UNROLL`, each pass one `asm!` block) rather than left to the compiler: the `dist`
// profile optimises for size (opt-level "z"), where LLVM unrolls nothing, and a loop paying
// its counter, compare and branch for every byte ran 8- to 32-bit accesses at 0.28-0.66 of a
// `--release` build's rate (`--example mem_vs_loop` built with each profile). Written out,
// every profile runs the same instructions per access. For the 128-bit store, left to the
// compiler at opt-level "z" the loop ran at 0.89 of a `--release` build (x86_64 `bench mem`,
// 18 alternating runs, medians), and through a closure the memcpy load ran at 0.52. The
// 128-bit load and the memcpy loops measured better as plain loops (see there).

/// `$body` until `$at == $end` (`$end` evaluated once, before the first pass), tested at the
/// bottom: one branch per pass (a `while` costs a jump more at opt-level "z").
macro_rules! until {
    ($at:ident == $end:expr, $body:expr) => {{
        let end = $end;
        if $at != end {
            loop {
                $body;
                if $at == end {
                    break;
                }
            }
        }
    }};
}

/// `n` accesses of `width` from `p` (16-byte aligned). Stores write each element's index in
/// the window (`first` + i, truncated to the width), so a test can check every byte; loads
/// return the wrapping sum of the values read, as u64 lanes. `buf` is the DRAM side of the
/// memcpy mode (at least n × 16 bytes).
///
/// # Safety
/// `p..p + n × width` must be mapped (writable for stores) and `buf` valid for the copy.
#[inline(never)]
pub unsafe fn sweep(
    p: *mut u8,
    n: usize,
    width: AccessWidth,
    op: AccessOp,
    buf: *mut u8,
    first_byte: u64,
) -> u64 {
    let first = first_byte / width.bytes() as u64;
    // SAFETY: the caller's contract, per width.
    unsafe {
        match (width, op) {
            (AccessWidth::W8, AccessOp::Load) => load::<u8>(p, n),
            (AccessWidth::W16, AccessOp::Load) => load::<u16>(p, n),
            (AccessWidth::W32, AccessOp::Load) => load::<u32>(p, n),
            (AccessWidth::W64, AccessOp::Load) => load::<u64>(p, n),
            (AccessWidth::W8, AccessOp::Store) => store::<u8>(p, n, first),
            (AccessWidth::W16, AccessOp::Store) => store::<u16>(p, n, first),
            (AccessWidth::W32, AccessOp::Store) => store::<u32>(p, n, first),
            (AccessWidth::W64, AccessOp::Store) => store::<u64>(p, n, first),
            (AccessWidth::W128, AccessOp::Load) => {
                // Written out as the narrower loads are (one asm! block a pass, summed in a
                // tree), the outliner cannot touch it; one load a loop turn ran at a third of
                // the 64-bit loads' rate.
                let (mut p, mut sum) = (p.cast_const(), 0);
                let (whole, end) = (p.add((n - n % UNROLL) * 16), p.add(n * 16));
                until!(p == whole, access::wide::load_pass(&mut p, &mut sum));
                until!(p == end, access::wide::load(&mut p, &mut sum));
                sum
            }
            (AccessWidth::W128, AccessOp::Store) => {
                let (mut p, mut v) = (p, first);
                let (whole, end) = (p.add((n - n % UNROLL) * 16), p.add(n * 16));
                until!(p == whole, access::wide::store_pass(&mut p, &mut v));
                until!(p == end, access::wide::store_one(&mut p, &mut v));
                0
            }
            (AccessWidth::Memcpy, AccessOp::Load) => {
                // memcpy_fromio: region -> DRAM, 128 bits at a time.
                // A plain loop, as the 128-bit load (0.79 written out, 0.96 as a loop).
                let (mut p, end, mut to, mut sum) =
                    (p.cast_const(), p.add(n * 16).cast_const(), buf, 0);
                until!(p == end, access::wide::load_to(&mut p, &mut to, &mut sum));
                sum
            }
            (AccessWidth::Memcpy, AccessOp::Store) => {
                // memcpy_toio: DRAM -> region; the DRAM side holds the same index pattern
                // as the 128-bit store.
                let (mut to, end, mut v) = (buf, buf.add(n * 16), first);
                until!(to == end, access::wide::fill(&mut to, &mut v));
                // A plain loop: written out it measured 0.84-0.97 of `--release`, as a loop
                // 1.02 (`bench mem`, x86_64).
                let (mut p, end, mut from) = (p, p.add(n * 16), buf.cast_const());
                until!(p == end, access::wide::store_from(&mut p, &mut from));
                0
            }
        }
    }
}

#[inline(always)]
unsafe fn load<T: Elem>(p: *mut u8, n: usize) -> u64 {
    let mut p = p.cast::<T>().cast_const();
    let mut sum = 0u64;
    // SAFETY: the caller's contract: p..p + n is mapped and aligned to T.
    unsafe {
        let (whole, end) = (p.add(n - n % UNROLL), p.add(n));
        until!(p == whole, T::load_pass(&mut p, &mut sum));
        until!(p == end, T::load_one(&mut p, &mut sum));
    }
    sum
}

/// The loop counts in the window's element indices (`first..first + n`, the values stored)
/// from the window's start, as a plain loop over the window would: with a separate offset
/// added to every value the compiler unrolled it half as far, and 8- to 32-bit stores ran at
/// 0.84-0.90 of a plain loop's rate (`--example mem_vs_loop`).
#[inline(always)]
unsafe fn store<T: Elem>(p: *mut u8, n: usize, first: u64) -> u64 {
    let first = first as usize;
    // The window's start: `first` elements before p (the caller's contract).
    let base = p.cast::<T>().wrapping_sub(first);
    let (mut i, whole, end) = (first, first + n - n % UNROLL, first + n);
    // SAFETY: the caller's contract: base + first .. base + end is p..p + n, aligned to T.
    unsafe {
        until!(i == whole, T::store_pass(base, &mut i));
        until!(i == end, T::store_one(base, &mut i));
    }
    0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::{Read, Seek, Write};
    use std::os::fd::FromRawFd;

    /// A memfd of `len` bytes holding `fill(i)` at byte i: the stand-in for a BAR.
    fn memfd(len: usize, fill: impl Fn(usize) -> u8) -> File {
        // SAFETY: a plain syscall with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"headroom-bar".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: fd is ours.
        let mut f = unsafe { File::from_raw_fd(fd) };
        let bytes: Vec<u8> = (0..len).map(fill).collect();
        f.write_all(&bytes).unwrap();
        f
    }

    fn contents(f: &mut File) -> Vec<u8> {
        let mut v = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut v).unwrap();
        v
    }

    fn cfg(widths: &[AccessWidth], ops: &[AccessOp], sweeps: u64) -> Config {
        let mut c = Config::new(widths.to_vec(), ops.to_vec(), Duration::from_secs(30));
        c.max_sweeps = Some(sweeps);
        c.chunk = 4096;
        c
    }

    fn run(
        c: &Config,
        map: &Mapping,
        offset: u64,
        size: u64,
        stop: &AtomicBool,
    ) -> Result<Vec<PairOutcome>, MmioError> {
        run_pairs(c, map, offset, size, stop, &|_| {})
    }

    fn ok(o: &PairOutcome) -> &AccessResult {
        o.result.as_ref().unwrap()
    }

    /// The 128-bit and memcpy loops (the 128-bit store written out by `passes!`): n accesses of 16 bytes, no
    /// more, for every count around a multiple of UNROLL.
    #[test]
    fn wide_sweeps_of_any_count_touch_exactly_n_elements() {
        if !has_128() {
            return;
        }
        let len = 4096;
        for n in [0, 1, UNROLL - 1, UNROLL, UNROLL + 1, 3 * UNROLL + 5] {
            let map = Mapping::anonymous(len).unwrap();
            let m = map.as_ptr();
            let copy = Mapping::anonymous(len).unwrap();
            let words = |p: *mut u8| {
                // SAFETY: our own mapping of len bytes, 8-byte aligned.
                unsafe { std::slice::from_raw_parts_mut(p.cast::<u64>(), len / 8) }
            };
            for (i, x) in words(m).iter_mut().enumerate() {
                *x = i as u64 * 7 + 1;
            }
            let want: u64 = words(m)[..2 * n].iter().fold(0, |a, x| a.wrapping_add(*x));
            for w in [AccessWidth::W128, AccessWidth::Memcpy] {
                // SAFETY: n × 16 bytes of both mappings.
                let sum = unsafe { sweep(m, n, w, AccessOp::Load, copy.as_ptr(), 0) };
                assert_eq!(sum, want, "{w:?} load of {n}");
            }
            assert_eq!(
                words(copy.as_ptr())[..2 * n],
                words(m)[..2 * n],
                "memcpy of {n}"
            );
            for w in [AccessWidth::W128, AccessWidth::Memcpy] {
                // Stores from element 3 of a window: values 3, 4, ... in both halves.
                // SAFETY: as above, 3 elements in.
                unsafe { sweep(m.add(48), n, w, AccessOp::Store, copy.as_ptr(), 48) };
                let mem = words(m);
                for (e, pair) in mem.chunks(2).enumerate() {
                    if (3..3 + n).contains(&e) {
                        assert_eq!(
                            pair,
                            [e as u64, e as u64],
                            "{w:?} store of {n}, element {e}"
                        );
                    } else {
                        let untouched = [e as u64 * 14 + 1, e as u64 * 14 + 8];
                        assert_eq!(pair, untouched, "{w:?} store of {n} wrote element {e}");
                    }
                }
            }
        }
    }

    /// The written-out loops' passes and their remainders: every count around a multiple of
    /// UNROLL touches exactly its n elements, reads their true sum and writes their indices.
    #[test]
    fn sweeps_of_any_count_touch_exactly_n_elements() {
        let len = 4096;
        let pattern = |i: usize| (i * 13 + 5) as u8;
        let widths = [
            AccessWidth::W8,
            AccessWidth::W16,
            AccessWidth::W32,
            AccessWidth::W64,
        ];
        for w in widths {
            let b = w.bytes();
            for n in [0, 1, UNROLL - 1, UNROLL, UNROLL + 1, 3 * UNROLL + 5] {
                let map = Mapping::anonymous(len).unwrap();
                let m = map.as_ptr();
                // SAFETY: our own mapping of len bytes.
                let mem = unsafe { std::slice::from_raw_parts_mut(m, len) };
                for (i, x) in mem.iter_mut().enumerate() {
                    *x = pattern(i);
                }
                let want: u64 = mem[..n * b]
                    .chunks(b)
                    .map(|c| {
                        let mut v = [0u8; 8];
                        v[..b].copy_from_slice(c);
                        u64::from_ne_bytes(v)
                    })
                    .fold(0, u64::wrapping_add);
                // SAFETY: n × b bytes of the mapping, aligned; buf unused for these widths.
                let sum = unsafe { sweep(m, n, w, AccessOp::Load, m, 0) };
                assert_eq!(sum, want, "{w:?} load of {n}");
                // Stores from element 3 of a window: values 3, 4, ...
                // SAFETY: as above, 3 elements in.
                unsafe { sweep(m.add(3 * b), n, w, AccessOp::Store, m, 3 * b as u64) };
                // SAFETY: as above.
                let mem = unsafe { std::slice::from_raw_parts(m, len) };
                for (i, c) in mem.chunks(b).enumerate() {
                    let mut v = [0u8; 8];
                    v[..b].copy_from_slice(c);
                    let got = u64::from_ne_bytes(v);
                    if (3..3 + n).contains(&i) {
                        let mask = if b == 8 { u64::MAX } else { (1 << (8 * b)) - 1 };
                        assert_eq!(got, i as u64 & mask, "{w:?} store of {n}, element {i}");
                    } else {
                        let mut old = [0u8; 8];
                        for (j, o) in old[..b].iter_mut().enumerate() {
                            *o = pattern(i * b + j);
                        }
                        assert_eq!(got, u64::from_ne_bytes(old), "{w:?} store of {n} wrote {i}");
                    }
                }
            }
        }
    }

    /// The 128-bit load sums both 64-bit lanes of every element, in whole passes and the
    /// elements after them alike.
    #[test]
    fn the_128_bit_load_sums_every_lane_of_n_elements() {
        if !has_128() {
            return;
        }
        let len = 64 * 1024;
        for n in [0, 1, UNROLL - 1, UNROLL, UNROLL + 1, 3 * UNROLL + 5] {
            let map = Mapping::anonymous(len).unwrap();
            let m = map.as_ptr();
            // SAFETY: our own mapping of len bytes.
            let mem = unsafe { std::slice::from_raw_parts_mut(m, len) };
            for (i, x) in mem.iter_mut().enumerate() {
                *x = (i * 29 + 11) as u8;
            }
            let want = mem[..n * 16]
                .chunks(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .fold(0, u64::wrapping_add);
            // SAFETY: n × 16 bytes of the mapping, 16-byte aligned; buf unused for loads.
            let sum = unsafe { sweep(m, n, AccessWidth::W128, AccessOp::Load, m, 0) };
            assert_eq!(sum, want, "128-bit load of {n}");
        }
    }

    #[test]
    fn loads_count_and_read_every_element_exactly() {
        let len = 64 * 1024;
        let f = memfd(len, |i| (i * 7 + 3) as u8);
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let map = Mapping::of_file(&f, 0, len, false).unwrap();
        let widths: Vec<AccessWidth> = AccessWidth::ALL
            .into_iter()
            .filter(|w| w.bytes() < 16 || has_128())
            .collect();
        let stop = AtomicBool::new(false);
        let out = run(
            &cfg(&widths, &[AccessOp::Load], 3),
            &map,
            0,
            len as u64,
            &stop,
        )
        .unwrap();
        assert_eq!(out.len(), widths.len());
        for o in &out {
            let r = ok(o);
            let w = o.width.bytes();
            assert_eq!(r.accesses, 3 * (len / w) as u64, "{:?}", o.width);
            assert_eq!(r.bytes, 3 * len as u64);
            assert_eq!(r.batches, 3 * (len / 4096) as u64);
            assert!(r.fault.is_none());
            // The sum of the elements as the width reads them (little-endian), three times.
            let one: u64 = bytes
                .chunks(w.min(8))
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..c.len()].copy_from_slice(c);
                    u64::from_le_bytes(b)
                })
                .fold(0u64, |a, x| a.wrapping_add(x));
            assert_eq!(o.checksum, one.wrapping_mul(3), "{:?}", o.width);
            assert!(r.ns_per_access_p50 > 0.0 && r.ns_per_access_p99 >= r.ns_per_access_p50);
        }
    }

    #[test]
    fn stores_write_exactly_the_width_asked() {
        let len = 16 * 1024;
        let widths: Vec<AccessWidth> = AccessWidth::ALL
            .into_iter()
            .filter(|w| w.bytes() < 16 || has_128())
            .collect();
        for w in widths {
            let mut f = memfd(len, |_| 0xee);
            let map = Mapping::of_file(&f, 0, len, true).unwrap();
            let stop = AtomicBool::new(false);
            // A window that starts 4 KiB in: the bytes before and after must stay untouched.
            let out = run(&cfg(&[w], &[AccessOp::Store], 1), &map, 4096, 8192, &stop).unwrap();
            let r = ok(&out[0]);
            assert_eq!(r.accesses, (8192 / w.bytes()) as u64, "{w:?}");
            drop(map);
            let got = contents(&mut f);
            assert!(
                got[..4096].iter().all(|&b| b == 0xee),
                "{w:?} wrote before the window"
            );
            assert!(
                got[12288..].iter().all(|&b| b == 0xee),
                "{w:?} wrote past the window"
            );
            for (i, el) in got[4096..12288].chunks(w.bytes()).enumerate() {
                let want: Vec<u8> = match w.bytes() {
                    16 => [(i as u64).to_le_bytes(), (i as u64).to_le_bytes()].concat(),
                    n => (i as u64).to_le_bytes()[..n].to_vec(),
                };
                assert_eq!(el, &want[..], "{w:?} element {i}");
            }
        }
    }

    #[test]
    fn threads_split_the_window_and_counts_add_up() {
        let len = 64 * 1024;
        let f = memfd(len, |i| i as u8);
        let map = Mapping::of_file(&f, 0, len, false).unwrap();
        let mut c = cfg(&[AccessWidth::W32], &[AccessOp::Load], 2);
        c.threads = 2;
        let out = run(&c, &map, 0, len as u64, &AtomicBool::new(false)).unwrap();
        let r = ok(&out[0]);
        assert_eq!(r.threads, 2);
        assert_eq!(r.accesses, 2 * (len / 4) as u64);
    }

    #[test]
    fn windows_outside_the_region_are_refused_before_any_access() {
        let f = memfd(8192, |_| 0);
        let map = Mapping::of_file(&f, 0, 8192, true).unwrap();
        let c = cfg(&[AccessWidth::W32], &[AccessOp::Store], 1);
        let stop = AtomicBool::new(false);
        let e = run(&c, &map, 4096, 8192, &stop).unwrap_err();
        assert!(matches!(e, MmioError::OutOfBounds { .. }), "{e}");
        assert!(e.to_string().contains("0x1000..0x3000"), "{e}");
        let e = run(&c, &map, 8, 64, &stop).unwrap_err();
        assert!(matches!(e, MmioError::Misaligned { offset: 8 }), "{e}");
        let e = run(&c, &map, u64::MAX - 15, 32, &stop).unwrap_err();
        assert!(matches!(e, MmioError::OutOfBounds { .. }), "{e}");
    }

    #[test]
    fn a_store_never_reaches_a_read_only_mapping() {
        let mut f = memfd(8192, |i| i as u8);
        let before = contents(&mut f);
        let map = Mapping::of_file(&f, 0, 8192, false).unwrap();
        let c = cfg(&[AccessWidth::W8], &[AccessOp::Load, AccessOp::Store], 1);
        let e = run(&c, &map, 0, 8192, &AtomicBool::new(false)).unwrap_err();
        assert!(matches!(e, MmioError::ReadOnly), "{e}");
        drop(map);
        assert_eq!(contents(&mut f), before);
    }

    #[test]
    fn sigbus_past_the_end_of_a_truncated_file_is_reported_with_width_and_offset() {
        let len = 64 * 1024;
        let f = memfd(len, |_| 1);
        let map = Mapping::of_file(&f, 0, len, true).unwrap();
        // The file shrinks under the mapping: pages from 16 KiB on are gone.
        f.set_len(16 * 1024).unwrap();
        for (w, op) in [
            (AccessWidth::W32, AccessOp::Load),
            (AccessWidth::W64, AccessOp::Store),
            (AccessWidth::Memcpy, AccessOp::Load),
        ] {
            if w.bytes() == 16 && !has_128() {
                continue;
            }
            let out = run(
                &cfg(&[w], &[op], 1),
                &map,
                0,
                len as u64,
                &AtomicBool::new(false),
            )
            .unwrap();
            let r = ok(&out[0]);
            let fault = r.fault.as_ref().expect("the fault is reported");
            assert_eq!(fault.signal, "SIGBUS");
            assert_eq!(fault.offset, 16 * 1024, "{w:?} {op:?}");
            // Four whole 4 KiB batches were done before the fault.
            assert_eq!(r.accesses, (16 * 1024 / w.bytes()) as u64, "{w:?} {op:?}");
            assert!(
                r.elapsed_ns > 0 && r.mb_per_s > 0.0,
                "the time up to the fault counts"
            );
        }
        // The process is alive and the mapping still usable below the cut.
        let out = run(
            &cfg(&[AccessWidth::W8], &[AccessOp::Load], 1),
            &map,
            0,
            16 * 1024,
            &AtomicBool::new(false),
        )
        .unwrap();
        assert!(ok(&out[0]).fault.is_none());
    }
}
