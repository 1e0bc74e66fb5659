//! `headroom bench …`: the workload engines. Each kind of benchmark is one subcommand in its
//! own module (`bench_disk.rs`, …).

use crate::bench_disk;
use crate::output::GlobalArgs;
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Storage throughput, IOPS and latency on a file, directory or block device (fio-like,
    /// CrystalDiskMark profiles), cross-checked with the kernel's byte counts.
    Disk(bench_disk::DiskArgs),
}

pub fn run(global: &GlobalArgs, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        BenchCommand::Disk(a) => bench_disk::run_disk(global, a),
    }
}
