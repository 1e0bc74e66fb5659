//! Board labs' formats (`--format lava`, `--format kcidb`): which writer, and an audit's
//! `--expect` checks as cases beside its own. The writers are [`crate::lava`] and
//! [`crate::kcidb`]; the cases [`crate::kinds::cases`].

use crate::document::{Document, DocumentError};
use crate::kinds::audit::AuditDocument;
use crate::kinds::cases::Case;

/// A board lab's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lab {
    /// LAVA test-case lines.
    Lava,
    /// KCIDB I/O JSON.
    Kcidb,
}

/// `docs` (with `extra` cases first) in `lab`'s format.
pub fn render(lab: Lab, docs: &[Document], extra: &[Case]) -> Result<String, DocumentError> {
    match lab {
        Lab::Lava => crate::lava::documents(docs, extra),
        Lab::Kcidb => crate::kcidb::documents(docs, extra),
    }
}

/// An audit document in `lab`'s format, with the checks of `manifest` (`audit --expect`) first;
/// and whether one of those checks failed (the command's exit status).
pub fn audit(
    lab: Lab,
    doc: &Document,
    manifest: Option<&model::expect::Manifest>,
    audit: &AuditDocument,
) -> Result<(String, bool), DocumentError> {
    let checks = manifest
        .map(|m| crate::kinds::expect::check(m, audit))
        .unwrap_or_default();
    let cases = crate::kinds::expect::cases(&checks);
    let out = render(lab, std::slice::from_ref(doc), &cases)?;
    Ok((out, checks.iter().any(|c| !c.pass)))
}
