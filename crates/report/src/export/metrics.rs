//! The metrics every result document has (`--format openmetrics`, `--textfile-dir`): what
//! every benchmark has (measured rate, ceiling, efficiency, latency percentiles, the path's
//! links, counted events, the run's time) is read here from the [`Summary`] every report
//! reads; what a kind measures beyond it (the audit's PCI links and AER counters) its own
//! module adds through its [`crate::kinds::Kind`]. [`super::openmetrics`] encodes them.

use super::openmetrics::{Def, Metrics};
use crate::document::Document;
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

/// The run's time in seconds since the epoch, from the envelope's RFC 3339 `created`.
fn created_seconds(doc: &Document) -> Option<f64> {
    let created = doc.envelope.created.as_deref()?;
    let t = time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

/// What every kind has, read from the summary every report reads.
pub fn add_summary(m: &mut Metrics, doc: &Document, s: &Summary) {
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
