//! Network benchmark types (`headroom bench net`, iperf3's test) and the goodput ceiling of a
//! link shaped by a token-bucket qdisc.
//!
//! The engine (`bench::net`) fills these; `report` judges them. iperf3's own names are kept
//! where a user compares the two (`retransmits`, `jitter_ms`, `lost_packets`).

pub mod args;

use crate::ceiling::eth::{self, EthParams, IpVersion, Transport};
use serde::{Deserialize, Serialize};

/// The transport of the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// Who sends: the client (iperf3's default), the server (`-R`), or both (`--bidir`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Forward,
    Reverse,
    Bidir,
}

/// The test as both ends agreed on it (iperf3's parameter exchange).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetConfig {
    pub protocol: Protocol,
    pub direction: Direction,
    /// Measured seconds (`-t`), after the omitted ones.
    pub duration_s: u32,
    /// Seconds at the start that are not counted (`-O`).
    pub omit_s: u32,
    /// Streams per direction (`-P`).
    pub streams: u32,
    /// The block length (`-l`): bytes per datagram (UDP), or per write (TCP; an unpaced
    /// stream of 64 KiB blocks or more writes and reads up to 512 KiB at once when its
    /// threads outnumber the CPUs, bench::net::stream::send_len).
    pub len: u32,
    /// Target rate per stream, bits per second (`-b`); `None`: unlimited.
    #[serde(rename = "bitrate_bits_per_sec", alias = "bitrate_bps")]
    pub bitrate_bps: Option<u64>,
    /// Socket buffer size asked for (`-w`), bytes.
    pub window: Option<u32>,
    /// TCP maximum segment size asked for (`-M`), bytes.
    pub mss: Option<u32>,
    /// sendfile(2) instead of write(2) (`-Z`).
    pub zerocopy: bool,
    /// 64-bit UDP packet counters (iperf3 `--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
}

/// Which way a stream's bytes go, seen from the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flow {
    ClientToServer,
    ServerToClient,
}

impl Flow {
    pub fn label(self) -> &'static str {
        match self {
            Flow::ClientToServer => "client -> server",
            Flow::ServerToClient => "server -> client",
        }
    }
}

/// One reporting interval of one stream, as this end saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the end of the omitted period (negative while omitting).
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    /// TCP senders: segments retransmitted in the interval (TCP_INFO tcpi_total_retrans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP senders: smoothed RTT at the end of the interval, us (tcpi_rtt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    /// TCP senders: congestion window, bytes (tcpi_snd_cwnd x tcpi_snd_mss, as iperf3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// UDP receivers: datagrams lost in the interval (sequence gaps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: datagrams sent or received in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// TCP senders: RTT variance at the end of the interval, us (tcpi_rttvar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u32>,
    /// TCP senders: path MTU at the end of the interval (tcpi_pmtu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    /// UDP receivers: the RFC 3550 jitter at the end of the interval, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
}

impl Interval {
    /// Bits per second over the interval.
    pub fn bits_per_second(&self) -> f64 {
        let s = self.end_s - self.start_s;
        if s > 0.0 {
            self.bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    }
}

/// One stream's totals at one end (the omitted seconds excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndTotals {
    pub bytes: u64,
    /// Bytes counted during the omitted seconds (`-O`), not in `bytes`; this end's own count
    /// only (iperf3 does not exchange it).
    #[serde(default)]
    pub omitted_bytes: u64,
    /// Seconds the end counted bytes for.
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP: the sender's datagram count, or the receiver's highest sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// UDP receivers: datagrams lost (iperf3's `errors`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP receivers: datagrams that arrived after a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    /// UDP receivers: RFC 3550 interarrival jitter, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
}

impl EndTotals {
    pub fn bits_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 * 8.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// One stream: what this end measured, and what the peer said it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// iperf3's stream id (1, 3, 4, 5, ...: iperf3 skips 2 and both ends must agree).
    pub id: u32,
    pub flow: Flow,
    /// This end sent the stream's bytes.
    pub local_sends: bool,
    pub local: EndTotals,
    /// The peer's totals from the result exchange; `None` when the test ended without one.
    pub peer: Option<EndTotals>,
    pub intervals: Vec<Interval>,
    /// TCP senders at the end: smoothed RTT and its variance, us; path MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    /// TCP: the segment size the kernel used (TCP_INFO tcpi_snd_mss), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_mss: Option<u32>,
    /// The data connection's local and peer addresses (`ip:port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_addr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_addr: Option<String>,
    /// The socket's buffer sizes as the kernel set them (SO_SNDBUF, SO_RCVBUF), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u32>,
}

impl StreamResult {
    /// The sender's and the receiver's totals, whichever end each is.
    pub fn sender(&self) -> Option<&EndTotals> {
        if self.local_sends {
            Some(&self.local)
        } else {
            self.peer.as_ref()
        }
    }

    pub fn receiver(&self) -> Option<&EndTotals> {
        if self.local_sends {
            self.peer.as_ref()
        } else {
            Some(&self.local)
        }
    }
}

/// CPU time one end spent during the test (user + system of the whole process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// Percent of one CPU over the test's wall time, as iperf3's `cpu_util_*`.
    pub total_percent: f64,
    pub user_percent: f64,
    pub system_percent: f64,
    /// Wall seconds the percentages are of.
    pub wall_s: f64,
}

impl CpuUse {
    /// CPU seconds spent.
    pub fn cpu_seconds(&self) -> f64 {
        self.total_percent / 100.0 * self.wall_s
    }
}

/// Bounds on the numbers a peer's result message gives for one test: iperf3's result
/// message is JSON, any number in any field (a start time of -1.7e308 and an end time of
/// 1.7e308 make an infinite duration), and what headroom keeps of it must be what the test
/// could physically have done in the time it took here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerBounds {
    /// Seconds the test took at this end, from its streams' start to the exchange of
    /// results, with a second of margin for the two clocks' granularity.
    elapsed_s: f64,
}

impl PeerBounds {
    /// The fastest one stream can carry, bytes per second: 1.6 Tbit/s, the fastest Ethernet
    /// (IEEE 802.3dj), and past what a loopback stream copies.
    pub const MAX_STREAM_BYTES_PER_S: f64 = 200e9;
    /// The smallest datagram a UDP stream sends, bytes (iperf3's header: a 32-bit sequence
    /// number and a timestamp, 12 B).
    pub const MIN_DATAGRAM: f64 = 12.0;
    /// The most CPU a process can use, percent of one CPU: 100 % of each of Linux's most
    /// CPUs (CONFIG_NR_CPUS is at most 8192, arch/x86/Kconfig).
    pub const MAX_CPU_PERCENT: f64 = 100.0 * 8192.0;

    /// The bounds of a test whose streams ran `elapsed_s` seconds here.
    pub fn new(elapsed_s: f64) -> PeerBounds {
        let e = if elapsed_s.is_finite() {
            elapsed_s.max(0.0)
        } else {
            0.0
        };
        PeerBounds { elapsed_s: e + 1.0 }
    }

    /// The seconds from `start` to `end`: at least 0, at most the test's time.
    pub fn seconds(&self, start: f64, end: f64) -> f64 {
        let d = end - start;
        if d.is_nan() {
            0.0
        } else {
            d.clamp(0.0, self.elapsed_s)
        }
    }

    /// A stream's bytes: at most what it could carry at [`Self::MAX_STREAM_BYTES_PER_S`].
    pub fn bytes(&self, bytes: u64) -> u64 {
        bytes.min((self.elapsed_s * Self::MAX_STREAM_BYTES_PER_S) as u64)
    }

    /// A stream's packets, losses or retransmits: at most the datagrams of
    /// [`Self::MIN_DATAGRAM`] bytes it could carry.
    pub fn count(&self, n: u64) -> u64 {
        n.min((self.elapsed_s * Self::MAX_STREAM_BYTES_PER_S / Self::MIN_DATAGRAM) as u64)
    }

    /// A jitter, ms: at least 0, at most the test's time.
    pub fn jitter_ms(&self, ms: f64) -> f64 {
        if ms.is_nan() {
            0.0
        } else {
            ms.clamp(0.0, self.elapsed_s * 1e3)
        }
    }

    /// A CPU use, percent: at least 0, at most [`Self::MAX_CPU_PERCENT`].
    pub fn cpu_percent(&self, p: f64) -> f64 {
        if p.is_nan() {
            0.0
        } else {
            p.clamp(0.0, Self::MAX_CPU_PERCENT)
        }
    }
}

/// Which end of the test headroom was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
}

/// Why the test ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetStop {
    /// The duration passed and the results were exchanged.
    Completed,
    /// Ctrl-C: the peer was told (CLIENT_TERMINATE / SERVER_TERMINATE), partial results.
    Interrupted,
}

/// When and under which cookie the test began (iperf3's `start.timestamp` and `cookie`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestStart {
    /// When the control connection was made, seconds since the Unix epoch.
    pub unix_s: u64,
    /// The 36 characters the client sent first on every connection of the test.
    pub cookie: String,
}

/// A whole test at one end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetMeasurement {
    pub role: Role,
    pub config: NetConfig,
    /// `host:port` of the peer's control connection.
    pub peer: String,
    /// Local address of the control connection.
    pub local: String,
    /// The interface the local address belongs to (`lo`, `eth0`), when found.
    pub interface: Option<String>,
    /// The peer's version (`client_version` in the parameters), when it said.
    pub peer_version: Option<String>,
    pub streams: Vec<StreamResult>,
    pub cpu_local: CpuUse,
    pub cpu_peer: Option<CpuUse>,
    /// TCP congestion control used here and at the peer (TCP_CONGESTION).
    pub congestion_local: Option<String>,
    pub congestion_peer: Option<String>,
    /// Interval length, s.
    pub interval_s: f64,
    pub stopped_by: NetStop,
    /// `None` in documents from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<TestStart>,
}

/// The totals of one direction: the streams of that flow summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    pub streams: usize,
    pub sender_bytes: Option<u64>,
    pub receiver_bytes: Option<u64>,
    /// Receiver's bytes per the longest of the receivers' seconds, bits/s (iperf3's
    /// "receiver" line).
    #[serde(rename = "receiver_bits_per_sec", alias = "receiver_bps")]
    pub receiver_bps: Option<f64>,
    #[serde(rename = "sender_bits_per_sec", alias = "sender_bps")]
    pub sender_bps: Option<f64>,
    pub retransmits: Option<u64>,
    pub lost_packets: Option<u64>,
    pub packets: Option<u64>,
    pub out_of_order: Option<u64>,
    /// Mean jitter of the streams, ms (iperf3 averages the streams' jitter).
    pub jitter_ms: Option<f64>,
}

impl FlowSummary {
    /// Lost / total datagrams in percent, iperf3's "Lost/Total".
    pub fn loss_percent(&self) -> Option<f64> {
        match (self.lost_packets, self.packets) {
            (Some(l), Some(p)) if p > 0 => Some(l as f64 * 100.0 / p as f64),
            _ => None,
        }
    }
}

fn sum_opt(vals: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let mut total = None;
    for v in vals.flatten() {
        *total.get_or_insert(0) += v;
    }
    total
}

impl NetMeasurement {
    /// The directions that carried streams, in the order client->server, server->client.
    pub fn flows(&self) -> Vec<Flow> {
        [Flow::ClientToServer, Flow::ServerToClient]
            .into_iter()
            .filter(|f| self.streams.iter().any(|s| s.flow == *f))
            .collect()
    }

    /// One direction's totals.
    pub fn summary(&self, flow: Flow) -> FlowSummary {
        let streams: Vec<&StreamResult> = self.streams.iter().filter(|s| s.flow == flow).collect();
        let senders: Vec<&EndTotals> = streams.iter().filter_map(|s| s.sender()).collect();
        let receivers: Vec<&EndTotals> = streams.iter().filter_map(|s| s.receiver()).collect();
        let rate = |ends: &[&EndTotals]| {
            let secs = ends.iter().map(|e| e.seconds).fold(0.0, f64::max);
            let bytes: u64 = ends.iter().map(|e| e.bytes).sum();
            (!ends.is_empty() && secs > 0.0).then(|| bytes as f64 * 8.0 / secs)
        };
        let jitters: Vec<f64> = receivers.iter().filter_map(|r| r.jitter_ms).collect();
        FlowSummary {
            streams: streams.len(),
            sender_bytes: (!senders.is_empty()).then(|| senders.iter().map(|e| e.bytes).sum()),
            receiver_bytes: (!receivers.is_empty())
                .then(|| receivers.iter().map(|e| e.bytes).sum()),
            receiver_bps: rate(&receivers),
            sender_bps: rate(&senders),
            retransmits: sum_opt(senders.iter().map(|e| e.retransmits)),
            lost_packets: sum_opt(receivers.iter().map(|e| e.lost_packets)),
            packets: sum_opt(senders.iter().map(|e| e.packets)),
            out_of_order: sum_opt(receivers.iter().map(|e| e.out_of_order)),
            jitter_ms: (!jitters.is_empty())
                .then(|| jitters.iter().sum::<f64>() / jitters.len() as f64),
        }
    }

    /// Bits per second of a direction per interval (the streams' intervals summed by index),
    /// as this end saw them: (end of interval in s, bits/s).
    pub fn interval_rates(&self, flow: Flow) -> Vec<(f64, f64)> {
        let streams: Vec<&StreamResult> = self.streams.iter().filter(|s| s.flow == flow).collect();
        let n = streams.iter().map(|s| s.intervals.len()).max().unwrap_or(0);
        (0..n)
            .filter_map(|i| {
                let ivs: Vec<&Interval> =
                    streams.iter().filter_map(|s| s.intervals.get(i)).collect();
                let first = ivs.first()?;
                let secs = first.end_s - first.start_s;
                let bytes: u64 = ivs.iter().map(|v| v.bytes).sum();
                (secs > 0.0).then(|| (first.end_s, bytes as f64 * 8.0 / secs))
            })
            .collect()
    }
}

/// A token-bucket shaper on the sending interface (`tc qdisc ... tbf rate R overhead O`):
/// every packet costs its length from the MAC header on plus `overhead` bytes
/// (net/sched/sch_tbf.c charges `qdisc_pkt_len`, to which the rate table adds the
/// configured overhead: tc-tbf(8), "overhead"; net/sched/sch_api.c `__qdisc_calculate_pkt_len`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shaper {
    /// Rate, bits per second.
    #[serde(rename = "rate_bits_per_sec", alias = "rate_bps")]
    pub rate_bps: f64,
    /// Bytes added to each packet's length, MAC header included in the length.
    pub overhead: u32,
    /// Minimum packet unit, bytes (tc's `mpu`); 0 when unset.
    pub mpu: u32,
}

/// Ethernet MAC header, the part of a frame a qdisc sees on an Ethernet-like device
/// (IEEE 802.3-2018 clause 3.1.1: 6 + 6 + 2 B).
const MAC_HEADER: u32 = 14;

/// What the ceiling of a transfer is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GoodputParams {
    pub mtu: u32,
    pub ip: IpVersion,
    pub transport: Transport,
}

/// Application bytes per packet for `p` (TCP: the MSS; UDP: the datagram), from the Ethernet
/// model, or `None` when the model refuses the MTU or the datagram does not fit one packet.
fn payload_and_ip_len(p: &GoodputParams) -> Option<(u32, u32)> {
    let c = eth::goodput(&EthParams {
        rate: crate::units::BitsPerSec(1e9),
        mtu: p.mtu,
        ip: p.ip,
        transport: p.transport,
    })
    .ok()?;
    if c.frames != 1 {
        return None;
    }
    // The Ethernet model's bytes on the wire minus its per-frame framing give the IP length;
    // recompute it here from the payload instead of relying on its private constants.
    let ip_header = match p.ip {
        IpVersion::V4 => 20,
        IpVersion::V6 => 40,
    };
    let ip_len = match p.transport {
        Transport::Tcp { .. } => p.mtu,
        // RFC 768: 8-byte UDP header.
        Transport::Udp { payload } => ip_header + 8 + payload,
    };
    Some((c.payload_bytes, ip_len))
}

/// Goodput through a token-bucket shaper, bytes per second: the rate times the share of each
/// charged packet that is application data. `None` when the parameters make no single packet.
pub fn shaped_goodput(shaper: &Shaper, p: &GoodputParams) -> Option<f64> {
    let (payload, ip_len) = payload_and_ip_len(p)?;
    let charged = (MAC_HEADER + ip_len).max(shaper.mpu) + shaper.overhead;
    Some(shaper.rate_bps / 8.0 * f64::from(payload) / f64::from(charged))
}

/// Goodput of an Ethernet link at its MAC rate, bytes per second (the Ethernet model).
pub fn ethernet_goodput(rate_bps: f64, p: &GoodputParams) -> Option<f64> {
    eth::goodput(&EthParams {
        rate: crate::units::BitsPerSec(rate_bps),
        mtu: p.mtu,
        ip: p.ip,
        transport: p.transport,
    })
    .ok()
    .map(|c| c.goodput.0)
}

/// What headroom found out about the interface a test's bytes left by: the facts the
/// ceiling and the findings are made from (filled by probe, judged by report).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkFacts {
    pub interface: String,
    /// Negotiated speed, Mb/s (sysfs `speed`); `None` when down, virtual or unknown.
    #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
    pub speed_mbps: Option<u64>,
    pub duplex: Option<String>,
    pub mtu: Option<u32>,
    /// No hardware below (lo, veth, bridge, tun, ...).
    pub is_virtual: bool,
    pub is_loopback: bool,
    pub driver: Option<String>,
    /// The USB device's own rate, Mb/s, when the adapter is on USB.
    #[serde(rename = "usb_speed_mbits_per_sec", alias = "usb_speed_mbps")]
    pub usb_speed_mbps: Option<f64>,
    /// The smallest PCIe ceiling below the interface (either direction), bytes/s, with the
    /// link's name: a NIC on a narrow or downgraded link is capped by it.
    #[serde(default)]
    pub pcie_ceiling: Option<(String, f64)>,
    /// A token-bucket qdisc at the root of the interface.
    pub shaper: Option<Shaper>,
    /// `net.ipv4.tcp_timestamps` (0 off, 1 on, 2 on without random offsets).
    pub tcp_timestamps: Option<u32>,
    /// Offloads visible in sysfs/ethtool that change how packets reach the wire or the CPU.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// What the audit and `path` give an interface's ceiling for: bulk TCP over IPv4 with
/// timestamps (Linux's default, `net.ipv4.tcp_timestamps = 1`), the figure iperf3 is compared
/// with; the words the basis names it with.
pub fn audit_transfers(mtu: u32) -> (GoodputParams, &'static str) {
    (
        GoodputParams {
            mtu,
            ip: IpVersion::V4,
            transport: Transport::Tcp { timestamps: true },
        },
        "TCP/IPv4 with timestamps",
    )
}

/// Which way the bytes go through a link, seen from the host whose interface it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// This host sends (the interface's egress: what a qdisc here shapes).
    Sends,
    /// This host receives.
    Receives,
}

/// The goodput ceiling of one direction of a link: application bytes per second, and how
/// it was computed, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct WayCeiling {
    pub goodput_bps: f64,
    pub basis: String,
    /// The ceiling is the shaper's on this host's egress (it bounds only what is sent).
    pub by_shaper: bool,
}

fn mbit(bits: f64) -> String {
    format!("{:.2} Mbit/s", bits / 1e6)
}

/// The goodput ceiling of the link of `f` in the direction `way`, for transfers of `p`
/// (`what` names them in the basis: "TCP with timestamps ..."), or why there is none, in one
/// sentence: the one network ceiling of headroom (audit, path and bench net use it).
///
/// A token-bucket shaper at the root of the interface bounds only what this host sends; the
/// link speed bounds both directions of a full-duplex physical link, capped by the adapter's
/// USB or PCIe link; loopback and virtual links (veth, bridge, tun) have no speed that is a
/// link, so a direction without a shaper has no ceiling there.
pub fn link_ceiling(
    f: &LinkFacts,
    p: &GoodputParams,
    what: &str,
    way: Way,
) -> Result<WayCeiling, String> {
    let shaper = match way {
        Way::Sends => shaper_ceiling(f, p, what).transpose()?,
        Way::Receives => None,
    };
    let unshaped = match (&f.shaper, way) {
        (Some(_), Way::Receives) => format!(
            ", and the tbf qdisc on {} shapes only what this host sends",
            f.interface
        ),
        _ => String::new(),
    };
    let link = if f.is_loopback {
        Err(format!(
            "{} is the loopback interface: no link, the rate is bounded by CPU and memory \
             only{unshaped}",
            f.interface
        ))
    } else if f.is_virtual {
        Err(format!(
            "{} is a virtual interface (veth, bridge, tun, ...): its reported speed is not a \
             link, so it has no ceiling{unshaped}",
            f.interface
        ))
    } else if let Some(speed) = f.speed_mbps {
        link_speed_ceiling(f, speed, p, what)
    } else {
        Err(format!(
            "{} reports no link speed (down, or the driver does not say): no ceiling{unshaped}",
            f.interface
        ))
    };
    match (shaper, link) {
        (Some(s), Ok(l)) if l.goodput_bps < s.goodput_bps => Ok(l),
        (Some(s), _) => Ok(s),
        (None, l) => l,
    }
}

/// The goodput ceiling of the token-bucket shaper at the root of the interface of `f`, for
/// transfers of `p`: it bounds only what this host sends (the interface's egress). `None`
/// without a shaper; an error when the transfers make no single packet.
pub fn shaper_ceiling(
    f: &LinkFacts,
    p: &GoodputParams,
    what: &str,
) -> Option<Result<WayCeiling, String>> {
    let sh = f.shaper.as_ref()?;
    let mtu = p.mtu;
    Some(
        shaped_goodput(sh, p)
            .map(|g| WayCeiling {
                goodput_bps: g,
                by_shaper: true,
                basis: format!(
                    "tbf qdisc on {}: rate {}, overhead {} B per packet, MTU {mtu}, {what}; it \
                     shapes what this host sends",
                    f.interface,
                    mbit(sh.rate_bps),
                    sh.overhead
                ),
            })
            .ok_or_else(|| {
                format!("the {what} do not fit one packet at MTU {mtu}: no single-packet ceiling")
            }),
    )
}

/// A physical link's goodput at its speed, capped by the adapter's USB or PCIe link.
fn link_speed_ceiling(
    f: &LinkFacts,
    speed: u64,
    p: &GoodputParams,
    what: &str,
) -> Result<WayCeiling, String> {
    let mtu = p.mtu;
    let eth = ethernet_goodput(speed as f64 * 1e6, p)
        .ok_or_else(|| format!("the Ethernet model refuses MTU {mtu} with {what}"))?;
    let mut basis = format!(
        "Ethernet {speed} Mb/s on {}, IEEE 802.3 framing, MTU {mtu}, {what}",
        f.interface
    );
    let mut g = eth;
    // The share of application bytes in a frame (goodput / MAC rate in bytes): the bus below
    // carries whole frames.
    let share = eth / (speed as f64 * 1e6 / 8.0);
    if let Some(usb) = f.usb_speed_mbps {
        if let Some(bulk) = crate::ceiling::usb::bulk_ceiling_for_sysfs(usb, 1) {
            let cap = bulk * share;
            if cap < g {
                g = cap;
                basis.push_str(&format!(
                    "; capped by the adapter's USB {usb} Mb/s bulk ceiling"
                ));
            }
        }
    }
    if let Some((name, bps)) = &f.pcie_ceiling {
        // PCIe carries whole frames (and descriptors, not counted: an upper bound).
        let cap = bps * share;
        if cap < g {
            g = cap;
            basis.push_str(&format!(
                "; capped by {name} ({:.1} MB/s of frames)",
                bps / crate::units::MB
            ));
        }
    }
    Ok(WayCeiling {
        goodput_bps: g,
        basis,
        by_shaper: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shaper_bounds_only_what_this_host_sends() {
        // A veth shaped to 200 Mbit/s, nominally 10000 Mb/s.
        let veth = LinkFacts {
            interface: "vb".into(),
            speed_mbps: Some(10_000),
            mtu: Some(1500),
            is_virtual: true,
            shaper: Some(Shaper {
                rate_bps: 200e6,
                overhead: 0,
                mpu: 0,
            }),
            ..LinkFacts::default()
        };
        let p = tcp(true);
        let out = link_ceiling(&veth, &p, "TCP", Way::Sends).unwrap();
        assert!((out.goodput_bps * 8.0 - 200e6 * 1448.0 / 1514.0).abs() < 1e-3);
        assert!(out.basis.contains("tbf qdisc on vb"), "{}", out.basis);
        let back = link_ceiling(&veth, &p, "TCP", Way::Receives).unwrap_err();
        assert_eq!(
            back,
            "vb is a virtual interface (veth, bridge, tun, ...): its reported speed is not a \
             link, so it has no ceiling, and the tbf qdisc on vb shapes only what this host \
             sends"
        );
        // Unshaped, the veth has none either way: its 10000 Mb/s is not a link.
        let bare = LinkFacts {
            shaper: None,
            ..veth.clone()
        };
        assert!(link_ceiling(&bare, &p, "TCP", Way::Sends).is_err());
        // A shaper above a physical link's speed: the link bounds.
        let nic = LinkFacts {
            is_virtual: false,
            speed_mbps: Some(100),
            ..veth
        };
        let out = link_ceiling(&nic, &p, "TCP", Way::Sends).unwrap();
        assert!(out.basis.starts_with("Ethernet 100 Mb/s"), "{}", out.basis);
        let back = link_ceiling(&nic, &p, "TCP", Way::Receives).unwrap();
        assert_eq!(back, out);
    }

    fn tcp(ts: bool) -> GoodputParams {
        GoodputParams {
            mtu: 1500,
            ip: IpVersion::V4,
            transport: Transport::Tcp { timestamps: ts },
        }
    }

    #[test]
    fn a_peers_numbers_are_bounded_by_what_the_test_could_do() {
        let b = PeerBounds::new(10.0);
        assert_eq!(b.seconds(-1.7e308, 1.7e308), 11.0);
        assert_eq!(b.seconds(0.0, 10.0), 10.0);
        assert_eq!(b.seconds(5.0, 1.0), 0.0);
        assert_eq!(b.seconds(f64::NAN, 1.0), 0.0);
        assert_eq!(b.bytes(u64::MAX), 2_200_000_000_000);
        assert_eq!(b.bytes(1_000), 1_000);
        assert!(b.count(u64::MAX) < u64::MAX / 1000);
        assert_eq!(b.jitter_ms(f64::INFINITY), 11_000.0);
        assert_eq!(b.cpu_percent(-1.0), 0.0);
        assert_eq!(b.cpu_percent(f64::MAX), PeerBounds::MAX_CPU_PERCENT);
        // The most streams a test has, each at its bound for a day: their sum fits.
        let day = PeerBounds::new(86_400.0 * 2.0);
        assert!((day.bytes(u64::MAX) as u128) * 256 < u128::from(u64::MAX));
        assert_eq!(PeerBounds::new(f64::INFINITY).seconds(0.0, 1e9), 1.0);
    }

    #[test]
    fn tbf_with_ethernet_overhead_is_the_ethernet_ceiling() {
        // Tbf rate 100mbit overhead 24 on a veth: 1448/1538 and 1460/1538 of the rate.
        let s = Shaper {
            rate_bps: 100e6,
            overhead: 24,
            mpu: 0,
        };
        let ts = shaped_goodput(&s, &tcp(true)).unwrap() * 8.0;
        let plain = shaped_goodput(&s, &tcp(false)).unwrap() * 8.0;
        assert!((ts - 100e6 * 1448.0 / 1538.0).abs() < 1e-3);
        assert!((plain - 100e6 * 1460.0 / 1538.0).abs() < 1e-3);
        assert_eq!(format!("{:.2}", ts / 1e6), "94.15");
        assert_eq!(format!("{:.2}", plain / 1e6), "94.93");
        // The same as the Ethernet model at 100 Mb/s.
        let e = ethernet_goodput(100e6, &tcp(true)).unwrap() * 8.0;
        assert!((e - ts).abs() < 1e-3);
        // UDP 1448-byte datagrams: 20 + 8 + 1448 = 1476 B of IP, 1490 + 24 charged.
        let u = shaped_goodput(
            &s,
            &GoodputParams {
                mtu: 1500,
                ip: IpVersion::V4,
                transport: Transport::Udp { payload: 1448 },
            },
        )
        .unwrap();
        assert!((u * 8.0 - 100e6 * 1448.0 / 1514.0).abs() < 1e-3);
        // Without overhead the shaper charges only the frame from the MAC header.
        let bare = Shaper { overhead: 0, ..s };
        let b = shaped_goodput(&bare, &tcp(true)).unwrap() * 8.0;
        assert!((b - 100e6 * 1448.0 / 1514.0).abs() < 1e-3);
    }

    #[test]
    fn flow_summaries() {
        let end = |bytes, secs| EndTotals {
            bytes,
            seconds: secs,
            ..EndTotals::default()
        };
        let stream = |id, flow, local_sends| StreamResult {
            id,
            flow,
            local_sends,
            local: end(1000, 2.0),
            peer: Some(end(990, 2.0)),
            intervals: vec![],
            rtt_us: None,
            rttvar_us: None,
            pmtu: None,
            snd_mss: None,
            local_addr: None,
            peer_addr: None,
            sndbuf: None,
            rcvbuf: None,
        };
        let m = NetMeasurement {
            role: Role::Client,
            config: NetConfig {
                protocol: Protocol::Tcp,
                direction: Direction::Bidir,
                duration_s: 2,
                omit_s: 0,
                streams: 2,
                len: 131_072,
                bitrate_bps: None,
                window: None,
                mss: None,
                zerocopy: false,
                udp_counters_64bit: false,
            },
            peer: "x:5201".into(),
            local: "y:1".into(),
            interface: None,
            peer_version: None,
            streams: vec![
                stream(1, Flow::ClientToServer, true),
                stream(3, Flow::ClientToServer, true),
                stream(4, Flow::ServerToClient, false),
            ],
            cpu_local: CpuUse::default(),
            cpu_peer: None,
            congestion_local: None,
            congestion_peer: None,
            interval_s: 1.0,
            stopped_by: NetStop::Completed,
            start: None,
        };
        assert_eq!(m.flows(), vec![Flow::ClientToServer, Flow::ServerToClient]);
        let up = m.summary(Flow::ClientToServer);
        assert_eq!(
            (up.sender_bytes, up.receiver_bytes),
            (Some(2000), Some(1980))
        );
        assert_eq!(up.receiver_bps, Some(1980.0 * 8.0 / 2.0));
        let down = m.summary(Flow::ServerToClient);
        assert_eq!(
            (down.sender_bytes, down.receiver_bytes),
            (Some(990), Some(1000))
        );
    }
}
