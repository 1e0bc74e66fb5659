//! Configuration-space register offsets and fields, named as in Linux's
//! `include/uapi/linux/pci_regs.h` so that a reader can grep the kernel (or pciutils'
//! `lib/header.h`, which shares most names) for the same register. Offsets inside a
//! capability are relative to the capability's start. The few fields pci_regs.h does not
//! name say so and cite the PCIe Base Specification 6.0 section instead.
//!
//! Masks are the register's bits in place, as in pci_regs.h; [`field_get`] shifts a field
//! down (the kernel's `FIELD_GET`).

/// Conventional configuration space, bytes (PCI Local Bus 3.0 section 6.1).
pub const PCI_CFG_SPACE_SIZE: usize = 256;
/// PCI Express extended configuration space, bytes (PCIe Base Spec 6.0 section 7.2.2).
pub const PCI_CFG_SPACE_EXP_SIZE: usize = 4096;
/// The standard header every function has, bytes (PCIe Base Spec 6.0 section 7.5.1).
pub const PCI_STD_HEADER_SIZEOF: usize = 64;

// Standard header (PCIe Base Spec 6.0 section 7.5.1).
pub const PCI_VENDOR_ID: usize = 0x00;
pub const PCI_DEVICE_ID: usize = 0x02;
pub const PCI_COMMAND: usize = 0x04;
pub const PCI_STATUS: usize = 0x06;
/// Status bit 4: the function has a capability list.
pub const PCI_STATUS_CAP_LIST: u16 = 0x10;
pub const PCI_REVISION_ID: usize = 0x08;
/// Programming interface, the low byte of the 24-bit class code.
pub const PCI_CLASS_PROG: usize = 0x09;
/// Sub-class (low byte) and base class (high byte).
pub const PCI_CLASS_DEVICE: usize = 0x0a;
/// Base address registers: six in a type 0 header, two in a type 1 (bridge) header.
pub const PCI_BASE_ADDRESS_0: usize = 0x10;
pub const PCI_BASE_ADDRESS_SPACE_IO: u32 = 0x01;
pub const PCI_BASE_ADDRESS_MEM_TYPE_MASK: u32 = 0x06;
pub const PCI_BASE_ADDRESS_MEM_TYPE_64: u32 = 0x04;
pub const PCI_BASE_ADDRESS_MEM_PREFETCH: u32 = 0x08;
pub const PCI_HEADER_TYPE: usize = 0x0e;
pub const PCI_HEADER_TYPE_MASK: u8 = 0x7f;
pub const PCI_HEADER_TYPE_NORMAL: u8 = 0;
pub const PCI_HEADER_TYPE_BRIDGE: u8 = 1;
pub const PCI_HEADER_TYPE_CARDBUS: u8 = 2;
/// Multi-Function Device.
pub const PCI_HEADER_TYPE_MFD: u8 = 0x80;
// Type 0 header.
pub const PCI_SUBSYSTEM_VENDOR_ID: usize = 0x2c;
pub const PCI_SUBSYSTEM_ID: usize = 0x2e;
/// Capabilities Pointer of type 0 and type 1 headers.
pub const PCI_CAPABILITY_LIST: usize = 0x34;
// Type 1 (bridge) header.
pub const PCI_PRIMARY_BUS: usize = 0x18;
pub const PCI_SECONDARY_BUS: usize = 0x19;
pub const PCI_SUBORDINATE_BUS: usize = 0x1a;
/// Capabilities Pointer of a type 2 (CardBus bridge) header.
pub const PCI_CB_CAPABILITY_LIST: usize = 0x14;

// Capability list entries (PCI Local Bus 3.0 section 6.7).
pub const PCI_CAP_LIST_ID: usize = 0;
pub const PCI_CAP_LIST_NEXT: usize = 1;
/// Capability ID of the PCI Express capability.
pub const PCI_CAP_ID_EXP: u8 = 0x10;

// PCI Express capability (PCIe Base Spec 6.0 section 7.5.3).
pub const PCI_EXP_FLAGS: usize = 0x02;
pub const PCI_EXP_FLAGS_VERS: u16 = 0x000f;
pub const PCI_EXP_FLAGS_TYPE: u16 = 0x00f0;
pub const PCI_EXP_FLAGS_SLOT: u16 = 0x0100;
pub const PCI_EXP_FLAGS_IRQ: u16 = 0x3e00;
pub const PCI_EXP_FLAGS_FLIT: u16 = 0x8000;
pub const PCI_EXP_DEVCAP: usize = 0x04;
pub const PCI_EXP_DEVCAP_PAYLOAD: u32 = 0x0000_0007;
pub const PCI_EXP_DEVCAP_EXT_TAG: u32 = 0x0000_0020;
pub const PCI_EXP_DEVCTL: usize = 0x08;
pub const PCI_EXP_DEVCTL_RELAX_EN: u16 = 0x0010;
pub const PCI_EXP_DEVCTL_PAYLOAD: u16 = 0x00e0;
pub const PCI_EXP_DEVCTL_NOSNOOP_EN: u16 = 0x0800;
pub const PCI_EXP_DEVCTL_READRQ: u16 = 0x7000;
pub const PCI_EXP_LNKCAP: usize = 0x0c;
pub const PCI_EXP_LNKCAP_SLS: u32 = 0x0000_000f;
pub const PCI_EXP_LNKCAP_MLW: u32 = 0x0000_03f0;
pub const PCI_EXP_LNKCAP_ASPMS: u32 = 0x0000_0c00;
pub const PCI_EXP_LNKCAP_PN: u32 = 0xff00_0000;
pub const PCI_EXP_LNKCTL: usize = 0x10;
pub const PCI_EXP_LNKCTL_ASPMC: u16 = 0x0003;
pub const PCI_EXP_LNKCTL_RCB: u16 = 0x0008;
pub const PCI_EXP_LNKCTL_LD: u16 = 0x0010;
pub const PCI_EXP_LNKCTL_CCC: u16 = 0x0040;
/// Flit Mode Disable, LnkCtl bit 13 (PCIe Base Spec 6.0 section 7.5.3.7; not named in
/// pci_regs.h).
pub const PCI_EXP_LNKCTL_FLIT_MODE_DIS: u16 = 0x2000;
pub const PCI_EXP_LNKSTA: usize = 0x12;
pub const PCI_EXP_LNKSTA_CLS: u16 = 0x000f;
pub const PCI_EXP_LNKSTA_NLW: u16 = 0x03f0;
pub const PCI_EXP_LNKSTA_LT: u16 = 0x0800;
pub const PCI_EXP_LNKSTA_DLLLA: u16 = 0x2000;
pub const PCI_EXP_LNKCAP2: usize = 0x2c;
/// Supported Link Speeds Vector, bits 7:1 (bit 1 = 2.5 GT/s).
pub const PCI_EXP_LNKCAP2_SLS: u32 = 0x0000_00fe;
pub const PCI_EXP_LNKCTL2: usize = 0x30;
pub const PCI_EXP_LNKCTL2_TLS: u16 = 0x000f;
pub const PCI_EXP_LNKSTA2: usize = 0x32;
pub const PCI_EXP_LNKSTA2_FLIT: u16 = 0x0400;
/// Where the capability ends: version 1 without / with a link, version 2 without / with a
/// link (the last register read, LnkSta2, ends at 0x34).
pub const PCI_CAP_EXP_RC_ENDPOINT_SIZEOF_V1: usize = 0x0c;
pub const PCI_CAP_EXP_ENDPOINT_SIZEOF_V1: usize = 0x14;
pub const PCI_CAP_EXP_RC_ENDPOINT_SIZEOF_V2: usize = 0x2c;
pub const PCI_CAP_EXP_ENDPOINT_SIZEOF_V2: usize = 0x34;

// Extended capabilities (PCIe Base Spec 6.0 section 7.6.3): pci_regs.h's macros on the
// header dword.
/// `PCI_EXT_CAP_ID(header)`: Capability ID, bits 15:0.
pub const fn pci_ext_cap_id(header: u32) -> u16 {
    (header & 0xffff) as u16
}
/// `PCI_EXT_CAP_VER(header)`: Capability Version, bits 19:16.
pub const fn pci_ext_cap_ver(header: u32) -> u8 {
    ((header >> 16) & 0xf) as u8
}
/// `PCI_EXT_CAP_NEXT(header)`: Next Capability Offset, bits 31:20, its two low bits
/// reserved (cleared).
pub const fn pci_ext_cap_next(header: u32) -> usize {
    ((header >> 20) & 0xffc) as usize
}
pub const PCI_EXT_CAP_ID_ERR: u16 = 0x0001;
pub const PCI_EXT_CAP_ID_DEV3: u16 = 0x002f;

// Advanced Error Reporting (PCIe Base Spec 6.0 section 7.8.4).
pub const PCI_ERR_UNCOR_STATUS: usize = 0x04;
pub const PCI_ERR_UNCOR_MASK: usize = 0x08;
pub const PCI_ERR_UNCOR_SEVER: usize = 0x0c;
pub const PCI_ERR_COR_STATUS: usize = 0x10;
pub const PCI_ERR_COR_MASK: usize = 0x14;

// Device 3 (PCIe Base Spec 6.0 section 7.7.9).
pub const PCI_DEV3_CAP: usize = 0x04;
/// DevCap3 bits 0-3 (section 7.7.9.2; not named in pci_regs.h): DMWr Request Routing
/// Supported, 14-Bit Tag Completer Supported, 14-Bit Tag Requester Supported, L0p Supported.
pub const PCI_DEV3_CAP_DMWR_REQ: u32 = 0x0000_0001;
pub const PCI_DEV3_CAP_14BIT_TAG_COMP: u32 = 0x0000_0002;
pub const PCI_DEV3_CAP_14BIT_TAG_REQ: u32 = 0x0000_0004;
pub const PCI_DEV3_CAP_L0P_SUPP: u32 = 0x0000_0008;

/// The field `mask` selects in `value`, shifted down to bit 0 (the kernel's `FIELD_GET`).
pub const fn field_get(mask: u32, value: u32) -> u32 {
    (value & mask) >> mask.trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_get_shifts_the_field_down() {
        assert_eq!(field_get(u32::from(PCI_EXP_LNKSTA_NLW), 0x1043), 4);
        assert_eq!(field_get(u32::from(PCI_EXP_LNKSTA_CLS), 0x1043), 3);
        assert_eq!(field_get(PCI_EXP_LNKCAP_PN, 0x0100_0000), 1);
        assert_eq!(pci_ext_cap_next(0x1402_0001), 0x140);
        assert_eq!(pci_ext_cap_next(0x1432_0001), 0x140); // reserved bits 21:20
        assert_eq!(pci_ext_cap_ver(0x1402_0001), 2);
        assert_eq!(pci_ext_cap_id(0x1402_002f), PCI_EXT_CAP_ID_DEV3);
    }
}
