//! `headroom report RUN.json... [--md [FILE] | --html [FILE]]`: result documents (files or
//! history ids) as Markdown or as one self-contained HTML file, on stdout or in FILE. With
//! `--json`, one document: the input itself, or a document of kind `report` holding several
//! inputs in `documents`.

use crate::output::GlobalArgs;
use clap::Args;
use report::Document;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
#[command(after_help = "\
--md and --html take an optional FILE alike: without it the report goes to stdout. A value that \
is itself a result document (a JSON file) or a history id is read as an input, never written \
over: `report --md run.json` prints run.json's report. Every input is read before anything is \
printed or written; one that cannot be read is named and the others still make the report \
(exit 1).\n\
Examples:\n  headroom report run.json\n  headroom report a.json b.json --md report.md\n  \
headroom report survey.json --html board.html")]
pub struct ReportArgs {
    /// Result documents: files written by `--json`, or history ids (`12` or `#12`).
    // Not required by clap: `report --md run.json` gives its one input as --md's value.
    #[arg(value_name = "RUN.json")]
    pub runs: Vec<String>,

    /// Markdown (also the default), on stdout or written to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with = "html")]
    pub md: Option<Option<PathBuf>>,

    /// One self-contained HTML file with plots (no network needed to view it), written to
    /// FILE or printed on stdout.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub html: Option<Option<PathBuf>>,

    /// The history for ids and HOST:latest: an SQLite FILE or postgresql://USER@HOST/DB
    /// (default: HEADROOM_DB, else $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<PathBuf>,

    /// The documents' metrics on stdout: OpenMetrics 1.0 text (openmetrics) or the
    /// Prometheus text format 0.0.4 (prometheus); or their checks and figures as LAVA
    /// test-case lines (lava) or KCIDB JSON (kcidb). Several inputs are told apart by a
    /// `document` label (1, 2...).
    #[arg(long, value_parser = crate::output::FormatAmong(crate::output::Format::OF_DOCUMENTS), conflicts_with_all = ["md", "html"])]
    pub format: Option<crate::output::Format>,
}

/// Where the report goes: stdout, or a file.
enum Destination {
    Stdout,
    File(PathBuf),
}

/// The value given to `--md`/`--html`: the file to write, or (when it is a result document
/// or a history id, as in `report --md run.json`) an input that came right after the flag.
fn output_or_input(value: &Path) -> Result<Destination, String> {
    let text = value.to_string_lossy();
    let is_document = value.is_file()
        && report::input::open(value).is_ok_and(|(f, _)| {
            use std::io::Read;
            let mut head = [0u8; 64];
            let n = f.take(64).read(&mut head).unwrap_or(0);
            head[..n]
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|&b| b == b'{')
        });
    let history_id = !value.exists() && report::history::parse_run_id(&text).is_some();
    if is_document || history_id {
        Err(text.into_owned())
    } else {
        Ok(Destination::File(value.to_path_buf()))
    }
}

pub fn run(global: &GlobalArgs, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let mut inputs: Vec<String> = Vec::new();
    let (flag, value) = match (&args.md, &args.html) {
        (Some(v), _) => ("--md", v),
        (_, Some(v)) => ("--html", v),
        (None, None) => ("", &None),
    };
    let target = match value.as_deref().map(output_or_input) {
        None => Destination::Stdout,
        Some(Ok(t)) => t,
        Some(Err(input)) => {
            inputs.push(input);
            Destination::Stdout
        }
    };
    inputs.extend(args.runs.iter().cloned());
    if inputs.is_empty() {
        return Err(crate::console::usage(
            "give the result documents to report: files written by --json, or history ids \
             (`headroom history` lists them)",
        ));
    }
    if let Destination::File(file) = &target {
        crate::output::check_writable(flag, file).map_err(|e| crate::console::usage(e.0))?;
    }
    // Every input read (and a bad one named) before anything is printed or written; the
    // others still make the report.
    let mut failed = false;
    let mut docs = Vec::new();
    let mut names = Vec::new();
    let mut md = String::new();
    let mut intros = String::new();
    let mut summaries = Vec::new();
    for input in &inputs {
        let loaded = crate::history::load(input, args.db.as_deref(), None)
            .and_then(|(doc, origin)| unpack(doc, &origin));
        let loaded = match loaded {
            Ok(x) => x,
            Err(e) => {
                crate::console::error(crate::console::sentence(&e));
                failed = true;
                continue;
            }
        };
        for (doc, origin) in loaded {
            match report::kinds::render(&doc, &origin) {
                Ok(r) => {
                    md.push_str(&r.markdown);
                    intros.push_str(&r.html_intro);
                    summaries.extend(r.summaries);
                }
                Err(e) => {
                    crate::console::error(crate::console::sentence(&anyhow::Error::from(e)));
                    failed = true;
                    continue;
                }
            }
            if !md.ends_with("\n\n") {
                md.push('\n');
            }
            docs.push(doc);
            names.push(origin);
        }
    }
    if docs.is_empty() {
        // Each input that could not be read was named above; with one, that sentence is the
        // whole story.
        if inputs.len() > 1 {
            crate::console::error(format!(
                "none of the {} inputs could be read: nothing to report",
                inputs.len()
            ));
        }
        return Ok(exit(true));
    }
    while md.ends_with("\n\n") {
        md.pop();
    }
    if let Some(format) = args.format {
        if let Some(lab) = format.lab() {
            crate::console::write_data(&report::labs::render(lab, &docs, &[])?)?;
            // Not a failure (the exit stays 0, as for an empty history), but said: an empty
            // output reads like a run where nothing went wrong.
            for why in report::labs::nothing_to_report(lab, &docs, &names)? {
                crate::console::warn(why);
            }
            return Ok(exit(failed));
        }
        let mut m = report::export::openmetrics::Metrics::new();
        let several = docs.len() > 1;
        for (i, doc) in docs.iter().enumerate() {
            let origin = format!("input {}", i + 1);
            let added = if several {
                m.with_label("document", &(i + 1).to_string(), |m| {
                    report::kinds::add_metrics(m, doc, &origin)
                })
            } else {
                report::kinds::add_metrics(&mut m, doc, &origin)
            };
            if let Err(e) = added {
                crate::console::error(crate::console::sentence(&anyhow::Error::from(e)));
                failed = true;
            }
        }
        match format {
            crate::output::Format::Openmetrics => crate::console::write_data(&m.openmetrics())?,
            crate::output::Format::Prometheus => crate::console::write_data(&m.prometheus())?,
            // Refused by its parser; lava and kcidb returned above.
            other => {
                return Err(crate::console::usage(format!(
                    "--format {} is not a format of a result document",
                    other.name()
                )))
            }
        }
        return Ok(exit(failed));
    }
    let text = if args.html.is_some() {
        report::html::render_with_intro(&intros, &summaries)?
    } else if global.json && args.md.is_none() {
        // One document on stdout, as every command prints: the input itself when there is
        // one, else a document of kind `report` whose `documents` holds the inputs in order.
        if let [doc] = docs.as_slice() {
            crate::output::print_document(doc)?;
        } else {
            let documents: Vec<serde_json::Value> = docs.iter().map(|d| d.to_value()).collect();
            crate::output::print_result(
                report::document::DocumentKind::Report,
                &serde_json::json!({ "documents": documents }),
            )?;
        }
        return Ok(exit(failed));
    } else {
        md
    };
    match target {
        Destination::File(file) => {
            report::write_atomic(&file, text.as_bytes())?;
            crate::console::info(format_args!("wrote {}", file.display()));
        }
        Destination::Stdout => crate::out!("{text}")?,
    }
    Ok(exit(failed))
}

fn exit(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The documents of `doc`: itself, or those a `report --json` of several inputs holds in
/// `documents` (named `origin #1`, `origin #2`...).
fn unpack(doc: Document, origin: &str) -> anyhow::Result<Vec<(Document, String)>> {
    if doc.envelope.kind != report::document::DocumentKind::Report {
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
            // Read from the value: a field missing in it is placed in the document as
            // headroom prints it (its compact text would put every place on line 1).
            Ok((Document::from_value(v.clone(), &name)?, name))
        })
        .collect()
}
