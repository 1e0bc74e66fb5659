//! Terminal text of the commands: the same facts as the documents, for a person at a
//! terminal. Each renderer takes model types (or plain rows) and a [`Style`]; cli prints.

pub mod path;

use model::Severity;

/// ANSI styling, or none. Ten lines do not deserve a crate.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn new(color: bool) -> Self {
        Style { color }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }

    pub fn err(&self, s: &str) -> String {
        self.paint("31", s)
    }

    pub fn severity(&self, sev: Severity) -> String {
        match sev {
            Severity::Info => "info".to_string(),
            Severity::Warning => self.warn("warning"),
            Severity::Error => self.err("error"),
        }
    }
}
