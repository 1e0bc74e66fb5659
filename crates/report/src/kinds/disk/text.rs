//! `headroom bench disk`: the CrystalDiskMark-like table (one line per test, units in every
//! header), then each test's efficiency against the path's ceiling, then the notes.
//!
//! It reads the measurements as `model::disk`'s types, with each test's efficiency judged by
//! [`crate::efficiency`].

use crate::terminal::Style;
use model::ceiling::PathCeiling;
use model::disk::{Parameters, RunResult, TargetInfo, TargetKind, TestResult};
use model::Finding;
use std::fmt::Write as _;

/// How a profile runs its tests: runs per test, their time bound, ramp and pauses
/// (`5 runs per test, each 5 s, 5 s pause before each run but the first`), the words of the
/// header line and of the plan `bench disk` prints before it starts.
pub fn plan(p: &Parameters) -> String {
    let bound = if p.time_based {
        format!("{} s", p.runtime_s)
    } else {
        format!("up to {} s or one pass", p.runtime_s)
    };
    let ramp = if p.ramp_s > 0.0 {
        format!(" after a {} s ramp", p.ramp_s)
    } else {
        String::new()
    };
    let pause = if p.pause_s > 0.0 {
        format!(", {} s pause before each run but the first", p.pause_s)
    } else {
        ", no pause".to_string()
    };
    format!(
        "{} per test, each {bound}{ramp}{pause}",
        crate::words::plural(p.runs, "run", "runs")
    )
}

/// What the run will take, before it starts: `plan: 8 tests, 5 runs per test of 5 s, 5 s
/// pause before each run but the first: at most 6 min 35 s`.
pub fn plan_line(p: &Parameters, tests: &[model::disk::TestSpec]) -> String {
    let runs = tests.len() as f64 * f64::from(p.runs);
    let most = runs * (p.ramp_s + p.runtime_s) + (runs - 1.0).max(0.0) * p.pause_s;
    format!(
        "plan: {}, {}: at most {}",
        crate::words::plural(tests.len(), "test", "tests"),
        plan(p),
        model::survey::format_seconds(most)
    )
}

/// The progress line of a running test: `SEQ1M Q8T1 read          run 2/5  run      3.0 s
/// 1234.5 MB/s` (`run` of `runs`, the phase, the seconds into it, the rate over the last
/// interval in MB/s = 10^6 B/s).
pub fn progress_line(
    test: &str,
    (run, runs): (u32, u32),
    phase: &dyn std::fmt::Display,
    elapsed_s: f64,
    bytes_per_sec: f64,
) -> String {
    format!(
        "{test:<24} run {run}/{runs}  {phase:<5} {elapsed_s:>6.1} s  {:>10.1} MB/s",
        bytes_per_sec / model::units::MB
    )
}

/// The text of `bench disk`: `tests` with their efficiency against `ceiling` (tests without
/// a run are left out), the findings (`crate::kinds::disk::findings`), then the notes.
pub(crate) fn render(
    p: &Parameters,
    t: &TargetInfo,
    tests: &[(&TestResult, Option<f64>)],
    ceiling: Option<&PathCeiling>,
    findings: &[Finding],
    notes: &[String],
    style: &Style,
) -> String {
    let mut s = String::new();
    let dev = match &t.device {
        Some(d) if d.name == d.disk => format!("{} ({})", d.name, d.maj_min()),
        Some(d) => format!("{} ({}, disk {})", d.name, d.maj_min(), d.disk),
        None => "an unresolved device".to_string(),
    };
    let kind = match t.kind {
        TargetKind::NewFile => "test file",
        TargetKind::ExistingFile => "existing file",
        TargetKind::BlockDevice => "block device",
    };
    let _ = writeln!(
        s,
        "{} {} ({}, {}) on {dev}",
        style.bold("headroom bench disk"),
        t.file.display(),
        kind,
        model::units::format_bytes_binary(t.size_bytes)
    );
    let buffers = p
        .buffers
        .map(|b| format!(", buffers in {}", b.words()))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "profile {}, engine {}, {}{buffers}, {}; MB/s, MiB/s, IOPS, I/Os in flight and latency \
         (submission to completion, fio's lat = slat + clat; clat in --json) of the best run, \
         mean MB/s of all runs",
        p.profile,
        p.engine,
        if p.direct { "O_DIRECT" } else { "buffered" },
        plan(p),
    );
    s.push('\n');
    let header = [
        "Test",
        "",
        "Best",
        "Mean",
        "Best",
        "Best",
        "In flight",
        "Lat mean",
        "Lat p50",
        "Lat p99",
        "Lat p99.9",
        "Lat max",
        "CPU/IO",
        "proc io",
        "diskstats",
        "requests",
    ];
    let units = [
        "",
        "",
        "(MB/s)",
        "(MB/s)",
        "(MiB/s)",
        "(IOPS)",
        "(mean)",
        "(us)",
        "(us)",
        "(us)",
        "(us)",
        "(us)",
        "(us)",
        "error (%)",
        "error (%)",
        "per I/O",
    ];
    let mut table: Vec<Vec<String>> = vec![
        header.iter().map(|h| h.to_string()).collect(),
        units.iter().map(|h| h.to_string()).collect(),
    ];
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.2}"));
    // Tests with a best run: the table's lines, and the ceiling's below it.
    let rows: Vec<(&TestResult, &RunResult, Option<f64>)> = tests
        .iter()
        .filter_map(|&(t, e)| Some((t, t.best()?, e)))
        .collect();
    // Huge-page buffers let a large I/O go down as fewer requests than fio's 4 KiB pages do:
    // each line measured with them says so, beside its numbers.
    let memory = match p.buffers {
        Some(b @ model::disk::Buffers::HugePages) => format!(", {}", b.words()),
        _ => String::new(),
    };
    for &(t, b, _) in &rows {
        // The worst cross-check of all runs: one bad run is worth seeing.
        let worst = |f: fn(&RunResult) -> Option<f64>| {
            t.runs
                .iter()
                .filter_map(f)
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))
        };
        let l = &b.latency;
        table.push(vec![
            if b.interrupted {
                format!("{} (interrupted)", t.spec.label)
            } else {
                t.spec.label.clone()
            },
            format!("{}{memory}", t.spec.workload.direction()),
            format!("{:.1}", b.mb_per_s),
            format!("{:.1}", t.mean_mb_per_s),
            format!("{:.1}", b.mib_per_s),
            format!("{:.0}", b.iops),
            b.in_flight.map_or("-".to_string(), |n| format!("{n:.1}")),
            us(l.mean_ns),
            us(l.p50_ns as f64),
            us(l.p99_ns as f64),
            us(l.p99_9_ns as f64),
            us(l.max_ns as f64),
            format!("{:.2}", b.cpu_us_per_io),
            pct(worst(|r| r.cross_check.proc_io_error_percent)),
            pct(worst(|r| r.cross_check.diskstats_error_percent)),
            b.cross_check
                .requests_per_io()
                .map_or("-".to_string(), |r| format!("{r:.2}")),
        ]);
    }
    crate::terminal::table(&mut s, &table, 2, 2, style);
    if let Some(c) = ceiling {
        let _ = writeln!(
            s,
            "\nceiling: {} (read {:.1} MB/s, write {:.1} MB/s)",
            c.bottleneck,
            c.read_bytes_per_sec / model::units::MB,
            c.write_bytes_per_sec / model::units::MB
        );
        for &(t, b, e) in &rows {
            if let Some(e) = e {
                let _ = writeln!(
                    s,
                    "  {} {:.1} MB/s = {:.0} % of the ceiling",
                    t.spec.name(),
                    b.mb_per_s,
                    e * 100.0
                );
            }
        }
    }
    if !findings.is_empty() {
        s.push_str(&crate::terminal::findings(findings, |sev| {
            style.severity(sev)
        }));
    }
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            let _ = writeln!(s, "{} {n}", style.warn("note:"));
        }
    }
    s
}
