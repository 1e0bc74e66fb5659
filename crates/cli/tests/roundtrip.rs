//! The round trip: each kind of document a command produces (`bench disk --engine
//! null`, a short `bench latency`, `audit --root FIXTURE`, `path`) is read back by `report`
//! (Markdown and HTML) and `compare`, which show every value the producer wrote and the same
//! numbers the terminal showed.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::path::{Path, PathBuf};
use testsupport::cmd::*;

fn tree(name: &str) -> PathBuf {
    testsupport::fixtures::own(&format!("sysfs/{name}"))
}

/// Run `args`, which must succeed; its stdout.
fn stdout_of(args: &[&str]) -> String {
    let out = headroom().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `doc` written to `dir/name`; its path as a string.
fn save(dir: &Path, name: &str, doc: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

/// The cells of the first Markdown table row whose first cell is `first`.
fn md_row(md: &str, first: &str) -> Vec<String> {
    md.lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .find(|cells| cells[0] == first)
        .unwrap_or_else(|| panic!("no row `{first}` in:\n{md}"))
}

/// `report --md` and `report --html` of `file`: (Markdown, HTML).
fn reports(dir: &Path, file: &str) -> (String, String) {
    let md = stdout_of(&["report", "--md", file]);
    let html_file = dir.join(format!(
        "{}.html",
        Path::new(file).file_name().unwrap().to_str().unwrap()
    ));
    stdout_of(&["report", file, "--html", html_file.to_str().unwrap()]);
    (md, std::fs::read_to_string(html_file).unwrap())
}

/// Text as the HTML report escapes it.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Every string in `values` is in the Markdown and in the HTML.
fn shown(md: &str, html: &str, values: &[String]) {
    for v in values {
        assert!(md.contains(v.as_str()), "Markdown lacks `{v}`:\n{md}");
        assert!(html.contains(&esc(v)), "HTML lacks `{v}`");
    }
}

/// The context table (`| key | value |` rows) has a value for every key: no "–".
fn context_complete(md: &str) {
    let start = md.find("| Context | Value |").unwrap();
    for line in md[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
    {
        assert!(
            !line.contains("| – |"),
            "a context fact without its value: {line}"
        );
    }
}

/// Every field the report's view `V` reads is in `doc` (the producer wrote it), except
/// `absent`, which the producer leaves out when it has no value: a field renamed in a
/// producer fails here, where the report would print "–".
fn reads_every_field<V: serde::de::DeserializeOwned + serde::Serialize>(
    doc: &Value,
    absent: &[&str],
) {
    let unread = report::views::unread_fields::<V>(doc).unwrap();
    assert_eq!(
        unread,
        absent,
        "fields {} reads that the document does not have",
        std::any::type_name::<V>()
    );
}

fn us1(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

#[test]
fn bench_disk_null_reads_back_with_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let doc = json_of(
        headroom()
            .args([
                "bench",
                "disk",
                "--engine",
                "null",
                "--no-save",
                "--json",
                "--size",
                "8M",
                "--runtime",
                "200ms",
                "--rw",
                "read",
                "--bs",
                "64k",
                "--qd",
                "4",
            ])
            .arg(&target),
    );
    reads_every_field::<report::kinds::disk::DiskDocument>(&doc, &[]);
    // A disk run has notes, its path and its findings (report::kinds::disk::findings).
    reads_every_field::<report::views::CommonView>(&doc, &[]);
    let file = save(dir.path(), "disk.json", &doc);
    let (md, html) = reports(dir.path(), &file);
    context_complete(&md);
    let t = &doc["tests"][0];
    let run = &t["runs"][t["best_run"].as_u64().unwrap() as usize];
    let name = format!("{} read", t["spec"]["label"].as_str().unwrap());
    // Throughput: the headline MB/s and IOPS of the best run.
    let row = md_row(&md, &name);
    assert_eq!(row[1], format!("{:.1}", run["mb_per_s"].as_f64().unwrap()));
    assert_eq!(
        row[2],
        format!("{:.1}", t["mean_mb_per_s"].as_f64().unwrap())
    );
    assert_eq!(row[4], format!("{:.0}", run["iops"].as_f64().unwrap()));
    assert_eq!(
        row[7],
        format!("{:.2}", run["cpu_us_per_io"].as_f64().unwrap())
    );
    // Both kernel cross-checks, as the terminal prints them.
    let cc = &run["cross_check"];
    for (cell, key) in [(8, "proc_io_error_percent"), (9, "diskstats_error_percent")] {
        match cc[key].as_f64() {
            Some(p) => assert_eq!(row[cell], format!("{p:+.2} %")),
            None => assert_eq!(row[cell], "–"),
        }
    }
    // Latency: every percentile the bench wrote, none above the max.
    let lat = &run["latency"];
    let ns = |k: &str| lat[k].as_f64().unwrap();
    let expect: Vec<String> = [
        "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns",
    ]
    .iter()
    .map(|k| us1(ns(k)))
    .collect();
    let lrow = md_row(&md[md.find("Latency of the same runs").unwrap()..], &name);
    assert_eq!(lrow[1..], expect[..]);
    for k in ["p50_ns", "p90_ns", "p99_ns", "p99_9_ns"] {
        assert!(ns(k) <= ns("max_ns") && ns(k) >= ns("min_ns"), "{k}: {lat}");
    }
    // Parameters and the target, as the terminal's header line gives them.
    let p = &doc["parameters"];
    let mut facts = vec![
        "| engine | null |".to_string(),
        "| I/O | O_DIRECT |".to_string(),
        "| size | 8 MiB |".to_string(),
        format!("| runs | {} |", p["runs"]),
        "| runtime (upper bound) | 0.2 s |".to_string(),
    ];
    if let Some(dev) = doc["target"]["device"]["name"].as_str() {
        facts.push(format!("| device | {dev} ("));
    }
    for f in &facts {
        assert!(md.contains(f.as_str()), "`{f}` not in:\n{md}");
    }
    shown(&md, &html, &expect);
    // The path: each hop, and the bottleneck or why there is none.
    let hops = doc["path"]["chain"]["hops"].as_array().unwrap();
    assert!(md.matches("\n- ").count() >= hops.len(), "{md}");
    if let Some(fs) = hops.iter().find(|h| h["hop"] == "filesystem") {
        shown(
            &md,
            &html,
            &[format!(
                "{} on {}",
                fs["fs_type"].as_str().unwrap(),
                fs["source"].as_str().unwrap()
            )],
        );
    }
    if let Some(why) = doc["path"]["no_bottleneck_reason"].as_str() {
        shown(&md, &html, &[format!("No ceiling: {why}.")]);
    }
    let notes: Vec<String> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    shown(&md, &html, &notes);
    // compare reads it: the same configuration, and every number beside itself.
    let c = stdout_of(&["compare", &file, &file]);
    assert!(c.contains("Same configuration in every run:"), "{c}");
    assert!(c.contains("| I/O | O_DIRECT |"), "{c}");
    assert!(c.contains(&format!("| {name} (IOPS) |")), "{c}");
    assert!(
        c.contains(&format!(
            "| {name} latency p99 (us) | {} | {} |",
            expect[4], expect[4]
        )),
        "{c}"
    );
    // report --json: the document itself, one object.
    let again: Value = serde_json::from_str(&stdout_of(&["--json", "report", &file])).unwrap();
    assert_eq!(again, doc);
    let both: Value =
        serde_json::from_str(&stdout_of(&["--json", "report", &file, &file])).unwrap();
    assert_eq!(both["kind"], "report");
    assert_eq!(both["documents"].as_array().unwrap().len(), 2);
    assert_eq!(both["documents"][1], doc);
    // ... which report reads back as its documents.
    let both_file = save(dir.path(), "both.json", &both);
    let md = stdout_of(&["report", &both_file]);
    assert_eq!(md.matches("## disk — ").count(), 2, "{md}");
    assert!(md.contains("both.json #2"), "{md}");
    headroom()
        .args(["compare", &both_file, &file])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "holds several documents (`report --json` of several inputs)",
        ));
}

/// The terminal's summary table of `bench latency`: thread name -> its cells.
fn terminal_rows(text: &str) -> Vec<(String, Vec<String>)> {
    let start = text.find("thread  cpu interval").unwrap();
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('('))
        .map(|l| {
            let cells: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            // `all` has no cpu and interval.
            let numbers = if cells[0] == "all" {
                cells[1..].to_vec()
            } else {
                cells[3..].to_vec()
            };
            (cells[0].clone(), numbers)
        })
        .collect()
}

#[test]
fn bench_latency_reads_back_with_the_terminals_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lat.json");
    let out = headroom()
        .args([
            "bench",
            "latency",
            "-q",
            "-t",
            "2",
            "-l",
            "300",
            "-i",
            "1000",
            "--stress",
            "cpu=1",
            "--allow-unprivileged",
            "--output",
        ])
        .arg(&file)
        .arg("--db")
        .arg(dir.path().join("h.sqlite"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for t in [&text, &err.to_string()] {
        assert!(!t.to_lowercase().contains("seed"), "{t}");
    }
    let file = file.to_str().unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    // The configuration and measurement are read as model::latency's own types; `split` is
    // written (and read) by --split, --analyze and --engine timerlat only (latency_split.rs
    // reads it back): the document type writes none without it, so none is missing.
    reads_every_field::<report::kinds::latency::LatencyDocument>(&doc, &[]);
    // No single target, so no path.
    reads_every_field::<report::views::CommonView>(&doc, &["path"]);
    let (md, html) = reports(dir.path(), file);
    context_complete(&md);
    // Count, min, avg, p99, p99.9, max, missed and overflow read the same
    // on the terminal and in the report, thread by thread.
    let rows = terminal_rows(&text);
    assert_eq!(rows.len(), 3, "{text}");
    for (thread, term) in &rows {
        let rep = md_row(&md, thread);
        assert_eq!(
            rep[2..],
            term[..],
            "thread {thread}: terminal {term:?}, report {rep:?}"
        );
        // The HTML table holds the same cells.
        assert!(
            html.contains(&format!("<td class=\"n\">{}</td>", term[5])),
            "max {}",
            term[5]
        );
    }
    // The load and the length of the run.
    for f in [
        "| stress | cpu=1 |",
        "| loops | 300 |",
        "| threads | 2 |",
        "| interval | 1000 us |",
        "| stopped by |",
    ] {
        assert!(md.contains(f), "`{f}` not in:\n{md}");
    }
    // The lines under the terminal's table: the largest wake-ups, isolation, SMT.
    let largest = text
        .lines()
        .find_map(|l| l.strip_prefix("largest: "))
        .unwrap();
    shown(&md, &html, &[format!("Largest: {largest}.")]);
    let isolation = text
        .lines()
        .find_map(|l| l.strip_prefix("isolation: "))
        .unwrap();
    assert!(md.contains(&format!("| isolation | {isolation} |")), "{md}");
    let measured = doc["measurement"]["elapsed_ns"].as_f64().unwrap() / 1e9;
    shown(&md, &html, &[format!("{measured:.1} s")]);
    // compare shows the terminal's max for each thread, and the settings.
    let c = stdout_of(&["compare", file, file]);
    let max0 = &rows.iter().find(|r| r.0 == "0").unwrap().1[5];
    assert!(
        c.contains(&format!("| thread 0 max (us) | {max0} | {max0} |")),
        "{c}"
    );
    assert!(c.contains("| stress | cpu=1 |"), "{c}");
    // The history list's result is the same truncated max as the terminal's `all` row.
    let max_all = &rows.iter().find(|r| r.0 == "all").unwrap().1[5];
    let db = dir.path().join("h.sqlite");
    let list = stdout_of(&["history", "--db", db.to_str().unwrap()]);
    assert!(list.contains(&format!("max {max_all} us")), "{list}");
    assert!(list.contains("latency (2 threads)"), "{list}");
}

#[test]
fn audit_reads_back_link_by_link() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["sd-nvme-downgraded-sata", "usb3-uas-bot-r8152"] {
        let root = tree(name);
        let doc = json_of(headroom().args(["audit", "--json", "--root"]).arg(&root));
        reads_every_field::<report::kinds::audit::AuditDocument>(&doc, &[]);
        // The audit has findings; no notes, and no single target with a path.
        reads_every_field::<report::views::CommonView>(&doc, &["notes", "path"]);
        let terminal = stdout_of(&["audit", "--root", root.to_str().unwrap()]);
        let file = save(dir.path(), &format!("{name}.json"), &doc);
        let (md, html) = reports(dir.path(), &file);
        let mut expect: Vec<String> = Vec::new();
        for f in doc["pci"]["functions"].as_array().unwrap() {
            expect.push(format!("| {} |", f["address"].as_str().unwrap()));
        }
        for l in doc["pci"]["links"].as_array().unwrap() {
            let cur = &l["comparison"]["current"];
            expect.push(format!(
                "| {} -> {} | {} GT/s x{} |",
                l["upstream"].as_str().unwrap(),
                l["downstream"].as_str().unwrap(),
                cur["speed_gts"].as_f64().unwrap(),
                cur["width"]
            ));
        }
        for d in doc["usb"]["devices"].as_array().unwrap() {
            expect.push(format!("| {} |", d["name"].as_str().unwrap()));
        }
        for i in doc["net"]["interfaces"].as_array().unwrap() {
            expect.push(format!("| {} |", i["name"].as_str().unwrap()));
        }
        for b in doc["block"]["devices"].as_array().unwrap() {
            expect.push(format!("| {} |", b["name"].as_str().unwrap()));
        }
        for f in doc["findings"].as_array().unwrap() {
            expect.push(f["message"].as_str().unwrap().to_string());
        }
        for e in &expect {
            assert!(md.contains(e.as_str()), "`{e}` not in:\n{md}");
        }
        // The ceilings the terminal printed (`= 53.2 MB/s`, `787 of 6457 MB/s`) are in the
        // report's tables, to its one decimal.
        for (i, _) in terminal.match_indices(" MB/s TCP") {
            let n = terminal[..i].rsplit(' ').next().unwrap();
            assert!(
                md.contains(&format!("| {n} |")),
                "TCP ceiling {n} not in:\n{md}"
            );
        }
        if name.starts_with("usb") {
            shown(&md, &html, &["53.2".into(), "474.9".into(), "117.7".into()]);
        } else {
            shown(
                &md,
                &html,
                &["786.5".into(), "6457.4".into(), "downgraded".into()],
            );
        }
        files.push(file);
    }
    // compare reads audits: what differs between the two machines' links.
    let c = stdout_of(&["compare", &files[0], &files[1]]);
    assert!(c.contains("| link PCIe 0000:00:1c.0 -> 0000:01:00.0 | 8 GT/s x1 (both ends support 16 GT/s x4) | – |"), "{c}");
    assert!(c.contains("| link USB 2-1 | – | 5000M (USB 3.10) |"), "{c}");
    assert!(c.contains("No measurements"), "{c}");
}

#[test]
fn path_reads_back_hop_by_hop() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree("sd-nvme-downgraded-sata");
    let doc = json_of(
        headroom()
            .args(["path", "--json", "--root"])
            .arg(&root)
            .arg("/data/x"),
    );
    // `path` writes the path alone.
    reads_every_field::<report::views::CommonView>(&doc, &["findings", "notes"]);
    let file = save(dir.path(), "path.json", &doc);
    let (md, html) = reports(dir.path(), &file);
    context_complete(&md);
    let p = &doc["path"];
    let b = &p["links"][p["bottleneck"].as_u64().unwrap() as usize];
    let row = md_row(&md, b["name"].as_str().unwrap());
    assert_eq!(row[1], b["state"].as_str().unwrap());
    assert_eq!(row[2], b["capable_state"].as_str().unwrap());
    assert_eq!(
        row[3],
        format!("{:.1}", b["ceiling_bytes_per_sec"].as_f64().unwrap() / 1e6)
    );
    assert_eq!(row[4], b["basis"].as_str().unwrap());
    assert!(
        row[5].contains("bottleneck") && row[5].contains("downgraded"),
        "{row:?}"
    );
    shown(&md, &html, &[b["basis"].as_str().unwrap().to_string()]);
    // Every hop of the chain, the disk's model included.
    assert_eq!(
        md.matches("\n- ").count(),
        p["chain"]["hops"].as_array().unwrap().len(),
        "{md}"
    );
    shown(
        &md,
        &html,
        &[
            "disk: nvme0n1, nvme, Samsung SSD 980 PRO 1TB".into(),
            "filesystem: ext4 on /dev/nvme0n1p1 (259:1) mounted at /".into(),
        ],
    );
    // This machine's own disk (virtio: no link with a ceiling) says why there is none.
    let here = json_of(headroom().args(["path", "--json"]).arg(dir.path()));
    let here_file = save(dir.path(), "here.json", &here);
    let (md, html) = reports(dir.path(), &here_file);
    if let Some(why) = here["path"]["no_bottleneck_reason"].as_str() {
        shown(&md, &html, &[format!("Bottleneck: none known: {why}.")]);
    }
    // compare reads paths: the link states side by side.
    let c = stdout_of(&["compare", &file, &here_file]);
    assert!(c.contains("### What changed"), "{c}");
    assert!(
        c.contains("| link PCIe 0000:00:1c.0 -> 0000:01:00.0 | 8 GT/s x1 (capable 16 GT/s x4)"),
        "{c}"
    );
}

#[test]
fn bench_net_loopback_reads_every_field() {
    let port = testsupport::net::free_port();
    // A one-off server (`-1`), bounded by the client's run and killed at the end.
    let mut server = testsupport::net::one_off_server(port, &["--json"]);
    let port = port.to_string();
    let doc = json_of(
        headroom()
            .args(["bench", "net", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(["--json", "--no-save"]),
    );
    let _ = server.kill();
    let _ = server.wait();
    reads_every_field::<report::kinds::net::NetDocument>(&doc, &[]);
    // bench net writes its bus link into its ceiling, not a path.
    reads_every_field::<report::views::CommonView>(&doc, &["path"]);
}

#[test]
fn bench_mmio_and_mem_read_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("region");
    std::fs::write(&file, vec![0x5au8; 1 << 20]).unwrap();
    let short = ["--duration", "50ms", "--json", "--no-save"];
    let mmio = json_of(
        headroom()
            .args(["bench", "mmio"])
            .arg(&file)
            .args(["--width", "32,64"])
            .args(short),
    );
    let mem = json_of(
        headroom()
            .args(["bench", "mem", "--size", "16M", "--width", "64"])
            .args(short),
    );
    for doc in [mmio, mem] {
        reads_every_field::<report::kinds::mmio::MmioDocument>(&doc, &[]);
        reads_every_field::<report::views::CommonView>(&doc, &[]);
    }
}

/// `doc`'s `pci` section with the parts `PciAudit` does not read back (each function's
/// decoded config space, the policy) as a document without them has them.
fn pci_without_unread_parts(doc: &Value) -> Value {
    let mut pci = doc["pci"].clone();
    for f in pci["functions"].as_array_mut().unwrap() {
        f["config"] = Value::Null;
    }
    pci["policy"] = serde_json::json!({"aspm_policy": null, "mps_policy": null});
    pci
}

#[test]
fn the_pci_section_reads_back_as_written() {
    use model::inventory::pci::PciAudit;
    let mut docs = Vec::new();
    for name in ["sd-nvme-downgraded-sata", "usb3-uas-bot-r8152"] {
        docs.push(json_of(
            headroom()
                .args(["audit", "--json", "--root"])
                .arg(tree(name)),
        ));
    }
    // Every captured machine and lspci dump.
    if let Some(shared) = testsupport::fixtures::shared_fixtures() {
        for dir in ["sysfs", "pci"] {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(shared.join(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for p in entries {
                let flag = if p.is_dir() {
                    "--root"
                } else if p.extension().is_some_and(|e| e == "txt" || e == "md") {
                    continue;
                } else {
                    "--lspci"
                };
                docs.push(json_of(headroom().args(["audit", "--json", flag]).arg(&p)));
            }
        }
    }
    let mut links = 0;
    for doc in &docs {
        let pci: PciAudit = serde_json::from_value(doc["pci"].clone()).unwrap();
        links += pci.links.len();
        assert_eq!(
            serde_json::to_value(&pci).unwrap(),
            pci_without_unread_parts(doc),
            "{}",
            doc["source"]
        );
    }
    assert!(links > 0);

    // A document written before the unit-suffixed keys, the config source and the link's
    // downgrade marks reads with the same numbers.
    let old: Value = serde_json::from_str(
        &std::fs::read_to_string(testsupport::fixtures::own(
            "results/audit-nvme-downgraded.json",
        ))
        .unwrap(),
    )
    .unwrap();
    let pci: PciAudit = serde_json::from_value(old["pci"].clone()).unwrap();
    let (l, was) = (&pci.links[0], &old["pci"]["links"][0]);
    assert_eq!(l.downstream.to_string(), "0000:01:00.0");
    assert_eq!(
        l.ceiling.current.effective_write_bps,
        was["ceiling"]["current"]["effective_write_bps"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(
        l.ceiling.capable.raw_bps,
        was["ceiling"]["capable"]["raw_bps"].as_f64().unwrap()
    );
    assert_eq!(pci.functions[2].vendor_id, Some(0x144d));
    assert_eq!(pci.functions[2].class, Some(0x010802));
    assert!(!l.downgraded.any());
}

/// A document of every kind, written by the binary of the main branch before the
/// document types moved into `report::kinds` (tests/fixtures/results/), is read back through
/// its kind's type by `report --md`, `report --html`, `compare` and `history show`, which
/// prints what `report` prints; a ceiling, a count and a survey show their values.
#[test]
fn a_document_of_every_kind_reads_back_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let kinds = [
        ("audit", "audit-usb3-uas-bot-r8152.json"),
        ("path", "path-tmp.json"),
        ("ceiling", "ceiling-pcie.json"),
        ("ceiling", "ceiling-usb.json"),
        ("ceiling", "ceiling-sata.json"),
        ("ceiling", "ceiling-eth.json"),
        ("ceiling", "ceiling-mmc.json"),
        ("disk", "disk-null-dd.json"),
        ("latency", "latency-200-loops.json"),
        ("net", "net-loopback-tcp.json"),
        ("mmio", "mmio-file.json"),
        ("count", "count-true.json"),
        ("pmu_list", "pmu-list.json"),
        ("survey", "survey-rpi5.json"),
        ("survey-plan", "survey-plan-sd-nvme.json"),
        ("watch", "watch-q35-retrain.json"),
        ("video", "video-vivid-yuyv.json"),
    ];
    for (i, (kind, name)) in kinds.iter().enumerate() {
        let file = testsupport::fixtures::own(&format!("results/{name}"));
        let file = file.to_str().unwrap();
        let (md, html) = reports(dir.path(), file);
        let compared = stdout_of(&["compare", file, file]);
        // A survey is a report of its parts, under its own titles.
        let (md_title, html_title, compare_title) = if *kind == "survey" {
            (
                "# headroom survey of ".to_string(),
                "<h2>Survey of ".to_string(),
                "# Surveys compared: ".to_string(),
            )
        } else {
            (
                format!("## {kind} — "),
                format!("<h2>{kind} — "),
                format!("## compare {kind} — "),
            )
        };
        assert!(md.starts_with(&md_title), "{name}:\n{md}");
        assert!(html.contains(&html_title), "{name}");
        assert!(compared.starts_with(&compare_title), "{name}:\n{compared}");
        stdout_of(&["history", "add", "--db", db, file]);
        let id = (i + 1).to_string();
        assert_eq!(
            stdout_of(&["history", "show", &id, "--db", db]),
            stdout_of(&["report", &id, "--db", db]),
            "{name}"
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        // What each kind's numbers look like in the report.
        let values: Vec<String> = match *name {
            "ceiling-pcie.json" => doc["ceilings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    format!(
                        "{:.1}",
                        c["effective_write_bytes_per_sec"].as_f64().unwrap() / 1e6
                    )
                })
                .collect(),
            "ceiling-sata.json" => doc["links"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{:.1}", c["data_bytes_per_sec"].as_f64().unwrap() / 1e6))
                .collect(),
            "ceiling-mmc.json" => doc["modes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{:.1}", c["block_bytes_per_sec"].as_f64().unwrap() / 1e6))
                .collect(),
            "ceiling-eth.json" => doc["ceilings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{:.1}", c["goodput_bytes_per_sec"].as_f64().unwrap() / 1e6))
                .collect(),
            // The rate delivered and the drops, as the capture's table words them.
            "video-vivid-yuyv.json" => vec![
                format!("{:.2}", doc["capture"]["fps"].as_f64().unwrap()),
                "frames dropped".into(),
                "frames drop: 4 of 54 frames missing".into(),
            ],
            // The devices something happened to, and their counts.
            "watch-q35-retrain.json" => vec![
                "0000:05:00.0".into(),
                "correctable AER errors of 0000:00:12.0".into(),
                "carrier changes of eth0".into(),
            ],
            "count-true.json" => doc["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect(),
            _ => Vec::new(),
        };
        shown(&md, &html, &values);
    }
}
