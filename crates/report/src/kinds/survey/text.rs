//! A survey as the terminal, Markdown and HTML show it: the plan, the summary and
//! conclusions, each part's planned and actual seconds.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The plan as the user reads it before the survey starts (and alone with `survey
/// --dry-run`); `live`: planned for this machine (else for a captured tree, which cannot run
/// here).
pub fn plan_text(plan: &Plan, live: bool) -> String {
    let run: Vec<&model::survey::PlannedPart> = plan.parts.iter().filter(|p| p.run).collect();
    let mut o = String::new();
    if !live {
        o.push_str("Plan only: the tree was captured on another machine; run the survey there.\n");
    }
    o += &format!(
        "Survey plan: {} {} to run, about {} of a {} budget, writing {} MiB\n",
        run.len(),
        if run.len() == 1 { "part" } else { "parts" },
        format_seconds(plan.seconds()),
        format_seconds(plan.budget_s),
        plan.writes_bytes() >> 20
    );
    if plan.scale < 1.0 {
        o.push_str(&format!(
            "  (times shortened to {:.0} % of their defaults to fit the budget)\n",
            plan.scale * 100.0
        ));
    }
    let width = plan.parts.iter().map(|p| p.id.len()).max().unwrap_or(0);
    let mut n = 0;
    for p in &plan.parts {
        if p.run {
            n += 1;
            o.push_str(&format!(
                "  {n:>2}. {:<width$}  {:>7}  {}\n",
                p.id,
                format_seconds(p.seconds()),
                p.what
            ));
            if let Some(r) = &p.reason {
                o.push_str(&format!("      {:<width$}           {r}\n", ""));
            }
            o.push_str(&format!(
                "      {:<width$}           $ headroom {}\n",
                "",
                shell_line(&p.command)
            ));
        } else {
            o.push_str(&format!(
                "   -  {:<width$}  {:>7}  {}\n",
                p.id,
                "",
                p.reason.as_deref().unwrap_or("not run")
            ));
        }
    }
    o
}

/// The survey as Markdown: its own intro, then every part's section.
pub fn markdown(doc: &Document, body: &SurveyDocument, origin: &str) -> String {
    let mut o = markdown_intro(doc, body, origin);
    let (docs, problems) = body.part_docs(origin);
    let summaries: Vec<Summary> = docs.into_iter().map(|d| d.summary).collect();
    o.push_str(&crate::markdown::render(&summaries));
    for p in problems {
        o.push_str(&format!("\nNot shown: {}\n", crate::outside::markdown(&p)));
    }
    // Every string from the document was escaped where it was put; nothing else may be a
    // control character either.
    crate::outside::terminal(&o).into_owned()
}

/// The survey as aligned text, as every command prints on a terminal: the title, the
/// budget, the summary, the conclusions as a list, the parts as a table, then every part's
/// section ([`crate::terminal::sections`]).
pub(crate) fn text(body: &SurveyDocument, how: &crate::kinds::Text<'_>) -> String {
    let (origin, style) = ("survey", &how.style);
    let line = |t: &str| crate::outside::line(t).into_owned();
    let (summary, conclusions) = body.judge(origin);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}",
        style.bold(&line(&format!(
            "headroom survey of {}",
            how.host
                .and_then(model::system::Host::describe)
                .unwrap_or_else(|| "this machine".to_string())
        )))
    );
    let mut facts = Vec::new();
    if let Some(c) = how.created {
        facts.push(c.to_string());
    }
    facts.push(budget_fact(body));
    if body.interrupted {
        facts.push("interrupted: partial results".to_string());
    }
    let _ = writeln!(o, "{}\n", line(&facts.join(" · ")));
    let _ = writeln!(o, "{}", line(&summary));
    if conclusions.is_empty() {
        let _ = writeln!(o, "\nConclusions: none");
    } else {
        let _ = writeln!(o, "\nConclusions, by what they cost:");
        for (i, c) in conclusions.iter().enumerate() {
            let cost = if c.cost.is_empty() {
                String::new()
            } else {
                format!(" (costs {})", c.cost)
            };
            let _ = writeln!(
                o,
                "  {:>2}. {}{}: {}",
                i + 1,
                line(&c.subject),
                line(&cost),
                line(&c.evidence)
            );
            if let Some(a) = &c.action {
                let _ = writeln!(o, "      -> {}", line(a));
            }
        }
    }
    let _ = writeln!(o, "\nParts: {}", body.part_counts());
    let mut rows = vec![PARTS_COLUMNS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect::<Vec<_>>()];
    rows.extend(parts_rows(body));
    let mut table = String::new();
    crate::terminal::table_aligned(
        &mut table,
        &rows,
        1,
        |c| !PARTS_COLUMNS.get(c).is_some_and(|(_, numeric)| *numeric),
        style,
    );
    for l in table.lines() {
        let _ = writeln!(o, "  {l}");
    }
    let (docs, problems) = body.part_docs(origin);
    let summaries: Vec<Summary> = docs.into_iter().map(|d| d.summary).collect();
    if !summaries.is_empty() {
        o.push('\n');
        o.push_str(&crate::terminal::sections::render(&summaries, style));
    }
    for p in problems {
        let _ = writeln!(o, "\nNot shown: {}", line(&p));
    }
    o
}

/// The survey as one HTML page.
pub fn html(
    doc: &Document,
    body: &SurveyDocument,
    origin: &str,
) -> Result<String, crate::html::PlotError> {
    let intro = html_intro(doc, body, origin);
    let (docs, _) = body.part_docs(origin);
    let summaries: Vec<Summary> = docs.into_iter().map(|d| d.summary).collect();
    crate::html::render_with_intro(&intro, &summaries)
}

// ---------------------------------------------------------------------------------------
// The plan

/// The survey's own part of a report (title, summary, conclusions, parts), in Markdown; the
/// parts' sections follow it (`markdown::render` of [`SurveyDocument::part_docs`]).
pub fn markdown_intro(doc: &Document, body: &SurveyDocument, origin: &str) -> String {
    let (summary, conclusions) = body.judge(origin);
    let mut o = String::new();
    let md = crate::outside::markdown;
    let _ = writeln!(o, "# headroom survey of {}\n", md(&host_of(doc)));
    let mut facts = vec![crate::outside::markdown_line_start(origin)];
    if let Some(c) = &doc.envelope.created {
        facts.push(md(c));
    }
    facts.push(md(&budget_fact(body)));
    if body.interrupted {
        facts.push("interrupted: partial results".to_string());
    }
    let _ = writeln!(o, "{}\n", facts.join(" · "));
    let _ = writeln!(o, "{}\n", crate::outside::markdown_line_start(&summary));
    let _ = writeln!(o, "## Conclusions, by what they cost\n");
    if conclusions.is_empty() {
        let _ = writeln!(o, "No finding.\n");
    } else {
        let t = conclusions_table(&conclusions);
        crate::markdown::table(&mut o, &t.columns, &t.rows);
        o.push('\n');
    }
    let _ = writeln!(o, "## Parts: {}\n", body.part_counts());
    crate::markdown::table(&mut o, &PARTS_COLUMNS, &parts_rows(body));
    o.push('\n');
    o
}

/// The conclusions as a table, in every format: number, cost, subject, evidence, action. A
/// cost is what a finding loses in its own unit (MB/s against a ceiling, us of wake-up
/// latency): most findings have none to put there, so the column is there only when one
/// has, with a dash for the others.
pub(super) fn conclusions_table(conclusions: &[Conclusion]) -> crate::table::Table {
    let costs = conclusions.iter().any(|c| !c.cost.is_empty());
    let rows = conclusions
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut row = vec![(i + 1).to_string()];
            if costs {
                row.push(if c.cost.is_empty() {
                    crate::table::dash()
                } else {
                    c.cost.clone()
                });
            }
            row.extend([
                c.subject.clone(),
                c.evidence.clone(),
                c.action.clone().unwrap_or_else(crate::table::dash),
            ]);
            row
        })
        .collect();
    let mut columns = vec![("#", true)];
    if costs {
        columns.push(("Cost", true));
    }
    columns.extend([("Subject", false), ("Evidence", false), ("Action", false)]);
    crate::table::Table::new(&columns, rows)
}

/// The budget and, once the survey ran, what it took: `budget 1 min, took 58 s`.
pub(super) fn budget_fact(body: &SurveyDocument) -> String {
    let budget = format!("budget {}", format_seconds(body.plan.budget_s));
    let stopping = body
        .parts
        .iter()
        .find_map(|p| Some((p, p.stopping_s?)))
        .filter(|(_, s)| *s >= 0.5)
        .map(|(p, s)| {
            format!(
                " ({} took {} to stop after the budget's end)",
                p.id,
                format_seconds(s)
            )
        })
        .unwrap_or_default();
    match body.seconds {
        Some(s) => format!("{budget}, took {}{stopping}", format_seconds(s)),
        None => budget,
    }
}

/// The parts table's columns (name, numeric), in Markdown and HTML alike.
pub(super) const PARTS_COLUMNS: [(&str, bool); 5] = [
    ("Part", false),
    ("Status", false),
    ("Planned (s)", true),
    ("Took (s)", true),
    ("What, or why not", false),
];

pub(super) fn parts_rows(body: &SurveyDocument) -> Vec<Vec<String>> {
    let secs = |s: Option<f64>| s.map_or_else(crate::table::dash, |s| format!("{s:.1}"));
    body.parts
        .iter()
        .map(|p| {
            let planned = body.plan.parts.iter().find(|x| x.id == p.id);
            let what = match (&p.reason, planned) {
                (Some(r), _) => r.clone(),
                (None, Some(x)) => x.what.clone(),
                (None, None) => String::new(),
            };
            // Planned, and what it was given when that differs (fitted into what was left).
            let plan = match (p.planned_s, p.given_s) {
                (Some(a), Some(g)) if (a - g).abs() >= 0.05 => {
                    format!("{a:.1}, given {g:.1}")
                }
                (a, _) => secs(a),
            };
            vec![
                p.id.clone(),
                p.status.word().to_string(),
                plan,
                secs(p.seconds),
                what,
            ]
        })
        .collect()
}

/// The survey's own part of an HTML report, to put before the parts' sections.
pub fn html_intro(doc: &Document, body: &SurveyDocument, origin: &str) -> String {
    use crate::html::esc;
    let (summary, conclusions) = body.judge(origin);
    let mut o = String::new();
    let host = host_of(doc);
    let _ = writeln!(o, "<section><h2>Survey of {}</h2>", esc(&host));
    let _ = writeln!(o, "<p>{}</p>", esc(&budget_fact(body)));
    let _ = writeln!(o, "<p class=\"summary\">{}</p>", esc(&summary));
    let _ = writeln!(o, "<h3>Conclusions, by what they cost</h3>");
    let t = conclusions_table(&conclusions);
    html_table(&mut o, &t.columns, &t.rows);
    let _ = writeln!(o, "<h3>Parts: {}</h3>", esc(&body.part_counts()));
    html_table(&mut o, &PARTS_COLUMNS, &parts_rows(body));
    o.push_str("</section>\n");
    o
}

/// One table of the survey's HTML intro, cells escaped, numbers aligned right.
pub(super) fn html_table(o: &mut String, columns: &[(&str, bool)], rows: &[Vec<String>]) {
    use crate::html::esc;
    o.push_str("<table><thead><tr>");
    for (name, _) in columns {
        let _ = write!(o, "<th>{}</th>", esc(name));
    }
    o.push_str("</tr></thead><tbody>\n");
    for r in rows {
        o.push_str("<tr>");
        for (cell, (_, numeric)) in r.iter().zip(columns) {
            let class = if *numeric { " class=\"n\"" } else { "" };
            let _ = write!(o, "<td{class}>{}</td>", esc(cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
}
