//! `headroom bench mmio` and `bench mem`: what a report shows of loads and stores.

use crate::document::{Document, DocumentError};
use crate::summary::{Summary, TestRow};

/// The run's facts, tests and rows for every renderer ([`Summary::of`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let m: crate::mmio::MmioView = doc.view(origin)?;
    s.target = m.region.as_ref().map(|r| r.given.clone());
    // One test per (where, width, operation), so compare and the history line
    // them up like any throughput.
    let mem = m.memory.iter().flat_map(|x| x.results.iter());
    let region = m.results.iter().map(|r| (m.has_region(), r));
    for (is_region, r) in region.chain(mem.map(|r| (false, r))) {
        let place = if is_region { "" } else { "DRAM " };
        s.tests.push(TestRow::single(
            format!("{place}{} {}", r.width.label(), r.op),
            r.op.to_string(),
            None,
            r.mb_per_s,
        ));
    }
    if let Some(c) = m.memory.as_ref().and_then(|x| x.copy.as_ref()) {
        s.tests.push(TestRow::single(
            "DRAM memcpy (C library)".into(),
            "copy".into(),
            Some(c.block_bytes),
            c.mb_per_s,
        ));
    }
    s.mmio = Some((m.table(), m.describe()));
    Ok(())
}
