//! The one place a benchmark runs (hyperfine's scheduler is the model: the commands only
//! describe a benchmark, this module runs it). A command (`bench disk`, `bench net`, `bench
//! latency`, `bench mmio`, `bench mem`, `survey`) implements [`Benchmark`]: its flags turned
//! into a plan, the measurement under the driver's stop flag, and how its document is shown.
//! The driver owns everything around that, the same for every command:
//!
//! - the places results go, checked before anything runs (`--output`, `--textfile-dir`, and
//!   what a command writes besides), so a bad one fails before minutes of measuring (exit 2);
//! - SIGINT and SIGTERM ([`Interrupt`]): the stop flag every engine reads, the exit code 128 +
//!   the signal, and the partial result kept as measured;
//! - progress on stderr, drawn only where stderr is a terminal;
//! - the side samplers started beside the engine (`beside::SIDE_SAMPLERS`: one registration each);
//! - keeping the document (`--output`, `--textfile-dir`, the history unless `--no-save`, in
//!   `--db`), printing it, and the exit code;
//! - the child processes of the survey's parts ([`supervise`]), with bounded waits.

use crate::beside::{SideFlags, SideTarget, Sides};
use crate::console;
use crate::output::{GlobalArgs, KeepArgs, OutputUnusable};
use model::root::SysRoot;
use report::document::DocumentKind;
use std::io::{IsTerminal, Read};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// A benchmark as the driver runs it.
pub trait Benchmark {
    /// What a run makes: the result document (see [`Benchmark::kept`]) and what its text
    /// needs besides.
    type Document;
    /// The result document, as written by `--json`, `--output` and the history.
    type Kept: serde::Serialize;
    /// What the command line asks for, checked: made before the signal handlers are
    /// installed.
    type Setup;
    /// The kind of the document.
    const KIND: DocumentKind;

    /// Where the result is kept: `--output`, `--textfile-dir`, the history (`--no-save`,
    /// `--db`).
    fn keep(&self) -> KeepArgs;

    /// The result document of what a run made.
    fn kept(doc: &Self::Document) -> &Self::Kept;

    /// What the flags say of the side samplers beside the engine (`--no-watch`); every one
    /// runs by default.
    fn side_flags(&self) -> SideFlags {
        SideFlags::default()
    }

    /// Whether every place a result goes can be written, checked before the plan is made
    /// (a usage error): `--output` and `--textfile-dir` unless the command writes more.
    fn check_outputs(&self) -> Result<(), OutputUnusable> {
        self.keep().check_output()
    }

    /// The command line turned into what runs: a bad value is a usage error (exit 2).
    fn plan(&self, global: &GlobalArgs) -> anyhow::Result<Self::Setup>;

    /// Measure, until the plan's end or the stop flag of `run`.
    fn run(&self, plan: Self::Setup, run: &Run<'_>) -> anyhow::Result<Outcome<Self::Document>>;

    /// Show a result on stdout (and what goes beside it on stderr). Called after the result
    /// was kept, also when keeping it failed (that failure is returned after).
    fn print(&self, ended: &Ended<Self::Document>, run: &Run<'_>) -> anyhow::Result<()>;
}

/// How a run ended.
pub enum Outcome<D> {
    /// A result, to keep and show.
    Ended(Ended<D>),
    /// Stopped before anything was measured: nothing is kept or shown.
    Nothing(Stopped),
    /// The run kept and showed its results itself, each through [`Run::finish`] (a server's
    /// tests), and ends with this.
    Done(anyhow::Result<ExitCode>),
}

/// A result and how the run that made it ended.
pub struct Ended<D> {
    pub doc: D,
    /// Whether anything was measured: only then is the result kept.
    pub measured: bool,
    /// Cut short by a signal: what is said, and how.
    pub stopped: Option<Stopped>,
    /// The run did not do its work (nothing measured, a test the peer stopped): exit 1.
    pub failed: bool,
}

/// What a run stopped by a signal says; either way it exits 128 + the signal.
pub enum Stopped {
    /// One line of information (`headroom: interrupted: ...`).
    Said(String),
    /// `headroom: interrupted by SIGINT (Ctrl-C): KEPT`, with what happened to the results.
    Interrupted(String),
}

/// Run a benchmark: check where results go, plan, install the signal handlers, measure, keep,
/// show, and the exit code.
pub fn drive<B: Benchmark>(global: &GlobalArgs, bench: &B) -> anyhow::Result<ExitCode> {
    bench.check_outputs().map_err(|e| console::usage(e.0))?;
    let plan = bench.plan(global)?;
    let interrupt = Interrupt::install()?;
    let run = Run {
        global,
        interrupt,
        live: std::io::stderr().is_terminal(),
        side_flags: bench.side_flags(),
    };
    match bench.run(plan, &run)? {
        Outcome::Ended(ended) => run.finish(bench, ended),
        Outcome::Nothing(stopped) => run.stopped(stopped),
        Outcome::Done(code) => code,
    }
}

/// A running benchmark's view of the driver: the stop flag, progress, side samplers, partial
/// results.
pub struct Run<'a> {
    pub global: &'a GlobalArgs,
    interrupt: Interrupt,
    /// Whether stderr is a terminal: progress is drawn only there.
    pub live: bool,
    /// What the benchmark's flags say of its side samplers (`--no-watch`).
    side_flags: SideFlags,
}

impl Run<'_> {
    /// The flag SIGINT and SIGTERM set, which every engine reads.
    pub fn stop(&self) -> &bench::Stop {
        &self.interrupt.stop
    }

    /// Whether the stop flag is set.
    pub fn is_stopped(&self) -> bool {
        self.interrupt.is_set()
    }

    /// The signal that came, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.interrupt.signal()
    }

    /// Stop handling the signals (what is already recorded stays): a second Ctrl-C while the
    /// results are written ends the process.
    pub fn release_signals(&self) {
        self.interrupt.release();
    }

    /// Run an engine until its end or the stop flag, with its progress callback.
    pub fn engine<E, F>(&self, engine: E, progress: F) -> Result<E::Measurement, E::Error>
    where
        E: bench::Bench,
        F: for<'p> Fn(&E::Progress<'p>) + Sync,
    {
        engine.run(self.stop(), progress)
    }

    /// A progress line on stderr, redrawn in place, where stderr is a terminal.
    pub fn progress(&self, line: impl std::fmt::Display) {
        if self.live {
            console::progress(line);
        }
    }

    /// A block of live lines on stderr redrawn in place (bench latency's cyclictest lines),
    /// over the `drawn` lines of the last block; the caller draws only where stderr is a
    /// terminal. Returns how many lines it drew.
    pub fn redraw<T: std::fmt::Display>(
        &self,
        drawn: usize,
        lines: impl IntoIterator<Item = T>,
    ) -> usize {
        console::redraw(drawn, lines)
    }

    /// Erase the progress line, where one is drawn.
    pub fn progress_done(&self) {
        if self.live {
            console::progress_done();
        }
    }

    /// Start the side samplers beside an engine, for the hardware its target crosses, as the
    /// benchmark's flags say (`--no-watch`).
    pub fn sides(&self, target: &SideTarget<'_>) -> Sides {
        Sides::start(SysRoot::system(), target, self.side_flags)
    }

    /// Write a partial result to `--output` atomically (after each test of a run, so a stop
    /// keeps what was measured); the caller says a failure.
    pub fn write_partial<D: serde::Serialize>(
        &self,
        keep: &KeepArgs,
        kind: DocumentKind,
        doc: &D,
    ) -> anyhow::Result<()> {
        match &keep.output {
            Some(out) => crate::output::write_result(out, kind, doc),
            None => Ok(()),
        }
    }

    /// Keep, show and end one result: kept first (a failure said after the result is shown),
    /// then shown, then the exit code.
    pub fn finish<B: Benchmark + ?Sized>(
        &self,
        bench: &B,
        ended: Ended<B::Document>,
    ) -> anyhow::Result<ExitCode> {
        let kept = if ended.measured {
            bench.keep().keep(B::KIND, B::kept(&ended.doc))
        } else {
            Ok(())
        };
        bench.print(&ended, self)?;
        if let Some(Stopped::Said(s)) = &ended.stopped {
            console::info(s);
        }
        // A result that could not be kept is the run's failure (exit 1), said once by
        // console::exit_code.
        kept?;
        match ended.stopped {
            Some(Stopped::Said(_)) => Ok(self.exit_code()),
            Some(Stopped::Interrupted(kept)) => Err(self.interrupted(kept)),
            None if ended.failed => Ok(ExitCode::from(1)),
            None => Ok(ExitCode::SUCCESS),
        }
    }

    /// The end of a run a signal stopped: 128 + the signal.
    fn stopped(&self, stopped: Stopped) -> anyhow::Result<ExitCode> {
        match stopped {
            Stopped::Said(s) => {
                console::info(s);
                Ok(self.interrupt.exit_code())
            }
            Stopped::Interrupted(kept) => Err(self.interrupt.interrupted(kept)),
        }
    }

    /// The error of a run stopped by a signal, with what was `kept`.
    pub fn interrupted(&self, kept: impl Into<String>) -> anyhow::Error {
        self.interrupt.interrupted(kept)
    }

    /// 128 + the signal that stopped the run.
    pub fn exit_code(&self) -> ExitCode {
        self.interrupt.exit_code()
    }
}

// ---------------------------------------------------------------------------------------
// Signals

/// SIGINT and SIGTERM as every command sees them: a stop flag the engines read
/// ([`bench::Stop`]) and the number of the signal that came, for the exit code (128 + the
/// signal: 130 for Ctrl-C, 143 for SIGTERM) and [`console::Interrupted`]'s sentence. One per command,
/// installed before its work starts.
pub struct Interrupt {
    /// Set by either signal (or by the command itself, e.g. at a deadline).
    pub stop: bench::Stop,
    signal: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ids: std::sync::Mutex<Vec<signal_hook::SigId>>,
}

impl Interrupt {
    /// Install the handlers of SIGINT and SIGTERM.
    pub fn install() -> anyhow::Result<Interrupt> {
        use std::sync::atomic::{AtomicBool, AtomicUsize};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // The number first: whoever sees the flag set finds the signal recorded.
            let installed =
                signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
                    .and_then(|n| Ok([n, signal_hook::flag::register(sig, Arc::clone(&stop))?]));
            match installed {
                Ok(pair) => ids.extend(pair),
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!(
                        "cannot install the {} handler",
                        console::signal_name(sig)
                    )))
                }
            }
        }
        Ok(Interrupt {
            stop,
            signal,
            ids: std::sync::Mutex::new(ids),
        })
    }

    /// Whether the stop flag is set.
    pub fn is_set(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The signal that came, if one did.
    pub fn signal(&self) -> Option<i32> {
        i32::try_from(self.signal.load(std::sync::atomic::Ordering::SeqCst))
            .ok()
            .filter(|&s| s != 0)
    }

    /// The signal that stopped the run (SIGINT when the flag was set otherwise).
    pub fn stopped_by(&self) -> i32 {
        self.signal().unwrap_or(libc::SIGINT)
    }

    /// 128 + the signal that stopped the run.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(u8::try_from(128 + self.stopped_by()).unwrap_or(130))
    }

    /// The error a stopped run returns: its sentence and exit code, with what was `kept`.
    pub fn interrupted(&self, kept: impl Into<String>) -> anyhow::Error {
        console::Interrupted {
            signal: self.stopped_by(),
            kept: kept.into(),
        }
        .into()
    }

    /// Stop handling the signals (what is already recorded stays).
    pub fn release(&self) {
        if let Ok(mut ids) = self.ids.lock() {
            for id in ids.drain(..) {
                signal_hook::low_level::unregister(id);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Benchmarks run as child processes (the survey's parts)

/// How long the survey waits for a part it stopped: every wait is bounded, also when the
/// part cannot end (a process stuck in the kernel does not exit even on SIGKILL: an x86
/// board under QEMU's multi-threaded TCG hung so, in a soft lockup, while tracepoints were
/// enabled) or when a process it started keeps its output open.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    /// From SIGINT (the part keeps what it measured and removes its files) to SIGKILL.
    pub after_int: Duration,
    /// From SIGKILL to giving up on the process.
    pub after_kill: Duration,
    /// From the process's end to giving up on its output pipes.
    pub pipes: Duration,
}

pub const WAITS: Waits = Waits {
    after_int: Duration::from_secs(60),
    after_kill: Duration::from_secs(10),
    pipes: Duration::from_secs(5),
};

/// How a supervised child ended.
#[derive(Debug, Default)]
pub struct ChildEnd {
    pub stdout: String,
    pub stderr: String,
    /// Exit code, 128 + the signal; `None` when it did not end or its status is unreadable.
    pub code: Option<i32>,
    /// When it was sent SIGINT.
    pub stopped_at: Option<Instant>,
    /// Still there `after_kill` after SIGKILL: left behind, its pid.
    pub unkillable: Option<u32>,
    /// Its output was still open `pipes` after it ended (a process it started holds it).
    pub pipes_held: bool,
}

/// A thread that reads `pipe` to its end into a buffer the caller can take at any time.
fn drain<R: Read + Send + 'static>(
    pipe: Option<R>,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    Option<std::thread::JoinHandle<()>>,
) {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&buf);
    let handle = pipe.map(|mut p| {
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match p.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Ok(mut b) = into.lock() {
                            b.extend_from_slice(&chunk[..n]);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
    });
    (buf, handle)
}

/// Run `cmd` with its stdout and stderr captured until it ends. `should_stop(elapsed)` is
/// asked every 200 ms: once true, the child gets SIGINT, `waits.after_int` later SIGKILL,
/// and `waits.after_kill` after that it is given up. `tick(elapsed)` runs every 200 ms.
pub fn supervise(
    cmd: &mut Command,
    waits: Waits,
    mut should_stop: impl FnMut(Duration) -> bool,
    mut tick: impl FnMut(Duration),
) -> std::io::Result<ChildEnd> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (out, out_reader) = drain(child.stdout.take());
    let (err, err_reader) = drain(child.stderr.take());
    let mut end = ChildEnd::default();
    let mut killed: Option<Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        let elapsed = started.elapsed();
        if end.stopped_at.is_none() && should_stop(elapsed) {
            // Ctrl-C in the terminal reaches the child too; a SIGTERM to the survey alone
            // or the deadline does not: pass it on so the part cleans up and keeps its data.
            // SAFETY: kill with a pid of our own child (not yet reaped) and a valid signal.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            end.stopped_at = Some(Instant::now());
        }
        match (end.stopped_at, killed) {
            (Some(t), None) if t.elapsed() > waits.after_int => {
                let _ = child.kill();
                killed = Some(Instant::now());
            }
            (_, Some(k)) if k.elapsed() > waits.after_kill => {
                end.unkillable = Some(child.id());
                break None;
            }
            _ => {}
        }
        tick(elapsed);
        std::thread::sleep(Duration::from_millis(200));
    };
    // Its output: to the end, or as far as it came within `waits.pipes`.
    let readers_done = Instant::now();
    let reading = || {
        [&out_reader, &err_reader]
            .iter()
            .any(|r| r.as_ref().is_some_and(|h| !h.is_finished()))
    };
    while reading() && readers_done.elapsed() < waits.pipes {
        std::thread::sleep(Duration::from_millis(20));
    }
    end.pipes_held = end.unkillable.is_none() && reading();
    let take = |b: &std::sync::Mutex<Vec<u8>>| {
        b.lock()
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default()
    };
    end.stdout = take(&out);
    end.stderr = take(&err);
    end.code = status.and_then(|s| {
        use std::os::unix::process::ExitStatusExt;
        s.code().or(s.signal().map(|sig| 128 + sig))
    });
    Ok(end)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    const SHORT: Waits = Waits {
        after_int: Duration::from_millis(400),
        after_kill: Duration::from_secs(10),
        pipes: Duration::from_secs(2),
    };

    /// `sh -c script` supervised with short waits, stopped at once when `stop` (with SIGINT
    /// ignored from its start when `deaf`); how it ended and how long the survey waited.
    fn sh(script: &str, stop: bool, deaf: bool) -> (ChildEnd, Duration) {
        use std::os::unix::process::CommandExt;
        let t = Instant::now();
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        if deaf {
            // SAFETY: signal() is async-signal-safe, as pre_exec requires.
            unsafe {
                c.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let end = supervise(&mut c, SHORT, |_| stop, |_| {}).unwrap();
        (end, t.elapsed())
    }

    #[test]
    fn a_part_that_ignores_sigint_is_killed() {
        let (end, took) = sh("exec sleep 30", true, true);
        assert_eq!(end.code, Some(128 + libc::SIGKILL));
        assert!(end.stopped_at.is_some() && end.unkillable.is_none() && !end.pipes_held);
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn output_held_open_by_a_process_the_part_left_is_not_waited_for() {
        let (end, took) = sh("echo '{}'; echo note >&2; sleep 30 & exit 3", false, false);
        assert_eq!(
            (end.code, end.stdout.as_str(), end.stderr.as_str()),
            (Some(3), "{}\n", "note\n")
        );
        assert!(end.pipes_held && end.stopped_at.is_none());
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_part_that_ends_by_itself_keeps_all_its_output() {
        let (end, _) = sh("head -c 300000 /dev/zero | tr '\\0' x", false, false);
        assert_eq!((end.code, end.stdout.len()), (Some(0), 300_000));
        assert!(!end.pipes_held && end.stopped_at.is_none());
    }
}
