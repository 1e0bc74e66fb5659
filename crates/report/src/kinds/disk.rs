//! `headroom bench disk`: what a report shows of a disk run.

use crate::document::{Document, DocumentError};
use crate::summary::{put, seconds, yes_no, CeilingRow, Summary, TestRow};
use crate::views::DiskView;
use model::units::{format_bytes_binary, MB};

/// The run's facts, tests and rows for every renderer ([`Summary::of`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
    kernel: &mut Option<String>,
    governor: &mut Option<String>,
) -> Result<(), DocumentError> {
    let d: DiskView = doc.view(origin)?;
    let sys = &d.system;
    *kernel = kernel.take().or(sys.kernel.clone());
    *governor = sys.governor.clone();
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
    let percent = |t: &crate::views::DiskTestView| t.test.spec.workload.read_percent;
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
    for crate::views::DiskTestView {
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
