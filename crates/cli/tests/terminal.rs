//! The terminal as a user's shell sets it up: stdout a pipe whose reader has gone
//! (`headroom ... | head -1` once head has its line), and the exit codes of docs/ARCHITECTURE.md.

// Helpers of an integration test are test code too; clippy only knows that for #[test] fns.
#![allow(clippy::unwrap_used)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Output, Stdio};
use testsupport::cmd::*;

/// Run headroom with stdout the write end of a pipe whose read end is already closed: every
/// write gets EPIPE, as after `| head -1` has read its line and exited. Deterministic, where
/// a real `| head -1` races with the writer.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: pipe() fills two fds on success, checked.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both fds were just created and are owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    headroom_process()
        .args(args)
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn assert_quiet_success(args: &[&str], out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
}

#[test]
fn audit_into_a_closed_pipe_exits_0_without_a_panic() {
    let root = testsupport::fixtures::captured("sysfs/hwloc-40intel64-4xeth-ib-2pciroots");
    let root = root.to_str().unwrap();
    for args in [
        &["audit", "--root", root][..],
        &["audit", "--root", root, "--json"][..],
    ] {
        assert_quiet_success(args, &with_closed_stdout(args));
    }
}

#[test]
fn ceiling_tables_into_a_closed_pipe_exit_0_without_a_panic() {
    for args in [
        &[
            "ceiling",
            "pcie",
            "--gen",
            "1,2,3,4,5",
            "--lanes",
            "1,2,4,8,16",
        ][..],
        &["ceiling", "pcie", "--json"][..],
    ] {
        assert_quiet_success(args, &with_closed_stdout(args));
    }
}

#[test]
fn latency_history_and_report_into_a_closed_pipe_exit_0_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let doc = dir.path().join("run.json");
    let (db, doc) = (db.to_str().unwrap(), doc.to_str().unwrap());
    // The run still keeps its result (and stops its load) when nobody reads its output.
    let args = [
        "bench",
        "latency",
        "-l",
        "50",
        "-q",
        "--allow-unprivileged",
        "--stress",
        "cpu=1",
        "--db",
        db,
        "--output",
        doc,
    ];
    let out = with_closed_stdout(&args);
    assert_quiet_success(&args, &out);
    assert!(
        std::path::Path::new(doc).exists(),
        "--output was not written"
    );
    for args in [&["history", "--db", db][..], &["report", doc][..]] {
        assert_quiet_success(args, &with_closed_stdout(args));
    }
}

#[test]
fn a_bad_value_is_a_usage_error_everywhere() {
    for args in [
        &["ceiling", "eth", "--rate", "1G", "--mtu", "10"][..],
        &["bench", "latency", "-p", "100", "-D", "1s", "-q"][..],
        &["bench", "latency", "--stress", "cpu=x", "-D", "1s", "-q"][..],
    ] {
        let err = fails_saying(headroom().args(args), 2, "headroom: error: ");
        assert!(err.starts_with("headroom: error: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one sentence: {err}");
    }
}
