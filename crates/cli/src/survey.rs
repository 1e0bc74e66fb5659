//! `headroom survey`: the whole board report of the seed documents in one command.
//!
//! A plan first (which part runs on which device, for how long, writing how much), fitted
//! into `--budget` by `model::survey::fit` (and before each part, the rest of it again into
//! what is left, by `model::survey::refit`); then each part runs as headroom's own command
//! in a child process (`headroom bench disk ... --json`), so a part that fails or is
//! stopped leaves the others and the survey document intact, and each part's document is
//! exactly what the command alone would have written. The survey document holds them all,
//! with the summary and ranked conclusions of `report::kinds::survey`.

use crate::output::{GlobalArgs, KeepArgs};
use anyhow::Context;
use clap::Args;
use model::root::SysRoot;
use model::survey::{fit, format_seconds, plan, refit, Overruns, PartKind, PlannedPart, Spent};
use report::kinds::survey::{PartEnd, PartResult, PartStatus, SurveyDocument};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Parts: audit (every link, its ceiling and findings); disk (each storage \
device behind a mounted, writable filesystem: SEQ1M Q8T1, RND4K Q32T1 and SEQ1M Q1T1, read and \
write, in a test file of its own that is removed afterwards, also on Ctrl-C; block devices with \
nothing mounted are only read, never written); latency (wake-up latency idle, then under the \
built-in stress); net (to --net HOST, an iperf3 or headroom server, both directions).\n\
Examples:\n  headroom survey --budget 10m --html board.html\n  \
headroom survey --quick --dry-run\n  headroom survey --root captured-tree --dry-run"
)]
pub struct SurveyArgs {
    /// Time for the whole survey: 40s, 10m, 1h. Parts get shorter, then are left out (with
    /// the reason) to fit; as it runs, the parts still to run are fitted into what is left,
    /// and a part still running at the end is stopped, keeping what it measured.
    #[arg(long, default_value = "10m", value_name = "TIME")]
    pub budget: String,

    /// Shorter default times and a smaller test file (64 MiB instead of 256 MiB).
    #[arg(long)]
    pub quick: bool,

    /// Print the plan and stop.
    #[arg(long)]
    pub dry_run: bool,

    /// Measure network throughput to HOST (an iperf3 or `headroom bench net --server`).
    #[arg(long, value_name = "HOST")]
    pub net: Option<String>,

    /// The port of the server given with --net (iperf3's default 5201).
    #[arg(long, value_name = "PORT", default_value_t = 5201, requires = "net")]
    pub net_port: u16,

    /// Run only these parts: audit, disk, latency, net (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "KIND")]
    pub include: Vec<String>,

    /// Leave out these parts: audit, disk, latency, net.
    #[arg(long, value_delimiter = ',', value_name = "KIND")]
    pub exclude: Vec<String>,

    /// Plan the survey of a sysfs tree captured from another machine (with --dry-run only:
    /// benchmarks run on this machine).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// The report as Markdown instead of text: on stdout, or written to FILE (the text
    /// still printed).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub md: Option<Option<PathBuf>>,

    /// Also write the report as one self-contained HTML file with plots.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub keep: KeepArgs,
}

pub fn run(global: &GlobalArgs, args: &SurveyArgs) -> anyhow::Result<ExitCode> {
    let usage = |msg: String| Err(crate::console::usage(msg));
    let budget = match model::units::parse_duration(&args.budget) {
        Ok(b) => b.as_secs_f64(),
        Err(why) => return usage(format!("--budget {}: {why}", args.budget)),
    };
    let mut kinds_in = Vec::new();
    for (flag, list) in [("--include", &args.include), ("--exclude", &args.exclude)] {
        for k in list {
            match PartKind::parse(k.trim()) {
                Some(kind) => kinds_in.push((flag, kind)),
                None => {
                    return usage(format!(
                        "{flag} {k}: not a part; use audit, disk, latency or net"
                    ))
                }
            }
        }
    }
    if args.root.is_some() && !args.dry_run {
        return usage(
            "--root plans the survey of a captured tree, which cannot run here: add --dry-run"
                .to_string(),
        );
    }
    let root = SysRoot::new(args.root.clone().unwrap_or_else(|| PathBuf::from("/")));
    let live_root = args.root.is_none();
    // The parts at their default times, kept to fit the rest of the survey into what is left
    // of the budget as it runs.
    let request = plan::Request {
        quick: args.quick,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        net: args.net.as_deref().map(|h| (h, args.net_port)),
        kinds: kinds_in,
    };
    let space = |dir: &Path| live_root.then(|| probe::mounts::free_space(dir)).flatten();
    let defaults = plan::parts(&probe::block::scan(&root), &space, &request);
    // The plan as fitted, before the times go into the command lines: what each part is
    // given at most as the survey runs.
    let fitted = fit(budget, defaults);
    let plan = plan::with_times(fitted.clone());

    if args.dry_run {
        if global.json {
            crate::output::print_result(report::document::DocumentKind::SurveyPlan, &plan)?;
        } else {
            crate::out!("{}", report::kinds::survey::plan_text(&plan, live_root))?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    // The places results go are checked before anything runs: a lost report after ten
    // minutes of benchmarks is the worst outcome.
    for (flag, file) in [
        ("--output", &args.keep.output),
        ("--md", &args.md.clone().flatten()),
        ("--html", &args.html),
    ] {
        if let Some(file) = file {
            crate::output::check_writable(flag, file)
                .map_err(|e| crate::console::usage(e.to_string()))?;
        }
    }
    if let Some(dir) = &args.keep.textfile_dir {
        crate::output::check_textfile_dir(dir, "headroom-survey.prom")
            .map_err(|e| crate::console::usage(e.to_string()))?;
    }
    crate::console::text(report::kinds::survey::plan_text(&plan, live_root));

    let mut interrupt = crate::console::Interrupt::install()?;
    let stop = &interrupt.stop;
    let live = std::io::stderr().is_terminal();
    let exe = std::env::current_exe()
        .context("cannot find headroom's own executable to run the survey's parts")?;

    let mut body = SurveyDocument {
        plan: plan.clone(),
        parts: Vec::new(),
        interrupted: false,
        seconds: None,
        summary: String::new(),
        conclusions: Vec::new(),
    };
    let started = Instant::now();
    // A budget is a promise, and so is the plan: the rest of the survey is fitted into what
    // is left of the budget before each part (a part that overran leaves less for the later
    // ones, and the parts of its kind are expected to overrun as much), never beyond the
    // times the plan printed (a part that ended early leaves its time unused rather than
    // lengthening the next ones and squeezing the last), and a part still running when the
    // budget ends is stopped, keeping what it measured.
    let budget_end = started + Duration::from_secs_f64(budget);
    let mut overruns = Overruns::default();
    let mut estimated = 0.0;
    let running = plan.parts.iter().filter(|p| p.run).count();
    let mut index = 0;
    for (i, part) in plan.parts.iter().enumerate() {
        let not_run = |reason: String| PartResult::not_run(part, reason);
        let result = if !part.run {
            not_run(part.reason.clone().unwrap_or_default())
        } else if stop.load(Ordering::Relaxed) {
            not_run("not run: the survey was stopped before it".to_string())
        } else {
            // The parts from this one on, at the times the plan gave them (those it left out
            // stay out), fitted into what is left.
            let rest = fitted.parts[i..].to_vec();
            let spent = Spent {
                budget_s: budget,
                took_s: started.elapsed().as_secs_f64(),
                estimated_s: estimated,
            };
            let now = plan::with_times(refit(&spent, rest, &overruns));
            // What this part is given: its unit time fitted now, its fixed time as planned
            // (the overruns of its kind learned so far only make room for it), so that what
            // it was given reads against what was planned.
            let this = &PlannedPart {
                fixed_s: fitted.parts[i].fixed_s,
                ..now.parts[0].clone()
            };
            if this.run {
                index += 1;
                let ctx = PartProgress {
                    live,
                    index,
                    count: running,
                    remaining_after: now.parts[1..]
                        .iter()
                        .filter(|p| p.run)
                        .map(PlannedPart::seconds)
                        .sum(),
                    budget_end,
                    budget_s: budget,
                };
                let mut r = run_part(&exe, this, stop, &ctx);
                if let Some(took) = r.seconds {
                    overruns.record(this.kind, this.seconds(), took);
                }
                estimated += this.seconds();
                r.planned_s = Some(report::kinds::survey::round_tenth(part.seconds()));
                r
            } else {
                let why = this.reason.clone().unwrap_or_default();
                if live {
                    crate::console::info(format_args!("{}: {why}", this.id));
                }
                not_run(why)
            }
        };
        body.parts.push(result);
        body.seconds = Some(report::kinds::survey::round_tenth(
            started.elapsed().as_secs_f64(),
        ));
        if let Some(out) = &args.keep.output {
            // After every part, atomically: Ctrl-C or a crash keeps what was measured.
            let partial = body.finished(stop.load(Ordering::Relaxed));
            if let Err(e) =
                crate::output::write_result(out, report::document::DocumentKind::Survey, &partial)
            {
                crate::console::warn(crate::console::sentence(&e));
            }
        }
    }
    let interrupted = interrupt.is_set();
    interrupt.release();
    let body = body.finished(interrupted);
    if !interrupted && live {
        crate::console::info(format_args!(
            "survey done in {}",
            format_seconds(started.elapsed().as_secs_f64())
        ));
    }

    let doc = crate::output::wrap(report::document::DocumentKind::Survey, &body)?;
    args.keep
        .keep(report::document::DocumentKind::Survey, &body)?;
    if let Some(Some(file)) = &args.md {
        report::write_atomic(
            file,
            report::kinds::survey::markdown(&doc, &body, "survey").as_bytes(),
        )?;
        crate::console::info(format_args!("wrote {}", file.display()));
    }
    if let Some(file) = &args.html {
        report::write_atomic(
            file,
            report::kinds::survey::html(&doc, &body, "survey")?.as_bytes(),
        )?;
        crate::console::info(format_args!("wrote {}", file.display()));
    }
    if global.json {
        crate::output::print_result(report::document::DocumentKind::Survey, &body)?;
    } else if matches!(args.md, Some(None)) {
        crate::out!("{}", report::kinds::survey::markdown(&doc, &body, "survey"))?;
    } else {
        let style = report::terminal::Style::new(global.use_color());
        crate::out!(
            "{}",
            report::kinds::survey::text(&doc, &body, "survey", &style)
        )?;
    }
    if interrupted {
        return Err(interrupt.interrupted(
            "the survey keeps the parts measured before the stop; the parts' test files were \
             removed",
        ));
    }
    if body.parts.iter().any(|p| p.status == PartStatus::Failed) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------
// Running a part

/// Where the survey stands, for the running part's progress line and its stop.
struct PartProgress {
    live: bool,
    index: usize,
    count: usize,
    /// Estimated seconds of the parts after this one.
    remaining_after: f64,
    /// When the survey's budget ends: a part still running then is stopped.
    budget_end: Instant,
    budget_s: f64,
}

/// Longest a part may overrun its estimate before it is stopped: every loop is bounded.
fn deadline(part: &PlannedPart) -> Duration {
    Duration::from_secs_f64(part.seconds() * 3.0 + 120.0)
}

/// How long before the budget's end a part still running is asked to stop: what a part
/// takes to keep its partial result and remove its test file (a disk part on an emulated
/// board, 0.3 s), and the survey to write its document. The plan leaves it free.
const STOP_BEFORE_END: Duration = Duration::from_secs(model::survey::WRAP_UP_S as u64);

/// How long the survey waits for a part it stopped: every wait is bounded, also when the
/// part cannot end (a process stuck in the kernel does not exit even on SIGKILL: an x86
/// board under QEMU's multi-threaded TCG hung so, in a soft lockup, while tracepoints were
/// enabled) or when a process it started keeps its output open.
#[derive(Clone, Copy, Debug)]
struct Waits {
    /// From SIGINT (the part keeps what it measured and removes its files) to SIGKILL.
    after_int: Duration,
    /// From SIGKILL to giving up on the process.
    after_kill: Duration,
    /// From the process's end to giving up on its output pipes.
    pipes: Duration,
}

const WAITS: Waits = Waits {
    after_int: Duration::from_secs(60),
    after_kill: Duration::from_secs(10),
    pipes: Duration::from_secs(5),
};

/// How a supervised child ended.
#[derive(Debug, Default)]
struct ChildEnd {
    stdout: String,
    stderr: String,
    /// Exit code, 128 + the signal; `None` when it did not end or its status is unreadable.
    code: Option<i32>,
    /// When it was sent SIGINT.
    stopped_at: Option<Instant>,
    /// Still there `after_kill` after SIGKILL: left behind, its pid.
    unkillable: Option<u32>,
    /// Its output was still open `pipes` after it ended (a process it started holds it).
    pipes_held: bool,
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
fn supervise(
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

fn run_part(exe: &Path, part: &PlannedPart, stop: &AtomicBool, p: &PartProgress) -> PartResult {
    let started = Instant::now();
    let limit = deadline(part);
    let budget_stop = p.budget_end.checked_sub(STOP_BEFORE_END);
    let mut out_of_budget = false;
    let mut cmd = Command::new(exe);
    cmd.args(&part.command).env("NO_COLOR", "1");
    let should_stop = |elapsed: Duration| {
        if budget_stop.is_none_or(|t| Instant::now() >= t) {
            out_of_budget = true;
        }
        stop.load(Ordering::Relaxed) || elapsed > limit || out_of_budget
    };
    let tick = |elapsed: Duration| {
        if p.live {
            let left = (part.seconds() - elapsed.as_secs_f64()).max(0.0) + p.remaining_after;
            crate::console::progress(format_args!(
                "[{}/{}] {}  {:.0} s of about {:.0} s · survey about {} left",
                p.index,
                p.count,
                part.id,
                elapsed.as_secs_f64(),
                part.seconds(),
                format_seconds(left)
            ));
        }
    };
    let ended = supervise(&mut cmd, WAITS, should_stop, tick);
    if p.live {
        crate::console::progress_done();
    }
    let child = match ended {
        Ok(c) => c,
        Err(e) => {
            return PartResult {
                reason: Some(format!("could not start {}: {e}", exe.display())),
                ..PartResult::started(part)
            };
        }
    };
    let end = PartEnd {
        stdout: &child.stdout,
        stderr: &child.stderr,
        code: child.code,
        took_s: started.elapsed().as_secs_f64(),
        stopped_by_user: stop.load(Ordering::Relaxed),
        out_of_budget: child
            .stopped_at
            .filter(|_| out_of_budget)
            .map(|t| t.elapsed().as_secs_f64()),
        budget_s: p.budget_s,
        limit_s: limit.as_secs_f64(),
        unkillable: child
            .unkillable
            .map(|pid| (pid, WAITS.after_kill.as_secs_f64())),
        pipes_held: child.pipes_held.then_some(WAITS.pipes.as_secs_f64()),
    };
    let result = PartResult::of_run(part, end);
    if !p.live {
        return result;
    }
    crate::console::info(format_args!(
        "[{}/{}] {}: {}{}",
        p.index,
        p.count,
        part.id,
        result.status.word(),
        result
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ));
    result
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
