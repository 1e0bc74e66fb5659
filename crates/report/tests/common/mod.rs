//! What report's integration tests share (each test file includes it with `mod common;` and
//! uses a part of it): the result documents of tests/fixtures/results and survey parts made
//! of them.
#![allow(dead_code)]

use model::survey::{PartKind, PlannedPart};
use report::kinds::survey::{PartResult, PartStatus};
use report::{Document, Summary};
use serde_json::Value;
use std::path::PathBuf;

/// tests/fixtures/results/NAME.
pub fn fixture(name: &str) -> PathBuf {
    testsupport::fixtures::own(&format!("results/{name}"))
}

/// The document tests/fixtures/results/NAME as JSON.
pub fn fixture_value(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The summary of the document tests/fixtures/results/NAME, named NAME.
pub fn summary(name: &str) -> Summary {
    let doc = Document::read(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    report::kinds::summarize(&doc, name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A survey part as planned: one unit of 5 s (at least 1 s) after 1 s, to run.
pub fn planned(id: &str, kind: PartKind) -> PlannedPart {
    PlannedPart {
        id: id.into(),
        kind,
        what: format!("{id} as planned"),
        command: vec!["bench".into()],
        fixed_s: 1.0,
        units: 1,
        unit_s: 5.0,
        min_unit_s: 1.0,
        writes_bytes: 0,
        priority: 1,
        run: true,
        reason: None,
    }
}

/// A survey part planned, given and run for 6 s that wrote `doc`.
pub fn ran(id: &str, kind: PartKind, doc: Value) -> PartResult {
    PartResult {
        id: id.into(),
        kind,
        status: PartStatus::Ran,
        reason: None,
        seconds: Some(6.0),
        planned_s: Some(6.0),
        given_s: Some(6.0),
        stopping_s: None,
        messages: Vec::new(),
        document: Some(doc),
    }
}
