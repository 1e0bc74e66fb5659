//! Pure types and math of headroom: link kinds, link states, ceilings and units.
//!
//! Nothing in this crate performs I/O. Every constant of the ceiling model cites its source.

pub mod blockdev;
pub mod ceiling;
pub mod disk;
pub mod expect;
pub mod finding;
pub mod inventory;
pub mod latency;
pub mod mmio;
pub mod net;
pub mod path;
pub mod pcie;
pub mod pmu;
pub mod privilege;
pub mod procfs;
pub mod root;
pub mod stress;
pub mod survey;
pub mod system;
pub mod units;
pub mod video;
pub mod watch;

pub use finding::{Finding, Severity};
pub use pcie::{Aspm, LinkComparison, LinkState, PcieGen, PortType};
