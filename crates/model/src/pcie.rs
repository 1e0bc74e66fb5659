//! PCI Express link vocabulary: generations, widths, link states.
//!
//! Encodings follow the PCI Express Base Specification 6.0, section 7.5.3.6 (Link
//! Capabilities: Max Link Speed is an index into the Supported Link Speeds Vector of Link
//! Capabilities 2, section 7.5.3.18, where bit 0 = 2.5 GT/s ... bit 6 = 128 GT/s).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A PCI Express generation, named by its signalling rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    fn labels() {
        assert_eq!(PcieGen::Gen1.lspci_label(), "2.5GT/s");
        assert_eq!(PcieGen::Gen3.lspci_label(), "8GT/s");
        assert_eq!(LinkState::new(PcieGen::Gen2, 1).to_string(), "5 GT/s x1");
        assert_eq!(PcieGen::from_gts(8.0), Some(PcieGen::Gen3));
    }
}
