//! Ethernet goodput ceilings: TCP over IPv4/IPv6 with and without timestamps, and UDP for a
//! given datagram size, at a given MTU, from 10 Mb/s to 400 Gb/s.
//!
//! Sources: [802.3] IEEE 802.3-2018: clause 3.1.1 (preamble 7 B + SFD 1 B, MAC header
//! 6 + 6 + 2 B, FCS 4 B, minimum frame 64 B), 4.4.2 (inter-packet gap 96 bit times = 12 B;
//! at 10 Gb/s and above the deficit idle count keeps the average at 12 B, 46.3.1.4). The PCS
//! line code (4B/5B, 8b/10b, 64b/66b ...) runs above the MAC rate, so the MAC rate is the
//! raw ceiling. [RFC 791] IPv4 header 20 B without options; [RFC 8200] IPv6 header 40 B,
//! fragment header 8 B (section 4.5); [RFC 9293] TCP header 20 B; [RFC 7323] timestamps
//! option 10 B, padded to 12; [RFC 768] UDP header 8 B.

use crate::units::{BitsPerSec, BytesPerSec};
use serde::{Deserialize, Serialize};

const PREAMBLE_SFD: u32 = 8;
const MAC_HEADER: u32 = 14;
const FCS: u32 = 4;
const INTER_FRAME_GAP: u32 = 12;
/// Minimum frame, MAC header to FCS ([802.3] 3.1.1): shorter payloads are padded.
const MIN_FRAME: u32 = 64;
const IPV4_HEADER: u32 = 20;
const IPV6_HEADER: u32 = 40;
const IPV6_FRAGMENT_HEADER: u32 = 8;
const TCP_HEADER: u32 = 20;
const TCP_TIMESTAMPS: u32 = 12;
const UDP_HEADER: u32 = 8;
/// The largest UDP payload in one IPv4 datagram (65535 - 20 - 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;

/// The MAC rates of [802.3], bits per second, with their usual names. 200G and 400G are
/// IEEE 802.3bs-2017 (IEEE 802.3-2022 clauses 116 to 124): the same MAC (clause 4) at
/// 200 and 400 Gb/s; their PCS (clause 119) transcodes 64b/66b blocks into 256b/257b and
/// adds RS(544,514) FEC and alignment markers below the MAC rate, as the line codes of the
/// slower rates do, and the reconciliation sublayer (clause 117) keeps the average
/// inter-packet gap at 12 B with the deficit idle count, as 46.3.1.4 does at 10 Gb/s.
pub const RATES: [(&str, f64); 12] = [
    ("10M", 10e6),
    ("100M", 100e6),
    ("1G", 1e9),
    ("2.5G", 2.5e9),
    ("5G", 5e9),
    ("10G", 10e9),
    ("25G", 25e9),
    ("40G", 40e9),
    ("50G", 50e9),
    ("100G", 100e9),
    ("200G", 200e9),
    ("400G", 400e9),
];

/// The MAC rate named `name`: by its name ("1G", "10g", "100M"), or as sysfs `speed` and
/// ethtool print it, in Mb/s ("1000", "1000M", "1000Mb/s", "2500"), or in Gb/s ("2.5Gb/s").
/// `None` for a rate 802.3 does not define.
pub fn parse_rate(name: &str) -> Option<BitsPerSec> {
    let t = name.trim();
    if let Some(&(_, r)) = RATES.iter().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
        return Some(BitsPerSec(r));
    }
    let lower = t.to_ascii_lowercase();
    let number = lower
        .strip_suffix("b/s")
        .or_else(|| lower.strip_suffix("bps"))
        .unwrap_or(&lower);
    let (digits, scale) = match number.as_bytes().last() {
        Some(b'g') => (&number[..number.len() - 1], 1e9),
        Some(b'm') => (&number[..number.len() - 1], 1e6),
        _ => (number, 1e6),
    };
    let bits = digits.trim().parse::<f64>().ok()? * scale;
    RATES
        .iter()
        .find(|(_, r)| (r - bits).abs() < 1.0)
        .map(|&(_, r)| BitsPerSec(r))
}

/// The name of a MAC rate ("1G").
pub fn rate_name(rate: BitsPerSec) -> Option<&'static str> {
    RATES
        .iter()
        .find(|(_, r)| (r - rate.0).abs() < 1.0)
        .map(|&(n, _)| n)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IpVersion {
    #[serde(rename = "IPv4")]
    V4,
    #[serde(rename = "IPv6")]
    V6,
}

impl IpVersion {
    fn header(self) -> u32 {
        match self {
            IpVersion::V4 => IPV4_HEADER,
            IpVersion::V6 => IPV6_HEADER,
        }
    }

    /// The smallest MTU the version allows ([RFC 791]: 68; [RFC 8200] section 5: 1280).
    pub fn min_mtu(self) -> u32 {
        match self {
            IpVersion::V4 => 68,
            IpVersion::V6 => 1280,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "proto")]
pub enum Transport {
    /// A TCP bulk stream of full-MSS segments.
    Tcp { timestamps: bool },
    /// UDP datagrams of `payload` bytes, fragmented by IP when larger than the MTU allows.
    Udp { payload: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EthParams {
    /// MAC rate.
    #[serde(rename = "rate_bits_per_sec")]
    pub rate: BitsPerSec,
    /// IP MTU, bytes (the interface's `mtu`).
    pub mtu: u32,
    pub ip: IpVersion,
    pub transport: Transport,
}

/// Parameters that do not make a packet. The message names what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EthError {
    MtuTooSmall { mtu: u32, min: u32 },
    MtuTooLarge { mtu: u32 },
    UdpPayload { payload: u32 },
}

impl std::fmt::Display for EthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EthError::MtuTooSmall { mtu, min } => write!(
                f,
                "MTU {mtu} is below the {min} bytes this IP version requires; use {min} to 9216"
            ),
            EthError::MtuTooLarge { mtu } => {
                write!(f, "MTU {mtu} is above jumbo frames; use at most 9216 bytes")
            }
            EthError::UdpPayload { payload } => write!(
                f,
                "a UDP datagram of {payload} bytes does not exist; use 1 to {MAX_UDP_PAYLOAD}"
            ),
        }
    }
}

impl std::error::Error for EthError {}

/// Largest MTU we accept: common jumbo frame limit of switches and NICs.
const MAX_MTU: u32 = 9216;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EthCeiling {
    pub params: EthParams,
    /// The MAC rate in bytes (the raw ceiling).
    #[serde(rename = "raw_bytes_per_sec")]
    pub raw: BytesPerSec,
    /// Application bytes per frame sequence (TCP segment payload, or UDP datagram).
    pub payload_bytes: u32,
    /// Frames per payload (1, or the IP fragments of a large UDP datagram).
    pub frames: u32,
    /// Bytes on the wire per payload, preamble to inter-frame gap.
    pub wire_bytes: u32,
    /// Application bytes per second.
    #[serde(rename = "goodput_bytes_per_sec")]
    pub goodput: BytesPerSec,
}

/// Bytes on the wire for one IP packet of `ip_len` bytes.
fn wire_bytes(ip_len: u32) -> u32 {
    PREAMBLE_SFD + (MAC_HEADER + ip_len + FCS).max(MIN_FRAME) + INTER_FRAME_GAP
}

/// The goodput ceiling of a link at `params`.
pub fn goodput(params: &EthParams) -> Result<EthCeiling, EthError> {
    let ip_header = params.ip.header();
    if params.mtu < params.ip.min_mtu() {
        return Err(EthError::MtuTooSmall {
            mtu: params.mtu,
            min: params.ip.min_mtu(),
        });
    }
    if params.mtu > MAX_MTU {
        return Err(EthError::MtuTooLarge { mtu: params.mtu });
    }
    let (payload, frames, wire) = match params.transport {
        Transport::Tcp { timestamps } => {
            let tcp = TCP_HEADER + if timestamps { TCP_TIMESTAMPS } else { 0 };
            let mss = params.mtu - ip_header - tcp;
            (mss, 1, wire_bytes(params.mtu))
        }
        Transport::Udp { payload } => {
            if payload == 0 || payload > MAX_UDP_PAYLOAD {
                return Err(EthError::UdpPayload { payload });
            }
            let ip_payload = UDP_HEADER + payload;
            if ip_header + ip_payload <= params.mtu {
                (payload, 1, wire_bytes(ip_header + ip_payload))
            } else {
                // Fragments carry multiples of 8 B of the IP payload (RFC 791 fragment
                // offset unit; RFC 8200 4.5), IPv6 adds its fragment header to each.
                let extra = match params.ip {
                    IpVersion::V4 => 0,
                    IpVersion::V6 => IPV6_FRAGMENT_HEADER,
                };
                let per_fragment = (params.mtu - ip_header - extra) / 8 * 8;
                let full = ip_payload / per_fragment;
                let rest = ip_payload % per_fragment;
                let mut wire = full * wire_bytes(ip_header + extra + per_fragment);
                let mut frames = full;
                if rest > 0 {
                    wire += wire_bytes(ip_header + extra + rest);
                    frames += 1;
                }
                (payload, frames, wire)
            }
        }
    };
    let raw = params.rate.to_bytes();
    Ok(EthCeiling {
        params: *params,
        raw,
        payload_bytes: payload,
        frames,
        wire_bytes: wire,
        goodput: BytesPerSec(raw.0 * f64::from(payload) / f64::from(wire)),
    })
}

/// Goodput ceiling in bytes/s of a bulk TCP stream over IPv4 with timestamps (Linux's default,
/// `net.ipv4.tcp_timestamps = 1`) on a link of `rate_bps` (sysfs `speed` x 10^6) at `mtu`:
/// the figure the audit compares iperf3 with. None for an MTU the model refuses.
pub fn tcp_goodput_bps(rate_bps: f64, mtu: u32) -> Option<f64> {
    goodput(&EthParams {
        rate: BitsPerSec(rate_bps),
        mtu,
        ip: IpVersion::V4,
        transport: Transport::Tcp { timestamps: true },
    })
    .ok()
    .map(|c| c.goodput.0)
}

/// The largest UDP payload one IP packet carries at `mtu` (no fragmentation): the MTU less
/// the IP header and the 8 B UDP header ([RFC 768]). At MTU 1500 over IPv4: 1472 B; at
/// 9000: 8972 B. `None` when the MTU leaves no room.
pub fn udp_payload_filling(mtu: u32, ip: IpVersion) -> Option<u32> {
    mtu.checked_sub(ip.header() + UDP_HEADER).filter(|&p| p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rate: &str, mtu: u32, ip: IpVersion, transport: Transport) -> EthCeiling {
        goodput(&EthParams {
            rate: parse_rate(rate).unwrap(),
            mtu,
            ip,
            transport,
        })
        .unwrap()
    }

    #[test]
    fn tcp_over_gigabit() {
        // The well-known 941.5 Mb/s of iperf3 over 1G: 1448 B of 1538 B with timestamps.
        let ts = at(
            "1G",
            1500,
            IpVersion::V4,
            Transport::Tcp { timestamps: true },
        );
        assert_eq!((ts.payload_bytes, ts.wire_bytes), (1448, 1538));
        assert_eq!(format!("{:.1}", ts.goodput.to_bits().mbit()), "941.5");
        let plain = at(
            "1G",
            1500,
            IpVersion::V4,
            Transport::Tcp { timestamps: false },
        );
        assert_eq!(format!("{:.1}", plain.goodput.to_bits().mbit()), "949.3");
        let v6 = at(
            "1G",
            1500,
            IpVersion::V6,
            Transport::Tcp { timestamps: true },
        );
        assert_eq!(v6.payload_bytes, 1428);
        let jumbo = at(
            "10G",
            9000,
            IpVersion::V4,
            Transport::Tcp { timestamps: true },
        );
        assert_eq!(jumbo.payload_bytes, 8948);
        assert!((jumbo.goodput.0 - 10e9 / 8.0 * 8948.0 / 9038.0).abs() < 1.0);
    }

    #[test]
    fn udp_datagrams() {
        // iperf's default 1470 B datagram: 1470 of 1536 wire bytes = 957.0 Mb/s on 1G.
        let u = at("1G", 1500, IpVersion::V4, Transport::Udp { payload: 1470 });
        assert_eq!((u.frames, u.wire_bytes), (1, 1536));
        assert_eq!(format!("{:.1}", u.goodput.to_bits().mbit()), "957.0");
        // A small datagram is padded to the 64 B minimum frame: 84 B on the wire.
        let small = at("100M", 1500, IpVersion::V4, Transport::Udp { payload: 10 });
        assert_eq!(small.wire_bytes, 84);
        // 4000 B over IPv4, MTU 1500: 4008 B of IP payload in 1480 + 1480 + 1048.
        let frag = at("1G", 1500, IpVersion::V4, Transport::Udp { payload: 4000 });
        assert_eq!(frag.frames, 3);
        assert_eq!(frag.wire_bytes, 2 * 1538 + (8 + 14 + 20 + 1048 + 4 + 12));
        // IPv6: 1448 B per fragment (1500 - 40 - 8, a multiple of 8).
        let frag6 = at("1G", 1500, IpVersion::V6, Transport::Udp { payload: 4000 });
        assert_eq!(frag6.frames, 3);
        // Full fragments are 40 + 8 + 1448 = 1496 B IP packets, 1534 B on the wire.
        assert_eq!(frag6.wire_bytes, 2 * 1534 + (8 + 14 + 48 + 1112 + 4 + 12));
    }

    #[test]
    fn bad_parameters() {
        let p = EthParams {
            rate: BitsPerSec(1e9),
            mtu: 1000,
            ip: IpVersion::V6,
            transport: Transport::Tcp { timestamps: false },
        };
        assert_eq!(
            goodput(&p).unwrap_err().to_string(),
            "MTU 1000 is below the 1280 bytes this IP version requires; use 1280 to 9216"
        );
        assert_eq!(parse_rate("3G"), None);
        assert_eq!(parse_rate("2.5g"), Some(BitsPerSec(2.5e9)));
        // sysfs speed 1000 (Mb/s), MTU 1500: the 941.5 Mb/s of iperf3.
        let tcp = tcp_goodput_bps(1000e6, 1500).unwrap();
        assert_eq!(format!("{:.1}", tcp * 8.0 / 1e6), "941.5");
        assert_eq!(tcp_goodput_bps(1000e6, 20), None);
    }

    #[test]
    fn udp_datagrams_that_fill_the_mtu() {
        assert_eq!(udp_payload_filling(1500, IpVersion::V4), Some(1472));
        assert_eq!(udp_payload_filling(9000, IpVersion::V4), Some(8972));
        assert_eq!(udp_payload_filling(9000, IpVersion::V6), Some(8952));
        let u = at("10G", 9000, IpVersion::V4, Transport::Udp { payload: 8972 });
        // One frame of 9000 B IP packet: 9038 B on the wire.
        assert_eq!((u.frames, u.wire_bytes), (1, 9038));
        assert_eq!(format!("{:.1}", u.goodput.to_bits().mbit()), "9927.0");
    }
}
