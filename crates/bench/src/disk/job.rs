//! One job thread: keeps `queue_depth` I/Os in flight on its region of the target through an
//! engine worker, until the deadline or its byte budget, and records what completed.

use super::buffers::{IoBuffers, Rng};
use super::engine::{Completion, Engine, IoUnit, Queued};
use super::result::{DirectionRecorder, LatencyRecorder};
use super::{DiskError, Op};
use model::disk::{Pattern, TestSpec};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// With I/Os in flight and none completing for this long, the device is taken as hung (a USB
/// stick that stopped answering) and the run ends with an error instead of waiting forever.
/// The kernel's own block-layer timeout is 30 s (`/sys/block/X/queue/io_timeout`).
pub const HUNG_AFTER: Duration = Duration::from_secs(45);

/// What one job thread measured.
pub(super) struct JobOutcome {
    pub(super) lat: LatencyRecorder,
    pub(super) clat: LatencyRecorder,
    /// Reads and writes apart (`lat` and `clat` are their sum, made when the job ends).
    pub(super) dirs: [DirectionRecorder; 2],
    pub(super) measured_read: u64,
    pub(super) measured_write: u64,
    pub(super) measured_ios: u64,
    /// Every I/O completed, ramp included (the CPU time covers them all).
    pub(super) all_ios: u64,
    pub(super) all_read: u64,
    pub(super) all_write: u64,
    pub(super) measure_start: Instant,
    pub(super) measure_end: Instant,
    pub(super) notes: Vec<String>,
}

/// Shared between job threads and the sampling thread of one run.
pub(super) struct RunShared {
    pub(super) stop: Arc<AtomicBool>,
    /// Set when one job failed: the others stop too.
    pub(super) abort: AtomicBool,
    pub(super) bytes_done: AtomicU64,
}

/// A job's share of the target: `len` bytes from `start`, a multiple of the block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

pub(super) struct JobPlan<'a> {
    pub(super) fd: RawFd,
    pub(super) spec: &'a TestSpec,
    pub(super) region: Region,
    pub(super) align: usize,
    pub(super) buffers: model::disk::Buffers,
    pub(super) zero: bool,
    pub(super) seed: u64,
    pub(super) ramp: Duration,
    pub(super) runtime: Duration,
    pub(super) time_based: bool,
}

/// One job thread: keep `queue_depth` I/Os in flight until the deadline or the byte budget.
pub(super) fn run_job(
    engine: &dyn Engine,
    plan: &JobPlan,
    shared: &RunShared,
) -> Result<JobOutcome, DiskError> {
    let spec = plan.spec;
    let bs = spec.block_size;
    let qd = spec.queue_depth.max(1);
    let buffers = IoBuffers::new(
        qd as usize,
        bs as usize,
        plan.align,
        plan.buffers,
        plan.zero,
        plan.seed,
    )?;
    let mut rng = Rng::new(plan.seed.rotate_left(17));
    let blocks = plan.region.len / bs;
    if blocks == 0 {
        return Err(DiskError::BadParameter(format!(
            "the test region ({} bytes) is smaller than one block ({bs} bytes): raise --size",
            plan.region.len
        )));
    }
    let mut worker = engine.open_worker(plan.fd, &buffers, qd)?;
    // The clock starts when the job is ready to issue (buffers filled, ring set up), as fio's
    // runtime does: setup time is not I/O time.
    let job_start = Instant::now();
    let ramp_end = job_start + plan.ramp;
    let deadline = ramp_end + plan.runtime;
    // Size-based: the job stops after its region's bytes once past the ramp; time-based: at
    // the deadline. Both are bounded by the deadline.
    let budget = if plan.time_based {
        u64::MAX
    } else {
        plan.region.len
    };
    let mut out = JobOutcome {
        lat: LatencyRecorder::new(),
        clat: LatencyRecorder::new(),
        dirs: [DirectionRecorder::new(), DirectionRecorder::new()],
        measured_read: 0,
        measured_write: 0,
        measured_ios: 0,
        all_ios: 0,
        all_read: 0,
        all_write: 0,
        measure_start: ramp_end,
        measure_end: ramp_end,
        notes: Vec::new(),
    };
    let mut issue_start: Vec<Instant> = vec![job_start; qd as usize];
    // When the kernel had taken each slot's I/O (its submitting call returned): clat's start.
    let mut submitted: Vec<Instant> = vec![job_start; qd as usize];
    let mut slot_op: Vec<Op> = vec![Op::Read; qd as usize];
    let mut pending: Vec<bool> = vec![false; qd as usize];
    let mut free: Vec<u32> = (0..qd).rev().collect();
    let mut completions: Vec<Completion> = Vec::with_capacity(qd as usize);
    let mut seq_pos = 0u64;
    let mut issued_measured = 0u64;
    let mut inflight = 0u32;
    let mut error: Option<DiskError> = None;
    let mut last_progress = 0u64;
    let mut ramped = plan.ramp.is_zero();

    out.notes.extend(worker.notes());

    // An engine failure (not an I/O error, which is a completion) stops the job at once.
    let mut engine_error: Option<DiskError> = None;
    let mut silent_since: Option<Instant> = None;
    // Each iteration completes at least one I/O or ends the loop; the deadline bounds it.
    'run: loop {
        let now = Instant::now();
        if !ramped && now >= ramp_end {
            ramped = true;
            out.measure_start = now;
        }
        let stopping = error.is_some()
            || now >= deadline
            || issued_measured >= budget
            || shared.stop.load(Ordering::Relaxed)
            || shared.abort.load(Ordering::Relaxed);
        // Issue into every free slot (at most queue_depth I/Os per round).
        while let Some(slot) = if stopping { None } else { free.pop() } {
            let op = if spec.workload.read_percent >= 100 {
                Op::Read
            } else if spec.workload.read_percent == 0 {
                Op::Write
            } else if rng.below(100) < spec.workload.read_percent as u64 {
                Op::Read
            } else {
                Op::Write
            };
            let block = match spec.workload.pattern {
                Pattern::Sequential => {
                    let b = seq_pos % blocks;
                    seq_pos += 1;
                    b
                }
                Pattern::Random => rng.below(blocks),
            };
            if op == Op::Write && !plan.zero {
                buffers.scramble_slot(slot as usize, &mut rng);
            }
            let io = IoUnit {
                slot,
                op,
                offset: plan.region.start + block * bs,
                len: bs as u32,
            };
            slot_op[slot as usize] = op;
            issue_start[slot as usize] = Instant::now();
            if ramped {
                issued_measured += bs;
            }
            let queued = match worker.queue(io) {
                Ok(q) => q,
                Err(e) => {
                    free.push(slot);
                    engine_error = Some(e);
                    break 'run;
                }
            };
            match queued {
                Queued::Pending => {
                    pending[slot as usize] = true;
                    inflight += 1;
                    // Each I/O goes to the kernel as soon as it is ready (fio's default
                    // iodepth_batch_submit=1) rather than in one batch per round: a batch is
                    // plugged and dispatched only at its end, and on this project's virtio
                    // disk that measured 15-25 % fewer RND4K Q32T1 IOPS (bench/vs-fio.sh);
                    // leaving the last one of a round to the wait in `getevents` (one system
                    // call fewer) measured 0-10 % fewer RND4K Q32T1 write IOPS there too.
                    if let Err(e) = worker.commit() {
                        engine_error = Some(e);
                        break 'run;
                    }
                    submitted[slot as usize] = Instant::now();
                }
                Queued::Done(c) => {
                    // A synchronous engine's submission is the whole I/O: clat = lat, as fio
                    // reports for its sync engines.
                    submitted[slot as usize] = issue_start[slot as usize];
                    completions.push(c)
                }
            }
            if !completions.is_empty() || issued_measured >= budget {
                break;
            }
        }
        if inflight > 0 && completions.is_empty() {
            if let Err(e) = worker.getevents(1, &mut completions) {
                engine_error = Some(e);
                break 'run;
            }
            if completions.is_empty() {
                let since = *silent_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= HUNG_AFTER {
                    engine_error = Some(DiskError::Io(format!(
                        "{inflight} I/Os got no answer from the device for {} s: it stopped \
                         responding (see dmesg); the run was abandoned",
                        HUNG_AFTER.as_secs()
                    )));
                    break 'run;
                }
            } else {
                silent_since = None;
            }
        }
        if completions.is_empty() {
            // Nothing done: stop once nothing is in flight; else go round, to wait again (a
            // silent wait slice) or to issue (right after the budget was reached, which makes
            // the next round stop).
            if stopping && inflight == 0 {
                break;
            }
            continue;
        }
        let done_at = Instant::now();
        for c in completions.drain(..) {
            let s = c.slot as usize;
            if s >= pending.len() {
                engine_error = Some(DiskError::Io(format!(
                    "the {} engine completed an unknown I/O slot {s}",
                    engine.name()
                )));
                break 'run;
            }
            if c.result != bs as i64 && error.is_none() {
                error = Some(io_error(slot_op[s], c.result, bs));
            }
            if pending[s] {
                pending[s] = false;
                inflight -= 1;
            }
            free.push(c.slot);
            if c.result <= 0 {
                continue;
            }
            let n = c.result as u64;
            out.all_ios += 1;
            match slot_op[s] {
                Op::Read => out.all_read += n,
                Op::Write => out.all_write += n,
            }
            if ramped && issue_start[s] >= out.measure_start {
                let d = match slot_op[s] {
                    Op::Read => 0,
                    Op::Write => 1,
                };
                out.dirs[d].record(issue_start[s], submitted[s], done_at, n);
                out.measured_ios += 1;
                match slot_op[s] {
                    Op::Read => out.measured_read += n,
                    Op::Write => out.measured_write += n,
                }
                out.measure_end = done_at;
            }
        }
        let total = out.all_read + out.all_write;
        if total - last_progress >= 1 << 20 {
            shared
                .bytes_done
                .fetch_add(total - last_progress, Ordering::Relaxed);
            last_progress = total;
        }
    }
    shared.bytes_done.fetch_add(
        (out.all_read + out.all_write).saturating_sub(last_progress),
        Ordering::Relaxed,
    );
    if let Some(e) = engine_error {
        // Reap what is still in flight (bounded: 8 wait slices), so the kernel is done with
        // the buffers.
        for _ in 0..8 {
            if inflight == 0 {
                break;
            }
            completions.clear();
            if worker.getevents(1, &mut completions).is_err() {
                break;
            }
            for c in completions.drain(..) {
                if let Some(p) = pending.get_mut(c.slot as usize).filter(|p| **p) {
                    *p = false;
                    inflight -= 1;
                }
            }
        }
        drop(worker);
        if inflight > 0 {
            // The kernel may still write into them: leak rather than free memory in use.
            std::mem::forget(buffers);
        }
        return Err(e);
    }
    if let Some(e) = error {
        return Err(e);
    }
    for d in &out.dirs {
        out.lat.add(&d.lat);
        out.clat.add(&d.clat);
    }
    // Stopped by a signal: every I/O issued has completed, so what was measured until then is
    // a valid (shorter) measurement; the run decides whether to keep it.
    Ok(out)
}

fn io_error(op: Op, result: i64, bs: u64) -> DiskError {
    let what = match op {
        Op::Read => "read",
        Op::Write => "write",
    };
    if result < 0 {
        let e = std::io::Error::from_raw_os_error((-result) as i32);
        let hint = match -result as i32 {
            libc::EINVAL => {
                ": the block size or offset is not aligned for direct I/O on this \
                             device (try a multiple of the logical block size, or --direct 0)"
            }
            libc::ENOSPC => ": the filesystem is full",
            libc::EIO => ": the device reported an I/O error (see dmesg)",
            _ => "",
        };
        DiskError::Io(format!("a {what} of {bs} bytes failed: {e}{hint}"))
    } else {
        DiskError::Io(format!(
            "a {what} of {bs} bytes transferred only {result} bytes (end of device or file?)"
        ))
    }
}
