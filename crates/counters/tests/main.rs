//! The integration tests of this crate, one module per file, linked as one binary.

mod reaper;
mod timerlat_fixture;
mod trace_live;
