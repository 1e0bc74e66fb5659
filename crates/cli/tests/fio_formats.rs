//! `bench disk --output-format fio-json` and `fio-json+` speak fio 3.33's JSON,
//! proven by what reads fio's: fio-plot (PyPI, in a venv under target/ that .ci/run makes)
//! draws its graph from a directory of headroom's files, fio's own `fio_jsonplus_clat2csv`
//! turns headroom's json+ into CSV whose bins sum to the run's I/O count, and the document has
//! every key fio writes for the same job, with the same types.

#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use testsupport::cmd::*;
use testsupport::process::on_path;

/// A small random workload both tools run: 16 MiB, 4 KiB blocks, psync (every kernel has it),
/// 1 s at most.
fn job(dir: &Path, rw: &str, qd: u32, format: &str, doc: Option<&Path>) -> Value {
    let mut cmd = headroom();
    cmd.current_dir(dir)
        .args([
            "bench", "disk", ".", "--rw", rw, "--bs", "4k", "--size", "16M",
        ])
        .args(["--runtime", "1", "--engine", "psync", "--no-save", "--qd"])
        .arg(qd.to_string())
        .args(["--output-format", format]);
    if rw == "randrw" {
        cmd.args(["--rwmixread", "70"]);
    }
    if let Some(d) = doc {
        cmd.arg("--output").arg(d);
    }
    let out = output_ok(&mut cmd);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// fio-plot from the venv .ci/run makes (`FIO_PLOT` names another).
fn fio_plot() -> Option<PathBuf> {
    let p = std::env::var_os("FIO_PLOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fio-plot-venv/bin/fio-plot")
        });
    if p.is_file() {
        return Some(p);
    }
    testsupport::skip::skip(&format!(
        "needs fio-plot at {} (.ci/run: python3 -m venv target/fio-plot-venv; pip install \
         fio-plot)",
        p.display()
    ));
    None
}

#[test]
fn fio_plot_draws_headrooms_fio_json() {
    let Some(fio_plot) = fio_plot() else { return };
    let work = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    // fio-plot's layout: one file per queue depth of the same rw and block size.
    let mut iops = Vec::new();
    for qd in [1, 2, 4] {
        let doc = work.path().join(format!("run-{qd}.json"));
        let fio = job(work.path(), "randread", qd, "fio-json", Some(&doc));
        std::fs::write(
            results.path().join(format!("randread-{qd}.json")),
            serde_json::to_vec_pretty(&fio).unwrap(),
        )
        .unwrap();
        // The rate fio-plot draws is headroom's: I/Os per ms of the run.
        let ours: Value = serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
        let run = &ours["tests"][0]["runs"][0];
        let read = &fio["jobs"][0]["read"];
        assert_eq!(read["total_ios"], run["ios"]);
        let ms = (run["seconds"].as_f64().unwrap() * 1000.0).round();
        let expect = run["ios"].as_f64().unwrap() * 1000.0 / ms;
        assert!((read["iops"].as_f64().unwrap() - expect).abs() < 1e-6 * expect.max(1.0));
        iops.push(read["iops"].as_f64().unwrap());
    }
    let png = results.path().join("graph.png");
    let out = std::process::Command::new(&fio_plot)
        .current_dir(results.path())
        .args(["-i", ".", "-T", "headroom", "-l", "-r", "randread"])
        .args(["-d", "1", "2", "4", "-n", "1", "--output-filename"])
        .arg(&png)
        .env("MPLBACKEND", "Agg")
        .output()
        .unwrap();
    let say = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{say}");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}: {say}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
        "{say}"
    );
    assert!(iops.iter().all(|&r| r > 0.0), "{iops:?}");
}

/// fio's CSV of json+: `nsec, read_slat_ns_count, ...`, one line per bin.
fn csv_counts(csv: &str) -> BTreeMap<String, u64> {
    let mut lines = csv.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let mut sums = BTreeMap::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        for (name, v) in head.iter().zip(line.split(',')) {
            if name.ends_with("_count") && !v.trim().is_empty() {
                *sums.entry(name.clone()).or_insert(0) += v.trim().parse::<u64>().unwrap();
            }
        }
    }
    sums
}

#[test]
fn fio_jsonplus_clat2csv_reads_the_bins_of_every_io() {
    if !on_path("fio_jsonplus_clat2csv") {
        testsupport::skip::skip("needs fio_jsonplus_clat2csv (Debian: fio)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("run.json");
    // Reads and writes, so both directions have bins.
    let fio = job(dir.path(), "randrw", 2, "fio-json+", Some(&doc));
    let src = dir.path().join("plus.json");
    std::fs::write(&src, serde_json::to_vec_pretty(&fio).unwrap()).unwrap();
    let dest = dir.path().join("lat.csv");
    for validate in [false, true] {
        let mut cmd = std::process::Command::new("fio_jsonplus_clat2csv");
        if validate {
            // Its own check: every bin of the CSV is the json+ document's.
            cmd.arg("--validate");
        }
        let out = cmd.arg(&src).arg(&dest).output().unwrap();
        let say = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !say.contains("mismatch"), "{say}");
    }
    let csv = std::fs::read_to_string(dir.path().join("lat_job0.csv")).unwrap();
    let sums = csv_counts(&csv);
    let ours: Value = serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    let run = &ours["tests"][0]["runs"][0];
    let (r, w) = (&fio["jobs"][0]["read"], &fio["jobs"][0]["write"]);
    let reads = sums["read_clat_ns_count"];
    let writes = sums["write_clat_ns_count"];
    assert_eq!(reads, r["total_ios"].as_u64().unwrap());
    assert_eq!(writes, w["total_ios"].as_u64().unwrap());
    assert_eq!(reads + writes, run["ios"].as_u64().unwrap(), "{sums:?}");
    assert!(reads > 0 && writes > 0, "{sums:?}");
    // The bytes of each direction are the document's.
    assert_eq!(r["io_bytes"], run["read_bytes"]);
    assert_eq!(w["io_bytes"], run["write_bytes"]);
}

/// Every key path with its type; the bins' keys are data (which buckets were hit), and so
/// is `job options` (what each tool was given).
fn keys(v: &Value, prefix: &str, out: &mut BTreeMap<String, &'static str>) {
    out.insert(prefix.to_string(), kind(v));
    match v {
        Value::Object(m) if !prefix.ends_with(".job options") => {
            for (k, v) in m {
                let k = if prefix.ends_with(".bins") { "BIN" } else { k };
                keys(v, &format!("{prefix}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for v in a {
                keys(v, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_key_fio_writes_for_the_job_is_there_with_its_type() {
    if !on_path("fio") {
        testsupport::skip::skip("needs fio (Debian: fio)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (format, fio_format) in [("fio-json", "json"), ("json+", "json+")] {
        let ours = job(dir.path(), "randrw", 2, format, None);
        let out = output_ok(
            assert_cmd::Command::new("fio")
                .current_dir(dir.path())
                .args(["--name=peer", "--filename=peer.dat", "--size=16M"])
                .args(["--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=2"])
                .args(["--ioengine=psync", "--direct=1", "--runtime=1"])
                .arg(format!("--output-format={fio_format}")),
        );
        // fio prints its notes ("queue depth will be capped at 1") above the document.
        let text = String::from_utf8(out.stdout).unwrap();
        let theirs: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        keys(&ours, "", &mut a);
        keys(&theirs, "", &mut b);
        // fio writes `global options` only for a job file with a [global] section, and
        // `disk_util` only when the file is on a block device: headroom's may have them.
        a.retain(|k, _| !k.starts_with(".global options"));
        if !b.contains_key(".disk_util") {
            a.retain(|k, _| !k.starts_with(".disk_util"));
        }
        // psync has no submission latency; with none, neither tool has slat bins.
        let missing: Vec<_> = b.iter().filter(|(k, _)| !a.contains_key(*k)).collect();
        assert!(missing.is_empty(), "{format}: missing {missing:?}");
        let differ: Vec<_> = b
            .iter()
            .filter(|(k, t)| a.get(*k).is_some_and(|u| u != *t))
            .collect();
        assert!(differ.is_empty(), "{format}: other types {differ:?}");
        let extra: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
        assert!(extra.is_empty(), "{format}: not fio's {extra:?}");
        // The percentiles are keyed as fio keys them.
        let p = &ours["jobs"][0]["read"]["clat_ns"]["percentile"];
        assert!(p["99.000000"].is_u64() && p["99.990000"].is_u64(), "{p}");
        assert_eq!(ours["fio version"], "fio-3.33");
    }
}
