//! The integration tests of this crate, one module per file, linked as one binary.

mod builtin_ids;
mod host_identity;
mod inventory_fixtures;
mod kernel_variety;
mod lspci_reference;
mod pci_properties;
mod video;
