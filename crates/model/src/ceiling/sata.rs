//! SATA ceilings: 1.5, 3 and 6 Gb/s links.
//!
//! Sources: [sata] Serial ATA Revision 3.x specification: section 6 (8b/10b at 1.5, 3.0 and
//! 6.0 Gb/s), 7.4 (ALIGN primitive pair at least every 256 Dwords), 9.4 (frame: SOF, FIS,
//! CRC, EOF, one Dword each), 10.5.11 (Data FIS: up to 2048 Dwords = 8192 B of data).

use super::{after_line_coding, packet_efficiency, LineCoding};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The SATA generations, by signalling rate in Gb/s.
pub const VALID_RATES_GBPS: [f64; 3] = [1.5, 3.0, 6.0];

/// Data FIS payload, 8192 B ([sata] 10.5.11).
const DATA_FIS_PAYLOAD: f64 = 8192.0;
/// SOF + FIS type Dword + CRC + EOF, one Dword each ([sata] 9.4, 10.5.11).
const DATA_FIS_OVERHEAD: f64 = 16.0;
/// An ALIGN pair (2 Dwords) at least every 256 Dwords ([sata] 7.4): counted as 2 of each 256.
const ALIGN_SHARE: f64 = 2.0 / 256.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SataCeiling {
    /// Signalling rate, Gb/s.
    #[serde(rename = "gbits_per_sec", alias = "gbps")]
    pub gbps: f64,
    pub coding: Cow<'static, str>,
    /// After 8b/10b, bytes/s.
    #[serde(rename = "raw_bytes_per_sec", alias = "raw_bps")]
    pub raw_bps: f64,
    /// Data in 8192 B Data FISes after frame overhead and ALIGN primitives, bytes/s. Command
    /// FISes, handshake primitives (X_RDY, R_RDY, R_OK ...) and the drive's latency are not
    /// counted: they depend on the command size and the device.
    #[serde(rename = "data_bytes_per_sec", alias = "data_bps")]
    pub data_bps: f64,
}

/// The ceiling of a link at `gbps` (1.5, 3 or 6), None for another rate.
pub fn link_ceiling(gbps: f64) -> Option<SataCeiling> {
    VALID_RATES_GBPS
        .iter()
        .find(|&&r| (r - gbps).abs() < 0.01)
        .map(|&r| {
            let raw = after_line_coding(r, 1, LineCoding::B8b10b);
            SataCeiling {
                gbps: r,
                coding: Cow::Borrowed(LineCoding::B8b10b.label()),
                raw_bps: raw,
                data_bps: raw
                    * packet_efficiency(DATA_FIS_PAYLOAD, DATA_FIS_OVERHEAD)
                    * (1.0 - ALIGN_SHARE),
            }
        })
}

/// Data ceiling in bytes/s of a link at `gbps`, as the kernel reports it
/// (`/sys/class/ata_link/linkN/sata_spd`: "1.5 Gbps", "3.0 Gbps", "6.0 Gbps").
pub fn data_bps(gbps: f64) -> Option<f64> {
    link_ceiling(gbps).map(|c| c.data_bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_rates_are_150_300_600_mb() {
        let raw: Vec<f64> = VALID_RATES_GBPS
            .iter()
            .map(|&r| link_ceiling(r).unwrap().raw_bps)
            .collect();
        assert_eq!(raw, [150e6, 300e6, 600e6]);
    }

    #[test]
    fn data_after_fis_and_align() {
        // 600 MB/s x 8192/8208 x 254/256 = 594.15 MB/s.
        let c = link_ceiling(6.0).unwrap();
        assert!((c.data_bps - 600e6 * 8192.0 / 8208.0 * 254.0 / 256.0).abs() < 1.0);
        assert_eq!(format!("{:.1}", c.data_bps / 1e6), "594.2");
        assert_eq!(link_ceiling(12.0), None);
    }
}
