#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
//! Each kind's one document type reads the documents headroom wrote before the types moved
//! into `report::kinds` (tests/fixtures/results/, written by the binary before
//! that move) and writes them back field for field: the JSON did not change.

use report::Document;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::common;
use common::fixture;

/// `name`'s body read through `T` and written again is the body as the file has it.
fn same_through<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let doc = Document::read(&fixture(name)).unwrap();
    let typed: T = doc.view(name).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        back,
        serde_json::Value::Object(doc.body.clone()),
        "{name} changed on its way through its kind's type"
    );
    // And in the same order: the text of the body is the same.
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&doc.body).unwrap(),
        "{name}"
    );
    typed
}

#[test]
fn ceiling_documents_of_every_link_read_back_unchanged() {
    use report::kinds::ceiling::CeilingDocument;
    match same_through::<CeilingDocument>("ceiling-pcie.json") {
        CeilingDocument::Pcie(p) => assert_eq!(p.ceilings.len(), 8),
        other => panic!("{other:?}"),
    }
    match same_through::<CeilingDocument>("ceiling-usb.json") {
        CeilingDocument::Usb(u) => {
            assert_eq!(u.speeds.len(), 2);
            assert_eq!(u.speeds[1].transfers.len(), 4);
            assert_eq!(u.guide_table_1_2.len(), 6);
        }
        other => panic!("{other:?}"),
    }
    for name in ["ceiling-sata.json", "ceiling-eth.json", "ceiling-mmc.json"] {
        same_through::<CeilingDocument>(name);
    }
}

#[test]
fn a_path_document_reads_back_unchanged() {
    let p = same_through::<report::kinds::path::PathDocument>("path-tmp.json");
    assert_eq!(p.root, std::path::Path::new("/"));
    assert_eq!(p.path.chain.target, "/tmp");
}

#[test]
fn an_audit_document_reads_back_section_by_section() {
    use report::kinds::audit::{AuditDocument, Source};
    // An audit of a captured tree with USB storage and a USB network adapter.
    let name = "audit-usb3-uas-bot-r8152.json";
    let doc = Document::read(&fixture(name)).unwrap();
    let a: AuditDocument = doc.view(name).unwrap();
    let back = serde_json::to_value(&a).unwrap();
    // Each PCI function's decoded config space and AER counters, and the names of USB
    // classes and host controllers from headroom's own tables, are written, not read back
    // (crates/cli/tests/roundtrip.rs pins which): every other section is as written.
    for section in ["source", "system", "block", "net", "findings"] {
        assert_eq!(back[section], doc.body[section], "{section}");
    }
    assert_eq!(back["pci"]["links"], doc.body["pci"]["links"]);
    assert!(matches!(a.source, Some(Source::Root(_))), "{:?}", a.source);
    assert!(!a.pci.functions.is_empty() && !a.findings.is_empty());
    let names = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        let devices = v["usb"]["devices"].as_array().unwrap();
        devices.iter().map(|d| d["name"].clone()).collect()
    };
    assert_eq!(names(&back), names(&serde_json::Value::Object(doc.body)));
    assert!(a.usb.is_some_and(|u| u.devices.len() > 2));
    // One written before USB ids could be built in still reads.
    let old = "audit-nvme-downgraded.json";
    let a: AuditDocument = Document::read(&fixture(old)).unwrap().view(old).unwrap();
    assert!(!a.pci.links.is_empty());
}

#[test]
fn a_disk_document_reads_back_unchanged() {
    let d = same_through::<report::kinds::disk::DiskDocument>("disk-null-dd.json");
    assert_eq!(d.parameters.engine, "null");
    assert!(d.tests.len() > 1 && d.tests.iter().all(|t| !t.test.runs.is_empty()));
    assert!(d.counters.is_some() && d.path.is_some());
    // Those written before the path, the findings and the counters were carried still read.
    for old in ["disk-peak.json", "rpi5-gen2.json", "rpi5-gen3.json"] {
        let d: report::kinds::disk::DiskDocument =
            Document::read(&fixture(old)).unwrap().view(old).unwrap();
        assert!(!d.tests.is_empty(), "{old}");
    }
}

#[test]
fn an_mmio_document_reads_back_unchanged() {
    let m = same_through::<report::kinds::mmio::MmioDocument>("mmio-file.json");
    let r = m.region.as_ref().unwrap();
    assert_eq!(r.kind, "file");
    assert!(!m.results.is_empty() && m.memory.is_some_and(|d| !d.results.is_empty()));
}

#[test]
fn net_documents_read_back_unchanged() {
    let n = same_through::<report::kinds::net::NetDocument>("net-loopback-tcp.json");
    assert!(!n.flows.is_empty() && !n.measurement.streams.is_empty());
    // Those written before the rates' keys named their unit still read.
    for old in [
        "net-shaped-tcp.json",
        "net-shaped-tcp-2.json",
        "net-shaped-udp-reverse.json",
    ] {
        let n: report::kinds::net::NetDocument =
            Document::read(&fixture(old)).unwrap().view(old).unwrap();
        assert!(
            !n.flows.is_empty() && !n.measurement.streams.is_empty(),
            "{old}"
        );
    }
}

#[test]
fn count_and_pmu_list_documents_read_back_unchanged() {
    let c = same_through::<report::kinds::count::CountDocument>("count-true.json");
    assert_eq!(c.command.as_deref(), Some(&["true".to_string()][..]));
    assert!(!c.events.is_empty());
    let l = same_through::<report::kinds::count::PmuListDocument>("pmu-list.json");
    assert!(!l.pmus.is_empty() && !l.events.software.is_empty());
}

#[test]
fn survey_and_plan_documents_read_back_unchanged() {
    let p = same_through::<model::survey::Plan>("survey-plan-sd-nvme.json");
    assert!(!p.parts.is_empty());
    // A survey written with its parts' documents inside: every part reads back as written.
    let s = same_through::<report::kinds::survey::SurveyDocument>("survey-rpi5.json");
    assert!(!s.parts.is_empty() && !s.plan.parts.is_empty());
}

#[test]
fn a_latency_document_reads_back_unchanged() {
    let l = same_through::<report::kinds::latency::LatencyDocument>("latency-200-loops.json");
    assert_eq!(
        l.measurement.total.count,
        200 * l.measurement.threads.len() as u64
    );
    assert!(l.config.is_some() && l.context.is_some() && l.split.is_none());
    // One written before the interrupts were sampled still reads.
    let old = "latency-2-threads.json";
    let l: report::kinds::latency::LatencyDocument =
        Document::read(&fixture(old)).unwrap().view(old).unwrap();
    assert_eq!(l.measurement.threads.len(), 2);
}

/// The Markdown and the HTML page `headroom report` makes of one document.
fn reports_of(doc: &Document, name: &str) -> (String, String) {
    let s = report::kinds::summarize(doc, name).unwrap();
    let md = report::markdown::render(std::slice::from_ref(&s));
    let html = report::html::render(std::slice::from_ref(&s)).unwrap();
    (md, html)
}

/// `report` on a `count --list --json` document showed its title alone. Now every
/// PMU with its type, CPUs, terms and events, every event of no sysfs PMU, a PCIe PMU's root
/// ports, the findings and why the tracepoints are missing are shown, in Markdown and HTML.
#[test]
fn a_pmu_list_report_shows_what_count_list_prints() {
    let name = "pmu-list.json";
    let doc = Document::read(&fixture(name)).unwrap();
    let l: report::kinds::count::PmuListDocument = doc.view(name).unwrap();
    let (md, html) = reports_of(&doc, name);
    for p in &l.pmus {
        assert!(
            md.contains(&format!("| {} | {} |", p.name, p.type_id)),
            "{md}"
        );
        assert!(html.contains(&p.name), "{}", p.name);
        for e in &p.events {
            assert!(md.contains(&format!("{}/{e}/", p.name)), "{e}");
        }
        for f in &p.formats {
            assert!(md.contains(f.as_str()), "{f}");
        }
    }
    let e = &l.events;
    assert!(!e.tracepoints.is_empty());
    for (names, tag) in [
        (&e.software, "Software event"),
        (&e.hardware, "Hardware event"),
        (&e.tracepoints, "Tracepoint event"),
    ] {
        for n in names {
            assert!(md.contains(&format!("| {n} | {tag} |")), "{n}");
        }
    }
    let count = e.software.len() + e.hardware.len() + e.tracepoints.len();
    assert!(md.contains(&format!("Events of no sysfs PMU: {count} events")));
    assert!(html.contains("alignment-faults") && html.contains("Tracepoint event"));

    // A PCIe PMU joined to its root port, a finding, and tracepoints that could not be listed.
    let mut v = common::fixture_value(name);
    v["pmus"][0]["link"] = serde_json::json!({
        "pmu": v["pmus"][0]["name"], "family": "DesignWare", "root_ports": ["0000:00:01.0"],
        "covers": "the root ports of segment 0"
    });
    v["tracepoints"] = serde_json::json!([]);
    v["tracepoints_missing"] = "not listed: permission denied".into();
    v["findings"] = serde_json::json!([{"severity": "warning", "subject": "0000:00:02.0",
        "message": "no PMU counts this root port"}]);
    let doc = Document::from_value(v, "edited").unwrap();
    let (md, html) = reports_of(&doc, "edited");
    assert!(
        md.contains("DesignWare: root port 0000:00:01.0 (the root ports of segment 0)"),
        "{md}"
    );
    assert!(
        md.contains("tracepoints: not listed: permission denied"),
        "{md}"
    );
    assert!(md.contains("no PMU counts this root port"), "{md}");
    assert!(html.contains("no PMU counts this root port") && html.contains("permission denied"));
}

/// `report` on a `survey --dry-run --json` document showed its title alone. Now the
/// budget and every part, with its time and what it does, the command `survey --dry-run`
/// prints for it (the same shell line), or why it does not run.
#[test]
fn a_survey_plan_report_shows_what_survey_dry_run_prints() {
    let name = "survey-plan-sd-nvme.json";
    let doc = Document::read(&fixture(name)).unwrap();
    let plan: model::survey::Plan = doc.view(name).unwrap();
    let text = report::kinds::survey::plan_text(&plan, true);
    let (md, html) = reports_of(&doc, name);
    assert!(
        md.contains(
            "| plan | 7 parts to run, about 4 min 19 s of a 10 min budget, writing 1024 MiB |"
        ),
        "{md}"
    );
    assert!(text.starts_with(
        "Survey plan: 7 parts to run, about 4 min 19 s of a 10 min budget, writing 1024 MiB\n"
    ));
    let mut n = 0;
    for p in &plan.parts {
        assert!(html.contains(&p.id), "{}", p.id);
        if p.run {
            n += 1;
            // The command as --dry-run prints it, word for word.
            let line = format!("headroom {}", report::kinds::survey::shell_line(&p.command));
            assert!(text.contains(&format!("$ {line}\n")), "{line}");
            let row = format!(
                "| {n} | {} | {} | {} | {line} |",
                p.id,
                model::survey::format_seconds(p.seconds()),
                p.what
            );
            assert!(md.contains(&row), "{row}\n{md}");
        } else {
            let reason = p.reason.as_deref().unwrap();
            assert!(text.contains(reason) && md.contains(reason), "{reason}");
        }
    }
    assert_eq!(n, 7);
    // A path with a space is quoted as a shell reads it.
    assert!(md.contains("headroom bench disk '/media/sd card' --profile survey"));
}

/// A watch's HTML timeline: the link ceiling of each function whose link changed, and beside
/// it a plot of the AER errors counted since the watch began, one line per device and
/// severity, climbing to the run's count (13 correctable errors on the NVMe's root port).
#[test]
fn a_watch_report_plots_cumulative_errors_by_severity_beside_the_links() {
    let name = "watch-q35-retrain.json";
    let doc = Document::read(&fixture(name)).unwrap();
    let s = report::kinds::summarize(&doc, name).unwrap();
    let errors: Vec<(&str, f64)> = s
        .counts_over_time
        .iter()
        .map(|x| (x.name.as_str(), x.points.last().unwrap().1))
        .collect();
    assert_eq!(
        errors,
        [("0000:00:12.0 correctable AER errors", 13.0)],
        "{:?}",
        s.counts_over_time
    );
    let first = s.counts_over_time[0].points[0];
    assert_eq!(
        first,
        (0.0, 0.0),
        "the line starts from the watch's baseline"
    );
    let (_, html) = reports_of(&doc, name);
    let plots: Vec<&str> = html.split("<figure>").skip(1).collect();
    let link = plots.iter().position(|p| p.contains("link ceiling"));
    let counts = plots.iter().position(|p| {
        p.contains("Cumulative AER errors") && p.contains("0000:00:12.0 correctable AER errors")
    });
    assert!(
        matches!((link, counts), (Some(l), Some(c)) if c == l + 1),
        "the errors' plot follows the links' plot: {link:?} {counts:?}"
    );
}
