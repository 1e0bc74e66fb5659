//! `headroom report RUN.json... [--md | --html FILE]`: result documents (files or history
//! ids) as Markdown on stdout or as one self-contained HTML file. With `--json`, one
//! document: the input itself, or a document of kind `report` holding several inputs in
//! `documents`.

use crate::output::GlobalArgs;
use clap::Args;
use report::Summary;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result documents: files written by `--json`, or history ids (`12` or `#12`).
    #[arg(required = true, value_name = "RUN.json")]
    pub runs: Vec<String>,

    /// Markdown on stdout (also the default).
    #[arg(long, conflicts_with = "html")]
    pub md: bool,

    /// Write one self-contained HTML file with plots (no network needed to view it).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// The history database for ids (default: $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    // A bad input is reported and skipped: the others still make a report.
    let mut failed = false;
    let mut docs = Vec::new();
    // Markdown and HTML of each input in order: a survey brings its own intro and its
    // parts' sections, any other document one section.
    let mut md = String::new();
    let mut intros = String::new();
    let mut summaries = Vec::new();
    for input in &args.runs {
        let loaded = crate::history::load(input, args.db.as_deref())
            .and_then(|(doc, origin)| unpack(doc, &origin));
        let loaded = match loaded {
            Ok(x) => x,
            Err(e) => {
                crate::terminal::error(crate::terminal::sentence(&e));
                failed = true;
                continue;
            }
        };
        for (doc, origin) in loaded {
            if doc.kind() == "survey" {
                match report::survey::SurveyBody::of(&doc, &origin) {
                    Ok(body) => {
                        md.push_str(&crate::survey::markdown(&doc, &body, &origin));
                        intros.push_str(&report::survey::html_intro(&doc, &body, &origin));
                        let (parts, _) = body.part_docs(&origin);
                        summaries.extend(parts.into_iter().map(|p| p.summary));
                    }
                    Err(e) => {
                        eprintln!("headroom: error: {e}");
                        failed = true;
                        continue;
                    }
                }
            } else {
                match Summary::of(&doc, &origin) {
                    Ok(s) => {
                        md.push_str(&report::markdown::render(std::slice::from_ref(&s)));
                        summaries.push(s);
                    }
                    Err(e) => {
                        eprintln!("headroom: error: {e}");
                        failed = true;
                        continue;
                    }
                }
            }
            if !md.ends_with("\n\n") {
                md.push('\n');
            }
            docs.push(doc);
        }
    }
    if docs.is_empty() {
        anyhow::bail!("no result document could be read: nothing to report");
    }
    while md.ends_with("\n\n") {
        md.pop();
    }
    if let Some(file) = &args.html {
        let html = report::html::render_with_intro(&intros, &summaries)?;
        report::write_atomic(file, html.as_bytes())?;
        eprintln!("headroom: wrote {}", file.display());
    } else if global.json {
        // One document on stdout, as every command prints: the input itself when there is
        // one, else a document of kind `report` whose `documents` holds the inputs in order.
        if let [doc] = docs.as_slice() {
            crate::output::print_document(doc)?;
        } else {
            let documents: Vec<serde_json::Value> = docs.iter().map(|d| d.to_value()).collect();
            crate::output::print_result("report", &serde_json::json!({ "documents": documents }))?;
        }
    } else {
        crate::out!("{md}")?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The documents of `doc`: itself, or those a `report --json` of several inputs holds in
/// `documents` (named `origin #1`, `origin #2`...).
fn unpack(doc: report::Document, origin: &str) -> anyhow::Result<Vec<(report::Document, String)>> {
    if doc.envelope.kind != "report" {
        return Ok(vec![(doc, origin.to_string())]);
    }
    let inner = doc
        .body
        .get("documents")
        .and_then(|d| d.as_array())
        .ok_or_else(|| {
            anyhow::anyhow!("{origin} is a report without its `documents` list: nothing to show")
        })?;
    inner
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let name = format!("{origin} #{}", i + 1);
            Ok((report::Document::parse(&v.to_string(), &name)?, name))
        })
        .collect()
}
