//! Where the fixtures are.
//!
//! The captured-hardware fixtures live outside the repository, in `../shared/fixtures` beside
//! the clone (override with `HEADROOM_FIXTURES`). When they are missing, a test skips: it says
//! so on stderr and appends its name and the reason to [`skip_log`], so a run that skipped
//! tests can be told from one that ran them. Under `CI=true` a missing fixture fails the test
//! instead: a test that silently skips there proves nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable that points at the shared fixtures folder.
pub const FIXTURES_ENV: &str = "HEADROOM_FIXTURES";

/// The repository's root (this crate is `crates/testsupport`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(2)
        .map_or_else(|| here.join("../.."), Path::to_path_buf)
}

/// The repository's own fixtures, `tests/fixtures/REL` (made by the scripts there; always
/// present in a clone, so a missing one is a failed test, not a skip).
pub fn own(rel: &str) -> PathBuf {
    let p = repo_root().join("tests/fixtures").join(rel);
    assert!(p.exists(), "missing fixture {}", p.display());
    p
}

/// The repository's own fixture tree `tests/fixtures/REL` as a root to read /sys and /proc
/// under (a missing one fails the test, as in [`own`]).
pub fn own_root(rel: &str) -> model::root::SysRoot {
    model::root::SysRoot::new(own(rel))
}

/// The shared fixtures folder: `$HEADROOM_FIXTURES`, else `../shared/fixtures` beside the
/// clone. Whether it exists is not checked here (see [`shared_fixtures`]).
pub fn shared_dir() -> PathBuf {
    match std::env::var_os(FIXTURES_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let root = repo_root();
            root.parent().unwrap_or(&root).join("shared/fixtures")
        }
    }
}

/// Whether the tests run under CI (`CI=true` or `CI=1`), where a missing fixture fails.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The shared fixtures folder, or `None` when it is missing outside CI (the test is then
/// reported as skipped). Panics under CI when it is missing.
pub fn shared_fixtures() -> Option<PathBuf> {
    let dir = shared_dir();
    if dir.is_dir() {
        return Some(dir);
    }
    skip(&format!(
        "shared fixtures not found at {} (set {FIXTURES_ENV})",
        dir.display()
    ));
    None
}

/// `REL` inside the shared fixtures (a file or a tree such as `sysfs/this-vm`), or `None`
/// when it is missing outside CI (reported as skipped). Panics under CI when it is missing.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = shared_fixtures()?.join(rel);
    if p.exists() {
        return Some(p);
    }
    skip(&format!(
        "shared fixture {} not found (set {FIXTURES_ENV})",
        p.display()
    ));
    None
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
    assert!(!in_ci(), "{test}: {why} (CI=true: missing fixtures fail)");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_fixtures_are_found_from_any_crate() {
        assert!(own("sysfs").is_dir());
    }

    #[test]
    fn a_missing_shared_fixture_is_skipped_and_logged_outside_ci() {
        if in_ci() {
            return; // there it fails, as it must: not testable from inside the same process
        }
        let name = "no-such-fixture-tree-for-the-skip-test";
        assert_eq!(shared(&format!("sysfs/{name}")), None);
        let log = std::fs::read_to_string(skip_log()).unwrap_or_default();
        assert!(
            log.lines().any(|l| l
                .contains("a_missing_shared_fixture_is_skipped_and_logged_outside_ci")
                && l.contains(name)),
            "{log}"
        );
    }
}
