//! PCI Express link vocabulary: generations, widths, link states.
//!
//! Encodings follow the PCI Express Base Specification 6.0, section 7.5.3.6 (Link
//! Capabilities: Max Link Speed is an index into the Supported Link Speeds Vector of Link
//! Capabilities 2, section 7.5.3.18, where bit 0 = 2.5 GT/s ... bit 6 = 128 GT/s).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A PCI Express generation, named by its signalling rate. Serialized as its rate in GT/s
/// (a number: `8.0`), the unit lspci and sysfs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PcieGen {
    Gen1,
    Gen2,
    Gen3,
    Gen4,
    Gen5,
    Gen6,
    Gen7,
}

impl PcieGen {
    pub const ALL: [PcieGen; 7] = [
        PcieGen::Gen1,
        PcieGen::Gen2,
        PcieGen::Gen3,
        PcieGen::Gen4,
        PcieGen::Gen5,
        PcieGen::Gen6,
        PcieGen::Gen7,
    ];

    /// Generation number, 1..=7.
    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    /// The generation with this number (1..=7).
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n.checked_sub(1)?)).copied()
    }

    /// The generation for a Link Speed field value of LnkCap/LnkSta/LnkCtl2 (1 = 2.5 GT/s ...
    /// 7 = 128 GT/s; PCIe Base Spec 6.0 section 7.5.3.6 and 7.5.3.8). 0 and 8..15 are reserved.
    pub fn from_speed_code(code: u8) -> Option<Self> {
        Self::from_number(code)
    }

    /// Signalling rate in GT/s per lane (PCIe Base Spec 6.0 section 4.2: 2.5, 5.0, 8.0, 16.0,
    /// 32.0, 64.0 GT/s; PCIe 7.0: 128.0 GT/s).
    pub fn gts(self) -> f64 {
        match self {
            PcieGen::Gen1 => 2.5,
            PcieGen::Gen2 => 5.0,
            PcieGen::Gen3 => 8.0,
            PcieGen::Gen4 => 16.0,
            PcieGen::Gen5 => 32.0,
            PcieGen::Gen6 => 64.0,
            PcieGen::Gen7 => 128.0,
        }
    }

    /// The generation whose rate is `gts` GT/s (as sysfs `current_link_speed` reports it).
    pub fn from_gts(gts: f64) -> Option<Self> {
        Self::ALL.into_iter().find(|g| (g.gts() - gts).abs() < 0.01)
    }

    /// The rate as lspci prints it: "2.5GT/s", "8GT/s".
    pub fn lspci_label(self) -> String {
        format!("{}GT/s", trim_float(self.gts()))
    }
}

impl Serialize for PcieGen {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.gts())
    }
}

impl<'de> Deserialize<'de> for PcieGen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let gts = f64::deserialize(d)?;
        PcieGen::from_gts(gts).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{gts} GT/s is not a PCI Express rate (2.5, 5, 8, 16, 32, 64, 128)"
            ))
        })
    }
}

impl fmt::Display for PcieGen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} GT/s", trim_float(self.gts()))
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Link widths defined by the PCIe Base Spec 6.0 section 7.5.3.6 (Maximum Link Width).
pub const VALID_WIDTHS: [u8; 7] = [1, 2, 4, 8, 12, 16, 32];

/// The state of one PCI Express link (or one end's capability): speed and lane count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LinkState {
    #[serde(rename = "speed_gts")]
    pub gen: PcieGen,
    pub width: u8,
}

impl LinkState {
    pub fn new(gen: PcieGen, width: u8) -> Self {
        LinkState { gen, width }
    }

    /// Raw lane-rate product in GT/s, used to order states ("which is faster").
    pub fn gts_total(self) -> f64 {
        self.gen.gts() * f64::from(self.width)
    }
}

impl fmt::Display for LinkState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x{}", self.gen, self.width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_codes_map_to_rates() {
        assert_eq!(PcieGen::from_speed_code(1).map(PcieGen::gts), Some(2.5));
        assert_eq!(PcieGen::from_speed_code(5).map(PcieGen::gts), Some(32.0));
        assert_eq!(PcieGen::from_speed_code(0), None);
        assert_eq!(PcieGen::from_speed_code(8), None);
    }

    #[test]
    fn json_speaks_gt_per_s() {
        let l = LinkState::new(PcieGen::Gen1, 4);
        let j = serde_json::to_string(&l).unwrap();
        assert_eq!(j, r#"{"speed_gts":2.5,"width":4}"#);
        assert_eq!(serde_json::from_str::<LinkState>(&j).unwrap(), l);
        assert!(serde_json::from_str::<PcieGen>("3.0").is_err());
    }

    #[test]
    fn labels() {
        assert_eq!(PcieGen::Gen1.lspci_label(), "2.5GT/s");
        assert_eq!(PcieGen::Gen3.lspci_label(), "8GT/s");
        assert_eq!(LinkState::new(PcieGen::Gen2, 1).to_string(), "5 GT/s x1");
        assert_eq!(PcieGen::from_gts(8.0), Some(PcieGen::Gen3));
    }
}

/// The Device/Port Type of a PCI Express capability (PCIe Base Spec 6.0 section 7.5.3.2,
/// bits 7:4 of the PCI Express Capabilities Register).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortType {
    Endpoint,
    LegacyEndpoint,
    RootComplexIntegratedEndpoint,
    RootComplexEventCollector,
    RootPort,
    UpstreamPort,
    DownstreamPort,
    PcieToPciBridge,
    PciToPcieBridge,
    Unknown(u8),
}

impl PortType {
    /// Decode the 4-bit field.
    pub fn from_code(code: u8) -> Self {
        match code {
            0x0 => PortType::Endpoint,
            0x1 => PortType::LegacyEndpoint,
            0x4 => PortType::RootPort,
            0x5 => PortType::UpstreamPort,
            0x6 => PortType::DownstreamPort,
            0x7 => PortType::PcieToPciBridge,
            0x8 => PortType::PciToPcieBridge,
            0x9 => PortType::RootComplexIntegratedEndpoint,
            0xa => PortType::RootComplexEventCollector,
            other => PortType::Unknown(other),
        }
    }

    /// The port faces away from the CPU: the upstream end of the link below it.
    pub fn is_downstream_facing(self) -> bool {
        matches!(
            self,
            PortType::RootPort | PortType::DownstreamPort | PortType::PciToPcieBridge
        )
    }

    /// The port faces the CPU: the downstream end of the link above it.
    pub fn is_upstream_facing(self) -> bool {
        matches!(
            self,
            PortType::Endpoint
                | PortType::LegacyEndpoint
                | PortType::UpstreamPort
                | PortType::PcieToPciBridge
        )
    }

    /// Whether lspci marks a slower-than-capable LnkSta "(downgraded)" for this type: it does
    /// not for root ports, downstream ports and PCI/PCI-X-to-PCIe bridges (type 8; pciutils
    /// ls-caps.c `link_compare` tests PCI_EXP_TYPE_PCI_BRIDGE = 0x8), the ports whose LnkCap
    /// describes the port, not what the device below can do.
    pub fn lspci_reports_downgrade(self) -> bool {
        !matches!(
            self,
            PortType::RootPort | PortType::DownstreamPort | PortType::PciToPcieBridge
        )
    }

    /// Functions with Link registers: all but Root Complex integrated endpoints and event
    /// collectors (PCIe Base Spec 6.0 section 7.5.3).
    pub fn has_link(self) -> bool {
        !matches!(
            self,
            PortType::RootComplexIntegratedEndpoint | PortType::RootComplexEventCollector
        )
    }

    /// lspci's name of the type, printed after "Express (vN)".
    pub fn lspci_name(self) -> &'static str {
        match self {
            PortType::Endpoint => "Endpoint",
            PortType::LegacyEndpoint => "Legacy Endpoint",
            PortType::RootComplexIntegratedEndpoint => "Root Complex Integrated Endpoint",
            PortType::RootComplexEventCollector => "Root Complex Event Collector",
            PortType::RootPort => "Root Port",
            PortType::UpstreamPort => "Upstream Port",
            PortType::DownstreamPort => "Downstream Port",
            PortType::PcieToPciBridge => "PCI-Express to PCI/PCI-X Bridge",
            PortType::PciToPcieBridge => "PCI/PCI-X to PCI-Express Bridge",
            PortType::Unknown(_) => "Unknown type",
        }
    }
}

/// Active State Power Management states, as a set (LnkCap bits 11:10 "ASPM Support",
/// LnkCtl bits 1:0 "ASPM Control"; PCIe Base Spec 6.0 sections 7.5.3.6 and 7.5.3.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Aspm {
    pub l0s: bool,
    pub l1: bool,
}

impl Aspm {
    /// From the 2-bit field: bit 0 = L0s, bit 1 = L1.
    pub fn from_bits(bits: u8) -> Self {
        Aspm {
            l0s: bits & 1 != 0,
            l1: bits & 2 != 0,
        }
    }

    pub fn any(self) -> bool {
        self.l0s || self.l1
    }

    /// "L0s L1", "L1", "none".
    pub fn label(self) -> &'static str {
        match (self.l0s, self.l1) {
            (true, true) => "L0s L1",
            (true, false) => "L0s",
            (false, true) => "L1",
            (false, false) => "none",
        }
    }

    /// As lspci prints LnkCap: "ASPM not supported", "ASPM L0s L1".
    pub fn lspci_support_label(self) -> &'static str {
        match (self.l0s, self.l1) {
            (false, false) => "not supported",
            _ => self.label(),
        }
    }

    /// As lspci prints LnkCtl: "ASPM Disabled", "ASPM L1 Enabled".
    pub fn lspci_control_label(self) -> &'static str {
        match (self.l0s, self.l1) {
            (true, true) => "L0s L1 Enabled",
            (true, false) => "L0s Enabled",
            (false, true) => "L1 Enabled",
            (false, false) => "Disabled",
        }
    }
}

/// Which end of a link keeps it below what the other end could do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitingEnd {
    /// The port above (root port or switch downstream port).
    Upstream,
    /// The device below.
    Downstream,
    /// Both ends have the same capability.
    Both,
}

/// A link's state judged against the capability of both of its ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkComparison {
    pub current: LinkState,
    pub upstream: LinkState,
    pub downstream: LinkState,
    /// The best state both ends support: the lower speed and the narrower width.
    pub common: LinkState,
    /// Which end sets `common`'s speed.
    pub speed_limited_by: LimitingEnd,
    /// Which end sets `common`'s width.
    pub width_limited_by: LimitingEnd,
    /// The link runs slower than both ends support.
    pub speed_below_common: bool,
    /// The link runs narrower than both ends support.
    pub width_below_common: bool,
}

impl LinkComparison {
    /// Judge `current` against the capabilities of the upstream and downstream ends.
    pub fn new(current: LinkState, upstream: LinkState, downstream: LinkState) -> Self {
        let limit = |u: f64, d: f64| {
            if u < d {
                LimitingEnd::Upstream
            } else if d < u {
                LimitingEnd::Downstream
            } else {
                LimitingEnd::Both
            }
        };
        let common = LinkState {
            gen: upstream.gen.min(downstream.gen),
            width: upstream.width.min(downstream.width),
        };
        LinkComparison {
            current,
            upstream,
            downstream,
            common,
            speed_limited_by: limit(upstream.gen.gts(), downstream.gen.gts()),
            width_limited_by: limit(f64::from(upstream.width), f64::from(downstream.width)),
            speed_below_common: current.gen < common.gen,
            width_below_common: current.width < common.width,
        }
    }

    /// Whether the link runs below what both of its ends support, in speed or width.
    pub fn below_common(&self) -> bool {
        self.speed_below_common || self.width_below_common
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    #[test]
    fn raspberry_pi_5_gen2_link_below_both_ends() {
        // Seed 003: the RP1/NVMe link trains at 5 GT/s x1 while both ends do 8 GT/s.
        let c = LinkComparison::new(
            LinkState::new(PcieGen::Gen2, 1),
            LinkState::new(PcieGen::Gen3, 1),
            LinkState::new(PcieGen::Gen3, 4),
        );
        assert_eq!(c.common, LinkState::new(PcieGen::Gen3, 1));
        assert!(c.speed_below_common);
        assert!(!c.width_below_common);
        assert_eq!(c.width_limited_by, LimitingEnd::Upstream);
        assert_eq!(c.speed_limited_by, LimitingEnd::Both);
    }

    #[test]
    fn device_faster_than_slot_is_not_below_common() {
        // A Gen4 x4 SSD in a Gen3 x4 slot running 8 GT/s x4: lspci says "downgraded",
        // but the link is at the best both ends support; the slot limits it.
        let c = LinkComparison::new(
            LinkState::new(PcieGen::Gen3, 4),
            LinkState::new(PcieGen::Gen3, 4),
            LinkState::new(PcieGen::Gen4, 4),
        );
        assert!(!c.below_common());
        assert_eq!(c.speed_limited_by, LimitingEnd::Upstream);
    }

    #[test]
    fn port_types() {
        assert_eq!(PortType::from_code(4), PortType::RootPort);
        assert!(!PortType::RootPort.lspci_reports_downgrade());
        assert!(PortType::Endpoint.lspci_reports_downgrade());
        assert!(PortType::UpstreamPort.is_upstream_facing());
        assert!(PortType::DownstreamPort.is_downstream_facing());
    }
}
