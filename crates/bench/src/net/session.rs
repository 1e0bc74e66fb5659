//! What client and server share once the streams exist: start the threads, sample the
//! counters each interval, stop, and turn the counts into results (ours, for the peer, and
//! the peer's merged into ours).

use super::proto::{Results, StreamReport};
use super::stream::{self, Counters, Snapshot, Sock, Work};
use model::net::{
    CpuUse, EndTotals, Flow, Interval, NetConfig, PeerBounds, Protocol, StreamResult,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The intervals a test keeps over all its streams: past it, neighbouring intervals are
/// merged two into one (a test of a day at -P 128 --bidir would otherwise keep 22 million of
/// them). A memory bound a peer's parameters cannot move: about 6 MB.
pub const MAX_INTERVALS_KEPT: usize = 65_536;

/// Merge neighbouring intervals two into one: the bytes, losses and packets of both over
/// their joint time, the TCP state (RTT, cwnd) and UDP jitter of the later one.
fn coarsen(intervals: &mut Vec<Interval>) {
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let merged = intervals
        .chunks(2)
        .map(|pair| match pair {
            [a, b] => Interval {
                start_s: a.start_s,
                end_s: b.end_s,
                bytes: a.bytes + b.bytes,
                retransmits: add(a.retransmits, b.retransmits),
                rtt_us: b.rtt_us,
                cwnd_bytes: b.cwnd_bytes,
                lost_packets: add(a.lost_packets, b.lost_packets),
                packets: add(a.packets, b.packets),
                rttvar_us: b.rttvar_us,
                pmtu: b.pmtu,
                jitter_ms: b.jitter_ms,
            },
            [a] => a.clone(),
            _ => Interval::default(),
        })
        .collect();
    *intervals = merged;
}

/// One data stream before it runs.
pub struct PendingStream {
    pub id: u32,
    pub flow: Flow,
    pub local_sends: bool,
    pub sock: Sock,
}

struct Running {
    id: u32,
    flow: Flow,
    local_sends: bool,
    sock: Sock,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    base: Snapshot,
    last: Snapshot,
    last_retrans: u32,
    base_retrans: u32,
    intervals: Vec<Interval>,
    end: Option<(Snapshot, f64)>,
    /// The stream's addresses, read when it starts: once the peer has closed it, getpeername
    /// fails (ENOTCONN) and the result would name no peer.
    local_addr: Option<String>,
    peer_addr: Option<String>,
}

/// Process CPU time (user, system) in seconds (getrusage(2), RUSAGE_SELF: every thread).
fn rusage() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

/// The stream threads that run on this host: this end's, and the peer's as many again when
/// the peer is this host (a loopback address, or the stream's own address).
fn threads_here(pending: &[PendingStream]) -> usize {
    let peer_here =
        pending
            .first()
            .is_some_and(|p| match (p.sock.local_addr(), p.sock.peer_addr()) {
                (Some(l), Some(r)) => r.ip().is_loopback() || r.ip() == l.ip(),
                _ => false,
            });
    pending.len() * if peer_here { 2 } else { 1 }
}

/// The test while it runs.
pub struct Session {
    streams: Vec<Running>,
    started: Instant,
    omit: Duration,
    interval: Duration,
    next_tick: Instant,
    omitting: bool,
    cpu_start: (f64, f64),
    protocol: Protocol,
    end_time: Option<Instant>,
    /// The intervals kept over all streams ([`MAX_INTERVALS_KEPT`] unless lowered).
    kept: usize,
}

impl Session {
    /// Start every stream's thread now (the TEST_RUNNING moment).
    pub fn start(
        pending: Vec<PendingStream>,
        config: &NetConfig,
        interval: Duration,
    ) -> Result<Session, String> {
        let started = Instant::now();
        let mut streams = Vec::with_capacity(pending.len());
        let (threads, cpus) = (
            threads_here(&pending),
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        );
        let senders = pending.iter().filter(|p| p.local_sends).count();
        let recv_len =
            stream::recv_len(config.len as usize, pending.len() - senders, threads, cpus);
        let send_len = stream::send_len(
            config.len as usize,
            stream::paced(config.bitrate_bps),
            senders,
            threads,
            cpus,
        );
        for p in pending {
            let counters = Arc::new(Counters::default());
            let stop = Arc::new(AtomicBool::new(false));
            let work = Work {
                send: p.local_sends,
                len: config.len as usize,
                rate_bps: config.bitrate_bps,
                zerocopy: config.zerocopy,
                udp_counters_64bit: config.udp_counters_64bit,
                recv_len,
                send_len,
            };
            let sock = p
                .sock
                .try_clone()
                .map_err(|e| format!("cannot use data stream {}: {e}", p.id))?;
            let (c, s) = (Arc::clone(&counters), Arc::clone(&stop));
            let thread = std::thread::Builder::new()
                .name(format!("net-stream-{}", p.id))
                .spawn(move || stream::run(sock, work, &c, &s))
                .map_err(|e| format!("cannot start the thread of stream {}: {e}", p.id))?;
            let retrans = Self::retrans_of(&p.sock, p.local_sends);
            let (local_addr, peer_addr) = (
                p.sock.local_addr().map(|a| a.to_string()),
                p.sock.peer_addr().map(|a| a.to_string()),
            );
            streams.push(Running {
                local_addr,
                peer_addr,
                id: p.id,
                flow: p.flow,
                local_sends: p.local_sends,
                sock: p.sock,
                counters,
                stop,
                thread: Some(thread),
                base: Snapshot::default(),
                last: Snapshot::default(),
                last_retrans: retrans,
                base_retrans: retrans,
                intervals: Vec::new(),
                end: None,
            });
        }
        let omit = Duration::from_secs(u64::from(config.omit_s));
        Ok(Session {
            streams,
            started,
            omit,
            interval,
            next_tick: started + if omit.is_zero() { interval } else { omit },
            omitting: !omit.is_zero(),
            cpu_start: rusage(),
            protocol: config.protocol,
            end_time: None,
            kept: MAX_INTERVALS_KEPT,
        })
    }

    fn retrans_of(sock: &Sock, sends: bool) -> u32 {
        match sock {
            Sock::Tcp(_) if sends => {
                stream::tcp_info(sock.fd()).map_or(0, |i| i.tcpi_total_retrans)
            }
            _ => 0,
        }
    }

    /// Keep at most `n` intervals over all streams (a server running several tests at once
    /// shares [`MAX_INTERVALS_KEPT`] among them).
    pub fn keep_intervals(&mut self, n: usize) {
        self.kept = n.min(MAX_INTERVALS_KEPT);
    }

    /// When the next interval ends.
    pub fn next_tick(&self) -> Instant {
        self.next_tick
    }

    /// When the omitted seconds end (the measured time starts).
    pub fn measured_start(&self) -> Instant {
        self.started + self.omit
    }

    /// Record the intervals that have ended by `now`; returns the completed intervals'
    /// per-flow rates (end of interval in s, flow, bits/s) for a live display.
    pub fn tick(&mut self, now: Instant) -> Vec<(f64, Flow, f64)> {
        let mut shown = Vec::new();
        while now >= self.next_tick {
            let at = self.next_tick;
            if self.omitting {
                self.omitting = false;
                for s in &mut self.streams {
                    s.base = s.counters.snapshot();
                    // As at the end: bytes still queued here have not reached the peer, which
                    // starts its own count at the same moment.
                    if let (Sock::Tcp(_), true) = (&s.sock, s.local_sends) {
                        s.base.bytes = s
                            .base
                            .bytes
                            .saturating_sub(stream::unacknowledged_bytes(s.sock.fd()).unwrap_or(0));
                    }
                    s.last = s.base;
                    s.base_retrans = Self::retrans_of(&s.sock, s.local_sends);
                    s.last_retrans = s.base_retrans;
                }
                self.cpu_start = rusage();
            } else {
                let end_s = (at - self.measured_start()).as_secs_f64();
                let start_s = (end_s - self.interval.as_secs_f64()).max(0.0);
                let mut per_flow: Vec<(Flow, f64)> = Vec::new();
                for s in &mut self.streams {
                    let iv = Self::interval_of(s, start_s, end_s, self.protocol);
                    match per_flow.iter_mut().find(|(f, _)| *f == s.flow) {
                        Some((_, b)) => *b += iv.bits_per_second(),
                        None => per_flow.push((s.flow, iv.bits_per_second())),
                    }
                    s.intervals.push(iv);
                }
                let per_stream = self.kept / self.streams.len().max(1);
                for s in &mut self.streams {
                    if s.intervals.len() > per_stream.max(2) {
                        coarsen(&mut s.intervals);
                    }
                }
                shown.extend(per_flow.into_iter().map(|(f, b)| (end_s, f, b)));
            }
            self.next_tick = at + self.interval;
        }
        shown
    }

    fn interval_of(s: &mut Running, start_s: f64, end_s: f64, protocol: Protocol) -> Interval {
        let now = s.counters.snapshot();
        let mut iv = Interval {
            start_s,
            end_s,
            bytes: now.bytes.saturating_sub(s.last.bytes),
            ..Interval::default()
        };
        match (protocol, s.local_sends) {
            (Protocol::Tcp, true) => {
                if let Some(info) = stream::tcp_info(s.sock.fd()) {
                    iv.retransmits = Some(u64::from(
                        info.tcpi_total_retrans.saturating_sub(s.last_retrans),
                    ));
                    s.last_retrans = info.tcpi_total_retrans;
                    iv.rtt_us = Some(info.tcpi_rtt);
                    iv.rttvar_us = Some(info.tcpi_rttvar);
                    iv.pmtu = Some(info.tcpi_pmtu);
                    iv.cwnd_bytes =
                        Some(u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss));
                }
            }
            (Protocol::Udp, true) => {
                iv.packets = Some(now.packets.saturating_sub(s.last.packets));
            }
            (Protocol::Udp, false) => {
                iv.packets = Some(now.packets.saturating_sub(s.last.packets));
                iv.lost_packets = Some(now.lost.saturating_sub(s.last.lost));
                iv.jitter_ms = Some(s.counters.jitter_s() * 1e3);
            }
            (Protocol::Tcp, false) => {}
        }
        s.last = now;
        iv
    }

    /// What a peer's result message may claim of this test: what it could physically have
    /// done since its streams started.
    pub fn peer_bounds(&self) -> PeerBounds {
        PeerBounds::new(self.started.elapsed().as_secs_f64())
    }

    /// The first error a stream thread hit, with its stream id.
    pub fn stream_error(&self) -> Option<String> {
        self.streams.iter().find_map(|s| {
            s.counters
                .error()
                .map(|e| format!("data stream {}: {e}", s.id))
        })
    }

    /// Stop the local senders; TCP senders then wait until the peer has acknowledged every
    /// byte, so both ends count the same bytes: all of them together, for at most `limit`
    /// and not past `interrupt` (a peer that stopped reading holds no stream longer than
    /// that, whatever the number of streams).
    pub fn stop_senders(&mut self, limit: Duration, interrupt: &AtomicBool) {
        self.join_senders();
        let fds: Vec<_> = self
            .streams
            .iter()
            .filter(|s| s.local_sends && matches!(s.sock, Sock::Tcp(_)))
            .map(|s| s.sock.fd())
            .collect();
        stream::drain(&fds, Instant::now() + limit, interrupt);
    }

    /// Stop the local senders' threads and wait for them: no send() runs after this.
    fn join_senders(&mut self) {
        for s in self.streams.iter().filter(|s| s.local_sends) {
            s.stop.store(true, Ordering::Relaxed);
        }
        for s in self.streams.iter_mut().filter(|s| s.local_sends) {
            if let Some(t) = s.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// Fix the end of the test now: the totals are the counts at this moment. Local senders
    /// stop first: a send() still running when the counts were read would put bytes on the
    /// wire that the peer's receiver counts and this end's total leaves out (a partial write
    /// of 32,768 B past the sender's total, seen when the peer's TEST_END came before this
    /// end's own timer).
    pub fn mark_end(&mut self) {
        self.join_senders();
        let now = Instant::now();
        self.end_time = Some(now);
        let secs = now
            .saturating_duration_since(self.measured_start())
            .as_secs_f64();
        for s in &mut self.streams {
            // A TCP sender's count is what its socket accepted, as iperf3's (iperf3 3.12
            // counts what send() took): bytes still waiting in the socket when the test
            // ends are sent as it closes, and a receiver that drains until the close
            // ([`Self::drain_receivers`]) counts them, so a count that left them out was
            // passed by its receiver (60,036,496 of 60,031,156 B on a shaped veth).
            let snap = s.counters.snapshot();
            s.end = Some((snap, secs));
        }
    }

    /// Let local receivers take what is still in flight until the peer closes the streams
    /// (bounded by `limit` and `interrupt`), counting it in the totals fixed by
    /// [`Self::mark_end`].
    pub fn drain_receivers(&mut self, limit: Duration, interrupt: &AtomicBool) {
        let until = Instant::now() + limit;
        while Instant::now() < until
            && !interrupt.load(Ordering::Relaxed)
            && self
                .streams
                .iter()
                .any(|s| !s.local_sends && !s.counters.done.load(Ordering::Acquire))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        for s in self.streams.iter_mut().filter(|s| !s.local_sends) {
            if let Some((snap, secs)) = s.end {
                let now = s.counters.snapshot();
                if now.bytes > snap.bytes {
                    s.end = Some((now, secs));
                }
            }
        }
    }

    /// Stop everything and close the data sockets (the peer's receivers see the end).
    pub fn stop_all(&mut self) {
        for s in &self.streams {
            s.stop.store(true, Ordering::Relaxed);
        }
        for s in &mut self.streams {
            if let Some(t) = s.thread.take() {
                let _ = t.join();
            }
            if let Sock::Tcp(t) = &s.sock {
                let _ = t.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// CPU use since the measured time began.
    pub fn cpu(&self) -> CpuUse {
        let (u1, s1) = rusage();
        let wall = self
            .end_time
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(self.measured_start())
            .as_secs_f64()
            .max(1e-9);
        let (u, s) = (
            (u1 - self.cpu_start.0).max(0.0),
            (s1 - self.cpu_start.1).max(0.0),
        );
        CpuUse {
            total_percent: (u + s) / wall * 100.0,
            user_percent: u / wall * 100.0,
            system_percent: s / wall * 100.0,
            wall_s: wall,
        }
    }

    /// The congestion control of the first TCP stream.
    pub fn congestion(&self) -> Option<String> {
        self.streams.iter().find_map(|s| match s.sock {
            Sock::Tcp(_) => stream::congestion(s.sock.fd()),
            Sock::Udp(_) => None,
        })
    }

    /// This end's totals per stream (after [`Self::mark_end`]).
    pub fn results(&self) -> Vec<StreamResult> {
        self.streams
            .iter()
            .map(|s| {
                let (end, secs) = s.end.unwrap_or_else(|| {
                    (s.counters.snapshot(), self.started.elapsed().as_secs_f64())
                });
                let udp = self.protocol == Protocol::Udp;
                let info = match (&s.sock, s.local_sends) {
                    (Sock::Tcp(_), true) => stream::tcp_info(s.sock.fd()),
                    _ => None,
                };
                let local = EndTotals {
                    bytes: end.bytes.saturating_sub(s.base.bytes),
                    omitted_bytes: s.base.bytes,
                    seconds: secs,
                    retransmits: info
                        .map(|i| u64::from(i.tcpi_total_retrans.saturating_sub(s.base_retrans))),
                    packets: udp.then(|| end.packets.saturating_sub(s.base.packets)),
                    lost_packets: (udp && !s.local_sends)
                        .then(|| end.lost.saturating_sub(s.base.lost)),
                    out_of_order: (udp && !s.local_sends)
                        .then(|| end.out_of_order.saturating_sub(s.base.out_of_order)),
                    jitter_ms: (udp && !s.local_sends).then(|| s.counters.jitter_s() * 1e3),
                };
                StreamResult {
                    id: s.id,
                    flow: s.flow,
                    local_sends: s.local_sends,
                    local,
                    peer: None,
                    intervals: s.intervals.clone(),
                    rtt_us: info.map(|i| i.tcpi_rtt),
                    rttvar_us: info.map(|i| i.tcpi_rttvar),
                    pmtu: info.map(|i| i.tcpi_pmtu),
                    snd_mss: info.map(|i| i.tcpi_snd_mss),
                    local_addr: s.local_addr.clone(),
                    peer_addr: s.peer_addr.clone(),
                    sndbuf: s.sock.buffer_size(libc::SO_SNDBUF),
                    rcvbuf: s.sock.buffer_size(libc::SO_RCVBUF),
                }
            })
            .collect()
    }
}

/// Our result message for the peer (`send_results`).
pub fn results_message(
    streams: &[StreamResult],
    cpu: &CpuUse,
    congestion: Option<String>,
    tcp: bool,
) -> Results {
    let sends = streams.iter().any(|s| s.local_sends);
    let receives_only = !sends;
    Results {
        cpu_util_total: cpu.total_percent,
        cpu_util_user: cpu.user_percent,
        cpu_util_system: cpu.system_percent,
        sender_has_retransmits: if receives_only { -1 } else { i64::from(tcp) },
        congestion_used: congestion,
        streams: streams
            .iter()
            .map(|s| StreamReport {
                id: s.id,
                bytes: s.local.bytes,
                retransmits: match (s.local_sends, s.local.retransmits) {
                    (true, Some(r)) => r as i64,
                    _ => -1,
                },
                jitter_s: s.local.jitter_ms.unwrap_or(0.0) / 1e3,
                errors: s.local.lost_packets.unwrap_or(0),
                packets: s.local.packets.unwrap_or(0),
                start_time: 0.0,
                end_time: s.local.seconds,
            })
            .collect(),
    }
}

/// The peer's CPU use from its result message, each figure within `bounds`, over
/// `wall_s` (this end's wall time).
pub fn peer_cpu(peer: &Results, bounds: &PeerBounds, wall_s: f64) -> CpuUse {
    CpuUse {
        total_percent: bounds.cpu_percent(peer.cpu_util_total),
        user_percent: bounds.cpu_percent(peer.cpu_util_user),
        system_percent: bounds.cpu_percent(peer.cpu_util_system),
        wall_s,
    }
}

/// Put the peer's result message beside ours, each number within `bounds` (what the test
/// could physically have done: a peer's message is any JSON); a stream id the peer does not
/// know is an error as in iperf3 (`IESTREAMID`).
pub fn merge_peer(
    streams: &mut [StreamResult],
    peer: &Results,
    protocol: Protocol,
    bounds: &PeerBounds,
) -> Result<(), String> {
    let udp = protocol == Protocol::Udp;
    for r in &peer.streams {
        let s = streams.iter_mut().find(|s| s.id == r.id).ok_or_else(|| {
            format!(
                "the peer's results name stream {}, which this test does not have",
                r.id
            )
        })?;
        let peer_sends = !s.local_sends;
        s.peer = Some(EndTotals {
            bytes: bounds.bytes(r.bytes),
            omitted_bytes: 0,
            seconds: bounds.seconds(r.start_time, r.end_time),
            // iperf3 3.12 sends garbage (i64::MAX) as a UDP sender's retransmits.
            retransmits: (!udp && peer_sends && r.retransmits >= 0)
                .then(|| bounds.count(r.retransmits as u64)),
            packets: udp.then(|| bounds.count(r.packets)),
            lost_packets: (udp && !peer_sends).then(|| bounds.count(r.errors)),
            out_of_order: None,
            jitter_ms: (udp && !peer_sends).then(|| bounds.jitter_ms(r.jitter_s * 1e3)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The sender's total is fixed by [`Session::mark_end`] while its peer reads at full
    /// speed: the receiver, reading until the close, counts exactly that many bytes, never
    /// a send() that ran after the count was taken; and the result still names the peer
    /// once it has closed the stream.
    #[test]
    fn a_senders_total_is_every_byte_its_receiver_gets() {
        for _ in 0..5 {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let tx = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut rx, _) = l.accept().unwrap();
            let reader = std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                let mut n = 0u64;
                loop {
                    match rx.read(&mut buf) {
                        Ok(0) | Err(_) => return n,
                        Ok(k) => n += k as u64,
                    }
                }
            });
            let config = NetConfig {
                protocol: Protocol::Tcp,
                direction: model::net::Direction::Forward,
                duration_s: 1,
                omit_s: 0,
                streams: 1,
                len: 128 * 1024,
                bitrate_bps: None,
                window: None,
                mss: None,
                zerocopy: false,
                udp_counters_64bit: false,
            };
            let pending = vec![PendingStream {
                id: 1,
                flow: Flow::ClientToServer,
                local_sends: true,
                sock: Sock::Tcp(tx),
            }];
            let mut s = Session::start(pending, &config, Duration::from_secs(1)).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            s.mark_end();
            s.stop_all();
            let sent = s.results()[0].local.bytes;
            let received = reader.join().unwrap();
            // The peer has closed: the result still names it.
            std::thread::sleep(Duration::from_millis(20));
            assert!(s.results()[0].peer_addr.is_some(), "the peer's address");
            assert!(sent > 0);
            assert_eq!(
                received, sent,
                "received {received} B of {sent} B counted sent"
            );
        }
    }

    /// Over loopback the peer's stream threads run on this host too; to another host only
    /// this end's do.
    #[test]
    fn the_peers_threads_count_when_the_peer_is_this_host() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let pending: Vec<PendingStream> = (1..=3)
            .map(|id| PendingStream {
                id,
                flow: Flow::ClientToServer,
                local_sends: false,
                sock: Sock::Tcp(std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap()),
            })
            .collect();
        assert_eq!(threads_here(&pending), 6);
        assert_eq!(threads_here(&pending[..1]), 2);
        assert_eq!(threads_here(&[]), 0);
        // Not connected: no peer known, only this end's threads.
        let lone = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let one = [PendingStream {
            id: 1,
            flow: Flow::ClientToServer,
            local_sends: false,
            sock: Sock::Udp(lone),
        }];
        assert_eq!(threads_here(&one), 1);
    }

    #[test]
    fn coarsened_intervals_keep_every_byte_and_the_whole_time() {
        let iv = |i: u64| Interval {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            bytes: 100 + i,
            retransmits: Some(1),
            rtt_us: Some(i as u32),
            ..Interval::default()
        };
        let mut v: Vec<Interval> = (0..5).map(iv).collect();
        coarsen(&mut v);
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].start_s, v[0].end_s, v[0].bytes), (0.0, 2.0, 201));
        assert_eq!((v[1].retransmits, v[1].rtt_us), (Some(2), Some(3)));
        assert_eq!((v[2].start_s, v[2].end_s, v[2].bytes), (4.0, 5.0, 104));
        assert_eq!(
            v.iter().map(|i| i.bytes).sum::<u64>(),
            (0..5).map(|i| 100 + i).sum::<u64>()
        );
    }
}
