//! The `headroom` binary: parses the command line and orchestrates the layers below.
//!
//! `main` is thin: it runs a command and turns an error into one sentence on stderr.
//! Exit codes (`console::exit_code`): 0 success (also when stdout's reader went away),
//! 1 failure, 2 usage error (clap's own and `console::UsageError`), 128 + signal when
//! interrupted.
//!
//! Only `console` prints (ripgrep's messages.rs): its writers escape what came from outside
//! and its `exit_code` says every error once; the print macros are denied elsewhere.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod audit;
mod bench;
mod bench_disk;
mod bench_latency;
mod bench_mmio;
mod bench_net;
mod bench_video;
mod beside;
mod ceiling;
mod compare;
mod console;
mod count;
mod driver;
mod history;
mod output;
mod path;
mod report;
mod split;
mod survey;
mod watch;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// How far is each I/O path from its physical ceiling, and why.
#[derive(Parser, Debug)]
#[command(
    name = "headroom",
    version,
    // `--version` also says which pci.ids/usb.ids are built in (`-V` stays one line).
    long_version = concat!(env!("CARGO_PKG_VERSION"), "\n", probe::builtin_ids_summary!()),
    about,
    long_about = None
)]
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
    /// Theoretical ceilings of PCIe, USB, SATA, Ethernet and eMMC/SD links.
    Ceiling(ceiling::CeilingArgs),
    /// The chain of hardware a file, block device or interface crosses, and its bottleneck.
    Path(path::PathArgs),
    /// Run a benchmark: storage (fio/CrystalDiskMark-like) and network throughput (iperf3's
    /// protocol) against the path's ceiling, wake-up latency (cyclictest's method) under a
    /// built-in stress load, CPU loads and stores on a PCI BAR (MMIO) and DRAM.
    Bench(bench::BenchArgs),
    /// Result documents as Markdown tables or one self-contained HTML file with plots.
    Report(report::ReportArgs),
    /// Runs side by side: the difference in percent and what changed between them.
    Compare(compare::CompareArgs),
    /// The runs saved in the history database.
    History(history::HistoryArgs),
    /// The whole board report in one command: audit, every storage device, wake-up latency
    /// idle and under load, network, judged against each path's ceiling, within a budget.
    Survey(survey::SurveyArgs),
    /// Count events of any PMU while a command runs, like `perf stat` (PCIe PMUs joined
    /// to their root ports; interrupts per second of a device with --irq).
    Count(count::CountArgs),
    /// Link health over time: PCIe link speed and width, AER errors, USB and network links
    /// sampled at an interval, one line per change with what it costs the paths through it.
    Watch(watch::WatchArgs),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(worker) = bench::stress_worker_fast_path(&args) {
        return worker.unwrap_or_else(|err| console::exit_code(&err));
    }
    // A panic removes the test file bench disk created and the tracefs instance bench
    // latency --split records in before the message is printed: the board binaries (`dist`
    // profile) abort on a panic, where no drop runs.
    let message = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        ::bench::disk::remove_created_files();
        ::counters::trace::remove_instances();
        message(info);
    }));
    // A run killed with SIGKILL whose reaper could not undo its tracefs instance (killed
    // too) leaves the instance recording; the next command removes it, whatever it is.
    ::counters::trace::remove_stale_instances(&model::root::SysRoot::new("/"));
    let cli = match Cli::try_parse_from(model::latency::flags::cyclictest_json_argv(args)) {
        Ok(cli) => cli,
        Err(e) => return console::clap_error(&e),
    };
    console::set_colour(cli.global.use_color());
    let result = match cli.command {
        None => audit::run(&cli.global, &audit::AuditArgs::default()),
        Some(Command::Audit(args)) => audit::run(&cli.global, &args),
        Some(Command::Ceiling(args)) => ceiling::run(&cli.global, &args),
        Some(Command::Path(args)) => path::run(&cli.global, &args),
        Some(Command::Bench(args)) => bench::run(&cli.global, &args),
        Some(Command::Report(args)) => report::run(&cli.global, &args),
        Some(Command::Compare(args)) => compare::run(&cli.global, &args),
        Some(Command::History(args)) => history::run(&cli.global, &args),
        Some(Command::Survey(args)) => survey::run(&cli.global, &args),
        Some(Command::Count(args)) => count::run(&cli.global, &args),
        Some(Command::Watch(args)) => watch::run(&cli.global, &args),
    };
    match result {
        Ok(code) => code,
        Err(err) => console::exit_code(&err),
    }
}
