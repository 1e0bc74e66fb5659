//! Compare runs of the same kind (audits and paths too, by their links and settings): the same tests side by side with the difference to the
//! first run in percent (the Raspberry Pi 5 article: 394 -> 732 MB/s, +85 %), the changes of
//! context between the runs first (link state, MPS, governor, kernel), and a flag on
//! differences smaller than the runs' own spread.

use crate::markdown::table;
use crate::summary::Summary;
use std::fmt::Write;

/// Whether a bigger number is better (throughput) or worse (latency).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// What a row is: a measured result, which `--fail-above` gates, or a counter sampled
/// beside the run (interrupt rates, PMU and software counts), which is shown and never gates:
/// a run 15 % faster took 14 % more interrupts because it moved more data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    /// Throughput (MB/s), IOPS, latency (mean, percentiles, maximum).
    Measured,
    /// A counter or rate taken beside the measurement.
    Counter,
}

/// One number measured in every run (or some).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    pub better: Better,
    pub kind: RowKind,
    /// Decimals the values are shown with: 0 for cyclictest's whole-us columns (already
    /// truncated), 1 for MB/s and mean latencies.
    pub decimals: usize,
    /// One per run; `None` where that run lacks the test.
    pub values: Vec<Option<f64>>,
    /// One per run: the value is only a lower bound, the run knew no more (a latency
    /// percentile above the histogram's limit, which the run printed as `>200`).
    pub above: Vec<bool>,
    /// One per run: the spread of that run's repetitions (max − min), when it had several.
    pub spreads: Vec<Option<f64>>,
}

/// How run `i` differs from the first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delta {
    /// (this − first) / first × 100.
    pub percent: f64,
    /// The change is at least `percent` (in its direction): one of the values was a bound
    /// (`>200`), the other on the other side of it.
    pub at_least: bool,
    /// `Some(false)` when |difference| is within the larger of both runs' spreads;
    /// `None` when neither run had repetitions to know.
    pub significant: Option<bool>,
    /// Whether the change goes the wrong way (slower, or more latency).
    pub regression: bool,
}

impl Delta {
    /// `+85.7 %`, or `≥ +300.0 %` / `≤ -25.0 %` when the change is only bounded.
    pub fn words(&self) -> String {
        match (self.at_least, self.percent >= 0.0) {
            (false, _) => format!("{:+.1} %", self.percent),
            (true, true) => format!("≥ {:+.1} %", self.percent),
            (true, false) => format!("≤ {:+.1} %", self.percent),
        }
    }
}

impl Row {
    /// Run `i`'s value as shown: `732.0`, `>200` for a bound, `–` where it has none.
    pub fn value_text(&self, i: usize) -> String {
        match self.values.get(i).copied().flatten() {
            Some(v) if self.above.get(i).copied().unwrap_or(false) => format!(">{v:.0}"),
            Some(v) => format!("{v:.*}", self.decimals),
            None => crate::table::dash(),
        }
    }

    pub fn delta(&self, i: usize) -> Option<Delta> {
        let a = self.values.first().copied().flatten()?;
        let b = self.values.get(i).copied().flatten()?;
        if a == 0.0 {
            return None;
        }
        let bound = |j: usize| self.above.get(j).copied().unwrap_or(false);
        // A bound `>L` against an exact value: the direction is known only when the exact
        // value is on the other side of L, and the change is then at least the one to L.
        let at_least = match (bound(0), bound(i)) {
            (true, true) => return None,
            (false, true) if b <= a => return None,
            (true, false) if b >= a => return None,
            (x, y) => x || y,
        };
        let percent = (b - a) / a * 100.0;
        let spread = match (self.spreads[0], self.spreads.get(i).copied().flatten()) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0.0).max(y.unwrap_or(0.0))),
        };
        let regression = match self.better {
            Better::Higher => b < a,
            Better::Lower => b > a,
        };
        Some(Delta {
            percent,
            at_least,
            significant: spread.map(|s| (b - a).abs() > s),
            regression,
        })
    }
}

/// A measured result worse than the first run's by more than the limit: what
/// `compare --fail-above` fails on.
#[derive(Clone, Debug, PartialEq)]
pub struct Regression {
    pub metric: String,
    pub unit: &'static str,
    /// The run that regressed and the base it is compared with.
    pub origin: String,
    pub base_origin: String,
    pub value: String,
    pub base: String,
    pub delta: Delta,
}

impl Regression {
    /// `SEQ1M Q8T1 read (MB/s): 1049.3 in b.json against 1234.5 in a.json, -15.0 %`.
    pub fn sentence(&self) -> String {
        format!(
            "{} ({}): {} in {} against {} in {}, {}",
            self.metric,
            self.unit,
            self.value,
            self.origin,
            self.base,
            self.base_origin,
            self.delta.words()
        )
    }
}

/// A parameter of the runs or a fact of their context, with its value in each run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ContextChange {
    pub key: String,
    /// One per run; `None` where the run does not say.
    pub values: Vec<Option<String>>,
}

/// Several runs side by side.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub kind: crate::document::DocumentKind,
    pub origins: Vec<String>,
    /// The settings and facts that differ between the runs.
    pub changes: Vec<ContextChange>,
    /// Those the same in every run (each value once per run, all equal).
    pub same: Vec<ContextChange>,
    pub rows: Vec<Row>,
    /// The runs come from different machines (by machine-id, else serial, else hostname):
    /// a difference may be the machine's, not the setting's.
    pub different_hosts: bool,
}

/// Why runs cannot be compared; one sentence each.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CompareError {
    #[error("compare needs at least two runs, got {0}")]
    TooFew(usize),
    #[error(
        "{a} is a result of kind `{a_kind}` and {b} of kind `{b_kind}`: compare runs of the \
         same kind"
    )]
    DifferentKinds {
        a: String,
        a_kind: crate::document::DocumentKind,
        b: String,
        b_kind: crate::document::DocumentKind,
    },
}

/// Line the runs up by test name, first-seen order.
pub fn compare(runs: &[Summary]) -> Result<Comparison, CompareError> {
    if runs.len() < 2 {
        return Err(CompareError::TooFew(runs.len()));
    }
    let first = &runs[0];
    for r in &runs[1..] {
        if r.kind != first.kind {
            return Err(CompareError::DifferentKinds {
                a: first.origin.clone(),
                a_kind: first.kind,
                b: r.origin.clone(),
                b_kind: r.kind,
            });
        }
    }
    let n = runs.len();
    let mut rows: Vec<Row> = Vec::new();
    let mut put =
        |(metric, unit, better, kind, decimals): (String, &'static str, Better, RowKind, usize),
         i: usize,
         v: f64,
         above: bool,
         spread: Option<f64>| {
            let idx = match rows
                .iter()
                .position(|r| r.metric == metric && r.unit == unit)
            {
                Some(idx) => idx,
                None => {
                    rows.push(Row {
                        metric,
                        unit,
                        better,
                        kind,
                        decimals,
                        values: vec![None; n],
                        above: vec![false; n],
                        spreads: vec![None; n],
                    });
                    rows.len() - 1
                }
            };
            rows[idx].values[i] = Some(v);
            rows[idx].above[i] = above;
            rows[idx].spreads[i] = spread;
        };
    use RowKind::{Counter, Measured};
    for (i, r) in runs.iter().enumerate() {
        for c in &r.counters {
            // Bytes and rates are work done (higher is better); other events (switches,
            // faults, clock time) are costs.
            let (unit, better): (&'static str, Better) = match c.unit.as_str() {
                "" => ("count", Better::Lower),
                "msec" => ("msec", Better::Lower),
                "B" => ("B", Better::Higher),
                "MiB" => ("MiB", Better::Higher),
                "/s" => ("/s", Better::Lower),
                // PMU bytes per application byte: what the bus carried beyond the payload.
                "%" => ("%", Better::Lower),
                _ => ("scaled", Better::Higher),
            };
            if let Some(v) = c.value {
                // Counts are whole; scaled values (msec, MiB) keep two decimals as perf prints.
                let decimals = if unit == "count" { 0 } else { 2 };
                put(
                    (c.name.clone(), unit, better, Counter, decimals),
                    i,
                    v,
                    false,
                    None,
                );
            }
        }
        for t in &r.tests {
            let mb_s = (t.name.clone(), "MB/s", Better::Higher, Measured, 1);
            put(mb_s, i, t.measured_mb_s, false, t.spread());
            if let Some(iops) = t.iops {
                put(
                    (t.name.clone(), "IOPS", Better::Higher, Measured, 0),
                    i,
                    iops,
                    false,
                    None,
                );
            }
            if let Some(l) = &t.latency {
                for (q, ns) in [("mean", l.mean_ns), ("p99", l.p99_ns as f64)] {
                    let row = (
                        format!("{} latency {q}", t.name),
                        "us",
                        Better::Lower,
                        Measured,
                        1,
                    );
                    put(row, i, ns / 1000.0, false, None);
                }
            }
        }
        for t in &r.threads {
            let name = format!("thread {}", t.name);
            let us = |what: &str, decimals| {
                (
                    format!("{name} {what}"),
                    "us",
                    Better::Lower,
                    Measured,
                    decimals,
                )
            };
            put(us("avg", 1), i, t.avg_us, false, None);
            // A percentile above the histogram's limit is known only as `>limit`, as the run
            // printed it.
            for (what, p) in [("p99", t.p99_us), ("p99.9", t.p99_9_us)] {
                match (p, r.histogram_limit_us) {
                    (Some(p), _) => put(us(what, 0), i, f64::from(p), false, None),
                    (None, Some(limit)) if t.count > 0 => {
                        put(us(what, 0), i, f64::from(limit), true, None)
                    }
                    _ => {}
                }
            }
            put(us("max", 0), i, t.max_us as f64, false, None);
            // --split: the IRQ latency of the same wake-ups (the rest is scheduling).
            if let Some(q) = &t.irq {
                put(us("IRQ avg", 1), i, q.avg_us, false, None);
                if let Some(p) = q.p99_us {
                    put(us("IRQ p99", 0), i, f64::from(p), false, None);
                }
                put(us("IRQ max", 0), i, q.max_us as f64, false, None);
            }
        }
    }
    let mut keys: Vec<String> = Vec::new();
    for r in runs {
        for (k, _) in &r.context {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // Every parameter and fact of every run, in the runs' order; the ones that differ
    // first (a run that does not say differs from one that does).
    let (changes, same): (Vec<ContextChange>, Vec<ContextChange>) = keys
        .into_iter()
        .map(|key| {
            let values: Vec<Option<String>> = runs
                .iter()
                .map(|r| {
                    r.context
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v.clone())
                })
                .collect();
            ContextChange { key, values }
        })
        .partition(|c| c.values.iter().any(|v| *v != c.values[0]));
    // The host first: which machine each run was made on, told apart by its identity.
    let identities: Vec<Option<String>> = runs
        .iter()
        .map(|r| {
            r.host
                .as_ref()
                .and_then(model::system::Host::identity)
                .or_else(|| r.hostname.as_ref().map(|h| format!("hostname {h}")))
        })
        .collect();
    let different_hosts = identities.iter().any(|i| *i != identities[0]);
    let host = ContextChange {
        key: "host".into(),
        values: runs.iter().map(Summary::host_line).collect(),
    };
    let (mut changes, mut same) = (changes, same);
    if different_hosts || host.values.iter().any(|v| *v != host.values[0]) {
        changes.insert(0, host);
    } else if host.values[0].is_some() {
        same.insert(0, host);
    }
    Ok(Comparison {
        kind: first.kind,
        origins: runs.iter().map(|r| r.origin.clone()).collect(),
        changes,
        same,
        rows,
        different_hosts,
    })
}

impl Comparison {
    /// Measured results worse than the first run's by more than `pct` percent and by more
    /// than the runs' spread. Counters never gate (see [`RowKind`]).
    pub fn regressions_above(&self, pct: f64) -> Vec<Regression> {
        let mut out = Vec::new();
        for row in self.rows.iter().filter(|r| r.kind == RowKind::Measured) {
            for i in 1..self.origins.len() {
                if let Some(d) = row.delta(i) {
                    if d.regression && d.percent.abs() > pct && d.significant != Some(false) {
                        out.push(Regression {
                            metric: row.metric.clone(),
                            unit: row.unit,
                            origin: self.origins[i].clone(),
                            base_origin: self.origins[0].clone(),
                            value: row.value_text(i),
                            base: row.value_text(0),
                            delta: d,
                        });
                    }
                }
            }
        }
        out
    }

    /// Markdown: the changes first, then the table; also the terminal output.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## compare {} — {}\n",
            self.kind,
            crate::outside::markdown(&self.origins.join(" vs "))
        );
        if self.different_hosts {
            let _ = writeln!(
                out,
                "The runs come from different hosts (see `host` below): a difference may be \
                 the machine's, not a setting's.\n"
            );
        }
        let mut header = vec![("Setting", false)];
        header.extend(self.origins.iter().map(|o| (o.as_str(), false)));
        let settings = |list: &[ContextChange]| -> Vec<Vec<String>> {
            list.iter()
                .map(|c| {
                    let mut r = vec![c.key.clone()];
                    r.extend(
                        c.values
                            .iter()
                            .map(|v| v.clone().unwrap_or_else(|| "–".into())),
                    );
                    r
                })
                .collect()
        };
        if self.changes.is_empty() && self.same.is_empty() && self.rows.is_empty() {
            let _ = writeln!(
                out,
                "Nothing to compare: these {} documents record no links, settings or \
                 measurements.",
                self.kind
            );
            return out;
        }
        if self.changes.is_empty() {
            if !self.same.is_empty() {
                let _ = writeln!(out, "Same configuration in every run:\n");
            }
        } else {
            let _ = writeln!(
                out,
                "### What changed ({})\n",
                crate::words::plural(self.changes.len(), "setting", "settings")
            );
            table(&mut out, &header, &settings(&self.changes));
            out.push('\n');
            if !self.same.is_empty() {
                let _ = writeln!(out, "### Same in every run\n");
            }
        }
        if !self.same.is_empty() {
            // One value per setting: the same in every run.
            let rows: Vec<Vec<String>> = self
                .same
                .iter()
                .map(|c| {
                    let v = c.values.first().cloned().flatten();
                    vec![c.key.clone(), v.unwrap_or_else(|| "–".into())]
                })
                .collect();
            table(&mut out, &[("Setting", false), ("Value", false)], &rows);
            out.push('\n');
        }
        if self.rows.is_empty() {
            let _ = writeln!(
                out,
                "No measurements: {} documents describe links and settings, compared above.",
                self.kind
            );
            return out;
        }
        for (kind, title) in [
            (RowKind::Measured, "### Results\n"),
            (
                RowKind::Counter,
                "### Counters (shown beside the results; `--fail-above` never gates on them)\n",
            ),
        ] {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.kind == kind).collect();
            if !rows.is_empty() {
                let _ = writeln!(out, "{title}");
                self.rows_markdown(&mut out, &rows);
            }
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        out
    }

    /// The table of `rows` and the notes on significance under it.
    fn rows_markdown(&self, out: &mut String, rows: &[&Row]) {
        let mut header: Vec<String> = vec!["Test".into()];
        for (i, o) in self.origins.iter().enumerate() {
            header.push(o.clone());
            if i > 0 {
                header.push(format!("Δ vs {} (%)", self.origins[0]));
            }
        }
        // The deltas align right; the values stay as the seeds' comparison tables show them.
        let header_refs: Vec<(&str, bool)> = header
            .iter()
            .map(|h| (h.as_str(), h.starts_with("Δ vs ")))
            .collect();
        let mut any_insignificant = false;
        let mut any_unknown = false;
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                let mut r = vec![format!("{} ({})", row.metric, row.unit)];
                for i in 0..row.values.len() {
                    r.push(row.value_text(i));
                    if i > 0 {
                        r.push(match row.delta(i) {
                            None => "–".into(),
                            Some(d) => {
                                let mut s = d.words();
                                match d.significant {
                                    Some(false) => {
                                        any_insignificant = true;
                                        s.push_str(" (not significant)");
                                    }
                                    None => any_unknown = true,
                                    Some(true) => {}
                                }
                                s
                            }
                        });
                    }
                }
                r
            })
            .collect();
        table(out, &header_refs, &rows);
        if any_unknown {
            let _ = writeln!(
                out,
                "\nWhere neither run repeated its tests, their spread, and so whether a \
                 difference is significant, is unknown: run each test several times to know."
            );
        }
        if any_insignificant {
            let _ = writeln!(
                out,
                "\nNot significant: the difference is smaller than the spread of the runs' \
                 own repetitions (max − min)."
            );
        }
        out.push('\n');
    }
}
