//! cyclictest's own outputs of a `bench latency` run, for what reads cyclictest's: the
//! histogram text of `-h`/`-H` (OSADL's latency plots, rteval, Linaro's test-definitions
//! parse it) and the document of `--json=FILE`, both as rt-tests 2.4 (Debian 12's
//! `cyclictest V 2.40`) writes them (`src/cyclictest/cyclictest.c`: `print_hist`,
//! `write_stats`; `src/lib/rt-utils.c`: `rt_write_json`; `src/lib/histogram.c`).
//!
//! Latencies are whole microseconds truncated from headroom's nanoseconds, as cyclictest
//! truncates its own; the histogram is the run's 1 us histogram bucket for bucket.

use super::LatencyDocument;
use model::latency::{Measurement, ThreadResult};
use model::units::whole_us;
use std::fmt::Write;

/// How the histogram text is asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct HistogramText {
    /// `-H`/`--histofall`: with two threads or more, a summary column after the threads'
    /// (and on the `Total`, `Max` and `Overflows` lines, where rt-tests 2.4 adds it).
    pub histofall: bool,
    /// Without `-q` cyclictest leaves each thread's last status line (`T: 0 ( 1234) P:99
    /// ...`) above the histogram.
    pub quiet: bool,
}

/// cyclictest's `-h`/`-H` text of a run: `# /dev/cpu_dma_latency set to 0us` when the run
/// held it, the thread lines without `-q`, `# Histogram`, one zero-padded line per 1 us bucket
/// with a tab-separated column per thread, then `# Total:` (bucketed wake-ups), `# Min
/// Latencies:`, `# Avg Latencies:`, `# Max Latencies:`, `# Histogram Overflows:` and the
/// cycle numbers of the first overflows of each thread (`# 00012 others` for the rest).
pub fn histogram_text(m: &Measurement, how: HistogramText) -> String {
    let mut out = String::new();
    if m.privileges.cpu_dma_latency_held.is_done() {
        out.push_str("# /dev/cpu_dma_latency set to 0us\n");
    }
    let threads = &m.threads;
    if !how.quiet {
        for t in threads {
            let s = &t.stats;
            let avg = if s.count == 0 { 0.0 } else { s.avg_ns };
            let _ = writeln!(
                out,
                "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
                t.thread,
                t.tid,
                t.priority,
                t.interval_us,
                s.count,
                whole_us(s.min_ns),
                whole_us(s.act_ns),
                whole_us(avg as u64),
                whole_us(s.max_ns)
            );
        }
    }
    // The summary column only with two threads or more, as cyclictest.
    let all = how.histofall && threads.len() > 1;
    out.push_str("# Histogram\n");
    let buckets = threads
        .iter()
        .map(|t| t.stats.histogram.counts.len())
        .max()
        .unwrap_or(0);
    let count = |t: &ThreadResult, us: usize| t.stats.histogram.counts.get(us).copied();
    for us in 0..buckets {
        let _ = write!(out, "{us:06} ");
        let mut sum = 0;
        for (i, t) in threads.iter().enumerate() {
            let c = count(t, us).unwrap_or(0);
            sum += c;
            let sep = if i == 0 { "" } else { "\t" };
            let _ = write!(out, "{sep}{c:06}");
        }
        if all {
            let _ = write!(out, "\t{sum:06}");
        }
        out.push('\n');
    }
    let line = |out: &mut String, name: &str, width: usize, v: &[u64], sum: Option<u64>| {
        let _ = write!(out, "# {name}:");
        for x in v.iter().chain(sum.as_ref()) {
            let _ = write!(out, " {x:0width$}");
        }
        out.push('\n');
    };
    let per = |f: &dyn Fn(&ThreadResult) -> u64| threads.iter().map(f).collect::<Vec<u64>>();
    let totals = per(&|t| t.stats.histogram.counts.iter().sum());
    let total_all = all.then(|| totals.iter().sum());
    line(&mut out, "Total", 9, &totals, total_all);
    line(
        &mut out,
        "Min Latencies",
        5,
        &per(&|t| whole_us(t.stats.min_ns)),
        None,
    );
    // cyclictest's average is an integer division of microseconds.
    line(
        &mut out,
        "Avg Latencies",
        5,
        &per(&|t| whole_us(t.stats.avg_ns as u64)),
        None,
    );
    let maxima = per(&|t| whole_us(t.stats.max_ns));
    let max_all = all.then(|| maxima.iter().copied().max().unwrap_or(0));
    line(&mut out, "Max Latencies", 5, &maxima, max_all);
    let overflows = per(&|t| t.stats.histogram.overflow);
    let overflow_all = all.then(|| overflows.iter().sum());
    line(&mut out, "Histogram Overflows", 5, &overflows, overflow_all);
    out.push_str("# Histogram Overflow at cycle number:\n");
    for t in threads {
        let _ = write!(out, "# Thread {}:", t.thread);
        let kept = &t.stats.overflow_cycles;
        for c in kept {
            let _ = write!(out, " {c:05}");
        }
        let others = t.stats.histogram.overflow.saturating_sub(kept.len() as u64);
        if others > 0 {
            let _ = write!(out, " # {others:05} others");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// What the `--json=FILE` document needs beyond the run's: what only the command line and
/// the machine's uname know.
#[derive(Clone, Debug, Default)]
pub struct JsonRun {
    /// The command line as given (cyclictest's `cmdline:`).
    pub cmdline: String,
    /// uname(2)'s node name, release, version (`#1 SMP PREEMPT_RT ...`) and machine
    /// (`x86_64`, `aarch64`, `armv7l`), as rt-tests records them.
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
    /// The exit code the run ends with (cyclictest's `return_code`).
    pub return_code: i32,
}

/// rt-tests 2.4's `--json=FILE` document of a run, every key rt-tests writes with the type it
/// writes (`cmdline:` and `rt_test_version:` with their colon, as rt-tests spells them): the
/// file version, the command line, the layout's version (`2.40`), the start and end (UTC),
/// the return code, the kernel's uname with `realtime` (1 on PREEMPT_RT, as
/// /sys/kernel/realtime says), then per thread
/// the non-empty 1 us buckets, cycles, min, max, avg (us; avg with two decimals) and CPU.
pub fn json(doc: &LatencyDocument, run: &JsonRun) -> String {
    use serde_json::{json, Map, Value};
    let m = &doc.measurement;
    let start_ms = doc.started_unix_ms;
    let end_ms = start_ms + u128::from(m.elapsed_ns / 1_000_000);
    let kernel = doc.context.as_ref().map(|c| &c.kernel);
    let mut threads = Map::new();
    for t in &m.threads {
        let s = &t.stats;
        let histogram: Map<String, Value> = s
            .histogram
            .buckets()
            .into_iter()
            .map(|(us, c)| (us.to_string(), Value::from(c)))
            .collect();
        let avg_us = if s.count == 0 { 0.0 } else { s.avg_ns / 1000.0 };
        let cpu = t.cpu.or(t.last_cpu).map_or(-1, i64::from);
        threads.insert(
            t.thread.to_string(),
            json!({
                "histogram": histogram,
                "cycles": s.count,
                "min": whole_us(s.min_ns),
                "max": whole_us(s.max_ns),
                "avg": (avg_us * 100.0).round() / 100.0,
                "cpu": cpu,
                "node": 0,
            }),
        );
    }
    let doc = json!({
        "file_version": 1,
        "cmdline:": run.cmdline,
        "rt_test_version:": "2.40",
        "start_time": rfc2822(start_ms),
        "end_time": rfc2822(end_ms),
        "return_code": run.return_code,
        "sysinfo": {
            "sysname": "Linux",
            "nodename": run.nodename,
            "release": run.release,
            "version": run.version,
            "machine": run.machine,
            "realtime": i32::from(kernel.is_some_and(|k| k.preemption.is_realtime())),
        },
        "num_threads": m.threads.len(),
        "resolution_in_ns": 0,
        "thread": threads,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// `Sat, 28 Nov 2026 12:00:37 +0000`: rt-tests' `%a, %d %b %Y %T %z`, in UTC.
pub(crate) fn rfc2822(unix_ms: u128) -> String {
    crate::kinds::utc(
        i64::try_from(unix_ms / 1000).unwrap_or(0),
        time::macros::format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] +0000"
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;
    use model::latency::{merge, Histogram, Step, ThreadResult};

    /// A thread of `n` wake-ups: `(us, count)` buckets of a 4 us histogram, `over` overflows
    /// of which the first are `cycles`.
    fn thread(i: usize, buckets: &[(usize, u64)], over: u64, cycles: &[u64]) -> ThreadResult {
        let mut h = Histogram::new(4);
        for &(us, c) in buckets {
            h.counts[us] = c;
        }
        h.overflow = over;
        let mut stats = merge(&[], 1);
        stats.count = h.total();
        stats.histogram = h;
        stats.min_ns = 1_999;
        stats.avg_ns = 2_999.9;
        stats.max_ns = 12_345;
        stats.act_ns = 2_100;
        stats.overflow_cycles = cycles.to_vec();
        ThreadResult {
            thread: i,
            tid: 4242 + i as i32,
            cpu: Some(i as u32),
            last_cpu: Some(i as u32),
            priority: 99,
            interval_us: 1000,
            stats,
            cpu_time_ns: 0,
            cpu_time_per_wakeup_ns: 0.0,
        }
    }

    #[test]
    fn the_text_is_cyclictests_to_the_byte() {
        let mut m = testsupport::latency::measurement(Step::Done, 0);
        m.threads = vec![
            thread(0, &[(1, 5), (2, 1_234_567)], 3, &[7, 9]),
            thread(1, &[(3, 2)], 0, &[]),
        ];
        let how = HistogramText {
            histofall: true,
            quiet: true,
        };
        assert_eq!(
            histogram_text(&m, how),
            "# /dev/cpu_dma_latency set to 0us\n\
             # Histogram\n\
             000000 000000\t000000\t000000\n\
             000001 000005\t000000\t000005\n\
             000002 1234567\t000000\t1234567\n\
             000003 000000\t000002\t000002\n\
             # Total: 001234572 000000002 001234574\n\
             # Min Latencies: 00001 00001\n\
             # Avg Latencies: 00002 00002\n\
             # Max Latencies: 00012 00012 00012\n\
             # Histogram Overflows: 00003 00000 00003\n\
             # Histogram Overflow at cycle number:\n\
             # Thread 0: 00007 00009 # 00001 others\n\
             # Thread 1:\n\
             \n"
        );
        // One thread: no summary column even with -H (rt-tests 2.4); without -q the thread's
        // last line first; no cpu_dma_latency line when the run did not hold it.
        m.threads.truncate(1);
        m.privileges.cpu_dma_latency_held = Step::Refused("EACCES".into());
        let text = histogram_text(
            &m,
            HistogramText {
                histofall: true,
                quiet: false,
            },
        );
        assert!(
            text.starts_with(
                "T: 0 ( 4242) P:99 I:1000 C:1234575 Min:      1 Act:    2 Avg:    2 Max:      12\n\
                 # Histogram\n000000 000000\n"
            ),
            "{text}"
        );
        assert!(text.contains("# Total: 001234572\n# Min"), "{text}");
    }

    #[test]
    fn the_json_has_rt_tests_keys_in_its_order() {
        let mut m = testsupport::latency::measurement(Step::Done, 0);
        m.threads = vec![thread(0, &[(1, 5)], 1, &[3])];
        m.threads[0].cpu = None;
        m.threads[0].last_cpu = None;
        m.elapsed_ns = 2_500_000_000;
        let doc = LatencyDocument {
            config: None,
            started_unix_ms: 1_795_867_237_000,
            interrupted: false,
            notes: Vec::new(),
            context: None,
            stress: None,
            load_average: Vec::new(),
            measurement: m,
            interrupts: None,
            split: None,
            findings: Vec::new(),
        };
        let text = json(&doc, &JsonRun::default());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let top: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            top,
            [
                "file_version",
                "cmdline:",
                "rt_test_version:",
                "start_time",
                "end_time",
                "return_code",
                "sysinfo",
                "num_threads",
                "resolution_in_ns",
                "thread"
            ]
        );
        assert_eq!(v["start_time"], "Sat, 28 Nov 2026 12:00:37 +0000");
        assert_eq!(v["end_time"], "Sat, 28 Nov 2026 12:00:39 +0000");
        let t = &v["thread"]["0"];
        assert_eq!(t["histogram"], serde_json::json!({"1": 5}));
        assert_eq!(
            (t["cycles"].as_u64(), t["min"].as_u64()),
            (Some(6), Some(1))
        );
        // The mean in us with two decimals, a float as `%.2f` writes it; an unpinned thread
        // that never reported its CPU is -1.
        assert_eq!(t["avg"].as_f64(), Some(3.0));
        assert!(text.contains("\"avg\": 3.0,"), "{text}");
        assert_eq!(t["cpu"], -1);
    }
}
