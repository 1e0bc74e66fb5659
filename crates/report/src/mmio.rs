//! Kind `mmio` (`bench mmio`, `bench mem`): CPU access to a BAR or file by width, with DRAM
//! beside it, in the shape of the Rockchip guide's table (seeds/000 section 5.4: one row per
//! access kind, Store (MB/s) and Load (MB/s)), plus the time per access and the BAR as a
//! fraction of DRAM.

use crate::table::{dash, mb, Table};
use model::mmio::{AccessOp, AccessResult, AccessWidth, MemCopyResult, PairError};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The body of an `mmio` document (only what reports read). Its results are model's types,
/// as `bench mmio` and `bench mem` write them; the region is described by the command.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct MmioView {
    #[serde(default)]
    pub region: Option<RegionView>,
    #[serde(default)]
    pub results: Vec<AccessResult>,
    #[serde(default)]
    pub errors: Vec<PairError>,
    #[serde(default)]
    pub memory: Option<MemoryView>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct RegionView {
    #[serde(default)]
    pub given: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub bar: Option<String>,
    #[serde(default)]
    pub bar_bytes: Option<u64>,
    #[serde(default)]
    pub prefetchable: Option<bool>,
    #[serde(default)]
    pub is_64bit: Option<bool>,
    #[serde(default)]
    pub write_combining: bool,
    #[serde(default)]
    pub window_offset: u64,
    #[serde(default)]
    pub window_bytes: u64,
    #[serde(default)]
    pub writable: bool,
    #[serde(default)]
    pub driver: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct MemoryView {
    #[serde(default)]
    pub buffer_bytes: u64,
    #[serde(default)]
    pub llc_bytes: Option<u64>,
    #[serde(default)]
    pub results: Vec<AccessResult>,
    #[serde(default)]
    pub copy: Option<MemCopyResult>,
}

impl MmioView {
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

    /// The seed's table: per access kind, store and load MB/s and ns per access (median /
    /// p99); DRAM's store and load beside them and the region as a percentage of DRAM.
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
        let ns = |r: &Option<AccessResult>| match r {
            Some(r) if r.accesses > 0 => {
                format!("{:.1} / {:.1}", r.ns_per_access_p50, r.ns_per_access_p99)
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
                    ("Store p50 / p99 (ns)", true),
                    ("Load p50 / p99 (ns)", true),
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
                    ("Store p50 / p99 (ns)", true),
                    ("Load p50 / p99 (ns)", true),
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

    #[test]
    fn the_seeds_rk3588_rows_with_dram_beside() {
        // seeds/000 section 5.4.1, RK3588: 32-bit store/load 53/4 MB/s, 128-bit 203/16.
        let v: MmioView = serde_json::from_value(serde_json::json!({
            "region": {"given": "0000:01:00.0:2", "kind": "bar", "file": "resource2",
                "bar": "0000:01:00.0:2"},
            "results": [access("32", "store", 53.0), access("32", "load", 4.0),
                access("128", "store", 203.0), access("128", "load", 16.0)],
            "memory": {"buffer_bytes": 134217728, "results": [access("32", "store", 5300.0),
                access("32", "load", 400.0), access("128", "load", 1600.0)]}
        }))
        .unwrap();
        let t = v.table();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            t.rows[0],
            vec![
                "32-bit",
                "53.0",
                "4.0",
                "1.0 / 2.0",
                "1.0 / 2.0",
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
        let v: MmioView = serde_json::from_value(serde_json::json!({
            "region": {"kind": "file", "file": "/tmp/x"}, "results": [a]
        }))
        .unwrap();
        assert_eq!(v.table().rows[0][2], "1.5 (SIGBUS at 0x4000)");
    }
}
