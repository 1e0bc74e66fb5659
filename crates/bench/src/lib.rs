//! Workload engines. Each measures and reports what it measured; none decides what a number
//! means (that is the caller's, with the context it has).
//!
//! - [`disk`]: storage throughput, IOPS and latency, fio's pluggable engines.
//! - [`latency`]: wake-up latency, cyclictest's method.
//! - [`net`]: TCP and UDP throughput, iperf3's protocol and flags.
//! - [`mmio`]: CPU loads and stores on a mapped PCI BAR or file, by width.
//! - [`mem`]: the same on a DRAM buffer larger than the last-level cache, the yardstick.
//! - [`stress`]: CPU, sync() and memory load, stress-ng's recipes without stress-ng.
//! - [`video`]: V4L2 streaming capture with mmap buffers, what `v4l2-ctl --stream-mmap` does.
//!
//! # One run shape
//!
//! Every engine is driven the same way, so a new one (`bench net`, `bench mmio`) slots in
//! beside disk and latency and the command line treats them alike:
//!
//! 1. **Config in.** The engine's own typed configuration, validated before anything runs.
//!    What is slow or privileged to set up (a test file filled, threads started under
//!    SCHED_FIFO with memory locked) is prepared first, and the prepared value is what runs:
//!    [`disk::DiskRun`] holds a prepared [`disk::Target`], [`latency::Session`] its parked
//!    threads.
//! 2. **A shared stop flag** ([`Stop`]): an `Arc<AtomicBool>` that the caller's SIGINT/SIGTERM
//!    handler sets (`signal_hook::flag::register`). Every loop of the engine reads it and
//!    winds down; what was measured until then comes back as a measurement marked interrupted
//!    ([`Bench::interrupted`]), not as an error. Nothing measured yet is the engine's
//!    "interrupted" error.
//! 3. **Progress in phases.** The engine calls back, from the thread that called
//!    [`Bench::run`], with its own live numbers (bytes per second, the latest latency), each
//!    saying which [`Phase`] the run is in. The callback only displays: it may set the stop
//!    flag, never change the run.
//! 4. **A measurement out.** A serialisable value holding what was measured and how (the
//!    engine's notes), no judgement: ceilings, efficiency and findings are `report`'s.
//!
//! [`Bench`] states the shape as a trait; [`disk::DiskRun`], [`latency::Session`],
//! [`net::NetRun`] (either end), [`mmio::MmioRun`] and [`mem::MemRun`] implement it, the
//! command line drives them through it, and the test `every_engine_follows_the_run_shape`
//! drives each through it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub mod disk;
pub mod latency;
pub mod mem;
pub mod mmio;
pub mod net;
pub mod stress;
pub mod video;

/// The shared stop flag: set by the caller (Ctrl-C, SIGTERM, a deadline), read by the engine.
pub type Stop = Arc<AtomicBool>;

/// Where a run is, for a progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Setting up before the clock starts (fio's layout, cyclictest's thread start).
    Setup,
    /// Running but not measured yet (fio's `ramp_time`).
    Ramp,
    /// Measured.
    Run,
    /// Idle between two runs (CrystalDiskMark's interval).
    Pause,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Ramp => "ramp",
            Phase::Run => "run",
            Phase::Pause => "pause",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so a progress line's `{:<5}` aligns it as it did a string.
        f.pad(self.as_str())
    }
}

/// What every engine's progress report says besides its own numbers.
pub trait Phased {
    fn phase(&self) -> Phase;
    /// Time since the phase began.
    fn elapsed(&self) -> Duration;
}

/// One engine's run, in the shape every engine follows (see the crate's documentation).
pub trait Bench {
    /// The result document's `kind` (`"disk"`, `"latency"`, `"net"`, `"mmio"`).
    const KIND: &'static str;
    /// The live numbers of a progress callback.
    type Progress<'p>: Phased;
    /// What comes out: serialisable, no judgement.
    type Measurement: serde::Serialize;
    /// Why nothing could be measured, in one sentence.
    type Error: std::error::Error;

    /// Run until the configuration's end or until `stop` is set; `progress` is called from the
    /// calling thread.
    fn run<F>(self, stop: &Stop, progress: F) -> Result<Self::Measurement, Self::Error>
    where
        F: for<'p> Fn(&Self::Progress<'p>) + Sync;

    /// Whether the stop flag cut `m` short (its numbers cover the time before the stop).
    fn interrupted(m: &Self::Measurement) -> bool;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;
    use model::disk::{HostFacts, TestSpec, Workload};
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    /// Drive `b` through the shape: set the stop flag at the first progress of the measured
    /// phase, and return the measurement with the phases seen.
    fn stop_once_measuring<B: Bench>(b: B) -> (B::Measurement, Vec<Phase>) {
        let stop: Stop = Arc::new(AtomicBool::new(false));
        let seen = Mutex::new(Vec::new());
        let flag = Arc::clone(&stop);
        let m = b
            .run(&stop, |p: &B::Progress<'_>| {
                seen.lock().unwrap().push(p.phase());
                if p.phase() == Phase::Run {
                    flag.store(true, Ordering::SeqCst);
                }
            })
            .unwrap_or_else(|e| panic!("{} run failed: {e}", B::KIND));
        assert!(B::interrupted(&m), "{} ran to its end", B::KIND);
        (m, seen.into_inner().unwrap())
    }

    #[test]
    fn every_engine_follows_the_run_shape() {
        // disk: the null engine on a small file, time-based for 60 s: only the stop ends it.
        let dir = tempfile::tempdir().unwrap();
        let never = Arc::new(AtomicBool::new(false));
        let opts = disk::target::TargetOptions {
            size: 4 << 20,
            direct: false,
            writes: true,
            ..Default::default()
        };
        let insp = disk::target::inspect(dir.path()).unwrap();
        let target = disk::target::prepare(insp, None, None, &[], &opts, &never, None).unwrap();
        let mut parameters = disk::test_parameters();
        parameters.runs = 1;
        parameters.pause_s = 0.0;
        parameters.ramp_s = 0.0;
        parameters.time_based = true;
        parameters.runtime_s = 60.0;
        parameters.direct = false;
        let run = disk::DiskRun {
            parameters,
            tests: vec![TestSpec::new("t", Workload::RANDREAD, 4096, 4, 1)],
            engine: disk::engine_by_name("null").unwrap(),
            after_test: None,
            kernel_counts: None,
            target: &target,
            system: HostFacts::default(),
        };
        let (d, phases) = stop_once_measuring(run);
        assert!(d.tests[0].runs[0].interrupted && d.tests[0].runs[0].ios > 0);
        assert_eq!(phases.last(), Some(&Phase::Run));
        assert_eq!(<disk::DiskRun as Bench>::KIND, d.kind);

        // latency: one unprivileged thread for up to 30 s: only the stop ends it.
        let session = latency::Session::prepare(model::latency::Config {
            skip_privileged_steps: true,
            limits: model::latency::Limits {
                duration: Some(Duration::from_secs(30)),
                loops: None,
            },
            ..Default::default()
        })
        .unwrap();
        let (m, phases) = stop_once_measuring(session);
        assert_eq!(m.stopped_by, model::latency::StopReason::Interrupted);
        assert!(phases.iter().all(|p| *p == Phase::Run) && !phases.is_empty());
        assert_eq!(m.total.histogram.total(), m.total.count);

        // net: a headroom server and client on loopback, a 60 s TCP test with 1 s omitted:
        // only the stop ends it, and the client tells the server (CLIENT_TERMINATE).
        let server = net::Server::bind(net::ServerConfig {
            port: 0,
            bind: Some("127.0.0.1".parse().unwrap()),
            interval: Duration::from_millis(200),
            auth: None,
            clients: 1,
        })
        .unwrap();
        let port = server.local_addr().unwrap().port();
        let served = std::thread::scope(|s| {
            let serving = s.spawn(|| {
                let never: Stop = Arc::new(AtomicBool::new(false));
                net::NetRun::ServeOne(&server).run(&never, |_| {})
            });
            let cfg = net::ClientConfig {
                host: "127.0.0.1".into(),
                port,
                bind: None,
                family: net::Family::V4,
                test: model::net::NetConfig {
                    protocol: model::net::Protocol::Tcp,
                    direction: model::net::Direction::Forward,
                    duration_s: 60,
                    omit_s: 1,
                    streams: 1,
                    len: 0,
                    bitrate_bps: Some(100_000_000),
                    window: None,
                    mss: None,
                    zerocopy: false,
                    udp_counters_64bit: false,
                },
                interval: Duration::from_millis(200),
                connect_timeout: Duration::from_secs(5),
                congestion: None,
                auth: None,
            };
            let (m, phases) = stop_once_measuring(net::NetRun::Client(cfg));
            assert_eq!(m.interface.as_deref(), Some("lo"));
            assert_eq!(phases.first(), Some(&Phase::Setup), "{phases:?}");
            assert!(phases.contains(&Phase::Ramp), "-O 1 is a ramp: {phases:?}");
            assert_eq!(phases.last(), Some(&Phase::Run));
            serving.join().unwrap()
        });
        let served = served.unwrap();
        assert!(<net::NetRun as Bench>::interrupted(&served));
        assert_eq!(<net::NetRun as Bench>::KIND, "net");

        // mmio: 32- and 64-bit loads on a mapped file, 30 s each: the stop at the first pair
        // leaves that pair's first batches and skips the second.
        use model::mmio::{AccessOp, AccessWidth};
        let file = tempfile::tempfile().unwrap();
        file.set_len(1 << 20).unwrap();
        let map = mmio::Mapping::of_file(&file, 0, 1 << 20, false).unwrap();
        let config = mmio::Config::new(
            vec![AccessWidth::W32, AccessWidth::W64],
            vec![AccessOp::Load],
            Duration::from_secs(30),
        );
        let run = mmio::MmioRun {
            config: config.clone(),
            map: &map,
            offset: 0,
            size: 1 << 20,
        };
        let (m, phases) = stop_once_measuring(run);
        assert_eq!(phases, [Phase::Run]);
        assert_eq!(m.results.len(), 1);
        assert_eq!(m.results[0].width, AccessWidth::W32);
        assert!(m.results[0].accesses > 0);

        // mem: the buffer is filled in the setup phase, then the same pairs run on it.
        let run = mem::MemRun {
            config: mem::MemConfig {
                buffer_bytes: 1 << 20,
                access: config,
                copy: true,
            },
        };
        let (m, phases) = stop_once_measuring(run);
        assert_eq!(phases, [Phase::Setup, Phase::Run]);
        assert_eq!((m.results.len(), m.buffer_bytes), (1, 1 << 20));
        assert!(m.copy.is_none(), "the copy does not start after the stop");
    }

    #[test]
    fn phases_print_as_the_progress_line_did() {
        assert_eq!(format!("[{:<5}]", Phase::Run), "[run  ]");
        assert_eq!(Phase::Pause.to_string(), "pause");
    }
}
