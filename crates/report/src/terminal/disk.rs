//! `headroom bench disk`: the CrystalDiskMark-like table (one line per test, units in every
//! header), then each test's efficiency against the path's ceiling, then the notes.
//!
//! report does not see bench's types: cli hands the measurements over as [`DiskHeading`] and
//! [`DiskRow`]s, with the efficiency judged by [`crate::efficiency`].

use super::Style;
use model::blockdev::DeviceNumber;
use model::ceiling::PathCeiling;
use std::fmt::Write as _;
use std::path::Path;

/// What was measured, where, and how: the two lines above the table.
#[derive(Clone, Debug)]
pub struct DiskHeading<'a> {
    /// The file or device read and written.
    pub file: &'a Path,
    /// "test file", "existing file", "block device".
    pub kind: &'a str,
    pub size_bytes: u64,
    /// The block device below the file, when it could be resolved.
    pub device: Option<&'a DeviceNumber>,
    pub profile: &'a str,
    pub engine: &'a str,
    /// O_DIRECT (true) or buffered.
    pub direct: bool,
    pub runs: u32,
    pub runtime_s: f64,
    pub ramp_s: f64,
}

/// One test that has a best run: its numbers as the table shows them.
#[derive(Clone, Debug, Default)]
pub struct DiskRow {
    pub label: String,
    /// The best run was cut short by Ctrl-C: its numbers cover the seconds measured before.
    pub interrupted: bool,
    /// "read", "write", "mix 70% read".
    pub direction: String,
    pub best_mb_per_s: f64,
    pub mean_mb_per_s: f64,
    pub best_mib_per_s: f64,
    pub best_iops: f64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_p99_9_ns: u64,
    pub lat_max_ns: u64,
    pub cpu_us_per_io: f64,
    /// The worst cross-check error of all runs (one bad run is worth seeing), in %.
    pub proc_io_error_percent: Option<f64>,
    pub diskstats_error_percent: Option<f64>,
    /// Best run / the path's ceiling for this test's mix.
    pub efficiency: Option<f64>,
}

/// The text of `bench disk`.
pub fn render(
    h: &DiskHeading,
    rows: &[DiskRow],
    ceiling: Option<&PathCeiling>,
    notes: &[String],
    style: &Style,
) -> String {
    let mut s = String::new();
    let dev = match h.device {
        Some(d) if d.name == d.disk => format!("{} ({})", d.name, d.maj_min()),
        Some(d) => format!("{} ({}, disk {})", d.name, d.maj_min(), d.disk),
        None => "an unresolved device".to_string(),
    };
    let _ = writeln!(
        s,
        "{} {} ({}, {}) on {dev}",
        style.bold("headroom bench disk"),
        h.file.display(),
        h.kind,
        model::units::format_bytes_binary(h.size_bytes)
    );
    let _ = writeln!(
        s,
        "profile {}, engine {}, {}, {} run{} of up to {} s{}; MB/s, MiB/s, IOPS and latency \
         (submission to completion, fio's lat = slat + clat; clat in --json) of the best run, mean \
         MB/s of all runs",
        h.profile,
        h.engine,
        if h.direct { "O_DIRECT" } else { "buffered" },
        h.runs,
        if h.runs == 1 { "" } else { "s" },
        h.runtime_s,
        if h.ramp_s > 0.0 {
            format!(" after {} s ramp", h.ramp_s)
        } else {
            String::new()
        },
    );
    s.push('\n');
    let header = [
        "Test",
        "",
        "Best",
        "Mean",
        "Best",
        "Best",
        "Lat mean",
        "Lat p50",
        "Lat p99",
        "Lat p99.9",
        "Lat max",
        "CPU/IO",
        "proc io",
        "diskstats",
    ];
    let units = [
        "",
        "",
        "(MB/s)",
        "(MB/s)",
        "(MiB/s)",
        "(IOPS)",
        "(µs)",
        "(µs)",
        "(µs)",
        "(µs)",
        "(µs)",
        "(µs)",
        "error (%)",
        "error (%)",
    ];
    let mut table: Vec<Vec<String>> = vec![
        header.iter().map(|h| h.to_string()).collect(),
        units.iter().map(|h| h.to_string()).collect(),
    ];
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.2}"));
    for r in rows {
        table.push(vec![
            if r.interrupted {
                format!("{} (interrupted)", r.label)
            } else {
                r.label.clone()
            },
            r.direction.clone(),
            format!("{:.1}", r.best_mb_per_s),
            format!("{:.1}", r.mean_mb_per_s),
            format!("{:.1}", r.best_mib_per_s),
            format!("{:.0}", r.best_iops),
            us(r.lat_mean_ns),
            us(r.lat_p50_ns as f64),
            us(r.lat_p99_ns as f64),
            us(r.lat_p99_9_ns as f64),
            us(r.lat_max_ns as f64),
            format!("{:.2}", r.cpu_us_per_io),
            pct(r.proc_io_error_percent),
            pct(r.diskstats_error_percent),
        ]);
    }
    super::table(&mut s, &table, 2, 2, style);
    if let Some(c) = ceiling {
        let _ = writeln!(
            s,
            "\nceiling: {} (read {:.1} MB/s, write {:.1} MB/s)",
            c.bottleneck,
            c.read_bytes_per_sec / model::units::MB,
            c.write_bytes_per_sec / model::units::MB
        );
        for r in rows {
            if let Some(e) = r.efficiency {
                let _ = writeln!(
                    s,
                    "  {} {} {:.1} MB/s = {:.0} % of the ceiling",
                    r.label,
                    r.direction,
                    r.best_mb_per_s,
                    e * 100.0
                );
            }
        }
    }
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            let _ = writeln!(s, "{} {n}", style.warn("note:"));
        }
    }
    s
}
