//! eMMC and SD bus ceilings.
//!
//! Sources: [emmc] JEDEC JESD84-B51 (eMMC 5.1): section 5.3 (bus speed modes: HS26, HS52,
//! DDR52, HS200 at 200 MHz SDR, HS400 at 200 MHz DDR, 1/4/8-bit bus), 6.15 (data blocks: a
//! start bit, the data, CRC16 per data line, an end bit; in DDR modes one CRC16 per clock edge,
//! sent in the same 16 clocks). [sd] SD Physical Layer Simplified Specification 3.01+:
//! section 3.9 (UHS-I: SDR12/25/50 at 25/50/100 MHz, DDR50, SDR104 at 208 MHz, 4-bit bus),
//! 4.3 / 7.2 (same block framing as eMMC).

use serde::{Deserialize, Serialize};

/// A bus timing mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MmcMode {
    EmmcHs52,
    EmmcDdr52,
    EmmcHs200,
    EmmcHs400,
    SdHighSpeed,
    SdSdr50,
    SdDdr50,
    SdSdr104,
}

impl MmcMode {
    pub const ALL: [MmcMode; 8] = [
        MmcMode::EmmcHs52,
        MmcMode::EmmcDdr52,
        MmcMode::EmmcHs200,
        MmcMode::EmmcHs400,
        MmcMode::SdHighSpeed,
        MmcMode::SdSdr50,
        MmcMode::SdDdr50,
        MmcMode::SdSdr104,
    ];

    /// Names as the kernel's `ios` debugfs file and the specs print them.
    pub fn label(self) -> &'static str {
        match self {
            MmcMode::EmmcHs52 => "eMMC HS52",
            MmcMode::EmmcDdr52 => "eMMC DDR52",
            MmcMode::EmmcHs200 => "eMMC HS200",
            MmcMode::EmmcHs400 => "eMMC HS400",
            MmcMode::SdHighSpeed => "SD high speed",
            MmcMode::SdSdr50 => "SD UHS-I SDR50",
            MmcMode::SdDdr50 => "SD UHS-I DDR50",
            MmcMode::SdSdr104 => "SD UHS-I SDR104",
        }
    }

    /// The mode from the timing name the kernel prints in debugfs `mmcN/ios`
    /// ("timing spec: 9 (mmc HS200)"; drivers/mmc/core/debugfs.c, `mmc_ios_show`). Takes the
    /// part in parentheses. None for legacy, SDR12/SDR25 and unknown names.
    pub fn from_ios_timing(name: &str) -> Option<MmcMode> {
        match name.trim() {
            "mmc high-speed" => Some(MmcMode::EmmcHs52),
            "mmc DDR52" => Some(MmcMode::EmmcDdr52),
            "mmc HS200" => Some(MmcMode::EmmcHs200),
            "mmc HS400" | "mmc HS400 enhanced strobe" => Some(MmcMode::EmmcHs400),
            "sd high-speed" => Some(MmcMode::SdHighSpeed),
            "sd uhs SDR50" => Some(MmcMode::SdSdr50),
            "sd uhs DDR50" => Some(MmcMode::SdDdr50),
            "sd uhs SDR104" => Some(MmcMode::SdSdr104),
            _ => None,
        }
    }

    /// Clock in MHz, bus width in bits, and whether data moves on both edges ([emmc] 5.3,
    /// [sd] 3.9).
    pub fn bus(self) -> (f64, u32, bool) {
        match self {
            MmcMode::EmmcHs52 => (52.0, 8, false),
            MmcMode::EmmcDdr52 => (52.0, 8, true),
            MmcMode::EmmcHs200 => (200.0, 8, false),
            MmcMode::EmmcHs400 => (200.0, 8, true),
            MmcMode::SdHighSpeed => (50.0, 4, false),
            MmcMode::SdSdr50 => (100.0, 4, false),
            MmcMode::SdDdr50 => (50.0, 4, true),
            MmcMode::SdSdr104 => (208.0, 4, false),
        }
    }
}

/// Block size the framing is counted for, bytes ([emmc] 6.6.x, [sd] 4.3: 512 B blocks).
const BLOCK_BYTES: f64 = 512.0;
/// Clocks of framing per block and data line: start bit 1 + CRC16 16 + end bit 1
/// ([emmc] 6.15; in DDR modes the two per-edge CRC16 share the 16 clocks).
const BLOCK_FRAMING_CLOCKS: f64 = 18.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmcCeiling {
    pub mode: MmcMode,
    pub clock_mhz: f64,
    pub bus_width: u32,
    pub ddr: bool,
    /// Clock x width x edges, bytes/s.
    #[serde(rename = "bus_bytes_per_sec", alias = "bus_bps")]
    pub bus_bps: f64,
    /// After start bit, CRC16 and end bit of each 512 B block; the gaps between blocks
    /// (card access time, write busy) are not counted, they depend on the card.
    #[serde(rename = "block_bytes_per_sec", alias = "block_bps")]
    pub block_bps: f64,
}

pub fn ceiling(mode: MmcMode) -> MmcCeiling {
    let (mhz, width, ddr) = mode.bus();
    let edges = if ddr { 2.0 } else { 1.0 };
    let bus = mhz * 1e6 * f64::from(width) * edges / 8.0;
    let data_clocks = BLOCK_BYTES * 8.0 / (f64::from(width) * edges);
    MmcCeiling {
        mode,
        clock_mhz: mhz,
        bus_width: width,
        ddr,
        bus_bps: bus,
        block_bps: bus * data_clocks / (data_clocks + BLOCK_FRAMING_CLOCKS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ceilings() {
        let mb = |m| ceiling(m).bus_bps / 1e6;
        assert_eq!(mb(MmcMode::EmmcHs200), 200.0);
        assert_eq!(mb(MmcMode::EmmcHs400), 400.0);
        assert_eq!(mb(MmcMode::EmmcDdr52), 104.0);
        assert_eq!(mb(MmcMode::SdSdr104), 104.0);
        assert_eq!(mb(MmcMode::SdSdr50), 50.0);
    }

    #[test]
    fn kernel_timing_names() {
        assert_eq!(
            MmcMode::from_ios_timing("mmc HS400 enhanced strobe"),
            Some(MmcMode::EmmcHs400)
        );
        assert_eq!(
            MmcMode::from_ios_timing("sd uhs SDR104"),
            Some(MmcMode::SdSdr104)
        );
        assert_eq!(MmcMode::from_ios_timing("legacy"), None);
    }

    #[test]
    fn block_framing() {
        // HS200: 512 data clocks per block on each of 8 lines, + 18.
        let hs200 = ceiling(MmcMode::EmmcHs200).block_bps;
        assert!((hs200 - 200e6 * 512.0 / 530.0).abs() < 1.0);
        // HS400: 256 clocks (both edges) + 18.
        let hs400 = ceiling(MmcMode::EmmcHs400).block_bps;
        assert!((hs400 - 400e6 * 256.0 / 274.0).abs() < 1.0);
        // SDR104: 4 lines, 1024 clocks + 18.
        let sdr104 = ceiling(MmcMode::SdSdr104).block_bps;
        assert!((sdr104 - 104e6 * 1024.0 / 1042.0).abs() < 1.0);
    }
}
