//! The terminal text of `bench net`: iperf3's interval and summary lines, the ceiling and the
//! kernel's count beside them.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The line `bench net` prints on stderr at the end of each interval (`-i`): `[   1.00 s]
/// client to server       941.52 Mbit/s`.
pub fn interval_line(end_s: f64, flow: Flow, bps: f64) -> String {
    format!(
        "[{end_s:7.2} s] {:<17} {:>10.2} Mbit/s",
        flow.label(),
        bps / 1e6
    )
}

/// The line `bench net --find-rate` prints after each trial: what was offered, what arrived
/// and the loss.
pub fn trial_line(offered_bps: f64, received_bps: f64, loss_percent: f64) -> String {
    format!(
        "find-rate: offered {:.2} Mbit/s, received {:.2} Mbit/s, loss {loss_percent:.3} %",
        offered_bps / 1e6,
        received_bps / 1e6
    )
}

/// The terminal text: iperf3's summary lines per direction, then the ceiling, efficiency,
/// CPU, the interface cross-check and the findings.
pub(crate) fn render_text(r: &NetDocument) -> String {
    let m = &r.measurement;
    let mut s = String::new();
    let c = &m.config;
    let _ = writeln!(
        s,
        "{} {} stream(s) per direction, {} s (+{} s omitted), {} B {}{}",
        match c.protocol {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        },
        c.streams,
        c.duration_s,
        c.omit_s,
        c.len,
        // iperf3's "131072 byte blocks": a TCP sender may write more at once (send_len).
        if c.protocol == Protocol::Udp {
            "per datagram"
        } else {
            "blocks"
        },
        c.bitrate_bps.map_or(String::new(), |b| format!(
            ", offered {} per stream",
            mbit(b as f64)
        ))
    );
    let _ = writeln!(
        s,
        "{} {} <-> {} (interface {})",
        match m.role {
            model::net::Role::Client => "client",
            model::net::Role::Server => "server",
        },
        m.local,
        m.peer,
        m.interface.as_deref().unwrap_or("unknown")
    );
    if let Some(v) = &m.peer_version {
        let _ = writeln!(s, "the peer says it is {}", crate::outside::line(v));
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<17} {:<9} {:>8} {:>14} {:>16} {:>8} {:>16} {:>10}",
        "direction", "end", "seconds", "bytes", "rate", "retr", "lost/total", "jitter"
    );
    for v in &r.flows {
        for (end, sender) in [("sender", true), ("receiver", false)] {
            let streams: Vec<_> = m.streams.iter().filter(|x| x.flow == v.flow).collect();
            let ends: Vec<_> = streams
                .iter()
                .filter_map(|x| if sender { x.sender() } else { x.receiver() })
                .collect();
            if ends.is_empty() {
                continue;
            }
            let secs = ends.iter().map(|e| e.seconds).fold(0.0, f64::max);
            let bytes: u64 = ends.iter().map(|e| e.bytes).sum();
            let rate = if secs > 0.0 {
                bytes as f64 * 8.0 / secs
            } else {
                0.0
            };
            let retr = if sender {
                v.summary.retransmits.map_or("-".into(), |x| x.to_string())
            } else {
                "-".into()
            };
            let (lost, jitter) = if !sender && c.protocol == Protocol::Udp {
                (
                    format!(
                        "{}/{} ({:.2}%)",
                        v.summary.lost_packets.unwrap_or(0),
                        v.summary.packets.unwrap_or(0),
                        v.summary.loss_percent().unwrap_or(0.0)
                    ),
                    v.summary
                        .jitter_ms
                        .map_or("-".into(), |j| format!("{j:.3} ms")),
                )
            } else {
                ("-".into(), "-".into())
            };
            let _ = writeln!(
                s,
                "{:<17} {:<9} {:>8.2} {:>14} {:>16} {:>8} {:>16} {:>10}",
                v.flow.label(),
                end,
                secs,
                bytes,
                mbit(rate),
                retr,
                lost,
                jitter
            );
        }
    }
    for st in m.streams.iter().filter(|x| x.rtt_us.is_some()) {
        let cwnd = st
            .intervals
            .last()
            .and_then(|i| i.cwnd_bytes)
            .map_or(String::new(), |c| format!(", cwnd {} KB", c / 1000));
        let _ = writeln!(
            s,
            "stream {} ({}): rtt {} us (var {} us), mss {} B, path MTU {} B{cwnd}",
            st.id,
            st.flow.label(),
            st.rtt_us.unwrap_or(0),
            st.rttvar_us.unwrap_or(0),
            st.snd_mss.map_or("?".into(), |x| x.to_string()),
            st.pmtu.map_or("?".into(), |x| x.to_string()),
        );
    }
    let _ = writeln!(s);
    for v in &r.flows {
        match (&v.ceiling, &v.no_ceiling_reason) {
            (Some(ceil), _) => {
                let _ = writeln!(
                    s,
                    "ceiling {}: {} ({})",
                    v.flow.label(),
                    mbit(ceil.goodput_bps * 8.0),
                    ceil.basis
                );
                if let (Some(e), Some(rx)) = (v.efficiency, v.summary.receiver_bps) {
                    let _ = writeln!(
                        s,
                        "efficiency {}: {} / {} = {:.1} %",
                        v.flow.label(),
                        mbit(rx),
                        mbit(ceil.goodput_bps * 8.0),
                        e * 100.0
                    );
                }
            }
            (None, Some(why)) => {
                let _ = writeln!(s, "ceiling {}: none ({why})", v.flow.label());
            }
            (None, None) => {}
        }
    }
    if let Some(fr) = &r.find_rate {
        match fr.rate_bps {
            Some(b) => {
                let _ = writeln!(
                    s,
                    "find-rate: highest rate received with loss under {} %: {}{}",
                    fr.threshold_percent,
                    mbit(b),
                    r.flows.first().and_then(|v| v.ceiling.as_ref()).map_or(
                        String::new(),
                        |c| format!(
                            " ({:.1} % of the ceiling)",
                            b / (c.goodput_bps * 8.0) * 100.0
                        )
                    )
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "find-rate: every rate tried lost more than {} %",
                    fr.threshold_percent
                );
            }
        }
        for st in &fr.steps {
            let _ = writeln!(
                s,
                "  offered {:>16}  received {:>16}  loss {:>6.3} %",
                mbit(st.offered_bps),
                mbit(st.received_bps),
                st.loss_percent
            );
        }
    }
    let cpu = |c: &model::net::CpuUse, per_gb: Option<f64>| {
        format!(
            "{:.1} % (user {:.1} %, system {:.1} %){}",
            c.total_percent,
            c.user_percent,
            c.system_percent,
            per_gb.map_or(String::new(), |g| format!(", {g:.3} CPU-s per GB"))
        )
    };
    let _ = writeln!(
        s,
        "CPU here: {}",
        cpu(&m.cpu_local, r.cpu_per_gb.local_s_per_gb)
    );
    if let Some(p) = &m.cpu_peer {
        let _ = writeln!(s, "CPU peer: {}", cpu(p, r.cpu_per_gb.peer_s_per_gb));
    }
    if let Some(cc) = &m.congestion_local {
        let _ = writeln!(
            s,
            "congestion control: {cc} here, {} at the peer",
            crate::outside::line(m.congestion_peer.as_deref().unwrap_or("unknown"))
        );
    }
    if let Some(ic) = &r.interface_check {
        let _ = writeln!(
            s,
            "{} counters: {} B sent, {} B received; the test's payload: {} B sent, {} B received{}",
            ic.interface,
            ic.tx_bytes,
            ic.rx_bytes,
            ic.app_sent,
            ic.app_received,
            ic.overhead.map_or(String::new(), |o| format!(
                " (interface {:+.2} %: headers, ACKs, other traffic)",
                o * 100.0
            ))
        );
        if let Some(why) = &ic.void_reason {
            let _ = writeln!(s, "no interface cross-check: {why}");
        }
    }
    if let Some(c) = &r.counters {
        s.push_str(&crate::kinds::count::render_beside(c));
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    for f in &r.findings {
        let _ = writeln!(s, "{}: {}", f.severity, f.message);
    }
    // The peer's strings (version, congestion control) and the link's names came from
    // outside: nothing in this text is a control sequence.
    crate::outside::terminal(&s).into_owned()
}
