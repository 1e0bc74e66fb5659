//! `headroom ceiling`'s document and text: the theoretical ceilings of PCIe, USB, SATA,
//! Ethernet and eMMC/SD links, as tables (units in every header, the assumption set named) or
//! one JSON document. The arithmetic lives in `model::ceiling`; cli parses the arguments into
//! the queries below and prints what they make.

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::summary::Summary;
use model::ceiling::pcie::{self, AssumptionSet, CompletionSize, PcieCeiling, TlpParams};
use model::ceiling::usb_endpoint::{Reserved, UsbEndpoint};
use model::ceiling::{eth, mmc, sata, usb};
use model::pcie::{LinkState, PcieGen};
use model::units::{BitsPerSec, RateUnit};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

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

    /// The tables: raw ceilings shaped like the seed's table 2.1, then one table per
    /// assumption set and generation.
    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let a = self;
        let sets = &self.sets;
        let ceiling = Self::ceiling;
        let mut out = String::new();
        let u = unit.label();
        let width_header = |t: &mut Vec<String>| {
            for w in &a.lanes {
                t.push(format!("x{w} {u}"));
            }
        };

        // Raw ceilings, shaped like the seed's table 2.1.
        let mut header = vec![s("generation"), s("coding"), s("rate")];
        width_header(&mut header);
        let mut raw = Rows::new(header, 3);
        for &gen in &a.gens {
            let mut row = vec![
                format!("Gen {}", gen.number()),
                s(pcie::coding_label(gen)),
                format!("{gen}"),
            ];
            for &w in &a.lanes {
                row.push(num(pcie::raw_bps(LinkState::new(gen, w)), unit));
            }
            raw.row(row);
        }
        writeln!(
            out,
            "PCIe raw ceiling per direction (after line coding), {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&raw.render());

        for set in sets {
            for &gen in &a.gens {
                writeln!(out)?;
                writeln!(
                    out,
                    "PCIe {} (Gen {}) per direction, {u}; assumptions: {}",
                    gen,
                    gen.number(),
                    set_caption(set, gen)
                )?;
                let mut header = vec![s("ceiling")];
                width_header(&mut header);
                let mut t = Rows::new(header, 1);
                let mut row = vec![format!("raw (after {})", pcie::coding_label(gen))];
                for &w in &a.lanes {
                    row.push(num(pcie::raw_bps(LinkState::new(gen, w)), unit));
                }
                t.row(row);
                type Pick = fn(&PcieCeiling) -> f64;
                let kinds: [(&str, Pick); 4] = [
                    ("TLP write", |c| c.tlp_write_bps),
                    ("TLP read", |c| c.tlp_read_bps),
                    ("effective write", |c| c.effective_write_bps),
                    ("effective read", |c| c.effective_read_bps),
                ];
                for (label, pick) in kinds {
                    for &mps in &a.mps {
                        let first = ceiling(gen, a.lanes[0], set, mps);
                        let mut row = vec![if label.ends_with("read") {
                            format!(
                                "{label}, MPS {mps}, MRRS {}, completions {} B",
                                set.mrrs, first.completion_payload
                            )
                        } else {
                            let per_tlp = first.write_overhead.total();
                            format!("{label}, MPS {mps} ({mps}/{} B)", u32::from(mps) + per_tlp)
                        }];
                        for &w in &a.lanes {
                            row.push(num(pick(&ceiling(gen, w, set, mps)), unit));
                        }
                        t.row(row);
                    }
                }
                out.push_str(&t.render());
                // The read requests ride the other direction; their share of it does not depend
                // on the width, so one sentence per table.
                let shares: Vec<String> = a
                    .mps
                    .iter()
                    .map(|&mps| {
                        let c = ceiling(gen, a.lanes[0], set, mps);
                        format!("{:.1} % (MPS {mps})", 100.0 * c.read_request_share)
                    })
                    .collect();
                let request_bytes = ceiling(gen, a.lanes[0], set, a.mps[0])
                    .write_overhead
                    .total();
                writeln!(
                    out,
                    "reads: one {request_bytes} B request per {} B (MRRS) travels the other way and takes \
                     {} of that direction at the read ceiling.",
                    set.mrrs,
                    shares.join(", ")
                )?;
            }
        }
        if sets.iter().any(|p| p.set == AssumptionSet::Seed) && a.gens.contains(&PcieGen::Gen3) {
            writeln!(out)?;
            writeln!(
                out,
                "The Rockchip guide prints 807.8 MB/s (x1, MPS 128), 6.464 GB/s (x8, MPS 128) and \
                 7.1002 GB/s (x8, MPS 256); the exact values are 807.9 MB/s, 6.463 and 7.1003 GB/s \
                 (rounding slips in the guide)."
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "effective: both directions busy; Ack and UpdateFC DLLPs at the PCIe spec's latency \
             limits (tables 3-7..3-9, via pcie-bench), SKP ordered sets at their longest interval."
        )?;
        Ok(out)
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

    /// The table of `transfers` per speed, how each is derived, and the guide's figures.
    pub fn text(
        &self,
        transfers: &[usb::TransferType],
        unit: RateUnit,
    ) -> Result<String, std::fmt::Error> {
        let rows = &self.speeds;
        let guide = &self.guide_table_1_2;
        let mut out = String::new();
        let u = unit.label();
        let mut header = vec![s("speed"), s("signalling"), s("coding"), format!("raw {u}")];
        for t in transfers {
            header.push(format!("{} {u}", t.label()));
        }
        let mut table = Rows::new(header, 3);
        for r in rows {
            let mut row = vec![
                s(&r.label),
                format!("{} Mb/s", r.signalling_mbps),
                s(&r.coding),
                num(r.raw_bps, unit),
            ];
            for t in &r.transfers {
                row.push(opt_num(t.bytes_per_second, unit));
            }
            table.row(row);
        }
        writeln!(
            out,
            "USB ceilings per endpoint and direction, {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&table.render());
        writeln!(out)?;
        writeln!(out, "How each ceiling is derived:")?;
        for r in rows {
            match r.transfers.first() {
                Some(first) if r.transfers.iter().all(|t| t.basis == first.basis) => {
                    writeln!(out, "  {}: {}", r.label, first.basis)?;
                }
                _ => {
                    for t in &r.transfers {
                        writeln!(out, "  {} {}: {}", r.label, t.transfer.label(), t.basis)?;
                    }
                }
            }
        }

        if let Some(e) = &self.endpoint {
            endpoint_text(&mut out, e, unit)?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "Rockchip USB guide, table 1-2 \"Max Transfer Speed\" (printed as MBps), checked:"
        )?;
        let mut g = Rows::new(
            vec![
                s("speed"),
                s("transfer"),
                s("guide"),
                s("10^6 B/s"),
                s("2^20 B/s"),
                s("guide's unit"),
            ],
            2,
        )
        .last_column_left();
        for f in guide {
            g.row(vec![
                s(f.speed.label()),
                s(f.transfer.label()),
                s(&f.printed),
                num(f.bytes_per_second, RateUnit::MBps),
                num(f.bytes_per_second, RateUnit::MiBps),
                match f.mega {
                    Some(usb::Mega::Si) => s("10^6 (MB)"),
                    Some(usb::Mega::Binary) => s("2^20 (MiB)"),
                    None => f.note.clone(),
                },
            ]);
        }
        out.push_str(&g.render());
        Ok(out)
    }
}

/// What the described endpoint reserves at each speed, with its derivation.
fn endpoint_text(
    out: &mut String,
    e: &EndpointCeilings,
    unit: RateUnit,
) -> Result<(), std::fmt::Error> {
    let ep = &e.endpoint;
    let w = (u16::from(ep.additional_transactions) << 11) | ep.max_packet;
    writeln!(out)?;
    write!(
        out,
        "This {} endpoint (wMaxPacketSize 0x{w:04x}, bInterval {}",
        ep.transfer.label(),
        ep.interval
    )?;
    if let Some(c) = ep.ss_companion {
        write!(out, ", bMaxBurst {}", c.max_burst)?;
        if ep.transfer == usb::TransferType::Isochronous {
            write!(out, ", Mult {}", c.mult())?;
        }
        if c.bytes_per_interval > 0 {
            write!(out, ", wBytesPerInterval {}", c.bytes_per_interval)?;
        }
    }
    if let Some(b) = ep.ssp_bytes_per_interval {
        write!(out, ", dwBytesPerInterval {b}")?;
    }
    writeln!(out, ") reserves, {}:", unit.label())?;
    for at in &e.speeds {
        match &at.reserved {
            Some(r) => {
                write!(
                    out,
                    "  {}: {} ({})",
                    at.speed.label(),
                    num(r.bytes_per_second, unit),
                    r.basis
                )?;
                if let Some(o) = &r.out_of_spec {
                    write!(out, "; out of spec: {o}")?;
                }
                writeln!(out)?;
            }
            None => writeln!(out, "  {}: -", at.speed.label())?,
        }
    }
    Ok(())
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

    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("link"),
                s("coding"),
                format!("raw {u}"),
                format!("data {u}"),
            ],
            2,
        );
        for c in &self.links {
            t.row(vec![
                format!("SATA {} Gb/s", c.gbps),
                s(&c.coding),
                num(c.raw_bps, unit),
                num(c.data_bps, unit),
            ]);
        }
        writeln!(out, "SATA ceilings, {u} = {}:", unit_definition(unit))?;
        out.push_str(&t.render());
        writeln!(
            out,
            "data: 8192 B Data FISes less SOF, FIS type, CRC and EOF Dwords and an ALIGN pair per \
             256 Dwords; command FISes and handshakes not counted."
        )?;
        Ok(out)
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

    pub fn text(&self, a: &EthQuery, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("rate"),
                s("protocol"),
                s("payload B"),
                s("frames"),
                s("wire B"),
                format!("goodput {u}"),
                s("goodput Mbit/s"),
            ],
            2,
        );
        for c in &self.ceilings {
            let proto = match c.params.transport {
                eth::Transport::Tcp { timestamps: true } => "TCP, timestamps",
                eth::Transport::Tcp { timestamps: false } => "TCP",
                eth::Transport::Udp { .. } => "UDP",
            };
            let ip = match c.params.ip {
                eth::IpVersion::V4 => "IPv4",
                eth::IpVersion::V6 => "IPv6",
            };
            t.row(vec![
                s(eth::rate_name(c.params.rate).unwrap_or("?")),
                format!("{proto} / {ip}"),
                s(c.payload_bytes),
                s(c.frames),
                s(c.wire_bytes),
                num(c.goodput.0, unit),
                format!("{:.1}", c.goodput.to_bits().mbit()),
            ]);
        }
        writeln!(
            out,
            "Ethernet goodput ceilings at MTU {}, {u} = {}, Mbit/s = 10^6 bit/s:",
            a.mtu,
            unit_definition(unit)
        )?;
        out.push_str(&t.render());
        writeln!(
            out,
            "wire B: preamble+SFD 8, MAC header 14, FCS 4, inter-frame gap 12 per frame (IEEE 802.3); \
             IPv4 20, IPv6 40, TCP 20 (+12 timestamps), UDP 8."
        )?;
        if a.udp {
            match a.len {
                Some(len) => writeln!(out, "UDP datagrams of {len} B payload (--len).")?,
                None => writeln!(
                    out,
                    "UDP datagrams fill the MTU {}: payload = MTU - IP header - 8 B UDP header \
                     (--len sets another size).",
                    a.mtu
                )?,
            }
        }
        Ok(out)
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

    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("mode"),
                s("clock MHz"),
                s("bus bits"),
                s("edges"),
                format!("bus {u}"),
                format!("blocks {u}"),
            ],
            1,
        );
        for c in &self.modes {
            t.row(vec![
                s(c.mode.label()),
                format!("{}", c.clock_mhz),
                s(c.bus_width),
                s(if c.ddr { "2 (DDR)" } else { "1 (SDR)" }),
                num(c.bus_bps, unit),
                num(c.block_bps, unit),
            ]);
        }
        writeln!(
            out,
            "eMMC and SD bus ceilings, {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&t.render());
        writeln!(
            out,
            "blocks: 512 B blocks less start bit, CRC16 and end bit per data line; card access \
             time and write busy not counted."
        )?;
        Ok(out)
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
