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

/// A latency document as `bench latency -h LIMIT` would have written it: in every thread's
/// histogram and the total's, the wake-ups at or above `limit_us` become the overflow count.
pub fn cut_histograms(doc: &mut serde_json::Value, limit_us: u64) {
    doc["config"]["histogram_limit_us"] = limit_us.into();
    let threads = doc["measurement"]["threads"]
        .as_array()
        .map_or(0, |t| t.len());
    for at in (0..threads)
        .map(|i| format!("/measurement/threads/{i}/stats/histogram"))
        .chain(["/measurement/total/histogram".to_string()])
    {
        let Some(h) = doc.pointer_mut(&at) else {
            continue;
        };
        let buckets = h["buckets"].as_array().cloned().unwrap_or_default();
        let (kept, over): (Vec<_>, Vec<_>) = buckets
            .into_iter()
            .partition(|b| b[0].as_u64().is_some_and(|us| us < limit_us));
        h["buckets"] = kept.into();
        h["limit_us"] = limit_us.into();
        h["overflow"] = over
            .iter()
            .filter_map(|b| b[1].as_u64())
            .sum::<u64>()
            .into();
    }
}
