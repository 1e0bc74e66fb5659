//! fio's JSON output of a `bench disk` run (`--output-format fio-json` and `fio-json+`), for
//! what reads fio's: fio-plot, `fio_jsonplus_clat2csv`, dashboards. The layout is fio 3.33's
//! (Debian 12), as its `stat.c` writes it (`show_thread_status_json`, `add_ddir_status_json`,
//! `add_ddir_lat_json`): one job per test (its headline run, as fio with `group_reporting`
//! reports a test's jobs together), each with `read`, `write` and `trim` sections.
//!
//! The values are headroom's measurements, computed as fio computes its own from them: bw in
//! KiB/s from the bytes and the runtime in ms, iops per ms of runtime, latency percentiles and
//! json+ bins from fio's own latency buckets (64 per power of two; headroom's histograms are
//! finer and every one of their buckets lies inside one of fio's, so the bins are exact).
//! What headroom does not measure holds what fio writes when it has nothing: 0.

use super::{DiskDocument, JudgedTest};
use model::disk::{DirectionDetail, LatencyDetail, Moments, RunResult};
use serde_json::{json, Map, Value};

/// fio's latency buckets: `FIO_IO_U_PLAT_BITS` 6, `FIO_IO_U_PLAT_GROUP_NR` 29.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's default percentile list (`def_percentiles` in options.c).
const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The bucket of a latency in ns (fio's `plat_val_to_idx`).
fn plat_idx(ns: u64) -> usize {
    let msb = 63 - ns.max(1).leading_zeros();
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((PLAT_VAL - 1) & (ns >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio gives a bucket: the middle of its range (fio's `plat_idx_to_val`).
fn plat_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx as u64 % PLAT_VAL;
    // base + (k + 0.5) * 2^error_bits, error_bits >= 1: an integer.
    base + k * (1 << error_bits) + (1 << (error_bits - 1))
}

/// A latency's histogram in fio's buckets.
fn plat(d: &LatencyDetail) -> Vec<u64> {
    let mut out = vec![0u64; PLAT_NR];
    for &(ns, count) in &d.buckets {
        out[plat_idx(ns)] += count;
    }
    out
}

/// fio's percentiles of `n` samples from its buckets (`calc_clat_percentiles`): the value of
/// the first bucket where the running count reaches p / 100 × n.
fn percentiles(plat: &[u64], n: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(PERCENTILES.len());
    let mut sum = 0u64;
    let mut j = 0;
    for (i, &c) in plat.iter().enumerate() {
        sum += c;
        while j < PERCENTILES.len() && sum as f64 >= PERCENTILES[j] / 100.0 * n as f64 {
            out.push(plat_val(i));
            j += 1;
        }
        if j == PERCENTILES.len() {
            break;
        }
    }
    out
}

/// fio's `min`, `max`, `mean`, `stddev`, `N` of a latency.
fn moments(m: &Moments) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("min".into(), m.min_ns.into());
    o.insert("max".into(), m.max_ns.into());
    o.insert("mean".into(), m.mean_ns.into());
    o.insert("stddev".into(), m.stddev_ns().into());
    o.insert("N".into(), m.n.into());
    o
}

/// `clat_ns` (and `lat_ns`, whose percentiles fio prints only with `lat_percentiles`):
/// moments, percentiles keyed `"99.000000"` and, for json+, the non-empty buckets keyed by
/// their value.
fn latency(d: &LatencyDetail, with_percentiles: bool, plus: bool) -> Value {
    let mut o = moments(&d.moments);
    if with_percentiles && d.moments.n > 0 {
        let plat = plat(d);
        let p: Map<String, Value> = PERCENTILES
            .iter()
            .zip(percentiles(&plat, d.moments.n))
            .map(|(p, v)| (format!("{p:.6}"), Value::from(v)))
            .collect();
        o.insert("percentile".into(), p.into());
        if plus {
            let bins: Map<String, Value> = plat
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (plat_val(i).to_string(), Value::from(c)))
                .collect();
            o.insert("bins".into(), bins.into());
        }
    }
    o.into()
}

/// One direction's section (`read`, `write`, `trim`): `runtime_ms` 0 for a direction the
/// test does not use, as fio's.
fn direction(d: &DirectionDetail, runtime_ms: u64, plus: bool) -> Value {
    let runtime_ms = if d.ios > 0 { runtime_ms.max(1) } else { 0 };
    let (bw_bytes, iops) = match runtime_ms {
        0 => (0, 0.0),
        r => (1000 * d.bytes / r, 1000.0 * d.ios as f64 / r as f64),
    };
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes >> 10,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": moments(&d.slat),
        "clat_ns": latency(&d.clat, true, plus),
        "lat_ns": latency(&d.lat, false, plus),
        "bw_min": 0,
        "bw_max": 0,
        "bw_agg": 0.0,
        "bw_mean": 0.0,
        "bw_dev": 0.0,
        "bw_samples": 0,
        "iops_min": 0,
        "iops_max": 0,
        "iops_mean": 0.0,
        "iops_stddev": 0.0,
        "iops_samples": 0,
    })
}

/// fio's `latency_ns`, `latency_us` and `latency_ms`: the share of the I/Os (percent) whose
/// total latency falls in each range (`io_u_mark_latency`), from both directions' histograms.
fn latency_shares(dirs: &[&DirectionDetail]) -> (Value, Value, Value) {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut n = [0u64; 10];
    let mut u = [0u64; 10];
    let mut m = [0u64; 12];
    let slot = |v: u64| EDGES.iter().position(|&e| v < e).unwrap_or(EDGES.len());
    let mut total = 0;
    for d in dirs {
        for &(ns, c) in &d.lat.buckets {
            total += c;
            if ns < 1000 {
                n[slot(ns)] += c;
            } else if ns < 1_000_000 {
                u[slot(ns / 1000)] += c;
            } else {
                let ms = ns / 1_000_000;
                let i = if ms < 1000 {
                    slot(ms)
                } else if ms < 2000 {
                    10
                } else {
                    11
                };
                m[i] += c;
            }
        }
    }
    let share = |c: u64| {
        if total == 0 {
            0.0
        } else {
            c as f64 / total as f64 * 100.0
        }
    };
    let map = |counts: &[u64], names: &[&str]| -> Value {
        names
            .iter()
            .zip(counts)
            .map(|(k, &c)| (k.to_string(), Value::from(share(c))))
            .collect::<Map<String, Value>>()
            .into()
    };
    let names = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let ms_names = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    (map(&n, &names), map(&u, &names), map(&m, &ms_names))
}

/// A size as a fio user writes it: `4k`, `1M`, `1536` (fio echoes options as given).
fn fio_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{}k", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

/// fio's `iodepth_level`, `iodepth_submit` and `iodepth_complete`: headroom does not sample
/// the depth, so every share is 0, as fio writes for a job that issued nothing.
fn depth_levels() -> (Value, Value, Value) {
    let zeros = |keys: &[&str]| -> Value {
        keys.iter()
            .map(|k| (k.to_string(), Value::from(0.0)))
            .collect::<Map<String, Value>>()
            .into()
    };
    (
        zeros(&["1", "2", "4", "8", "16", "32", ">=64"]),
        zeros(&["0", "4", "8", "16", "32", "64", ">=64"]),
        zeros(&["0", "4", "8", "16", "32", "64", ">=64"]),
    )
}

/// One test as a fio job: its headline run (the best, or the last when none is complete).
fn job(doc: &DiskDocument, index: usize, t: &JudgedTest, plus: bool) -> Value {
    let spec = &t.test.spec;
    let p = &doc.parameters;
    let empty = RunResult::default();
    let run = t.test.best().unwrap_or(&empty);
    let by = run.by_direction.as_deref().cloned().unwrap_or_default();
    let runtime_ms = (run.seconds * 1000.0).round() as u64;
    let mut options = Map::new();
    options.insert("name".into(), spec.label.clone().into());
    options.insert("rw".into(), spec.workload.fio_name().into());
    if !matches!(spec.workload.read_percent, 0 | 100) {
        options.insert(
            "rwmixread".into(),
            spec.workload.read_percent.to_string().into(),
        );
    }
    options.insert("bs".into(), fio_size(spec.block_size).into());
    options.insert("iodepth".into(), spec.queue_depth.to_string().into());
    options.insert("numjobs".into(), spec.jobs.to_string().into());
    let wall = run.seconds + p.ramp_s;
    let cpu = |s: f64| if wall > 0.0 { s / wall * 100.0 } else { 0.0 };
    let (lat_n, lat_u, lat_m) = latency_shares(&[&by.read, &by.write]);
    let (level, submit, complete) = depth_levels();
    json!({
        "jobname": spec.label,
        "groupid": index,
        "error": 0,
        "eta": 0,
        "elapsed": wall.round() as u64,
        "job options": options,
        "read": direction(&by.read, runtime_ms, plus),
        "write": direction(&by.write, runtime_ms, plus),
        "trim": direction(&DirectionDetail::default(), 0, plus),
        "sync": {
            "total_ios": 0,
            "lat_ns": moments(&Moments::default()),
        },
        "job_runtime": runtime_ms,
        "usr_cpu": cpu(run.cpu_user_s),
        "sys_cpu": cpu(run.cpu_system_s),
        "ctx": 0,
        "majf": 0,
        "minf": 0,
        "iodepth_level": level,
        "iodepth_submit": submit,
        "iodepth_complete": complete,
        "latency_ns": lat_n,
        "latency_us": lat_u,
        "latency_ms": lat_m,
        "latency_depth": spec.queue_depth,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    })
}

/// fio 3.33's `--output-format=json` document of a `bench disk` run (`plus`: json+, with
/// each latency's bins), written at `unix_ms`: `fio version`, `timestamp`, `timestamp_ms`,
/// `time`, `global options` (what every test shares: the file, the engine, O_DIRECT, the
/// size, the runtime and ramp), `jobs` (one per test) and `disk_util` (the device's reads
/// and writes from /proc/diskstats, when the target has a block device).
pub fn json(doc: &DiskDocument, plus: bool, unix_ms: u128) -> String {
    let p = &doc.parameters;
    let mut global = Map::new();
    global.insert(
        "filename".into(),
        doc.target.file.display().to_string().into(),
    );
    global.insert("ioengine".into(), p.engine.clone().into());
    global.insert("direct".into(), u8::from(p.direct).to_string().into());
    global.insert("size".into(), fio_size(p.size_bytes).into());
    global.insert("runtime".into(), seconds(p.runtime_s).into());
    if p.ramp_s > 0.0 {
        global.insert("ramp_time".into(), seconds(p.ramp_s).into());
    }
    if p.time_based {
        global.insert("time_based".into(), "1".into());
    }
    global.insert("group_reporting".into(), "1".into());
    let jobs: Vec<Value> = doc
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| job(doc, i, t, plus))
        .collect();
    let mut top = Map::new();
    top.insert("fio version".into(), "fio-3.33".into());
    top.insert("timestamp".into(), ((unix_ms / 1000) as u64).into());
    top.insert("timestamp_ms".into(), (unix_ms as u64).into());
    top.insert("time".into(), ctime(unix_ms).into());
    top.insert("global options".into(), global.into());
    top.insert("jobs".into(), jobs.into());
    // The device's requests over the runs of the tests shown (fio's disk_util covers its
    // whole run); merges, ticks and utilisation are not sampled.
    if let Some(name) = doc
        .tests
        .iter()
        .filter_map(|t| t.test.best())
        .find_map(|r| r.cross_check.diskstats_device.clone())
    {
        let runs = || doc.tests.iter().filter_map(|t| t.test.best());
        let reads: u64 = runs()
            .filter_map(|r| r.cross_check.diskstats_read_requests)
            .sum();
        let writes: u64 = runs()
            .filter_map(|r| r.cross_check.diskstats_write_requests)
            .sum();
        top.insert(
            "disk_util".into(),
            json!([{
                "name": name,
                "read_ios": reads,
                "write_ios": writes,
                "read_merges": 0,
                "write_merges": 0,
                "read_ticks": 0,
                "write_ticks": 0,
                "in_queue": 0,
                "util": 0.0,
            }]),
        );
    }
    let text = serde_json::to_string_pretty(&Value::Object(top)).unwrap_or_default();
    // A file name's C1 controls as JSON escapes: stdout may be a terminal.
    crate::outside::json(&text).into_owned() + "\n"
}

/// Whole seconds as fio echoes a duration option (`5`), else with their fraction (`0.5`).
fn seconds(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

/// `Sat Nov 28 12:35:43 2026`: ctime's layout, in UTC.
pub(crate) fn ctime(unix_ms: u128) -> String {
    crate::kinds::utc(
        i64::try_from(unix_ms / 1000).unwrap_or(0),
        time::macros::format_description!(
            "[weekday repr:short] [month repr:short] [day padding:space] [hour]:[minute]:[second] [year]"
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    #[test]
    fn buckets_are_fios() {
        // Exact below 128 ns; then 64 buckets per power of two, each given its middle.
        assert_eq!((plat_idx(0), plat_idx(127)), (0, 127));
        assert_eq!((plat_idx(128), plat_val(plat_idx(128))), (128, 129));
        assert_eq!(plat_val(plat_idx(255)), 255);
        // 100 us: 2^16 <= 100000 < 2^17, buckets of 1024 ns.
        let i = plat_idx(100_000);
        assert_eq!(plat_val(i), 97 * 1024 + 512);
        // Far above: the last bucket.
        assert_eq!(plat_idx(u64::MAX >> 1), PLAT_NR - 1);
        // Every bucket's value falls in the bucket.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(plat_idx(plat_val(i)), i, "{i}");
        }
    }

    #[test]
    fn percentiles_as_fio_counts_them() {
        // 100 samples: 1..=100 ns, each its own bucket: p1 = 1, p50 = 50, p99.99 = 100.
        let d = LatencyDetail {
            moments: Moments::default(),
            buckets: (1..=100).map(|v| (v, 1)).collect(),
        };
        let p = percentiles(&plat(&d), 100);
        assert_eq!(p.len(), 17);
        assert_eq!((p[0], p[6], p[16]), (1, 50, 100));
    }

    #[test]
    fn latency_shares_use_fios_ranges() {
        let d = DirectionDetail {
            lat: LatencyDetail {
                moments: Moments::default(),
                buckets: vec![
                    (1, 1),
                    (999, 1),
                    (1_000, 1),
                    (1_999_999, 1),
                    (2_500_000_000, 4),
                ],
            },
            ..Default::default()
        };
        let (n, u, m) = latency_shares(&[&d]);
        assert_eq!(
            (n["2"].as_f64(), n["1000"].as_f64()),
            (Some(12.5), Some(12.5))
        );
        assert_eq!(u["2"].as_f64(), Some(12.5));
        assert_eq!(m["2"].as_f64(), Some(12.5));
        assert_eq!(m[">=2000"].as_f64(), Some(50.0));
    }
}
