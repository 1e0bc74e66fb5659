//! The client end (iperf3 `-c`): connect, send the parameters, open the streams, run for the
//! duration, end the test and exchange results (iperf_client_api.c's order).

use super::proto::{self, Params, ProtoError, Results, State};
use super::session::{self, PendingStream, Session};
use super::stream::Sock;
use super::{streams_in_order, test_interface, Event, Family, NetError, OnEvent, CONTROL_TIMEOUT};
use model::net::{Direction, Flow, NetConfig, NetMeasurement, NetStop, Protocol, Role};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub bind: Option<IpAddr>,
    pub family: Family,
    pub test: NetConfig,
    pub interval: Duration,
    pub connect_timeout: Duration,
    pub congestion: Option<String>,
    /// iperf3's credentials (`--username`, `--rsa-public-key-path`), sent with the
    /// parameters.
    pub auth: Option<std::sync::Arc<super::auth::ClientAuth>>,
}

/// The client's events: connected, streaming, intervals.
pub type Progress<'a> = OnEvent<'a>;

fn resolve(cfg: &ClientConfig) -> Result<Vec<SocketAddr>, NetError> {
    let addrs: Vec<SocketAddr> = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| {
            NetError::Setup(format!(
                "cannot resolve {:?} ({e}): give a host name or an IP address of the server",
                cfg.host
            ))
        })?
        .filter(|a| cfg.family.allows(&a.ip()))
        .collect();
    if addrs.is_empty() {
        return Err(NetError::Setup(format!(
            "{} has no address of the family asked for (-4/-6)",
            cfg.host
        )));
    }
    Ok(addrs)
}

fn new_socket(addr: &SocketAddr, ty: Type, bind: Option<IpAddr>) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::for_address(*addr), ty, None)?;
    if let Some(ip) = bind {
        s.bind(&SockAddr::from(SocketAddr::new(ip, 0)))?;
    }
    Ok(s)
}

fn connect_error(cfg: &ClientConfig, addr: &SocketAddr, e: &std::io::Error) -> NetError {
    let who = format!("{} port {}", cfg.host, addr.port());
    NetError::Setup(match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!(
            "nothing listens on {who} (connection refused): start `headroom bench net --server` \
             or `iperf3 -s` there, or give the right port with -p"
        ),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => format!(
            "{who} did not answer within {} s: the host is down or unreachable, or a firewall \
             drops the connection",
            cfg.connect_timeout.as_secs()
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "cannot bind to {} (-B): no interface has that address",
            cfg.bind.map_or(String::new(), |b| b.to_string())
        ),
        _ => format!("cannot connect to {who}: {e}"),
    })
}

/// TCP socket options iperf3 applies before connecting (-w, -M, -C).
fn tcp_options(s: &Socket, t: &NetConfig, congestion: Option<&str>) -> Result<(), NetError> {
    let opt = |what: &str, r: std::io::Result<()>| {
        r.map_err(|e| NetError::Setup(format!("cannot set {what}: {e}")))
    };
    if let Some(w) = t.window {
        opt(
            "the socket send buffer (-w)",
            s.set_send_buffer_size(w as usize),
        )?;
        opt(
            "the socket receive buffer (-w)",
            s.set_recv_buffer_size(w as usize),
        )?;
    }
    if let Some(m) = t.mss {
        opt("the MSS (-M)", s.set_mss(m))?;
    }
    if let Some(c) = congestion {
        opt(
            &format!("the congestion control {c:?} (-C; see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
            s.set_tcp_congestion(c.as_bytes()),
        )?;
    }
    Ok(())
}

fn ctrl_err(peer: &str) -> impl Fn(ProtoError) -> NetError + '_ {
    move |source| {
        NetError::control(
            &format!("the server at {peer}"),
            " (it stopped, or it refused the test)",
            peer,
            source,
        )
    }
}

/// Read the next state byte; SERVER_ERROR, ACCESS_DENIED and SERVER_TERMINATE become errors.
fn next_state(ctrl: &mut TcpStream, peer: &str) -> Result<State, NetError> {
    let s = proto::read_state(ctrl).map_err(ctrl_err(peer))?;
    match s {
        State::AccessDenied => Err(NetError::Peer(format!(
            "the server at {peer} is busy with another test (access denied): try again when it \
             is done"
        ))),
        State::ServerError => {
            // i_errno, then errno (none after an authentication failure: iperf3 3.12's
            // iperf_exchange_parameters sends only IEAUTHTEST).
            let mut b = [0u8; 4];
            let detail = match ctrl.read_exact(&mut b) {
                Ok(()) => {
                    let ie = i32::from_be_bytes(b);
                    let mut d = proto::iperf_error_text(ie);
                    let _ = ctrl.set_read_timeout(Some(Duration::from_millis(500)));
                    if ctrl.read_exact(&mut b).is_ok() {
                        let errno = i32::from_be_bytes(b);
                        if errno != 0 {
                            d.push_str(&format!(", {}", std::io::Error::from_raw_os_error(errno)));
                        }
                    }
                    d
                }
                Err(_) => "no detail".to_string(),
            };
            Err(NetError::Peer(format!(
                "the server at {peer} refused the test: {detail}"
            )))
        }
        State::ServerTerminate => Err(NetError::Peer(format!(
            "the server at {peer} was stopped during the test"
        ))),
        other => Ok(other),
    }
}

fn params_of(cfg: &ClientConfig) -> Result<Params, NetError> {
    let t = &cfg.test;
    let authtoken = match &cfg.auth {
        Some(a) => Some(a.token().map_err(NetError::Setup)?),
        None => None,
    };
    Ok(Params {
        udp: t.protocol == Protocol::Udp,
        omit: t.omit_s,
        time: t.duration_s,
        bytes: 0,
        blockcount: 0,
        parallel: t.streams,
        reverse: t.direction == Direction::Reverse,
        bidirectional: t.direction == Direction::Bidir,
        window: t.window,
        len: Some(t.len),
        bandwidth: t.bitrate_bps.unwrap_or(0),
        mss: t.mss,
        nodelay: false,
        congestion: cfg.congestion.clone(),
        udp_counters_64bit: t.udp_counters_64bit,
        zerocopy: t.zerocopy,
        client_version: Some(format!("headroom {}", env!("CARGO_PKG_VERSION"))),
        authtoken,
    })
}

/// Open the data streams in iperf3's order: for --bidir the sending ones first.
fn create_streams(
    cfg: &ClientConfig,
    addr: &SocketAddr,
    cookie: &[u8],
) -> Result<Vec<PendingStream>, NetError> {
    let t = &cfg.test;
    let open = |id: u32| -> Result<Sock, NetError> {
        Ok(match t.protocol {
            Protocol::Tcp => {
                let s = new_socket(addr, Type::STREAM, cfg.bind)
                    .map_err(|e| connect_error(cfg, addr, &e))?;
                tcp_options(&s, t, cfg.congestion.as_deref())?;
                s.connect_timeout(&SockAddr::from(*addr), cfg.connect_timeout)
                    .map_err(|e| connect_error(cfg, addr, &e))?;
                let mut tcp: TcpStream = s.into();
                tcp.write_all(cookie).map_err(|e| {
                    NetError::Peer(format!("data stream {id}: sending the cookie failed: {e}"))
                })?;
                Sock::Tcp(tcp)
            }
            Protocol::Udp => Sock::Udp(udp_connect(cfg, addr, id)?),
        })
    };
    streams_in_order(t.direction, t.streams)
        .into_iter()
        .map(|(id, flow)| {
            Ok(PendingStream {
                id,
                flow,
                local_sends: flow == Flow::ClientToServer,
                sock: open(id)?,
            })
        })
        .collect()
}

/// iperf_udp_connect: send the connect message, wait for the reply (a few data datagrams
/// may come first in reverse mode).
fn udp_connect(cfg: &ClientConfig, addr: &SocketAddr, id: u32) -> Result<UdpSocket, NetError> {
    let s = new_socket(addr, Type::DGRAM, cfg.bind).map_err(|e| connect_error(cfg, addr, &e))?;
    s.connect(&SockAddr::from(*addr))
        .map_err(|e| connect_error(cfg, addr, &e))?;
    let u: UdpSocket = s.into();
    super::stream::size_udp_buffers(&u, cfg.test.window);
    let fail =
        |what: &str, e: std::io::Error| NetError::Peer(format!("UDP stream {id}: {what}: {e}"));
    u.send(&proto::UDP_CONNECT_MSG.to_ne_bytes())
        .map_err(|e| fail("sending the connect datagram failed", e))?;
    u.set_read_timeout(Some(CONTROL_TIMEOUT))
        .map_err(|e| fail("socket", e))?;
    let mut buf = vec![0u8; 65_536];
    for _ in 0..8 {
        let n = u.recv(&mut buf).map_err(|e| {
            fail(
                "no answer to the connect datagram (a firewall may drop UDP to the port)",
                e,
            )
        })?;
        if n == 4 {
            let v = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if v == proto::UDP_CONNECT_REPLY || v == proto::LEGACY_UDP_CONNECT_REPLY {
                return Ok(u);
            }
        }
    }
    Err(NetError::Peer(format!(
        "UDP stream {id}: the server did not answer the connect datagram as iperf3 does"
    )))
}

/// Run one test against an iperf3 (or headroom) server. `interrupt` (Ctrl-C) ends it early
/// with CLIENT_TERMINATE and partial results.
pub fn run_client(
    cfg: &ClientConfig,
    interrupt: &AtomicBool,
    progress: Progress<'_>,
) -> Result<NetMeasurement, NetError> {
    let addrs = resolve(cfg)?;
    let mut last_err = None;
    let mut conn = None;
    for addr in &addrs {
        let s = match new_socket(addr, Type::STREAM, cfg.bind) {
            Ok(s) => s,
            Err(e) => {
                last_err = Some(connect_error(cfg, addr, &e));
                continue;
            }
        };
        match s.connect_timeout(&SockAddr::from(*addr), cfg.connect_timeout) {
            Ok(()) => {
                conn = Some((s, *addr));
                break;
            }
            Err(e) => last_err = Some(connect_error(cfg, addr, &e)),
        }
    }
    let Some((sock, addr)) = conn else {
        return Err(last_err.unwrap_or_else(|| NetError::Setup("no address to connect to".into())));
    };
    let _ = sock.set_nodelay(true);
    // Without -l: 128 KiB for TCP; for UDP the control connection's MSS, so datagrams are
    // not fragmented (iperf_connect does the same).
    let mut resolved = cfg.clone();
    if resolved.test.len == 0 {
        resolved.test.len = match resolved.test.protocol {
            Protocol::Tcp => super::DEFAULT_TCP_LEN,
            Protocol::Udp => sock
                .mss()
                .ok()
                .filter(|&m| m > 0 && m <= model::net::args::MAX_UDP_BLOCKSIZE)
                .unwrap_or(super::DEFAULT_UDP_LEN),
        };
    }
    let cfg = &resolved;
    let mut ctrl: TcpStream = sock.into();
    let peer = format!("{}:{}", cfg.host, cfg.port);
    let local = ctrl
        .local_addr()
        .map_err(|e| NetError::Setup(e.to_string()))?;
    ctrl.set_read_timeout(Some(CONTROL_TIMEOUT))
        .map_err(|e| NetError::Setup(e.to_string()))?;
    // The cookie first, as iperf_connect sends it right after connecting, and the
    // parameters as soon as they are asked for: a server drops a connection without them
    // after a few seconds (headroom's after 3 s for the cookie and 5 s for the parameters),
    // and what the Connected event starts (the samplers of the interface's device) took
    // longer than that on an emulated aarch64 board. They start once the parameters are
    // sent, still before any stream sends.
    let cookie = proto::make_cookie();
    ctrl.write_all(&cookie)
        .map_err(|e| ctrl_err(&peer)(e.into()))?;
    let start = test_start(&cookie);
    let interface = test_interface(local.ip(), addr.ip());
    let mut connected = false;

    let mut pending = None;
    let mut run = None;
    loop {
        if run.is_none() {
            // Before the test runs, a Ctrl-C is not left waiting for a silent server.
            await_server(&ctrl, &peer, interrupt)?;
        }
        match next_state(&mut ctrl, &peer)? {
            State::ParamExchange => {
                proto::write_json(&mut ctrl, &params_of(cfg)?.to_json())
                    .map_err(ctrl_err(&peer))?;
                if !std::mem::replace(&mut connected, true) {
                    progress(Event::Connected {
                        peer: &peer,
                        local,
                        interface: interface.as_deref(),
                    });
                }
            }
            State::CreateStreams => pending = Some(create_streams(cfg, &addr, &cookie)?),
            State::TestStart => {}
            State::TestRunning => {
                let streams = pending.take().ok_or_else(|| {
                    NetError::Peer(format!(
                        "the server at {peer} started the test before asking for streams"
                    ))
                })?;
                let mut s =
                    Session::start(streams, &cfg.test, cfg.interval).map_err(NetError::Setup)?;
                progress(Event::Streaming {
                    omit: Duration::from_secs(u64::from(cfg.test.omit_s)),
                });
                let stopped = drive(&mut s, &mut ctrl, cfg, &peer, interrupt, progress)?;
                if stopped == NetStop::Interrupted {
                    let _ = proto::write_state(&mut ctrl, State::ClientTerminate);
                    s.mark_end();
                    s.stop_all();
                    let at = (local, interface);
                    return measurement(cfg, &s, &peer, at, None, NetStop::Interrupted)
                        .map(|m| with_start(m, &start))
                        .map_err(NetError::Peer);
                }
                run = Some(s);
            }
            State::ExchangeResults => {
                let s = run.as_mut().ok_or_else(|| {
                    NetError::Peer(format!(
                        "the server at {peer} asked for results before the test ran"
                    ))
                })?;
                s.drain_receivers(Duration::from_secs(3), interrupt);
                let ours = s.results();
                let msg = session::results_message(
                    &ours,
                    &s.cpu(),
                    s.congestion(),
                    cfg.test.protocol == Protocol::Tcp,
                );
                proto::write_json(&mut ctrl, &msg.to_json()).map_err(ctrl_err(&peer))?;
                let frame = proto::read_frame(&mut ctrl).map_err(ctrl_err(&peer))?;
                let theirs = Results::parse(&frame).map_err(ctrl_err(&peer))?;
                s.stop_all();
                let at = (local, interface);
                let m = measurement(cfg, s, &peer, at, Some(&theirs), NetStop::Completed)
                    .map(|m| with_start(m, &start));
                // DISPLAY_RESULTS follows; answer it with IPERF_DONE (iperf_client_end).
                if let Ok(State::DisplayResults) = proto::read_state(&mut ctrl) {
                    let _ = proto::write_state(&mut ctrl, State::IperfDone);
                }
                return m.map_err(NetError::Peer);
            }
            State::DisplayResults | State::IperfDone => {
                return Err(NetError::Peer(format!(
                    "the server at {peer} ended the test without exchanging results"
                )))
            }
            other => {
                return Err(NetError::Peer(format!(
                    "the server at {peer} sent {other:?}, which a client does not expect"
                )))
            }
        }
    }
}

/// Wait until the server speaks on the control connection, in slices of at most 100 ms that
/// watch `interrupt`: a stop before the test began (nothing measured) leaves at once instead
/// of after the read's timeout, and a server silent for [`CONTROL_TIMEOUT`] is named so.
fn await_server(ctrl: &TcpStream, peer: &str, interrupt: &AtomicBool) -> Result<(), NetError> {
    let until = Instant::now() + CONTROL_TIMEOUT;
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return Err(NetError::Interrupted);
        }
        let now = Instant::now();
        if now >= until {
            return Err(ctrl_err(peer)(
                std::io::Error::from(std::io::ErrorKind::TimedOut).into(),
            ));
        }
        let mut pfd = libc::pollfd {
            fd: ctrl.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let wait = (until - now).min(Duration::from_millis(100));
        // SAFETY: one pollfd, valid for the call.
        if unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as i32 + 1) } > 0 {
            return Ok(());
        }
    }
}

/// The running phase: sample intervals until omit + duration, watching the control socket
/// and Ctrl-C; then stop the senders and send TEST_END.
fn drive(
    s: &mut Session,
    ctrl: &mut TcpStream,
    cfg: &ClientConfig,
    peer: &str,
    interrupt: &AtomicBool,
    progress: Progress<'_>,
) -> Result<NetStop, NetError> {
    let end = s.measured_start() + Duration::from_secs(u64::from(cfg.test.duration_s));
    let fd = ctrl.as_raw_fd();
    loop {
        let now = Instant::now();
        for (at, flow, bps) in s.tick(now) {
            progress(Event::Interval {
                end_s: at,
                flow,
                bps,
            });
        }
        if now >= end {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            return Ok(NetStop::Interrupted);
        }
        if let Some(e) = s.stream_error() {
            s.stop_all();
            return Err(NetError::Peer(format!(
                "{e} (the server at {peer} may have stopped)"
            )));
        }
        let wait = s
            .next_tick()
            .min(end)
            .saturating_duration_since(now)
            .min(Duration::from_millis(100));
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        let r = unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as i32 + 1) };
        if r > 0 {
            // The server speaks during the test only to end it.
            let st = next_state(ctrl, peer);
            s.stop_all();
            return Err(match st {
                Ok(other) => NetError::Peer(format!(
                    "the server at {peer} sent {other:?} during the test"
                )),
                Err(e) => e,
            });
        }
    }
    s.stop_senders(Duration::from_secs(3), interrupt);
    s.mark_end();
    proto::write_state(ctrl, State::TestEnd).map_err(ctrl_err(peer))?;
    Ok(NetStop::Completed)
}

fn measurement(
    cfg: &ClientConfig,
    s: &Session,
    peer: &str,
    (local, interface): (SocketAddr, Option<String>),
    theirs: Option<&Results>,
    stopped_by: NetStop,
) -> Result<NetMeasurement, String> {
    let mut streams = s.results();
    let bounds = s.peer_bounds();
    let cpu_peer = theirs.map(|r| session::peer_cpu(r, &bounds, s.cpu().wall_s));
    if let Some(r) = theirs {
        session::merge_peer(&mut streams, r, cfg.test.protocol, &bounds)?;
    }
    Ok(NetMeasurement {
        role: Role::Client,
        config: cfg.test.clone(),
        peer: peer.to_string(),
        local: local.to_string(),
        interface,
        peer_version: None,
        streams,
        cpu_local: s.cpu(),
        cpu_peer,
        congestion_local: s.congestion(),
        congestion_peer: theirs.and_then(|r| r.congestion_used.clone()),
        interval_s: cfg.interval.as_secs_f64(),
        stopped_by,
        start: None,
    })
}

/// The moment of the control connection and the test's cookie (its 36 characters).
pub(crate) fn test_start(cookie: &[u8]) -> model::net::TestStart {
    model::net::TestStart {
        unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        cookie: String::from_utf8_lossy(cookie)
            .trim_end_matches('\0')
            .to_string(),
    }
}

fn with_start(mut m: NetMeasurement, start: &model::net::TestStart) -> NetMeasurement {
    m.start = Some(start.clone());
    m
}
