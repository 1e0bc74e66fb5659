//! The `psync` engine: one `pread(2)`/`pwrite(2)` at a time (fio's `psync`). The fallback where
//! io_uring cannot run (kernel before 5.1, `io_uring_disabled`, seccomp, qemu-user) and the
//! baseline engine everywhere.

use super::{Completion, DiskError, Engine, EngineWorker, IoBuffers, IoUnit, Op, Queued};
use std::os::fd::RawFd;

pub struct PsyncEngine;

impl Engine for PsyncEngine {
    fn name(&self) -> &'static str {
        "psync"
    }

    // caps and available: the defaults (synchronous, reaches the target, runs everywhere).

    fn open_worker<'a>(
        &self,
        fd: RawFd,
        buffers: &'a IoBuffers,
        _queue_depth: u32,
    ) -> Result<Box<dyn EngineWorker + 'a>, DiskError> {
        Ok(Box::new(PsyncWorker { fd, buffers }))
    }
}

struct PsyncWorker<'a> {
    fd: RawFd,
    buffers: &'a IoBuffers,
}

impl EngineWorker for PsyncWorker<'_> {
    fn queue(&mut self, io: IoUnit) -> Result<Queued, DiskError> {
        let buf = self.buffers.slot_ptr(io.slot as usize);
        let len = (io.len as usize).min(self.buffers.block_size());
        let off = io.offset as libc::off_t;
        // Bounded: a signal interrupting the call (EINTR) is retried at most 16 times.
        let mut tries = 0;
        let n = loop {
            let n = match io.op {
                // SAFETY: `buf` points to `len` bytes of this job's slot, which has no other I/O
                // in flight; `fd` is open for the run.
                Op::Read => unsafe { libc::pread(self.fd, buf.cast(), len, off) },
                // SAFETY: as above; the kernel only reads the buffer.
                Op::Write => unsafe { libc::pwrite(self.fd, buf.cast_const().cast(), len, off) },
            };
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if n < 0 && errno == libc::EINTR && tries < 16 {
                tries += 1;
                continue;
            }
            break if n < 0 { -(errno as i64) } else { n as i64 };
        };
        Ok(Queued::Done(Completion {
            slot: io.slot,
            result: n,
        }))
    }

    fn getevents(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<(), DiskError> {
        // Every I/O completed in `queue`: nothing is ever in flight here.
        Ok(())
    }
}
