//! The `headroom` binary as a user runs it, for the integration tests of the `headroom`
//! package (the binary is found as assert_cmd finds it: `CARGO_BIN_EXE_headroom`, else beside
//! the test binary in the target directory).

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;
use tempfile::TempDir;

/// `<target>/tmp` (cargo's CARGO_TARGET_TMPDIR), found from the test binary
/// (`<target>/<profile>/deps/<test binary>`); on the machine's disk, not a tmpfs /tmp.
pub(crate) fn target_tmp() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors().nth(3).map(|t| t.join("tmp"))
}

/// Benchmarks keep their results here, never in the history of the user running the tests:
/// `<target>/tmp/xdg-data`.
pub fn xdg_data_home() -> PathBuf {
    target_tmp().map_or_else(
        || std::env::temp_dir().join("headroom-tests-xdg-data"),
        |t| t.join("xdg-data"),
    )
}

/// A new directory named `prefix...` in `<target>/tmp`, on the machine's real disk (not
/// tmpfs): O_DIRECT works there and the disk cross-checks see a block device. Removed when
/// dropped.
pub fn disk_dir(prefix: &str) -> TempDir {
    let tmp = target_tmp().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&tmp)
        .unwrap_or_else(|e| panic!("a directory in {}: {e}", tmp.display()))
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

/// Run `cmd`, which must succeed (its stderr is shown when not): its output.
pub fn output_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run `cmd` (a peer's reader: jq, promtool, a Python checker) with `input` on its stdin:
/// its output, whatever its exit status (a reader that stops reading early has its answer
/// there too).
pub fn fed(cmd: &mut std::process::Command, input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// A JSON value's type as a peer's reader sees it (C's `%d` against `%.2f`): integers apart
/// from floats; for comparing the keys of headroom's output with a peer's own.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Run `cmd`, which must succeed (its stderr is shown when not): its stdout.
pub fn stdout_of(cmd: &mut Command) -> Vec<u8> {
    output_ok(cmd).stdout
}

/// Run `cmd`, which must succeed (its stderr is shown when not): its stderr, as text (where
/// `count` and `bench` write counts, progress and warnings).
pub fn stderr_of(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&output_ok(cmd).stderr).into_owned()
}

/// Run `cmd`, which must fail with exit `code` and say `sentence` on stderr, without a panic
/// message: its stderr, as text.
pub fn fails_saying(cmd: &mut Command, code: i32, sentence: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{cmd:?}: {err}");
    assert!(
        err.contains(sentence),
        "{cmd:?}: expected {sentence:?} in {err}"
    );
    assert!(!err.contains("panicked"), "{cmd:?}: {err}");
    err
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
