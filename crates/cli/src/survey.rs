//! `headroom survey`: the whole board report of the seed documents in one command.
//!
//! A plan first (which part runs on which device, for how long, writing how much), fitted
//! into `--budget` by `model::survey::fit` (and before each part, the rest of it again into
//! what is left, by `model::survey::refit`); then each part runs as headroom's own command
//! in a child process (`headroom bench disk ... --json`), so a part that fails or is
//! stopped leaves the others and the survey document intact, and each part's document is
//! exactly what the command alone would have written. The survey document holds them all,
//! with the summary and ranked conclusions of `report::kinds::survey`.

use crate::driver::{supervise, Benchmark, Ended, Outcome, Run, Stopped, WAITS};
use crate::output::{GlobalArgs, KeepArgs, OutputUnusable};
use anyhow::Context;
use clap::Args;
use model::root::SysRoot;
use model::survey::{fit, format_seconds, plan, refit, Overruns, PartKind, PlannedPart, Spent};
use report::document::DocumentKind;
use report::kinds::survey::{PartEnd, PartResult, PartStatus, SurveyDocument};
use report::kinds::{KindDocument as _, Text};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::Ordering;
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

    crate::driver::drive(
        global,
        &Survey {
            args,
            plan,
            fitted,
            budget,
            live_root,
        },
    )
}

/// A survey planned: what the driver runs.
struct Survey<'a> {
    args: &'a SurveyArgs,
    /// The plan with its times in the parts' command lines.
    plan: model::survey::Plan,
    /// The plan as fitted, before the times go into the command lines: what each part is
    /// given at most as the survey runs.
    fitted: model::survey::Plan,
    budget: f64,
    live_root: bool,
}

impl Benchmark for Survey<'_> {
    type Document = SurveyDocument;
    type Kept = SurveyDocument;
    type Setup = ();
    const KIND: DocumentKind = DocumentKind::Survey;

    fn kept(doc: &SurveyDocument) -> &SurveyDocument {
        doc
    }

    fn keep(&self) -> KeepArgs {
        self.args.keep.clone()
    }

    /// The places results go are checked before anything runs: a lost report after ten
    /// minutes of benchmarks is the worst outcome.
    fn check_outputs(&self) -> Result<(), OutputUnusable> {
        let args = self.args;
        for (flag, file) in [
            ("--output", &args.keep.output),
            ("--md", &args.md.clone().flatten()),
            ("--html", &args.html),
        ] {
            if let Some(file) = file {
                crate::output::check_writable(flag, file)?;
            }
        }
        if let Some(dir) = &args.keep.textfile_dir {
            crate::output::check_textfile_dir(dir, "headroom-survey.prom")?;
        }
        Ok(())
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<()> {
        crate::console::text(report::kinds::survey::plan_text(&self.plan, self.live_root));
        Ok(())
    }

    fn run(&self, _plan: (), run: &Run<'_>) -> anyhow::Result<Outcome<SurveyDocument>> {
        let Survey {
            args,
            plan,
            fitted,
            budget,
            ..
        } = self;
        let (plan, fitted, budget) = (plan, fitted, *budget);
        let stop = run.stop();
        let live = run.live;
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
                    let mut r = run_part(&exe, this, run, &ctx);
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
            if args.keep.output.is_some() {
                // After every part, atomically: Ctrl-C or a crash keeps what was measured.
                let partial = body.finished(stop.load(Ordering::Relaxed));
                if let Err(e) = run.write_partial(&args.keep, Self::KIND, &partial) {
                    crate::console::warn(crate::console::sentence(&e));
                }
            }
        }
        let interrupted = run.is_stopped();
        run.release_signals();
        let body = body.finished(interrupted);
        if !interrupted && live {
            crate::console::info(format_args!(
                "survey done in {}",
                format_seconds(started.elapsed().as_secs_f64())
            ));
        }
        let failed = body.parts.iter().any(|p| p.status == PartStatus::Failed);
        Ok(Outcome::Ended(Ended {
            doc: body,
            measured: true,
            stopped: interrupted.then(|| {
                Stopped::Interrupted(
                    "the survey keeps the parts measured before the stop; the parts' test files \
                     were removed"
                        .into(),
                )
            }),
            failed,
        }))
    }

    fn print(&self, ended: &Ended<SurveyDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        let args = self.args;
        let body = &ended.doc;
        let doc = crate::output::wrap(DocumentKind::Survey, body)?;
        if let Some(Some(file)) = &args.md {
            report::write_atomic(
                file,
                report::kinds::survey::markdown(&doc, body, "survey").as_bytes(),
            )?;
            crate::console::info(format_args!("wrote {}", file.display()));
        }
        if let Some(file) = &args.html {
            report::write_atomic(
                file,
                report::kinds::survey::html(&doc, body, "survey")?.as_bytes(),
            )?;
            crate::console::info(format_args!("wrote {}", file.display()));
        }
        if run.global.json {
            crate::output::print_result(DocumentKind::Survey, body)?;
        } else if matches!(args.md, Some(None)) {
            crate::out!("{}", report::kinds::survey::markdown(&doc, body, "survey"))?;
        } else {
            crate::out!(
                "{}",
                body.text(&Text {
                    style: report::terminal::Style::new(run.global.use_color()),
                    host: doc.envelope.host.as_ref(),
                    created: doc.envelope.created.as_deref(),
                    ..Text::default()
                })
            )?;
        }
        Ok(())
    }
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

fn run_part(exe: &Path, part: &PlannedPart, run: &Run<'_>, p: &PartProgress) -> PartResult {
    let stop = run.stop();
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
        let left = (part.seconds() - elapsed.as_secs_f64()).max(0.0) + p.remaining_after;
        run.progress(format_args!(
            "[{}/{}] {}  {:.0} s of about {:.0} s · survey about {} left",
            p.index,
            p.count,
            part.id,
            elapsed.as_secs_f64(),
            part.seconds(),
            format_seconds(left)
        ));
    };
    let ended = supervise(&mut cmd, WAITS, should_stop, tick);
    run.progress_done();
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
