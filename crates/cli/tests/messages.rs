#![allow(clippy::unwrap_used)]
//! The messages a new user met that said a thing twice, told root to run as
//! root, lost the `headroom:` prefix, broke a table, misnamed a device or left commands out.

use std::path::Path;
use testsupport::cmd::*;
use testsupport::process::is_root;

/// "cannot read /tmp: Is a directory (os error 21): Is a directory (os error 21)": an error
/// whose message includes its cause was printed with the cause again. Every command's error
/// goes through one writer that says a cause once.
#[test]
fn an_error_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for args in [&["compare", d, d][..], &["report", d]] {
        let err = fails_saying(
            headroom().args(args),
            1,
            &format!("{d} is a directory, not a file"),
        );
        assert_eq!(
            err.to_lowercase().matches("is a directory").count(),
            1,
            "{args:?}: {err}"
        );
    }
}

/// clap's own errors lacked the `headroom:` prefix every other message carries.
#[test]
fn usage_errors_of_the_command_line_carry_the_prefix() {
    let err = fails_saying(
        headroom().args(["bench", "disk", "--bogus"]),
        2,
        "unexpected argument '--bogus' found",
    );
    assert!(
        err.starts_with("headroom: error: unexpected argument '--bogus' found"),
        "{err}"
    );
    assert!(err.contains("Usage: headroom bench disk"), "{err}");
    // Help and version are answers, not errors: stdout, exit 0, as clap prints them.
    let out = headroom().arg("--help").output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("How far is each Linux I/O path"));
    let out = headroom().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("headroom "));
    // A command without its subcommand: its help, as a usage error.
    let out = headroom().arg("bench").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: headroom bench"));
}

/// A number flag given text (`-t x`, `-i 1k`) got the standard library's "invalid digit found
/// in string", which says nothing of what the flag takes.
#[test]
fn a_number_flag_given_text_says_what_it_takes() {
    for (args, flag) in [
        (&["bench", "latency", "-t", "x"][..], "'--threads [<N>]'"),
        (&["bench", "latency", "-i", "1k"], "'--interval <US>'"),
        (
            &["bench", "latency", "-l", "99999999999999999999999"],
            "--loops",
        ),
    ] {
        let err = fails_saying(headroom().args(args), 2, flag);
        assert!(!err.contains("invalid digit"), "{args:?}: {err}");
        assert!(
            err.contains("not a whole number: give digits only")
                || err.contains("out of range for this flag"),
            "{args:?}: {err}"
        );
    }
}

/// The top-level and `bench` help named only disk and latency.
#[test]
fn help_names_every_benchmark() {
    let words = |args: &[&str]| {
        let out = stdout_of(headroom().args(args));
        String::from_utf8_lossy(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let top = words(&["--help"]);
    let bench = words(&["bench", "--help"]);
    for help in [&top, &bench] {
        assert!(
            help.contains(
                "Run a benchmark: storage (fio/CrystalDiskMark-like) and network throughput \
                 (iperf3's protocol) against the path's ceiling, wake-up latency (cyclictest's \
                 method) under a built-in stress load, CPU loads and stores on a PCI BAR (MMIO) \
                 and DRAM"
            ),
            "{help}"
        );
    }
}

/// "Operation not permitted ... or run as root" while running as root: root is told what can
/// refuse root (here an immutable file, chattr +i).
#[test]
fn root_is_not_told_to_run_as_root() {
    if !is_root() {
        testsupport::skip::skip("needs root to see what refuses root");
        return;
    }
    let dir = disk_dir("headroom-messages-test");
    let f = dir.path().join("immutable.bin");
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    let chattr = |flag: &str| {
        std::process::Command::new("chattr")
            .arg(flag)
            .arg(&f)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !chattr("+i") {
        testsupport::skip::skip("chattr +i is not available on this filesystem");
        return;
    }
    let out = headroom()
        .args(["bench", "disk"])
        .arg(&f)
        .args(["--rw", "write", "--size", "1M", "--overwrite"])
        .output()
        .unwrap();
    chattr("-i");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Operation not permitted (os error 1): permission denied; refused even to root: an immutable or append-only file"),
        "{err}"
    );
    assert!(!err.contains("run as root"), "{err}");
}

/// A `count` of a command with a newline in it broke the `history` table in two lines.
#[test]
fn the_history_lists_one_line_per_run_whatever_its_strings_hold() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite");
    let out = headroom()
        .args(["count", "--db"])
        .arg(&db)
        .args(["-e", "task-clock", "--", "sh", "-c", "true\ntrue"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = stdout_of(headroom().args(["history", "--db"]).arg(&db));
    let list = String::from_utf8_lossy(&list);
    assert_eq!(list.lines().count(), 2, "a header and one run: {list}");
    assert!(list.contains("sh -c true\\x0atrue"), "{list}");
}

/// An unattached loop device was called "a virtual block device (RAM disk, zram, ...)".
#[test]
fn an_unattached_loop_device_is_called_what_it_is() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup -f)");
        return;
    }
    let free = std::process::Command::new("losetup")
        .arg("-f")
        .output()
        .unwrap();
    let dev = String::from_utf8_lossy(&free.stdout).trim().to_string();
    let name = dev.trim_start_matches("/dev/");
    let out = stdout_of(headroom().args(["path", name]));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains(&format!(
            "{name} is a loop device with no backing file attached (`losetup FILE` attaches one"
        )),
        "{text}"
    );
    assert!(!text.contains("RAM disk, zram"), "{text}");
}

/// `report /nonexistent.json` printed two errors: the file's, then "no result document could
/// be read: nothing to report". One input that cannot be read is one sentence; several name
/// each, then say none could be read.
#[test]
fn a_report_of_a_missing_file_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("run.json");
    let m = missing.to_str().unwrap();
    let err = fails_saying(
        headroom().args(["report", m]),
        1,
        &format!("{m}: no such file"),
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let err = fails_saying(
        headroom().args(["report", m, m]),
        1,
        "none of the 2 inputs could be read: nothing to report",
    );
    assert_eq!(err.lines().count(), 3, "{err}");
}
