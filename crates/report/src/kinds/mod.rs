//! One module per result kind: the kind's one document type (written by cli, read back by
//! report, compare and history), its judgement, its summary and its text.

pub mod audit;
pub mod cases;
pub mod ceiling;
pub mod count;
pub mod disk;
pub mod expect;
pub mod latency;
pub mod metrics;
pub mod mmio;
pub mod net;
pub mod path;
pub mod survey;
pub mod watch;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::summary::{link_state, CounterRow, Summary};
use crate::views::CommonView;

/// What every renderer shows of `doc` (the terminal, Markdown, HTML, compare, the history),
/// made once: what every kind shares (the envelope, the path, the counters sampled beside an
/// engine, the context's order) here, the rest by the kind's own `summarize`; `origin` names
/// the document in errors.
/// `unix_s` in UTC, laid out as a peer prints its dates (`layout`: fio's ctime, rt-tests'
/// RFC 2822, iperf3's RFC 1123); empty when the time is out of range.
pub(crate) fn utc(unix_s: i64, layout: &(impl time::formatting::Formattable + ?Sized)) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_s)
        .ok()
        .and_then(|t| t.format(layout).ok())
        .unwrap_or_default()
}

pub fn summarize(doc: &Document, origin: &str) -> Result<Summary, DocumentError> {
    doc.check_kind(origin)?;
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
    match env.kind {
        DocumentKind::Disk => disk::summarize(doc, origin, &mut s, &mut kernel, &mut governor)?,
        DocumentKind::Latency => {
            latency::summarize(doc, origin, &mut s, &mut kernel, &mut governor)?
        }
        DocumentKind::Audit => audit::summarize(doc, origin, &mut s)?,
        DocumentKind::Net => net::summarize(doc, origin, &mut s)?,
        DocumentKind::Count => count::summarize(doc, origin, &mut s)?,
        DocumentKind::Mmio => mmio::summarize(doc, origin, &mut s)?,
        // Their facts are the path's and the envelope's (below), or none a report shows.
        DocumentKind::Ceiling => ceiling::summarize(doc, origin, &mut s)?,
        DocumentKind::PmuList => count::summarize_list(doc, origin, &mut s)?,
        DocumentKind::SurveyPlan => survey::summarize_plan(doc, origin, &mut s)?,
        DocumentKind::Watch => watch::summarize(doc, origin, &mut s)?,
        DocumentKind::Path
        | DocumentKind::Survey
        | DocumentKind::Report
        | DocumentKind::Compare
        | DocumentKind::History => {}
    }
    // Counters a benchmark sampled beside its engine (bench disk, bench net): the
    // interrupt rates of its path and the root port's PMU bytes.
    #[derive(serde::Deserialize)]
    struct BesideView {
        #[serde(default)]
        counters: Option<count::BesideCounters>,
    }
    if env.kind != DocumentKind::Count {
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

/// One document as every report shows it: its Markdown section(s), and for an HTML page the
/// intro it brings (a survey's summary and conclusions) and the summaries of its sections.
pub struct Rendered {
    pub markdown: String,
    pub html_intro: String,
    pub summaries: Vec<Summary>,
}

/// `doc` (named `origin`) as `report` and `history show` show it: a survey brings its own intro and its parts'
/// sections, any other document one section.
pub fn render(doc: &Document, origin: &str) -> Result<Rendered, DocumentError> {
    if doc.kind() == DocumentKind::Survey {
        let body = survey::SurveyBody::of(doc, origin)?;
        let (parts, _) = body.part_docs(origin);
        Ok(Rendered {
            markdown: survey::markdown(doc, &body, origin),
            html_intro: survey::html_intro(doc, &body, origin),
            summaries: parts.into_iter().map(|p| p.summary).collect(),
        })
    } else {
        let s = summarize(doc, origin)?;
        Ok(Rendered {
            markdown: crate::markdown::render(std::slice::from_ref(&s)),
            html_intro: String::new(),
            summaries: vec![s],
        })
    }
}
