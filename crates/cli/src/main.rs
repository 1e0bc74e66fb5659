//! The `headroom` binary: parses the command line and orchestrates the layers below.
//!
//! `main` is thin: it runs a command and turns an error into one sentence on stderr.
//! Exit codes: 0 success, 1 failure, 2 usage (clap's own).

mod audit;
mod bench;
mod bench_disk;
mod output;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// How far is each I/O path from its physical ceiling, and why.
#[derive(Parser, Debug)]
#[command(name = "headroom", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    global: output::GlobalArgs,

    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Inventory of PCI Express links with their state, ceilings and findings (the default).
    Audit(audit::AuditArgs),
    /// Run a benchmark against a target and report it against the path's ceiling.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => audit::run(&cli.global, &audit::AuditArgs::default()),
        Some(Command::Audit(args)) => audit::run(&cli.global, &args),
        Some(Command::Bench(args)) => bench::run(&cli.global, &args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("headroom: error: {err:#}");
            ExitCode::from(1)
        }
    }
}
