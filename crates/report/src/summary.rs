//! What every renderer shows, made once from a document: the terminal, Markdown, HTML and
//! compare all read a [`Summary`], so what a user sees on screen and in a file agree.

use crate::document::DocumentKind;
use crate::table::{dash, mb, Table};
use crate::words::{lat_us, percent, plural};
use model::path::{LinkKind, PathLink};
use model::units::{tenths_us, whole_us, MB};
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
    pub(crate) fn of(st: &model::latency::split::SplitStats) -> IrqRow {
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
    pub kind: DocumentKind,
    pub created: Option<String>,
    pub hostname: Option<String>,
    /// The envelope's host (machine-id, model, serial...); `hostname` is its name, or the
    /// one an older document kept in its body.
    pub host: Option<model::system::Host>,
    pub target: Option<String>,
    /// Facts that change what a number means, in a fixed order: `kernel`, `governor`,
    /// `bottleneck`, then each link's state. Compare lists the ones that differ first.
    pub context: Vec<(String, String)>,
    pub ceiling: Option<CeilingRow>,
    pub tests: Vec<TestRow>,
    /// Whether the throughput table keeps every column, a dash where a test lacks a figure
    /// (a disk run: the check could not be made), instead of leaving out the columns no test
    /// has (IOPS, CPU per I/O, the kernel's counts: a network run has none).
    pub every_throughput_column: bool,
    pub threads: Vec<ThreadRow>,
    /// Rates over time (net), plotted with the ceiling line.
    pub series: Vec<RateSeries>,
    /// Counts over time (a watch's cumulative AER errors by device and severity), plotted
    /// beside the rates; the points' second member is a count.
    pub counts_over_time: Vec<RateSeries>,
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
    /// The parts a kind adds to what every kind has, each shown at its place.
    pub parts: Vec<Part>,
    /// The events of a `count` document (and the interrupt rates it measured).
    pub counters: Vec<CounterRow>,
}

/// Where in a report a kind's [`Part`] is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// After the context: what the document lists (an audit's inventory, a ceiling's
    /// configurations, a plan's parts).
    Listing,
    /// In place of the throughput table: a measure of the kind's own (an MMIO run's access
    /// widths beside DRAM's).
    Measured,
    /// Under the latency table: what explains it (a split run's tables).
    UnderLatency,
}

/// A titled part of a report that a kind adds: lines saying what it is, then its table.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub place: Place,
    /// Headroom's own words (`PCI: 2 functions`, `CPU access by width`).
    pub title: String,
    pub lines: Vec<String>,
    pub table: Table,
}

impl Part {
    /// A titled table at `place`.
    pub fn table(place: Place, (title, table): (String, Table)) -> Part {
        Part {
            place,
            title,
            lines: Vec::new(),
            table,
        }
    }
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

/// A fact of the run's own making (a parameter, the target), after kernel and governor.
pub(crate) fn put(s: &mut Summary, key: &str, value: String) {
    s.context.push((key.to_string(), value));
}

impl Summary {
    /// A titled table the document lists, shown after the context ([`Place::Listing`]).
    pub fn list(&mut self, table: (String, Table)) {
        self.parts.push(Part::table(Place::Listing, table));
    }

    /// The kind's parts shown at `place`, in order.
    pub fn parts_at(&self, place: Place) -> impl Iterator<Item = &Part> {
        self.parts.iter().filter(move |p| p.place == place)
    }

    /// A section's title: the kind and where the document came from (`disk — run.json`),
    /// or the origin alone when it already names the kind (a survey's parts: `audit`, `disk
    /// nvme0n1`, `latency idle`), which would otherwise read `audit — audit`.
    pub fn title(&self) -> String {
        let kind = self.kind.as_str();
        let origin = self.origin.as_str();
        if origin == kind
            || origin
                .strip_prefix(kind)
                .is_some_and(|r| r.starts_with(' '))
        {
            origin.to_string()
        } else {
            format!("{kind} — {origin}")
        }
    }

    /// Read what reports need from `doc`; `origin` names it in errors.
    /// The line under a section's title: host, time, target, each a document's string:
    /// `text` escapes the host and the time for the output format, `quote` formats the target.
    pub fn facts(
        &self,
        text: impl Fn(&str) -> String,
        quote: impl Fn(&str) -> String,
    ) -> Vec<String> {
        let mut facts = Vec::new();
        if let Some(h) = self.host_line() {
            facts.push(format!("host {}", text(&h)));
        }
        if let Some(c) = &self.created {
            facts.push(text(c));
        }
        if let Some(t) = &self.target {
            facts.push(format!("target {}", quote(t)));
        }
        facts
    }

    /// The host in one line (`rpi5 (Raspberry Pi 5 Model B Rev 1.0, serial ..., machine-id
    /// ...)`), with the name the document's body kept when the envelope has none.
    pub fn host_line(&self) -> Option<String> {
        let mut h = self.host.clone().unwrap_or_default();
        if h.hostname.is_none() {
            h.hostname = self.hostname.clone();
        }
        h.describe()
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

    /// The path's links, one row each: state, capable state, ceiling, basis and what marks
    /// it (bottleneck, downgraded); `None` without a path.
    pub fn path_table(&self) -> Option<Table> {
        if self.links.is_empty() {
            return None;
        }
        let rows: Vec<Vec<String>> = self
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut mark = Vec::new();
                mark.extend(bottleneck_marks(self, i));
                if is_downgraded(l) {
                    mark.push("downgraded".to_string());
                }
                if let Some(n) = &l.note {
                    if !n.contains("downgraded") {
                        mark.push(n.clone());
                    }
                }
                vec![
                    l.name.clone(),
                    l.state.to_string(),
                    l.capable_state
                        .as_ref()
                        .map_or_else(dash, ToString::to_string),
                    link_ceiling_mb(l),
                    if l.basis.is_empty() {
                        dash()
                    } else {
                        l.basis.clone()
                    },
                    mark.join(", "),
                ]
            })
            .collect();
        Some(Table::new(
            &[
                ("Link", false),
                ("State", false),
                ("Capable", false),
                ("Ceiling (MB/s)", true),
                ("Basis", false),
                ("Note", false),
            ],
            rows,
        ))
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
        let table = Table::new(
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
        );
        // What only a disk run has, left out of another kind's table where no test has it (a
        // network run); a disk run keeps them, a dash saying the check could not be made.
        if self.every_throughput_column {
            table
        } else {
            table.without_empty(&[
                "IOPS",
                "CPU per I/O (us)",
                "proc io error",
                "diskstats error",
            ])
        }
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
            (0, 0) => self.kind.to_string(),
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
pub(crate) fn counted_table(
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
