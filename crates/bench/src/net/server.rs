//! The server end (iperf3 `-s`): one test at a time on one listener; anyone else who
//! connects meanwhile gets ACCESS_DENIED, as from iperf3. A client that misbehaves ends only
//! its own test: [`Server::serve_one`] returns an error and the listener stays.

use super::proto::{self, Params, ProtoError, Results, State};
use super::session::{self, PendingStream, Session};
use super::stream::Sock;
use super::Event;
use super::{streams_in_order, test_interface, NetError, OnEvent, CONTROL_TIMEOUT};
use model::net::{Direction, Flow, NetConfig, NetMeasurement, NetStop, Protocol, Role};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub port: u16,
    pub bind: Option<IpAddr>,
    pub interval: Duration,
    /// iperf3's authentication (`--rsa-private-key-path`, `--authorized-users-path`): a
    /// client without valid credentials is refused.
    pub auth: Option<super::auth::ServerAuth>,
}

pub struct Server {
    listener: TcpListener,
    cfg: ServerConfig,
}

/// How long a new connection may take to send its 37-byte cookie before it is dropped (a
/// stock client sends it right after connecting; idle connections must not hold the server).
pub const COOKIE_TIMEOUT: Duration = Duration::from_secs(3);
/// Connections heard at once while no test runs; past it the oldest is dropped.
const MAX_WAITING: usize = 64;
/// How often a waiting server looks at its stop flag.
const IDLE_POLL: Duration = Duration::from_millis(100);
/// How long one write to the control connection may block (a peer that stops reading).
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long after the test's end the client has to send TEST_END.
const END_GRACE: Duration = Duration::from_secs(10);
/// How long the server's senders wait for the client to acknowledge what they sent.
const DRAIN_LIMIT: Duration = Duration::from_secs(3);

fn poll_in(fds: &[i32], timeout: Duration) -> Vec<bool> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: p is a valid array of p.len() pollfds.
    let r = unsafe {
        libc::poll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            timeout.as_millis() as i32,
        )
    };
    if r <= 0 {
        return vec![false; fds.len()];
    }
    p.iter().map(|x| x.revents != 0).collect()
}

fn bind_error(port: u16, e: &std::io::Error) -> NetError {
    NetError::Setup(match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "port {port} is already in use (another iperf3 or headroom server?): stop it, or \
             pick another port with -p"
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("port {port} needs root (ports below 1024 are privileged): pick one above 1023 with -p")
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "cannot bind to the address given with -B: no interface has it".to_string()
        }
        _ => format!("cannot listen on port {port}: {e}"),
    })
}

fn listen_on(addr: SocketAddr, ty: Type) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // iperf3 listens on :: for both families when no -B is given.
        let _ = s.set_only_v6(false);
    }
    s.bind(&SockAddr::from(addr))?;
    Ok(s)
}

impl Server {
    /// Listen on `port` (on `bind`, or on every address of both families).
    pub fn bind(cfg: ServerConfig) -> Result<Server, NetError> {
        let addrs: Vec<SocketAddr> = match cfg.bind {
            Some(ip) => vec![SocketAddr::new(ip, cfg.port)],
            None => vec![
                SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), cfg.port),
                SocketAddr::new(IpAddr::from([0, 0, 0, 0]), cfg.port),
            ],
        };
        let mut last = None;
        for a in addrs {
            match listen_on(a, Type::STREAM).and_then(|s| s.listen(16).map(|()| s)) {
                Ok(s) => {
                    let listener: TcpListener = s.into();
                    listener
                        .set_nonblocking(true)
                        .map_err(|e| bind_error(cfg.port, &e))?;
                    return Ok(Server { listener, cfg });
                }
                Err(e) => {
                    let in_use = e.kind() == std::io::ErrorKind::AddrInUse;
                    last = Some(bind_error(cfg.port, &e));
                    if in_use {
                        break;
                    }
                }
            }
        }
        Err(last.unwrap_or_else(|| NetError::Setup("no address to listen on".into())))
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Refuse the connections that arrive while a test runs, at once and without reading
    /// from them (iperf_accept: ACCESS_DENIED, "the server is busy running a test"), at most
    /// [`MAX_WAITING`] per call.
    fn deny_waiting(&self, on_event: OnEvent<'_>) {
        for _ in 0..MAX_WAITING {
            let Ok((s, peer)) = self.listener.accept() else {
                return;
            };
            deny(s);
            on_event(Event::Denied {
                peer: peer.to_string(),
            });
        }
    }

    /// Wait for one client (until `interrupt`), run its test, and return what was measured.
    /// `Ok(None)`: interrupted while idle.
    ///
    /// Every connection is heard at once: those that have not sent their cookie within
    /// [`COOKIE_TIMEOUT`] are dropped, so idle peers never delay a real client; the first
    /// whole cookie starts the test and everyone else still waiting is refused as busy.
    pub fn serve_one(
        &self,
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
    ) -> Result<Option<NetMeasurement>, NetError> {
        let mut arrivals = Arrivals::default();
        let (ctrl, peer_addr, cookie) = loop {
            if interrupt.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let wait = arrivals
                .next_expiry()
                .map_or(IDLE_POLL, |t| t.saturating_duration_since(Instant::now()))
                .min(IDLE_POLL);
            let mut fds = vec![self.listener.as_raw_fd()];
            fds.extend(arrivals.fds());
            let ready = poll_in(&fds, wait + Duration::from_millis(1));
            if ready[0] {
                arrivals.accept(&self.listener);
            }
            let mut done = arrivals.read(&ready[1..]);
            arrivals.expire(Instant::now());
            if !done.is_empty() {
                let first = done.remove(0);
                let others = done.into_iter().map(|(s, from, _)| (s, from));
                for (s, from) in others.chain(arrivals.take_all()) {
                    deny(s);
                    on_event(Event::Denied {
                        peer: from.to_string(),
                    });
                }
                break first;
            }
        };
        let peer = peer_addr.to_string();
        self.run_test(ctrl, &peer, cookie, interrupt, on_event)
            .map(Some)
    }

    fn run_test(
        &self,
        ctrl: TcpStream,
        peer: &str,
        cookie: [u8; proto::COOKIE_SIZE],
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
    ) -> Result<NetMeasurement, NetError> {
        let who = format!("the client {peer}");
        let cerr = |source: ProtoError| match source {
            ProtoError::Io(e) if e.kind() == std::io::ErrorKind::Other && is_stop(&e) => {
                NetError::Interrupted
            }
            source => NetError::control(&who, "", peer, source),
        };
        let start = super::client::test_start(&cookie);
        let setup = |e: std::io::Error| NetError::Setup(e.to_string());
        ctrl.set_nonblocking(false).map_err(setup)?;
        // Reads wait in poll (Patient below); a read that still blocks gives up soon.
        ctrl.set_read_timeout(Some(IDLE_POLL)).map_err(setup)?;
        // A peer that stops reading cannot hold a write for long: the messages are small.
        ctrl.set_write_timeout(Some(WRITE_TIMEOUT)).map_err(setup)?;
        let _ = ctrl.set_nodelay(true);
        let local = ctrl.local_addr().map_err(setup)?;
        let interface = match ctrl.peer_addr() {
            Ok(p) => test_interface(local.ip(), p.ip()),
            Err(e) => return Err(setup(e)),
        };
        on_event(Event::Connected {
            peer,
            local,
            interface: interface.as_deref(),
        });
        // One deadline for the set-up, and one for the whole session once the test's length
        // is known: no step of a session (a stream, a silent peer, a peer that stops reading)
        // waits past it.
        let began = Instant::now();
        let setup_until = began + CONTROL_TIMEOUT;
        let mut ctl = Patient {
            sock: &ctrl,
            server: self,
            until: setup_until,
            interrupt,
        };
        proto::write_state(&mut ctl.writer(), State::ParamExchange).map_err(cerr)?;
        let parsed = proto::read_frame_within(&mut ctl.reader(on_event), proto::MAX_PARAMS_JSON)
            .and_then(|f| Params::parse(&f))
            .and_then(|p| match &self.cfg.auth {
                Some(a) => a.check(p.authtoken.as_deref()).map(|()| p),
                None => Ok(p),
            });
        let params = match parsed {
            Ok(p) => p,
            Err(e) => {
                refuse(&ctrl, &e);
                return Err(match e {
                    ProtoError::Io(_) | ProtoError::Closed => cerr(e),
                    e => NetError::Peer(format!("the client {peer} was refused: {e}")),
                });
            }
        };
        let config = config_of(&params);
        let session_until = setup_until
            + Duration::from_secs(u64::from(config.omit_s) + u64::from(config.duration_s))
            + END_GRACE
            + CONTROL_TIMEOUT;
        // UDP streams are "accepted" on a datagram socket bound to the same port.
        let mut udp_listener = match config.protocol {
            Protocol::Udp => match self.udp_socket(local) {
                Ok(u) => Some(u),
                Err(e) => {
                    let mut msg = vec![State::ServerError.byte() as u8];
                    msg.extend_from_slice(&proto::ierr::IELISTEN.to_be_bytes());
                    msg.extend_from_slice(&0i32.to_be_bytes());
                    let _ = (&ctrl).write_all(&msg);
                    return Err(e);
                }
            },
            Protocol::Tcp => None,
        };
        proto::write_state(&mut ctl.writer(), State::CreateStreams).map_err(cerr)?;
        let streams = self.accept_streams(
            &config,
            &cookie,
            local,
            &mut udp_listener,
            peer,
            (&ctrl, setup_until, interrupt),
            on_event,
        )?;
        let congestion_asked = params.congestion.clone();
        if let Some(c) = &congestion_asked {
            for st in &streams {
                if let Sock::Tcp(t) = &st.sock {
                    let _ = socket2::SockRef::from(t).set_tcp_congestion(c.as_bytes());
                }
            }
        }
        proto::write_state(&mut ctl.writer(), State::TestStart).map_err(cerr)?;
        let mut s = Session::start(streams, &config, self.cfg.interval).map_err(NetError::Setup)?;
        proto::write_state(&mut ctl.writer(), State::TestRunning).map_err(cerr)?;
        on_event(Event::Streaming {
            omit: Duration::from_secs(u64::from(config.omit_s)),
        });

        // Running: until TEST_END, bounded by the test's own length plus a margin (iperf3's
        // server also gives up on a silent client).
        let limit =
            (s.measured_start() + Duration::from_secs(u64::from(config.duration_s)) + END_GRACE)
                .min(session_until);
        let fds = [ctrl.as_raw_fd(), self.listener.as_raw_fd()];
        // The server's senders stop when the test is due to end rather than when TEST_END
        // arrives, so nothing is sent after the client stopped counting (iperf3 sends on
        // until TEST_END; its client then reports those bytes as never received).
        let due = s.measured_start() + Duration::from_secs(u64::from(config.duration_s));
        let mut senders_stopped = false;
        let stopped = loop {
            let now = Instant::now();
            if !senders_stopped && now >= due {
                s.stop_senders(
                    DRAIN_LIMIT.min(limit.saturating_duration_since(now)),
                    interrupt,
                );
                senders_stopped = true;
            }
            for (end_s, flow, bps) in s.tick(now) {
                on_event(Event::Interval { end_s, flow, bps });
            }
            if interrupt.load(Ordering::Relaxed) {
                let _ = proto::write_state(&mut ctl.writer(), State::ServerTerminate);
                s.mark_end();
                s.stop_all();
                break NetStop::Interrupted;
            }
            if now >= limit {
                s.stop_all();
                return Err(NetError::Peer(format!(
                    "the client {peer} did not end the test {} s after it was due",
                    END_GRACE.as_secs()
                )));
            }
            let wait = s
                .next_tick()
                .saturating_duration_since(now)
                .min(Duration::from_millis(100));
            let ready = poll_in(&fds, wait + Duration::from_millis(1));
            // The client first: when it ended the test (or went away) in the same moment as
            // a newcomer arrived, the newcomer waits for the next session instead of being
            // refused.
            if ready[1] && !ready[0] {
                self.deny_waiting(on_event);
            }
            if ready[0] {
                match proto::read_state(&mut &ctrl) {
                    Ok(State::TestEnd) => {
                        s.mark_end();
                        s.stop_all();
                        break NetStop::Completed;
                    }
                    Ok(State::ClientTerminate) => {
                        s.mark_end();
                        s.stop_all();
                        break NetStop::Interrupted;
                    }
                    Ok(other) => {
                        s.stop_all();
                        return Err(NetError::Peer(format!(
                            "the client {peer} sent {other:?} during the test"
                        )));
                    }
                    Err(e) => {
                        s.stop_all();
                        return Err(cerr(e));
                    }
                }
            }
            if let Some(e) = s.stream_error() {
                if config.direction != Direction::Forward {
                    s.stop_all();
                    return Err(NetError::Peer(format!(
                        "{e} (the client {peer} may have stopped)"
                    )));
                }
            }
        };
        let mut streams = s.results();
        let mut theirs = None;
        if stopped == NetStop::Completed {
            ctl.until = (Instant::now() + CONTROL_TIMEOUT).min(session_until);
            proto::write_state(&mut ctl.writer(), State::ExchangeResults).map_err(cerr)?;
            let frame = proto::read_frame(&mut ctl.reader(on_event)).map_err(cerr)?;
            let r = Results::parse(&frame).map_err(cerr)?;
            let ours = session::results_message(
                &streams,
                &s.cpu(),
                s.congestion(),
                config.protocol == Protocol::Tcp,
            );
            proto::write_json(&mut ctl.writer(), &ours.to_json()).map_err(cerr)?;
            proto::write_state(&mut ctl.writer(), State::DisplayResults).map_err(cerr)?;
            // IPERF_DONE, or the client just closes.
            ctl.until = (Instant::now() + Duration::from_secs(2)).min(session_until);
            let _ = proto::read_state(&mut ctl.reader(on_event));
            session::merge_peer(&mut streams, &r, config.protocol).map_err(NetError::Peer)?;
            theirs = Some(r);
        }
        let wall = s.cpu().wall_s;
        Ok(NetMeasurement {
            role: Role::Server,
            config,
            peer: peer.to_string(),
            local: local.to_string(),
            interface: interface.clone(),
            peer_version: params.client_version,
            streams,
            cpu_local: s.cpu(),
            cpu_peer: theirs.as_ref().map(|r| model::net::CpuUse {
                total_percent: r.cpu_util_total,
                user_percent: r.cpu_util_user,
                system_percent: r.cpu_util_system,
                wall_s: wall,
            }),
            congestion_local: s.congestion(),
            congestion_peer: theirs.and_then(|r| r.congestion_used),
            interval_s: self.cfg.interval.as_secs_f64(),
            stopped_by: stopped,
            start: Some(start),
        })
    }

    fn udp_socket(&self, local: SocketAddr) -> Result<UdpSocket, NetError> {
        let addr = SocketAddr::new(
            self.cfg.bind.unwrap_or(match local {
                SocketAddr::V4(_) => IpAddr::from([0, 0, 0, 0]),
                SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            }),
            self.cfg.port,
        );
        let s = listen_on(addr, Type::DGRAM).map_err(|e| bind_error(self.cfg.port, &e))?;
        Ok(s.into())
    }

    /// Accept the client's data connections in the order it opens them (receivers first,
    /// then senders: iperf_run_server), until `until` at the latest; a connection with
    /// another cookie is refused as busy, one that sends none is dropped after
    /// [`COOKIE_TIMEOUT`], and the control connection closing ends the wait.
    #[allow(clippy::too_many_arguments)]
    fn accept_streams(
        &self,
        config: &NetConfig,
        cookie: &[u8],
        local: SocketAddr,
        udp: &mut Option<UdpSocket>,
        peer: &str,
        (ctrl, until, interrupt): (&TcpStream, Instant, &AtomicBool),
        on_event: OnEvent<'_>,
    ) -> Result<Vec<PendingStream>, NetError> {
        let plan = streams_in_order(config.direction, config.streams);
        let late = || {
            NetError::Peer(format!(
                "the client {peer} did not open its data streams within {} s (a firewall may \
                 block the port for data)",
                CONTROL_TIMEOUT.as_secs()
            ))
        };
        let gone = || {
            NetError::Peer(format!(
                "the client {peer} closed the control connection while opening its data streams"
            ))
        };
        // One round of waiting: the listener, the control connection and `extra` sockets
        // (connections still sending their cookie, or the UDP socket), bounded by the
        // deadline and the stop flag. Returns the readiness of `extra`.
        let wait = |extra: &[i32]| -> Result<(bool, Vec<bool>), NetError> {
            if interrupt.load(Ordering::Relaxed) {
                return Err(NetError::Interrupted);
            }
            let now = Instant::now();
            if now >= until {
                return Err(late());
            }
            let mut fds = vec![self.listener.as_raw_fd(), ctrl.as_raw_fd()];
            fds.extend_from_slice(extra);
            let ready = poll_in(
                &fds,
                (until - now).min(IDLE_POLL) + Duration::from_millis(1),
            );
            if ready[1] {
                return Err(gone());
            }
            Ok((ready[0], ready[2..].to_vec()))
        };
        let mut out = Vec::with_capacity(plan.len());
        if config.protocol == Protocol::Tcp {
            let mut arrivals = Arrivals::default();
            let mut socks = Vec::with_capacity(plan.len());
            while socks.len() < plan.len() {
                let (listener_ready, ready) = wait(&arrivals.fds())?;
                if listener_ready {
                    arrivals.accept(&self.listener);
                }
                for (s, from, c) in arrivals.read(&ready) {
                    if c[..] == cookie[..] && socks.len() < plan.len() {
                        socks.push(s);
                    } else {
                        deny(s);
                        on_event(Event::Denied {
                            peer: from.to_string(),
                        });
                    }
                }
                arrivals.expire(Instant::now());
            }
            for (s, from) in arrivals.take_all() {
                deny(s);
                on_event(Event::Denied {
                    peer: from.to_string(),
                });
            }
            for ((id, flow), s) in plan.into_iter().zip(socks) {
                s.set_nonblocking(false)
                    .map_err(|e| NetError::Setup(e.to_string()))?;
                if let Some(w) = config.window {
                    let r = socket2::SockRef::from(&s);
                    let _ = r.set_send_buffer_size(w as usize);
                    let _ = r.set_recv_buffer_size(w as usize);
                }
                out.push(PendingStream {
                    id,
                    flow,
                    local_sends: flow == Flow::ServerToClient,
                    sock: Sock::Tcp(s),
                });
            }
            return Ok(out);
        }
        let streams = plan.len();
        for (id, flow) in plan {
            let Some(u) = udp.take() else {
                return Err(NetError::Setup(format!(
                    "UDP stream {id}: no socket to receive its connect datagram"
                )));
            };
            u.set_nonblocking(true)
                .map_err(|e| NetError::Setup(e.to_string()))?;
            let mut b = [0u8; 64];
            let from = loop {
                let (listener_ready, ready) = wait(&[u.as_raw_fd()])?;
                if listener_ready {
                    self.deny_waiting(on_event);
                }
                if !ready[0] {
                    continue;
                }
                match u.recv_from(&mut b) {
                    Ok((4, from)) => break from,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => return Err(late()),
                }
            };
            u.set_nonblocking(false)
                .map_err(|e| NetError::Setup(e.to_string()))?;
            u.connect(from)
                .map_err(|e| NetError::Setup(e.to_string()))?;
            super::stream::size_udp_buffers(&u, config.window);
            // A fresh socket for the next stream's connect datagram (iperf_udp_accept).
            if out.len() + 1 < streams {
                *udp = Some(self.udp_socket(local)?);
            }
            u.send(&proto::UDP_CONNECT_REPLY.to_ne_bytes())
                .map_err(|e| NetError::Peer(format!("UDP stream {id}: {e}")))?;
            out.push(PendingStream {
                id,
                flow,
                local_sends: flow == Flow::ServerToClient,
                sock: Sock::Udp(u),
            });
        }
        Ok(out)
    }
}

/// Answer a connection "the server is busy running a test" (ACCESS_DENIED) and close it.
fn deny(mut s: TcpStream) {
    let _ = s.set_nonblocking(true);
    let _ = s.write_all(&[State::AccessDenied.byte() as u8]);
}

/// Refuse a test after its parameters: SERVER_ERROR, then iperf3's error number (and errno
/// 0, except for an authentication failure, after which iperf3 3.12 sends no errno),
/// in one write (iperf_exchange_parameters).
fn refuse(ctrl: &TcpStream, e: &ProtoError) {
    let i_errno = e.i_errno();
    let mut msg = vec![State::ServerError.byte() as u8];
    msg.extend_from_slice(&i_errno.to_be_bytes());
    if i_errno != proto::ierr::IEAUTHTEST {
        msg.extend_from_slice(&0i32.to_be_bytes());
    }
    let _ = (&*ctrl).write_all(&msg);
}

/// The error a read returns when the stop flag ends it.
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped")
    }
}

impl std::error::Error for Stopped {}

fn is_stop(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Stopped>())
}

/// The control connection of a session, read under its deadline: a read waits in poll(2)
/// beside the listener (newcomers are refused at once), and ends at `until` or when
/// `interrupt` is set.
struct Patient<'a> {
    sock: &'a TcpStream,
    server: &'a Server,
    until: Instant,
    interrupt: &'a AtomicBool,
}

impl<'a> Patient<'a> {
    fn reader<'s>(&'s self, on_event: OnEvent<'s>) -> PatientRead<'s> {
        PatientRead { p: self, on_event }
    }

    /// Writes block at most [`WRITE_TIMEOUT`] (set on the socket).
    fn writer(&self) -> &'a TcpStream {
        self.sock
    }
}

struct PatientRead<'s> {
    p: &'s Patient<'s>,
    on_event: OnEvent<'s>,
}

impl Read for PatientRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.p.interrupt.load(Ordering::Relaxed) {
                return Err(std::io::Error::other(Stopped));
            }
            let now = Instant::now();
            if now >= self.p.until {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            let fds = [self.p.sock.as_raw_fd(), self.p.server.listener.as_raw_fd()];
            let wait = (self.p.until - now).min(IDLE_POLL) + Duration::from_millis(1);
            let ready = poll_in(&fds, wait);
            // The peer first: a newcomer that arrived as the session ends (after the
            // client's last word) waits in the backlog for the next session.
            if ready[0] {
                match (&*self.p.sock).read(buf) {
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    r => return r,
                }
            } else if ready[1] {
                self.p.server.deny_waiting(self.on_event);
            }
        }
    }
}

/// Connections accepted and not yet known by their cookie (non-blocking, read as their bytes
/// come): at most [`MAX_WAITING`] at once, each for at most [`COOKIE_TIMEOUT`].
#[derive(Default)]
struct Arrivals {
    waiting: Vec<Arrival>,
}

struct Arrival {
    sock: TcpStream,
    from: SocketAddr,
    since: Instant,
    got: Vec<u8>,
}

/// A connection with its whole cookie: the socket, its peer and the cookie.
type Identified = (TcpStream, SocketAddr, [u8; proto::COOKIE_SIZE]);

impl Arrivals {
    /// Take the connections the listener holds; past [`MAX_WAITING`] the oldest waiting one
    /// is dropped for each new one.
    fn accept(&mut self, l: &TcpListener) {
        for _ in 0..MAX_WAITING {
            let Ok((sock, from)) = l.accept() else {
                return;
            };
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            if self.waiting.len() >= MAX_WAITING {
                self.waiting.remove(0);
            }
            self.waiting.push(Arrival {
                sock,
                from,
                since: Instant::now(),
                got: Vec::with_capacity(proto::COOKIE_SIZE),
            });
        }
    }

    fn fds(&self) -> Vec<i32> {
        self.waiting.iter().map(|a| a.sock.as_raw_fd()).collect()
    }

    fn next_expiry(&self) -> Option<Instant> {
        self.waiting.iter().map(|a| a.since + COOKIE_TIMEOUT).min()
    }

    /// Read what the connections marked ready in `ready` (in [`Self::fds`]' order) sent;
    /// the ones whose cookie is whole leave the set, in order. Closed ones are dropped.
    fn read(&mut self, ready: &[bool]) -> Vec<Identified> {
        let mut done = Vec::new();
        let mut keep = Vec::with_capacity(self.waiting.len());
        let flags = ready.iter().copied().chain(std::iter::repeat(false));
        for (mut a, r) in self.waiting.drain(..).zip(flags) {
            if !r {
                keep.push(a);
                continue;
            }
            let mut buf = [0u8; proto::COOKIE_SIZE];
            let want = proto::COOKIE_SIZE - a.got.len();
            match a.sock.read(&mut buf[..want]) {
                Ok(0) => {}
                Ok(n) => {
                    a.got.extend_from_slice(&buf[..n]);
                    if a.got.len() == proto::COOKIE_SIZE {
                        let mut c = [0u8; proto::COOKIE_SIZE];
                        c.copy_from_slice(&a.got);
                        done.push((a.sock, a.from, c));
                    } else {
                        keep.push(a);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => keep.push(a),
                Err(_) => {}
            }
        }
        self.waiting = keep;
        done
    }

    /// Drop the connections that sent no whole cookie in time.
    fn expire(&mut self, now: Instant) {
        self.waiting.retain(|a| now < a.since + COOKIE_TIMEOUT);
    }

    fn take_all(&mut self) -> Vec<(TcpStream, SocketAddr)> {
        self.waiting.drain(..).map(|a| (a.sock, a.from)).collect()
    }
}

/// The test a client asked for, as a headroom configuration. Parameters headroom does not
/// implement (`-n`/`-k` end conditions) run as a timed test.
pub fn config_of(p: &Params) -> NetConfig {
    let protocol = if p.udp { Protocol::Udp } else { Protocol::Tcp };
    NetConfig {
        protocol,
        direction: if p.bidirectional {
            Direction::Bidir
        } else if p.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        },
        duration_s: p.time,
        omit_s: p.omit,
        streams: p.parallel,
        len: p.len.unwrap_or(match protocol {
            Protocol::Tcp => super::DEFAULT_TCP_LEN,
            Protocol::Udp => super::DEFAULT_UDP_LEN,
        }),
        bitrate_bps: (p.bandwidth > 0).then_some(p.bandwidth),
        window: p.window,
        mss: p.mss,
        zerocopy: p.zerocopy,
        udp_counters_64bit: p.udp_counters_64bit,
    }
}
