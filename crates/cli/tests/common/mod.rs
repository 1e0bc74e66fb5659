//! What the integration tests share: the binary as a user runs it, and its JSON output.
#![allow(dead_code)] // each test file uses a part of it

use assert_cmd::Command;
use serde_json::Value;

/// Benchmarks keep their results here, never in the history of the user running the tests.
pub const XDG_DATA_HOME: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/xdg-data");

/// The `headroom` binary without colour and with the tests' own history.
pub fn headroom() -> Command {
    let mut c = Command::cargo_bin("headroom").unwrap();
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", XDG_DATA_HOME);
    c
}

/// Run `cmd`, which must succeed (its stderr is shown when not), and parse its stdout.
pub fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The same binary as a plain process, for tests that signal it (Ctrl-C) while it runs.
pub fn headroom_process() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("headroom"));
    c.env("NO_COLOR", "1").env("XDG_DATA_HOME", XDG_DATA_HOME);
    c
}
