//! `headroom count`: perf stat's counting, on any PMU sysfs describes, with the PCIe PMUs
//! joined to the audit's root ports and interrupts per second of a device.
//!
//! Thin: options parsed here, events resolved and counted by the counters crate, the
//! document and its renderings made by report.

use crate::output::GlobalArgs;
use clap::Args;
use counters::event::{Event, Pmus};
use counters::perf::{outcome, OpenError, Outcome, Reading, Scope, Session};
use counters::workload::{CommandStdout, Workload, WorkloadError};
use counters::Sampler;
use model::root::SysRoot;
use report::kinds::count::{
    CountDocument, CountInterval, CountStatus, CountedEvent, LineFormat, RootPortFact,
};
use report::kinds::{KindDocument as _, Text};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
#[command(after_help = "\
Where the output goes: like perf stat, the counts go to stderr, so the command keeps its stdout. \
With --json the document goes to stdout, as every headroom command's does, and the command's own \
stdout is sent to stderr so the two never mix; with -o FILE the counts (or the document) go to \
FILE and the command keeps its stdout. Nothing is kept in the history unless --save is given \
(as perf stat keeps nothing).\n\
--irq counts the device's interrupts on every CPU, whatever process caused them (system-wide, \
like /proc/interrupts); a rate per second is given for runs of at least a second, a shorter run \
gives the count alone.\n\
Examples:\n  headroom count -e cs,page-faults -- dd if=/dev/zero of=/dev/null count=1000\n  \
headroom --json count -e block:block_rq_issue -- sync > counts.json\n  \
headroom count -j -e task-clock,cs -o counts.jsonl -- make\n  \
headroom count --list | grep sched:")]
pub struct CountArgs {
    /// Event to count, in perf's syntax: `PMU/EVENT,term=V/`, `SYSTEM:TRACEPOINT`, a
    /// name like `task-clock`, a group `{a,b}`; repeat or separate with commas.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Count on every online CPU, every process (system-wide).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Count on these CPUs only, system-wide (`0-3,8`).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Print the counts every MS milliseconds (at least 10).
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval_ms: Option<u64>,
    /// CSV output with this separator, perf's columns.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
    /// perf stat's JSON lines (`perf stat -j`): one object per event and line.
    #[arg(short = 'j', long = "json-output", conflicts_with = "separator")]
    pub json_lines: bool,
    /// List the PMUs and their events, the PCIe ones with the root ports they count.
    #[arg(long)]
    pub list: bool,
    /// Also count the interrupts of this device (a PCI address like 0000:01:00.0) per
    /// second, from its MSI/MSI-X lines; repeatable.
    #[arg(long = "irq", value_name = "DEVICE")]
    pub irq: Vec<String>,
    /// Write the counts (text, CSV or --json) to FILE instead of stderr (--json: instead of
    /// stdout); the command keeps its stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the result in the history database (perf stat keeps nothing; neither does
    /// count unless asked).
    #[arg(long)]
    pub save: bool,
    /// Accepted for scripts written when count kept every run: not saving is the default.
    #[arg(long, hide = true, conflicts_with = "save")]
    pub no_save: bool,
    /// History database for --save: an SQLite FILE or postgresql://USER@HOST/DB (default:
    /// HEADROOM_DB, else $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE|URL", requires = "save")]
    pub db: Option<PathBuf>,
    /// Read sysfs and /proc under this directory (a fixture tree) instead of /.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// The command to count (after --).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// perf stat's default events when none is given (tools/perf/builtin-stat.c
/// default_attrs0/1: the software counters, then the generic hardware ones).
const DEFAULT_EVENTS: &str = "task-clock,context-switches,cpu-migrations,page-faults,cycles,\
                              instructions,branches,branch-misses";

fn usage(msg: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    Err(crate::console::usage(msg.to_string()))
}

pub fn run(global: &GlobalArgs, a: &CountArgs) -> anyhow::Result<ExitCode> {
    if !a.root.is_dir() {
        return usage(format_args!(
            "--root {}: no such directory; give the directory that contains sys/",
            a.root.display()
        ));
    }
    let root = SysRoot::new(&a.root);
    if a.json_lines && global.json {
        return usage("give -j (perf stat's JSON lines) or --json (headroom's document), not both");
    }
    if a.list {
        return list(global, &root);
    }
    // -o FILE is checked before anything runs, as every benchmark checks --output: a name
    // that cannot be written is a usage error now, not after the counted command ran.
    if let Some(path) = &a.output {
        if let Err(e) = crate::output::check_writable("-o", path) {
            return usage(e);
        }
    }
    let pmus = match Pmus::read(&root) {
        Ok(p) => p,
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot list the PMUs: {e} (a kernel without CONFIG_PERF_EVENTS?)"
            ));
        }
    };
    let given: Vec<String> = if a.events.is_empty() && a.irq.is_empty() {
        vec![DEFAULT_EVENTS.to_string()]
    } else {
        a.events.clone()
    };
    let mut events = match counters::event::parse_all(&given, &pmus) {
        Ok(e) => e,
        Err(e) if e.is_usage() => return usage(e),
        Err(e) => {
            return Err(anyhow::anyhow!("{e}"));
        }
    };
    let interval = match a.interval_ms {
        Some(ms) if ms < 10 => {
            return usage(format_args!(
                "-I {ms}: the print interval must be at least 10 ms (perf's minimum)"
            ))
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    let cpus = match (&a.cpus, a.all_cpus) {
        (Some(list), _) => match model::units::parse_cpu_list(list).filter(|c| !c.is_empty()) {
            Some(c) => Some(c),
            None => {
                return usage(format_args!(
                    "-C {list}: not a CPU list; write it like 0-3,8"
                ))
            }
        },
        (None, true) => match counters::pmu::online_cpus(&root) {
            Ok(c) => Some(c),
            Err(e) => {
                return Err(anyhow::anyhow!("-a: {e}"));
            }
        },
        (None, false) => None,
    };
    if a.command.is_empty() && cpus.is_none() {
        return usage("give a command after -- (e.g. `headroom count -e cs -- sleep 1`), or -a/-C to count system-wide until Ctrl-C");
    }
    let mut irq_devices = Vec::new();
    for d in &a.irq {
        match counters::interrupts::pci_device_irqs(&root, d) {
            Ok(l) => irq_devices.push((d.clone(), l)),
            Err(msg) => return usage(msg),
        }
    }

    let interrupt = crate::driver::Interrupt::install()?;
    let stop = &interrupt.stop;

    // With --json on stdout, the command's stdout goes to stderr: the document stays one
    // document. Counts written to -o FILE (or perf's text on stderr) leave stdout to it.
    let document_on_stdout = global.json && a.output.is_none();
    // Like perf stat, the counts go to stderr (or -o FILE): stdout belongs to the command,
    // whose output would otherwise be mixed into the numbers. The --json document goes to
    // stdout as every command's does (the command's stdout was sent to stderr above).
    // -o FILE is opened before the command is even prepared (perf opens it while parsing its
    // options): what only the open can refuse (a link, another user's file, a FIFO) is said
    // before anything ran.
    let mut out: Box<dyn Write> = match &a.output {
        Some(path) => match report::atomic::create_stream(path) {
            Ok(f) => Box::new(std::io::BufWriter::new(f)),
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "-o {}: cannot create it: {}",
                    path.display(),
                    e.source
                ));
            }
        },
        None if document_on_stdout => Box::new(std::io::stdout().lock()),
        None => Box::new(std::io::stderr().lock()),
    };
    let command_stdout = if document_on_stdout {
        CommandStdout::ToStderr
    } else {
        CommandStdout::Inherit
    };
    let mut workload = if a.command.is_empty() {
        None
    } else {
        match Workload::prepare(&a.command, command_stdout) {
            Ok(w) => Some(w),
            Err(e) => {
                return Err(crate::console::CodedError {
                    code: 127,
                    message: e.to_string(),
                }
                .into());
            }
        }
    };
    let scope = match (&cpus, &workload) {
        (Some(c), _) => Scope::Cpus(c.clone()),
        (None, Some(w)) => Scope::Process(w.pid()),
        (None, None) => unreachable_scope()?,
    };
    let session = match Session::open(&mut events, &scope) {
        Ok(s) => s,
        Err(e) => {
            return Err(anyhow::anyhow!("{e}"));
        }
    };
    let user_only = session.user_only_note(&events);
    if let Some(n) = &user_only {
        crate::console::note(n);
    }
    for (i, e) in events.iter().enumerate() {
        match session.error(i) {
            Some(OpenError::Other(msg)) => crate::console::warn(msg),
            // perf is silent on a generic hardware event a VM lacks; a named PMU's reason
            // is worth a line.
            Some(OpenError::NotSupported(msg))
                if e.type_id != counters::pmu::PERF_TYPE_HARDWARE =>
            {
                crate::console::warn(msg)
            }
            _ => {}
        }
        if let Some(n) = &e.note {
            crate::console::note(format_args!("{}: {n}", e.name));
        }
    }
    let irq_sampler = counters::InterruptsSampler::new(root.clone());
    let irq_before = if irq_devices.is_empty() {
        None
    } else {
        irq_sampler.snapshot().ok()
    };

    let started = Instant::now();
    if matches!(scope, Scope::Cpus(_)) {
        session.enable();
    }
    if let Some(w) = workload.as_mut() {
        if let Err(e) = w.start() {
            let code = match e {
                WorkloadError::Exec(..) => 126,
                _ => 127,
            };
            return Err(crate::console::CodedError {
                code,
                message: e.to_string(),
            }
            .into());
        }
    }

    let format = LineFormat::of(a.json_lines, a.separator.as_deref());
    // perf sets the wall time of every interval to the -I period, the metrics' base.
    let period_s = interval.map_or(0.0, |i| i.as_secs_f64());
    let mut intervals = Vec::new();
    let mut last: Vec<Option<Reading>> = vec![None; events.len()];
    let mut exit = None;
    let mut next_tick = interval.map(|i| started + i);
    if interval.is_some() && format == LineFormat::Text && !global.json {
        let _ = out.write_all(report::kinds::count::interval_header().as_bytes());
    }
    // Bounded by the command (or Ctrl-C): each pass sleeps at most 100 ms.
    loop {
        if let Some(w) = workload.as_mut() {
            if interval.is_none() && !stop.load(Ordering::SeqCst) {
                exit = w.wait();
                break;
            }
            if let Some(x) = w.try_wait() {
                exit = Some(x);
                break;
            }
        } else if stop.load(Ordering::SeqCst) {
            break;
        }
        let now = Instant::now();
        match next_tick {
            Some(t) if now >= t => {
                let readings = session.read();
                let rows = counted(&events, &session, &readings, Some(&last));
                last = readings;
                let row = CountInterval {
                    time_s: started.elapsed().as_secs_f64(),
                    events: rows,
                };
                if !global.json {
                    let _ = out.write_all(
                        report::kinds::count::interval_lines(&row, format, period_s).as_bytes(),
                    );
                    let _ = out.flush();
                }
                intervals.push(row);
                next_tick = interval.map(|i| t + i);
            }
            Some(t) => std::thread::sleep((t - now).min(Duration::from_millis(100))),
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    session.disable();
    let readings = session.read();
    // The last, partial interval, as perf prints it.
    if interval.is_some() {
        let row = CountInterval {
            time_s: elapsed,
            events: counted(&events, &session, &readings, Some(&last)),
        };
        if !global.json {
            let _ = out
                .write_all(report::kinds::count::interval_lines(&row, format, period_s).as_bytes());
        }
        intervals.push(row);
    }
    let interrupted = stop.load(Ordering::SeqCst);

    let interrupts = match (irq_before, irq_sampler.snapshot()) {
        (Some(before), Ok(after)) => {
            crate::beside::irq_rates(&irq_sampler, &before, &after, irq_devices, None)
        }
        _ => Vec::new(),
    };

    let target = report::kinds::count::target_of(&a.command, cpus.as_deref(), a.all_cpus);
    let doc = CountDocument {
        target,
        command: (!a.command.is_empty()).then(|| a.command.clone()),
        scope: if cpus.is_some() {
            "system_wide"
        } else {
            "process"
        }
        .to_string(),
        cpus: cpus.clone(),
        elapsed_s: elapsed,
        user_s: exit.map(|x| x.user_s),
        sys_s: exit.map(|x| x.sys_s),
        exit_code: exit.map(|x| x.shell_code()),
        events: counted(&events, &session, &readings, None),
        intervals,
        interrupts,
        findings: Vec::new(),
        notes: user_only
            .into_iter()
            .chain(
                events
                    .iter()
                    .filter_map(|e| e.note.as_ref().map(|n| format!("{}: {n}", e.name))),
            )
            .collect(),
    };
    // Kept when asked (an -a run stopped by Ctrl-C too: it measured).
    if a.save && doc.events.iter().any(|e| e.status == CountStatus::Counted) {
        if let Err(e) =
            crate::output::save_result(report::document::DocumentKind::Count, &doc, a.db.as_deref())
        {
            crate::console::warn(format_args!(
                "the result was not kept in the history: {}",
                crate::console::sentence(&e)
            ));
        }
    }
    let text = if global.json {
        crate::output::wrap(report::document::DocumentKind::Count, &doc)?.to_json_pretty() + "\n"
    } else if interval.is_none() {
        match format {
            LineFormat::Csv(s) => report::kinds::count::render_csv(&doc, s),
            LineFormat::Json => report::kinds::count::render_json_lines(&doc),
            LineFormat::Text => doc.text(&Text::default()),
        }
    } else {
        String::new()
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(anyhow::anyhow!("cannot write the counts: {e}"));
        }
    }
    let code = match exit {
        Some(x) => x.shell_code(),
        None if interrupted => 128 + interrupt.stopped_by(),
        None => 0,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn unreachable_scope() -> anyhow::Result<Scope> {
    anyhow::bail!("neither a command nor CPUs to count on")
}

/// Each event's line, from the total or (with `last`) the interval's difference.
fn counted(
    events: &[Event],
    session: &Session,
    readings: &[Option<Reading>],
    last: Option<&[Option<Reading>]>,
) -> Vec<CountedEvent> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut row = CountedEvent {
                name: e.name.clone(),
                pmu: e.pmu.clone(),
                status: CountStatus::NotSupported,
                value: None,
                raw: None,
                unit: e.unit.clone(),
                running_percent: None,
                enabled_ns: 0,
                running_ns: 0,
                reason: session.error(i).map(|x| x.to_string()),
                note: e.note.clone(),
                generic: e.generic_name().map(str::to_string),
            };
            let Some(r) = readings.get(i).copied().flatten() else {
                if row.reason.is_none() {
                    row.status = CountStatus::NotCounted;
                    row.reason = Some(format!(
                        "{}: reading the counter failed (its PMU {} may have gone)",
                        e.name, e.pmu
                    ));
                }
                return row;
            };
            let r = match last.and_then(|l| l.get(i).copied().flatten()) {
                Some(prev) => r.since(&prev),
                None => r,
            };
            row.enabled_ns = r.enabled_ns;
            row.running_ns = r.running_ns;
            match outcome(&r, e.scale) {
                Outcome::Counted {
                    value,
                    raw,
                    running_percent,
                } => {
                    row.status = CountStatus::Counted;
                    row.value = Some(value);
                    row.raw = Some(raw);
                    row.running_percent = Some(running_percent);
                }
                Outcome::NotCounted => row.status = CountStatus::NotCounted,
                Outcome::NotSupported(why) => row.reason = Some(why),
            }
            row
        })
        .collect()
}

/// `count --list`.
fn list(global: &GlobalArgs, root: &SysRoot) -> anyhow::Result<ExitCode> {
    let pmus = match counters::pmu::discover(root) {
        Ok(p) => p,
        // No event_source at all is a state of the world (CONFIG_PERF_EVENTS off, a
        // fixture of PCI only): the root ports are still judged.
        Err(e) if e.is_unsupported() => {
            crate::console::warn(format_args!("{e}: no PMU to list"));
            Vec::new()
        }
        Err(e) => {
            return Err(anyhow::anyhow!("cannot list the PMUs: {e}"));
        }
    };
    let audit = probe::pci::audit_sysfs(root);
    let ports: Vec<_> = counters::root_port::root_ports(&audit).collect();
    let addresses: Vec<_> = ports.iter().map(|f| f.address).collect();
    let listing = counters::list::pmus(root, &pmus, &addresses);
    let links: Vec<_> = listing.iter().filter_map(|p| p.link.clone()).collect();
    let facts: Vec<RootPortFact> = ports
        .iter()
        .map(|f| RootPortFact {
            address: f.address.to_string(),
            vendor_id: f.vendor_id,
        })
        .collect();
    let events = counters::list::events(root);
    let kernel = probe::system::kernel_release(root);
    let findings = report::kinds::count::root_port_pmu_findings(&facts, &links, kernel.as_deref());
    let listing = report::kinds::count::PmuListDocument {
        pmus: listing,
        events,
        findings,
    };
    if global.json {
        crate::output::print_result(report::document::DocumentKind::PmuList, &listing)?;
    } else {
        // Through the one terminal writer: PMU, event and tracepoint names come from sysfs.
        crate::out!("{}", listing.text(&Text::default()))?;
    }
    Ok(ExitCode::SUCCESS)
}
