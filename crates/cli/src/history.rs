//! `headroom history`: the runs saved in the history database, one of them in full, and
//! saving result files into it. Also where `report` and `compare` resolve a history id.

use crate::output::{db_path, lab_url, GlobalArgs};
use clap::{Args, Subcommand};
use report::history::parse_run_id;
use report::history_pg::{History, LabStore};
use report::Document;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,

    /// The history: an SQLite FILE, or a lab's PostgreSQL database as
    /// postgresql://USER@HOST/DB or "host=HOST dbname=DB user=USER" (default: HEADROOM_DB, else
    /// $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE|URL", global = true)]
    pub db: Option<PathBuf>,

    /// List only the runs of this host: its hostname, the first digits (4 or more) of its
    /// machine-id, or its serial (`history --host NAME` or `history list --host NAME`).
    #[arg(long, value_name = "NAME", global = true)]
    pub host: Option<String>,

    /// List only the runs of this kind (disk, latency, net, survey...).
    #[arg(long, value_name = "KIND", global = true)]
    pub kind: Option<String>,

    /// List only the runs made since then: a duration back from now (30m, 12h, 7d, 2w) or a
    /// date (2026-12-01) or time (RFC 3339).
    #[arg(long, value_name = "WHEN", global = true)]
    pub since: Option<String>,
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
    /// Save result documents (files written by `--json`, or directories of them: LAVA
    /// artifacts, copies from boards) into the history; a document already there is not
    /// stored again.
    #[command(alias = "import")]
    Add {
        #[arg(required = true, value_name = "RUN.json|DIR")]
        files: Vec<PathBuf>,
    },
    /// Send the runs of the local history that the lab's database (--db postgresql://...)
    /// lacks; a run already there is not sent again.
    Push,
}

/// clap's parser for a run id: `12` or `#12`, as everywhere else.
fn run_id(text: &str) -> Result<i64, String> {
    parse_run_id(text).ok_or_else(|| {
        format!("`{text}` is not a run id: give a number as `headroom history` lists it (2 or #2)")
    })
}

/// The history at `db` to read from; an error sentence when there is none (reading never
/// creates one).
pub fn open_to_read(db: &Path) -> anyhow::Result<History> {
    if let Some(url) = lab_url(db) {
        return Ok(History::Lab(Box::new(LabStore::connect(url)?)));
    }
    let store = report::history::Store::open_existing(db)?;
    store.map(History::Local).ok_or_else(|| {
        anyhow::anyhow!(
            "there is no history at {} (no run was saved there yet): `headroom history` lists \
             the saved runs; give --db FILE for another history",
            db.display()
        )
    })
}

/// A run named on the command line: an existing file, else a history id (`12` or `#12`),
/// else `HOST:latest`, the newest run of that host in the history (of `kind` when given).
pub fn load(
    input: &str,
    db: Option<&Path>,
    kind: Option<&str>,
) -> anyhow::Result<(Document, String)> {
    let path = Path::new(input);
    if path.exists() {
        return Ok((Document::read(path)?, input.to_string()));
    }
    if let Some(host) = input.strip_suffix(":latest").filter(|h| !h.is_empty()) {
        let mut store = open_to_read(&db_path(db)?)?;
        let rows = store.list_where(report::history::Filter {
            host: Some(host),
            kind,
            ..Default::default()
        })?;
        let newest = rows
            .iter()
            .filter(|r| r.damaged.is_none())
            .max_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
        let Some(row) = newest else {
            let of_kind = kind.map(|k| format!(" of kind {k}")).unwrap_or_default();
            anyhow::bail!(
                "{input}: the history {} holds no run{of_kind} of a host named {host:?} (its \
                 hostname, machine-id or serial): `headroom history` lists the runs with their \
                 hosts",
                store.name()
            );
        };
        return Ok((store.get(row.id)?, format!("{host} #{}", row.id)));
    }
    match parse_run_id(input) {
        Some(id) => {
            let mut store = open_to_read(&db_path(db)?)?;
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
    let filtered = args.host.is_some() || args.kind.is_some() || args.since.is_some();
    if filtered && !matches!(action, HistoryAction::List) {
        return Err(crate::console::usage(
            "--host, --kind and --since choose the runs `headroom history` lists; `history \
             show`, `add` and `push` take none of them",
        ));
    }
    let since = match &args.since {
        Some(text) => Some(report::history_pg::since_now(text).ok_or_else(|| {
            crate::console::usage(format!(
                "--since {text:?}: give a duration back from now (30m, 12h, 7d, 2w) or a \
                     date (2026-12-01)"
            ))
        })?),
        None => None,
    };
    match action {
        HistoryAction::List => {
            let host = args.host.as_deref();
            let filter = report::history::Filter {
                host,
                kind: args.kind.as_deref(),
                since: since.as_deref(),
            };
            let rows = if lab_url(&db).is_some() {
                open_to_read(&db)?.list_where(filter)?
            } else {
                match report::history::Store::open_existing(&db)? {
                    Some(store) => store.list_where(filter)?,
                    None => Vec::new(),
                }
            };
            let db = match lab_url(&db) {
                Some(url) => PathBuf::from(report::history_pg::redact_url(url)),
                None => db,
            };
            if global.json {
                crate::output::print_result(
                    report::document::DocumentKind::History,
                    &serde_json::json!({"database": db, "runs": rows}),
                )?;
            } else if rows.is_empty() && filtered && host.is_none() {
                crate::outln!("no run in {} matches --kind or --since", db.display())?;
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
        HistoryAction::Push => {
            let Some(url) = lab_url(&db) else {
                return Err(crate::console::usage(
                    "history push sends the local history's runs to a lab's database: give \
                     --db postgresql://USER@HOST/DB (or HEADROOM_DB)",
                ));
            };
            let local = match report::history::default_path() {
                Some(p) => report::history::Store::open_existing(&p)?,
                None => None,
            };
            let Some(local) = local else {
                crate::outln!("no local history: nothing to push")?;
                return Ok(ExitCode::SUCCESS);
            };
            let mut lab = LabStore::open(url)?;
            let pushed = lab.push(&local)?;
            if global.json {
                crate::output::print_result(
                    report::document::DocumentKind::History,
                    &serde_json::json!({"database": lab.name(), "pushed": pushed}),
                )?;
            } else {
                crate::outln!(
                    "{} runs sent to {}, {} already there",
                    pushed.sent,
                    lab.name(),
                    pushed.already
                )?;
            }
        }
        HistoryAction::Add { files } => {
            let mut store = crate::output::open_to_save(args.db.as_deref())?;
            let db = PathBuf::from(store.name());
            let mut failed = false;
            let mut saved_runs = Vec::new();
            let mut listed = Vec::new();
            for f in files {
                match report::history_pg::documents_in(f) {
                    Ok(found) => listed.extend(found),
                    Err(e) => {
                        crate::console::error(format_args!(
                            "cannot read {}: {e}; give result files or directories of them",
                            f.display()
                        ));
                        failed = true;
                    }
                }
            }
            for f in &listed {
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
