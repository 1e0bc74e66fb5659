#![allow(clippy::unwrap_used)]
//! Markdown, compare and JSON of fixed result documents (tests/fixtures/results/).

use report::compare::compare;
use report::{Document, Summary};
use std::path::PathBuf;

use crate::common;
use common::{fixture, summary};

#[test]
fn every_fixture_reads_back_into_the_same_document() {
    for name in [
        "disk-peak.json",
        "latency-2-threads.json",
        "rpi5-gen2.json",
        "rpi5-gen3.json",
    ] {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let doc = Document::parse(&text, name).unwrap();
        let a: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc.to_value(), a, "{name}");
        assert_eq!(Document::parse(&doc.to_json_pretty(), name).unwrap(), doc);
    }
}

#[test]
fn markdown_of_a_disk_run() {
    insta::assert_snapshot!(report::markdown::render(&[summary("disk-peak.json")]));
}

#[test]
fn markdown_of_a_latency_run() {
    let s = summary("latency-2-threads.json");
    // The p99 of thread 0 from its histogram, as `bench latency` computes it.
    assert!(s.threads[0].p99_us.is_some());
    insta::assert_snapshot!(report::markdown::render(&[s]));
}

#[test]
fn markdown_of_the_raspberry_pi_pair() {
    let md = report::markdown::render(&[summary("rpi5-gen2.json"), summary("rpi5-gen3.json")]);
    assert!(md.contains("| dd 100M write | 393.9 |"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn compare_reproduces_the_seed_gen2_to_gen3() {
    let c = compare(&[summary("rpi5-gen2.json"), summary("rpi5-gen3.json")]).unwrap();
    let row = &c.rows[0];
    assert_eq!(row.metric, "dd 100M write");
    // seeds/003: 394 MB/s at Gen 2 x1, 732 MB/s at Gen 3 x1, "an increase of 85%"
    // (5242880000 B in 13.31 s and in 7.1666 s: +85.7 %; the article truncates).
    assert_eq!(format!("{:.0}", row.values[0].unwrap()), "394");
    assert_eq!(format!("{:.0}", row.values[1].unwrap()), "732");
    let d = row.delta(1).unwrap();
    assert_eq!(d.percent.trunc(), 85.0);
    assert!(!d.regression);
    assert_eq!(d.significant, None, "one run each: the spread is unknown");
    // The link state is listed as what changed.
    assert!(c.changes.iter().any(|ch| ch.key.starts_with("link PCIe")
        && ch.values[0].as_deref().unwrap().starts_with("5 GT/s x1")));
    assert!(c.regressions_above(5.0).is_empty());
    // Backwards it is a regression of 46 % in MB/s and IOPS, and 85 % more latency per I/O.
    let back = compare(&[summary("rpi5-gen3.json"), summary("rpi5-gen2.json")]).unwrap();
    let worse: Vec<String> = back
        .regressions_above(40.0)
        .into_iter()
        .map(|r| format!("{} ({})", r.metric, r.unit))
        .collect();
    assert_eq!(
        worse,
        [
            "dd 100M write (MB/s)",
            "dd 100M write (IOPS)",
            "dd 100M write latency mean (us)",
            "dd 100M write latency p99 (us)"
        ]
    );
    assert_eq!(back.regressions_above(50.0).len(), 2, "the latencies only");
    insta::assert_snapshot!(c.to_markdown());
}

#[test]
fn a_difference_within_the_spread_is_not_significant() {
    // disk-peak ran each test 5 times; compared with itself shifted by 1 % it stays
    // within the runs' spread.
    let a = summary("disk-peak.json");
    let mut b = a.clone();
    b.origin = "b".into();
    for t in &mut b.tests {
        t.measured_mb_s *= 0.99;
    }
    let c = compare(&[a, b]).unwrap();
    for row in c.rows.iter().filter(|r| r.unit == "MB/s") {
        assert_eq!(
            row.delta(1).unwrap().significant,
            Some(false),
            "{}",
            row.metric
        );
    }
    assert!(c.regressions_above(0.5).is_empty());
    assert!(c.to_markdown().contains("(not significant)"));
}

#[test]
fn compare_refuses_two_kinds() {
    let e = compare(&[summary("rpi5-gen2.json"), summary("latency-2-threads.json")])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "rpi5-gen2.json is a result of kind `disk` and latency-2-threads.json of kind \
         `latency`: compare runs of the same kind"
    );
}

#[test]
fn json_of_a_document_is_stable() {
    let doc = Document::read(&fixture("rpi5-gen3.json")).unwrap();
    insta::assert_snapshot!(doc.to_json_pretty());
}

#[test]
fn the_json_schema_requires_what_the_reader_requires() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/result-document.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        schema["required"],
        serde_json::json!(["schema_version", "kind"])
    );
    assert_eq!(
        schema["properties"]["schema_version"]["const"],
        u64::from(report::document::SCHEMA_VERSION)
    );
    // Every fixture has the envelope fields the schema describes, first and in order.
    for name in ["disk-peak.json", "latency-2-threads.json", "rpi5-gen2.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().take(5).cloned().collect();
        assert_eq!(
            keys,
            ["schema_version", "kind", "tool", "created", "host"],
            "{name}"
        );
    }
}

#[test]
fn compare_of_latency_runs_calls_more_latency_a_regression() {
    let a = summary("latency-2-threads.json");
    let mut b = a.clone();
    b.origin = "loaded".into();
    for t in &mut b.threads {
        t.max_us *= 2;
    }
    let c = compare(&[a, b]).unwrap();
    let max0 = c.rows.iter().find(|r| r.metric == "thread 0 max").unwrap();
    let d = max0.delta(1).unwrap();
    assert_eq!(d.percent.round(), 100.0);
    assert!(d.regression, "twice the latency is worse");
    let avg0 = c.rows.iter().find(|r| r.metric == "thread 0 avg").unwrap();
    assert!(!avg0.delta(1).unwrap().regression, "unchanged");
    assert_eq!(
        c.regressions_above(50.0).len(),
        3,
        "max of threads 0, 1 and all"
    );
}

#[test]
fn fail_above_gates_measured_results_never_counters() {
    // A run 15 % faster with lower latency "regressed: interrupts of
    // 0000:00:02.0 ... +14.0 %" (exit 1), and a latency compare failed only on "interrupts
    // on CPU 0 +99.8 %". Counters are shown, never gated; a measured result's regression
    // line names its metric with its unit and both values.
    let irq = |per_second: f64| {
        move |v: &mut serde_json::Value| {
            v["counters"] = serde_json::json!({"interrupts": [{"device": "0000:00:02.0",
                "irqs": [35, 36], "names": ["virtio1-req.0"], "count": 1000,
                "per_second": per_second, "seconds": 10.0}]});
        }
    };
    let slow = edited("rpi5-gen2.json", "slow.json", irq(1000.0));
    let fast = edited("rpi5-gen3.json", "fast.json", irq(1140.0));
    let c = compare(&[slow.clone(), fast.clone()]).unwrap();
    let irq_row = c
        .rows
        .iter()
        .find(|r| r.metric.starts_with("interrupts of 0000:00:02.0"))
        .unwrap();
    assert!(
        irq_row.delta(1).unwrap().regression,
        "more interrupts is a cost, shown"
    );
    assert!(
        c.regressions_above(5.0).is_empty(),
        "{:?}",
        c.regressions_above(5.0)
    );
    let md = c.to_markdown();
    assert!(
        md.contains("### Counters (shown beside the results; `--fail-above` never gates on them)"),
        "{md}"
    );
    // Backwards it is slower: the measured results gate, each with its unit.
    let back = compare(&[fast, slow]).unwrap();
    let lines: Vec<String> = back
        .regressions_above(5.0)
        .iter()
        .map(|r| r.sentence())
        .collect();
    assert_eq!(
        lines[0],
        "dd 100M write (MB/s): 393.9 in slow.json against 731.6 in fast.json, -46.2 %"
    );
    assert!(
        lines.iter().all(|l| !l.contains("interrupts")),
        "{lines:#?}"
    );

    // Latency: lower latency and twice the interrupts on CPU 0 is no regression.
    let cpu0 = |per_second: f64, quieter: bool| {
        move |v: &mut serde_json::Value| {
            v["interrupts"] = serde_json::json!({"elapsed_s": 2.0, "cpus": [{"cpu": 0,
                "count": (per_second * 2.0) as u64, "per_second": per_second, "sources": []}]});
            if quieter {
                for t in v["measurement"]["threads"].as_array_mut().unwrap() {
                    let max = t["stats"]["max_ns"].as_u64().unwrap();
                    t["stats"]["max_ns"] = (max / 2).into();
                }
            }
        }
    };
    let a = edited("latency-2-threads.json", "a.json", cpu0(500.0, false));
    let b = edited("latency-2-threads.json", "b.json", cpu0(999.0, true));
    let c = compare(&[a, b]).unwrap();
    assert!(c.rows.iter().any(|r| r.metric == "interrupts on CPU 0"));
    assert!(
        c.regressions_above(5.0).is_empty(),
        "{:?}",
        c.regressions_above(5.0)
    );
}

#[test]
fn a_percentile_above_the_histogram_limit_compares_as_its_bound() {
    // Compare showed "–" where the run printed ">200" (a p99 above the
    // histogram's limit), and the run with it was not known to be worse.
    // Every histogram of the run: each thread's and the total's.
    fn each_histogram(v: &mut serde_json::Value, f: impl Fn(&mut serde_json::Value)) {
        let threads = v["measurement"]["threads"].as_array().unwrap().len();
        for i in 0..threads {
            f(&mut v["measurement"]["threads"][i]["stats"]["histogram"]);
        }
        f(&mut v["measurement"]["total"]["histogram"]);
    }
    // Cut at `limit` us as `bench latency -h limit` would have kept them: the buckets above
    // it counted as overflow.
    let cut = |limit: u64| {
        move |v: &mut serde_json::Value| {
            v["config"]["histogram_limit_us"] = limit.into();
            each_histogram(v, |h| {
                let buckets = h["buckets"].as_array().unwrap().clone();
                let (kept, over): (Vec<_>, Vec<_>) = buckets
                    .into_iter()
                    .partition(|b| b[0].as_u64().unwrap() < limit);
                let over: u64 = over.iter().map(|b| b[1].as_u64().unwrap()).sum();
                h["buckets"] = kept.into();
                h["limit_us"] = limit.into();
                h["overflow"] = (h["overflow"].as_u64().unwrap_or(0) + over).into();
            });
        }
    };
    let a = summary("latency-2-threads.json");
    let b = edited("latency-2-threads.json", "overflowed.json", cut(100));
    let limit_row = |c: &report::compare::Comparison, metric: &str| {
        c.rows.iter().find(|r| r.metric == metric).cloned().unwrap()
    };
    assert_eq!(b.threads[0].p99_us, None, "above the limit of 100 us");
    let c = compare(&[a.clone(), b.clone()]).unwrap();
    let p99 = limit_row(&c, "thread 0 p99");
    assert_eq!(p99.value_text(0), "199");
    assert_eq!(
        p99.value_text(1),
        ">100",
        "the bound, as the run printed it"
    );
    // 199 us against "above 100 us": the direction is not known, so no difference is shown.
    assert_eq!(p99.delta(1), None);
    let md = c.to_markdown();
    assert!(
        md.contains("| thread 0 p99 (us) | 199 | >100 | – |"),
        "{md}"
    );
    // Against a run whose p99 is below the bound, the change is at least the one to it.
    let quick = edited("latency-2-threads.json", "quick.json", |v| {
        each_histogram(v, |h| {
            h["buckets"] = serde_json::json!([[9, 10]]);
            h["overflow"] = 0.into();
        });
    });
    let c = compare(&[quick, b]).unwrap();
    let p99 = limit_row(&c, "thread 0 p99");
    let d = p99.delta(1).unwrap();
    assert!(d.at_least && d.regression, "{d:?}");
    // (100 - 9) / 9: at least +1011.1 %.
    assert_eq!(d.words(), "≥ +1011.1 %");
    assert!(c
        .to_markdown()
        .contains("| thread 0 p99 (us) | 9 | >100 | ≥ +1011.1 % |"));
    let worse: Vec<String> = c
        .regressions_above(50.0)
        .iter()
        .map(|r| r.sentence())
        .collect();
    assert!(
        worse.contains(
            &"thread 0 p99 (us): >100 in overflowed.json against 9 in quick.json, ≥ +1011.1 %"
                .to_string()
        ),
        "{worse:#?}"
    );
}

#[test]
fn the_block_table_says_what_the_terminal_says() {
    // The report's Block table showed max_hw_sectors_kb 2147483647 where the
    // terminal says "no limit", and a 1 MiB device as "0.0" GiB.
    let s = edited("audit-nvme-downgraded.json", "audit.json", |v| {
        v["block"]["devices"][0]["queue"]["max_hw_sectors_kb"] = 2_147_483_647u64.into();
    });
    let md = report::markdown::render(&[s]);
    assert!(
        md.contains("| dm-1 | disk | 1.0 MiB | virtual | no | none | 1280 | no limit | 128 |"),
        "{md}"
    );
    assert!(md.contains("| nvme0n1 | disk | 931.5 GiB |"), "{md}");
}

/// `name` with `edit` applied to its JSON, as another run's document.
fn edited(name: &str, origin: &str, edit: impl Fn(&mut serde_json::Value)) -> Summary {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
    edit(&mut v);
    let doc = Document::parse(&v.to_string(), origin).unwrap();
    report::kinds::summarize(&doc, origin).unwrap()
}

#[test]
fn compare_lists_every_parameter_that_differs_first() {
    // O_DIRECT against buffered, another size and a tmpfs target gave
    // "Same configuration in every run" next to +808 %.
    let a = summary("disk-peak.json");
    let b = edited("disk-peak.json", "buffered.json", |v| {
        v["parameters"]["direct"] = false.into();
        v["parameters"]["size_bytes"] = (1u64 << 30).into();
        v["parameters"]["runtime_s"] = 5.0.into();
        v["target"]["device"]["name"] = "zram0".into();
    });
    let c = compare(&[a, b]).unwrap();
    let changed: Vec<(&str, Vec<Option<&str>>)> = c
        .changes
        .iter()
        .map(|ch| {
            (
                ch.key.as_str(),
                ch.values.iter().map(|v| v.as_deref()).collect(),
            )
        })
        .collect();
    assert!(changed.contains(&("I/O", vec![Some("O_DIRECT"), Some("buffered")])));
    assert!(changed.contains(&("size", vec![Some("32 MiB"), Some("1 GiB")])));
    assert!(changed.contains(&("runtime (upper bound)", vec![Some("1 s"), Some("5 s")])));
    assert!(changed.contains(&("device", vec![Some("vda (254:0)"), Some("zram0 (254:0)")])));
    // The same settings are listed too, after the differences.
    assert!(c.same.iter().any(|s| s.key == "engine"));
    let md = c.to_markdown();
    assert!(!md.contains("Same configuration"), "{md}");
    let what = md.find("### What changed (4 settings)").unwrap();
    assert!(what < md.find("### Same in every run").unwrap(), "{md}");
    assert!(
        md.find("| I/O | O_DIRECT | buffered |").unwrap() > what,
        "{md}"
    );
}

#[test]
fn compare_of_latency_runs_lists_stress_threads_and_duration() {
    let a = summary("latency-2-threads.json");
    let b = edited("latency-2-threads.json", "loaded.json", |v| {
        v["stress"] = serde_json::json!({"spec": {"cpu": 4, "cpu_load": 100, "io": 1, "vm": 1,
            "vm_bytes_per_worker": 4194304, "vm_stride": 8,
            "interpretation": "stress-ng semantics: vm-bytes 4 MiB divided across 1 vm worker(s)"}});
        v["config"]["threads"] = 1.into();
        v["config"]["limits"]["duration_s"] = 60.into();
        v["config"]["interval_us"] = 200.into();
    });
    let c = compare(&[a, b]).unwrap();
    let keys: Vec<&str> = c.changes.iter().map(|ch| ch.key.as_str()).collect();
    assert_eq!(keys, ["threads", "interval", "duration", "stress"]);
    let stress = &c.changes[3].values;
    assert_eq!(stress[0].as_deref(), Some("none"));
    assert_eq!(stress[1].as_deref(), Some("cpu=4,io=1,vm=1,vm-bytes=4M"));
    // Identical runs still say so, and list what they share.
    let same = compare(&[
        summary("latency-2-threads.json"),
        summary("latency-2-threads.json"),
    ])
    .unwrap();
    assert!(same.changes.is_empty());
    let md = same.to_markdown();
    assert!(md.contains("Same configuration in every run:"), "{md}");
    assert!(md.contains("| interval | 1000 us |"), "{md}");
}

#[test]
fn latency_numbers_are_truncated_like_cyclictest_everywhere() {
    // 719.8 us was 720 in the report, 719.8 in compare and "max 720" in
    // the history while cyclictest (and the terminal) said 719.
    let s = edited("latency-2-threads.json", "t.json", |v| {
        v["measurement"]["threads"][0]["stats"]["max_ns"] = 719_800.into();
        v["measurement"]["threads"][0]["stats"]["min_ns"] = 8_900.into();
        v["measurement"]["threads"][0]["stats"]["avg_ns"] = 21_960.0.into();
        v["measurement"]["threads"][1]["stats"]["max_ns"] = 500_000.into();
        v["measurement"]["total"]["max_ns"] = 719_800.into();
    });
    let t = &s.threads[0];
    assert_eq!((t.min_us, t.max_us), (8, 719));
    assert_eq!(format!("{:.1}", t.avg_us), "21.9");
    let md = report::markdown::render(std::slice::from_ref(&s));
    assert!(md.contains("| 0 | ~1 | 1999 | 8 | 21.9 |"), "{md}");
    assert!(md.contains("| 719 | 0 | 0 |"), "{md}");
    assert_eq!(s.headline(), "max 719 us");
    let c = compare(&[s.clone(), s]).unwrap();
    assert!(c
        .to_markdown()
        .contains("| thread 0 max (us) | 719 | 719 |"));
}

#[test]
fn one_of_a_thing_is_singular() {
    // "1 threads", "1 findings".
    let one = edited("latency-2-threads.json", "one.json", |v| {
        let t0 = v["measurement"]["threads"][0].clone();
        v["measurement"]["threads"] = serde_json::json!([t0]);
        v["findings"] = serde_json::json!([]);
    });
    assert_eq!(one.test_label(), "latency (1 thread)");
    // The terminal prints `all` under one thread too; so does the report.
    assert_eq!(one.threads.last().unwrap().name, "all");
    assert_eq!(
        summary("latency-2-threads.json").test_label(),
        "latency (2 threads)"
    );
    let audit = edited("audit-nvme-downgraded.json", "audit.json", |v| {
        v["findings"] = serde_json::json!([{"severity": "Info", "message": "m"}]);
    });
    assert_eq!(audit.headline(), "1 finding");
    let changed = compare(&[
        summary("latency-2-threads.json"),
        edited("latency-2-threads.json", "b.json", |v| {
            v["config"]["priority"] = 80.into();
        }),
    ])
    .unwrap();
    assert!(changed
        .to_markdown()
        .contains("### What changed (1 setting)"));
}
