//! The values `headroom ceiling` accepts for each link parameter, parsed from the forms
//! reports and tools write them in (`gen3`, `x4`, `480`, `1000Mb/s`) and checked against what
//! the specs allow; a refused value gets one sentence naming the allowed ones.

use super::pcie::{self, ParamError};
use super::{eth, sata, usb};
use crate::pcie::PcieGen;
use crate::units::BitsPerSec;

fn parse_number(s: &str, what: &str, allowed: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("`{s}` is not a {what}; use {allowed}"))
}

pub fn parse_gen(s: &str) -> Result<PcieGen, String> {
    let s = s
        .trim()
        .trim_start_matches(['g', 'G'])
        .trim_start_matches("en");
    let n = parse_number(s, "PCIe generation", "1, 2, 3, 4, 5, 6 or 7")?;
    pcie::check_generation(n).map_err(|e| e.to_string())
}

pub fn parse_width(s: &str) -> Result<u8, String> {
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
    check: fn(u16) -> Result<u16, ParamError>,
) -> Result<u16, String> {
    let n = parse_number(s, what, allowed)?;
    // A value beyond u16 is out of range anyway: let the check name the allowed values.
    check(u16::try_from(n).unwrap_or(u16::MAX)).map_err(|e| e.to_string())
}

pub fn parse_mps(s: &str) -> Result<u16, String> {
    parse_u16_with(
        s,
        "Max_Payload_Size",
        "128, 256, 512, 1024, 2048 or 4096",
        pcie::check_mps,
    )
}

pub fn parse_mrrs(s: &str) -> Result<u16, String> {
    parse_u16_with(
        s,
        "Max_Read_Request_Size",
        "128, 256, 512, 1024, 2048 or 4096",
        pcie::check_mrrs,
    )
}

pub fn parse_rcb(s: &str) -> Result<u16, String> {
    parse_u16_with(s, "Read Completion Boundary", "64 or 128", pcie::check_rcb)
}

pub fn parse_addr(s: &str) -> Result<u8, String> {
    match s.trim() {
        "32" => Ok(12),
        "64" => Ok(16),
        _ => Err(format!(
            "`{s}` is not an address width; use 32 (3DW headers) or 64 (4DW headers)"
        )),
    }
}

pub fn parse_usb_speed(s: &str) -> Result<usb::UsbSpeed, String> {
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

/// wMaxPacketSize as lsusb prints it: the field (`0x13fc`, bits 12..11 the additional
/// transactions, USB 2.0 table 9-13), its decode (`3x1020`, `3x 1020`), or bytes (`1024`).
pub fn parse_w_max_packet(s: &str) -> Result<u16, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "`{s}` is not a wMaxPacketSize; give it as lsusb -v prints it: 0x13fc, 3x1020 or 1024 (packets of at most 1024 B, 1 to 3 per microframe)"
        )
    };
    let field = if let Some(hex) = t.strip_prefix("0x") {
        u16::from_str_radix(hex, 16).map_err(|_| bad())?
    } else if let Some((n, b)) = t.split_once('x') {
        let n: u16 = n.trim().parse().map_err(|_| bad())?;
        let b: u16 = b
            .trim()
            .trim_end_matches("bytes")
            .trim()
            .parse()
            .map_err(|_| bad())?;
        if !(1..=3).contains(&n) || b > 0x7ff {
            return Err(bad());
        }
        ((n - 1) << 11) | b
    } else {
        t.parse().map_err(|_| bad())?
    };
    // Bits 15..13 are reserved, 12..11 = 11 is reserved, and no speed allows packets above
    // 1024 B (USB 2.0 table 9-13, USB 3.2 9.6.6).
    if field >> 13 != 0 || (field >> 11) & 3 == 3 || field & 0x7ff > 1024 || field & 0x7ff == 0 {
        return Err(bad());
    }
    Ok(field)
}

/// One periodic endpoint described by the fields of its descriptors, for `headroom ceiling
/// usb`: bInterval 1 to 255, the SuperSpeed companion's burst (bMaxBurst + 1, 1 to 16) and
/// Mult (1 to 3 bursts, isochronous only), and a wBytesPerInterval (at most 65535) or a
/// SuperSpeedPlus dwBytesPerInterval (larger).
pub fn endpoint_from_flags(
    transfer: usb::TransferType,
    w_max_packet: u16,
    interval: u32,
    burst: Option<u32>,
    mult: Option<u32>,
    bytes_per_interval: Option<u32>,
) -> Result<super::usb_endpoint::UsbEndpoint, String> {
    use super::usb_endpoint::{Direction, SsCompanion, UsbEndpoint};
    if !matches!(
        transfer,
        usb::TransferType::Interrupt | usb::TransferType::Isochronous
    ) {
        return Err("an endpoint's reserved bandwidth needs --transfer interrupt or --transfer isochronous (bulk and control endpoints reserve none)"
            .into());
    }
    let interval = u8::try_from(interval)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| format!("--interval {interval} is not a bInterval; use 1 to 255"))?;
    if let Some(b) = burst.filter(|b| !(1..=16).contains(b)) {
        return Err(format!(
            "--burst {b} is not a SuperSpeed burst; use 1 to 16 (bMaxBurst + 1, USB 3.2 9.6.7)"
        ));
    }
    if let Some(m) = mult.filter(|m| !(1..=3).contains(m)) {
        return Err(format!(
            "--mult {m} is not a SuperSpeed Mult; use 1 to 3 (USB 3.2 9.6.7)"
        ));
    }
    if mult.is_some() && transfer != usb::TransferType::Isochronous {
        return Err("--mult applies to isochronous endpoints only (USB 3.2 9.6.7)".into());
    }
    // At SuperSpeed every endpoint has a companion: without --bytes-per-interval its
    // wBytesPerInterval is what its packets carry (burst x Mult x wMaxPacketSize).
    let (burst, mult) = (burst.unwrap_or(1), mult.unwrap_or(1));
    let ssp = bytes_per_interval.filter(|b| *b > u32::from(u16::MAX));
    let packets_carry = burst * mult * u32::from(w_max_packet & 0x7ff);
    let ss_companion = Some(SsCompanion {
        max_burst: (burst - 1) as u8,
        attributes: (mult - 1) as u8 | if ssp.is_some() { 0x80 } else { 0 },
        bytes_per_interval: u16::try_from(bytes_per_interval.unwrap_or(packets_carry)).unwrap_or(0),
    });
    Ok(UsbEndpoint {
        address: 0x81,
        transfer,
        direction: Direction::In,
        max_packet: w_max_packet & 0x7ff,
        additional_transactions: ((w_max_packet >> 11) & 3) as u8,
        interval,
        ss_companion,
        ssp_bytes_per_interval: ssp,
        reserved: None,
    })
}

pub fn parse_sata_rate(s: &str) -> Result<f64, String> {
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

pub fn parse_eth_rate(s: &str) -> Result<BitsPerSec, String> {
    eth::parse_rate(s).ok_or_else(|| {
        let names: Vec<&str> = eth::RATES.iter().map(|(n, _)| *n).collect();
        format!(
            "`{s}` is not an Ethernet rate; use {}, or Mb/s as sysfs and ethtool print them \
             (1000, 1000M, 1000Mb/s)",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    #[test]
    fn the_forms_reports_write() {
        assert_eq!(parse_gen("gen3"), Ok(PcieGen::Gen3));
        assert_eq!(parse_gen("Gen5"), Ok(PcieGen::Gen5));
        assert_eq!(parse_width("x4"), Ok(4));
        assert_eq!(parse_mps("256"), Ok(256));
        assert_eq!(parse_mrrs("4096"), Ok(4096));
        assert_eq!(parse_rcb("128"), Ok(128));
        assert_eq!(parse_addr("32"), Ok(12));
        assert_eq!(parse_usb_speed("480"), Ok(usb::UsbSpeed::High));
        assert_eq!(parse_usb_speed("Gen2x2"), Ok(usb::UsbSpeed::Gen2x2));
        assert_eq!(parse_sata_rate("6Gbps"), Ok(6.0));
        assert_eq!(parse_eth_rate("1000Mb/s"), parse_eth_rate("1G"));
    }

    #[test]
    fn a_refused_value_names_the_allowed_ones() {
        let e = parse_gen("gen9").unwrap_err();
        assert!(e.contains('9'), "{e}");
        assert!(parse_gen("three")
            .unwrap_err()
            .contains("1, 2, 3, 4, 5, 6 or 7"));
        assert!(parse_width("x3").is_err());
        // Beyond u16: out of range, named by the check, not a parse failure.
        assert!(parse_mps("70000").unwrap_err().contains("4096"));
        assert!(parse_rcb("32").is_err());
        assert!(parse_addr("48")
            .unwrap_err()
            .contains("32 (3DW headers) or 64"));
        assert!(parse_usb_speed("fast").unwrap_err().contains("usb4-40"));
        // wMaxPacketSize as lsusb -v prints it.
        assert_eq!(parse_w_max_packet("0x13fc"), Ok(0x13fc));
        assert_eq!(parse_w_max_packet("3x 1020"), Ok(0x13fc));
        assert_eq!(parse_w_max_packet("1024"), Ok(1024));
        assert!(parse_w_max_packet("0x1c00").is_err()); // bits 12..11 = 11: reserved
        assert!(parse_w_max_packet("4x1024").unwrap_err().contains("lsusb"));
        assert!(parse_w_max_packet("2048").is_err());
        assert!(parse_sata_rate("12")
            .unwrap_err()
            .contains("SATA has no 12 Gb/s link"));
        assert!(parse_sata_rate("x")
            .unwrap_err()
            .contains("not a SATA rate"));
        assert!(parse_eth_rate("7G")
            .unwrap_err()
            .contains("not an Ethernet rate"));
    }
}
