//! Latency measurements and findings as the unit tests of `report` (the judgement) and of the
//! `headroom` package (the command's text) build them.

use model::latency::{merge, Measurement, Privileges, Step, StopReason};
use model::Finding;

/// An empty run (no thread, 10 histogram buckets) whose three privileged steps (SCHED_FIFO,
/// mlockall, /dev/cpu_dma_latency) all ended in `step`, with `missed` missed periods.
pub fn measurement(step: Step, missed: u64) -> Measurement {
    let mut total = merge(&[], 10);
    total.missed_periods = missed;
    Measurement {
        privileges: Privileges {
            sched_fifo: step.clone(),
            memory_locked: step.clone(),
            cpu_dma_latency_held: step,
        },
        elapsed_ns: 0,
        stopped_by: StopReason::Duration,
        threads: Vec::new(),
        total,
    }
}

/// The findings' messages, one a line, for `contains` checks.
pub fn messages(f: &[Finding]) -> String {
    f.iter()
        .map(|f| f.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The system context (kernel, preemption, CPUs, governors, interrupts) of the captured tree
/// tests/fixtures/system/NAME, as `bench latency` reads it.
pub fn context(name: &str) -> model::system::SystemContext {
    probe::system::read_context(&crate::fixtures::own_root(&format!("system/{name}")))
}
