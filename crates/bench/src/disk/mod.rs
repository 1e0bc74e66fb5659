//! The storage engine behind `headroom bench disk`.
//!
//! Shaped after fio's pluggable ioengines (STYLE.md): an [`Engine`] is looked up by name in
//! [`engines`], opens one [`EngineWorker`] per job thread, and the worker fills the same small
//! set of hooks as fio's `ioengine_ops` (`queue`, `commit`, `getevents`). The job runner here
//! never knows which engine it drives: a synchronous engine completes an I/O inside `queue`
//! (fio's `FIO_Q_COMPLETED`), an asynchronous one completes it in `getevents`.
//!
//! One run = one [`model::disk::TestSpec`] on a prepared [`target::Target`] for up to
//! `runtime`: the ramp is run and thrown away, then bytes, I/Os, an HDR latency histogram and
//! the process's CPU time are measured, and the kernel's own count of the same bytes
//! (`/proc/self/io`, `/proc/diskstats`) is read before and after for the cross-check.
//!
//! - [`workload`]: the operation of one I/O. A test's access pattern and read/write mix
//!   (fio's `--rw`) are `model::disk` types, like everything the document holds: bench uses
//!   them from there and passes none of them on under its own name.
//! - [`engine`]: the engine trait, its capability flags and the registry; the engines
//!   themselves are [`io_uring`], [`psync`] and [`null`].
//! - [`buffers`]: O_DIRECT-aligned I/O buffers and the pseudo-random data in them.
//! - [`job`]: one job thread keeping `queue_depth` I/Os in flight.
//! - [`runner`]: tests, runs, job threads, progress and the kernel's counts around each run.
//! - [`result`]: the latency recorders, summarized into `model::disk::Latency`.
//! - [`target`] (the file or device), [`kernel_count`] (what the kernel counted); the test
//!   sets and fio's flags that make a run's tests are `model::disk::profiles`.

pub mod buffers;
pub mod engine;
pub mod io_uring;
pub mod job;
pub mod kernel_count;
pub mod null;
pub mod psync;
pub mod result;
pub mod runner;
pub mod target;
pub mod workload;

pub use buffers::{Content, IoBuffers, Rng};
pub use engine::{
    choose_engine, engine_by_name, engines, Completion, Engine, EngineCaps, EngineWorker, IoUnit,
    Queued, WAIT_SLICE,
};
pub use job::{Region, HUNG_AFTER};
pub use runner::{DiskRun, Progress};
pub use target::{remove_created_files, Target};
pub use workload::Op;

/// Parameters for unit tests elsewhere in the crate: CrystalDiskMark's peak set.
#[cfg(test)]
pub(crate) fn test_parameters() -> model::disk::Parameters {
    use model::disk::profiles::{build, Overrides, Profile};
    build(Profile::Peak, &Overrides::default(), "psync", 2)
        .expect("peak builds")
        .0
}

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
