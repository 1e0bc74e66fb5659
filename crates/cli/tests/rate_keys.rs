//! One spelling per rate unit in every document headroom writes: bytes per second
//! in keys ending `_bytes_per_sec` (or `bytes_per_sec`), bits per second in `_bits_per_sec`
//! (`_mbits_per_sec`, `_gbits_per_sec` with their decimal prefix). No key says `bps`, which
//! meant bytes in the ceilings and bits in `bench net`. Documents written before still read:
//! `report` and `compare` take the old keys as aliases.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::path::{Path, PathBuf};
use testsupport::cmd::*;
use testsupport::net::{free_port, one_off_server};

fn tree(name: &str) -> PathBuf {
    testsupport::fixtures::own(&format!("sysfs/{name}"))
}

/// Every object key of `v`, with the JSON path that leads to it.
fn keys(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push((k.clone(), format!("{at}.{k}")));
                keys(x, &format!("{at}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                keys(x, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The rule, on every key of `doc` (of kind `what`).
fn one_spelling(what: &str, doc: &Value) {
    let mut all = Vec::new();
    keys(doc, "", &mut all);
    assert!(!all.is_empty(), "{what}: an empty document");
    for (k, at) in all {
        assert!(
            !k.contains("bps") && !k.contains("per_second_") && k != "bytes_per_second",
            "{what}: `{at}` is not spelled `_bytes_per_sec` or `_bits_per_sec`"
        );
        if k.contains("per_sec") && !k.ends_with("per_second") {
            assert!(
                ["bytes_per_sec", "gbits_per_sec"].contains(&k.as_str())
                    || [
                        "_bytes_per_sec",
                        "_bits_per_sec",
                        "_mbits_per_sec",
                        "_gbits_per_sec"
                    ]
                    .iter()
                    .any(|end| k.ends_with(end)),
                "{what}: `{at}` names no unit"
            );
        }
    }
}

/// `bench net` against its own server on loopback, UDP at a set rate (every rate field is
/// filled): (client document, server document).
fn net_documents() -> (Value, Value) {
    let port = free_port();
    let server = one_off_server(port, &["--json"]);
    let port = port.to_string();
    let client = json_of(headroom().args([
        "bench",
        "net",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "1",
        "-u",
        "-b",
        "50M",
        "--no-save",
        "--json",
    ]));
    let out = server.wait_with_output().unwrap();
    (client, serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn every_kind_of_document_spells_rates_one_way() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut docs: Vec<(String, Value)> = Vec::new();
    let mut put = |what: &str, v: Value| docs.push((what.to_string(), v));
    for t in ["sd-nvme-downgraded-sata", "usb3-uas-bot-r8152"] {
        put(
            &format!("audit {t}"),
            json_of(headroom().args(["--json", "audit", "--root"]).arg(tree(t))),
        );
    }
    put(
        "path",
        json_of(
            headroom()
                .args(["path", "--json", "--root"])
                .arg(tree("sd-nvme-downgraded-sata"))
                .arg("/data/x"),
        ),
    );
    put(
        "path lo",
        json_of(headroom().args(["path", "--json", "lo"])),
    );
    for args in [
        &["pcie", "--gen", "3", "--lanes", "4"][..],
        &["usb"],
        &["sata"],
        &["eth", "--rate", "1G"],
        &["mmc"],
    ] {
        put(
            &format!("ceiling {}", args[0]),
            json_of(headroom().args(["--json", "ceiling"]).args(args)),
        );
    }
    let target = d.join("target");
    std::fs::create_dir(&target).unwrap();
    put(
        "bench disk",
        json_of(
            headroom()
                .args(["--json", "bench", "disk", "--engine", "null", "--no-save"])
                .args(["--size", "8M", "--runtime", "200ms", "--rw", "read"])
                .arg(&target),
        ),
    );
    put(
        "bench latency",
        json_of(headroom().args(["--json", "bench", "latency", "-l", "50", "-q", "--no-save"])),
    );
    let bar = d.join("bar.bin");
    std::fs::write(&bar, vec![7u8; 64 * 1024]).unwrap();
    put(
        "bench mmio",
        json_of(
            headroom()
                .args(["--json", "bench", "mmio"])
                .arg(&bar)
                .args([
                    "--width",
                    "32",
                    "--max-sweeps",
                    "2",
                    "--no-mem",
                    "--no-save",
                ]),
        ),
    );
    let count = d.join("count.json");
    output_ok(
        headroom()
            .args(["--json", "count", "-o"])
            .arg(&count)
            .args(["-e", "task-clock", "--", "true"]),
    );
    put(
        "count",
        serde_json::from_str(&std::fs::read_to_string(&count).unwrap()).unwrap(),
    );
    let (client, server) = net_documents();
    // The fields that were `_bps` are there under their new names.
    let cfg = &client["measurement"]["config"];
    assert_eq!(cfg["bitrate_bits_per_sec"], 50_000_000, "{cfg}");
    assert!(client["flows"][0]["summary"]["receiver_bits_per_sec"].is_number());
    put("bench net client", client);
    put("bench net server", server);
    for (what, doc) in &docs {
        one_spelling(what, doc);
    }
}

/// `doc` with every key renamed by `to_old` (the spelling of documents written before).
fn respell(v: &Value, to_old: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (to_old(k), respell(x, to_old)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| respell(x, to_old)).collect()),
        x => x.clone(),
    }
}

/// The key as headroom spelled it before: `_bps` for both bytes and bits per second,
/// `_mbps`/`gbps` for the prefixed bit rates, `bytes_per_second` in the USB table.
fn old_spelling(k: &str) -> String {
    // Ethernet's ceiling named its units already; its keys did not change.
    if matches!(
        k,
        "rate_bits_per_sec" | "raw_bytes_per_sec" | "goodput_bytes_per_sec" | "bytes_per_sec"
    ) {
        return k.to_string();
    }
    for (new, old) in [
        ("_mbits_per_sec", "_mbps"),
        ("_bytes_per_sec", "_bps"),
        ("_bits_per_sec", "_bps"),
    ] {
        if let Some(base) = k.strip_suffix(new) {
            return format!("{base}{old}");
        }
    }
    k.to_string()
}

#[test]
fn documents_in_the_old_spelling_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let audit = json_of(
        headroom()
            .args(["--json", "audit", "--root"])
            .arg(tree("sd-nvme-downgraded-sata")),
    );
    let path = json_of(
        headroom()
            .args(["path", "--json", "--root"])
            .arg(tree("sd-nvme-downgraded-sata"))
            .arg("/data/x"),
    );
    for (name, doc) in [("audit", audit), ("path", path)] {
        let old = respell(&doc, &old_spelling);
        assert_ne!(old, doc, "{name}: nothing was respelled");
        let text = old.to_string();
        assert!(text.contains("_bps\""), "{name}: {text}");
        let new_file = dir.path().join(format!("{name}-new.json"));
        let old_file = dir.path().join(format!("{name}-old.json"));
        std::fs::write(&new_file, doc.to_string()).unwrap();
        std::fs::write(&old_file, text).unwrap();
        // The report shows the same numbers, origin aside.
        let strip = |md: String, f: &Path| md.replace(f.to_str().unwrap(), "FILE");
        let new_md = strip(report_md(&new_file), &new_file);
        let old_md = strip(report_md(&old_file), &old_file);
        assert_eq!(old_md, new_md, "{name}");
        // compare puts an old and a new document side by side without a gap.
        output_ok(headroom().arg("compare").args([&old_file, &new_file]));
    }
    // The path's ceiling (8 GT/s x1, effective write) is in the old document's report too.
    let md = report_md(&dir.path().join("path-old.json"));
    assert!(md.contains("| 8 GT/s x1 | 16 GT/s x4 | 786.5 |"), "{md}");
    // Documents saved by earlier versions (tests/fixtures/results) carry `_bps`: their
    // ceilings (`ceiling_bps`, `goodput_bps`) are read.
    for (f, ceiling) in [
        ("rpi5-gen3.json", "(869.1 MB/s)"),
        ("net-shaped-tcp.json", "(11.8 MB/s)"),
    ] {
        let file = testsupport::fixtures::own(&format!("results/{f}"));
        assert!(std::fs::read_to_string(&file).unwrap().contains("_bps\""));
        let md = report_md(&file);
        assert!(md.contains(ceiling), "{f}: {md}");
    }
}
