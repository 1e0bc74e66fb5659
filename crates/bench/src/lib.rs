//! Workload engines. Each measures and reports what it measured; none decides what a number
//! means (that is the caller's, with the context it has).
//!
//! - [`latency`]: wake-up latency, cyclictest's method.
//! - [`stress`]: CPU, sync() and memory load, stress-ng's recipes without stress-ng.

pub mod latency;
pub mod stress;
