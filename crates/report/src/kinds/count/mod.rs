//! The result of `headroom count` (document kind `count`) and its terminal renderings,
//! shaped like `perf stat`'s: the same columns (value, unit, event, multiplexing fraction),
//! `<not counted>` / `<not supported>`, the elapsed time, `-x SEP` CSV and `-I` lines.

pub mod perf;
pub use perf::{
    csv_line, interval_header, interval_lines, json_line, render_csv, render_json_lines, LineFormat,
};
pub mod text;
pub use text::{event_line, render_beside};
pub mod findings;
pub use findings::{no_pmu_note, no_root_port_note, root_port_pmu_findings, RootPortFact};

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::export::Export;
use crate::summary::{CounterRow, Summary};
use model::pmu::{EventListing, PmuLink, PmuListing};
use model::Finding;
use serde::{Deserialize, Serialize};

/// Whether an event produced a number, in perf's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountStatus {
    Counted,
    /// Opened, never scheduled: `<not counted>`.
    NotCounted,
    /// The kernel or hardware has no such event: `<not supported>`.
    NotSupported,
}

/// One event's total.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountedEvent {
    /// As typed (or `name=`).
    pub name: String,
    pub pmu: String,
    pub status: CountStatus,
    /// Scaled (multiplexing and the event's unit scale); `None` unless counted.
    #[serde(default)]
    pub value: Option<f64>,
    /// The counter's own value before any scaling.
    #[serde(default)]
    pub raw: Option<u64>,
    #[serde(default)]
    pub unit: Option<String>,
    /// time_running / time_enabled in percent (< 100: multiplexed and extrapolated).
    #[serde(default)]
    pub running_percent: Option<f64>,
    #[serde(default)]
    pub enabled_ns: u64,
    #[serde(default)]
    pub running_ns: u64,
    /// Why it was not counted or not supported.
    #[serde(default)]
    pub reason: Option<String>,
    /// A conversion the user should know of (16-byte units ...).
    #[serde(default)]
    pub note: Option<String>,
    /// perf's generic name of the event when perf derives a metric from it (`task-clock`,
    /// `cpu-clock`, `cycles`, `instructions`, ...: [`GENERIC_METRICS`]), whatever it was typed
    /// as (`cs`, `task-clock:u`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic: Option<String>,
}

/// The events of one `-I` interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountInterval {
    /// Seconds since counting started, at the end of the interval.
    pub time_s: f64,
    pub events: Vec<CountedEvent>,
}

/// Interrupts of one device during the run (`--irq`, and every benchmark's path).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IrqRate {
    /// The device as the user named it (a PCI address or a block/net name).
    pub device: String,
    /// Its interrupt lines (MSI/MSI-X vectors from sysfs `msi_irqs/`, or the INTx `irq`).
    pub irqs: Vec<u32>,
    /// The action names of those lines in /proc/interrupts.
    #[serde(default)]
    pub names: Vec<String>,
    pub count: u64,
    pub per_second: f64,
    /// The time between the two readings of /proc/interrupts, s (0 in documents older than
    /// this field: unknown).
    #[serde(default)]
    pub seconds: f64,
}

/// Runs shorter than this give an interrupt count without a per-second rate: a rate over a
/// millisecond extrapolates one or two interrupts (1 in 1 ms reads "1000 /s").
pub const MIN_RATE_SECONDS: f64 = 1.0;

impl IrqRate {
    /// Whether the window was long enough for [`IrqRate::per_second`] to mean something (a
    /// document that does not say keeps its rate).
    pub fn has_rate(&self) -> bool {
        self.seconds == 0.0 || self.seconds >= MIN_RATE_SECONDS
    }

    /// `# 840.0 /sec`, or the count over the short window it was taken in.
    fn rate_comment(&self) -> String {
        if self.has_rate() {
            format!("# {:.1} /sec", self.per_second)
        } else {
            format!(
                "# {} in {}: no rate from a run under {MIN_RATE_SECONDS} s",
                self.count,
                duration_words(self.seconds)
            )
        }
    }
}

/// `1.07 ms`, `0.53 s`.
fn duration_words(s: f64) -> String {
    if s < 0.1 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// The body of a `count` result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountDocument {
    /// What perf prints after "Performance counter stats for": `'dd if=...'`, `'system
    /// wide'`, `'CPU(s) 0-1'`.
    pub target: String,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// `process` or `system_wide`.
    pub scope: String,
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    pub elapsed_s: f64,
    #[serde(default)]
    pub user_s: Option<f64>,
    #[serde(default)]
    pub sys_s: Option<f64>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    pub events: Vec<CountedEvent>,
    #[serde(default)]
    pub intervals: Vec<CountInterval>,
    #[serde(default)]
    pub interrupts: Vec<IrqRate>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The generic events perf derives a metric from other than "/sec"
/// (tools/perf/util/stat-shadow.c of perf 6.1, perf_stat__print_shadow_stats), by perf's
/// name of each.
pub const GENERIC_METRICS: [&str; 9] = [
    "task-clock",
    "cpu-clock",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
    "cache-references",
    "cache-misses",
    "stalled-cycles-frontend",
];

/// What perf prints in the metric column of an event (perf 6.1's stat-shadow.c and the
/// print_metric_std/csv/json of stat-display.c).
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// A number, `text` as perf formats it for the text column (`   0.011`, `   3.55%`),
    /// and its unit (`CPUs utilized`, `K/sec`, `of all branches`).
    Value {
        value: f64,
        text: String,
        unit: String,
    },
    /// perf names the metric but has no number (the other operand was not counted): the
    /// text and CSV columns stay empty, the JSON line has 0 and the unit.
    Named(&'static str),
    /// perf derives no metric for the event (its JSON line says `"(null)"`).
    Absent,
    /// The event has no count (`<not counted>`, `<not supported>`): the JSON unit is "".
    NoCount,
}

/// The run's numbers the metrics are computed from: the wall time and the counts of the
/// events other events are set against, as perf 6.1 keeps them (runtime_stat).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricBase {
    /// Wall time of the run, or perf's nominal `-I` period for an interval, ns
    /// (walltime_nsecs_stats).
    pub wall_ns: f64,
    /// The mean of the counted clocks (task-clock, cpu-clock), ns (STAT_NSECS).
    pub clock_ns: Option<f64>,
    pub cycles: Option<f64>,
    pub branches: Option<f64>,
    pub cache_refs: Option<f64>,
}

impl MetricBase {
    /// From the events of one run (or one interval) and its wall time in seconds.
    pub fn of(events: &[CountedEvent], wall_s: f64) -> MetricBase {
        let counted = |name: &str| -> Vec<f64> {
            events
                .iter()
                .filter(|e| e.status == CountStatus::Counted && e.generic.as_deref() == Some(name))
                .filter_map(|e| e.value)
                .collect()
        };
        // perf averages what it saw of each (avg_stats): two clocks give their mean.
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let mut clocks = counted("task-clock");
        clocks.extend(counted("cpu-clock"));
        MetricBase {
            wall_ns: wall_s * 1e9,
            // The clocks' values are msec (perf's scale 1e-6 of their nanoseconds).
            clock_ns: mean(clocks.into_iter().map(|ms| ms * 1e6).collect()),
            cycles: mean(counted("cycles")),
            branches: mean(counted("branches")),
            cache_refs: mean(counted("cache-references")),
        }
    }
}

/// perf's convert_unit_double (tools/perf/util/units.c): K, M, G above each 1000.
fn unit_prefixed(mut v: f64) -> (f64, &'static str) {
    let mut unit = "";
    for u in ["K", "M", "G"] {
        if v > 1000.0 {
            v /= 1000.0;
            unit = u;
        }
    }
    (v, unit)
}

/// The metric perf prints beside `e`, given the run's [`MetricBase`].
pub fn metric(e: &CountedEvent, base: &MetricBase) -> Metric {
    let (CountStatus::Counted, Some(v)) = (e.status, e.value) else {
        return Metric::NoCount;
    };
    let value = |value: f64, text: String, unit: &str| Metric::Value {
        value,
        text,
        unit: unit.to_string(),
    };
    let pct = |v: f64, unit: &'static str| value(v, format!("{v:7.2}%"), unit);
    match e.generic.as_deref() {
        Some("instructions") => match base.cycles {
            Some(c) if c != 0.0 => {
                let r = v / c;
                value(r, format!("{r:7.2} "), "insn per cycle")
            }
            _ => Metric::Named("insn per cycle"),
        },
        Some("branch-misses") => match base.branches {
            Some(b) => pct(
                if b != 0.0 { v / b * 100.0 } else { 0.0 },
                "of all branches",
            ),
            None => Metric::Named("of all branches"),
        },
        Some("cache-misses") => match base.cache_refs {
            Some(t) => {
                let r = if t != 0.0 { v * 100.0 / t } else { 0.0 };
                value(r, format!("{r:8.3} %"), "of all cache refs")
            }
            None => Metric::Named("of all cache refs"),
        },
        Some("stalled-cycles-frontend") => {
            let r = match base.cycles {
                Some(c) if c != 0.0 => v / c * 100.0,
                _ => 0.0,
            };
            pct(r, "frontend cycles idle")
        }
        Some("cycles") => match base.clock_ns {
            Some(ns) if ns != 0.0 => {
                let r = v / ns;
                value(r, format!("{r:8.3}"), "GHz")
            }
            // perf's own spelling when it has no clock.
            _ => Metric::Named("Ghz"),
        },
        Some("task-clock" | "cpu-clock") => {
            if base.wall_ns > 0.0 {
                // msec over the wall time in msec.
                let r = v / (base.wall_ns * 1e-6);
                value(r, format!("{r:8.3}"), "CPUs utilized")
            } else {
                Metric::Named("CPUs utilized")
            }
        }
        _ => match base.clock_ns {
            Some(ns) => {
                let (r, prefix) = if ns != 0.0 {
                    unit_prefixed(1e9 * v / ns)
                } else {
                    (0.0, "")
                };
                value(r, format!("{r:8.3}"), &format!("{prefix}/sec"))
            }
            None => Metric::Absent,
        },
    }
}

/// The metric column of perf's text: ` # ` and the number and unit in 35 columns (perf's
/// METRIC_LEN), or as many blanks.
fn metric_column(m: &Metric) -> String {
    match m {
        Metric::Value { text, unit, .. } => format!(" # {text:>8} {unit:<23}"),
        _ => " ".repeat(35),
    }
}

/// The time running of the time enabled, percent, as perf's print_running: 100 unless the
/// two differ (a `<not counted>` event that was enabled and never ran: 0), and 100 for
/// `<not supported>`.
fn running_pct(e: &CountedEvent) -> f64 {
    match e.status {
        CountStatus::Counted => e.running_percent.unwrap_or(100.0),
        CountStatus::NotCounted if e.enabled_ns > 0 && e.running_ns != e.enabled_ns => {
            100.0 * e.running_ns as f64 / e.enabled_ns as f64
        }
        _ => 100.0,
    }
}

/// What `headroom count --list --json` writes (the envelope aside, kind `pmu_list`): the
/// PMUs with their events and formats, the other event sources, and the findings on the
/// root ports' PMUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmuListDocument {
    pub pmus: Vec<PmuListing>,
    #[serde(flatten)]
    pub events: EventListing,
    pub findings: Vec<Finding>,
}

/// What a report shows of `count --list --json`: every PMU (its type, the CPUs it counts on,
/// the root ports a PCIe PMU counts, its terms and events), then the events of no sysfs PMU
/// (perf's software and generic hardware names, the tracepoints), as `count --list` prints
/// them; the findings on the root ports' PMUs are read by every kind's view.
pub(crate) fn summarize_list(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let l = <PmuListDocument as super::KindDocument>::read(doc, origin)?;
    let dash = crate::table::dash;
    let rows = l
        .pmus
        .iter()
        .map(|p| {
            let link = p.link.as_ref().map_or_else(dash, |l| {
                if l.root_ports.is_empty() {
                    format!("{}: {}", l.family, l.covers)
                } else {
                    format!(
                        "{}: root port {} ({})",
                        l.family,
                        l.root_ports.join(", "),
                        l.covers
                    )
                }
            });
            let events: Vec<String> = p
                .events
                .iter()
                .map(|e| format!("{}/{e}/", p.name))
                .collect();
            let list = |v: &[String]| {
                if v.is_empty() {
                    dash()
                } else {
                    v.join(", ")
                }
            };
            vec![
                p.name.clone(),
                p.type_id.to_string(),
                p.cpumask
                    .as_deref()
                    .map_or_else(dash, model::units::format_cpu_list),
                link,
                list(&p.formats),
                list(&events),
            ]
        })
        .collect();
    s.list(crate::summary::counted_table(
        "PMUs",
        ("PMU", "PMUs"),
        "",
        &[
            ("PMU", false),
            ("Type", true),
            ("Counts on CPU", false),
            ("PCIe", false),
            ("Terms", false),
            ("Events", false),
        ],
        rows,
    ));
    // perf list's tags, so a line reads the same in both.
    let mut rows = Vec::new();
    for (names, tag) in [
        (&l.events.software, "Software event"),
        (&l.events.hardware, "Hardware event"),
        (&l.events.tracepoints, "Tracepoint event"),
    ] {
        rows.extend(names.iter().map(|n| vec![n.clone(), tag.to_string()]));
    }
    s.list(crate::summary::counted_table(
        "Events of no sysfs PMU",
        ("event", "events"),
        "",
        &[("Event", false), ("Kind", false)],
        rows,
    ));
    if let Some(why) = &l.events.tracepoints_missing {
        s.notes.push(format!("tracepoints: {why}"));
    }
    Ok(())
}

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let c = <CountDocument as super::KindDocument>::read(doc, origin)?;
    s.target = Some(c.target.trim_matches('\'').to_string());
    s.context.push(("scope".into(), c.scope.replace('_', " ")));
    for e in &c.events {
        s.counters.push(CounterRow {
            name: e.name.clone(),
            value: e.value,
            unit: e.unit.clone().unwrap_or_default(),
            running_percent: e.running_percent,
            status: match e.status {
                CountStatus::Counted => "counted",
                CountStatus::NotCounted => "<not counted>",
                CountStatus::NotSupported => "<not supported>",
            }
            .to_string(),
        });
    }
    // /proc/interrupts counts the device on every CPU, whoever caused them; a run
    // too short for a rate keeps its count.
    for r in &c.interrupts {
        let (value, unit) = if r.has_rate() {
            (r.per_second, "/s")
        } else {
            (r.count as f64, "")
        };
        s.counters.push(CounterRow {
            name: format!("interrupts of {}, system-wide", r.device),
            value: Some(value),
            unit: unit.into(),
            running_percent: None,
            status: "counted".into(),
        });
    }
    Ok(())
}

/// `headroom count` as every report reads it.
pub struct CountKind;

impl super::Kind for CountKind {
    fn kind(&self) -> DocumentKind {
        <CountDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["events"]
    }

    fn exports(&self) -> &'static [Export] {
        &[
            Export::OpenMetrics,
            Export::Lava,
            Export::Kcidb,
            Export::PerfCsv,
            Export::PerfJson,
        ]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s)
    }

    /// Its events are its result, not counters sampled beside an engine.
    fn counters_beside(&self) -> bool {
        false
    }
}

/// `count --list` as every report reads it.
pub struct PmuListKind;

impl super::Kind for PmuListKind {
    fn kind(&self) -> DocumentKind {
        <PmuListDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["pmus"]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize_list(doc, origin, s)
    }

    /// One per PMU found.
    fn own_cases(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        list_cases(doc, origin)
    }
}

impl super::KindDocument for CountDocument {
    const KIND: DocumentKind = DocumentKind::Count;

    fn text(&self, _how: &super::Text<'_>) -> String {
        text::render_text(self)
    }
}

impl super::KindDocument for PmuListDocument {
    const KIND: DocumentKind = DocumentKind::PmuList;

    fn text(&self, _how: &super::Text<'_>) -> String {
        text::render_list(&self.pmus, &self.events, &self.findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::count::text::render_text;

    fn ev(name: &str, value: f64, unit: Option<&str>, pct: f64) -> CountedEvent {
        CountedEvent {
            name: name.into(),
            pmu: "software".into(),
            status: CountStatus::Counted,
            value: Some(value),
            raw: Some(value as u64),
            unit: unit.map(str::to_string),
            running_percent: Some(pct),
            enabled_ns: 1000,
            running_ns: (pct * 10.0) as u64,
            reason: None,
            note: None,
            generic: None,
        }
    }

    #[test]
    fn perf_shaped_lines() {
        // perf 6.1 on this VM: "              3.47 msec task-clock" and
        // "                24      context-switches".
        let w = 4;
        let none = Metric::Absent;
        assert_eq!(
            event_line(&ev("task-clock", 3.4712, Some("msec"), 100.0), w, &none),
            "              3.47 msec task-clock"
        );
        assert_eq!(
            event_line(&ev("context-switches", 24.0, None, 100.0), w, &none),
            "                24      context-switches"
        );
        let m = event_line(&ev("cs", 1600.0, None, 62.5), w, &none);
        assert!(m.starts_with("              1600      cs"), "{m}");
        assert!(m.ends_with("  (62.50%)"), "{m}");
        let mut ns = ev("cycles", 0.0, None, 100.0);
        ns.status = CountStatus::NotSupported;
        assert_eq!(
            event_line(&ns, w, &Metric::NoCount),
            "   <not supported>      cycles"
        );
        // perf -x,: "<not supported>,,cycles,0,100.00,,"
        ns.running_ns = 0;
        assert_eq!(
            csv_line(&ns, ",", &Metric::NoCount),
            "<not supported>,,cycles,0,100.00,,"
        );
        assert_eq!(
            csv_line(&ev("task-clock", 0.86, Some("msec"), 100.0), ",", &none),
            "0.86,msec,task-clock,1000,100.00,,"
        );
    }

    fn generic(mut e: CountedEvent, name: &str) -> CountedEvent {
        e.generic = Some(name.to_string());
        e
    }

    /// perf 6.1's lines on this VM (`perf stat -e task-clock,cs,page-faults -- sleep 0.1`,
    /// its -x, and -j), their numbers put in.
    #[test]
    fn derived_columns_are_perfs() {
        let clock = generic(ev("task-clock", 1.137, Some("msec"), 100.0), "task-clock");
        let cs = ev("cs", 1.0, None, 100.0);
        let faults = ev("page-faults", 75.0, None, 100.0);
        let events = vec![clock.clone(), cs.clone(), faults.clone()];
        let base = MetricBase::of(&events, 0.102);
        let w = 4;
        assert_eq!(
            event_line(&clock, w, &metric(&clock, &base)),
            "              1.14 msec task-clock                       #    0.011 CPUs utilized"
        );
        assert_eq!(
            event_line(&cs, w, &metric(&cs, &base)),
            "                 1      cs                               #  879.507 /sec"
        );
        assert_eq!(
            event_line(&faults, w, &metric(&faults, &base)),
            "                75      page-faults                      #   65.963 K/sec"
        );
        // "1.17,msec,task-clock,1165854,100.00,0.391,CPUs utilized" and "48,,page-faults,...,92.531,K/sec".
        assert!(
            csv_line(&clock, ",", &metric(&clock, &base)).ends_with(",100.00,0.011,CPUs utilized")
        );
        assert!(csv_line(&faults, ",", &metric(&faults, &base)).ends_with(",100.00,65.963,K/sec"));
        // Without a clock perf derives nothing: "1,,context-switches,998622,100.00,," and
        // `"metric-value" : 0.000000, "metric-unit" : "(null)"`.
        let alone = MetricBase::of(std::slice::from_ref(&cs), 0.1);
        assert_eq!(metric(&cs, &alone), Metric::Absent);
        assert!(csv_line(&cs, ",", &metric(&cs, &alone)).ends_with(",100.00,,"));
        assert!(json_line(&cs, &metric(&cs, &alone), None).ends_with(
            r#""pcnt-running" : 100.00, "metric-value" : 0.000000, "metric-unit" : "(null)"}"#
        ));
        let j = json_line(&clock, &metric(&clock, &base), Some(0.100507530));
        assert!(
            j.starts_with(r#"{"interval" : 0.100507530, "counter-value" : "1.137000", "unit" : "msec", "event" : "task-clock", "event-runtime" : 1000, "pcnt-running" : 100.00, "metric-value" : 0.011147, "metric-unit" : "CPUs utilized"}"#),
            "{j}"
        );
        // Branch misses against branches, instructions against cycles, cycles against the clock.
        let br = generic(ev("branches", 1000.0, None, 100.0), "branches");
        let miss = generic(ev("branch-misses", 35.5, None, 100.0), "branch-misses");
        let cyc = generic(ev("cycles", 2_274_000.0, None, 100.0), "cycles");
        let ins = generic(ev("instructions", 1_137_000.0, None, 100.0), "instructions");
        let all = vec![clock.clone(), br, miss.clone(), cyc.clone(), ins.clone()];
        let b = MetricBase::of(&all, 0.102);
        assert!(event_line(&miss, w, &metric(&miss, &b)).ends_with("#    3.55% of all branches"));
        assert!(event_line(&ins, w, &metric(&ins, &b)).ends_with("#    0.50  insn per cycle"));
        assert!(event_line(&cyc, w, &metric(&cyc, &b)).ends_with("#    2.000 GHz"));
        assert_eq!(
            csv_line(&miss, ",", &metric(&miss, &b)).split(',').nth(5),
            Some("3.55")
        );
        let no_branches = MetricBase::of(std::slice::from_ref(&miss), 0.1);
        assert_eq!(
            metric(&miss, &no_branches),
            Metric::Named("of all branches")
        );
    }

    #[test]
    fn document_round_trips() {
        let d = CountDocument {
            target: "'true'".into(),
            command: Some(vec!["true".into()]),
            scope: "process".into(),
            cpus: None,
            elapsed_s: 0.001,
            user_s: Some(0.0),
            sys_s: Some(0.001),
            exit_code: Some(0),
            events: vec![ev("cs", 1.0, None, 100.0)],
            intervals: vec![],
            interrupts: vec![],
            findings: vec![],
            notes: vec![],
        };
        let v = serde_json::to_value(&d).unwrap();
        let back: CountDocument = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
        let t = render_text(&d);
        assert!(t.contains(" Performance counter stats for 'true':"), "{t}");
        assert!(t.contains("       0.001000000 seconds time elapsed"), "{t}");
    }
}

/// What was counted, as perf stat names it in `Performance counter stats for ...`: the
/// command (`'sleep 1'`), the CPUs given with -C (`'CPU(s) 0-3'`), or `'system wide'` (-a).
pub fn target_of(command: &[String], cpus: Option<&[u32]>, all_cpus: bool) -> String {
    match (command.is_empty(), cpus, all_cpus) {
        (false, None, _) => format!("'{}'", command.join(" ")),
        (_, Some(c), false) => format!("'CPU(s) {}'", model::units::format_cpu_list(c)),
        _ => "'system wide'".to_string(),
    }
}

/// The root port's PMU bytes against the application's (a benchmark's cross-check on the bus).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmuBytes {
    pub pmu: String,
    /// The PCI function on the path the PMU covers (its root port).
    pub root_port: String,
    /// Payload the root port received (device-to-memory writes: a disk read's data).
    #[serde(default)]
    pub rx_event: Option<String>,
    #[serde(default)]
    pub rx_bytes: Option<f64>,
    /// Payload the root port sent (completions of the device's reads: a disk write's data).
    #[serde(default)]
    pub tx_event: Option<String>,
    #[serde(default)]
    pub tx_bytes: Option<f64>,
    pub app_read_bytes: u64,
    pub app_write_bytes: u64,
    /// (PMU − application) / application, percent, reads against Rx and writes against Tx.
    #[serde(default)]
    pub read_error_percent: Option<f64>,
    #[serde(default)]
    pub write_error_percent: Option<f64>,
    /// Why a number is missing (the PMU refused the event, no such event ...).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Counters sampled beside a benchmark's engine: interrupts of the devices on its path, the
/// root port's PMU when one exists.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BesideCounters {
    #[serde(default)]
    pub interrupts: Vec<IrqRate>,
    #[serde(default)]
    pub pmu: Option<PmuBytes>,
    /// What could not be sampled, one sentence each.
    #[serde(default)]
    pub notes: Vec<String>,
    /// AER errors and link changes of the path's PCI functions during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<super::watch::beside::PathWatch>,
}

pub fn error_percent(counted: f64, app: u64) -> Option<f64> {
    (app > 0).then(|| (counted - app as f64) / app as f64 * 100.0)
}

#[cfg(test)]
mod beside_tests {
    use super::*;

    #[test]
    fn pmu_bytes_against_the_applications() {
        // Seed 002: 536,910,432 16-byte units on pcie_bdf_200 for fio's 8590 MB read.
        let rx = 536_910_432.0 * 16.0;
        let app = 8_192 * 1_048_576;
        let b = BesideCounters {
            links: None,
            interrupts: vec![IrqRate {
                device: "0000:01:00.0".into(),
                irqs: vec![40, 41],
                names: vec!["nvme0q1".into()],
                count: 5000,
                per_second: 2500.0,
                seconds: 2.0,
            }],
            pmu: Some(PmuBytes {
                pmu: "pcie_bdf_200".into(),
                root_port: "0000:02:00.0".into(),
                rx_event: Some("pcie_bdf_200/Rx_PCIe_TLP_Data_Payload/".into()),
                rx_bytes: Some(rx),
                tx_event: None,
                tx_bytes: None,
                app_read_bytes: app,
                app_write_bytes: 0,
                read_error_percent: error_percent(rx, app),
                write_error_percent: None,
                reason: None,
            }),
            notes: vec![],
        };
        let e = b.pmu.as_ref().unwrap().read_error_percent.unwrap();
        assert!((e - 0.00736).abs() < 0.0001, "{e}");
        let t = render_beside(&b);
        assert!(
            t.contains(
                "Interrupts: 0000:01:00.0 (IRQ 40,41 nvme0q1): 5000 during the run, 2500.0 /s"
            ),
            "{t}"
        );
        assert!(t.contains("PCIe PMU pcie_bdf_200 (root port 0000:02:00.0): Rx 8590566912 B vs application 8589934592 B (+0.01 %); Tx –"), "{t}");
    }
}

/// A PMU list as board labs take it ([`crate::export::cases`]): per PMU the number of events it
/// names in sysfs (a figure; a skip, with why, for a PMU that names none and counts only by
/// its format terms: `breakpoint`, `software`), then the events of no sysfs PMU by kind (a
/// skip with the reason where the tracepoints could not be listed). A lab tracks them to see
/// a kernel or firmware update drop a PMU or its events.
pub(crate) fn list_cases(
    doc: &Document,
    origin: &str,
) -> Result<Vec<crate::export::cases::Case>, DocumentError> {
    use crate::export::cases::Case;
    let l = <PmuListDocument as super::KindDocument>::read(doc, origin)?;
    let path = |parts: &[&str]| crate::export::cases::path(DocumentKind::PmuList.as_str(), parts);
    let mut out = Vec::new();
    for p in &l.pmus {
        let at = path(&["pmu", &p.name, "events"]);
        if p.events.is_empty() {
            let terms = if p.formats.is_empty() {
                "no format terms either".to_string()
            } else {
                format!("only format terms: {}", p.formats.join(", "))
            };
            out.push(Case::skip(
                at,
                format!("{} names no events in sysfs ({terms})", p.name),
            ));
        } else {
            out.push(Case::figure(at, p.events.len() as f64, "events"));
        }
    }
    for (names, what) in [
        (&l.events.software, "software-events"),
        (&l.events.hardware, "hardware-events"),
    ] {
        out.push(Case::figure(path(&[what]), names.len() as f64, "events"));
    }
    match &l.events.tracepoints_missing {
        Some(why) => out.push(Case::skip(path(&["tracepoints"]), why.clone())),
        None => out.push(Case::figure(
            path(&["tracepoints"]),
            l.events.tracepoints.len() as f64,
            "events",
        )),
    }
    Ok(out)
}
