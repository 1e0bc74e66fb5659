//! One document as `report` shows it, whichever command prints it (`report`, `history show`).

use report::{Document, Summary};

/// One document as every report shows it: its Markdown section(s), and for an HTML page the
/// intro it brings (a survey's summary and conclusions) and the summaries of its sections.
pub struct Rendered {
    pub markdown: String,
    pub html_intro: String,
    pub summaries: Vec<Summary>,
}

/// `doc` (named `origin`) as `report` shows it: a survey brings its own intro and its parts'
/// sections, any other document one section.
pub fn render(doc: &Document, origin: &str) -> anyhow::Result<Rendered> {
    if doc.kind() == report::document::DocumentKind::Survey {
        let body = report::kinds::survey::SurveyBody::of(doc, origin)?;
        let (parts, _) = body.part_docs(origin);
        Ok(Rendered {
            markdown: crate::survey::markdown(doc, &body, origin),
            html_intro: report::kinds::survey::html_intro(doc, &body, origin),
            summaries: parts.into_iter().map(|p| p.summary).collect(),
        })
    } else {
        let s = report::kinds::summarize(doc, origin)?;
        Ok(Rendered {
            markdown: report::markdown::render(std::slice::from_ref(&s)),
            html_intro: String::new(),
            summaries: vec![s],
        })
    }
}
