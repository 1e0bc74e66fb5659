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

/// One number measured in every run (or some).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    pub better: Better,
    /// Decimals the values are shown with: 0 for cyclictest's whole-us columns (already
    /// truncated), 1 for MB/s and mean latencies.
    pub decimals: usize,
    /// One per run; `None` where that run lacks the test.
    pub values: Vec<Option<f64>>,
    /// One per run: the spread of that run's repetitions (max − min), when it had several.
    pub spreads: Vec<Option<f64>>,
}

/// How run `i` differs from the first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delta {
    /// (this − first) / first × 100.
    pub percent: f64,
    /// `Some(false)` when |difference| is within the larger of both runs' spreads;
    /// `None` when neither run had repetitions to know.
    pub significant: Option<bool>,
    /// Whether the change goes the wrong way (slower, or more latency).
    pub regression: bool,
}

impl Row {
    pub fn delta(&self, i: usize) -> Option<Delta> {
        let a = self.values.first().copied().flatten()?;
        let b = self.values.get(i).copied().flatten()?;
        if a == 0.0 {
            return None;
        }
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
            significant: spread.map(|s| (b - a).abs() > s),
            regression,
        })
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
    pub kind: String,
    pub origins: Vec<String>,
    /// The settings and facts that differ between the runs.
    pub changes: Vec<ContextChange>,
    /// Those the same in every run (each value once per run, all equal).
    pub same: Vec<ContextChange>,
    pub rows: Vec<Row>,
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
        a_kind: String,
        b: String,
        b_kind: String,
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
                a_kind: first.kind.clone(),
                b: r.origin.clone(),
                b_kind: r.kind.clone(),
            });
        }
    }
    let n = runs.len();
    let mut rows: Vec<Row> = Vec::new();
    let mut put = |metric: String,
                   unit: &'static str,
                   better: Better,
                   decimals: usize,
                   i: usize,
                   v: f64,
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
                    decimals,
                    values: vec![None; n],
                    spreads: vec![None; n],
                });
                rows.len() - 1
            }
        };
        rows[idx].values[i] = Some(v);
        rows[idx].spreads[i] = spread;
    };
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
                put(c.name.clone(), unit, better, decimals, i, v, None);
            }
        }
        for t in &r.tests {
            put(
                t.name.clone(),
                "MB/s",
                Better::Higher,
                1,
                i,
                t.measured_mb_s,
                t.spread(),
            );
            if let Some(iops) = t.iops {
                put(t.name.clone(), "IOPS", Better::Higher, 0, i, iops, None);
            }
            if let Some(l) = &t.latency {
                for (q, ns) in [("mean", l.mean_ns), ("p99", l.p99_ns as f64)] {
                    put(
                        format!("{} latency {q}", t.name),
                        "us",
                        Better::Lower,
                        1,
                        i,
                        ns / 1000.0,
                        None,
                    );
                }
            }
        }
        for t in &r.threads {
            let name = format!("thread {}", t.name);
            put(
                format!("{name} avg"),
                "us",
                Better::Lower,
                1,
                i,
                t.avg_us,
                None,
            );
            if let Some(p) = t.p99_us {
                put(
                    format!("{name} p99"),
                    "us",
                    Better::Lower,
                    0,
                    i,
                    f64::from(p),
                    None,
                );
            }
            put(
                format!("{name} max"),
                "us",
                Better::Lower,
                0,
                i,
                t.max_us as f64,
                None,
            );
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
    Ok(Comparison {
        kind: first.kind.clone(),
        origins: runs.iter().map(|r| r.origin.clone()).collect(),
        changes,
        same,
        rows,
    })
}

impl Comparison {
    /// Regressions beyond `pct` percent that are not within the runs' spread, as
    /// `(metric, run origin, percent)`.
    pub fn regressions_above(&self, pct: f64) -> Vec<(String, String, f64)> {
        let mut out = Vec::new();
        for row in &self.rows {
            for i in 1..self.origins.len() {
                if let Some(d) = row.delta(i) {
                    if d.regression && d.percent.abs() > pct && d.significant != Some(false) {
                        out.push((row.metric.clone(), self.origins[i].clone(), d.percent));
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
            self.origins.join(" vs ")
        );
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
        if self.changes.is_empty() {
            let _ = writeln!(out, "Same configuration in every run:\n");
        } else {
            let _ = writeln!(
                out,
                "### What changed ({})\n",
                crate::summary::plural(self.changes.len(), "setting", "settings")
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
        let _ = writeln!(out, "### Results\n");
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
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                let mut r = vec![format!("{} ({})", row.metric, row.unit)];
                for (i, v) in row.values.iter().enumerate() {
                    r.push(
                        v.map(|v| format!("{v:.*}", row.decimals))
                            .unwrap_or_else(|| "–".into()),
                    );
                    if i > 0 {
                        r.push(match row.delta(i) {
                            None => "–".into(),
                            Some(d) => {
                                let mut s = format!("{:+.1} %", d.percent);
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
        table(&mut out, &header_refs, &rows);
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
        out
    }
}
