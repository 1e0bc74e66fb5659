//! scripts/size-check.sh, which scripts/dist.sh (and so CI) runs on the board binaries it
//! built: a binary at or over 5,000,000 B fails the build with one sentence that names it, its
//! size and the limit; one under it passes silently. CI builds the three board targets and has
//! no way around the check.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn size_check(files: &[&Path]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/size-check.sh");
    Command::new(script).args(files).output().unwrap()
}

/// A file of `len` bytes (sparse: no 5 MB written) named like dist.sh's binaries.
fn binary(dir: &Path, target: &str, len: u64) -> PathBuf {
    let d = dir.join(format!("headroom-0.1.0-{target}"));
    std::fs::create_dir(&d).unwrap();
    let f = d.join("headroom");
    std::fs::File::create(&f).unwrap().set_len(len).unwrap();
    f
}

#[test]
fn a_binary_of_5_000_000_bytes_or_more_fails_naming_it_its_size_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fits = binary(dir.path(), "aarch64-unknown-linux-musl", 4_999_999);
    let at = binary(dir.path(), "armv7-unknown-linux-musleabihf", 5_000_000);
    let over = binary(dir.path(), "x86_64-unknown-linux-musl", 5_027_656);

    let out = size_check(&[&fits, &at, &over]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "size-check: {} is 5,000,000 B, at or over the 5,000,000 B limit for a board \
                 binary: make it smaller (docs/boards.md, \"Binary size\")",
                at.display()
            ),
            format!(
                "size-check: {} is 5,027,656 B, at or over the 5,000,000 B limit for a board \
                 binary: make it smaller (docs/boards.md, \"Binary size\")",
                over.display()
            ),
        ]
    );
}

/// The sizes of today's binaries (4.45 MB the largest) pass.
#[test]
fn binaries_under_the_limit_pass_silently() {
    let dir = tempfile::tempdir().unwrap();
    let a = binary(dir.path(), "aarch64-unknown-linux-musl", 4_999_999);
    let b = binary(dir.path(), "x86_64-unknown-linux-musl", 4_453_000);
    let out = size_check(&[&a, &b]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

#[test]
fn a_missing_binary_fails_and_no_argument_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("headroom");
    let out = size_check(&[&missing]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "size-check: {} is not a file: give the path of a binary built by scripts/dist.sh\n",
            missing.display()
        )
    );
    let out = size_check(&[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

fn repo_file(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// CI builds all three board targets with scripts/dist.sh, and a binary at the limit fails
/// it: dist.sh ends with the size check as a plain command under `set -e`, and neither it nor
/// CI has a switch that turns the failure into a warning.
#[test]
fn ci_fails_when_a_board_binary_reaches_the_limit() {
    let ci = repo_file(".ci/run");
    let dist = repo_file("scripts/dist.sh");
    assert!(
        !ci.contains("SIZE_CHECK"),
        ".ci/run must not soften the size check"
    );
    assert!(
        !dist.contains("SIZE_CHECK"),
        "dist.sh must not soften the size check"
    );
    assert!(dist.contains("set -euo pipefail"));
    assert!(
        dist.lines()
            .any(|l| l.trim() == "scripts/size-check.sh \"${built[@]}\""),
        "dist.sh must end with the size check on every binary it built"
    );
    let targets = ci
        .lines()
        .find(|l| l.contains("TARGETS=") && l.contains("scripts/dist.sh"))
        .expect("CI runs scripts/dist.sh with its TARGETS");
    for t in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "armv7-unknown-linux-musleabihf",
    ] {
        assert!(targets.contains(t), "CI does not build {t}: {targets}");
    }
}
