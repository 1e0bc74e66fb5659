//! Workload engines. Each measures and reports what it measured; none decides what a number
//! means (that is the caller's, with the context it has).
//!
//! - [`disk`]: storage throughput, IOPS and latency, fio's pluggable engines.
//! - [`latency`]: wake-up latency, cyclictest's method.
//! - [`net`]: TCP and UDP throughput, iperf3's protocol and flags.
//! - [`mmio`]: CPU loads and stores on a mapped PCI BAR or file, by width.
//! - [`mem`]: the same on a DRAM buffer larger than the last-level cache, the yardstick.
//! - [`stress`]: CPU, sync() and memory load, stress-ng's recipes without stress-ng.

pub mod disk;
pub mod latency;
pub mod mem;
pub mod mmio;
pub mod net;
pub mod stress;
