//! Samplers that run beside an engine (docs/ARCHITECTURE.md, `crates/counters`).
//!
//! Each source is one module that parses its file in a small pure function (with a link to
//! the kernel document that defines the format) and a [`Sampler`]: take a snapshot before
//! the engine runs, another after, and ask for the [`Sampler::delta`] between them. Every
//! file is read under a [`SysRoot`] (`/` on a live system, a fixture tree in tests and with
//! `--root`). A missing file is [`Error::Unsupported`], a normal state of the world (a
//! kernel without CONFIG_TASK_IO_ACCOUNTING has no `/proc/PID/io`), never a panic.
//!
//! This crate never prints and never judges: the cli starts samplers, runs the engine, stops
//! them, and report says what the numbers mean.

pub mod diskstats;
pub mod event;
pub mod interrupts;
pub mod list;
pub mod loadavg;
pub mod net_dev;
pub mod pcie_pmu;
pub mod perf;
pub mod pmu;
pub mod proc_io;
pub mod reaper;
pub mod root_port;
pub mod timerlat;
pub mod trace;
pub mod workload;

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use diskstats::{DiskStats, DiskStatsSampler};
pub use interrupts::{InterruptsSampler, IrqCounts};
pub use loadavg::LoadAverageSampler;
pub use net_dev::{NetDevSampler, NetDevStats};
pub use proc_io::{ProcIo, ProcIoSampler};

// The directory the kernel's files are read under (`/` on a live system): the one root type
// of probe and counters, `model::root::SysRoot`, under that one name.
use model::root::SysRoot;

/// Reading a counter file under a [`SysRoot`], with this crate's errors.
pub trait ReadUnder {
    /// The text of `rel` (an absolute path such as `/proc/diskstats`) under the root.
    fn read(&self, rel: &str) -> Result<String, Error>;
}

impl ReadUnder for SysRoot {
    fn read(&self, rel: &str) -> Result<String, Error> {
        let path = self.path(rel);
        std::fs::read_to_string(&path).map_err(|e| Error::from_io(path, e))
    }
}

/// Why a sample could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file does not exist: this kernel (or this fixture) does not provide the counter.
    #[error("{} does not exist: this kernel does not provide the counter", .0.display())]
    Unsupported(PathBuf),
    /// The file exists but could not be read (permission, I/O error).
    #[error("cannot read {}: {}", .path.display(), .source)]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file was read but its text is not in the format the kernel documents.
    #[error("{} is not in the documented format: {}", .path.display(), .what)]
    Format { path: PathBuf, what: String },
}

impl Error {
    pub fn from_io(path: PathBuf, e: std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Unsupported(path)
        } else {
            Error::Read { path, source: e }
        }
    }

    /// Whether this is the normal absence of a counter rather than a failure.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::Unsupported(_))
    }
}

/// A source of counters read twice around a piece of work.
///
/// `snapshot` reads the source now; `delta` says what changed between two snapshots of the
/// same sampler (later minus earlier; a counter that went backwards, e.g. a device removed and
/// re-added, counts as 0, never as a huge wrapped number).
pub trait Sampler {
    type Snapshot;
    type Delta;
    fn snapshot(&self) -> Result<Self::Snapshot, Error>;
    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> Self::Delta;
}

/// A parsed reading with the moment it was taken (monotonic clock), so a delta knows its
/// interval and can give rates.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamped<T> {
    pub at: Instant,
    pub value: T,
}

impl<T> Stamped<T> {
    pub fn now(value: T) -> Stamped<T> {
        Stamped {
            at: Instant::now(),
            value,
        }
    }
}

/// The interval between two stamped readings (zero if the clock did not move).
pub fn interval<T>(before: &Stamped<T>, after: &Stamped<T>) -> Duration {
    after.at.saturating_duration_since(before.at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let e = SysRoot::new(dir.path()).read("/proc/net/dev").unwrap_err();
        assert!(e.is_unsupported(), "{e}");
        assert!(e.to_string().contains("proc/net/dev does not exist"), "{e}");
    }
}
