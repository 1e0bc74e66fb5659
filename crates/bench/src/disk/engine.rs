//! The engine interface and its registry: fio's `struct ioengine_ops` as one trait with
//! default methods, per-engine capability flags (fio's `FIO_SYNCIO`, `FIO_DISKLESSIO`), and
//! the table of engines looked up by `--engine` name.

use super::{buffers::IoBuffers, io_uring, null, psync, DiskError, Op};
use serde::Serialize;
use std::os::fd::RawFd;
use std::time::Duration;

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

/// What an engine can do, for the runner and for the report (fio's `enum fio_ioengine_flags`).
/// The default is fio's plain engine: synchronous, and every I/O reaches the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EngineCaps {
    /// I/Os can be in flight together, so a queue depth above 1 is real (the opposite of fio's
    /// `FIO_SYNCIO`).
    pub asynchronous: bool,
    /// No I/O reaches the target (fio's `FIO_DISKLESSIO`, set by its `null` engine): the
    /// numbers are the tool's own cost, and the kernel's byte counts have nothing to check.
    pub diskless: bool,
    /// Tries each I/O without blocking first (IOCB_NOWAIT, io_uring's inline issue), and the
    /// kernel issues it again from a worker thread of this process when the block layer sends
    /// it back with EAGAIN. On a block device the kernel's count of this process's bytes
    /// (`/proc/self/io`) then counts both submissions; see the runner's cross-check.
    pub nowait_issue: bool,
}

/// A disk I/O engine (fio's `struct ioengine_ops`). Implementations are stateless; per-thread
/// state lives in the [`EngineWorker`] returned by `open_worker`.
pub trait Engine: Sync {
    /// The name used by `--engine` and in reports.
    fn name(&self) -> &'static str;
    /// What the engine can do; by default synchronous and reaching the target.
    fn caps(&self) -> EngineCaps {
        EngineCaps::default()
    }
    /// Whether the engine can run on this system; the error says why not. By default it can
    /// (plain system calls every Linux has).
    fn available(&self) -> Result<(), DiskError> {
        Ok(())
    }
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

/// The registry: every engine, best first (fio's list of loaded ioengines). `auto` picks the
/// first available one that reaches the target; a diskless engine (`null`) only runs by name.
static ENGINES: [&dyn Engine; 3] = [
    &io_uring::IoUringEngine,
    &psync::PsyncEngine,
    &null::NullEngine,
];

/// Every engine of the registry, best first.
pub fn engines() -> [&'static dyn Engine; 3] {
    ENGINES
}

/// The engine named `name` (`io_uring`, `psync`, `null`).
pub fn engine_by_name(name: &str) -> Option<&'static dyn Engine> {
    ENGINES.iter().copied().find(|e| e.name() == name)
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
    for e in engines().into_iter().filter(|e| !e.caps().diskless) {
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

/// How long an asynchronous engine waits for completions before giving the runner control back.
pub const WAIT_SLICE: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_names_each_engine_once_and_auto_never_picks_a_diskless_one() {
        let names: Vec<&str> = engines().iter().map(|e| e.name()).collect();
        assert_eq!(names, ["io_uring", "psync", "null"]);
        for n in names {
            assert_eq!(engine_by_name(n).map(|e| e.name()), Some(n));
        }
        assert!(engine_by_name("null").unwrap().caps().diskless);
        assert!(!engine_by_name("psync").unwrap().caps().asynchronous);
        let (auto, _) = choose_engine("auto").unwrap();
        assert!(!auto.caps().diskless, "auto chose {}", auto.name());
    }

    #[test]
    fn unknown_engine_is_a_sentence() {
        let e = choose_engine("libaio").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("--engine libaio: no such engine"), "{e}");
    }
}
