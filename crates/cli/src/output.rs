//! Options every command shares: JSON output and colour.

use clap::{Args, ValueEnum};
use std::io::IsTerminal;

#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Print one JSON document (with `schema_version`) on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Colour in terminal output.
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

#[allow(dead_code)] // used by the audit, landing in the next commits
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

/// Print a JSON document on stdout.
#[allow(dead_code)] // used by the audit, landing in the next commits
pub fn print_json<T: serde::Serialize>(doc: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(doc)?;
    println!("{text}");
    Ok(())
}
