//! Where the fixtures are.
//!
//! The captured-hardware fixtures live outside the repository, in `../shared/fixtures` beside
//! the clone (override with `HEADROOM_FIXTURES`). When they are missing, a test skips: it says
//! so on stderr and appends its name and the reason to [`skip_log`](crate::skip::skip_log) ([`crate::skip`]), so a run that skipped
//! tests can be told from one that ran them. Under `CI=true` a missing fixture fails the test
//! instead: a test that silently skips there proves nothing.

use crate::skip::skip;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::{in_ci, skip_log};

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
