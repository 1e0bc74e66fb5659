//! `headroom bench disk`: its document (the engine's measurements, the path's ceiling with
//! each test's efficiency, the findings), its terminal text and what a report shows of it.

/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::DocumentKind;
use crate::document::{Document, DocumentError};
use crate::export::Export;
use crate::kinds::count::BesideCounters;
use crate::summary::{put, CeilingRow, Summary, TestRow};

use crate::words::{seconds, yes_no};
use model::ceiling::PathCeiling;
use model::disk::{DiskResult, HostFacts, Parameters, TargetInfo, TestResult};
use model::path::TargetPath;
use model::units::{format_bytes_binary, MB};
use model::Finding;
use serde::{Deserialize, Serialize};

pub mod fio;

/// What `headroom bench disk --json` writes (the envelope aside), read back by report,
/// compare, history and the survey: the engine's measurements, the path's ceiling with each
/// test's efficiency as [`crate::efficiency`] judges it, and the path they are judged
/// against. Fields and their order are those of the document since version 1; the ones
/// added since are `#[serde(default)]`, so older documents still read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiskDocument {
    pub parameters: Parameters,
    pub system: HostFacts,
    pub target: TargetInfo,
    /// The path's bottleneck ceiling; null when the path could not be resolved.
    #[serde(default)]
    pub ceiling: Option<PathCeiling>,
    pub tests: Vec<JudgedTest>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Stopped by a signal before every test ran; absent in documents written before a run
    /// could be kept after an interruption.
    #[serde(default)]
    pub interrupted: Option<bool>,
    /// The chain of hardware from the target to the CPU, each link with its ceiling.
    #[serde(default)]
    pub path: Option<TargetPath>,
    /// What the numbers mean beyond themselves ([`crate::kinds::disk::findings`]): a rate above the
    /// ceiling, I/Os split into several requests.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Interrupts of the path's devices and the root port's PMU bytes, sampled beside the
    /// engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<BesideCounters>,
}

/// One test's measurements and, last, its best run's efficiency against the path's ceiling.
#[derive(Clone, Debug, Serialize)]
pub struct JudgedTest {
    #[serde(flatten)]
    pub test: TestResult,
    /// measured / ceiling, 0..1; null without a ceiling.
    pub efficiency: Option<f64>,
}

impl<'de> Deserialize<'de> for JudgedTest {
    /// The test's fields and its efficiency are side by side in the document: the test is
    /// read as a JSON object, then split. A bad field is named with the place where the test
    /// ends (serde_json adds it to the message: `...; the test ends at line 80 column 5`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Test;
        impl<'de> serde::de::Visitor<'de> for Test {
            type Value = JudgedTest;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a test (an object)")
            }
            // The split is made here, inside the object: serde_json places an error of
            // `visit_map` where the object ends.
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<JudgedTest, A::Error> {
                use serde::de::Error;
                let mut fields = serde_json::Map::new();
                while let Some((k, v)) = a.next_entry::<String, serde_json::Value>()? {
                    fields.insert(k, v);
                }
                let efficiency = match fields.remove("efficiency") {
                    Some(v) => Option::<f64>::deserialize(&v)
                        .map_err(|e| A::Error::custom(format!("efficiency: {e}; the test ends")))?,
                    None => None,
                };
                let test = TestResult::deserialize(&serde_json::Value::Object(fields))
                    .map_err(|e| A::Error::custom(format!("{e}; the test ends")))?;
                Ok(JudgedTest { test, efficiency })
            }
        }
        d.deserialize_map(Test)
    }
}

impl DiskDocument {
    /// The engine's result judged against the path's `ceiling`. `diskless`: the engine does
    /// no I/O (its rate is headroom's own overhead); `emulated`: an emulated or paravirtual
    /// device on the path, in words (what can carry a rate past the ceiling; the PCI
    /// inventory tells it, not the result).
    pub fn judge(
        result: &DiskResult,
        ceiling: Option<&PathCeiling>,
        path: Option<&TargetPath>,
        diskless: bool,
        emulated: Option<String>,
    ) -> Self {
        // Every field named: a new measurement cannot be left out of the document unnoticed.
        // The result's own schema_version and kind are the envelope's.
        let DiskResult {
            schema_version: _,
            kind: _,
            parameters,
            system,
            target,
            tests,
            notes,
            interrupted,
        } = result;
        let tests: Vec<JudgedTest> = tests
            .iter()
            .map(|t| JudgedTest {
                test: t.clone(),
                efficiency: ceiling.zip(t.best()).and_then(|(c, b)| {
                    crate::efficiency::efficiency(
                        b.bytes,
                        b.seconds,
                        t.spec.workload.read_percent,
                        c,
                    )
                }),
            })
            .collect();
        let judged: Vec<_> = tests.iter().map(|t| (&t.test, t.efficiency)).collect();
        let beyond = crate::kinds::disk::findings::beyond(result, diskless, emulated);
        let findings = crate::kinds::disk::findings::findings(result, &judged, ceiling, &beyond);
        DiskDocument {
            parameters: parameters.clone(),
            system: system.clone(),
            target: target.clone(),
            ceiling: ceiling.cloned(),
            tests,
            notes: notes.clone(),
            interrupted: Some(*interrupted),
            path: path.cloned(),
            findings,
            counters: None,
        }
    }
}

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
    kernel: &mut Option<String>,
    governor: &mut Option<String>,
) -> Result<(), DocumentError> {
    let d = <DiskDocument as super::KindDocument>::read(doc, origin)?;
    let sys = &d.system;
    *kernel = kernel.take().or(sys.kernel.clone());
    *governor = sys.governor.clone();
    if let Some(ddr) = &sys.ddr {
        put(s, "DDR governor", ddr.describe());
    }
    s.hostname = s.hostname.take().or(sys.hostname.clone());
    let p = &d.parameters;
    put(s, "profile", p.profile.clone());
    put(s, "engine", p.engine.clone());
    let io = if p.direct { "O_DIRECT" } else { "buffered" };
    put(s, "I/O", io.to_string());
    put(s, "size", format_bytes_binary(p.size_bytes));
    put(s, "runs", p.runs.to_string());
    put(s, "runtime (upper bound)", seconds(p.runtime_s));
    put(s, "ramp", seconds(p.ramp_s));
    put(s, "pause between runs", seconds(p.pause_s));
    put(s, "time based", yes_no(p.time_based));
    put(s, "fsync at the end", yes_no(p.fsync_end));
    let data = if p.zero_buffers { "zeros" } else { "random" };
    put(s, "write data", data.to_string());
    put(s, "headline", format!("{} run", p.shown.name()));
    put(s, "CPUs", sys.cpus.to_string());
    let t = &d.target;
    let (given, f) = (t.given.display().to_string(), t.file.display().to_string());
    // headroom's own file (in a directory the user gave) is named after its
    // process: its directory is what two runs can share.
    let file = match t.kind {
        model::disk::TargetKind::NewFile if given != f => {
            let dir = t
                .file
                .parent()
                .map(|d| d.display().to_string())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| ".".into());
            format!("new file in {dir}")
        }
        k => format!("{f} ({})", k.words()),
    };
    put(s, "test file", file);
    if let Some(dev) = &t.device {
        put(s, "device", format!("{} ({})", dev.name, dev.maj_min()));
    }
    if let Some(i) = d.interrupted {
        put(s, "interrupted", yes_no(i));
    }
    s.target = Some(given);
    // One ceiling line for the run: the direction its tests move data in (the
    // smaller of the two when it has both).
    let percent = |t: &JudgedTest| t.test.spec.workload.read_percent;
    let reads = d.tests.iter().any(|t| percent(t) > 0);
    let writes = d.tests.iter().any(|t| percent(t) < 100);
    s.ceiling = d.ceiling.as_ref().map(|c| CeilingRow {
        mb_s: match (reads, writes) {
            (true, false) => c.read_bytes_per_sec,
            (false, true) => c.write_bytes_per_sec,
            _ => c.read_bytes_per_sec.min(c.write_bytes_per_sec),
        } / MB,
        bottleneck: c.bottleneck.clone(),
    });
    let mean = p.shown == model::disk::Shown::Mean;
    // How many tests of each name came before: counted once per test, so a run
    // of many tests reads in time linear in their number.
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for JudgedTest {
        test: t,
        efficiency,
    } in &d.tests
    {
        let runs: Vec<f64> = t.runs.iter().map(|r| r.mb_per_s).collect();
        let headline_run = t.best();
        let measured = match headline_run {
            Some(b) if !mean => b.mb_per_s,
            _ => t.mean_mb_per_s,
        };
        let efficiency = efficiency.or_else(|| {
            s.ceiling
                .as_ref()
                .filter(|c| c.mb_s > 0.0)
                .map(|c| measured / c.mb_s)
        });
        // Compare lines tests up by name: a repeated name gets its ordinal.
        let mut name = t.spec.name();
        let same = seen.entry(name.clone()).or_insert(0);
        *same += 1;
        if *same > 1 {
            name = format!("{name} ({same})");
        }
        let cross_check = headline_run.map(|r| &r.cross_check);
        s.tests.push(TestRow {
            name,
            direction: t.spec.workload.direction(),
            block_size: Some(t.spec.block_size),
            measured_mb_s: measured,
            runs_mb_s: runs,
            efficiency,
            mean_mb_s: Some(t.mean_mb_per_s),
            proc_io_error_percent: cross_check.and_then(|c| c.proc_io_error_percent),
            diskstats_error_percent: cross_check.and_then(|c| c.diskstats_error_percent),
            cpu_us_per_io: headline_run.map(|r| r.cpu_us_per_io),
            iops: headline_run.map(|r| r.iops),
            latency: headline_run.map(|r| r.latency.clone().clamped()),
            ceiling: None,
        });
    }
    Ok(())
}

/// `bench disk` as every report reads it.
pub struct DiskKind;

impl super::Kind for DiskKind {
    fn kind(&self) -> DocumentKind {
        <DiskDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["parameters", "tests"]
    }

    fn exports(&self) -> &'static [Export] {
        &[
            Export::OpenMetrics,
            Export::Lava,
            Export::Kcidb,
            Export::FioJson,
            Export::FioJsonPlus,
        ]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        s.every_throughput_column = true;
        summarize(doc, origin, s, &mut facts.kernel, &mut facts.governor)
    }
}

impl super::KindDocument for DiskDocument {
    const KIND: DocumentKind = DocumentKind::Disk;

    /// The CrystalDiskMark-like table of `bench disk` ([`crate::kinds::disk::text`]).
    fn text(&self, how: &super::Text<'_>) -> String {
        let tests: Vec<_> = self.tests.iter().map(|t| (&t.test, t.efficiency)).collect();
        crate::kinds::disk::text::render(
            &self.parameters,
            &self.target,
            &tests,
            self.ceiling.as_ref(),
            &self.findings,
            &self.notes,
            &how.style,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;
    use crate::kinds::KindDocument as _;
    use testsupport::disk::null_result;

    fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
                let p = format!("{prefix}.{k}");
                out.push(p.clone());
                key_paths(v, &p, out);
            }),
            serde_json::Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, v)| key_paths(v, &format!("{prefix}[{i}]"), out)),
            _ => {}
        }
    }

    /// A run on a board whose DDR clock scales (devfreq `dmc_ondemand`) says so, with how to
    /// hold it; one held at `performance` says nothing; the fact is kept for compare.
    #[test]
    fn a_run_with_a_scaling_ddr_clock_is_told_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut result = null_result(dir.path());
        let mut dmc = model::system::DevFreq {
            name: "dmc".into(),
            governor: Some("dmc_ondemand".into()),
            cur_hz: Some(1_068_000_000),
            min_hz: Some(528_000_000),
            max_hz: Some(2_112_000_000),
            available_hz: vec![528_000_000, 1_068_000_000, 1_560_000_000, 2_112_000_000],
        };
        result.system.ddr = Some(dmc.clone());
        let doc = DiskDocument::judge(&result, None, None, true, None);
        let ddr: Vec<&Finding> = doc
            .findings
            .iter()
            .filter(|f| f.subject == "devfreq")
            .collect();
        assert_eq!(ddr.len(), 1, "{:#?}", doc.findings);
        assert_eq!(
            ddr[0].sentence(),
            "the DDR frequency scaled during the run (dmc (dmc_ondemand)): the memory clock \
             followed the load, so these rates vary from run to run and with what else runs; \
             for benchmarks, write `performance` to /sys/class/devfreq/dmc/governor (the \
             Rockchip PCIe guide fixes the CPU and the DDR at their highest frequency first)"
        );
        dmc.governor = Some("performance".into());
        result.system.ddr = Some(dmc);
        let doc = DiskDocument::judge(&result, None, None, true, None);
        assert!(
            !doc.findings.iter().any(|f| f.subject == "devfreq"),
            "{:#?}",
            doc.findings
        );
    }

    #[test]
    fn the_document_judges_efficiency_against_the_path_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let result = null_result(dir.path());
        // A ceiling far below anything the null engine does, however loaded the machine (one
        // 4 KiB I/O in its 0.05 s is 82 kB/s): the judgement must not depend on its speed.
        let ceiling = PathCeiling {
            read_bytes_per_sec: 400.0,
            write_bytes_per_sec: 200.0,
            full_duplex: false,
            bottleneck: "USB 2-1 at 5000 Mb/s".into(),
        };
        let judged = serde_json::to_value(DiskDocument::judge(
            &result,
            Some(&ceiling),
            None,
            true,
            None,
        ))
        .unwrap();
        let bare =
            serde_json::to_value(DiskDocument::judge(&result, None, None, true, None)).unwrap();
        // The same fields in the same order, with or without a ceiling (whose own fields are
        // there only when it is); the judgement where the document always had it.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        key_paths(&judged, "", &mut a);
        key_paths(&bare, "", &mut b);
        a.retain(|k| !k.starts_with(".ceiling.") && !k.starts_with(".findings["));
        assert_eq!(a, b);
        // The null engine outruns any ceiling: a finding says it moved no data,
        // and without a ceiling there is nothing to exceed.
        let above = judged["findings"][0]["message"].as_str().unwrap();
        assert!(
            above.contains("of the ceiling of USB 2-1 at 5000 Mb/s: more than that link can carry")
                && above
                    .contains("headroom believes no data crossed it: the null engine does no I/O"),
            "{above}"
        );
        assert_eq!(bare["findings"], serde_json::json!([]));
        let top: Vec<&str> = judged
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            top,
            [
                "parameters",
                "system",
                "target",
                "ceiling",
                "tests",
                "notes",
                "interrupted",
                "path",
                "findings"
            ]
        );
        let test = &judged["tests"][0];
        assert_eq!(
            test.as_object().unwrap().keys().next_back().unwrap(),
            "efficiency"
        );
        assert_eq!(judged["ceiling"]["bottleneck"], "USB 2-1 at 5000 Mb/s");
        assert!(bare["tests"][0]["efficiency"].is_null());
        // 70 % reads on a shared medium: 1 / (0.7/400 + 0.3/200) B/s = 307.7 B/s.
        let best = &result.tests[0].runs[result.tests[0].best_run];
        let expect = best.bytes as f64 / best.seconds / (1.0 / (0.7 / 400.0 + 0.3 / 200.0));
        let got = test["efficiency"].as_f64().unwrap();
        assert!(
            (got - expect).abs() < 1e-9 * expect.max(1.0),
            "{got} vs {expect}"
        );
        // The terminal shows the same judgement.
        let text = DiskDocument::judge(&result, Some(&ceiling), None, true, None)
            .text(&crate::kinds::Text::default());
        assert!(
            text.contains("ceiling: USB 2-1 at 5000 Mb/s (read 0.0 MB/s, write 0.0 MB/s)"),
            "{text}"
        );
        assert!(
            text.contains(&format!("= {:.0} % of the ceiling", got * 100.0)),
            "{text}"
        );
        // A ceiling of this size shows in MB/s.
        let usb = PathCeiling {
            read_bytes_per_sec: 400e6,
            write_bytes_per_sec: 200e6,
            ..ceiling
        };
        let text = DiskDocument::judge(&result, Some(&usb), None, true, None)
            .text(&crate::kinds::Text::default());
        assert!(
            text.contains("ceiling: USB 2-1 at 5000 Mb/s (read 400.0 MB/s, write 200.0 MB/s)"),
            "{text}"
        );
    }
}

#[cfg(test)]
mod text_tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;
    use crate::kinds::KindDocument as _;
    use testsupport::disk::null_result;

    /// A measured result with every number the table shows set by hand, so the text is known.
    fn fixed_result(dir: &std::path::Path) -> DiskResult {
        let mut r = null_result(dir);
        r.target.file = "/mnt/x/headroom-disk.tmp".into();
        r.target.size_bytes = 1 << 30;
        r.target.device = Some(model::blockdev::DeviceNumber {
            major: 259,
            minor: 2,
            name: "nvme0n1p2".into(),
            disk: "nvme0n1".into(),
            partition: Some(2),
        });
        r.parameters.runtime_s = 5.0;
        r.parameters.ramp_s = 1.0;
        r.notes = vec!["a note".into()];
        let t = &mut r.tests[0];
        t.spec.label = "RND4K Q32T1".into();
        t.mean_mb_per_s = 1234.56;
        let b = t.best_run;
        let run = &mut t.runs[b];
        run.bytes = 2_000_000_000;
        run.seconds = 2.0;
        run.mb_per_s = 1000.04;
        run.mib_per_s = 953.7;
        run.iops = 244_150.6;
        run.latency.mean_ns = 12_345.0;
        run.latency.p50_ns = 10_000;
        run.latency.p99_ns = 55_555;
        run.latency.p99_9_ns = 99_999;
        run.latency.max_ns = 1_234_567;
        run.in_flight = Some(31.94);
        run.cpu_us_per_io = 4.25678;
        run.cross_check.proc_io_error_percent = Some(0.5);
        run.cross_check.diskstats_error_percent = None;
        run.interrupted = false;
        r
    }

    /// The table of `bench disk`, byte for byte (pinned before its renderer moved to report;
    /// since then: the mean I/Os in flight, and 4 KiB-page buffers by default).
    #[test]
    fn disk_text_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let r = fixed_result(dir.path());
        let ceiling = PathCeiling {
            read_bytes_per_sec: 1500e6,
            write_bytes_per_sec: 1000e6,
            full_duplex: true,
            bottleneck: "PCIe 0000:00:1c.0 -> 0000:01:00.0 at 8 GT/s x2".into(),
        };
        // 70 % reads at 1000 MB/s on a full-duplex link: reads saturate first, at
        // 1500 / 0.7 = 2142.9 MB/s in total, so 47 %.
        let text = DiskDocument::judge(&r, Some(&ceiling), None, true, None)
            .text(&crate::kinds::Text::default());
        let expected = "\
headroom bench disk /mnt/x/headroom-disk.tmp (test file, 1 GiB) on nvme0n1p2 (259:2, disk nvme0n1)
profile custom, engine null, O_DIRECT, buffers in 4 KiB pages, 1 run per test, each up to 5 s or one pass after a 1 s ramp, no pause; MB/s, MiB/s, IOPS, I/Os in flight and latency (submission to completion, fio's lat = slat + clat; clat in --json) of the best run, mean MB/s of all runs

Test                         Best    Mean     Best    Best  In flight  Lat mean  Lat p50  Lat p99  Lat p99.9  Lat max  CPU/IO    proc io  diskstats  requests
                           (MB/s)  (MB/s)  (MiB/s)  (IOPS)     (mean)      (us)     (us)     (us)       (us)     (us)    (us)  error (%)  error (%)   per I/O
RND4K Q32T1  mix 70% read  1000.0  1234.6    953.7  244151       31.9      12.3     10.0     55.6      100.0   1234.6    4.26      +0.50          -         -

ceiling: PCIe 0000:00:1c.0 -> 0000:01:00.0 at 8 GT/s x2 (read 1500.0 MB/s, write 1000.0 MB/s)
  RND4K Q32T1 mix 70% read 1000.0 MB/s = 47 % of the ceiling

note: a note
";
        assert_eq!(text, expected, "\n{text}");
    }
}
