//! The server end (iperf3 `-s`): one test at a time on one listener; anyone else who
//! connects meanwhile gets ACCESS_DENIED, as from iperf3. A client that misbehaves ends only
//! its own test: [`Server::serve_one`] returns an error and the listener stays.
//!
//! A test's place is taken only once its client is admitted: the thread that owns the
//! listener reads each connection's cookie, asks a connection with a new cookie for its
//! parameters (PARAM_EXCHANGE), and reads and checks them (and the credentials, when the
//! server asks for them) under [`PARAMS_TIMEOUT`], at most [`MAX_ASKING_PER_ADDRESS`]
//! connections of one address at once. A peer that sends a cookie and nothing more, or bad
//! credentials, holds no test's place.
//!
//! With [`ServerConfig::clients`] above 1 (a lab's server), up to that many tests run at
//! once, each in its own thread with its own streams and result: the caller's thread hands
//! each data connection to the test its cookie belongs to, and starts an admitted test while
//! there is room (else ACCESS_DENIED); the streams of all tests together are bounded by
//! [`MAX_TOTAL_STREAMS`].

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
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub port: u16,
    pub bind: Option<IpAddr>,
    pub interval: Duration,
    /// iperf3's authentication (`--rsa-private-key-path`, `--authorized-users-path`): a
    /// client without valid credentials is refused.
    pub auth: Option<super::auth::ServerAuth>,
    /// Tests run at once (`--clients`, 1 to [`MAX_CLIENTS`]): 1 is iperf3's one at a time.
    pub clients: usize,
}

pub struct Server {
    inner: Arc<Listening>,
    /// With more than one client at once: the tests running and what they report.
    pool: Option<Pool>,
    /// The connections heard and not yet admitted, kept from one call of
    /// [`Server::serve_one`] to the next.
    arrivals: Mutex<Arrivals>,
    /// Clients refused after their parameters (refused credentials, parameters iperf3
    /// refuses), each returned by a call of [`Server::serve_one`].
    refused: Mutex<Vec<NetError>>,
}

/// The listening socket and the configuration every test of a server shares.
struct Listening {
    listener: TcpListener,
    cfg: ServerConfig,
}

/// The most tests a server runs at once (`--clients`).
pub const MAX_CLIENTS: usize = 64;
/// The most data streams all tests of a server run at once (each is a thread and a buffer
/// of up to 1 MiB): a test that would pass it is refused as busy.
pub const MAX_TOTAL_STREAMS: u32 = 256;

/// `--clients N`, or one sentence saying what to give.
pub fn clients_arg(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_CLIENTS as u64).contains(&n) => Ok(n as usize),
        Ok(n) => Err(format!(
            "{n} tests at once is not served: give 1 to {MAX_CLIENTS} (the streams of all tests \
             together are bounded at {MAX_TOTAL_STREAMS})"
        )),
        Err(_) if !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!(
                "{} tests at once is not served: give 1 to {MAX_CLIENTS}",
                s.trim()
            ))
        }
        Err(_) => Err("not a number of clients: give a whole number, e.g. --clients 4".into()),
    }
}

/// What the tests of a server with several clients share.
struct Shared {
    /// Held by the one test that is waiting for its UDP streams' connect datagrams: they come
    /// to the server's port without a cookie, so two tests never wait for them at once.
    udp_turn: Mutex<()>,
    streams_in_use: AtomicU32,
    /// The intervals each test keeps ([`session::MAX_INTERVALS_KEPT`] over all tests).
    intervals_kept: usize,
}

/// Streams taken from [`MAX_TOTAL_STREAMS`], given back when dropped.
struct Lease<'a>(&'a AtomicU32, u32);

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::SeqCst);
    }
}

impl Shared {
    /// Take `n` streams, or say how many are in use.
    fn lease(&self, n: u32) -> Result<Lease<'_>, u32> {
        self.streams_in_use
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used + n <= MAX_TOTAL_STREAMS).then_some(used + n)
            })
            .map(|_| Lease(&self.streams_in_use, n))
    }

    /// The UDP turn, waited for until `until` or `interrupt`.
    fn udp_turn(&self, until: Instant, interrupt: &AtomicBool) -> Option<MutexGuard<'_, ()>> {
        loop {
            match self.udp_turn.try_lock() {
                Ok(g) => return Some(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            if Instant::now() >= until || interrupt.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A test's part in a server with several clients: its data connections, sent by the thread
/// that owns the listener, and what it shares with the other tests.
struct Routed {
    streams: Receiver<TcpStream>,
    shared: Arc<Shared>,
}

/// The tests of a server with several clients.
struct Pool {
    clients: usize,
    shared: Arc<Shared>,
    /// Set when the caller's stop flag is: every test ends (as on iperf3's SIGINT).
    stop: Arc<AtomicBool>,
    tests: Mutex<Vec<Live>>,
    reports: Mutex<Receiver<Report>>,
    report: Sender<Report>,
    /// Tests started whose result was not yet returned.
    unreturned: std::sync::atomic::AtomicUsize,
}

/// A test that runs: its cookie, where its data connections go, its thread.
struct Live {
    cookie: [u8; proto::COOKIE_SIZE],
    streams: Sender<TcpStream>,
    thread: JoinHandle<()>,
}

/// What a test's thread tells the serving thread.
enum Report {
    Connected(String, SocketAddr),
    Done(Box<Result<NetMeasurement, NetError>>),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How long a new connection may take to send its 37-byte cookie before it is dropped (a
/// stock client sends it right after connecting; idle connections must not hold the server).
pub const COOKIE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a connection that asked for a new test (its cookie is no running test's) may
/// take to send its parameters and credentials once asked (PARAM_EXCHANGE): a stock client
/// sends them at once (headroom clients of earlier versions started their samplers first,
/// which took over 3 s on an emulated board); until they are read and accepted it takes
/// no test's slot.
pub const PARAMS_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections from one address (one IPv6 /64) asked for their parameters at once: past
/// it, that address's next connection is refused as busy (peers that send a cookie and nothing more
/// hold no more than this many places, and none of another address's).
pub const MAX_ASKING_PER_ADDRESS: usize = 8;
/// Connections heard at once while no test runs; past it the oldest is dropped.
const MAX_WAITING: usize = 64;
/// How often a waiting server looks at its stop flag.
const IDLE_POLL: Duration = Duration::from_millis(100);
/// How often a server with several clients looks for ended tests and routed connections.
const ROUTE_POLL: Duration = Duration::from_millis(20);
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
        if !(1..=MAX_CLIENTS).contains(&cfg.clients) {
            return Err(NetError::Setup(format!(
                "{} tests at once is not served: give 1 to {MAX_CLIENTS}",
                cfg.clients
            )));
        }
        let addrs: Vec<SocketAddr> = match cfg.bind {
            Some(ip) => vec![SocketAddr::new(ip, cfg.port)],
            None => vec![
                SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), cfg.port),
                SocketAddr::new(IpAddr::from([0, 0, 0, 0]), cfg.port),
            ],
        };
        let mut last = None;
        for a in addrs {
            // Room for every connection of a lab's clients starting at once.
            match listen_on(a, Type::STREAM).and_then(|s| s.listen(128).map(|()| s)) {
                Ok(s) => {
                    let listener: TcpListener = s.into();
                    listener
                        .set_nonblocking(true)
                        .map_err(|e| bind_error(cfg.port, &e))?;
                    let pool = (cfg.clients > 1).then(|| Pool::new(cfg.clients));
                    return Ok(Server {
                        inner: Arc::new(Listening { listener, cfg }),
                        pool,
                        arrivals: Mutex::new(Arrivals::default()),
                        refused: Mutex::new(Vec::new()),
                    });
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
        self.inner.listener.local_addr().ok()
    }

    /// Whether no test runs and none has a result still to return: a server with several
    /// clients returns one result per [`Self::serve_one`], so after a stop the caller asks
    /// for results until this holds.
    pub fn idle(&self) -> bool {
        self.pool
            .as_ref()
            .is_none_or(|p| p.unreturned.load(Ordering::SeqCst) == 0)
    }

    /// Whether the tests of this server may overlap (more than one client at once): an
    /// interface's counters then hold other tests' bytes too.
    pub fn overlapping(&self) -> bool {
        self.pool.is_some()
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
        if let Some(pool) = &self.pool {
            return self.serve_next(pool, interrupt, on_event);
        }
        let mut arrivals = lock(&self.arrivals);
        let admitted = loop {
            if let Some(e) = self.next_refused() {
                return Err(e);
            }
            if interrupt.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let wait = arrivals
                .next_expiry()
                .map_or(IDLE_POLL, |t| t.saturating_duration_since(Instant::now()))
                .min(IDLE_POLL);
            let mut fds = vec![self.inner.listener.as_raw_fd()];
            fds.extend(arrivals.fds());
            let ready = poll_in(&fds, wait + Duration::from_millis(1));
            if ready[0] {
                arrivals.accept(&self.inner.listener);
            }
            let mut admitted = None;
            for heard in arrivals.read(&ready[1..]) {
                match heard {
                    Heard::Cookie(conn) => self.ask(&mut arrivals, conn, on_event),
                    Heard::Params(conn, frame) => match self.admit(conn, frame) {
                        Some(a) if admitted.is_none() => admitted = Some(a),
                        // A second client admitted in the same moment: the first one runs.
                        Some((s, from, ..)) => {
                            deny(s);
                            on_event(Event::Denied {
                                peer: from.to_string(),
                            });
                        }
                        None => {}
                    },
                }
            }
            arrivals.expire(Instant::now());
            if let Some(first) = admitted {
                for (s, from) in arrivals.take_all() {
                    deny(s);
                    on_event(Event::Denied {
                        peer: from.to_string(),
                    });
                }
                break first;
            }
        };
        drop(arrivals);
        self.inner
            .run_test(admitted, interrupt, on_event, None)
            .map(Some)
    }

    fn next_refused(&self) -> Option<NetError> {
        let mut r = lock(&self.refused);
        (!r.is_empty()).then(|| r.remove(0))
    }

    /// Ask a connection that wants a new test for its parameters, or refuse it as busy when
    /// its address has too many asked already.
    fn ask(&self, arrivals: &mut Arrivals, conn: Identified, on_event: OnEvent<'_>) {
        let from = conn.1;
        if let Err(s) = arrivals.ask(conn) {
            deny(s);
            on_event(Event::Denied {
                peer: from.to_string(),
            });
        }
    }

    /// A new test's parameters, checked (with the credentials when the server asks for
    /// them): the connection and its parameters, or `None` when it was refused (told so,
    /// and the refusal kept for [`Self::serve_one`] to return).
    fn admit(
        &self,
        (ctrl, from, cookie): Identified,
        frame: Result<Vec<u8>, ProtoError>,
    ) -> Option<Admitted> {
        let checked =
            frame
                .and_then(|f| Params::parse(&f))
                .and_then(|p| match &self.inner.cfg.auth {
                    Some(a) => a.check(p.authtoken.as_deref()).map(|()| p),
                    None => Ok(p),
                });
        match checked {
            Ok(p) => Some((ctrl, from, cookie, p)),
            Err(e) => {
                refuse(&ctrl, &e);
                lock(&self.refused).push(NetError::Peer(format!(
                    "the client {from} was refused: {e}"
                )));
                None
            }
        }
    }

    /// [`Self::serve_one`] of a server with several clients: hear every connection and route
    /// it by its cookie, until a test ends; returns that test's result (after a stop, one
    /// per call until none is left, then `Ok(None)`).
    fn serve_next(
        &self,
        pool: &Pool,
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
    ) -> Result<Option<NetMeasurement>, NetError> {
        let reports = lock(&pool.reports);
        let mut arrivals = lock(&self.arrivals);
        let mut tests = lock(&pool.tests);
        loop {
            if let Some(e) = self.next_refused() {
                return Err(e);
            }
            if interrupt.load(Ordering::Relaxed) {
                pool.stop.store(true, Ordering::Relaxed);
            }
            // The threads that ended sent their result before they did.
            let (ended, live): (Vec<Live>, Vec<Live>) =
                tests.drain(..).partition(|t| t.thread.is_finished());
            *tests = live;
            for t in ended {
                let _ = t.thread.join();
            }
            while let Ok(r) = reports.try_recv() {
                match r {
                    Report::Connected(peer, local) => on_event(Event::Connected {
                        peer: &peer,
                        local,
                        interface: None,
                    }),
                    Report::Done(r) => {
                        pool.unreturned.fetch_sub(1, Ordering::SeqCst);
                        match *r {
                            // Stopped before it began: nothing to show, the others may have.
                            Err(NetError::Interrupted) => {}
                            r => return r.map(Some),
                        }
                    }
                }
            }
            if pool.stop.load(Ordering::Relaxed) {
                arrivals.take_all();
                if tests.is_empty() {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            let wait = arrivals
                .next_expiry()
                .map_or(ROUTE_POLL, |t| t.saturating_duration_since(Instant::now()))
                .min(ROUTE_POLL);
            let mut fds = vec![self.inner.listener.as_raw_fd()];
            fds.extend(arrivals.fds());
            let ready = poll_in(&fds, wait + Duration::from_millis(1));
            if ready[0] {
                arrivals.accept(&self.inner.listener);
            }
            for heard in arrivals.read(&ready[1..]) {
                match heard {
                    Heard::Cookie(conn) => {
                        self.route(pool, &mut tests, &mut arrivals, conn, on_event)
                    }
                    Heard::Params(conn, frame) => {
                        if let Some(a) = self.admit(conn, frame) {
                            self.start(pool, &mut tests, a, on_event);
                        }
                    }
                }
            }
            arrivals.expire(Instant::now());
        }
    }

    /// A connection with its cookie: to its test, or asked for a new test's parameters
    /// while there is room, or refused as busy.
    fn route(
        &self,
        pool: &Pool,
        tests: &mut [Live],
        arrivals: &mut Arrivals,
        conn: Identified,
        on_event: OnEvent<'_>,
    ) {
        let (s, from, cookie) = conn;
        if let Some(t) = tests.iter().find(|t| t.cookie == cookie) {
            // A test past opening its streams has dropped its receiver.
            if let Err(mpsc::SendError(s)) = t.streams.send(s) {
                deny(s);
                on_event(Event::Denied {
                    peer: from.to_string(),
                });
            }
            return;
        }
        if tests.len() >= pool.clients {
            deny(s);
            on_event(Event::Denied {
                peer: from.to_string(),
            });
            return;
        }
        self.ask(arrivals, (s, from, cookie), on_event);
    }

    /// Start an admitted test in its own thread while there is room, else refuse it as
    /// busy.
    fn start(&self, pool: &Pool, tests: &mut Vec<Live>, admitted: Admitted, on_event: OnEvent<'_>) {
        let (s, from, cookie, params) = admitted;
        let denied = |on_event: OnEvent<'_>| {
            on_event(Event::Denied {
                peer: from.to_string(),
            })
        };
        // Two connections with one cookie both asked: the second is no test.
        if tests.len() >= pool.clients || tests.iter().any(|t| t.cookie == cookie) {
            deny(s);
            denied(on_event);
            return;
        }
        let (tx, rx) = mpsc::channel();
        let inner = Arc::clone(&self.inner);
        let routed = Routed {
            streams: rx,
            shared: Arc::clone(&pool.shared),
        };
        let stop = Arc::clone(&pool.stop);
        let report = pool.report.clone();
        let spawned = std::thread::Builder::new()
            .name("net-test".into())
            .spawn(move || {
                let r = inner.run_test(
                    (s, from, cookie, params),
                    &stop,
                    &mut |e: Event<'_>| {
                        if let Event::Connected { peer, local, .. } = e {
                            let _ = report.send(Report::Connected(peer.to_string(), local));
                        }
                    },
                    Some(routed),
                );
                let _ = report.send(Report::Done(Box::new(r)));
            });
        match spawned {
            Ok(thread) => {
                pool.unreturned.fetch_add(1, Ordering::SeqCst);
                tests.push(Live {
                    cookie,
                    streams: tx,
                    thread,
                });
            }
            // The connection went with the closure: closed.
            Err(_) => denied(on_event),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            p.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl Pool {
    fn new(clients: usize) -> Pool {
        let (report, reports) = mpsc::channel();
        Pool {
            clients,
            shared: Arc::new(Shared {
                udp_turn: Mutex::new(()),
                streams_in_use: AtomicU32::new(0),
                intervals_kept: session::MAX_INTERVALS_KEPT / clients,
            }),
            stop: Arc::new(AtomicBool::new(false)),
            tests: Mutex::new(Vec::new()),
            reports: Mutex::new(reports),
            report,
            unreturned: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

/// Refuse the connections that arrive while a test runs, at once and without reading from
/// them (iperf_accept: ACCESS_DENIED, "the server is busy running a test"), at most
/// [`MAX_WAITING`] per call.
fn deny_waiting(listener: &TcpListener, on_event: OnEvent<'_>) {
    for _ in 0..MAX_WAITING {
        let Ok((s, peer)) = listener.accept() else {
            return;
        };
        deny(s);
        on_event(Event::Denied {
            peer: peer.to_string(),
        });
    }
}

impl Listening {
    /// One test on the control connection of an admitted client. `routed`: a test of a
    /// server with several clients, which gets its data connections from the serving thread
    /// and refuses nobody (without it, the test owns the listener and refuses newcomers as
    /// busy).
    fn run_test(
        &self,
        (ctrl, from, cookie, params): Admitted,
        interrupt: &AtomicBool,
        on_event: OnEvent<'_>,
        routed: Option<Routed>,
    ) -> Result<NetMeasurement, NetError> {
        let peer = &from.to_string();
        let listener = routed.is_none().then_some(&self.listener);
        let shared = routed.as_ref().map(|r| Arc::clone(&r.shared));
        let mut routed_streams = routed.map(|r| r.streams);
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
            listener,
            until: setup_until,
            interrupt,
        };
        let config = config_of(&params);
        let wanted = streams_in_order(config.direction, config.streams).len() as u32;
        let _lease = match &shared {
            Some(sh) => Some(sh.lease(wanted).map_err(|used| {
                let _ = (&ctrl).write_all(&[State::AccessDenied.byte() as u8]);
                NetError::Peer(format!(
                    "the client {peer} was refused as busy: it asked for {wanted} streams \
                     while {used} of the {MAX_TOTAL_STREAMS} all tests may run at once were \
                     taken"
                ))
            })?),
            None => None,
        };
        // Only one test at a time waits for UDP connect datagrams (they carry no cookie).
        let _udp_turn = match (&shared, config.protocol) {
            (Some(sh), Protocol::Udp) => {
                Some(sh.udp_turn(setup_until, interrupt).ok_or_else(|| {
                    let _ = (&ctrl).write_all(&[State::AccessDenied.byte() as u8]);
                    NetError::Peer(format!(
                        "the client {peer} was refused as busy: another UDP test was opening \
                         its streams for {} s",
                        CONTROL_TIMEOUT.as_secs()
                    ))
                })?)
            }
            _ => None,
        };
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
            (listener, routed_streams.as_ref()),
            on_event,
        )?;
        // Later connections with this cookie are refused by the serving thread.
        drop(routed_streams.take());
        drop(_udp_turn);
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
        if let Some(sh) = &shared {
            s.keep_intervals(sh.intervals_kept);
        }
        proto::write_state(&mut ctl.writer(), State::TestRunning).map_err(cerr)?;
        on_event(Event::Streaming {
            omit: Duration::from_secs(u64::from(config.omit_s)),
        });

        // Running: until TEST_END, bounded by the test's own length plus a margin (iperf3's
        // server also gives up on a silent client).
        let limit =
            (s.measured_start() + Duration::from_secs(u64::from(config.duration_s)) + END_GRACE)
                .min(session_until);
        let mut fds = vec![ctrl.as_raw_fd()];
        fds.extend(listener.map(|l| l.as_raw_fd()));
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
            if let (Some(l), true, false) = (listener, ready.get(1) == Some(&true), ready[0]) {
                deny_waiting(l, on_event);
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
        let bounds = s.peer_bounds();
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
            session::merge_peer(&mut streams, &r, config.protocol, &bounds)
                .map_err(NetError::Peer)?;
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
            cpu_peer: theirs.as_ref().map(|r| session::peer_cpu(r, &bounds, wall)),
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
        (listener, routed): (Option<&TcpListener>, Option<&Receiver<TcpStream>>),
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
            let mut fds = vec![ctrl.as_raw_fd()];
            fds.extend(listener.map(|l| l.as_raw_fd()));
            fds.extend_from_slice(extra);
            // Routed connections come on a channel: looked at every ROUTE_POLL.
            let most = if routed.is_some() {
                ROUTE_POLL
            } else {
                IDLE_POLL
            };
            let ready = poll_in(&fds, (until - now).min(most) + Duration::from_millis(1));
            if ready[0] {
                return Err(gone());
            }
            let first = 1 + usize::from(listener.is_some());
            Ok((listener.is_some() && ready[1], ready[first..].to_vec()))
        };
        let mut out = Vec::with_capacity(plan.len());
        if config.protocol == Protocol::Tcp {
            let mut arrivals = Arrivals::default();
            let mut socks = Vec::with_capacity(plan.len());
            while socks.len() < plan.len() {
                if let Some(rx) = routed {
                    // The serving thread checked the cookie.
                    while socks.len() < plan.len() {
                        match rx.try_recv() {
                            Ok(s) => socks.push(s),
                            Err(_) => break,
                        }
                    }
                    if socks.len() < plan.len() {
                        wait(&[])?;
                    }
                    continue;
                }
                let (listener_ready, ready) = wait(&arrivals.fds())?;
                if let (true, Some(l)) = (listener_ready, listener) {
                    arrivals.accept(l);
                }
                // Data connections only send their cookie: none here is asked for more.
                let cookies = arrivals.read(&ready).into_iter().map(|h| match h {
                    Heard::Cookie(c) | Heard::Params(c, _) => c,
                });
                for (s, from, c) in cookies {
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
                if let (true, Some(l)) = (listener_ready, listener) {
                    deny_waiting(l, on_event);
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
    /// The server's listener when this test refuses newcomers itself.
    listener: Option<&'a TcpListener>,
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
            let mut fds = vec![self.p.sock.as_raw_fd()];
            fds.extend(self.p.listener.map(|l| l.as_raw_fd()));
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
            } else if let (Some(l), Some(true)) = (self.p.listener, ready.get(1)) {
                deny_waiting(l, self.on_event);
            }
        }
    }
}

/// Connections accepted and not yet admitted (non-blocking, read as their bytes come): at
/// most [`MAX_WAITING`] at once. Each first sends its cookie, within [`COOKIE_TIMEOUT`]; one
/// that asks for a new test is then sent PARAM_EXCHANGE ([`Arrivals::ask`]) and has
/// [`PARAMS_TIMEOUT`] to send its parameters (and credentials), at most
/// [`MAX_ASKING_PER_ADDRESS`] at once from one address. A test's slot is only taken once
/// they are read and accepted, so a peer that stops after its cookie holds no one up.
#[derive(Default)]
struct Arrivals {
    waiting: Vec<Arrival>,
}

struct Arrival {
    sock: TcpStream,
    from: SocketAddr,
    /// When it was accepted, or asked for its parameters.
    since: Instant,
    got: Vec<u8>,
    /// Its cookie, once it was asked for its parameters.
    asking: Option<[u8; proto::COOKIE_SIZE]>,
}

impl Arrival {
    fn deadline(&self) -> Instant {
        self.since
            + if self.asking.is_some() {
                PARAMS_TIMEOUT
            } else {
                COOKIE_TIMEOUT
            }
    }

    /// How many more bytes it must send: the rest of its cookie, or of its framed
    /// parameters (their length first). `Err`: a length past [`proto::MAX_PARAMS_JSON`].
    fn wanted(&self) -> Result<usize, ProtoError> {
        if self.asking.is_none() {
            return Ok(proto::COOKIE_SIZE - self.got.len());
        }
        match self.got.get(..4) {
            None => Ok(4 - self.got.len()),
            Some(len) => {
                let mut l = [0u8; 4];
                l.copy_from_slice(len);
                let n = u32::from_be_bytes(l);
                if n > proto::MAX_PARAMS_JSON {
                    return Err(ProtoError::TooLong(n, proto::MAX_PARAMS_JSON));
                }
                Ok(4 + n as usize - self.got.len())
            }
        }
    }
}

/// Whether two peers count as one for [`MAX_ASKING_PER_ADDRESS`]: the same IPv4 address
/// (also as an IPv4-mapped IPv6 one), or the same IPv6 /64, the block one host or one
/// site's LAN holds (RFC 4291 2.5.1 interface identifiers are 64 bits).
fn same_peer(a: IpAddr, b: IpAddr) -> bool {
    let v4 = |ip: IpAddr| match ip {
        IpAddr::V4(v) => Some(v),
        IpAddr::V6(v) => v.to_ipv4_mapped(),
    };
    match (v4(a), v4(b), a, b) {
        (Some(x), Some(y), ..) => x == y,
        (None, None, IpAddr::V6(x), IpAddr::V6(y)) => x.segments()[..4] == y.segments()[..4],
        _ => false,
    }
}

/// A connection with its whole cookie: the socket, its peer and the cookie.
type Identified = (TcpStream, SocketAddr, [u8; proto::COOKIE_SIZE]);

/// A connection admitted to a new test, with its parameters.
type Admitted = (TcpStream, SocketAddr, [u8; proto::COOKIE_SIZE], Params);

/// What a waiting connection completed.
enum Heard {
    /// Its cookie.
    Cookie(Identified),
    /// Asked for its parameters: their frame, or why it cannot be read.
    Params(Identified, Result<Vec<u8>, ProtoError>),
}

impl Arrivals {
    /// Take the connections the listener holds; past [`MAX_WAITING`] the oldest one still
    /// sending its cookie (else the oldest) is dropped for each new one.
    fn accept(&mut self, l: &TcpListener) {
        for _ in 0..MAX_WAITING {
            let Ok((sock, from)) = l.accept() else {
                return;
            };
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            if self.waiting.len() >= MAX_WAITING {
                let oldest = self
                    .waiting
                    .iter()
                    .position(|a| a.asking.is_none())
                    .unwrap_or(0);
                self.waiting.remove(oldest);
            }
            self.waiting.push(Arrival {
                sock,
                from,
                since: Instant::now(),
                got: Vec::with_capacity(proto::COOKIE_SIZE),
                asking: None,
            });
        }
    }

    /// Ask a connection that sent the cookie of no running test for its parameters
    /// (PARAM_EXCHANGE); given back when its address already has [`MAX_ASKING_PER_ADDRESS`]
    /// connections asked (to be refused as busy).
    fn ask(&mut self, (sock, from, cookie): Identified) -> Result<(), TcpStream> {
        let asked = self
            .waiting
            .iter()
            .filter(|a| a.asking.is_some() && same_peer(a.from.ip(), from.ip()))
            .count();
        if asked >= MAX_ASKING_PER_ADDRESS {
            return Err(sock);
        }
        // One byte into an empty send buffer: a failure means the peer is gone.
        if (&sock)
            .write_all(&[State::ParamExchange.byte() as u8])
            .is_ok()
        {
            self.waiting.push(Arrival {
                sock,
                from,
                since: Instant::now(),
                got: Vec::new(),
                asking: Some(cookie),
            });
        }
        Ok(())
    }

    fn fds(&self) -> Vec<i32> {
        self.waiting.iter().map(|a| a.sock.as_raw_fd()).collect()
    }

    fn next_expiry(&self) -> Option<Instant> {
        self.waiting.iter().map(Arrival::deadline).min()
    }

    /// Read what the connections marked ready in `ready` (in [`Self::fds`]' order) sent;
    /// the ones that completed their cookie or their parameters leave the set, in order.
    /// Closed ones are dropped.
    fn read(&mut self, ready: &[bool]) -> Vec<Heard> {
        let mut done = Vec::new();
        let mut keep = Vec::with_capacity(self.waiting.len());
        let flags = ready.iter().copied().chain(std::iter::repeat(false));
        for (mut a, r) in self.waiting.drain(..).zip(flags) {
            if !r {
                keep.push(a);
                continue;
            }
            let want = match a.wanted() {
                Ok(n) => n,
                Err(e) => {
                    let cookie = a.asking.unwrap_or([0; proto::COOKIE_SIZE]);
                    done.push(Heard::Params((a.sock, a.from, cookie), Err(e)));
                    continue;
                }
            };
            let mut buf = [0u8; 4096];
            let n = want.min(buf.len());
            match a.sock.read(&mut buf[..n]) {
                Ok(0) => {}
                Ok(k) => {
                    a.got.extend_from_slice(&buf[..k]);
                    match (a.asking, a.wanted()) {
                        (None, Ok(0)) => {
                            let mut c = [0u8; proto::COOKIE_SIZE];
                            c.copy_from_slice(&a.got);
                            done.push(Heard::Cookie((a.sock, a.from, c)));
                        }
                        (Some(c), Ok(0)) => {
                            let frame = a.got.split_off(4);
                            done.push(Heard::Params((a.sock, a.from, c), Ok(frame)));
                        }
                        (Some(c), Err(e)) => {
                            done.push(Heard::Params((a.sock, a.from, c), Err(e)));
                        }
                        _ => keep.push(a),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => keep.push(a),
                Err(_) => {}
            }
        }
        self.waiting = keep;
        done
    }

    /// Drop the connections that did not send their cookie, or their parameters, in time.
    fn expire(&mut self, now: Instant) {
        self.waiting.retain(|a| now < a.deadline());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_of_all_tests_are_bounded() {
        let pool = Pool::new(4);
        let a = pool.shared.lease(200).unwrap();
        // 200 + 100 > 256: refused, saying how many are taken.
        assert_eq!(pool.shared.lease(100).err(), Some(200));
        let b = pool.shared.lease(56).unwrap();
        drop(a);
        let c = pool.shared.lease(100).unwrap();
        assert_eq!(pool.shared.streams_in_use.load(Ordering::SeqCst), 156);
        drop((b, c));
        assert_eq!(pool.shared.streams_in_use.load(Ordering::SeqCst), 0);
        // The intervals one test keeps: a fourth of the bound each.
        assert_eq!(pool.shared.intervals_kept, session::MAX_INTERVALS_KEPT / 4);
    }

    #[test]
    fn peers_of_one_address_or_one_ipv6_64_count_as_one() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(same_peer(ip("192.0.2.1"), ip("::ffff:192.0.2.1")));
        assert!(!same_peer(ip("192.0.2.1"), ip("192.0.2.2")));
        assert!(same_peer(ip("2001:db8:1:2::1"), ip("2001:db8:1:2:ffff::9")));
        assert!(!same_peer(ip("2001:db8:1:2::1"), ip("2001:db8:1:3::1")));
        assert!(!same_peer(ip("::1"), ip("127.0.0.1")));
    }

    #[test]
    fn clients_are_bounded_with_a_sentence() {
        assert_eq!(clients_arg("4"), Ok(4));
        assert_eq!(clients_arg("64"), Ok(64));
        for bad in ["0", "65", "100000000000000000000", "-1", "x"] {
            let e = clients_arg(bad).unwrap_err();
            let number = bad.bytes().all(|b| b.is_ascii_digit());
            let says = if number {
                "give 1 to 64"
            } else {
                "e.g. --clients 4"
            };
            assert!(e.contains(says), "{bad}: {e}");
        }
        let cfg = ServerConfig {
            port: 0,
            bind: Some(IpAddr::from([127, 0, 0, 1])),
            interval: Duration::from_secs(1),
            auth: None,
            clients: 65,
        };
        let e = Server::bind(cfg).err().unwrap().to_string();
        assert_eq!(e, "65 tests at once is not served: give 1 to 64");
    }
}
