//! One job thread: keeps `queue_depth` I/Os in flight on its region of the target through an
//! engine worker, until the deadline or its byte budget, and records what completed.
//!
//! An I/O is in flight from just before it is handed to the engine to when the job takes its
//! completion, and the job takes completions one at a time, refilling each one's slot before
//! it takes the next, as fio does by default (`iodepth_batch_complete_max` = 1: one event per
//! reap, then a new I/O as soon as the queue is not full). A device that completes I/Os in
//! bursts (a virtio-blk host that answers a whole ring at once) then still has `queue_depth`
//! I/Os all the time, less the one being refilled: fio's meaning of the depth. The job counts
//! how many were in flight over the measured window; by Little's law it is the IOPS times the
//! mean latency.

use super::buffers::{Content, IoBuffers, Rng};
use super::engine::{Completion, Engine, EngineWorker, IoUnit, Queued};
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
    /// I/Os in flight, integrated over time from `measure_start` to `in_flight_until` (I/O x
    /// ns): divided by that window, the mean number in flight.
    pub(super) in_flight_ns: f64,
    /// When the job stopped issuing: the count ends there, as the last I/Os drain.
    pub(super) in_flight_until: Instant,
    pub(super) notes: Vec<String>,
}

impl JobOutcome {
    /// The mean number of I/Os in flight over the measured window, until the job stopped
    /// issuing; `None` without one.
    pub(super) fn mean_in_flight(&self) -> Option<f64> {
        let window = self
            .in_flight_until
            .saturating_duration_since(self.measure_start)
            .as_nanos() as f64;
        (window > 0.0).then(|| self.in_flight_ns / window)
    }
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

/// The time integral of the number of I/Os in flight (Little's law's L x T), kept from the
/// start of the measured window.
struct InFlight {
    n: u32,
    since: Instant,
    counting: bool,
    area_ns: f64,
}

impl InFlight {
    /// `delta` I/Os enter (+1) or leave (-1) flight at `at`.
    #[inline]
    fn change(&mut self, at: Instant, delta: i32) {
        if self.counting {
            let dt = at.saturating_duration_since(self.since).as_nanos() as f64;
            self.area_ns += f64::from(self.n) * dt;
        }
        self.since = self.since.max(at);
        self.n = self.n.saturating_add_signed(delta);
    }

    /// The measured window opens at `at`: what is in flight from now on counts.
    fn start(&mut self, at: Instant) {
        self.since = at;
        self.counting = true;
        self.area_ns = 0.0;
    }
}

/// A job's slots and where its next I/O goes: everything `issue` and `complete` change.
struct Job<'p> {
    plan: &'p JobPlan<'p>,
    buffers: &'p IoBuffers,
    bs: u64,
    blocks: u64,
    rng: Rng,
    seq_pos: u64,
    /// Each slot's operation, when it was begun (lat's start) and when the kernel had taken
    /// it (its submitting call returned: clat's start, as fio's issue_time).
    slot_op: Vec<Op>,
    issue_start: Vec<Instant>,
    submitted: Vec<Instant>,
    pending: Vec<bool>,
    /// I/Os handed to the engine and not completed yet.
    inflight: u32,
    depth: InFlight,
    free: Vec<u32>,
    /// Completions taken from the engine and not handled yet, handled in order from `next`.
    completions: Vec<Completion>,
    next: usize,
    ramped: bool,
    /// The job issues no more (deadline, budget, signal, error).
    stopped: bool,
    issued_measured: u64,
    last_progress: u64,
    /// The first failed I/O: the job stops issuing and fails once the rest completed.
    error: Option<DiskError>,
    out: JobOutcome,
}

impl Job<'_> {
    /// Begin an I/O in `slot`. A synchronous engine completes it at once: its completion is
    /// queued for handling. An engine failure is returned (the slot is free again).
    fn issue(&mut self, worker: &mut dyn EngineWorker, slot: u32) -> Result<(), DiskError> {
        let spec = self.plan.spec;
        let op = if spec.workload.read_percent >= 100 {
            Op::Read
        } else if spec.workload.read_percent == 0 {
            Op::Write
        } else if self.rng.below(100) < spec.workload.read_percent as u64 {
            Op::Read
        } else {
            Op::Write
        };
        let block = match spec.workload.pattern {
            Pattern::Sequential => {
                let b = self.seq_pos % self.blocks;
                self.seq_pos += 1;
                b
            }
            Pattern::Random => self.rng.below(self.blocks),
        };
        if op == Op::Write && !self.plan.zero {
            self.buffers.scramble_slot(slot as usize, &mut self.rng);
        }
        let io = IoUnit {
            slot,
            op,
            offset: self.plan.region.start + block * self.bs,
            len: self.bs as u32,
        };
        let s = slot as usize;
        self.slot_op[s] = op;
        let begun = Instant::now();
        self.issue_start[s] = begun;
        if self.ramped {
            self.issued_measured += self.bs;
        }
        let queued = match worker.queue(io) {
            Ok(q) => q,
            Err(e) => {
                self.free.push(slot);
                return Err(e);
            }
        };
        self.depth.change(begun, 1);
        match queued {
            Queued::Pending => {
                self.pending[s] = true;
                self.inflight += 1;
                // Each I/O goes to the kernel as soon as it is ready (fio's default
                // iodepth_batch_submit=1) rather than in one batch: a batch is plugged and
                // dispatched only at its end, and on this project's virtio disk that measured
                // 15-25 % fewer RND4K Q32T1 IOPS (bench/vs-fio.sh).
                worker.commit()?;
                self.submitted[s] = Instant::now();
            }
            Queued::Done(c) => {
                // A synchronous engine's submission is the whole I/O: clat = lat, as fio
                // reports for its sync engines.
                self.submitted[s] = begun;
                self.completions.push(c);
            }
        }
        Ok(())
    }

    /// Take one completion, seen at `done_at`: account for it and free its slot. An engine
    /// failure (a slot it never had) is returned.
    fn complete(&mut self, c: Completion, done_at: Instant, engine: &str) -> Result<(), DiskError> {
        let s = c.slot as usize;
        if s >= self.pending.len() {
            return Err(DiskError::Io(format!(
                "the {engine} engine completed an unknown I/O slot {s}"
            )));
        }
        let bs = self.bs;
        if c.result != bs as i64 && self.error.is_none() {
            self.error = Some(io_error(self.slot_op[s], c.result, bs));
        }
        if self.pending[s] {
            self.pending[s] = false;
            self.inflight -= 1;
        }
        self.depth.change(done_at, -1);
        self.free.push(c.slot);
        if c.result <= 0 {
            return Ok(());
        }
        let n = c.result as u64;
        let out = &mut self.out;
        out.all_ios += 1;
        match self.slot_op[s] {
            Op::Read => out.all_read += n,
            Op::Write => out.all_write += n,
        }
        if self.ramped && self.issue_start[s] >= out.measure_start {
            let d = match self.slot_op[s] {
                Op::Read => 0,
                Op::Write => 1,
            };
            out.dirs[d].record(self.issue_start[s], self.submitted[s], done_at, n);
            out.measured_ios += 1;
            match self.slot_op[s] {
                Op::Read => out.measured_read += n,
                Op::Write => out.measured_write += n,
            }
            out.measure_end = done_at;
        }
        Ok(())
    }

    /// The job stops issuing at `at`: the count of I/Os in flight ends (what follows is the
    /// drain, not the depth the test asked for).
    fn stop_counting(&mut self, at: Instant) {
        if self.depth.counting {
            self.depth.change(at, 0);
            self.depth.counting = false;
            self.out.in_flight_ns = self.depth.area_ns;
            self.out.in_flight_until = at;
        }
        self.stopped = true;
    }

    /// Past the ramp at `now`: the measured window opens.
    fn check_ramp(&mut self, now: Instant, ramp_end: Instant) {
        if !self.ramped && now >= ramp_end {
            self.ramped = true;
            self.out.measure_start = now;
            self.out.measure_end = now;
            self.out.in_flight_until = now;
            if !self.stopped {
                self.depth.start(now);
            }
        }
    }

    /// Tell the sampling thread about the bytes done, every MiB (and at the end, `all`).
    fn progress(&mut self, shared: &RunShared, all: bool) {
        let total = self.out.all_read + self.out.all_write;
        if all || total - self.last_progress >= 1 << 20 {
            shared
                .bytes_done
                .fetch_add(total - self.last_progress, Ordering::Relaxed);
            self.last_progress = total;
        }
    }
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
    let content = if spec.workload.read_percent >= 100 {
        Content::Untouched
    } else if plan.zero {
        Content::Zeros
    } else {
        Content::Random(plan.seed)
    };
    let buffers = IoBuffers::new(qd as usize, bs as usize, plan.align, plan.buffers, content)?;
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
    let slots = qd as usize;
    let mut job = Job {
        plan,
        buffers: &buffers,
        bs,
        blocks,
        rng: Rng::new(plan.seed.rotate_left(17)),
        seq_pos: 0,
        slot_op: vec![Op::Read; slots],
        issue_start: vec![job_start; slots],
        submitted: vec![job_start; slots],
        pending: vec![false; slots],
        inflight: 0,
        depth: InFlight {
            n: 0,
            since: job_start,
            counting: false,
            area_ns: 0.0,
        },
        free: (0..qd).rev().collect(),
        completions: Vec::with_capacity(slots),
        next: 0,
        ramped: false,
        stopped: false,
        issued_measured: 0,
        last_progress: 0,
        error: None,
        out: JobOutcome {
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
            in_flight_ns: 0.0,
            in_flight_until: ramp_end,
            notes: worker.notes(),
        },
    };
    if plan.buffers == model::disk::Buffers::HugePages {
        let want = buffers.total_bytes() as u64;
        match buffers.huge_page_bytes() {
            Some(got) if got >= want => {}
            Some(got) => job.out.notes.push(format!(
                "--buffers huge: {} of this job's {} MiB of buffers are huge pages (the kernel \
                 had no more free 2 MiB blocks); the rest are 4 KiB pages, which a device \
                 splits as it does fio's",
                mib(got),
                mib(want)
            )),
            None => {}
        }
    }
    if plan.ramp.is_zero() {
        job.check_ramp(job_start, ramp_end);
    }
    let stopping = |job: &Job, now: Instant| {
        job.error.is_some()
            || now >= deadline
            || job.issued_measured >= budget
            || shared.stop.load(Ordering::Relaxed)
            || shared.abort.load(Ordering::Relaxed)
    };

    // An engine failure (not an I/O error, which is a completion) stops the job at once.
    let mut engine_error: Option<DiskError> = None;
    let mut silent_since: Option<Instant> = None;
    // Each iteration completes at least one I/O or ends the loop; the deadline bounds it.
    'run: loop {
        let now = Instant::now();
        job.check_ramp(now, ramp_end);
        if stopping(&job, now) {
            job.stop_counting(now);
        }
        // Fill every free slot: at the start, and after a completion whose slot was not
        // refilled (a synchronous engine's, which comes back from `issue` itself).
        while job.completions.is_empty() && !job.stopped {
            let Some(slot) = job.free.pop() else { break };
            if let Err(e) = job.issue(worker.as_mut(), slot) {
                engine_error = Some(e);
                break 'run;
            }
        }
        if job.inflight > 0 && job.completions.is_empty() {
            if let Err(e) = worker.getevents(1, &mut job.completions) {
                engine_error = Some(e);
                break 'run;
            }
            if job.completions.is_empty() {
                let since = *silent_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= HUNG_AFTER {
                    engine_error = Some(DiskError::Io(format!(
                        "{} I/Os got no answer from the device for {} s: it stopped \
                         responding (see dmesg); the run was abandoned",
                        job.inflight,
                        HUNG_AFTER.as_secs()
                    )));
                    break 'run;
                }
            } else {
                silent_since = None;
            }
        }
        if job.completions.is_empty() {
            // Nothing done: stop once nothing is in flight; else go round, to wait again (a
            // silent wait slice) or to issue (right after the budget was reached, which makes
            // the next round stop).
            let now = Instant::now();
            if stopping(&job, now) {
                job.stop_counting(now);
                if job.inflight == 0 {
                    break;
                }
            }
            continue;
        }
        // Take the completions one at a time, each seen at its own time, and refill its slot
        // before taking the next (fio's one event per reap): the others wait as fio's wait in
        // its completion queue, in flight. A synchronous engine's refill completes at once and
        // is taken in turn; the stop conditions bound the round.
        job.next = 0;
        while let Some(&c) = job.completions.get(job.next) {
            job.next += 1;
            if job.next == job.completions.len() {
                // All taken: a synchronous refill starts the list again (it stays one long).
                job.completions.clear();
                job.next = 0;
            }
            let done_at = Instant::now();
            job.check_ramp(done_at, ramp_end);
            if let Err(e) = job.complete(c, done_at, engine.name()) {
                engine_error = Some(e);
                break 'run;
            }
            job.progress(shared, false);
            if stopping(&job, done_at) {
                job.stop_counting(done_at);
            } else if job.free.last() == Some(&c.slot) {
                job.free.pop();
                if let Err(e) = job.issue(worker.as_mut(), c.slot) {
                    engine_error = Some(e);
                    break 'run;
                }
            }
        }
    }
    job.progress(shared, true);
    if let Some(e) = engine_error {
        // Reap what is still in flight (bounded: 8 wait slices), so the kernel is done with
        // the buffers.
        let mut completions: Vec<Completion> = job.completions.split_off(job.next);
        for slice in 0..=8 {
            for c in completions.drain(..) {
                if let Some(p) = job.pending.get_mut(c.slot as usize).filter(|p| **p) {
                    *p = false;
                    job.inflight -= 1;
                }
            }
            if job.inflight == 0 || slice == 8 {
                break;
            }
            if worker.getevents(1, &mut completions).is_err() {
                break;
            }
        }
        let inflight = job.inflight;
        drop(job);
        drop(worker);
        if inflight > 0 {
            // The kernel may still write into them: leak rather than free memory in use.
            std::mem::forget(buffers);
        }
        return Err(e);
    }
    if let Some(e) = job.error {
        return Err(e);
    }
    let mut out = job.out;
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

/// Bytes as MiB with up to one decimal ("1", "1.5").
fn mib(bytes: u64) -> String {
    let m = bytes as f64 / f64::from(1u32 << 20);
    let t = format!("{m:.1}");
    t.strip_suffix(".0").map(str::to_string).unwrap_or(t)
}
