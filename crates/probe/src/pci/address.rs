//! PCI function addresses: the type lives in `model::inventory::pci::address`.

pub use model::inventory::pci::address::{AddressParseError, PciAddress};
