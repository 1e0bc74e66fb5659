//! The metrics of any result document (`--format openmetrics`, `--textfile-dir`): what each
//! kind measures is its own module's (`audit::metrics` for the PCI links and AER counters);
//! what every benchmark has (measured rate, ceiling, efficiency, latency percentiles, the
//! path's links, counted events, the run's time) is read here from the [`Summary`] every
//! report reads. [`crate::openmetrics`] encodes them.

use crate::document::{Document, DocumentError, DocumentKind};
use crate::openmetrics::{Def, Metrics};
use crate::summary::{is_downgraded, Summary};
use model::units::MB;

const RUN_TIME: Def = Def {
    name: "run_timestamp",
    help: "When the run that made the document ended (Unix time)",
    unit: Some("seconds"),
};
const FINDINGS: Def = Def {
    name: "findings",
    help: "Findings of the document by severity",
    unit: None,
};
const THROUGHPUT: Def = Def {
    name: "throughput",
    help: "Measured rate of a benchmark's test (the headline run), bytes per second",
    unit: Some("bytes_per_second"),
};
const CEILING: Def = Def {
    name: "ceiling",
    help: "Theoretical ceiling of the test's path (its bottleneck link), bytes per second",
    unit: Some("bytes_per_second"),
};
const EFFICIENCY: Def = Def {
    name: "efficiency",
    help: "Measured rate over the path's ceiling (1 = the ceiling)",
    unit: Some("ratio"),
};
const IOPS: Def = Def {
    name: "io_operations_per_second",
    help: "I/O operations per second of a disk test's headline run",
    unit: None,
};
const IO_LATENCY: Def = Def {
    name: "io_latency",
    help: "Completion latency of a disk test's I/Os (submission to completion): min, p50, p90, p99, p99.9, max, mean",
    unit: Some("seconds"),
};
const WAKEUP_LATENCY: Def = Def {
    name: "wakeup_latency",
    help: "Wake-up latency of a timer thread (cyclictest's measure, truncated to whole us as it prints them): min, p99, p99.9, max, mean",
    unit: Some("seconds"),
};
const WAKEUPS: Def = Def {
    name: "wakeups",
    help: "Wake-ups measured by a timer thread",
    unit: None,
};
const LINK_CEILING: Def = Def {
    name: "path_link_ceiling",
    help: "Theoretical ceiling of a link on the measured path towards the CPU, bytes per second",
    unit: Some("bytes_per_second"),
};
const LINK_DOWNGRADED: Def = Def {
    name: "path_link_downgraded",
    help: "1 when a link on the measured path runs below what its ends support",
    unit: None,
};
const EVENT: Def = Def {
    name: "event_value",
    help: "A counted event's value (headroom count, or sampled beside a benchmark), in the unit of its label",
    unit: None,
};

/// The file `--textfile-dir` writes for a document of `kind`: `headroom.prom` for an audit
/// (the host's links and AER counters), `headroom-KIND.prom` for the others, so the latest
/// result of each benchmark and the audit stand side by side in the collector.
pub fn textfile_name(kind: DocumentKind) -> String {
    match kind {
        DocumentKind::Audit => "headroom.prom".to_string(),
        k => format!("headroom-{}.prom", k.as_str()),
    }
}

/// Add the metrics of `doc` (`origin` names it in errors): its kind's own, and the run's
/// time and findings. A survey adds each part's document with a `part` label; a `report`
/// document each of its documents with a `document` label.
pub fn add_document(m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
    let kind = doc.envelope.kind;
    match kind {
        DocumentKind::Survey => {
            let body = super::survey::SurveyBody::of(doc, origin)?;
            let (parts, _) = body.part_docs(origin);
            for p in parts {
                m.with_label("part", &p.part.id, |m| {
                    add_summary(m, &p.document, &p.summary);
                    if p.document.envelope.kind == DocumentKind::Audit {
                        super::audit::metrics(m, &p.document, origin)
                    } else {
                        Ok(())
                    }
                })?;
            }
        }
        DocumentKind::Report => {
            let inner = doc.body.get("documents").and_then(|d| d.as_array());
            for (i, v) in inner.into_iter().flatten().enumerate() {
                let name = format!("{origin} #{}", i + 1);
                let d = Document::from_value(v.clone(), &name)?;
                m.with_label("document", &(i + 1).to_string(), |m| {
                    add_document(m, &d, &name)
                })?;
            }
            return Ok(());
        }
        _ => {
            let s = super::summarize(doc, origin)?;
            add_summary(m, doc, &s);
            if kind == DocumentKind::Audit {
                super::audit::metrics(m, doc, origin)?;
            }
        }
    }
    Ok(())
}

/// The run's time in seconds since the epoch, from the envelope's RFC 3339 `created`.
fn created_seconds(doc: &Document) -> Option<f64> {
    let created = doc.envelope.created.as_deref()?;
    let t = time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

/// What every kind has, read from the summary every report reads.
fn add_summary(m: &mut Metrics, doc: &Document, s: &Summary) {
    let kind = s.kind.as_str();
    if let Some(t) = created_seconds(doc) {
        m.gauge(&RUN_TIME, &[("kind", kind)], t);
    }
    for sev in ["error", "warning", "info"] {
        let n = s
            .findings
            .iter()
            .filter(|f| format!("{:?}", f.severity).eq_ignore_ascii_case(sev))
            .count();
        m.gauge(&FINDINGS, &[("kind", kind), ("severity", sev)], n as f64);
    }
    let target = s.target.clone().unwrap_or_default();
    for t in &s.tests {
        let labels = [
            ("kind", kind),
            ("target", target.as_str()),
            ("test", t.name.as_str()),
            ("direction", t.direction.as_str()),
        ];
        m.gauge(&THROUGHPUT, &labels, t.measured_mb_s * MB);
        if let Some(c) = t.ceiling_in(s) {
            m.gauge(&CEILING, &labels, c.mb_s * MB);
        }
        if let Some(e) = t.efficiency {
            m.gauge(&EFFICIENCY, &labels, e);
        }
        if let Some(iops) = t.iops {
            m.gauge(&IOPS, &labels, iops);
        }
        if let Some(l) = &t.latency {
            let l = l.clone().clamped();
            let q = [
                ("min", l.min_ns as f64),
                ("p50", l.p50_ns as f64),
                ("p90", l.p90_ns as f64),
                ("p99", l.p99_ns as f64),
                ("p99.9", l.p99_9_ns as f64),
                ("max", l.max_ns as f64),
                ("mean", l.mean_ns),
            ];
            // `stat`, not `quantile`: that label belongs to summaries (promtool's lint).
            for (stat, ns) in q {
                let mut with_q = labels.to_vec();
                with_q.push(("stat", stat));
                m.gauge(&IO_LATENCY, &with_q, ns / 1e9);
            }
        }
    }
    for th in &s.threads {
        let labels = [("kind", kind), ("thread", th.name.as_str())];
        let q = [
            ("min", Some(th.min_us as f64)),
            ("p99", th.p99_us.map(f64::from)),
            ("p99.9", th.p99_9_us.map(f64::from)),
            ("max", Some(th.max_us as f64)),
            ("mean", Some(th.avg_us)),
        ];
        for (stat, us) in q {
            if let Some(us) = us {
                let mut with_q = labels.to_vec();
                with_q.push(("stat", stat));
                m.gauge(&WAKEUP_LATENCY, &with_q, us / 1e6);
            }
        }
        m.counter(&WAKEUPS, &labels, th.count);
    }
    for l in &s.links {
        let state = l.state.to_string();
        let labels = [
            ("kind", kind),
            ("link", l.name.as_str()),
            ("state", state.as_str()),
        ];
        if let Some(c) = l.ceiling_to_cpu_bps() {
            m.gauge(&LINK_CEILING, &labels, c);
        }
        m.gauge(
            &LINK_DOWNGRADED,
            &labels,
            if is_downgraded(l) { 1.0 } else { 0.0 },
        );
    }
    for c in &s.counters {
        if let Some(v) = c.value {
            m.gauge(
                &EVENT,
                &[("kind", kind), ("event", &c.name), ("unit", &c.unit)],
                v,
            );
        }
    }
}
