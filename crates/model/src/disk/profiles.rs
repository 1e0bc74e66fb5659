//! Test sets (`--profile`) and the fio-style flags that override them: `bench disk`'s one
//! configuration, its values checked here (each refusal one sentence naming the flag).
//!
//! CrystalDiskMark 8's sets and defaults (1 GiB, 5 runs of 5 s, 5 s interval, best run shown)
//! are from its documentation and settings dialog (crystalmark.info, CrystalDiskMark 8.0
//! "Settings > Test Data / Interval / Profile"). `rk` is the fio emulation of seed 000 §8.1.1
//! (`-direct=1 -iodepth 32 -bs=1024K` read/write and `-bs=4K` randread/randwrite, numjobs 1,
//! `-runtime=180` without time_based: each command once, until its size or 180 s);
//! `dd` is the block-size sweep of seed 004 (4K, 64K, 128K, 512K over a 1 GiB file, caches
//! dropped before each run), with 1M added as the size where USB disks usually saturate.

use super::{Buffers, Parameters, Pattern, Shown, TestSpec, Workload};
use crate::units::{parse_duration, parse_size, size_label};

/// Smallest and largest block size accepted: one 512 B sector (the smallest logical block a
/// Linux block device has) to 64 MiB (fio accepts more, but no device gains from it).
pub const MIN_BLOCK_SIZE: u64 = 512;
pub const MAX_BLOCK_SIZE: u64 = 64 << 20;
/// Largest queue depth per job: io_uring rings accept 32768 entries (IORING_MAX_ENTRIES), but
/// NVMe queues stop at 1023 usable entries (NVMe 1.4 §4.1.3: 64 Ki entries max, Linux caps
/// `io_queue_depth` at 1024), so deeper queues only wait in software.
pub const MAX_QUEUE_DEPTH: u32 = 1024;

/// A named test set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Cdm,
    CdmNvme,
    Peak,
    Real,
    Rk,
    Dd,
    /// The short set of `headroom survey`: SEQ1M Q8T1, RND4K Q32T1 and SEQ1M Q1T1, the tests
    /// that tell a link-bound device (sequential, deep queue) from a latency-bound one.
    Survey,
    /// No profile: one test from the flags alone (fio's way).
    Custom,
}

impl Profile {
    pub const NAMES: [&'static str; 7] = ["cdm", "cdm-nvme", "peak", "real", "rk", "dd", "survey"];

    pub fn parse(s: &str) -> Result<Profile, String> {
        Ok(match s {
            "cdm" => Profile::Cdm,
            "cdm-nvme" => Profile::CdmNvme,
            "peak" => Profile::Peak,
            "real" => Profile::Real,
            "rk" => Profile::Rk,
            "dd" => Profile::Dd,
            "survey" => Profile::Survey,
            _ => {
                return Err(format!(
                    "--profile {s}: no such profile; choose one of {}",
                    Profile::NAMES.join(", ")
                ))
            }
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Profile::Cdm => "cdm",
            Profile::CdmNvme => "cdm-nvme",
            Profile::Peak => "peak",
            Profile::Real => "real",
            Profile::Rk => "rk",
            Profile::Dd => "dd",
            Profile::Survey => "survey",
            Profile::Custom => "custom",
        }
    }

    /// `(sequential?, block size, queue depth, jobs)` of each CrystalDiskMark-style test.
    fn cdm_set(&self) -> &'static [(bool, u64, u32, u32)] {
        const M: u64 = 1 << 20;
        const K: u64 = 1 << 10;
        match self {
            Profile::Cdm => &[
                (true, M, 8, 1),
                (true, M, 1, 1),
                (false, 4 * K, 32, 1),
                (false, 4 * K, 1, 1),
            ],
            Profile::CdmNvme => &[
                (true, M, 8, 1),
                (true, 128 * K, 32, 1),
                (false, 4 * K, 32, 16),
                (false, 4 * K, 1, 1),
            ],
            Profile::Peak => &[(true, M, 8, 1), (false, 4 * K, 32, 1)],
            Profile::Real => &[(true, M, 1, 1), (false, 4 * K, 1, 1)],
            Profile::Rk => &[(true, M, 32, 1), (false, 4 * K, 32, 1)],
            Profile::Survey => &[(true, M, 8, 1), (false, 4 * K, 32, 1), (true, M, 1, 1)],
            Profile::Dd | Profile::Custom => &[],
        }
    }
}

/// Flags given on the command line; each one set overrides the profile's value for every test.
/// Sizes (`4k`, `1M`) and times (`10`, `2.5s`, `500ms`) are as the user wrote them: [`build`]
/// reads and checks them.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub rw: Option<String>,
    pub rwmixread: Option<u8>,
    /// `--bs`.
    pub block_size: Option<String>,
    pub queue_depth: Option<u32>,
    pub jobs: Option<u32>,
    pub size: Option<String>,
    pub runtime: Option<String>,
    pub ramp: Option<String>,
    pub runs: Option<u32>,
    pub pause: Option<String>,
    pub direct: Option<bool>,
    pub time_based: bool,
    pub fsync_end: bool,
    pub zero: bool,
    pub shown: Option<Shown>,
    pub buffers: Option<Buffers>,
}

/// The workload named by fio's `--rw` (`rw`/`randrw` take `--rwmixread`, default 50).
pub fn parse_rw(s: &str, mix: Option<u8>) -> Result<Workload, String> {
    use Pattern::{Random, Sequential};
    let mix = mix.unwrap_or(50);
    if mix > 100 {
        return Err(format!(
            "--rwmixread {mix}: a percentage of reads must be 0 to 100"
        ));
    }
    let (pattern, read_percent) = match s {
        "read" => (Sequential, 100),
        "write" => (Sequential, 0),
        "randread" => (Random, 100),
        "randwrite" => (Random, 0),
        "rw" | "readwrite" => (Sequential, mix),
        "randrw" => (Random, mix),
        _ => {
            return Err(format!(
                "--rw {s}: not a workload; use read, write, randread, randwrite, rw or randrw \
                 (fio's names)"
            ))
        }
    };
    Ok(Workload {
        pattern,
        read_percent,
    })
}

/// A size or time flag's value read, or the sentence naming the flag.
fn read<T>(
    flag: &str,
    given: &Option<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    given
        .as_deref()
        .map(|s| parse(s).map_err(|why| format!("{flag} {s}: {why}")))
        .transpose()
}

/// The sizes and times of `o` read: `--bs`, `--size`, `--runtime`, `--ramp`, `--pause`.
struct Read {
    block_size: Option<u64>,
    size: Option<u64>,
    runtime_s: Option<f64>,
    ramp_s: Option<f64>,
    pause_s: Option<f64>,
}

impl Overrides {
    fn read(&self) -> Result<Read, String> {
        let secs = |s: &str| parse_duration(s).map(|d| d.as_secs_f64());
        Ok(Read {
            block_size: read("--bs", &self.block_size, parse_size)?,
            size: read("--size", &self.size, parse_size)?,
            runtime_s: read("--runtime", &self.runtime, secs)?,
            ramp_s: read("--ramp", &self.ramp, secs)?,
            pause_s: read("--pause", &self.pause, secs)?,
        })
    }
}

/// The tests and parameters of `profile` with `o` applied on top, checked.
pub fn build(
    profile: Profile,
    o: &Overrides,
    engine: &str,
    cpus: usize,
) -> Result<(Parameters, Vec<TestSpec>), String> {
    const GIB: u64 = 1 << 30;
    let v = o.read()?;
    // CrystalDiskMark 8 defaults: 5 runs, 5 s each, 5 s interval, 1 GiB, best shown.
    let (mut runs, mut runtime, mut pause, mut time_based) = match profile {
        Profile::Dd => (1, 30.0, 0.0, false),
        // The Rockchip guide ran each fio command once, one after the other.
        Profile::Rk => (1, 180.0, 0.0, false),
        Profile::Custom => (1, 5.0, 0.0, o.time_based),
        _ => (5, 5.0, 5.0, true),
    };
    runs = o.runs.unwrap_or(runs);
    runtime = v.runtime_s.unwrap_or(runtime);
    pause = v.pause_s.unwrap_or(pause);
    time_based |= o.time_based;
    let direct = o.direct.unwrap_or(true);
    let mut tests = Vec::new();
    let rw =
        o.rw.as_deref()
            .map(|s| parse_rw(s, o.rwmixread))
            .transpose()?;
    // fio ignores rwmixread for a workload that does not mix; a user who gave it meant a mix.
    if let Some(mix) = o.rwmixread {
        if !matches!(o.rw.as_deref(), Some("rw" | "readwrite" | "randrw")) {
            return Err(format!(
                "--rwmixread {mix}: only a mixed workload has a read share; add --rw rw or \
                 --rw randrw, or drop --rwmixread"
            ));
        }
    }
    // --jobs is bounded by the CPUs (4 per CPU); a profile's own job count (CrystalDiskMark's
    // T16) is kept as defined, since its numbers are compared with the original's.
    let max_jobs = (cpus.max(1) * 4) as u32;
    if let Some(j) = o.jobs.filter(|j| !(1..=max_jobs).contains(j)) {
        return Err(format!(
            "--jobs {j}: jobs must be between 1 and {max_jobs} (4 per CPU)"
        ));
    }
    match profile {
        Profile::Custom => {
            let w = rw.unwrap_or(Workload::READ);
            let bs = v.block_size.unwrap_or(if w.pattern == Pattern::Random {
                4096
            } else {
                1 << 20
            });
            let qd = o.queue_depth.unwrap_or(1);
            let jobs = o.jobs.unwrap_or(1);
            let label = TestSpec::cdm_label(w, bs, qd, jobs);
            tests.push(TestSpec::new(&label, w, bs, qd, jobs));
        }
        Profile::Dd => {
            for dir in [Workload::WRITE, Workload::READ] {
                if rw.is_some_and(|w| w.read_percent != dir.read_percent) {
                    continue;
                }
                for bs in [4u64 << 10, 64 << 10, 128 << 10, 512 << 10, 1 << 20] {
                    let bs = v.block_size.unwrap_or(bs);
                    let label = format!("dd {}", size_label(bs));
                    tests.push(TestSpec::new(
                        &label,
                        dir,
                        bs,
                        o.queue_depth.unwrap_or(1),
                        o.jobs.unwrap_or(1),
                    ));
                }
                if v.block_size.is_some() {
                    tests.dedup();
                }
            }
        }
        _ => {
            // CrystalDiskMark runs every read, then every write.
            for read in [true, false] {
                for &(seq, bs, qd, jobs) in profile.cdm_set() {
                    let w = match (seq, read) {
                        (true, true) => Workload::READ,
                        (true, false) => Workload::WRITE,
                        (false, true) => Workload::RANDREAD,
                        (false, false) => Workload::RANDWRITE,
                    };
                    let w = match rw {
                        Some(r) if r.read_percent != w.read_percent => continue,
                        _ => w,
                    };
                    let bs = v.block_size.unwrap_or(bs);
                    let qd = o.queue_depth.unwrap_or(qd);
                    let jobs = o.jobs.unwrap_or(jobs);
                    tests.push(TestSpec::new(
                        &TestSpec::cdm_label(w, bs, qd, jobs),
                        w,
                        bs,
                        qd,
                        jobs,
                    ));
                }
            }
        }
    }
    if tests.is_empty() {
        return Err(format!(
            "--rw {} selects no test of profile {}; use read or write with a profile",
            o.rw.as_deref().unwrap_or(""),
            profile.name()
        ));
    }
    let p = Parameters {
        profile: profile.name().to_string(),
        engine: engine.to_string(),
        direct,
        zero_buffers: o.zero,
        size_bytes: v.size.unwrap_or(GIB),
        runs,
        runtime_s: runtime,
        ramp_s: v.ramp_s.unwrap_or(0.0),
        pause_s: pause,
        time_based,
        fsync_end: o.fsync_end,
        // Seed 004 drops the page cache before each dd; with O_DIRECT there is none to drop.
        drop_caches: profile == Profile::Dd && !direct,
        shown: o.shown.unwrap_or(Shown::Best),
        buffers: Some(o.buffers.unwrap_or(Buffers::Pages)),
    };
    validate(&p, &tests)?;
    Ok((p, tests))
}

/// Refuse what cannot run, with the flag, the value and the allowed range.
pub fn validate(p: &Parameters, tests: &[TestSpec]) -> Result<(), String> {
    let bad = |m: String| Err(m);
    // A hard bound for any source of jobs: one thread per job.
    let max_jobs = 1024;
    for t in tests {
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&t.block_size) {
            return bad(format!(
                "--bs {}: block size must be between 512 bytes and 64 MiB",
                t.block_size
            ));
        }
        if t.block_size % 512 != 0 {
            return bad(format!(
                "--bs {}: block size must be a multiple of 512 bytes (the sector size)",
                t.block_size
            ));
        }
        if !(1..=MAX_QUEUE_DEPTH).contains(&t.queue_depth) {
            return bad(format!(
                "--qd {}: queue depth must be between 1 and {MAX_QUEUE_DEPTH}",
                t.queue_depth
            ));
        }
        if !(1..=max_jobs).contains(&t.jobs) {
            return bad(format!(
                "--jobs {}: jobs must be between 1 and {max_jobs}",
                t.jobs
            ));
        }
        // Bound the buffer memory: every job holds queue depth × block size.
        let mem = t.block_size * t.queue_depth as u64 * t.jobs as u64;
        if mem > 4 << 30 {
            return bad(format!(
                "{}: --bs × --qd × --jobs = {} MiB of I/O buffers; keep it under 4096 MiB",
                t.label,
                mem >> 20
            ));
        }
    }
    if p.runs == 0 || p.runs > 100 {
        return bad(format!("--runs {}: runs must be between 1 and 100", p.runs));
    }
    if p.runtime_s <= 0.0 {
        return bad("--runtime 0: a run needs a positive time bound".to_string());
    }
    if p.size_bytes < MIN_BLOCK_SIZE {
        return bad(format!(
            "--size {}: the test size must be at least 512 bytes",
            p.size_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn labels(p: Profile) -> Vec<String> {
        build(p, &Overrides::default(), "io_uring", 16)
            .unwrap()
            .1
            .iter()
            .map(|t| format!("{} {}", t.label, t.workload.direction()))
            .collect()
    }

    #[test]
    fn crystaldiskmark_sets() {
        assert_eq!(
            labels(Profile::Cdm),
            [
                "SEQ1M Q8T1 read",
                "SEQ1M Q1T1 read",
                "RND4K Q32T1 read",
                "RND4K Q1T1 read",
                "SEQ1M Q8T1 write",
                "SEQ1M Q1T1 write",
                "RND4K Q32T1 write",
                "RND4K Q1T1 write"
            ]
        );
        assert_eq!(
            labels(Profile::CdmNvme)[..4],
            [
                "SEQ1M Q8T1 read",
                "SEQ128K Q32T1 read",
                "RND4K Q32T16 read",
                "RND4K Q1T1 read"
            ]
        );
        assert_eq!(
            labels(Profile::Rk),
            [
                "SEQ1M Q32T1 read",
                "RND4K Q32T1 read",
                "SEQ1M Q32T1 write",
                "RND4K Q32T1 write"
            ]
        );
        let (p, _) = build(Profile::Cdm, &Overrides::default(), "io_uring", 2).unwrap();
        assert_eq!(
            (p.runs, p.runtime_s, p.pause_s, p.size_bytes),
            (5, 5.0, 5.0, 1 << 30)
        );
        assert_eq!(p.shown, Shown::Best);
    }

    #[test]
    fn dd_sweeps_block_sizes_and_flags_override() {
        let l = labels(Profile::Dd);
        assert_eq!(l.len(), 10);
        assert_eq!(l[0], "dd 4K write");
        assert_eq!(l[9], "dd 1M read");
        let o = Overrides {
            rw: Some("read".into()),
            queue_depth: Some(4),
            size: Some("64M".into()),
            ..Default::default()
        };
        let (p, t) = build(Profile::Peak, &o, "io_uring", 2).unwrap();
        assert_eq!(p.size_bytes, 64 << 20);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].label, "SEQ1M Q4T1");
    }

    #[test]
    fn rwmixread_needs_a_mixed_workload() {
        let with = |rw: Option<&str>| Overrides {
            rw: rw.map(str::to_string),
            rwmixread: Some(70),
            ..Default::default()
        };
        for rw in [None, Some("randread"), Some("write")] {
            let e = build(Profile::Custom, &with(rw), "psync", 2)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("--rwmixread 70: only a mixed workload"),
                "{e}"
            );
        }
        let (_, t) = build(Profile::Custom, &with(Some("randrw")), "psync", 2).unwrap();
        assert_eq!(t[0].workload.read_percent, 70);
    }

    #[test]
    fn bad_values_name_the_flag_and_the_range() {
        let mk = |bs: Option<&str>, qd: Option<u32>, jobs: Option<u32>| {
            let o = Overrides {
                block_size: bs.map(str::to_string),
                queue_depth: qd,
                jobs,
                ..Default::default()
            };
            build(Profile::Custom, &o, "io_uring", 2)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            mk(Some("3"), None, None),
            "--bs 3: block size must be between 512 bytes and 64 MiB"
        );
        assert_eq!(
            mk(Some("1000"), None, None),
            "--bs 1000: block size must be a multiple of 512 bytes (the sector size)"
        );
        assert_eq!(
            mk(None, Some(0), None),
            "--qd 0: queue depth must be between 1 and 1024"
        );
        assert_eq!(
            mk(None, None, Some(9)),
            "--jobs 9: jobs must be between 1 and 8 (4 per CPU)"
        );
        assert!(parse_rw("trim", None).unwrap_err().contains("fio's names"));
        // A size or time as written, read here: the flag and the reason.
        let o = Overrides {
            runtime: Some("2x".into()),
            ..Default::default()
        };
        let e = build(Profile::Custom, &o, "psync", 2).unwrap_err();
        assert!(e.starts_with("--runtime 2x: "), "{e}");
    }
}
