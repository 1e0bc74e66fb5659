//! Where the shared captured-hardware fixtures are, for tests of every crate.
//!
//! `../shared/fixtures` beside the clone (override with `HEADROOM_FIXTURES`). When `CI=true`
//! and the folder is missing, tests must fail; elsewhere they skip with a printed note.

use std::path::PathBuf;

/// The shared fixtures folder, or `None` (after printing a note) when it is missing outside
/// CI. Panics in CI when it is missing: a test that silently skips there proves nothing.
pub fn shared_fixtures() -> Option<PathBuf> {
    let dir = match std::env::var_os("HEADROOM_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !in_ci,
        "shared fixtures not found at {} (CI=true): set HEADROOM_FIXTURES",
        dir.display()
    );
    eprintln!(
        "note: shared fixtures not found at {}; skipping (set HEADROOM_FIXTURES)",
        dir.display()
    );
    None
}
