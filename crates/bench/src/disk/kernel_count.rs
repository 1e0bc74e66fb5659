//! The kernel's own count of the bytes a run moved, and the process's CPU time.
//!
//! Small parsers of `/proc/self/io` and `/proc/diskstats`. They belong with the other samplers
//! in a `counters` crate once it exists (DESIGN.md); the disk engine needs them per run now.

/// The storage-level counters of `/proc/self/io` (Documentation/filesystems/proc.rst §3.3):
/// `read_bytes` = bytes this process caused to be fetched from storage (counted when the
/// block I/O is submitted), `write_bytes` = bytes it caused to be sent to storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Parse the text of `/proc/PID/io`. `None` when a field is missing (kernel without
/// CONFIG_TASK_IO_ACCOUNTING).
pub fn parse_proc_io(text: &str) -> Option<ProcIo> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(ProcIo {
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

/// `/proc/self/io` now, for the whole process (every thread, the io_uring workers included).
pub fn proc_self_io() -> Option<ProcIo> {
    parse_proc_io(&std::fs::read_to_string("/proc/self/io").ok()?)
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

/// Sectors read and written of one device line of `/proc/diskstats`
/// (Documentation/admin-guide/iostats.rst: fields 6 and 10, in 512-byte units whatever the
/// device's logical block size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskStats {
    pub sectors_read: u64,
    pub sectors_written: u64,
}

impl DiskStats {
    pub fn read_bytes(&self) -> u64 {
        self.sectors_read * 512
    }
    pub fn write_bytes(&self) -> u64 {
        self.sectors_written * 512
    }
}

/// The line of device `name` in the text of `/proc/diskstats`.
pub fn parse_diskstats(text: &str, name: &str) -> Option<DiskStats> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(2) != Some(&name) {
            return None;
        }
        Some(DiskStats {
            sectors_read: f.get(5)?.parse().ok()?,
            sectors_written: f.get(9)?.parse().ok()?,
        })
    })
}

/// `/proc/diskstats` for device `name` now.
pub fn diskstats_for(name: &str) -> Option<DiskStats> {
    parse_diskstats(&std::fs::read_to_string("/proc/diskstats").ok()?, name)
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

    // Captured on this project's build VM (kernel 6.18).
    const PROC_IO: &str = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\n\
                           write_bytes: 1048576\ncancelled_write_bytes: 0\n";
    const DISKSTATS: &str = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n \
        254       0 vda 27781 5177 2198826 34597 57080 43620 8301168 72392 0 14740 109411 \
        11795 31 912064 1265 42816 1156\n";

    #[test]
    fn proc_io_fields() {
        assert_eq!(
            parse_proc_io(PROC_IO),
            Some(ProcIo {
                read_bytes: 4096,
                write_bytes: 1_048_576
            })
        );
        assert_eq!(parse_proc_io("rchar: 1\n"), None);
    }

    #[test]
    fn diskstats_sectors_are_512_bytes() {
        let d = parse_diskstats(DISKSTATS, "vda").unwrap();
        assert_eq!(d.sectors_read, 2_198_826);
        assert_eq!(d.write_bytes(), 8_301_168 * 512);
        assert_eq!(parse_diskstats(DISKSTATS, "vd"), None);
    }

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
