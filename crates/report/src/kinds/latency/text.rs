//! `headroom bench latency`: cyclictest's lines, then headroom's table (p99, p99.9, missed
//! periods, overflow), the largest wake-ups, the maxima per window, the interrupts that
//! arrived on the measured CPUs, and the kernel and CPU context.

use crate::explain;
use model::latency::split::{Split, SplitSource, SplitStats};
use model::latency::{Config, CpuInterrupts, Live, Stats, Step};
use model::stress::StressSpec;
use model::system::SystemContext;
use model::units::format_cpu_list;
use std::fmt::Write as _;

/// How many interrupt sources a CPU's line names (the document keeps them all).
const TOP_SOURCES: usize = 3;

/// Whole us, truncated as cyclictest does (one rule for the terminal, report and compare).
fn us(ns: u64) -> u64 {
    model::units::whole_us(ns)
}

/// cyclictest's thread line: `T: 0 ( 1234) P:99 I:1000 C:  12345 Min:      2 Act:    4
/// Avg:    4 Max:      31` (rt-tests src/cyclictest/cyclictest.c, print_stat); with `-N`
/// (`nsecs`) the values are in ns and Act/Avg are 8 wide, as there.
pub fn cyclictest_line(l: &Live, priority: u8, interval_us: u64, nsecs: bool) -> String {
    let avg = l.sum_ns.checked_div(l.cycles).unwrap_or(0);
    let min = if l.cycles == 0 { 0 } else { l.min_ns };
    if nsecs {
        return format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:8} Avg:{:8} Max:{:8}",
            l.thread, l.tid, priority, interval_us, l.cycles, min, l.act_ns, avg, l.max_ns
        );
    }
    format!(
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
        l.thread,
        l.tid,
        priority,
        interval_us,
        l.cycles,
        us(min),
        us(l.act_ns),
        us(avg),
        us(l.max_ns)
    )
}

fn fmt_q(q: Option<u32>, limit: u32) -> String {
    q.map_or(format!(">{limit}"), |v| v.to_string())
}

/// One measured CPU's interrupts: `interrupts on CPU 3: 39.5/s (45 nvme0q1 39.5/s)`, the
/// largest sources first.
pub fn interrupt_line(c: &CpuInterrupts) -> String {
    if c.count == 0 {
        return format!("interrupts on CPU {}: none", c.cpu);
    }
    let top: Vec<String> = c
        .sources
        .iter()
        .take(TOP_SOURCES)
        .map(|x| format!("{} {} {:.1}/s", x.irq, x.name, x.per_second))
        .collect();
    format!(
        "interrupts on CPU {}: {:.1}/s ({}{})",
        c.cpu,
        c.per_second,
        top.join(", "),
        if c.sources.len() > TOP_SOURCES {
            ", ..."
        } else {
            ""
        }
    )
}

/// How many sources of what delayed the wake-ups the text lists (the document keeps more).
const TOP_CAUSES: usize = 5;

/// The IRQ/thread split (`--split`): per thread, the IRQ latency (timer expiry to its
/// interrupt) beside the thread latency of the same wake-ups, what delayed them over the
/// run, and the explained wake-up (`--analyze`'s, else the largest) part by part.
pub fn split_text(s: &Split, limit: u32) -> String {
    let mut out = String::new();
    let from = match s.source {
        SplitSource::Tracepoints => "tracepoints",
        SplitSource::Timerlat => "the kernel's timerlat tracer",
    };
    let _ = writeln!(
        out,
        "IRQ latency (timer expiry to its interrupt) against thread latency (to the thread \
         reading the clock), from {from}:"
    );
    let _ = writeln!(
        out,
        "{:>6} {:>9} {:>9} {:>7} {:>8} {:>7} {:>7}  {:>7} {:>8} {:>7} {:>7}",
        "thread",
        "matched",
        "unmatched",
        "irq min",
        "irq avg",
        "irq p99",
        "irq max",
        "thr min",
        "thr avg",
        "thr p99",
        "thr max"
    );
    let row = |out: &mut String, name: String, st: &SplitStats| {
        let _ = writeln!(
            out,
            "{:>6} {:>9} {:>9} {:>7} {:>8.1} {:>7} {:>7}  {:>7} {:>8.1} {:>7} {:>7}",
            name,
            st.matched,
            st.unmatched,
            us(st.irq.min_ns),
            model::units::tenths_us(st.irq.avg_ns),
            fmt_q(st.irq.histogram.quantile_us(0.99), limit),
            us(st.irq.max_ns),
            us(st.thread_latency.min_ns),
            model::units::tenths_us(st.thread_latency.avg_ns),
            fmt_q(st.thread_latency.histogram.quantile_us(0.99), limit),
            us(st.thread_latency.max_ns)
        );
    };
    for t in &s.threads {
        row(&mut out, t.thread.map_or("-".into(), |n| n.to_string()), t);
    }
    row(&mut out, "all".into(), &s.total);
    let _ = writeln!(
        out,
        "(us; thread latency minus IRQ latency is the scheduling part)"
    );
    if s.lost_events > 0 || s.dropped_wakeups > 0 {
        let _ = writeln!(
            out,
            "lost: {} events (full ring buffers), {} wake-ups not handed over",
            s.lost_events, s.dropped_wakeups
        );
    }
    if !s.causes.is_empty() {
        let _ = writeln!(
            out,
            "what delayed the wake-ups between the timer's expiry and the thread (summed over \
             the run):"
        );
        for c in s.causes.iter().take(TOP_CAUSES) {
            let _ = writeln!(out, "  {}", explain::cause_line(c));
        }
    }
    let explained = match (&s.analysis, s.largest.first()) {
        (Some(a), _) => Some(("--analyze: the first wake-up at or above the threshold", a)),
        (None, Some(a)) => Some(("the largest wake-up", a)),
        (None, None) => None,
    };
    if let Some((title, a)) = explained {
        let _ = writeln!(out, "{title}, explained:");
        for l in explain::analysis_lines(a) {
            let _ = writeln!(out, "{l}");
        }
    }
    out
}

/// The text of `bench latency` ([`super::LatencyDocument`]'s `text`): cyclictest's header
/// and thread lines, the table with p99 and p99.9, the largest wake-ups and window maxima, the
/// interrupts on the measured CPUs, the IRQ/thread split when the run made one, and the
/// context the numbers depend on; under what the run measured and how it ended (the load,
/// the signal that stopped it) heads it, so a pasted report carries it.
pub(crate) fn render(
    doc: &super::LatencyDocument,
    config: &Config,
    ctx: &SystemContext,
    how: &crate::kinds::Text<'_>,
) -> String {
    let m = &doc.measurement;
    let load = doc.load_average.last();
    let interrupts = doc.interrupts.as_ref();
    let split = doc.split.as_ref();
    let stress: Option<&StressSpec> = doc.stress.as_ref().map(|s| &s.spec);
    let nsecs = how.nanoseconds;
    let mut s = String::new();
    // The cyclictest header and lines, so the output reads like the seed's reports.
    if m.privileges.cpu_dma_latency_held.is_done() {
        let _ = writeln!(s, "# /dev/cpu_dma_latency set to 0us");
    }
    let policy = if m.privileges.sched_fifo.is_done() {
        "fifo"
    } else {
        "other"
    };
    match load {
        Some(l) => {
            let _ = writeln!(
                s,
                "policy: {policy}: loadavg: {:.2} {:.2} {:.2} {}/{}",
                l.load.one, l.load.five, l.load.fifteen, l.load.runnable, l.load.tasks
            );
        }
        None => {
            let _ = writeln!(s, "policy: {policy}");
        }
    }
    match stress {
        Some(st) => {
            let _ = writeln!(
                s,
                "load: {} (--stress {}; {})",
                st.describe(),
                st.spec(),
                st.interpretation
            );
        }
        None => {
            let _ = writeln!(s, "load: none (idle; --stress adds one)");
        }
    }
    if let Some(by) = how.stopped_by {
        let asked = config
            .limits
            .duration
            .map(|d| format!(" of the {} s asked", d.as_secs_f64()))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "interrupted: stopped by {by} after {:.1} s{asked}; the numbers cover the wake-ups \
             measured until then",
            m.elapsed_ns as f64 / 1e9
        );
    }
    let _ = writeln!(s);
    for t in &m.threads {
        let live = Live {
            thread: t.thread,
            tid: t.tid,
            cycles: t.stats.count,
            act_ns: t.stats.act_ns,
            min_ns: t.stats.min_ns,
            max_ns: t.stats.max_ns,
            sum_ns: (t.stats.avg_ns * t.stats.count as f64) as u64,
        };
        let _ = writeln!(
            s,
            "{}",
            cyclictest_line(&live, t.priority, t.interval_us, nsecs)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:>6} {:>4} {:>8} {:>10} {:>6} {:>8} {:>6} {:>6} {:>8} {:>7} {:>8}",
        "thread",
        "cpu",
        "interval",
        "count",
        "min",
        "avg",
        "p99",
        "p99.9",
        "max",
        "missed",
        "overflow"
    );
    let limit = config.histogram_limit_us;
    let row = |s: &mut String, name: String, cpu: String, interval: String, st: &Stats| {
        let _ = writeln!(
            s,
            "{:>6} {:>4} {:>8} {:>10} {:>6} {:>8.1} {:>6} {:>6} {:>8} {:>7} {:>8}",
            name,
            cpu,
            interval,
            st.count,
            us(st.min_ns),
            model::units::tenths_us(st.avg_ns),
            fmt_q(st.histogram.quantile_us(0.99), limit),
            fmt_q(st.histogram.quantile_us(0.999), limit),
            us(st.max_ns),
            st.missed_periods,
            st.histogram.overflow
        );
    };
    for t in &m.threads {
        let cpu = t.cpu.map_or_else(
            || t.last_cpu.map_or("-".into(), |c| format!("~{c}")),
            |c| c.to_string(),
        );
        row(
            &mut s,
            t.thread.to_string(),
            cpu,
            t.interval_us.to_string(),
            &t.stats,
        );
    }
    row(&mut s, "all".into(), "".into(), "".into(), &m.total);
    let _ = writeln!(
        s,
        "(latencies in us; cpu ~N: free thread, last seen on CPU N)"
    );

    if !m.total.largest.is_empty() {
        let top: Vec<String> = m
            .total
            .largest
            .iter()
            .take(5)
            .map(|sp| {
                format!(
                    "{} us at {:.3} s (T{})",
                    us(sp.latency_ns),
                    sp.at_ns as f64 / 1e9,
                    sp.thread
                )
            })
            .collect();
        let _ = writeln!(s, "largest: {}", top.join(", "));
    }
    if m.total.window_maxima.len() > 1 {
        let w: Vec<String> = m
            .total
            .window_maxima
            .iter()
            .map(|w| format!("{}s:{}", w.start_s, us(w.max_ns)))
            .collect();
        let _ = writeln!(
            s,
            "max per {} s window: {}",
            config.window.as_secs(),
            w.join(" ")
        );
    }
    for c in interrupts.map_or(&[][..], |i| &i.cpus[..]) {
        let _ = writeln!(s, "{}", interrupt_line(c));
    }
    if let Some(sp) = split {
        let _ = writeln!(s);
        s.push_str(&split_text(sp, limit));
    }
    let _ = writeln!(s);
    let k = &ctx.kernel;
    let _ = writeln!(
        s,
        "kernel: {} ({})",
        k.release.as_deref().unwrap_or("release unknown"),
        k.preemption.describe()
    );
    if let Some(c) = &ctx.cmdline {
        let list =
            |v: &Option<Vec<u32>>| v.as_ref().map_or("no".to_string(), |l| format_cpu_list(l));
        let _ = writeln!(
            s,
            "isolation: isolcpus={} nohz_full={} rcu_nocbs={}",
            list(&c.isolcpus),
            list(&c.nohz_full),
            list(&c.rcu_nocbs)
        );
    }
    if ctx.cpufreq.is_empty() {
        let _ = writeln!(
            s,
            "cpufreq: absent (no governor; the frequency is not visible)"
        );
    } else {
        for f in &ctx.cpufreq {
            let mhz = |k: Option<u64>| k.map_or("?".into(), |v| (v / 1000).to_string());
            let _ = writeln!(
                s,
                "cpufreq: CPU {} {} {} MHz (min {} max {})",
                f.cpu,
                f.governor.as_deref().unwrap_or("?"),
                mhz(f.cur_khz),
                mhz(f.min_khz),
                mhz(f.max_khz)
            );
        }
    }
    let smt = match ctx.smt_active {
        Some(true) => "active",
        Some(false) => "inactive",
        None => "absent",
    };
    let pr = &m.privileges;
    let state = |st: &Step| match st {
        Step::Done => "yes".to_string(),
        Step::NotRequested => "not requested".to_string(),
        Step::Refused(w) => format!("no ({w})"),
    };
    let _ = writeln!(
        s,
        "smt: {smt}; SCHED_FIFO: {}; memory locked: {}; cpu_dma_latency held: {}",
        state(&pr.sched_fifo),
        state(&pr.memory_locked),
        state(&pr.cpu_dma_latency_held)
    );
    let cpu_time: u64 = m.threads.iter().map(|t| t.cpu_time_ns).sum();
    if m.total.count > 0 {
        let _ = writeln!(
            s,
            "measuring threads' CPU time: {:.1} ms, {:.2} us per wake-up",
            cpu_time as f64 / 1e6,
            cpu_time as f64 / m.total.count as f64 / 1000.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format_matches_cyclictest() {
        let l = Live {
            thread: 0,
            tid: 7227,
            cycles: 999,
            act_ns: 12_400,
            min_ns: 3_900,
            max_ns: 773_100,
            sum_ns: 999 * 13_200,
        };
        // Captured from cyclictest 2.40 on this VM.
        assert_eq!(
            cyclictest_line(&l, 80, 1000, false),
            "T: 0 ( 7227) P:80 I:1000 C:    999 Min:      3 Act:   12 Avg:   13 Max:     773"
        );
        // -N: cyclictest's use_nsecs format.
        assert_eq!(
            cyclictest_line(&l, 80, 1000, true),
            "T: 0 ( 7227) P:80 I:1000 C:    999 Min:   3900 Act:   12400 Avg:   13200 Max:  773100"
        );
    }
}
