//! `headroom audit`'s terminal text: the findings list.
//!
//! The inventory sections (the `lspci -tv`-like PCI tree, USB tree, block table, network
//! list, CPU/kernel context) are still drawn in cli/src/audit.rs: they read probe's
//! inventory types, which report cannot see until they move to `model::inventory`.

use model::{Finding, Severity};
use std::fmt::Write as _;

/// The findings, in the order given (most severe first, as `findings::audit::collect` puts
/// them): one line each, `SEVERITY: SUBJECT: MESSAGE` (the subject left out when the message
/// already names it), and the advice below it after `->`. `severity` writes the label (the
/// caller colours it or not).
pub fn findings(findings: &[Finding], severity: impl Fn(Severity) -> String) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        let _ = writeln!(out, "\nFindings: none");
        return out;
    }
    let _ = writeln!(out, "\nFindings:");
    for f in findings {
        let sev = severity(f.severity);
        if f.message.contains(&f.subject) {
            let _ = writeln!(out, "  {sev}: {}", f.message);
        } else {
            let _ = writeln!(out, "  {sev}: {}: {}", f.subject, f.message);
        }
        if let Some(a) = &f.advice {
            let _ = writeln!(out, "      -> {a}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_named_once_and_advice_below() {
        let list = [
            Finding::new(Severity::Warning, "sdc", "sdc: max_sectors_kb is 1280 KiB")
                .with_advice("raise it"),
            Finding::new(Severity::Info, "eth0", "speed unknown"),
        ];
        assert_eq!(
            findings(&list, |s| s.to_string()),
            "\nFindings:\n  warning: sdc: max_sectors_kb is 1280 KiB\n      -> raise it\n  \
             info: eth0: speed unknown\n"
        );
        assert_eq!(findings(&[], |s| s.to_string()), "\nFindings: none\n");
    }
}
