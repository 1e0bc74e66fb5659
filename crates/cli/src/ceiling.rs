//! `headroom ceiling`: the theoretical ceilings of PCIe, USB, SATA, Ethernet and eMMC/SD links,
//! as tables (units in every header, the assumption set named) or one JSON document.
//!
//! The arithmetic lives in `model::ceiling`, the document and its tables in
//! `report::kinds::ceiling`, the parsing and checking of each value against what the specs
//! allow in `model::ceiling::args`; this module holds the flags and runs the command.

use crate::output::GlobalArgs;
use clap::{Args, Subcommand, ValueEnum};
use model::ceiling::args::{
    endpoint_from_flags, parse_addr, parse_eth_rate, parse_gen, parse_mps, parse_mrrs, parse_rcb,
    parse_sata_rate, parse_usb_speed, parse_w_max_packet, parse_width,
};
use model::ceiling::pcie::{CompletionSize, TlpParams};
use model::ceiling::{eth, usb};
use model::pcie::PcieGen;
use model::units::{BitsPerSec, RateUnit};
use report::kinds::ceiling::{
    CeilingDocument, EthCeilings, EthQuery, MmcCeilings, PcieQuery, SataCeilings, UsbCeilings,
};
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
pub struct CeilingArgs {
    #[command(subcommand)]
    pub link: CeilingLink,

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
pub enum CeilingLink {
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

    /// One endpoint's wMaxPacketSize as lsusb -v prints it (0x13fc, 3x1020, 1024): adds what
    /// that interrupt or isochronous endpoint reserves at each speed.
    #[arg(long, value_parser = parse_w_max_packet)]
    pub max_packet: Option<u16>,

    /// The endpoint's bInterval (with --max-packet).
    #[arg(long, default_value_t = 1, requires = "max_packet")]
    pub interval: u32,

    /// SuperSpeed burst, bMaxBurst + 1 (1-16; with --max-packet).
    #[arg(long, requires = "max_packet")]
    pub burst: Option<u32>,

    /// SuperSpeed isochronous Mult, bursts per service interval (1-3; with --max-packet).
    #[arg(long, requires = "max_packet")]
    pub mult: Option<u32>,

    /// wBytesPerInterval of the SuperSpeed companion, or above 65535 the dwBytesPerInterval
    /// of a SuperSpeedPlus isochronous companion (with --max-packet).
    #[arg(long, requires = "max_packet")]
    pub bytes_per_interval: Option<u32>,
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

// ---- the command ----

pub fn run(global: &GlobalArgs, args: &CeilingArgs) -> anyhow::Result<ExitCode> {
    let unit = args.unit.rate();
    match &args.link {
        CeilingLink::Pcie(a) => pcie_command(global, a, unit),
        CeilingLink::Usb(a) => usb_command(global, a, unit),
        CeilingLink::Sata(a) => sata_command(global, a, unit),
        CeilingLink::Eth(a) => eth_command(global, a, unit),
        CeilingLink::Mmc(_) => mmc_command(global, unit),
    }
}

fn print_document(body: CeilingDocument) -> anyhow::Result<ExitCode> {
    crate::output::print_result(report::document::DocumentKind::Ceiling, &body)?;
    Ok(ExitCode::SUCCESS)
}

/// Write a rendered text to stdout. A closed pipe (`headroom ceiling pcie | head`) is not an
/// error: the reader has what it wanted (`console::StdoutClosed`, a quiet exit 0).
fn emit(text: &str) -> anyhow::Result<ExitCode> {
    crate::out!("{text}")?;
    Ok(ExitCode::SUCCESS)
}

// ---- PCIe ----

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
    let query = PcieQuery {
        gens: a.gens.clone(),
        lanes: a.lanes.clone(),
        mps: a.mps.clone(),
        sets: pcie_sets(a),
    };
    if global.json {
        return print_document(CeilingDocument::Pcie(query.document()));
    }
    emit(&query.text(unit)?)
}

// ---- USB ----

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
    let mut body = UsbCeilings::new(&speeds, &transfers);
    if let Some(w) = a.max_packet {
        let [transfer] = transfers[..] else {
            return Err(crate::console::usage(
                "--max-packet describes one endpoint: add --transfer interrupt or --transfer \
                 isochronous",
            ));
        };
        let ep = endpoint_from_flags(
            transfer,
            w,
            a.interval,
            a.burst,
            a.mult,
            a.bytes_per_interval,
        )
        .map_err(crate::console::usage)?;
        body = body.with_endpoint(ep);
    }
    if global.json {
        return print_document(CeilingDocument::Usb(body));
    }
    emit(&body.text(&transfers, unit)?)
}

// ---- SATA ----

fn sata_command(global: &GlobalArgs, a: &SataArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let body = SataCeilings::new(&a.rate);
    if global.json {
        return print_document(CeilingDocument::Sata(body));
    }
    emit(&body.text(unit)?)
}

// ---- Ethernet ----

fn eth_command(global: &GlobalArgs, a: &EthArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    if a.len.is_some() && a.proto != Proto::Udp {
        // Not silently ignored: TCP's segment size follows the MTU.
        return Err(crate::console::usage(
            "--len sets the UDP datagram payload: add --proto udp (TCP segments follow the MTU: \
             change --mtu instead)",
        ));
    }
    let query = EthQuery {
        rates: a.rate.clone(),
        mtu: a.mtu,
        ips: match a.ip {
            IpChoice::V4 => vec![eth::IpVersion::V4],
            IpChoice::V6 => vec![eth::IpVersion::V6],
            IpChoice::Both => vec![eth::IpVersion::V4, eth::IpVersion::V6],
        },
        udp: a.proto == Proto::Udp,
        len: a.len,
    };
    // A usage error: the sentence names what is allowed; exit 2 as clap does.
    let body = EthCeilings::new(&query).map_err(|e| crate::console::usage(e.to_string()))?;
    if global.json {
        return print_document(CeilingDocument::Eth(body));
    }
    emit(&body.text(&query, unit)?)
}

// ---- eMMC / SD ----

fn mmc_command(global: &GlobalArgs, unit: RateUnit) -> anyhow::Result<ExitCode> {
    let body = MmcCeilings::all();
    if global.json {
        return print_document(CeilingDocument::Mmc(body));
    }
    emit(&body.text(unit)?)
}
