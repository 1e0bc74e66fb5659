//! `bench latency`'s findings: what a wake-up latency measurement depends on (kernel
//! preemption, frequency governor, device interrupts on the measured CPUs, SMT, the
//! privileges cyclictest takes) and what it could not count.
//!
//! The engine (`bench::latency`) never judges and the context (`probe::system`) only reads;
//! the cli gathers their facts into a [`LatencyRun`] and these functions say what they mean.

use super::count;
use model::{Finding, Severity};

/// The subject of every latency finding: they are about the run as a whole (the measured
/// CPUs' context), not one device.
pub const SUBJECT: &str = "latency run";

/// The facts the latency findings read, gathered from the run's context and measurement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyRun {
    /// The kernel's preemption model as headroom names it, e.g. `PREEMPT_DYNAMIC (full)`.
    pub preemption: String,
    /// Whether the kernel is PREEMPT_RT (its worst case is bounded).
    pub realtime: bool,
    /// The measured CPUs whose frequency governor scales, each as `CPU 0 (schedutil)`.
    pub scaling_cpus: Vec<String>,
    /// Each measured CPU with its device interrupts, in CPU order.
    pub cpus: Vec<CpuInterrupts>,
    /// Whether SMT is active (`None`: not visible).
    pub smt_active: Option<bool>,
    /// What of cyclictest's real-time setup was refused, each with the kernel's words, e.g.
    /// `SCHED_FIFO priority 99 (Operation not permitted (os error 1))`; empty when SCHED_FIFO
    /// and locked memory were both obtained (or not asked for).
    pub rt_refused: Vec<String>,
    /// /dev/cpu_dma_latency could not be held at 0.
    pub dma_latency_refused: bool,
    /// Wake-ups that came after the next one was due.
    pub missed_periods: u64,
    /// Wake-ups above the histogram's limit.
    pub histogram_overflow: u64,
    /// The histogram's limit (cyclictest's -h), us.
    pub histogram_limit_us: u32,
}

/// One measured CPU's device interrupts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuInterrupts {
    pub cpu: u32,
    /// Device interrupts that arrived on it during the run as (IRQ, name, count), most first;
    /// empty when none arrived or /proc/interrupts was not read again at the end.
    pub arrived: Vec<(u32, String, u64)>,
    /// Device interrupts routed to it, each as `IRQ NAME` (from the reading at the start).
    pub routed: Vec<String>,
}

/// What the numbers depend on, as sentences, in a fixed order: kernel, governor, interrupts
/// per CPU, SMT, privileges, missed periods, histogram overflow.
pub fn findings(run: &LatencyRun) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |severity, message: String| out.push(Finding::new(severity, SUBJECT, message));
    if !run.realtime {
        push(
            Severity::Warning,
            format!(
                "the kernel is not real-time (preemption: {}): its worst-case latency is not \
                 bounded; the boards of Rockchip's RealTime Linux Performance Test Report run \
                 PREEMPT_RT or Xenomai",
                run.preemption
            ),
        );
    }
    if !run.scaling_cpus.is_empty() {
        push(
            Severity::Warning,
            format!(
                "the frequency governor scales on {}: wake-ups pay for frequency changes; set \
                 the `performance` governor for stable numbers",
                run.scaling_cpus.join(", ")
            ),
        );
    }
    for c in &run.cpus {
        let cpu = c.cpu;
        if !c.arrived.is_empty() {
            let total: u64 = c.arrived.iter().map(|x| x.2).sum();
            let top: Vec<String> = c
                .arrived
                .iter()
                .take(4)
                .map(|(irq, name, n)| format!("{irq} {name}: {n}"))
                .collect();
            push(
                Severity::Warning,
                format!(
                    "measured CPU {cpu} took {} during the run ({}{}): their handlers delay \
                     wake-ups there; move them with /proc/irq/N/smp_affinity_list",
                    count(total, "device interrupt", "device interrupts"),
                    top.join(", "),
                    if c.arrived.len() > 4 { ", ..." } else { "" }
                ),
            );
        } else if !c.routed.is_empty() {
            push(
                Severity::Info,
                format!(
                    "measured CPU {cpu} is the target of device {} {} (none arrived during \
                     the run)",
                    if c.routed.len() == 1 {
                        "interrupt"
                    } else {
                        "interrupts"
                    },
                    c.routed.join(", ")
                ),
            );
        }
    }
    if run.smt_active == Some(true) {
        push(
            Severity::Info,
            "SMT is active: a sibling hardware thread shares each measured core".into(),
        );
    }
    if let Some(f) = not_realtime(&run.rt_refused) {
        push(f.severity, f.message);
    }
    if run.dma_latency_refused {
        push(
            Severity::Info,
            "/dev/cpu_dma_latency could not be held at 0: idle-state exit latency is included"
                .into(),
        );
    }
    if run.missed_periods > 0 {
        push(
            Severity::Warning,
            format!(
                "{} missed (a wake-up came after the next one was due); cyclictest skips \
                 these without counting them",
                count(run.missed_periods, "period was", "periods were")
            ),
        );
    }
    if run.histogram_overflow > 0 {
        push(
            Severity::Info,
            format!(
                "{} above the histogram limit of {} us (-h): quantiles above it are not known",
                count(run.histogram_overflow, "wake-up was", "wake-ups were"),
                run.histogram_limit_us
            ),
        );
    }
    out
}

/// The run measured without SCHED_FIFO or locked memory (`refused`: what was refused, with
/// the kernel's words; `None` when nothing was): one sentence saying what was refused, why
/// the numbers are then not comparable with a SCHED_FIFO cyclictest, and how to get the
/// privileges. cli prints it as the run starts and the document keeps it.
pub fn not_realtime(refused: &[String]) -> Option<Finding> {
    (!refused.is_empty()).then(|| {
        Finding::new(
            Severity::Warning,
            SUBJECT,
            format!(
                "measured without {}: the latencies include waits behind ordinary tasks, page \
                 faults and the 50 us timer slack of normal threads, so they are not comparable \
                 with cyclictest's under SCHED_FIFO; run as root, or give this user CAP_SYS_NICE \
                 and CAP_IPC_LOCK, or raise its limits (`ulimit -r 99` and `ulimit -l \
                 unlimited`, rtprio and memlock in /etc/security/limits.conf)",
                refused.join(" and ")
            ),
        )
    })
}

/// cyclictest's `-b THRESHOLD`: how many wake-ups were above `threshold_us`, from the 1 us
/// histogram (`counts[k]` holds [k, k+1) us; `overflow` those at or above `counts.len()` us)
/// and the largest latency `max_us` (integer us, as cyclictest compares).
pub fn breaktrace(threshold_us: u64, counts: &[u64], overflow: u64, max_us: u64) -> Finding {
    let limit = counts.len() as u64;
    let message = if max_us <= threshold_us || threshold_us < limit {
        let above = if max_us <= threshold_us {
            0
        } else {
            // Bucket k holds [k, k+1) us: above the threshold in cyclictest's integer us.
            counts
                .iter()
                .skip(usize::try_from(threshold_us + 1).unwrap_or(usize::MAX))
                .sum::<u64>()
                + overflow
        };
        format!(
            "-b {threshold_us}: {} above {threshold_us} us (the largest: {max_us} us)",
            count(above, "wake-up was", "wake-ups were"),
        )
    } else {
        format!(
            "-b {threshold_us}: up to {} above it (the histogram stops at {limit} us; raise -h \
             to count above {threshold_us} us); the largest was {max_us} us",
            count(overflow, "wake-up was", "wake-ups were"),
        )
    };
    Finding::new(Severity::Info, SUBJECT, message)
}

/// The run was stopped by a signal (`by`, e.g. `SIGINT`) before its duration or loop count.
pub fn interrupted(by: &str) -> Finding {
    Finding::new(
        Severity::Info,
        SUBJECT,
        format!("the run was interrupted by {by}: partial results"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(f: &[Finding]) -> String {
        f.iter()
            .map(|f| f.message.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_clean_rt_run_has_no_finding() {
        let run = LatencyRun {
            preemption: "PREEMPT_RT".into(),
            realtime: true,
            cpus: vec![CpuInterrupts {
                cpu: 2,
                ..CpuInterrupts::default()
            }],
            smt_active: Some(false),
            histogram_limit_us: 400,
            ..LatencyRun::default()
        };
        assert_eq!(findings(&run), []);
    }

    #[test]
    fn every_finding_in_order() {
        let run = LatencyRun {
            preemption: "PREEMPT_DYNAMIC (voluntary)".into(),
            realtime: false,
            scaling_cpus: vec!["CPU 0 (schedutil)".into()],
            cpus: vec![
                CpuInterrupts {
                    cpu: 0,
                    arrived: (1..=5)
                        .map(|i| (40 + i, format!("eth{i}"), 10 * i as u64))
                        .collect(),
                    routed: vec!["41 eth1".into()],
                },
                CpuInterrupts {
                    cpu: 3,
                    arrived: Vec::new(),
                    routed: vec!["45 nvme0q1".into()],
                },
            ],
            smt_active: Some(true),
            rt_refused: vec!["SCHED_FIFO priority 99 (Operation not permitted)".into()],
            dma_latency_refused: true,
            missed_periods: 1,
            histogram_overflow: 2,
            histogram_limit_us: 400,
        };
        let f = findings(&run);
        let sev: Vec<Severity> = f.iter().map(|f| f.severity).collect();
        use Severity::*;
        assert_eq!(
            sev,
            [Warning, Warning, Warning, Info, Info, Warning, Info, Warning, Info]
        );
        assert!(f.iter().all(|f| f.subject == SUBJECT));
        let text = messages(&f);
        assert!(text.contains("not real-time (preemption: PREEMPT_DYNAMIC (voluntary))"));
        assert!(text.contains("governor scales on CPU 0 (schedutil):"));
        // 10+20+30+40+50 arrived; the top four are named, the rest elided.
        assert!(
            text.contains(
                "measured CPU 0 took 150 device interrupts during the run (41 eth1: 10, \
                 42 eth2: 20, 43 eth3: 30, 44 eth4: 40, ...)"
            ),
            "{text}"
        );
        assert!(!text.contains("measured CPU 0 is the target"), "{text}");
        assert!(text
            .contains("measured CPU 3 is the target of device interrupt 45 nvme0q1 (none arrived"));
        assert!(text.contains(
            "measured without SCHED_FIFO priority 99 (Operation not permitted): the latencies \
             include waits"
        ));
        assert!(text.contains("not comparable with cyclictest's under SCHED_FIFO; run as root"));
        assert!(text.contains("ulimit -l unlimited"));
        assert!(text.contains("1 period was missed"));
        assert!(text.contains("2 wake-ups were above the histogram limit of 400 us"));
    }

    #[test]
    fn breaktrace_counts_above_the_threshold_in_integer_us() {
        // 5 wake-ups at 10.x us, 3 at 20.x us, 2 above the 100 us limit (largest 250 us).
        let mut counts = vec![0u64; 100];
        counts[10] = 5;
        counts[20] = 3;
        let b = |t, overflow| breaktrace(t, &counts, overflow, 250).message;
        // cyclictest's -b compares integer us: 20.x us is not above 20.
        assert!(b(20, 2).starts_with("-b 20: 2 wake-ups were above 20 us"));
        assert!(b(10, 2).starts_with("-b 10: 5 wake-ups were above"));
        assert!(b(9, 2).starts_with("-b 9: 10 wake-ups were above"));
        assert_eq!(
            b(300, 2),
            "-b 300: 0 wake-ups were above 300 us (the largest: 250 us)"
        );
        assert!(
            b(200, 2).contains("up to 2 wake-ups were above it"),
            "{}",
            b(200, 2)
        );
        assert!(b(150, 1).contains("up to 1 wake-up was above it"));
    }
}
