//! `headroom bench latency --split` killed with SIGKILL at any moment leaves nothing
//! recording: its tracefs instance (tracing on, scheduler, timer and interrupt tracepoints
//! enabled, 4 MiB of ring buffer per measured CPU) is removed by the run's reaper, and in any
//! case once the next headroom command has started, whatever that command is; the global
//! tracing settings and the osnoise settings are as they were. Checked by reading tracefs.
//! Root only, with tracefs mounted.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};
use testsupport::cmd::*;
use testsupport::process::{children, is_root, signal, wait_exit, wait_until};

const TRACEFS: &str = "/sys/kernel/tracing";

/// The tracefs files a run must leave as they were: the global tracing switch and enabled
/// events, and the timerlat tracer's osnoise settings where the kernel has them.
fn global_settings() -> Vec<(String, String)> {
    [
        "tracing_on",
        "set_event",
        "current_tracer",
        "osnoise/cpus",
        "osnoise/timerlat_period_us",
    ]
    .iter()
    .filter_map(|f| {
        let v = std::fs::read_to_string(Path::new(TRACEFS).join(f)).ok()?;
        Some((f.to_string(), v))
    })
    .collect()
}

/// The instances of process `pid` (`headroom-PID-...`).
fn instances_of(pid: u32) -> Vec<String> {
    let prefix = format!("headroom-{pid}-");
    std::fs::read_dir(Path::new(TRACEFS).join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// A small xorshift generator seeded from the clock: the moments of the kills.
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// One at a time, with every other test that uses tracefs (`testsupport::tracefs_lock`).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    testsupport::tracefs_lock()
}

/// Whether the tests can run here: as root, with tracefs mounted (else skipped).
fn tracefs_here() -> bool {
    testsupport::skip::unless(is_root(), "needs root (tracefs instances are root's)")
        && testsupport::skip::unless(
            Path::new(TRACEFS).join("instances").is_dir(),
            "needs tracefs mounted at /sys/kernel/tracing",
        )
}

#[test]
fn split_runs_killed_at_random_moments_leave_no_instance_tracepoint_or_setting() {
    if !tracefs_here() {
        return;
    }
    let _one = one_at_a_time();
    let before = global_settings();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut moments = Moments(seed | 1);
    let (mut recording, mut reaped) = (0, 0);
    let runs = 20;
    for run in 0..runs {
        let mut child = headroom_process()
            .args([
                "bench",
                "latency",
                "--split",
                "-q",
                "-t",
                "1",
                "-D",
                "10",
                "--no-save",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Anywhere from before the instance exists to well into the measurement; the first
        // run as soon as it records.
        let t0 = Instant::now();
        let at = if run == 0 {
            assert!(
                wait_until(Duration::from_secs(10), || !instances_of(pid).is_empty()),
                "--split made no tracefs instance"
            );
            t0.elapsed()
        } else {
            Duration::from_millis(moments.next_ms(1500))
        };
        while t0.elapsed() < at {
            std::thread::sleep(Duration::from_millis(5));
        }
        let had_instance = !instances_of(pid).is_empty();
        signal(&child, libc::SIGKILL);
        wait_exit(&mut child, Duration::from_secs(10));
        recording += usize::from(had_instance);
        // The reaper alone, with no other command started.
        if wait_until(Duration::from_secs(5), || instances_of(pid).is_empty()) {
            reaped += usize::from(had_instance);
        }
        // The next command, whatever it is, starts by removing what is left.
        output_ok(headroom().args(["ceiling", "pcie", "--gen", "3", "--lanes", "1"]));
        assert_eq!(
            instances_of(pid),
            Vec::<String>::new(),
            "run {run} killed after {at:?} left its instance behind"
        );
        assert_eq!(global_settings(), before, "run {run} killed after {at:?}");
    }
    eprintln!(
        "{runs} --split runs killed: {recording} while their instance existed, {reaped} of \
         those removed by the run's reaper before the next command started; none left"
    );
}

/// A run killed together with its reaper (both SIGKILL) leaves its instance recording only
/// until the next headroom command starts, whatever that command is.
#[test]
fn a_split_run_killed_with_its_reaper_is_cleaned_up_by_the_next_command() {
    if !tracefs_here() {
        return;
    }
    let _one = one_at_a_time();
    let before = global_settings();
    for next in [
        &["ceiling", "pcie", "--gen", "3", "--lanes", "1"][..],
        &["audit", "--json"],
        &["bench", "latency", "-h"],
    ] {
        let mut child = headroom_process()
            .args([
                "bench",
                "latency",
                "--split",
                "-q",
                "-t",
                "1",
                "-D",
                "10",
                "--no-save",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(
            wait_until(Duration::from_secs(10), || !instances_of(pid).is_empty()),
            "--split made no tracefs instance"
        );
        // The reaper names itself once it runs.
        let reaper = || {
            children(pid).into_iter().find(|c| {
                std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|comm| comm.trim_end() == "headroom-reaper")
            })
        };
        assert!(
            wait_until(Duration::from_secs(10), || reaper().is_some()),
            "no reaper among {:?}",
            children(pid)
        );
        let reaper = reaper().unwrap();
        // SAFETY: kill(2) of a process this test's child started.
        assert_eq!(unsafe { libc::kill(reaper as i32, libc::SIGKILL) }, 0);
        signal(&child, libc::SIGKILL);
        wait_exit(&mut child, Duration::from_secs(10));
        assert!(
            !instances_of(pid).is_empty(),
            "the instance went without its reaper: nothing left to test"
        );
        output_ok(headroom().args(next));
        assert_eq!(instances_of(pid), Vec::<String>::new(), "after {next:?}");
        assert_eq!(global_settings(), before, "after {next:?}");
    }
}
