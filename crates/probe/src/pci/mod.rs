//! PCI: sysfs discovery, config-space decoding, `lspci -xxx` dumps, topology.

pub mod address;
pub mod config;
pub mod dump;
