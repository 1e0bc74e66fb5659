//! The `null` engine (fio's `engines/null.c`): every I/O completes at once without reaching
//! the device. It measures headroom's own cost per I/O (its IOPS is the ceiling of the tool,
//! not of the disk) and lets the job runner be tested exactly, with no device in the way.

use super::{Completion, DiskError, Engine, EngineCaps, EngineWorker, IoBuffers, IoUnit, Queued};
use std::os::fd::RawFd;

pub struct NullEngine;

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    fn caps(&self) -> EngineCaps {
        // fio's null engine is FIO_DISKLESSIO; its completions come in `getevents`, so a
        // queue depth above 1 exercises the runner's asynchronous path as io_uring does.
        EngineCaps {
            asynchronous: true,
            diskless: true,
            nowait_issue: false,
        }
    }

    fn open_worker<'a>(
        &self,
        _fd: RawFd,
        _buffers: &'a IoBuffers,
        queue_depth: u32,
    ) -> Result<Box<dyn EngineWorker + 'a>, DiskError> {
        Ok(Box::new(NullWorker {
            queued: Vec::with_capacity(queue_depth as usize),
        }))
    }
}

struct NullWorker {
    queued: Vec<Completion>,
}

impl EngineWorker for NullWorker {
    fn queue(&mut self, io: IoUnit) -> Result<Queued, DiskError> {
        self.queued.push(Completion {
            slot: io.slot,
            result: i64::from(io.len),
        });
        Ok(Queued::Pending)
    }

    fn getevents(&mut self, _min: u32, out: &mut Vec<Completion>) -> Result<(), DiskError> {
        out.append(&mut self.queued);
        Ok(())
    }
}
