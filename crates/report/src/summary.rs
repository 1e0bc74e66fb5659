//! What every renderer shows, made once from a document: the terminal, Markdown, HTML and
//! compare all read a [`Summary`], so what a user sees on screen and in a file agree.

use crate::document::{Document, DocumentError};
use crate::views::{CommonView, DiskView, FindingView, LatencyView, LinkView, PathView};
use model::units::MB;

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
    /// The kernel's count of the headline run's bytes against the engine's, in percent
    /// (/proc/self/io, else /proc/diskstats).
    pub cross_check_percent: Option<f64>,
}

impl TestRow {
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

/// One latency thread (or `all`), cyclictest's columns plus p99.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRow {
    pub name: String,
    pub cpu: Option<u32>,
    pub count: u64,
    pub min_us: f64,
    pub avg_us: f64,
    pub max_us: f64,
    pub p99_us: Option<u32>,
    pub missed: u64,
    /// `(µs, count)` of the non-empty 1 µs buckets.
    pub histogram: Vec<(u32, u64)>,
    pub overflow: u64,
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
    pub links: Vec<LinkView>,
    pub bottleneck: Option<usize>,
    /// Why the path has no bottleneck with a ceiling (virtio, tmpfs...), when it was resolved.
    pub no_ceiling_reason: Option<String>,
    pub findings: Vec<FindingView>,
    pub notes: Vec<String>,
    /// Kind `mmio`: the per-width table (region beside DRAM) and the lines saying what was
    /// measured.
    pub mmio: Option<(Table, Vec<String>)>,
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

/// MB/s (10^6 B/s) with one decimal, as the seeds' tables print it.
pub fn mb(v: f64) -> String {
    format!("{v:.1}")
}

/// A 0..1 ratio as a percentage with one decimal.
fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// The cell of a value a document does not have.
pub fn dash() -> String {
    "–".to_string()
}

/// A table as every renderer shows it: Markdown and HTML differ only in markup.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column titles (units in brackets) and whether the column holds numbers (aligned right).
    pub columns: Vec<(&'static str, bool)>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&'static str, bool)], rows: Vec<Vec<String>>) -> Table {
        Table {
            columns: columns.to_vec(),
            rows,
        }
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
            links: Vec::new(),
            bottleneck: None,
            no_ceiling_reason: None,
            findings: common.findings,
            notes: common.notes,
            mmio: None,
        };
        let mut kernel = env.host.as_ref().and_then(|h| h.kernel.clone());
        let mut governor = None;
        match env.kind.as_str() {
            "disk" => {
                let d: DiskView = doc.view(origin)?;
                if let Some(sys) = &d.system {
                    kernel = kernel.or(sys.kernel.clone());
                    governor = sys.governor.clone();
                    s.hostname = s.hostname.or(sys.hostname.clone());
                }
                if let Some(p) = &d.parameters {
                    if let Some(profile) = &p.profile {
                        s.context.push(("profile".into(), profile.clone()));
                    }
                    if let Some(engine) = &p.engine {
                        s.context.push(("engine".into(), engine.clone()));
                    }
                }
                s.target = d.target.as_ref().and_then(|t| t.given.clone());
                // One ceiling line for the run: the direction its tests move data in (the
                // smaller of the two when it has both).
                let reads = d.tests.iter().any(|t| t.read_percent() > 0);
                let writes = d.tests.iter().any(|t| t.read_percent() < 100);
                s.ceiling = d.ceiling.as_ref().map(|c| CeilingRow {
                    mb_s: match (reads, writes) {
                        (true, false) => c.read_bytes_per_sec,
                        (false, true) => c.write_bytes_per_sec,
                        _ => c.read_bytes_per_sec.min(c.write_bytes_per_sec),
                    } / MB,
                    bottleneck: c.bottleneck.clone(),
                });
                let mean = d
                    .parameters
                    .as_ref()
                    .and_then(|p| p.shown.as_deref())
                    .is_some_and(|x| x == "mean");
                for t in &d.tests {
                    let runs: Vec<f64> = t.runs.iter().map(|r| r.mb_per_s).collect();
                    let best = runs.get(t.best_run).copied();
                    let cross_check_percent = t
                        .runs
                        .get(t.best_run)
                        .and_then(|r| r.cross_check.as_ref())
                        .and_then(|c| c.proc_io_error_percent.or(c.diskstats_error_percent));
                    let measured = if mean { t.mean_mb_per_s } else { best }
                        .or(t.mean_mb_per_s)
                        .unwrap_or(0.0);
                    let efficiency = t.efficiency.or_else(|| {
                        s.ceiling
                            .as_ref()
                            .filter(|c| c.mb_s > 0.0)
                            .map(|c| measured / c.mb_s)
                    });
                    // Compare lines tests up by name: a repeated name gets its ordinal.
                    let mut name = t.name();
                    let same = s.tests.iter().filter(|x| x.name.starts_with(&name)).count();
                    if same > 0 {
                        name = format!("{name} ({})", same + 1);
                    }
                    s.tests.push(TestRow {
                        name,
                        direction: t.direction().unwrap_or_default(),
                        block_size: t.spec.block_size,
                        measured_mb_s: measured,
                        runs_mb_s: runs,
                        efficiency,
                        cross_check_percent,
                    });
                }
            }
            "latency" => {
                let l: LatencyView = doc.view(origin)?;
                if let Some(ctx) = &l.context {
                    if let Some(k) = &ctx.kernel {
                        kernel = kernel.or(k.release.clone());
                        if let Some(m) = k.preemption.as_ref().and_then(|p| p.model.clone()) {
                            s.context.push(("preemption".into(), m));
                        }
                    }
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
                    if let Some(i) = c.interval_us {
                        s.context.push(("interval".into(), format!("{i} us")));
                    }
                    if let Some(p) = c.priority {
                        s.context.push(("priority".into(), p.to_string()));
                    }
                }
                let row = |name: String, cpu, st: &crate::views::LatencyStatsView| ThreadRow {
                    name,
                    cpu,
                    count: st.count,
                    min_us: us(st.min_ns as f64),
                    avg_us: us(st.avg_ns),
                    max_us: us(st.max_ns as f64),
                    p99_us: st.histogram.quantile_us(0.99),
                    missed: st.missed_periods,
                    histogram: st.histogram.buckets.clone(),
                    overflow: st.histogram.overflow,
                };
                for t in &l.measurement.threads {
                    s.threads.push(row(t.thread.to_string(), t.cpu, &t.stats));
                }
                if let Some(total) = &l.measurement.total {
                    if l.measurement.threads.len() > 1 {
                        s.threads.push(row("all".into(), None, total));
                    }
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
                    s.tests.push(TestRow {
                        name: format!("{place}{} {}", crate::mmio::access_label(&r.width), r.op),
                        direction: r.op.clone(),
                        block_size: None,
                        measured_mb_s: r.mb_per_s,
                        runs_mb_s: vec![r.mb_per_s],
                        efficiency: None,
                        cross_check_percent: None,
                    });
                }
                if let Some(c) = m.memory.as_ref().and_then(|x| x.copy.as_ref()) {
                    s.tests.push(TestRow {
                        name: "DRAM memcpy (C library)".into(),
                        direction: "copy".into(),
                        block_size: Some(c.block_bytes),
                        measured_mb_s: c.mb_per_s,
                        runs_mb_s: vec![c.mb_per_s],
                        efficiency: None,
                        cross_check_percent: None,
                    });
                }
                s.mmio = Some((m.table(), m.describe()));
            }
            _ => {}
        }
        let path: Option<PathView> = common.path;
        if let Some(p) = path {
            s.target = s.target.or(p.chain.as_ref().and_then(|c| c.target.clone()));
            if s.ceiling.is_none() {
                if let Some(b) = p.bottleneck.and_then(|i| p.links.get(i)) {
                    s.ceiling = Some(CeilingRow {
                        mb_s: b.ceiling_bps / MB,
                        bottleneck: format!("{} {}", b.name, b.state),
                    });
                }
            }
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

    /// Per test: measured, spread, ceiling, efficiency and the kernel's cross-check.
    pub fn throughput_table(&self) -> Table {
        let ceiling = self
            .ceiling
            .as_ref()
            .map(|c| mb(c.mb_s))
            .unwrap_or_else(dash);
        let rows = self
            .tests
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    mb(t.measured_mb_s),
                    t.spread().map(mb).unwrap_or_else(dash),
                    ceiling.clone(),
                    t.efficiency.map(percent).unwrap_or_else(dash),
                    t.cross_check_percent
                        .map(|p| format!("{p:+.2} %"))
                        .unwrap_or_else(dash),
                ]
            })
            .collect();
        Table::new(
            &[
                ("Test", false),
                ("Measured (MB/s)", true),
                ("Spread (MB/s)", true),
                ("Ceiling (MB/s)", true),
                ("Efficiency", true),
                ("Kernel count vs engine", true),
            ],
            rows,
        )
    }

    /// Per latency thread: cyclictest's columns plus p99 and missed periods.
    pub fn latency_table(&self) -> Table {
        let rows = self
            .threads
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.cpu.map(|c| c.to_string()).unwrap_or_else(dash),
                    t.count.to_string(),
                    format!("{:.0}", t.min_us),
                    format!("{:.1}", t.avg_us),
                    format!("{:.0}", t.max_us),
                    t.p99_us
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "overflow".into()),
                    t.missed.to_string(),
                ]
            })
            .collect();
        Table::new(
            &[
                ("Thread", false),
                ("CPU", false),
                ("Samples", false),
                ("Min (us)", true),
                ("Avg (us)", true),
                ("Max (us)", true),
                ("p99 (us)", true),
                ("Missed (periods)", true),
            ],
            rows,
        )
    }

    /// The one number a history listing shows: the first test's MB/s or the worst
    /// latency, or the number of findings.
    pub fn headline(&self) -> String {
        if let Some(t) = self.tests.first() {
            format!("{}: {:.1} MB/s", t.name, t.measured_mb_s)
        } else if let Some(worst) = self
            .threads
            .iter()
            .map(|t| t.max_us)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        {
            format!("max {worst:.0} us")
        } else if let Some(c) = &self.ceiling {
            format!("bottleneck {} ({:.1} MB/s)", c.bottleneck, c.mb_s)
        } else {
            format!("{} findings", self.findings.len())
        }
    }

    /// What the run tested, for a history listing: the tests' or threads' count.
    pub fn test_label(&self) -> String {
        match (self.tests.len(), self.threads.len()) {
            (0, 0) => self.kind.clone(),
            (1, 0) => format!("{} (1 test)", self.kind),
            (n, 0) => format!("{} ({n} tests)", self.kind),
            (_, n) => format!(
                "{} ({} threads)",
                self.kind,
                n - usize::from(n > 1 && self.threads.iter().any(|t| t.name == "all"))
            ),
        }
    }
}

/// `8 GT/s x1` or `5 GT/s x1 (capable 8 GT/s x1: downgraded)`, with the link's basis
/// (where the MPS is named) so a change of MPS shows in compare.
pub fn link_state(l: &LinkView) -> String {
    let mut s = l.state.clone();
    if let Some(c) = &l.capable_state {
        s.push_str(&format!(" (capable {c})"));
    }
    if !l.basis.is_empty() {
        s.push_str(&format!(", {}", l.basis));
    }
    s
}

/// Whether a link runs below what its ends support.
pub fn is_downgraded(l: &LinkView) -> bool {
    l.capable_state.as_ref().is_some_and(|c| c != &l.state)
        || l.note.as_deref().is_some_and(|n| n.contains("downgraded"))
}
