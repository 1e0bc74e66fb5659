//! Theoretical ceilings of the links headroom measures against: PCI Express, USB, SATA,
//! Ethernet and eMMC/SD. Pure arithmetic, no I/O; every rate is in bytes per second (`f64`)
//! and every constant cites its source next to it.
//!
//! Vocabulary shared by all link kinds:
//! - **signalling rate**: the rate on the wire (GT/s, Gb/s, MHz x bus width);
//! - **raw**: what is left after line coding (8b/10b, 128b/130b, ...);
//! - **protocol** ceilings (TLP, bulk, goodput ...): after the per-packet overhead of the
//!   protocol, under assumptions that each module states and labels.

pub mod args;
pub mod eth;
pub mod mmc;
pub mod pcie;
pub mod sata;
pub mod usb;
pub mod usb_endpoint;

use serde::{Deserialize, Serialize};

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

/// The bandwidth ceiling of a benchmark target's path: its bottleneck link's ceiling in each
/// direction (`probe::path` resolves it; benchmarks divide by it to give efficiency).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PathCeiling {
    /// Bytes per second the bottleneck link can carry from the device towards the CPU (what
    /// a read from the disk moves).
    pub read_bytes_per_sec: f64,
    /// Bytes per second towards the device (what a write to the disk moves).
    pub write_bytes_per_sec: f64,
    /// Whether the link carries both directions at once (PCIe, Ethernet), or shares one
    /// medium between them (USB bulk, SATA, MMC).
    pub full_duplex: bool,
    /// Which link is the bottleneck, in words (`PCIe 0000:00:1c.0 -> 0000:01:00.0 at 8 GT/s
    /// x1 (link below what both ends support (16 GT/s x4))`).
    pub bottleneck: String,
}

impl PathCeiling {
    /// The ceiling for a workload reading `read_percent` % of its bytes: on a full-duplex
    /// link the busier direction saturates first; on a shared medium the two add up.
    pub fn for_read_percent(&self, read_percent: u8) -> f64 {
        let r = f64::from(read_percent.min(100)) / 100.0;
        let w = 1.0 - r;
        let (cr, cw) = (self.read_bytes_per_sec, self.write_bytes_per_sec);
        if r == 1.0 {
            cr
        } else if w == 1.0 {
            cw
        } else if self.full_duplex {
            (cr / r).min(cw / w)
        } else {
            1.0 / (r / cr + w / cw)
        }
    }
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

    #[test]
    fn mixed_workloads_meet_the_ceiling_of_their_busier_direction() {
        let full = PathCeiling {
            read_bytes_per_sec: 800e6,
            write_bytes_per_sec: 600e6,
            full_duplex: true,
            bottleneck: "PCIe".into(),
        };
        assert_eq!(full.for_read_percent(100), 800e6);
        assert_eq!(full.for_read_percent(0), 600e6);
        // 70 % reads on a full-duplex link: reads saturate at 800/0.7 = 1142.9 MB/s total,
        // writes at 600/0.3 = 2000 MB/s: reads bound it.
        assert!((full.for_read_percent(70) - 800e6 / 0.7).abs() < 1.0);
        let shared = PathCeiling {
            full_duplex: false,
            read_bytes_per_sec: 50e6,
            write_bytes_per_sec: 50e6,
            ..full
        };
        // One medium for both directions: a 50/50 mix still totals 50 MB/s.
        assert!((shared.for_read_percent(50) - 50e6).abs() < 1.0);
    }
}
