//! What every renderer shows, made once from a document: the terminal, Markdown, HTML and
//! compare all read a [`Summary`], so what a user sees on screen and in a file agree.

use crate::document::{Document, DocumentError};
use crate::table::{dash, mb, Table};
use crate::views::{AuditView, CommonView, DiskView, LatencyView, NetView};
use model::latency::{Affinity, Step};
use model::path::{Hop, LinkKind, PathLink, TargetPath};
use model::units::{format_bytes_binary, tenths_us, whole_us, MB};
use model::Finding;

/// One throughput test (disk: `SEQ1M Q8T1 read`, `dd 64K write`).
#[derive(Clone, Debug, PartialEq)]
pub struct TestRow {
    pub name: String,
    /// `read`, `write` or `mix 70% read`; empty when the document does not say.
    pub direction: String,
    pub block_size: Option<u64>,
    /// The headline: the best run (or the mean when the run asked for it), MB/s.
    pub measured_mb_s: f64,
    /// Every run's MB/s, for the spread.
    pub runs_mb_s: Vec<f64>,
    /// measured / ceiling, 0..1.
    pub efficiency: Option<f64>,
    /// The mean of the runs, MB/s.
    pub mean_mb_s: Option<f64>,
    /// The kernel's count of the headline run's bytes against the engine's, in percent:
    /// /proc/self/io (this process) and /proc/diskstats (the whole device).
    pub proc_io_error_percent: Option<f64>,
    pub diskstats_error_percent: Option<f64>,
    /// The headline run's CPU time per I/O, us.
    pub cpu_us_per_io: Option<f64>,
    /// The headline run's I/Os per second.
    pub iops: Option<f64>,
    /// The headline run's latency (submission to completion), ns.
    pub latency: Option<model::disk::Latency>,
    /// This test's own ceiling (net: each direction has its own, or says why it has none);
    /// `None`: the document's ceiling.
    pub ceiling: Option<Result<CeilingRow, String>>,
}

impl TestRow {
    /// A throughput measured once, with none of the disk-only columns (IOPS, latency, the
    /// kernel's block counts): a network flow, an MMIO or DRAM access width.
    pub fn single(name: String, direction: String, block_size: Option<u64>, mb_s: f64) -> TestRow {
        TestRow {
            name,
            direction,
            block_size,
            measured_mb_s: mb_s,
            runs_mb_s: vec![mb_s],
            efficiency: None,
            mean_mb_s: Some(mb_s),
            proc_io_error_percent: None,
            diskstats_error_percent: None,
            cpu_us_per_io: None,
            iops: None,
            latency: None,
            ceiling: None,
        }
    }

    /// The ceiling this test is measured against: its own, else the document's.
    pub fn ceiling_in<'a>(&'a self, s: &'a Summary) -> Option<&'a CeilingRow> {
        match &self.ceiling {
            Some(own) => own.as_ref().ok(),
            None => s.ceiling.as_ref(),
        }
    }

    /// max − min of the runs, MB/s; `None` with fewer than two runs.
    pub fn spread(&self) -> Option<f64> {
        if self.runs_mb_s.len() < 2 {
            return None;
        }
        let max = self.runs_mb_s.iter().copied().fold(f64::MIN, f64::max);
        let min = self.runs_mb_s.iter().copied().fold(f64::MAX, f64::min);
        Some(max - min)
    }
}

/// One latency thread (or `all`), cyclictest's columns plus p99 and p99.9. Whole
/// microseconds are truncated as cyclictest truncates them ([`model::units::whole_us`]), the
/// mean to one decimal the same way, so the terminal, the report, compare and the history
/// show one number for one field.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRow {
    pub name: String,
    /// The CPU a pinned thread ran on (`2`), or where a free one was last seen (`~2`).
    pub cpu: Option<String>,
    pub count: u64,
    pub min_us: u64,
    pub avg_us: f64,
    pub max_us: u64,
    pub p99_us: Option<u32>,
    pub p99_9_us: Option<u32>,
    pub missed: u64,
    /// `(µs, count)` of the non-empty 1 µs buckets.
    pub histogram: Vec<(u32, u64)>,
    pub overflow: u64,
    /// `--split`: the same thread's IRQ latency (timer expiry to its interrupt).
    pub irq: Option<IrqRow>,
}

/// One thread's IRQ latency of a split run, truncated to us as [`ThreadRow`]'s.
#[derive(Clone, Debug, PartialEq)]
pub struct IrqRow {
    pub matched: u64,
    pub unmatched: u64,
    pub min_us: u64,
    pub avg_us: f64,
    pub p99_us: Option<u32>,
    pub max_us: u64,
}

impl IrqRow {
    fn of(st: &model::latency::split::SplitStats) -> IrqRow {
        IrqRow {
            matched: st.matched,
            unmatched: st.unmatched,
            min_us: whole_us(st.irq.min_ns),
            avg_us: tenths_us(st.irq.avg_ns),
            p99_us: st.irq.histogram.quantile_us(0.99),
            max_us: whole_us(st.irq.max_ns),
        }
    }
}

/// A rate over time (net: one direction's intervals), MB/s (10^6 B/s) at each interval's end.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSeries {
    pub name: String,
    /// (seconds since the measured time began, MB/s), two points (start, end) per interval.
    pub points: Vec<(f64, f64)>,
}

/// The ceiling a throughput is measured against.
#[derive(Clone, Debug, PartialEq)]
pub struct CeilingRow {
    pub mb_s: f64,
    pub bottleneck: String,
}

/// Everything a report shows about one document.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// How the user named the document (`run.json`, `#12`).
    pub origin: String,
    pub kind: String,
    pub created: Option<String>,
    pub hostname: Option<String>,
    pub target: Option<String>,
    /// Facts that change what a number means, in a fixed order: `kernel`, `governor`,
    /// `bottleneck`, then each link's state. Compare lists the ones that differ first.
    pub context: Vec<(String, String)>,
    pub ceiling: Option<CeilingRow>,
    pub tests: Vec<TestRow>,
    pub threads: Vec<ThreadRow>,
    /// Rates over time (net), plotted with the ceiling line.
    pub series: Vec<RateSeries>,
    pub links: Vec<PathLink>,
    /// The link with the smallest ceiling towards the CPU (reads, what arrives), and away
    /// from it (writes, what is sent: a shaper on an interface's egress) where it is another.
    pub bottleneck: Option<usize>,
    pub bottleneck_from_cpu: Option<usize>,
    /// Why the path has no bottleneck with a ceiling (virtio, tmpfs...), when it was resolved.
    pub no_ceiling_reason: Option<String>,
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
    /// The chain of hardware from the target to the CPU, one line per hop.
    pub hops: Vec<String>,
    /// Why the chain ends before the CPU, when it does.
    pub chain_stopped: Option<String>,
    /// The latency histogram's limit in us: a percentile above it reads `>limit`, as on
    /// the terminal.
    pub histogram_limit_us: Option<u32>,
    /// What the terminal prints under its latency table: the largest wake-ups and the
    /// maxima per window.
    pub latency_lines: Vec<String>,
    /// An audit's inventory: PCI functions and links, USB devices, block devices, network
    /// interfaces, each a titled table as the terminal lists them.
    pub inventory: Vec<(String, Table)>,
    /// The events of a `count` document (and the interrupt rates it measured).
    pub counters: Vec<CounterRow>,
    /// Kind `mmio`: the per-width table (region beside DRAM) and the lines saying what was
    /// measured.
    pub mmio: Option<(Table, Vec<String>)>,
    /// `bench latency --split`: what delayed the wake-ups over the run and the explained
    /// wake-up, each a titled table.
    pub split_tables: Vec<(String, Table)>,
}

/// One counted event as reports show it.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterRow {
    pub name: String,
    /// Scaled value; `None` for `<not counted>` / `<not supported>`.
    pub value: Option<f64>,
    /// `msec`, `MiB`, `B`, `/s` (interrupt rates), empty for a plain count.
    pub unit: String,
    /// Below 100 when the kernel multiplexed the counter.
    pub running_percent: Option<f64>,
    /// `counted`, `<not counted>`, `<not supported>`.
    pub status: String,
}

/// The split's tables for the reports: what delayed the wake-ups, summed over the run, and
/// the explained wake-up part by part (as the terminal prints them).
fn split_tables(sp: &model::latency::split::Split) -> Vec<(String, Table)> {
    use crate::explain;
    let mut out = Vec::new();
    if !sp.causes.is_empty() {
        let rows = sp
            .causes
            .iter()
            .map(|c| {
                vec![
                    explain::source(&c.source),
                    c.wakeups.to_string(),
                    explain::us2(c.total_ns as i64),
                    explain::us2(c.max_ns as i64),
                ]
            })
            .collect();
        out.push((
            "What delayed the wake-ups after the timer expired (summed over the run)".to_string(),
            Table::new(
                &[
                    ("Source", false),
                    ("Wake-ups", true),
                    ("Total (us)", true),
                    ("Most in one (us)", true),
                ],
                rows,
            ),
        ));
    }
    let explained = match (&sp.analysis, sp.largest.first()) {
        (Some(a), _) => Some((
            format!(
                "The first wake-up at or above --analyze {} us, explained",
                sp.analyze_above_us.unwrap_or_default()
            ),
            a,
        )),
        (None, Some(a)) => Some(("The largest wake-up, explained".to_string(), a)),
        (None, None) => None,
    };
    if let Some((title, a)) = explained {
        let mut rows: Vec<Vec<String>> = explain::analysis_parts(a)
            .into_iter()
            .map(|p| {
                vec![
                    if p.sub {
                        format!("  {}", p.label)
                    } else {
                        p.label
                    },
                    explain::us2(p.ns),
                    if p.sub {
                        String::new()
                    } else {
                        explain::share_of(p.ns, a.thread_latency_ns)
                    },
                    p.note,
                ]
            })
            .collect();
        rows.push(vec![
            "thread latency".into(),
            explain::us2(a.thread_latency_ns as i64),
            "(100 %)".into(),
            format!(
                "wake-up to switch {} us",
                explain::us2(a.wakeup_to_switch_ns as i64)
            ),
        ]);
        out.push((
            format!("{title}: {}", explain::analysis_title(a)),
            Table::new(
                &[
                    ("Part", false),
                    ("Time (us)", true),
                    ("Share", true),
                    ("", false),
                ],
                rows,
            ),
        ));
    }
    out
}

/// A 0..1 ratio as a percentage with one decimal.
fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// A disk latency in us with one decimal, as `bench disk` prints it.
fn lat_us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Seconds as a user types them: `5 s`, `0.3 s`.
fn seconds(s: f64) -> String {
    format!("{s} s")
}

/// A fact of the run's own making (a parameter, the target), after kernel and governor.
fn put(s: &mut Summary, key: &str, value: String) {
    s.context.push((key.to_string(), value));
}

/// A privileged step as the terminal words it: `yes`, `not requested`, `no (why)`.
fn step_words(st: &model::latency::Step) -> String {
    match st {
        Step::Done => "yes".to_string(),
        Step::NotRequested => "not requested".to_string(),
        Step::Refused(why) => format!("no ({why})"),
    }
}

/// A unit enum variant by the name the document gives it (`nvme`, `bulk_only`, `disk`).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|x| x.as_str().map(str::to_string))
        .unwrap_or_else(dash)
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// `1 thread`, `2 threads`: the count with its noun in the right number. The one helper
/// for every renderer, the findings and the terminal (any unsigned count: `usize`, `u64`).
pub fn plural<N: Copy + PartialEq + From<u8> + std::fmt::Display>(
    n: N,
    one: &str,
    many: &str,
) -> String {
    format!("{n} {}", if n == N::from(1) { one } else { many })
}

/// One hop of a path chain as a line: its kind, then every field it has, in the
/// producer's order (`disk: vda, virtio, rotational`); a filesystem as `headroom path`
/// words it.
fn hop_line(hop: &Hop) -> String {
    use serde_json::Value;
    let Ok(Value::Object(hop)) = serde_json::to_value(hop) else {
        return "hop".to_string();
    };
    let kind = hop
        .get("hop")
        .and_then(Value::as_str)
        .unwrap_or("hop")
        .replace('_', " ");
    fn flat(key: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => out.push(key.replace('_', " ")),
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(format!("{} {n}", key.replace('_', " "))),
            Value::Array(a) => {
                for x in a {
                    flat(key, x, out);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    flat(k, x, out);
                }
            }
        }
    }
    let text = |k: &str| hop.get(k).and_then(Value::as_str);
    if let (Some(fs), Some(src), Some(at)) = (text("fs_type"), text("source"), text("mount_point"))
    {
        // As `headroom path` words it.
        let dev = text("dev").map(|d| format!(" ({d})")).unwrap_or_default();
        return format!("{kind}: {fs} on {src}{dev} mounted at {at}");
    }
    let mut parts = Vec::new();
    for (k, v) in hop.iter().filter(|(k, _)| *k != "hop") {
        flat(k, v, &mut parts);
    }
    if parts.is_empty() {
        kind
    } else {
        format!("{kind}: {}", parts.join(", "))
    }
}

impl Summary {
    /// Read what reports need from `doc`; `origin` names it in errors.
    /// The line under a section's title: host, time, target (`quote` formats the target
    /// for the output format).
    pub fn facts(&self, quote: impl Fn(&str) -> String) -> Vec<String> {
        let mut facts = Vec::new();
        if let Some(h) = &self.hostname {
            facts.push(format!("host {h}"));
        }
        if let Some(c) = &self.created {
            facts.push(c.clone());
        }
        if let Some(t) = &self.target {
            facts.push(format!("target {}", quote(t)));
        }
        facts
    }

    pub fn of(doc: &Document, origin: &str) -> Result<Summary, DocumentError> {
        doc.check_kind(origin)?;
        let common: CommonView = doc.view(origin)?;
        let env = &doc.envelope;
        let mut s = Summary {
            origin: origin.to_string(),
            kind: env.kind.clone(),
            created: env.created.clone(),
            hostname: env.host.as_ref().and_then(|h| h.hostname.clone()),
            target: None,
            context: Vec::new(),
            ceiling: None,
            tests: Vec::new(),
            threads: Vec::new(),
            series: Vec::new(),
            counters: Vec::new(),
            links: Vec::new(),
            bottleneck: None,
            bottleneck_from_cpu: None,
            no_ceiling_reason: None,
            findings: common.findings,
            notes: common.notes,
            hops: Vec::new(),
            chain_stopped: None,
            histogram_limit_us: None,
            latency_lines: Vec::new(),
            inventory: Vec::new(),
            mmio: None,
            split_tables: Vec::new(),
        };
        let mut kernel = env.host.as_ref().and_then(|h| h.kernel.clone());
        let mut governor = None;
        match env.kind.as_str() {
            "disk" => {
                let d: DiskView = doc.view(origin)?;
                let sys = &d.system;
                kernel = kernel.or(sys.kernel.clone());
                governor = sys.governor.clone();
                s.hostname = s.hostname.or(sys.hostname.clone());
                let p = &d.parameters;
                put(&mut s, "profile", p.profile.clone());
                put(&mut s, "engine", p.engine.clone());
                let io = if p.direct { "O_DIRECT" } else { "buffered" };
                put(&mut s, "I/O", io.to_string());
                put(&mut s, "size", format_bytes_binary(p.size_bytes));
                put(&mut s, "runs", p.runs.to_string());
                put(&mut s, "runtime (upper bound)", seconds(p.runtime_s));
                put(&mut s, "ramp", seconds(p.ramp_s));
                put(&mut s, "pause between runs", seconds(p.pause_s));
                put(&mut s, "time based", yes_no(p.time_based));
                put(&mut s, "fsync at the end", yes_no(p.fsync_end));
                let data = if p.zero_buffers { "zeros" } else { "random" };
                put(&mut s, "write data", data.to_string());
                put(&mut s, "headline", format!("{} run", p.shown.name()));
                put(&mut s, "CPUs", sys.cpus.to_string());
                let t = &d.target;
                let (given, f) = (t.given.display().to_string(), t.file.display().to_string());
                // headroom's own file (in a directory the user gave) is named after its
                // process: its directory is what two runs can share.
                let file = match t.kind {
                    model::disk::TargetKind::NewFile if given != f => {
                        let dir = t
                            .file
                            .parent()
                            .map(|d| d.display().to_string())
                            .filter(|d| !d.is_empty())
                            .unwrap_or_else(|| ".".into());
                        format!("new file in {dir}")
                    }
                    k => format!("{f} ({})", k.words()),
                };
                put(&mut s, "test file", file);
                if let Some(dev) = &t.device {
                    put(
                        &mut s,
                        "device",
                        format!("{} ({})", dev.name, dev.maj_min()),
                    );
                }
                if let Some(i) = d.interrupted {
                    put(&mut s, "interrupted", yes_no(i));
                }
                s.target = Some(given);
                // One ceiling line for the run: the direction its tests move data in (the
                // smaller of the two when it has both).
                let percent = |t: &crate::views::DiskTestView| t.test.spec.workload.read_percent;
                let reads = d.tests.iter().any(|t| percent(t) > 0);
                let writes = d.tests.iter().any(|t| percent(t) < 100);
                s.ceiling = d.ceiling.as_ref().map(|c| CeilingRow {
                    mb_s: match (reads, writes) {
                        (true, false) => c.read_bytes_per_sec,
                        (false, true) => c.write_bytes_per_sec,
                        _ => c.read_bytes_per_sec.min(c.write_bytes_per_sec),
                    } / MB,
                    bottleneck: c.bottleneck.clone(),
                });
                let mean = p.shown == model::disk::Shown::Mean;
                // How many tests of each name came before: counted once per test, so a run
                // of many tests reads in time linear in their number.
                let mut seen: std::collections::HashMap<String, usize> =
                    std::collections::HashMap::new();
                for crate::views::DiskTestView {
                    test: t,
                    efficiency,
                } in &d.tests
                {
                    let runs: Vec<f64> = t.runs.iter().map(|r| r.mb_per_s).collect();
                    let headline_run = t.best();
                    let measured = match headline_run {
                        Some(b) if !mean => b.mb_per_s,
                        _ => t.mean_mb_per_s,
                    };
                    let efficiency = efficiency.or_else(|| {
                        s.ceiling
                            .as_ref()
                            .filter(|c| c.mb_s > 0.0)
                            .map(|c| measured / c.mb_s)
                    });
                    // Compare lines tests up by name: a repeated name gets its ordinal.
                    let mut name = t.spec.name();
                    let same = seen.entry(name.clone()).or_insert(0);
                    *same += 1;
                    if *same > 1 {
                        name = format!("{name} ({same})");
                    }
                    let cross_check = headline_run.map(|r| &r.cross_check);
                    s.tests.push(TestRow {
                        name,
                        direction: t.spec.workload.direction(),
                        block_size: Some(t.spec.block_size),
                        measured_mb_s: measured,
                        runs_mb_s: runs,
                        efficiency,
                        mean_mb_s: Some(t.mean_mb_per_s),
                        proc_io_error_percent: cross_check.and_then(|c| c.proc_io_error_percent),
                        diskstats_error_percent: cross_check
                            .and_then(|c| c.diskstats_error_percent),
                        cpu_us_per_io: headline_run.map(|r| r.cpu_us_per_io),
                        iops: headline_run.map(|r| r.iops),
                        latency: headline_run.map(|r| r.latency.clone().clamped()),
                        ceiling: None,
                    });
                }
            }
            "latency" => {
                let l: LatencyView = doc.view(origin)?;
                if let Some(ctx) = &l.context {
                    kernel = kernel.or(ctx.kernel.release.clone());
                    let preemption = ctx.kernel.preemption.name();
                    s.context.push(("preemption".into(), preemption.into()));
                    let mut govs: Vec<String> = ctx
                        .cpufreq
                        .iter()
                        .filter_map(|c| c.governor.clone())
                        .collect();
                    govs.sort();
                    govs.dedup();
                    if !govs.is_empty() {
                        governor = Some(govs.join(", "));
                    }
                }
                if let Some(c) = &l.config {
                    put(&mut s, "threads", c.threads.to_string());
                    let affinity = match &c.affinity {
                        Affinity::Free => "free".to_string(),
                        Affinity::Pinned(cpus) => {
                            format!("pinned to CPUs {}", model::units::format_cpu_list(cpus))
                        }
                    };
                    put(&mut s, "affinity", affinity);
                    put(&mut s, "interval", format!("{} us", c.interval.as_micros()));
                    put(&mut s, "distance", format!("{} us", c.distance.as_micros()));
                    put(&mut s, "priority", c.priority.to_string());
                    if let Some(d) = c.limits.duration {
                        put(&mut s, "duration", seconds(d.as_secs_f64()));
                    }
                    if let Some(n) = c.limits.loops {
                        put(&mut s, "loops", n.to_string());
                    }
                    let h = c.histogram_limit_us;
                    put(&mut s, "histogram limit", format!("{h} us"));
                    s.histogram_limit_us = Some(h);
                }
                if let Some(ctx) = &l.context {
                    if let Some(c) = &ctx.cmdline {
                        let list = |v: &Option<Vec<u32>>| {
                            v.as_deref()
                                .map_or("no".into(), model::units::format_cpu_list)
                        };
                        put(
                            &mut s,
                            "isolation",
                            format!(
                                "isolcpus={} nohz_full={} rcu_nocbs={}",
                                list(&c.isolcpus),
                                list(&c.nohz_full),
                                list(&c.rcu_nocbs)
                            ),
                        );
                    }
                    let smt = match ctx.smt_active {
                        Some(true) => "active",
                        Some(false) => "inactive",
                        None => "absent",
                    };
                    put(&mut s, "SMT", smt.to_string());
                }
                let p = &l.measurement.privileges;
                for (key, step) in [
                    ("SCHED_FIFO", &p.sched_fifo),
                    ("memory locked", &p.memory_locked),
                    ("cpu_dma_latency held", &p.cpu_dma_latency_held),
                ] {
                    put(&mut s, key, step_words(step));
                }
                let cpu_ns: u64 = l.measurement.threads.iter().map(|t| t.cpu_time_ns).sum();
                let wakeups = l.measurement.total.count;
                if cpu_ns > 0 && wakeups > 0 {
                    put(
                        &mut s,
                        "measuring threads' CPU time",
                        format!(
                            "{:.1} ms, {:.2} us per wake-up",
                            cpu_ns as f64 / 1e6,
                            cpu_ns as f64 / wakeups as f64 / 1000.0
                        ),
                    );
                }
                {
                    let total = &l.measurement.total;
                    // The terminal's lines under its table, truncated the same way.
                    let top: Vec<String> = total
                        .largest
                        .iter()
                        .take(5)
                        .map(|x| {
                            format!(
                                "{} us at {:.3} s (T{})",
                                whole_us(x.latency_ns),
                                x.at_ns as f64 / 1e9,
                                x.thread
                            )
                        })
                        .collect();
                    if !top.is_empty() {
                        s.latency_lines
                            .push(format!("Largest: {}.", top.join(", ")));
                    }
                    if total.window_maxima.len() > 1 {
                        let w: Vec<String> = total
                            .window_maxima
                            .iter()
                            .map(|w| format!("{}s:{}", w.start_s, whole_us(w.max_ns)))
                            .collect();
                        let window = l.config.as_ref().map(|c| c.window.as_secs_f64());
                        let per = window.map(|w| format!(" {w} s")).unwrap_or_default();
                        s.latency_lines
                            .push(format!("Max (us) per{per} window: {}.", w.join(" ")));
                    }
                }
                // The interrupts on each measured CPU, and its largest sources, as rates:
                // compare lines them up with the other counters.
                for c in l.interrupts.iter().flat_map(|i| &i.cpus) {
                    let row = |name: String, v: f64| CounterRow {
                        name,
                        value: Some(v),
                        unit: "/s".into(),
                        running_percent: None,
                        status: "counted".into(),
                    };
                    s.counters
                        .push(row(format!("interrupts on CPU {}", c.cpu), c.per_second));
                    for x in c.sources.iter().take(3) {
                        s.counters.push(row(
                            format!("interrupts on CPU {} from {} {}", c.cpu, x.irq, x.name),
                            x.per_second,
                        ));
                    }
                }
                let stress = l
                    .stress
                    .as_ref()
                    .map_or("none".to_string(), |x| x.spec.spec());
                put(&mut s, "stress", stress);
                let e = l.measurement.elapsed_ns;
                put(&mut s, "measured for", format!("{:.1} s", e as f64 / 1e9));
                put(
                    &mut s,
                    "stopped by",
                    l.measurement.stopped_by.as_str().into(),
                );
                let row = |name: String, cpu, st: &model::latency::Stats| ThreadRow {
                    name,
                    cpu,
                    count: st.count,
                    min_us: whole_us(st.min_ns),
                    avg_us: tenths_us(st.avg_ns),
                    max_us: whole_us(st.max_ns),
                    p99_us: st.histogram.quantile_us(0.99),
                    p99_9_us: st.histogram.quantile_us(0.999),
                    missed: st.missed_periods,
                    histogram: st.histogram.buckets(),
                    overflow: st.histogram.overflow,
                    irq: None,
                };
                for t in &l.measurement.threads {
                    let cpu = t
                        .cpu
                        .map(|c| c.to_string())
                        .or(t.last_cpu.map(|c| format!("~{c}")));
                    s.threads.push(row(t.thread.to_string(), cpu, &t.stats));
                }
                // `all`, as the terminal prints it, also under a single thread.
                s.threads
                    .push(row("all".into(), None, &l.measurement.total));
                if let Some(sp) = &l.split {
                    for t in &mut s.threads {
                        let st = if t.name == "all" {
                            Some(&sp.total)
                        } else {
                            sp.threads
                                .iter()
                                .find(|x| x.thread.map(|n| n.to_string()) == Some(t.name.clone()))
                        };
                        t.irq = st.map(IrqRow::of);
                    }
                    let source = match sp.source {
                        model::latency::split::SplitSource::Tracepoints => "tracepoints",
                        model::latency::split::SplitSource::Timerlat => "timerlat tracer",
                    };
                    put(
                        &mut s,
                        "IRQ/thread split",
                        format!(
                            "{source}: {} of {} matched",
                            sp.total.matched,
                            plural(sp.total.wakeups, "wake-up", "wake-ups")
                        ),
                    );
                    s.split_tables = split_tables(sp);
                }
            }
            "audit" => {
                let a: AuditView = doc.view(origin)?;
                s.inventory = inventory(&a);
                // Each link's state, so compare shows a link that retrained or moved.
                for l in a.pci.iter().flat_map(|p| &p.links) {
                    let c = &l.comparison;
                    let mut state = c.current.to_string();
                    if c.common != c.current {
                        state.push_str(&format!(" (both ends support {})", c.common));
                    }
                    let key = format!("link PCIe {} -> {}", l.upstream, l.downstream);
                    put(&mut s, &key, state);
                }
                for d in a.usb.iter().flat_map(|u| &u.devices) {
                    if let Some(speed) = d.speed_mbps {
                        let v = d.version.as_deref().unwrap_or("?");
                        put(
                            &mut s,
                            &format!("link USB {}", d.name),
                            format!("{speed}M (USB {v})"),
                        );
                    }
                }
                for i in a.net.iter().flat_map(|n| &n.interfaces) {
                    let speed = i
                        .speed_mbps
                        .map_or("speed unknown".into(), |x| format!("{x} Mb/s"));
                    let mtu = i.mtu.map(|m| format!(", MTU {m}")).unwrap_or_default();
                    // A shaper added or changed is a change of the link's ceiling.
                    let tbf = i
                        .shaper
                        .map(|sh| format!(", tbf {:.2} Mbit/s on egress", sh.rate_bps / 1e6))
                        .unwrap_or_default();
                    put(
                        &mut s,
                        &format!("link net {}", i.name),
                        format!("{speed}{mtu}{tbf}"),
                    );
                }
            }
            "net" => {
                let n: NetView = doc.view(origin)?;
                let m = &n.measurement;
                let c = &m.config;
                let proto = serde_name(&c.protocol).to_uppercase();
                s.target = Some(m.peer.clone());
                if let Some(i) = &m.interface {
                    s.context.push(("interface".into(), i.clone()));
                }
                s.context.push(("role".into(), serde_name(&m.role)));
                s.context.push(("streams".into(), c.streams.to_string()));
                if let Some(b) = c.bitrate_bps {
                    s.context.push((
                        "offered".into(),
                        format!("{:.2} Mbit/s per stream", b as f64 / 1e6),
                    ));
                }
                // Each direction against its own ceiling (a shaper bounds only what its
                // host sends). A document from before per-direction ceilings has one: it
                // bounds a direction this end sent, or both unless it was a shaper here.
                let sends = |flow| m.streams.iter().any(|x| x.flow == flow && x.local_sends);
                let ceiling_of = |f: &crate::net::FlowVerdict| {
                    f.ceiling.clone().or_else(|| {
                        n.ceiling
                            .clone()
                            .filter(|_| f.no_ceiling_reason.is_none())
                            .filter(|c| !c.egress_only || sends(f.flow))
                    })
                };
                let first = n.flows.first();
                s.no_ceiling_reason = first
                    .and_then(|f| f.no_ceiling_reason.clone())
                    .or_else(|| n.no_ceiling_reason.clone());
                // Each direction's ceiling is a fact of its own, which compare lines up by
                // direction (the tests carry them too; there is no one ceiling of the run).
                for f in &n.flows {
                    let fact = match ceiling_of(f) {
                        Some(c) => format!("{} MB/s: {}", mb(c.goodput_bps / MB), c.basis),
                        None => format!(
                            "none: {}",
                            f.no_ceiling_reason
                                .as_deref()
                                .or(n.no_ceiling_reason.as_deref())
                                .unwrap_or("the path has no known ceiling")
                        ),
                    };
                    let flow = serde_name(&f.flow).replace("-to-", " -> ");
                    put(&mut s, &format!("ceiling {flow}"), fact);
                }
                for f in &n.flows {
                    let mb_s = f.summary.receiver_bps.unwrap_or(0.0) / 8.0 / MB;
                    // `client-to-server`, as the document names the flow.
                    let flow = serde_name(&f.flow);
                    let ceiling = match ceiling_of(f) {
                        Some(c) => Ok(CeilingRow {
                            mb_s: c.goodput_bps / MB,
                            bottleneck: c.basis.clone(),
                        }),
                        None => Err(f
                            .no_ceiling_reason
                            .clone()
                            .or_else(|| n.no_ceiling_reason.clone())
                            .unwrap_or_else(|| "the path has no known ceiling".into())),
                    };
                    s.tests.push(TestRow {
                        efficiency: f.efficiency,
                        ceiling: Some(ceiling),
                        ..TestRow::single(
                            format!("{proto} {}", flow.replace("-to-", " -> ")),
                            flow.clone(),
                            Some(u64::from(c.len)),
                            mb_s,
                        )
                    });
                    // The flow's streams summed interval by interval.
                    let streams: Vec<_> = m.streams.iter().filter(|x| x.flow == f.flow).collect();
                    let n_iv = streams.iter().map(|x| x.intervals.len()).max().unwrap_or(0);
                    // A step per interval: its rate from its start to its end.
                    let points = (0..n_iv)
                        .filter_map(|i| {
                            let ivs: Vec<_> =
                                streams.iter().filter_map(|x| x.intervals.get(i)).collect();
                            let first = ivs.first()?;
                            let secs = first.end_s - first.start_s;
                            let bytes: u64 = ivs.iter().map(|v| v.bytes).sum();
                            let v = bytes as f64 / secs / MB;
                            (secs > 0.0).then_some([(first.start_s, v), (first.end_s, v)])
                        })
                        .flatten()
                        .collect();
                    s.series.push(RateSeries {
                        name: flow.replace("-to-", " -> "),
                        points,
                    });
                }
            }
            "count" => {
                let c: crate::count::CountDocument = doc.view(origin)?;
                s.target = Some(c.target.trim_matches('\'').to_string());
                s.context.push(("scope".into(), c.scope.replace('_', " ")));
                use crate::count::CountStatus;
                for e in &c.events {
                    s.counters.push(CounterRow {
                        name: e.name.clone(),
                        value: e.value,
                        unit: e.unit.clone().unwrap_or_default(),
                        running_percent: e.running_percent,
                        status: match e.status {
                            CountStatus::Counted => "counted",
                            CountStatus::NotCounted => "<not counted>",
                            CountStatus::NotSupported => "<not supported>",
                        }
                        .to_string(),
                    });
                }
                // /proc/interrupts counts the device on every CPU, whoever caused them; a run
                // too short for a rate keeps its count.
                for r in &c.interrupts {
                    let (value, unit) = if r.has_rate() {
                        (r.per_second, "/s")
                    } else {
                        (r.count as f64, "")
                    };
                    s.counters.push(CounterRow {
                        name: format!("interrupts of {}, system-wide", r.device),
                        value: Some(value),
                        unit: unit.into(),
                        running_percent: None,
                        status: "counted".into(),
                    });
                }
            }
            "mmio" => {
                let m: crate::mmio::MmioView = doc.view(origin)?;
                s.target = m.region.as_ref().map(|r| r.given.clone());
                // One test per (where, width, operation), so compare and the history line
                // them up like any throughput.
                let mem = m.memory.iter().flat_map(|x| x.results.iter());
                let region = m.results.iter().map(|r| (m.has_region(), r));
                for (is_region, r) in region.chain(mem.map(|r| (false, r))) {
                    let place = if is_region { "" } else { "DRAM " };
                    s.tests.push(TestRow::single(
                        format!("{place}{} {}", r.width.label(), r.op),
                        r.op.to_string(),
                        None,
                        r.mb_per_s,
                    ));
                }
                if let Some(c) = m.memory.as_ref().and_then(|x| x.copy.as_ref()) {
                    s.tests.push(TestRow::single(
                        "DRAM memcpy (C library)".into(),
                        "copy".into(),
                        Some(c.block_bytes),
                        c.mb_per_s,
                    ));
                }
                s.mmio = Some((m.table(), m.describe()));
            }
            _ => {}
        }
        // Counters a benchmark sampled beside its engine (bench disk, bench net): the
        // interrupt rates of its path and the root port's PMU bytes.
        #[derive(serde::Deserialize)]
        struct BesideView {
            #[serde(default)]
            counters: Option<crate::count::BesideCounters>,
        }
        if env.kind != "count" {
            if let Ok(BesideView { counters: Some(b) }) = doc.view::<BesideView>(origin) {
                // What could not be sampled (no device interrupts, no PMU on the path).
                for n in &b.notes {
                    if !s.notes.contains(n) {
                        s.notes.push(n.clone());
                    }
                }
                for r in &b.interrupts {
                    s.counters.push(CounterRow {
                        name: format!("interrupts of {}", r.device),
                        value: Some(r.per_second),
                        unit: "/s".into(),
                        running_percent: None,
                        status: "counted".into(),
                    });
                }
                if let Some(p) = &b.pmu {
                    let sides = [
                        ("Rx", p.rx_bytes, p.app_read_bytes),
                        ("Tx", p.tx_bytes, p.app_write_bytes),
                    ];
                    for (side, v, app) in sides {
                        if let Some(v) = v {
                            s.counters.push(CounterRow {
                                name: format!("{} {side} payload", p.pmu),
                                value: Some(v),
                                unit: "B".into(),
                                running_percent: None,
                                status: "counted".into(),
                            });
                            // The bus's bytes per application byte of the same direction.
                            if app > 0 {
                                s.counters.push(CounterRow {
                                    name: format!("{} {side} payload / application bytes", p.pmu),
                                    value: Some(v / app as f64 * 100.0),
                                    unit: "%".into(),
                                    running_percent: None,
                                    status: "counted".into(),
                                });
                            }
                        }
                    }
                }
            }
        }
        if let Some(p) = common.path {
            let c = &p.chain;
            s.target = s.target.or(Some(c.target.clone()));
            s.hops = c.hops.iter().map(hop_line).collect();
            s.chain_stopped = c.stopped.clone();
            // The filesystem the target is on changes what a number means (tmpfs does no
            // block I/O): compared like a parameter.
            if let Some(fs) = c.hops.iter().find(|h| matches!(h, Hop::Filesystem { .. })) {
                put(
                    &mut s,
                    "filesystem",
                    hop_line(fs).trim_start_matches("filesystem: ").to_string(),
                );
            }
            if s.ceiling.is_none() {
                if let Some(b) = p.bottleneck_link() {
                    s.ceiling = b.ceiling_to_cpu_bps().map(|c| CeilingRow {
                        mb_s: c / MB,
                        bottleneck: format!("{} {}", b.name, b.state),
                    });
                }
            }
            s.bottleneck_from_cpu = p
                .bottleneck_from_cpu
                .or_else(|| TargetPath::find_bottleneck_from_cpu(&p.links))
                .filter(|i| Some(*i) != p.bottleneck);
            s.links = p.links;
            s.bottleneck = p.bottleneck;
            s.no_ceiling_reason = p.no_bottleneck_reason;
        }
        let mut ctx = Vec::new();
        if let Some(k) = kernel {
            ctx.push(("kernel".to_string(), k));
        }
        if let Some(g) = governor {
            ctx.push(("governor".to_string(), g));
        }
        if let Some(c) = &s.ceiling {
            ctx.push(("bottleneck".to_string(), c.bottleneck.clone()));
        }
        ctx.append(&mut s.context);
        for l in &s.links {
            ctx.push((format!("link {}", l.name), link_state(l)));
        }
        s.context = ctx;
        Ok(s)
    }

    /// The facts that change what a number means (links aside: the path shows them);
    /// `None` when there are none.
    pub fn context_table(&self) -> Option<Table> {
        let rows: Vec<Vec<String>> = self
            .context
            .iter()
            .filter(|(k, _)| !k.starts_with("link "))
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect();
        (!rows.is_empty()).then(|| Table::new(&[("Context", false), ("Value", false)], rows))
    }

    /// Per counted event: value, unit and the multiplexing fraction (perf's columns).
    pub fn counters_table(&self) -> Table {
        let rows = self
            .counters
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    match c.value {
                        Some(v) if c.unit.is_empty() => format!("{v:.0}"),
                        Some(v) => format!("{v:.2}"),
                        None => c.status.clone(),
                    },
                    if c.unit.is_empty() {
                        dash()
                    } else {
                        c.unit.clone()
                    },
                    c.running_percent
                        .map(|p| format!("{p:.2}"))
                        .unwrap_or_else(dash),
                ]
            })
            .collect();
        Table::new(
            &[
                ("Event", false),
                ("Value", true),
                ("Unit", false),
                ("Running [%]", true),
            ],
            rows,
        )
    }

    /// Per test: measured, mean, spread, IOPS, ceiling, efficiency, CPU per I/O and the
    /// kernel's cross-checks, as `bench disk` prints them.
    pub fn throughput_table(&self) -> Table {
        let rows = self
            .tests
            .iter()
            .map(|t| {
                let ceiling = t.ceiling_in(self).map(|c| mb(c.mb_s)).unwrap_or_else(dash);
                let check = |p: Option<f64>| p.map(|p| format!("{p:+.2} %")).unwrap_or_else(dash);
                vec![
                    t.name.clone(),
                    mb(t.measured_mb_s),
                    t.mean_mb_s.map(mb).unwrap_or_else(dash),
                    t.spread().map(mb).unwrap_or_else(dash),
                    t.iops.map(|i| format!("{i:.0}")).unwrap_or_else(dash),
                    ceiling.clone(),
                    t.efficiency.map(percent).unwrap_or_else(dash),
                    t.cpu_us_per_io
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_else(dash),
                    check(t.proc_io_error_percent),
                    check(t.diskstats_error_percent),
                ]
            })
            .collect();
        Table::new(
            &[
                ("Test", false),
                ("Measured (MB/s)", true),
                ("Mean (MB/s)", true),
                ("Spread (MB/s)", true),
                ("IOPS", true),
                ("Ceiling (MB/s)", true),
                ("Efficiency", true),
                ("CPU per I/O (us)", true),
                ("proc io error", true),
                ("diskstats error", true),
            ],
            rows,
        )
    }

    /// Per test: the headline run's latency, submission to completion (fio's lat), as
    /// `bench disk` prints it; `None` when no test recorded one.
    pub fn disk_latency_table(&self) -> Option<Table> {
        let rows: Vec<Vec<String>> = self
            .tests
            .iter()
            .filter_map(|t| {
                let l = t.latency.as_ref()?;
                Some(vec![
                    t.name.clone(),
                    lat_us(l.min_ns as f64),
                    lat_us(l.mean_ns),
                    lat_us(l.p50_ns as f64),
                    lat_us(l.p90_ns as f64),
                    lat_us(l.p99_ns as f64),
                    lat_us(l.p99_9_ns as f64),
                    lat_us(l.max_ns as f64),
                ])
            })
            .collect();
        (!rows.is_empty()).then(|| {
            Table::new(
                &[
                    ("Test", false),
                    ("Min (us)", true),
                    ("Mean (us)", true),
                    ("p50 (us)", true),
                    ("p90 (us)", true),
                    ("p99 (us)", true),
                    ("p99.9 (us)", true),
                    ("Max (us)", true),
                ],
                rows,
            )
        })
    }

    /// Per latency thread: cyclictest's columns plus p99 and missed periods; with the
    /// IRQ/thread split, the same wake-ups' IRQ latency and the wake-ups it could not match.
    pub fn latency_table(&self) -> Table {
        let split = self.threads.iter().any(|t| t.irq.is_some());
        let rows = self
            .threads
            .iter()
            .map(|t| {
                // Above the histogram's limit, as the terminal says it.
                let q = |p: Option<u32>| {
                    p.map_or_else(
                        || {
                            self.histogram_limit_us
                                .map_or("overflow".into(), |l| format!(">{l}"))
                        },
                        |p| p.to_string(),
                    )
                };
                let mut row = vec![
                    t.name.clone(),
                    t.cpu.clone().unwrap_or_else(dash),
                    t.count.to_string(),
                    t.min_us.to_string(),
                    format!("{:.1}", t.avg_us),
                    q(t.p99_us),
                    q(t.p99_9_us),
                    t.max_us.to_string(),
                    t.missed.to_string(),
                    t.overflow.to_string(),
                ];
                if split {
                    row.extend(match &t.irq {
                        Some(i) => vec![
                            format!("{:.1}", i.avg_us),
                            q(i.p99_us),
                            i.max_us.to_string(),
                            i.unmatched.to_string(),
                        ],
                        None => vec![dash(), dash(), dash(), dash()],
                    });
                }
                row
            })
            .collect();
        let mut columns = vec![
            ("Thread", false),
            ("CPU", false),
            ("Samples", true),
            ("Min (us)", true),
            ("Avg (us)", true),
            ("p99 (us)", true),
            ("p99.9 (us)", true),
            ("Max (us)", true),
            ("Missed (periods)", true),
            ("Overflow", true),
        ];
        if split {
            columns.extend([
                ("IRQ avg (us)", true),
                ("IRQ p99 (us)", true),
                ("IRQ max (us)", true),
                ("Unmatched", true),
            ]);
        }
        Table::new(&columns, rows)
    }

    /// The line under a throughput table: the ceiling the tests are measured against, or
    /// why there is none.
    pub fn ceiling_sentence(&self) -> String {
        // Tests with ceilings of their own (each direction of a network test): one per test
        // when they differ.
        if self.tests.iter().any(|t| t.ceiling.is_some()) && self.common_ceiling().is_none() {
            let each: Vec<String> = self
                .tests
                .iter()
                .map(|t| match &t.ceiling {
                    Some(Ok(c)) => format!("{}: {} ({} MB/s)", t.name, c.bottleneck, mb(c.mb_s)),
                    Some(Err(why)) => format!("{}: none ({why})", t.name),
                    None => format!("{}: {}", t.name, self.ceiling_sentence_of_document()),
                })
                .collect();
            return format!("Ceilings: {}.", each.join("; "));
        }
        self.ceiling_sentence_of_document()
    }

    /// The one ceiling every test is measured against, when they share one.
    pub fn common_ceiling(&self) -> Option<&CeilingRow> {
        let mut each = self.tests.iter().map(|t| t.ceiling_in(self));
        let first = match each.next() {
            Some(c) => c?,
            None => return self.ceiling.as_ref(),
        };
        each.all(|c| c == Some(first)).then_some(first)
    }

    fn ceiling_sentence_of_document(&self) -> String {
        match (self.common_ceiling(), &self.no_ceiling_reason) {
            (Some(c), _) => format!("Ceiling: {} ({} MB/s).", c.bottleneck, mb(c.mb_s)),
            (None, Some(why)) => format!("No ceiling: {why}."),
            (None, None) => "No ceiling: the path was not resolved.".to_string(),
        }
    }

    /// The one number a history listing shows: the first test's MB/s or the worst
    /// latency, or the number of findings.
    pub fn headline(&self) -> String {
        if let Some(t) = self.tests.first() {
            format!("{}: {:.1} MB/s", t.name, t.measured_mb_s)
        } else if let Some(worst) = self.threads.iter().map(|t| t.max_us).max() {
            // The same truncated field as the Max column of the terminal and the report.
            format!("max {worst} us")
        } else if let Some(c) = &self.ceiling {
            format!("bottleneck {} ({:.1} MB/s)", c.bottleneck, c.mb_s)
        } else if let Some(c) = self.counters.first() {
            match c.value {
                Some(v) if c.unit.is_empty() => format!("{}: {v:.0}", c.name),
                Some(v) => format!("{}: {v:.2} {}", c.name, c.unit),
                None => format!("{}: {}", c.name, c.status),
            }
        } else {
            plural(self.findings.len(), "finding", "findings")
        }
    }

    /// What the run tested, for a history listing: the tests' or threads' count.
    pub fn test_label(&self) -> String {
        match (self.tests.len(), self.threads.len()) {
            (0, 0) if self.counters.len() == 1 => format!("{} (1 event)", self.kind),
            (0, 0) if !self.counters.is_empty() => {
                format!("{} ({} events)", self.kind, self.counters.len())
            }
            (0, 0) => self.kind.clone(),
            (1, 0) => format!("{} (1 test)", self.kind),
            (n, 0) => format!("{} ({n} tests)", self.kind),
            (_, _) => format!(
                "{} ({})",
                self.kind,
                plural(
                    self.threads.iter().filter(|t| t.name != "all").count(),
                    "thread",
                    "threads"
                )
            ),
        }
    }
}

/// An audit's inventory as the terminal lists it, one table per bus.
fn inventory(a: &AuditView) -> Vec<(String, Table)> {
    let opt = |v: Option<String>| v.unwrap_or_else(dash);
    let mut out = Vec::new();
    if let Some(pci) = &a.pci {
        let rows: Vec<Vec<String>> = pci
            .functions
            .iter()
            .map(|f| {
                let names = &f.names;
                let what = [&names.class, &names.vendor, &names.device]
                    .into_iter()
                    .flatten()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(": ");
                let link = &f.kernel_link;
                vec![
                    f.address.to_string(),
                    if what.is_empty() { dash() } else { what },
                    opt(f.driver.clone()),
                    opt(link.current.map(|s| s.to_string())),
                    opt(link.max.map(|s| s.to_string())),
                ]
            })
            .collect();
        out.push(counted_table(
            "PCI",
            ("function", "functions"),
            "",
            &[
                ("Address", false),
                ("Device", false),
                ("Driver", false),
                ("Link", false),
                ("Max", false),
            ],
            rows,
        ));
        let rows: Vec<Vec<String>> = pci
            .links
            .iter()
            .map(|l| {
                let cmp = &l.comparison;
                let downgraded = cmp.speed_below_common || cmp.width_below_common;
                vec![
                    format!("{} -> {}", l.upstream, l.downstream),
                    cmp.current.to_string(),
                    cmp.common.to_string(),
                    mb(l.ceiling.current.effective_write_bps / MB),
                    mb(l.ceiling.capable.effective_write_bps / MB),
                    if downgraded { "downgraded" } else { "" }.to_string(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            out.push(counted_table(
                "PCI Express",
                ("link", "links"),
                " (ceiling: effective write per direction)",
                &[
                    ("Link", false),
                    ("State", false),
                    ("Both ends support", false),
                    ("Ceiling (MB/s)", true),
                    ("Capable ceiling (MB/s)", true),
                    ("Note", false),
                ],
                rows,
            ));
        }
    }
    if let Some(usb) = a.usb.as_ref().filter(|u| !u.devices.is_empty()) {
        let rows: Vec<Vec<String>> = usb
            .devices
            .iter()
            .map(|d| {
                let product = [
                    d.vendor_name.clone(),
                    d.product_name.clone().or(d.product.clone()),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
                let drivers: Vec<String> = d
                    .interfaces
                    .iter()
                    .filter_map(|i| i.driver.clone())
                    .collect();
                let lanes = d.rx_lanes.unwrap_or(1).clamp(1, 2) as u8;
                // The audit's bulk ceiling of the device's link (root hubs have none).
                let ceiling = d
                    .speed_mbps
                    .filter(|_| !d.root_hub)
                    .and_then(|s| model::ceiling::usb::bulk_ceiling_for_sysfs(s, lanes));
                vec![
                    d.name.clone(),
                    opt(d.speed_mbps.map(|s| s.to_string())),
                    opt(d.version.clone()),
                    if product.is_empty() { dash() } else { product },
                    if d.root_hub {
                        "root hub".to_string()
                    } else if drivers.is_empty() {
                        dash()
                    } else {
                        drivers.join(", ")
                    },
                    opt(d
                        .storage
                        .as_ref()
                        .map(|s| serde_name(&s.transport).replace('_', " "))),
                    opt(ceiling.map(|c| mb(c / MB))),
                ]
            })
            .collect();
        out.push(counted_table(
            "USB",
            ("device", "devices"),
            "",
            &[
                ("Device", false),
                ("Speed (Mb/s)", true),
                ("USB", false),
                ("Product", false),
                ("Driver", false),
                ("Storage", false),
                ("Bulk ceiling (MB/s)", true),
            ],
            rows,
        ));
    }
    if let Some(block) = a.block.as_ref().filter(|b| !b.devices.is_empty()) {
        let rows: Vec<Vec<String>> = block
            .devices
            .iter()
            .map(|d| {
                let q = d.queue.as_ref();
                let kb = |v: Option<u64>| opt(v.map(|x| x.to_string()));
                vec![
                    d.name.clone(),
                    serde_name(&d.kind),
                    opt(d.size_bytes.map(model::units::format_capacity)),
                    serde_name(&d.transport),
                    opt(q.and_then(|q| q.rotational).map(yes_no)),
                    opt(q.and_then(|q| q.scheduler.clone())),
                    kb(q.and_then(|q| q.max_sectors_kb)),
                    // As the terminal says it: the driver set no limit of its own.
                    match q.and_then(|q| q.max_hw_sectors_kb) {
                        Some(model::inventory::block::MAX_HW_SECTORS_KB_NO_LIMIT..) => {
                            "no limit".to_string()
                        }
                        v => kb(v),
                    },
                    kb(q.and_then(|q| q.read_ahead_kb)),
                    d.mounts
                        .iter()
                        .map(|m| match m.fs_type.as_str() {
                            "" => m.mount_point.display().to_string(),
                            fs => format!("{} ({fs})", m.mount_point.display()),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                ]
            })
            .collect();
        out.push(counted_table(
            "Block",
            ("device", "devices"),
            " (sizes in binary units: GiB = 2^30 B; queue limits in KiB)",
            &[
                ("Name", false),
                ("Kind", false),
                ("Size", true),
                ("Transport", false),
                ("Rotational", false),
                ("Scheduler", false),
                ("max_sectors_kb", true),
                ("max_hw_sectors_kb", true),
                ("read_ahead_kb", true),
                ("Mounts", false),
            ],
            rows,
        ));
    }
    if let Some(net) = a.net.as_ref().filter(|n| !n.interfaces.is_empty()) {
        let rows: Vec<Vec<String>> = net
            .interfaces
            .iter()
            .map(|i| {
                // The audit's TCP goodput ceiling (IPv4, timestamps) of the interface each
                // way, as the terminal computes it (none for a virtual link; a tbf bounds
                // only what is sent).
                let tcp = InterfaceCeiling::of(i, |c| mb(c / MB)).map(|c| c.text);
                vec![
                    i.name.clone(),
                    opt(i.operstate.clone()),
                    opt(i.speed_mbps.map(|s| s.to_string())),
                    opt(i.duplex.clone()),
                    opt(i.mtu.map(|m| m.to_string())),
                    if i.is_virtual {
                        "virtual".to_string()
                    } else {
                        opt(i.driver.clone())
                    },
                    opt(tcp),
                ]
            })
            .collect();
        out.push(counted_table(
            "Network",
            ("interface", "interfaces"),
            "",
            &[
                ("Interface", false),
                ("State", false),
                ("Speed (Mb/s)", true),
                ("Duplex", false),
                ("MTU", true),
                ("Driver", false),
                ("TCP ceiling (MB/s)", true),
            ],
            rows,
        ));
    }
    out
}

/// `8 GT/s x1` or `5 GT/s x1 (capable 8 GT/s x1: downgraded)`, with the link's basis
/// (where the MPS is named) so a change of MPS shows in compare.
pub fn link_state(l: &PathLink) -> String {
    let mut s = l.state.to_string();
    if let Some(c) = &l.capable_state {
        s.push_str(&format!(" (capable {c})"));
    }
    if !l.basis.is_empty() {
        s.push_str(&format!(", {}", l.basis));
    }
    s
}

/// What a summary's path marks a link with: `bottleneck` towards the CPU, and away from it
/// where another link bounds that way ("bottleneck for sending": a shaper on an interface's
/// egress; "for writes" on a storage path).
pub fn bottleneck_marks(s: &Summary, i: usize) -> Option<String> {
    let from_cpu = |l: &PathLink| match l.kind {
        LinkKind::Shaper | LinkKind::Ethernet => "sending",
        _ => "writes",
    };
    if s.bottleneck == Some(i) {
        Some("bottleneck".to_string())
    } else if s.bottleneck_from_cpu == Some(i) {
        s.links
            .get(i)
            .map(|l| format!("bottleneck for {}", from_cpu(l)))
    } else {
        None
    }
}

/// How a path document's missing bottleneck is titled: "Bottleneck", or "Bottleneck for
/// receiving" (or "for reads") when a link bounds only the other direction (a shaper).
pub fn no_bottleneck_title(s: &Summary) -> String {
    match s.bottleneck_from_cpu.and_then(|i| s.links.get(i)) {
        Some(l) if matches!(l.kind, LinkKind::Shaper | LinkKind::Ethernet) => {
            "Bottleneck for receiving".to_string()
        }
        Some(_) => "Bottleneck for reads".to_string(),
        None => "Bottleneck".to_string(),
    }
}

/// A path link's ceiling in MB/s (10^6 B/s) for a table: towards the CPU, or for a link
/// that bounds only what leaves it (a shaper), that direction's, said so.
pub fn link_ceiling_mb(l: &PathLink) -> String {
    match (l.ceiling_to_cpu_bps(), l.ceiling_from_cpu_bps()) {
        (Some(c), _) => mb(c / MB),
        (None, Some(c)) => format!("{} (sending only)", mb(c / MB)),
        (None, None) => dash(),
    }
}

/// An interface's TCP ceiling (the audit's transfers) in words, `number` writing each
/// figure: one figure when both ways have the same (`both_ways`), else each way ("11.8
/// sending (tbf qdisc), none receiving"); `None` when neither way has one.
pub struct InterfaceCeiling {
    pub both_ways: bool,
    pub text: String,
}

impl InterfaceCeiling {
    pub fn of(
        i: &model::inventory::net::NetInterface,
        number: impl Fn(f64) -> String,
    ) -> Option<InterfaceCeiling> {
        use model::net::Way;
        let sends = i.tcp_ceiling(Way::Sends).ok();
        let receives = i.tcp_ceiling(Way::Receives).ok();
        let way = |c: &Option<model::net::WayCeiling>, verb: &str| match c {
            Some(c) if c.by_shaper => format!("{} {verb} (tbf qdisc)", number(c.goodput_bps)),
            Some(c) => format!("{} {verb}", number(c.goodput_bps)),
            None => format!("none {verb}"),
        };
        match (&sends, &receives) {
            (None, None) => None,
            (Some(s), Some(r)) if s == r => Some(InterfaceCeiling {
                both_ways: true,
                text: number(s.goodput_bps),
            }),
            _ => Some(InterfaceCeiling {
                both_ways: false,
                text: format!(
                    "{}, {}",
                    way(&sends, "sending"),
                    way(&receives, "receiving")
                ),
            }),
        }
    }
}

/// Whether a link runs below what its ends support.
pub fn is_downgraded(l: &PathLink) -> bool {
    l.capable_state.as_ref().is_some_and(|c| c != &l.state)
        || l.note.as_deref().is_some_and(|n| n.contains("downgraded"))
}

/// A table titled with its count (`USB: 3 devices`) and an optional note after it.
fn counted_table(
    title: &str,
    (one, many): (&str, &str),
    note: &str,
    columns: &[(&'static str, bool)],
    rows: Vec<Vec<String>>,
) -> (String, Table) {
    (
        format!("{title}: {}{note}", plural(rows.len(), one, many)),
        Table::new(columns, rows),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn plural_agrees_in_number() {
        assert_eq!(
            super::plural(1, "period was", "periods were"),
            "1 period was"
        );
        assert_eq!(
            super::plural(0, "period was", "periods were"),
            "0 periods were"
        );
        assert_eq!(
            super::plural(7u64, "period was", "periods were"),
            "7 periods were"
        );
    }
}
