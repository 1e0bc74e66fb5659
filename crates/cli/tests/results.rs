//! Result documents end to end: every command's JSON reads back into the same document;
//! `report`, `compare` and `history` on fixed documents; bad input gets one sentence.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

mod common;

use common::*;
use predicates::prelude::*;
use report::Document;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn result(name: &str) -> PathBuf {
    fixtures().join("results").join(name)
}

fn json_of(args: &[&str]) -> String {
    let out = headroom().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_commands_json_reads_back_into_the_same_document() {
    let tree = fixtures().join("sysfs/sd-nvme-downgraded-sata");
    let tree = tree.to_str().unwrap();
    for (kind, args) in [
        ("audit", vec!["audit", "--json", "--root", tree]),
        ("path", vec!["path", "--json", "--root", tree, "/data/x"]),
        (
            "ceiling",
            vec!["ceiling", "pcie", "--gen", "2,3", "--lanes", "1", "--json"],
        ),
        (
            "ceiling",
            vec!["ceiling", "usb", "--speed", "480", "--json"],
        ),
    ] {
        let text = json_of(&args);
        let doc = Document::parse(&text, kind).unwrap();
        assert_eq!(doc.kind(), kind);
        let env = &doc.envelope;
        assert_eq!(env.schema_version, 1);
        assert_eq!(env.tool.as_ref().unwrap().name, "headroom");
        assert!(env.created.as_ref().unwrap().ends_with('Z'));
        let original: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc.to_value(), original, "{kind}");
        assert_eq!(
            doc.to_json_pretty(),
            text,
            "{kind}: the same text, key order too"
        );
    }
}

#[test]
fn report_md_has_the_seed_style_tables() {
    headroom()
        .args(["report", "--md"])
        .arg(result("rpi5-gen2.json"))
        .arg(result("latency-2-threads.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "| dd 100M write | 393.9 | 393.9 | – | 4 | 440.3 | 89.5 % |",
        ))
        .stdout(predicate::str::contains(
            "| Thread | CPU | Samples | Min (us) | Avg (us) | p99 (us) | p99.9 (us) | Max (us) |",
        ))
        // Whole us truncated as cyclictest prints them (979.x us is 979).
        .stdout(predicate::str::contains(
            "| 0 | ~1 | 1999 | 4 | 27.2 | 199 | 450 | 979 | 0 | 0 |",
        ));
}

#[test]
fn report_html_writes_one_self_contained_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    headroom()
        .arg("report")
        .arg(result("disk-peak.json"))
        .arg(result("latency-2-threads.json"))
        .arg("--html")
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(html.matches("<svg").count(), 2, "throughput and latency");
    assert!(!html.contains("<script") && !html.contains("src="));
}

#[test]
fn compare_prints_the_change_and_fails_above_a_regression() {
    let (a, b) = (result("rpi5-gen2.json"), result("rpi5-gen3.json"));
    headroom()
        .arg("compare")
        .args([&a, &b])
        .args(["--fail-above", "5"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "| dd 100M write (MB/s) | 393.9 | 731.6 | +85.7 % |",
        ))
        .stdout(predicate::str::contains("5 GT/s x1 (capable 16 GT/s x4)"));
    headroom()
        .arg("compare")
        .args([&b, &a])
        .args(["--fail-above", "5"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("regression: dd 100M write"))
        .stderr(predicate::str::contains("-46.2 %"));
}

#[test]
fn bad_input_gets_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(result("rpi5-gen2.json")).unwrap();
    let truncated = dir.path().join("cut.json");
    std::fs::write(&truncated, &text[..text.len() / 3]).unwrap();
    headroom()
        .arg("report")
        .arg(&truncated)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cut.json ends in the middle of its JSON",
        ))
        .stderr(predicate::str::contains("panicked").not());

    let future = dir.path().join("future.json");
    std::fs::write(
        &future,
        text.replacen("\"schema_version\": 1", "\"schema_version\": 7", 1),
    )
    .unwrap();
    headroom()
        .arg("compare")
        .arg(&future)
        .arg(result("rpi5-gen3.json"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "future.json has schema version 7, newer than the 1 this headroom",
        ));

    headroom()
        .arg("compare")
        .arg(result("rpi5-gen2.json"))
        .arg(result("latency-2-threads.json"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "rpi5-gen2.json is a result of kind `disk` and ",
        ))
        .stderr(predicate::str::contains(
            "of kind `latency`: compare runs of the same kind",
        ));

    // One bad file among good ones: the report is still made, the exit says it was not all.
    headroom()
        .arg("report")
        .arg(&truncated)
        .arg(result("rpi5-gen3.json"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("731.6"));
}

#[test]
fn history_saves_lists_shows_and_compares_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    headroom()
        .args(["history", "add", "--db"])
        .arg(&db)
        .arg(result("rpi5-gen2.json"))
        .arg(result("rpi5-gen3.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains("saved as #2"));
    headroom()
        .args(["history", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("dd 100M write: 731.6 MB/s"))
        .stdout(predicate::str::contains("2026-11-20T10:30:00Z"));
    let shown = json_of(&[
        "history",
        "show",
        "2",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let original = std::fs::read_to_string(result("rpi5-gen3.json")).unwrap();
    let (shown, original): (Value, Value) = (
        serde_json::from_str(&shown).unwrap(),
        serde_json::from_str(&original).unwrap(),
    );
    assert_eq!(shown, original, "the saved document is the file");
    headroom()
        .args(["compare", "1", "#2", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("+85.7 %"));
    headroom()
        .args(["history", "show", "9", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("there is no run 9 in the history"));
}

#[test]
fn a_foreign_history_file_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "not a database\n").unwrap();
    headroom()
        .args(["history", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is not a headroom history"));
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database\n");
}
