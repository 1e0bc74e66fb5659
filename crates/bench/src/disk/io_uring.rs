//! The `io_uring` engine (fio's `io_uring` with `fixedbufs` and `registerfiles`): each job
//! thread owns a ring `queue_depth` deep, with its buffers and its file registered, so the
//! kernel neither maps the buffers nor looks the file up on each I/O.
//!
//! Ring flags, newest first, falling back on EINVAL (io_uring_setup(2)):
//! SINGLE_ISSUER + DEFER_TASKRUN (6.1) run completions only when the thread waits for them;
//! COOP_TASKRUN (5.19) avoids an IPI per completion; plain otherwise.

use super::{
    Completion, DiskError, Engine, EngineCaps, EngineWorker, IoBuffers, IoUnit, Op, Queued,
};
use io_uring::{opcode, types, IoUring};
use std::os::fd::RawFd;

/// `IORING_ENTER_GETEVENTS` (include/uapi/linux/io_uring.h).
const ENTER_GETEVENTS: u32 = 1;

pub struct IoUringEngine;

/// Set to disable io_uring as if the kernel had refused it: tests use it to force the
/// fallback to psync (the `auto` choice) on a kernel that has io_uring.
pub const DISABLE_ENV: &str = "HEADROOM_DISABLE_IO_URING";

impl Engine for IoUringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn caps(&self) -> EngineCaps {
        EngineCaps {
            asynchronous: true,
            diskless: false,
            nowait_issue: true,
        }
    }

    fn available(&self) -> Result<(), DiskError> {
        if std::env::var_os(DISABLE_ENV).is_some_and(|v| !v.is_empty()) {
            return Err(DiskError::Unsupported(format!(
                "io_uring is disabled by {DISABLE_ENV}"
            )));
        }
        IoUring::new(2).map(|_| ()).map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::ENOSYS) => " (kernel older than 5.1, or qemu-user)",
                Some(libc::EPERM) => " (kernel.io_uring_disabled, or a seccomp filter)",
                _ => "",
            };
            DiskError::Unsupported(format!("io_uring is not available here: {e}{why}"))
        })
    }

    fn open_worker<'a>(
        &self,
        fd: RawFd,
        buffers: &'a IoBuffers,
        queue_depth: u32,
    ) -> Result<Box<dyn EngineWorker + 'a>, DiskError> {
        let entries = queue_depth.max(1).next_power_of_two();
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| DiskError::os("cannot set up an io_uring", &e))?;
        let mut notes = Vec::new();
        let fixed_file = ring.submitter().register_files(&[fd]).is_ok();
        let iovecs: Vec<libc::iovec> = (0..buffers.count())
            .map(|i| libc::iovec {
                iov_base: buffers.slot_ptr(i).cast(),
                iov_len: buffers.block_size(),
            })
            .collect();
        // SAFETY: each iovec covers one slot of `buffers`, which outlives the ring (the worker
        // borrows `buffers` for 'a); the ring unregisters them when it is dropped.
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        if !fixed_bufs {
            notes.push(
                "io_uring buffers could not be registered (RLIMIT_MEMLOCK?): plain reads and \
                 writes used, a little more CPU per I/O"
                    .to_string(),
            );
        }
        Ok(Box::new(IoUringWorker {
            ring,
            fd,
            buffers,
            fixed_file,
            fixed_bufs,
            queued: 0,
            notes,
        }))
    }
}

struct IoUringWorker<'a> {
    ring: IoUring,
    fd: RawFd,
    buffers: &'a IoBuffers,
    fixed_file: bool,
    fixed_bufs: bool,
    /// Entries pushed since the last submit.
    queued: u32,
    notes: Vec<String>,
}

impl IoUringWorker<'_> {
    fn entry(&self, io: IoUnit) -> io_uring::squeue::Entry {
        let buf = self.buffers.slot_ptr(io.slot as usize);
        let slot = io.slot as u16;
        macro_rules! build {
            ($fd:expr) => {
                match (io.op, self.fixed_bufs) {
                    (Op::Read, true) => opcode::ReadFixed::new($fd, buf, io.len, slot)
                        .offset(io.offset)
                        .build(),
                    (Op::Write, true) => {
                        opcode::WriteFixed::new($fd, buf.cast_const(), io.len, slot)
                            .offset(io.offset)
                            .build()
                    }
                    (Op::Read, false) => opcode::Read::new($fd, buf, io.len)
                        .offset(io.offset)
                        .build(),
                    (Op::Write, false) => opcode::Write::new($fd, buf.cast_const(), io.len)
                        .offset(io.offset)
                        .build(),
                }
            };
        }
        let e = if self.fixed_file {
            build!(types::Fixed(0))
        } else {
            build!(types::Fd(self.fd))
        };
        e.user_data(io.slot as u64)
    }
}

impl EngineWorker for IoUringWorker<'_> {
    fn queue(&mut self, io: IoUnit) -> Result<Queued, DiskError> {
        let entry = self.entry(io);
        // The ring is at least queue_depth deep and the runner never has more than
        // queue_depth I/Os out, so the queue has room; if not, submit to make room once.
        for _ in 0..2 {
            // SAFETY: the entry points into this job's slot `io.slot`, which stays untouched
            // until its completion is reaped; the buffers outlive the ring.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                self.queued += 1;
                return Ok(Queued::Pending);
            }
            self.commit()?;
        }
        Err(DiskError::Io(
            "the io_uring submission queue stayed full".into(),
        ))
    }

    fn commit(&mut self) -> Result<(), DiskError> {
        if self.queued > 0 {
            // Submit with GETEVENTS and no wait, as fio's commit does (engines/io_uring.c,
            // fio_ioring_commit: io_uring_enter(nr, 0, IORING_ENTER_GETEVENTS)): under
            // DEFER_TASKRUN that also posts the completions that arrived meanwhile, instead
            // of leaving them for the wait. A plain submit (no GETEVENTS) measured bursts of
            // clat samples under 1 us (up to 10 % of a RND4K Q4T1 run, their device time
            // counted in slat) on this project's 2-CPU VM under load; fio and this way: < 0.4 %.
            // SAFETY: no argument is passed; the entries pushed point into live slots.
            unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(self.queued, 0, ENTER_GETEVENTS, None)
            }
            .map_err(|e| DiskError::os("io_uring submit failed", &e))?;
            self.queued = 0;
        }
        Ok(())
    }

    fn getevents(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<(), DiskError> {
        // Completions already posted (by the task work a submit ran, or without DEFER_TASKRUN
        // on the way back to user space) are reaped without a system call, as fio's
        // getevents does: the wait below is only for what has not arrived yet.
        let mut cq = self.ring.completion();
        cq.sync();
        if self.queued == 0 && cq.len() >= min as usize {
            out.extend(cq.map(|c| Completion {
                slot: c.user_data() as u32,
                result: c.result() as i64,
            }));
            return Ok(());
        }
        drop(cq);
        // Bounded: EINTR (a signal such as Ctrl-C) is retried at most 16 times.
        for tries in 0.. {
            // Wait in slices (kernel 5.11+ EXT_ARG) so a device that stops answering cannot
            // hold the runner forever: it sees an empty slice and decides (see HUNG_AFTER).
            let r = if self.ring.params().is_feature_ext_arg() {
                let ts = types::Timespec::from(super::WAIT_SLICE);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(min as usize, &args)
            } else {
                self.ring.submit_and_wait(min as usize)
            };
            match r {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) && tries < 16 => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(DiskError::os("io_uring wait failed", &e)),
            }
        }
        self.queued = 0;
        out.extend(self.ring.completion().map(|c| Completion {
            slot: c.user_data() as u32,
            result: c.result() as i64,
        }));
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
