//! `headroom bench net`: what a report shows of a network run.

use crate::document::{Document, DocumentError};
use crate::summary::{put, serde_name, CeilingRow, RateSeries, Summary, TestRow};
use crate::table::mb;
use crate::views::NetView;
use model::units::MB;

/// The run's facts, tests and rows for every renderer ([`Summary::of`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let n: NetView = doc.view(origin)?;
    let m = &n.measurement;
    let c = &m.config;
    let proto = serde_name(&c.protocol).to_uppercase();
    s.target = Some(m.peer.clone());
    if let Some(i) = &m.interface {
        s.context.push(("interface".into(), i.clone()));
    }
    s.context.push(("role".into(), serde_name(&m.role)));
    s.context.push(("streams".into(), c.streams.to_string()));
    if let Some(b) = c.bitrate_bps {
        s.context.push((
            "offered".into(),
            format!("{:.2} Mbit/s per stream", b as f64 / 1e6),
        ));
    }
    // Each direction against its own ceiling (a shaper bounds only what its
    // host sends). A document from before per-direction ceilings has one: it
    // bounds a direction this end sent, or both unless it was a shaper here.
    let sends = |flow| m.streams.iter().any(|x| x.flow == flow && x.local_sends);
    let ceiling_of = |f: &crate::net::FlowVerdict| {
        f.ceiling.clone().or_else(|| {
            n.ceiling
                .clone()
                .filter(|_| f.no_ceiling_reason.is_none())
                .filter(|c| !c.egress_only || sends(f.flow))
        })
    };
    let first = n.flows.first();
    s.no_ceiling_reason = first
        .and_then(|f| f.no_ceiling_reason.clone())
        .or_else(|| n.no_ceiling_reason.clone());
    // Each direction's ceiling is a fact of its own, which compare lines up by
    // direction (the tests carry them too; there is no one ceiling of the run).
    for f in &n.flows {
        let fact = match ceiling_of(f) {
            Some(c) => format!("{} MB/s: {}", mb(c.goodput_bps / MB), c.basis),
            None => format!(
                "none: {}",
                f.no_ceiling_reason
                    .as_deref()
                    .or(n.no_ceiling_reason.as_deref())
                    .unwrap_or("the path has no known ceiling")
            ),
        };
        let flow = serde_name(&f.flow).replace("-to-", " -> ");
        put(s, &format!("ceiling {flow}"), fact);
    }
    for f in &n.flows {
        let mb_s = f.summary.receiver_bps.unwrap_or(0.0) / 8.0 / MB;
        // `client-to-server`, as the document names the flow.
        let flow = serde_name(&f.flow);
        let ceiling = match ceiling_of(f) {
            Some(c) => Ok(CeilingRow {
                mb_s: c.goodput_bps / MB,
                bottleneck: c.basis.clone(),
            }),
            None => Err(f
                .no_ceiling_reason
                .clone()
                .or_else(|| n.no_ceiling_reason.clone())
                .unwrap_or_else(|| "the path has no known ceiling".into())),
        };
        s.tests.push(TestRow {
            efficiency: f.efficiency,
            ceiling: Some(ceiling),
            ..TestRow::single(
                format!("{proto} {}", flow.replace("-to-", " -> ")),
                flow.clone(),
                Some(u64::from(c.len)),
                mb_s,
            )
        });
        // The flow's streams summed interval by interval.
        let streams: Vec<_> = m.streams.iter().filter(|x| x.flow == f.flow).collect();
        let n_iv = streams.iter().map(|x| x.intervals.len()).max().unwrap_or(0);
        // A step per interval: its rate from its start to its end.
        let points = (0..n_iv)
            .filter_map(|i| {
                let ivs: Vec<_> = streams.iter().filter_map(|x| x.intervals.get(i)).collect();
                let first = ivs.first()?;
                let secs = first.end_s - first.start_s;
                let bytes: u64 = ivs.iter().map(|v| v.bytes).sum();
                let v = bytes as f64 / secs / MB;
                (secs > 0.0).then_some([(first.start_s, v), (first.end_s, v)])
            })
            .flatten()
            .collect();
        s.series.push(RateSeries {
            name: flow.replace("-to-", " -> "),
            points,
        });
    }
    Ok(())
}
