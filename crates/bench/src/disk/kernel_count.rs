//! The kernel's own count of the bytes a run moved, and the process's CPU time.
//!
//! The engine never reads `/proc` itself: the caller hands it a [`KernelCounts`] (the cli's
//! is backed by the samplers of the `counters` crate: `/proc/self/io` and `/proc/diskstats`),
//! read before and after each run, beside the engine's own count.

/// Bytes read and written, as the kernel counted them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ByteCount {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// What a block device has done so far: its bytes and the requests that carried them
/// (`/proc/diskstats`: reads and writes completed, each one request of the block layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceCount {
    pub bytes: ByteCount,
    pub read_requests: u64,
    pub write_requests: u64,
}

/// The kernel's running byte counters, read around each run (docs/ARCHITECTURE.md: samplers run beside an
/// engine, the cli starts them). `None` when a counter is not available.
pub trait KernelCounts: Sync {
    /// Bytes this process (every thread, the io_uring workers included) has caused to be
    /// read from and written to storage so far.
    fn process_bytes(&self) -> Option<ByteCount>;
    /// Bytes and requests block device `name` (e.g. `nvme0n1`) has read and written so far,
    /// every process's traffic included.
    fn device_counts(&self, name: &str) -> Option<DeviceCount>;
}

/// Ask the kernel to read this program's own file into the page cache now, before anything is
/// measured. Otherwise the first run of a code path pages it in from disk during a run, and
/// `/proc/self/io` counts those reads with the benchmark's (seen as +1 % on a 16 MiB test).
/// The readahead is submitted (and counted) here, outside every measured window.
pub fn preload_own_executable() {
    let Ok(f) = std::fs::File::open("/proc/self/exe") else {
        return;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: a valid fd; offset 0 and length 0 mean the whole file; advice only.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
}

/// User and system CPU seconds of this process so far (`getrusage(RUSAGE_SELF)`: every thread,
/// living or exited, including the kernel's io_uring worker threads, which belong to it).
pub fn process_cpu() -> (f64, f64) {
    // SAFETY: `rusage` is plain data; zeroed is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage struct.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let (u0, s0) = process_cpu();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        // Burn CPU until the kernel's count moves; 10 s is far beyond any tick granularity.
        loop {
            for i in 0..1_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            let (u1, s1) = process_cpu();
            if u1 + s1 > u0 + s0 {
                break;
            }
            assert!(start.elapsed().as_secs() < 10, "getrusage never moved");
        }
        std::hint::black_box(x);
    }
}
