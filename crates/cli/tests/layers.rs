//! The layers of docs/ARCHITECTURE.md hold: each crate depends only along its arrows,
//! inside a crate no two modules of one parent (the top-level ones, or the children of any
//! module) use each other (directly or around a loop), and no
//! item is passed on under a second name, so a reader finds each thing where its layer puts
//! it, under one name.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's own crates, by the name other crates use for them.
const OURS: [&str; 7] = [
    "model",
    "probe",
    "bench",
    "counters",
    "report",
    "testsupport",
    "headroom",
];

/// The arrows of docs/ARCHITECTURE.md: what each crate may depend on (not counting dev-dependencies).
fn allowed(krate: &str) -> &'static [&'static str] {
    match krate {
        "model" => &[],
        "probe" | "bench" | "counters" | "report" => &["model"],
        "cli" => &["model", "probe", "bench", "counters", "report"],
        // Dev-only test support (fixture paths, synthetic config space, the command helper):
        // it may use any library crate, and no crate may depend on it outside its tests.
        "testsupport" => &["model", "probe", "bench", "counters", "report"],
        other => panic!("a crate docs/ARCHITECTURE.md does not draw: {other}"),
    }
}

/// Our crates among `[dependencies]` and `[target.'…'.dependencies]` of a Cargo.toml.
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if !in_deps || line.starts_with('#') {
            continue;
        }
        let key = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or_default()
            .trim();
        if OURS.contains(&key) {
            out.insert(key.to_string());
        }
    }
    out
}

#[test]
fn crates_depend_only_along_designs_arrows() {
    let crates = workspace().join("crates");
    let mut seen = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let ok = allowed(&name);
        for dep in dependencies(&manifest) {
            assert!(
                ok.contains(&dep.as_str()),
                "crate {name} depends on {dep}, against the arrows of docs/ARCHITECTURE.md (allowed: {ok:?})"
            );
        }
        seen += 1;
    }
    assert!(seen >= 7, "read {seen} crates under {}", crates.display());
    // The check reads what it should: cli's manifest names report and model.
    let cli = std::fs::read_to_string(crates.join("cli/Cargo.toml")).unwrap();
    let deps = dependencies(&cli);
    assert!(
        deps.contains("report") && deps.contains("model"),
        "{deps:?}"
    );
}

/// A source file without comments and without its test module (`#[cfg(test)]` to the end,
/// where this project keeps it).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

/// Top-level module of each source file under `src`, and the top-level modules its code names
/// as `crate::NAME`.
fn module_uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let paths = rust_files(src);
    let top = |p: &Path| -> String {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        first.trim_end_matches(".rs").to_string()
    };
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &paths {
        let from = top(p);
        let entry = uses.entry(from.clone()).or_default();
        let text = code(p);
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != from {
                entry.insert(name);
            }
        }
    }
    let modules: BTreeSet<String> = uses.keys().cloned().collect();
    for targets in uses.values_mut() {
        targets.retain(|t| modules.contains(t));
    }
    uses
}

/// A loop of modules each using the next, if there is one.
fn find_loop(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == m) {
            let mut l = stack[i..].to_vec();
            l.push(m.to_string());
            return Some(l);
        }
        if done.contains(m) {
            return None;
        }
        stack.push(m.to_string());
        for next in uses.get(m).into_iter().flatten() {
            if let Some(l) = visit(next, uses, stack, done) {
                return Some(l);
            }
        }
        stack.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|m| visit(m, uses, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_loop_inside_any_crate() {
    let crates = workspace().join("crates");
    let mut read = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let uses = module_uses(&src);
        read += uses.len();
        if let Some(l) = find_loop(&uses) {
            panic!(
                "{}: modules use each other in a loop: {}",
                src.display(),
                l.join(" -> ")
            );
        }
    }
    assert!(read > 50, "read only {read} modules");
}

#[test]
fn a_loop_is_found_where_there_is_one() {
    let uses: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(find_loop(&uses).unwrap().join(" -> "), "a -> b -> c -> a");
    let mut one_way = uses.clone();
    one_way.get_mut("c").unwrap().clear();
    assert_eq!(find_loop(&one_way), None);
}

/// The module path of the source file `file` under `src`: `kinds::disk` for `kinds/disk.rs`
/// and `kinds/disk/mod.rs`, empty for the crate's root (`lib.rs`, `main.rs`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths the code of a file in module `here` names through `crate::` or `super::`, each
/// made absolute (`super::cases::Case` in `kinds::audit` is `kinds::cases::Case`); a group
/// (`crate::kinds::{audit, cases::Case}`) gives one path per member.
fn named_paths(text: &str, here: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let start_ok = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        let (mut base, mut j) = if start_ok && rest.starts_with("crate::") {
            (Vec::new(), i + 7)
        } else if start_ok && rest.starts_with("super::") {
            let mut b = here.to_vec();
            b.pop();
            (b, i + 7)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        while text[j..].starts_with("super::") {
            base.pop();
            j += 7;
        }
        loop {
            let name = ident(&text[j..]);
            if name.is_empty() {
                break;
            }
            base.push(name.clone());
            j += name.len();
            if text[j..].starts_with("::") {
                j += 2;
            } else {
                break;
            }
        }
        if text[j..].starts_with('{') {
            // One level of a group: each member's first names.
            let end = text[j..].find('}').map_or(text.len(), |e| j + e);
            for member in text[j + 1..end].split(',') {
                let mut path = base.clone();
                for name in member.trim().split("::") {
                    let name = ident(name.trim());
                    if name.is_empty() {
                        break;
                    }
                    path.push(name);
                }
                out.push(path);
            }
            j = end;
        } else {
            out.push(base);
        }
        i = j.max(i + 1);
    }
    out
}

/// For each module of a crate (by its path; the root is empty), which of its children uses
/// which other: a child uses a sibling when its code or any of its descendants' names the
/// sibling or anything inside it. Uses of an ancestor or a descendant are not between
/// siblings and are left out.
fn sibling_uses(src: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let files = rust_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let mut out: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for m in &modules {
        if let Some((last, parent)) = m.split_last() {
            out.entry(parent.to_vec())
                .or_default()
                .entry(last.clone())
                .or_default();
        }
    }
    for f in &files {
        let here = module_path(src, f);
        for named in named_paths(&code(f), &here) {
            // The module it names: the longest prefix that is a module of the crate.
            let Some(target) = (0..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let common = here.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == here.len() || common == target.len() {
                continue;
            }
            out.entry(here[..common].to_vec())
                .or_default()
                .entry(here[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    out
}

/// A loop of modules of one parent each using the next, at any depth of `src`'s modules, as
/// their full paths.
fn nested_loop(src: &Path) -> Option<Vec<String>> {
    sibling_uses(src).into_iter().find_map(|(parent, uses)| {
        find_loop(&uses).map(|l| {
            l.into_iter()
                .map(|m| {
                    let mut p = parent.clone();
                    p.push(m);
                    p.join("::")
                })
                .collect()
        })
    })
}

/// No two modules of one parent use each other around a loop, at any depth: a kind's module
/// that names a shared module of `kinds` which names that kind back (`kinds::cases` and
/// `kinds::audit` did) is as much a tangle as two top-level modules that do.
#[test]
fn no_module_loop_at_any_depth() {
    let crates = workspace().join("crates");
    let mut parents = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        parents += sibling_uses(&src).len();
        if let Some(l) = nested_loop(&src) {
            panic!(
                "{}: modules of one parent use each other in a loop: {}",
                src.display(),
                l.join(" -> ")
            );
        }
    }
    assert!(parents > 10, "read only {parents} parent modules");
}

#[test]
fn a_loop_below_the_top_level_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod kinds;\n");
    write(
        "kinds/mod.rs",
        "pub mod audit;\npub mod cases;\npub mod disk;\n",
    );
    write(
        "kinds/cases.rs",
        "pub fn of() { crate::kinds::audit::cases(); }\n",
    );
    write(
        "kinds/audit/mod.rs",
        "use super::cases::Case;\npub mod text;\n",
    );
    write(
        "kinds/audit/text.rs",
        "use crate::kinds::{disk, cases::Case};\n",
    );
    write("kinds/disk.rs", "use super::super::kinds::cases;\n");
    assert_eq!(
        nested_loop(src).unwrap().join(" -> "),
        "kinds::audit -> kinds::cases -> kinds::audit"
    );
    // One way only: no loop.
    write("kinds/cases.rs", "pub struct Case;\n");
    assert_eq!(nested_loop(src), None);
    // A child naming its parent, or a parent its child, is no loop between siblings.
    write(
        "kinds/mod.rs",
        "pub mod audit;\npub mod cases;\npub fn f() { audit::g(); }\n",
    );
    write("kinds/audit/text.rs", "use super::super::summarize;\n");
    assert_eq!(nested_loop(src), None);
}

/// Everything about a result kind lives in its module of `report::kinds`; outside it, a few
/// files wire it in (docs/ARCHITECTURE.md, "How to add a result kind"), so a new kind (a
/// `watch`, a `bench video`) touches at most seven. Counted for `bench mmio`'s kind: the
/// files of report's and cli's sources and of docs/ that name it outside `kinds/mmio/`.
#[test]
fn a_kind_is_wired_in_at_seven_files_at_most() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
                out.push(p);
            }
        }
    }
    let root = workspace();
    let own = root.join("crates/report/src/kinds/mmio");
    let names = [
        "DocumentKind::Mmio",
        "kinds::mmio",
        "MmioKind",
        "bench_mmio",
        "mod mmio",
    ];
    let mut files = Vec::new();
    for dir in ["crates/report/src", "crates/cli/src", "docs"] {
        walk(&root.join(dir), &mut files);
    }
    let mut wired: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&own))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            names.iter().any(|n| text.contains(n))
        })
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    wired.sort();
    assert!(
        wired.contains(&"crates/report/src/kinds/mod.rs".to_string()),
        "the count finds no registration: {wired:?}"
    );
    assert!(
        wired.len() <= 7,
        "the mmio kind is named in {} files outside its module: {wired:?}",
        wired.len()
    );
}

/// The `pub use` lines of a module's code that pass on an item from outside the module's own
/// children (another crate's, a parent's or a sibling's), which would give that item a second
/// name: `pub use child::Item` is allowed, `pub use model::disk::TestSpec` or
/// `pub use super::Event` is not.
fn second_names(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let children: BTreeSet<String> = code
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            let l = l
                .strip_prefix("pub(crate) ")
                .or(l.strip_prefix("pub "))
                .unwrap_or(l);
            l.strip_prefix("mod ").map(ident)
        })
        .collect();
    code.lines()
        .map(str::trim)
        .filter(|l| {
            l.strip_prefix("pub use ").is_some_and(|path| {
                let path = path.strip_prefix("self::").unwrap_or(path);
                !children.contains(&ident(path))
            })
        })
        .map(String::from)
        .collect()
}

/// One home, one name: no crate passes on another crate's type (bench's
/// `pub use model::disk::TestSpec` made `bench::disk::TestSpec` a second name for it), and no
/// module passes on a parent's or a sibling's item; a `pub use` only gathers the module's own
/// children's items.
#[test]
fn every_item_has_one_name() {
    let crates = workspace().join("crates");
    let (mut files, mut gathered) = (0, 0);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        for p in rust_files(&src) {
            let text = code(&p);
            gathered += text
                .lines()
                .filter(|l| l.trim().starts_with("pub use "))
                .count();
            for line in second_names(&text) {
                found.push(format!(
                    "{}: {line}",
                    p.strip_prefix(&crates).unwrap().display()
                ));
            }
            files += 1;
        }
    }
    assert!(
        found.is_empty(),
        "items passed on under a second name (import them from their home instead):\n{}",
        found.join("\n")
    );
    // The scan saw the tree: bench's and counters' modules gather their children's items.
    assert!(
        files > 100 && gathered > 10,
        "{files} files, {gathered} pub use lines"
    );
}

#[test]
fn a_second_name_is_found_where_there_is_one() {
    let code = "mod engine;\npub mod runner;\npub use engine::{Engine, IoUnit};\n\
                pub use self::runner::DiskRun;\npub use model::disk::TestSpec;\n\
                pub use super::Event;\npub use crate::units::parse_cpu_list;\n\
                use model::disk::Workload;\n";
    assert_eq!(
        second_names(code),
        [
            "pub use model::disk::TestSpec;",
            "pub use super::Event;",
            "pub use crate::units::parse_cpu_list;"
        ]
    );
}

/// The string literals of `code` that are a /proc or /sys path (`"/proc/interrupts"`,
/// `format!("/sys/bus/pci/devices/{f}")`), each with its line. A path inside a sentence (`echo
/// 1 > /sys/bus/pci/devices/.../enable` told to the user) is not a read and is not matched.
fn system_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for start in ["\"/proc", "\"/sys"] {
            for (i, _) in line.match_indices(start) {
                let next = line[i + start.len()..].chars().next();
                if matches!(next, Some('/') | Some('"')) {
                    let end = line[i + 1..].find('"').map_or(line.len(), |e| i + 2 + e);
                    out.push(format!("line {}: {}", n + 1, &line[i..end]));
                }
            }
        }
    }
    out
}

/// Every /proc or /sys path named by the code (tests left out) of the crate `krate`, each as
/// `FILE: line N: "PATH"`.
fn system_paths_of(krate: &str) -> Vec<String> {
    let src = workspace().join("crates").join(krate).join("src");
    let files = rust_files(&src);
    assert!(
        files.len() > 10,
        "read only {} files under {}",
        files.len(),
        src.display()
    );
    let mut found = Vec::new();
    for p in &files {
        for hit in system_paths(&code(p)) {
            found.push(format!(
                "{}: {hit}",
                p.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    found
}

/// ARCHITECTURE: cli "never reads /proc or /sys": discovery is probe's, sampling counters', the
/// mapping of a BAR bench's. Every /proc or /sys path in cli's code is one of theirs.
#[test]
fn cli_names_no_proc_or_sys_path() {
    let found = system_paths_of("cli");
    assert!(
        found.is_empty(),
        "cli reads /proc or /sys itself (ask probe or counters instead):\n{}",
        found.join("\n")
    );
}

/// ARCHITECTURE: report "never touches hardware": the host facts of a document's envelope (its
/// hostname and kernel) come from probe, passed in by cli (`Host::this` read
/// /proc/sys/kernel from report). Its tests may name sysfs paths in fixtures.
#[test]
fn report_names_no_proc_or_sys_path() {
    let found = system_paths_of("report");
    assert!(
        found.is_empty(),
        "report reads /proc or /sys itself (let probe read it and cli pass it in):\n{}",
        found.join("\n")
    );
    // The scan sees what it should: probe names the files the envelope's host is read from.
    assert!(
        system_paths_of("probe")
            .iter()
            .any(|h| h.contains("/proc/sys/kernel/hostname")),
        "probe names no /proc/sys/kernel/hostname"
    );
}

#[test]
fn a_system_path_is_found_where_there_is_one() {
    let code = "let a = root.read(\"/proc/sys/kernel/osrelease\");\n\
                let d = root.path(format!(\"/sys/bus/pci/devices/{f}\"));\n\
                let s = \"/sys\";\n\
                let m = format!(\"enable it: echo 1 > /sys/bus/pci/devices/{f}/enable\");\n\
                let n = \"/system/x\"; let p = \"/process\";\n";
    assert_eq!(
        system_paths(code),
        [
            "line 1: \"/proc/sys/kernel/osrelease\"",
            "line 2: \"/sys/bus/pci/devices/{f}\"",
            "line 3: \"/sys\"",
        ]
    );
}

/// A test that cannot run here (no root, no tool, no device, no fixture)
/// skips through `testsupport::skip`, which fails under CI=true; a test that says "skipped" on
/// stderr by itself and returns passes in CI without having run (13 did on main).
#[test]
fn tests_skip_only_through_testsupport() {
    let crates = workspace().join("crates");
    let home = crates.join("testsupport/src/skip.rs");
    let (mut files, mut through) = (0, 0);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        for sub in ["src", "tests"] {
            if !dir.join(sub).is_dir() {
                continue;
            }
            for p in rust_files(&dir.join(sub)) {
                // The skip itself, and this test's own pattern.
                if p == home || p.ends_with("cli/tests/layers.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                through +=
                    text.matches("skip::skip(").count() + text.matches("skip::unless(").count();
                for (n, line) in text.lines().enumerate() {
                    let l = line.to_lowercase();
                    if (l.contains("eprintln!(") || l.contains("println!(")) && l.contains("skip") {
                        found.push(format!(
                            "{}:{}: {}",
                            p.strip_prefix(&crates).unwrap().display(),
                            n + 1,
                            line.trim()
                        ));
                    }
                }
                files += 1;
            }
        }
    }
    assert!(
        found.is_empty(),
        "tests that skip by a note of their own (use testsupport::skip::skip):\n{}",
        found.join("\n")
    );
    assert!(
        files > 100 && through > 20,
        "{files} files, {through} skips through testsupport"
    );
}

/// The serde derives and impls of `text` (a source file without comments): each as the line
/// that declares it.
fn serde_declarations(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `#[derive(...)]`, on one line or several.
    for (i, _) in text.match_indices("derive(") {
        let attr: String = text[i..].chars().take_while(|c| *c != ']').collect();
        if attr.contains("Serialize") || attr.contains("Deserialize") {
            out.push(attr.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    for line in text.lines().map(str::trim) {
        let implements = |t: &str| {
            line.contains(&format!("{t} for ")) || line.contains(&format!("{t}<'de> for "))
        };
        if line.starts_with("impl") && (implements("Serialize") || implements("Deserialize")) {
            out.push(line.to_string());
        }
    }
    out
}

/// Every document type lives in its kind's module of report (`report::kinds`),
/// written by cli and read back by report, compare and history through that one type: cli
/// declares none, so no document has a second declaration to drift from.
#[test]
fn cli_declares_no_document_type() {
    let src = workspace().join("crates/cli/src");
    let mut found = Vec::new();
    let files = rust_files(&src);
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let text: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        for d in serde_declarations(&text) {
            found.push(format!("{}: {d}", p.strip_prefix(&src).unwrap().display()));
        }
    }
    assert!(
        files.len() > 10,
        "read {} files under {}",
        files.len(),
        src.display()
    );
    assert!(
        found.is_empty(),
        "serde types declared in cli (move each to its kind's module, report::kinds): {found:#?}"
    );
}

#[test]
fn a_serde_declaration_is_found_where_there_is_one() {
    let code = "#[derive(Debug, serde::Serialize)]\nstruct A<'a> { x: &'a str }\n\
                #[derive(\n    Clone,\n    Deserialize,\n)]\nstruct B;\n\
                impl<'de> Deserialize<'de> for C { }\nimpl serde::Serialize for D { }\n\
                fn print<T: serde::Serialize>(t: &T) {}\n#[derive(Debug, Clone)]\nstruct E;";
    let found = serde_declarations(code);
    assert_eq!(
        found,
        [
            "derive(Debug, serde::Serialize)",
            "derive( Clone, Deserialize, )",
            "impl<'de> Deserialize<'de> for C { }",
            "impl serde::Serialize for D { }"
        ]
    );
}

/// The types (`struct`, `enum`, `trait`, `type`) declared in the code of every file under
/// `src`, by name.
fn type_names(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in rust_files(src) {
        for line in code(&p).lines() {
            let mut words = line.split_whitespace().skip_while(|w| w.starts_with("pub"));
            if let (Some("struct" | "enum" | "trait" | "type"), Some(name)) =
                (words.next(), words.next())
            {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// model's types are the vocabulary every crate shares (`LinkKind` is the kind of a
/// link on a path); cli declaring a type of the same name (its `ceiling` subcommands were a
/// second `LinkKind`, its trace recorder a second `Recorder`) makes a reader confuse the two.
#[test]
fn cli_names_no_type_as_model_does() {
    let crates = workspace().join("crates");
    let model = type_names(&crates.join("model/src"));
    let cli = type_names(&crates.join("cli/src"));
    assert!(
        model.contains("LinkKind") && model.contains("Host") && cli.contains("GlobalArgs"),
        "the scan missed known types: model {} types, cli {}",
        model.len(),
        cli.len()
    );
    let both: Vec<&String> = cli.intersection(&model).collect();
    assert!(
        both.is_empty(),
        "cli declares types named as model's (rename cli's): {both:?}"
    );
}

/// One `Host`: the machine a document was made on is `model::system::Host`, which
/// probe reads and report writes in every envelope; no other crate declares one.
#[test]
fn one_host_type() {
    let crates = workspace().join("crates");
    let mut homes = Vec::new();
    for k in ["model", "probe", "bench", "counters", "report", "cli"] {
        if type_names(&crates.join(k).join("src")).contains("Host") {
            homes.push(k);
        }
    }
    assert_eq!(homes, ["model"], "crates declaring a type Host");
}

/// cli's source files (tests left out, see [`code`]), by file name.
fn cli_code() -> Vec<(String, String)> {
    let src = workspace().join("crates/cli/src");
    let files = rust_files(&src);
    assert!(files.len() > 10, "read only {} files", files.len());
    files
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&src).unwrap().display().to_string();
            (name, code(p))
        })
        .collect()
}

/// Where cli's code (tests left out) names any of `needles` outside the files `allowed`, each
/// as `FILE: NEEDLE`.
fn named_outside(needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in cli_code() {
        if allowed.contains(&name.as_str()) {
            continue;
        }
        for n in needles {
            // A name ending in a letter is matched as a whole word (`bench::Bench`, not
            // `bench::BenchArgs`).
            let word = n.ends_with(|c: char| c.is_ascii_alphanumeric());
            let hit = text.match_indices(n).any(|(i, _)| {
                !word
                    || !text[i + n.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
            if hit {
                found.push(format!("{name}: {n}"));
            }
        }
    }
    found
}

/// The driver (crates/cli/src/driver.rs) is the one place a benchmark runs: signal handling,
/// threads and child processes are its own, so a stop (SIGINT, SIGTERM) reaches every engine
/// through one flag and keeps partial results the same way in every command. `count`, which
/// runs a user's command rather than a benchmark, takes its handlers from the driver too.
#[test]
fn only_the_driver_handles_signals_and_starts_threads() {
    let found = named_outside(
        &["signal_hook", "libc::signal(", "sigaction"],
        &["driver.rs"],
    );
    assert!(
        found.is_empty(),
        "signal handlers installed outside the driver (use crate::driver):\n{}",
        found.join("\n")
    );
    let found = named_outside(&["Interrupt::install"], &["driver.rs", "count.rs"]);
    assert!(
        found.is_empty(),
        "a command installs its own SIGINT/SIGTERM handling instead of running through \
         crate::driver::drive:\n{}",
        found.join("\n")
    );
    let found = named_outside(
        &[
            "thread::spawn",
            "thread::scope",
            "thread::Builder",
            ".spawn()",
        ],
        &["driver.rs"],
    );
    assert!(
        found.is_empty(),
        "threads or child processes started outside the driver:\n{}",
        found.join("\n")
    );
}

/// Results are kept in one place: only the driver writes a benchmark's document to
/// `--output`, the textfile directory and the history (output.rs holds the writers it calls).
/// `audit` (its metrics) and `count --save` are not benchmarks and keep their own.
#[test]
fn only_the_driver_keeps_results() {
    let found = named_outside(
        &[
            ".keep(",
            "save_result(",
            "write_textfile(",
            "write_result(",
            "history::Store",
        ],
        &[
            "driver.rs",
            "output.rs",
            "history.rs",
            "audit.rs",
            "count.rs",
        ],
    );
    assert!(
        found.is_empty(),
        "a result kept outside the driver (return it from Benchmark::run instead):\n{}",
        found.join("\n")
    );
    // audit and count keep only what the allowance above says.
    let code: BTreeMap<String, String> = cli_code().into_iter().collect();
    for (file, not) in [
        ("audit.rs", ["save_result(", "write_result(", ".keep("]),
        ("count.rs", ["write_textfile(", "write_result(", ".keep("]),
    ] {
        for n in not {
            assert!(!code[file].contains(n), "{file} names {n}");
        }
    }
}

/// Engines run under the driver's stop flag: only the driver names the engines' run trait
/// (`bench::Bench`), and its progress lines are drawn by the driver (where stderr is a
/// terminal). Every benchmark command is a `driver::Benchmark` run by `driver::drive`.
#[test]
fn benchmarks_run_through_the_driver() {
    let found = named_outside(
        &[
            "bench::Bench",
            "Bench::run",
            "console::progress",
            "console::redraw",
        ],
        &["driver.rs", "console.rs"],
    );
    assert!(
        found.is_empty(),
        "an engine run or a progress line drawn outside the driver:\n{}",
        found.join("\n")
    );
    let code: BTreeMap<String, String> = cli_code().into_iter().collect();
    for file in [
        "bench_disk.rs",
        "bench_net.rs",
        "bench_latency.rs",
        "bench_mmio.rs",
        "bench_video.rs",
        "survey.rs",
    ] {
        let text = &code[file];
        assert!(
            text.contains("impl Benchmark for") && text.contains("driver::drive("),
            "{file} does not run its benchmark through crate::driver"
        );
        // Whether progress is drawn is the driver's to tell (Run::live).
        for n in ["IsTerminal", "is_terminal()"] {
            assert!(
                !text.contains(n),
                "{file} names {n}: ask the driver (Run::live)"
            );
        }
    }
    // The scan sees what it should: the driver itself names all of it.
    let driver = &code["driver.rs"];
    for n in [
        "signal_hook",
        "bench::Bench",
        ".keep(",
        ".spawn()",
        "is_terminal()",
    ] {
        assert!(driver.contains(n), "driver.rs does not name {n}");
    }
}

#[test]
fn a_name_outside_its_home_is_found() {
    // cli's own files seen through the scan: console.rs erases the progress line.
    let found = named_outside(&["fn progress_done()"], &["driver.rs"]);
    assert_eq!(found, ["console.rs: fn progress_done()"]);
    assert!(named_outside(&["fn progress_done()"], &["console.rs"]).is_empty());
    // A whole word: main.rs names `bench::BenchArgs`, which is not `bench::Bench`.
    let code: BTreeMap<String, String> = cli_code().into_iter().collect();
    assert!(code["main.rs"].contains("bench::BenchArgs"));
    assert!(!named_outside(&["bench::Bench"], &["driver.rs"])
        .iter()
        .any(|f| f.starts_with("main.rs")));
}

fn architecture() -> String {
    std::fs::read_to_string(workspace().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The crates under `crates/`, by directory name (`cli` is the package `headroom`).
fn crate_dirs() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("Cargo.toml").is_file())
        .map(|d| (d.file_name().unwrap().to_string_lossy().to_string(), d))
        .collect();
    out.sort();
    out
}

/// The files of `tests/` that are the roots of a crate's test binaries (`path = "tests/X.rs"`
/// of its `[[test]]` targets).
fn test_roots(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .filter_map(|l| {
            let v = l
                .trim()
                .strip_prefix("path = \"tests/")?
                .strip_suffix(".rs\"")?;
            (!v.contains('/')).then(|| v.to_string())
        })
        .collect()
}

/// What is wrong with a crate's integration tests being few binaries: a crate with more than
/// one file in `tests/` builds them as modules of declared roots (`autotests = false` and a
/// `[[test]]` per root, `tests/main.rs` the first), and every other file there is a module of
/// one root (with `autotests = false`, a file left out would silently never run).
fn test_binary_faults(
    manifest: &str,
    test_files: &[String],
    roots: &[(String, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    if test_files.len() <= 1 && roots.is_empty() {
        return out;
    }
    if !manifest.lines().any(|l| l.trim() == "autotests = false") {
        out.push(
            "a test binary per file: set `autotests = false` and one [[test]] at tests/main.rs"
                .into(),
        );
    }
    if !roots.iter().any(|(name, _)| name == "main") {
        out.push("no [[test]] target with path = \"tests/main.rs\"".into());
    }
    let declared: BTreeSet<&str> = roots
        .iter()
        .flat_map(|(_, text)| text.lines())
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    for f in test_files {
        if !declared.contains(f.as_str()) && !roots.iter().any(|(name, _)| name == f) {
            out.push(format!(
                "tests/{f}.rs is not a module of a test binary's root: it would never run"
            ));
        }
    }
    out
}

#[test]
fn each_crates_integration_tests_link_as_few_binaries() {
    let mut faults = Vec::new();
    for (name, dir) in crate_dirs() {
        let tests = dir.join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        let mut files: Vec<String> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
            .collect();
        files.sort();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let roots: Vec<(String, String)> = test_roots(&manifest)
            .into_iter()
            .map(|r| {
                let text =
                    std::fs::read_to_string(tests.join(format!("{r}.rs"))).unwrap_or_default();
                (r, text)
            })
            .collect();
        for f in test_binary_faults(&manifest, &files, &roots) {
            faults.push(format!("crates/{name}: {f}"));
        }
    }
    assert!(faults.is_empty(), "{faults:#?}");
}

#[test]
fn a_test_file_outside_the_test_binaries_is_found() {
    let files: Vec<String> = ["a", "b", "c", "main", "x"].map(String::from).to_vec();
    let manifest = "[package]\nautotests = false\n[[test]]\nname = \"integration\"\n\
                    path = \"tests/main.rs\"\n[[test]]\nname = \"x\"\npath = \"tests/x.rs\"\n";
    assert_eq!(test_roots(manifest), ["main", "x"]);
    let roots = |main: &str| {
        vec![
            ("main".to_string(), main.to_string()),
            ("x".to_string(), "mod c;\n".to_string()),
        ]
    };
    assert!(test_binary_faults(manifest, &files, &roots("mod a;\nmod b;\n")).is_empty());
    assert_eq!(
        test_binary_faults(manifest, &files, &roots("mod a;\n")),
        ["tests/b.rs is not a module of a test binary's root: it would never run"]
    );
    let two: Vec<String> = files[..2].to_vec();
    assert_eq!(test_binary_faults("[package]\n", &two, &[]).len(), 4);
    assert!(test_binary_faults("[package]\n", &two[..1], &[]).is_empty());
}

/// The top-level modules of a crate's `src`: each `NAME.rs` but lib.rs and main.rs, and each
/// directory.
fn top_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().to_string();
            if p.is_dir() {
                Some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib" && stem != "main").then(|| stem.to_string())
            }
        })
        .collect()
}

/// The crates a row `| \`NAME\` | ... |` of the architecture's dependency table names in its
/// second cell.
fn drawn_arrows(doc: &str, krate: &str) -> Option<BTreeSet<String>> {
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| `{krate}` |")))?;
    let cell = row.split('|').nth(2)?;
    Some(
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// docs/ARCHITECTURE.md draws the arrows this test enforces: its table of what each crate may
/// depend on is `allowed` here, row by row, so the document and the check cannot drift.
#[test]
fn the_architecture_draws_the_arrows_this_test_enforces() {
    let doc = architecture();
    for (name, _) in crate_dirs() {
        let drawn = drawn_arrows(&doc, &name).unwrap_or_else(|| {
            panic!("docs/ARCHITECTURE.md has no row `| \\`{name}\\` | ...` for crates/{name}")
        });
        let enforced: BTreeSet<String> = allowed(&name).iter().map(|s| s.to_string()).collect();
        assert_eq!(
            drawn, enforced,
            "docs/ARCHITECTURE.md draws other arrows for {name} than this test enforces"
        );
    }
}

/// The code map of docs/ARCHITECTURE.md names every crate (`crates/NAME`) and every top-level
/// module of each (`NAME::module`), so a module added without saying where it belongs and
/// what it must never do fails here, naming what to add.
#[test]
fn the_architecture_names_every_crate_and_module() {
    let doc = architecture();
    let mut missing = Vec::new();
    for (name, dir) in crate_dirs() {
        if !doc.contains(&format!("`crates/{name}`")) {
            missing.push(format!("`crates/{name}`"));
        }
        for module in top_modules(&dir.join("src")) {
            let named = format!("`{name}::{module}");
            if !(doc.contains(&format!("{named}`")) || doc.contains(&format!("{named}::"))) {
                missing.push(format!("{named}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's code map does not name {missing:?}: say where each lives and \
         what it must never do"
    );
}

#[test]
fn a_missing_row_or_arrow_is_found() {
    let doc = "| `probe` | `model` |\n| `cli` | `model`, `report` |\n";
    assert_eq!(
        drawn_arrows(doc, "cli").unwrap(),
        BTreeSet::from(["model".to_string(), "report".to_string()])
    );
    assert_eq!(drawn_arrows(doc, "bench"), None);
}

/// Every text file the repository holds that the project writes (the captured fixtures are
/// data, and build output is not the repository's), under `dirs` and the files `files`.
fn repository_texts(dirs: &[&str], files: &[&str]) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let e = e.unwrap();
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy();
            // Fixture trees hold sysfs's symbolic links, loops among them: never followed.
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                if !matches!(
                    name.as_ref(),
                    "target" | "captured" | "__pycache__" | "corpus"
                ) {
                    walk(&p, out);
                }
            } else {
                out.push(p);
            }
        }
    }
    let root = workspace();
    let mut paths = Vec::new();
    for d in dirs {
        walk(&root.join(d), &mut paths);
    }
    paths.extend(files.iter().map(|f| root.join(f)));
    paths
        .into_iter()
        .filter_map(|p| {
            // Binary files (and files that are not there) are not prose.
            let text = std::fs::read_to_string(&p).ok()?;
            Some((p, text))
        })
        .collect()
}

/// The repository stands alone: no code, test, script or document reads or points at a
/// folder beside the clone (the design and the fixtures used to live in one, which a clone
/// does not have).
#[test]
fn nothing_points_outside_the_repository() {
    // Spelled in pieces, so this file does not find itself.
    let beside = ["..", "/shared/"].concat();
    let fixtures_beside = ["shared", "/fixtures"].concat();
    let texts = repository_texts(
        &[
            "crates", "scripts", "bench", "lab", "docs", "tests", ".ci", ".cargo", "fuzz",
            "contrib",
        ],
        &["README.md", "CHANGELOG.md", "Cargo.toml"],
    );
    assert!(texts.len() > 100, "read {} files", texts.len());
    let found: Vec<String> = texts
        .iter()
        .flat_map(|(p, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.contains(&beside) || l.contains(&fixtures_beside))
                .map(move |(i, l)| format!("{}:{}: {}", p.display(), i + 1, l.trim()))
        })
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Where a line names the history of the work rather than what the code does: an issue,
/// item or session followed by its number (also `issues N and M`), or the tag of a numbered
/// stretch of work (`s` and its number, a hyphen, a name). Each found as the words that
/// matched.
fn history_words(line: &str) -> Vec<String> {
    let lower = line.to_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    for word in [
        "issue ",
        "issues ",
        "issue #",
        "item ",
        "items ",
        "session ",
        "sessions ",
    ] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(word) {
            let start = from + i;
            let end = start + word.len();
            let at_word_start = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
            if at_word_start && bytes.get(end).is_some_and(u8::is_ascii_digit) {
                let digits = lower[end..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .count();
                found.push(line[start..end + digits].to_string());
            }
            from = end;
        }
    }
    // A session's tag: s, one or two digits, a hyphen, a lowercase name.
    for (i, w) in lower.match_indices('s') {
        let at_word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let digits = lower[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        if at_word_start
            && (1..=2).contains(&digits)
            && lower[i + 1 + digits..].starts_with('-')
            && lower[i + 2 + digits..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase())
        {
            let tag_end = lower[i + 2 + digits..]
                .find(|c: char| !c.is_ascii_lowercase())
                .map_or(lower.len(), |n| i + 2 + digits + n);
            found.push(format!("{w}{}", &line[i + 1..tag_end]));
        }
    }
    found
}

/// The words of `text` that could be a commit hash: 7 to 40 lowercase hex digits with at
/// least one letter and one digit, standing alone.
fn hex_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            (7..=40).contains(&w.len())
                && w.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && w.bytes().any(|b| b.is_ascii_digit())
                && w.bytes().any(|b| b.is_ascii_alphabetic())
        })
        .collect()
}

/// This repository's commits, by full hash, sorted; `None` where there is no git history
/// (a source archive).
fn own_commits() -> Option<Vec<String>> {
    let out = std::process::Command::new("git")
        .args(["rev-list", "--all"])
        .current_dir(workspace())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut hashes: Vec<String> = String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .map(str::to_string)
        .collect();
    hashes.sort();
    Some(hashes)
}

fn is_own_commit(commits: &[String], word: &str) -> bool {
    let i = commits.partition_point(|h| h.as_str() < word);
    commits.get(i).is_some_and(|h| h.starts_with(word))
}

/// Code, tests, scripts and documents say what behaviour they guard, not how the work went:
/// no issue, item or session number and none of this repository's commit hashes (a hash of
/// another project's commit, naming where a fixture came from, is provenance and stays).
/// The captured and hand-made fixture trees are data and are not read; their READMEs and
/// scripts are.
#[test]
fn no_history_of_the_work_in_the_repository() {
    let mut texts = repository_texts(
        &[
            "crates", "scripts", "bench", "lab", "docs", ".ci", ".cargo", "fuzz", "contrib",
        ],
        &["README.md", "CHANGELOG.md", "Cargo.toml"],
    );
    texts.extend(
        repository_texts(&["tests"], &[])
            .into_iter()
            .filter(|(p, _)| p.extension().is_some_and(|x| x == "md" || x == "py")),
    );
    assert!(texts.len() > 100, "read {} files", texts.len());
    let commits = own_commits();
    if commits.is_none() {
        testsupport::skip::skip("no git history here to tell this repository's commits");
    }
    let commits = commits.unwrap_or_default();
    let mut found = Vec::new();
    for (path, text) in &texts {
        for (i, line) in text.lines().enumerate() {
            let mut words = history_words(line);
            words.extend(
                hex_words(line)
                    .into_iter()
                    .filter(|w| is_own_commit(&commits, w))
                    .map(|w| format!("commit {w}")),
            );
            if !words.is_empty() {
                found.push(format!("{}:{}: {words:?}", path.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say what the code guards, not the history of the work ({} lines):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn history_words_are_found_where_there_are_some() {
    // Numbers put in at run time, so this file does not find its own examples.
    let (n, m) = (26, 3);
    assert_eq!(
        history_words(&format!(
            "moved here (Issue {n} step 4; item {m}), s{m}-size did it"
        )),
        [
            format!("Issue {n}"),
            format!("item {m}"),
            format!("s{m}-size")
        ]
    );
    assert_eq!(
        history_words(&format!("issues {n} and session {m}")),
        [format!("issues {n}"), format!("session {m}")]
    );
    assert!(
        history_words("one session of iperf3, the first item, an issue with 3 items, s3c")
            .is_empty()
    );
    // Hashes made at run time too.
    let (own, other) = (
        format!("{:x}", 0x1a2b3c4_u32),
        format!("{:x}", 0x1a2b3c5_u32),
    );
    assert_eq!(
        hex_words(&format!("at {own}, not 0x1af4 nor deadbeefs nor 12345678")),
        std::slice::from_ref(&own)
    );
    let commits = vec![format!("{own}d5e"), format!("{:x}", 0x9f8e7d6c5b_u64)];
    assert!(is_own_commit(&commits, &own));
    assert!(!is_own_commit(&commits, &other));
}
