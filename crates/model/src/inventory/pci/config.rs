//! The decoded configuration space of a PCI function: header, capability lists, the PCI
//! Express capability (link, payload sizes, ASPM) and Advanced Error Reporting. Pure data;
//! `probe::pci::config::decode` fills it from the captured bytes.
//!
//! Register layouts: PCI Express Base Specification 6.0 (sections named per field); the way
//! each field is shown follows pciutils `ls-caps.c` / `ls-ecaps.c` (lspci 3.14), so that the
//! values can be checked against lspci's own decode of the same bytes.

use crate::pcie::{Aspm, LinkState, PcieGen, PortType};
use serde::Serialize;

/// The decoded configuration space of one function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSpace {
    /// How many bytes were decoded.
    pub length: usize,
    /// `None` when fewer than 16 bytes (IDs, class, header type) were present.
    pub header: Option<Header>,
    /// The capability list in conventional space, in walk order.
    pub capabilities: Vec<Capability>,
    /// The extended capability list (from 0x100), in walk order; empty without extended space.
    pub extended_capabilities: Vec<ExtendedCapability>,
    pub express: Option<ExpressCap>,
    pub aer: Option<Aer>,
    pub device3: Option<Device3>,
    /// One sentence per problem found; the fields above hold what could still be decoded.
    pub warnings: Vec<String>,
}

/// The standard header (PCIe Base Spec 6.0 section 7.5.1.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Header {
    pub vendor_id: u16,
    pub device_id: u16,
    pub command: u16,
    pub status: u16,
    pub revision: u8,
    /// Base class, subclass and programming interface: 0x010802 = NVMe controller.
    pub class: u32,
    /// Header Type bits 6:0 (0 = normal function, 1 = PCI-PCI bridge, 2 = CardBus bridge).
    pub header_type: u8,
    /// Header Type bit 7.
    pub multi_function: bool,
    /// Subsystem vendor and device (type 0 header only, offsets 0x2c/0x2e).
    pub subsystem: Option<Subsystem>,
    /// Bus numbers behind a type 1 (bridge) header, offsets 0x18..0x1a.
    pub bridge_buses: Option<BridgeBuses>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Subsystem {
    pub vendor_id: u16,
    pub device_id: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BridgeBuses {
    pub primary: u8,
    pub secondary: u8,
    pub subordinate: u8,
}

/// One entry of the conventional capability list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capability {
    pub offset: u16,
    pub id: u8,
    /// Name for the common IDs, `None` for others.
    pub name: Option<&'static str>,
}

/// One entry of the extended capability list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtendedCapability {
    pub offset: u16,
    pub id: u16,
    pub version: u8,
    pub name: Option<&'static str>,
}

/// What lspci appends to a LnkSta speed or width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LinkMark {
    /// "(downgraded)": below what this function's own LnkCap says it can do.
    Downgraded,
    /// "(overdriven)": above it (a broken LnkCap, or a status read during retraining).
    Overdriven,
}

impl LinkMark {
    pub fn lspci_label(self) -> &'static str {
        match self {
            LinkMark::Downgraded => "downgraded",
            LinkMark::Overdriven => "overdriven",
        }
    }
}

/// The PCI Express Capability structure (PCIe Base Spec 6.0 section 7.5.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpressCap {
    pub offset: u16,
    /// Capability Version (bits 3:0 of the PCI Express Capabilities register).
    pub version: u8,
    pub port_type: PortType,
    pub slot_implemented: bool,
    /// Interrupt Message Number (bits 13:9), lspci's "IntMsgNum".
    pub interrupt_message_number: u8,
    /// Flit Mode Supported (bit 15, PCIe 6.0), lspci 3.14's "FLIT Mode Supported".
    pub flit_mode_supported: bool,
    /// Device Capabilities/Control; `None` when those bytes were not captured.
    pub device: Option<ExpressDevice>,
    /// Link Capabilities/Control/Status; `None` for Root Complex integrated endpoints and
    /// event collectors (no link) and when the bytes were not captured.
    pub link: Option<ExpressLink>,
    /// Link Capabilities 2 / Control 2 / Status 2; `None` before capability version 2 or
    /// when not captured.
    pub link2: Option<ExpressLink2>,
}

/// Device Capabilities and Device Control (PCIe Base Spec 6.0 sections 7.5.3.3, 7.5.3.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpressDevice {
    /// Max_Payload_Size Supported, bytes (128 << code; codes 6 and 7 are reserved and
    /// shown as lspci shows them, 8192 and 16384, with a warning).
    pub max_payload_supported: u32,
    /// Max_Payload_Size in use, bytes.
    pub max_payload: u32,
    /// Max_Read_Request_Size in use, bytes.
    pub max_read_request: u32,
    pub extended_tag_supported: bool,
    pub relaxed_ordering: bool,
    pub no_snoop: bool,
}

/// Link Capabilities, Control and Status (PCIe Base Spec 6.0 sections 7.5.3.6-7.5.3.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpressLink {
    /// Port Number (LnkCap bits 31:24).
    pub port_number: u8,
    /// Max Link Speed; `None` for codes 0 and 8..15 (reserved).
    pub max_speed: Option<PcieGen>,
    pub max_speed_code: u8,
    /// Maximum Link Width (lanes).
    pub max_width: u8,
    pub aspm_support: Aspm,
    pub aspm_control: Aspm,
    /// Read Completion Boundary, bytes; `None` for switch ports and reverse bridges, where
    /// the bit is reserved (lspci prints it only for root ports, endpoints and
    /// PCIe-to-PCI bridges).
    pub rcb: Option<u16>,
    pub link_disable: bool,
    pub common_clock: bool,
    /// Flit Mode Disable (LnkCtl bit 13, PCIe 6.0), lspci 3.14's "FltModeDis".
    pub flit_mode_disable: bool,
    /// Current Link Speed; `None` when the code is not a defined speed (e.g. 0 on a link
    /// that is down: lspci's "Speed unknown").
    pub speed: Option<PcieGen>,
    pub speed_code: u8,
    /// Negotiated Link Width (0 when the link is down).
    pub width: u8,
    pub training: bool,
    pub data_link_active: bool,
}

/// Link Capabilities 2, Control 2, Status 2 (PCIe Base Spec 6.0 sections 7.5.3.18-7.5.3.20).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpressLink2 {
    /// Supported Link Speeds Vector (LnkCap2 bits 7:1, shifted down: bit 0 = 2.5 GT/s).
    pub supported_speeds_vector: u8,
    /// The speeds in that vector.
    pub supported_speeds: Vec<PcieGen>,
    /// Target Link Speed (LnkCtl2 bits 3:0). Code 0 reads as 2.5 GT/s, as in lspci: it is
    /// what a function that hardwires the field to 0 (before PCIe 3.0) supports.
    pub target_speed: Option<PcieGen>,
    pub target_speed_code: u8,
    /// Flit Mode Status (LnkSta2 bit 10, PCIe 6.0), lspci 3.14's "FltMode".
    pub flit_mode_active: bool,
}

/// Device 3 extended capability (PCIe Base Spec 6.0 section 7.7.9), DevCap3 bits 3:0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device3 {
    pub offset: u16,
    pub dmwr_request_routing: bool,
    pub tag14_completer: bool,
    pub tag14_requester: bool,
    /// L0p Supported (a Flit-mode low-power link state).
    pub l0p_supported: bool,
}

/// Advanced Error Reporting registers (PCIe Base Spec 6.0 section 7.8.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Aer {
    pub offset: u16,
    pub version: u8,
    pub uncorrectable_status: AerRegister,
    pub uncorrectable_mask: AerRegister,
    pub uncorrectable_severity: AerRegister,
    pub correctable_status: AerRegister,
    pub correctable_mask: AerRegister,
}

/// One AER register: raw value and the names (lspci's) of the bits that are set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AerRegister {
    pub raw: u32,
    pub set: Vec<&'static str>,
}

/// Uncorrectable error bits with lspci 3.14's names (PCIe Base Spec 6.0 section 7.8.4.2;
/// bits 0-3 and 6-11 are reserved).
pub const UNCORRECTABLE_ERROR_BITS: [(u8, &str); 22] = [
    (4, "DLP"),
    (5, "SDES"),
    (12, "TLP"),
    (13, "FCP"),
    (14, "CmpltTO"),
    (15, "CmpltAbrt"),
    (16, "UnxCmplt"),
    (17, "RxOF"),
    (18, "MalfTLP"),
    (19, "ECRC"),
    (20, "UnsupReq"),
    (21, "ACSViol"),
    (22, "UncorrIntErr"),
    (23, "BlockedTLP"),
    (24, "AtomicOpBlocked"),
    (25, "TLPBlockedErr"),
    (26, "PoisonTLPBlocked"),
    (27, "DMWrReqBlocked"),
    (28, "IDECheck"),
    (29, "MisIDETLP"),
    (30, "PCRC_CHECK"),
    (31, "TLPXlatBlocked"),
];

/// Correctable error bits with lspci's names (PCIe Base Spec 6.0 section 7.8.4.5).
pub const CORRECTABLE_ERROR_BITS: [(u8, &str); 8] = [
    (0, "RxErr"),
    (6, "BadTLP"),
    (7, "BadDLLP"),
    (8, "Rollover"),
    (12, "Timeout"),
    (13, "AdvNonFatalErr"),
    (14, "CorrIntErr"),
    (15, "HeaderOF"),
];

impl AerRegister {
    /// The register `raw` with the names of its set bits from `table` (bit, name).
    pub fn from_raw(raw: u32, table: &[(u8, &'static str)]) -> Self {
        let set = table
            .iter()
            .filter(|(bit, _)| raw & (1 << bit) != 0)
            .map(|&(_, name)| name)
            .collect();
        AerRegister { raw, set }
    }

    pub fn is_set(&self, name: &str) -> bool {
        self.set.contains(&name)
    }
}

impl ExpressLink {
    /// The link as it runs now; `None` when it is down (no defined speed, or width 0).
    pub fn current(&self) -> Option<LinkState> {
        let gen = self.speed?;
        (self.width > 0).then(|| LinkState::new(gen, self.width))
    }

    /// What this end of the link can do (LnkCap); `None` when LnkCap holds no defined
    /// speed or a width of 0.
    pub fn capable(&self) -> Option<LinkState> {
        let gen = self.max_speed?;
        (self.max_width > 0).then(|| LinkState::new(gen, self.max_width))
    }
}

impl ExpressCap {
    /// What lspci appends to "LnkSta: Speed ...": pciutils `ls-caps.c` `link_compare()`
    /// compares the raw speed codes of LnkSta and this function's own LnkCap. Above is
    /// "overdriven"; below is "downgraded" except on root ports, downstream ports and
    /// PCI-to-PCIe bridges, whose LnkCap describes their side only and whose link is
    /// often legitimately slower (a Gen 2 card in a Gen 4 slot).
    pub fn lspci_downgraded_speed(&self) -> Option<LinkMark> {
        let link = self.link.as_ref()?;
        lspci_link_compare(self.port_type, link.speed_code, link.max_speed_code)
    }

    /// The same rule for the width.
    pub fn lspci_downgraded_width(&self) -> Option<LinkMark> {
        let link = self.link.as_ref()?;
        lspci_link_compare(self.port_type, link.width, link.max_width)
    }
}

fn lspci_link_compare(port_type: PortType, status: u8, capable: u8) -> Option<LinkMark> {
    if status > capable {
        return Some(LinkMark::Overdriven);
    }
    if status == capable {
        return None;
    }
    match port_type {
        PortType::RootPort | PortType::DownstreamPort | PortType::PciToPcieBridge => None,
        _ => Some(LinkMark::Downgraded),
    }
}
