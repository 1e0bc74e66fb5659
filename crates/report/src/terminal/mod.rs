//! Terminal text of the commands: the same facts as the documents, for a person at a
//! terminal. Each renderer takes model types (or plain rows) and a [`Style`]; cli prints.

pub mod audit;
pub mod disk;
pub mod latency;
pub mod mmio;
pub mod path;

use crate::outside::Sgr;
use model::Severity;

/// Colour for the terminal, or none. Ten lines do not deserve a crate.
///
/// The text carries [`Sgr`] marks, not escape sequences: only the terminal writer
/// ([`crate::outside::for_terminal`]) makes them colours, after it has escaped every control
/// character of the text, so a string from outside inside a styled text stays text.
#[derive(Debug, Clone, Copy)]
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
/// rows in bold, no trailing blanks, every cell one escaped line ([`crate::outside::line`]). (Markdown and HTML have theirs
/// in [`crate::markdown::table`] and [`crate::html`].)
pub fn table(out: &mut String, rows: &[Vec<String>], header: usize, left: usize, style: &Style) {
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
            if c < left {
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
