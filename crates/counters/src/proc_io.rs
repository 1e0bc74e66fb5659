//! `/proc/PID/io`: the bytes a process caused to move.
//!
//! Format: Documentation/filesystems/proc.rst §3.3 "/proc/<pid>/io - Display the IO
//! accounting fields". `read_bytes` counts what the process caused to be fetched from
//! storage (at block I/O submission), `write_bytes` what it caused to be sent to storage;
//! `rchar`/`wchar` count every read(2)/write(2) byte, page cache or not. Absent on kernels
//! without CONFIG_TASK_IO_ACCOUNTING.

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
use std::time::Duration;

/// The fields of `/proc/PID/io`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

impl ProcIo {
    /// `self - earlier`, field by field (0 where a counter went backwards).
    pub fn since(&self, earlier: &ProcIo) -> ProcIo {
        ProcIo {
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            syscr: self.syscr.saturating_sub(earlier.syscr),
            syscw: self.syscw.saturating_sub(earlier.syscw),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(earlier.cancelled_write_bytes),
        }
    }
}

/// Parse the text of `/proc/PID/io`. `None` when a field is missing or not a number.
pub fn parse(text: &str) -> Option<ProcIo> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(ProcIo {
        rchar: field("rchar")?,
        wchar: field("wchar")?,
        syscr: field("syscr")?,
        syscw: field("syscw")?,
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
        cancelled_write_bytes: field("cancelled_write_bytes")?,
    })
}

/// Samples `/proc/self/io` (this whole process, every thread and io_uring worker included)
/// or `/proc/PID/io` of another process.
#[derive(Clone, Debug, Default)]
pub struct ProcIoSampler {
    pub root: SysRoot,
    /// `None`: this process (`/proc/self/io`).
    pub pid: Option<u32>,
}

/// What the process moved between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcIoDelta {
    pub elapsed: Duration,
    pub io: ProcIo,
}

impl ProcIoSampler {
    /// This process.
    pub fn own(root: SysRoot) -> ProcIoSampler {
        ProcIoSampler { root, pid: None }
    }

    pub fn process(root: SysRoot, pid: u32) -> ProcIoSampler {
        ProcIoSampler {
            root,
            pid: Some(pid),
        }
    }

    fn file(&self) -> String {
        match self.pid {
            Some(p) => format!("/proc/{p}/io"),
            None => "/proc/self/io".to_string(),
        }
    }
}

impl Sampler for ProcIoSampler {
    type Snapshot = Stamped<ProcIo>;
    type Delta = ProcIoDelta;

    fn snapshot(&self) -> Result<Self::Snapshot, Error> {
        let file = self.file();
        let text = self.root.read(&file)?;
        parse(&text).map(Stamped::now).ok_or_else(|| Error::Format {
            path: self.root.path(&file),
            what: "a field of rchar..cancelled_write_bytes is missing or not a number".into(),
        })
    }

    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> ProcIoDelta {
        ProcIoDelta {
            elapsed: interval(before, after),
            io: after.value.since(&before.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on this project's build VM (kernel 6.18).
    const PROC_IO: &str = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\n\
                           write_bytes: 1048576\ncancelled_write_bytes: 0\n";

    #[test]
    fn fields() {
        let io = parse(PROC_IO).unwrap();
        assert_eq!(
            (io.rchar, io.read_bytes, io.write_bytes),
            (6976, 4096, 1_048_576)
        );
        assert_eq!(parse("rchar: 1\n"), None);
    }

    #[test]
    fn own_process_reads_count() {
        // The live /proc/self/io: this test's own reads of the file move rchar.
        let s = ProcIoSampler::own(SysRoot::system());
        let a = s.snapshot().unwrap();
        let b = s.snapshot().unwrap();
        assert!(
            s.delta(&a, &b).io.rchar > 0,
            "reading /proc/self/io is a read"
        );
    }

    #[test]
    fn garbage_is_a_format_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/42")).unwrap();
        std::fs::write(dir.path().join("proc/42/io"), "nonsense\n").unwrap();
        let e = ProcIoSampler::process(SysRoot::new(dir.path()), 42)
            .snapshot()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("proc/42/io is not in the documented format"),
            "{e}"
        );
    }
}
