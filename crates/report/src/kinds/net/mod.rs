//! `headroom bench net`: its document (the measurement judged against the link's ceiling:
//! efficiency, findings; the interface counters' cross-check), its terminal text and what a
//! report shows of it.
//!
//! Rates are printed in Mbit/s (10^6 bit/s, iperf3's unit) and kept in the document in bytes
//! per second like every other headroom rate.

pub mod text;
pub use text::{interval_line, trial_line};
pub mod findings;
pub use findings::findings;

use crate::document::DocumentKind;
use crate::document::{Document, DocumentError};
use crate::export::Export;
use crate::summary::{put, CeilingRow, RateSeries, Summary, TestRow};
use crate::table::mb;
use crate::words::serde_name;
use model::ceiling::eth::{IpVersion, Transport};
use model::net::{
    link_ceiling, Flow, GoodputParams, LinkFacts, NetMeasurement, NetStop, Protocol, Way,
};
use model::units::MB;
use model::{Finding, Severity};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

pub mod iperf3;

/// The goodput ceiling of one direction of the test's path, application bytes per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetCeiling {
    #[serde(rename = "goodput_bytes_per_sec", alias = "goodput_bps")]
    pub goodput_bps: f64,
    /// How it was computed, in words (the link, rate, MTU, headers).
    pub basis: String,
    /// The ceiling is a shaper on this end's egress: it bounds only what this end sends.
    #[serde(default)]
    pub egress_only: bool,
}

/// One direction's numbers against its own ceiling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowVerdict {
    pub flow: Flow,
    pub summary: model::net::FlowSummary,
    /// This direction's ceiling ([`flow_ceiling`]); documents before it had one ceiling for
    /// the test, which the summary reads in its place.
    #[serde(default)]
    pub ceiling: Option<NetCeiling>,
    /// Why this direction has no ceiling.
    #[serde(default)]
    pub no_ceiling_reason: Option<String>,
    /// receiver_bps / ceiling (both in bits/s).
    pub efficiency: Option<f64>,
    /// (sender - receiver) / sender bytes.
    pub bytes_gap: Option<f64>,
}

/// The interface's own byte counts over the test (/proc/net/dev deltas).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterfaceCheck {
    pub interface: String,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Application bytes this end sent and received (payload only, omitted seconds included,
    /// as the interface counted through them).
    pub app_sent: u64,
    pub app_received: u64,
    /// Interface bytes / application bytes - 1, for the direction that carried the test
    /// (headers, acknowledgements, and other traffic make it positive).
    pub overhead: Option<f64>,
    /// Why there is no cross-check: the interface carried more than the test's own packets
    /// can account for (other traffic shared it), so no percentage is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub void_reason: Option<String>,
}

/// The most interface bytes a test's own packets make per application byte: each packet
/// carries at least the smaller of the write length and 536 B (TCP's default MSS, RFC 9293
/// 3.7.1; a UDP datagram's payload over the smallest IPv4 MTU, 576 B, less its headers) under
/// at most 114 B of headers (Ethernet 14, IPv6 40, TCP with the most options 60), and is
/// answered by at most one acknowledgement of as many.
fn most_interface_bytes_per_app_byte(c: &model::net::NetConfig) -> f64 {
    const HEADERS: f64 = 14.0 + 40.0 + 60.0;
    let smallest = c.len.clamp(1, c.mss.unwrap_or(536).clamp(1, 536));
    1.0 + 2.0 * HEADERS / f64::from(smallest)
}

/// CPU seconds per GB (10^9 application bytes) at each end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPerGb {
    pub local_s_per_gb: Option<f64>,
    pub peer_s_per_gb: Option<f64>,
}

/// One step of `--find-rate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateStep {
    #[serde(rename = "offered_bits_per_sec", alias = "offered_bps")]
    pub offered_bps: f64,
    #[serde(rename = "received_bits_per_sec", alias = "received_bps")]
    pub received_bps: f64,
    pub loss_percent: f64,
}

/// `--find-rate`'s answer: the highest offered rate with loss under the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FindRate {
    pub threshold_percent: f64,
    /// Bits per second; `None` when even the lowest rate tried lost too much.
    #[serde(rename = "rate_bits_per_sec", alias = "rate_bps")]
    pub rate_bps: Option<f64>,
    pub steps: Vec<RateStep>,
}

/// What `headroom bench net --json` writes (the envelope aside), read back by report,
/// compare, history and the survey. Fields a document of an earlier version may lack are
/// `#[serde(default)]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NetDocument {
    pub measurement: NetMeasurement,
    #[serde(default)]
    pub link: Option<LinkFacts>,
    /// The ceiling of a document from before each direction had its own (`flows`).
    #[serde(default)]
    pub ceiling: Option<NetCeiling>,
    #[serde(default)]
    pub no_ceiling_reason: Option<String>,
    #[serde(default)]
    pub flows: Vec<FlowVerdict>,
    #[serde(default)]
    pub interface_check: Option<InterfaceCheck>,
    /// Interrupts of the interface's device and its root port's PMU bytes, sampled beside
    /// the engine (the same columns as `bench disk`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::kinds::count::BesideCounters>,
    #[serde(default)]
    pub cpu_per_gb: CpuPerGb,
    #[serde(default)]
    pub find_rate: Option<FindRate>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub findings: Vec<Finding>,
}

fn mbit(bps_bits: f64) -> String {
    format!("{:.2} Mbit/s", bps_bits / 1e6)
}

fn ip_of(m: &NetMeasurement) -> IpVersion {
    let v6 = m
        .local
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|a| matches!(a.ip(), std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none()));
    if v6 {
        IpVersion::V6
    } else {
        IpVersion::V4
    }
}

/// What the transfers of a test are, for the ceiling: TCP with or without timestamps, or UDP
/// datagrams of the test's length, and the words the basis names them with.
fn transfers(f: &LinkFacts, m: &NetMeasurement) -> Result<(GoodputParams, String), String> {
    let c = &m.config;
    let timestamps = f.tcp_timestamps != Some(0);
    let transport = match c.protocol {
        Protocol::Tcp => Transport::Tcp { timestamps },
        Protocol::Udp => Transport::Udp { payload: c.len },
    };
    let what = match c.protocol {
        Protocol::Tcp => format!(
            "TCP {} timestamps (net.ipv4.tcp_timestamps = {})",
            if timestamps { "with" } else { "without" },
            f.tcp_timestamps.map_or("?".into(), |t| t.to_string())
        ),
        Protocol::Udp => format!("UDP datagrams of {} B", c.len),
    };
    let Some(mtu) = f.mtu else {
        return Err(format!("the MTU of {} is not known", f.interface));
    };
    Ok((
        GoodputParams {
            mtu,
            ip: ip_of(m),
            transport,
        },
        what,
    ))
}

/// The ceiling of the direction `flow` of this test, or why it has none: the link's ceiling
/// ([`model::net::link_ceiling`]) the way this end sees that flow (it sends the flow, or
/// receives it).
pub fn flow_ceiling(f: &LinkFacts, m: &NetMeasurement, flow: Flow) -> Result<NetCeiling, String> {
    let (p, what) = transfers(f, m)?;
    let sends = m.streams.iter().any(|s| s.flow == flow && s.local_sends);
    let way = if sends { Way::Sends } else { Way::Receives };
    let c = link_ceiling(f, &p, &what, way)?;
    Ok(NetCeiling {
        goodput_bps: c.goodput_bps,
        egress_only: c.by_shaper,
        basis: c.basis,
    })
}

impl NetDocument {
    /// Judge a measurement: ceiling, efficiency per direction, CPU per GB, findings.
    /// `iface` is the /proc/net/dev delta (tx, rx bytes) of the test's interface.
    pub fn new(
        measurement: NetMeasurement,
        link: Option<LinkFacts>,
        iface: Option<(String, u64, u64)>,
        notes: Vec<String>,
    ) -> NetDocument {
        let flows: Vec<FlowVerdict> = measurement
            .flows()
            .into_iter()
            .map(|flow| {
                let summary = measurement.summary(flow);
                let (ceiling, no_ceiling_reason) = match &link {
                    Some(f) => match flow_ceiling(f, &measurement, flow) {
                        Ok(c) => (Some(c), None),
                        Err(r) => (None, Some(r)),
                    },
                    None => (
                        None,
                        Some(
                            "the interface of the test could not be found: no ceiling".to_string(),
                        ),
                    ),
                };
                let efficiency = match (&ceiling, summary.receiver_bps) {
                    (Some(c), Some(r)) if c.goodput_bps > 0.0 => Some(r / (c.goodput_bps * 8.0)),
                    _ => None,
                };
                let bytes_gap = match (summary.sender_bytes, summary.receiver_bytes) {
                    (Some(s), Some(r)) if s > 0 => Some((s as f64 - r as f64) / s as f64),
                    _ => None,
                };
                FlowVerdict {
                    flow,
                    summary,
                    ceiling,
                    no_ceiling_reason,
                    efficiency,
                    bytes_gap,
                }
            })
            .collect();
        // The document's one `ceiling` (as before per-direction ceilings): the first
        // direction's.
        let (ceil, reason) = match flows.first() {
            Some(v) => (v.ceiling.clone(), v.no_ceiling_reason.clone()),
            None => (None, Some("the test carried no stream".to_string())),
        };
        let (app_sent, app_received) = app_bytes(&measurement);
        let interface_check = iface.map(|(interface, tx, rx)| {
            let loopback = link.as_ref().is_some_and(|l| l.is_loopback);
            // On loopback every packet is counted once sent and once received.
            let (iface_bytes, app) = if loopback {
                (tx, app_sent + app_received)
            } else if app_sent >= app_received {
                (tx, app_sent)
            } else {
                (rx, app_received)
            };
            let most = app as f64 * most_interface_bytes_per_app_byte(&measurement.config);
            let void_reason = (app > 0 && iface_bytes as f64 > most).then(|| {
                format!(
                    "{interface} carried {iface_bytes} B, more than the {} B the test's own \
                     packets can make with their headers and acknowledgements: other traffic \
                     shared it, so its counters do not check the test's",
                    most.round() as u64
                )
            });
            InterfaceCheck {
                interface,
                tx_bytes: tx,
                rx_bytes: rx,
                app_sent,
                app_received,
                overhead: (app > 0 && void_reason.is_none())
                    .then(|| iface_bytes as f64 / app as f64 - 1.0),
                void_reason,
            }
        });
        let gb = |bytes: u64| bytes as f64 / model::units::GB;
        // CPU time is counted from the end of the omitted seconds: the bytes after it.
        let moved: u64 = measurement.streams.iter().map(|s| s.local.bytes).sum();
        let cpu_per_gb = CpuPerGb {
            local_s_per_gb: (moved > 0).then(|| measurement.cpu_local.cpu_seconds() / gb(moved)),
            peer_s_per_gb: measurement
                .cpu_peer
                .filter(|_| moved > 0)
                .map(|c| c.cpu_seconds() / gb(moved)),
        };
        let mut r = NetDocument {
            measurement,
            link,
            ceiling: ceil,
            no_ceiling_reason: reason,
            flows,
            interface_check,
            counters: None,
            cpu_per_gb,
            find_rate: None,
            notes,
            findings: Vec::new(),
        };
        r.findings = findings(&r);
        r
    }
}

/// The application bytes this end sent and received (payload only, omitted seconds
/// included: the interface and the bus carried them too).
pub fn app_bytes(m: &NetMeasurement) -> (u64, u64) {
    let sum = |sends: bool| {
        m.streams
            .iter()
            .filter(|s| s.local_sends == sends)
            .map(|s| s.local.bytes + s.local.omitted_bytes)
            .sum()
    };
    (sum(true), sum(false))
}

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let n = <NetDocument as super::KindDocument>::read(doc, origin)?;
    let m = &n.measurement;
    let c = &m.config;
    let proto = serde_name(&c.protocol).to_uppercase();
    s.target = Some(m.peer.clone());
    if let Some(i) = &m.interface {
        s.context.push(("interface".into(), i.clone()));
    }
    s.context.push(("role".into(), serde_name(&m.role)));
    s.context.push(("streams".into(), c.streams.to_string()));
    if let Some(b) = c.bitrate_bps {
        s.context.push((
            "offered".into(),
            format!("{:.2} Mbit/s per stream", b as f64 / 1e6),
        ));
    }
    // Each direction against its own ceiling (a shaper bounds only what its
    // host sends). A document from before per-direction ceilings has one: it
    // bounds a direction this end sent, or both unless it was a shaper here.
    let sends = |flow| m.streams.iter().any(|x| x.flow == flow && x.local_sends);
    let ceiling_of = |f: &FlowVerdict| {
        f.ceiling.clone().or_else(|| {
            n.ceiling
                .clone()
                .filter(|_| f.no_ceiling_reason.is_none())
                .filter(|c| !c.egress_only || sends(f.flow))
        })
    };
    let first = n.flows.first();
    s.no_ceiling_reason = first
        .and_then(|f| f.no_ceiling_reason.clone())
        .or_else(|| n.no_ceiling_reason.clone());
    // Each direction's ceiling is a fact of its own, which compare lines up by
    // direction (the tests carry them too; there is no one ceiling of the run).
    for f in &n.flows {
        let fact = match ceiling_of(f) {
            Some(c) => format!("{} MB/s: {}", mb(c.goodput_bps / MB), c.basis),
            None => format!(
                "none: {}",
                f.no_ceiling_reason
                    .as_deref()
                    .or(n.no_ceiling_reason.as_deref())
                    .unwrap_or("the path has no known ceiling")
            ),
        };
        let flow = serde_name(&f.flow).replace("-to-", " -> ");
        put(s, &format!("ceiling {flow}"), fact);
    }
    for f in &n.flows {
        let mb_s = f.summary.receiver_bps.unwrap_or(0.0) / 8.0 / MB;
        // `client-to-server`, as the document names the flow.
        let flow = serde_name(&f.flow);
        let ceiling = match ceiling_of(f) {
            Some(c) => Ok(CeilingRow {
                mb_s: c.goodput_bps / MB,
                bottleneck: c.basis.clone(),
            }),
            None => Err(f
                .no_ceiling_reason
                .clone()
                .or_else(|| n.no_ceiling_reason.clone())
                .unwrap_or_else(|| "the path has no known ceiling".into())),
        };
        s.tests.push(TestRow {
            efficiency: f.efficiency,
            ceiling: Some(ceiling),
            ..TestRow::single(
                format!("{proto} {}", flow.replace("-to-", " -> ")),
                flow.clone(),
                Some(u64::from(c.len)),
                mb_s,
            )
        });
        // The flow's streams summed interval by interval.
        let streams: Vec<_> = m.streams.iter().filter(|x| x.flow == f.flow).collect();
        let n_iv = streams.iter().map(|x| x.intervals.len()).max().unwrap_or(0);
        // A step per interval: its rate from its start to its end.
        let points = (0..n_iv)
            .filter_map(|i| {
                let ivs: Vec<_> = streams.iter().filter_map(|x| x.intervals.get(i)).collect();
                let first = ivs.first()?;
                let secs = first.end_s - first.start_s;
                let bytes: u64 = ivs.iter().map(|v| v.bytes).sum();
                let v = bytes as f64 / secs / MB;
                (secs > 0.0).then_some([(first.start_s, v), (first.end_s, v)])
            })
            .flatten()
            .collect();
        s.series.push(RateSeries {
            name: flow.replace("-to-", " -> "),
            points,
        });
    }
    Ok(())
}

/// `bench net` as every report reads it.
pub struct NetKind;

impl super::Kind for NetKind {
    fn kind(&self) -> DocumentKind {
        <NetDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["measurement"]
    }

    fn exports(&self) -> &'static [Export] {
        &[
            Export::OpenMetrics,
            Export::Lava,
            Export::Kcidb,
            Export::Iperf3Json,
        ]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s)
    }
}

impl super::KindDocument for NetDocument {
    const KIND: DocumentKind = DocumentKind::Net;

    fn text(&self, _how: &super::Text<'_>) -> String {
        text::render_text(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::net::text::render_text;
    use model::net::{CpuUse, Direction, EndTotals, NetConfig, Role, Shaper, StreamResult};

    /// The report of a TCP (128 KiB writes) or UDP (1448 B datagrams) run that moved `bytes`
    /// each way over a link with `facts`, without counters.
    fn report_on(protocol: Protocol, bytes: u64, facts: LinkFacts) -> NetDocument {
        let len = match protocol {
            Protocol::Tcp => 131_072,
            Protocol::Udp => 1448,
        };
        NetDocument::new(
            measurement(protocol, len, bytes, bytes),
            Some(facts),
            None,
            vec![],
        )
    }

    fn measurement(protocol: Protocol, len: u32, sent: u64, received: u64) -> NetMeasurement {
        let end = |bytes| EndTotals {
            bytes,
            seconds: 10.0,
            retransmits: Some(3),
            ..EndTotals::default()
        };
        NetMeasurement {
            role: Role::Client,
            config: NetConfig {
                protocol,
                direction: Direction::Forward,
                duration_s: 10,
                omit_s: 0,
                streams: 1,
                len,
                bitrate_bps: None,
                window: None,
                mss: None,
                zerocopy: false,
                udp_counters_64bit: false,
            },
            peer: "192.0.2.2:5201".into(),
            local: "192.0.2.1:40000".into(),
            interface: Some("eth0".into()),
            peer_version: Some("3.12".into()),
            streams: vec![StreamResult {
                id: 1,
                flow: Flow::ClientToServer,
                local_sends: true,
                local: end(sent),
                peer: Some(end(received)),
                intervals: vec![],
                rtt_us: Some(250),
                rttvar_us: Some(20),
                pmtu: Some(1500),
                snd_mss: Some(1448),
                local_addr: None,
                peer_addr: None,
                sndbuf: None,
                rcvbuf: None,
            }],
            cpu_local: CpuUse {
                total_percent: 20.0,
                user_percent: 2.0,
                system_percent: 18.0,
                wall_s: 10.0,
            },
            cpu_peer: None,
            congestion_local: Some("cubic".into()),
            congestion_peer: Some("cubic".into()),
            interval_s: 1.0,
            stopped_by: NetStop::Completed,
            start: None,
        }
    }

    /// An interface that carried far more than the test (other traffic on it: +15,762 % on
    /// lo after three tests in a row) gives no cross-check and says why, with no percentage;
    /// one within what headers and acknowledgements make keeps its percentage.
    #[test]
    fn an_interface_busy_with_other_traffic_checks_nothing() {
        let app = 100_000_000u64;
        let busy = NetDocument::new(
            measurement(Protocol::Tcp, 131_072, app, app),
            Some(gigabit()),
            Some(("eth0".into(), app * 158, 1_000_000)),
            vec![],
        );
        let ic = busy.interface_check.as_ref().unwrap();
        assert_eq!(ic.overhead, None);
        // In the document as its readers see it.
        let why = serde_json::to_value(ic).unwrap()["void_reason"].clone();
        assert!(why.as_str().unwrap().contains("other traffic"), "{why}");
        let text = render_text(&busy);
        assert!(
            text.contains("no interface cross-check: eth0 carried"),
            "{text}"
        );
        assert!(!text.contains("interface +"), "{text}");
        // Small writes: 40 % of headers and acknowledgements is the test's own.
        let small = NetDocument::new(
            measurement(Protocol::Tcp, 536, app, app),
            Some(gigabit()),
            Some(("eth0".into(), app * 14 / 10, 1_000_000)),
            vec![],
        );
        let ic = small.interface_check.as_ref().unwrap();
        assert!(serde_json::to_value(ic)
            .unwrap()
            .get("void_reason")
            .is_none());
        assert!((ic.overhead.unwrap() - 0.4).abs() < 1e-9);
    }

    fn gigabit() -> LinkFacts {
        LinkFacts {
            interface: "eth0".into(),
            speed_mbps: Some(1000),
            duplex: Some("full".into()),
            mtu: Some(1500),
            tcp_timestamps: Some(1),
            ..LinkFacts::default()
        }
    }

    #[test]
    fn gigabit_ethernet_tcp() {
        // iperf3's familiar 941 Mbit/s over 1G: 10 s at 941.0 Mbit/s received.
        let received = (941.0e6 / 8.0 * 10.0) as u64;
        let r = NetDocument::new(
            measurement(Protocol::Tcp, 131_072, received + 1000, received),
            Some(gigabit()),
            Some(("eth0".into(), received + received / 20, 1_000_000)),
            vec![],
        );
        let c = r.ceiling.as_ref().unwrap();
        assert_eq!(format!("{:.1}", c.goodput_bps * 8.0 / 1e6), "941.5");
        assert!(c.basis.contains("Ethernet 1000 Mb/s") && c.basis.contains("with timestamps"));
        let e = r.flows[0].efficiency.unwrap();
        assert!((e - 941.0 / 941.5).abs() < 1e-3, "{e}");
        assert!((r.interface_check.as_ref().unwrap().overhead.unwrap() - 0.05).abs() < 1e-6);
        // CPU: 20 % of 10 s for the 1.176 GB this end moved.
        let per_gb = r.cpu_per_gb.local_s_per_gb.unwrap();
        assert!((per_gb - 2.0 / ((received + 1000) as f64 / 1e9)).abs() < 1e-9);
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        let text = render_text(&r);
        assert!(
            text.contains("efficiency client -> server: 941.00 Mbit/s / 941.48 Mbit/s = 99.9 %"),
            "{text}"
        );
        assert!(
            !text.contains("Interrupts:"),
            "no counters, no lines: {text}"
        );
    }

    /// A rate above the ceiling was "above it, so the link facts or the
    /// ceiling's basis are wrong": now the one finding of every kind, saying what headroom
    /// believes carried it past the link.
    #[test]
    fn above_the_ceiling_says_what_carried_it_past_the_link() {
        // 1100 Mbit/s received over a 1000 Mb/s virtio link with no shaper.
        let received = (1100.0e6 / 8.0 * 10.0) as u64;
        let facts = LinkFacts {
            driver: Some("virtio_net".into()),
            ..gigabit()
        };
        let r = NetDocument::new(
            measurement(Protocol::Tcp, 131_072, received, received),
            Some(facts),
            None,
            vec![],
        );
        let f = r
            .findings
            .iter()
            .find(|f| f.message.contains("of the ceiling of"))
            .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains(
                "client -> server 1100.00 Mbit/s is 117 % of the ceiling of Ethernet 1000 Mb/s \
                 on eth0"
            ) && f.message.contains(
                "so the ceiling does not bound this path and the efficiency is no number to \
                 quote; headroom believes the path is emulated: eth0 is a virtio (paravirtual) \
                 interface"
            ),
            "{}",
            f.message
        );
    }

    #[test]
    fn counters_beside_the_engine_in_the_text_and_the_document() {
        let mut r = report_on(Protocol::Tcp, 2_000_000, gigabit());
        // This end sent (Tx) and received nothing: the PMU's Tx is set against what was sent.
        assert_eq!(app_bytes(&r.measurement), (2_000_000, 0));
        r.counters = Some(crate::kinds::count::BesideCounters {
            links: None,
            interrupts: vec![crate::kinds::count::IrqRate {
                device: "eth0 0000:00:03.0".into(),
                irqs: vec![37, 38, 39],
                names: vec!["virtio2-input.0".into(), "virtio2-output.0".into()],
                count: 120,
                per_second: 12.0,
                seconds: 10.0,
            }],
            pmu: None,
            notes: vec!["0000:00:03.0: no PMU counts this device's traffic".into()],
        });
        let text = render_text(&r);
        assert!(
            text.contains("Interrupts: eth0 0000:00:03.0 (IRQ 37,38,39 virtio2-input.0, virtio2-output.0): 120 during the run, 12.0 /s\nCounters: 0000:00:03.0: no PMU counts this device's traffic\n"),
            "{text}"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["counters"]["interrupts"][0]["per_second"], 12.0);
    }

    #[test]
    fn timestamps_off_and_usb2_adapter() {
        let facts = LinkFacts {
            tcp_timestamps: Some(0),
            usb_speed_mbps: Some(480.0),
            ..gigabit()
        };
        let r = report_on(Protocol::Tcp, 1, facts);
        let c = r.ceiling.as_ref().unwrap();
        assert!(
            c.basis.contains("without timestamps") && c.basis.contains("USB 480"),
            "{}",
            c.basis
        );
        // USB 2 bulk: 53.248 MB/s of frames (13 x 512 B per 125 us microframe), of which
        // 1460/1538 is TCP payload.
        assert!(
            (c.goodput_bps - 53.248e6 * 1460.0 / 1538.0).abs() < 1.0,
            "{}",
            c.goodput_bps
        );
        let text: Vec<String> = r.findings.iter().map(|f| f.message.clone()).collect();
        assert!(
            text.iter().any(|m| m.contains("USB 480 Mb/s link")),
            "{text:?}"
        );
    }

    #[test]
    fn a_narrow_pcie_link_caps_a_fast_nic() {
        let facts = LinkFacts {
            speed_mbps: Some(10_000),
            pcie_ceiling: Some((
                "PCIe 0000:00:1c.0 -> 0000:03:00.0 at 2.5 GT/s x1".into(),
                200e6,
            )),
            ..gigabit()
        };
        let r = report_on(Protocol::Tcp, 1, facts);
        let c = r.ceiling.unwrap();
        // 200 MB/s of frames, 1448 of every 1538 bytes TCP payload.
        assert!(
            (c.goodput_bps - 200e6 * 1448.0 / 1538.0).abs() < 1.0,
            "{}",
            c.goodput_bps
        );
        assert!(c.basis.contains("capped by PCIe"), "{}", c.basis);
    }

    #[test]
    fn no_ceiling_says_why() {
        let lo = LinkFacts {
            interface: "lo".into(),
            mtu: Some(65536),
            is_virtual: true,
            is_loopback: true,
            ..LinkFacts::default()
        };
        let r = report_on(Protocol::Tcp, 10, lo);
        assert!(r.ceiling.is_none());
        assert!(r.no_ceiling_reason.unwrap().contains("loopback"));
        let veth = LinkFacts {
            interface: "veth0".into(),
            speed_mbps: Some(10_000),
            mtu: Some(1500),
            is_virtual: true,
            ..LinkFacts::default()
        };
        let r = report_on(Protocol::Tcp, 10, veth.clone());
        assert!(r.no_ceiling_reason.unwrap().contains("virtual"));
        // A shaper gives a virtual link its ceiling.
        let shaped = LinkFacts {
            shaper: Some(Shaper {
                rate_bps: 100e6,
                overhead: 24,
                mpu: 0,
            }),
            tcp_timestamps: Some(1),
            ..veth
        };
        let r = report_on(Protocol::Udp, 10, shaped);
        let c = r.ceiling.unwrap();
        assert!((c.goodput_bps * 8.0 - 100e6 * 1448.0 / 1514.0).abs() < 1e-3);
    }

    /// A peer that calls its congestion control and its version escape
    /// sequences (clear the screen, set the terminal's title) is shown them, escaped.
    #[test]
    fn a_peers_strings_reach_the_text_escaped() {
        let mut m = measurement(Protocol::Tcp, 131_072, 1000, 1000);
        m.congestion_peer = Some("bbr\x1b[2J".into());
        m.peer_version = Some("\x1b]0;TITLE\x07 3.12".into());
        let text = render_text(&NetDocument::new(m, Some(gigabit()), None, vec![]));
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text}");
        assert!(
            text.contains("congestion control: cubic here, bbr\\x1b[2J at the peer"),
            "{text}"
        );
        assert!(
            text.contains("the peer says it is \\x1b]0;TITLE\\x07 3.12"),
            "{text}"
        );
    }

    #[test]
    fn udp_loss_and_byte_gap_findings() {
        let mut m = measurement(Protocol::Udp, 1448, 1_000_000, 900_000);
        m.streams[0].local.packets = Some(1000);
        m.streams[0].peer.as_mut().unwrap().lost_packets = Some(100);
        let r = NetDocument::new(m, Some(gigabit()), None, vec![]);
        let text: Vec<String> = r.findings.iter().map(|f| f.message.clone()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("10.00 % of the UDP datagrams were lost")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.contains("10.0 % fewer bytes")),
            "{text:?}"
        );
        assert!(render_text(&r).contains("100/1000 (10.00%)"));
    }
}
