//! `headroom bench net`: iperf3's test with iperf3's flags and protocol, judged against the
//! link's ceiling. `--server` is iperf3 `-s`; a HOST (or `-c HOST`) is iperf3 `-c`.

use crate::beside::{Moved, SideTarget, Sides};
use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use bench::net::{self, ClientConfig, Event, Family, NetProgress, Server, ServerConfig};
use clap::Args;
use counters::Sampler;
use model::net::args::{config_of, positive_seconds, NetFlags};
use model::net::{Flow, LinkFacts, NetConfig, NetMeasurement, NetStop};
use model::root::SysRoot;
use report::document::DocumentKind;
use report::kinds::count::BesideCounters;
use report::kinds::net::{FindRate, NetDocument, RateStep};
use report::kinds::{KindDocument as _, Text};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// iperf3's flags, with iperf3's meaning and units (`-b 100M` = 10^8 bit/s, `-l 128K` =
/// 131072 bytes, as iperf3's units.c).
#[derive(Args, Debug, Clone, Default)]
#[command(
    after_help = "Examples:\n  headroom bench net --server\n  headroom bench net 192.0.2.1 -t 10 -P 2\n  \
headroom bench net -c 192.0.2.1 -u -b 100M -R\n  headroom bench net 192.0.2.1 -u --find-rate\n  \
headroom bench net 192.0.2.1 -J | jq .end.sum_received.bits_per_second\n\
A pasted iperf3 command line works: `headroom bench net iperf3 -c HOST -R -t 5`.\n\
Rates are in bits per second with decimal prefixes (iperf3's -b); lengths and windows in bytes \
with binary ones (iperf3's -l, -w)."
)]
pub struct NetArgs {
    /// The server to test against (or `-c HOST`); a leading `iperf3` word is ignored.
    #[arg(value_name = "HOST", num_args = 0..=2)]
    pub host: Vec<String>,

    /// Run as the client of HOST.
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,

    /// Run as a server (iperf3 -s): serve tests one at a time until Ctrl-C.
    #[arg(short = 's', long = "server", conflicts_with_all = ["client", "host"])]
    pub server: bool,

    /// With --server: serve one test, then exit.
    #[arg(short = '1', long = "one-off", requires = "server")]
    pub one_off: bool,

    /// With --server: run up to N tests at once, each with its own streams and result (1 to
    /// 64; more clients are refused as busy, as iperf3 refuses a second).
    #[arg(long = "clients", value_name = "N", value_parser = net::server::clients_arg, requires = "server", conflicts_with = "one_off")]
    pub clients: Option<usize>,

    /// With --server: keep each client's test in the history database too (a server keeps
    /// no peer's run unless asked).
    #[arg(long = "save", requires = "server", conflicts_with = "no_save")]
    pub save: bool,

    /// Client: the user name of iperf3's authentication (the password from the
    /// IPERF3_PASSWORD environment variable, else asked on the terminal). Not in the board
    /// binaries of scripts/dist.sh, which refuse it with one sentence.
    #[arg(
        long = "username",
        value_name = "USER",
        requires = "rsa_public_key_path"
    )]
    pub username: Option<String>,

    /// Client: the server's RSA public key (PEM) the credentials are encrypted with.
    #[arg(
        long = "rsa-public-key-path",
        value_name = "FILE",
        requires = "username"
    )]
    pub rsa_public_key_path: Option<std::path::PathBuf>,

    /// Server: its RSA private key (PEM, unencrypted); only clients with credentials in
    /// --authorized-users-path may run tests.
    #[arg(
        long = "rsa-private-key-path",
        value_name = "FILE",
        requires_all = ["server", "authorized_users_path"]
    )]
    pub rsa_private_key_path: Option<std::path::PathBuf>,

    /// Server: lines `USER,SHA256` where SHA256 is the hex SHA-256 of `{USER}PASSWORD`
    /// (`echo -n "{mario}rossi" | sha256sum`), as iperf3's.
    #[arg(
        long = "authorized-users-path",
        value_name = "FILE",
        requires = "rsa_private_key_path"
    )]
    pub authorized_users_path: Option<std::path::PathBuf>,

    /// Server: how far a client's clock may be from this one's, seconds (iperf3's default 10).
    #[arg(
        long = "time-skew-threshold",
        value_name = "SECONDS",
        requires = "rsa_private_key_path",
        default_value_t = bench::net::auth::DEFAULT_SKEW_S
    )]
    pub time_skew_threshold: u32,

    /// Port of the server.
    #[arg(short = 'p', long = "port", default_value_t = net::DEFAULT_PORT)]
    pub port: u16,

    /// Seconds to measure [default: 10; 3 per step with --find-rate].
    #[arg(short = 't', long = "time", value_name = "SECONDS", value_parser = positive_seconds, allow_negative_numbers = true)]
    pub time: Option<u32>,

    /// Seconds at the start not counted (TCP slow start).
    #[arg(
        short = 'O',
        long = "omit",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub omit: u32,

    /// Parallel streams, each with its own thread (1 to 128).
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,

    /// Reverse: the server sends.
    #[arg(short = 'R', long = "reverse", conflicts_with = "bidir")]
    pub reverse: bool,

    /// Both directions at once.
    #[arg(long = "bidir")]
    pub bidir: bool,

    /// UDP instead of TCP.
    #[arg(short = 'u', long = "udp")]
    pub udp: bool,

    /// Target rate per stream in bit/s (100M, 1G); 0 = unlimited. UDP default 1M, as iperf3.
    #[arg(
        short = 'b',
        long = "bitrate",
        visible_alias = "bandwidth",
        value_name = "RATE"
    )]
    pub bitrate: Option<String>,

    /// Bytes per write (TCP, default 128K) or per datagram (UDP, default: the path's MSS).
    /// An unpaced TCP stream of 64K blocks or more writes (and reads) up to 512K at once when
    /// the stream threads outnumber the CPUs; the bytes on the wire are the same.
    #[arg(short = 'l', long = "length", value_name = "BYTES")]
    pub length: Option<String>,

    /// Socket buffer size (SO_SNDBUF/SO_RCVBUF).
    #[arg(short = 'w', long = "window", value_name = "BYTES")]
    pub window: Option<String>,

    /// TCP maximum segment size.
    #[arg(short = 'M', long = "set-mss", value_name = "BYTES")]
    pub mss: Option<u32>,

    /// Send with sendfile(2) instead of write(2).
    #[arg(short = 'Z', long = "zerocopy")]
    pub zerocopy: bool,

    /// Seconds between interval reports (0: none).
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "SECONDS",
        default_value_t = 1.0
    )]
    pub interval: f64,

    /// Local address to bind to.
    #[arg(short = 'B', long = "bind", value_name = "ADDRESS")]
    pub bind: Option<std::net::IpAddr>,

    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "v6")]
    pub v4: bool,

    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub v6: bool,

    /// TCP congestion control (e.g. cubic, bbr).
    #[arg(short = 'C', long = "congestion", value_name = "ALGO")]
    pub congestion: Option<String>,

    /// 64-bit UDP packet counters.
    #[arg(long = "udp-counters-64bit")]
    pub udp_counters_64bit: bool,

    /// iperf3's -J: write iperf3 3.12's JSON document of the test on stdout (instead of
    /// headroom's text; --json writes headroom's own document).
    #[arg(short = 'J', long = "json-iperf3")]
    pub iperf3_json: bool,

    /// UDP: find the highest offered rate whose loss stays under --loss-threshold (bisection,
    /// starting at -b or 1G).
    #[arg(long = "find-rate")]
    pub find_rate: bool,

    /// Loss allowed by --find-rate, percent.
    #[arg(long = "loss-threshold", value_name = "PERCENT", default_value_t = 0.1)]
    pub loss_threshold: f64,

    /// Give up connecting after this many ms.
    #[arg(long = "connect-timeout", value_name = "MS", default_value_t = 5000)]
    pub connect_timeout_ms: u64,

    /// iperf3's output format (k/m/g/K/M/G): accepted for pasted lines; headroom prints
    /// Mbit/s and keeps bytes per second in --json.
    #[arg(short = 'f', long = "format", value_name = "UNIT", hide = true)]
    pub format: Option<String>,

    /// iperf3's verbose flag: accepted for pasted lines (headroom's output is complete).
    #[arg(short = 'V', long = "verbose", hide = true)]
    pub verbose: bool,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,

    #[command(flatten)]
    pub sides: crate::beside::SideArgs,
}

/// The flags that shape the test, for `model::net::args::config_of`.
pub fn flags(a: &NetArgs) -> NetFlags {
    NetFlags {
        udp: a.udp,
        bitrate: a.bitrate.clone(),
        length: a.length.clone(),
        window: a.window.clone(),
        mss: a.mss,
        udp_counters_64bit: a.udp_counters_64bit,
        interval: a.interval,
        find_rate: a.find_rate,
        loss_threshold: a.loss_threshold,
        format: a.format.clone(),
        time: a.time,
        omit: a.omit,
        parallel: a.parallel,
        reverse: a.reverse,
        bidir: a.bidir,
        zerocopy: a.zerocopy,
    }
}

fn interval_of(a: &NetArgs, duration_s: u32) -> Duration {
    if a.interval == 0.0 {
        Duration::from_secs(u64::from(duration_s).max(1))
    } else {
        Duration::from_secs_f64(a.interval)
    }
}

/// What a test's result is written as on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Text,
    /// headroom's document (`--json`).
    Document,
    /// iperf3's `-J` document.
    Iperf3,
}

pub fn run_net(global: &GlobalArgs, a: &NetArgs) -> anyhow::Result<ExitCode> {
    crate::driver::drive(global, a)
}

/// What the flags ask for: the test, the notes on what headroom chose, and what stdout shows.
pub struct NetPlan {
    test: NetConfig,
    notes: Vec<String>,
    output: Output,
}

impl NetArgs {
    /// What stdout shows, or why the flags cannot both be given.
    fn output(&self, global: &GlobalArgs) -> anyhow::Result<Output> {
        match (global.json, self.iperf3_json) {
            (true, true) => Err(crate::console::usage(
                "give -J (iperf3's JSON) or --json (headroom's document), not both",
            )),
            (true, false) => Ok(Output::Document),
            (false, true) => Ok(Output::Iperf3),
            (false, false) => Ok(Output::Text),
        }
    }
}

impl Benchmark for NetArgs {
    type Document = NetDocument;
    type Kept = NetDocument;
    type Setup = NetPlan;
    const KIND: DocumentKind = DocumentKind::Net;

    fn kept(doc: &NetDocument) -> &NetDocument {
        doc
    }

    fn side_flags(&self) -> crate::beside::SideFlags {
        self.sides.flags()
    }

    fn keep(&self) -> KeepArgs {
        // A server keeps a client's test only when asked (--save): peers are strangers.
        KeepArgs {
            no_save: self.keep.no_save || (self.server && !self.save),
            ..self.keep.clone()
        }
    }

    fn plan(&self, global: &GlobalArgs) -> anyhow::Result<NetPlan> {
        // clap's `requires = "server"` is met by --server's default (false): say it here.
        if !self.server && (self.one_off || self.clients.is_some() || self.save) {
            return Err(crate::console::usage(
                "-1, --clients and --save are server options: add --server (-s), or leave them \
                 out",
            ));
        }
        let output = self.output(global)?;
        let (test, notes) = config_of(&flags(self)).map_err(crate::console::usage)?;
        Ok(NetPlan {
            test,
            notes,
            output,
        })
    }

    fn run(&self, plan: NetPlan, run: &Run<'_>) -> anyhow::Result<Outcome<NetDocument>> {
        let a = self;
        let NetPlan {
            test,
            notes,
            output,
        } = plan;
        // A JSON document on stdout: no interval lines on stderr either, as iperf3 -J.
        let json = output != Output::Text;
        if a.server {
            return Ok(Outcome::Done(run_server(self, output, run, a.interval)));
        }
        let mut words: Vec<&str> = a.host.iter().map(String::as_str).collect();
        if matches!(words.first(), Some(&"iperf3") | Some(&"iperf")) {
            words.remove(0);
        }
        let host = match (a.client.as_deref(), words.as_slice()) {
            (Some(h), []) => h.to_string(),
            (None, [h]) => h.to_string(),
            (None, []) => {
                return Err(crate::console::usage(
                    "give the server to test against (HOST or -c HOST), or --server to be one",
                ));
            }
            _ => {
                return Err(crate::console::usage(
                    "give one server, as HOST or as -c HOST",
                ));
            }
        };
        for n in &notes {
            crate::console::note(format_args!("{n}"));
        }
        let auth = client_auth(a).map_err(crate::console::usage)?;
        let cfg = ClientConfig {
            host,
            port: a.port,
            bind: a.bind,
            family: if a.v4 {
                Family::V4
            } else if a.v6 {
                Family::V6
            } else {
                Family::Any
            },
            interval: interval_of(a, test.duration_s),
            test,
            connect_timeout: Duration::from_millis(a.connect_timeout_ms.max(1)),
            congestion: a.congestion.clone(),
            auth,
        };
        let outcome = if a.find_rate {
            find_rate(&cfg, a.loss_threshold, run, json)
        } else {
            one_test(&cfg, run, json).map(|t| (t, None))
        };
        let (tested, fr) = match outcome {
            Ok(x) => x,
            // Stopped before a test (or a trial of the search) ended: no measurement to show.
            Err(_) if run.is_stopped() => {
                return Ok(Outcome::Nothing(Stopped::Interrupted(
                    if a.find_rate {
                        "nothing was measured: no test of the search had ended"
                    } else {
                        "nothing was measured: the test had not begun"
                    }
                    .into(),
                )));
            }
            Err(e) => {
                return Err(anyhow::Error::msg(e.to_string()));
            }
        };
        Ok(Outcome::Ended(ended(tested, fr, notes, run)))
    }

    fn print(&self, ended: &Ended<NetDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        let r = &ended.doc;
        match self.output(run.global)? {
            Output::Document => {
                crate::output::print_result(Self::KIND, r)?;
            }
            Output::Iperf3 => {
                let system_info = probe::system::uname_line().unwrap_or_default();
                let version = format!("headroom {}", env!("CARGO_PKG_VERSION"));
                let host = report::kinds::net::iperf3::SystemInfo {
                    system_info: &system_info,
                    version: &version,
                };
                crate::console::write_data(&report::kinds::net::iperf3::render(
                    &r.measurement,
                    &host,
                ))?;
            }
            Output::Text => crate::out!("{}", r.text(&Text::default()))?,
        }
        Ok(())
    }
}

/// The interface's name and its sent and received bytes during the test.
type IfaceBytes = Option<(String, u64, u64)>;
/// A measurement, the interface's byte counts and the counters sampled beside the engine.
type Tested = (NetMeasurement, IfaceBytes, Option<BesideCounters>);

/// What a progress report shows, and the counters it starts: once the control connection
/// is up the interface is known, and the samplers of its device start before any stream
/// sends (a server says who connected).
fn on_progress(
    p: &NetProgress<'_>,
    json: bool,
    server: bool,
    run: &Run<'_>,
    sides: &Mutex<Option<Sides>>,
) {
    match &p.event {
        Event::Connected {
            peer, interface, ..
        } => {
            if server {
                crate::console::info(format_args!("test from {peer}"));
            }
            if let (Some(i), Ok(mut b)) = (interface, sides.lock()) {
                *b = Some(run.sides(&SideTarget::Interface(i)));
            }
        }
        Event::Interval { end_s, flow, bps } if !json => {
            crate::console::info(report::kinds::net::interval_line(*end_s, *flow, *bps))
        }
        Event::Interval { .. } => {}
        Event::Denied { peer } => crate::console::info(format_args!(
            "{peer} was refused: the server is busy (access denied)"
        )),
        Event::Streaming { .. } => {}
    }
}

/// Stop the side samplers and set the test's bytes against their counts: the device wrote
/// what was received to memory (Rx) and read what was sent (Tx).
fn stop_sides(sides: Mutex<Option<Sides>>, m: &NetMeasurement) -> Option<BesideCounters> {
    let s = sides.into_inner().ok().flatten()?;
    let (sent, received) = report::kinds::net::app_bytes(m);
    s.stop(&Moved {
        rx_bytes: received,
        tx_bytes: sent,
        busy_s: None,
    })
    .beside_counters()
}

/// The /proc/net/dev delta of the test's interface.
fn iface_bytes(
    all: &counters::NetDevSampler,
    before: Option<&<counters::NetDevSampler as Sampler>::Snapshot>,
    m: &NetMeasurement,
) -> IfaceBytes {
    let name = m.interface.clone()?;
    let after = all.snapshot().ok()?;
    let d = all.delta(before?, &after);
    let s = d.interface(&name)?;
    Some((name, s.tx_bytes, s.rx_bytes))
}

fn one_test(cfg: &ClientConfig, run: &Run<'_>, json: bool) -> Result<Tested, String> {
    // The interface is known once connected; sample every interface and keep the test's.
    let all = counters::NetDevSampler::new(SysRoot::system());
    let before = all.snapshot().ok();
    let sides = Mutex::new(None);
    let m = run
        .engine(net::NetRun::Client(cfg.clone()), |p| {
            on_progress(p, json, false, run, &sides)
        })
        .map_err(|e| e.to_string())?;
    let iface = iface_bytes(&all, before.as_ref(), &m);
    let counters = stop_sides(sides, &m);
    Ok((m, iface, counters))
}

/// `--find-rate`: [`net::find_rate::find_rate`] with a real UDP test as its trial: upward
/// from -b (or 1 Gbit/s per stream) to the path's ceiling or by doubling, then bisection; the
/// answer is what the best trial received.
fn find_rate(
    cfg: &ClientConfig,
    threshold: f64,
    run: &Run<'_>,
    json: bool,
) -> Result<(Tested, Option<FindRate>), String> {
    use net::find_rate::{Plan, Trial};
    // Bounded: at most 14 tests.
    let plan = Plan::for_test(cfg.test.bitrate_bps, cfg.test.streams, threshold);
    let mut tested: Vec<Tested> = Vec::new();
    // The link facts of the test's interface, read once.
    let mut facts: Option<Option<LinkFacts>> = None;
    let found = net::find_rate::find_rate(&plan, |offered| -> Result<Option<Trial>, String> {
        if run.is_stopped() {
            return Ok(None);
        }
        let mut c = cfg.clone();
        c.test.bitrate_bps = Some(net::find_rate::stream_rate(offered, cfg.test.streams));
        let t = one_test(&c, run, true)?;
        if t.0.stopped_by == NetStop::Interrupted {
            return Ok(None);
        }
        let flow = t.0.flows().first().copied().unwrap_or(Flow::ClientToServer);
        let s = t.0.summary(flow);
        let f = facts.get_or_insert_with(|| {
            t.0.interface
                .as_deref()
                .and_then(|i| probe::path::net_link_facts(&SysRoot::system(), i).0)
        });
        let ceiling_bps = f
            .as_ref()
            .and_then(|f| report::kinds::net::flow_ceiling(f, &t.0, flow).ok())
            .map(|c| c.goodput_bps * 8.0);
        let trial = Trial {
            offered_bps: offered,
            received_bps: s.receiver_bps.unwrap_or(0.0),
            loss_percent: s.loss_percent().unwrap_or(100.0),
            ceiling_bps,
        };
        if !json {
            crate::console::info(report::kinds::net::trial_line(
                trial.offered_bps,
                trial.received_bps,
                trial.loss_percent,
            ));
        }
        tested.push(t);
        Ok(Some(trial))
    })?;
    let fr = FindRate {
        threshold_percent: threshold,
        rate_bps: found.rate_bps(),
        steps: found
            .trials
            .iter()
            .map(|t| RateStep {
                offered_bps: t.offered_bps,
                received_bps: t.received_bps,
                loss_percent: t.loss_percent,
            })
            .collect(),
    };
    // The document keeps the best trial's test (the last one when none held).
    let keep = found.best.unwrap_or(tested.len().saturating_sub(1));
    if keep >= tested.len() {
        return Err("--find-rate: no test completed".to_string());
    }
    Ok((tested.swap_remove(keep), Some(fr)))
}

/// A test's document, and how it ended.
fn ended(
    (m, iface, counters): Tested,
    fr: Option<FindRate>,
    mut notes: Vec<String>,
    run: &Run<'_>,
) -> Ended<NetDocument> {
    let interrupted = m.stopped_by == NetStop::Interrupted;
    let (facts, more) = match &m.interface {
        Some(i) => probe::path::net_link_facts(&SysRoot::system(), i),
        None => (None, Vec::new()),
    };
    notes.extend(more);
    let mut r = NetDocument::new(m, facts, iface, notes);
    if fr.is_some() {
        r.find_rate = fr;
    }
    r.counters = counters;
    // Stopped here (Ctrl-C, SIGTERM), as every benchmark says it. A test the peer stopped
    // (its Ctrl-C or SIGTERM, which it does not name): no signal came here, so not 128 + a
    // signal: the test did not run its course, a failure (a server serves on).
    let signalled = interrupted && run.signal().is_some();
    Ended {
        doc: r,
        measured: true,
        stopped: signalled
            .then(|| Stopped::Interrupted("the results above are those measured before it".into())),
        failed: interrupted && !signalled,
    }
}

/// The text of a key or users file of iperf3's authentication (`what` it is), read as
/// every input a user names is ([`report::input`]), or the sentence naming it.
fn read_auth_file(path: &std::path::Path, what: &str) -> Result<String, String> {
    report::input::read_text(path, net::auth::MAX_FILE).map_err(|e| match e {
        report::input::InputError::Io(e) => {
            format!("cannot read the {what} {}: {e}", path.display())
        }
        e => format!(
            "the {what} {}",
            e.describe(path, &format!("the {what} file"), net::auth::MAX_FILE)
        ),
    })
}

/// The client's credentials (`--username`, `--rsa-public-key-path`), the password from
/// IPERF3_PASSWORD or, on a terminal, asked for as iperf3 asks (iperf_getpass).
fn client_auth(a: &NetArgs) -> Result<Option<Arc<net::auth::ClientAuth>>, String> {
    let (Some(user), Some(key)) = (&a.username, &a.rsa_public_key_path) else {
        return Ok(None);
    };
    if let Some(why) = net::auth::unavailable() {
        return Err(why.to_string());
    }
    let password = match std::env::var(net::auth::PASSWORD_ENV) {
        Ok(p) => p,
        Err(_) => crate::console::ask_password("Password: ").map_err(|e| {
            format!(
                "--username needs a password: set {} or run on a terminal ({e})",
                net::auth::PASSWORD_ENV
            )
        })?,
    };
    let pem = read_auth_file(key, "RSA public key")?;
    net::auth::ClientAuth::new(key, &pem, user, &password).map(|a| Some(Arc::new(a)))
}

fn run_server(
    a: &NetArgs,
    output: Output,
    run: &Run<'_>,
    interval: f64,
) -> anyhow::Result<ExitCode> {
    let auth = match (&a.rsa_private_key_path, &a.authorized_users_path) {
        (Some(key), Some(users)) => {
            if let Some(why) = net::auth::unavailable() {
                return Err(crate::console::usage(why));
            }
            let users = users.clone();
            let read_users: net::auth::ReadUsers =
                Arc::new(move || read_auth_file(&users, "authorized users file"));
            let made = read_auth_file(key, "RSA private key").and_then(|pem| {
                net::auth::ServerAuth::new(key, &pem, read_users, a.time_skew_threshold)
            });
            match made {
                Ok(x) => Some(x),
                Err(msg) => {
                    return Err(crate::console::usage(msg));
                }
            }
        }
        _ => None,
    };
    // 128 + the signal that stopped this server (130 for Ctrl-C, 143 for SIGTERM).
    let stopped = || run.exit_code();
    let server = Server::bind(ServerConfig {
        port: a.port,
        bind: a.bind,
        interval: Duration::from_secs_f64(if interval == 0.0 { 3600.0 } else { interval }),
        auth,
        clients: a.clients.unwrap_or(1),
    })
    .map_err(|e| anyhow::Error::msg(e.to_string()))?;
    crate::console::info(format_args!(
        "serving iperf3 tests on port {} (Ctrl-C to stop)",
        server.local_addr().map_or(a.port, |s| s.port())
    ));
    if let Some(w) = a.keep.textfile_dir.as_deref().and_then(|d| {
        let name = report::kinds::textfile_name(report::document::DocumentKind::Net);
        crate::output::textfile_dir_warning(d, &name)
    }) {
        crate::console::warn(w);
    }
    let all = counters::NetDevSampler::new(SysRoot::system());
    loop {
        // The interface's counters from the moment the client connected: what it carried
        // while the server waited is no test's.
        let before = Mutex::new(None);
        let sides = Mutex::new(None);
        let served = run.engine(net::NetRun::ServeOne(&server), |p| {
            if let (Event::Connected { .. }, Ok(mut b)) = (&p.event, before.lock()) {
                *b = all.snapshot().ok();
            }
            on_progress(p, output != Output::Text, true, run, &sides)
        });
        let before = before.into_inner().ok().flatten();
        match served {
            Err(net::NetError::Interrupted) => return Ok(stopped()),
            Ok(m) => {
                // Overlapping tests share the interface: its counters are no one test's.
                let iface = (!server.overlapping())
                    .then(|| iface_bytes(&all, before.as_ref(), &m))
                    .flatten();
                let counters = stop_sides(sides, &m);
                let code = run.finish(a, ended((m, iface, counters), None, Vec::new(), run));
                // After a stop, every test's result is shown before the server ends.
                if a.one_off {
                    return code;
                } else if !run.is_stopped() {
                    // Nothing about one test's result ends the server (other tests may run).
                    if let Err(e) = code {
                        crate::console::warn(format_args!(
                            "the result of the test was not kept in full: {}",
                            crate::console::sentence(&e)
                        ));
                    }
                } else if server.idle() {
                    return code.and(Ok(stopped()));
                }
            }
            Err(e) => {
                crate::console::warn(format_args!("the test ended early: {e}"));
                if a.one_off {
                    return Ok(ExitCode::from(1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use model::net::{Direction, Protocol};

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        a: NetArgs,
    }

    fn parse(line: &str) -> Result<NetArgs, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(line.split_whitespace())).map(|t| t.a)
    }

    #[test]
    fn pasted_iperf3_lines() {
        let a = parse("iperf3 -c 10.0.0.2 -u -b 100M -l 1448 -P 2 -R -t 5 -O 1 -i 0.5").unwrap();
        assert_eq!(a.host, vec!["iperf3".to_string()]);
        let (t, notes) = config_of(&flags(&a)).unwrap();
        assert_eq!(t.protocol, Protocol::Udp);
        assert_eq!(t.direction, Direction::Reverse);
        assert_eq!((t.streams, t.duration_s, t.omit_s, t.len), (2, 5, 1, 1448));
        assert_eq!(t.bitrate_bps, Some(100_000_000));
        assert!(notes.is_empty());
        let (t, _) = config_of(&flags(&parse("h -w 4M -l 128K --bidir -Z").unwrap())).unwrap();
        assert_eq!((t.window, t.len), (Some(4 << 20), 131_072));
        assert_eq!(t.direction, Direction::Bidir);
        assert!(t.zerocopy);
        // UDP without -b: iperf3's 1 Mbit/s (1024 x 1024 bit/s).
        let (t, _) = config_of(&flags(&parse("h -u").unwrap())).unwrap();
        assert_eq!(t.bitrate_bps, Some(1_048_576));
        let (t, notes) = config_of(&flags(&parse("h -u -b 0").unwrap())).unwrap();
        assert_eq!(t.bitrate_bps, None);
        assert!(notes[0].contains("unlimited"));
    }

    #[test]
    fn bad_values_get_a_sentence() {
        let e = parse("h -P 0").unwrap_err().to_string();
        assert!(e.contains("0"), "{e}");
        let e = parse("h -t -1").unwrap_err().to_string();
        assert!(e.contains("not a test length") || e.contains("-1"), "{e}");
        let err = |l: &str| config_of(&flags(&parse(l).unwrap())).unwrap_err();
        assert!(err("h -b fast").contains("not a number"));
        assert!(err("h -u -l 4").contains("give 12 to 65507"));
        assert!(err("h --find-rate").contains("add -u"));
        assert!(err("h -i 100").contains("0.1 to 60"));
    }
}
