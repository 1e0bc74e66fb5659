//! KernelCI's KCIDB I/O JSON (`--format kcidb`): a document's checks and measured figures
//! ([`crate::kinds::cases`]) as KCIDB tests, for `kcidb-submit` or a KCIDB-compatible
//! dashboard. Schema v5.3, the newest the PyPI `kcidb-io` package validates (kcidb_io/schema/
//! v05_03.py; crates/cli/tests/kcidb.rs runs its validator on the output).
//!
//! KCIDB describes kernel testing: a checkout (of a source tree) is built, a build is tested.
//! headroom tests a running machine, not a build of its own, so it reports under one origin,
//! `headroom`, one checkout and one build per run that stand for "the kernel and machine as
//! found" (the kernel release in the build's `misc`), and one test per case:
//! - `path`: `headroom.KIND.TEST.FIGURE`, each piece kept to KCIDB's `[a-zA-Z0-9_-]`;
//! - `status`: `PASS`/`FAIL` for a check, `DONE` with `number` (`value`, `unit`) for a
//!   measured figure (KCIDB: "DONE should be used when it's the main output"), `SKIP`;
//! - `environment`: the board's device-tree `compatible` (KCIDB's own field for it), the
//!   host in `comment` and its identity (hostname, machine-id, model, serial) in `misc`;
//! - ids: `headroom:` then the host's identity, the run's time and kind and a hash of the
//!   document, so runs of many hosts, and two runs of one host, never share an id.

use super::cases::{Case, CasesOf, Outcome};
use crate::document::{Document, DocumentError};
use serde_json::{json, Map, Value};

/// KCIDB's `origin`: the CI system that submits (the schema: `^[a-z0-9_]+$`).
pub const ORIGIN: &str = "headroom";

/// The schema version written (`version.major`, `version.minor`).
pub const SCHEMA: (u64, u64) = (5, 3);

/// `s` without NUL characters: every KCIDB string is `^[^\0]*$`.
fn text(s: &str) -> String {
    s.replace('\0', "")
}

/// A piece of a test's `path`: an arrow (`0000:00:1c.0 -> 0000:01:00.0`) becomes `to`, every
/// other character outside `[a-zA-Z0-9_-]` (dots included: they separate the pieces) `_`,
/// runs of `_` one.
fn piece(part: &str) -> String {
    let part = part.replace("->", " to ");
    let mut out = String::new();
    for c in part.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let out = out.trim_matches('_');
    if out.is_empty() {
        "_".to_string()
    } else {
        out.to_string()
    }
}

/// A `compatible` entry KCIDB accepts (`^[^ \0]+(,[^ \0]+)*$`: no spaces, no empty part).
fn compatible_ok(c: &str) -> bool {
    !c.is_empty()
        && c.split(',')
            .all(|p| !p.is_empty() && !p.contains([' ', '\0']))
}

/// FNV-1a, 64 bits: a short, stable fingerprint of a document for its run id (not a
/// security measure: ids only need to differ between runs).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The run's id after `headroom:`: host identity, time, kind, fingerprint.
fn run_id(doc: &Document) -> String {
    let env = &doc.envelope;
    let host = env
        .host
        .as_ref()
        .and_then(|h| {
            h.machine_id
                .clone()
                .or_else(|| h.serial.clone())
                .or_else(|| h.hostname.clone())
        })
        .unwrap_or_else(|| "unknown-host".into());
    let created = env.created.clone().unwrap_or_else(|| "undated".into());
    format!(
        "{}:{}:{}:{:016x}",
        text(&host),
        text(&created),
        env.kind,
        fnv1a(doc.to_json_pretty().as_bytes())
    )
}

/// The run's time if it is RFC 3339 (KCIDB's `date-time`); a document from elsewhere may
/// carry anything in `created`.
fn start_time(doc: &Document) -> Option<String> {
    let t = doc.envelope.created.as_deref()?;
    time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
        .is_ok()
        .then(|| t.to_string())
}

/// One KCIDB I/O document of several result documents (each its own checkout, build and
/// tests, with its own host), `extra` cases (an audit's `--expect` checks) with the first;
/// pretty JSON and a newline.
pub fn documents(
    docs: &[Document],
    extra: &[Case],
    of_document: CasesOf,
) -> Result<String, DocumentError> {
    let mut all = json!({
        "version": {"major": SCHEMA.0, "minor": SCHEMA.1},
        "checkouts": [], "builds": [], "tests": [],
    });
    for (i, doc) in docs.iter().enumerate() {
        let origin = format!("input {}", i + 1);
        let mut cases = if i == 0 { extra.to_vec() } else { Vec::new() };
        cases.extend(of_document(doc, &origin)?);
        let one = render(doc, &cases);
        for key in ["checkouts", "builds", "tests"] {
            if let (Some(Value::Array(to)), Some(Value::Array(from))) =
                (all.get_mut(key), one.get(key))
            {
                to.extend(from.iter().cloned());
            }
        }
    }
    let out = serde_json::to_string_pretty(&all).unwrap_or_default();
    let mut out = crate::outside::json(&out).into_owned();
    out.push('\n');
    Ok(out)
}

/// `cases` of `doc` as one KCIDB I/O document.
pub fn render(doc: &Document, cases: &[Case]) -> Value {
    let env = &doc.envelope;
    let run = run_id(doc);
    let id = format!("{ORIGIN}:{run}");
    let tool = env
        .tool
        .as_ref()
        .map(|t| format!("{} {}", t.name, t.version))
        .unwrap_or_else(|| "headroom".into());
    let host = env.host.clone().unwrap_or_default();
    let mut environment = Map::new();
    let compatible: Vec<String> = host
        .compatible
        .iter()
        .map(|c| text(c))
        .filter(|c| compatible_ok(c))
        .collect();
    if !compatible.is_empty() {
        environment.insert("compatible".into(), json!(compatible));
    }
    if let Some(d) = host.describe() {
        environment.insert("comment".into(), json!(text(&d)));
    }
    let mut misc = Map::new();
    for (k, v) in [
        ("hostname", &host.hostname),
        ("kernel", &host.kernel),
        ("machine_id", &host.machine_id),
        ("model", &host.model),
        ("board", &host.board),
        ("serial", &host.serial),
    ] {
        if let Some(v) = v {
            misc.insert(k.into(), json!(text(v)));
        }
    }
    if !misc.is_empty() {
        environment.insert("misc".into(), Value::Object(misc));
    }
    let mut checkout = json!({
        "id": id,
        "origin": ORIGIN,
        "comment": text(&format!("the machine as found by {tool}")),
    });
    let mut build = json!({
        "id": id,
        "origin": ORIGIN,
        "checkout_id": id,
        "comment": text(&format!("the running kernel, tested by {tool}")),
        "misc": {"kernel": host.kernel.as_deref().map(text), "kind": env.kind.as_str()},
    });
    let started = start_time(doc);
    if let Some(t) = &started {
        checkout["start_time"] = json!(text(t));
        build["start_time"] = json!(text(t));
    }
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let tests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut path: Vec<String> = std::iter::once(ORIGIN.to_string())
                .chain(c.path.iter().map(|p| piece(p)))
                .collect();
            // Two cases of one path (two findings on one subject) stay apart.
            let n = seen.entry(path.join(".")).or_insert(0);
            *n += 1;
            if *n > 1 {
                if let Some(last) = path.last_mut() {
                    last.push_str(&format!("-{n}"));
                }
            }
            let status = match c.outcome {
                Outcome::Pass => "PASS",
                Outcome::Fail => "FAIL",
                Outcome::Skip => "SKIP",
                Outcome::Measured => "DONE",
            };
            let mut t = json!({
                "id": format!("{id}:{}", i + 1),
                "build_id": id,
                "origin": ORIGIN,
                "path": path.join("."),
                "status": status,
            });
            if !environment.is_empty() {
                t["environment"] = Value::Object(environment.clone());
            }
            if let Some((value, unit)) = c.measurement {
                if value.is_finite() {
                    t["number"] = json!({"value": value, "unit": unit});
                } else {
                    t["status"] = json!("SKIP");
                }
            }
            if let Some(comment) = &c.comment {
                t["comment"] = json!(text(comment));
            }
            if let Some(time) = &started {
                t["start_time"] = json!(text(time));
            }
            t
        })
        .collect();
    json!({
        "version": {"major": SCHEMA.0, "minor": SCHEMA.1},
        "checkouts": [checkout],
        "builds": [build],
        "tests": tests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_pieces_and_compatible_entries_keep_to_the_schema() {
        assert_eq!(piece("0000:01:00.0"), "0000_01_00_0");
        assert_eq!(piece("SEQ1M Q8T1"), "SEQ1M_Q8T1");
        assert_eq!(piece("..."), "_");
        assert_eq!(piece("PCIe 00:1c.0 -> 01:00.0"), "PCIe_00_1c_0_to_01_00_0");
        assert!(compatible_ok("raspberrypi,5-model-b"));
        assert!(!compatible_ok("a b"));
        assert!(!compatible_ok("a,,b"));
        assert!(!compatible_ok(""));
    }
}
