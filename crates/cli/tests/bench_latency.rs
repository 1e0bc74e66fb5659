//! `headroom bench latency` end to end: short real runs (structure and sums, never timing),
//! the stress workers' lifetime, the unprivileged path, and bad flags.

// Helpers of an integration test are test code too; clippy only knows that for #[test] fns.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use testsupport::cmd::*;

fn run_json(args: &[&str]) -> Value {
    json_of(headroom().args(args).arg("--json"))
}

fn hist_sum(h: &Value) -> u64 {
    let buckets: u64 = h["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    buckets + h["overflow"].as_u64().unwrap()
}

/// Whether a process still exists and is a stress worker (a reused pid would not be).
fn worker_alive(pid: u64) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("stress-worker"))
        .unwrap_or(false)
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
}

fn children_of(pid: u32) -> Vec<u64> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(c.split_whitespace().filter_map(|w| w.parse::<u64>().ok()));
        }
    }
    out
}

fn root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn one_thread_histogram_sums_to_the_loop_count() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-l",
        "300",
        "-q",
        "--allow-unprivileged",
    ]);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["kind"], "latency");
    let m = &doc["measurement"];
    assert_eq!(m["stopped_by"], "loops");
    let t = &m["threads"][0];
    assert_eq!(t["stats"]["count"], 300);
    assert_eq!(hist_sum(&t["stats"]["histogram"]), 300);
    assert_eq!(hist_sum(&m["total"]["histogram"]), 300);
    assert!(t["stats"]["min_ns"].as_u64().unwrap() <= t["stats"]["max_ns"].as_u64().unwrap());
    assert!(doc["context"]["kernel"]["release"].is_string());
}

#[test]
fn two_threads_by_duration_with_cyclictest_flags() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-t",
        "2",
        "-i",
        "1000",
        "-d",
        "500",
        "-D",
        "1s",
        "-m",
        "-q",
        "-h",
        "400",
        "--allow-unprivileged",
    ]);
    assert_eq!(doc["config"]["interval_us"], 1000);
    assert_eq!(doc["config"]["distance_us"], 500);
    assert_eq!(doc["config"]["limits"]["duration_s"], 1.0);
    let m = &doc["measurement"];
    assert_eq!(m["stopped_by"], "duration");
    let threads = m["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[1]["interval_us"], 1500);
    let mut total = 0;
    for t in threads {
        let n = t["stats"]["count"].as_u64().unwrap();
        assert!(n > 0);
        assert_eq!(hist_sum(&t["stats"]["histogram"]), n);
        assert_eq!(t["stats"]["histogram"]["limit_us"], 400);
        total += n;
    }
    assert_eq!(m["total"]["count"].as_u64().unwrap(), total);
    assert_eq!(hist_sum(&m["total"]["histogram"]), total);
}

#[test]
fn stressed_run_records_load_and_leaves_no_worker() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-t",
        "2",
        "-D",
        "1s",
        "-q",
        "--allow-unprivileged",
        "--stress",
        "cpu=2,io=1,vm=1,vm-bytes=1M",
    ]);
    let pids: Vec<u64> = doc["stress"]["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 4);
    let stop = &doc["stress"]["stop"];
    assert_eq!(
        stop["stopped"].as_u64().unwrap() + stop["killed"].as_u64().unwrap(),
        4
    );
    assert!(pids.iter().all(|&p| !worker_alive(p)));
    assert!(!doc["load_average"].as_array().unwrap().is_empty());
    for t in doc["measurement"]["threads"].as_array().unwrap() {
        assert_eq!(
            hist_sum(&t["stats"]["histogram"]),
            t["stats"]["count"].as_u64().unwrap()
        );
    }
}

/// Start headroom with a load for 30 s, wait until its workers run, and return them.
fn start_loaded(extra: &[&str]) -> (std::process::Child, Vec<u64>) {
    let child = headroom_process()
        .args([
            "bench",
            "latency",
            "-D",
            "30s",
            "-q",
            "--json",
            "--allow-unprivileged",
        ])
        .args(["--stress", "cpu=2,io=1"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut workers = Vec::new();
    while t0.elapsed() < Duration::from_secs(10) {
        workers = children_of(child.id());
        if workers.len() == 3 && workers.iter().all(|&p| worker_alive(p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers.len(), 3, "the workers did not start");
    (child, workers)
}

fn wait_gone(workers: &[u64]) {
    let t0 = Instant::now();
    while workers.iter().any(|&p| worker_alive(p)) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&u64> = workers.iter().filter(|&&p| worker_alive(p)).collect();
    assert!(left.is_empty(), "workers left running: {left:?}");
}

#[test]
fn ctrl_c_stops_the_load_and_prints_what_was_measured() {
    let (child, workers) = start_loaded(&[]);
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["measurement"]["stopped_by"], "interrupted");
    let total = &doc["measurement"]["total"];
    assert_eq!(
        hist_sum(&total["histogram"]),
        total["count"].as_u64().unwrap()
    );
    wait_gone(&workers);
}

#[test]
fn workers_die_with_a_killed_parent() {
    let (mut child, workers) = start_loaded(&[]);
    child.kill().unwrap(); // SIGKILL: no handler runs; PR_SET_PDEATHSIG must do it.
    child.wait().unwrap();
    wait_gone(&workers);
}

#[test]
fn unprivileged_run_stops_with_a_sentence_unless_allowed() {
    let out = headroom()
        .args([
            "bench",
            "latency",
            "-l",
            "50",
            "-q",
            "--skip-privileged-steps",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SCHED_FIFO") && err.contains("--allow-unprivileged"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing measured");

    let doc = run_json(&[
        "bench",
        "latency",
        "-l",
        "50",
        "-q",
        "--skip-privileged-steps",
        "--allow-unprivileged",
    ]);
    let p = &doc["measurement"]["privileges"];
    assert_eq!(p["sched_fifo"]["state"], "refused");
    assert_eq!(p["memory_locked"]["state"], "refused");
    assert_eq!(doc["measurement"]["threads"][0]["stats"]["count"], 50);
    let findings = doc["findings"].to_string();
    assert!(findings.contains("not comparable with cyclictest"));
}

#[test]
fn really_unprivileged_user_is_refused() {
    // Drop root for real where we can (setpriv from util-linux); otherwise this machine's
    // user is already unprivileged and the same refusal is expected.
    let bin = assert_cmd::cargo::cargo_bin("headroom");
    let readable_by_nobody = bin.ancestors().all(|d| {
        d.metadata()
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o001 != 0)
            .unwrap_or(false)
            || d == Path::new("/")
    });
    let dropped = root() && Path::new("/usr/bin/setpriv").exists() && readable_by_nobody;
    let out = if dropped {
        std::process::Command::new("/usr/bin/setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(&bin)
            .args(["bench", "latency", "-l", "20", "-q"])
            .output()
            .unwrap()
    } else if !root() {
        std::process::Command::new(&bin)
            .args(["bench", "latency", "-l", "20", "-q"])
            .output()
            .unwrap()
    } else {
        eprintln!("note: cannot drop root here (no setpriv or unreadable binary); covered by --skip-privileged-steps");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if dropped || out.status.code() == Some(1) {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("could not get") && err.contains("--allow-unprivileged"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "nothing measured");
    } else {
        // A non-root user with raised RLIMIT_RTPRIO and RLIMIT_MEMLOCK is privileged enough:
        // the run must then say it got SCHED_FIFO.
        assert!(out.status.success(), "{err}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("SCHED_FIFO: yes"));
    }
}

#[test]
fn bad_flags_get_one_sentence_and_exit_2() {
    for (args, expect) in [
        (&["-i", "0"][..], "interval"),
        (&["-p", "100"][..], "priority 100 is out of range"),
        (&["-t", "1000"][..], "threads requested"),
        (&["-a", "4095"][..], "CPU 4095 does not exist"),
        (&["--stress", "gpu=1"][..], "unknown stress key"),
    ] {
        let out = headroom()
            .args(["bench", "latency", "-D", "1s", "-q"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one sentence: {err}");
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn removed_n_flag_is_explained_and_measured_anyway() {
    let out = headroom()
        .args([
            "bench", "latency", "-c", "0", "-m", "-n", "-t", "1", "-p", "99", "-l", "20", "-q",
        ])
        .arg("--allow-unprivileged")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-n (clock_nanosleep) was removed from cyclictest in 2017"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("T: 0 (") && text.contains("C:     20"),
        "{text}"
    );
}
