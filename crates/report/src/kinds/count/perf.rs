//! perf stat's own layouts of a `count` run, for what reads perf's: `-x SEP` lines and `-j`
//! JSON lines, whole-run and per interval (`-I`).

use super::text::{unit_width, value_text};
#[allow(clippy::wildcard_imports)]
use super::*;

/// perf's CSV (`-x SEP`): value, unit, event, run time (ns), percent running, the metric's
/// number (as the text column prints it, blanks and `%` left off) and unit, or two empty
/// fields (print_metric_csv).
pub fn csv_line(e: &CountedEvent, sep: &str, m: &Metric) -> String {
    let (mv, mu) = match m {
        Metric::Value { text, unit, .. } => {
            let t = text.trim_start();
            let end = t
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                .unwrap_or(t.len());
            (t[..end].to_string(), unit.clone())
        }
        _ => (String::new(), String::new()),
    };
    [
        value_text(e).as_str(),
        e.unit.as_deref().unwrap_or(""),
        &e.name,
        &e.running_ns.to_string(),
        &format!("{:.2}", running_pct(e)),
        &mv,
        &mu,
    ]
    .join(sep)
}

pub fn render_csv(d: &CountDocument, sep: &str) -> String {
    let base = MetricBase::of(&d.events, d.elapsed_s);
    d.events
        .iter()
        .map(|e| csv_line(e, sep, &metric(e, &base)) + "\n")
        .collect()
}

/// A string as JSON writes it (perf prints event names raw; a name with a quote stays
/// valid JSON here).
pub(super) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// One line of `perf stat -j` (perf 6.1's print_*_json in stat-display.c): `interval` first
/// with `-I`, the counter value as a string (`"%f"`, or `<not counted>`), its unit, the
/// event, the run time in ns, the percent running, and the metric (0 and `"(null)"` where
/// perf derives none; `""` for an event without a count).
pub fn json_line(e: &CountedEvent, m: &Metric, interval_s: Option<f64>) -> String {
    let counter = match e.status {
        CountStatus::NotCounted => "<not counted>".to_string(),
        CountStatus::NotSupported => "<not supported>".to_string(),
        CountStatus::Counted => format!("{:.6}", e.value.unwrap_or(0.0)),
    };
    let (mv, mu) = match m {
        Metric::Value { value, unit, .. } => (*value, unit.as_str()),
        Metric::Named(u) => (0.0, *u),
        Metric::Absent => (0.0, "(null)"),
        Metric::NoCount => (0.0, ""),
    };
    let mut line = String::from("{");
    if let Some(t) = interval_s {
        line.push_str(&format!("\"interval\" : {t:.9}, "));
    }
    line.push_str(&format!(
        "\"counter-value\" : {}, \"unit\" : {}, \"event\" : {}, \"event-runtime\" : {}, \
         \"pcnt-running\" : {:.2}, \"metric-value\" : {mv:.6}, \"metric-unit\" : {}}}",
        json_str(&counter),
        json_str(e.unit.as_deref().unwrap_or("")),
        json_str(&e.name),
        e.running_ns,
        running_pct(e),
        json_str(mu)
    ));
    line
}

/// `perf stat -j`: one JSON object per event and line.
pub fn render_json_lines(d: &CountDocument) -> String {
    let base = MetricBase::of(&d.events, d.elapsed_s);
    d.events
        .iter()
        .map(|e| json_line(e, &metric(e, &base), None) + "\n")
        .collect()
}

/// How an interval's lines are written: perf's text, `-x SEP` or `-j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineFormat<'a> {
    Text,
    Csv(&'a str),
    Json,
}

impl<'a> LineFormat<'a> {
    /// The format perf stat picks from its flags: `-j` (JSON lines) over `-x SEP` (CSV)
    /// over its text.
    pub fn of(json_lines: bool, separator: Option<&'a str>) -> LineFormat<'a> {
        match (json_lines, separator) {
            (true, _) => LineFormat::Json,
            (false, Some(s)) => LineFormat::Csv(s),
            (false, None) => LineFormat::Text,
        }
    }
}

/// perf's `-I` header.
pub fn interval_header() -> String {
    "#           time             counts unit events\n".to_string()
}

/// The lines of one `-I` interval (`     1.000177283                 98      cs`), `time
/// SEP csv_line` with `-x`, or JSON lines with `interval` first; metrics over `period_s`,
/// the `-I` period (perf sets the wall time of every interval to it, the last one too).
pub fn interval_lines(i: &CountInterval, format: LineFormat<'_>, period_s: f64) -> String {
    let w = unit_width(&i.events);
    let base = MetricBase::of(&i.events, period_s);
    i.events
        .iter()
        .map(|e| {
            let m = metric(e, &base);
            match format {
                LineFormat::Csv(s) => format!("{:>16.9}{s}{}\n", i.time_s, csv_line(e, s, &m)),
                LineFormat::Text => format!("{:>16.9} {}\n", i.time_s, event_line(e, w, &m)),
                LineFormat::Json => json_line(e, &m, Some(i.time_s)) + "\n",
            }
        })
        .collect()
}
