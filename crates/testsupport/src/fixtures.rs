//! Where the fixtures are.
//!
//! Every fixture is in the repository, under `tests/fixtures/`: the hand-made and generated
//! trees (made by the scripts there) and, in `tests/fixtures/captured/`, the sysfs trees and
//! `lspci` dumps captured from real machines (their sources and licences in
//! `tests/fixtures/captured/README.md`). A clone runs every fixture test, so a missing fixture
//! fails its test with the path it looked for; nothing here skips.
//!
//! `HEADROOM_FIXTURES=DIR` reads the captured fixtures from DIR instead (a folder laid out as
//! `tests/fixtures/captured`: `sysfs/`, `pci/`), to run the same tests on other captures.

use std::path::{Path, PathBuf};

/// The environment variable that points the captured fixtures at another folder.
pub const FIXTURES_ENV: &str = "HEADROOM_FIXTURES";

/// The repository's root (this crate is `crates/testsupport`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(2)
        .map_or_else(|| here.join("../.."), Path::to_path_buf)
}

/// The repository's own fixtures, `tests/fixtures/REL`; a missing one fails the test.
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

/// The captured fixtures folder: `$HEADROOM_FIXTURES`, else `tests/fixtures/captured` in the
/// repository. Whether it exists is not checked here (see [`captured_dir`]).
pub fn shared_dir() -> PathBuf {
    match std::env::var_os(FIXTURES_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => repo_root().join("tests/fixtures/captured"),
    }
}

/// The captured fixtures folder ([`shared_dir`]); a missing one fails the test.
pub fn captured_dir() -> PathBuf {
    let dir = shared_dir();
    assert!(
        dir.is_dir(),
        "missing captured fixtures folder {} (tests/fixtures/captured in the repository, or \
         ${FIXTURES_ENV})",
        dir.display()
    );
    dir
}

/// `REL` inside the captured fixtures (a file or a tree such as `sysfs/this-vm`); a missing
/// one fails the test.
pub fn captured(rel: &str) -> PathBuf {
    let p = captured_dir().join(rel);
    assert!(p.exists(), "missing captured fixture {}", p.display());
    p
}

/// The captured fixtures folder, always `Some` (the tests written when it could be absent
/// match on it); a missing one fails the test, as in [`captured_dir`].
pub fn shared_fixtures() -> Option<PathBuf> {
    Some(captured_dir())
}

/// `REL` inside the captured fixtures, always `Some`; a missing one fails the test, as in
/// [`captured`].
pub fn shared(rel: &str) -> Option<PathBuf> {
    Some(captured(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_fixtures_are_found_from_any_crate() {
        assert!(own("sysfs").is_dir());
    }

    /// A clone has every captured tree and dump: they are read from the repository, not from
    /// a folder beside it.
    #[test]
    fn captured_fixtures_are_in_the_repository() {
        if std::env::var_os(FIXTURES_ENV).is_some_and(|d| !d.is_empty()) {
            return; // pointed elsewhere on purpose
        }
        let dir = shared_fixtures().unwrap();
        assert!(dir.starts_with(repo_root()), "{}", dir.display());
        for rel in [
            "README.md",
            "sysfs/this-vm/SOURCE.md",
            "sysfs/ul-fc27-nvme-sata-lvm/sys/block",
            "pci/pciutils-tests_cap-phy32.lspci",
        ] {
            assert_eq!(shared(rel), Some(dir.join(rel)));
        }
    }

    #[test]
    #[should_panic(expected = "missing captured fixture")]
    fn a_missing_captured_fixture_fails_the_test() {
        let _ = shared("sysfs/no-such-fixture-tree");
    }
}
