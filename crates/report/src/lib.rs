//! The result document and everything made from it: one module per result kind
//! ([`kinds`]), renderers (Markdown, self-contained HTML with SVG plots), compare, and the
//! history store.
//!
//! Every command's `--json` is one [`document::Document`]: a common envelope
//! (`schema_version`, `kind`, `tool`, `created`, `host`) with the command's own fields beside
//! it. Each kind's body is one type in its `kinds` module, written by cli and read back here
//! through the same type; fields added since version 1 are `#[serde(default)]`, so reports of
//! older documents still read. [`views`] holds what every kind may carry (findings, notes,
//! the path) and the check of which fields a type reads that a document lacks.

pub mod atomic;
pub mod compare;
pub mod document;
pub mod efficiency;
pub mod explain;
pub mod export;
pub mod history;
pub mod history_pg;
pub mod html;
pub mod input;
pub mod kinds;
pub mod labs;
pub mod markdown;
pub mod outside;
pub mod summary;
pub mod table;
pub mod terminal;
pub mod views;
pub mod words;

pub use atomic::write_atomic;
pub use document::{Document, DocumentError, Envelope};
pub use summary::Summary;
