//! Findings: the judgement of what the numbers and settings mean, as pure functions.
//!
//! The producers (probe, bench) return facts; the sentences, their severity and their order
//! are made here, so every command says the same thing the same way.
//!
//! The audit's findings read `model::inventory` (which probe fills), bench latency's a
//! [`latency::LatencyRun`] of facts.

pub mod audit;
pub mod disk;
pub mod latency;
pub mod mmio;
pub mod system;
