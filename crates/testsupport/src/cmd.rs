//! The `headroom` binary as a user runs it, for the integration tests of the `headroom`
//! package (the binary is found as assert_cmd finds it: `CARGO_BIN_EXE_headroom`, else beside
//! the test binary in the target directory).

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

/// Benchmarks keep their results here, never in the history of the user running the tests:
/// `<target>/tmp/xdg-data` (cargo's CARGO_TARGET_TMPDIR), found from the test binary.
pub fn xdg_data_home() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // <target>/<profile>/deps/<test binary>
    exe.ancestors()
        .nth(3)
        .map(|t| t.join("tmp/xdg-data"))
        .unwrap_or_else(|| std::env::temp_dir().join("headroom-tests-xdg-data"))
}

/// `bench disk` flags for a short run (a 16 MiB file, 0.3 s per test, one run, no pause).
pub const SMALL_DISK_RUN: [&str; 8] = [
    "--size",
    "16M",
    "--runtime",
    "0.3",
    "--runs",
    "1",
    "--pause",
    "0",
];

/// The `headroom` binary without colour and with the tests' own history.
pub fn headroom() -> Command {
    let mut c = Command::cargo_bin("headroom").unwrap_or_else(|e| panic!("{e}"));
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", xdg_data_home());
    c
}

/// Run `cmd`, which must succeed (its stderr is shown when not): its stdout.
pub fn stdout_of(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Run `cmd`, which must succeed (its stderr is shown when not), and parse its stdout.
pub fn json_of(cmd: &mut Command) -> Value {
    serde_json::from_slice(&stdout_of(cmd))
        .unwrap_or_else(|e| panic!("{cmd:?} printed no JSON document: {e}"))
}

/// `headroom report --md FILE`, which must succeed: the Markdown.
pub fn report_md(file: &std::path::Path) -> String {
    let out = stdout_of(headroom().args(["report", "--md"]).arg(file));
    String::from_utf8_lossy(&out).into_owned()
}

/// The same binary as a plain process, for tests that signal it (Ctrl-C) while it runs.
pub fn headroom_process() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("headroom"));
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", xdg_data_home());
    c
}
