//! USB ceilings: signalling rate, line coding, and per transfer type (control, interrupt,
//! bulk, isochronous) the protocol ceiling from packets per (micro)frame, max packet size and
//! burst, for one endpoint.
//!
//! Sources:
//! - [usb2]: Universal Serial Bus Specification, Revision 2.0 (2000): section 5.5.4 (control),
//!   5.6.4 (isochronous), 5.7.4 (interrupt), 5.8.4 (bulk) give the per-transaction protocol
//!   overhead in bytes and the transactions that fit a (micro)frame; section 5.9
//!   (high-bandwidth endpoints: up to 3 transactions of 1024 B per microframe).
//! - [usb32]: Universal Serial Bus 3.2 Specification (2017): section 6.3 (8b/10b at Gen 1,
//!   128b/132b at Gen 2), 6.4.3 (SKP ordered sets), 7.2.1 (packet framing), 7.2.2 (link
//!   commands), 8.4 / 8.5 (header and data packets), 9.6.7 (endpoint companion descriptor:
//!   bMaxBurst up to 16, Mult up to 2 for isochronous, 3 packets per service interval for
//!   interrupt).
//! - [usb4]: USB4 Specification v1.0 (2019), section 4.2: Gen 2 lanes 10 Gb/s with 64b/66b,
//!   Gen 3 lanes 20 Gb/s with 128b/132b, two lanes.
//! - [guide]: Rockchip "USB Performance Analysis Guide" (seeds/004), tables 1-1 and 1-2.

use super::{after_line_coding, packet_efficiency, LineCoding};
use crate::units::{MB, MIB};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A USB signalling mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsbSpeed {
    /// USB 1.0 low speed, 1.5 Mb/s.
    Low,
    /// USB 1.1 full speed, 12 Mb/s.
    Full,
    /// USB 2.0 high speed, 480 Mb/s.
    High,
    /// USB 3.x Gen 1 (SuperSpeed), 5 Gb/s, one lane.
    Gen1,
    /// USB 3.x Gen 2 (SuperSpeedPlus), 10 Gb/s, one lane.
    Gen2,
    /// USB 3.2 Gen 1x2, 2 lanes of 5 Gb/s.
    Gen1x2,
    /// USB 3.2 Gen 2x2, 2 lanes of 10 Gb/s.
    Gen2x2,
    /// USB4 20 Gb/s (2 lanes of Gen 2).
    Usb4_20,
    /// USB4 40 Gb/s (2 lanes of Gen 3).
    Usb4_40,
}

/// A USB transfer type ([usb2] section 5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferType {
    Control,
    Interrupt,
    Bulk,
    Isochronous,
}

impl TransferType {
    pub const ALL: [TransferType; 4] = [
        TransferType::Control,
        TransferType::Interrupt,
        TransferType::Bulk,
        TransferType::Isochronous,
    ];

    pub fn label(self) -> &'static str {
        match self {
            TransferType::Control => "control",
            TransferType::Interrupt => "interrupt",
            TransferType::Bulk => "bulk",
            TransferType::Isochronous => "isochronous",
        }
    }
}

/// [usb2] 5.x: one full-speed frame is 1 ms, one high-speed microframe 125 us.
const FRAME_S: f64 = 1e-3;
const MICROFRAME_S: f64 = 125e-6;
/// [usb2] section 5.7.4: a low-speed interrupt endpoint is polled at most every 10 ms.
const LOW_SPEED_MIN_INTERVAL_S: f64 = 10e-3;

impl UsbSpeed {
    pub const ALL: [UsbSpeed; 9] = [
        UsbSpeed::Low,
        UsbSpeed::Full,
        UsbSpeed::High,
        UsbSpeed::Gen1,
        UsbSpeed::Gen2,
        UsbSpeed::Gen1x2,
        UsbSpeed::Gen2x2,
        UsbSpeed::Usb4_20,
        UsbSpeed::Usb4_40,
    ];

    /// The names the guide's table 1-1 and the USB-IF use.
    pub fn label(self) -> &'static str {
        match self {
            UsbSpeed::Low => "USB 1.0 low speed",
            UsbSpeed::Full => "USB 1.1 full speed",
            UsbSpeed::High => "USB 2.0 high speed",
            UsbSpeed::Gen1 => "USB 3.x Gen 1 (USB 3.0)",
            UsbSpeed::Gen2 => "USB 3.x Gen 2",
            UsbSpeed::Gen1x2 => "USB 3.2 Gen 1x2",
            UsbSpeed::Gen2x2 => "USB 3.2 Gen 2x2",
            UsbSpeed::Usb4_20 => "USB4 20 Gb/s",
            UsbSpeed::Usb4_40 => "USB4 40 Gb/s",
        }
    }

    /// Signalling rate per lane in Mb/s and the number of lanes.
    pub fn signalling(self) -> (f64, u32) {
        match self {
            UsbSpeed::Low => (1.5, 1),
            UsbSpeed::Full => (12.0, 1),
            UsbSpeed::High => (480.0, 1),
            UsbSpeed::Gen1 => (5000.0, 1),
            UsbSpeed::Gen2 => (10_000.0, 1),
            UsbSpeed::Gen1x2 => (5000.0, 2),
            UsbSpeed::Gen2x2 => (10_000.0, 2),
            UsbSpeed::Usb4_20 => (10_000.0, 2),
            UsbSpeed::Usb4_40 => (20_000.0, 2),
        }
    }

    /// Total signalling rate in Mb/s, as sysfs `speed` and the guide's table 1-1 give it.
    pub fn total_mbps(self) -> f64 {
        let (per_lane, lanes) = self.signalling();
        per_lane * f64::from(lanes)
    }

    /// Line coding ([usb2] 7.1.8: NRZI with bit stuffing, whose cost depends on the data, so
    /// the ceiling counts none; [usb32] 6.3; [usb4] 4.2).
    pub fn line_coding(self) -> LineCoding {
        match self {
            UsbSpeed::Low | UsbSpeed::Full | UsbSpeed::High => LineCoding::None,
            UsbSpeed::Gen1 | UsbSpeed::Gen1x2 => LineCoding::B8b10b,
            UsbSpeed::Gen2 | UsbSpeed::Gen2x2 | UsbSpeed::Usb4_40 => LineCoding::B128b132b,
            UsbSpeed::Usb4_20 => LineCoding::B64b66b,
        }
    }

    /// The speed of a device from its sysfs attributes `speed` (Mb/s) and `rx_lanes`
    /// (Documentation/ABI/testing/sysfs-bus-usb; drivers/usb/core/sysfs.c prints "10000" for
    /// both Gen 2x1 and Gen 1x2, told apart by the lane count, and "20000" for Gen 2x2).
    /// A device behind a USB4 link reports its tunnelled USB 3.x speed.
    pub fn from_sysfs(speed_mbps: f64, lanes: u8) -> Option<UsbSpeed> {
        let is = |v: f64| (speed_mbps - v).abs() < 0.01;
        if is(1.5) {
            Some(UsbSpeed::Low)
        } else if is(12.0) {
            Some(UsbSpeed::Full)
        } else if is(480.0) {
            Some(UsbSpeed::High)
        } else if is(5000.0) {
            Some(UsbSpeed::Gen1)
        } else if is(10_000.0) {
            Some(if lanes >= 2 {
                UsbSpeed::Gen1x2
            } else {
                UsbSpeed::Gen2
            })
        } else if is(20_000.0) {
            Some(UsbSpeed::Gen2x2)
        } else {
            None
        }
    }

    /// USB 3.x and USB4 speeds (packet framing of [usb32] chapter 7 rather than [usb2]).
    pub fn is_superspeed(self) -> bool {
        self >= UsbSpeed::Gen1
    }
}

/// Bytes per second after line coding (the link's raw ceiling).
pub fn raw_bps(speed: UsbSpeed) -> f64 {
    let (per_lane, lanes) = speed.signalling();
    after_line_coding(per_lane / 1000.0, lanes, speed.line_coding())
}

/// Per-transaction protocol overhead in bytes at full and high speed ([usb2] sections 5.5.4,
/// 5.6.4, 5.7.4, 5.8.4: tokens, handshake, sync, EOP, CRC and inter-packet delays).
const FS_CONTROL_OVERHEAD: f64 = 45.0;
const FS_BULK_OVERHEAD: f64 = 13.0;
const HS_CONTROL_OVERHEAD: f64 = 173.0;
const HS_BULK_OVERHEAD: f64 = 55.0;

/// USB 3.x packet sizes on the wire ([usb32] 7.2.1, 8.4-8.5):
/// - a Data Packet Header is a header packet: 4 framing symbols (SHP or DPHP) + 12 B header
///   + 2 B CRC-16 + 2 B Link Control Word = 20 B;
/// - the Data Packet Payload adds 4 framing symbols (SDP) + 4 B CRC-32 + 4 symbols (END);
/// - each ACK transaction packet the data receiver returns makes the data sender answer with
///   the link commands LGOOD_n and LCRD_x ([usb32] 7.2.4), 8 B each, on the data direction.
const SS_DATA_PACKET_OVERHEAD: f64 = 20.0 + 4.0 + 4.0 + 4.0;
const SS_LINK_COMMANDS_PER_PACKET: f64 = 2.0 * 8.0;
/// [usb32] 6.4.3: at Gen 1 a SKP ordered set of 2 symbols every 354 symbols on average.
/// At Gen 2 (128b/132b) the SKP schedule is not counted (the ceiling errs high by its share).
const SS_GEN1_SKP_SHARE: f64 = 2.0 / 354.0;
/// [usb32] 9.6.7: max packet 1024 B for SuperSpeed bulk, interrupt and isochronous, 512 B for
/// control; bMaxBurst up to 16; interrupt up to 3 packets and isochronous up to
/// 16 x 3 packets per 125 us service interval.
const SS_MAX_PACKET: u32 = 1024;
const SS_CONTROL_MAX_PACKET: u32 = 512;
const SS_MAX_BURST: u32 = 16;
const SS_INTERRUPT_PACKETS_PER_INTERVAL: u32 = 3;
const SS_ISOCHRONOUS_MULT: u32 = 3;

/// The ceiling of one endpoint of one transfer type at one speed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferCeiling {
    pub speed: UsbSpeed,
    pub transfer: TransferType,
    /// Largest packet, bytes (None: this transfer type is not allowed at this speed).
    pub max_packet: Option<u32>,
    /// Packets per service interval (frame or microframe), when the protocol fixes it.
    pub packets_per_interval: Option<u32>,
    /// Burst (packets sent before an acknowledgement), SuperSpeed only.
    pub burst: Option<u32>,
    /// Service interval in microseconds (frame, microframe, polling interval).
    pub interval_us: Option<f64>,
    /// The ceiling, bytes per second (None: not allowed or not modelled).
    #[serde(rename = "bytes_per_sec", alias = "bytes_per_second")]
    pub bytes_per_second: Option<f64>,
    /// How the ceiling was derived, one sentence.
    pub basis: Cow<'static, str>,
}

fn per_interval(
    speed: UsbSpeed,
    transfer: TransferType,
    max_packet: u32,
    packets: u32,
    interval_s: f64,
    burst: Option<u32>,
    basis: &'static str,
) -> TransferCeiling {
    TransferCeiling {
        speed,
        transfer,
        max_packet: Some(max_packet),
        packets_per_interval: Some(packets),
        burst,
        interval_us: Some(interval_s * 1e6),
        bytes_per_second: Some(f64::from(max_packet) * f64::from(packets) / interval_s),
        basis: Cow::Borrowed(basis),
    }
}

fn not_allowed(speed: UsbSpeed, transfer: TransferType, basis: &'static str) -> TransferCeiling {
    TransferCeiling {
        speed,
        transfer,
        max_packet: None,
        packets_per_interval: None,
        burst: None,
        interval_us: None,
        bytes_per_second: None,
        basis: Cow::Borrowed(basis),
    }
}

/// Transactions of `payload` bytes plus `overhead` that fit a (micro)frame of `frame_bytes`.
fn transactions_per_frame(frame_bytes: f64, payload: u32, overhead: f64) -> u32 {
    // Truncation is the point: a transaction that does not fit is not started.
    (frame_bytes / (f64::from(payload) + overhead)).floor() as u32
}

/// SuperSpeed link-bound ceiling for packets of `max_packet` bytes: the link after line coding,
/// less packet framing, link commands and (at Gen 1) SKP ordered sets.
fn superspeed_link_bound(speed: UsbSpeed, max_packet: u32) -> f64 {
    let skp = match speed.line_coding() {
        LineCoding::B8b10b => SS_GEN1_SKP_SHARE,
        _ => 0.0,
    };
    let packet = f64::from(max_packet);
    raw_bps(speed)
        * packet_efficiency(
            packet,
            SS_DATA_PACKET_OVERHEAD + SS_LINK_COMMANDS_PER_PACKET,
        )
        * (1.0 - skp)
}

/// The protocol ceiling of one endpoint.
pub fn transfer_ceiling(speed: UsbSpeed, transfer: TransferType) -> TransferCeiling {
    use TransferType::*;
    use UsbSpeed::*;
    match (speed, transfer) {
        (Low, Control) => TransferCeiling {
            max_packet: Some(8),
            ..not_allowed(
                speed,
                transfer,
                "8 B packets ([usb2] 5.5.3); the low-speed control ceiling is not modelled",
            )
        },
        (Low, Interrupt) => per_interval(
            speed,
            transfer,
            8,
            1,
            LOW_SPEED_MIN_INTERVAL_S,
            None,
            "8 B every 10 ms at most ([usb2] 5.7.3, 5.7.4)",
        ),
        (Low, Bulk | Isochronous) => not_allowed(
            speed,
            transfer,
            "not allowed at low speed ([usb2] 5.6.3, 5.8.3)",
        ),
        (Full, Control) => {
            let n = transactions_per_frame(1500.0, 64, FS_CONTROL_OVERHEAD);
            per_interval(
                speed,
                transfer,
                64,
                n,
                FRAME_S,
                None,
                "64 B transactions that fit a 1500 B frame with 45 B overhead each ([usb2] 5.5.4)",
            )
        }
        (Full, Interrupt) => per_interval(
            speed,
            transfer,
            64,
            1,
            FRAME_S,
            None,
            "one 64 B transaction per 1 ms frame per endpoint ([usb2] 5.7.3, 5.7.4)",
        ),
        (Full, Bulk) => {
            let n = transactions_per_frame(1500.0, 64, FS_BULK_OVERHEAD);
            per_interval(
                speed,
                transfer,
                64,
                n,
                FRAME_S,
                None,
                "64 B transactions that fit a 1500 B frame with 13 B overhead each ([usb2] 5.8.4)",
            )
        }
        (Full, Isochronous) => per_interval(
            speed,
            transfer,
            1023,
            1,
            FRAME_S,
            None,
            "one 1023 B transaction per 1 ms frame per endpoint ([usb2] 5.6.3)",
        ),
        (High, Control) => {
            let n = transactions_per_frame(7500.0, 64, HS_CONTROL_OVERHEAD);
            per_interval(
                speed,
                transfer,
                64,
                n,
                MICROFRAME_S,
                None,
                "64 B transactions that fit a 7500 B microframe with 173 B overhead each \
                 ([usb2] 5.5.4)",
            )
        }
        (High, Interrupt | Isochronous) => per_interval(
            speed,
            transfer,
            1024,
            3,
            MICROFRAME_S,
            None,
            "3 transactions of 1024 B per 125 us microframe (high-bandwidth endpoint, [usb2] \
             5.9)",
        ),
        (High, Bulk) => {
            let n = transactions_per_frame(7500.0, 512, HS_BULK_OVERHEAD);
            per_interval(
                speed,
                transfer,
                512,
                n,
                MICROFRAME_S,
                None,
                "512 B transactions that fit a 7500 B microframe with 55 B overhead each \
                 ([usb2] 5.8.4)",
            )
        }
        (Usb4_20 | Usb4_40, _) => not_allowed(
            speed,
            transfer,
            "USB4 tunnels USB 3.x, PCIe and DisplayPort; a USB device behind it gets the \
             ceiling of its tunnelled USB 3.x speed",
        ),
        (_, Control) => TransferCeiling {
            max_packet: Some(SS_CONTROL_MAX_PACKET),
            packets_per_interval: None,
            burst: Some(1),
            interval_us: None,
            bytes_per_second: Some(superspeed_link_bound(speed, SS_CONTROL_MAX_PACKET)),
            speed,
            transfer,
            basis: Cow::Borrowed(
                "512 B packets, burst 1, bound by the link (in practice by the round trip \
                    per packet) ([usb32] 9.6.6, 8.12.2)",
            ),
        },
        (_, Bulk) => TransferCeiling {
            max_packet: Some(SS_MAX_PACKET),
            packets_per_interval: None,
            burst: Some(SS_MAX_BURST),
            interval_us: None,
            bytes_per_second: Some(superspeed_link_bound(speed, SS_MAX_PACKET)),
            speed,
            transfer,
            basis: Cow::Borrowed(
                "1024 B packets in bursts of up to 16, bound by the link: 32 B framing per \
                    packet, 16 B of link commands per ACK, SKP at Gen 1 ([usb32] 7.2, 8.4)",
            ),
        },
        (_, Interrupt) => TransferCeiling {
            burst: Some(SS_INTERRUPT_PACKETS_PER_INTERVAL),
            ..per_interval(
                speed,
                transfer,
                SS_MAX_PACKET,
                SS_INTERRUPT_PACKETS_PER_INTERVAL,
                MICROFRAME_S,
                None,
                "3 packets of 1024 B per 125 us service interval ([usb32] 9.6.7)",
            )
        },
        (Gen1, Isochronous) => TransferCeiling {
            burst: Some(SS_MAX_BURST),
            ..per_interval(
                speed,
                transfer,
                SS_MAX_PACKET,
                SS_MAX_BURST * SS_ISOCHRONOUS_MULT,
                MICROFRAME_S,
                None,
                "16 (burst) x 3 (Mult) packets of 1024 B per 125 us service interval \
                 ([usb32] 9.6.7)",
            )
        },
        (_, Isochronous) => TransferCeiling {
            max_packet: Some(SS_MAX_PACKET),
            packets_per_interval: None,
            burst: Some(SS_MAX_BURST),
            interval_us: Some(MICROFRAME_S * 1e6),
            bytes_per_second: Some(superspeed_link_bound(speed, SS_MAX_PACKET)),
            speed,
            transfer,
            basis: Cow::Borrowed(
                "SuperSpeedPlus isochronous companion descriptor lifts the 48 KiB per \
                    interval limit ([usb32] 9.6.8): bound by the link",
            ),
        },
    }
}

/// Bulk ceiling of a device from its sysfs `speed` (Mb/s) and `rx_lanes`, bytes/s. None for
/// low speed (no bulk endpoints) or an unknown speed.
pub fn bulk_ceiling_for_sysfs(speed_mbps: f64, lanes: u8) -> Option<f64> {
    let speed = UsbSpeed::from_sysfs(speed_mbps, lanes)?;
    transfer_ceiling(speed, TransferType::Bulk).bytes_per_second
}

/// The "mega" a printed figure of the guide uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mega {
    /// 10^6 bytes.
    #[serde(rename = "10^6")]
    Si,
    /// 2^20 bytes.
    #[serde(rename = "2^20")]
    Binary,
}

/// A figure of the guide's table 1-2, with the unit that reproduces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuideFigure {
    pub speed: UsbSpeed,
    pub transfer: TransferType,
    /// As printed (in "MBps"), question mark included.
    pub printed: Cow<'static, str>,
    /// Our ceiling, bytes/s.
    #[serde(rename = "bytes_per_sec", alias = "bytes_per_second")]
    pub bytes_per_second: f64,
    /// The unit that reproduces the printed digits (None: neither does).
    pub mega: Option<Mega>,
    /// How the printed digits come out of our number.
    pub note: String,
}

/// The guide's table 1-2 ("Max Transfer Speed"), in the order printed.
const GUIDE_TABLE_1_2: [(UsbSpeed, TransferType, &str); 6] = [
    (UsbSpeed::High, TransferType::Interrupt, "23.44"),
    (UsbSpeed::High, TransferType::Bulk, "53.25"),
    (UsbSpeed::High, TransferType::Isochronous, "23.44"),
    (UsbSpeed::Gen1, TransferType::Interrupt, "23.44"),
    (UsbSpeed::Gen1, TransferType::Bulk, "400?"),
    (UsbSpeed::Gen1, TransferType::Isochronous, "375.04"),
];

/// Whether `value` prints as `printed` (same number of decimals, rounded).
fn prints_as(value: f64, printed: &str) -> bool {
    let decimals = printed.split('.').nth(1).map_or(0, str::len);
    format!("{value:.decimals$}") == printed
}

/// Which unit reproduces each figure of the guide's table 1-2, found by computing, not
/// assumed: 10^6, 2^20, or neither (then the note says how the guide got its digits).
pub fn guide_table_1_2() -> Vec<GuideFigure> {
    GUIDE_TABLE_1_2
        .iter()
        .map(|&(speed, transfer, printed)| {
            let c = transfer_ceiling(speed, transfer);
            let bps = c.bytes_per_second.unwrap_or(0.0);
            let (mega, note) = if prints_as(bps / MB, printed) {
                (Some(Mega::Si), format!("{:.3} x 10^6 B/s", bps / MB))
            } else if prints_as(bps / MIB, printed) {
                (Some(Mega::Binary), format!("{:.4} x 2^20 B/s", bps / MIB))
            } else {
                (None, unexplained_note(&c, printed))
            };
            GuideFigure {
                speed,
                transfer,
                printed: Cow::Borrowed(printed),
                bytes_per_second: bps,
                mega,
                note,
            }
        })
        .collect()
}

/// Why a figure matches neither unit: the isochronous one is the high-speed figure rounded
/// to 23.44 (2^20) and then multiplied by the burst of 16; the bulk one is printed with a
/// question mark in the guide and matches no derivation.
fn unexplained_note(c: &TransferCeiling, printed: &str) -> String {
    let bps = c.bytes_per_second.unwrap_or(0.0);
    let per_burst_packet = bps / f64::from(c.burst.unwrap_or(1));
    let rounded = (per_burst_packet / MIB * 100.0).round() / 100.0;
    let times_burst = rounded * f64::from(c.burst.unwrap_or(1));
    if c.burst.is_some_and(|b| b > 1) && prints_as(times_burst, printed) {
        format!(
            "2^20: exact {:.2} x 2^20 B/s; the guide multiplied the rounded {rounded:.2} by the \
             burst of {}",
            bps / MIB,
            c.burst.unwrap_or(1)
        )
    } else {
        format!(
            "neither: the guide's \"{printed}\" (its question mark) matches no derivation; \
             ceiling {:.1} x 10^6 = {:.1} x 2^20 B/s",
            bps / MB,
            bps / MIB
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bps(speed: UsbSpeed, t: TransferType) -> f64 {
        transfer_ceiling(speed, t).bytes_per_second.unwrap()
    }

    #[test]
    fn guide_table_1_1_signalling_rates() {
        // Rockchip USB guide, table 1-1: 1.5 Mbps, 12 Mbps, 480 Mbps, 5 Gbps, 10 Gbps.
        let rates: Vec<f64> = [UsbSpeed::Low, UsbSpeed::Full, UsbSpeed::High]
            .into_iter()
            .chain([UsbSpeed::Gen1, UsbSpeed::Gen2])
            .map(UsbSpeed::total_mbps)
            .collect();
        assert_eq!(rates, [1.5, 12.0, 480.0, 5000.0, 10_000.0]);
        assert_eq!(raw_bps(UsbSpeed::Gen1), 500e6);
        assert!((raw_bps(UsbSpeed::Gen2) - 1_212_121_212.1).abs() < 1.0);
        assert!((raw_bps(UsbSpeed::Usb4_40) - 2.0 * 20e9 * 128.0 / 132.0 / 8.0).abs() < 1.0);
    }

    #[test]
    fn guide_table_1_2_high_speed() {
        // 53.25 MBps bulk is 10^6: 13 x 512 B x 8000 microframes.
        let bulk = bps(UsbSpeed::High, TransferType::Bulk);
        assert_eq!(bulk, 53_248_000.0);
        assert_eq!(format!("{:.2}", bulk / MB), "53.25");
        // 23.44 MBps interrupt and isochronous are 2^20: 3 x 1024 B x 8000.
        for t in [TransferType::Interrupt, TransferType::Isochronous] {
            let v = bps(UsbSpeed::High, t);
            assert_eq!(v, 24_576_000.0);
            assert_eq!(format!("{:.2}", v / MIB), "23.44");
            assert_ne!(format!("{:.2}", v / MB), "23.44");
        }
    }

    #[test]
    fn guide_table_1_2_superspeed_isochronous() {
        // 375.04 MBps: 16 x 3 x 1024 B x 8000 = 393.216 MB/s = 375.00 MiB/s exactly; the
        // guide's .04 is 16 x 23.44.
        let v = bps(UsbSpeed::Gen1, TransferType::Isochronous);
        assert_eq!(v, 393_216_000.0);
        assert_eq!(format!("{:.2}", v / MIB), "375.00");
        let figures = guide_table_1_2();
        let iso = figures
            .iter()
            .find(|f| f.speed == UsbSpeed::Gen1 && f.transfer == TransferType::Isochronous)
            .unwrap();
        assert_eq!(iso.mega, None);
        assert!(
            iso.note.contains("rounded 23.44 by the burst of 16"),
            "{}",
            iso.note
        );
    }

    #[test]
    fn guide_units_are_found_by_computation() {
        let units: Vec<(UsbSpeed, TransferType, Option<Mega>)> = guide_table_1_2()
            .into_iter()
            .map(|f| (f.speed, f.transfer, f.mega))
            .collect();
        use TransferType::*;
        use UsbSpeed::*;
        assert_eq!(
            units,
            [
                (High, Interrupt, Some(Mega::Binary)),
                (High, Bulk, Some(Mega::Si)),
                (High, Isochronous, Some(Mega::Binary)),
                (Gen1, Interrupt, Some(Mega::Binary)),
                (Gen1, Bulk, None),
                (Gen1, Isochronous, None),
            ]
        );
    }

    #[test]
    fn full_and_low_speed() {
        // [usb2] 5.8.4: 19 bulk transactions of 64 B per frame = 1.216 MB/s.
        assert_eq!(bps(UsbSpeed::Full, TransferType::Bulk), 1_216_000.0);
        assert_eq!(bps(UsbSpeed::Full, TransferType::Isochronous), 1_023_000.0);
        assert_eq!(bps(UsbSpeed::Full, TransferType::Control), 832_000.0);
        assert_eq!(bps(UsbSpeed::High, TransferType::Control), 15_872_000.0);
        assert_eq!(bps(UsbSpeed::Low, TransferType::Interrupt), 800.0);
        assert_eq!(
            transfer_ceiling(UsbSpeed::Low, TransferType::Bulk).bytes_per_second,
            None
        );
    }

    #[test]
    fn superspeed_bulk() {
        // 500 MB/s x 1024 / (1024 + 32 + 16) x (1 - 2/354).
        let expected = 500e6 * 1024.0 / 1072.0 * (1.0 - 2.0 / 354.0);
        assert!((bps(UsbSpeed::Gen1, TransferType::Bulk) - expected).abs() < 1.0);
        assert_eq!(format!("{:.1}", expected / MB), "474.9");
        let gen2x2 = bps(UsbSpeed::Gen2x2, TransferType::Bulk);
        assert!((gen2x2 - 2.0 * bps(UsbSpeed::Gen2, TransferType::Bulk)).abs() < 1.0);
    }

    #[test]
    fn sysfs_speeds() {
        assert_eq!(UsbSpeed::from_sysfs(480.0, 1), Some(UsbSpeed::High));
        assert_eq!(UsbSpeed::from_sysfs(10_000.0, 1), Some(UsbSpeed::Gen2));
        assert_eq!(UsbSpeed::from_sysfs(10_000.0, 2), Some(UsbSpeed::Gen1x2));
        assert_eq!(UsbSpeed::from_sysfs(20_000.0, 2), Some(UsbSpeed::Gen2x2));
        assert_eq!(UsbSpeed::from_sysfs(42.0, 1), None);
        assert_eq!(bulk_ceiling_for_sysfs(480.0, 1), Some(53_248_000.0));
        assert_eq!(bulk_ceiling_for_sysfs(1.5, 1), None);
    }
}
