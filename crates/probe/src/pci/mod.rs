//! PCI: sysfs discovery, config-space decoding, `lspci -xxx` dumps, topology.

pub mod address;
pub mod ids;
pub mod sysfs;
