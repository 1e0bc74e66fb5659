//! The checks as `audit --expect` prints them: text, the `expect` member of `--json`, or
//! another layout ([`Layout`]).

#[allow(clippy::wildcard_imports)]
use super::*;

/// The checks as text, one line each, and a closing count.
pub fn text(checks: &[Check]) -> String {
    let mut s: String = checks.iter().map(|c| c.line() + "\n").collect();
    let failed = checks.iter().filter(|c| !c.pass).count();
    s.push_str(&format!(
        "{} checks: {} passed, {failed} failed\n",
        checks.len(),
        checks.len() - failed
    ));
    s
}

/// The checks as JSON (`audit --expect --json` puts them in the audit document as `expect`).
pub fn to_json(checks: &[Check], manifest: &str) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = checks
        .iter()
        .map(|c| {
            serde_json::json!({
                "result": if c.pass { "pass" } else { "fail" },
                "section": c.section,
                "entry": c.entry,
                "device": c.device,
                "description": c.description,
                "check": c.check,
                "expected": c.expected,
                "found": c.found,
            })
        })
        .collect();
    serde_json::json!({"manifest": manifest, "checks": rows})
}

/// How `audit --expect` shows its checks: the text (PASS/FAIL lines), the audit's document
/// with an `expect` member (`--json`), or OCPTV JSON lines (`--format ocptv`) with the facts
/// of the run only the command knows.
pub enum Layout<'a> {
    Text,
    Json,
    Ocptv {
        version: &'a str,
        command_line: &'a str,
    },
}

/// The checks of the manifest named `manifest` against the audit `doc`, in `layout`.
pub fn render(checks: &[Check], doc: &crate::Document, manifest: &str, layout: Layout) -> String {
    match layout {
        Layout::Text => text(checks),
        Layout::Json => {
            let mut v = doc.to_value();
            v["expect"] = to_json(checks, manifest);
            // A Value of plain members always serialises.
            crate::outside::json(&serde_json::to_string_pretty(&v).unwrap_or_default()).into_owned()
                + "\n"
        }
        Layout::Ocptv {
            version,
            command_line,
        } => {
            let host = doc.envelope.host.as_ref().and_then(|h| h.hostname.clone());
            let run = OcptvRun {
                version,
                command_line,
                manifest,
                hostname: host.as_deref().unwrap_or("unknown"),
                timestamp: doc
                    .envelope
                    .created
                    .as_deref()
                    .unwrap_or("1970-01-01T00:00:00Z"),
            };
            ocptv(checks, &run)
        }
    }
}
