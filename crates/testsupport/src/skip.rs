//! The one way a test is skipped: a test that needs root, a tool (perf, losetup, chromium), a
//! device or a fixture this machine does not have calls [`skip`] (or [`unless`]) and returns.
//! Outside CI that is a note on stderr and a line in [`skip_log`]; under `CI=true`, where
//! everything must run, it fails the test, so CI never passes a test that did not run.

use std::io::Write as _;
use std::path::PathBuf;

/// Whether the tests run under CI (`CI=true` or `CI=1`), where a skip fails.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Where skipped tests are listed, one line each (`binary (pid N) test name: reason`), appended
/// run after run: `tmp/` of the build's target directory, beside the test binaries.
pub fn skip_log() -> PathBuf {
    // A test binary runs from <target>/<profile>/deps/; <target>/tmp is cargo's own
    // CARGO_TARGET_TMPDIR.
    crate::cmd::target_tmp()
        .unwrap_or_else(|| std::env::temp_dir().join("tmp"))
        .join("skipped-tests.log")
}

/// Report the current test as skipped for `why`: fail under CI, else a note on stderr and a
/// line in [`skip_log`].
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    assert!(!in_ci(), "{test}: {why} (CI=true: a skipped test fails)");
    let log = skip_log();
    eprintln!("note: {test} skipped: {why}; listed in {}", log.display());
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Best effort: a log that cannot be written leaves the note on stderr.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        // The test binary and its pid tell one run's skips from an earlier run's.
        let exe = std::env::current_exe().unwrap_or_default();
        let binary = exe.file_name().unwrap_or_default().to_string_lossy();
        let _ = writeln!(f, "{binary} (pid {}) {test}: {why}", std::process::id());
    }
}

/// Whether a test that needs `what` may run: `ok`, or else the test is skipped for "`what`"
/// (see [`skip`]) and `false` is returned.
pub fn unless(ok: bool, what: &str) -> bool {
    if !ok {
        skip(what);
    }
    ok
}
