//! One module per result kind: the kind's one document type (written by cli, read back by
//! report, compare and history), its judgement, its summary and its text.

pub mod audit;
pub mod ceiling;
pub mod count;
pub mod disk;
pub mod latency;
pub mod mmio;
pub mod net;
pub mod path;
pub mod survey;

use serde::{Deserialize, Serialize};

/// What a document is: the envelope's `kind`. Every kind headroom writes, under the name its
/// documents carry; a document of another kind is refused when it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DocumentKind {
    #[serde(rename = "audit")]
    Audit,
    #[serde(rename = "path")]
    Path,
    #[serde(rename = "ceiling")]
    Ceiling,
    #[serde(rename = "disk")]
    Disk,
    #[serde(rename = "latency")]
    Latency,
    #[serde(rename = "net")]
    Net,
    #[serde(rename = "mmio")]
    Mmio,
    #[serde(rename = "count")]
    Count,
    /// `count --list`.
    #[serde(rename = "pmu_list")]
    PmuList,
    #[serde(rename = "survey")]
    Survey,
    /// `survey --dry-run`.
    #[serde(rename = "survey-plan")]
    SurveyPlan,
    /// `report --json`.
    #[serde(rename = "report")]
    Report,
    #[serde(rename = "compare")]
    Compare,
    /// `history --json`.
    #[serde(rename = "history")]
    History,
}

impl DocumentKind {
    pub const ALL: [DocumentKind; 14] = [
        DocumentKind::Audit,
        DocumentKind::Path,
        DocumentKind::Ceiling,
        DocumentKind::Disk,
        DocumentKind::Latency,
        DocumentKind::Net,
        DocumentKind::Mmio,
        DocumentKind::Count,
        DocumentKind::PmuList,
        DocumentKind::Survey,
        DocumentKind::SurveyPlan,
        DocumentKind::Report,
        DocumentKind::Compare,
        DocumentKind::History,
    ];

    /// The name documents carry in `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Audit => "audit",
            DocumentKind::Path => "path",
            DocumentKind::Ceiling => "ceiling",
            DocumentKind::Disk => "disk",
            DocumentKind::Latency => "latency",
            DocumentKind::Net => "net",
            DocumentKind::Mmio => "mmio",
            DocumentKind::Count => "count",
            DocumentKind::PmuList => "pmu_list",
            DocumentKind::Survey => "survey",
            DocumentKind::SurveyPlan => "survey-plan",
            DocumentKind::Report => "report",
            DocumentKind::Compare => "compare",
            DocumentKind::History => "history",
        }
    }

    /// The body fields the kind's producer always writes: a document without one of them is
    /// not one headroom wrote as it is (a disk document relabelled `audit` would otherwise
    /// read as an audit of nothing).
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            DocumentKind::Audit => &["pci"],
            DocumentKind::Path => &["path"],
            DocumentKind::Ceiling => &["link"],
            DocumentKind::Disk => &["parameters", "tests"],
            DocumentKind::Latency | DocumentKind::Net => &["measurement"],
            DocumentKind::Mmio => &["parameters", "results"],
            DocumentKind::Count => &["events"],
            DocumentKind::PmuList => &["pmus"],
            DocumentKind::Survey => &["plan", "parts"],
            DocumentKind::SurveyPlan => &["parts"],
            DocumentKind::Report => &["documents"],
            DocumentKind::Compare => &["rows"],
            DocumentKind::History => &["database"],
        }
    }
}

impl std::fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `kind` headroom does not write; the message lists the ones it does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its kind `{0}` is none headroom writes: {list}", list = DocumentKind::ALL.map(DocumentKind::as_str).join(", "))]
pub struct UnknownKind(pub String);

impl std::str::FromStr for DocumentKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DocumentKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_kind_is_written_and_read_under_the_name_documents_carry() {
        let names: Vec<String> = DocumentKind::ALL
            .iter()
            .map(|k| {
                serde_json::to_value(k)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "audit",
                "path",
                "ceiling",
                "disk",
                "latency",
                "net",
                "mmio",
                "count",
                "pmu_list",
                "survey",
                "survey-plan",
                "report",
                "compare",
                "history"
            ]
        );
        for (k, name) in DocumentKind::ALL.iter().zip(&names) {
            assert_eq!(k.as_str(), name);
            assert_eq!(name.parse::<DocumentKind>().unwrap(), *k);
            assert_eq!(
                serde_json::from_value::<DocumentKind>(name.as_str().into()).unwrap(),
                *k
            );
        }
        assert_eq!(
            "Disk".parse::<DocumentKind>().unwrap_err().to_string(),
            "its kind `Disk` is none headroom writes: audit, path, ceiling, disk, latency, net, \
             mmio, count, pmu_list, survey, survey-plan, report, compare, history"
        );
    }
}
