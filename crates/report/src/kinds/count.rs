//! `headroom count`: what a report shows of counted events.

use crate::document::{Document, DocumentError};
use crate::summary::{CounterRow, Summary};

/// The run's facts, tests and rows for every renderer ([`Summary::of`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let c: crate::count::CountDocument = doc.view(origin)?;
    s.target = Some(c.target.trim_matches('\'').to_string());
    s.context.push(("scope".into(), c.scope.replace('_', " ")));
    use crate::count::CountStatus;
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
