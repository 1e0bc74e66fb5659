#![allow(clippy::unwrap_used)]
//! A survey document built from fixed part documents (tests/fixtures/results/): its summary,
//! ranked conclusions, Markdown (insta snapshot) and compare of a before/after pair.

use model::survey::{fit, PartKind};
use report::survey::{PartResult, PartStatus, SurveyBody};
use report::Document;
use serde_json::Value;

mod common;
use common::{fixture_value as fixture, planned, ran};

/// A board with a downgraded NVMe link (the audit fixture), the Raspberry Pi 5 dd run at
/// `disk` (Gen 2 or Gen 3), latency idle and under load, and a network part not run.
fn survey(disk: &str) -> (Document, SurveyBody) {
    survey_of(fixture(disk))
}

/// The same survey around any disk document.
fn survey_of(disk: Value) -> (Document, SurveyBody) {
    let idle = fixture("latency-2-threads.json");
    let mut load = idle.clone();
    // Under load the worst wake-up is 400 us later on every thread.
    for t in load["measurement"]["threads"].as_array_mut().unwrap() {
        let max = t["stats"]["max_ns"].as_u64().unwrap();
        t["stats"]["max_ns"] = Value::from(max + 400_000);
    }
    let mut plan_parts = vec![
        planned("audit", PartKind::Audit),
        planned("disk nvme0n1", PartKind::Disk),
        planned("latency idle", PartKind::Latency),
        planned("latency stress", PartKind::Latency),
        planned("net", PartKind::Net),
    ];
    plan_parts[4].run = false;
    plan_parts[4].reason = Some("not run: no --net HOST given".into());
    let plan = fit(600.0, plan_parts);
    let body = SurveyBody {
        plan,
        parts: vec![
            ran(
                "audit",
                PartKind::Audit,
                fixture("audit-nvme-downgraded.json"),
            ),
            ran("disk nvme0n1", PartKind::Disk, disk),
            ran("latency idle", PartKind::Latency, idle),
            ran("latency stress", PartKind::Latency, load),
            PartResult {
                id: "net".into(),
                kind: PartKind::Net,
                status: PartStatus::NotRun,
                reason: Some("not run: no --net HOST given".into()),
                seconds: None,
                messages: Vec::new(),
                document: None,
            },
        ],
        interrupted: false,
        summary: String::new(),
        conclusions: Vec::new(),
    };
    let doc = report::document::wrap("survey", "0.1.0", &body).unwrap();
    let mut doc = doc;
    doc.envelope.created = Some("2026-11-23T12:00:00Z".into());
    doc.envelope.host = Some(report::document::Host {
        hostname: Some("rpi5".into()),
        kernel: Some("6.6.51+rpt-rpi-2712".into()),
    });
    (doc, body)
}

/// Issue 23 item 8: a disk above its ceiling (an emulated board's 1030 MB/s over a 196 MB/s
/// PCIe link) read "reaches 526 % of its ceiling", a number to quote; the survey says the
/// ceiling does not bound it, and ranks no loss for it.
#[test]
fn a_disk_above_its_ceiling_has_no_efficiency_to_quote() {
    let mut disk = fixture("rpi5-gen2.json");
    for side in ["read_bytes_per_sec", "write_bytes_per_sec"] {
        let c = disk["ceiling"][side].as_f64().unwrap();
        disk["ceiling"][side] = Value::from(c / 5.88);
    }
    disk["tests"][0]["efficiency"] = Value::from(5.26);
    let (_, body) = survey_of(disk);
    let (summary, conclusions) = body.judge("survey.json");
    assert!(
        summary.contains("storage on nvme0n1 gives")
            && summary
                .contains("that ceiling does not bound it, so there is no efficiency to quote"),
        "{summary}"
    );
    assert!(!summary.contains("526 %"), "{summary}");
    assert!(
        !conclusions
            .iter()
            .any(|c| c.subject == "nvme0n1" && c.lost.is_some()),
        "{conclusions:#?}"
    );
}

#[test]
fn the_summary_names_the_bottleneck_and_the_lost_link() {
    let (_, body) = survey("rpi5-gen2.json");
    let (summary, conclusions) = body.judge("survey.json");
    // The audit's NVMe link runs at 8 GT/s x1 where both ends support 16 GT/s x4.
    assert!(
        summary.contains("0000:01:00.0") && summary.contains("runs at 8 GT/s x1 of 16 GT/s x4"),
        "{summary}"
    );
    assert!(
        summary.contains("88 % of its bandwidth lost to the link"),
        "{summary}"
    );
    // The dd run is judged against its bottleneck, the PCIe 5 GT/s x1 link (seed 003).
    assert!(
        summary.contains("storage on nvme0n1 reaches") && summary.contains("PCIe 5 GT/s x1"),
        "{summary}"
    );
    assert!(summary.contains("1 of 5 parts did not run to the end: net (not run)"));
    // Ranked by the share lost: the link (88 %) before the latency added by load.
    let ranked: Vec<&str> = conclusions
        .iter()
        .filter(|c| c.lost.is_some())
        .map(|c| c.subject.as_str())
        .collect();
    assert_eq!(ranked.first(), Some(&"0000:01:00.0"), "{conclusions:#?}");
    assert!(ranked.contains(&"wake-up latency"), "{conclusions:#?}");
    assert!(ranked.contains(&"nvme0n1"), "{conclusions:#?}");
    let lost: Vec<f64> = conclusions.iter().filter_map(|c| c.lost).collect();
    assert!(
        lost.windows(2).all(|w| w[0] >= w[1]),
        "not ranked: {lost:?}"
    );
    // Every unmeasured finding comes after the measured ones.
    let first_unmeasured = conclusions.iter().position(|c| c.lost.is_none());
    if let Some(i) = first_unmeasured {
        assert!(conclusions[i..].iter().all(|c| c.lost.is_none()));
    }
}

#[test]
fn markdown_of_a_survey() {
    let (doc, body) = survey("rpi5-gen2.json");
    let mut md = report::survey::markdown_intro(&doc, &body, "survey.json");
    let (parts, problems) = body.part_docs("survey.json");
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(parts.len(), 4);
    let summaries: Vec<report::Summary> = parts.into_iter().map(|p| p.summary).collect();
    md.push_str(&report::markdown::render(&summaries));
    assert!(md.starts_with("# headroom survey of rpi5\n"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn compare_of_two_surveys_lines_the_parts_up() {
    let (_, before) = survey("rpi5-gen2.json");
    let (_, after) = survey("rpi5-gen3.json");
    let md = report::survey::compare_markdown(&[
        ("before.json".to_string(), before),
        ("after.json".to_string(), after),
    ])
    .unwrap();
    // The disk part compared as a disk run: the seed's +85 % from Gen 2 to Gen 3.
    assert!(md.contains("dd 100M write"), "{md}");
    assert!(md.contains("+85."), "{md}");
    // The part that ran in neither survey is named, not silently dropped.
    assert!(
        md.contains("## net\n\nNot compared: no result in before.json, after.json."),
        "{md}"
    );
    // The audit part lines up its links.
    assert!(
        md.contains("| 0000:01:00.0 | 8 GT/s x1 | 8 GT/s x1 |"),
        "{md}"
    );
}

#[test]
fn a_survey_document_reads_back() {
    let (doc, body) = survey("rpi5-gen3.json");
    let text = doc.to_json_pretty();
    let back = Document::parse(&text, "survey.json").unwrap();
    assert_eq!(back.kind(), "survey");
    let again = SurveyBody::of(&back, "survey.json").unwrap();
    assert_eq!(again.parts, body.parts);
    assert_eq!(again.plan, body.plan);
}
