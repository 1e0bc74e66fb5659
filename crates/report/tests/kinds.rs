#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
//! Each kind's one document type reads the documents headroom wrote before the types moved
//! into `report::kinds` (tests/fixtures/results/, written by the binary of the main branch
//! of session 7) and writes them back field for field: the JSON did not change.

use report::Document;
use serde::de::DeserializeOwned;
use serde::Serialize;

mod common;
use common::fixture;

/// `name`'s body read through `T` and written again is the body as the file has it.
fn same_through<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let doc = Document::read(&fixture(name)).unwrap();
    let typed: T = doc.view(name).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        back,
        serde_json::Value::Object(doc.body.clone()),
        "{name} changed on its way through its kind's type"
    );
    // And in the same order: the text of the body is the same.
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(&doc.body).unwrap(),
        "{name}"
    );
    typed
}

#[test]
fn ceiling_documents_of_every_link_read_back_unchanged() {
    use report::kinds::ceiling::CeilingDocument;
    match same_through::<CeilingDocument>("ceiling-pcie.json") {
        CeilingDocument::Pcie(p) => assert_eq!(p.ceilings.len(), 8),
        other => panic!("{other:?}"),
    }
    match same_through::<CeilingDocument>("ceiling-usb.json") {
        CeilingDocument::Usb(u) => {
            assert_eq!(u.speeds.len(), 2);
            assert_eq!(u.speeds[1].transfers.len(), 4);
            assert_eq!(u.guide_table_1_2.len(), 6);
        }
        other => panic!("{other:?}"),
    }
    for name in ["ceiling-sata.json", "ceiling-eth.json", "ceiling-mmc.json"] {
        same_through::<CeilingDocument>(name);
    }
}
