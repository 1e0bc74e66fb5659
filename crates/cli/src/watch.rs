//! `headroom watch [TARGET...]`: samples every PCI function's link and AER counters, the USB
//! devices and the network links at a fixed interval, prints one line per change, keeps
//! node_exporter's textfile up to date, and at the end (`--for`, SIGINT or SIGTERM) prints
//! the summary per device. A benchmark of the driver's: it owns the signals and keeps the
//! document (`--output`, the history).

use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use clap::Args;
use model::root::SysRoot;
use model::watch::{Schedule, Watcher};
use report::document::DocumentKind;
use report::kinds::watch::{findings, text, Parameters, WatchDocument};
use report::kinds::{KindDocument as _, Text};
use report::terminal::Style;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The file `--textfile-dir` rewrites each interval.
const TEXTFILE: &str = "headroom-watch.prom";

#[derive(Args, Debug, Clone)]
pub struct WatchArgs {
    /// Watch only the devices on these paths: files, block devices, network interfaces or
    /// PCI addresses (default: every device).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<PathBuf>,

    /// Time between two samples (`1s`, `500ms`, `1m`).
    #[arg(long, default_value = "1s", value_name = "TIME")]
    pub interval: String,

    /// Stop after this long (`10m`, `1h`, `7d`); without it, at Ctrl-C or SIGTERM.
    #[arg(long = "for", value_name = "DURATION")]
    pub duration: Option<String>,

    /// Also write the document to FILE at the end (atomically).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Rewrite DIR/headroom-watch.prom atomically after each sample, for node_exporter's
    /// textfile collector (--collector.textfile.directory).
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<PathBuf>,

    /// Do not keep the result in the history database.
    #[arg(long)]
    pub no_save: bool,

    /// History database (default: $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,

    /// Root of the filesystem to read sysfs from (a captured tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

/// `--interval`/`--for` as milliseconds, or a usage error naming the flag.
fn millis(flag: &str, value: &str) -> anyhow::Result<u64> {
    let d = model::units::parse_duration(value)
        .map_err(|e| crate::console::usage(format!("{flag} {value}: {e}")))?;
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(crate::console::usage(format!(
            "{flag} {value}: must be at least 1ms; give e.g. {flag} 1s"
        )));
    }
    Ok(ms)
}

/// How long to sleep next on the way to `end` (since the start) when `elapsed` has gone by: at
/// most 100 ms, so that a signal ends the run at once; `None` once `end` is reached. The clock
/// is read once: a sample that overran `end` (a slow machine) ends the wait, never a
/// subtraction below zero.
fn sleep_slice(end: Duration, elapsed: Duration) -> Option<Duration> {
    end.checked_sub(elapsed)
        .filter(|left| !left.is_zero())
        .map(|left| left.min(Duration::from_millis(100)))
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub fn run(global: &GlobalArgs, args: &WatchArgs) -> anyhow::Result<ExitCode> {
    crate::driver::drive(global, args)
}

/// What the flags ask for, checked before the signal handlers are installed.
pub struct WatchPlan {
    interval_ms: u64,
    for_ms: Option<u64>,
    root: SysRoot,
    only: Option<probe::watch::Only>,
    contexts: Vec<model::watch::FunctionContext>,
    link_events: Option<&'static str>,
}

/// A watch's document, and how many of its notes were said while it ran (the summary says
/// only the later ones).
pub struct Watched {
    doc: WatchDocument,
    said: usize,
}

impl WatchArgs {
    /// Where the driver keeps the document: `--output` and the history. The textfile is
    /// rewritten after each sample by the run itself, not once at the end.
    fn keep_args(&self) -> KeepArgs {
        KeepArgs {
            output: self.output.clone(),
            no_save: self.no_save,
            db: self.db.clone(),
            textfile_dir: None,
        }
    }
}

impl Benchmark for WatchArgs {
    type Document = Watched;
    type Kept = WatchDocument;
    type Setup = WatchPlan;
    const KIND: DocumentKind = DocumentKind::Watch;

    fn keep(&self) -> KeepArgs {
        self.keep_args()
    }

    fn kept(doc: &Watched) -> &WatchDocument {
        &doc.doc
    }

    fn check_outputs(&self) -> Result<(), crate::output::OutputUnusable> {
        self.keep_args().check_output()?;
        if let Some(dir) = &self.textfile_dir {
            crate::output::check_textfile_dir(dir, TEXTFILE)?;
        }
        Ok(())
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<WatchPlan> {
        let args = self;
        if !args.root.is_dir() {
            return Err(crate::console::usage(format!(
                "--root {}: no such directory; give the directory that contains sys/",
                args.root.display()
            )));
        }
        let interval_ms = millis("--interval", &args.interval)?;
        let for_ms = args
            .duration
            .as_deref()
            .map(|d| millis("--for", d))
            .transpose()?;
        if let Some(dir) = &args.textfile_dir {
            if let Some(w) = crate::output::textfile_dir_warning(dir, TEXTFILE) {
                crate::console::warn(w);
            }
        }
        let root = SysRoot::new(&args.root);
        let audit = probe::pci::audit_sysfs(&root);
        let only = if args.targets.is_empty() {
            None
        } else {
            Some(
                probe::watch::only_for(&root, &audit, &args.targets)
                    .map_err(crate::console::usage)?,
            )
        };
        Ok(WatchPlan {
            interval_ms,
            for_ms,
            link_events: probe::watch::link_event_tracepoint(&root),
            contexts: probe::watch::contexts(&root, &audit),
            root,
            only,
        })
    }

    fn run(&self, plan: WatchPlan, run: &Run<'_>) -> anyhow::Result<Outcome<Watched>> {
        let args = self;
        let WatchPlan {
            interval_ms,
            for_ms,
            root,
            only,
            contexts,
            link_events,
        } = plan;
        let mut notes = vec![text::link_events_note(link_events, interval_ms)];
        crate::console::note(&notes[0]);
        let mut sampler = probe::watch::Sampler::new(&root, only);
        let mut watcher = Watcher::new(interval_ms, contexts);
        let mut schedule = Schedule::new(interval_ms);
        let start = Instant::now();
        let mut textfile_failed = false;
        loop {
            let now_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            if schedule.taken(now_ms) {
                watcher.late();
            }
            let sample = sampler.sample();
            if watcher.samples() == 0 {
                crate::console::info(text::plan(
                    sample.pci.len(),
                    sample.usb.len(),
                    sample.net.len(),
                    interval_ms,
                ));
            }
            for n in sampler.take_notes() {
                crate::console::note(&n);
                notes.push(n);
            }
            for c in watcher.observe(&sample, now_ms, unix_ms()) {
                let line = text::change_line(&c);
                if run.global.json {
                    crate::console::text(format!("{line}\n"));
                } else {
                    crate::outln!("{line}")?;
                }
            }
            if let Some(dir) = args.textfile_dir.as_deref().filter(|_| !textfile_failed) {
                let mut m = report::export::openmetrics::Metrics::new();
                report::kinds::watch::metrics(&mut m, &watcher);
                if let Err(e) = crate::output::write_metrics(dir, TEXTFILE, &m) {
                    // Said once; the watch goes on without its textfile.
                    crate::console::warn(crate::console::sentence(&e));
                    textfile_failed = true;
                }
            }
            let done = for_ms.is_some_and(|f| start.elapsed() >= Duration::from_millis(f));
            if done || run.is_stopped() {
                break;
            }
            // Sleep to the next due time in slices, so that a signal ends the run at once.
            let due = Duration::from_millis(schedule.due_ms());
            let end = for_ms.map_or(due, |f| due.min(Duration::from_millis(f)));
            while !run.is_stopped() {
                let Some(slice) = sleep_slice(end, start.elapsed()) else {
                    break;
                };
                std::thread::sleep(slice);
            }
            if run.is_stopped() {
                break;
            }
        }
        let result = watcher.result();
        // Every note so far was said when it came; the summary says only the late ones.
        let said = notes.len();
        if result.late_samples > 0 {
            notes.push(text::late_note(result.late_samples, interval_ms));
        }
        let interrupted = run.is_stopped();
        let doc = WatchDocument {
            parameters: Parameters {
                interval_ms,
                for_ms,
                targets: args
                    .targets
                    .iter()
                    .map(|t| t.display().to_string())
                    .collect(),
                root: args.root.clone(),
                link_events: link_events.map(str::to_string),
            },
            findings: findings::collect(&result),
            result,
            notes,
            interrupted,
        };
        Ok(Outcome::Ended(Ended {
            doc: Watched { doc, said },
            measured: true,
            stopped: interrupted.then(|| {
                let by = run
                    .signal()
                    .map_or_else(|| "a signal".to_string(), crate::console::signal_name);
                Stopped::Said(format!(
                    "stopped by {by}: the summary above is of the watch until then"
                ))
            }),
            failed: false,
        }))
    }

    fn print(&self, ended: &Ended<Watched>, run: &Run<'_>) -> anyhow::Result<()> {
        let Watched { doc, said } = &ended.doc;
        if run.global.json {
            crate::output::print_result(Self::KIND, doc)?;
        } else {
            let unsaid = WatchDocument {
                notes: doc.notes[*said..].to_vec(),
                ..doc.clone()
            };
            crate::out!(
                "\n{}",
                unsaid.text(&Text {
                    style: Style::new(run.global.use_color()),
                    ..Text::default()
                })
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample that ends after the next one was due (a busy or emulated machine: it happened
    /// on the board lab's x86_64 board) leaves no time to sleep: the wait ends, the watch
    /// goes on, nothing panics on a negative duration.
    #[test]
    fn the_wait_for_the_next_sample_ends_when_a_sample_overran_it() {
        let ms = Duration::from_millis;
        assert_eq!(sleep_slice(ms(1000), ms(1001)), None);
        assert_eq!(sleep_slice(ms(1000), ms(1000)), None);
        assert_eq!(sleep_slice(ms(1000), ms(950)), Some(ms(50)));
        assert_eq!(sleep_slice(ms(1000), ms(0)), Some(ms(100)));
    }
}
