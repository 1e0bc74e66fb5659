//! Findings: one sentence each on why a path is not as fast as it could be.

use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Severity {
    /// Worth knowing; nothing to fix.
    // Lower case: how `bench latency` wrote its findings before it used this type.
    #[serde(alias = "info")]
    Info,
    /// Costs performance and can usually be fixed.
    #[serde(alias = "warning")]
    Warning,
    /// Broken or badly misconfigured.
    #[serde(alias = "error")]
    Error,
}

/// One observation about a device or setting, with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// What it is about, as the user names it: `sdb`, `USB 4-1`, `eth0`. `bench latency`'s
    /// findings had none before it used this type: empty.
    #[serde(default)]
    pub subject: String,
    /// One sentence: what is wrong and why it matters.
    pub message: String,
    /// One sentence: what to do, when there is something to do.
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

    /// The message and the advice as one line (`...: their handlers delay wake-ups there;
    /// move them ...`), for a terminal that prints findings as sentences.
    pub fn sentence(&self) -> String {
        match &self.advice {
            Some(a) => format!("{}; {a}", self.message),
            None => self.message.clone(),
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_latency_findings_read_back() {
        // As `bench latency` wrote them before it used this type (its own finding shape).
        let f: Finding =
            serde_json::from_str(r#"{"severity": "warning", "message": "SMT is on"}"#).unwrap();
        assert_eq!(f, Finding::new(Severity::Warning, "", "SMT is on"));
        let f = Finding::new(Severity::Info, "sdb", "m").with_advice("a");
        let back: Finding = serde_json::from_value(serde_json::to_value(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }
}
