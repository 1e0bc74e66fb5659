//! The kinds of documents made of other documents: `report --json` (several documents in
//! `documents`), `compare --json` and `history --json`. A `report` document's cases and
//! metrics are its documents', each told apart; `compare` and `history` hold other runs'
//! figures, which a lab or a collector takes from those runs themselves.

use super::Kind;
use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::{prefixed, Case};
use crate::export::openmetrics::Metrics;

/// `report --json` of several inputs.
pub struct ReportKind;

impl ReportKind {
    /// Each document of `doc`'s `documents`, with its number (from 1) and its name in errors.
    fn documents(
        doc: &Document,
        origin: &str,
    ) -> impl Iterator<Item = Result<(usize, Document, String), DocumentError>> {
        let inner = doc
            .body
            .get("documents")
            .and_then(|d| d.as_array())
            .cloned();
        let origin = origin.to_string();
        inner.into_iter().flatten().enumerate().map(move |(i, v)| {
            let name = format!("{origin} #{}", i + 1);
            Document::from_value(v, &name).map(|d| (i + 1, d, name))
        })
    }
}

impl Kind for ReportKind {
    fn kind(&self) -> DocumentKind {
        DocumentKind::Report
    }

    fn fields(&self) -> &'static [&'static str] {
        &["documents"]
    }

    fn made_of_other_documents(&self) -> bool {
        true
    }

    /// Its documents' cases, prefixed `doc1`, `doc2`, ...
    fn cases(&self, doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
        let mut out = Vec::new();
        for d in Self::documents(doc, origin) {
            let (i, d, name) = d?;
            out.extend(prefixed(&format!("doc{i}"), super::cases(&d, &name)?));
        }
        Ok(out)
    }

    /// Its documents' metrics, each with a `document` label.
    fn metrics(&self, m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
        for d in Self::documents(doc, origin) {
            let (i, d, name) = d?;
            m.with_label("document", &i.to_string(), |m| {
                super::add_metrics(m, &d, &name)
            })?;
        }
        Ok(())
    }
}

/// `compare --json`.
pub struct CompareKind;

impl Kind for CompareKind {
    fn kind(&self) -> DocumentKind {
        DocumentKind::Compare
    }

    fn fields(&self) -> &'static [&'static str] {
        &["rows"]
    }

    fn made_of_other_documents(&self) -> bool {
        true
    }
}

/// `history --json`.
pub struct HistoryKind;

impl Kind for HistoryKind {
    fn kind(&self) -> DocumentKind {
        DocumentKind::History
    }

    fn fields(&self) -> &'static [&'static str] {
        &["database"]
    }

    fn made_of_other_documents(&self) -> bool {
        true
    }
}
