//! Theoretical ceilings of the links headroom measures against: PCI Express, USB, SATA,
//! Ethernet and eMMC/SD. Pure arithmetic, no I/O; every rate is in bytes per second (`f64`)
//! and every constant cites its source next to it.
//!
//! Vocabulary shared by all link kinds:
//! - **signalling rate**: the rate on the wire (GT/s, Gb/s, MHz x bus width);
//! - **raw**: what is left after line coding (8b/10b, 128b/130b, ...);
//! - **protocol** ceilings (TLP, bulk, goodput ...): after the per-packet overhead of the
//!   protocol, under assumptions that each module states and labels.

pub mod eth;
pub mod mmc;
pub mod pcie;
pub mod sata;
pub mod usb;

use serde::Serialize;

/// A line code: how many payload bits travel per bit on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LineCoding {
    /// 8b/10b (IBM, Widmer & Franaszek 1983): PCIe 2.5/5 GT/s, USB 3.x Gen 1, SATA.
    #[serde(rename = "8b/10b")]
    B8b10b,
    /// 128b/130b: PCIe 8.0-32.0 GT/s (PCIe Base Spec 3.0+ section 4.2.2).
    #[serde(rename = "128b/130b")]
    B128b130b,
    /// 128b/132b: USB 3.1+ Gen 2 (USB 3.2 spec section 6.3.2), USB4 Gen 3.
    #[serde(rename = "128b/132b")]
    B128b132b,
    /// 64b/66b: USB4 Gen 2 (USB4 spec section 4.4: 10 Gb/s lanes).
    #[serde(rename = "64b/66b")]
    B64b66b,
    /// No line code on the wire (PCIe Flit mode with PAM4, NRZI with bit stuffing on USB 2.0
    /// whose worst case is not a ceiling, SDR/DDR parallel buses).
    #[serde(rename = "none")]
    None,
}

impl LineCoding {
    /// Payload bits per wire bit.
    pub fn efficiency(self) -> f64 {
        match self {
            LineCoding::B8b10b => 8.0 / 10.0,
            LineCoding::B128b130b => 128.0 / 130.0,
            LineCoding::B128b132b => 128.0 / 132.0,
            LineCoding::B64b66b => 64.0 / 66.0,
            LineCoding::None => 1.0,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            LineCoding::B8b10b => "8b/10b",
            LineCoding::B128b130b => "128b/130b",
            LineCoding::B128b132b => "128b/132b",
            LineCoding::B64b66b => "64b/66b",
            LineCoding::None => "none",
        }
    }
}

/// Bytes per second left after line coding on `lanes` lanes of `gbit_per_lane` Gb/s (or GT/s).
pub fn after_line_coding(gbit_per_lane: f64, lanes: u32, coding: LineCoding) -> f64 {
    gbit_per_lane * 1e9 * coding.efficiency() / 8.0 * f64::from(lanes)
}

/// The fraction of a stream left when each `payload` bytes cost `payload + overhead` bytes.
pub(crate) fn packet_efficiency(payload: f64, overhead: f64) -> f64 {
    payload / (payload + overhead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_codes() {
        assert_eq!(after_line_coding(2.5, 1, LineCoding::B8b10b), 250e6);
        assert_eq!(after_line_coding(6.0, 1, LineCoding::B8b10b), 600e6);
        assert!((after_line_coding(8.0, 1, LineCoding::B128b130b) - 984_615_384.6).abs() < 1.0);
        assert!((after_line_coding(10.0, 1, LineCoding::B128b132b) - 1_212_121_212.1).abs() < 1.0);
    }
}
