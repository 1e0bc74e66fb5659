//! `bench latency -h N` and `--json=FILE` speak cyclictest's formats: the
//! histogram text read by a parser written to rt-tests' layout gives the numbers of headroom's
//! own document, its lines have the shapes of Debian's `cyclictest -h` run here, and the JSON
//! has every key rt-tests 2.4 writes with the same types.

#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::collections::BTreeMap;
use testsupport::cmd::*;
use testsupport::process::on_path;

/// One thread's numbers as the histogram text gives them.
#[derive(Debug, Default, PartialEq)]
struct Column {
    buckets: BTreeMap<u64, u64>,
    total: u64,
    min: u64,
    avg: u64,
    max: u64,
    overflows: u64,
    /// Cycle numbers listed, and the `# N others` count.
    overflow_cycles: Vec<u64>,
    others: u64,
}

/// rt-tests' `-h` layout (cyclictest(8), `print_hist`): `# Histogram`, then `%06d` bucket and
/// one count per thread separated by tabs (a summary column with `-H`), `# Total:`, `# Min
/// Latencies:`, `# Avg Latencies:`, `# Max Latencies:`, `# Histogram Overflows:` with one
/// value per thread, `# Histogram Overflow at cycle number:` and a `# Thread N:` line each.
fn parse(text: &str, threads: usize) -> Vec<Column> {
    let mut cols: Vec<Column> = (0..threads).map(|_| Column::default()).collect();
    let mut in_hist = false;
    let values = |rest: &str| -> Vec<u64> {
        rest.split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    };
    for line in text.lines() {
        if line == "# Histogram" {
            in_hist = true;
            continue;
        }
        if in_hist && !line.starts_with('#') && !line.is_empty() {
            let mut f = line.split(['\t', ' ']);
            let bucket: u64 = f.next().unwrap().parse().unwrap();
            for (c, v) in cols.iter_mut().zip(f) {
                let n: u64 = v.parse().unwrap();
                if n > 0 {
                    c.buckets.insert(bucket, n);
                }
            }
            continue;
        }
        let set = |cols: &mut Vec<Column>, rest: &str, f: fn(&mut Column, u64)| {
            for (c, v) in cols.iter_mut().zip(values(rest)) {
                f(c, v);
            }
        };
        if let Some(r) = line.strip_prefix("# Total:") {
            set(&mut cols, r, |c, v| c.total = v);
        } else if let Some(r) = line.strip_prefix("# Min Latencies:") {
            set(&mut cols, r, |c, v| c.min = v);
        } else if let Some(r) = line.strip_prefix("# Avg Latencies:") {
            set(&mut cols, r, |c, v| c.avg = v);
        } else if let Some(r) = line.strip_prefix("# Max Latencies:") {
            set(&mut cols, r, |c, v| c.max = v);
        } else if let Some(r) = line.strip_prefix("# Histogram Overflows:") {
            set(&mut cols, r, |c, v| c.overflows = v);
        } else if let Some(r) = line.strip_prefix("# Thread ") {
            let (n, rest) = r.split_once(':').unwrap();
            let c = &mut cols[n.parse::<usize>().unwrap()];
            let (listed, others) = match rest.split_once(" # ") {
                Some((l, o)) => (l, o.strip_suffix(" others").unwrap().parse().unwrap()),
                None => (rest, 0),
            };
            c.overflow_cycles = values(listed);
            c.others = others;
        }
    }
    cols
}

/// A line's shape: every digit a 9, so `000017 000003\t000000` and `000042 000100\t000001`
/// are one shape; a `# Thread N:` line's is its pattern (how many cycles it lists varies).
fn shape(line: &str) -> String {
    if let Some(r) = line.strip_prefix("# Thread ") {
        let (n, rest) = r.split_once(':').unwrap();
        assert!(n.chars().all(|c| c.is_ascii_digit()), "{line}");
        let (listed, others) = rest.split_once(" # ").unwrap_or((rest, ""));
        assert!(
            listed
                .split(' ')
                .skip(1)
                .all(|v| v.len() >= 5 && v.chars().all(|c| c.is_ascii_digit())),
            "{line}"
        );
        assert!(
            others.is_empty()
                || others
                    .strip_suffix(" others")
                    .is_some_and(|o| o.len() >= 5 && o.chars().all(|c| c.is_ascii_digit())),
            "{line}"
        );
        return "# Thread N: [NNNNN ...] [# NNNNN others]".into();
    }
    // A latency of 100 ms or more widens its `%05lu` (a loaded machine can have one): those
    // lines are shaped by their columns, each at least 5 digits.
    for name in ["# Min Latencies:", "# Avg Latencies:", "# Max Latencies:"] {
        if let Some(r) = line.strip_prefix(name) {
            let columns: Vec<&str> = r.split(' ').skip(1).collect();
            assert!(
                r.starts_with(' ')
                    && columns
                        .iter()
                        .all(|v| v.len() >= 5 && v.chars().all(|c| c.is_ascii_digit())),
                "{line}"
            );
            return format!("{name} {}", vec!["99999"; columns.len()].join(" "));
        }
    }
    line.chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect()
}

fn have_cyclictest() -> bool {
    if on_path("cyclictest") {
        return true;
    }
    testsupport::skip::skip("needs cyclictest (Debian: rt-tests)");
    false
}

/// Both tools with the same workload: 2 threads, 300 wake-ups each 200 us apart, a 60 us
/// histogram; whatever this machine's latencies, the lines and keys are compared, not the
/// numbers.
const WORKLOAD: [&str; 8] = ["-q", "-t", "2", "-i", "200", "-l", "300", "-h"];

#[test]
fn the_histogram_text_gives_the_numbers_of_headrooms_document() {
    let dir = tempfile::tempdir().unwrap();
    let doc_file = dir.path().join("run.json");
    for histofall in [false, true] {
        let flag = if histofall { "-H" } else { "-h" };
        let out = output_ok(
            headroom()
                .args([
                    "bench", "latency", "-q", "-t", "2", "-i", "200", "-l", "300",
                ])
                .args([flag, "60", "--allow-unprivileged", "--no-save", "--output"])
                .arg(&doc_file),
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let doc: Value = serde_json::from_slice(&std::fs::read(&doc_file).unwrap()).unwrap();
        let threads = doc["measurement"]["threads"].as_array().unwrap();
        let cols = parse(&text, threads.len());
        assert_eq!(cols.len(), 2);
        for (c, t) in cols.iter().zip(threads) {
            let s = &t["stats"];
            let h = &s["histogram"];
            let buckets: BTreeMap<u64, u64> = h["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b[0].as_u64().unwrap(), b[1].as_u64().unwrap()))
                .collect();
            let us = |k: &str| s[k].as_u64().unwrap() / 1000;
            let overflow = h["overflow"].as_u64().unwrap();
            assert_eq!(c.buckets, buckets, "{text}");
            assert_eq!(c.total, buckets.values().sum::<u64>());
            assert_eq!(c.total + c.overflows, s["count"].as_u64().unwrap());
            assert_eq!(c.total + c.overflows, 300);
            assert_eq!(
                (c.min, c.max, c.overflows),
                (us("min_ns"), us("max_ns"), overflow)
            );
            assert_eq!(c.avg, s["avg_ns"].as_f64().unwrap() as u64 / 1000);
            // Every overflow is listed or counted among the others, first ones first.
            assert_eq!(c.overflow_cycles.len() as u64 + c.others, overflow);
            assert!(c.overflow_cycles.windows(2).all(|w| w[0] < w[1]));
            assert!(c.overflow_cycles.iter().all(|&n| n < 300));
        }
        // -H: the summary column, with the rows' sums.
        let row = text.lines().find(|l| l.starts_with("000000 ")).unwrap();
        assert_eq!(
            row.split('\t').count(),
            if histofall { 3 } else { 2 },
            "{row}"
        );
        let total = text.lines().find(|l| l.starts_with("# Total:")).unwrap();
        let sums: Vec<u64> = total[8..]
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        if histofall {
            assert_eq!(sums[2], sums[0] + sums[1], "{total}");
        } else {
            assert_eq!(sums.len(), 2, "{total}");
        }
    }
}

#[test]
fn the_histogram_text_has_the_lines_of_cyclictest_h() {
    if !have_cyclictest() {
        return;
    }
    for flag in ["-h", "-H"] {
        let ours = output_ok(
            headroom()
                .args(["bench", "latency"])
                .args(&WORKLOAD[..7])
                .args([flag, "60", "-p", "0", "--no-mlock", "--no-save"]),
        );
        let theirs = output_ok(
            assert_cmd::Command::new("cyclictest")
                .args(&WORKLOAD[..7])
                .args([flag, "60", "-p", "0"]),
        );
        let shapes = |o: &[u8]| -> Vec<String> {
            let text = String::from_utf8_lossy(o);
            // From `# Histogram` on: cyclictest prints its cpu_dma_latency line only when
            // it could open the device (root).
            let from = text.find("# Histogram").unwrap();
            text[from..].lines().map(shape).collect()
        };
        let (ours, theirs) = (shapes(&ours.stdout), shapes(&theirs.stdout));
        assert_eq!(ours, theirs, "{flag}");
        // 60 bucket lines, the header, 6 footer lines, a line per thread, the blank line.
        assert_eq!(ours.len(), 1 + 60 + 6 + 2 + 1);
    }
}

/// Every key path with its type; the histogram's bucket keys are data (which buckets were
/// hit), so only their values' type counts.
fn keys(v: &Value, prefix: &str, out: &mut BTreeMap<String, &'static str>) {
    out.insert(prefix.to_string(), kind(v));
    if let Value::Object(m) = v {
        for (k, v) in m {
            let k = if prefix.ends_with(".histogram") {
                "BUCKET"
            } else {
                k
            };
            keys(v, &format!("{prefix}.{k}"), out);
        }
    }
}

#[test]
fn the_json_file_has_every_key_of_rt_tests_with_its_type() {
    if !have_cyclictest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("ours.json"), dir.path().join("theirs.json"));
    // Relative to the working directory, as a user types it.
    output_ok(
        headroom()
            .current_dir(dir.path())
            .args(["bench", "latency"])
            .args(WORKLOAD)
            .args([
                "60",
                "-p",
                "0",
                "--no-mlock",
                "--no-save",
                "--json=ours.json",
            ]),
    );
    output_ok(
        assert_cmd::Command::new("cyclictest")
            .args(WORKLOAD)
            .args(["60", "-p", "0"])
            .arg(format!("--json={}", theirs.display())),
    );
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let (ours, theirs) = (read(&ours), read(&theirs));
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    keys(&ours, "", &mut a);
    keys(&theirs, "", &mut b);
    // Which buckets a thread hit depends on this machine's latencies (a loaded one can
    // overflow every wake-up of a thread): the buckets are compared by their form instead,
    // in both documents a bucket number below the limit and an integer count.
    a.retain(|k, _| !k.ends_with("BUCKET"));
    b.retain(|k, _| !k.ends_with("BUCKET"));
    assert_eq!(a, b);
    for doc in [&ours, &theirs] {
        for t in doc["thread"].as_object().unwrap().values() {
            for (us, count) in t["histogram"].as_object().unwrap() {
                assert!(us.parse::<u32>().is_ok_and(|us| us < 60), "{us}");
                assert!(count.is_u64(), "{count}");
            }
        }
    }
    // The values a reader takes: the same version, thread count, cycles, and the kernel.
    assert_eq!(ours["rt_test_version:"], theirs["rt_test_version:"]);
    assert_eq!(ours["num_threads"], 2);
    for t in ["0", "1"] {
        let o = &ours["thread"][t];
        assert_eq!(o["cycles"], 300);
        let bucketed: u64 = o["histogram"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert!(bucketed <= 300);
        assert!(o["min"].as_u64().unwrap() <= o["max"].as_u64().unwrap());
    }
    for k in [
        "sysname", "nodename", "release", "version", "machine", "realtime",
    ] {
        assert_eq!(ours["sysinfo"][k], theirs["sysinfo"][k], "{k}");
    }
    let cmdline = ours["cmdline:"].as_str().unwrap();
    assert!(cmdline.ends_with("--json=ours.json"), "{cmdline}");
}
