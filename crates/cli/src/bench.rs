//! `headroom bench ...`: the benchmarks' flags and their dispatch; each benchmark's run is in
//! its own module (`bench_disk`, `bench_latency`, `bench_net`, `bench_mmio`, `bench_video`).

use crate::output::GlobalArgs;
use bench::stress;
use clap::{Args, Subcommand};
use std::ffi::OsString;
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
    Disk(crate::bench_disk::DiskArgs),
    /// Wake-up latency like cyclictest (its flags are accepted; `-h US` prints its histogram
    /// text, `--json=FILE` writes its JSON document), optionally under a built-in stress load
    /// like stress-ng.
    #[command(disable_help_flag = true)]
    Latency(crate::bench_latency::LatencyArgs),
    /// TCP and UDP throughput like iperf3 (its flags and protocol: either end may be a stock
    /// iperf3), judged against the link's ceiling.
    Net(crate::bench_net::NetArgs),
    /// CPU loads and stores on a PCI BAR (or a file) by width, 8 to 128 bits and memcpy, with
    /// DRAM beside them; read-only unless --write names the BAR.
    Mmio(crate::bench_mmio::MmioArgs),
    /// The DRAM yardstick of `bench mmio`: the same widths and a memcpy on a buffer larger
    /// than the last-level cache.
    Mem(crate::bench_mmio::MemArgs),
    /// V4L2 capture like `v4l2-ctl --stream-mmap`: delivered frame rate, frame intervals,
    /// drops, bytes per second and CPU, judged against what the format needs and the USB
    /// bandwidth a camera reserved; --list-formats lists what the device offers.
    Video(crate::bench_video::VideoArgs),
    /// A worker of `--stress` (started by headroom itself).
    #[command(hide = true, name = "stress-worker")]
    StressWorker {
        #[arg(num_args = 4, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

pub fn run(global: &GlobalArgs, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    // Each runs through the driver (crate::driver), which checks where its result goes
    // before anything runs.
    match &args.command {
        BenchCommand::Disk(a) => crate::bench_disk::run_disk(global, a),
        BenchCommand::Latency(a) => crate::bench_latency::run_latency(global, a),
        BenchCommand::Net(a) => crate::bench_net::run_net(global, a),
        BenchCommand::Mmio(a) => crate::bench_mmio::run_mmio(global, a),
        BenchCommand::Mem(a) => crate::bench_mmio::run_mem(global, a),
        BenchCommand::Video(a) => crate::bench_video::run_video(global, a),
        BenchCommand::StressWorker { args } => {
            let w = stress::WorkerArgs::from_args(args).map_err(anyhow::Error::msg)?;
            stress::worker_main(&w).map_err(anyhow::Error::msg)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `headroom bench stress-worker KIND PARAM PARENT DEADLINE`, as `Load::start` writes it, run
/// before clap builds the whole command line: a worker's start is then an exec and four
/// numbers, so `--stress cpu=1000` starts its workers in seconds as stress-ng does.
pub fn stress_worker_fast_path(args: &[OsString]) -> Option<anyhow::Result<ExitCode>> {
    let [_, bench, worker, rest @ ..] = args else {
        return None;
    };
    if bench != "bench" || worker != "stress-worker" {
        return None;
    }
    let rest: Vec<String> = rest
        .iter()
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<_>>()?;
    // Anything else (a typo, --help) goes through clap and gets its usual answer.
    let w = stress::WorkerArgs::from_args(&rest).ok()?;
    Some(
        stress::worker_main(&w)
            .map(|_| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
    )
}
