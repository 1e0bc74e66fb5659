//! The checks and measured figures of any result document, as board labs take them: one case
//! per check (a finding, a PCIe link against what its ends can do, an `--expect` check) with a
//! verdict, and one per measured figure (throughput, efficiency, IOPS, latency) with its value
//! and unit. [`crate::lava`] writes them as LAVA test-case lines, [`crate::kcidb`] as KCIDB
//! tests. What each kind measures is read from the [`Summary`] every report reads; the
//! audit's links from its own module ([`super::audit::cases`]).

use crate::document::{Document, DocumentError, DocumentKind};
use crate::summary::{is_downgraded, Summary};
use model::finding::Severity;

/// A case's verdict, in the words both labs share (LAVA's `pass`/`fail`/`skip`, KCIDB's
/// `PASS`/`FAIL`/`SKIP`, and a measured figure: LAVA `pass` with a measurement, KCIDB `DONE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// Could not be checked (a figure the run could not measure).
    Skip,
    /// A measured figure, with no verdict of its own.
    Measured,
}

/// One case: its path from the most general to the most specific part (`disk`,
/// `seq1m-q8t1-read`, `throughput`), each part as the document names it (sanitized by each
/// format), its verdict, and for a figure its value and unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub path: Vec<String>,
    pub outcome: Outcome,
    /// The value in `unit`: `MB/s` (10^6 B/s), `%`, `IOPS`, `us`, `GT/s`, `lanes`.
    pub measurement: Option<(f64, &'static str)>,
    /// One sentence for a person: the finding's message, the check's expected and found.
    pub comment: Option<String>,
}

impl Case {
    fn figure(path: Vec<String>, value: f64, unit: &'static str) -> Case {
        Case {
            path,
            outcome: Outcome::Measured,
            measurement: Some((value, unit)),
            comment: None,
        }
    }

    pub fn check(path: Vec<String>, pass: bool, comment: String) -> Case {
        Case {
            path,
            outcome: if pass { Outcome::Pass } else { Outcome::Fail },
            measurement: None,
            comment: Some(comment),
        }
    }
}

/// The cases of `doc` (`origin` names it in errors). A survey's parts are prefixed by the
/// part's id, a `report` document's documents by `doc1`, `doc2`, ...
pub fn of_document(doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
    let mut out = Vec::new();
    match doc.envelope.kind {
        DocumentKind::Survey => {
            let body = super::survey::SurveyBody::of(doc, origin)?;
            let (parts, _) = body.part_docs(origin);
            for p in parts {
                let mut cases = summary_cases(&p.summary);
                if p.document.envelope.kind == DocumentKind::Audit {
                    cases.extend(super::audit::cases(&p.document, origin)?);
                }
                out.extend(prefixed(&p.part.id, cases));
            }
        }
        DocumentKind::Report => {
            let inner = doc.body.get("documents").and_then(|d| d.as_array());
            for (i, v) in inner.into_iter().flatten().enumerate() {
                let name = format!("{origin} #{}", i + 1);
                let d = Document::from_value(v.clone(), &name)?;
                out.extend(prefixed(&format!("doc{}", i + 1), of_document(&d, &name)?));
            }
        }
        kind => {
            let s = super::summarize(doc, origin)?;
            out.extend(summary_cases(&s));
            if kind == DocumentKind::Audit {
                out.extend(super::audit::cases(doc, origin)?);
            }
        }
    }
    Ok(out)
}

fn prefixed(prefix: &str, cases: Vec<Case>) -> impl Iterator<Item = Case> + '_ {
    cases.into_iter().map(move |mut c| {
        c.path.insert(0, prefix.to_string());
        c
    })
}

/// What every kind has: its tests' figures, its timer threads' latencies, the links of its
/// path and its findings.
fn summary_cases(s: &Summary) -> Vec<Case> {
    let kind = s.kind.as_str().to_string();
    let p = |parts: &[&str]| -> Vec<String> {
        std::iter::once(kind.clone())
            .chain(parts.iter().map(|s| s.to_string()))
            .collect()
    };
    let mut out = Vec::new();
    for t in &s.tests {
        let name = if t.direction.is_empty() || t.name.contains(&t.direction) {
            t.name.clone()
        } else {
            format!("{} {}", t.name, t.direction)
        };
        out.push(Case::figure(
            p(&[&name, "throughput"]),
            t.measured_mb_s,
            "MB/s",
        ));
        if let Some(e) = t.efficiency {
            out.push(Case::figure(p(&[&name, "efficiency"]), e * 100.0, "%"));
        }
        if let Some(iops) = t.iops {
            out.push(Case::figure(p(&[&name, "iops"]), iops, "IOPS"));
        }
        if let Some(l) = &t.latency {
            let l = l.clone().clamped();
            for (q, ns) in [
                ("latency-p50", l.p50_ns as f64),
                ("latency-p99", l.p99_ns as f64),
                ("latency-max", l.max_ns as f64),
            ] {
                out.push(Case::figure(p(&[&name, q]), ns / 1000.0, "us"));
            }
        }
    }
    // Linaro's rt-tests parser names cyclictest's figures `t0-max-latency ... us`; here the
    // thread's own name and the same statistics.
    for th in &s.threads {
        let name = format!("thread {}", th.name);
        out.push(Case::figure(
            p(&[&name, "latency-min"]),
            th.min_us as f64,
            "us",
        ));
        out.push(Case::figure(p(&[&name, "latency-avg"]), th.avg_us, "us"));
        if let Some(v) = th.p99_us {
            out.push(Case::figure(p(&[&name, "latency-p99"]), f64::from(v), "us"));
        }
        out.push(Case::figure(
            p(&[&name, "latency-max"]),
            th.max_us as f64,
            "us",
        ));
    }
    // The path's ceiling (a `ceiling` document's only figure; a benchmark's, beside its
    // measured rates).
    if let Some(c) = &s.ceiling {
        out.push(Case::figure(p(&["ceiling"]), c.mb_s, "MB/s"));
    }
    // Counted events (`count`, and the counters sampled beside a benchmark), in their unit.
    for c in &s.counters {
        if let Some(v) = c.value {
            let unit = match c.unit.as_str() {
                "" => "count",
                "msec" => "ms",
                "B" => "B",
                "MiB" => "MiB",
                "/s" => "/s",
                "%" => "%",
                _ => "scaled",
            };
            out.push(Case::figure(p(&["counter", &c.name]), v, unit));
        }
    }
    for l in &s.links {
        let down = is_downgraded(l);
        let mut comment = format!("{} at {}", l.name, l.state);
        if let Some(c) = &l.capable_state {
            comment.push_str(&format!(" (capable {c})"));
        }
        out.push(Case::check(
            p(&["link", &l.name, "not-downgraded"]),
            !down,
            comment,
        ));
    }
    for (i, f) in s.findings.iter().enumerate() {
        // A finding is a check that failed (an error or a warning: it costs performance) or a
        // fact worth knowing (info, a pass). Numbered: two findings may share a subject.
        let subject = if f.subject.is_empty() {
            "run"
        } else {
            f.subject.as_str()
        };
        let severity = match f.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        let n = (i + 1).to_string();
        out.push(Case::check(
            p(&["finding", &n, severity, subject]),
            f.severity == Severity::Info,
            f.message.clone(),
        ));
    }
    out
}
