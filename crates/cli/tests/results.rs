//! Result documents end to end: every command's JSON reads back into the same document;
//! `report`, `compare` and `history` on fixed documents; bad input gets one sentence.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use predicates::prelude::*;
use report::Document;
use serde_json::Value;
use std::path::PathBuf;
use testsupport::cmd::*;

fn fixtures() -> PathBuf {
    testsupport::fixtures::own("")
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
        assert_eq!(doc.kind().as_str(), kind);
        let env = &doc.envelope;
        assert_eq!(env.schema_version, 2);
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
fn report_md_and_html_take_an_optional_file_alike() {
    // `report run.json --md survey.md` printed the whole report on stdout,
    // then "error: survey.md: no such file, and not a history id", exit 1, and no file.
    let dir = tempfile::tempdir().unwrap();
    let run = result("rpi5-gen3.json");
    let on_stdout = stdout_of(headroom().arg("report").arg(&run));
    let md = dir.path().join("survey.md");
    let out = output_ok(headroom().arg("report").arg(&run).arg("--md").arg(&md));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read(&md).unwrap(),
        on_stdout,
        "the file holds what stdout shows"
    );
    // --html alike: a FILE, or stdout without one.
    let html = dir.path().join("r.html");
    output_ok(headroom().arg("report").arg(&run).arg("--html").arg(&html));
    let page = stdout_of(headroom().arg("report").arg(&run).arg("--html"));
    assert_eq!(std::fs::read(&html).unwrap(), page);
    assert!(String::from_utf8_lossy(&page).starts_with("<!DOCTYPE html>"));
    // A document right after the flag is an input, never written over.
    let before = std::fs::read(&run).unwrap();
    let read = stdout_of(headroom().args(["report", "--md"]).arg(&run));
    assert_eq!(read, on_stdout);
    assert_eq!(std::fs::read(&run).unwrap(), before);
    // The output is checked before anything is read or printed.
    let out = headroom()
        .arg("report")
        .arg(&run)
        .arg("--md")
        .arg(dir.path().join("no/such/dir/r.md"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "nothing printed");
    assert!(
        err.contains("--md ") && err.contains("does not exist"),
        "{err}"
    );
    // A bad input among good ones is named first, the file still holds the others.
    let partial = dir.path().join("partial.md");
    let out = headroom()
        .arg("report")
        .arg("missing.json")
        .arg(&run)
        .arg("--md")
        .arg(&partial)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("missing.json: no such file, and not a history id"));
    assert_eq!(std::fs::read(&partial).unwrap(), on_stdout);
}

#[test]
fn history_show_prints_what_report_prints_for_every_kind() {
    // `history show N` of a survey printed a title and the kernel, and the
    // listing said "0 findings" beside its conclusions.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let names = [
        "rpi5-gen2.json",
        "disk-peak.json",
        "latency-2-threads.json",
        "audit-nvme-downgraded.json",
        "net-shaped-tcp.json",
        "survey-rpi5.json",
    ];
    for (i, name) in names.iter().enumerate() {
        output_ok(
            headroom()
                .args(["history", "add", "--db"])
                .arg(&db)
                .arg(result(name)),
        );
        let id = (i + 1).to_string();
        let shown = stdout_of(headroom().args(["history", "show", &id, "--db"]).arg(&db));
        let reported = stdout_of(headroom().args(["report", &id, "--db"]).arg(&db));
        assert_eq!(
            String::from_utf8_lossy(&shown),
            String::from_utf8_lossy(&reported),
            "{name}"
        );
    }
    let shown = String::from_utf8(stdout_of(
        headroom().args(["history", "show", "6", "--db"]).arg(&db),
    ))
    .unwrap();
    assert!(
        shown.contains("## Conclusions, by what they cost") && shown.contains("## disk nvme0n1\n"),
        "{shown}"
    );
    let list = String::from_utf8(stdout_of(headroom().args(["history", "--db"]).arg(&db))).unwrap();
    let survey = list.lines().find(|l| l.starts_with("6 ")).unwrap();
    assert!(
        survey.contains("survey (5 parts: 4 ran, 1 not run)") && survey.ends_with("5 conclusions"),
        "{list}"
    );
}

#[test]
fn compare_shows_a_percentile_above_the_histogram_limit_as_its_bound() {
    // The run printed ">200" for a p99 above its histogram's limit, compare
    // showed "–".
    let dir = tempfile::tempdir().unwrap();
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(result("latency-2-threads.json")).unwrap())
            .unwrap();
    testsupport::latency::cut_histograms(&mut v, 200);
    let cut = dir.path().join("h200.json");
    std::fs::write(&cut, v.to_string()).unwrap();
    let md = String::from_utf8(stdout_of(headroom().arg("report").arg(&cut))).unwrap();
    assert!(
        md.contains("| 1 | ~0 | 1333 | 5 | 43.6 | >200 | >200 |"),
        "{md}"
    );
    let cmp = String::from_utf8(stdout_of(
        headroom()
            .arg("compare")
            .arg(result("latency-2-threads.json"))
            .arg(&cut),
    ))
    .unwrap();
    assert!(
        cmp.contains("| thread 1 p99 (us) | 275 | >200 | – |"),
        "{cmp}"
    );
    assert!(
        cmp.contains("| thread 0 p99.9 (us) | 450 | >200 | – |"),
        "{cmp}"
    );
}

#[test]
fn a_survey_report_gives_every_conclusion_an_action() {
    // The Action column read "–" on every conclusion of a survey.
    let md = String::from_utf8(stdout_of(
        headroom().arg("report").arg(result("survey-rpi5.json")),
    ))
    .unwrap();
    let start = md.find("## Conclusions, by what they cost").unwrap();
    let end = start + md[start..].find("## Parts").unwrap();
    let rows: Vec<&str> = md[start..end]
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| #") && !l.starts_with("| ---"))
        .collect();
    assert_eq!(rows.len(), 5, "{md}");
    for r in rows {
        assert!(!r.ends_with("| – |"), "no action: {r}");
    }
    // Small devices in the unit they reach, as the terminal shows them.
    assert!(md.contains("| dm-1 | disk | 1.0 MiB |"), "{md}");
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
        .stderr(predicate::str::contains(
            "headroom: regression: dd 100M write (MB/s): 393.9 in ",
        ))
        .stderr(predicate::str::contains("-46.2 % (limit 5 %)"));
}

#[test]
fn fail_above_never_fails_on_a_counter() {
    // A run 15 % faster "regressed: interrupts of 0000:00:02.0 ... +14.0 %"
    // (exit 1). The interrupts are shown, only measured results gate the exit code.
    let dir = tempfile::tempdir().unwrap();
    let with_irq = |name: &str, per_second: f64| {
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(result(name)).unwrap()).unwrap();
        v["counters"] = serde_json::json!({"interrupts": [{"device": "0000:00:02.0",
            "irqs": [36], "names": ["virtio1-req.0"], "count": 1000,
            "per_second": per_second, "seconds": 10.0}]});
        let file = dir.path().join(name);
        std::fs::write(&file, v.to_string()).unwrap();
        file
    };
    let slow = with_irq("rpi5-gen2.json", 1000.0);
    let fast = with_irq("rpi5-gen3.json", 1140.0);
    headroom()
        .arg("compare")
        .args([&slow, &fast])
        .args(["--fail-above", "5"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "| interrupts of 0000:00:02.0 (/s) | 1000.00 | 1140.00 | +14.0 % |",
        ))
        .stderr(predicate::str::contains("regression").not());
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
            "future.json has schema version 7, newer than the 2 this headroom",
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

/// Listing or showing a history that does not exist creates nothing: reading never creates.
#[test]
fn reading_a_history_that_does_not_exist_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nonexistent/dir/h.sqlite");
    headroom()
        .args(["history", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("no runs saved in"));
    let listed = json_of(&["history", "--json", "--db", db.to_str().unwrap()]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["runs"], serde_json::json!([]));
    for id in ["1", "#1"] {
        headroom()
            .args(["history", "show", id, "--db"])
            .arg(&db)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("there is no history at"));
        headroom()
            .args(["report", id, "--db"])
            .arg(&db)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("there is no history at"));
    }
    assert!(
        !dir.path().join("nonexistent").exists(),
        "a read created the directory"
    );
}

/// `--db empty.txt`: a 0-byte text file is not turned into a database, by a listing or by
/// saving; one sentence says why.
#[test]
fn an_empty_text_file_is_not_made_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.txt");
    std::fs::write(&db, "").unwrap();
    for args in [
        vec!["history"],
        vec!["history", "add", result("rpi5-gen2.json").to_str().unwrap()],
    ] {
        let err = fails_saying(
            headroom().args(&args).arg("--db").arg(&db),
            1,
            "is not a headroom history (it is an empty file, not an SQLite database)",
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
}

/// `history add a.json a.json` stores one run and says the second is the same document;
/// `--json` prints the ids as JSON; `history show '#1'` reads ids as report and compare do.
#[test]
fn the_same_document_is_saved_once_and_ids_read_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let a = result("rpi5-gen2.json");
    headroom()
        .args(["history", "add", "--db"])
        .arg(&db)
        .arg(&a)
        .arg(&a)
        .assert()
        .success()
        .stdout(predicate::str::contains("rpi5-gen2.json: saved as #1\n"))
        .stdout(predicate::str::contains(
            "rpi5-gen2.json: already saved as #1 (the same document); not stored again",
        ));
    let added = json_of(&[
        "history",
        "add",
        "--json",
        "--db",
        db.to_str().unwrap(),
        a.to_str().unwrap(),
        result("rpi5-gen3.json").to_str().unwrap(),
    ]);
    let added: Value = serde_json::from_str(&added).unwrap();
    assert_eq!(added["kind"], "history");
    assert_eq!(added["added"][0]["id"], 1);
    assert_eq!(added["added"][0]["new"], false);
    assert_eq!(added["added"][1]["id"], 2);
    assert_eq!(added["added"][1]["new"], true);
    let listed: Value = serde_json::from_str(&json_of(&[
        "history",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2);
    for id in ["2", "#2"] {
        headroom()
            .args(["history", "show", id, "--db"])
            .arg(&db)
            .assert()
            .success()
            .stdout(predicate::str::contains("731.6"));
    }
    headroom()
        .args(["history", "show", "two", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`two` is not a run id"));
}

/// A run stopped by Ctrl-C is saved with `"interrupted": true`; the listing says so.
#[test]
fn interrupted_runs_are_marked_in_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(result("rpi5-gen3.json")).unwrap()).unwrap();
    doc["interrupted"] = Value::Bool(true);
    let stopped = dir.path().join("stopped.json");
    std::fs::write(&stopped, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    headroom()
        .args(["history", "add", "--db"])
        .arg(&db)
        .arg(result("rpi5-gen2.json"))
        .arg(&stopped)
        .assert()
        .success();
    let out = headroom()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(!lines[1].contains("interrupted"), "{text}");
    assert!(lines[2].ends_with("731.6 MB/s (interrupted)"), "{text}");
}

/// A history on a read-only filesystem can be listed and shown (SQLite said "unable to open
/// database file", code 14, when it opened read-write). Needs a tmpfs mount: as root, or
/// skipped with a note.
#[test]
fn a_history_on_a_read_only_filesystem_can_be_listed() {
    testsupport::mount::on_tmpfs(|mnt| {
        let db = mnt.join("h.sqlite");
        headroom()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg(result("rpi5-gen3.json"))
            .assert()
            .success();
        assert!(
            testsupport::mount::remount_read_only(mnt),
            "remount read-only"
        );
        headroom()
            .args(["history", "--db"])
            .arg(&db)
            .assert()
            .success()
            .stdout(predicate::str::contains("dd 100M write: 731.6 MB/s"));
        headroom()
            .args(["compare", "#1", "1", "--db"])
            .arg(&db)
            .assert()
            .success();
        // Saving there is refused with the reason, not a bare SQLite code.
        headroom()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg(result("rpi5-gen2.json"))
            .assert()
            .code(1)
            .stderr(format!(
                "headroom: error: cannot save in the history {}: Read-only file system (os \
                 error 30); give --db FILE on a writable filesystem\n",
                db.display()
            ));
    });
}

/// A disk document without a field its producer always wrote is refused by `report` and
/// `history add` in one sentence naming the file and the field's place, once; the other
/// documents of the same command are still reported or saved.
#[test]
fn a_document_missing_a_field_is_named_with_its_place_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(result("rpi5-gen3.json")).unwrap()).unwrap();
    v["tests"][0]["runs"][0]
        .as_object_mut()
        .unwrap()
        .remove("iops");
    let bad = dir.path().join("edited.json");
    // As headroom writes it (pretty JSON): the place is the line where the test ends.
    let text = serde_json::to_string_pretty(&v).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let tests = lines.iter().position(|l| *l == "  \"tests\": [").unwrap();
    let end = tests
        + lines[tests..]
            .iter()
            .position(|l| l.starts_with("    }"))
            .unwrap();
    std::fs::write(&bad, &text).unwrap();
    let sentence = format!(
        "headroom: error: {}: the `disk` document does not have the expected fields \
         (missing field `iops`; the test ends at line {} column 5)\n",
        bad.display(),
        end + 1
    );
    let db = dir.path().join("h.sqlite");
    headroom()
        .args(["history", "add", "--db"])
        .arg(&db)
        .arg(&bad)
        .arg(result("rpi5-gen2.json"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("rpi5-gen2.json: saved as #1\n"))
        .stderr(sentence.clone());
    headroom()
        .args(["report", "--md"])
        .arg(&bad)
        .arg(result("rpi5-gen2.json"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("dd 100M write"))
        .stderr(predicate::str::starts_with(sentence));
}

/// The atomic writer's temporary file had a name anyone could predict
/// (`.NAME.PID.tmp`, the pid from /proc/sys/kernel/ns_last_pid) and was opened following
/// links. As user nobody, links are planted under the names of the next 3,000 pids in a
/// directory nobody owns, pointing to a file of root's; root then writes a result there
/// with `--output`: the file of root's is untouched and the result is a file of its own.
#[test]
fn links_planted_for_the_temporary_file_do_not_make_root_overwrite_their_target() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    if !testsupport::process::is_root() {
        testsupport::skip::skip("needs root, to plant the links as user nobody");
        return;
    }
    let nobody = 65534;
    let spray = tempfile::Builder::new()
        .prefix("headroom-spray")
        .tempdir_in("/tmp")
        .unwrap();
    std::os::unix::fs::chown(spray.path(), Some(nobody), Some(nobody)).unwrap();
    let safe = tempfile::tempdir().unwrap();
    let victim = safe.path().join("victim");
    std::fs::write(&victim, "root's data\n").unwrap();
    let out = spray.path().join("out.json");
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).unwrap();
    let target = c(&victim);
    let links: Vec<CString> = (last + 1..=last + 3000)
        .map(|pid| c(&spray.path().join(format!(".out.json.{pid}.tmp"))))
        .collect();
    // SAFETY: between fork and exec the child makes only system calls (setgroups, setgid,
    // setuid, symlink) on memory prepared before the fork.
    let planted = unsafe {
        std::process::Command::new("/bin/true")
            .pre_exec(move || {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(nobody) != 0
                    || libc::setuid(nobody) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                for l in &links {
                    if libc::symlink(target.as_ptr(), l.as_ptr()) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            })
            .status()
    };
    assert!(planted.unwrap().success());
    assert_eq!(std::fs::read_dir(spray.path()).unwrap().count(), 3000);
    output_ok(
        headroom()
            .args([
                "bench", "mem", "--size", "64K", "--width", "64", "--op", "load",
            ])
            .args(["--max-sweeps", "1", "--no-copy", "--no-save", "--output"])
            .arg(&out),
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's data\n");
    assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
    assert_eq!(
        Document::read(&out).unwrap().kind(),
        report::document::DocumentKind::Mmio
    );
}

/// `--db` in a directory that does not exist is one sentence and creates
/// nothing (it made every missing parent, as root); the default history's directory is made,
/// readable by its user only (0700). The atomic writer's rule for SQLite's journal beside the
/// history (`-wal`, `-shm`, fixed names): a directory every user can write is refused.
#[test]
fn a_history_is_created_only_where_its_directory_exists_and_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing/h.sqlite");
    let err = fails_saying(
        headroom()
            .args(["history", "add", "--db"])
            .arg(&missing)
            .arg(result("rpi5-gen2.json")),
        1,
        &format!(
            "the directory {} does not exist",
            dir.path().join("missing").display()
        ),
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!dir.path().join("missing").exists(), "a directory was made");
    // The default: $XDG_DATA_HOME/headroom, made with its missing parents, 0700.
    let xdg = dir.path().join("data");
    output_ok(
        headroom()
            .env("XDG_DATA_HOME", &xdg)
            .args(["history", "add"])
            .arg(result("rpi5-gen2.json")),
    );
    for d in [&xdg, &xdg.join("headroom")] {
        let mode = std::fs::metadata(d).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", d.display());
    }
    assert!(xdg.join("headroom/history.sqlite").is_file());
    // A directory every user can write (as /tmp): refused for saving and for reading.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    fails_saying(
        headroom()
            .args(["history", "add", "--db"])
            .arg(open.join("h.sqlite"))
            .arg(result("rpi5-gen2.json")),
        1,
        "which every user can write: they could put links where SQLite keeps the history's \
         journal (h.sqlite-wal, h.sqlite-shm)",
    );
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
}

/// `history --db FILE` on a file made to look like a history whose `runs` is a view that
/// counts without end: refused at once with what is wrong (it listed for ever, its memory
/// growing), and the file is left as it was.
#[test]
fn a_history_whose_runs_is_an_endless_view_is_refused_at_once() {
    use testsupport::process::{output_within, spawn_piped};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "PRAGMA application_id = 1751413357;
         CREATE VIEW runs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
         SELECT i AS id, NULL AS created, 'h' AS host, 'disk' AS kind, NULL AS target,
                't' AS test, 'x' AS headline, '{}' AS document, NULL AS machine_id,
                NULL AS model, NULL AS serial FROM n;",
    )
    .unwrap();
    drop(c);
    let before = std::fs::read(&db).unwrap();
    let mut child = spawn_piped(headroom_process().args(["history", "--db"]).arg(&db));
    let out = output_within(&mut child, std::time::Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not a headroom history (its `runs` is a view"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// Root running with another user's XDG_DATA_HOME (`sudo -E`) saves nothing through that
/// user's directories: a link they put at `$XDG_DATA_HOME/headroom` (here to a root-owned
/// directory standing for /etc/cron.d) would make root create the history there. Refused
/// naming the component the user owns; nothing is created at the link's target.
#[test]
fn the_default_history_is_never_reached_through_another_users_names() {
    let shared = testsupport::process::sticky_dir();
    let data = shared.path().join("data");
    let cron = tempfile::tempdir().unwrap();
    for (program, args) in [
        ("/usr/bin/mkdir", vec![data.to_str().unwrap().to_string()]),
        (
            "/usr/bin/ln",
            vec![
                "-s".into(),
                cron.path().to_str().unwrap().into(),
                data.join("headroom").to_str().unwrap().into(),
            ],
        ),
    ] {
        let Some(mut c) = testsupport::process::as_nobody(std::path::Path::new(program)) else {
            return;
        };
        assert!(
            c.args(&args).status().unwrap().success(),
            "{program} {args:?}"
        );
    }
    fails_saying(
        headroom()
            .env("XDG_DATA_HOME", &data)
            .args(["history", "add"])
            .arg(result("rpi5-gen2.json")),
        1,
        &format!(
            "is reached through {}, which is a directory that user 65534 owns",
            data.display()
        ),
    );
    assert_eq!(std::fs::read_dir(cron.path()).unwrap().count(), 0);
    // Listing reads nothing through them either.
    fails_saying(
        headroom().env("XDG_DATA_HOME", &data).args(["history"]),
        1,
        "which is a directory that user 65534 owns",
    );
}

/// Every file a user names as input is opened by one routine: a FIFO, a device or a
/// directory in its place is refused at once with one sentence naming it, never read (a FIFO
/// blocked for ever waiting for a writer, /dev/zero never ends). The walk covers each input:
/// the history (`--db`), result documents (`report`, `compare`, `history add`), `audit
/// --expect`'s manifest, `audit --lspci`'s dump and `bench net`'s key files.
#[test]
fn every_named_input_refuses_fifos_devices_and_directories_at_once() {
    use testsupport::process::{output_within, spawn_piped};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let db = dir.path().join("h.sqlite");
    let f = fifo.to_str().unwrap();
    let gen2 = result("rpi5-gen2.json");
    let gen2 = gen2.to_str().unwrap();
    let d = db.to_str().unwrap();
    let here = dir.path().to_str().unwrap();
    let users = dir.path().join("users.csv");
    std::fs::write(&users, "# nobody yet\n").unwrap();
    let u = users.to_str().unwrap();
    let port = testsupport::net::free_port().to_string();
    let fifo_said = "is a FIFO (a named pipe), not a file";
    for (args, sentence, code) in [
        (
            vec!["history", "--db", f],
            "is not a headroom history (it is a FIFO (a named pipe), not a file)",
            1,
        ),
        (
            vec!["history", "add", "--db", f, gen2],
            "is not a headroom history (it is a FIFO (a named pipe), not a file)",
            1,
        ),
        (
            vec!["history", "add", "--db", d, f],
            "is a FIFO (a named pipe), not a file: give a result file",
            1,
        ),
        (
            vec!["report", f],
            "is a FIFO (a named pipe), not a file: give a result file",
            1,
        ),
        (vec!["compare", f, gen2], fifo_said, 1),
        (vec!["compare", gen2, f], fifo_said, 1),
        (
            vec!["report", "/dev/null"],
            "/dev/null is a device, not a file",
            1,
        ),
        (vec!["report", here], "is a directory, not a file", 1),
        (
            vec!["audit", "--expect", f],
            "is a FIFO (a named pipe): give the manifest file (TOML)",
            2,
        ),
        (
            vec!["audit", "--expect", "/dev/zero"],
            "--expect /dev/zero is a device: give the manifest file (TOML)",
            2,
        ),
        (
            vec!["audit", "--lspci", f],
            "is a FIFO (a named pipe), not a file: give the file `lspci -xxx` printed",
            1,
        ),
        (
            vec!["audit", "--lspci", "/dev/zero"],
            "the lspci dump /dev/zero is a device, not a file",
            1,
        ),
        (
            vec![
                "bench",
                "net",
                "-s",
                "-p",
                &port,
                "--rsa-private-key-path",
                f,
                "--authorized-users-path",
                u,
            ],
            "the RSA private key",
            2,
        ),
    ] {
        let mut c = testsupport::cmd::headroom_process();
        let out = output_within(
            &mut spawn_piped(c.args(&args)),
            std::time::Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(sentence), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args[0] == "bench" {
            assert!(err.contains(fifo_said), "{args:?}: {err}");
        }
    }
    // The client's public key too, before anything is sent.
    let mut c = testsupport::cmd::headroom_process();
    c.env("IPERF3_PASSWORD", "rossi").args([
        "bench",
        "net",
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "--username",
        "mario",
        "--rsa-public-key-path",
        f,
    ]);
    let out = output_within(&mut spawn_piped(&mut c), std::time::Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("the RSA public key {f} {fifo_said}")),
        "{err}"
    );
    assert_ne!(out.status.code(), Some(0), "{err}");
    // Nothing was stored from the FIFO.
    let listed = json_of(&["history", "--json", "--db", d]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["runs"], serde_json::json!([]));
}

/// A document past the size bound is refused with a sentence naming the
/// bound (a 100 MB one took 57 s and 2 GB); a document whose kind does not fit its body is
/// refused (a disk run relabelled `audit` read as an audit with no findings), and one of a
/// kind headroom never writes is not stored by `history add`.
#[test]
fn documents_too_large_or_of_the_wrong_kind_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(report::document::MAX_DOCUMENT_BYTES + 1)
        .unwrap();
    let err = fails_saying(
        headroom().arg("report").arg(&huge),
        1,
        "huge.json is 64 MiB, above the 64 MiB a headroom document can be",
    );
    assert!(!err.contains("not JSON"), "{err}");
    let text = std::fs::read_to_string(result("rpi5-gen3.json")).unwrap();
    let relabel = |kind: &str| {
        let p = dir.path().join(format!("{kind}.json"));
        std::fs::write(
            &p,
            text.replacen("\"kind\": \"disk\"", &format!("\"kind\": \"{kind}\""), 1),
        )
        .unwrap();
        p
    };
    fails_saying(
        headroom().arg("report").arg(relabel("audit")),
        1,
        "audit.json says it is of kind `audit`, but it lacks `pci`, which every audit \
         document has (it has parameters, system, target, ceiling, tests, notes, path)",
    );
    let db = dir.path().join("h.sqlite");
    fails_saying(
        headroom()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg(relabel("nonsense")),
        1,
        "its kind `nonsense` is none headroom writes",
    );
    let listed = json_of(&["history", "--json", "--db", db.to_str().unwrap()]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["runs"], serde_json::json!([]), "nothing was stored");
}

/// One run whose stored document is damaged (a byte changed on disk)
/// made `history` fail with "malformed JSON" naming no run. The others are listed, the
/// damaged one is named with what is wrong, and `history show` of it says so.
#[test]
fn a_damaged_run_is_named_and_the_others_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    output_ok(
        headroom()
            .args(["history", "add", "--db"])
            .arg(&db)
            .arg(result("rpi5-gen2.json"))
            .arg(result("rpi5-gen3.json"))
            .arg(result("latency-2-threads.json")),
    );
    // Run 2's document (rpi5-gen3's latency) with a comma made a semicolon, in the file.
    let mut bytes = std::fs::read(&db).unwrap();
    let needle = b"\"min_ns\": 140465360,";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the document is in the file as text");
    bytes[at + needle.len() - 1] = b';';
    std::fs::write(&db, &bytes).unwrap();
    let out = headroom()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("dd 100M write: 393.9 MB/s"), "{stdout}");
    assert!(stdout.contains("latency (2 threads)"), "{stdout}");
    assert!(stdout.contains("damaged"), "{stdout}");
    let named = format!(
        "run 2 in the history {} is damaged: its document is not valid JSON (it breaks at \
         character",
        db.display()
    );
    assert!(stderr.contains(&named), "{stderr}");
    assert!(!stderr.contains("malformed"), "{stderr}");
    fails_saying(
        headroom().args(["history", "show", "2", "--db"]).arg(&db),
        1,
        &named,
    );
    output_ok(headroom().args(["history", "show", "3", "--db"]).arg(&db));
}

/// `bench mem`, `bench mmio` and `bench latency` (and `bench net`) checked
/// `--output` only after their run, which was then lost; every benchmark checks it first, as
/// `bench disk` did: exit 2 at once, nothing measured.
#[test]
fn every_benchmark_checks_its_output_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bar = dir.path().join("bar.bin");
    std::fs::write(&bar, vec![0u8; 1 << 20]).unwrap();
    let out = dir.path().join("missing/run.json");
    let out = out.to_str().unwrap();
    let bar = bar.to_str().unwrap();
    let sentence = format!(
        "--output {out}: the directory {} does not exist",
        dir.path().join("missing").display()
    );
    for args in [
        vec!["bench", "mem", "--duration", "5s", "--output", out],
        vec!["bench", "mmio", bar, "--duration", "5s", "--output", out],
        vec!["bench", "latency", "-D", "5s", "--output", out],
        vec!["bench", "net", "127.0.0.1", "-t", "5", "--output", out],
        vec![
            "bench",
            "disk",
            dir.path().to_str().unwrap(),
            "--output",
            out,
        ],
    ] {
        let started = std::time::Instant::now();
        let o = headroom().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&sentence), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} measured");
        // Well under the 5 s the run would take (a bound, not a timing).
        assert!(started.elapsed().as_secs() < 5, "{args:?} ran");
    }
    // cyclictest's --json=FILE is checked first too, named by its flag.
    let o = headroom()
        .args(["bench", "latency", "-D", "5s", &format!("--json={out}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&sentence.replace("--output", "--json")),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// A directory given where a file is written was answered with
/// "e.g. DIR/run.json" whatever the flag, also for `--md` and `--html`: the example is a
/// name of the kind the flag writes.
#[test]
fn a_directory_for_a_file_gets_an_example_of_the_flags_kind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let gen2 = result("rpi5-gen2.json");
    let gen2 = gen2.to_str().unwrap();
    for (args, example) in [
        (vec!["report", "--md", d, gen2], "report.md"),
        (vec!["report", "--html", d, gen2], "report.html"),
        (vec!["survey", "--quick", "--md", d], "report.md"),
        (vec!["survey", "--quick", "--html", d], "report.html"),
        (vec!["survey", "--quick", "--output", d], "run.json"),
        (vec!["bench", "mem", "--output", d], "run.json"),
    ] {
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--quick");
        let sentence = format!(
            "{} {d} is a directory: give a file name, e.g. {}",
            flag.unwrap(),
            dir.path().join(example).display()
        );
        let err = fails_saying(headroom().args(&args), 2, &sentence);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}
