//! Terminal text renderers (what the commands print on stdout without `--json`).

pub mod audit;
