//! The result document and everything made from it: typed views of each command's body,
//! renderers (Markdown, self-contained HTML with SVG plots), compare, and the history store.
//!
//! Every command's `--json` is one [`document::Document`]: a common envelope
//! (`schema_version`, `kind`, `tool`, `created`, `host`) with the command's own fields beside
//! it. This crate never reads a command's body through its producer's types: it reads only
//! the few fields it needs through the small serde views in [`views`], so a producer can grow
//! without breaking reports of older documents.

pub mod atomic;
pub mod compare;
pub mod document;
pub mod efficiency;
pub mod findings;
pub mod history;
pub mod html;
pub mod kinds;
pub mod markdown;
pub mod outside;
pub mod summary;
pub mod table;
pub mod terminal;
pub mod views;

pub use atomic::write_atomic;
pub use document::{Document, DocumentError, Envelope};
pub use summary::Summary;
