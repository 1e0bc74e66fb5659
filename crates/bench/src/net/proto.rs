//! iperf3's control protocol (as iperf 3.12 speaks it; learnt from esnet/iperf src/iperf.h,
//! iperf_api.h, iperf_api.c, iperf_client_api.c, iperf_server_api.c, iperf_udp.c):
//!
//! - The client opens a TCP control connection and sends a 37-byte cookie (36 printable
//!   characters and a NUL, `COOKIE_SIZE`); every TCP data connection starts with the same
//!   cookie, which is how the server tells its test's streams from strangers.
//! - The server then drives the test with one signed state byte per transition
//!   ([`State`]); the client answers some of them.
//! - Parameters and results are JSON objects framed by a 4-byte big-endian length
//!   (`JSON_write`/`JSON_read`).
//! - A UDP stream is "connected" by a 4-byte datagram [`UDP_CONNECT_MSG`] from the client,
//!   answered by [`UDP_CONNECT_REPLY`] (both written as host-order `unsigned int`s).
//! - Stream ids are 1, 3, 4, 5, ... (`iperf_add_stream` skips 2, kept for compatibility);
//!   results are matched by id.
//!
//! Everything read from the peer goes through the parsers here, which never panic and bound
//! what they accept (fuzzed: fuzz/fuzz_targets/net_control.rs).

use model::net::args::{MAX_BLOCKSIZE, MAX_MSS, MAX_UDP_BLOCKSIZE};
use serde_json::{json, Map, Value};
use std::io::{Read, Write};

/// `COOKIE_SIZE` (iperf.h): an ASCII uuid-sized string with its NUL.
pub const COOKIE_SIZE: usize = 37;

/// `UDP_CONNECT_MSG` (iperf.h, 3.x): "6789" as a host-order u32.
pub const UDP_CONNECT_MSG: u32 = 0x3637_3839;
/// `UDP_CONNECT_REPLY` (iperf.h): "9876".
pub const UDP_CONNECT_REPLY: u32 = 0x3938_3736;
/// `LEGACY_UDP_CONNECT_REPLY`: what servers before 3.11 answer.
pub const LEGACY_UDP_CONNECT_REPLY: u32 = 987_654_321;

/// The largest result message accepted (iperf3 3.12 has no limit; results of 2 x 128
/// streams are a few tens of KiB, a server's own output included stays far below this).
pub const MAX_JSON: u32 = 4 << 20;
/// The largest parameter message a server reads (iperf.h of later iperf3 releases:
/// MAX_PARAMS_JSON_STRING, 8 KiB; iperf3 3.12's own are under 400 B, an auth token adds at
/// most 700 B for a 4096-bit key).
pub const MAX_PARAMS_JSON: u32 = 8 * 1024;
/// The longest congestion control name a peer may send: Linux's TCP_CA_NAME_MAX
/// (include/net/tcp.h, 16 bytes with the NUL).
pub const MAX_CONGESTION_NAME: usize = 15;
/// The longest version string a peer may send (iperf3 sends "3.12"; headroom
/// "headroom 0.1.0").
pub const MAX_VERSION: usize = 64;
/// The longest auth token accepted: the base64 of one RSA block of a 16384-bit key.
pub const MAX_AUTH_TOKEN: usize = 2732;

/// The state bytes of iperf_api.h ("states").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    pub fn byte(self) -> i8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        }
    }

    pub fn from_byte(b: i8) -> Option<State> {
        Some(match b {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }
}

/// What went wrong on the control connection, one sentence each.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("the peer closed the control connection")]
    Closed,
    #[error("the control connection failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the peer sent state byte {0}, which iperf3 does not define")]
    UnknownState(i8),
    #[error("the peer announced a {0}-byte message, more than the {1} accepted")]
    TooLong(u32, u32),
    #[error("the peer sent a message that is not JSON: {0}")]
    NotJson(String),
    #[error("the peer's {what} lack {field} or have it of the wrong type")]
    Field { what: &'static str, field: String },
    /// Parameters iperf3 itself refuses; `i_errno` is iperf3's error number for them
    /// (iperf_api.h), which the server sends the client after SERVER_ERROR.
    #[error("the peer's parameters are out of range: {what}")]
    Range { i_errno: i32, what: String },
    /// iperf3's authentication refused the client (IEAUTHTEST).
    #[error("authentication failed: {0}")]
    Auth(String),
}

/// iperf3's error numbers (iperf_api.h of 3.12, `enum` of i_errno) that a server sends.
pub mod ierr {
    pub const IEDURATION: i32 = 5;
    pub const IENUMSTREAMS: i32 = 6;
    pub const IEBLOCKSIZE: i32 = 7;
    pub const IEBUFSIZE: i32 = 8;
    pub const IEMSS: i32 = 10;
    pub const IEOMIT: i32 = 12;
    pub const IEUNIMP: i32 = 13;
    pub const IEUDPBLOCKSIZE: i32 = 20;
    pub const IELISTEN: i32 = 102;
    pub const IERECVPARAMS: i32 = 114;
    pub const IEAUTHTEST: i32 = 142;
    pub const IESETCONGESTION: i32 = 134;
}

impl ProtoError {
    fn range(i_errno: i32, what: impl Into<String>) -> ProtoError {
        ProtoError::Range {
            i_errno,
            what: what.into(),
        }
    }

    /// The i_errno a server answers this error with after SERVER_ERROR.
    pub fn i_errno(&self) -> i32 {
        match self {
            ProtoError::Range { i_errno, .. } => *i_errno,
            ProtoError::Auth(_) => ierr::IEAUTHTEST,
            _ => ierr::IERECVPARAMS,
        }
    }
}

fn read_exact_or_closed(r: &mut impl Read, buf: &mut [u8]) -> Result<(), ProtoError> {
    match r.read_exact(buf) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(ProtoError::Closed),
        Err(e) => Err(ProtoError::Io(e)),
    }
}

/// A fresh cookie: 36 characters of iperf3's alphabet (`make_cookie`: a-z, 2-7) and a NUL.
pub fn make_cookie() -> [u8; COOKIE_SIZE] {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut random = [0u8; COOKIE_SIZE];
    // SAFETY: getrandom writes at most `len` bytes into the buffer it is given.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != random.len() as isize {
        // No entropy call: the time and pid still make a cookie unique enough on one host.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            ^ u128::from(std::process::id());
        for (i, b) in random.iter_mut().enumerate() {
            *b = (seed >> ((i * 7) % 120)) as u8 ^ i as u8;
        }
    }
    let mut cookie = [0u8; COOKIE_SIZE];
    for (c, r) in cookie.iter_mut().zip(random.iter()).take(COOKIE_SIZE - 1) {
        *c = ALPHABET[usize::from(*r % 32)];
    }
    cookie
}

pub fn read_state(r: &mut impl Read) -> Result<State, ProtoError> {
    let mut b = [0u8; 1];
    read_exact_or_closed(r, &mut b)?;
    let s = b[0] as i8;
    State::from_byte(s).ok_or(ProtoError::UnknownState(s))
}

pub fn write_state(w: &mut impl Write, s: State) -> Result<(), ProtoError> {
    w.write_all(&[s.byte() as u8])?;
    Ok(())
}

/// One length-framed message's bytes (results: at most [`MAX_JSON`]).
pub fn read_frame(r: &mut impl Read) -> Result<Vec<u8>, ProtoError> {
    read_frame_within(r, MAX_JSON)
}

/// One length-framed message of at most `max` bytes; a longer one is refused before anything
/// is allocated for it.
pub fn read_frame_within(r: &mut impl Read, max: u32) -> Result<Vec<u8>, ProtoError> {
    let mut len = [0u8; 4];
    read_exact_or_closed(r, &mut len)?;
    let n = u32::from_be_bytes(len);
    if n > max {
        return Err(ProtoError::TooLong(n, max));
    }
    let mut buf = vec![0u8; n as usize];
    read_exact_or_closed(r, &mut buf)?;
    Ok(buf)
}

pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ProtoError> {
    // cJSON stops at a NUL; some writers include one.
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    // Through from_str, the reader every document already uses (from_slice would add a
    // second copy of serde_json's Value parser to the board binaries, 8 kB on x86_64).
    let text = std::str::from_utf8(&bytes[..end])
        .map_err(|e| ProtoError::NotJson(format!("not UTF-8 text: {e}")))?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(ProtoError::NotJson(format!(
            "a JSON {} where an object was expected",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                _ => "null",
            }
        ))),
        Err(e) => Err(ProtoError::NotJson(e.to_string())),
    }
}

pub fn write_json(w: &mut impl Write, v: &Value) -> Result<(), ProtoError> {
    let body = serde_json::to_vec(v).map_err(|e| ProtoError::NotJson(e.to_string()))?;
    let mut msg = Vec::with_capacity(body.len() + 4);
    msg.extend_from_slice(&(body.len() as u32).to_be_bytes());
    msg.extend_from_slice(&body);
    w.write_all(&msg)?;
    Ok(())
}

/// The test parameters as iperf3 sends them (`send_parameters`). Numbers are cJSON's: any
/// JSON number, truncated to an integer where iperf3 reads `valueint`.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub udp: bool,
    pub omit: u32,
    pub time: u32,
    /// `-n`/`-k` end conditions (bytes, blocks); headroom ends on time only.
    pub bytes: u64,
    pub blockcount: u64,
    pub parallel: u32,
    pub reverse: bool,
    pub bidirectional: bool,
    pub window: Option<u32>,
    pub len: Option<u32>,
    /// Bits per second per stream; 0 = unlimited.
    pub bandwidth: u64,
    pub mss: Option<u32>,
    pub nodelay: bool,
    pub congestion: Option<String>,
    pub udp_counters_64bit: bool,
    pub zerocopy: bool,
    pub client_version: Option<String>,
    /// iperf3's `authtoken`: base64 of the RSA-encrypted credentials (iperf_auth.c).
    pub authtoken: Option<String>,
}

/// Limits of iperf3 3.12 (iperf.h: MAX_TIME 86400 s, MAX_STREAMS 128; MAX_BLOCKSIZE,
/// MAX_UDP_BLOCKSIZE and MAX_MSS are `model::net::args`', the flags' limits).
pub const MAX_TIME: u32 = 86_400;
/// The longest -O a server accepts (iperf.h of later releases: MAX_OMIT_TIME, 600 s).
pub const MAX_OMIT: u32 = 600;
pub const MAX_STREAMS: u32 = 128;
/// The smallest UDP datagram that holds iperf3's header (sec, usec, 32-bit count).
pub const MIN_UDP_LEN_32: u32 = 12;
pub const MIN_UDP_LEN_64: u32 = 16;

fn num(m: &Map<String, Value>, key: &str) -> Option<f64> {
    m.get(key).and_then(Value::as_f64).filter(|v| v.is_finite())
}

fn int_in(
    m: &Map<String, Value>,
    key: &str,
    max: u64,
    what: &'static str,
) -> Result<Option<u64>, ProtoError> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => {
            let x = v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or(ProtoError::Field {
                    what,
                    field: key.to_string(),
                })?;
            if x < 0.0 || x > max as f64 {
                let i_errno = match key {
                    "time" => ierr::IEDURATION,
                    "parallel" => ierr::IENUMSTREAMS,
                    "len" => ierr::IEBLOCKSIZE,
                    "window" => ierr::IEBUFSIZE,
                    "MSS" => ierr::IEMSS,
                    "omit" => ierr::IEOMIT,
                    _ => ierr::IERECVPARAMS,
                };
                return Err(ProtoError::range(
                    i_errno,
                    format!("{key} = {x} (0 to {max})"),
                ));
            }
            Ok(Some(x as u64))
        }
    }
}

/// A string field of at most `max` bytes; a longer one is refused (nothing a peer sends is
/// kept or printed at any length it likes).
fn string(
    m: &Map<String, Value>,
    key: &str,
    max: usize,
    i_errno: i32,
) -> Result<Option<String>, ProtoError> {
    match m.get(key).and_then(Value::as_str) {
        Some(s) if s.len() > max => Err(ProtoError::range(
            i_errno,
            format!("{key} is {} bytes long (at most {max})", s.len()),
        )),
        s => Ok(s.map(str::to_string)),
    }
}

impl Params {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            if self.udp { "udp" } else { "tcp" }.into(),
            Value::Bool(true),
        );
        m.insert("omit".into(), json!(self.omit));
        m.insert("time".into(), json!(self.time));
        m.insert("num".into(), json!(self.bytes));
        m.insert("blockcount".into(), json!(self.blockcount));
        if let Some(mss) = self.mss {
            m.insert("MSS".into(), json!(mss));
        }
        if self.nodelay {
            m.insert("nodelay".into(), Value::Bool(true));
        }
        m.insert("parallel".into(), json!(self.parallel));
        if self.reverse {
            m.insert("reverse".into(), Value::Bool(true));
        }
        if self.bidirectional {
            m.insert("bidirectional".into(), Value::Bool(true));
        }
        if let Some(w) = self.window {
            m.insert("window".into(), json!(w));
        }
        if let Some(l) = self.len {
            m.insert("len".into(), json!(l));
        }
        if self.bandwidth > 0 {
            m.insert("bandwidth".into(), json!(self.bandwidth));
        }
        if let Some(c) = &self.congestion {
            m.insert("congestion".into(), json!(c));
        }
        if self.udp_counters_64bit {
            m.insert("udp_counters_64bit".into(), json!(1));
        }
        if self.zerocopy {
            m.insert("zerocopy".into(), json!(1));
        }
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), json!(v));
        }
        if let Some(t) = &self.authtoken {
            m.insert("authtoken".into(), json!(t));
        }
        Value::Object(m)
    }

    /// Parameters from a peer's message, refused when out of iperf3's own limits (a server
    /// must not start 10^9 streams because a client asked).
    pub fn parse(bytes: &[u8]) -> Result<Params, ProtoError> {
        const W: &str = "parameters";
        let m = parse_object(bytes)?;
        let udp = m.contains_key("udp");
        if !udp && !m.contains_key("tcp") {
            return Err(if m.contains_key("sctp") {
                ProtoError::range(
                    ierr::IEUNIMP,
                    "SCTP is not supported by headroom; use TCP or UDP",
                )
            } else {
                ProtoError::Field {
                    what: W,
                    field: "`tcp` or `udp`".into(),
                }
            });
        }
        let u32_of = |v: Option<u64>| v.map(|x| x as u32);
        let parallel = int_in(&m, "parallel", u64::from(MAX_STREAMS), W)?.unwrap_or(1) as u32;
        if parallel == 0 {
            return Err(ProtoError::range(
                ierr::IENUMSTREAMS,
                "parallel = 0 (1 to 128)",
            ));
        }
        let len = u32_of(int_in(
            &m,
            "len",
            u64::from(if udp {
                MAX_UDP_BLOCKSIZE
            } else {
                MAX_BLOCKSIZE
            }),
            W,
        )?)
        .filter(|&l| l > 0);
        let udp_counters_64bit = m.contains_key("udp_counters_64bit");
        if let (true, Some(l)) = (udp, len) {
            let min = if udp_counters_64bit {
                MIN_UDP_LEN_64
            } else {
                MIN_UDP_LEN_32
            };
            if l < min {
                return Err(ProtoError::range(
                    ierr::IEUDPBLOCKSIZE,
                    format!(
                        "len = {l}: a UDP datagram needs at least {min} bytes for iperf3's header"
                    ),
                ));
            }
        }
        let time = int_in(&m, "time", u64::from(MAX_TIME), W)?.unwrap_or(10) as u32;
        let bytes = int_in(&m, "num", u64::MAX, W)?.unwrap_or(0);
        let blockcount = int_in(&m, "blockcount", u64::MAX, W)?.unwrap_or(0);
        // iperf3 sends time 0 with -n/-k (a byte or block count ends the test); headroom
        // ends on time only, and a test of no time measures nothing.
        if time == 0 {
            return Err(ProtoError::range(
                if bytes > 0 || blockcount > 0 {
                    ierr::IEUNIMP
                } else {
                    ierr::IEDURATION
                },
                if bytes > 0 || blockcount > 0 {
                    "-n/-k (a byte or block count) ends no headroom test: give -t SECONDS"
                } else {
                    "time = 0: a test needs 1 to 86400 seconds"
                },
            ));
        }
        Ok(Params {
            udp,
            omit: int_in(&m, "omit", u64::from(MAX_OMIT), W)?.unwrap_or(0) as u32,
            time,
            bytes,
            blockcount,
            parallel,
            reverse: m.contains_key("reverse"),
            bidirectional: m.contains_key("bidirectional"),
            window: u32_of(int_in(&m, "window", u64::from(u32::MAX / 2), W)?).filter(|&w| w > 0),
            len,
            bandwidth: int_in(&m, "bandwidth", u64::MAX / 2, W)?.unwrap_or(0),
            mss: u32_of(int_in(&m, "MSS", u64::from(MAX_MSS), W)?).filter(|&x| x > 0),
            nodelay: m.contains_key("nodelay"),
            congestion: string(&m, "congestion", MAX_CONGESTION_NAME, ierr::IESETCONGESTION)?,
            udp_counters_64bit,
            zerocopy: num(&m, "zerocopy").is_some_and(|z| z != 0.0),
            client_version: string(&m, "client_version", MAX_VERSION, ierr::IERECVPARAMS)?,
            authtoken: string(&m, "authtoken", MAX_AUTH_TOKEN, ierr::IEAUTHTEST)
                .map_err(|e| ProtoError::Auth(e.to_string()))?,
        })
    }
}

/// One stream in a result message (`send_results`).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamReport {
    pub id: u32,
    pub bytes: u64,
    /// -1 when the end was not a TCP sender or has no TCP_INFO.
    pub retransmits: i64,
    /// Seconds (iperf3's `sp->jitter`).
    pub jitter_s: f64,
    /// UDP datagrams lost (`cnt_error`).
    pub errors: u64,
    pub packets: u64,
    pub start_time: f64,
    pub end_time: f64,
}

/// A result message.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1, 0, or -1 when the end only received.
    pub sender_has_retransmits: i64,
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamReport>,
}

impl Results {
    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "bytes": s.bytes,
                    "retransmits": s.retransmits,
                    "jitter": s.jitter_s,
                    "errors": s.errors,
                    "packets": s.packets,
                    "start_time": s.start_time,
                    "end_time": s.end_time,
                })
            })
            .collect();
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), json!(self.cpu_util_total));
        m.insert("cpu_util_user".into(), json!(self.cpu_util_user));
        m.insert("cpu_util_system".into(), json!(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            json!(self.sender_has_retransmits),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), json!(c));
        }
        m.insert("streams".into(), Value::Array(streams));
        Value::Object(m)
    }

    /// A peer's results; the fields iperf3's `get_results` requires must be there.
    pub fn parse(bytes: &[u8]) -> Result<Results, ProtoError> {
        const W: &str = "results";
        let m = parse_object(bytes)?;
        let need = |k: &str| {
            num(&m, k).ok_or(ProtoError::Field {
                what: W,
                field: k.to_string(),
            })
        };
        let cpu_util_total = need("cpu_util_total")?;
        let cpu_util_user = need("cpu_util_user")?;
        let cpu_util_system = need("cpu_util_system")?;
        let sender_has_retransmits = need("sender_has_retransmits")? as i64;
        let list = m
            .get("streams")
            .and_then(Value::as_array)
            .ok_or(ProtoError::Field {
                what: W,
                field: "streams".into(),
            })?;
        if list.len() > 2 * MAX_STREAMS as usize {
            return Err(ProtoError::range(
                ierr::IENUMSTREAMS,
                format!("{} streams", list.len()),
            ));
        }
        let mut streams = Vec::with_capacity(list.len());
        for s in list {
            let o = s.as_object().ok_or(ProtoError::Field {
                what: W,
                field: "streams[]".into(),
            })?;
            let f = |k: &str| {
                num(o, k).ok_or(ProtoError::Field {
                    what: W,
                    field: format!("streams[].{k}"),
                })
            };
            let nonneg = |x: f64| if x > 0.0 { x as u64 } else { 0 };
            streams.push(StreamReport {
                id: f("id")?.clamp(0.0, f64::from(u32::MAX)) as u32,
                bytes: nonneg(f("bytes")?),
                retransmits: f("retransmits")? as i64,
                jitter_s: f("jitter")?,
                errors: nonneg(f("errors")?),
                packets: nonneg(f("packets")?),
                start_time: num(o, "start_time").unwrap_or(0.0),
                end_time: num(o, "end_time").unwrap_or(0.0),
            });
        }
        Ok(Results {
            cpu_util_total,
            cpu_util_user,
            cpu_util_system,
            sender_has_retransmits,
            congestion_used: string(
                &m,
                "congestion_used",
                MAX_CONGESTION_NAME,
                ierr::IESETCONGESTION,
            )?,
            streams,
        })
    }
}

/// iperf3's error numbers a server sends after SERVER_ERROR (iperf_api.h), as words.
pub fn iperf_error_text(i_errno: i32) -> String {
    let what = match i_errno {
        5 => "test duration too long (or zero)",
        6 => "too many parallel streams",
        7 => "block size too large",
        8 => "socket buffer size too large",
        10 => "MSS too large",
        12 => "bogus value for --omit",
        13 => "not implemented",
        20 => "block size invalid",
        102 => "unable to start the listener for the data connections",
        114 => "unable to receive the parameters",
        120 => "the server has terminated",
        121 => "the server is busy running a test",
        134 => "unable to set the TCP congestion control",
        142 => "test authorization failed",
        200 => "unable to create the data stream socket",
        _ => "",
    };
    if what.is_empty() {
        format!("iperf3 error {i_errno}")
    } else {
        format!("{what} (iperf3 error {i_errno})")
    }
}

/// The parser entry the fuzz target drives: any bytes, as parameters and as results.
pub fn parse_any(bytes: &[u8]) {
    let _ = Params::parse(bytes);
    let _ = Results::parse(bytes);
    let _ = read_frame(&mut &bytes[..]);
    if let Some(&b) = bytes.first() {
        let _ = State::from_byte(b as i8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from `iperf3 -c 127.0.0.1 -u -b 10M -P 2 -R` (iperf 3.12, Debian 12) by a
    // listener that printed what followed the cookie and PARAM_EXCHANGE.
    const IPERF3_PARAMS: &str = r#"{"udp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":2,"reverse":true,"len":32768,"bandwidth":10000000,"pacing_timer":1000,"client_version":"3.12"}"#;

    #[test]
    fn states_are_iperf3s() {
        for b in i8::MIN..=i8::MAX {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::ParamExchange.byte(), 9);
        assert_eq!(State::AccessDenied.byte(), -1);
        assert_eq!(State::from_byte(3), None, "RESULT_REQUEST is not used");
    }

    #[test]
    fn cookie_shape() {
        let c = make_cookie();
        assert_eq!(c[36], 0);
        assert!(c[..36]
            .iter()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(b)));
        assert_ne!(make_cookie(), c);
    }

    #[test]
    fn params_of_iperf3() {
        let p = Params::parse(IPERF3_PARAMS.as_bytes()).unwrap();
        assert!(p.udp && p.reverse && !p.bidirectional);
        assert_eq!(
            (p.parallel, p.time, p.len, p.bandwidth),
            (2, 10, Some(32768), 10_000_000)
        );
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
        // Round trip through our writer.
        let again = Params::parse(&serde_json::to_vec(&p.to_json()).unwrap()).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn hostile_params_are_refused() {
        let e = |s: &str| Params::parse(s.as_bytes()).unwrap_err().to_string();
        assert!(e(r#"{"tcp":true,"parallel":100000}"#).contains("parallel"));
        assert!(e(r#"{"tcp":true,"parallel":0}"#).contains("parallel = 0"));
        assert!(e(r#"{"tcp":true,"time":-5}"#).contains("time"));
        assert!(e(r#"{"udp":true,"len":4}"#).contains("at least 12"));
        assert!(e(r#"{"sctp":true}"#).contains("SCTP"));
        assert!(e(r#"{"omit":1}"#).contains("`tcp` or `udp`"));
        assert!(e("[1,2]").contains("array"));
        assert!(e("\u{1}garbage").contains("not JSON"));
        assert!(e(r#"{"tcp":true,"time":"ten"}"#).contains("time"));
        // iperf3's error numbers go back to the client.
        let errno = |s: &str| Params::parse(s.as_bytes()).unwrap_err().i_errno();
        assert_eq!(errno(r#"{"tcp":true,"time":0}"#), ierr::IEDURATION);
        assert_eq!(
            errno(r#"{"tcp":true,"time":0,"num":1048576}"#),
            ierr::IEUNIMP
        );
        assert_eq!(
            errno(r#"{"tcp":true,"parallel":10000}"#),
            ierr::IENUMSTREAMS
        );
        assert_eq!(errno(r#"{"tcp":true,"omit":601}"#), ierr::IEOMIT);
        let long = format!(r#"{{"tcp":true,"client_version":"{}"}}"#, "v".repeat(65));
        assert!(e(&long).contains("client_version is 65 bytes long (at most 64)"));
        let cc = format!(r#"{{"tcp":true,"congestion":"{}"}}"#, "c".repeat(16));
        assert_eq!(errno(&cc), ierr::IESETCONGESTION);
        // A version string at the limit is kept as sent.
        let ok = format!(r#"{{"tcp":true,"client_version":"{}"}}"#, "v".repeat(64));
        assert_eq!(
            Params::parse(ok.as_bytes())
                .unwrap()
                .client_version
                .unwrap()
                .len(),
            64
        );
        // Parameters are read up to 8 KiB, no more.
        let mut framed = (MAX_PARAMS_JSON + 1).to_be_bytes().to_vec();
        framed.extend_from_slice(b"{}");
        assert!(matches!(
            read_frame_within(&mut &framed[..], MAX_PARAMS_JSON),
            Err(ProtoError::TooLong(8193, 8192))
        ));
    }

    #[test]
    fn results_round_trip_and_limits() {
        let r = Results {
            cpu_util_total: 12.5,
            cpu_util_user: 2.5,
            cpu_util_system: 10.0,
            sender_has_retransmits: 1,
            congestion_used: Some("cubic".into()),
            streams: vec![StreamReport {
                id: 3,
                bytes: 12_345_678_901,
                retransmits: 7,
                jitter_s: 0.000_25,
                errors: 0,
                packets: 0,
                start_time: 0.0,
                end_time: 10.000_1,
            }],
        };
        let bytes = serde_json::to_vec(&r.to_json()).unwrap();
        assert_eq!(Results::parse(&bytes).unwrap(), r);
        let e = Results::parse(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("streams"), "{e}");
        // cJSON may print large integers with an exponent.
        let r2 = Results::parse(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1.2e10,"retransmits":-1,"jitter":0,"errors":0,"packets":0}]}"#).unwrap();
        assert_eq!(r2.streams[0].bytes, 12_000_000_000);
    }

    #[test]
    fn frames() {
        let mut buf = Vec::new();
        write_json(&mut buf, &json!({"a": 1})).unwrap();
        assert_eq!(&buf[..4], &7u32.to_be_bytes());
        assert_eq!(read_frame(&mut &buf[..]).unwrap(), br#"{"a":1}"#);
        let huge = (MAX_JSON + 1).to_be_bytes();
        assert!(matches!(
            read_frame(&mut &huge[..]),
            Err(ProtoError::TooLong(_, MAX_JSON))
        ));
        assert!(matches!(
            read_frame(&mut &[0u8, 0, 0, 9, b'{'][..]),
            Err(ProtoError::Closed)
        ));
        parse_any(&[0xff, 0, 0, 0]);
    }
}
