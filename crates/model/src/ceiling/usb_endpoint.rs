//! The bandwidth a periodic USB endpoint reserves: what its descriptors declare per service
//! interval, and how long that interval is. Interrupt and isochronous endpoints get their
//! bandwidth reserved by the host when the interface's alternate setting is selected (USB 2.0
//! section 5.7.4 and 5.6.4: the host refuses a configuration whose periodic bandwidth does not
//! fit); what they may move is fixed by their descriptors, whatever the link could carry.
//!
//! Sources (the constants below cite their section):
//! - [usb2]: Universal Serial Bus Specification, Revision 2.0 (2000), section 9.6.6 (endpoint
//!   descriptor, table 9-13: bmAttributes, wMaxPacketSize bits 10..0 and 12..11, bInterval),
//!   table 9-14 (the wMaxPacketSize ranges of high-bandwidth endpoints), 5.6.3, 5.7.3 (largest
//!   packets per speed).
//! - [usb32]: Universal Serial Bus 3.2 Specification (2017), section 9.6.6 (bInterval at
//!   SuperSpeed), 9.6.7 (SuperSpeed endpoint companion, table 9-27: bMaxBurst, bmAttributes
//!   Mult and SSP ISO Companion, wBytesPerInterval), 9.6.8 (SuperSpeedPlus isochronous
//!   endpoint companion, table 9-28: dwBytesPerInterval).

use super::usb::{TransferType, UsbSpeed};
use serde::{Deserialize, Serialize};

/// [usb2] table 9-5: descriptor types.
pub const DESCRIPTOR_CONFIGURATION: u8 = 2;
pub const DESCRIPTOR_INTERFACE: u8 = 4;
pub const DESCRIPTOR_ENDPOINT: u8 = 5;
/// [usb32] table 9-6: SUPERSPEED_USB_ENDPOINT_COMPANION (48) and
/// SUPERSPEEDPLUS_ISOCHRONOUS_ENDPOINT_COMPANION (49).
pub const DESCRIPTOR_SS_ENDPOINT_COMPANION: u8 = 48;
pub const DESCRIPTOR_SSP_ISOCHRONOUS_COMPANION: u8 = 49;

/// [usb2] section 5.3 / 5.6.4: a full-speed frame lasts 1 ms, a high-speed (and SuperSpeed,
/// [usb32] 9.6.6) bus interval 125 us.
const FRAME_US: f64 = 1000.0;
const MICROFRAME_US: f64 = 125.0;

/// Which way an endpoint moves data ([usb2] table 9-13, bEndpointAddress bit 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Device to host.
    In,
    /// Host to device.
    Out,
}

impl Direction {
    pub fn label(self) -> &'static str {
        match self {
            Direction::In => "IN",
            Direction::Out => "OUT",
        }
    }
}

/// The SuperSpeed endpoint companion's fields ([usb32] table 9-27).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsCompanion {
    /// bMaxBurst: packets the endpoint sends or receives in a burst, less one (0..15).
    pub max_burst: u8,
    /// bmAttributes as declared (isochronous: bits 1..0 Mult, bit 7 SSP ISO Companion).
    pub attributes: u8,
    /// wBytesPerInterval: the bytes a periodic endpoint moves per service interval.
    pub bytes_per_interval: u16,
}

impl SsCompanion {
    /// [usb32] table 9-27: for isochronous endpoints bits 1..0 are Mult, the packets per
    /// burst less one (0..2: up to 3 bursts per service interval).
    pub fn mult(self) -> u8 {
        self.attributes & 0x03
    }

    /// [usb32] table 9-27, bit 7: a SuperSpeedPlus isochronous endpoint companion follows
    /// and its dwBytesPerInterval replaces wBytesPerInterval (Mult is then ignored).
    pub fn ssp_companion_follows(self) -> bool {
        self.attributes & 0x80 != 0
    }
}

/// One endpoint descriptor with the companions that follow it, as declared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbEndpoint {
    /// bEndpointAddress: number in bits 3..0, direction in bit 7.
    pub address: u8,
    pub transfer: TransferType,
    pub direction: Direction,
    /// wMaxPacketSize bits 10..0: the largest packet, bytes.
    pub max_packet: u16,
    /// wMaxPacketSize bits 12..11: additional transactions per microframe of a high-speed
    /// periodic endpoint (0..2; 3 is reserved).
    pub additional_transactions: u8,
    /// bInterval as declared.
    pub interval: u8,
    /// The SuperSpeed endpoint companion, when one follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ss_companion: Option<SsCompanion>,
    /// dwBytesPerInterval of the SuperSpeedPlus isochronous companion, when one follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssp_bytes_per_interval: Option<u32>,
    /// What it reserves at the device's speed (interrupt and isochronous endpoints, once
    /// [`UsbEndpoint::at_speed`] has worked it out; the descriptors themselves say nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<Reserved>,
}

impl UsbEndpoint {
    /// Decode the 7 bytes of an endpoint descriptor ([usb2] table 9-13). `None` when it is not
    /// one or is shorter.
    pub fn from_descriptor(d: &[u8]) -> Option<UsbEndpoint> {
        if d.len() < 7 || usize::from(d[0]) < 7 || d[1] != DESCRIPTOR_ENDPOINT {
            return None;
        }
        let address = d[2];
        // bmAttributes bits 1..0: 00 control, 01 isochronous, 10 bulk, 11 interrupt.
        let transfer = match d[3] & 0x03 {
            0 => TransferType::Control,
            1 => TransferType::Isochronous,
            2 => TransferType::Bulk,
            _ => TransferType::Interrupt,
        };
        let w_max_packet = u16::from_le_bytes([d[4], d[5]]);
        Some(UsbEndpoint {
            address,
            transfer,
            direction: if address & 0x80 != 0 {
                Direction::In
            } else {
                Direction::Out
            },
            max_packet: w_max_packet & 0x07ff,
            additional_transactions: ((w_max_packet >> 11) & 0x03) as u8,
            interval: d[6],
            ss_companion: None,
            ssp_bytes_per_interval: None,
            reserved: None,
        })
    }

    /// The endpoint with what it reserves at `speed` (`None` when the speed is not known).
    pub fn at_speed(mut self, speed: Option<UsbSpeed>) -> UsbEndpoint {
        self.reserved = speed.and_then(|s| reserved(s, &self));
        self
    }

    /// The endpoint number (bEndpointAddress bits 3..0).
    pub fn number(&self) -> u8 {
        self.address & 0x0f
    }

    /// Whether the host reserves bandwidth for it (interrupt and isochronous endpoints).
    pub fn is_periodic(&self) -> bool {
        matches!(
            self.transfer,
            TransferType::Interrupt | TransferType::Isochronous
        )
    }

    /// Attach a SuperSpeed endpoint companion ([usb32] table 9-27: 6 bytes).
    pub fn add_ss_companion(&mut self, d: &[u8]) {
        if d.len() >= 6 && d[1] == DESCRIPTOR_SS_ENDPOINT_COMPANION {
            self.ss_companion = Some(SsCompanion {
                max_burst: d[2],
                attributes: d[3],
                bytes_per_interval: u16::from_le_bytes([d[4], d[5]]),
            });
        }
    }

    /// Attach a SuperSpeedPlus isochronous endpoint companion ([usb32] table 9-28: 8 bytes,
    /// dwBytesPerInterval at offset 4).
    pub fn add_ssp_companion(&mut self, d: &[u8]) {
        if d.len() >= 8 && d[1] == DESCRIPTOR_SSP_ISOCHRONOUS_COMPANION {
            self.ssp_bytes_per_interval = Some(u32::from_le_bytes([d[4], d[5], d[6], d[7]]));
        }
    }
}

/// What one periodic endpoint reserves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reserved {
    /// Packets (transactions) per service interval.
    pub packets_per_interval: u32,
    /// Bytes per service interval.
    pub bytes_per_interval: u32,
    /// The service interval, microseconds.
    pub interval_us: f64,
    #[serde(rename = "bytes_per_sec")]
    pub bytes_per_second: f64,
    /// How the figure was derived, one line (the fields and the spec's sections).
    pub basis: String,
    /// What the descriptors declare that the specification does not allow, if anything (the
    /// figure is still what they declare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_spec: Option<String>,
}

/// The service interval of a periodic endpoint at a speed, microseconds, with its
/// derivation. `None` for bInterval 0 or a transfer type that has none.
fn service_interval(speed: UsbSpeed, ep: &UsbEndpoint) -> Option<(f64, String)> {
    let b = ep.interval;
    if b == 0 {
        return None;
    }
    // [usb2] table 9-13: full/high-speed isochronous and high-speed interrupt endpoints (and
    // every SuperSpeed periodic endpoint, [usb32] 9.6.6) are served every 2^(bInterval-1)
    // (micro)frames, bInterval 1..16; full/low-speed interrupt endpoints every bInterval
    // frames (1..255).
    let exponent = u32::from(b.min(16) - 1);
    let power = 1u32 << exponent;
    match (speed, ep.transfer) {
        (UsbSpeed::Low | UsbSpeed::Full, TransferType::Interrupt) => Some((
            f64::from(b) * FRAME_US,
            format!("every bInterval {b} frames of 1 ms"),
        )),
        (UsbSpeed::Low | UsbSpeed::Full, TransferType::Isochronous) => Some((
            f64::from(power) * FRAME_US,
            every(b, power, "frame", "1 ms"),
        )),
        (_, TransferType::Interrupt | TransferType::Isochronous) => Some((
            f64::from(power) * MICROFRAME_US,
            every(b, power, "microframe", "125 us"),
        )),
        _ => None,
    }
}

/// `every microframe of 125 us (bInterval 1)`, `every 2^(4-1) = 8 frames of 1 ms`.
fn every(b: u8, power: u32, unit: &str, length: &str) -> String {
    if power == 1 {
        format!("every {unit} of {length} (bInterval 1)")
    } else {
        format!("every 2^({b}-1) = {power} {unit}s of {length}")
    }
}

/// The largest packet each speed allows a periodic endpoint ([usb2] 5.6.3 and 5.7.3; [usb32]
/// 9.6.6: 1024 B at SuperSpeed).
fn largest_packet(speed: UsbSpeed, transfer: TransferType) -> u16 {
    match (speed, transfer) {
        (UsbSpeed::Low, _) => 8,
        (UsbSpeed::Full, TransferType::Interrupt) => 64,
        (UsbSpeed::Full, _) => 1023,
        _ => 1024,
    }
}

/// The bandwidth one endpoint reserves at the device's speed: packets per service interval
/// times their size, over the interval. `None` for bulk and control endpoints, a bInterval of
/// 0, or a speed without periodic transfers (USB4 tunnels carry USB 3.x speeds).
pub fn reserved(speed: UsbSpeed, ep: &UsbEndpoint) -> Option<Reserved> {
    if !ep.is_periodic() || matches!(speed, UsbSpeed::Usb4_20 | UsbSpeed::Usb4_40) {
        return None;
    }
    let (interval_us, interval_words) = service_interval(speed, ep)?;
    let mut out_of_spec = Vec::new();
    let maxp = u32::from(ep.max_packet);
    if ep.max_packet > largest_packet(speed, ep.transfer) {
        out_of_spec.push(format!(
            "wMaxPacketSize {} B is above the {} B the speed allows",
            ep.max_packet,
            largest_packet(speed, ep.transfer)
        ));
    }
    let (packets, bytes, how) = if speed.is_superspeed() {
        superspeed_bytes(ep, maxp, &mut out_of_spec)
    } else {
        // [usb2] table 9-13, bits 12..11: 0, 1 or 2 additional transactions per microframe
        // for high-speed isochronous and interrupt endpoints only (5.9, high-bandwidth
        // endpoints); 3 is reserved. Table 9-14 sets the wMaxPacketSize range of each:
        // 1-1024 B for one, 513-1024 for two, 683-1024 for three.
        let extra = ep.additional_transactions;
        let n = match speed {
            UsbSpeed::High => {
                if extra == 3 {
                    out_of_spec.push("wMaxPacketSize bits 12..11 are 11 (reserved)".into());
                }
                u32::from(extra.min(2)) + 1
            }
            _ => {
                if extra != 0 {
                    out_of_spec.push(
                        "additional transactions (wMaxPacketSize bits 12..11) below high speed"
                            .into(),
                    );
                }
                1
            }
        };
        let lowest = match n {
            2 => 513,
            3 => 683,
            _ => 1,
        };
        if n > 1 && maxp < lowest {
            out_of_spec.push(format!(
                "{n} transactions of {maxp} B: table 9-14 of USB 2.0 asks {lowest}-1024 B"
            ));
        }
        let how = if n > 1 {
            format!("{n} x {maxp} B (high-bandwidth, USB 2.0 9.6.6 table 9-13)")
        } else {
            format!("{maxp} B (USB 2.0 9.6.6)")
        };
        (n, n * maxp, how)
    };
    Some(Reserved {
        packets_per_interval: packets,
        bytes_per_interval: bytes,
        interval_us,
        bytes_per_second: f64::from(bytes) / (interval_us * 1e-6),
        basis: format!("{how} {interval_words}"),
        out_of_spec: (!out_of_spec.is_empty()).then(|| out_of_spec.join("; ")),
    })
}

/// Packets and bytes per service interval of a SuperSpeed periodic endpoint.
fn superspeed_bytes(
    ep: &UsbEndpoint,
    maxp: u32,
    out_of_spec: &mut Vec<String>,
) -> (u32, u32, String) {
    let Some(c) = ep.ss_companion else {
        // [usb32] 9.6.7: every SuperSpeed endpoint has a companion; without one the kernel
        // (drivers/usb/core/config.c) takes bMaxBurst 0 and wBytesPerInterval wMaxPacketSize.
        out_of_spec.push("no SuperSpeed endpoint companion descriptor".into());
        return (1, maxp, format!("{maxp} B (no companion)"));
    };
    let burst = u32::from(c.max_burst.min(15)) + 1;
    if c.max_burst > 15 {
        out_of_spec.push(format!("bMaxBurst {} is above 15", c.max_burst));
    }
    // [usb32] table 9-27: Mult applies to isochronous endpoints only (0..2); interrupt
    // endpoints burst at most 3 packets (bMaxBurst 0..2).
    let mult = match ep.transfer {
        TransferType::Isochronous if !c.ssp_companion_follows() => {
            if c.mult() > 2 {
                out_of_spec.push("Mult 3 is reserved".into());
            }
            u32::from(c.mult().min(2)) + 1
        }
        _ => 1,
    };
    if ep.transfer == TransferType::Interrupt && burst > 3 {
        out_of_spec.push(format!("an interrupt endpoint with a burst of {burst}"));
    }
    let packets = burst * mult;
    let most = packets * maxp;
    // [usb32] 9.6.8: with the SSP ISO Companion bit set, dwBytesPerInterval is what the
    // endpoint moves per interval; otherwise wBytesPerInterval (9.6.7), which may not exceed
    // what its packets carry.
    if c.ssp_companion_follows() {
        if let Some(b) = ep.ssp_bytes_per_interval {
            let packets = b.div_ceil(maxp.max(1));
            return (
                packets,
                b,
                format!("dwBytesPerInterval {b} B (SuperSpeedPlus isochronous companion, USB 3.2 9.6.8)"),
            );
        }
        out_of_spec.push("SSP ISO Companion set, but no such descriptor follows".into());
    }
    let declared = u32::from(c.bytes_per_interval);
    let structure = if mult > 1 {
        format!("burst {burst} x Mult {mult} x {maxp} B")
    } else {
        format!("burst {burst} x {maxp} B")
    };
    if declared == 0 {
        out_of_spec.push("wBytesPerInterval 0".into());
        return (
            packets,
            most,
            format!("{structure} (USB 3.2 9.6.7; wBytesPerInterval 0)"),
        );
    }
    if declared > most {
        out_of_spec.push(format!(
            "wBytesPerInterval {declared} B is above the {most} B of its packets"
        ));
    }
    (
        packets,
        declared,
        format!("wBytesPerInterval {declared} B of {structure} (USB 3.2 9.6.7)"),
    )
}

/// What an interface's isochronous endpoints reserve together: the figure of one alternate
/// setting, the sum over its isochronous endpoints (a camera has one; an audio interface may
/// have a data and a feedback endpoint). `None` when it has none (alternate setting 0 of a
/// UVC or audio streaming interface reserves nothing, [usb2] 5.6.3 and the UVC 1.5 spec
/// section 2.4.3).
pub fn isochronous_reserved(speed: UsbSpeed, endpoints: &[UsbEndpoint]) -> Option<Reserved> {
    let each: Vec<(&UsbEndpoint, Reserved)> = endpoints
        .iter()
        .filter(|e| e.transfer == TransferType::Isochronous)
        .filter_map(|e| Some((e, reserved(speed, e)?)))
        .collect();
    match each.as_slice() {
        [] => None,
        [(_, one)] => Some(one.clone()),
        many => {
            let bytes_per_second = many.iter().map(|(_, r)| r.bytes_per_second).sum();
            let basis = many
                .iter()
                .map(|(e, r)| format!("endpoint 0x{:02x}: {}", e.address, r.basis))
                .collect::<Vec<_>>()
                .join("; ");
            let out: Vec<String> = many
                .iter()
                .filter_map(|(e, r)| {
                    Some(format!("0x{:02x}: {}", e.address, r.out_of_spec.as_ref()?))
                })
                .collect();
            let shortest = many
                .iter()
                .map(|(_, r)| r.interval_us)
                .fold(f64::INFINITY, f64::min);
            Some(Reserved {
                packets_per_interval: many.iter().map(|(_, r)| r.packets_per_interval).sum(),
                bytes_per_interval: many.iter().map(|(_, r)| r.bytes_per_interval).sum(),
                interval_us: shortest,
                bytes_per_second,
                basis,
                out_of_spec: (!out.is_empty()).then(|| out.join("; ")),
            })
        }
    }
}

/// One alternate setting of an interface, from the raw descriptors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlternateSetting {
    /// bConfigurationValue of the configuration it belongs to.
    pub configuration: u8,
    /// bInterfaceNumber.
    pub interface: u8,
    /// bAlternateSetting.
    pub alt_setting: u8,
    pub class: u8,
    pub subclass: u8,
    pub protocol: u8,
    pub endpoints: Vec<UsbEndpoint>,
}

/// Every alternate setting of every interface in a device's raw descriptors (the sysfs
/// `descriptors` file: the device descriptor, then each configuration's descriptors in the
/// order the device sent them, [usb2] 9.4.3 and 9.6). Endpoints belong to the interface
/// descriptor before them; a SuperSpeed companion to the endpoint before it, a
/// SuperSpeedPlus isochronous companion to the SuperSpeed companion before it ([usb32]
/// 9.6.7, 9.6.8). Class-specific and other descriptors are skipped; the walk stops at a
/// descriptor whose bLength is below 2 or runs past the end (what the kernel's
/// drivers/usb/core/config.c also refuses). The number of descriptors is bounded by the
/// file's length.
pub fn alternate_settings(raw: &[u8]) -> Vec<AlternateSetting> {
    let mut out: Vec<AlternateSetting> = Vec::new();
    let mut configuration = 0u8;
    let mut in_interface = false;
    let mut at = 0usize;
    while let Some(d) = raw.get(at..) {
        let Some(&len) = d.first() else { break };
        let len = usize::from(len);
        if len < 2 || d.len() < len {
            break;
        }
        let d = &d[..len];
        at += len;
        match d[1] {
            DESCRIPTOR_CONFIGURATION if len >= 9 => {
                configuration = d[5];
                in_interface = false;
            }
            DESCRIPTOR_INTERFACE if len >= 9 => {
                in_interface = true;
                out.push(AlternateSetting {
                    configuration,
                    interface: d[2],
                    alt_setting: d[3],
                    class: d[5],
                    subclass: d[6],
                    protocol: d[7],
                    endpoints: Vec::new(),
                });
            }
            DESCRIPTOR_ENDPOINT if in_interface => {
                if let (Some(ep), Some(alt)) = (UsbEndpoint::from_descriptor(d), out.last_mut()) {
                    alt.endpoints.push(ep);
                }
            }
            DESCRIPTOR_SS_ENDPOINT_COMPANION if in_interface => {
                if let Some(ep) = out.last_mut().and_then(|a| a.endpoints.last_mut()) {
                    if ep.ss_companion.is_none() {
                        ep.add_ss_companion(d);
                    }
                }
            }
            DESCRIPTOR_SSP_ISOCHRONOUS_COMPANION if in_interface => {
                if let Some(ep) = out.last_mut().and_then(|a| a.endpoints.last_mut()) {
                    if ep.ss_companion.is_some() && ep.ssp_bytes_per_interval.is_none() {
                        ep.add_ssp_companion(d);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(transfer: u8, w_max_packet: u16, interval: u8) -> UsbEndpoint {
        let [lo, hi] = w_max_packet.to_le_bytes();
        UsbEndpoint::from_descriptor(&[7, 5, 0x81, transfer, lo, hi, interval]).unwrap()
    }

    fn mbps(speed: UsbSpeed, e: &UsbEndpoint) -> f64 {
        reserved(speed, e).unwrap().bytes_per_second
    }

    #[test]
    fn high_bandwidth_isochronous_at_high_speed() {
        // USB 2.0 table 9-13: wMaxPacketSize 0x1400 = 1024 B with bits 12..11 = 10 (two
        // additional transactions): 3 x 1024 B every 125 us = 24.576 MB/s, the guide's
        // 23.44 MiB/s.
        let e = ep(0x05, 0x1400, 1);
        assert_eq!(e.max_packet, 1024);
        assert_eq!(e.additional_transactions, 2);
        let r = reserved(UsbSpeed::High, &e).unwrap();
        assert_eq!(r.packets_per_interval, 3);
        assert_eq!(r.bytes_per_interval, 3072);
        assert_eq!(r.bytes_per_second, 24_576_000.0);
        assert_eq!(r.out_of_spec, None);
        assert!(r.basis.contains("3 x 1024 B"), "{}", r.basis);
        // The same at bInterval 4: every 2^3 = 8 microframes (1 ms).
        assert_eq!(mbps(UsbSpeed::High, &ep(0x05, 0x1400, 4)), 3_072_000.0);
        // Two transactions of 512 B are below table 9-14's 513 B floor.
        let low = reserved(UsbSpeed::High, &ep(0x05, 0x0a00, 1)).unwrap();
        assert_eq!(low.bytes_per_second, 8_192_000.0);
        assert!(low.out_of_spec.unwrap().contains("513-1024"));
    }

    #[test]
    fn full_speed_isochronous_frame() {
        // USB 2.0 5.6.3: 1023 B per 1 ms frame = 1.023 MB/s.
        assert_eq!(mbps(UsbSpeed::Full, &ep(0x05, 1023, 1)), 1_023_000.0);
        // bInterval 2 at full speed: every 2 frames.
        assert_eq!(mbps(UsbSpeed::Full, &ep(0x01, 1023, 2)), 511_500.0);
    }

    #[test]
    fn superspeed_burst_and_mult() {
        // USB 3.2 9.6.7: bMaxBurst 15 (16 packets) x Mult 2 (3 bursts) x 1024 B =
        // 49,152 B per 125 us = 393.216 MB/s (375.0 MiB/s), the Gen 1 isochronous maximum.
        let mut e = ep(0x05, 1024, 1);
        e.add_ss_companion(&[6, 48, 15, 2, 0x00, 0xc0]);
        let r = reserved(UsbSpeed::Gen1, &e).unwrap();
        assert_eq!(r.packets_per_interval, 48);
        assert_eq!(r.bytes_per_interval, 49_152);
        assert_eq!(r.bytes_per_second, 393_216_000.0);
        assert_eq!(r.out_of_spec, None);
        assert!(
            r.basis.contains("burst 16 x Mult 3 x 1024 B"),
            "{}",
            r.basis
        );
        // wBytesPerInterval below the packets' sum is what is reserved (xHCI schedules it).
        e.add_ss_companion(&[6, 48, 15, 2, 0x00, 0x60]);
        assert_eq!(mbps(UsbSpeed::Gen1, &e), 196_608_000.0);
    }

    #[test]
    fn superspeedplus_isochronous_companion() {
        // USB 3.2 9.6.8: dwBytesPerInterval 98,304 B per 125 us = 786.432 MB/s, past the
        // 48 KiB that Mult allows.
        let mut e = ep(0x05, 1024, 1);
        e.add_ss_companion(&[6, 48, 15, 0x80, 0, 0]);
        e.add_ssp_companion(&[8, 49, 0, 0, 0x00, 0x80, 0x01, 0x00]);
        let r = reserved(UsbSpeed::Gen2, &e).unwrap();
        assert_eq!(r.bytes_per_interval, 98_304);
        assert_eq!(r.bytes_per_second, 786_432_000.0);
    }

    #[test]
    fn interrupt_endpoint_maxima() {
        // Low speed: 8 B every 10 ms (USB 2.0 5.7.4); full speed: 64 B every frame; high
        // speed: 3 x 1024 B every microframe; SuperSpeed: burst 3 x 1024 B every 125 us.
        assert_eq!(mbps(UsbSpeed::Low, &ep(0x03, 8, 10)), 800.0);
        assert_eq!(mbps(UsbSpeed::Full, &ep(0x03, 64, 1)), 64_000.0);
        assert_eq!(mbps(UsbSpeed::High, &ep(0x03, 0x1400, 1)), 24_576_000.0);
        let mut ss = ep(0x03, 1024, 1);
        ss.add_ss_companion(&[6, 48, 2, 0, 0x00, 0x0c]);
        assert_eq!(mbps(UsbSpeed::Gen1, &ss), 24_576_000.0);
        // A HID keyboard: 8 B every 10 frames at full speed = 800 B/s, 100 reports/s.
        let kbd = reserved(UsbSpeed::Full, &ep(0x03, 8, 10)).unwrap();
        assert_eq!(kbd.bytes_per_second, 800.0);
        assert_eq!(kbd.interval_us, 10_000.0);
        // Full-speed interrupt is bInterval frames, not a power of two.
        assert_eq!(mbps(UsbSpeed::Full, &ep(0x03, 64, 3)), 64_000.0 / 3.0);
        // A full-speed interrupt packet above 64 B is out of the specification.
        assert!(reserved(UsbSpeed::Full, &ep(0x03, 512, 1))
            .unwrap()
            .out_of_spec
            .is_some());
    }

    #[test]
    fn bulk_and_zero_interval_reserve_nothing() {
        assert_eq!(reserved(UsbSpeed::High, &ep(0x02, 512, 0)), None);
        assert_eq!(reserved(UsbSpeed::High, &ep(0x01, 1024, 0)), None);
    }

    #[test]
    fn alternate_settings_and_companions_are_walked() {
        let mut raw = vec![18, 1, 0x20, 3, 0xef, 2, 1, 9, 0, 0, 0, 0, 0, 1, 1, 2, 3, 1];
        raw.extend([9, 2, 0, 0, 2, 1, 0, 0x80, 0x32]);
        raw.extend([9, 4, 1, 0, 0, 0x0e, 2, 0, 0]); // VS alt 0: no endpoint
        raw.extend([9, 4, 1, 1, 1, 0x0e, 2, 0, 0]); // VS alt 1
        raw.extend([7, 0x25, 1, 0, 0, 0, 0]); // class-specific, skipped
        raw.extend([7, 5, 0x81, 0x05, 0x00, 0x04, 1]);
        raw.extend([6, 48, 15, 0x80, 0, 0]);
        raw.extend([8, 49, 0, 0, 0, 0x80, 1, 0]);
        let alts = alternate_settings(&raw);
        assert_eq!(alts.len(), 2);
        assert_eq!(alts[0].configuration, 1);
        assert!(alts[0].endpoints.is_empty());
        let e = &alts[1].endpoints[0];
        assert_eq!(e.direction, Direction::In);
        assert_eq!(e.number(), 1);
        assert_eq!(e.ssp_bytes_per_interval, Some(98_304));
        assert_eq!(
            isochronous_reserved(UsbSpeed::Gen2, &alts[1].endpoints)
                .unwrap()
                .bytes_per_second,
            786_432_000.0
        );
        // A truncated endpoint ends the walk instead of reading past the end.
        raw.truncate(raw.len() - 21);
        raw.extend([7, 5, 0x82]);
        assert!(alternate_settings(&raw)[1].endpoints.is_empty());
        // bLength 0 stops the walk (it would loop forever).
        assert_eq!(alternate_settings(&[0, 0, 9, 4]).len(), 0);
    }
}
