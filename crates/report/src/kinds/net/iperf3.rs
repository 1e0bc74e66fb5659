//! iperf3 3.12's `-J` document of a headroom test (`bench net -J`), client or server side:
//! the layout and the sums of iperf_api.c (iperf_print_results, iperf_print_intermediate,
//! print_interval_results, iperf_on_connect; tag 3.12), filled with headroom's
//! measurements. A key iperf3 writes that headroom does not measure holds what iperf3
//! writes when it has nothing: `snd_wnd`/`max_snd_wnd` 0 (Linux's tcpi_snd_wnd is newer
//! than the tcp_info headroom reads), `tos`/`bytes`/`blocks` 0 (no -S, -n, -k); `socket` is
//! the stream's iperf3 id (the same at both ends) instead of a local descriptor number, and
//! `version` names headroom.

use model::net::{Direction, EndTotals, Flow, Interval, NetMeasurement, Protocol, StreamResult};
use serde_json::{json, Map, Value};

/// Host facts iperf3 writes that a measurement does not keep.
#[derive(Clone, Debug)]
pub struct SystemInfo<'a> {
    /// `uname` as iperf3's get_system_info joins it: sysname, nodename, release, version,
    /// machine.
    pub system_info: &'a str,
    /// What `version` says (`headroom 0.1.0`).
    pub version: &'a str,
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// `host` and `port` of `host:port`, `[v6]:port` or a bare host; an IPv4-mapped IPv6
/// address as plain IPv4, as iperf3 prints it (mapped_v4_to_regular_v4).
fn host_port(addr: &str) -> (String, u64) {
    let (host, port) = match addr.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.is_empty() => (
            h.trim_start_matches('[').trim_end_matches(']'),
            p.parse().unwrap_or(0),
        ),
        _ => (addr, 0),
    };
    let host = match host.strip_prefix("::ffff:") {
        Some(v4) if v4.parse::<std::net::Ipv4Addr>().is_ok() => v4,
        _ => host,
    };
    (host.to_string(), port)
}

/// The streams of one direction, as iperf3 sums them: the client's sending streams and the
/// server's receiving ones come first (iperf_print_results' modes); a direction is
/// `_bidir_reverse` when it runs from the server in a --bidir test.
struct Group<'a> {
    streams: Vec<&'a StreamResult>,
    /// This end sends the group's bytes (iperf3's stream_must_be_sender).
    local_sends: bool,
    suffix: &'static str,
}

fn groups(m: &NetMeasurement) -> Vec<Group<'_>> {
    let bidir = m.config.direction == Direction::Bidir;
    let client = m.role == model::net::Role::Client;
    let mut flows = m.flows();
    // The client's sending streams first, the server's receiving ones first: client to
    // server in both cases.
    flows.sort_by_key(|f| *f != Flow::ClientToServer);
    flows
        .into_iter()
        .map(|flow| {
            let streams: Vec<&StreamResult> = m.streams.iter().filter(|s| s.flow == flow).collect();
            let local_sends = (flow == Flow::ClientToServer) == client;
            Group {
                streams,
                local_sends,
                suffix: if bidir && flow == Flow::ServerToClient {
                    "_bidir_reverse"
                } else {
                    ""
                },
            }
        })
        .collect()
}

fn tcp(m: &NetMeasurement) -> bool {
    m.config.protocol == Protocol::Tcp
}

/// One stream's interval (print_interval_results).
fn interval_stream(m: &NetMeasurement, s: &StreamResult, iv: &Interval) -> Value {
    let secs = iv.end_s - iv.start_s;
    let mut o = Map::new();
    o.insert("socket".into(), json!(s.id));
    o.insert("start".into(), json!(iv.start_s));
    o.insert("end".into(), json!(iv.end_s));
    o.insert("seconds".into(), json!(secs));
    o.insert("bytes".into(), json!(iv.bytes));
    o.insert("bits_per_second".into(), json!(iv.bits_per_second()));
    match (tcp(m), s.local_sends) {
        (true, true) => {
            o.insert("retransmits".into(), json!(iv.retransmits.unwrap_or(0)));
            o.insert("snd_cwnd".into(), json!(iv.cwnd_bytes.unwrap_or(0)));
            o.insert("snd_wnd".into(), json!(0));
            o.insert("rtt".into(), json!(iv.rtt_us.unwrap_or(0)));
            o.insert("rttvar".into(), json!(iv.rttvar_us.unwrap_or(0)));
            o.insert("pmtu".into(), json!(iv.pmtu.unwrap_or(0)));
        }
        (true, false) => {}
        (false, true) => {
            o.insert("packets".into(), json!(iv.packets.unwrap_or(0)));
        }
        (false, false) => {
            let lost = iv.lost_packets.unwrap_or(0);
            let packets = iv.packets.unwrap_or(0);
            o.insert("jitter_ms".into(), json!(iv.jitter_ms.unwrap_or(0.0)));
            o.insert("lost_packets".into(), json!(lost));
            o.insert("packets".into(), json!(packets));
            o.insert("lost_percent".into(), json!(percent(lost, packets)));
        }
    }
    o.insert("omitted".into(), json!(false));
    o.insert("sender".into(), json!(s.local_sends));
    Value::Object(o)
}

/// One group's sum of interval `i` (iperf_print_intermediate).
fn interval_sum(m: &NetMeasurement, g: &Group<'_>, i: usize) -> Option<Value> {
    let ivs: Vec<&Interval> = g
        .streams
        .iter()
        .filter_map(|s| s.intervals.get(i))
        .collect();
    let first = ivs.first()?;
    let secs = first.end_s - first.start_s;
    let bytes: u64 = ivs.iter().map(|v| v.bytes).sum();
    let sum = |f: fn(&Interval) -> Option<u64>| ivs.iter().filter_map(|v| f(v)).sum::<u64>();
    let mut o = Map::new();
    o.insert("start".into(), json!(first.start_s));
    o.insert("end".into(), json!(first.end_s));
    o.insert("seconds".into(), json!(secs));
    o.insert("bytes".into(), json!(bytes));
    o.insert("bits_per_second".into(), json!(rate(bytes, secs)));
    match (tcp(m), g.local_sends) {
        (true, true) => {
            o.insert("retransmits".into(), json!(sum(|v| v.retransmits)));
        }
        (true, false) => {}
        (false, true) => {
            o.insert("packets".into(), json!(sum(|v| v.packets)));
        }
        (false, false) => {
            let jitters: Vec<f64> = ivs.iter().filter_map(|v| v.jitter_ms).collect();
            let (lost, packets) = (sum(|v| v.lost_packets), sum(|v| v.packets));
            let jitter = if jitters.is_empty() {
                0.0
            } else {
                jitters.iter().sum::<f64>() / jitters.len() as f64
            };
            o.insert("jitter_ms".into(), json!(jitter));
            o.insert("lost_packets".into(), json!(lost));
            o.insert("packets".into(), json!(packets));
            o.insert("lost_percent".into(), json!(percent(lost, packets)));
        }
    }
    o.insert("omitted".into(), json!(false));
    o.insert("sender".into(), json!(g.local_sends));
    Some(Value::Object(o))
}

fn intervals(m: &NetMeasurement, gs: &[Group<'_>]) -> Vec<Value> {
    let n = m
        .streams
        .iter()
        .map(|s| s.intervals.len())
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|i| {
            let mut o = Map::new();
            let streams: Vec<Value> = m
                .streams
                .iter()
                .filter_map(|s| s.intervals.get(i).map(|iv| interval_stream(m, s, iv)))
                .collect();
            o.insert("streams".into(), Value::Array(streams));
            for g in gs {
                if let Some(v) = interval_sum(m, g, i) {
                    o.insert(format!("sum{}", g.suffix), v);
                }
            }
            Value::Object(o)
        })
        .collect()
}

/// A sender's TCP state over the test, from its intervals: the largest congestion window,
/// the largest, smallest and mean RTT, us (iperf3's stream_max_snd_cwnd ... stream_sum_rtt
/// over its interval samples); 0 where this end did not send.
fn tcp_state(s: &StreamResult) -> (u64, u32, u32, u32) {
    if !s.local_sends {
        return (0, 0, 0, 0);
    }
    let cwnd = s
        .intervals
        .iter()
        .filter_map(|i| i.cwnd_bytes)
        .max()
        .unwrap_or(0);
    let rtts: Vec<u32> = s.intervals.iter().filter_map(|i| i.rtt_us).collect();
    let mean = if rtts.is_empty() {
        0
    } else {
        (rtts.iter().map(|&r| u64::from(r)).sum::<u64>() / rtts.len() as u64) as u32
    };
    (
        cwnd,
        rtts.iter().copied().max().unwrap_or(0),
        rtts.iter().copied().min().unwrap_or(0),
        mean,
    )
}

/// What iperf3 writes for a stream end it has nothing of: zeros.
fn nothing() -> EndTotals {
    EndTotals::default()
}

/// One stream of `end.streams` (iperf_print_results).
fn end_stream(m: &NetMeasurement, s: &StreamResult) -> Value {
    let zero = nothing();
    let sender = s.sender().unwrap_or(&zero);
    let receiver = s.receiver().unwrap_or(&zero);
    if tcp(m) {
        let (cwnd, max_rtt, min_rtt, mean_rtt) = tcp_state(s);
        json!({
            "sender": {
                "socket": s.id,
                "start": 0,
                "end": sender.seconds,
                "seconds": sender.seconds,
                "bytes": sender.bytes,
                "bits_per_second": rate(sender.bytes, sender.seconds),
                "retransmits": sender.retransmits.unwrap_or(0),
                "max_snd_cwnd": cwnd,
                "max_snd_wnd": 0,
                "max_rtt": max_rtt,
                "min_rtt": min_rtt,
                "mean_rtt": mean_rtt,
                "sender": s.local_sends,
            },
            "receiver": {
                "socket": s.id,
                "start": 0,
                "end": receiver.seconds,
                "seconds": receiver.seconds,
                "bytes": receiver.bytes,
                "bits_per_second": rate(receiver.bytes, receiver.seconds),
                "sender": s.local_sends,
            },
        })
    } else {
        let lost = receiver.lost_packets.unwrap_or(0);
        // The sender's count when known, else the receiver's (iperf3's packet_count).
        let packets = sender.packets.or(receiver.packets).unwrap_or(0);
        json!({
            "udp": {
                "socket": s.id,
                "start": 0,
                "end": sender.seconds,
                "seconds": sender.seconds,
                "bytes": sender.bytes,
                "bits_per_second": rate(sender.bytes, sender.seconds),
                "jitter_ms": receiver.jitter_ms.unwrap_or(0.0),
                "lost_packets": lost,
                "packets": packets,
                "lost_percent": percent(lost, packets),
                "out_of_order": receiver.out_of_order.unwrap_or(0),
                "sender": s.local_sends,
            }
        })
    }
}

/// The group's sums of `end` (`sum_sent`, `sum_received`, and UDP's `sum`).
fn end_sums(m: &NetMeasurement, g: &Group<'_>, end: &mut Map<String, Value>) {
    let senders: Vec<&EndTotals> = g.streams.iter().filter_map(|s| s.sender()).collect();
    let receivers: Vec<&EndTotals> = g.streams.iter().filter_map(|s| s.receiver()).collect();
    let secs = |e: &[&EndTotals]| e.iter().map(|t| t.seconds).fold(0.0, f64::max);
    let total = |e: &[&EndTotals], f: fn(&EndTotals) -> Option<u64>| {
        e.iter().filter_map(|t| f(t)).sum::<u64>()
    };
    let (sender_s, receiver_s) = (secs(&senders), secs(&receivers));
    let sent = total(&senders, |t| Some(t.bytes));
    let received = total(&receivers, |t| Some(t.bytes));
    let sfx = g.suffix;
    if tcp(m) {
        end.insert(
            format!("sum_sent{sfx}"),
            json!({
                "start": 0,
                "end": sender_s,
                "seconds": sender_s,
                "bytes": sent,
                "bits_per_second": rate(sent, sender_s),
                "retransmits": total(&senders, |t| t.retransmits),
                "sender": g.local_sends,
            }),
        );
        end.insert(
            format!("sum_received{sfx}"),
            json!({
                "start": 0,
                "end": receiver_s,
                "seconds": receiver_s,
                "bytes": received,
                "bits_per_second": rate(received, receiver_s),
                "sender": g.local_sends,
            }),
        );
        return;
    }
    let lost = total(&receivers, |t| t.lost_packets);
    let sender_packets = total(&senders, |t| t.packets);
    let receiver_packets = total(&receivers, |t| t.packets);
    let packets = if sender_packets > 0 {
        sender_packets
    } else {
        receiver_packets
    };
    let jitters: Vec<f64> = receivers.iter().filter_map(|t| t.jitter_ms).collect();
    // iperf3 divides the streams' jitter sum by the number of streams.
    let jitter = if g.streams.is_empty() {
        0.0
    } else {
        jitters.iter().sum::<f64>() / g.streams.len() as f64
    };
    end.insert(
        format!("sum{sfx}"),
        json!({
            "start": 0,
            "end": receiver_s,
            "seconds": receiver_s,
            "bytes": sent,
            "bits_per_second": rate(sent, sender_s),
            "jitter_ms": jitter,
            "lost_packets": lost,
            "packets": packets,
            "lost_percent": percent(lost, packets),
            "sender": g.local_sends,
        }),
    );
    end.insert(
        format!("sum_sent{sfx}"),
        json!({
            "start": 0,
            "end": sender_s,
            "seconds": sender_s,
            "bytes": sent,
            "bits_per_second": rate(sent, sender_s),
            "jitter_ms": 0.0,
            "lost_packets": 0,
            "packets": sender_packets,
            "lost_percent": 0.0,
            "sender": true,
        }),
    );
    end.insert(
        format!("sum_received{sfx}"),
        json!({
            "start": 0,
            "end": receiver_s,
            "seconds": receiver_s,
            "bytes": received,
            "bits_per_second": rate(received, receiver_s),
            "jitter_ms": jitter,
            "lost_packets": lost,
            "packets": receiver_packets,
            "lost_percent": percent(lost, receiver_packets),
            "sender": false,
        }),
    );
}

/// `Sat, 28 Nov 2026 12:00:39 GMT` (iperf_on_connect: strftime "%a, %d %b %Y %H:%M:%S %Z"
/// of gmtime).
fn rfc1123(unix_s: u64) -> String {
    crate::kinds::utc(
        i64::try_from(unix_s).unwrap_or(0),
        time::macros::format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
        ),
    )
}

fn start(m: &NetMeasurement, host: &SystemInfo<'_>) -> Value {
    let c = &m.config;
    let mut o = Map::new();
    let connected: Vec<Value> = m
        .streams
        .iter()
        .map(|s| {
            let (lh, lp) = host_port(s.local_addr.as_deref().unwrap_or(""));
            let (rh, rp) = host_port(s.peer_addr.as_deref().unwrap_or(""));
            json!({
                "socket": s.id,
                "local_host": lh,
                "local_port": lp,
                "remote_host": rh,
                "remote_port": rp,
            })
        })
        .collect();
    o.insert("connected".into(), Value::Array(connected));
    o.insert("version".into(), json!(host.version));
    o.insert("system_info".into(), json!(host.system_info));
    let (secs, cookie) = m
        .start
        .as_ref()
        .map_or((0, String::new()), |s| (s.unix_s, s.cookie.clone()));
    o.insert(
        "timestamp".into(),
        json!({ "time": rfc1123(secs), "timesecs": secs }),
    );
    let (peer_host, peer_port) = host_port(&m.peer);
    let who = match m.role {
        model::net::Role::Client => "connecting_to",
        model::net::Role::Server => "accepted_connection",
    };
    o.insert(who.into(), json!({ "host": peer_host, "port": peer_port }));
    o.insert("cookie".into(), json!(cookie));
    if c.protocol == Protocol::Tcp {
        match c.mss {
            Some(mss) => o.insert("tcp_mss".into(), json!(mss)),
            // The MSS the kernel chose for the data connection (iperf3: its control
            // connection's, on the client; 0 on the server).
            None => o.insert(
                "tcp_mss_default".into(),
                json!(m.streams.iter().find_map(|s| s.snd_mss).unwrap_or(0)),
            ),
        };
    }
    let bitrate = c.bitrate_bps.unwrap_or(0);
    o.insert("target_bitrate".into(), json!(bitrate));
    let first = m.streams.first();
    o.insert("sock_bufsize".into(), json!(c.window.unwrap_or(0)));
    o.insert(
        "sndbuf_actual".into(),
        json!(first.and_then(|s| s.sndbuf).unwrap_or(0)),
    );
    o.insert(
        "rcvbuf_actual".into(),
        json!(first.and_then(|s| s.rcvbuf).unwrap_or(0)),
    );
    o.insert(
        "test_start".into(),
        json!({
            "protocol": match c.protocol { Protocol::Tcp => "TCP", Protocol::Udp => "UDP" },
            "num_streams": c.streams,
            "blksize": c.len,
            "omit": c.omit_s,
            "duration": c.duration_s,
            "bytes": 0,
            "blocks": 0,
            "reverse": u32::from(c.direction == Direction::Reverse),
            "tos": 0,
            "target_bitrate": bitrate,
        }),
    );
    Value::Object(o)
}

/// The whole `-J` document.
pub fn document(m: &NetMeasurement, host: &SystemInfo<'_>) -> Value {
    let gs = groups(m);
    let mut end = Map::new();
    // Each group's streams, in the order of the groups.
    let streams: Vec<Value> = gs
        .iter()
        .flat_map(|g| g.streams.iter().map(|s| end_stream(m, s)))
        .collect();
    end.insert("streams".into(), Value::Array(streams));
    for g in &gs {
        end_sums(m, g, &mut end);
    }
    let peer = m.cpu_peer.unwrap_or_default();
    end.insert(
        "cpu_utilization_percent".into(),
        json!({
            "host_total": m.cpu_local.total_percent,
            "host_user": m.cpu_local.user_percent,
            "host_system": m.cpu_local.system_percent,
            "remote_total": peer.total_percent,
            "remote_user": peer.user_percent,
            "remote_system": peer.system_percent,
        }),
    );
    if tcp(m) {
        // As iperf3 after its last group: that group's sender and receiver.
        let last_sends = gs.last().is_some_and(|g| g.local_sends);
        let (snd, rcv) = if last_sends {
            (&m.congestion_local, &m.congestion_peer)
        } else {
            (&m.congestion_peer, &m.congestion_local)
        };
        if let Some(c) = snd {
            end.insert("sender_tcp_congestion".into(), json!(c));
        }
        if let Some(c) = rcv {
            end.insert("receiver_tcp_congestion".into(), json!(c));
        }
    }
    json!({
        "start": start(m, host),
        "intervals": intervals(m, &gs),
        "end": Value::Object(end),
    })
}

/// The document as iperf3 prints it: indented with tabs, one document per test.
pub fn render(m: &NetMeasurement, host: &SystemInfo<'_>) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    // A Value always serializes.
    let _ = document(m, host).serialize(&mut ser);
    // A peer's strings' C1 controls as JSON escapes: stdout may be a terminal.
    crate::outside::json(&String::from_utf8_lossy(&out)).into_owned() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_iperf3_prints_them() {
        assert_eq!(
            host_port("[::ffff:127.0.0.1]:5201"),
            ("127.0.0.1".into(), 5201)
        );
        assert_eq!(
            host_port("[2001:db8::1]:5201"),
            ("2001:db8::1".into(), 5201)
        );
        assert_eq!(host_port("server.lan:5201"), ("server.lan".into(), 5201));
        assert_eq!(host_port(""), (String::new(), 0));
    }

    #[test]
    fn timestamps_as_iperf3_prints_them() {
        // iperf3 3.12 here: "Sat, 28 Nov 2026 12:00:39 GMT", timesecs 1795867239.
        assert_eq!(rfc1123(1_795_867_239), "Sat, 28 Nov 2026 12:00:39 GMT");
        // fio's ctime and rt-tests' RFC 2822 of the same second, through the same helper.
        assert_eq!(
            crate::kinds::disk::fio::ctime(1_795_867_239_000),
            "Sat Nov 28 12:00:39 2026"
        );
        assert_eq!(
            crate::kinds::latency::cyclictest::rfc2822(1_795_867_239_000),
            "Sat, 28 Nov 2026 12:00:39 +0000"
        );
    }
}
