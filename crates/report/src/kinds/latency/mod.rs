//! `headroom bench latency`: its document (configuration, context, background load,
//! measurement, interrupts, the IRQ/thread split, findings) and what a report shows of it.

/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::DocumentKind;
use crate::document::{Document, DocumentError};
use crate::export::Export;
use crate::summary::{put, CounterRow, IrqRow, Summary, ThreadRow};
use crate::table::Table;
use crate::words::{plural, seconds, step_words};
use model::latency::split::Split;
use model::latency::{Config, LoadSample, MeasuredInterrupts, Measurement};
use model::stress::{StopReport, StressSpec};
use model::system::SystemContext;
use model::Finding;
use serde::{Deserialize, Serialize};

pub mod cyclictest;

/// What `headroom bench latency --json` writes (the envelope aside), read back by report,
/// compare, history and the survey. Fields a document of an earlier version may lack are
/// `#[serde(default)]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LatencyDocument {
    #[serde(default)]
    pub config: Option<Config>,
    /// When the measurement started (Unix time, ms): spike and window times are relative
    /// to it.
    #[serde(default)]
    pub started_unix_ms: u128,
    /// Stopped by SIGINT or SIGTERM before its duration or loop count: the measurement is
    /// what was measured until then.
    #[serde(default)]
    pub interrupted: bool,
    /// What headroom did with the command line (removed flags, defaults it chose).
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub context: Option<SystemContext>,
    /// The background load; null when the run had none.
    #[serde(default)]
    pub stress: Option<StressRecord>,
    #[serde(default)]
    pub load_average: Vec<LoadSample>,
    pub measurement: Measurement,
    /// Device interrupts on the measured CPUs during the measurement, per CPU and source
    /// (absent in documents written before they were sampled).
    #[serde(default)]
    pub interrupts: Option<MeasuredInterrupts>,
    /// `--split`: IRQ against thread latency, what delayed the wake-ups, the explained one
    /// (absent in runs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// The background load of a run: what it was, its workers, how they ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StressRecord {
    pub spec: StressSpec,
    #[serde(default)]
    pub pids: Vec<u32>,
    #[serde(default)]
    pub stop: Option<StopReport>,
}
use model::latency::Affinity;
use model::units::{tenths_us, whole_us};

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
    kernel: &mut Option<String>,
    governor: &mut Option<String>,
) -> Result<(), DocumentError> {
    let l = <LatencyDocument as super::KindDocument>::read(doc, origin)?;
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
        irq: None,
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
    if let Some(sp) = &l.split {
        for t in &mut s.threads {
            let st = if t.name == "all" {
                Some(&sp.total)
            } else {
                sp.threads
                    .iter()
                    .find(|x| x.thread.map(|n| n.to_string()) == Some(t.name.clone()))
            };
            t.irq = st.map(IrqRow::of);
        }
        let source = match sp.source {
            model::latency::split::SplitSource::Tracepoints => "tracepoints",
            model::latency::split::SplitSource::Timerlat => "timerlat tracer",
        };
        put(
            s,
            "IRQ/thread split",
            format!(
                "{source}: {} of {} matched",
                sp.total.matched,
                plural(sp.total.wakeups, "wake-up", "wake-ups")
            ),
        );
        s.parts.extend(
            split_tables(sp)
                .into_iter()
                .map(|t| crate::summary::Part::table(crate::summary::Place::UnderLatency, t)),
        );
    }
    Ok(())
}

/// The split's tables for the reports: what delayed the wake-ups, summed over the run, and
/// the explained wake-up part by part (as the terminal prints them).
fn split_tables(sp: &model::latency::split::Split) -> Vec<(String, Table)> {
    use crate::explain;
    let mut out = Vec::new();
    if !sp.causes.is_empty() {
        let rows = sp
            .causes
            .iter()
            .map(|c| {
                vec![
                    explain::source(&c.source),
                    c.wakeups.to_string(),
                    explain::us2(c.total_ns as i64),
                    explain::us2(c.max_ns as i64),
                ]
            })
            .collect();
        out.push((
            "What delayed the wake-ups after the timer expired (summed over the run)".to_string(),
            Table::new(
                &[
                    ("Source", false),
                    ("Wake-ups", true),
                    ("Total (us)", true),
                    ("Most in one (us)", true),
                ],
                rows,
            ),
        ));
    }
    let explained = match (&sp.analysis, sp.largest.first()) {
        (Some(a), _) => Some((
            format!(
                "The first wake-up at or above --analyze {} us, explained",
                sp.analyze_above_us.unwrap_or_default()
            ),
            a,
        )),
        (None, Some(a)) => Some(("The largest wake-up, explained".to_string(), a)),
        (None, None) => None,
    };
    if let Some((title, a)) = explained {
        let mut rows: Vec<Vec<String>> = explain::analysis_parts(a)
            .into_iter()
            .map(|p| {
                vec![
                    if p.sub {
                        format!("  {}", p.label)
                    } else {
                        p.label
                    },
                    explain::us2(p.ns),
                    if p.sub {
                        String::new()
                    } else {
                        explain::share_of(p.ns, a.thread_latency_ns)
                    },
                    p.note,
                ]
            })
            .collect();
        rows.push(vec![
            "thread latency".into(),
            explain::us2(a.thread_latency_ns as i64),
            "(100 %)".into(),
            format!(
                "wake-up to switch {} us",
                explain::us2(a.wakeup_to_switch_ns as i64)
            ),
        ]);
        out.push((
            format!("{title}: {}", explain::analysis_title(a)),
            Table::new(
                &[
                    ("Part", false),
                    ("Time (us)", true),
                    ("Share", true),
                    ("", false),
                ],
                rows,
            ),
        ));
    }
    out
}

/// `bench latency` as every report reads it.
pub struct LatencyKind;

impl super::Kind for LatencyKind {
    fn kind(&self) -> DocumentKind {
        <LatencyDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["measurement"]
    }

    fn exports(&self) -> &'static [Export] {
        &[
            Export::OpenMetrics,
            Export::Lava,
            Export::Kcidb,
            Export::CyclictestHistogram,
            Export::CyclictestJson,
        ]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s, &mut facts.kernel, &mut facts.governor)
    }
}

impl super::KindDocument for LatencyDocument {
    const KIND: DocumentKind = DocumentKind::Latency;

    fn text(&self, how: &super::Text<'_>) -> String {
        match (&self.config, &self.context) {
            (Some(config), Some(ctx)) => text::render(self, config, ctx, how),
            // Written without the run's configuration or context: what every kind's
            // summary shows.
            _ => super::summary_text(self, how),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::LatencyDocument;
    use crate::kinds::{KindDocument, Text};
    use model::latency::{
        self, Affinity, Config, CpuInterrupts, LoadSample, MeasuredInterrupts, Measurement, Step,
    };
    use model::procfs::LoadAverage;
    use std::time::Duration;

    /// The text of a latency document made of these parts, as `bench latency` prints it.
    fn text_of(
        config: &Config,
        ctx: &model::system::SystemContext,
        m: &Measurement,
        load: Option<&LoadSample>,
        interrupts: Option<&MeasuredInterrupts>,
        nanoseconds: bool,
    ) -> String {
        let doc = LatencyDocument {
            config: Some(config.clone()),
            context: Some(ctx.clone()),
            measurement: m.clone(),
            load_average: load.into_iter().cloned().collect(),
            interrupts: interrupts.cloned(),
            started_unix_ms: 0,
            interrupted: false,
            notes: Vec::new(),
            stress: None,
            split: None,
            findings: Vec::new(),
        };
        doc.text(&Text {
            nanoseconds,
            ..Text::default()
        })
    }

    /// One thread's stats: `n` wake-ups at `at_us`, one spike of `spike_us` at 1.5 s.
    fn stats(thread: usize, n: u64, at_us: usize, spike_us: u64) -> latency::Stats {
        let mut counts = vec![0u64; 100];
        counts[at_us] = n - 1;
        let (bucket, overflow) = match usize::try_from(spike_us) {
            Ok(b) if b < 100 => (Some(b), 0),
            _ => (None, 1),
        };
        if let Some(b) = bucket {
            counts[b] += 1;
        }
        let spike = latency::Spike {
            latency_ns: spike_us * 1000 + 400,
            at_ns: 1_500_000_000,
            cycle: 1500,
            thread,
        };
        latency::Stats {
            count: n,
            min_ns: at_us as u64 * 1000 + 200,
            max_ns: spike.latency_ns,
            avg_ns: at_us as f64 * 1000.0 + 700.0,
            act_ns: at_us as u64 * 1000 + 300,
            missed_periods: 0,
            histogram: latency::Histogram { counts, overflow },
            largest: vec![spike],
            window_maxima: vec![
                latency::WindowMax {
                    start_s: 0,
                    max_ns: at_us as u64 * 1000,
                    count: n / 2,
                },
                latency::WindowMax {
                    start_s: 1,
                    max_ns: spike.latency_ns,
                    count: n / 2,
                },
            ],
            overflow_cycles: if overflow > 0 {
                vec![spike.cycle]
            } else {
                vec![]
            },
        }
    }

    /// The terminal text of a latency run, pinned byte for byte before it moves to report.
    #[test]
    fn text_of_a_two_thread_run() {
        let ctx = testsupport::latency::context("rt-board-handmade");
        let config = Config {
            threads: 2,
            affinity: Affinity::Pinned(vec![0, 3]),
            histogram_limit_us: 100,
            window: Duration::from_secs(1),
            ..Config::default()
        };
        let threads: Vec<latency::ThreadResult> = [(0, 0, 12, 57), (1, 3, 8, 140)]
            .into_iter()
            .map(|(t, cpu, at, spike)| latency::ThreadResult {
                thread: t,
                tid: 7000 + t as i32,
                cpu: Some(cpu),
                last_cpu: Some(cpu),
                priority: 80,
                interval_us: 1000 + 500 * t as u64,
                stats: stats(t, 2000, at, spike),
                cpu_time_ns: 9_000_000,
                cpu_time_per_wakeup_ns: 4500.0,
            })
            .collect();
        let total = latency::merge(&threads.iter().map(|t| &t.stats).collect::<Vec<_>>(), 5);
        let m = Measurement {
            threads,
            total,
            ..testsupport::latency::measurement(Step::Done, 0)
        };
        let load = LoadSample {
            at_s: 2.0,
            load: LoadAverage {
                one: 0.5,
                five: 0.25,
                fifteen: 0.125,
                runnable: 2,
                tasks: 311,
            },
        };
        insta::assert_snapshot!(text_of(&config, &ctx, &m, Some(&load), None, false));
        insta::assert_snapshot!(
            "text_of_a_two_thread_run_in_ns",
            text_of(
                &config,
                &ctx,
                &testsupport::latency::measurement(Step::Refused("EPERM".into()), 3),
                None,
                None,
                true
            )
        );
        // The interrupts that arrived on the measured CPUs during the measurement: one line
        // per CPU, the three largest sources named.
        let interrupts = MeasuredInterrupts {
            elapsed_s: 2.0,
            cpus: vec![
                CpuInterrupts::new(0, Vec::new(), 2.0),
                CpuInterrupts::new(
                    3,
                    vec![
                        (45, "nvme0q1".into(), 79),
                        (46, "nvme0q2".into(), 3),
                        (51, "eth0-rx-0".into(), 400),
                        (52, "eth0-tx-0".into(), 2),
                    ],
                    2.0,
                ),
            ],
        };
        let text = text_of(&config, &ctx, &m, Some(&load), Some(&interrupts), false);
        insta::assert_snapshot!("text_of_a_two_thread_run_with_interrupts", text);
        assert!(text.contains(
            "interrupts on CPU 3: 242.0/s (51 eth0-rx-0 200.0/s, 45 nvme0q1 39.5/s, \
             46 nvme0q2 1.5/s, ...)\n"
        ));
    }
}
