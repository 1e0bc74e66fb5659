//! Pure types and math of headroom: link kinds, link states, ceilings and units.
//!
//! Nothing in this crate performs I/O. Every constant of the ceiling model cites its source.

pub mod ceiling;
pub mod pcie;
pub mod units;

pub use pcie::{LinkState, PcieGen};
