//! The user's documents hold what a new user needs and stay true to the repository: the README
//! is short, its test command is the one CI runs, its size table states the limit CI enforces,
//! its links lead to files that exist; the CHANGELOG keeps Keep a Changelog's layout with an
//! `[Unreleased]` section ready for the next lines.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The commands of the README's shell blocks (```sh), without their comments.
fn shell_commands(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if in_sh {
            let cmd = line.split(" #").next().unwrap_or_default().trim();
            if !cmd.is_empty() && !cmd.starts_with('#') {
                out.push(cmd.to_string());
            }
        }
    }
    out
}

#[test]
fn the_readme_is_under_200_lines() {
    let lines = read("README.md").lines().count();
    assert!(
        lines < 200,
        "README.md has {lines} lines: move reference material to docs/"
    );
}

/// `.ci/run` runs exactly the test command the README gives a new user, and the README gives
/// the command that builds and runs headroom's audit.
#[test]
fn ci_runs_the_readmes_test_command() {
    let readme = read("README.md");
    let commands = shell_commands(&readme);
    assert!(
        commands.iter().any(|c| c == "cargo run --release -- audit"),
        "{commands:?}"
    );
    let test = commands
        .iter()
        .find(|c| c.starts_with("cargo test"))
        .unwrap_or_else(|| panic!("the README gives no test command: {commands:?}"));
    let ci = read(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == test),
        "`.ci/run` does not run the README's test command `{test}` as it is written"
    );
}

/// The README's size table states the limit scripts/size-check.sh enforces.
#[test]
fn the_readmes_size_limit_is_the_enforced_one() {
    let script = read("scripts/size-check.sh");
    let limit: u64 = script
        .lines()
        .find_map(|l| l.strip_prefix("LIMIT="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let with_commas = {
        let digits = limit.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let readme = read("README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("| size, stripped"))
        .expect("the README has a one-line size table");
    assert!(
        row.trim_end().ends_with(&format!("| {with_commas} B |")),
        "the README's size table does not end with the enforced limit {with_commas} B: {row}"
    );
}

/// The relative links `[text](path)` of a Markdown file, without their `#anchor`.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with('#') && !target.contains(' ') {
            out.push(target.split('#').next().unwrap_or_default().to_string());
        }
    }
    out
}

/// Every relative link in the README, the CHANGELOG and docs/ leads to a file of the
/// repository, and the README's design link is docs/ARCHITECTURE.md.
#[test]
fn links_of_the_user_documents_lead_to_files() {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("CHANGELOG.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p.strip_prefix(repo()).unwrap().to_path_buf());
        }
    }
    let mut broken = Vec::new();
    for doc in &docs {
        let text = read(&doc.to_string_lossy());
        let dir = repo().join(doc).parent().unwrap().to_path_buf();
        for link in relative_links(&text) {
            if !dir.join(&link).exists() {
                broken.push(format!("{}: {link}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to no file: {broken:?}");
    let readme = read("README.md");
    assert!(relative_links(&readme).contains(&"docs/ARCHITECTURE.md".to_string()));
}

#[test]
fn relative_links_are_found() {
    let md = "see [a](docs/a.md#x), [b](https://x.org/b) and [c](#here); [d](../d.md)";
    assert_eq!(relative_links(md), ["docs/a.md", "../d.md"]);
}

/// Keep a Changelog's layout: `## [Unreleased]` first with its Added, Changed, Fixed and
/// Security headings ready, then each release as `## [X.Y.Z] - YYYY-MM-DD`, and no history
/// of how the work went.
#[test]
fn the_changelog_keeps_keep_a_changelogs_layout() {
    let log = read("CHANGELOG.md");
    let versions: Vec<&str> = log.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(versions.first(), Some(&"## [Unreleased]"), "{versions:?}");
    for v in &versions[1..] {
        let rest = v.strip_prefix("## [").unwrap_or_else(|| panic!("{v}"));
        let (version, date) = rest.split_once("] - ").unwrap_or_else(|| panic!("{v}"));
        assert_eq!(version.split('.').count(), 3, "{v}");
        assert!(
            date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
            "{v}"
        );
    }
    assert!(versions.iter().any(|v| v.starts_with("## [0.1.0] - ")));
    let unreleased = log.split("## [Unreleased]").nth(1).unwrap();
    let unreleased = unreleased.split("\n## ").next().unwrap();
    for heading in ["### Added", "### Changed", "### Fixed", "### Security"] {
        assert!(unreleased.contains(heading), "[Unreleased] lacks {heading}");
    }
    for section in log.lines().filter(|l| l.starts_with("### ")) {
        assert!(
            [
                "### Added",
                "### Changed",
                "### Deprecated",
                "### Removed",
                "### Fixed",
                "### Security"
            ]
            .contains(&section),
            "not a Keep a Changelog section: {section}"
        );
    }
}
