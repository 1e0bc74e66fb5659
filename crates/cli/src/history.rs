//! `headroom history`: the runs saved in the history database, one of them in full, and
//! saving result files into it. Also where `report` and `compare` resolve a history id.

use crate::output::{db_path, GlobalArgs};
use clap::{Args, Subcommand};
use report::history::{parse_run_id, Store};
use report::Document;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,

    /// The history database (default: $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,

    /// List only the runs of this host: its hostname, the first digits (4 or more) of its
    /// machine-id, or its serial (`history --host NAME` or `history list --host NAME`).
    #[arg(long, value_name = "NAME", global = true)]
    pub host: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum HistoryAction {
    /// List the saved runs (the default).
    List,
    /// Print one saved run as `report` does (or its document with --json).
    Show {
        /// The run's id, as `headroom history` lists it (`2` or `#2`).
        #[arg(value_parser = run_id)]
        id: i64,
    },
    /// Save result documents (files written by `--json`) into the history.
    Add {
        #[arg(required = true, value_name = "RUN.json")]
        files: Vec<PathBuf>,
    },
}

/// clap's parser for a run id: `12` or `#12`, as everywhere else.
fn run_id(text: &str) -> Result<i64, String> {
    parse_run_id(text).ok_or_else(|| {
        format!("`{text}` is not a run id: give a number as `headroom history` lists it (2 or #2)")
    })
}

/// The history at `db` to read from; an error sentence when there is none (reading never
/// creates one).
fn open_to_read(db: &Path) -> anyhow::Result<Store> {
    Store::open_existing(db)?.ok_or_else(|| {
        anyhow::anyhow!(
            "there is no history at {} (no run was saved there yet): `headroom history` lists \
             the saved runs; give --db FILE for another history",
            db.display()
        )
    })
}

/// A run named on the command line: an existing file, else a history id (`12` or `#12`).
pub fn load(input: &str, db: Option<&Path>) -> anyhow::Result<(Document, String)> {
    let path = Path::new(input);
    if path.exists() {
        return Ok((Document::read(path)?, input.to_string()));
    }
    match parse_run_id(input) {
        Some(id) => {
            let store = open_to_read(&db_path(db)?)?;
            Ok((store.get(id)?, format!("#{id}")))
        }
        None => anyhow::bail!(
            "{input}: no such file, and not a history id (`headroom history` lists the ids)"
        ),
    }
}

pub fn run(global: &GlobalArgs, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let db = db_path(args.db.as_deref())?;
    let action = args.action.as_ref().unwrap_or(&HistoryAction::List);
    if args.host.is_some() && !matches!(action, HistoryAction::List) {
        return Err(crate::console::usage(
            "--host chooses the runs `headroom history` lists; `history show` and `history \
             add` take no --host",
        ));
    }
    match action {
        HistoryAction::List => {
            let host = args.host.as_deref();
            let filter = report::history::Filter { host };
            let rows = match Store::open_existing(&db)? {
                Some(store) => store.list_where(filter)?,
                None => Vec::new(),
            };
            if global.json {
                crate::output::print_result(
                    report::document::DocumentKind::History,
                    &serde_json::json!({"database": db, "runs": rows}),
                )?;
            } else if rows.is_empty() {
                match host {
                    Some(h) => crate::outln!(
                        "no run in {} comes from a host named {h:?} (its hostname, the \
                         first {} or more digits of its machine-id, or its serial); \
                         `headroom history` lists every run with its host",
                        db.display(),
                        report::history::MACHINE_ID_PREFIX_MIN
                    )?,
                    None => crate::outln!("no runs saved in {} yet", db.display())?,
                }
            } else {
                let style = report::terminal::Style::new(global.use_color());
                let text = report::history::list_text(&rows, &style);
                crate::out!("{text}")?;
            }
            // A damaged run is named, the others are listed: the exit says not all was well.
            let damaged: Vec<_> = rows
                .iter()
                .filter_map(|r| Some((r.id, r.damaged.as_ref()?)))
                .collect();
            for (id, what) in &damaged {
                crate::console::error(format_args!(
                    "run {id} in the history {} is damaged: {what}; the other runs are intact",
                    db.display()
                ));
            }
            if !damaged.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        HistoryAction::Show { id } => {
            let doc = open_to_read(&db)?.get(*id)?;
            if global.json {
                crate::output::print_document(&doc)?;
            } else {
                // What `report #ID` prints, for every kind (a survey: its summary,
                // conclusions and parts).
                crate::out!(
                    "{}",
                    report::kinds::render(&doc, &format!("#{id}"))?.markdown
                )?;
            }
        }
        HistoryAction::Add { files } => {
            let store = crate::output::open_to_save(args.db.as_deref())?;
            let mut failed = false;
            let mut saved_runs = Vec::new();
            for f in files {
                let saved = report::document::read_text(f)
                    .map_err(anyhow::Error::new)
                    .and_then(|text| {
                        // Check it under its own name first (the envelope, then the body
                        // as its kind's view reads it), so an error names the file.
                        let name = f.display().to_string();
                        report::kinds::summarize(&Document::parse(&text, &name)?, &name)?;
                        Ok(store.insert(&text)?)
                    });
                match saved {
                    Ok(s) => {
                        if !global.json {
                            if s.new {
                                crate::outln!("{}: saved as #{}", f.display(), s.id)?;
                            } else {
                                crate::outln!(
                                    "{}: already saved as #{} (the same document); not stored \
                                     again",
                                    f.display(),
                                    s.id
                                )?;
                            }
                        }
                        saved_runs.push(serde_json::json!({
                            "file": f,
                            "id": s.id,
                            "new": s.new,
                        }));
                    }
                    Err(e) => {
                        crate::console::error(crate::console::sentence(&e));
                        failed = true;
                    }
                }
            }
            if global.json {
                crate::output::print_result(
                    report::document::DocumentKind::History,
                    &serde_json::json!({"database": db, "added": saved_runs}),
                )?;
            }
            if failed {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
