//! Findings: what headroom concludes about why a path is not faster, one sentence each.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// What it is about: a PCI address, a device name, a setting.
    pub subject: String,
    /// One sentence: what is wrong and what it costs.
    pub message: String,
    /// What to change, when there is something to change.
    pub advice: Option<String>,
}

impl Finding {
    pub fn new(severity: Severity, subject: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            severity,
            subject: subject.into(),
            message: message.into(),
            advice: None,
        }
    }

    pub fn with_advice(mut self, advice: impl Into<String>) -> Self {
        self.advice = Some(advice.into());
        self
    }
}
