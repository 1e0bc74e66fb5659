//! What every kind's terminal text is made of: the [`Style`] (colour or none), the one text
//! table writer and the findings list. Each kind's own text lives in its module
//! (`crate::kinds::<kind>::text`); cli prints.

pub mod sections;

use crate::outside::Sgr;
use model::{Finding, Severity};
use std::fmt::Write as _;

/// Colour for the terminal, or none. Ten lines do not deserve a crate.
///
/// The text carries [`Sgr`] marks, not escape sequences: only the terminal writer
/// ([`crate::outside::for_terminal`]) makes them colours, after it has escaped every control
/// character of the text, so a string from outside inside a styled text stays text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn new(color: bool) -> Self {
        Style { color }
    }

    fn paint(&self, colour: Sgr, s: &str) -> String {
        if self.color {
            format!("{}{s}{}", colour.mark(), Sgr::Reset.mark())
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint(Sgr::Bold, s)
    }

    pub fn warn(&self, s: &str) -> String {
        self.paint(Sgr::Yellow, s)
    }

    pub fn err(&self, s: &str) -> String {
        self.paint(Sgr::Red, s)
    }

    pub fn severity(&self, sev: Severity) -> String {
        match sev {
            Severity::Info => "info".to_string(),
            Severity::Warning => self.warn("warning"),
            Severity::Error => self.err("error"),
        }
    }
}

/// The terminal's table writer: columns as wide as their widest cell, two spaces apart, the
/// first `left` columns aligned left and the others (numbers) right, the first `header`
/// rows in bold, no trailing blanks, every cell one escaped line ([`crate::outside::line`]).
/// (Markdown and HTML have theirs in [`crate::markdown::table`] and [`crate::html`].)
pub fn table(out: &mut String, rows: &[Vec<String>], header: usize, left: usize, style: &Style) {
    table_aligned(out, rows, header, |c| c < left, style);
}

/// [`table`] with the columns aligned left where `left_aligned(column)` says so (a last
/// column of sentences), the others right. The one text table writer of report: every kind's
/// terminal text is written by it.
pub fn table_aligned(
    out: &mut String,
    rows: &[Vec<String>],
    header: usize,
    left_aligned: impl Fn(usize) -> bool,
    style: &Style,
) {
    use std::fmt::Write as _;
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| crate::outside::line(c).into_owned())
                .collect()
        })
        .collect();
    let rows = &rows[..];
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if left_aligned(c) {
                let _ = write!(line, "{cell:<w$}  ");
            } else {
                let _ = write!(line, "{cell:>w$}  ");
            }
        }
        let line = line.trim_end();
        if i < header {
            let _ = writeln!(out, "{}", style.bold(line));
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// The findings, in the order given (most severe first, as `crate::kinds::audit::findings::collect` puts
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
