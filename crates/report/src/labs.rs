//! Board labs' formats (`--format lava`, `--format kcidb`): which writer, and an audit's
//! `--expect` checks as cases beside its own. The writers are [`crate::export::lava`] and
//! [`crate::export::kcidb`]; each kind's cases come through [`crate::kinds::cases`].

use crate::document::{Document, DocumentError};
use crate::export::cases::Case;
use crate::kinds::audit::AuditDocument;

/// A board lab's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lab {
    /// LAVA test-case lines.
    Lava,
    /// KCIDB I/O JSON.
    Kcidb,
}

impl Lab {
    /// What the format's entries are called, for a sentence.
    fn entries(self) -> &'static str {
        match self {
            Lab::Lava => "LAVA test cases",
            Lab::Kcidb => "KCIDB tests",
        }
    }
}

/// `docs` (with `extra` cases first) in `lab`'s format.
pub fn render(lab: Lab, docs: &[Document], extra: &[Case]) -> Result<String, DocumentError> {
    match lab {
        Lab::Lava => crate::export::lava::documents(docs, extra, &crate::kinds::cases),
        Lab::Kcidb => crate::export::kcidb::documents(docs, extra, &crate::kinds::cases),
    }
}

/// One sentence for each of `docs` that gives no case at all (a `compare` or `history`
/// document: what they hold is other documents' figures), so an empty output is not taken
/// for a run that checked nothing wrong. `names` are the inputs as the user gave them.
pub fn nothing_to_report(
    lab: Lab,
    docs: &[Document],
    names: &[String],
) -> Result<Vec<String>, DocumentError> {
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("input {}", i + 1));
        if crate::kinds::cases(doc, &name)?.is_empty() {
            let hint = if crate::kinds::of(doc.kind()).made_of_other_documents() {
                "; give the result documents it was made from instead"
            } else {
                ""
            };
            out.push(format!(
                "{name}: this {} document has no check or measured figure: nothing to report \
                 as {}{hint}",
                doc.kind(),
                lab.entries()
            ));
        }
    }
    Ok(out)
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
