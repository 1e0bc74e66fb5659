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

/// Print a JSON document on stdout.
// Kept for the bench disk branch, which prints through it until it moves to `print_result`.
#[allow(dead_code)]
pub fn print_json<T: serde::Serialize>(doc: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(doc)?;
    println!("{text}");
    Ok(())
}

/// The tool's identity in every JSON document.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

impl Tool {
    pub fn this() -> Self {
        Tool {
            name: "headroom",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// Print a command's result as a result document (`report::document`): the common envelope
/// (`schema_version`, `kind`, `tool`, `created`, `host`) with `body`'s fields beside it. A
/// `schema_version`, `kind` or `tool` field in `body` is replaced by the envelope's.
pub fn print_result<T: serde::Serialize>(kind: &str, body: &T) -> anyhow::Result<()> {
    let doc = report::document::wrap(kind, env!("CARGO_PKG_VERSION"), body)?;
    let mut stdout = std::io::stdout().lock();
    match std::io::Write::write_all(&mut stdout, doc.to_json_pretty().as_bytes()) {
        // A closed pipe (`| head`) is not an error: the reader has what it wanted.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
