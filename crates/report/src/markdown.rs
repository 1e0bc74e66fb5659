//! Markdown: the seeds' tables (per test: measured, ceiling, efficiency; per latency
//! thread: Min/Avg/Max and p99), the path and the findings. The same text is the terminal
//! output of `headroom report`, so the screen and the file agree.

use crate::summary::{is_downgraded, Summary};
use std::fmt::Write;

/// One shared table writer: a header row, the separator and the rows, cells escaped.
pub fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let cells: Vec<String> = cells.collect();
        format!("| {} |\n", cells.join(" | "))
    };
    out.push_str(&line(&mut header.iter().map(|h| h.to_string())));
    out.push_str(&line(&mut header.iter().map(|h| {
        // Numbers align right, as in the seeds' tables.
        if h.contains('(') || h.contains('%') || *h == "Efficiency" || h.starts_with("Kernel") {
            "---:".to_string()
        } else {
            "---".to_string()
        }
    })));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(|c| escape(c))));
    }
}

/// `|` would end a cell; a newline would end the row.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn mb(v: f64) -> String {
    format!("{v:.1}")
}

pub fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

fn dash() -> String {
    "–".to_string()
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
    out
}

fn section(out: &mut String, s: &Summary) {
    let _ = writeln!(out, "## {} — {}\n", s.kind, s.origin);
    let facts = s.facts(|t| format!("`{t}`"));
    if !facts.is_empty() {
        let _ = writeln!(out, "{}\n", facts.join(" · "));
    }
    if !s.context.is_empty() {
        let rows: Vec<Vec<String>> = s
            .context
            .iter()
            .filter(|(k, _)| !k.starts_with("link "))
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect();
        if !rows.is_empty() {
            table(out, &["Context", "Value"], &rows);
            out.push('\n');
        }
    }
    if !s.links.is_empty() {
        let _ = writeln!(out, "### Path\n");
        let rows: Vec<Vec<String>> = s
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut mark = Vec::new();
                if Some(i) == s.bottleneck {
                    mark.push("bottleneck".to_string());
                }
                if is_downgraded(l) {
                    mark.push("downgraded".to_string());
                }
                if let Some(n) = &l.note {
                    if !n.contains("downgraded") {
                        mark.push(n.clone());
                    }
                }
                vec![
                    l.name.clone(),
                    l.state.clone(),
                    l.capable_state.clone().unwrap_or_else(dash),
                    mb(l.ceiling_bps / model::units::MB),
                    mark.join(", "),
                ]
            })
            .collect();
        table(
            out,
            &["Link", "State", "Capable", "Ceiling (MB/s)", "Note"],
            &rows,
        );
        out.push('\n');
    }
    if !s.tests.is_empty() {
        let _ = writeln!(out, "### Throughput\n");
        let ceiling = s.ceiling.as_ref().map(|c| mb(c.mb_s)).unwrap_or_else(dash);
        let rows: Vec<Vec<String>> = s
            .tests
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    mb(t.measured_mb_s),
                    t.spread().map(mb).unwrap_or_else(dash),
                    ceiling.clone(),
                    t.efficiency.map(percent).unwrap_or_else(dash),
                    t.cross_check_percent
                        .map(|p| format!("{p:+.2} %"))
                        .unwrap_or_else(dash),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Test",
                "Measured (MB/s)",
                "Spread (MB/s)",
                "Ceiling (MB/s)",
                "Efficiency",
                "Kernel count vs engine",
            ],
            &rows,
        );
        match &s.ceiling {
            Some(c) => {
                let _ = writeln!(out, "\nCeiling: {} ({} MB/s).", c.bottleneck, mb(c.mb_s));
            }
            None => match &s.no_ceiling_reason {
                Some(why) => {
                    let _ = writeln!(out, "\nNo ceiling: {why}.");
                }
                None => {
                    let _ = writeln!(out, "\nNo ceiling: the path was not resolved.");
                }
            },
        }
        out.push('\n');
    }
    if !s.threads.is_empty() {
        let _ = writeln!(out, "### Latency\n");
        let rows: Vec<Vec<String>> = s
            .threads
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.cpu.map(|c| c.to_string()).unwrap_or_else(dash),
                    t.count.to_string(),
                    format!("{:.0}", t.min_us),
                    format!("{:.1}", t.avg_us),
                    format!("{:.0}", t.max_us),
                    t.p99_us
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "overflow".into()),
                    t.missed.to_string(),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Thread",
                "CPU",
                "Samples",
                "Min (us)",
                "Avg (us)",
                "Max (us)",
                "p99 (us)",
                "Missed (periods)",
            ],
            &rows,
        );
        out.push('\n');
    }
    if !s.findings.is_empty() {
        let _ = writeln!(out, "### Findings\n");
        for f in &s.findings {
            let subject = f
                .subject
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default();
            let advice = f
                .advice
                .as_ref()
                .map(|a| format!(" — {a}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- **{}**{subject}: {}{advice}",
                f.severity.to_lowercase(),
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
