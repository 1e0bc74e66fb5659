//! `headroom bench video`: what was captured from and how, the capture's figures as aligned
//! columns, the findings and notes below; `--list-formats` as v4l2-ctl lists them.

use crate::summary::{Place, Summary};
use crate::terminal::Style;
use std::fmt::Write as _;

/// The text of a capture, or of a format listing, from the run's summary.
pub(crate) fn render(s: &Summary, style: &Style) -> String {
    let mut out = String::new();
    let title = format!(
        "headroom bench video {}",
        s.target.as_deref().unwrap_or_default()
    );
    let _ = writeln!(out, "{}", style.bold(title.trim_end()));
    for p in s
        .parts_at(Place::Measured)
        .chain(s.parts_at(Place::Listing))
    {
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
