//! Documents as aligned text, one section each: what `report` writes as Markdown (the same
//! facts, tables, findings and notes, from the same [`Summary`]), laid out as every command
//! prints on a terminal. A survey prints its parts so.

use crate::summary::{Part, Place, Summary};
use crate::table::Table;
use crate::terminal::Style;
use std::fmt::Write as _;

/// The sections of `summaries`, a blank line between them.
pub fn render(summaries: &[Summary], style: &Style) -> String {
    summaries
        .iter()
        .map(|s| section(s, style))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A report table as text: each title over its unit, columns of numbers aligned right,
/// the others left, every cell one escaped line.
pub fn table(out: &mut String, t: &Table, style: &Style) {
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
    let numeric: Vec<bool> = t.columns.iter().map(|(_, n)| *n).collect();
    crate::terminal::table_aligned(
        out,
        &rows,
        if two_lines { 2 } else { 1 },
        |c| !numeric.get(c).copied().unwrap_or(false),
        style,
    );
}

/// A titled block: the title, then the table indented by two spaces.
fn titled(out: &mut String, title: &str, t: &Table, style: &Style) {
    // An inventory's title counts its rows already (`PCI: 6 functions`).
    let colon = if title.contains(": ") { "" } else { ":" };
    let _ = writeln!(out, "\n{}{colon}", crate::outside::line(title));
    indented(out, t, style);
}

/// The table indented by two spaces.
fn indented(out: &mut String, t: &Table, style: &Style) {
    let mut body = String::new();
    table(&mut body, t, style);
    for l in body.lines() {
        let _ = writeln!(out, "  {l}");
    }
}

/// One document's section.
pub fn section(s: &Summary, style: &Style) -> String {
    let line = |t: &str| crate::outside::line(t).into_owned();
    let mut out = String::new();
    // The title over a rule: the sections of a survey follow one another.
    let title = line(&s.title());
    let _ = writeln!(out, "{}", style.bold(&title));
    let _ = writeln!(out, "{}", "-".repeat(title.chars().count()));
    let facts = s.facts(str::to_string, str::to_string);
    if !facts.is_empty() {
        let _ = writeln!(out, "{}", line(&facts.join(" · ")));
    }
    let context: Vec<Vec<String>> = s
        .context
        .iter()
        .filter(|(k, _)| !k.starts_with("link "))
        .map(|(k, v)| vec![format!("  {k}"), v.clone()])
        .collect();
    if !context.is_empty() {
        out.push('\n');
        crate::terminal::table_aligned(&mut out, &context, 0, |_| true, style);
    }
    for p in s.parts_at(Place::Listing) {
        titled(&mut out, &p.title, &p.table, style);
    }
    if !s.hops.is_empty() {
        let _ = writeln!(out, "\nChain:");
        for h in &s.hops {
            let _ = writeln!(out, "  {}", line(h));
        }
        if let Some(why) = &s.chain_stopped {
            let _ = writeln!(out, "  The chain stops: {}.", line(why));
        }
    }
    if s.tests.is_empty() && s.bottleneck.is_none() {
        if let Some(why) = &s.no_ceiling_reason {
            let _ = writeln!(
                out,
                "\n{}: none known: {}.",
                crate::summary::no_bottleneck_title(s),
                line(why)
            );
        }
    }
    if let Some(t) = s.path_table() {
        titled(&mut out, "Path", &t, style);
    }
    let mut measured = s.parts_at(Place::Measured).peekable();
    if measured.peek().is_some() {
        for p in measured {
            let _ = writeln!(out, "\n{}:", p.title);
            for l in &p.lines {
                let _ = writeln!(out, "  {}", line(l));
            }
            out.push('\n');
            indented(&mut out, &p.table, style);
        }
    } else if !s.tests.is_empty() {
        titled(&mut out, "Throughput", &s.throughput_table(), style);
        if let Some(t) = s.disk_latency_table() {
            titled(
                &mut out,
                "Latency of the same runs, submission to completion (fio's lat)",
                &t,
                style,
            );
        }
        let _ = writeln!(out, "\n{}", line(&s.ceiling_sentence()));
    }
    if !s.threads.is_empty() {
        titled(&mut out, "Latency", &s.latency_table(), style);
        for l in &s.latency_lines {
            let _ = writeln!(out, "\n{}", line(l));
        }
        for p in s.parts_at(Place::UnderLatency) {
            titled(&mut out, &p.title, &p.table, style);
        }
    }
    if !s.counters.is_empty() {
        titled(&mut out, "Counters", &s.counters_table(), style);
    }
    if !s.findings.is_empty() {
        out.push_str(&crate::terminal::findings(&s.findings, |sev| {
            style.severity(sev)
        }));
    }
    if !s.notes.is_empty() {
        out.push('\n');
        for n in &s.notes {
            let _ = writeln!(out, "{} {}", style.warn("note:"), line(n));
        }
    }
    out
}

/// A benchmark's text made of its summary's parts: `title` in bold, each part's lines and
/// table, then the summary's findings and notes (`bench mmio`, `bench video`).
pub(crate) fn parts_text<'a>(
    title: &str,
    parts: impl Iterator<Item = &'a Part>,
    s: &Summary,
    style: &Style,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(title));
    for p in parts {
        for l in &p.lines {
            let _ = writeln!(out, "{l}");
        }
        out.push('\n');
        table(&mut out, &p.table, style);
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
