//! Kind `mmio` (`bench mmio`, `bench mem`): CPU access to a BAR or file by width, with DRAM
//! beside it: the document, and its table in the shape of the Rockchip guide's (seeds/000
//! section 5.4: one row per access kind, Store (MB/s) and Load (MB/s)), plus the time per
//! access and the BAR as a fraction of DRAM.

/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::DocumentKind;
use crate::document::{Document, DocumentError};
use crate::summary::{Summary, TestRow};
use crate::table::{dash, mb, Table};
use model::mmio::{AccessOp, AccessResult, AccessWidth, MemCopyResult, PairError, Region};
use model::Finding;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// What `headroom bench mmio --json` and `bench mem --json` write (the envelope aside), read
/// back by report, compare and history. `bench mem` measures DRAM alone: no region.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MmioDocument {
    pub parameters: Parameters,
    pub region: Option<Region>,
    pub results: Vec<AccessResult>,
    #[serde(default)]
    pub errors: Vec<PairError>,
    pub memory: Option<Memory>,
    #[serde(default)]
    pub path: Option<model::path::TargetPath>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub interrupted: bool,
    /// A BAR's path sampled beside the engine: its links' AER errors and changes (not with
    /// `--no-watch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<super::count::BesideCounters>,
}

/// The time per access is a batch's time over its accesses (one sweep of a chunk of the
/// window, timed whole): a mean, which the CPU's overlapping of accesses takes below one
/// cycle in cache, never one access's latency. The median and 99th percentile are over the
/// batches; the titles say so.
const STORE_PER_ACCESS: &str = "Store per access, batch p50 / p99 (ns)";
const LOAD_PER_ACCESS: &str = "Load per access, batch p50 / p99 (ns)";

/// The DRAM yardstick: the same widths on a buffer larger than the last-level cache.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Memory {
    pub buffer_bytes: u64,
    pub llc_bytes: Option<u64>,
    pub results: Vec<AccessResult>,
    pub copy: Option<MemCopyResult>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Parameters {
    pub widths: Vec<AccessWidth>,
    pub ops: Vec<AccessOp>,
    pub threads: u32,
    pub duration_s: f64,
    /// The instruction of the 128-bit accesses.
    pub simd: String,
}

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let m = <MmioDocument as super::KindDocument>::read(doc, origin)?;
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
    s.parts.push(crate::summary::Part {
        place: crate::summary::Place::Measured,
        title: "CPU access by width".to_string(),
        lines: m.describe(),
        table: m.table(),
    });
    Ok(())
}

impl MmioDocument {
    /// What a stop left of the run, after "interrupted by SIGINT (Ctrl-C): ".
    pub fn stopped_with(&self, measured: bool) -> String {
        if measured {
            return "the results above are those measured before it".to_string();
        }
        match (&self.region, &self.memory) {
            // bench mem: every page of the buffer is written before the first width runs (so
            // none is the shared zero page), which takes a while for a large buffer.
            (None, Some(m)) => format!(
                "nothing was measured: it came while the {} MiB buffer was being filled, before \
                 the first width ran",
                m.buffer_bytes >> 20
            ),
            _ => "nothing was measured: it came before the first width ran".to_string(),
        }
    }

    /// Whether the document measured a region (`bench mmio`) or only DRAM (`bench mem`).
    pub fn has_region(&self) -> bool {
        self.region.is_some()
    }

    /// The widths measured, narrowest first, memcpy last.
    fn widths(&self) -> Vec<AccessWidth> {
        let mem = self.memory.iter().flat_map(|m| m.results.iter());
        let mut seen: Vec<AccessWidth> = self.results.iter().chain(mem).map(|r| r.width).collect();
        seen.sort();
        seen.dedup();
        seen
    }

    /// The seed's table: per access kind, store and load MB/s and ns per access (of
    /// batches: median / p99); DRAM's store and load beside them and the region as a
    /// percentage of DRAM.
    pub fn table(&self) -> Table {
        let find = |rs: &[AccessResult], w: AccessWidth, op: AccessOp| -> Option<AccessResult> {
            rs.iter().find(|r| r.width == w && r.op == op).cloned()
        };
        let empty: Vec<AccessResult> = Vec::new();
        let mem = self.memory.as_ref().map_or(&empty, |m| &m.results);
        let rate = |r: &Option<AccessResult>| match r {
            Some(r) => match &r.fault {
                Some(f) => format!("{} ({} at {:#x})", mb(r.mb_per_s), f.signal, f.offset),
                None => mb(r.mb_per_s),
            },
            None => dash(),
        };
        // Below 10 ns with two decimals: a batch's mean time per access in cache is a
        // fraction of a nanosecond.
        let ns = |r: &Option<AccessResult>| match r {
            Some(r) if r.accesses > 0 => {
                let f = |v: f64| {
                    if v < 10.0 {
                        format!("{v:.2}")
                    } else {
                        format!("{v:.1}")
                    }
                };
                format!("{} / {}", f(r.ns_per_access_p50), f(r.ns_per_access_p99))
            }
            _ => dash(),
        };
        let ratio = |a: &Option<AccessResult>, d: &Option<AccessResult>| match (a, d) {
            (Some(a), Some(d)) if d.mb_per_s > 0.0 => {
                format!("{:.2} %", a.mb_per_s / d.mb_per_s * 100.0)
            }
            _ => dash(),
        };
        // The access, then the store and load MB/s and ns per access of `rs`.
        let cells = |rs: &[AccessResult], w: AccessWidth| {
            let (s, l) = (find(rs, w, AccessOp::Store), find(rs, w, AccessOp::Load));
            let row = vec![w.label().to_string(), rate(&s), rate(&l), ns(&s), ns(&l)];
            (row, s, l)
        };
        let mut rows = Vec::new();
        if self.has_region() {
            for w in self.widths() {
                let (mut row, s, l) = cells(&self.results, w);
                let (ds, dl) = (find(mem, w, AccessOp::Store), find(mem, w, AccessOp::Load));
                row.extend([rate(&ds), rate(&dl), ratio(&s, &ds), ratio(&l, &dl)]);
                rows.push(row);
            }
            Table {
                columns: vec![
                    ("Access", false),
                    ("Store (MB/s)", true),
                    ("Load (MB/s)", true),
                    (STORE_PER_ACCESS, true),
                    (LOAD_PER_ACCESS, true),
                    ("DRAM store (MB/s)", true),
                    ("DRAM load (MB/s)", true),
                    ("Store / DRAM", true),
                    ("Load / DRAM", true),
                ],
                rows,
            }
        } else {
            for w in self.widths() {
                rows.push(cells(mem, w).0);
            }
            Table {
                columns: vec![
                    ("Access", false),
                    ("DRAM store (MB/s)", true),
                    ("DRAM load (MB/s)", true),
                    (STORE_PER_ACCESS, true),
                    (LOAD_PER_ACCESS, true),
                ],
                rows,
            }
        }
    }

    /// One line on what was measured: the BAR (size, prefetchable, write-combining) or the
    /// file, the window, and the DRAM buffer.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(r) = &self.region {
            let mut s = match &r.bar {
                Some(bar) => format!("BAR {bar} via {}", r.file),
                None => format!("{} {}", r.kind, r.file),
            };
            if let Some(b) = r.bar_bytes {
                let _ = write!(s, ", {} bytes", b);
            }
            let mut attrs = Vec::new();
            if let Some(b) = r.is_64bit {
                attrs.push(if b { "64-bit" } else { "32-bit" });
            }
            if let Some(p) = r.prefetchable {
                attrs.push(if p {
                    "prefetchable"
                } else {
                    "non-prefetchable"
                });
            }
            if r.kind == "bar" {
                attrs.push(if r.write_combining {
                    "mapped write-combining"
                } else {
                    "mapped uncached"
                });
            }
            attrs.push(if r.writable {
                "read-write"
            } else {
                "read-only"
            });
            let _ = write!(
                s,
                " ({}); window {:#x}..{:#x}",
                attrs.join(", "),
                r.window_offset,
                r.window_offset + r.window_bytes
            );
            if let Some(d) = &r.driver {
                let _ = write!(s, "; driver {d} bound");
            }
            out.push(s);
        }
        let all = self
            .results
            .iter()
            .chain(self.memory.iter().flat_map(|m| m.results.iter()));
        let (bytes, batches) = all.fold((0, 0), |(a, b), r| (a + r.bytes, b + r.batches));
        if let Some(per_batch) = bytes.checked_div(batches) {
            out.push(format!(
                "Per access: a batch of accesses (one sweep of about {} KiB) timed as a whole \
                 and divided by its accesses; p50 and p99 over the batches. A mean, not one \
                 access's latency: a CPU overlaps its loads and stores, which takes it below \
                 one cycle in cache",
                per_batch.div_ceil(1024)
            ));
        }
        if let Some(m) = &self.memory {
            let llc = m
                .llc_bytes
                .map(|l| format!(" (last-level cache {} KiB)", l >> 10))
                .unwrap_or_default();
            out.push(format!("DRAM buffer {} MiB{llc}", m.buffer_bytes >> 20));
            if let Some(c) = &m.copy {
                out.push(format!(
                    "DRAM memcpy (C library, {} MiB per call): {} MB/s copied",
                    c.block_bytes >> 20,
                    mb(c.mb_per_s)
                ));
            }
        }
        out
    }
}

/// `bench mmio` as every report reads it.
pub struct MmioKind;

impl super::Kind for MmioKind {
    fn kind(&self) -> DocumentKind {
        <MmioDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["parameters", "results"]
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
}

impl super::KindDocument for MmioDocument {
    const KIND: DocumentKind = DocumentKind::Mmio;

    /// The tables of every width's throughput and latency, from the document's summary.
    fn text(&self, how: &super::Text<'_>) -> String {
        super::text_of_summary(self, how, text::render)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A result as `bench mmio` writes it.
    fn access(width: &str, op: &str, mb_per_s: f64) -> serde_json::Value {
        serde_json::to_value(AccessResult {
            width: width.parse().unwrap(),
            op: op.parse().unwrap(),
            threads: 1,
            accesses: 10,
            bytes: 40,
            elapsed_ns: 1000,
            mb_per_s,
            ns_per_access_p50: 1.0,
            ns_per_access_p99: 2.0,
            batches: 1,
            fault: None,
        })
        .unwrap()
    }

    /// A document as `bench mmio` writes it, with `fields` in place of its own.
    fn document(fields: serde_json::Value) -> MmioDocument {
        let mut d = serde_json::json!({
            "parameters": {"widths": [], "ops": [], "threads": 1, "duration_s": 1.0,
                "simd": "SSE2 movdqa"},
            "region": null, "results": [], "errors": [], "memory": null, "path": null,
            "findings": [], "notes": [], "interrupted": false
        });
        for (k, v) in fields.as_object().unwrap() {
            d[k] = v.clone();
        }
        serde_json::from_value(d).unwrap()
    }

    /// A region as `bench mmio` writes it, with `fields` in place of its own.
    fn region(fields: serde_json::Value) -> serde_json::Value {
        let mut r = serde_json::json!({
            "given": "", "kind": "file", "file": "", "bar": null, "bar_bytes": null,
            "bar_start": null, "prefetchable": null, "is_64bit": null,
            "write_combining": false, "write_combining_available": null,
            "window_offset": 0, "window_bytes": 4096, "writable": false, "driver": null
        });
        for (k, v) in fields.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    /// The time per access is a batch's mean (0.1 ns for a load in cache, below one CPU
    /// cycle): the columns and the lines above the table say so, never a bare "p50 / p99"
    /// that reads as the percentiles of single accesses.
    #[test]
    fn time_per_access_is_labelled_as_the_mean_of_a_batch() {
        let mut fast = access("64", "load", 50_000.0);
        fast["ns_per_access_p50"] = 0.16.into();
        fast["ns_per_access_p99"] = 0.21.into();
        fast["bytes"] = (64u64 << 20).into();
        fast["batches"] = 1024.into();
        let v = document(serde_json::json!({
            "region": null, "results": [],
            "memory": {"buffer_bytes": 134217728, "llc_bytes": null, "copy": null,
                "results": [fast]}
        }));
        let t = v.table();
        let titles: Vec<&str> = t.columns.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            titles[3..],
            [
                "Store per access, batch p50 / p99 (ns)",
                "Load per access, batch p50 / p99 (ns)"
            ]
        );
        assert_eq!(t.rows[0][4], "0.16 / 0.21");
        let lines = v.describe();
        assert!(
            lines.iter().any(|l| l.starts_with(
                "Per access: a batch of accesses (one sweep of about 64 KiB) timed as a whole"
            ) && l.contains("A mean, not one access's latency")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_seeds_rk3588_rows_with_dram_beside() {
        // seeds/000 section 5.4.1, RK3588: 32-bit store/load 53/4 MB/s, 128-bit 203/16.
        let v = document(serde_json::json!({
            "region": region(serde_json::json!({"given": "0000:01:00.0:2", "kind": "bar",
                "file": "resource2", "bar": "0000:01:00.0:2"})),
            "results": [access("32", "store", 53.0), access("32", "load", 4.0),
                access("128", "store", 203.0), access("128", "load", 16.0)],
            "memory": {"buffer_bytes": 134217728, "llc_bytes": null, "copy": null,
                "results": [access("32", "store", 5300.0), access("32", "load", 400.0),
                access("128", "load", 1600.0)]}
        }));
        let t = v.table();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            t.rows[0],
            vec![
                "32-bit",
                "53.0",
                "4.0",
                "1.00 / 2.00",
                "1.00 / 2.00",
                "5300.0",
                "400.0",
                "1.00 %",
                "1.00 %"
            ]
        );
        assert_eq!(t.rows[1][0], "128-bit SIMD");
        assert_eq!(t.rows[1][5], "–", "no DRAM 128-bit store was measured");
        assert_eq!(t.rows[1][8], "1.00 %");
    }

    #[test]
    fn a_fault_is_named_in_its_cell() {
        let mut a = access("64", "load", 1.5);
        a["fault"] = serde_json::json!({"signal": "SIGBUS", "offset": 16384});
        let v = document(serde_json::json!({
            "region": region(serde_json::json!({"kind": "file", "file": "/tmp/x"})),
            "results": [a]
        }));
        assert_eq!(v.table().rows[0][2], "1.5 (SIGBUS at 0x4000)");
    }
}
