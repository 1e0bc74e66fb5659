//! What the kernel records about a wake-up, as `bench latency --split` samples it: the
//! tracepoints of a timer's life (`timer:hrtimer_start`, `timer:hrtimer_expire_entry`), of
//! what ran on the CPU meanwhile (`irq:irq_handler_entry/exit`, `irq:softirq_entry/exit`,
//! x86's `irq_vectors:*_entry/exit` for the local timer and IPIs) and of the scheduler
//! (`sched:sched_waking`, `sched:sched_switch`), each with the CPU and the CLOCK_MONOTONIC
//! time it was recorded at; and what each measuring thread saw ([`WakeUp`]).
//!
//! `counters::trace` fills these from perf_event_open ring buffers; [`super::split`] matches
//! them into IRQ and thread latency and explains a late wake-up. Field meanings follow the
//! kernel's tracepoint definitions (include/trace/events/timer.h, irq.h, sched.h; x86:
//! arch/x86/include/asm/trace/irq_vectors.h).

use serde::{Deserialize, Serialize};

/// A task's name as the kernel keeps it: TASK_COMM_LEN (16) bytes, NUL-padded
/// (include/linux/sched.h), as `sched_switch` records `prev_comm` and `next_comm`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    /// The name from its bytes (longer ones are cut at 15, as the kernel cuts them).
    pub fn new(name: &str) -> Comm {
        let mut b = [0u8; 16];
        for (d, s) in b.iter_mut().zip(name.bytes().take(15)) {
            *d = s;
        }
        Comm(b)
    }

    /// The name up to its first NUL, lossily decoded (a task may name itself anything).
    pub fn name(&self) -> String {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.name())
    }
}

/// A task as `sched_switch` names it: pid (the thread id), name, and the kernel's priority
/// (`prio`: 0..99 real-time, 99 - the SCHED_FIFO/RR priority; 100..139 normal, 120 + nice;
/// -1 deadline; include/linux/sched/prio.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub pid: i32,
    pub comm: Comm,
    pub prio: i32,
}

/// One hard interrupt: a device line (`irq_handler_entry`'s `irq` and action `name`) or an
/// x86 system vector (`irq_vectors:local_timer_entry`: the timer interrupt itself, vector
/// 236; reschedule and function-call IPIs), which has no line number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Irq {
    /// The line number, or the vector number for a system vector.
    pub number: i32,
    /// The action name (`nvme0q1`, `virtio3-input.0`), or the vector's tracepoint name
    /// without `_entry` (`local_timer`, `reschedule`); shared between the events of one
    /// line (a busy CPU records thousands a second).
    pub name: std::sync::Arc<str>,
    /// A system vector rather than a device line.
    #[serde(default)]
    pub vector: bool,
}

/// The softirq names of `vec` (include/linux/interrupt.h, enum in order; the tracepoint's
/// own symbolic table prints the same).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq `vec` (`NET_RX`), or its number when the kernel has more.
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("softirq {vec}"), |n| (*n).to_string())
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `hrtimer_start`: a timer armed, for the absolute time `soft_ns` (its `softexpires`:
    /// the time asked for) to `expires_ns` (plus the task's timer slack, 0 under SCHED_FIFO).
    TimerStart {
        timer: u64,
        expires_ns: u64,
        soft_ns: u64,
    },
    /// `hrtimer_expire_entry`: the timer interrupt runs the timer's callback; `now_ns` is the
    /// time the interrupt read on entry ("allows to determine the timer latency",
    /// include/trace/events/timer.h).
    TimerExpire {
        timer: u64,
        now_ns: u64,
    },
    IrqEntry(Irq),
    /// The end of the hard interrupt `number` (a vector when `vector`).
    IrqExit {
        number: i32,
        vector: bool,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// `sched_waking`: task `pid` is being woken (in the waker's context: for a sleeping
    /// timer, inside the timer interrupt).
    Waking {
        pid: i32,
    },
    /// `sched_switch`: the CPU goes from `prev` to `next`; `preempted`: `prev` was still
    /// runnable (its `prev_state` has no sleeping state: taken off the CPU, not going to
    /// sleep).
    Switch {
        prev: Task,
        next: Task,
        preempted: bool,
    },
}

/// One tracepoint event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// When it was recorded: CLOCK_MONOTONIC ns (perf's `use_clockid`), the clock of the
    /// timers and of the measuring threads' `clock_gettime`.
    pub at_ns: u64,
    pub cpu: u32,
    /// The task running when it fired (`common_pid`; 0 is the idle task).
    pub pid: i32,
    pub kind: EventKind,
}

/// One wake-up as its measuring thread saw it: the time it asked for and the time it read
/// on waking (both CLOCK_MONOTONIC ns), the latency cyclictest measures being their
/// difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeUp {
    pub thread: usize,
    pub tid: i32,
    /// The wake-up's number (0-based) in its thread.
    pub cycle: u64,
    pub programmed_ns: u64,
    pub woke_ns: u64,
}

impl WakeUp {
    pub fn latency_ns(&self) -> u64 {
        self.woke_ns.saturating_sub(self.programmed_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_is_cut_like_the_kernels_and_read_to_its_nul() {
        assert_eq!(Comm::new("latency-0").name(), "latency-0");
        assert_eq!(
            Comm::new("a-very-long-thread-name").name(),
            "a-very-long-thr"
        );
        assert_eq!(softirq_name(3), "NET_RX");
        assert_eq!(softirq_name(12), "softirq 12");
    }
}
