//! Options every command shares (JSON output, colour) and terminal styling.

use clap::{Args, ValueEnum};
use model::Severity;
use std::io::IsTerminal;

#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Print one JSON document (with `schema_version`) on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Colour in terminal output (NO_COLOR in the environment turns `auto` off).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

#[derive(ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl GlobalArgs {
    /// Whether to colour stdout: `--color always|never`, else only on a terminal and
    /// without `NO_COLOR` (https://no-color.org).
    pub fn use_color(&self) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        }
    }
}

/// ANSI styling, or none. Ten lines do not deserve a crate.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn new(color: bool) -> Self {
        Style { color }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }

    pub fn err(&self, s: &str) -> String {
        self.paint("31", s)
    }

    pub fn severity(&self, sev: Severity) -> String {
        match sev {
            Severity::Info => "info".to_string(),
            Severity::Warning => self.warn("warning"),
            Severity::Error => self.err("error"),
        }
    }
}

/// Print a command's result as a result document (`report::document`): the common envelope
/// (`schema_version`, `kind`, `tool`, `created`, `host`) with `body`'s fields beside it. A
/// `schema_version`, `kind` or `tool` field in `body` is replaced by the envelope's.
pub fn print_result<T: serde::Serialize>(kind: &str, body: &T) -> anyhow::Result<()> {
    print_document(&report::document::wrap(
        kind,
        env!("CARGO_PKG_VERSION"),
        body,
    )?)
}

/// Print a result document as it is (`report --json` of one input keeps its envelope).
pub fn print_document(doc: &report::Document) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match std::io::Write::write_all(&mut stdout, doc.to_json_pretty().as_bytes()) {
        // A closed pipe (`| head`) is not an error: the reader has what it wanted.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Write a result document of `kind` to `path` atomically (temp file, then rename).
pub fn write_result<T: serde::Serialize>(
    path: &std::path::Path,
    kind: &str,
    body: &T,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let doc = report::document::wrap(kind, env!("CARGO_PKG_VERSION"), body)?;
    doc.write(path)
        .with_context(|| format!("cannot write the result to {}", path.display()))
}

/// Keep a result document of `kind` in the history database (`db`, or the default one);
/// returns its id.
pub fn save_result<T: serde::Serialize>(
    kind: &str,
    body: &T,
    db: Option<&std::path::Path>,
) -> anyhow::Result<i64> {
    let doc = report::document::wrap(kind, env!("CARGO_PKG_VERSION"), body)?;
    let store = report::history::Store::open(&crate::history::db_path(db)?)?;
    Ok(store.insert(&doc.to_json_pretty())?)
}

/// Options every benchmark shares for keeping its result.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Also write the result document to FILE (atomically; benchmarks with several tests
    /// write it after each one, so an interrupted run keeps what it measured).
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// Do not keep the result in the history database.
    #[arg(long)]
    pub no_save: bool,

    /// History database (default: $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE")]
    pub db: Option<std::path::PathBuf>,
}

impl KeepArgs {
    /// Write `--output` and save to the history as asked; a history failure is a warning,
    /// not a lost run.
    pub fn keep<T: serde::Serialize>(&self, kind: &str, body: &T) -> anyhow::Result<()> {
        if let Some(path) = &self.output {
            write_result(path, kind, body)?;
        }
        if !self.no_save {
            if let Err(e) = save_result(kind, body, self.db.as_deref()) {
                eprintln!("headroom: warning: the result was not kept in the history: {e:#}");
            }
        }
        Ok(())
    }
}
