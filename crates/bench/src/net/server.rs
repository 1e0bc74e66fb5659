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
}

pub struct Server {
    listener: TcpListener,
    cfg: ServerConfig,
}

/// iperf3's i_errno for "cannot receive parameters" (IERECVPARAMS, iperf_api.h).
const IERECVPARAMS: i32 = 114;

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

    /// Refuse a connection that arrives while a test runs (iperf_accept: ACCESS_DENIED).
    fn deny_waiting(&self, on_event: OnEvent<'_>) {
        while let Ok((mut s, peer)) = self.listener.accept() {
            let _ = s.write_all(&[State::AccessDenied.byte() as u8]);
            on_event(Event::Denied {
                peer: peer.to_string(),
            });
        }
    }

    /// Wait for one client (until `interrupt`), run its test, and return what was measured.
    /// `Ok(None)`: interrupted while idle.
    pub fn serve_one(
        &self,
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
    ) -> Result<Option<NetMeasurement>, NetError> {
        let (ctrl, peer_addr) = loop {
            if interrupt.load(Ordering::Relaxed) {
                return Ok(None);
            }
            match self.listener.accept() {
                Ok(c) => break c,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    poll_in(&[self.listener.as_raw_fd()], Duration::from_millis(200));
                }
                Err(e) => return Err(NetError::Setup(format!("accepting a client failed: {e}"))),
            }
        };
        let peer = peer_addr.to_string();
        self.run_test(ctrl, &peer, interrupt, on_event).map(Some)
    }

    fn run_test(
        &self,
        mut ctrl: TcpStream,
        peer: &str,
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
    ) -> Result<NetMeasurement, NetError> {
        let who = format!("the client {peer}");
        let cerr = |source: ProtoError| NetError::control(&who, "", peer, source);
        let setup = |e: std::io::Error| NetError::Setup(e.to_string());
        ctrl.set_nonblocking(false).map_err(setup)?;
        ctrl.set_read_timeout(Some(CONTROL_TIMEOUT))
            .map_err(setup)?;
        ctrl.set_write_timeout(Some(CONTROL_TIMEOUT))
            .map_err(setup)?;
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
        let mut cookie = [0u8; proto::COOKIE_SIZE];
        ctrl.read_exact(&mut cookie).map_err(|e| cerr(e.into()))?;
        proto::write_state(&mut ctrl, State::ParamExchange).map_err(cerr)?;
        let params = match proto::read_frame(&mut ctrl).and_then(|f| Params::parse(&f)) {
            Ok(p) => p,
            Err(e) => {
                // SERVER_ERROR, then i_errno and errno (iperf_exchange_parameters).
                let mut msg = vec![State::ServerError.byte() as u8];
                msg.extend_from_slice(&IERECVPARAMS.to_be_bytes());
                msg.extend_from_slice(&0i32.to_be_bytes());
                let _ = ctrl.write_all(&msg);
                return Err(cerr(e));
            }
        };
        let config = config_of(&params);
        // UDP streams are "accepted" on a datagram socket bound to the same port.
        let mut udp_listener = match config.protocol {
            Protocol::Udp => Some(self.udp_socket(local)?),
            Protocol::Tcp => None,
        };
        proto::write_state(&mut ctrl, State::CreateStreams).map_err(cerr)?;
        let streams =
            self.accept_streams(&config, &cookie, local, &mut udp_listener, peer, on_event)?;
        let congestion_asked = params.congestion.clone();
        if let Some(c) = &congestion_asked {
            for st in &streams {
                if let Sock::Tcp(t) = &st.sock {
                    let _ = socket2::SockRef::from(t).set_tcp_congestion(c.as_bytes());
                }
            }
        }
        proto::write_state(&mut ctrl, State::TestStart).map_err(cerr)?;
        let mut s = Session::start(streams, &config, self.cfg.interval).map_err(NetError::Setup)?;
        proto::write_state(&mut ctrl, State::TestRunning).map_err(cerr)?;
        on_event(Event::Streaming {
            omit: Duration::from_secs(u64::from(config.omit_s)),
        });

        // Running: until TEST_END, bounded by the test's own length plus a margin (iperf3's
        // server also gives up on a silent client).
        let limit = s.measured_start()
            + Duration::from_secs(u64::from(config.duration_s))
            + Duration::from_secs(15);
        let fds = [ctrl.as_raw_fd(), self.listener.as_raw_fd()];
        // The server's senders stop when the test is due to end rather than when TEST_END
        // arrives, so nothing is sent after the client stopped counting (iperf3 sends on
        // until TEST_END; its client then reports those bytes as never received).
        let due = s.measured_start() + Duration::from_secs(u64::from(config.duration_s));
        let mut senders_stopped = false;
        let stopped = loop {
            let now = Instant::now();
            if !senders_stopped && now >= due {
                s.stop_senders();
                senders_stopped = true;
            }
            for (end_s, flow, bps) in s.tick(now) {
                on_event(Event::Interval { end_s, flow, bps });
            }
            if interrupt.load(Ordering::Relaxed) {
                let _ = proto::write_state(&mut ctrl, State::ServerTerminate);
                s.mark_end();
                s.stop_all();
                break NetStop::Interrupted;
            }
            if now >= limit {
                s.stop_all();
                return Err(NetError::Peer(format!(
                    "the client {peer} did not end the test {} s after it was due",
                    15
                )));
            }
            let wait = s
                .next_tick()
                .saturating_duration_since(now)
                .min(Duration::from_millis(100));
            let ready = poll_in(&fds, wait + Duration::from_millis(1));
            if ready[1] {
                self.deny_waiting(on_event);
            }
            if ready[0] {
                match proto::read_state(&mut ctrl) {
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
            proto::write_state(&mut ctrl, State::ExchangeResults).map_err(cerr)?;
            let frame = proto::read_frame(&mut ctrl).map_err(cerr)?;
            let r = Results::parse(&frame).map_err(cerr)?;
            let ours = session::results_message(
                &streams,
                &s.cpu(),
                s.congestion(),
                config.protocol == Protocol::Tcp,
            );
            proto::write_json(&mut ctrl, &ours.to_json()).map_err(cerr)?;
            proto::write_state(&mut ctrl, State::DisplayResults).map_err(cerr)?;
            // IPERF_DONE, or the client just closes.
            let _ = ctrl.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = proto::read_state(&mut ctrl);
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

    /// Accept the client's data connections: receivers first, then senders (iperf_run_server).
    fn accept_streams(
        &self,
        config: &NetConfig,
        cookie: &[u8],
        local: SocketAddr,
        udp: &mut Option<UdpSocket>,
        peer: &str,
        on_event: OnEvent<'_>,
    ) -> Result<Vec<PendingStream>, NetError> {
        let plan = streams_in_order(config.direction, config.streams);
        let streams = plan.len();
        let until = Instant::now() + CONTROL_TIMEOUT;
        let late = || {
            NetError::Peer(format!(
                "the client {peer} did not open its data streams within {} s (a firewall may \
                 block the port for data)",
                CONTROL_TIMEOUT.as_secs()
            ))
        };
        let mut out = Vec::with_capacity(streams);
        for (id, flow) in plan {
            let local_sends = flow == Flow::ServerToClient;
            let sock = match udp.take() {
                None => loop {
                    if Instant::now() >= until {
                        return Err(late());
                    }
                    match self.listener.accept() {
                        Ok((mut s, from)) => {
                            s.set_nonblocking(false)
                                .map_err(|e| NetError::Setup(e.to_string()))?;
                            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                            let mut c = [0u8; proto::COOKIE_SIZE];
                            if s.read_exact(&mut c).is_ok() && c[..] == cookie[..] {
                                let _ = s.set_read_timeout(None);
                                if let Some(w) = config.window {
                                    let r = socket2::SockRef::from(&s);
                                    let _ = r.set_send_buffer_size(w as usize);
                                    let _ = r.set_recv_buffer_size(w as usize);
                                }
                                break Sock::Tcp(s);
                            }
                            let _ = s.write_all(&[State::AccessDenied.byte() as u8]);
                            on_event(Event::Denied {
                                peer: from.to_string(),
                            });
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            poll_in(&[self.listener.as_raw_fd()], Duration::from_millis(100));
                        }
                        Err(e) => {
                            return Err(NetError::Setup(format!(
                                "accepting a data stream failed: {e}"
                            )))
                        }
                    }
                },
                Some(u) => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(late());
                    }
                    let _ = u.set_read_timeout(Some(left));
                    let mut b = [0u8; 64];
                    let from = loop {
                        match u.recv_from(&mut b) {
                            Ok((4, from)) => break from,
                            Ok(_) => continue,
                            Err(_) => return Err(late()),
                        }
                    };
                    u.connect(from)
                        .map_err(|e| NetError::Setup(e.to_string()))?;
                    super::stream::size_udp_buffers(&u, config.window);
                    // A fresh socket for the next stream's connect datagram (iperf_udp_accept).
                    if out.len() + 1 < streams {
                        *udp = Some(self.udp_socket(local)?);
                    }
                    u.send(&proto::UDP_CONNECT_REPLY.to_ne_bytes())
                        .map_err(|e| NetError::Peer(format!("UDP stream {id}: {e}")))?;
                    Sock::Udp(u)
                }
            };
            out.push(PendingStream {
                id,
                flow,
                local_sends,
                sock,
            });
        }
        Ok(out)
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
