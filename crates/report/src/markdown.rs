//! Markdown: the seeds' tables (per test: measured, ceiling, efficiency; per latency
//! thread: Min/Avg/Max and p99), the path and the findings. The same text is the terminal
//! output of `headroom report`, so the screen and the file agree.

use crate::summary::{Place, Summary};
use crate::table::Table;
use std::fmt::Write;

/// One shared table writer: a header row, the separator and the rows, cells escaped.
/// `columns` are the titles and whether each holds numbers, which align right as in the
/// seeds' tables.
pub fn table(out: &mut String, columns: &[(&str, bool)], rows: &[Vec<String>]) {
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let cells: Vec<String> = cells.collect();
        format!("| {} |\n", cells.join(" | "))
    };
    // Titles can be a document's too (a compared run's name).
    out.push_str(&line(
        &mut columns
            .iter()
            .map(|(h, _)| crate::outside::markdown_cell(h)),
    ));
    out.push_str(&line(&mut columns.iter().map(|(_, numeric)| {
        if *numeric { "---:" } else { "---" }.to_string()
    })));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(|c| escape(c))));
    }
}

fn write_table(out: &mut String, t: &Table) {
    table(out, &t.columns, &t.rows);
}

/// Strings in Markdown come from documents: [`crate::outside::markdown`] keeps each in its
/// cell or line.
fn escape(s: &str) -> String {
    crate::outside::markdown(s)
}

/// A string from a document that begins a line.
fn escape_line_start(s: &str) -> String {
    crate::outside::markdown_line_start(s)
}

/// The report of several documents, one section each.
pub fn render(summaries: &[Summary]) -> String {
    let mut out = String::new();
    for s in summaries {
        section(&mut out, s);
    }
    // One newline at the end, whatever the last block was.
    while out.ends_with("\n\n") {
        out.pop();
    }
    // Every string from a document was escaped where it was put; nothing else may be a
    // control character either.
    crate::outside::terminal(&out).into_owned()
}

fn section(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## {}\n", escape(&s.title()));
    let facts = s.facts(escape, |t| format!("`{}`", escape(t).replace('`', "'")));
    if !facts.is_empty() {
        let _ = writeln!(out, "{}\n", facts.join(" · "));
    }
    if let Some(t) = s.context_table() {
        write_table(out, &t);
        out.push('\n');
    }
    for p in s.parts_at(Place::Listing) {
        let _ = writeln!(out, "### {}\n", p.title);
        write_table(out, &p.table);
        out.push('\n');
    }
    if !s.hops.is_empty() {
        let _ = writeln!(out, "### Chain\n");
        for h in &s.hops {
            let _ = writeln!(out, "- {}", escape(h));
        }
        if let Some(why) = &s.chain_stopped {
            let _ = writeln!(out, "\nThe chain stops: {}.", escape(why));
        }
        out.push('\n');
    }
    if s.tests.is_empty() && s.bottleneck.is_none() {
        // A path document: why it has no bottleneck, as `headroom path` says (for what
        // arrives, when a shaper bounds what is sent).
        if let Some(why) = &s.no_ceiling_reason {
            let _ = writeln!(
                out,
                "{}: none known: {}.\n",
                crate::summary::no_bottleneck_title(s),
                escape(why)
            );
        }
    }
    if let Some(t) = s.path_table() {
        let _ = writeln!(out, "### Path\n");
        write_table(out, &t);
        out.push('\n');
    }
    let mut measured = s.parts_at(Place::Measured).peekable();
    if measured.peek().is_some() {
        for p in measured {
            let _ = writeln!(out, "### {}\n", p.title);
            for l in &p.lines {
                let _ = writeln!(out, "{}  ", escape_line_start(l));
            }
            out.push('\n');
            write_table(out, &p.table);
            out.push('\n');
        }
    } else if !s.tests.is_empty() {
        let _ = writeln!(out, "### Throughput\n");
        write_table(out, &s.throughput_table());
        if let Some(t) = s.disk_latency_table() {
            let _ = writeln!(
                out,
                "\nLatency of the same runs, submission to completion (fio's lat):\n"
            );
            write_table(out, &t);
        }
        // The bottleneck named in it came from the document.
        let _ = writeln!(out, "\n{}", escape_line_start(&s.ceiling_sentence()));
        out.push('\n');
    }
    if !s.threads.is_empty() {
        let _ = writeln!(out, "### Latency\n");
        write_table(out, &s.latency_table());
        for l in &s.latency_lines {
            let _ = writeln!(out, "\n{}", escape_line_start(l));
        }
        out.push('\n');
        for p in s.parts_at(Place::UnderLatency) {
            let _ = writeln!(out, "#### {}\n", escape(&p.title));
            write_table(out, &p.table);
            out.push('\n');
        }
    }
    if !s.counters.is_empty() {
        let _ = writeln!(out, "### Counters\n");
        write_table(out, &s.counters_table());
        out.push('\n');
    }
    if !s.findings.is_empty() {
        let _ = writeln!(out, "### Findings\n");
        for f in &s.findings {
            let subject = if f.subject.is_empty() {
                String::new()
            } else {
                format!(" ({})", escape(&f.subject))
            };
            let advice = f
                .advice
                .as_ref()
                .map(|a| format!(" — {}", escape(a)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- **{}**{subject}: {}{advice}",
                f.severity,
                escape(&f.message)
            );
        }
        out.push('\n');
    }
    if !s.notes.is_empty() {
        let _ = writeln!(out, "### Notes\n");
        for n in &s.notes {
            let _ = writeln!(out, "- {}", escape(n));
        }
        out.push('\n');
    }
}
