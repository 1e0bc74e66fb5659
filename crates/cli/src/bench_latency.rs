//! `headroom bench latency`: cyclictest plus stress-ng in one command: the CPU/kernel context from
//! `probe::system`, the measurement from `bench::latency`, the load from `bench::stress`,
//! the interrupts on the measured CPUs from `counters`, and the text and findings (what the
//! numbers depend on) from `report::kinds::latency::text` and `report::kinds::latency::findings`; this
//! module keeps the flags, the run (signals, load, samplers) and the writer.

use crate::beside::{Moved, SideTarget};
use crate::console;
use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use anyhow::Context as _;
use bench::latency::{self, Session};
use bench::stress::{self, Launcher, Load};
use clap::{ArgAction, Args};
use counters::Sampler;
use model::latency::flags::{config_of, CyclictestFlags};
use model::latency::split::Split;
use model::latency::{Config, LoadSample, MeasuredInterrupts, Measurement, StopReason};
use model::root::SysRoot;
use model::stress::StressSpec;
use model::system::SystemContext;
use model::{Finding, Severity};
use probe::system;
use report::document::DocumentKind;
use report::kinds::latency::findings as judge;
use report::kinds::latency::text::cyclictest_line;
use report::kinds::latency::{LatencyDocument, StressRecord};
use report::kinds::{KindDocument as _, Text};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The flags of cyclictest that reports paste (`-t [N] -p PRIO -i US -d US -m -D 2h -h US -q
/// -a [CPUS] --json=FILE`), with their cyclictest meaning, plus headroom's own. Those of
/// cyclictest that headroom does not reproduce (`-v`, `-b`, `-x`, ...) are accepted and a note
/// says what headroom does instead (rt-tests 2.x, src/cyclictest/cyclictest.c).
#[derive(Args, Debug, Default)]
pub struct LatencyArgs {
    /// Measuring threads; `-t` alone: one per available CPU.
    #[arg(short = 't', long = "threads", value_name = "N", num_args = 0..=1)]
    pub threads: Option<Option<usize>>,

    /// SCHED_FIFO priority of the threads, 1-99 (0: normal scheduling). Needs root,
    /// CAP_SYS_NICE or an rtprio limit (`ulimit -r`); refused, the threads measure at normal
    /// scheduling and a warning says the numbers are not comparable with cyclictest's.
    #[arg(
        short = 'p',
        long = "priority",
        visible_alias = "prio",
        value_name = "PRIO",
        default_value_t = 99
    )]
    pub priority: u32,

    /// Base interval of thread 0, in us.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "US",
        default_value_t = 1000
    )]
    pub interval_us: u64,

    /// Added to the interval of each next thread, in us [default: 500; 0 with -h, as
    /// cyclictest does].
    #[arg(short = 'd', long = "distance", value_name = "US")]
    pub distance_us: Option<u64>,

    /// How long to measure: 10s, 5m, 2h, 1d (a bare number is seconds, like cyclictest).
    /// Without it and without --loops: 10 s.
    #[arg(short = 'D', long = "duration", value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Wake-ups per thread, then stop.
    #[arg(short = 'l', long = "loops", value_name = "N")]
    pub loops: Option<u64>,

    /// Lock memory (the default; accepted for cyclictest command lines). Needs root,
    /// CAP_IPC_LOCK or a memlock limit (`ulimit -l`); refused, the run measures anyway with a
    /// warning.
    #[arg(short = 'm', long = "mlockall")]
    pub mlockall: bool,

    /// Do not lock memory.
    #[arg(long = "no-mlock", conflicts_with = "mlockall")]
    pub no_mlock: bool,

    /// Histogram limit in us (1 us buckets; above it goes to the overflow count)
    /// [default: 10000].
    #[arg(short = 'h', long = "histogram", value_name = "US")]
    pub histogram_us: Option<u32>,

    /// cyclictest's -h with a summary column: the same histogram (headroom's table always
    /// has the `all` row).
    #[arg(
        short = 'H',
        long = "histofall",
        value_name = "US",
        conflicts_with = "histogram_us"
    )]
    pub histofall_us: Option<u32>,

    /// Show the cyclictest lines (T: ... Min Act Avg Max) in ns instead of us.
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// Redraw the live lines only when a thread reaches a new maximum (slow terminals).
    #[arg(short = 'M', long = "refresh_on_max", visible_alias = "refresh-on-max")]
    pub refresh_on_max: bool,

    /// Scheduling policy of the measuring threads: fifo (the default), rr (measured as
    /// fifo: a thread sleeps long before its round-robin slice ends), other or normal (as
    /// -p 0). batch and idle are refused.
    #[arg(short = 'y', long = "policy", value_name = "NAME")]
    pub policy: Option<String>,

    /// cyclictest's every-value output (n:c:v lines); accepted, headroom keeps the
    /// histogram, the largest wake-ups and the per-window maxima instead.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// cyclictest's break trace at a latency above US; accepted, headroom measures to the end
    /// and counts the wake-ups above US.
    #[arg(short = 'b', long = "breaktrace", value_name = "US")]
    pub breaktrace_us: Option<u64>,

    /// Split each wake-up's latency into IRQ latency (timer expiry to its interrupt) and
    /// the rest, from the kernel's timer, interrupt and scheduler tracepoints recorded beside
    /// the measurement, and say what delayed the wake-ups (root; tracefs).
    #[arg(long)]
    pub split: bool,

    /// Stop at the first wake-up of US or more and explain it from the recorded events (the
    /// interrupts, softirqs and threads that ran, with their times), as `rtla timerlat -a US`
    /// does; implies --split.
    #[arg(long, value_name = "US")]
    pub analyze: Option<u64>,

    /// What measures: `loop`, headroom's timer loop (cyclictest's), or `timerlat`, the
    /// kernel's timerlat tracer (CONFIG_TIMERLAT_TRACER), which gives IRQ and thread latency
    /// itself.
    #[arg(long, value_enum, value_name = "NAME", default_value = "loop")]
    pub engine: LatencyEngine,

    /// cyclictest's POSIX timers; accepted, headroom measures with clock_nanosleep only.
    #[arg(short = 'x', long = "posix_timers", visible_alias = "posix-timers")]
    pub posix_timers: bool,

    /// cyclictest's `--json=FILE` (main rewrites it to this): rt-tests 2.4's JSON document
    /// of the run goes to FILE (headroom's own goes to --output and the history).
    #[arg(long = "cyclictest-json", value_name = "FILE", hide = true)]
    pub cyclictest_json: Option<std::path::PathBuf>,

    /// No live display.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Pin the threads: `-a` alone puts thread N on CPU N; `-a 2-3` spreads them over CPUs
    /// 2 and 3. Without it the threads are free.
    #[arg(short = 'a', long = "affinity", value_name = "CPUS", num_args = 0..=1)]
    pub affinity: Option<Option<String>>,

    /// One pinned thread per CPU (cyclictest `-S`: `-t -a`).
    #[arg(short = 'S', long = "smp")]
    pub smp: bool,

    /// Clock (cyclictest `-c`): 0 = CLOCK_MONOTONIC, the only one headroom uses.
    #[arg(short = 'c', long = "clock", value_name = "N")]
    pub clock: Option<u32>,

    /// Removed from cyclictest in 2017; accepted and explained.
    #[arg(short = 'n', long = "nanosleep", hide = true)]
    pub nanosleep: bool,

    /// Background load during the run: `cpu=4,io=2,vm=1,vm-bytes=4M[,cpu-load=P]`,
    /// `hdd=1,hdd-bytes=256M[,temp-path=DIR]`, or a pasted `stress-ng ...` / `stress ...`
    /// command (`--cpu`, `--io`, `--vm`, `--vm-bytes`, `--hdd`, `--hdd-bytes`, `--temp-path`,
    /// `--cpu-load`; any other option is accepted with a note saying what runs instead).
    /// vm-bytes is divided across the vm workers as stress-ng does; a pasted `stress` command
    /// gives each worker that much. hdd workers write a file of hdd-bytes each (default 1G, at
    /// most half the free space) in temp-path (default: the current directory, as stress-ng),
    /// read it back and remove it. Sizes are binary (4M = 4 MiB), as in both tools.
    #[arg(long, value_name = "SPEC")]
    pub stress: Option<String>,

    /// Accepted for older scripts and does nothing: a run without SCHED_FIFO or locked memory
    /// always measures, with a warning, and its document says so.
    #[arg(long, hide = true)]
    pub allow_unprivileged: bool,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,

    /// Length of the windows whose maxima are reported (OSADL-style long-term plots).
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = parse_duration)]
    pub window: Duration,

    /// Behave as an unprivileged user would (for tests of that path).
    #[arg(long, hide = true)]
    pub skip_privileged_steps: bool,

    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// What measures the wake-ups (`--engine`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LatencyEngine {
    /// headroom's timer loop: clock_nanosleep and clock_gettime, as cyclictest.
    #[default]
    Loop,
    /// The kernel's timerlat tracer: its own threads, its own IRQ and thread latencies.
    Timerlat,
}

/// `10s`, `5m`, `2h`, `1d`, `500ms`; a bare number is seconds (cyclictest's `-D`);
/// case-insensitive, as reports write `-D8H`. The one parser of every command
/// (`model::units::parse_duration`), as clap's value parser.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    model::units::parse_duration(s)
}

impl LatencyArgs {
    /// cyclictest's `--json=FILE` cannot be written: found before the run (a usage error).
    pub(crate) fn check_cyclictest_json(&self) -> Result<(), crate::output::OutputUnusable> {
        match &self.cyclictest_json {
            Some(file) => crate::output::check_writable("--json", file),
            None => Ok(()),
        }
    }
}

/// The flags that shape the measurement, for `model::latency::flags::config_of`.
pub fn flags(a: &LatencyArgs) -> CyclictestFlags {
    CyclictestFlags {
        threads: a.threads,
        priority: a.priority,
        policy: a.policy.clone(),
        interval_us: a.interval_us,
        distance_us: a.distance_us,
        duration: a.duration,
        loops: a.loops,
        no_mlock: a.no_mlock,
        histogram_us: a.histogram_us,
        histofall_us: a.histofall_us,
        verbose: a.verbose,
        breaktrace_us: a.breaktrace_us,
        analyze: a.analyze,
        posix_timers: a.posix_timers,
        affinity: a.affinity.clone(),
        smp: a.smp,
        clock: a.clock,
        nanosleep: a.nanosleep,
        window: a.window,
        skip_privileged_steps: a.skip_privileged_steps,
    }
}

pub(crate) fn run_latency(global: &GlobalArgs, a: &LatencyArgs) -> anyhow::Result<ExitCode> {
    crate::driver::drive(global, a)
}

/// What the flags ask for, checked, with what was set up before the run: the tracepoint
/// recorder of --split.
pub struct LatencyPlan {
    config: Config,
    notes: Vec<String>,
    stress_spec: Option<StressSpec>,
    root: SysRoot,
    context: SystemContext,
    cpus: Vec<u32>,
    timerlat: bool,
    recorder: Option<crate::split::TraceRecorder>,
}

/// A latency run's document, with what its text needs besides.
pub struct LatencyRun {
    document: LatencyDocument,
    /// The findings already said when the run started, not repeated at its end.
    shown: [Option<Finding>; 2],
}

impl Benchmark for LatencyArgs {
    type Document = LatencyRun;
    type Kept = LatencyDocument;
    type Setup = LatencyPlan;
    const KIND: DocumentKind = DocumentKind::Latency;

    fn kept(run: &LatencyRun) -> &LatencyDocument {
        &run.document
    }

    fn keep(&self) -> KeepArgs {
        self.keep.clone()
    }

    /// `--output`, `--textfile-dir`, and cyclictest's `--json=FILE`.
    fn check_outputs(&self) -> Result<(), crate::output::OutputUnusable> {
        self.keep.check_output()?;
        self.check_cyclictest_json()
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<LatencyPlan> {
        let a = self;

        let available = latency::available_cpus();
        let (mut config, mut notes) = config_of(&flags(a), &available).map_err(console::usage)?;
        let stress_spec = a
            .stress
            .as_deref()
            .map(stress::parse_spec)
            .transpose()
            .map_err(|msg| console::usage(format!("--stress: {msg}")))?;
        // Pasted stress-ng options headroom does not reproduce: a note each, as cyclictest's.
        notes.extend(stress_spec.iter().flat_map(|s| s.notes.iter().cloned()));
        for n in &notes {
            console::note(n);
        }
        let root = SysRoot::new("/");
        let context = system::read_context(&root);
        let cpus = latency::measured_cpus(&config);
        let timerlat = a.engine == LatencyEngine::Timerlat;
        if timerlat {
            // The kernel's own measurement, where it has the tracer; else which is missing.
            counters::timerlat::available(&root).map_err(|why| {
                anyhow::Error::msg(format!(
                    "--engine timerlat: {why}; measure with the timer loop (the default engine), \
                     and --split for the IRQ/thread split from tracepoints"
                ))
            })?;
            if a.split || a.analyze.is_some() {
                let n =
                    "--engine timerlat gives the IRQ/thread split itself; --split and --analyze \
                         follow the timer loop's wake-ups and are not used with it"
                        .to_string();
                console::note(&n);
                notes.push(n);
            }
        }
        // --split / --analyze: the tracepoints of the measured CPUs, recorded from before the
        // threads start; where they cannot be, say why and measure as without it.
        let recorder = if !timerlat && (a.split || a.analyze.is_some()) {
            match crate::split::TraceRecorder::open(&root, &cpus) {
                Ok(r) => {
                    if let Some(n) = r.missing_note() {
                        console::note(&n);
                        notes.push(n);
                    }
                    Some(r)
                }
                Err(why) => {
                    let n = format!("--split: {why}; measuring without the split");
                    console::warn(&n);
                    notes.push(n);
                    None
                }
            }
        } else {
            None
        };
        config.record_wakeups = recorder.is_some();
        config.stop_above = recorder.as_ref().and(a.analyze).map(Duration::from_micros);
        Ok(LatencyPlan {
            config,
            notes,
            stress_spec,
            root,
            context,
            cpus,
            timerlat,
            recorder,
        })
    }

    fn run(&self, plan: LatencyPlan, run: &Run<'_>) -> anyhow::Result<Outcome<LatencyRun>> {
        let a = self;
        let global = run.global;
        let LatencyPlan {
            config,
            notes,
            stress_spec,
            root,
            context,
            cpus,
            timerlat,
            recorder,
        } = plan;
        // SIGINT (Ctrl-C) and SIGTERM stop the measurement (and with it the load); what was
        // measured is printed and kept, marked interrupted, and the exit code is 128 + signal.
        let interrupt = run.stop();

        // The timer loop's threads, set up and parked; the timerlat tracer's are the kernel's.
        let session = if timerlat {
            None
        } else {
            Some(Session::prepare(config.clone()).map_err(anyhow::Error::msg)?)
        };
        // Refused SCHED_FIFO or mlockall: say so once, now (a run may last hours), and measure;
        // the same findings are in the document and not repeated at the end. (cyclictest stops
        // here.)
        let (not_realtime, dma_not_held) = match &session {
            Some(session) => (
                judge::not_realtime(&judge::rt_refused(session.privileges(), config.priority)),
                judge::dma_latency_not_held(&session.privileges().cpu_dma_latency_held),
            ),
            None => (None, None),
        };
        if let Some(f) = &not_realtime {
            console::warn(f.sentence());
        }
        if let Some(f) = &dma_not_held {
            console::note(f.sentence());
        }

        let session_fifo = session
            .as_ref()
            .is_some_and(|s| s.privileges().sched_fifo.is_done());
        let started = Instant::now();
        let mut stress_record = None;
        let mut load = None;
        if let Some(spec) = &stress_spec {
            let launcher = Launcher {
                program: std::env::current_exe().context("finding headroom's own binary")?,
                args: vec!["bench".into(), "stress-worker".into()],
            };
            // The workers stop by themselves a little after the longest the run can take.
            let bound = config
                .limits
                .duration
                .unwrap_or(Duration::from_secs(86_400))
                + Duration::from_secs(30);
            let l = Load::start(spec, &launcher, bound)?;
            if !global.json {
                console::info(format_args!(
                    "stress: {} ({})",
                    spec.describe(),
                    spec.interpretation
                ));
            }
            stress_record = Some(StressRecord {
                spec: spec.clone(),
                pids: l.pids(),
                stop: None,
            });
            load = Some(l);
            // Let the workers reach full speed before measuring (stress-ng runs first in the
            // seed's procedure); interruptible.
            let settle = Instant::now();
            while settle.elapsed() < Duration::from_millis(500) && !interrupt.load(Ordering::SeqCst)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        let load_sampler = counters::LoadAverageSampler::new(root.clone());
        let mut load_samples = Vec::new();
        let sample = |samples: &mut Vec<LoadSample>| {
            if let Ok(l) = load_sampler.snapshot() {
                samples.push(LoadSample {
                    at_s: started.elapsed().as_secs_f64(),
                    load: l.value,
                });
            }
        };
        sample(&mut load_samples);

        // The split drains the threads' wake-ups and the kernel's buffers as they measure.
        let mut splitting = recorder
            .zip(session.as_ref().and_then(Session::wakeups))
            .map(|(r, tap)| {
                r.start(
                    tap,
                    latency::rt::now_ns(libc::CLOCK_MONOTONIC),
                    config.histogram_limit_us,
                    a.analyze.map(|us| us.saturating_mul(1000)),
                )
            });
        let live_display = !a.quiet && run.live;
        let shown_priority = if session_fifo { config.priority } else { 0 };
        let intervals: Vec<u64> = (0..config.threads)
            .map(|i| config.interval_of(i).as_micros() as u64)
            .collect();
        let mut drawn = 0usize;
        let mut drawn_max = Vec::new();
        let mut last_load = Instant::now();
        // Without a display, wake only for the load-average samples (and the split's drains).
        let every = Duration::from_millis(if live_display || splitting.is_some() {
            100
        } else {
            1000
        });
        // /proc/interrupts just before and after the measurement: what arrived on the measured
        // CPUs while the threads measured.
        let sides = run.sides(&SideTarget::Cpus(&cpus));
        let started_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let measured = match session {
            // --engine timerlat: the tracer measures until the limits or the stop flag.
            None => crate::split::measure_timerlat(&root, &config, &cpus, interrupt),
            Some(session) => session
                .run(interrupt, every, |live| {
                    if let Some(sp) = splitting.as_mut() {
                        sp.tick(latency::rt::now_ns(libc::CLOCK_MONOTONIC));
                    }
                    if last_load.elapsed() >= Duration::from_secs(5) {
                        last_load = Instant::now();
                        sample(&mut load_samples);
                    }
                    // -M: redraw only when a thread reaches a new maximum (cyclictest's refresh_on_max).
                    let maxima: Vec<u64> = live.iter().map(|l| l.max_ns).collect();
                    let redraw = !a.refresh_on_max || maxima != drawn_max;
                    if live_display && redraw {
                        drawn_max = maxima;
                        let lines = live.iter().map(|l| {
                            cyclictest_line(l, shown_priority, intervals[l.thread], a.nsecs)
                        });
                        drawn = run.redraw(drawn, lines);
                    }
                })
                .map(|m| (m, None))
                .map_err(anyhow::Error::msg),
        };
        let interrupts = sides.stop(&Moved::default()).cpu_interrupts;
        let tracepoints = splitting.map(crate::split::Splitting::finish);
        sample(&mut load_samples);
        if let (Some(l), Some(r)) = (load.as_mut(), stress_record.as_mut()) {
            r.stop = Some(l.stop());
        }
        let (measurement, timerlat) = measured?;
        finish_latency(
            a,
            Measured {
                config: &config,
                notes: &notes,
                context: &context,
                cpus: &cpus,
                started_unix_ms,
                stress_spec: stress_spec.as_ref(),
                stress: stress_record.as_ref(),
                load_samples: &load_samples,
                measurement,
                interrupts,
                split: timerlat.or(tracepoints),
                stopped_by_signal: run.signal(),
                shown: [not_realtime, dma_not_held],
            },
        )
    }

    fn print(&self, ended: &Ended<LatencyRun>, run: &Run<'_>) -> anyhow::Result<()> {
        print_latency(self, &ended.doc, ended.measured, run)
    }
}

/// What a latency run measured, for [`finish_latency`].
struct Measured<'a> {
    config: &'a Config,
    notes: &'a [String],
    context: &'a SystemContext,
    cpus: &'a [u32],
    started_unix_ms: u128,
    stress_spec: Option<&'a StressSpec>,
    stress: Option<&'a StressRecord>,
    load_samples: &'a [LoadSample],
    measurement: Measurement,
    /// What arrived on the measured CPUs while the threads measured (a side sampler).
    interrupts: Option<MeasuredInterrupts>,
    split: Option<Split>,
    /// The signal that stopped the run, if one did.
    stopped_by_signal: Option<i32>,
    /// The findings already printed when the run started.
    shown: [Option<Finding>; 2],
}

/// Judge: the end of every latency run, whichever engine measured.
fn finish_latency(a: &LatencyArgs, r: Measured) -> anyhow::Result<Outcome<LatencyRun>> {
    let Measured {
        config,
        notes,
        context,
        cpus,
        started_unix_ms,
        stress_spec,
        stress,
        load_samples,
        measurement,
        interrupts,
        split,
        stopped_by_signal,
        shown,
    } = r;
    let interrupted = measurement.stopped_by == StopReason::Interrupted;

    let by = stopped_by_signal.map_or("a signal".to_string(), console::signal_name);
    let findings = judge::of_run(
        judge::Run {
            config,
            context,
            measurement: &measurement,
            cpus,
            interrupts: interrupts.as_ref(),
            stress: stress_spec,
            split: split.as_ref(),
        },
        a.breaktrace_us,
        interrupted.then_some(by.as_str()),
    );
    let document = LatencyDocument {
        config: Some(config.clone()),
        started_unix_ms,
        interrupted,
        notes: notes.to_vec(),
        context: Some(context.clone()),
        stress: stress.cloned(),
        load_average: load_samples.to_vec(),
        measurement,
        interrupts,
        split,
        findings,
    };
    let measured = document.measurement.total.count > 0;
    let stopped = stopped_by_signal.map(|_| {
        Stopped::Interrupted(if !measured {
            "nothing was measured".to_string()
        } else if a.keep.no_save {
            "the results above are those measured before it".to_string()
        } else {
            "the results above are those measured before it; kept in the history marked \
             interrupted"
                .to_string()
        })
    });
    Ok(Outcome::Ended(Ended {
        doc: LatencyRun { document, shown },
        measured,
        stopped,
        failed: false,
    }))
}

/// cyclictest's `--json=FILE`, the result on stdout, and the findings on stderr.
fn print_latency(
    a: &LatencyArgs,
    r: &LatencyRun,
    measured: bool,
    run: &Run<'_>,
) -> anyhow::Result<()> {
    let document = &r.document;
    let measurement = &document.measurement;
    let interrupted = document.interrupted;
    // cyclictest's --json=FILE: its document, written whatever stdout shows.
    let cyclictest_json = a.cyclictest_json.as_ref().filter(|_| measured);
    if let Some(file) = cyclictest_json {
        let uname = system::uname().unwrap_or_default();
        let cyclictest_run = report::kinds::latency::cyclictest::JsonRun {
            cmdline: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            nodename: uname.nodename,
            release: uname.release,
            version: uname.version,
            machine: uname.machine,
            return_code: 0,
        };
        let text = report::kinds::latency::cyclictest::json(document, &cyclictest_run);
        report::atomic::write_atomic(file, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write --json={}: {}", file.display(), e.source))?;
    }
    if run.global.json {
        crate::output::print_result(DocumentKind::Latency, document)?;
    } else if a.histogram_us.is_some() || a.histofall_us.is_some() {
        // -h/-H: cyclictest's histogram text, as scripts that parse it expect.
        let how = report::kinds::latency::cyclictest::HistogramText {
            histofall: a.histofall_us.is_some(),
            quiet: a.quiet,
        };
        crate::out!(
            "{}",
            report::kinds::latency::cyclictest::histogram_text(measurement, how)
        )?;
    } else {
        let by = run
            .signal()
            .filter(|_| interrupted)
            .map(console::signal_name);
        crate::out!(
            "{}",
            document.text(&Text {
                style: report::terminal::Style::new(run.global.use_color()),
                nanoseconds: a.nsecs,
                stopped_by: by.as_deref(),
                ..Text::default()
            })
        )?;
    }
    // What the numbers depend on: warnings on stderr, where a user looks for them (the
    // document carries them too).
    for f in document
        .findings
        .iter()
        .filter(|f| !r.shown.contains(&Some((*f).clone())))
    {
        match f.severity {
            Severity::Info => console::note(f.sentence()),
            Severity::Warning => console::warn(f.sentence()),
            Severity::Error => console::error(f.sentence()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::BenchCommand;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(subcommand)]
        c: BenchCommand,
    }

    fn parse(line: &str) -> LatencyArgs {
        let argv = std::iter::once("t").chain(line.split_whitespace());
        match T::try_parse_from(argv).unwrap().c {
            BenchCommand::Latency(a) => a,
            _ => panic!("wrong command"),
        }
    }

    /// What clap makes of the seeds' cyclictest lines (the policy on them is
    /// `model::latency::flags`'s, tested there).
    #[test]
    fn seed_command_lines_give_cyclictests_flags() {
        // RK3576: `cyclictest -c0 -m -t -p99 -D8H`: -t alone, -c glued, -D in hours.
        let f = flags(&parse("latency -c0 -m -t -p99 -D8H"));
        assert_eq!((f.clock, f.threads, f.priority), (Some(0), Some(None), 99));
        assert_eq!(f.duration, Some(Duration::from_secs(8 * 3600)));
        // -a alone pins; -h is the histogram, not help; defaults are cyclictest's.
        let f = flags(&parse("latency -t 2 -a -h 400 -q -D 2h"));
        assert_eq!(
            (f.threads, f.affinity, f.histogram_us),
            (Some(Some(2)), Some(None), Some(400))
        );
        assert_eq!(
            (f.interval_us, f.distance_us, f.no_mlock),
            (1000, None, false)
        );
        let f = flags(&parse("latency -a 2-3 -S -n -y rr -b 50 --analyze 100"));
        assert_eq!(f.affinity, Some(Some("2-3".to_string())));
        assert!(f.smp && f.nanosleep);
        assert_eq!(
            (f.policy.as_deref(), f.breaktrace_us, f.analyze),
            (Some("rr"), Some(50), Some(100))
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("8H"), Ok(Duration::from_secs(28800)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("2x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("h").is_err());
    }
}
