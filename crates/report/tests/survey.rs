#![allow(clippy::unwrap_used)]
//! A survey document built from fixed part documents (tests/fixtures/results/): its summary,
//! ranked conclusions, Markdown (insta snapshot) and compare of a before/after pair.

use model::survey::{fit, PartKind};
use report::kinds::survey::{PartResult, PartStatus, SurveyDocument};
use report::kinds::KindDocument;
use report::Document;
use serde_json::Value;

use crate::common;
use common::{fixture_value as fixture, planned, ran};

/// A board with a downgraded NVMe link (the audit fixture), the Raspberry Pi 5 dd run at
/// `disk` (Gen 2 or Gen 3), latency idle and under load, and a network part not run.
fn survey(disk: &str) -> (Document, SurveyDocument) {
    survey_with(disk, 600_000)
}

/// As [`survey`], the worst wake-up of every thread `later_ns` later under load than idle
/// (the idle run's threads' maxima spread 431 us: 979 and 548 us).
fn survey_with(disk: &str, later_ns: u64) -> (Document, SurveyDocument) {
    survey_of(fixture(disk), later_ns)
}

/// The same survey around any disk document.
fn survey_of(disk: Value, later_ns: u64) -> (Document, SurveyDocument) {
    let idle = fixture("latency-2-threads.json");
    let mut load = idle.clone();
    for t in load["measurement"]["threads"].as_array_mut().unwrap() {
        let max = t["stats"]["max_ns"].as_u64().unwrap();
        t["stats"]["max_ns"] = Value::from(max + later_ns);
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
    let body = SurveyDocument {
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
                planned_s: None,
                given_s: None,
                stopping_s: None,
                messages: Vec::new(),
                document: None,
            },
        ],
        interrupted: false,
        seconds: Some(24.3),
        summary: String::new(),
        conclusions: Vec::new(),
    };
    let doc = report::document::wrap(
        report::document::DocumentKind::Survey,
        "0.1.0",
        model::system::Host::default(),
        &body,
    )
    .unwrap();
    let mut doc = doc;
    doc.envelope.created = Some("2026-11-23T12:00:00Z".into());
    doc.envelope.host = Some(model::system::Host {
        hostname: Some("rpi5".into()),
        kernel: Some("6.6.51+rpt-rpi-2712".into()),
        ..Default::default()
    });
    (doc, body)
}

/// A disk above its ceiling (an emulated board's 1030 MB/s over a 196 MB/s
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
    let (_, body) = survey_of(disk, 600_000);
    let (summary, conclusions) = body.judge("survey.json");
    assert!(
        summary.contains("Storage on nvme0n1 gives")
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
        summary.contains("Storage on nvme0n1 reaches") && summary.contains("PCIe 5 GT/s x1"),
        "{summary}"
    );
    assert!(
        summary.contains("1 of 5 parts did not run: net (not run)")
            && !summary.contains("did not run to the end"),
        "{summary}"
    );
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
fn a_latency_difference_within_the_runs_spread_is_no_conclusion() {
    // The top "cost" (+83 us) compared the maxima of two short runs, which
    // is noise. The statistic is each run's largest wake-up; a difference is a conclusion
    // only beyond the spread of the threads' maxima within a run (here 979 - 548 = 431 us).
    let (_, body) = survey_with("rpi5-gen2.json", 83_000);
    let (summary, conclusions) = body.judge("survey.json");
    assert!(
        !conclusions.iter().any(|c| c.subject == "wake-up latency"),
        "{conclusions:#?}"
    );
    assert!(
        summary.contains(
            "Wake-up latency peaks at 979 us idle and 1062 us under load, a difference within \
             the 431 us the threads' maxima spread within a run: no effect of the load these \
             runs can tell"
        ),
        "{summary}"
    );
    let (_, body) = survey_with("rpi5-gen2.json", 600_000);
    let (_, conclusions) = body.judge("survey.json");
    let c = conclusions
        .iter()
        .find(|c| c.subject == "wake-up latency")
        .unwrap_or_else(|| panic!("{conclusions:#?}"));
    assert_eq!(c.cost, "+600 us (38 %)");
    assert!(
        c.evidence.contains(
            "statistic: the largest wake-up of each run, a difference only beyond the 431 us \
             its threads' maxima spread within a run"
        ),
        "{}",
        c.evidence
    );
}

/// A latency part's document as `bench latency --stress cpu=2,io=1` writes it now: `edit`
/// sets its interrupts, its findings judged from it by report's latency judge.
fn latency_part(stress_io: Option<u32>, interrupts: Value) -> Value {
    let mut v = fixture("latency-2-threads.json");
    v["interrupts"] = interrupts;
    if let Some(io) = stress_io {
        v["stress"] = serde_json::json!({"spec": {"cpu": 2, "cpu_load": 100, "io": io, "vm": 0,
            "vm_bytes_per_worker": 0, "vm_stride": 8, "interpretation": ""}});
    }
    let doc = report::document::wrap(
        report::document::DocumentKind::Latency,
        "0.1.0",
        model::system::Host::default(),
        &v,
    )
    .unwrap();
    let view: report::kinds::latency::LatencyDocument = doc.view("latency").unwrap();
    let findings = report::kinds::latency::findings::findings(
        view.config.as_ref().unwrap(),
        view.context.as_ref().unwrap(),
        &view.measurement,
        &[0, 1],
        view.interrupts.as_ref(),
        view.stress.as_ref().map(|s| &s.spec),
    );
    v["findings"] = serde_json::to_value(findings).unwrap();
    v
}

#[test]
fn every_conclusion_has_an_action_and_the_survey_names_its_own_load() {
    // A garbled summary ("...it shapes what this
    // end sends ceiling;"), the Action column "–" on all 7 conclusions, a warning blaming
    // "52876 device interrupts (36 virtio1-req.0: 52837, ...)" that headroom's own io
    // stressor caused, and warnings on 1 and 7 interrupts among thousands of wake-ups.
    let cpu = |cpu: u32, sources: Value| {
        let count: u64 = sources
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["count"].as_u64().unwrap())
            .sum();
        serde_json::json!({"cpu": cpu, "count": count, "per_second": count as f64 / 2.0,
            "sources": sources})
    };
    let src = |irq: u32, name: &str, count: u64, disk: Option<&str>| {
        serde_json::json!({"irq": irq, "name": name, "count": count,
            "per_second": count as f64 / 2.0, "block_device": disk})
    };
    let idle = latency_part(
        None,
        serde_json::json!({"elapsed_s": 2.0, "cpus": [
            cpu(0, serde_json::json!([src(32, "virtio0-reporting_vq", 1, None)])),
            cpu(1, serde_json::json!([]))]}),
    );
    let load = latency_part(
        Some(1),
        serde_json::json!({"elapsed_s": 2.0, "cpus": [
            cpu(0, serde_json::json!([src(41, "virtio3-rx", 1, None)])),
            cpu(1, serde_json::json!([src(36, "virtio1-req.0", 52_837, Some("vda")),
                src(31, "virtio0-stats", 1, None)]))]}),
    );
    let ids = [
        ("audit", PartKind::Audit),
        ("disk nvme0n1", PartKind::Disk),
        ("latency idle", PartKind::Latency),
        ("latency stress", PartKind::Latency),
        ("net 10.0.0.2", PartKind::Net),
    ];
    let body = SurveyDocument {
        plan: fit(600.0, ids.iter().map(|(id, k)| planned(id, *k)).collect()),
        parts: vec![
            ran(
                "audit",
                PartKind::Audit,
                fixture("audit-nvme-downgraded.json"),
            ),
            ran("disk nvme0n1", PartKind::Disk, fixture("rpi5-gen2.json")),
            ran("latency idle", PartKind::Latency, idle),
            ran("latency stress", PartKind::Latency, load),
            ran(
                "net 10.0.0.2",
                PartKind::Net,
                fixture("net-shaped-tcp.json"),
            ),
        ],
        interrupted: false,
        seconds: None,
        summary: String::new(),
        conclusions: Vec::new(),
    };
    let (summary, conclusions) = body.judge("survey.json");
    for c in &conclusions {
        let action = c.action.as_deref().unwrap_or("");
        assert!(!action.is_empty() && action != "–", "no action: {c:#?}");
    }
    assert!(
        !conclusions
            .iter()
            .any(|c| c.evidence.contains("interrupts")),
        "1 interrupt in 1000 wake-ups, and the stress's own disk interrupts, are no \
         conclusion: {conclusions:#?}"
    );
    assert!(
        summary.contains(
            "under load (its io workers made vda interrupt 52837 times on the measured CPUs: \
             load the survey generated itself)"
        ),
        "{summary}"
    );
    // The kernel's warning has its action.
    let kernel = conclusions
        .iter()
        .find(|c| c.evidence.contains("not real-time"))
        .unwrap();
    assert!(
        kernel.action.as_deref().unwrap().contains("PREEMPT_RT"),
        "{kernel:#?}"
    );
    // Each ceiling reads as the ceiling set by something, never "... sends ceiling".
    assert!(
        summary.contains("of the ceiling set by") && !summary.contains(") ceiling"),
        "{summary}"
    );
    // The facts were joined with "; ", and the shaper's ceiling
    // brings a semicolon of its own ("...; it shapes what this end sends; wake-up latency
    // ..."): each fact is now a sentence, and the ceiling's description is in parentheses.
    assert!(
        summary.contains(
            " Network part net 10.0.0.2, TCP client -> server: 93.5 Mbit/s, 99 % of the \
             ceiling (tbf qdisc on va: rate 100.00 Mbit/s, overhead 24 B per packet, MTU \
             1500, TCP with timestamps (net.ipv4.tcp_timestamps = 1); it shapes what this end \
             sends)."
        ),
        "{summary}"
    );
    assert!(
        summary.contains(" Storage on nvme0n1 reaches")
            && summary.contains(" Wake-up latency peaks at"),
        "{summary}"
    );
    for fact in ["storage", "wake-up", "net", "network"] {
        assert!(!summary.contains(&format!("; {fact}")), "{summary}");
    }
}

#[test]
fn markdown_of_a_survey() {
    let (doc, body) = survey("rpi5-gen2.json");
    let mut md = report::kinds::survey::markdown_intro(&doc, &body, "survey.json");
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
    let (md, parts) = report::kinds::survey::compare_surveys(&[
        ("before.json".to_string(), before.clone()),
        ("after.json".to_string(), after.clone()),
    ])
    .unwrap();
    // Gen 2 -> Gen 3 is faster: nothing regressed. Backwards, the disk part's dd write
    // regressed, named with its unit and the part (`compare --fail-above` gates surveys too).
    assert!(parts.iter().all(|c| c.regressions_above(5.0).is_empty()));
    let (_, back) = report::kinds::survey::compare_surveys(&[
        ("after.json".to_string(), after),
        ("before.json".to_string(), before),
    ])
    .unwrap();
    let worse: Vec<String> = back
        .iter()
        .flat_map(|c| c.regressions_above(40.0))
        .map(|r| r.sentence())
        .collect();
    assert!(
        worse.iter().any(|w| w.starts_with(
            "dd 100M write (MB/s): 393.9 in before.json: disk nvme0n1 against 731.6 in \
             after.json: disk nvme0n1, -46.2 %"
        )),
        "{worse:#?}"
    );
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
    assert_eq!(back.kind(), report::document::DocumentKind::Survey);
    let again = SurveyDocument::of(&back, "survey.json").unwrap();
    assert_eq!(again.parts, body.parts);
    assert_eq!(again.plan, body.plan);
}

/// What a hostile document carries in every string a report shows: a terminal title and a
/// bell, a screen clearing, a line break that would start a heading or a list of its own, a
/// table's cell end and HTML.
const HOSTILE: &str =
    "x\x1b]0;TITLE\x07\x1b[2J\n# INJECTED | <img src=x onerror=alert(1)>\r\n- INJECTED";

/// `text` as a user would see it: no control character but newline (and tab), no HTML the
/// hostile strings opened, and in Markdown (`lines`) no line they started.
fn assert_contained(what: &str, text: &str, lines: bool) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control characters {bad:?}:\n{text}"
    );
    for line in text.lines().filter(|_| lines) {
        assert!(
            !line
                .trim_start_matches(['#', '-', ' ', '|'])
                .starts_with("INJECTED"),
            "{what}: a document's string began a line: {line:?}"
        );
    }
    assert!(!text.contains("<img"), "{what}: a document's HTML:\n{text}");
}

#[test]
fn a_hostile_documents_strings_stay_text_in_markdown_and_html() {
    let mut survey = fixture("survey-rpi5.json");
    let host = serde_json::json!({
        "hostname": HOSTILE, "model": HOSTILE, "serial": HOSTILE, "kernel": HOSTILE
    });
    survey["host"] = host.clone();
    survey["created"] = HOSTILE.into();
    for part in survey["parts"].as_array_mut().unwrap() {
        if let Some(doc) = part.get_mut("document").filter(|d| d.is_object()) {
            doc["host"] = host.clone();
            doc["created"] = HOSTILE.into();
            if let Some(findings) = doc.get_mut("findings").and_then(Value::as_array_mut) {
                for f in findings {
                    f["subject"] = HOSTILE.into();
                    f["message"] = HOSTILE.into();
                    f["advice"] = HOSTILE.into();
                }
            }
        }
    }
    survey["parts"][1]["id"] = format!("disk {HOSTILE}").into();
    let target = &mut survey["parts"][1]["document"]["target"];
    target["given"] = HOSTILE.into();
    target["file"] = HOSTILE.into();
    let audit = survey["parts"][0]["document"].clone();
    for (name, value) in [("survey", survey), ("audit", audit)] {
        let doc = Document::from_value(value, name).unwrap();
        let r = report::kinds::render(&doc, HOSTILE).unwrap();
        assert_contained(&format!("{name} Markdown"), &r.markdown, true);
        let html = report::html::render_with_intro(&r.html_intro, &r.summaries).unwrap();
        // In HTML a line break is a space: only the characters matter.
        assert_contained(&format!("{name} HTML"), &html, false);
        // The strings are shown, escaped: the title's ESC and BEL as text.
        assert!(r.markdown.contains("x\\x1b]0;TITLE\\x07"), "{}", r.markdown);
    }
}

/// [`survey`] with its network part run against a server and stopped at the budget's end,
/// `interrupted_doc` what it measured until then, and a loop device without a medium in the
/// audit (as every Debian machine has eight).
fn survey_with_an_interrupted_part() -> (Document, SurveyDocument) {
    let (_, mut body) = survey("rpi5-gen2.json");
    let net = body.parts.iter_mut().find(|p| p.id == "net").unwrap();
    *net = PartResult {
        status: PartStatus::Interrupted,
        reason: Some(
            "stopped at the end of the 40 s budget, 3 s into the 4 s it was given (it took 0 s \
             to stop): what it measured until then is kept"
                .into(),
        ),
        ..ran("net", PartKind::Net, fixture("net-shaped-tcp.json"))
    };
    let audit = body.parts.iter_mut().find(|p| p.id == "audit").unwrap();
    let doc = audit.document.as_mut().unwrap();
    let devices = doc["block"]["devices"].as_array_mut().unwrap();
    let mut lo = devices[0].clone();
    lo["name"] = Value::from("loop0");
    lo["size_bytes"] = Value::from(0);
    devices.insert(0, lo);
    let doc = report::document::wrap(
        report::document::DocumentKind::Survey,
        "0.1.0",
        model::system::Host::default(),
        &body,
    )
    .unwrap();
    (doc, body)
}

/// A part stopped at the budget's end measured for less time than planned: its figure
/// (93.5 Mbit/s here; a stop at the test's start reads 0 Mbit/s) stays in its own section and
/// is never the summary's or a conclusion's number; the history listing and the parts table
/// count the parts alike, in the Status column's words.
#[test]
fn an_interrupted_part_is_no_conclusion_and_the_counts_agree() {
    let (doc, body) = survey_with_an_interrupted_part();
    let (summary, conclusions) = body.judge("survey.json");
    assert!(!summary.contains("Mbit/s"), "{summary}");
    assert!(
        summary.contains("1 of 5 parts did not run to the end: net (interrupted)")
            && summary.contains(
                "What the interrupted parts measured before their stop is in their sections, \
                 and judged nowhere here"
            ),
        "{summary}"
    );
    assert!(
        !conclusions.iter().any(|c| c.evidence.starts_with("net")),
        "{conclusions:#?}"
    );
    // Its section still shows what it measured.
    let md = report::kinds::survey::markdown(&doc, &body, "survey.json");
    assert!(md.contains("\n## net\n"), "{md}");
    let (test, _) = body.listing("survey.json");
    assert_eq!(test, "survey (5 parts: 4 ran, 1 interrupted)");
    assert!(md.contains("## Parts: 4 ran, 1 interrupted\n"), "{md}");
    let rows = |status: &str| md.matches(&format!(" | {status} | ")).count();
    assert_eq!((rows("ran"), rows("interrupted")), (4, 1), "{md}");
}

/// The report of a survey reads as one document: each part's section titled by the part
/// (`## audit`, not `## audit — audit`), a network part's throughput without the disk's
/// columns (IOPS, CPU per I/O, the kernel's I/O checks: all "–"), the audit's block table
/// without the devices that have no medium (as the terminal's audit), and no "Cost" column
/// of "not measured" when no conclusion has a cost.
#[test]
fn a_survey_report_shows_each_part_as_itself() {
    let (doc, mut body) = survey_with_an_interrupted_part();
    body.parts
        .iter_mut()
        .find(|p| p.id == "net")
        .unwrap()
        .status = PartStatus::Ran;
    let md = report::kinds::survey::markdown(&doc, &body, "survey.json");
    for title in [
        "audit",
        "disk nvme0n1",
        "latency idle",
        "latency stress",
        "net",
    ] {
        assert!(md.contains(&format!("\n## {title}\n")), "{title}: {md}");
    }
    assert!(
        !md.lines()
            .any(|l| l.starts_with("## ") && l.contains(" — ")),
        "{md}"
    );
    let net = &md[md.find("\n## net\n").unwrap()..];
    let header = net.lines().find(|l| l.starts_with("| Test |")).unwrap();
    assert_eq!(
        header,
        "| Test | Measured (MB/s) | Mean (MB/s) | Spread (MB/s) | Ceiling (MB/s) | Efficiency |"
    );
    // The disk part keeps its columns.
    let disk = &md[md.find("\n## disk nvme0n1\n").unwrap()..];
    assert!(disk.contains("| IOPS |"), "{disk}");
    assert!(!md.contains("| loop0 |"), "{md}");
    assert!(md.contains("| dm-1 | disk | 1.0 MiB |"), "{md}");
    // Without the ranked findings (a link lost, a disk below its ceiling, latency added by
    // load beyond the runs' own spread), no conclusion has a cost.
    let (_, mut plain) = survey_with("rpi5-gen2.json", 83_000);
    plain.parts.retain(|p| p.kind == PartKind::Latency);
    let md = report::kinds::survey::markdown(&doc, &plain, "survey.json");
    let (_, conclusions) = plain.judge("survey.json");
    assert!(!conclusions.is_empty() && conclusions.iter().all(|c| c.cost.is_empty()));
    assert!(
        md.contains("| # | Subject | Evidence | Action |") && !md.contains("not measured"),
        "{md}"
    );
    let html = report::kinds::survey::html_intro(&doc, &plain, "survey.json");
    assert!(
        !html.contains("Cost") && !html.contains("not measured"),
        "{html}"
    );
}

/// On a terminal the survey prints aligned text like every other command, not Markdown: no
/// `#` headings, no `|` tables.
#[test]
fn a_survey_as_text_has_no_markdown() {
    let (doc, body) = survey_with_an_interrupted_part();
    let text = body.text(&report::kinds::Text {
        host: doc.envelope.host.as_ref(),
        created: doc.envelope.created.as_deref(),
        ..Default::default()
    });
    assert!(text.starts_with("headroom survey of"), "{text}");
    for l in text.lines() {
        assert!(!l.starts_with('#') && !l.starts_with('|'), "{l}\n{text}");
    }
    assert!(text.contains("\nParts: 4 ran, 1 interrupted\n"), "{text}");
    assert!(
        text.contains("\nConclusions, by what they cost:\n"),
        "{text}"
    );
    // Every part's own section follows, each under its title.
    for title in [
        "audit",
        "disk nvme0n1",
        "latency idle",
        "latency stress",
        "net",
    ] {
        assert!(text.contains(&format!("\n{title}\n")), "{title}: {text}");
    }
}
