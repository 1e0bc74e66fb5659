//! The integration tests of this crate, one module per file, linked as one binary.

mod common;
mod html_browser;
mod kinds;
mod net_documents;
mod snapshots;
mod survey;
