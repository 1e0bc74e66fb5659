//! One module per result kind: the kind's one document type (written by cli, read back by
//! report, compare and history), its judgement, its summary, its text and the peers' layouts
//! of its run; each says what it is to every report through one [`Kind`], and [`KINDS`] is
//! where every kind is found. Every document-wide operation here (its summary, its report,
//! its labs' cases, its metrics) asks the document's kind.
//!
//! To add a kind: its module here (`mod.rs` with the document type and its `Kind`,
//! `findings.rs`, `text.rs`), its line in [`KINDS`], its name in
//! [`crate::document::DocumentKind`] (docs/ARCHITECTURE.md, "How to add a result kind").

pub mod audit;
pub mod ceiling;
pub mod count;
pub mod derived;
pub mod disk;
pub mod expect;
pub mod latency;
pub mod mmio;
pub mod net;
pub mod path;
pub mod survey;
pub mod video;
pub mod watch;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::{summary_cases, Case};
use crate::export::openmetrics::Metrics;
use crate::export::Export;
use crate::summary::{link_state, CounterRow, Summary};
use crate::terminal::Style;
use crate::views::CommonView;

/// What a result kind is to every report, implemented in the kind's own module by a unit
/// struct listed in [`KINDS`]. Only `kind` and `fields` are required: the rest has what
/// most kinds want (a summary of what every kind shares, one Markdown section, the cases
/// and metrics read from the summary).
pub trait Kind: Sync {
    /// The name its documents carry in the envelope's `kind`.
    fn kind(&self) -> DocumentKind;

    /// The body fields its producer always writes: a document without one of them is not one
    /// headroom wrote as it is (a disk document relabelled `audit` would otherwise read as an
    /// audit of nothing).
    fn fields(&self) -> &'static [&'static str];

    /// The outside formats its documents can be written in.
    fn exports(&self) -> &'static [Export] {
        crate::export::EVERY_DOCUMENT
    }

    /// Its own facts in `s` (its tests, threads, context, sections), beside what [`summarize`]
    /// fills for every kind; the kernel and the governor it knows go in `facts`.
    fn summarize(
        &self,
        _doc: &Document,
        _origin: &str,
        _s: &mut Summary,
        _facts: &mut RunFacts,
    ) -> Result<(), DocumentError> {
        Ok(())
    }

    /// Whether the counters sampled beside an engine (`counters` in the body) are shown as
    /// such; `count`'s own events are its result, not counters beside it.
    fn counters_beside(&self) -> bool {
        true
    }

    /// The document as `report` and `history show` show it: one Markdown section.
    fn render(&self, doc: &Document, origin: &str) -> Result<Rendered, DocumentError> {
        let s = summarize(doc, origin)?;
        Ok(Rendered {
            markdown: crate::markdown::render(std::slice::from_ref(&s)),
            html_intro: String::new(),
            summaries: vec![s],
        })
    }

    /// Its checks and figures for a board lab ([`crate::export::cases`]): those of its summary
    /// ([`Kind::cases_of`]).
    fn cases(&self, doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
        let s = summarize(doc, origin)?;
        self.cases_of(doc, &s, origin)
    }

    /// The cases of `doc` whose summary is `s`: what every kind's summary has, then the
    /// kind's own checks ([`Kind::own_cases`]).
    fn cases_of(
        &self,
        doc: &Document,
        s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        let mut out = summary_cases(s, &self.downgraded_links(doc, origin)?);
        out.extend(self.own_cases(doc, s, origin)?);
        Ok(out)
    }

    /// The findings of links that run below what both ends support, as (subject, statement):
    /// their cases fail as the link's own does (see [`summary_cases`]). None but an audit's.
    fn downgraded_links(
        &self,
        _doc: &Document,
        _origin: &str,
    ) -> Result<Vec<(String, String)>, DocumentError> {
        Ok(Vec::new())
    }

    /// The kind's own checks and figures, after its summary's; none by default.
    fn own_cases(
        &self,
        _doc: &Document,
        _s: &Summary,
        _origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        Ok(Vec::new())
    }

    /// Its metrics ([`crate::export::metrics`]): those of its summary ([`Kind::metrics_of`]).
    fn metrics(&self, m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
        let s = summarize(doc, origin)?;
        self.metrics_of(m, doc, &s, origin)
    }

    /// The metrics of `doc` whose summary is `s`: what every kind's summary has, and the
    /// kind's own after them.
    fn metrics_of(
        &self,
        m: &mut Metrics,
        doc: &Document,
        s: &Summary,
        _origin: &str,
    ) -> Result<(), DocumentError> {
        crate::export::metrics::add_summary(m, doc, s);
        Ok(())
    }

    /// What a history's listing shows of `doc` (whose summary is `s`): its test and its
    /// headline; by default the summary's.
    fn listing(
        &self,
        _doc: &Document,
        s: &Summary,
        _origin: &str,
    ) -> Result<(String, String), DocumentError> {
        Ok((s.test_label(), s.headline()))
    }

    /// Whether its documents hold other documents' results (`report`, `compare`, `history`):
    /// a lab takes the figures from those documents themselves.
    fn made_of_other_documents(&self) -> bool {
        false
    }

    /// The file `--textfile-dir` writes its metrics to: `headroom-KIND.prom`, so the latest
    /// result of each kind stands beside the others in the collector.
    fn textfile_name(&self) -> String {
        format!("headroom-{}.prom", self.kind().as_str())
    }
}

/// A kind's one document type (the body cli writes and every reader reads back), tied to the
/// name its documents carry; its [`Kind`] says `kind()` through it.
pub trait KindDocument: serde::Serialize + serde::de::DeserializeOwned {
    /// The `kind` its documents carry.
    const KIND: DocumentKind;

    /// The body of `doc`, a document of this kind, read through this type ([`Document::view`]);
    /// `origin` names it in errors.
    fn read(doc: &Document, origin: &str) -> Result<Self, DocumentError> {
        doc.view(origin)
    }

    /// The document as its command prints it on a terminal: what `how` adds is what only the
    /// command line and the terminal know (colour, the host, `-N`, the signal that stopped it).
    fn text(&self, how: &Text<'_>) -> String;

    /// This body in the envelope of a document made now by headroom `tool_version` on `host`:
    /// what `--json` prints and `--save` stores.
    fn wrap(
        &self,
        tool_version: &str,
        host: model::system::Host,
    ) -> Result<Document, DocumentError> {
        crate::document::wrap(Self::KIND, tool_version, host, self)
    }
}

/// How a document's terminal text is drawn ([`KindDocument::text`]): the same for every kind;
/// a kind reads what its layout needs and leaves the rest.
#[derive(Clone, Copy, Default)]
pub struct Text<'a> {
    /// Colour where stdout is a terminal that wants it.
    pub style: Style,
    /// The machine the document describes (with `--root`, the captured tree's), for the kinds
    /// whose text heads with it.
    pub host: Option<&'a model::system::Host>,
    /// When the run ended (the envelope's `created`).
    pub created: Option<&'a str>,
    /// Latencies in nanoseconds (`-N`, cyclictest's `--nsecs`).
    pub nanoseconds: bool,
    /// The signal that stopped the run early, as a user reads it (`SIGINT (Ctrl-C)`).
    pub stopped_by: Option<&'a str>,
    /// What lspci calls the PCI function at an address (from the ids database), for the kinds
    /// that name the functions they cross.
    pub pci_names: Option<&'a dyn Fn(&str) -> String>,
}

/// The text of a document whose kind has no layout of its own for it: its summary's sections,
/// as a survey shows its parts ([`crate::terminal::sections`]).
pub fn summary_text<D: KindDocument>(doc: &D, how: &Text<'_>) -> String {
    text_of_summary(doc, how, |s, style| {
        crate::terminal::sections::render(std::slice::from_ref(s), style)
    })
}

/// The text `layout` draws from the summary of `doc` (the kinds whose tables are their
/// summary's).
pub(crate) fn text_of_summary<D: KindDocument>(
    doc: &D,
    how: &Text<'_>,
    layout: impl Fn(&Summary, &Style) -> String,
) -> String {
    let host = how.host.cloned().unwrap_or_default();
    let summary = crate::document::wrap(D::KIND, env!("CARGO_PKG_VERSION"), host, doc)
        .and_then(|d| summarize(&d, "this run"));
    match summary {
        Ok(s) => layout(&s, &how.style),
        Err(e) => format!("this {} document cannot be shown: {e}\n", D::KIND.as_str()),
    }
}

/// Facts of the run that a kind's document may know better than the envelope: they head the
/// summary's context, in this order.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    pub kernel: Option<String>,
    pub governor: Option<String>,
}

/// Every kind headroom writes, each once.
pub static KINDS: &[&dyn Kind] = &[
    &audit::AuditKind,
    &path::PathKind,
    &ceiling::CeilingKind,
    &disk::DiskKind,
    &latency::LatencyKind,
    &net::NetKind,
    &mmio::MmioKind,
    &count::CountKind,
    &count::PmuListKind,
    &survey::SurveyKind,
    &survey::SurveyPlanKind,
    &derived::ReportKind,
    &derived::CompareKind,
    &derived::HistoryKind,
    &watch::WatchKind,
    &video::VideoKind,
];

/// The kind of documents of `kind`.
pub fn of(kind: DocumentKind) -> &'static dyn Kind {
    match KINDS.iter().find(|k| k.kind() == kind) {
        Some(k) => *k,
        // Every DocumentKind is in KINDS (the test `every_kind_is_registered_once`).
        None => &derived::HistoryKind,
    }
}

/// Whether the body of `doc` fits its envelope's kind: it has the fields the kind's producer
/// always writes ([`Kind::fields`]); `origin` names the document in errors.
pub fn check_kind(doc: &Document, origin: &str) -> Result<(), DocumentError> {
    let kind = doc.kind();
    match of(kind)
        .fields()
        .iter()
        .find(|f| !doc.body.contains_key(**f))
    {
        None => Ok(()),
        Some(missing) => {
            let mut has: Vec<&str> = doc.body.keys().map(String::as_str).take(8).collect();
            if doc.body.len() > has.len() {
                has.push("...");
            }
            Err(DocumentError::KindMismatch {
                origin: origin.to_string(),
                kind,
                missing,
                has: if has.is_empty() {
                    "no field".to_string()
                } else {
                    has.join(", ")
                },
            })
        }
    }
}

/// The cases of `doc` for a board lab (`origin` names it in errors), as its kind gives them.
pub fn cases(doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
    of(doc.kind()).cases(doc, origin)
}

/// The test and headline a history lists for `doc` (whose summary is `s`), as its kind
/// gives them.
pub fn listing(
    doc: &Document,
    s: &Summary,
    origin: &str,
) -> Result<(String, String), DocumentError> {
    of(doc.kind()).listing(doc, s, origin)
}

/// Add the metrics of `doc` (`origin` names it in errors) to `m`, as its kind gives them.
pub fn add_metrics(m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
    of(doc.kind()).metrics(m, doc, origin)
}

/// The file `--textfile-dir` writes for a document of `kind`.
pub fn textfile_name(kind: DocumentKind) -> String {
    of(kind).textfile_name()
}

/// `unix_s` in UTC, laid out as a peer prints its dates (`layout`: fio's ctime, rt-tests'
/// RFC 2822, iperf3's RFC 1123); empty when the time is out of range.
pub(crate) fn utc(unix_s: i64, layout: &(impl time::formatting::Formattable + ?Sized)) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_s)
        .ok()
        .and_then(|t| t.format(layout).ok())
        .unwrap_or_default()
}

/// What every renderer shows of `doc` (the terminal, Markdown, HTML, compare, the history),
/// made once: what every kind shares (the envelope, the path, the counters sampled beside an
/// engine, the context's order) here, the rest by its kind's [`Kind::summarize`]; `origin`
/// names the document in errors.
pub fn summarize(doc: &Document, origin: &str) -> Result<Summary, DocumentError> {
    check_kind(doc, origin)?;
    let common: CommonView = doc.view(origin)?;
    let env = &doc.envelope;
    let mut s = Summary {
        origin: origin.to_string(),
        kind: env.kind,
        created: env.created.clone(),
        hostname: env.host.as_ref().and_then(|h| h.hostname.clone()),
        host: env.host.clone(),
        target: None,
        context: Vec::new(),
        ceiling: None,
        tests: Vec::new(),
        every_throughput_column: false,
        threads: Vec::new(),
        series: Vec::new(),
        counts_over_time: Vec::new(),
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
        parts: Vec::new(),
    };
    let kind = of(env.kind);
    let mut facts = RunFacts {
        kernel: env.host.as_ref().and_then(|h| h.kernel.clone()),
        governor: None,
    };
    kind.summarize(doc, origin, &mut s, &mut facts)?;
    // Counters a benchmark sampled beside its engine (bench disk, bench net): the
    // interrupt rates of its path and the root port's PMU bytes.
    #[derive(serde::Deserialize)]
    struct BesideView {
        #[serde(default)]
        counters: Option<count::BesideCounters>,
    }
    if kind.counters_beside() {
        if let Ok(BesideView { counters: Some(b) }) = doc.view::<BesideView>(origin) {
            // The path's AER errors and link changes during the run.
            if let Some(w) = &b.links {
                for f in watch::beside::collect(w) {
                    if !s.findings.contains(&f) {
                        s.findings.push(f);
                    }
                }
                if let Some(per_gb) = w.errors_per_gb() {
                    s.counters.push(CounterRow {
                        name: "AER errors on the path".into(),
                        value: Some(w.errors() as f64),
                        unit: String::new(),
                        running_percent: None,
                        status: format!("{per_gb:.2} per GB moved"),
                    });
                }
            }
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
        path::summarize(&mut s, p);
    }
    let mut ctx = Vec::new();
    if let Some(k) = facts.kernel {
        ctx.push(("kernel".to_string(), k));
    }
    if let Some(g) = facts.governor {
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

/// One document as every report shows it: its Markdown section(s), and for an HTML page the
/// intro it brings (a survey's summary and conclusions) and the summaries of its sections.
pub struct Rendered {
    pub markdown: String,
    pub html_intro: String,
    pub summaries: Vec<Summary>,
}

/// `doc` (named `origin`) as `report` and `history show` show it, as its kind renders it
/// ([`Kind::render`]).
pub fn render(doc: &Document, origin: &str) -> Result<Rendered, DocumentError> {
    of(doc.kind()).render(doc, origin)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::document::wrap;
    use model::system::Host;
    use serde_json::json;

    #[test]
    fn a_body_that_does_not_fit_its_kind_is_refused() {
        let disk = json!({"parameters": {}, "system": {}, "target": {}, "tests": []});
        let doc = wrap(DocumentKind::Audit, "0.1.0", Host::default(), &disk).unwrap();
        let e = check_kind(&doc, "d.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "d.json says it is of kind `audit`, but it lacks `pci`, which every audit document \
             has (it has parameters, system, target, tests): give the document as headroom \
             wrote it"
        );
        let doc = wrap(DocumentKind::Disk, "0.1.0", Host::default(), &disk).unwrap();
        assert!(check_kind(&doc, "d").is_ok());
        let e = Document::parse(
            r#"{"schema_version": 2, "kind": "nonsense", "tests": []}"#,
            "n.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("n.json is not a headroom result document (its kind `nonsense`"),
            "{e}"
        );
    }

    #[test]
    fn every_kind_is_registered_once() {
        for k in DocumentKind::ALL {
            let n = KINDS.iter().filter(|r| r.kind() == k).count();
            assert_eq!(n, 1, "{k} is registered {n} times");
        }
        assert_eq!(KINDS.len(), DocumentKind::ALL.len());
    }
}
