//! bench latency's findings (`report::kinds::latency::findings`) on what probe and counters
//! read: the captured system contexts of an RT board and of this VM, and the device
//! interrupts that arrived on a measured CPU during a run.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::latency::{Affinity, Config, CpuInterrupts, MeasuredInterrupts, Measurement, Step};
use model::procfs::IrqLine;
use model::system::SystemContext;
use model::Finding;
use testsupport::latency::messages;

fn fixture(name: &str) -> SystemContext {
    probe::system::read_context(&testsupport::fixtures::own_root(&format!("system/{name}")))
}

/// An empty run whose privileged steps all succeeded, or all were refused (EPERM).
fn measurement(privileged: bool, missed: u64) -> Measurement {
    let step = if privileged {
        Step::Done
    } else {
        Step::Refused("EPERM".into())
    };
    testsupport::latency::measurement(step, missed)
}

/// The findings of a run on `ctx` whose /proc/interrupts read `after` at the end (the
/// context holds the reading from the start), over one second.
fn findings(
    config: &Config,
    ctx: &SystemContext,
    m: &Measurement,
    after: Option<&[IrqLine]>,
) -> Vec<Finding> {
    // The threads are pinned: the CPUs measured are theirs.
    let cpus: Vec<u32> = (0..config.threads)
        .filter_map(|i| config.cpu_of(i))
        .collect();
    let interrupts = after.map(|after| {
        let lines = counters::interrupts::delta_lines(ctx.irqs.as_deref().unwrap_or(&[]), after);
        MeasuredInterrupts {
            elapsed_s: 1.0,
            cpus: cpus
                .iter()
                .map(|&c| CpuInterrupts::new(c, counters::interrupts::on_cpu(&lines, c), 1.0))
                .collect(),
        }
    });
    report::kinds::latency::findings::findings(config, ctx, m, &cpus, interrupts.as_ref(), None)
}

#[test]
fn findings_on_the_rt_board() {
    let ctx = fixture("rt-board-handmade");
    // Threads pinned to CPUs 0 (schedutil) and 3 (performance, IRQ 45 routed there).
    let config = Config {
        threads: 2,
        affinity: Affinity::Pinned(vec![0, 3]),
        ..Config::default()
    };
    let f = findings(&config, &ctx, &measurement(true, 0), None);
    let text = messages(&f);
    assert!(!text.contains("not real-time"), "{text}");
    assert!(
        text.contains("governor scales on CPU 0 (schedutil)"),
        "{text}"
    );
    assert!(!text.contains("CPU 3 (performance)"), "{text}");
    assert!(
        text.contains("device interrupt IRQ 45 ") && text.contains("is routed to measured CPU 3"),
        "{text}"
    );
    assert!(!text.contains("routed to measured CPU 0"), "{text}");
    // With a second reading of /proc/interrupts, the interrupts that arrived count.
    let mut after = ctx.irqs.clone().unwrap();
    after
        .iter_mut()
        .find(|l| l.irq == 45)
        .unwrap()
        .counts
        .insert(3, 400);
    let text = messages(&findings(
        &config,
        &ctx,
        &measurement(true, 0),
        Some(&after),
    ));
    assert!(
        text.contains("measured CPU 3 took 79 device interrupts during the run (79 from IRQ 45 "),
        "{text}"
    );
}

#[test]
fn findings_on_this_vm() {
    let ctx = fixture("firecracker-vm-6.18");
    let config = Config {
        threads: 1,
        affinity: Affinity::Pinned(vec![0]),
        ..Config::default()
    };
    let f = findings(&config, &ctx, &measurement(false, 7), None);
    let text = messages(&f);
    assert!(
        text.contains("not real-time (preemption: PREEMPT_DYNAMIC"),
        "{text}"
    );
    assert!(text.contains("not comparable with cyclictest"), "{text}");
    assert!(text.contains("7 periods were missed"), "{text}");
    assert!(!text.contains("governor"), "no cpufreq here: {text}");
}

/// A latency run on a board whose DDR clock scales (devfreq `dmc_ondemand`) is told so, with
/// how to fix it; a GPU that scales is no finding.
#[test]
fn findings_on_a_board_whose_ddr_clock_scales() {
    let ctx = fixture("rk3588-devfreq");
    let config = Config {
        threads: 1,
        affinity: Affinity::Pinned(vec![4]),
        ..Config::default()
    };
    let f = findings(&config, &ctx, &measurement(true, 0), None);
    let ddr: Vec<&Finding> = f
        .iter()
        .filter(|f| f.message.contains("DDR frequency"))
        .collect();
    assert_eq!(ddr.len(), 1, "{f:#?}");
    assert_eq!(ddr[0].severity, model::Severity::Warning);
    assert!(
        ddr[0]
            .sentence()
            .starts_with("the DDR frequency scales on dmc (dmc_ondemand): a wake-up"),
        "{}",
        ddr[0].sentence()
    );
    assert!(ddr[0]
        .sentence()
        .contains("/sys/class/devfreq/dmc/governor"));
    assert!(!messages(&f).contains("gpu"), "{f:#?}");
}
