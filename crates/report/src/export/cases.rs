//! The checks and measured figures of any result document, as board labs take them: one case
//! per check (a finding, a PCIe link against what its ends can do, an `--expect` check) with a
//! verdict, and one per measured figure (throughput, efficiency, IOPS, latency) with its value
//! and unit. [`crate::lava`] writes them as LAVA test-case lines, [`crate::kcidb`] as KCIDB
//! tests. What every kind measures is read here from the [`Summary`] every report reads
//! ([`summary_cases`]); what a kind checks beyond it, its own module adds through its
//! [`crate::kinds::Kind`].

use crate::document::{Document, DocumentError};
use crate::summary::{is_downgraded, Summary};
use model::finding::Severity;
use model::units::MB;

/// Units that follow a number in findings' messages: left out of a finding's name with it.
const UNITS: &[&str] = &[
    "b", "kib", "mib", "gib", "kb", "mb", "gb", "mb/s", "gb/s", "gt/s", "mbit/s", "us", "ms", "ns",
    "s", "%", "bytes", "lanes",
];

/// The most words of a message a finding's name keeps.
const CHECK_WORDS: usize = 6;

/// What a finding checks, from its message: the statement before its first `: ` or `;`,
/// without what is in parentheses (device names, lists), numbers and their units, addresses
/// and arrows, in at most [`CHECK_WORDS`] lower-case words joined by `-`
/// (`max_sectors_kb is 1280 KiB while the device accepts 32767 KiB: ...` ->
/// `max_sectors_kb-is-while-the-device-accepts`): the same for the same check whatever it
/// measured this time.
pub fn finding_check(message: &str) -> String {
    let mut statement = String::new();
    let mut depth = 0usize;
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            ';' => break,
            ':' if chars.peek().is_none_or(|n| n.is_whitespace()) => break,
            c => statement.push(c),
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut after_number = false;
    for token in statement.split_whitespace() {
        let token = token.to_lowercase();
        let token = token.trim_matches(|c: char| !(c.is_alphanumeric() || c == '%'));
        if token.chars().any(|c| c.is_ascii_digit()) {
            after_number = true;
            continue;
        }
        let unit = after_number && UNITS.contains(&token);
        after_number = false;
        let word: String = token
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
            .collect();
        if unit || !word.chars().any(char::is_alphabetic) {
            continue;
        }
        words.push(word);
        if words.len() == CHECK_WORDS {
            break;
        }
    }
    if words.is_empty() {
        "finding".to_string()
    } else {
        words.join("-")
    }
}

/// A case's verdict, in the words both labs share (LAVA's `pass`/`fail`/`skip`, KCIDB's
/// `PASS`/`FAIL`/`SKIP`, and a measured figure: LAVA `pass` with a measurement, KCIDB `DONE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// Could not be checked (a figure the run could not measure).
    Skip,
    /// A measured figure, with no verdict of its own.
    Measured,
}

/// One case: its path from the most general to the most specific part (`disk`,
/// `seq1m-q8t1-read`, `throughput`), each part as the document names it (sanitized by each
/// format), its verdict, and for a figure its value and unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub path: Vec<String>,
    pub outcome: Outcome,
    /// The value in `unit`: `MB/s` (10^6 B/s), `%`, `IOPS`, `us`, `GT/s`, `lanes`.
    pub measurement: Option<(f64, &'static str)>,
    /// One sentence for a person: the finding's message, the check's expected and found.
    pub comment: Option<String>,
}

impl Case {
    pub(crate) fn figure(path: Vec<String>, value: f64, unit: &'static str) -> Case {
        Case {
            path,
            outcome: Outcome::Measured,
            measurement: Some((value, unit)),
            comment: None,
        }
    }

    /// A case that could not be checked or measured (LAVA `skip`, KCIDB `SKIP`), with why.
    pub(crate) fn skip(path: Vec<String>, why: String) -> Case {
        Case {
            path,
            outcome: Outcome::Skip,
            measurement: None,
            comment: Some(why),
        }
    }

    pub fn check(path: Vec<String>, pass: bool, comment: String) -> Case {
        Case {
            path,
            outcome: if pass { Outcome::Pass } else { Outcome::Fail },
            measurement: None,
            comment: Some(comment),
        }
    }
}

/// How a writer of several documents gets each one's cases (`origin` names it in errors):
/// [`crate::kinds::cases`], which asks the document's kind.
pub type CasesOf<'a> = &'a dyn Fn(&Document, &str) -> Result<Vec<Case>, DocumentError>;

/// A case's name: `first` (the document's kind), then `parts`.
pub fn path(first: &str, parts: &[&str]) -> Vec<String> {
    std::iter::once(first)
        .chain(parts.iter().copied())
        .map(String::from)
        .collect()
}

/// `cases` with `prefix` (a survey's part, `doc2`) first in each path.
pub fn prefixed(prefix: &str, cases: Vec<Case>) -> impl Iterator<Item = Case> + '_ {
    cases.into_iter().map(move |mut c| {
        c.path.insert(0, prefix.to_string());
        c
    })
}

/// What every kind has: its tests' figures, its timer threads' latencies, the links of its
/// path and its findings. `downgrade`: the findings (subject, message) about a link the
/// audit's text marks downgraded.
pub fn summary_cases(s: &Summary, downgrade: &[(String, String)]) -> Vec<Case> {
    let p = |parts: &[&str]| path(s.kind.as_str(), parts);
    let mut out = Vec::new();
    for t in &s.tests {
        let name = if t.direction.is_empty() || t.name.contains(&t.direction) {
            t.name.clone()
        } else {
            format!("{} {}", t.name, t.direction)
        };
        out.push(Case::figure(
            p(&[&name, "throughput"]),
            t.measured_mb_s,
            "MB/s",
        ));
        if let Some(e) = t.efficiency {
            out.push(Case::figure(p(&[&name, "efficiency"]), e * 100.0, "%"));
        }
        if let Some(iops) = t.iops {
            out.push(Case::figure(p(&[&name, "iops"]), iops, "IOPS"));
        }
        if let Some(l) = &t.latency {
            let l = l.clone().clamped();
            for (q, ns) in [
                ("latency-p50", l.p50_ns as f64),
                ("latency-p99", l.p99_ns as f64),
                ("latency-max", l.max_ns as f64),
            ] {
                out.push(Case::figure(p(&[&name, q]), ns / 1000.0, "us"));
            }
        }
    }
    // Linaro's rt-tests parser names cyclictest's figures `t0-max-latency ... us`; here the
    // thread's own name and the same statistics.
    for th in &s.threads {
        let name = format!("thread {}", th.name);
        out.push(Case::figure(
            p(&[&name, "latency-min"]),
            th.min_us as f64,
            "us",
        ));
        out.push(Case::figure(p(&[&name, "latency-avg"]), th.avg_us, "us"));
        if let Some(v) = th.p99_us {
            out.push(Case::figure(p(&[&name, "latency-p99"]), f64::from(v), "us"));
        }
        out.push(Case::figure(
            p(&[&name, "latency-max"]),
            th.max_us as f64,
            "us",
        ));
    }
    // The path's ceiling (a `path` document's, and a benchmark's beside its measured rates),
    // with the link that sets it.
    if let Some(c) = &s.ceiling {
        let mut case = Case::figure(p(&["ceiling"]), c.mb_s, "MB/s");
        case.comment = Some(format!("bottleneck: {}", c.bottleneck));
        out.push(case);
    }
    // Counted events (`count`, and the counters sampled beside a benchmark), in their unit.
    for c in &s.counters {
        if let Some(v) = c.value {
            let unit = match c.unit.as_str() {
                "" => "count",
                "msec" => "ms",
                "B" => "B",
                "MiB" => "MiB",
                "/s" => "/s",
                "%" => "%",
                _ => "scaled",
            };
            out.push(Case::figure(p(&["counter", &c.name]), v, unit));
        }
    }
    for l in &s.links {
        let down = is_downgraded(l);
        let mut comment = format!("{} at {}", l.name, l.state);
        if let Some(c) = &l.capable_state {
            comment.push_str(&format!(" (capable {c})"));
        }
        out.push(Case::check(
            p(&["link", &l.name, "not-downgraded"]),
            !down,
            comment,
        ));
        // Each link's own ceiling (towards the CPU; away from it where that differs), so a
        // lab sees which hop moved when the path's ceiling does.
        if let Some(bps) = l.ceiling_to_cpu_bps() {
            out.push(Case::figure(
                p(&["link", &l.name, "ceiling"]),
                bps / MB,
                "MB/s",
            ));
        }
        if let Some(bps) = l.ceiling_other_direction_bps {
            out.push(Case::figure(
                p(&["link", &l.name, "ceiling-from-cpu"]),
                bps / MB,
                "MB/s",
            ));
        }
    }
    for f in &s.findings {
        // A finding is a check that failed (an error or a warning: it costs performance) or a
        // fact worth knowing (info, a pass). An info finding on a link the audit's text marks
        // `(downgraded)` (a device the slot holds back: "the best the slot allows") fails
        // too: the text shows the loss as a problem, so a lab must not read "pass" there.
        // Named by what it is about and what it says, without its numbers, so the name stays
        // the same from run to run while the figures or the other findings change; the
        // verdict, not the name, carries the severity.
        let subject = if f.subject.is_empty() {
            "run"
        } else {
            f.subject.as_str()
        };
        let on_downgraded_link = downgrade
            .iter()
            .any(|(subject, message)| *subject == f.subject && *message == f.message);
        out.push(Case::check(
            p(&["finding", subject, &finding_check(&f.message)]),
            f.severity == Severity::Info && !on_downgraded_link,
            f.message.clone(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::finding_check;

    #[test]
    fn a_findings_name_keeps_what_it_checks_and_drops_what_it_measured() {
        for (message, check) in [
            (
                "max_sectors_kb is 1280 KiB while the device accepts 32767 KiB: larger I/O is \
                 split into 1280 KiB requests.",
                "max_sectors_kb-is-while-the-device-accepts",
            ),
            (
                "link 0000:00:1c.0 -> 0000:01:00.0 (Samsung Electronics Co Ltd NVMe SSD \
                 Controller PM9A1/PM9A3/980PRO) runs below what both ends support: speed 8 GT/s",
                "link-runs-below-what-both-ends",
            ),
            (
                "the kernel is not real-time (preemption: PREEMPT_DYNAMIC (mode not \
                 readable)): its worst-case latency is not bounded",
                "the-kernel-is-not-real-time",
            ),
            (
                "USB 3 device running at 480 Mb/s: it is connected through a USB 2 port",
                "usb-device-running-at",
            ),
            (
                "MaxPayload is 128 bytes on link a -> b",
                "maxpayload-is-on-link-a-b",
            ),
            ("12 %", "finding"),
        ] {
            assert_eq!(finding_check(message), check, "{message}");
        }
        // Other figures, the same name.
        assert_eq!(
            finding_check("max_sectors_kb is 512 KiB while the device accepts 1024 KiB: x"),
            finding_check("max_sectors_kb is 1280 KiB while the device accepts 32767 KiB: y")
        );
    }
}
