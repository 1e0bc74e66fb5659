//! Decoding of PCI configuration space bytes: header, capability lists, the PCI Express
//! capability (link, payload sizes, ASPM) and Advanced Error Reporting.
//!
//! Input is whatever was captured: 64 bytes (an unprivileged read of sysfs `config`), 256
//! (`lspci -xxx`, conventional space) or 4096 (`lspci -xxxx` as root, extended space), or
//! fewer when a dump is cut short. Nothing here panics or gives up on the whole function:
//! each problem (a capability list that loops, a pointer out of range, a device that reads
//! all 0xff) becomes one sentence in [`ConfigSpace::warnings`] and the rest is still decoded.
//!
//! Register offsets and fields are named as in Linux's pci_regs.h (see [`super::regs`]).
//! Register layouts: PCI Express Base Specification 6.0 (sections named per field);
//! the way each field is shown follows pciutils `ls-caps.c` / `ls-ecaps.c` (lspci 3.14),
//! so that the values can be checked against lspci's own decode of the same bytes.

use super::regs::*;
use model::PcieGen;

use model::inventory::pci::config::*;
use model::{Aspm, PortType};

/// Upper bound on capability-list entries: (256 - 64) / 4 = 48 dword-aligned places for a
/// capability in conventional space, so a longer list must revisit one.
pub const MAX_CAPABILITIES: usize = 48;
/// Upper bound on extended capabilities: (4096 - 256) / 4 = 960 dword-aligned places.
pub const MAX_EXTENDED_CAPABILITIES: usize = 960;

/// Little-endian reads that return `None` past the captured bytes.
#[derive(Clone, Copy)]
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn has(&self, offset: usize, len: usize) -> bool {
        offset
            .checked_add(len)
            .is_some_and(|end| end <= self.0.len())
    }
    fn u8(&self, offset: usize) -> Option<u8> {
        self.0.get(offset).copied()
    }
    fn u16(&self, offset: usize) -> Option<u16> {
        let b = self.0.get(offset..offset.checked_add(2)?)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&self, offset: usize) -> Option<u32> {
        let b = self.0.get(offset..offset.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Decodes `bytes` (configuration space from offset 0). Never fails: problems are in
/// `warnings`, and whatever is decodable is decoded. Bytes past 4096 are ignored.
pub fn decode(bytes: &[u8]) -> ConfigSpace {
    let mut warnings = Vec::new();
    let bytes = if bytes.len() > PCI_CFG_SPACE_EXP_SIZE {
        warnings.push(format!(
            "{} bytes given but configuration space is at most {PCI_CFG_SPACE_EXP_SIZE}; the rest \
                 was ignored",
            bytes.len()
        ));
        &bytes[..PCI_CFG_SPACE_EXP_SIZE]
    } else {
        bytes
    };
    let mut out = ConfigSpace {
        length: bytes.len(),
        header: None,
        capabilities: Vec::new(),
        extended_capabilities: Vec::new(),
        express: None,
        aer: None,
        device3: None,
        warnings,
    };
    let b = Bytes(bytes);

    if bytes.is_empty() {
        out.warnings
            .push("no configuration space bytes were captured, so nothing was decoded".into());
        return out;
    }
    if bytes.iter().all(|&x| x == 0xff) {
        out.warnings.push(
            "configuration space reads as all 0xff: the device is gone (removed, powered \
                 off, or behind a link that is down); rescan the bus or check the slot"
                .into(),
        );
        return out;
    }
    if bytes.len() < PCI_STD_HEADER_SIZEOF {
        out.warnings.push(format!(
            "only {} bytes of configuration space were captured, fewer than the \
                 {PCI_STD_HEADER_SIZEOF}-byte header; fields past byte {} are unknown",
            bytes.len(),
            bytes.len()
        ));
    }

    out.header = decode_header(b);
    let Some(header) = &out.header else {
        return out;
    };
    if header.vendor_id == 0xffff {
        out.warnings.push(
            "vendor ID reads as 0xffff: no function answered at this address (removed or \
                 powered off); the other fields are likely meaningless"
                .into(),
        );
    }

    out.capabilities = walk_capabilities(b, header, &mut out.warnings);
    if let Some(cap) = out.capabilities.iter().find(|c| c.id == PCI_CAP_ID_EXP) {
        out.express = decode_express(b, cap.offset, &mut out.warnings);
    }

    if bytes.len() > PCI_CFG_SPACE_SIZE {
        if bytes.len() < PCI_CFG_SPACE_EXP_SIZE {
            out.warnings.push(format!(
                "only {} of the {PCI_CFG_SPACE_EXP_SIZE} bytes of extended configuration space \
                     were captured; extended capabilities past byte {} are unknown",
                bytes.len(),
                bytes.len()
            ));
        }
        out.extended_capabilities = walk_extended_capabilities(b, &mut out.warnings);
        for ecap in &out.extended_capabilities {
            match ecap.id {
                PCI_EXT_CAP_ID_ERR if out.aer.is_none() => {
                    out.aer = decode_aer(b, ecap, &mut out.warnings);
                }
                PCI_EXT_CAP_ID_DEV3 if out.device3.is_none() => {
                    out.device3 = decode_device3(b, ecap.offset, &mut out.warnings);
                }
                _ => {}
            }
        }
    }
    out
}

fn decode_header(b: Bytes) -> Option<Header> {
    let vendor_id = b.u16(PCI_VENDOR_ID)?;
    let device_id = b.u16(PCI_DEVICE_ID)?;
    let command = b.u16(PCI_COMMAND)?;
    let status = b.u16(PCI_STATUS)?;
    let revision = b.u8(PCI_REVISION_ID)?;
    let class = u32::from(b.u16(PCI_CLASS_DEVICE)?) << 8 | u32::from(b.u8(PCI_CLASS_PROG)?);
    let header_type_byte = b.u8(PCI_HEADER_TYPE)?;
    let header_type = header_type_byte & PCI_HEADER_TYPE_MASK;
    let subsystem = match (
        header_type,
        b.u16(PCI_SUBSYSTEM_VENDOR_ID),
        b.u16(PCI_SUBSYSTEM_ID),
    ) {
        (PCI_HEADER_TYPE_NORMAL, Some(vendor_id), Some(device_id)) => Some(Subsystem {
            vendor_id,
            device_id,
        }),
        _ => None,
    };
    let bridge_buses = match (
        header_type,
        b.u8(PCI_PRIMARY_BUS),
        b.u8(PCI_SECONDARY_BUS),
        b.u8(PCI_SUBORDINATE_BUS),
    ) {
        (PCI_HEADER_TYPE_BRIDGE, Some(primary), Some(secondary), Some(subordinate)) => {
            Some(BridgeBuses {
                primary,
                secondary,
                subordinate,
            })
        }
        _ => None,
    };
    Some(Header {
        vendor_id,
        device_id,
        command,
        status,
        revision,
        class,
        header_type,
        multi_function: header_type_byte & PCI_HEADER_TYPE_MFD != 0,
        subsystem,
        bridge_buses,
    })
}

/// Walks the capability list (PCI Local Bus 3.0 section 6.7), stopping with a warning at a
/// loop, a pointer into the header or past the captured bytes, or more than 48 entries.
fn walk_capabilities(b: Bytes, header: &Header, warnings: &mut Vec<String>) -> Vec<Capability> {
    let mut caps = Vec::new();
    // Status bit 4: Capabilities List (PCIe Base Spec 6.0 section 7.5.1.1.4).
    if header.status & PCI_STATUS_CAP_LIST == 0 {
        return caps;
    }
    // Capabilities Pointer: 0x34 for type 0 and 1 headers, 0x14 for CardBus bridges.
    let pointer_at = if header.header_type == PCI_HEADER_TYPE_CARDBUS {
        PCI_CB_CAPABILITY_LIST
    } else {
        PCI_CAPABILITY_LIST
    };
    let Some(first) = b.u8(pointer_at) else {
        warnings.push(format!(
            "the capabilities pointer (byte {pointer_at:#04x}) was not captured; \
             capabilities are unknown (capture at least {PCI_STD_HEADER_SIZEOF} bytes)"
        ));
        return caps;
    };
    let mut seen = [false; PCI_CFG_SPACE_SIZE];
    // The bottom two bits are reserved and must be ignored (PCI Local Bus 3.0 section 6.7).
    let mut at = usize::from(first & !3);
    let mut from: Option<usize> = None;
    while at != 0 {
        let origin = match from {
            Some(f) => format!("the capability at {f:#04x}"),
            None => format!("the capabilities pointer ({pointer_at:#04x})"),
        };
        if at < PCI_STD_HEADER_SIZEOF {
            warnings.push(format!(
                "{origin} points to {at:#04x}, inside the {PCI_STD_HEADER_SIZEOF}-byte header; the \
                 capability list is corrupt and was not followed further"
            ));
            break;
        }
        if !b.has(at, 2) {
            warnings.push(format!(
                "{origin} points to {at:#04x}, past the {} bytes captured; read the whole \
                 256-byte configuration space (as root, or `lspci -xxx`) to decode the \
                 capabilities",
                b.0.len()
            ));
            break;
        }
        if seen[at] {
            warnings.push(format!(
                "the capability list loops ({origin} points back to {at:#04x}); stopped there"
            ));
            break;
        }
        if caps.len() >= MAX_CAPABILITIES {
            warnings.push(format!(
                "the capability list has more than {MAX_CAPABILITIES} entries, more than fit \
                 in 256 bytes; stopped after {at:#04x}"
            ));
            break;
        }
        seen[at] = true;
        let id = b.0[at + PCI_CAP_LIST_ID];
        if id == 0xff {
            // lspci's "<chain broken>": a dword of 0xff is what an absent device returns.
            warnings.push(format!(
                "{origin} points to {at:#04x}, which reads as 0xff (the list is broken or \
                 the device stopped answering); stopped there"
            ));
            break;
        }
        caps.push(Capability {
            offset: at as u16,
            id,
            name: capability_name(id),
        });
        from = Some(at);
        at = usize::from(b.0[at + PCI_CAP_LIST_NEXT] & !3);
    }
    caps
}

/// Walks the extended capability list from 0x100 (PCIe Base Spec 6.0 section 7.6.3).
fn walk_extended_capabilities(b: Bytes, warnings: &mut Vec<String>) -> Vec<ExtendedCapability> {
    let mut caps = Vec::new();
    let mut seen = vec![false; PCI_CFG_SPACE_EXP_SIZE];
    let mut at = PCI_CFG_SPACE_SIZE;
    let mut from: Option<usize> = None;
    loop {
        let origin = match from {
            Some(f) => format!("the extended capability at {f:#05x}"),
            None => "the extended capability list".to_string(),
        };
        let Some(head) = b.u32(at) else {
            warnings.push(format!(
                "{origin} points to {at:#05x}, past the {} bytes captured; capture all 4096 \
                 bytes (`lspci -xxxx` as root) to decode it",
                b.0.len()
            ));
            break;
        };
        // An empty list reads as 0; a function without extended space (conventional PCI
        // behind a PCIe bridge) reads as all ones. Both end the list.
        if head == 0 {
            break;
        }
        if head == 0xffff_ffff {
            if from.is_some() {
                warnings.push(format!(
                    "{origin} points to {at:#05x}, which reads as 0xffffffff; stopped there"
                ));
            }
            break;
        }
        if seen[at] {
            warnings.push(format!(
                "the extended capability list loops ({origin} points back to {at:#05x}); \
                 stopped there"
            ));
            break;
        }
        if caps.len() >= MAX_EXTENDED_CAPABILITIES {
            warnings.push(format!(
                "the extended capability list has more than {MAX_EXTENDED_CAPABILITIES} \
                 entries; stopped at {at:#05x}"
            ));
            break;
        }
        seen[at] = true;
        let id = pci_ext_cap_id(head);
        caps.push(ExtendedCapability {
            offset: at as u16,
            id,
            version: pci_ext_cap_ver(head),
            name: extended_capability_name(id),
        });
        let next = pci_ext_cap_next(head);
        if next == 0 {
            break;
        }
        if next < PCI_CFG_SPACE_SIZE {
            warnings.push(format!(
                "the extended capability at {at:#05x} points to {next:#05x}, below 0x100 \
                 where extended capabilities start; the list is corrupt and was not followed \
                 further"
            ));
            break;
        }
        from = Some(at);
        at = next;
    }
    caps
}

/// Reads the PCI Express capability at `at` (PCIe Base Spec 6.0 section 7.5.3). Register
/// offsets are relative to the capability.
fn decode_express(b: Bytes, at: u16, warnings: &mut Vec<String>) -> Option<ExpressCap> {
    let at = usize::from(at);
    let Some(flags) = b.u16(at + PCI_EXP_FLAGS) else {
        warnings.push(format!(
            "the PCI Express capability at {at:#04x} was cut off after its first bytes; \
             link and payload settings are unknown"
        ));
        return None;
    };
    let flags32 = u32::from(flags);
    let version = field_get(PCI_EXP_FLAGS_VERS.into(), flags32) as u8;
    let port_type = PortType::from_code(field_get(PCI_EXP_FLAGS_TYPE.into(), flags32) as u8);
    if let PortType::Unknown(code) = port_type {
        warnings.push(format!(
            "the PCI Express capability at {at:#04x} has device/port type {code}, which the \
             PCIe Base Spec 6.0 reserves; its link is decoded as if it were an endpoint's"
        ));
    }

    let device = match (b.u32(at + PCI_EXP_DEVCAP), b.u16(at + PCI_EXP_DEVCTL)) {
        (Some(devcap), Some(devctl)) => {
            let mps_cap = field_get(PCI_EXP_DEVCAP_PAYLOAD, devcap) as u8;
            if mps_cap > 5 {
                warnings.push(format!(
                    "DevCap Max_Payload_Size Supported has the reserved code {mps_cap} \
                     (PCIe Base Spec 6.0 section 7.5.3.3 defines 0-5, 128-4096 bytes); \
                     shown as {} bytes like lspci does",
                    128u32 << mps_cap
                ));
            }
            let devctl32 = u32::from(devctl);
            let mps = field_get(PCI_EXP_DEVCTL_PAYLOAD.into(), devctl32) as u8;
            let mrrs = field_get(PCI_EXP_DEVCTL_READRQ.into(), devctl32) as u8;
            for (name, code) in [("Max_Payload_Size", mps), ("Max_Read_Request_Size", mrrs)] {
                if code > 5 {
                    warnings.push(format!(
                        "DevCtl {name} has the reserved code {code} (PCIe Base Spec 6.0 \
                         section 7.5.3.4 defines 0-5, 128-4096 bytes); shown as {} bytes \
                         like lspci does",
                        128u32 << code
                    ));
                }
            }
            Some(ExpressDevice {
                max_payload_supported: 128 << mps_cap,
                max_payload: 128 << mps,
                max_read_request: 128 << mrrs,
                extended_tag_supported: devcap & PCI_EXP_DEVCAP_EXT_TAG != 0,
                relaxed_ordering: devctl & PCI_EXP_DEVCTL_RELAX_EN != 0,
                no_snoop: devctl & PCI_EXP_DEVCTL_NOSNOOP_EN != 0,
            })
        }
        _ => None,
    };

    let link = if port_type.has_link() {
        match (
            b.u32(at + PCI_EXP_LNKCAP),
            b.u16(at + PCI_EXP_LNKCTL),
            b.u16(at + PCI_EXP_LNKSTA),
        ) {
            (Some(lnkcap), Some(lnkctl), Some(lnksta)) => {
                Some(decode_link(lnkcap, lnkctl, lnksta, port_type, at, warnings))
            }
            _ => None,
        }
    } else {
        None
    };

    // The "2" registers exist from capability version 2 on (PCIe Base Spec 2.0).
    let link2 = if version >= 2 && port_type.has_link() {
        match (
            b.u32(at + PCI_EXP_LNKCAP2),
            b.u16(at + PCI_EXP_LNKCTL2),
            b.u16(at + PCI_EXP_LNKSTA2),
        ) {
            (Some(lnkcap2), Some(lnkctl2), Some(lnksta2)) => {
                let vector = field_get(PCI_EXP_LNKCAP2_SLS, lnkcap2) as u8;
                let target_code = field_get(PCI_EXP_LNKCTL2_TLS.into(), lnkctl2.into()) as u8;
                Some(ExpressLink2 {
                    supported_speeds_vector: vector,
                    supported_speeds: PcieGen::ALL
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| vector & (1 << i) != 0)
                        .map(|(_, g)| g)
                        .collect(),
                    target_speed: if target_code == 0 {
                        Some(PcieGen::Gen1)
                    } else {
                        PcieGen::from_speed_code(target_code)
                    },
                    target_speed_code: target_code,
                    flit_mode_active: lnksta2 & PCI_EXP_LNKSTA2_FLIT != 0,
                })
            }
            _ => None,
        }
    } else {
        None
    };

    let needed = match (version >= 2, port_type.has_link()) {
        (true, true) => PCI_CAP_EXP_ENDPOINT_SIZEOF_V2,
        (true, false) => PCI_CAP_EXP_RC_ENDPOINT_SIZEOF_V2,
        (false, true) => PCI_CAP_EXP_ENDPOINT_SIZEOF_V1,
        (false, false) => PCI_CAP_EXP_RC_ENDPOINT_SIZEOF_V1,
    };
    if !b.has(at, needed) {
        warnings.push(format!(
            "the PCI Express capability at {at:#04x} runs past the {} bytes captured; the \
             registers beyond were not decoded",
            b.0.len()
        ));
    }

    Some(ExpressCap {
        offset: at as u16,
        version,
        port_type,
        slot_implemented: flags & PCI_EXP_FLAGS_SLOT != 0,
        interrupt_message_number: field_get(PCI_EXP_FLAGS_IRQ.into(), flags32) as u8,
        flit_mode_supported: flags & PCI_EXP_FLAGS_FLIT != 0,
        device,
        link,
        link2,
    })
}

fn decode_link(
    lnkcap: u32,
    lnkctl: u16,
    lnksta: u16,
    port_type: PortType,
    at: usize,
    warnings: &mut Vec<String>,
) -> ExpressLink {
    let max_speed_code = field_get(PCI_EXP_LNKCAP_SLS, lnkcap) as u8;
    let max_speed = PcieGen::from_speed_code(max_speed_code);
    if max_speed.is_none() {
        warnings.push(format!(
            "LnkCap of the PCI Express capability at {at:#04x} has Max Link Speed code \
             {max_speed_code}, which is not a defined speed (1-7); the link ceiling is unknown"
        ));
    }
    let lnksta32 = u32::from(lnksta);
    let speed_code = field_get(PCI_EXP_LNKSTA_CLS.into(), lnksta32) as u8;
    // Read Completion Boundary is defined for root ports, endpoints and PCIe-to-PCI
    // bridges; reserved for switch ports (PCIe Base Spec 6.0 section 7.5.3.7). lspci
    // prints it for the same types.
    let rcb_defined = matches!(
        port_type,
        PortType::RootPort
            | PortType::Endpoint
            | PortType::LegacyEndpoint
            | PortType::PcieToPciBridge
    );
    ExpressLink {
        port_number: field_get(PCI_EXP_LNKCAP_PN, lnkcap) as u8,
        max_speed,
        max_speed_code,
        max_width: field_get(PCI_EXP_LNKCAP_MLW, lnkcap) as u8,
        aspm_support: Aspm::from_bits(field_get(PCI_EXP_LNKCAP_ASPMS, lnkcap) as u8),
        aspm_control: Aspm::from_bits(field_get(PCI_EXP_LNKCTL_ASPMC.into(), lnkctl.into()) as u8),
        rcb: rcb_defined.then_some(if lnkctl & PCI_EXP_LNKCTL_RCB != 0 {
            128
        } else {
            64
        }),
        link_disable: lnkctl & PCI_EXP_LNKCTL_LD != 0,
        common_clock: lnkctl & PCI_EXP_LNKCTL_CCC != 0,
        flit_mode_disable: lnkctl & PCI_EXP_LNKCTL_FLIT_MODE_DIS != 0,
        speed: PcieGen::from_speed_code(speed_code),
        speed_code,
        width: field_get(PCI_EXP_LNKSTA_NLW.into(), lnksta32) as u8,
        training: lnksta & PCI_EXP_LNKSTA_LT != 0,
        data_link_active: lnksta & PCI_EXP_LNKSTA_DLLLA != 0,
    }
}

fn decode_aer(b: Bytes, ecap: &ExtendedCapability, warnings: &mut Vec<String>) -> Option<Aer> {
    let at = usize::from(ecap.offset);
    // Offsets within the AER capability: PCIe Base Spec 6.0 section 7.8.4, figure 7-193.
    let regs = (
        b.u32(at + PCI_ERR_UNCOR_STATUS),
        b.u32(at + PCI_ERR_UNCOR_MASK),
        b.u32(at + PCI_ERR_UNCOR_SEVER),
        b.u32(at + PCI_ERR_COR_STATUS),
        b.u32(at + PCI_ERR_COR_MASK),
    );
    let (Some(ue_sta), Some(ue_msk), Some(ue_sev), Some(ce_sta), Some(ce_msk)) = regs else {
        warnings.push(format!(
            "the AER capability at {at:#05x} runs past the {} bytes captured; error status \
             is unknown",
            b.0.len()
        ));
        return None;
    };
    Some(Aer {
        offset: ecap.offset,
        version: ecap.version,
        uncorrectable_status: AerRegister::from_raw(ue_sta, &UNCORRECTABLE_ERROR_BITS),
        uncorrectable_mask: AerRegister::from_raw(ue_msk, &UNCORRECTABLE_ERROR_BITS),
        uncorrectable_severity: AerRegister::from_raw(ue_sev, &UNCORRECTABLE_ERROR_BITS),
        correctable_status: AerRegister::from_raw(ce_sta, &CORRECTABLE_ERROR_BITS),
        correctable_mask: AerRegister::from_raw(ce_msk, &CORRECTABLE_ERROR_BITS),
    })
}

fn decode_device3(b: Bytes, offset: u16, warnings: &mut Vec<String>) -> Option<Device3> {
    let Some(devcap3) = b.u32(usize::from(offset) + PCI_DEV3_CAP) else {
        warnings.push(format!(
            "the Device 3 capability at {offset:#05x} runs past the {} bytes captured",
            b.0.len()
        ));
        return None;
    };
    Some(Device3 {
        offset,
        dmwr_request_routing: devcap3 & PCI_DEV3_CAP_DMWR_REQ != 0,
        tag14_completer: devcap3 & PCI_DEV3_CAP_14BIT_TAG_COMP != 0,
        tag14_requester: devcap3 & PCI_DEV3_CAP_14BIT_TAG_REQ != 0,
        l0p_supported: devcap3 & PCI_DEV3_CAP_L0P_SUPP != 0,
    })
}

/// Names of common capability IDs (PCI Code and ID Assignment Specification 1.11, table 2-1).
pub fn capability_name(id: u8) -> Option<&'static str> {
    Some(match id {
        0x01 => "Power Management",
        0x02 => "AGP",
        0x03 => "Vital Product Data",
        0x04 => "Slot Identification",
        0x05 => "MSI",
        0x06 => "CompactPCI Hot Swap",
        0x07 => "PCI-X",
        0x08 => "HyperTransport",
        0x09 => "Vendor Specific",
        0x0a => "Debug port",
        0x0b => "CompactPCI central resource control",
        0x0c => "PCI Standard Hot-Plug Controller",
        0x0d => "Bridge subsystem vendor/device ID",
        0x0e => "AGP 8x",
        0x0f => "Secure Device",
        0x10 => "PCI Express",
        0x11 => "MSI-X",
        0x12 => "SATA HBA",
        0x13 => "PCI Advanced Features",
        0x14 => "Enhanced Allocation",
        0x15 => "Flattening Portal Bridge",
        _ => return None,
    })
}

/// Names of common extended capability IDs (PCI Code and ID Assignment Specification 1.11,
/// table 3-1).
pub fn extended_capability_name(id: u16) -> Option<&'static str> {
    Some(match id {
        0x0001 => "Advanced Error Reporting",
        0x0002 | 0x0009 => "Virtual Channel",
        0x0003 => "Device Serial Number",
        0x0004 => "Power Budgeting",
        0x0005 => "Root Complex Link Declaration",
        0x0006 => "Root Complex Internal Link Control",
        0x0007 => "Root Complex Event Collector Endpoint Association",
        0x0008 => "Multi-Function Virtual Channel",
        0x000a => "Root Complex Register Block",
        0x000b => "Vendor Specific",
        0x000d => "Access Control Services",
        0x000e => "Alternative Routing-ID Interpretation",
        0x000f => "Address Translation Services",
        0x0010 => "Single Root I/O Virtualization",
        0x0012 => "Multicast",
        0x0013 => "Page Request Interface",
        0x0015 => "Resizable BAR",
        0x0016 => "Dynamic Power Allocation",
        0x0017 => "TPH Requester",
        0x0018 => "Latency Tolerance Reporting",
        0x0019 => "Secondary PCI Express",
        0x001b => "Process Address Space ID",
        0x001d => "Downstream Port Containment",
        0x001e => "L1 PM Substates",
        0x001f => "Precision Time Measurement",
        0x0023 => "Designated Vendor-Specific",
        0x0024 => "VF Resizable BAR",
        0x0025 => "Data Link Feature",
        0x0026 => "Physical Layer 16.0 GT/s",
        0x0027 => "Lane Margining at the Receiver",
        0x002a => "Physical Layer 32.0 GT/s",
        0x002f => "Device 3",
        0x0030 => "Integrity and Data Encryption",
        0x0031 => "Physical Layer 64.0 GT/s",
        0x0032 => "Flit Logging",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::LinkState;

    fn put16(b: &mut [u8], at: usize, v: u16) {
        b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn put32(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// An NVMe-like endpoint: PM at 0x40 -> PCIe at 0x70; AER at 0x100 when `len` allows.
    /// Link: capable 16 GT/s x4, running `sta_code` x`sta_width`.
    fn function(len: usize, port_type: u16, sta_code: u16, sta_width: u16) -> Vec<u8> {
        let mut b = vec![0u8; len];
        put16(&mut b, 0x00, 0x144d);
        put16(&mut b, 0x02, 0xa80a);
        put16(&mut b, 0x06, 0x0010); // Capabilities List
        b[0x08] = 0x01;
        b[0x09] = 0x02;
        b[0x0a] = 0x08;
        b[0x0b] = 0x01;
        put16(&mut b, 0x2c, 0x144d);
        put16(&mut b, 0x2e, 0xa801);
        b[0x34] = 0x40;
        b[0x40] = 0x01; // Power Management
        b[0x41] = 0x70;
        b[0x70] = 0x10; // PCI Express
        b[0x71] = 0x00;
        put16(&mut b, 0x72, 0x0002 | port_type << 4);
        put32(&mut b, 0x74, 0x0000_0002); // DevCap: MPS 512
        put16(&mut b, 0x78, 0x2000 | 1 << 5); // DevCtl: MRRS 512, MPS 256
        put32(&mut b, 0x7c, 0x0100_0000 | 2 << 10 | 4 << 4 | 4); // port 1, L1, x4, 16 GT/s
        put16(&mut b, 0x80, 0x0002 | 1 << 3); // L1 enabled, RCB 128
        put16(&mut b, 0x82, sta_width << 4 | sta_code);
        put32(&mut b, 0x9c, 0x0f << 1); // 2.5-16 GT/s
        put16(&mut b, 0xa0, 0x0004); // target 16 GT/s
        if len >= PCI_CFG_SPACE_EXP_SIZE {
            put32(&mut b, 0x100, 0x0001 | 2 << 16); // AER v2, last
            put32(&mut b, 0x104, 1 << 16 | 1 << 20 | 1 << 1); // UnxCmplt, UnsupReq, reserved
            put32(&mut b, 0x110, 1 | 1 << 13); // RxErr, AdvNonFatalErr
            put32(&mut b, 0x114, 1 << 13);
        }
        b
    }

    #[test]
    fn decodes_an_endpoint_link_and_aer() {
        let c = decode(&function(PCI_CFG_SPACE_EXP_SIZE, 0, 3, 4));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let h = c.header.as_ref().unwrap();
        assert_eq!(
            (h.vendor_id, h.device_id, h.class, h.revision),
            (0x144d, 0xa80a, 0x010802, 1)
        );
        assert_eq!(h.subsystem.map(|s| s.device_id), Some(0xa801));
        let offsets: Vec<u16> = c.capabilities.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, [0x40, 0x70]);
        let e = c.express.as_ref().unwrap();
        assert_eq!((e.version, e.port_type), (2, PortType::Endpoint));
        let d = e.device.as_ref().unwrap();
        assert_eq!(
            (d.max_payload_supported, d.max_payload, d.max_read_request),
            (512, 256, 512)
        );
        let l = e.link.as_ref().unwrap();
        assert_eq!(
            (l.max_speed, l.max_width, l.port_number),
            (Some(PcieGen::Gen4), 4, 1)
        );
        assert_eq!((l.speed, l.width), (Some(PcieGen::Gen3), 4));
        assert_eq!(
            (l.aspm_support, l.aspm_control, l.rcb),
            (Aspm::from_bits(2), Aspm::from_bits(2), Some(128))
        );
        assert_eq!(e.lspci_downgraded_speed(), Some(LinkMark::Downgraded));
        assert_eq!(e.lspci_downgraded_width(), None);
        assert_eq!(l.current(), Some(LinkState::new(PcieGen::Gen3, 4)));
        assert_eq!(l.capable(), Some(LinkState::new(PcieGen::Gen4, 4)));
        let l2 = e.link2.as_ref().unwrap();
        assert_eq!(l2.supported_speeds, PcieGen::ALL[..4]);
        assert_eq!(l2.target_speed, Some(PcieGen::Gen4));
        let aer = c.aer.as_ref().unwrap();
        assert_eq!(aer.uncorrectable_status.set, ["UnxCmplt", "UnsupReq"]);
        assert_eq!(aer.correctable_status.set, ["RxErr", "AdvNonFatalErr"]);
        assert!(aer.correctable_mask.is_set("AdvNonFatalErr"));
        assert_eq!(
            c.extended_capabilities[0].name,
            Some("Advanced Error Reporting")
        );
    }

    #[test]
    fn lspci_marks_follow_link_compare() {
        // Root port (4), downstream port (6), PCI-to-PCIe bridge (8): below is not marked.
        for t in [4, 6, 8] {
            let c = decode(&function(256, t, 1, 1));
            let e = c.express.unwrap();
            assert_eq!(e.lspci_downgraded_speed(), None, "type {t}");
            assert_eq!(e.lspci_downgraded_width(), None, "type {t}");
        }
        // Upstream port (5), PCIe-to-PCI bridge (7), legacy endpoint (1): marked.
        for t in [1, 5, 7] {
            let e = decode(&function(256, t, 1, 1)).express.unwrap();
            assert_eq!(
                e.lspci_downgraded_width(),
                Some(LinkMark::Downgraded),
                "type {t}"
            );
        }
        // Above LnkCap is "overdriven" for every type, root ports included.
        let e = decode(&function(256, 4, 5, 8)).express.unwrap();
        assert_eq!(e.lspci_downgraded_speed(), Some(LinkMark::Overdriven));
        assert_eq!(e.lspci_downgraded_width(), Some(LinkMark::Overdriven));
    }

    #[test]
    fn link_down_reads_as_unknown_speed_width_zero() {
        // As the Xeon DMI2 root port in pciutils' cap-atomicops test: "Speed unknown, Width x0".
        let e = decode(&function(256, 4, 0, 0)).express.unwrap();
        let l = e.link.as_ref().unwrap();
        assert_eq!((l.speed, l.speed_code, l.width), (None, 0, 0));
        assert_eq!(l.current(), None);
        assert_eq!(e.lspci_downgraded_speed(), None);
        // The same on an endpoint is marked: the status is below its LnkCap.
        let e = decode(&function(256, 0, 0, 0)).express.unwrap();
        assert_eq!(e.lspci_downgraded_speed(), Some(LinkMark::Downgraded));
    }

    #[test]
    fn switch_ports_have_no_rcb_and_rc_endpoints_no_link() {
        let e = decode(&function(256, 5, 4, 4)).express.unwrap();
        assert_eq!(e.link.unwrap().rcb, None);
        let e = decode(&function(256, 9, 4, 4)).express.unwrap();
        assert_eq!(e.port_type, PortType::RootComplexIntegratedEndpoint);
        assert!(e.link.is_none() && e.link2.is_none());
        assert!(e.device.is_some());
    }

    #[test]
    fn flit_bits() {
        let mut b = function(256, 0, 4, 4);
        put16(&mut b, 0x72, 0x8002);
        put16(&mut b, 0x80, 1 << 13);
        put16(&mut b, 0xa2, 1 << 10);
        let e = decode(&b).express.unwrap();
        assert!(e.flit_mode_supported);
        assert!(e.link.unwrap().flit_mode_disable);
        assert!(e.link2.unwrap().flit_mode_active);
    }

    fn warnings(b: &[u8]) -> Vec<String> {
        decode(b).warnings
    }

    #[test]
    fn empty_and_short_input() {
        assert_eq!(
            warnings(&[]),
            ["no configuration space bytes were captured, so nothing was decoded"]
        );
        let c = decode(&function(256, 0, 4, 4)[..10]);
        assert!(c.header.is_none());
        assert_eq!(
            c.warnings,
            [
                "only 10 bytes of configuration space were captured, fewer than the 64-byte \
              header; fields past byte 10 are unknown"
            ]
        );
        let c = decode(&function(256, 0, 4, 4)[..0x30]);
        assert_eq!(
            c.header.unwrap().subsystem.map(|s| s.vendor_id),
            Some(0x144d)
        );
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert_eq!(
            c.warnings[1],
            "the capabilities pointer (byte 0x34) was not captured; capabilities are unknown \
             (capture at least 64 bytes)"
        );
    }

    #[test]
    fn unprivileged_64_bytes() {
        let c = decode(&function(256, 0, 4, 4)[..64]);
        assert!(c.header.is_some());
        assert!(c.express.is_none());
        assert_eq!(
            c.warnings,
            [
                "the capabilities pointer (0x34) points to 0x40, past the 64 bytes captured; read \
              the whole 256-byte configuration space (as root, or `lspci -xxx`) to decode the \
              capabilities"
            ]
        );
    }

    #[test]
    fn all_ones_is_a_device_that_is_gone() {
        for len in [64, 256, 4096] {
            let c = decode(&vec![0xff; len]);
            assert!(c.header.is_none());
            assert_eq!(c.warnings.len(), 1);
            assert!(c.warnings[0]
                .starts_with("configuration space reads as all 0xff: the device is gone"));
        }
    }

    #[test]
    fn capability_loop_stops_with_one_warning() {
        let mut b = function(256, 0, 4, 4);
        b[0x71] = 0x40; // PCIe -> PM -> PCIe ...
        let c = decode(&b);
        assert_eq!(c.capabilities.len(), 2);
        assert!(c.express.is_some());
        assert_eq!(
            c.warnings,
            [
                "the capability list loops (the capability at 0x70 points back to 0x40); stopped \
              there"
            ]
        );
        // A capability pointing at itself.
        let mut b = function(256, 0, 4, 4);
        b[0x41] = 0x42; // low two bits are ignored: 0x40 again
        let c = decode(&b);
        assert_eq!(c.capabilities.len(), 1);
        assert_eq!(
            c.warnings,
            [
                "the capability list loops (the capability at 0x40 points back to 0x40); stopped \
              there"
            ]
        );
    }

    #[test]
    fn capability_pointers_out_of_range() {
        let mut b = function(256, 0, 4, 4);
        b[0x41] = 0x10;
        assert_eq!(
            warnings(&b),
            [
                "the capability at 0x40 points to 0x10, inside the 64-byte header; the capability \
              list is corrupt and was not followed further"
            ]
        );
        let mut b = function(256, 0, 4, 4);
        b[0x41] = 0xc0;
        b[0xc0] = 0xff;
        assert_eq!(
            warnings(&b),
            ["the capability at 0x40 points to 0xc0, which reads as 0xff (the list is broken or \
              the device stopped answering); stopped there"]
        );
        let mut b = function(256, 0, 4, 4);
        b[0x41] = 0xfc;
        assert_eq!(
            warnings(&b[..0xf0]),
            [
                "the capability at 0x40 points to 0xfc, past the 240 bytes captured; read the \
              whole 256-byte configuration space (as root, or `lspci -xxx`) to decode the \
              capabilities"
            ]
        );
    }

    #[test]
    fn express_capability_cut_short() {
        let c = decode(&function(256, 0, 4, 4)[..0x80]);
        let e = c.express.unwrap();
        assert!(e.device.is_some() && e.link.is_none() && e.link2.is_none());
        assert_eq!(
            c.warnings,
            [
                "the PCI Express capability at 0x70 runs past the 128 bytes captured; the \
              registers beyond were not decoded"
            ]
        );
    }

    #[test]
    fn reserved_payload_codes_are_named() {
        let mut b = function(256, 0, 4, 4);
        put32(&mut b, 0x74, 7);
        let c = decode(&b);
        assert_eq!(
            c.express.unwrap().device.unwrap().max_payload_supported,
            16384
        );
        assert_eq!(
            c.warnings,
            [
                "DevCap Max_Payload_Size Supported has the reserved code 7 (PCIe Base Spec 6.0 \
              section 7.5.3.3 defines 0-5, 128-4096 bytes); shown as 16384 bytes like lspci \
              does"
            ]
        );
    }

    #[test]
    fn extended_list_problems() {
        // Loop: 0x100 -> 0x140 -> 0x100.
        let mut b = function(PCI_CFG_SPACE_EXP_SIZE, 0, 4, 4);
        put32(&mut b, 0x100, 0x0001 | 2 << 16 | 0x140 << 20);
        put32(&mut b, 0x140, 0x0003 | 1 << 16 | 0x100 << 20);
        let c = decode(&b);
        assert_eq!(c.extended_capabilities.len(), 2);
        assert!(c.aer.is_some());
        assert_eq!(
            c.warnings,
            [
                "the extended capability list loops (the extended capability at 0x140 points \
              back to 0x100); stopped there"
            ]
        );
        // Pointer back into conventional space.
        put32(&mut b, 0x140, 0x0003 | 1 << 16 | 0x080 << 20);
        assert_eq!(
            warnings(&b),
            [
                "the extended capability at 0x140 points to 0x080, below 0x100 where extended \
              capabilities start; the list is corrupt and was not followed further"
            ]
        );
        // Truncated extended space: AER header present, its registers cut off.
        let c = decode(&function(PCI_CFG_SPACE_EXP_SIZE, 0, 4, 4)[..0x108]);
        assert!(c.aer.is_none());
        assert_eq!(
            c.warnings,
            [
                "only 264 of the 4096 bytes of extended configuration space were captured; \
                 extended capabilities past byte 264 are unknown",
                "the AER capability at 0x100 runs past the 264 bytes captured; error status is \
                 unknown"
            ]
        );
        // No extended space at all (conventional PCI device): silent.
        let mut b = function(PCI_CFG_SPACE_EXP_SIZE, 0, 4, 4);
        b[0x100..].fill(0xff);
        let c = decode(&b);
        assert!(c.warnings.is_empty() && c.extended_capabilities.is_empty());
    }

    #[test]
    fn longest_possible_list_is_bounded() {
        // Every dword from 0x40 to 0xfc is a capability pointing to the next: 48 entries,
        // the last pointing to 0x40 again.
        let mut b = function(256, 0, 4, 4);
        for at in (0x40..0x100).step_by(4) {
            b[at] = 0x09;
            b[at + 1] = if at == 0xfc { 0x40 } else { (at + 4) as u8 };
        }
        let c = decode(&b);
        assert_eq!(c.capabilities.len(), MAX_CAPABILITIES);
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].starts_with("the capability list loops"));
    }
}
