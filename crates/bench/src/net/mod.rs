//! `net`: TCP and UDP throughput between two hosts, speaking iperf3's protocol so either end
//! may be a stock iperf3 (3.12 checked). The engine measures and returns a
//! [`model::net::NetMeasurement`]; it never judges a number.
//!
//! - [`proto`]: the control protocol (cookie, state bytes, JSON messages).
//! - [`stream`]: the data streams (one thread each), the pacer, UDP accounting, TCP_INFO.
//! - [`session`]: sampling intervals, stopping, results for and from the peer.
//! - [`client`] and [`server`]: the two ends' state machines.
//! - [`auth`]: iperf3 3.12's RSA credentials (`--username`, `--rsa-private-key-path`).

pub mod auth;
pub mod client;
pub mod find_rate;
pub mod proto;
pub mod server;
pub mod session;
pub mod stream;

use crate::{Bench, Phase, Phased, Stop};
use model::net::{Direction, Flow, NetMeasurement, NetStop};
use proto::ProtoError;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub use client::{run_client, ClientConfig};
pub use server::{Server, ServerConfig};

/// What an end says about a test as it goes, for a live display and for the samplers a
/// caller starts beside the engine (the interface is known once the control connection is
/// up, before any stream sends).
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    /// The control connection is up: the peer, this end's address and the interface that
    /// address belongs to (`None` when no interface has it).
    Connected {
        peer: &'a str,
        local: SocketAddr,
        interface: Option<&'a str>,
    },
    /// The streams are open and sending: `omit` seconds are not counted first (-O).
    Streaming { omit: Duration },
    /// An interval ended: its end (s after the omitted time), direction, bits/s.
    Interval { end_s: f64, flow: Flow, bps: f64 },
    /// A second client was refused while a test ran (iperf3's ACCESS_DENIED).
    Denied { peer: String },
}

/// The callback both ends call with their [`Event`]s.
pub type OnEvent<'a> = &'a mut dyn FnMut(Event<'_>);

/// A progress report of [`NetRun`]: the event and the run's phase
/// (setup until the streams send, ramp through -O's omitted seconds, then run).
#[derive(Clone, Debug)]
pub struct NetProgress<'a> {
    pub phase: Phase,
    pub elapsed: Duration,
    pub event: Event<'a>,
}

impl Phased for NetProgress<'_> {
    fn phase(&self) -> Phase {
        self.phase
    }
    fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// Follows the events of one test and says which phase each belongs to.
struct PhaseClock {
    phase: Phase,
    since: Instant,
    measured_from: Option<Instant>,
}

impl PhaseClock {
    fn new() -> PhaseClock {
        PhaseClock {
            phase: Phase::Setup,
            since: Instant::now(),
            measured_from: None,
        }
    }

    fn progress<'e>(&mut self, event: Event<'e>) -> NetProgress<'e> {
        let now = Instant::now();
        if let Some(at) = self.measured_from.filter(|&at| now >= at) {
            if self.phase != Phase::Run {
                self.phase = Phase::Run;
                self.since = at;
            }
        }
        match &event {
            Event::Streaming { omit } => {
                self.phase = if omit.is_zero() {
                    Phase::Run
                } else {
                    Phase::Ramp
                };
                self.since = now;
                self.measured_from = Some(now + *omit);
            }
            Event::Interval { .. } if self.phase != Phase::Run => {
                self.phase = Phase::Run;
                self.since = now;
            }
            _ => {}
        }
        NetProgress {
            phase: self.phase,
            elapsed: now.saturating_duration_since(self.since),
            event,
        }
    }
}

/// One test in the run shape of [`crate::Bench`], at either end.
pub enum NetRun<'s> {
    /// The client: connect to the server of the configuration, run, exchange results.
    Client(ClientConfig),
    /// A bound server: wait for a client (until the stop flag), run its test. Stopped while
    /// no client came, it returns [`NetError::Interrupted`]: nothing was measured.
    ServeOne(&'s Server),
}

impl Bench for NetRun<'_> {
    const KIND: &'static str = "net";
    type Progress<'p> = NetProgress<'p>;
    type Measurement = NetMeasurement;
    type Error = NetError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<NetMeasurement, NetError>
    where
        F: for<'p> Fn(&NetProgress<'p>) + Sync,
    {
        let mut clock = PhaseClock::new();
        let mut on_event = |e: Event<'_>| progress(&clock.progress(e));
        match self {
            NetRun::Client(cfg) => run_client(&cfg, stop, &mut on_event),
            NetRun::ServeOne(server) => match server.serve_one(stop, &mut on_event)? {
                Some(m) => Ok(m),
                None if stop.load(Ordering::Relaxed) => Err(NetError::Interrupted),
                None => Err(NetError::Setup("the server stopped without a test".into())),
            },
        }
    }

    fn interrupted(m: &NetMeasurement) -> bool {
        m.stopped_by == NetStop::Interrupted
    }
}

/// iperf3's port (iperf.h: PORT 5201).
pub const DEFAULT_PORT: u16 = 5201;
/// iperf3's TCP block (DEFAULT_TCP_BLKSIZE, 128 KiB).
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// iperf3's UDP datagram when the control connection's MSS is unknown (DEFAULT_UDP_BLKSIZE).
pub const DEFAULT_UDP_LEN: u32 = 1460;

/// How long a peer may stay silent during set-up or the result exchange.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Address family asked for (`-4`, `-6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Any,
    V4,
    V6,
}

impl Family {
    pub fn allows(self, ip: &IpAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => ip.is_ipv4(),
            Family::V6 => ip.is_ipv6(),
        }
    }
}

/// Why a test could not run or finish; each is one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("{0}")]
    Setup(String),
    /// The stop flag was set before any test began: nothing was measured.
    #[error("interrupted before a test began")]
    Interrupted,
    #[error("{0}")]
    Peer(String),
    #[error("the control connection to {peer}: {source}")]
    Control {
        peer: String,
        #[source]
        source: proto::ProtoError,
    },
}

impl NetError {
    /// A failed read or write on the control connection to `peer`, said of the other end
    /// `who` ("the server at ADDR", "the client ADDR"); `closed_why` follows "closed the
    /// control connection" when the other end did.
    pub(crate) fn control(who: &str, closed_why: &str, peer: &str, source: ProtoError) -> NetError {
        match source {
            ProtoError::Closed => {
                NetError::Peer(format!("{who} closed the control connection{closed_why}"))
            }
            ProtoError::Io(ref e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                NetError::Peer(format!(
                    "{who} stopped answering for {} s",
                    CONTROL_TIMEOUT.as_secs()
                ))
            }
            source => NetError::Control {
                peer: peer.to_string(),
                source,
            },
        }
    }
}

/// The data streams of a test in the order iperf3 opens and accepts them, each with its id
/// (iperf_add_stream: 1, 3, 4, 5, ...; 2 was the control connection's once) and the way its
/// data flows: forward streams carry client to server, reverse ones server to client, a
/// bidirectional test the forward ones first.
pub(crate) fn streams_in_order(direction: Direction, streams: u32) -> Vec<(u32, Flow)> {
    let n = streams as usize;
    let flows: Vec<Flow> = match direction {
        Direction::Forward => vec![Flow::ClientToServer; n],
        Direction::Reverse => vec![Flow::ServerToClient; n],
        Direction::Bidir => std::iter::repeat_n(Flow::ClientToServer, n)
            .chain(std::iter::repeat_n(Flow::ServerToClient, n))
            .collect(),
    };
    (0u32..)
        .zip(flows)
        .map(|(i, flow)| (if i == 0 { 1 } else { i + 2 }, flow))
        .collect()
}

/// The interface a test's packets take: the one owning the local address, except when the
/// peer's address is this host's too (a server on the NIC's own address): Linux routes that
/// through the loopback device (the `local` routing table; `ip route get` says `dev lo`),
/// whichever interface holds the addresses, so the NIC neither counts nor interrupts.
pub fn test_interface(local: IpAddr, peer: IpAddr) -> Option<String> {
    match interface_of(peer) {
        Some(_) => Some("lo".to_string()),
        None => interface_of(local),
    }
}

/// Interface name owning `ip` (getifaddrs(3)), e.g. `lo` for 127.0.0.1.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family tells its real type.
        let addr = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(a.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if addr == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: head came from getifaddrs.
    unsafe { libc::freeifaddrs(head) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_open_in_iperf3_order() {
        use Flow::{ClientToServer as Up, ServerToClient as Down};
        assert_eq!(streams_in_order(Direction::Forward, 1), [(1, Up)]);
        assert_eq!(
            streams_in_order(Direction::Reverse, 3),
            [(1, Down), (3, Down), (4, Down)]
        );
        assert_eq!(
            streams_in_order(Direction::Bidir, 2),
            [(1, Up), (3, Up), (4, Down), (5, Down)]
        );
    }

    #[test]
    fn control_errors_name_the_other_end() {
        let who = "the server at 192.0.2.1:5201";
        let closed = NetError::control(who, " (it stopped)", "192.0.2.1:5201", ProtoError::Closed);
        assert_eq!(
            closed.to_string(),
            "the server at 192.0.2.1:5201 closed the control connection (it stopped)"
        );
        let silent = std::io::Error::from(std::io::ErrorKind::WouldBlock);
        let silent = NetError::control(who, "", "192.0.2.1:5201", ProtoError::Io(silent));
        assert_eq!(
            silent.to_string(),
            "the server at 192.0.2.1:5201 stopped answering for 10 s"
        );
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let reset = NetError::control(who, "", "192.0.2.1:5201", ProtoError::Io(reset));
        assert!(
            reset
                .to_string()
                .starts_with("the control connection to 192.0.2.1:5201: "),
            "{reset}"
        );
    }

    #[test]
    fn loopback_is_lo() {
        assert_eq!(
            interface_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(interface_of("192.0.2.77".parse().unwrap()), None);
    }

    #[test]
    fn a_peer_on_this_host_is_reached_through_lo() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(test_interface(lo, lo).as_deref(), Some("lo"));
        // Any address of this host's interfaces (eth0's here), as the server's peer too.
        if let Some(own) = std::fs::read_to_string("/proc/net/fib_trie")
            .ok()
            .and_then(|t| {
                let lines: Vec<&str> = t.lines().collect();
                lines.windows(2).find_map(|w| {
                    let ip = w[0].trim().strip_prefix("|-- ")?.parse::<IpAddr>().ok()?;
                    (w[1].contains("/32 host LOCAL") && !ip.is_loopback()).then_some(ip)
                })
            })
        {
            assert_eq!(test_interface(own, own).as_deref(), Some("lo"), "{own}");
            assert_ne!(interface_of(own).as_deref(), Some("lo"), "{own}");
        }
        // A remote peer leaves by the interface that holds the local address.
        let remote: IpAddr = "192.0.2.77".parse().unwrap();
        assert_eq!(test_interface(lo, remote).as_deref(), Some("lo"));
    }
}
