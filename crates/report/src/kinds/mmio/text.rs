//! `headroom bench mmio` and `bench mem`: the Rockchip guide's table (one line per access
//! width, store and load MB/s, ns per access, DRAM beside a region) as aligned columns with
//! the units under the titles, like every other bench; what was measured above it, the
//! findings and notes below.

use crate::summary::Summary;
use crate::table::Table;
use crate::terminal::Style;
use std::fmt::Write as _;

/// The text of `bench mmio` (a region was measured) or `bench mem` (DRAM only), from the
/// run's summary.
pub fn render(s: &Summary, style: &Style) -> String {
    let mut out = String::new();
    let title = match &s.target {
        Some(t) => format!("headroom bench mmio {t}"),
        None => "headroom bench mem".to_string(),
    };
    let _ = writeln!(out, "{}", style.bold(&title));
    if let Some((table, lines)) = &s.mmio {
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        out.push('\n');
        out.push_str(&table_text(table, style));
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

/// A report table on the terminal: each title over its unit (`Store` / `(MB/s)`), numbers
/// aligned right, the leading text columns left.
pub fn table_text(t: &Table, style: &Style) -> String {
    let (titles, units): (Vec<String>, Vec<String>) = t
        .columns
        .iter()
        .map(|(c, _)| match c.split_once(" (") {
            Some((title, unit)) => (title.to_string(), format!("({unit}")),
            None => (c.to_string(), String::new()),
        })
        .unzip();
    let mut rows = vec![titles];
    let two_lines = units.iter().any(|u| !u.is_empty());
    if two_lines {
        rows.push(units);
    }
    rows.extend(t.rows.iter().cloned());
    let left = t.columns.iter().take_while(|(_, numeric)| !numeric).count();
    let mut out = String::new();
    crate::terminal::table(&mut out, &rows, if two_lines { 2 } else { 1 }, left, style);
    out
}
