//! The data streams: one thread per stream (as iperf3 3.16+ does), TCP or UDP, sending or
//! receiving, with a pacer for `-b`. Each thread only counts; the session samples the counts.

use std::io::Read;
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a blocked thread looks at its stop flag.
pub const POLL: Duration = Duration::from_millis(100);

/// What one stream's thread has counted so far (single writer: the thread).
#[derive(Debug, Default)]
pub struct Counters {
    pub bytes: AtomicU64,
    /// UDP: datagrams sent, or the highest sequence number received.
    pub packets: AtomicU64,
    pub lost: AtomicU64,
    pub out_of_order: AtomicU64,
    /// RFC 3550 interarrival jitter in seconds, as f64 bits.
    pub jitter_bits: AtomicU64,
    /// The thread has ended (end of stream, stop, or error).
    pub done: AtomicBool,
    pub error: Mutex<Option<String>>,
}

impl Counters {
    pub fn jitter_s(&self) -> f64 {
        f64::from_bits(self.jitter_bits.load(Ordering::Relaxed))
    }

    fn fail(&self, msg: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(msg);
        }
    }

    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// A point in time of one stream's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub bytes: u64,
    pub packets: u64,
    pub lost: u64,
    pub out_of_order: u64,
}

impl Counters {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes: self.bytes.load(Ordering::Relaxed),
            packets: self.packets.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            out_of_order: self.out_of_order.load(Ordering::Relaxed),
        }
    }
}

/// A data socket.
#[derive(Debug)]
pub enum Sock {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

impl Sock {
    pub fn fd(&self) -> RawFd {
        match self {
            Sock::Tcp(s) => s.as_raw_fd(),
            Sock::Udp(s) => s.as_raw_fd(),
        }
    }

    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        match self {
            Sock::Tcp(s) => s.local_addr().ok(),
            Sock::Udp(s) => s.local_addr().ok(),
        }
    }

    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        match self {
            Sock::Tcp(s) => s.peer_addr().ok(),
            Sock::Udp(s) => s.peer_addr().ok(),
        }
    }

    /// SO_SNDBUF or SO_RCVBUF as the kernel set it (twice what was asked, socket(7)).
    pub fn buffer_size(&self, which: libc::c_int) -> Option<u32> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: an int-sized option read into an int of that size.
        let r = unsafe {
            libc::getsockopt(
                self.fd(),
                libc::SOL_SOCKET,
                which,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0).then_some(v as u32)
    }

    pub fn try_clone(&self) -> std::io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Udp(s) => Sock::Udp(s.try_clone()?),
        })
    }
}

/// What a stream thread does.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    pub send: bool,
    pub len: usize,
    /// Bits per second; `None`: as fast as the socket takes.
    pub rate_bps: Option<u64>,
    pub zerocopy: bool,
    pub udp_counters_64bit: bool,
    /// The most a TCP receiver takes in one read ([`recv_len`]: at least the block length
    /// and 64 KiB).
    pub recv_len: usize,
    /// What a TCP sender gives one write ([`send_len`]: the block length, or more).
    pub send_len: usize,
}

/// The most a TCP read takes, and the least an unpaced TCP write gives, when the stream
/// threads outnumber the CPUs ([`recv_len`], [`send_len`]).
pub const BEHIND_LEN: usize = 512 * 1024;

/// The most the larger reads of [`recv_len`] take for one test's receivers together, and
/// the larger writes of [`send_len`] for its senders.
pub const BEHIND_BUDGET: usize = 8 << 20;

/// How much a TCP receiver asks for in one read. The block length (at least 64 KiB), as
/// iperf3 reads, while every stream thread on this host (the peer's too when the peer is
/// this host) can have a CPU of its own; 512 KiB when they outnumber the CPUs, so a
/// receiver that is behind takes what has queued in fewer, larger copies. Measured with
/// `bench net` over loopback on this VM's 2 CPUs, 4 s runs alternating 128 KiB, 256 KiB,
/// 512 KiB and 1 MiB reads 5 times, medians in Gbit/s: -P 2 26.6, 30.6, 28.8, 27.3; -P 4
/// 29.7, 30.1, 31.8, 29.5; -P 2 -R 24.7, 26.5, 27.9, 26.6; -P 4 -R 29.6, 28.8, 29.1, 29.3
/// (1 MiB per stream no longer stays in the CPU's cache). One stream, which has a CPU, moved
/// less with 512 KiB (medians 13.1 against 14.5 Gbit/s, 6 runs): the receiver then takes
/// the sender's share of the protocol work while the sender's CPU waits.
///
/// The larger reads take at most [`BEHIND_BUDGET`] for the test's receivers together
/// (16 streams); past that each keeps the block length, so a board's memory is not spent on
/// many streams that are each slow anyway.
pub fn recv_len(block_len: usize, receivers: usize, threads_here: usize, cpus: usize) -> usize {
    if behind(receivers, threads_here, cpus) {
        BEHIND_LEN.max(block_len)
    } else {
        block_len.max(65_536)
    }
}

/// The stream threads on this host outnumber its CPUs, and `streams` of [`BEHIND_LEN`] each
/// fit in [`BEHIND_BUDGET`].
fn behind(streams: usize, threads_here: usize, cpus: usize) -> bool {
    threads_here > cpus && streams * BEHIND_LEN <= BEHIND_BUDGET
}

/// A `-b` rate paces the stream (0 is iperf3's "unlimited").
pub fn paced(rate_bps: Option<u64>) -> bool {
    rate_bps.is_some_and(|r| r > 0)
}

/// Sets an int-valued SOL_SOCKET option; whether the kernel took it.
fn set_socket_int(fd: RawFd, option: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: setsockopt reads one int.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// What an unpaced TCP sender gives one write: the block length (`-l`), as iperf3 writes,
/// while every stream thread on this host can have a CPU of its own, or while the blocks are
/// shorter than 64 KiB (a user who asks for small writes measures small writes); when the
/// threads outnumber the CPUs, [`BEHIND_LEN`] (or the block length when it is longer), so a
/// sender that has a CPU for one time slice queues more of the stream with each call. The
/// bytes on the wire are the same stream; a paced sender (`-b`) keeps the block length, the
/// pacer's step. Measured with `bench net` over loopback on this VM's 2 CPUs, 3 s runs
/// alternated with iperf3 3.21 (Gbit/s): -P 4 34.1-38.2 with 512 KiB writes against
/// 27.6-31.2 with 128 KiB and 30.0-33.3 for iperf3 (5 rounds), -P 4 -R 38.5-42.1 against
/// 28.5-37.6 (4 rounds); -P 2 -R medians 41.0 against 36.2 and -P 2 35.0 against 35.5
/// (8 rounds each).
///
/// The larger writes take at most [`BEHIND_BUDGET`] for the test's senders together.
pub fn send_len(
    block_len: usize,
    paced: bool,
    senders: usize,
    threads_here: usize,
    cpus: usize,
) -> usize {
    if !paced && block_len >= 65_536 && behind(senders, threads_here, cpus) {
        BEHIND_LEN.max(block_len)
    } else {
        block_len
    }
}

/// How far a paced sender may fall behind its schedule and still catch up.
const MAX_PACER_DEBT: Duration = Duration::from_millis(2);

/// Paces a sender to `rate` bits per second: each block is due when the bytes before it have
/// taken their time at the rate; the thread sleeps (absolute CLOCK_MONOTONIC deadline, timer
/// slack 1 ns) until then, so datagrams leave evenly spaced instead of in bursts.
struct Pacer {
    start: Instant,
    ns_per_byte: f64,
}

impl Pacer {
    fn new(rate_bps: u64) -> Pacer {
        // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        Pacer {
            start: Instant::now(),
            ns_per_byte: 8e9 / rate_bps as f64,
        }
    }

    /// Wait until `sent` bytes are due; returns early when `stop` is set. A sender that fell
    /// behind (the thread was not scheduled) does not catch up in a burst: a debt of more than
    /// [`MAX_PACER_DEBT`] is forgiven, so a shaper's small bucket is not overrun (the burst
    /// after a stall is iperf3's known weak spot, esnet/iperf#386 and #460). The rate actually
    /// sent is what the sender's byte count says.
    fn wait(&mut self, sent: u64, stop: &AtomicBool) {
        let due = self.start + Duration::from_nanos((sent as f64 * self.ns_per_byte) as u64);
        let now = Instant::now();
        if now > due + MAX_PACER_DEBT {
            self.start += now - due - MAX_PACER_DEBT;
            return;
        }
        loop {
            let now = Instant::now();
            if now >= due || stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep((due - now).min(POLL));
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// One page of a [`PageBuf`].
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

/// A buffer that starts on a page boundary, as iperf3's (it maps a temporary file:
/// iperf_api.c, iperf_new_stream). Where the receive buffer starts matters on x86: with
/// recv() into a buffer 16 bytes past a page boundary (where musl's and glibc's malloc put
/// a 128 KiB block) the kernel's copy out of the socket took 2.5 times the CPU of a
/// page-aligned one on this VM (a C receiver fed 3 s over loopback, 3 paired runs each:
/// 2,438-2,534 ms against 988-1,006 ms of task-clock, 11.0 against 13.8 Gbit/s).
struct PageBuf {
    pages: Vec<Page>,
    len: usize,
}

impl PageBuf {
    fn zeroed(len: usize) -> PageBuf {
        PageBuf {
            pages: vec![Page([0; 4096]); len.div_ceil(4096)],
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the pages are one contiguous allocation of at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.pages.as_ptr().cast::<u8>(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.pages.as_mut_ptr().cast::<u8>(), self.len) }
    }

    /// Every byte of the pages, `len` rounded up to a whole page.
    fn whole_pages_mut(&mut self) -> &mut [u8] {
        let len = self.pages.len() * 4096;
        // SAFETY: the pages are one contiguous, initialised allocation of `len` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.pages.as_mut_ptr().cast::<u8>(), len) }
    }
}

/// Bytes that are not all zero, so compression on the path cannot flatter the numbers.
fn payload(len: usize) -> PageBuf {
    let mut buf = PageBuf::zeroed(len);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for b in buf.bytes_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    buf
}

/// The thread body of one stream: runs until `stop` (senders), or until the end of the
/// stream or `stop` (receivers).
pub fn run(sock: Sock, work: Work, c: &Counters, stop: &AtomicBool) {
    let result = match (&sock, work.send) {
        (Sock::Tcp(s), true) => tcp_send(s, work, c, stop),
        (Sock::Tcp(s), false) => tcp_recv(s, work, c, stop),
        (Sock::Udp(s), true) => udp_send(s, work, c, stop),
        (Sock::Udp(s), false) => udp_recv(s, work, c, stop),
    };
    if let Err(e) = result {
        c.fail(e);
    }
    c.done.store(true, Ordering::Release);
}

fn tcp_send(s: &TcpStream, w: Work, c: &Counters, stop: &AtomicBool) -> Result<(), String> {
    let payload = payload(w.send_len);
    let buf = payload.bytes();
    let _ = s.set_write_timeout(Some(POLL));
    let memfd = if w.zerocopy {
        Some(memfd_with(buf)?)
    } else {
        None
    };
    let mut pacer = w.rate_bps.filter(|&r| r > 0).map(Pacer::new);
    let fd = s.as_raw_fd();
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        if let Some(p) = &mut pacer {
            p.wait(sent, stop);
        }
        let n = match &memfd {
            // SAFETY: sendfile from our memfd (offset pointer to a local) into the socket.
            Some(m) => unsafe {
                let mut off: libc::off_t = 0;
                libc::sendfile(fd, m.as_raw_fd(), &mut off, w.send_len)
            },
            // SAFETY: send() reads `len` bytes of `buf`, which is that long.
            None => unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) },
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if is_timeout(&e) {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            return Err(format!("sending failed: {e}"));
        }
        sent += n as u64;
        c.bytes.store(sent, Ordering::Relaxed);
    }
    Ok(())
}

fn memfd_with(buf: &[u8]) -> Result<std::fs::File, String> {
    use std::io::Write;
    // SAFETY: memfd_create with a NUL-terminated name; the fd is owned by the File below.
    let fd = unsafe { libc::memfd_create(c"headroom-net".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "-Z needs memfd_create: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    f.write_all(buf).map_err(|e| format!("-Z: {e}"))?;
    Ok(f)
}

/// Receives into a page-aligned buffer that each read fills on from where the last one
/// stopped, wrapping at its end, as iperf3's Nrecv fills a whole block before it starts the
/// next (net.c). So byte N of the stream always lands at N modulo the buffer's length, and
/// its offset from where the kernel holds that byte stays the same for the whole stream
/// (the sender's data fills its pages in order; 0 when the sender's stream thread is new,
/// as iperf3's and headroom's are). A read to the buffer's start every time moves that
/// offset with each read's length instead, and the copy out of the socket is up to 3 times
/// dearer at some offsets: on this VM's AMD EPYC (rep movsb, FSRM) a C receiver fed 2 s
/// over loopback used 571-633 ms of CPU per GB with its buffer 35, 43 or 51 bytes (modulo
/// 64) past the sender's, against 151-220 at 11, 27 or 59 (2 runs each); filling, it used
/// 158-274 ms/GB against 165-308 reading to the start, and moved more in each of 10 paired
/// runs (3 s each).
fn tcp_recv(s: &TcpStream, w: Work, c: &Counters, stop: &AtomicBool) -> Result<(), String> {
    let mut page_buf = PageBuf::zeroed(w.recv_len);
    let buf = page_buf.whole_pages_mut();
    let _ = s.set_read_timeout(Some(POLL));
    // A paced stream's receiver keeps the kernel's default: wake on every arrival.
    let mut mark = (!paced(w.rate_bps)).then(|| WakeMark::new(buf.len()));
    let mut got: u64 = 0;
    let mut at = 0;
    let mut s = s;
    loop {
        match s.read(&mut buf[at..]) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                got += n as u64;
                at = (at + n) % buf.len();
                c.bytes.store(got, Ordering::Relaxed);
                if let Some(m) = &mut mark {
                    m.update(s, got);
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                return Err(format!("receiving failed: {e}"));
            }
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}

/// How often an unpaced TCP receiver reconsiders its [`wake_mark`].
const MARK_EVERY: Duration = Duration::from_millis(100);

/// The SO_RCVLOWAT (socket(7)) of an unpaced TCP receiver that has moved `bytes_per_s` over
/// the last [`MARK_EVERY`]: what the stream brings in 1 ms, at most one read (`read_len`) and
/// a quarter of the receive buffer the kernel has grown (`rcvbuf`, SO_RCVBUF), in whole
/// pages; 0 (the kernel's default of waking on every arrival) below 64 KiB. With a mark the
/// kernel wakes the thread once that much has queued instead of for every segment (its
/// tcp_data_ready(), since "tcp: avoid extra wakeups for SO_RCVLOWAT users"), and each read
/// takes a whole buffer; iperf3 sets no mark. Measured with `bench net` over loopback on this
/// VM's 2 CPUs (3 s runs alternated with iperf3 3.21, Gbit/s): one stream 19.8-23.1 with the
/// mark against 14.6-18.0 without and 15.5-20.8 for iperf3 (3 rounds each way), CPU per GB
/// 25 % lower; -P 2 with 512 KiB reads 35.0-38.6 against 27.1-31.8 without (6 rounds).
///
/// The bounds keep what a user sees true: a read waits for at most about 1 ms of the
/// stream (SO_RCVTIMEO ends the wait of a stream that slows down), so an interval's count
/// is late by that much at most; and a mark within a quarter of the buffer never makes
/// tcp_set_rcvlowat() (net/ipv4/tcp.c) grow the buffer, which also sets the window clamp to
/// the mark and would hold back the window of a long link.
pub fn wake_mark(bytes_per_s: f64, rcvbuf: usize, read_len: usize) -> usize {
    let mark = ((bytes_per_s / 1000.0) as usize)
        .min(read_len)
        .min(rcvbuf / 4)
        & !4095;
    if mark < 65_536 {
        0
    } else {
        mark
    }
}

/// A receiver's [`wake_mark`], set on its socket as the stream's rate changes.
struct WakeMark {
    read_len: usize,
    since: Instant,
    bytes_then: u64,
    set: usize,
}

impl WakeMark {
    fn new(read_len: usize) -> WakeMark {
        WakeMark {
            read_len,
            since: Instant::now(),
            bytes_then: 0,
            set: 0,
        }
    }

    /// After a read that brought the stream's count to `got`: every [`MARK_EVERY`], the mark
    /// for the rate since the last look.
    fn update(&mut self, s: &TcpStream, got: u64) {
        let dt = self.since.elapsed();
        if dt < MARK_EVERY {
            return;
        }
        let rate = (got - self.bytes_then) as f64 / dt.as_secs_f64();
        (self.since, self.bytes_then) = (Instant::now(), got);
        let rcvbuf = socket2::SockRef::from(s).recv_buffer_size().unwrap_or(0);
        let mark = wake_mark(rate, rcvbuf, self.read_len);
        if mark == self.set {
            return;
        }
        if set_socket_int(s.as_raw_fd(), libc::SO_RCVLOWAT, mark.max(1) as libc::c_int) {
            self.set = mark;
        }
    }
}

/// CLOCK_MONOTONIC now (iperf3 stamps datagrams with it: iperf_time.c).
fn monotonic() -> (u64, u32) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64, (ts.tv_nsec / 1000) as u32)
}

/// iperf3's UDP header (iperf_udp.c): seconds and microseconds of the send time, then the
/// packet count, all big-endian; the count is 64-bit with `udp_counters_64bit`.
pub fn write_udp_header(buf: &mut [u8], sec: u64, usec: u32, count: u64, wide: bool) {
    buf[0..4].copy_from_slice(&(sec as u32).to_be_bytes());
    buf[4..8].copy_from_slice(&usec.to_be_bytes());
    if wide {
        buf[8..16].copy_from_slice(&count.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(count as u32).to_be_bytes());
    }
}

/// (sec, usec, count) of a datagram; `None` when it is too short for the header.
pub fn read_udp_header(buf: &[u8], wide: bool) -> Option<(u32, u32, u64)> {
    let be32 =
        |i: usize| -> Option<u32> { Some(u32::from_be_bytes(buf.get(i..i + 4)?.try_into().ok()?)) };
    let count = if wide {
        u64::from_be_bytes(buf.get(8..16)?.try_into().ok()?)
    } else {
        u64::from(be32(8)?)
    };
    Some((be32(0)?, be32(4)?, count))
}

fn udp_send(s: &UdpSocket, w: Work, c: &Counters, stop: &AtomicBool) -> Result<(), String> {
    let mut payload = payload(w.len);
    let buf = payload.bytes_mut();
    // iperf3's default UDP rate is 1 Mbit/s (iperf_defaults: UDP_RATE); the caller sets it.
    let mut pacer = w.rate_bps.filter(|&r| r > 0).map(Pacer::new);
    let fd = s.as_raw_fd();
    let (mut sent, mut count) = (0u64, 0u64);
    let _ = s.set_write_timeout(Some(POLL));
    while !stop.load(Ordering::Relaxed) {
        if let Some(p) = &mut pacer {
            p.wait(sent, stop);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        count += 1;
        let (sec, usec) = monotonic();
        write_udp_header(buf, sec, usec, count, w.udp_counters_64bit);
        // SAFETY: send() reads buf.len() bytes of buf.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            count -= 1;
            let e = std::io::Error::last_os_error();
            // ENOBUFS: the qdisc or device queue is full; iperf3 treats it as a retry too.
            if is_timeout(&e) || e.raw_os_error() == Some(libc::ENOBUFS) {
                continue;
            }
            // ECONNREFUSED: an ICMP port unreachable came back (the receiver is gone).
            if stop.load(Ordering::Relaxed) {
                break;
            }
            return Err(format!("sending datagrams failed: {e}"));
        }
        sent += n as u64;
        c.bytes.store(sent, Ordering::Relaxed);
        c.packets.store(count, Ordering::Relaxed);
    }
    Ok(())
}

/// The receiver side of iperf3's UDP accounting: sequence gaps are losses, a sequence number
/// at or below the highest seen is out of order (and takes back one loss), and the jitter is
/// RFC 3550 A.8's running estimate over the transit-time differences.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct UdpStats {
    pub highest: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub jitter_s: f64,
    prev_transit: Option<f64>,
}

impl UdpStats {
    /// One datagram with sequence `seq`, `transit_s` = arrival - send time (clocks need not
    /// agree: only differences count).
    pub fn datagram(&mut self, seq: u64, transit_s: f64) {
        if seq > self.highest {
            self.lost += seq - 1 - self.highest;
            self.highest = seq;
        } else {
            self.out_of_order += 1;
            self.lost = self.lost.saturating_sub(1);
        }
        if let Some(prev) = self.prev_transit {
            let d = (transit_s - prev).abs();
            self.jitter_s += (d - self.jitter_s) / 16.0;
        }
        self.prev_transit = Some(transit_s);
    }
}

/// A UDP stream's socket buffers: both at the user's -w (SO_SNDBUF and SO_RCVBUF, as iperf3
/// sets them), else the receive buffer enlarged ([`enlarge_udp_receive_buffer`]). A buffer
/// the kernel refuses stays at its default.
pub fn size_udp_buffers(s: &UdpSocket, window: Option<u32>) {
    match window {
        Some(w) => {
            let r = socket2::SockRef::from(s);
            let _ = r.set_send_buffer_size(w as usize);
            let _ = r.set_recv_buffer_size(w as usize);
        }
        None => enlarge_udp_receive_buffer(s),
    }
}

/// A UDP receive buffer of 4 MiB (as root past net.core.rmem_max, SO_RCVBUFFORCE): a receiver
/// thread that is not scheduled for a few ms must not turn into datagram loss that the path
/// did not cause. A no-op when the user gave -w.
pub fn enlarge_udp_receive_buffer(s: &UdpSocket) {
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        if set_socket_int(s.as_raw_fd(), opt, 4 << 20) {
            return;
        }
    }
}

fn udp_recv(s: &UdpSocket, w: Work, c: &Counters, stop: &AtomicBool) -> Result<(), String> {
    let mut page_buf = PageBuf::zeroed(w.len.max(65_536));
    let buf = page_buf.bytes_mut();
    let _ = s.set_read_timeout(Some(POLL));
    let mut st = UdpStats::default();
    let mut got: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        match s.recv(buf) {
            Ok(n) => {
                let (now_s, now_us) = monotonic();
                // A stray connect message (4 bytes) or a runt is not a data datagram.
                let Some((sec, usec, seq)) = read_udp_header(&buf[..n], w.udp_counters_64bit)
                else {
                    continue;
                };
                got += n as u64;
                let transit = (now_s as f64 + f64::from(now_us) * 1e-6)
                    - (f64::from(sec) + f64::from(usec) * 1e-6);
                st.datagram(seq, transit);
                c.bytes.store(got, Ordering::Relaxed);
                c.packets.store(st.highest, Ordering::Relaxed);
                c.lost.store(st.lost, Ordering::Relaxed);
                c.out_of_order.store(st.out_of_order, Ordering::Relaxed);
                c.jitter_bits
                    .store(st.jitter_s.to_bits(), Ordering::Relaxed);
            }
            Err(e) if is_timeout(&e) => {}
            // ECONNREFUSED on a connected UDP socket: an ICMP error for an earlier send;
            // the receiver keeps listening.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(format!("receiving datagrams failed: {e}")),
        }
    }
    Ok(())
}

/// TCP_INFO of a socket (include/uapi/linux/tcp.h), or `None` when it cannot be read.
pub fn tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let r = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (r == 0).then_some(info)
    }
}

/// Bytes a TCP socket has not yet had acknowledged (SIOCOUTQ, linux/sockios.h = TIOCOUTQ).
pub fn unacknowledged_bytes(fd: RawFd) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one int.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    (r == 0).then_some(n.max(0) as u64)
}

/// The TCP congestion control of a socket (TCP_CONGESTION).
pub fn congestion(fd: RawFd) -> Option<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most len bytes into buf.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    let s = &buf[..(len as usize).min(buf.len())];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Some(String::from_utf8_lossy(&s[..end]).into_owned()).filter(|s| !s.is_empty())
}

/// Wait until the TCP senders' queues are empty (all bytes acknowledged), so the receivers
/// have counted every byte the senders counted when the test ends; all sockets at once, until
/// `until` or `interrupt` at the latest.
pub fn drain(fds: &[RawFd], until: Instant, interrupt: &AtomicBool) {
    while Instant::now() < until && !interrupt.load(Ordering::Relaxed) {
        if fds
            .iter()
            .all(|&fd| matches!(unacknowledged_bytes(fd), Some(0) | None))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_header_is_iperf3s() {
        let mut b = [0u8; 16];
        write_udp_header(&mut b, 0x1_0000_0005, 7, 258, false);
        assert_eq!(&b[..12], &[0, 0, 0, 5, 0, 0, 0, 7, 0, 0, 1, 2]);
        assert_eq!(read_udp_header(&b, false), Some((5, 7, 258)));
        write_udp_header(&mut b, 1, 2, 1 << 40, true);
        assert_eq!(read_udp_header(&b, true), Some((1, 2, 1 << 40)));
        assert_eq!(read_udp_header(&b[..11], false), None);
        assert_eq!(read_udp_header(&b[..12], true), None);
    }

    #[test]
    fn loss_order_and_jitter() {
        let mut s = UdpStats::default();
        for (seq, t) in [(1, 0.010), (2, 0.012), (5, 0.010), (4, 0.011), (6, 0.010)] {
            s.datagram(seq, t);
        }
        // 3 and 4 missing at 5; 4 arrives late: one out of order, one loss left.
        assert_eq!((s.highest, s.lost, s.out_of_order), (6, 1, 1));
        // Jitter: |d| = 2, 2, 1, 1 ms, each moving the estimate by 1/16 of the difference.
        let mut j = 0.0f64;
        for d in [0.002, 0.002, 0.001, 0.001] {
            j += (d - j) / 16.0;
        }
        assert!((s.jitter_s - j).abs() < 1e-12);
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::*;
    use std::io::Write;

    /// The stream buffers start on a page boundary whatever their length (see [`PageBuf`]),
    /// and the payload is the same non-zero pattern whatever its length.
    #[test]
    fn stream_buffers_are_page_aligned() {
        for len in [1, 1448, 65_536, 131_072, 1_048_577] {
            let b = PageBuf::zeroed(len);
            assert_eq!(b.bytes().len(), len);
            assert_eq!(b.bytes().as_ptr() as usize % 4096, 0, "len {len}");
            assert!(b.bytes().iter().all(|&x| x == 0));
            let p = payload(len);
            assert_eq!(p.bytes().as_ptr() as usize % 4096, 0, "len {len}");
            assert_eq!(
                p.bytes()[..len.min(1448)],
                payload(1448).bytes()[..len.min(1448)]
            );
        }
        assert!(payload(4096).bytes().iter().filter(|&&x| x == 0).count() < 100);
        // A receiver fills whole pages.
        assert_eq!(PageBuf::zeroed(65_537).whole_pages_mut().len(), 69_632);
    }

    /// A receiver counts every byte a sender wrote in odd-sized pieces, through many wraps
    /// of its buffer, and ends at the end of the stream.
    #[test]
    fn a_receiver_counts_every_byte_across_wraps() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let total: usize = 1_000_003;
        let sender = std::thread::spawn(move || {
            let mut t = TcpStream::connect(addr).unwrap();
            let p = payload(7_919);
            let mut left = total;
            while left > 0 {
                let n = left.min(7_919);
                t.write_all(&p.bytes()[..n]).unwrap();
                left -= n;
            }
        });
        let (s, _) = l.accept().unwrap();
        let c = Counters::default();
        let work = Work {
            send: false,
            len: 1_000,
            rate_bps: None,
            zerocopy: false,
            udp_counters_64bit: false,
            recv_len: recv_len(1_000, 1, 1, 2),
            send_len: 1_000,
        };
        tcp_recv(&s, work, &c, &AtomicBool::new(false)).unwrap();
        sender.join().unwrap();
        assert_eq!(c.bytes.load(Ordering::Relaxed), total as u64);
    }

    /// Reads are the block length while every stream thread has a CPU, larger when they
    /// outnumber the CPUs (within the budget), never shorter than the block or 64 KiB.
    #[test]
    fn a_receiver_behind_reads_more_at_once() {
        assert_eq!(recv_len(131_072, 1, 2, 2), 131_072);
        assert_eq!(recv_len(131_072, 2, 4, 2), BEHIND_LEN);
        assert_eq!(recv_len(1_000, 1, 1, 2), 65_536);
        assert_eq!(recv_len(1_000, 2, 3, 2), BEHIND_LEN);
        assert_eq!(recv_len(4 << 20, 4, 8, 2), 4 << 20);
        assert_eq!(recv_len(131_072, 16, 32, 64), 131_072);
        // 16 receivers take 8 MiB at most; 17 keep the block length.
        assert_eq!(recv_len(131_072, 16, 32, 2), BEHIND_LEN);
        assert_eq!(recv_len(131_072, 17, 34, 2), 131_072);
    }

    /// Writes are the block length while every stream thread has a CPU, for paced senders
    /// and for small blocks; larger when the threads outnumber the CPUs (within the budget).
    #[test]
    fn a_sender_behind_writes_more_at_once() {
        assert_eq!(send_len(131_072, false, 1, 2, 2), 131_072);
        assert_eq!(send_len(131_072, false, 4, 8, 2), BEHIND_LEN);
        assert_eq!(send_len(131_072, true, 4, 8, 2), 131_072, "paced");
        assert_eq!(
            send_len(8_192, false, 4, 8, 2),
            8_192,
            "the user asked for small writes"
        );
        assert_eq!(send_len(4 << 20, false, 4, 8, 2), 4 << 20);
        assert_eq!(send_len(131_072, false, 16, 32, 2), BEHIND_LEN);
        assert_eq!(
            send_len(131_072, false, 17, 34, 2),
            131_072,
            "past the budget"
        );
    }

    /// The wake-up mark is 1 ms of the stream, within one read and a quarter of the receive
    /// buffer, in whole pages, and none below 64 KiB.
    #[test]
    fn the_wake_mark_is_a_millisecond_of_the_stream_within_bounds() {
        // 10 Gbit/s: 1.25 MB in 1 ms, held to the read.
        assert_eq!(wake_mark(1.25e9, 8 << 20, 131_072), 131_072);
        assert_eq!(wake_mark(1.25e9, 8 << 20, 524_288), 524_288);
        // 1 Gbit/s: 125,000 B in 1 ms, down to whole pages.
        assert_eq!(wake_mark(125e6, 8 << 20, 524_288), 122_880);
        // A buffer the kernel has not grown (or -w kept small) bounds it.
        assert_eq!(wake_mark(1.25e9, 131_072, 524_288), 0);
        assert_eq!(wake_mark(1.25e9, 1 << 20, 524_288), 262_144);
        // 100 Mbit/s: 12.5 kB in 1 ms, not worth a mark; a stalled stream has none.
        assert_eq!(wake_mark(12.5e6, 8 << 20, 131_072), 0);
        assert_eq!(wake_mark(0.0, 8 << 20, 131_072), 0);
    }
}
