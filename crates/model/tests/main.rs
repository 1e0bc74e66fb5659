//! The integration tests of this crate, one module per file, linked as one binary
//! (`watch_week.rs`, which counts every allocation of its process, is a binary of its own).

mod ceiling_properties;
