//! cyclictest's command line as headroom reads it: its `--json=FILE` told from headroom's
//! `--json` switch before clap reads the line, and the flags reports paste (rt-tests 2.x,
//! src/cyclictest/cyclictest.c) turned into a [`Config`], with a note for each flag whose
//! cyclictest meaning headroom does not reproduce. Pure policy: the flags come from cli's
//! parser, the configuration goes to `bench::latency`.

use super::{Affinity, Config, Limits, MAX_PRIORITY};
use std::ffi::OsString;
use std::time::Duration;

/// The flags of `bench latency` that shape the measurement, as given on the command line
/// (`None`: not given), with cyclictest's meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CyclictestFlags {
    /// `-t [N]`: measuring threads; `Some(None)`, `-t` alone: one per available CPU.
    pub threads: Option<Option<usize>>,
    /// `-p PRIO`: SCHED_FIFO priority (0: normal scheduling).
    pub priority: u32,
    /// `-y NAME`: scheduling policy (fifo, rr, other, normal; batch and idle refused).
    pub policy: Option<String>,
    /// `-i US`: base interval of thread 0.
    pub interval_us: u64,
    /// `-d US`: added to the interval of each next thread (500; 0 with -h, as cyclictest).
    pub distance_us: Option<u64>,
    /// `-D TIME`: how long to measure.
    pub duration: Option<Duration>,
    /// `-l N`: wake-ups per thread.
    pub loops: Option<u64>,
    /// `--no-mlock`: do not lock memory.
    pub no_mlock: bool,
    /// `-h US`: histogram limit.
    pub histogram_us: Option<u32>,
    /// `-H US`: the histogram with a summary column.
    pub histofall_us: Option<u32>,
    /// `-v`: every wake-up printed (not reproduced).
    pub verbose: bool,
    /// `-b US`: break trace above US (not reproduced: counted).
    pub breaktrace_us: Option<u64>,
    /// `--analyze US`: stop at the first wake-up of US or more and explain it.
    pub analyze: Option<u64>,
    /// `-x`: POSIX timers (not reproduced: clock_nanosleep).
    pub posix_timers: bool,
    /// `-a [CPUS]`: pin the threads; `Some(None)`, `-a` alone: thread N on CPU N.
    pub affinity: Option<Option<String>>,
    /// `-S`: one pinned thread per CPU.
    pub smp: bool,
    /// `-c N`: the clock (0, CLOCK_MONOTONIC, the only one used).
    pub clock: Option<u32>,
    /// `-n`: removed from cyclictest in 2017.
    pub nanosleep: bool,
    /// `--window TIME`: length of the windows whose maxima are reported.
    pub window: Duration,
    /// Skip every privileged step, as an unprivileged user would get.
    pub skip_privileged_steps: bool,
}

/// Turn the flags into an engine configuration, with a note for each flag headroom reads
/// differently from cyclictest or does not reproduce; a flag that cannot run is one sentence.
pub fn config_of(f: &CyclictestFlags, available: &[u32]) -> Result<(Config, Vec<String>), String> {
    let mut notes = Vec::new();
    if f.nanosleep {
        notes.push(
            "-n (clock_nanosleep) was removed from cyclictest in 2017; cyclictest 2.x prints its \
             usage and exits 0 on it, so a pasted command with -n measures nothing. \
             clock_nanosleep is the only method now: measuring with it."
                .to_string(),
        );
    }
    match f.clock {
        None | Some(0) => {}
        Some(c) => notes.push(format!(
            "-c {c}: headroom measures on CLOCK_MONOTONIC only (cyclictest -c 0); a wall clock \
             (-c 1) can jump with NTP and is not used"
        )),
    }
    let requested_priority = match f.policy.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("fifo") => f.priority,
        Some("rr") => {
            notes.push(
                "--policy rr: measuring with SCHED_FIFO; a measuring thread sleeps long before \
                 its round-robin slice (/proc/sys/kernel/sched_rr_timeslice_ms, 100 ms) would \
                 end, so the two give the same wake-ups"
                    .to_string(),
            );
            f.priority
        }
        Some(p @ ("other" | "normal")) => {
            notes.push(format!(
                "--policy {p}: normal scheduling (SCHED_OTHER) at priority 0, as -p 0"
            ));
            0
        }
        Some(p @ ("batch" | "idle")) => {
            return Err(format!(
                "--policy {p}: headroom measures with SCHED_FIFO or normal scheduling only; use \
                 --policy fifo or --policy other"
            ))
        }
        Some(p) => {
            return Err(format!(
                "--policy {p:?} is not a scheduling policy: use fifo, rr, other or normal"
            ))
        }
    };
    if f.verbose {
        notes.push(
            "-v: headroom does not print every wake-up (cyclictest's n:c:v lines); it keeps the \
             1 us histogram, the largest wake-ups with their times and the per-window maxima \
             (all in --json)"
                .to_string(),
        );
    }
    if f.analyze == Some(0) {
        return Err(
            "--analyze 0: give the latency to stop at and explain, in us (e.g. --analyze 100)"
                .to_string(),
        );
    }
    if let Some(b) = f.breaktrace_us {
        notes.push(format!(
            "-b {b}: headroom does not stop the run or write an ftrace mark at a spike; it \
             measures to the end and counts the wake-ups above {b} us"
        ));
    }
    if f.posix_timers {
        notes.push(
            "-x: headroom measures with clock_nanosleep only (cyclictest's default), not with \
             POSIX timers"
                .to_string(),
        );
    }
    let histogram_us = f.histogram_us.or(f.histofall_us);
    let priority = u8::try_from(requested_priority)
        .ok()
        .filter(|&p| p <= MAX_PRIORITY)
        .ok_or_else(|| {
            format!(
                "priority {} is out of range: SCHED_FIFO priorities are 1 to 99 \
                 (0 = normal scheduling); use -p 1..99",
                requested_priority
            )
        })?;
    let affinity_list = match &f.affinity {
        Some(Some(list)) => Some(crate::units::parse_cpu_list(list).ok_or_else(|| {
            format!("-a {list:?} is not a CPU list (examples: -a 1, -a 0-3, -a 0,2)")
        })?),
        _ => None,
    };
    let pin_each = f.smp || matches!(f.affinity, Some(None));
    let affinity = match (affinity_list, pin_each) {
        (Some(list), _) => Affinity::Pinned(list),
        (None, true) => Affinity::Pinned(available.to_vec()),
        (None, false) => Affinity::Free,
    };
    let per_cpu = match &affinity {
        Affinity::Pinned(l) => l.len(),
        Affinity::Free => available.len(),
    };
    let threads = match f.threads {
        Some(Some(n)) => n,
        Some(None) => per_cpu.max(1),
        None if f.smp => per_cpu.max(1),
        None => 1,
    };
    let (duration, loops) = match (f.duration, f.loops) {
        (None, None) => {
            notes.push(
                "no -D/--duration or -l/--loops: measuring for 10 s (cyclictest would run until \
                 Ctrl-C)"
                    .to_string(),
            );
            (Some(Duration::from_secs(10)), None)
        }
        other => other,
    };
    // cyclictest ignores the distance when a histogram is asked for ("WARN: distance is
    // ignored and set to 0, if histogram enabled", rt-tests 2.x): a pasted command with -h
    // ran all its threads at the base interval.
    let distance_us = match (histogram_us, f.distance_us) {
        (Some(_), None) if threads > 1 => {
            notes.push(
                "-h without -d: all threads at the base interval, as cyclictest sets the \
                 distance to 0 when a histogram is asked for"
                    .to_string(),
            );
            0
        }
        (Some(_), Some(d)) if d > 0 && threads > 1 => {
            notes.push(format!(
                "-h with -d {d}: keeping the distance; cyclictest would have ignored it and run \
                 every thread at the base interval"
            ));
            d
        }
        (_, d) => d.unwrap_or(500),
    };
    let config = Config {
        threads,
        affinity,
        priority,
        interval: Duration::from_micros(f.interval_us),
        distance: Duration::from_micros(distance_us),
        limits: Limits { duration, loops },
        histogram_limit_us: histogram_us.unwrap_or(10_000),
        keep_largest: 10,
        window: f.window,
        lock_memory: !f.no_mlock,
        hold_dma_latency: true,
        skip_privileged_steps: f.skip_privileged_steps,
        // Set once the recorder is open (run_latency): without it there is nothing to
        // hand the wake-ups to, and nothing to explain a stop with.
        record_wakeups: false,
        stop_above: None,
    };
    config.validate(available).map_err(|e| e.0)?;
    Ok((config, notes))
}

/// The words of `bench latency` that mean one thing to cyclictest and another to clap, made
/// clap's before it reads the line:
/// - cyclictest's `--json=FILE` (or `--json FILE`) names a file, where headroom's global
///   `--json` is a switch: it becomes the hidden `--cyclictest-json FILE`, so a pasted
///   cyclictest command runs;
/// - `-h US` is cyclictest's histogram, but `-h` with no value (last, or before another
///   option) asks for help, as every other subcommand's `-h` does: it becomes `--help`.
pub fn cyclictest_json_argv(mut args: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = args
        .windows(2)
        .position(|w| w[0] == "bench" && w[1] == "latency")
    else {
        return args;
    };
    let mut i = at + 2;
    while i < args.len() {
        let arg = args[i].to_string_lossy().into_owned();
        if arg == "-h"
            && args
                .get(i + 1)
                .is_none_or(|next| next.to_string_lossy().starts_with('-'))
        {
            args[i] = "--help".into();
        } else if let Some(file) = arg.strip_prefix("--json=") {
            args[i] = format!("--cyclictest-json={file}").into();
        } else if arg == "--json"
            && args
                .get(i + 1)
                .is_some_and(|next| !next.to_string_lossy().starts_with('-'))
        {
            args[i] = "--cyclictest-json".into();
            i += 1;
        }
        i += 1;
    }
    args
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    /// What cli's parser gives with no flag: cyclictest's defaults (-p 99, -i 1000).
    fn given() -> CyclictestFlags {
        CyclictestFlags {
            priority: 99,
            interval_us: 1000,
            window: Duration::from_secs(60),
            ..CyclictestFlags::default()
        }
    }

    #[test]
    fn seed_command_lines() {
        let avail = [0, 1, 2, 3];
        // seeds/001, RK3568: `cyclictest -c 0 -m -n -t 4 -p 99`
        let f = CyclictestFlags {
            clock: Some(0),
            nanosleep: true,
            threads: Some(Some(4)),
            ..given()
        };
        let (c, notes) = config_of(&f, &avail).unwrap();
        assert_eq!((c.threads, c.priority), (4, 99));
        assert_eq!(c.affinity, Affinity::Free);
        assert_eq!(c.interval_of(3), Duration::from_micros(2500));
        assert!(notes.iter().any(|n| n.contains("-n") && n.contains("2017")));
        assert!(notes.iter().any(|n| n.contains("10 s")));
        // RK3576: `cyclictest -c0 -m -t -p99 -D8H`: -t alone = one per CPU.
        let f = CyclictestFlags {
            clock: Some(0),
            threads: Some(None),
            duration: Some(Duration::from_secs(8 * 3600)),
            ..given()
        };
        let (c, _) = config_of(&f, &avail).unwrap();
        assert_eq!(c.threads, 4);
        assert_eq!(c.limits.duration, Some(Duration::from_secs(8 * 3600)));
        // `-t 2 -a -h 400 -q -D 2h` pins thread N to CPU N.
        let pinned_histogram = CyclictestFlags {
            threads: Some(Some(2)),
            affinity: Some(None),
            histogram_us: Some(400),
            duration: Some(Duration::from_secs(7200)),
            ..given()
        };
        let (c, notes) = config_of(&pinned_histogram, &avail).unwrap();
        assert_eq!((c.cpu_of(0), c.cpu_of(1)), (Some(0), Some(1)));
        assert_eq!(c.histogram_limit_us, 400);
        // cyclictest: -h sets the distance to 0.
        assert_eq!(c.interval_of(1), Duration::from_micros(1000));
        assert!(notes.iter().any(|n| n.contains("distance to 0")));
        // `-t 2 -h 400 -d 100 -D 1`: an explicit distance is kept.
        let f = CyclictestFlags {
            affinity: None,
            distance_us: Some(100),
            ..pinned_histogram
        };
        let (c, _) = config_of(&f, &avail).unwrap();
        assert_eq!(c.interval_of(1), Duration::from_micros(1100));
        // `-a 2-3 -t 4 -D 1s`
        let f = CyclictestFlags {
            affinity: Some(Some("2-3".into())),
            threads: Some(Some(4)),
            duration: Some(Duration::from_secs(1)),
            ..given()
        };
        let (c, _) = config_of(&f, &avail).unwrap();
        assert_eq!(c.cpu_of(3), Some(3));
        // `-S -l 100`: one pinned thread per CPU.
        let f = CyclictestFlags {
            smp: true,
            loops: Some(100),
            ..given()
        };
        let (c, _) = config_of(&f, &avail).unwrap();
        assert_eq!((c.threads, c.cpu_of(2)), (4, Some(2)));
    }

    #[test]
    fn h_with_a_value_is_the_histogram_and_alone_asks_for_help() {
        let argv = |line: &str| line.split(' ').map(OsString::from).collect::<Vec<_>>();
        for (line, want) in [
            ("headroom bench latency -h", "headroom bench latency --help"),
            (
                "headroom bench latency -h -q",
                "headroom bench latency --help -q",
            ),
            (
                "headroom bench latency -t 2 -h 400 -q",
                "headroom bench latency -t 2 -h 400 -q",
            ),
            (
                "headroom bench latency -h400",
                "headroom bench latency -h400",
            ),
            // Other commands' -h is clap's help already.
            ("headroom bench disk -h", "headroom bench disk -h"),
        ] {
            assert_eq!(cyclictest_json_argv(argv(line)), argv(want), "{line}");
        }
    }

    #[test]
    fn cyclictests_json_file_is_told_from_headrooms_json_switch() {
        let argv = |line: &str| line.split(' ').map(OsString::from).collect::<Vec<_>>();
        let pasted = "headroom bench latency -t 2 --json=run.json -D 1";
        assert_eq!(
            cyclictest_json_argv(argv(pasted)),
            argv("headroom bench latency -t 2 --cyclictest-json=run.json -D 1")
        );
        assert_eq!(
            cyclictest_json_argv(argv("headroom bench latency --json out.json -q")),
            argv("headroom bench latency --cyclictest-json out.json -q")
        );
        // headroom's own switch: before the command, or followed by a flag, stays.
        for line in [
            "headroom --json bench latency -D 1",
            "headroom bench latency --json -D 1",
            "headroom bench disk --json=x",
        ] {
            assert_eq!(cyclictest_json_argv(argv(line)), argv(line), "{line}");
        }
    }

    #[test]
    fn bad_flags_get_a_sentence() {
        let avail = [0, 1];
        let second = Some(Duration::from_secs(1));
        let err = |f: CyclictestFlags| {
            config_of(
                &CyclictestFlags {
                    duration: second,
                    ..f
                },
                &avail,
            )
            .unwrap_err()
        };
        let interval = err(CyclictestFlags {
            interval_us: 0,
            ..given()
        });
        assert!(interval.contains("interval"), "{interval}");
        let priority = err(CyclictestFlags {
            priority: 100,
            ..given()
        });
        assert!(
            priority.contains("priority 100 is out of range"),
            "{priority}"
        );
        let threads = err(CyclictestFlags {
            threads: Some(Some(9)),
            ..given()
        });
        assert!(threads.contains("between 1 and 8"), "{threads}");
        let cpu = err(CyclictestFlags {
            affinity: Some(Some("5".into())),
            ..given()
        });
        assert!(cpu.contains("CPU 5 does not exist"), "{cpu}");
        let list = err(CyclictestFlags {
            affinity: Some(Some("x".into())),
            ..given()
        });
        assert!(list.contains("not a CPU list"), "{list}");
        let policy = err(CyclictestFlags {
            policy: Some("batch".into()),
            ..given()
        });
        assert!(policy.contains("--policy batch"), "{policy}");
    }
}
