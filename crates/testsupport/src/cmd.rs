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

/// The `headroom` binary without colour and with the tests' own history.
pub fn headroom() -> Command {
    let mut c = Command::cargo_bin("headroom").unwrap_or_else(|e| panic!("{e}"));
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", xdg_data_home());
    c
}

/// Run `cmd`, which must succeed (its stderr is shown when not), and parse its stdout.
pub fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{cmd:?} printed no JSON document: {e}"))
}

/// `headroom report --md FILE`, which must succeed: the Markdown.
pub fn report_md(file: &std::path::Path) -> String {
    let mut cmd = headroom();
    cmd.args(["report", "--md"]).arg(file);
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The same binary as a plain process, for tests that signal it (Ctrl-C) while it runs.
pub fn headroom_process() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("headroom"));
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", xdg_data_home());
    c
}
