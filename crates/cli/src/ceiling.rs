//! `headroom ceiling`: the theoretical ceilings of PCIe, USB, SATA, Ethernet and eMMC/SD links,
//! as tables (units in every header, the assumption set named) or one JSON document.
//!
//! The arithmetic lives in `model::ceiling`; this module parses the arguments, checks them
//! against the values the specs allow and lays out the tables.

use crate::output::GlobalArgs;
use clap::{Args, Subcommand, ValueEnum};
use model::ceiling::pcie::{self, AssumptionSet, CompletionSize, PcieCeiling, TlpParams};
use model::ceiling::{eth, mmc, sata, usb};
use model::pcie::{LinkState, PcieGen};
use model::units::{BitsPerSec, RateUnit};
use serde::Serialize;
use std::fmt::Write as _;
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
pub struct CeilingArgs {
    #[command(subcommand)]
    pub link: LinkKind,

    /// Unit of the printed rates: MB (10^6 B) or MiB (2^20 B) per second.
    #[arg(long, value_enum, default_value_t = Unit::Mb, global = true, ignore_case = true)]
    pub unit: Unit,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// 10^6 bytes (the MB of fio and of the vendors' performance guides).
    #[value(name = "MB")]
    Mb,
    /// 2^20 bytes.
    #[value(name = "MiB")]
    Mib,
}

impl Unit {
    fn rate(self) -> RateUnit {
        match self {
            Unit::Mb => RateUnit::MBps,
            Unit::Mib => RateUnit::MiBps,
        }
    }
}

#[derive(Subcommand, Debug, Clone)]
pub enum LinkKind {
    /// PCI Express: raw, TLP and effective ceilings per generation, width and MPS.
    Pcie(PcieArgs),
    /// USB: signalling rate, line coding and the ceiling of each transfer type.
    Usb(UsbArgs),
    /// SATA 1.5, 3 and 6 Gb/s.
    Sata(SataArgs),
    /// Ethernet goodput for TCP or UDP over IPv4 and IPv6.
    Eth(EthArgs),
    /// eMMC (HS52 to HS400) and SD (high speed to UHS-I SDR104) bus ceilings.
    Mmc(MmcArgs),
}

#[derive(Args, Debug, Clone)]
pub struct PcieArgs {
    /// Generations, 1 to 7 (2.5 to 128 GT/s), comma-separated.
    #[arg(long = "gen", value_delimiter = ',', value_parser = parse_gen, default_value = "1,2,3,4")]
    pub gens: Vec<PcieGen>,

    /// Link widths (x1 x2 x4 x8 x12 x16 x32), comma-separated, with or without the x.
    #[arg(long, value_delimiter = ',', value_parser = parse_width, default_value = "1,2,4,8")]
    pub lanes: Vec<u8>,

    /// Max_Payload_Size values in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_mps, default_value = "128,256")]
    pub mps: Vec<u16>,

    /// Max_Read_Request_Size in bytes.
    #[arg(long, value_parser = parse_mrrs, default_value = "512")]
    pub mrrs: u16,

    /// Read Completion Boundary in bytes (64 or 128).
    #[arg(long, value_parser = parse_rcb, default_value = "64")]
    pub rcb: u16,

    /// Address width of requests in the default set: 64 (4DW headers) or 32 (3DW).
    #[arg(long, value_parser = parse_addr, default_value = "64")]
    pub addr: u8,

    /// In the default set, assume completions split at every RCB (as many root complexes
    /// return them) instead of MPS-sized ones.
    #[arg(long)]
    pub rcb_split: bool,

    /// Which assumption set to print.
    #[arg(long, value_enum, default_value_t = SetChoice::Both)]
    pub assumptions: SetChoice,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetChoice {
    /// The Rockchip PCIe guide's 28 B per TLP (section 2.2).
    #[value(name = "rockchip", alias = "seed")]
    Seed,
    /// No ECRC, header per --addr, completions per --rcb-split.
    Default,
    Both,
}

#[derive(Args, Debug, Clone)]
pub struct UsbArgs {
    /// Speeds: names (low, full, high, gen1, gen2, gen1x2, gen2x2, usb4-20, usb4-40) or
    /// sysfs `speed` values in Mb/s (1.5, 12, 480, 5000, 10000, 20000, 40000).
    #[arg(long, value_delimiter = ',', value_parser = parse_usb_speed)]
    pub speed: Vec<usb::UsbSpeed>,

    /// Transfer types to print (control, interrupt, bulk, isochronous); all when absent.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub transfer: Vec<TransferArg>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferArg {
    Control,
    Interrupt,
    Bulk,
    #[value(alias = "iso")]
    Isochronous,
}

impl TransferArg {
    fn model(self) -> usb::TransferType {
        match self {
            TransferArg::Control => usb::TransferType::Control,
            TransferArg::Interrupt => usb::TransferType::Interrupt,
            TransferArg::Bulk => usb::TransferType::Bulk,
            TransferArg::Isochronous => usb::TransferType::Isochronous,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct SataArgs {
    /// Link rates in Gb/s (1.5, 3, 6), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_sata_rate, default_value = "1.5,3,6")]
    pub rate: Vec<f64>,
}

#[derive(Args, Debug, Clone)]
pub struct EthArgs {
    /// MAC rates (10M, 100M, 1G, 2.5G, 5G, 10G, 25G, 40G, 50G, 100G, 200G, 400G), or Mb/s as
    /// sysfs and ethtool print them (1000, 1000M, 1000Mb/s), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_eth_rate, default_value = "1G")]
    pub rate: Vec<BitsPerSec>,

    /// IP MTU in bytes.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,

    /// Transport protocol.
    #[arg(long, value_enum, default_value_t = Proto::Tcp)]
    pub proto: Proto,

    /// UDP datagram payload in bytes. Default: the largest that fits the MTU unfragmented
    /// (MTU - IP header - 8 B UDP header: 1472 B over IPv4 at MTU 1500, 8972 B at 9000), as
    /// iperf3 sizes UDP datagrams from the path's MSS; iperf2's fixed default is 1470.
    #[arg(long)]
    pub len: Option<u32>,

    /// IP version: 4, 6, or both.
    #[arg(long, value_enum, default_value_t = IpChoice::Both)]
    pub ip: IpChoice,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpChoice {
    #[value(name = "4")]
    V4,
    #[value(name = "6")]
    V6,
    Both,
}

#[derive(Args, Debug, Clone)]
pub struct MmcArgs {}

// ---- argument parsers: each names the allowed values ----

fn parse_number(s: &str, what: &str, allowed: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("`{s}` is not a {what}; use {allowed}"))
}

fn parse_gen(s: &str) -> Result<PcieGen, String> {
    let s = s
        .trim()
        .trim_start_matches(['g', 'G'])
        .trim_start_matches("en");
    let n = parse_number(s, "PCIe generation", "1, 2, 3, 4, 5, 6 or 7")?;
    pcie::check_generation(n).map_err(|e| e.to_string())
}

fn parse_width(s: &str) -> Result<u8, String> {
    let n = parse_number(
        s.trim().trim_start_matches(['x', 'X']),
        "PCIe link width",
        "x1, x2, x4, x8, x12, x16 or x32",
    )?;
    pcie::check_width(n).map_err(|e| e.to_string())
}

fn parse_u16_with(
    s: &str,
    what: &str,
    allowed: &str,
    check: fn(u16) -> Result<u16, pcie::ParamError>,
) -> Result<u16, String> {
    let n = parse_number(s, what, allowed)?;
    // A value beyond u16 is out of range anyway: let the check name the allowed values.
    check(u16::try_from(n).unwrap_or(u16::MAX)).map_err(|e| e.to_string())
}

fn parse_mps(s: &str) -> Result<u16, String> {
    parse_u16_with(
        s,
        "Max_Payload_Size",
        "128, 256, 512, 1024, 2048 or 4096",
        pcie::check_mps,
    )
}

fn parse_mrrs(s: &str) -> Result<u16, String> {
    parse_u16_with(
        s,
        "Max_Read_Request_Size",
        "128, 256, 512, 1024, 2048 or 4096",
        pcie::check_mrrs,
    )
}

fn parse_rcb(s: &str) -> Result<u16, String> {
    parse_u16_with(s, "Read Completion Boundary", "64 or 128", pcie::check_rcb)
}

fn parse_addr(s: &str) -> Result<u8, String> {
    match s.trim() {
        "32" => Ok(12),
        "64" => Ok(16),
        _ => Err(format!(
            "`{s}` is not an address width; use 32 (3DW headers) or 64 (4DW headers)"
        )),
    }
}

fn parse_usb_speed(s: &str) -> Result<usb::UsbSpeed, String> {
    use usb::UsbSpeed::*;
    let by_name = match s.trim().to_ascii_lowercase().as_str() {
        "low" | "ls" | "1.5" => Some(Low),
        "full" | "fs" | "12" => Some(Full),
        "high" | "hs" | "480" => Some(High),
        "gen1" | "super" | "ss" | "5000" => Some(Gen1),
        "gen2" | "10000" => Some(Gen2),
        "gen1x2" => Some(Gen1x2),
        "gen2x2" | "20000" => Some(Gen2x2),
        "usb4-20" => Some(Usb4_20),
        "usb4-40" | "40000" => Some(Usb4_40),
        _ => None,
    };
    by_name.ok_or_else(|| {
        format!(
            "`{s}` is not a USB speed; use low, full, high, gen1, gen2, gen1x2, gen2x2, \
             usb4-20, usb4-40, or a sysfs speed in Mb/s (1.5, 12, 480, 5000, 10000, 20000, \
             40000)"
        )
    })
}

fn parse_sata_rate(s: &str) -> Result<f64, String> {
    let allowed = "use 1.5, 3 or 6 (Gb/s)";
    let v: f64 = s
        .trim()
        .trim_end_matches("Gbps")
        .trim_end_matches("G")
        .parse()
        .map_err(|_| format!("`{s}` is not a SATA rate; {allowed}"))?;
    sata::link_ceiling(v)
        .map(|c| c.gbps)
        .ok_or_else(|| format!("SATA has no {s} Gb/s link; {allowed}"))
}

fn parse_eth_rate(s: &str) -> Result<BitsPerSec, String> {
    eth::parse_rate(s).ok_or_else(|| {
        let names: Vec<&str> = eth::RATES.iter().map(|(n, _)| *n).collect();
        format!(
            "`{s}` is not an Ethernet rate; use {}, or Mb/s as sysfs and ethtool print them \
             (1000, 1000M, 1000Mb/s)",
            names.join(", ")
        )
    })
}

// ---- the command ----

pub fn run(global: &GlobalArgs, args: &CeilingArgs) -> anyhow::Result<ExitCode> {
    let unit = args.unit.rate();
    match &args.link {
        LinkKind::Pcie(a) => pcie_command(global, a, unit),
        LinkKind::Usb(a) => usb_command(global, a, unit),
        LinkKind::Sata(a) => sata_command(global, a, unit),
        LinkKind::Eth(a) => eth_command(global, a, unit),
        LinkKind::Mmc(_) => mmc_command(global, unit),
    }
}

/// The JSON body (`output::print_result` adds the envelope).
#[derive(Serialize)]
struct Document<T: Serialize> {
    link: &'static str,
    /// The unit of the `..._bps` fields of PCIe, USB, SATA and eMMC ceilings: always "B/s"
    /// (`--unit` only changes the printed tables). Absent for Ethernet, whose fields name
    /// their unit (`rate_bits_per_sec`, `goodput_bytes_per_sec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_unit: Option<&'static str>,
    #[serde(flatten)]
    body: T,
}

fn print_document<T: Serialize>(link: &'static str, body: T) -> anyhow::Result<ExitCode> {
    crate::output::print_result(
        "ceiling",
        &Document {
            link,
            rate_unit: (link != "eth").then_some("B/s"),
            body,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Write a rendered text to stdout. A closed pipe (`headroom ceiling pcie | head`) is not an
/// error: the reader has what it wanted (`console::StdoutClosed`, a quiet exit 0).
fn emit(text: &str) -> anyhow::Result<ExitCode> {
    crate::out!("{text}")?;
    Ok(ExitCode::SUCCESS)
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

/// Column-aligned text: the first `left` columns left-aligned, the rest right-aligned.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    left: usize,
    last_left: bool,
}

impl Table {
    fn new(header: Vec<String>, left: usize) -> Self {
        Table {
            header,
            rows: Vec::new(),
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
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i < self.left || (self.last_left && i + 1 == columns) {
                        format!("{c:<w$}", w = widths[i])
                    } else {
                        format!("{c:>w$}", w = widths[i])
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

// ---- PCIe ----

#[derive(Serialize)]
struct PcieBody {
    ceilings: Vec<PcieCeiling>,
}

fn pcie_sets(a: &PcieArgs) -> Vec<TlpParams> {
    let seed = TlpParams {
        mrrs: a.mrrs,
        rcb: a.rcb,
        ..TlpParams::seed()
    };
    let default = TlpParams {
        header_bytes: a.addr,
        completion_size: if a.rcb_split {
            CompletionSize::Rcb
        } else {
            CompletionSize::Mps
        },
        ..TlpParams::default_for(256, a.mrrs, a.rcb)
    };
    match a.assumptions {
        SetChoice::Seed => vec![seed],
        SetChoice::Default => vec![default],
        SetChoice::Both => vec![seed, default],
    }
}

fn pcie_command(global: &GlobalArgs, a: &PcieArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let sets = pcie_sets(a);
    let ceiling = |gen: PcieGen, width: u8, set: &TlpParams, mps: u16| {
        pcie::link_ceiling(LinkState::new(gen, width), &set.with_mps(mps))
    };

    if global.json {
        let mut ceilings = Vec::new();
        for set in &sets {
            for &gen in &a.gens {
                for &mps in &a.mps {
                    for &width in &a.lanes {
                        ceilings.push(ceiling(gen, width, set, mps));
                    }
                }
            }
        }
        return print_document("pcie", PcieBody { ceilings });
    }

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
    let mut raw = Table::new(header, 3);
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

    for set in &sets {
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
            let mut t = Table::new(header, 1);
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
    emit(&out)
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

#[derive(Serialize)]
struct UsbRow {
    speed: usb::UsbSpeed,
    label: &'static str,
    #[serde(rename = "signalling_mbits_per_sec", alias = "signalling_mbps")]
    signalling_mbps: f64,
    lanes: u32,
    coding: &'static str,
    #[serde(rename = "raw_bytes_per_sec", alias = "raw_bps")]
    raw_bps: f64,
    transfers: Vec<usb::TransferCeiling>,
}

#[derive(Serialize)]
struct UsbBody {
    speeds: Vec<UsbRow>,
    guide_table_1_2: Vec<usb::GuideFigure>,
}

fn usb_command(global: &GlobalArgs, a: &UsbArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let speeds: Vec<usb::UsbSpeed> = if a.speed.is_empty() {
        usb::UsbSpeed::ALL.to_vec()
    } else {
        a.speed.clone()
    };
    let transfers: Vec<usb::TransferType> = if a.transfer.is_empty() {
        usb::TransferType::ALL.to_vec()
    } else {
        a.transfer.iter().map(|t| t.model()).collect()
    };
    let rows: Vec<UsbRow> = speeds
        .iter()
        .map(|&speed| {
            let (per_lane, lanes) = speed.signalling();
            UsbRow {
                speed,
                label: speed.label(),
                signalling_mbps: per_lane * f64::from(lanes),
                lanes,
                coding: speed.line_coding().label(),
                raw_bps: usb::raw_bps(speed),
                transfers: transfers
                    .iter()
                    .map(|&t| usb::transfer_ceiling(speed, t))
                    .collect(),
            }
        })
        .collect();
    let guide = usb::guide_table_1_2();
    if global.json {
        return print_document(
            "usb",
            UsbBody {
                speeds: rows,
                guide_table_1_2: guide,
            },
        );
    }

    let mut out = String::new();
    let u = unit.label();
    let mut header = vec![s("speed"), s("signalling"), s("coding"), format!("raw {u}")];
    for t in &transfers {
        header.push(format!("{} {u}", t.label()));
    }
    let mut table = Table::new(header, 3);
    for r in &rows {
        let mut row = vec![
            s(r.label),
            format!("{} Mb/s", r.signalling_mbps),
            s(r.coding),
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
    for r in &rows {
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

    writeln!(out)?;
    writeln!(
        out,
        "Rockchip USB guide, table 1-2 \"Max Transfer Speed\" (printed as MBps), checked:"
    )?;
    let mut g = Table::new(
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
    for f in &guide {
        g.row(vec![
            s(f.speed.label()),
            s(f.transfer.label()),
            s(f.printed),
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
    emit(&out)
}

// ---- SATA ----

#[derive(Serialize)]
struct SataBody {
    links: Vec<sata::SataCeiling>,
}

fn sata_command(global: &GlobalArgs, a: &SataArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let links: Vec<sata::SataCeiling> = a
        .rate
        .iter()
        .filter_map(|&r| sata::link_ceiling(r))
        .collect();
    if global.json {
        return print_document("sata", SataBody { links });
    }
    let mut out = String::new();
    let u = unit.label();
    let mut t = Table::new(
        vec![
            s("link"),
            s("coding"),
            format!("raw {u}"),
            format!("data {u}"),
        ],
        2,
    );
    for c in &links {
        t.row(vec![
            format!("SATA {} Gb/s", c.gbps),
            s(c.coding),
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
    emit(&out)
}

// ---- Ethernet ----

#[derive(Serialize)]
struct EthBody {
    ceilings: Vec<eth::EthCeiling>,
}

fn eth_command(global: &GlobalArgs, a: &EthArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    if a.len.is_some() && a.proto != Proto::Udp {
        // Not silently ignored: TCP's segment size follows the MTU.
        return Err(crate::console::usage(
            "--len sets the UDP datagram payload: add --proto udp (TCP segments follow the MTU: \
             change --mtu instead)",
        ));
    }
    let ips: Vec<eth::IpVersion> = match a.ip {
        IpChoice::V4 => vec![eth::IpVersion::V4],
        IpChoice::V6 => vec![eth::IpVersion::V6],
        IpChoice::Both => vec![eth::IpVersion::V4, eth::IpVersion::V6],
    };
    let transports: Vec<eth::Transport> = match a.proto {
        Proto::Tcp => vec![
            eth::Transport::Tcp { timestamps: false },
            eth::Transport::Tcp { timestamps: true },
        ],
        // The payload is chosen per IP version below when --len is not given.
        Proto::Udp => vec![eth::Transport::Udp {
            payload: a.len.unwrap_or(0),
        }],
    };
    let mut ceilings = Vec::new();
    for &rate in &a.rate {
        for &ip in &ips {
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
                match eth::goodput(&params) {
                    Ok(c) => ceilings.push(c),
                    Err(e) => {
                        // A usage error: the sentence names what is allowed; exit 2 as clap does.
                        return Err(crate::console::usage(e.to_string()));
                    }
                }
            }
        }
    }
    if global.json {
        return print_document("eth", EthBody { ceilings });
    }
    let mut out = String::new();
    let u = unit.label();
    let mut t = Table::new(
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
    for c in &ceilings {
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
    if a.proto == Proto::Udp {
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
    emit(&out)
}

// ---- eMMC / SD ----

#[derive(Serialize)]
struct MmcBody {
    modes: Vec<mmc::MmcCeiling>,
}

fn mmc_command(global: &GlobalArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let modes: Vec<mmc::MmcCeiling> = mmc::MmcMode::ALL.iter().map(|&m| mmc::ceiling(m)).collect();
    if global.json {
        return print_document("mmc", MmcBody { modes });
    }
    let mut out = String::new();
    let u = unit.label();
    let mut t = Table::new(
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
    for c in &modes {
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
    emit(&out)
}
