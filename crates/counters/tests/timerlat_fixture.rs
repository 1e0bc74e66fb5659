//! `bench latency --engine timerlat`'s reading of the tracer, on a tracefs tree laid out as
//! Documentation/trace/timerlat-tracer.rst shows it (tests/fixtures/timerlat): the kernel is
//! found to have the tracer, and its output gives the IRQ/thread split of each activation.

#![allow(clippy::unwrap_used)]

use counters::timerlat::{available, parse_line};
use model::latency::timerlat::Aggregator;
use model::latency::{Affinity, Config, Limits, Privileges, Step, StopReason};
use std::time::Duration;

#[test]
fn the_documented_trace_gives_the_split_of_each_activation() {
    let root = testsupport::fixtures::own_root("timerlat");
    available(&root).unwrap();
    let text = std::fs::read_to_string(root.path("/sys/kernel/tracing/trace")).unwrap();
    let samples: Vec<_> = text.lines().filter_map(parse_line).collect();
    // Every `#N context` line of the document, no header, osnoise event or stack line.
    assert_eq!(samples.len(), 12);
    let cpus = [0, 1, 5, 7];
    let config = Config {
        threads: cpus.len(),
        affinity: Affinity::Pinned(cpus.to_vec()),
        limits: Limits {
            duration: Some(Duration::from_secs(1)),
            loops: None,
        },
        histogram_limit_us: 1_000,
        ..Config::default()
    };
    let mut agg = Aggregator::new(&config, &cpus);
    for s in &samples {
        agg.add(s);
    }
    let privileges = Privileges {
        sched_fifo: Step::Done,
        memory_locked: Step::NotRequested,
        cpu_dma_latency_held: Step::NotRequested,
    };
    let (m, split) = agg.finish(privileges, 1_000_000_000, StopReason::Duration, &[95; 4]);
    // Per CPU: (activations, IRQ max, thread max) as the document's lines give them.
    let got: Vec<(u64, u64, u64)> = split
        .threads
        .iter()
        .map(|t| (t.matched, t.irq.max_ns, t.thread_latency.max_ns))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, 932, 11_700),
            (2, 2_833, 9_820),
            (1, 13_585, 39_960),
            (1, 1_616, 859_978)
        ]
    );
    assert_eq!((split.total.matched, split.total.unmatched), (6, 0));
    assert_eq!(split.total.irq_above_thread, 0);
    // The measurement is the thread latencies, thread by thread, with the tracer's tids.
    assert_eq!(m.total.count, 6);
    assert_eq!(m.total.max_ns, 859_978);
    let tids: Vec<i32> = m.threads.iter().map(|t| t.tid).collect();
    assert_eq!(tids, vec![867, 868, 1035, 1001]);
    // A kernel without the tracer says so, naming what it has.
    let none = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(none.path().join("sys/kernel/tracing")).unwrap();
    std::fs::write(
        none.path().join("sys/kernel/tracing/available_tracers"),
        "blk function nop\n",
    )
    .unwrap();
    let e = available(&model::root::SysRoot::new(none.path())).unwrap_err();
    assert!(
        e.starts_with("this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER")
            && e.ends_with("available_tracers lists: blk function nop)"),
        "{e}"
    );
}
