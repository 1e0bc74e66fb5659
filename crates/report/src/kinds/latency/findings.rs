//! `bench latency`'s findings: what a wake-up latency measurement depends on (kernel
//! preemption, frequency governor, device interrupts on the measured CPUs, SMT, the
//! privileges cyclictest takes) and what it could not count.
//!
//! The engine (`bench::latency`) never judges and the context (`probe::system`) only reads;
//! these functions read their model types and say what they mean.

use crate::explain;
use crate::words::plural as count;
use model::latency::split::Split;
use model::latency::{Config, MeasuredInterrupts, Measurement, Privileges, Step};
use model::stress::StressSpec;
use model::system::SystemContext;
use model::{Finding, Severity};

/// The subject of every latency finding: they are about the run as a whole (the measured
/// CPUs' context), not one device.
pub const SUBJECT: &str = "latency run";

/// What of cyclictest's real-time setup the kernel refused, each with its words, e.g.
/// `SCHED_FIFO priority 99 (Operation not permitted (os error 1))`; empty when SCHED_FIFO
/// and locked memory were both obtained (or not asked for).
pub fn rt_refused(p: &Privileges, priority: u8) -> Vec<String> {
    let mut refused = Vec::new();
    if let Step::Refused(why) = &p.sched_fifo {
        refused.push(format!("SCHED_FIFO priority {priority} ({why})"));
    }
    if let Step::Refused(why) = &p.memory_locked {
        refused.push(format!("locked memory ({why})"));
    }
    refused
}

/// The advice of the interrupt finding: what moves device interrupts off a measured CPU.
pub const MOVE_INTERRUPTS: &str = "move them off the measured CPUs with \
                                   /proc/irq/N/smp_affinity_list (or keep them off at boot with \
                                   irqaffinity= and isolcpus=)";

/// Whether `n` device interrupts among `wakeups` wake-ups on one CPU can show in the
/// numbers: an interrupt delays at most the wake-up it lands on, so fewer than one per
/// thousand wake-ups cannot move even the p99.9 (`wakeups` 0: unknown, assumed so).
pub fn interrupts_matter(n: u64, wakeups: u64) -> bool {
    n > 0 && n.saturating_mul(1000) >= wakeups
}

/// The wake-ups measured on `cpu`: its pinned threads', else (free threads) an equal share
/// of all of them.
fn wakeups_on(m: &Measurement, cpu: u32, cpus: usize) -> u64 {
    let pinned: Vec<u64> = m
        .threads
        .iter()
        .filter(|t| t.cpu == Some(cpu))
        .map(|t| t.stats.count)
        .collect();
    if pinned.is_empty() {
        m.total.count / cpus.max(1) as u64
    } else {
        pinned.iter().sum()
    }
}

/// What one run of `bench latency` measured and on what: the facts its findings read.
pub struct Run<'a> {
    pub config: &'a Config,
    pub context: &'a SystemContext,
    pub measurement: &'a Measurement,
    /// The CPUs measured, in CPU order.
    pub cpus: &'a [u32],
    pub interrupts: Option<&'a MeasuredInterrupts>,
    /// The run's own load.
    pub stress: Option<&'a StressSpec>,
    pub split: Option<&'a Split>,
}

/// Every finding of a run: what the numbers depend on ([`findings`]), the IRQ/thread split's,
/// then what only the command line knows: `-b`'s threshold (`breaktrace_us`) and the signal
/// that stopped the run (`interrupted_by`).
pub fn of_run(r: Run, breaktrace_us: Option<u64>, interrupted_by: Option<&str>) -> Vec<Finding> {
    let m = r.measurement;
    let mut out = findings(r.config, r.context, m, r.cpus, r.interrupts, r.stress);
    if let Some(s) = r.split {
        out.extend(split(s, measurement_priority(m)));
    }
    if let Some(b) = breaktrace_us {
        let h = &m.total.histogram;
        out.push(breaktrace(
            b,
            &h.counts,
            h.overflow,
            model::units::whole_us(m.total.max_ns),
            r.split.is_some_and(|s| s.analysis.is_some()),
        ));
    }
    if let Some(by) = interrupted_by {
        out.push(interrupted(by));
    }
    out
}

/// The SCHED_FIFO priority the threads really ran at (0: normal scheduling, refused or
/// `-p 0`).
fn measurement_priority(m: &Measurement) -> u8 {
    m.threads.iter().map(|t| t.priority).max().unwrap_or(0)
}

/// What the numbers depend on, as sentences, in a fixed order: kernel, governor, interrupts
/// per measured CPU (`cpus`, in CPU order), SMT, privileges, missed periods, histogram
/// overflow. `interrupts`: what arrived on those CPUs during the measurement, when
/// `/proc/interrupts` could be read before and after; `stress`: the run's own load, whose io
/// workers make the disks' controllers interrupt (that load is named as the run's own).
pub fn findings(
    config: &Config,
    ctx: &SystemContext,
    m: &Measurement,
    cpus: &[u32],
    interrupts: Option<&MeasuredInterrupts>,
    stress: Option<&StressSpec>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |severity, message: String, advice: Option<&str>| {
        let f = Finding::new(severity, SUBJECT, message);
        out.push(match advice {
            Some(a) => f.with_advice(a),
            None => f,
        })
    };
    let preemption = &ctx.kernel.preemption;
    if !preemption.is_realtime() {
        push(
            Severity::Warning,
            format!(
                "the kernel is not real-time (preemption: {}): its worst-case latency is not \
                 bounded; the boards of Rockchip's RealTime Linux Performance Test Report run \
                 PREEMPT_RT or Xenomai",
                preemption.describe()
            ),
            Some(
                "boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64 or \
                 linux-image-rt-arm64) where the worst case matters",
            ),
        );
    }
    let scaling_cpus = ctx.scaling_cpus(Some(cpus));
    if !scaling_cpus.is_empty() {
        push(
            Severity::Warning,
            format!(
                "the frequency governor scales on {}: wake-ups pay for frequency changes",
                scaling_cpus.join(", ")
            ),
            Some(
                "set the `performance` governor for stable numbers (`cpupower frequency-set \
                 -g performance`)",
            ),
        );
    }
    let scaling_memory = ctx.scaling_memory();
    if !scaling_memory.is_empty() {
        push(
            Severity::Warning,
            format!(
                "the DDR frequency scales on {}: a wake-up that lands on a DDR frequency \
                 change waits for it, and the memory the threads touch runs at a clock that \
                 follows the load",
                scaling_memory.join(", ")
            ),
            Some(crate::kinds::audit::findings::system::DDR_ADVICE),
        );
    }
    let disk_stress = stress.is_some_and(StressSpec::drives_disks);
    for &cpu in cpus {
        let arrived = interrupts
            .and_then(|i| i.cpus.iter().find(|c| c.cpu == cpu))
            .filter(|c| c.count > 0);
        let routed = ctx.irqs_on_cpu(cpu);
        if let Some(c) = arrived {
            // By line, most first: `6 from IRQ 41 virtio3-rx`; beyond four, how many more.
            let mut by_line: Vec<String> = c
                .sources
                .iter()
                .take(4)
                .map(|x| format!("{} from IRQ {} {}", x.count, x.irq, x.name))
                .collect();
            if c.sources.len() > 4 {
                let rest = &c.sources[4..];
                by_line.push(format!(
                    "{} from {}",
                    rest.iter().map(|x| x.count).sum::<u64>(),
                    count(rest.len() as u64, "other line", "other lines")
                ));
            }
            // The disks' interrupts under io or hdd workers are the stress's own load: io
            // workers sync every filesystem (a flush request to every disk), hdd workers
            // write and read a file.
            let own: Vec<&model::latency::IrqSource> = c
                .sources
                .iter()
                .filter(|x| disk_stress && x.block_device.is_some())
                .collect();
            let own_count: u64 = own.iter().map(|x| x.count).sum();
            let others = c.count - own_count;
            let wakeups = wakeups_on(m, cpu, cpus.len());
            let mut message = format!(
                "measured CPU {cpu} took {} during the run ({})",
                count(c.count, "device interrupt", "device interrupts"),
                by_line.join(", ")
            );
            if own_count > 0 {
                let mut disks: Vec<&str> = own
                    .iter()
                    .filter_map(|x| x.block_device.as_deref())
                    .collect();
                disks.dedup();
                message.push_str(&format!(
                    "; {own_count} of them are load this run generated itself: {}, and {} \
                     answered each with an interrupt",
                    stress.map_or("", disk_workers),
                    disks.join(", ")
                ));
            }
            let matter = interrupts_matter(others, wakeups);
            if matter {
                message.push_str(&format!(
                    "; {} {others} delay the wake-ups they land on, each by its handler's time",
                    if own_count > 0 { "the other" } else { "these" }
                ));
            } else if others > 0 {
                message.push_str(&format!(
                    "; {} fewer than one per thousand of its {wakeups} wake-ups, too few to \
                     move even the p99.9",
                    if own_count > 0 {
                        format!(
                            "the other {others} {}",
                            if others == 1 { "is" } else { "are" }
                        )
                    } else {
                        "that is".to_string()
                    }
                ));
            }
            let advice = if matter {
                Some(MOVE_INTERRUPTS)
            } else if own_count > 0 {
                Some(
                    "this is the load the stress is meant to add; measure without it by giving \
                     the stress no io= or hdd= workers",
                )
            } else {
                None
            };
            push(
                if matter {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                message,
                advice,
            );
        } else if !routed.is_empty() {
            let routed: Vec<String> = routed
                .iter()
                .map(|l| format!("IRQ {} {}", l.irq, l.name))
                .collect();
            push(
                Severity::Info,
                if routed.len() == 1 {
                    format!(
                        "device interrupt {} is routed to measured CPU {cpu} (none arrived \
                         during the run)",
                        routed[0]
                    )
                } else {
                    format!(
                        "device interrupts {} are routed to measured CPU {cpu} (none arrived \
                         during the run)",
                        routed.join(", ")
                    )
                },
                Some(MOVE_INTERRUPTS),
            );
        }
    }
    if ctx.smt_active == Some(true) {
        push(
            Severity::Info,
            "SMT is active: a sibling hardware thread shares each measured core".into(),
            Some("turn SMT off (`echo off > /sys/devices/system/cpu/smt/control`) or keep the sibling idle"),
        );
    }
    let pr = &m.privileges;
    for f in [
        not_realtime(&rt_refused(pr, config.priority)),
        dma_latency_not_held(&pr.cpu_dma_latency_held),
    ]
    .into_iter()
    .flatten()
    {
        push(f.severity, f.message, f.advice.as_deref());
    }
    let total = &m.total;
    if total.missed_periods > 0 {
        push(
            Severity::Warning,
            format!(
                "{} missed (a wake-up came after the next one was due); cyclictest skips \
                 these without counting them",
                count(total.missed_periods, "period was", "periods were")
            ),
            Some(
                "the latency of those wake-ups exceeded the interval: find what ran instead in \
                 the largest wake-ups' times, or lengthen -i",
            ),
        );
    }
    if total.histogram.overflow > 0 {
        push(
            Severity::Info,
            format!(
                "{} above the histogram limit of {} us (-h): quantiles above it are not known",
                count(total.histogram.overflow, "wake-up was", "wake-ups were"),
                total.histogram.limit_us()
            ),
            Some("raise -h to know them"),
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
                 with cyclictest's under SCHED_FIFO",
                refused.join(" and ")
            ),
        )
        .with_advice(
            "run as root, or give this user CAP_SYS_NICE and CAP_IPC_LOCK, or raise its limits \
             (`ulimit -r 99` and `ulimit -l unlimited`, rtprio and memlock in \
             /etc/security/limits.conf)",
        )
    })
}

/// `/dev/cpu_dma_latency` could not be held at 0 (`None` when it was, or was not asked for):
/// cli prints it as the run starts and the document keeps it.
pub fn dma_latency_not_held(step: &Step) -> Option<Finding> {
    let Step::Refused(why) = step else {
        return None;
    };
    Some(
        Finding::new(
            Severity::Info,
            SUBJECT,
            format!(
                "/dev/cpu_dma_latency could not be held at 0 ({why}): idle-state exit latency \
                 is included"
            ),
        )
        .with_advice("run as root to hold it, as cyclictest does"),
    )
}

/// What the IRQ/thread split says about a run (`--split`, `--analyze`): wake-ups it could
/// not match, a split that cannot be sound, and the wake-up it explained (the first above
/// `--analyze`, else the largest) by the part that took the most. `priority`: the measuring
/// threads' SCHED_FIFO priority (0: normal scheduling).
pub fn split(s: &Split, priority: u8) -> Vec<Finding> {
    let mut out = Vec::new();
    let t = &s.total;
    if t.unmatched > 0 {
        let mut why = Vec::new();
        if s.lost_events > 0 {
            why.push(format!(
                "the kernel dropped {} from a full ring buffer",
                count(s.lost_events, "event", "events")
            ));
        }
        if s.dropped_wakeups > 0 {
            why.push(format!(
                "{} not handed over by their thread (its queue was full)",
                count(s.dropped_wakeups, "wake-up was", "wake-ups were")
            ));
        }
        if why.is_empty() {
            why.push("their timer's events were not recorded".to_string());
        }
        out.push(
            Finding::new(
                Severity::Warning,
                SUBJECT,
                format!(
                    "{} of {} could not be matched to their timer's events ({}): their IRQ \
                     latency is not known and they are left out of the split",
                    t.unmatched,
                    count(t.wakeups, "wake-up", "wake-ups"),
                    why.join("; ")
                ),
            )
            .with_advice("measure fewer threads, or a longer interval (-i)"),
        );
    }
    if t.irq_above_thread > 0 {
        out.push(Finding::new(
            Severity::Warning,
            SUBJECT,
            format!(
                "{} an IRQ latency above {} thread latency: the kernel's trace clock and the \
                 threads' CLOCK_MONOTONIC disagree here, so the split is not sound",
                count(t.irq_above_thread, "wake-up had", "wake-ups had"),
                if t.irq_above_thread == 1 {
                    "its"
                } else {
                    "their"
                }
            ),
        ));
    }
    if let (Some(us), None) = (s.analyze_above_us, &s.analysis) {
        out.push(Finding::new(
            Severity::Info,
            SUBJECT,
            format!(
                "--analyze {us}: no wake-up took {us} us or more (the largest took {} us), \
                 so the run was not stopped",
                explain::us2(t.thread_latency.max_ns as i64)
            ),
        ));
    }
    let explained = s.analysis.as_ref().or(s.largest.first());
    if let Some(a) = explained {
        let (what, ns, advice) = explain::main_cause(a, priority);
        let which = if s.analysis.is_some() {
            format!(
                "the first wake-up at or above --analyze {} us",
                s.analyze_above_us.unwrap_or_default()
            )
        } else {
            "the largest wake-up".to_string()
        };
        out.push(
            Finding::new(
                if s.analysis.is_some() {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                SUBJECT,
                format!(
                    "{which} (thread {}, {:.3} s into the run) came {} us late; the largest \
                     part of that, {} us ({:.0} %), was this: {what}",
                    a.thread,
                    a.at_ns as f64 / 1e9,
                    explain::us2(a.thread_latency_ns as i64),
                    explain::us2(ns as i64),
                    ns as f64 * 100.0 / a.thread_latency_ns.max(1) as f64
                ),
            )
            .with_advice(advice),
        );
    }
    out
}

/// cyclictest's `-b THRESHOLD`: how many wake-ups were above `threshold_us`, from the 1 us
/// histogram (`counts[k]` holds [k, k+1) us; `overflow` those at or above `counts.len()` us)
/// and the largest latency `max_us` (integer us, as cyclictest compares). `analyzed`: the run
/// explained the first wake-up above a threshold (`--analyze`), whose finding says what held
/// it up; otherwise the finding says how to get that explanation.
pub fn breaktrace(
    threshold_us: u64,
    counts: &[u64],
    overflow: u64,
    max_us: u64,
    analyzed: bool,
) -> Finding {
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
    let f = Finding::new(Severity::Info, SUBJECT, message);
    if max_us <= threshold_us {
        f
    } else if analyzed {
        f.with_advice("the analysis (--analyze) says what held up the first of them")
    } else {
        f.with_advice(format!(
            "--analyze {threshold_us} stops at the first of them and says what held it up \
             (interrupts, softirqs, the thread that kept the CPU), as rtla timerlat -a does"
        ))
    }
}

/// The run was stopped by a signal (`by`, e.g. `SIGINT`) before its duration or loop count.
pub fn interrupted(by: &str) -> Finding {
    Finding::new(
        Severity::Info,
        SUBJECT,
        format!("the run was interrupted by {by}: partial results"),
    )
}

/// What the stress's disk workers do, in words: io workers call sync(), hdd workers write and
/// read a file (the disks' interrupts under them are the run's own load).
fn disk_workers(spec: &StressSpec) -> &'static str {
    match (spec.io > 0, spec.hdd > 0) {
        (true, false) => "its stress's io workers call sync(), a flush request to every disk",
        (false, true) => "its stress's hdd workers write and read a file",
        _ => {
            "its stress's io workers call sync(), a flush request to every disk, and its hdd \
             workers write and read a file"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::latency::split::{Analysis, Blocking, SplitSource, SplitStats, TaskInfo};

    use model::latency::CpuInterrupts;
    use model::procfs::IrqLine;
    use model::system::{CpuFreq, Kernel, Preemption};

    fn context(preemption: Preemption, smt: bool) -> SystemContext {
        let line = |irq: u32, name: &str, cpu: u32| IrqLine {
            irq,
            counts: [(cpu, 5)].into(),
            chip: "PCI-MSIX-0000:01:00.0 1-edge".into(),
            name: name.into(),
            effective_affinity: Some(vec![cpu]),
        };
        SystemContext {
            kernel: Kernel {
                release: Some("6.1.0".into()),
                version: None,
                preemption,
            },
            cmdline: None,
            cpus_online: Some(vec![0, 1, 2, 3]),
            cpufreq: vec![CpuFreq {
                cpu: 0,
                governor: Some("schedutil".into()),
                cur_khz: Some(1_000_000),
                min_khz: Some(400_000),
                max_khz: Some(1_800_000),
            }],
            devfreq: Vec::new(),
            smt_active: Some(smt),
            load_average: None,
            irqs: Some(vec![line(41, "eth1", 0), line(45, "nvme0q1", 3)]),
            unreadable: Vec::new(),
        }
    }

    use testsupport::latency::messages;

    /// A run with a 400-bucket histogram whose privileged steps ended in `step`.
    fn measurement(step: Step, missed: u64, overflow: u64) -> Measurement {
        let mut m = testsupport::latency::measurement(step, missed);
        m.total.histogram.counts = vec![0; 400];
        m.total.histogram.overflow = overflow;
        m
    }

    #[test]
    fn a_clean_rt_run_has_no_finding() {
        let ctx = context(Preemption::Rt, false);
        let m = measurement(Step::Done, 0, 0);
        let quiet = MeasuredInterrupts {
            elapsed_s: 2.0,
            cpus: vec![CpuInterrupts::new(2, Vec::new(), 2.0)],
        };
        assert_eq!(
            findings(&Config::default(), &ctx, &m, &[2], Some(&quiet), None),
            []
        );
    }

    #[test]
    fn every_finding_in_order() {
        let ctx = context(
            Preemption::Dynamic {
                mode: Some("voluntary".into()),
            },
            true,
        );
        let m = measurement(Step::Refused("Operation not permitted".into()), 1, 2);
        let arrived = MeasuredInterrupts {
            elapsed_s: 2.0,
            cpus: vec![
                CpuInterrupts::new(
                    0,
                    (1..=5)
                        .map(|i| (40 + i, format!("eth{i}"), 10 * i as u64))
                        .collect(),
                    2.0,
                ),
                CpuInterrupts::new(3, Vec::new(), 2.0),
            ],
        };
        let f = findings(&Config::default(), &ctx, &m, &[0, 3], Some(&arrived), None);
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
        // 10+20+30+40+50 arrived; the top four are named, most first, the rest elided.
        assert!(
            text.contains(
                "measured CPU 0 took 150 device interrupts during the run (50 from IRQ 45 \
                 eth5, 40 from IRQ 44 eth4, 30 from IRQ 43 eth3, 20 from IRQ 42 eth2, 10 from \
                 1 other line); these 150 delay the wake-ups they land on, each by its \
                 handler's time"
            ),
            "{text}"
        );
        assert!(!text.contains("routed to measured CPU 0"), "{text}");
        assert!(text.contains(
            "device interrupt IRQ 45 nvme0q1 is routed to measured CPU 3 (none arrived during \
             the run)"
        ));
        assert!(text.contains(
            "measured without SCHED_FIFO priority 99 (Operation not permitted) and locked \
             memory (Operation not permitted): the latencies include waits"
        ));
        let sentences: Vec<String> = f.iter().map(Finding::sentence).collect();
        assert!(sentences.iter().any(|s| s
            .contains("not comparable with cyclictest's under SCHED_FIFO; run as root")
            && s.contains("ulimit -l unlimited")));
        // Every warning says what to do.
        assert!(f
            .iter()
            .filter(|f| f.severity == Warning)
            .all(|f| f.advice.is_some()));
        assert!(text.contains("1 period was missed"));
        assert!(text.contains("2 wake-ups were above the histogram limit of 400 us"));
        // Without the second reading of /proc/interrupts, only where they are routed.
        let text = messages(&findings(&Config::default(), &ctx, &m, &[0, 3], None, None));
        assert!(text.contains("device interrupt IRQ 41 eth1 is routed to measured CPU 0"));
    }

    #[test]
    fn a_few_interrupts_and_the_stress_own_disk_interrupts_are_not_warnings() {
        // A survey's stress part warned "measured CPU 1 took 52876 device
        // interrupts (36 virtio1-req.0: 52837, ...): move them" about the disk interrupts its
        // own io workers caused, and the idle part warned about 7 interrupts in 10000
        // wake-ups.
        let ctx = context(Preemption::Rt, false);
        let mut m = measurement(Step::Done, 0, 0);
        m.total.count = 10_000;
        let cpu1 = |sources: Vec<(u32, String, u64)>| {
            let mut i = MeasuredInterrupts {
                elapsed_s: 10.0,
                cpus: vec![CpuInterrupts::new(1, sources, 10.0)],
            };
            i.mark_block_devices(&[(36, "vda".to_string())]);
            i
        };
        let few = cpu1(vec![
            (41, "virtio3-rx".into(), 6),
            (32, "virtio0-stats".into(), 1),
        ]);
        let f = findings(&Config::default(), &ctx, &m, &[1], Some(&few), None);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info, "7 in 10000 wake-ups: {f:#?}");
        // Said as a user reads it, and with nothing to do about it.
        assert_eq!(
            f[0].sentence(),
            "measured CPU 1 took 7 device interrupts during the run (6 from IRQ 41 \
             virtio3-rx, 1 from IRQ 32 virtio0-stats); that is fewer than one per thousand of \
             its 10000 wake-ups, too few to move even the p99.9"
        );
        // The stress's io workers: vda's 52837 are its own; the 7 others do not matter.
        let io = StressSpec {
            cpu: 2,
            cpu_load: 100,
            io: 1,
            vm: 0,
            vm_bytes_per_worker: 0,
            vm_stride: 8,
            hdd: 0,
            hdd_bytes_per_worker: 0,
            hdd_path: None,
            interpretation: String::new(),
            notes: Vec::new(),
        };
        let stressed = cpu1(vec![
            (36, "virtio1-req.0".into(), 52_837),
            (42, "virtio3-tx".into(), 5),
            (31, "virtio0-stats".into(), 2),
        ]);
        let f = findings(
            &Config::default(),
            &ctx,
            &m,
            &[1],
            Some(&stressed),
            Some(&io),
        );
        assert_eq!(f[0].severity, Severity::Info, "{f:#?}");
        assert!(
            f[0].message.contains(
                "52837 of them are load this run generated itself: its stress's io workers call \
                 sync(), a flush request to every disk, and vda answered each with an interrupt"
            ),
            "{}",
            f[0].message
        );
        assert_eq!(
            f[0].sentence(),
            "measured CPU 1 took 52844 device interrupts during the run (52837 from IRQ 36 \
             virtio1-req.0, 5 from IRQ 42 virtio3-tx, 2 from IRQ 31 virtio0-stats); 52837 of \
             them are load this run generated itself: its stress's io workers call sync(), a \
             flush request to every disk, and vda answered each with an interrupt; the other 7 \
             are fewer than one per thousand of its 10000 wake-ups, too few to move even the \
             p99.9; this is the load the stress is meant to add; measure without it by giving \
             the stress no io= or hdd= workers"
        );
        // Without io workers the same interrupts are the system's, and a warning.
        let f = findings(&Config::default(), &ctx, &m, &[1], Some(&stressed), None);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].advice.as_deref(), Some(MOVE_INTERRUPTS));
        // Others that matter beside the stress's own: a warning that names both.
        let both = cpu1(vec![
            (36, "virtio1-req.0".into(), 52_837),
            (42, "virtio3-tx".into(), 37),
        ]);
        let f = findings(&Config::default(), &ctx, &m, &[1], Some(&both), Some(&io));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message
                .contains("52837 of them are load this run generated itself")
                && f[0].message.ends_with(
                    "; the other 37 delay the wake-ups they land on, each by its handler's time"
                ),
            "{}",
            f[0].message
        );
        assert!(interrupts_matter(10, 10_000) && !interrupts_matter(9, 10_000));
    }

    #[test]
    fn breaktrace_counts_above_the_threshold_in_integer_us() {
        // 5 wake-ups at 10.x us, 3 at 20.x us, 2 above the 100 us limit (largest 250 us).
        let mut counts = vec![0u64; 100];
        counts[10] = 5;
        counts[20] = 3;
        let b = |t, overflow| breaktrace(t, &counts, overflow, 250, false).message;
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
        // The finding points at the explanation of the first one.
        let advice = |analyzed| breaktrace(20, &counts, 2, 250, analyzed).advice.unwrap();
        assert!(advice(false).starts_with("--analyze 20 stops at the first of them"));
        assert!(advice(true).contains("the analysis (--analyze) says what held up"));
        assert_eq!(breaktrace(300, &counts, 2, 250, false).advice, None);
    }

    fn split_of(analysis: Option<Analysis>, unmatched: u64, lost: u64) -> Split {
        let mut total = SplitStats::new(None, 100);
        total.add(2_000, 5_000);
        for _ in 0..unmatched {
            total.add_unmatched();
        }
        Split {
            source: SplitSource::Tracepoints,
            threads: vec![],
            total,
            lost_events: lost,
            dropped_wakeups: 0,
            causes: vec![],
            largest: vec![],
            analyze_above_us: Some(1000),
            analysis,
        }
    }

    fn hog_analysis() -> Analysis {
        Analysis {
            thread: 0,
            tid: 100,
            cycle: 7,
            at_ns: 3_215_000_000,
            timer_cpu: 1,
            cpu: 1,
            thread_latency_ns: 20_012_000,
            irq_latency_ns: 12_000,
            running_at_expiry: None,
            before_timer_irq: vec![],
            timer_irq_ns: 3_000,
            irqs: vec![],
            softirqs: vec![],
            threads: vec![Blocking {
                task: TaskInfo {
                    pid: 4242,
                    comm: "hog".into(),
                    prio: Some(39),
                    policy: Some("SCHED_FIFO".into()),
                },
                ns: 19_992_000,
                held_ns: Some(20_001_000),
            }],
            wakeup_to_switch_ns: 19_993_000,
            switch_to_user_ns: 5_000,
            unaccounted_ns: 0,
            records_lost: false,
        }
    }

    /// An analysis whose CPU lost events says why it gives no time held.
    #[test]
    fn an_analysis_with_lost_records_says_the_time_held_is_unknown() {
        let mut a = hog_analysis();
        a.threads[0].held_ns = None;
        let text = crate::explain::analysis_lines(&a).join("\n");
        assert!(!text.contains("unknown"), "{text}");
        a.records_lost = true;
        let text = crate::explain::analysis_lines(&a).join("\n");
        assert!(
            text.contains("how long it held it is unknown: events of this CPU were lost"),
            "{text}"
        );
    }

    #[test]
    fn the_analysis_names_what_kept_the_cpu_and_what_to_do() {
        let f = split(&split_of(Some(hog_analysis()), 0, 0), 50);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(
            f[0].message,
            "the first wake-up at or above --analyze 1000 us (thread 0, 3.215 s into the run) \
             came 20012.00 us late; the largest part of that, 19992.00 us (100 %), was this: \
             hog (pid 4242, SCHED_FIFO 60) kept the CPU for 20001.00 us in all"
        );
        assert!(f[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("at or above the measuring threads' 50"));
        // Below the hog's priority there is nothing to say about priorities.
        let f = split(&split_of(Some(hog_analysis()), 0, 0), 80);
        assert!(f[0]
            .advice
            .as_deref()
            .unwrap()
            .contains("cannot be preempted"));
    }

    #[test]
    fn unmatched_wakeups_and_a_threshold_never_reached_are_said() {
        let f = split(&split_of(None, 3, 12), 99);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].message.starts_with(
            "3 of 4 wake-ups could not be matched to their timer's events (the kernel dropped \
             12 events from a full ring buffer)"
        ));
        assert!(f[1].message.starts_with(
            "--analyze 1000: no wake-up took 1000 us or more (the largest took 5.00 us)"
        ));
    }
}
