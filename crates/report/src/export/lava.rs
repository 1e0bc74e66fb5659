//! LAVA test-case lines (`--format lava`): one `lava-test-case` command per check and per
//! measured figure of a document ([`super::cases`]), what Linaro's test-definitions
//! emit for fio, cyclictest and iperf, so a LAVA job runs headroom's output as its test
//! shell does (`headroom audit --format lava | sh` inside LAVA; `contrib/lava/headroom.yaml`).
//!
//! The grammar (LAVA's lava-test-case helper; docs: "Writing tests", "Job results"):
//! `lava-test-case NAME --result pass|fail|skip|unknown [--measurement VALUE --units UNITS]`.
//! NAME has no whitespace (LAVA: "Whitespace is not allowed in test case name") and none of
//! the characters LAVA forbids in names, `$& "'`()<>/\|;` (they would also be shell syntax
//! here); headroom keeps it to `[A-Za-z0-9._-]`, what Linaro's definitions use (`fio-randread`,
//! `t0-max-latency`), and at most [`NAME_MAX`] bytes. VALUE is a decimal number; UNITS a word
//! without whitespace or quotes (`MB/s`, `us`, `%`).

use super::cases::{Case, CasesOf, Outcome};
use crate::document::{Document, DocumentError};

/// The longest case name written, in bytes: headroom's longest paths (a survey part, a test,
/// a figure) take about 60; a name made of a peer's long strings is cut here.
pub const NAME_MAX: usize = 100;

/// `part` as a piece of a case name: an arrow (`0000:00:1c.0 -> 0000:01:00.0`) becomes `to`,
/// every other character outside `[A-Za-z0-9._-]` becomes `_` (names come from sysfs and
/// from network peers), runs of `_` collapse to one.
fn piece(part: &str) -> String {
    let part = part.replace("->", " to ");
    let mut out = String::new();
    for c in part.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let out = out.trim_matches('_').to_string();
    if out.is_empty() {
        "_".to_string()
    } else {
        out
    }
}

/// A case's path as one LAVA name: the pieces joined by `.`, cut to [`NAME_MAX`] bytes.
pub fn name(path: &[String]) -> String {
    let mut n = path.iter().map(|p| piece(p)).collect::<Vec<_>>().join(".");
    n.truncate(NAME_MAX);
    n
}

/// The lines of `cases`, `prefix` (e.g. `headroom`) first in every name; a name seen before
/// gets `-2`, `-3`, ... (LAVA keeps every line, but a result is looked up by its name).
pub fn lines(prefix: &str, cases: &[Case]) -> String {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut out = String::new();
    for c in cases {
        let mut path = vec![prefix.to_string()];
        path.extend(c.path.iter().cloned());
        let mut n = name(&path);
        let count = seen.entry(n.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            let suffix = format!("-{count}");
            n.truncate(NAME_MAX - suffix.len());
            n.push_str(&suffix);
        }
        let result = match c.outcome {
            Outcome::Pass | Outcome::Measured => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
        };
        out.push_str(&format!("lava-test-case {n} --result {result}"));
        if let Some((value, unit)) = c.measurement {
            if value.is_finite() {
                out.push_str(&format!(" --measurement {} --units {unit}", number(value)));
            }
        }
        out.push('\n');
    }
    out
}

/// The lines of several documents (`report --format lava A.json B.json`, or an audit with
/// `extra` cases: its `--expect` checks first); with several, each document's names start with
/// `docN`, as in a `report` document.
pub fn documents(
    docs: &[Document],
    extra: &[Case],
    of_document: CasesOf,
) -> Result<String, DocumentError> {
    let mut cases = extra.to_vec();
    for (i, doc) in docs.iter().enumerate() {
        let origin = format!("input {}", i + 1);
        let mut own = of_document(doc, &origin)?;
        if docs.len() > 1 {
            for c in &mut own {
                c.path.insert(0, format!("doc{}", i + 1));
            }
        }
        cases.extend(own);
    }
    Ok(lines("headroom", &cases))
}

/// A measurement as a plain decimal (no exponent, at most 6 decimals, no trailing zeros):
/// LAVA stores it as a decimal number.
fn number(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(path: &[&str], outcome: Outcome, m: Option<(f64, &'static str)>) -> Case {
        Case {
            path: path.iter().map(|s| s.to_string()).collect(),
            outcome,
            measurement: m,
            comment: None,
        }
    }

    #[test]
    fn names_from_sysfs_and_peers_keep_to_the_grammar() {
        assert_eq!(
            name(&["disk".into(), "SEQ1M Q8T1 read".into()]),
            "disk.SEQ1M_Q8T1_read"
        );
        assert_eq!(
            name(&["x".into(), "$(reboot); `id` | \"a\" 'b' <c>/\\d".into()]),
            "x.reboot_id_a_b_c_d"
        );
        assert_eq!(
            name(&["pcie".into(), "0000:01:00.0".into()]),
            "pcie.0000_01_00.0"
        );
        assert_eq!(name(&["".into(), "é".into()]), "_._");
        assert_eq!(
            name(&["link".into(), "PCIe 0000:00:1c.0 -> 0000:01:00.0".into()]),
            "link.PCIe_0000_00_1c.0_to_0000_01_00.0"
        );
        assert_eq!(name(&["a".repeat(500)]).len(), NAME_MAX);
    }

    #[test]
    fn lines_say_result_measurement_and_units() {
        let out = lines(
            "headroom",
            &[
                case(
                    &["disk", "read", "throughput"],
                    Outcome::Measured,
                    Some((3512.25, "MB/s")),
                ),
                case(&["pcie", "0000:01:00.0", "link"], Outcome::Fail, None),
                case(&["pcie", "0000:01:00.0", "link"], Outcome::Pass, None),
                case(&["x"], Outcome::Measured, Some((1e-7, "us"))),
                case(&["y"], Outcome::Measured, Some((f64::NAN, "us"))),
            ],
        );
        assert_eq!(
            out,
            "lava-test-case headroom.disk.read.throughput --result pass --measurement 3512.25 --units MB/s\n\
             lava-test-case headroom.pcie.0000_01_00.0.link --result fail\n\
             lava-test-case headroom.pcie.0000_01_00.0.link-2 --result pass\n\
             lava-test-case headroom.x --result pass --measurement 0 --units us\n\
             lava-test-case headroom.y --result pass\n"
        );
    }
}
