//! `headroom bench mmio` and `bench mem`: the Rockchip guide's table (one line per access
//! width, store and load MB/s, ns per access, DRAM beside a region) as aligned columns with
//! the units under the titles, like every other bench; what was measured above it, the
//! findings and notes below.

use crate::summary::{Place, Summary};
use crate::terminal::Style;
use std::fmt::Write as _;

/// The text of `bench mmio` (a region was measured) or `bench mem` (DRAM only), from the
/// run's summary.
pub(crate) fn render(s: &Summary, style: &Style) -> String {
    let mut out = String::new();
    let title = match &s.target {
        Some(t) => format!("headroom bench mmio {t}"),
        None => "headroom bench mem".to_string(),
    };
    let _ = writeln!(out, "{}", style.bold(&title));
    if let Some(p) = s.parts_at(Place::Measured).next() {
        for l in &p.lines {
            let _ = writeln!(out, "{l}");
        }
        out.push('\n');
        crate::terminal::sections::table(&mut out, &p.table, style);
    }
    if !s.findings.is_empty() {
        out.push_str(&crate::terminal::findings(&s.findings, |sev| {
            style.severity(sev)
        }));
    }
    if !s.notes.is_empty() {
        out.push('\n');
        for n in &s.notes {
            let _ = writeln!(out, "{} {n}", style.warn("note:"));
        }
    }
    out
}
