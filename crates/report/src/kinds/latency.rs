//! `headroom bench latency`: what a report shows of a latency run.

use crate::document::{Document, DocumentError};
use crate::summary::{put, seconds, step_words, CounterRow, Summary, ThreadRow};
use crate::views::LatencyView;
use model::latency::Affinity;
use model::units::{tenths_us, whole_us};

/// The run's facts, tests and rows for every renderer ([`Summary::of`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
    kernel: &mut Option<String>,
    governor: &mut Option<String>,
) -> Result<(), DocumentError> {
    let l: LatencyView = doc.view(origin)?;
    if let Some(ctx) = &l.context {
        *kernel = kernel.take().or(ctx.kernel.release.clone());
        let preemption = ctx.kernel.preemption.name();
        s.context.push(("preemption".into(), preemption.into()));
        let mut govs: Vec<String> = ctx
            .cpufreq
            .iter()
            .filter_map(|c| c.governor.clone())
            .collect();
        govs.sort();
        govs.dedup();
        if !govs.is_empty() {
            *governor = Some(govs.join(", "));
        }
    }
    if let Some(c) = &l.config {
        put(s, "threads", c.threads.to_string());
        let affinity = match &c.affinity {
            Affinity::Free => "free".to_string(),
            Affinity::Pinned(cpus) => {
                format!("pinned to CPUs {}", model::units::format_cpu_list(cpus))
            }
        };
        put(s, "affinity", affinity);
        put(s, "interval", format!("{} us", c.interval.as_micros()));
        put(s, "distance", format!("{} us", c.distance.as_micros()));
        put(s, "priority", c.priority.to_string());
        if let Some(d) = c.limits.duration {
            put(s, "duration", seconds(d.as_secs_f64()));
        }
        if let Some(n) = c.limits.loops {
            put(s, "loops", n.to_string());
        }
        let h = c.histogram_limit_us;
        put(s, "histogram limit", format!("{h} us"));
        s.histogram_limit_us = Some(h);
    }
    if let Some(ctx) = &l.context {
        if let Some(c) = &ctx.cmdline {
            let list = |v: &Option<Vec<u32>>| {
                v.as_deref()
                    .map_or("no".into(), model::units::format_cpu_list)
            };
            put(
                s,
                "isolation",
                format!(
                    "isolcpus={} nohz_full={} rcu_nocbs={}",
                    list(&c.isolcpus),
                    list(&c.nohz_full),
                    list(&c.rcu_nocbs)
                ),
            );
        }
        let smt = match ctx.smt_active {
            Some(true) => "active",
            Some(false) => "inactive",
            None => "absent",
        };
        put(s, "SMT", smt.to_string());
    }
    let p = &l.measurement.privileges;
    for (key, step) in [
        ("SCHED_FIFO", &p.sched_fifo),
        ("memory locked", &p.memory_locked),
        ("cpu_dma_latency held", &p.cpu_dma_latency_held),
    ] {
        put(s, key, step_words(step));
    }
    let cpu_ns: u64 = l.measurement.threads.iter().map(|t| t.cpu_time_ns).sum();
    let wakeups = l.measurement.total.count;
    if cpu_ns > 0 && wakeups > 0 {
        put(
            s,
            "measuring threads' CPU time",
            format!(
                "{:.1} ms, {:.2} us per wake-up",
                cpu_ns as f64 / 1e6,
                cpu_ns as f64 / wakeups as f64 / 1000.0
            ),
        );
    }
    {
        let total = &l.measurement.total;
        // The terminal's lines under its table, truncated the same way.
        let top: Vec<String> = total
            .largest
            .iter()
            .take(5)
            .map(|x| {
                format!(
                    "{} us at {:.3} s (T{})",
                    whole_us(x.latency_ns),
                    x.at_ns as f64 / 1e9,
                    x.thread
                )
            })
            .collect();
        if !top.is_empty() {
            s.latency_lines
                .push(format!("Largest: {}.", top.join(", ")));
        }
        if total.window_maxima.len() > 1 {
            let w: Vec<String> = total
                .window_maxima
                .iter()
                .map(|w| format!("{}s:{}", w.start_s, whole_us(w.max_ns)))
                .collect();
            let window = l.config.as_ref().map(|c| c.window.as_secs_f64());
            let per = window.map(|w| format!(" {w} s")).unwrap_or_default();
            s.latency_lines
                .push(format!("Max (us) per{per} window: {}.", w.join(" ")));
        }
    }
    // The interrupts on each measured CPU, and its largest sources, as rates:
    // compare lines them up with the other counters.
    for c in l.interrupts.iter().flat_map(|i| &i.cpus) {
        let row = |name: String, v: f64| CounterRow {
            name,
            value: Some(v),
            unit: "/s".into(),
            running_percent: None,
            status: "counted".into(),
        };
        s.counters
            .push(row(format!("interrupts on CPU {}", c.cpu), c.per_second));
        for x in c.sources.iter().take(3) {
            s.counters.push(row(
                format!("interrupts on CPU {} from {} {}", c.cpu, x.irq, x.name),
                x.per_second,
            ));
        }
    }
    let stress = l
        .stress
        .as_ref()
        .map_or("none".to_string(), |x| x.spec.spec());
    put(s, "stress", stress);
    let e = l.measurement.elapsed_ns;
    put(s, "measured for", format!("{:.1} s", e as f64 / 1e9));
    put(s, "stopped by", l.measurement.stopped_by.as_str().into());
    let row = |name: String, cpu, st: &model::latency::Stats| ThreadRow {
        name,
        cpu,
        count: st.count,
        min_us: whole_us(st.min_ns),
        avg_us: tenths_us(st.avg_ns),
        max_us: whole_us(st.max_ns),
        p99_us: st.histogram.quantile_us(0.99),
        p99_9_us: st.histogram.quantile_us(0.999),
        missed: st.missed_periods,
        histogram: st.histogram.buckets(),
        overflow: st.histogram.overflow,
    };
    for t in &l.measurement.threads {
        let cpu = t
            .cpu
            .map(|c| c.to_string())
            .or(t.last_cpu.map(|c| format!("~{c}")));
        s.threads.push(row(t.thread.to_string(), cpu, &t.stats));
    }
    // `all`, as the terminal prints it, also under a single thread.
    s.threads
        .push(row("all".into(), None, &l.measurement.total));
    Ok(())
}
