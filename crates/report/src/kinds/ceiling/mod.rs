//! `headroom ceiling`'s document and text: the theoretical ceilings of PCIe, USB, SATA,
//! Ethernet and eMMC/SD links, as tables (units in every header, the assumption set named) or
//! one JSON document. The arithmetic lives in `model::ceiling`; cli parses the arguments into
//! the queries below and prints what they make.

mod text;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::summary::Summary;
use model::ceiling::pcie::{self, AssumptionSet, CompletionSize, PcieCeiling, TlpParams};
use model::ceiling::usb_endpoint::{Reserved, UsbEndpoint};
use model::ceiling::{eth, mmc, sata, usb};
use model::pcie::{LinkState, PcieGen};
use model::units::{BitsPerSec, RateUnit};
use serde::{Deserialize, Serialize};

/// What `headroom ceiling LINK --json` writes (the envelope aside): the link, then its
/// ceilings. One type written by cli and read back by report, compare and history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "link", rename_all = "lowercase")]
pub enum CeilingDocument {
    Pcie(PcieCeilings),
    Usb(UsbCeilings),
    Sata(SataCeilings),
    Eth(EthCeilings),
    Mmc(MmcCeilings),
}

/// The unit of the `..._bps` fields of PCIe, USB, SATA and eMMC ceilings: always "B/s"
/// (`--unit` only changes the printed tables). Ethernet has none: its fields name their unit
/// (`rate_bits_per_sec`, `goodput_bytes_per_sec`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ByteRate {
    #[default]
    #[serde(rename = "B/s")]
    BytesPerSec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcieCeilings {
    pub rate_unit: ByteRate,
    pub ceilings: Vec<PcieCeiling>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbRow {
    pub speed: usb::UsbSpeed,
    pub label: String,
    #[serde(rename = "signalling_mbits_per_sec", alias = "signalling_mbps")]
    pub signalling_mbps: f64,
    pub lanes: u32,
    pub coding: String,
    #[serde(rename = "raw_bytes_per_sec", alias = "raw_bps")]
    pub raw_bps: f64,
    pub transfers: Vec<usb::TransferCeiling>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbCeilings {
    pub rate_unit: ByteRate,
    pub speeds: Vec<UsbRow>,
    pub guide_table_1_2: Vec<usb::GuideFigure>,
    /// One endpoint described by its descriptors' fields (`--max-packet`...), and what it
    /// reserves at each speed asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<EndpointCeilings>,
}

/// What one periodic endpoint reserves at each speed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointCeilings {
    pub endpoint: UsbEndpoint,
    pub speeds: Vec<EndpointAtSpeed>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointAtSpeed {
    pub speed: usb::UsbSpeed,
    /// `None`: this speed has no such endpoint (USB4 carries a USB 3.x speed).
    pub reserved: Option<Reserved>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SataCeilings {
    pub rate_unit: ByteRate,
    pub links: Vec<sata::SataCeiling>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EthCeilings {
    pub ceilings: Vec<eth::EthCeiling>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmcCeilings {
    pub rate_unit: ByteRate,
    pub modes: Vec<mmc::MmcCeiling>,
}

/// A rate in `unit` with at least four significant digits ("984.6", "53.25", "0.0008").
fn num(bytes_per_sec: f64, unit: RateUnit) -> String {
    let v = unit.of(bytes_per_sec);
    let magnitude = if v > 0.0 { v.log10().floor() as i32 } else { 0 };
    let decimals = (3 - magnitude).clamp(1, 6) as usize;
    format!("{v:.decimals$}")
}

fn opt_num(v: Option<f64>, unit: RateUnit) -> String {
    v.map_or_else(|| "-".to_string(), |v| num(v, unit))
}

/// A table being built: its header and rows, written by the one text table writer
/// ([`crate::terminal::table_aligned`]) with the first `left` columns aligned left and the rest
/// (numbers) right; the header is plain, as `headroom ceiling` has always printed it.
struct Rows {
    rows: Vec<Vec<String>>,
    left: usize,
    last_left: bool,
}

impl Rows {
    fn new(header: Vec<String>, left: usize) -> Self {
        Rows {
            rows: vec![header],
            left,
            last_left: false,
        }
    }

    /// Left-align the last column too (a column of sentences).
    fn last_column_left(mut self) -> Self {
        self.last_left = true;
        self
    }

    fn row(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn render(&self) -> String {
        let columns = self.rows.first().map_or(0, Vec::len);
        let mut out = String::new();
        crate::terminal::table_aligned(
            &mut out,
            &self.rows,
            0,
            |i| i < self.left || (self.last_left && i + 1 == columns),
            &crate::terminal::Style::new(false),
        );
        out
    }
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

// ---- PCIe ----

/// The PCIe tables asked for: every generation, width and MPS under each assumption set.
#[derive(Clone, Debug, PartialEq)]
pub struct PcieQuery {
    pub gens: Vec<PcieGen>,
    pub lanes: Vec<u8>,
    pub mps: Vec<u16>,
    pub sets: Vec<TlpParams>,
}

impl PcieQuery {
    fn ceiling(gen: PcieGen, width: u8, set: &TlpParams, mps: u16) -> PcieCeiling {
        pcie::link_ceiling(LinkState::new(gen, width), &set.with_mps(mps))
    }

    /// Every ceiling, set by set, generation by generation, MPS by MPS, width by width.
    pub fn document(&self) -> PcieCeilings {
        let mut ceilings = Vec::new();
        for set in &self.sets {
            for &gen in &self.gens {
                for &mps in &self.mps {
                    for &width in &self.lanes {
                        ceilings.push(Self::ceiling(gen, width, set, mps));
                    }
                }
            }
        }
        PcieCeilings {
            rate_unit: ByteRate::BytesPerSec,
            ceilings,
        }
    }
}

fn unit_definition(unit: RateUnit) -> &'static str {
    match unit {
        RateUnit::MBps => "10^6 B/s",
        RateUnit::MiBps => "2^20 B/s",
    }
}

fn set_caption(set: &TlpParams, gen: PcieGen) -> String {
    let o = pcie::TlpOverhead::new(gen, set.header_bytes, set.ecrc);
    let parts = format!(
        "{} B per TLP = header {} + ECRC {} + LCRC {} + sequence {} + framing {}",
        o.total(),
        o.header,
        o.ecrc,
        o.lcrc,
        o.sequence,
        o.framing
    );
    match set.set {
        AssumptionSet::Seed => {
            format!("the Rockchip PCIe guide's 28 B assumption set (section 2.2), {parts}")
        }
        AssumptionSet::Default => format!(
            "default (no ECRC, {}-bit addresses, {} completions), {parts}",
            if set.header_bytes == 16 { 64 } else { 32 },
            match set.completion_size {
                CompletionSize::Mps => "MPS-sized",
                CompletionSize::Rcb => "RCB-split",
            }
        ),
    }
}

// ---- USB ----

impl UsbCeilings {
    /// Each speed's signalling, coding and the ceiling of each transfer type, and the
    /// Rockchip guide's table 1-2 checked.
    pub fn new(speeds: &[usb::UsbSpeed], transfers: &[usb::TransferType]) -> UsbCeilings {
        let speeds = speeds
            .iter()
            .map(|&speed| {
                let (per_lane, lanes) = speed.signalling();
                UsbRow {
                    speed,
                    label: speed.label().to_string(),
                    signalling_mbps: per_lane * f64::from(lanes),
                    lanes,
                    coding: speed.line_coding().label().to_string(),
                    raw_bps: usb::raw_bps(speed),
                    transfers: transfers
                        .iter()
                        .map(|&t| usb::transfer_ceiling(speed, t))
                        .collect(),
                }
            })
            .collect();
        UsbCeilings {
            rate_unit: ByteRate::BytesPerSec,
            speeds,
            guide_table_1_2: usb::guide_table_1_2(),
            endpoint: None,
        }
    }

    /// The same, with what `endpoint` reserves at each of its speeds.
    pub fn with_endpoint(mut self, endpoint: UsbEndpoint) -> UsbCeilings {
        let speeds = self
            .speeds
            .iter()
            .map(|r| EndpointAtSpeed {
                speed: r.speed,
                reserved: model::ceiling::usb_endpoint::reserved(r.speed, &endpoint),
            })
            .collect();
        self.endpoint = Some(EndpointCeilings { endpoint, speeds });
        self
    }
}

// ---- SATA ----

impl SataCeilings {
    /// The links of `rates` (Gb/s) SATA has.
    pub fn new(rates: &[f64]) -> SataCeilings {
        SataCeilings {
            rate_unit: ByteRate::BytesPerSec,
            links: rates
                .iter()
                .filter_map(|&r| sata::link_ceiling(r))
                .collect(),
        }
    }
}

// ---- Ethernet ----

/// The Ethernet goodputs asked for: each rate, IP version and transport.
#[derive(Clone, Debug, PartialEq)]
pub struct EthQuery {
    pub rates: Vec<BitsPerSec>,
    /// IP MTU, bytes.
    pub mtu: u32,
    pub ips: Vec<eth::IpVersion>,
    /// UDP (else TCP with and without timestamps).
    pub udp: bool,
    /// The UDP payload; `None`: the largest that fits the MTU unfragmented.
    pub len: Option<u32>,
}

impl EthCeilings {
    /// Every ceiling of `a`; parameters that make no packet are the error, which names what
    /// is allowed.
    pub fn new(a: &EthQuery) -> Result<EthCeilings, eth::EthError> {
        let transports: Vec<eth::Transport> = if a.udp {
            // The payload is chosen per IP version below when --len is not given.
            vec![eth::Transport::Udp {
                payload: a.len.unwrap_or(0),
            }]
        } else {
            vec![
                eth::Transport::Tcp { timestamps: false },
                eth::Transport::Tcp { timestamps: true },
            ]
        };
        let mut ceilings = Vec::new();
        for &rate in &a.rates {
            for &ip in &a.ips {
                for &transport in &transports {
                    let transport = match transport {
                        eth::Transport::Udp { .. } if a.len.is_none() => eth::Transport::Udp {
                            payload: eth::udp_payload_filling(a.mtu, ip).unwrap_or(0),
                        },
                        t => t,
                    };
                    let params = eth::EthParams {
                        rate,
                        mtu: a.mtu,
                        ip,
                        transport,
                    };
                    ceilings.push(eth::goodput(&params)?);
                }
            }
        }
        Ok(EthCeilings { ceilings })
    }
}

// ---- eMMC / SD ----

impl MmcCeilings {
    /// Every eMMC and SD bus mode.
    pub fn all() -> MmcCeilings {
        MmcCeilings {
            rate_unit: ByteRate::BytesPerSec,
            modes: mmc::MmcMode::ALL.iter().map(|&m| mmc::ceiling(m)).collect(),
        }
    }
}

// ---- what a report shows ----

/// The ceilings as tables for every renderer (MB/s = 10^6 B/s), one row per ceiling the
/// document holds, with the parameters that make it.
pub(crate) fn summarize(
    doc: &crate::document::Document,
    origin: &str,
    s: &mut crate::summary::Summary,
) -> Result<(), crate::document::DocumentError> {
    use crate::summary::counted_table;
    use crate::table::mb;
    use model::units::MB;
    let rate = |bps: f64| mb(bps / MB);
    let c = <CeilingDocument as super::KindDocument>::read(doc, origin)?;
    let unit = " (MB/s = 10^6 B/s, per direction)";
    match c {
        CeilingDocument::Pcie(p) => {
            let rows = p
                .ceilings
                .iter()
                .map(|c| {
                    vec![
                        c.link.to_string(),
                        c.params.set.label().to_string(),
                        c.params.mps.to_string(),
                        c.params.mrrs.to_string(),
                        rate(c.raw_bps),
                        rate(c.tlp_write_bps),
                        rate(c.tlp_read_bps),
                        rate(c.effective_write_bps),
                        rate(c.effective_read_bps),
                        format!("{:.1} %", 100.0 * c.read_request_share),
                    ]
                })
                .collect();
            s.list(counted_table(
                "PCIe",
                ("ceiling", "ceilings"),
                unit,
                &[
                    ("Link", false),
                    ("Assumptions", false),
                    ("MPS", true),
                    ("MRRS", true),
                    ("Raw", true),
                    ("TLP write", true),
                    ("TLP read", true),
                    ("Effective write", true),
                    ("Effective read", true),
                    ("Read requests", true),
                ],
                rows,
            ));
        }
        CeilingDocument::Usb(u) => {
            let mut rows = Vec::new();
            for r in &u.speeds {
                for t in &r.transfers {
                    rows.push(vec![
                        r.label.clone(),
                        format!("{} Mb/s", r.signalling_mbps),
                        r.coding.clone(),
                        rate(r.raw_bps),
                        t.transfer.label().to_string(),
                        t.bytes_per_second.map_or_else(crate::table::dash, rate),
                        t.basis.to_string(),
                    ]);
                }
            }
            s.list(counted_table(
                "USB",
                ("ceiling", "ceilings"),
                " (MB/s = 10^6 B/s, per endpoint and direction)",
                &[
                    ("Speed", false),
                    ("Signalling", false),
                    ("Coding", false),
                    ("Raw", true),
                    ("Transfer", false),
                    ("Ceiling", true),
                    ("Basis", false),
                ],
                rows,
            ));
            let rows = u
                .guide_table_1_2
                .iter()
                .map(|f| {
                    vec![
                        f.speed.label().to_string(),
                        f.transfer.label().to_string(),
                        f.printed.to_string(),
                        rate(f.bytes_per_second),
                        f.note.clone(),
                    ]
                })
                .collect();
            s.list(counted_table(
                "Rockchip USB guide, table 1-2",
                ("figure", "figures"),
                " (printed as MBps), checked",
                &[
                    ("Speed", false),
                    ("Transfer", false),
                    ("Guide", true),
                    ("Ceiling (MB/s)", true),
                    ("Unit of the guide", false),
                ],
                rows,
            ));
        }
        CeilingDocument::Sata(t) => {
            let rows = t
                .links
                .iter()
                .map(|c| {
                    vec![
                        format!("SATA {} Gb/s", c.gbps),
                        c.coding.to_string(),
                        rate(c.raw_bps),
                        rate(c.data_bps),
                    ]
                })
                .collect();
            s.list(counted_table(
                "SATA",
                ("link", "links"),
                unit,
                &[
                    ("Link", false),
                    ("Coding", false),
                    ("Raw", true),
                    ("Data", true),
                ],
                rows,
            ));
        }
        CeilingDocument::Eth(e) => {
            let rows = e
                .ceilings
                .iter()
                .map(|c| {
                    let proto = match c.params.transport {
                        eth::Transport::Tcp { timestamps: true } => "TCP, timestamps",
                        eth::Transport::Tcp { timestamps: false } => "TCP",
                        eth::Transport::Udp { .. } => "UDP",
                    };
                    let ip = match c.params.ip {
                        eth::IpVersion::V4 => "IPv4",
                        eth::IpVersion::V6 => "IPv6",
                    };
                    vec![
                        eth::rate_name(c.params.rate).unwrap_or("?").to_string(),
                        format!("{proto} / {ip}"),
                        c.params.mtu.to_string(),
                        c.payload_bytes.to_string(),
                        c.frames.to_string(),
                        c.wire_bytes.to_string(),
                        rate(c.raw.0),
                        rate(c.goodput.0),
                    ]
                })
                .collect();
            s.list(counted_table(
                "Ethernet",
                ("ceiling", "ceilings"),
                unit,
                &[
                    ("Rate", false),
                    ("Protocol", false),
                    ("MTU", true),
                    ("Payload (B)", true),
                    ("Frames", true),
                    ("Wire (B)", true),
                    ("Raw", true),
                    ("Goodput", true),
                ],
                rows,
            ));
        }
        CeilingDocument::Mmc(m) => {
            let rows = m
                .modes
                .iter()
                .map(|c| {
                    vec![
                        c.mode.label().to_string(),
                        format!("{}", c.clock_mhz),
                        c.bus_width.to_string(),
                        if c.ddr { "DDR" } else { "SDR" }.to_string(),
                        rate(c.bus_bps),
                        rate(c.block_bps),
                    ]
                })
                .collect();
            s.list(counted_table(
                "eMMC and SD",
                ("mode", "modes"),
                unit,
                &[
                    ("Mode", false),
                    ("Clock (MHz)", true),
                    ("Bus bits", true),
                    ("Edges", false),
                    ("Bus", true),
                    ("Blocks", true),
                ],
                rows,
            ));
        }
    }
    Ok(())
}

/// The ceilings as board labs take them ([`crate::export::cases`]): one measured figure per link (or
/// mode, speed and transfer) and ceiling the document holds, in MB/s (10^6 B/s), named by
/// the link and the assumptions that make it (`ceiling.pcie.8GT-x1.rockchip.mps128.mrrs512.
/// effective-read`). A USB transfer type the speed does not allow is a skip with the reason.
/// The Rockchip guide's table 1-2 is a check of the guide, not a ceiling: not a case.
pub(crate) fn cases(
    doc: &crate::document::Document,
    origin: &str,
) -> Result<Vec<crate::export::cases::Case>, crate::document::DocumentError> {
    use crate::export::cases::Case;
    use model::units::MB;
    let c = <CeilingDocument as super::KindDocument>::read(doc, origin)?;
    let path = |parts: &[&str]| crate::export::cases::path("ceiling", parts);
    let mut out = Vec::new();
    let figure =
        |parts: &[&str], bytes_per_sec: f64| Case::figure(path(parts), bytes_per_sec / MB, "MB/s");
    match &c {
        CeilingDocument::Pcie(p) => {
            for c in &p.ceilings {
                let link = format!("{}GT-x{}", c.gts, c.link.width);
                let mps = format!("mps{}", c.params.mps);
                let mrrs = format!("mrrs{}", c.params.mrrs);
                let at = ["pcie", &link, c.params.set.label(), &mps, &mrrs];
                for (what, bps) in [
                    ("raw", c.raw_bps),
                    ("effective-write", c.effective_write_bps),
                    ("effective-read", c.effective_read_bps),
                ] {
                    let mut parts = at.to_vec();
                    parts.push(what);
                    out.push(figure(&parts, bps));
                }
            }
        }
        CeilingDocument::Usb(u) => {
            for r in &u.speeds {
                for t in &r.transfers {
                    let parts = ["usb", r.label.as_str(), t.transfer.label()];
                    match t.bytes_per_second {
                        Some(bps) => out.push(figure(&parts, bps)),
                        None => out.push(Case::skip(path(&parts), t.basis.to_string())),
                    }
                }
            }
        }
        CeilingDocument::Sata(t) => {
            for l in &t.links {
                let link = format!("{}Gbps", l.gbps);
                out.push(figure(&["sata", &link, "raw"], l.raw_bps));
                out.push(figure(&["sata", &link, "data"], l.data_bps));
            }
        }
        CeilingDocument::Eth(e) => {
            for c in &e.ceilings {
                let rate = eth::rate_name(c.params.rate).unwrap_or("other-rate");
                let transport = match c.params.transport {
                    eth::Transport::Tcp { timestamps: true } => "tcp-timestamps".to_string(),
                    eth::Transport::Tcp { timestamps: false } => "tcp".to_string(),
                    eth::Transport::Udp { payload } => format!("udp-{payload}B"),
                };
                let ip = match c.params.ip {
                    eth::IpVersion::V4 => "ipv4",
                    eth::IpVersion::V6 => "ipv6",
                };
                let mtu = format!("mtu{}", c.params.mtu);
                out.push(figure(&["eth", rate, &transport, ip, &mtu, "raw"], c.raw.0));
                out.push(figure(
                    &["eth", rate, &transport, ip, &mtu, "goodput"],
                    c.goodput.0,
                ));
            }
        }
        CeilingDocument::Mmc(m) => {
            for c in &m.modes {
                out.push(figure(&["mmc", c.mode.label(), "bus"], c.bus_bps));
                out.push(figure(&["mmc", c.mode.label(), "blocks"], c.block_bps));
            }
        }
    }
    Ok(out)
}

/// `headroom ceiling` as every report reads it.
pub struct CeilingKind;

impl super::Kind for CeilingKind {
    fn kind(&self) -> DocumentKind {
        <CeilingDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["link"]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s)
    }

    /// Each configuration's ceiling.
    fn own_cases(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        cases(doc, origin)
    }
}

impl super::KindDocument for CeilingDocument {
    const KIND: DocumentKind = DocumentKind::Ceiling;

    /// A document read back: its summary. `headroom ceiling` prints the tables its query
    /// shapes (the generations, lanes, transfers or frame sizes asked for, in `--unit`).
    fn text(&self, how: &super::Text<'_>) -> String {
        super::summary_text(self, how)
    }
}
