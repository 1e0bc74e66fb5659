//! Checks the config-space decoder against pciutils' own decode of the same bytes.
//!
//! Every dump in `tests/fixtures/captured/pci/` (real hardware, and the pciutils test
//! suite) has beside it `lspci -F DUMP -vvv` from pciutils 3.9.0 (`.lspci.txt`) and 3.14.0
//! (`.lspci-3.14.txt`). For each function the fields an engineer reads off `lspci -vvv` to
//! judge a link must agree: LnkCap/LnkSta speed and width with their "(downgraded)" marks,
//! DevCap/DevCtl MaxPayload, MaxReadReq, ASPM support and control, RCB, LnkCap2 speeds,
//! LnkCtl2 target speed, the FLIT bits (3.14), AER status/mask/severity bits, bridge bus
//! numbers and the offsets of every capability.

// Helpers of a test binary: a panic is a failed assertion (clippy.toml's
// allow-unwrap-in-tests does not reach functions outside #[test]).
#![allow(clippy::unwrap_used)]

use model::inventory::pci::address::PciAddress;
use model::inventory::pci::config::{ConfigSpace, ExpressCap};
use model::PcieGen;
use probe::pci::dump::parse_lspci_dump;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// One capability block of lspci's text: `\tCapabilities: [70] Express (v2) Endpoint, ...`
/// and its `\t\tKey:\tvalue` entries (continuation lines `\t\t\t...` joined to their entry).
#[derive(Debug, Default)]
struct RefCap {
    offset: u16,
    title: String,
    entries: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct RefDevice {
    /// Device-level lines (`\tBus: primary=00, ...`).
    lines: Vec<String>,
    caps: Vec<RefCap>,
}

impl RefCap {
    fn entry(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_reference(text: &str) -> BTreeMap<PciAddress, RefDevice> {
    let mut out = BTreeMap::new();
    let mut current: Option<(PciAddress, RefDevice)> = None;
    let mut in_cap = false;
    for line in text.lines() {
        let tabs = line.bytes().take_while(|&b| b == b'\t').count();
        let body = &line[tabs..];
        if tabs == 0 {
            if let Some((a, d)) = current.take() {
                out.insert(a, d);
            }
            let first = body.split(' ').next().unwrap_or("");
            if let Ok(address) = first.parse::<PciAddress>() {
                current = Some((address, RefDevice::default()));
            }
            in_cap = false;
            continue;
        }
        let Some((_, dev)) = current.as_mut() else {
            continue;
        };
        if tabs == 1 {
            in_cap = false;
            if let Some(rest) = body.strip_prefix("Capabilities: [") {
                let (inside, title) = rest.split_once("] ").unwrap();
                let offset = u16::from_str_radix(inside.split(' ').next().unwrap(), 16).unwrap();
                dev.caps.push(RefCap {
                    offset,
                    title: title.to_string(),
                    entries: Vec::new(),
                });
                in_cap = true;
            } else {
                dev.lines.push(body.to_string());
            }
        } else if in_cap {
            let cap = dev.caps.last_mut().unwrap();
            if tabs == 2 {
                let (key, value) = body.split_once(':').unwrap_or((body, ""));
                cap.entries
                    .push((key.to_string(), value.trim().to_string()));
            } else if let Some(last) = cap.entries.last_mut() {
                last.1.push('\n');
                last.1.push_str(body.trim());
            }
        }
    }
    if let Some((a, d)) = current.take() {
        out.insert(a, d);
    }
    out
}

/// The text between `prefix` and the first of `ends` (or the end of the line).
fn field<'a>(text: &'a str, prefix: &str, ends: &[&str]) -> Option<&'a str> {
    let first_line = text.lines().next()?;
    let start = first_line.find(prefix)? + prefix.len();
    let rest = &first_line[start..];
    let end = ends
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `Name+` / `Name-` flags anywhere in an entry.
fn flags(text: &str) -> Vec<(&str, bool)> {
    text.split_whitespace()
        .filter_map(|t| {
            let t = t.trim_end_matches(',');
            if let Some(n) = t.strip_suffix('+') {
                Some((n, true))
            } else {
                t.strip_suffix('-').map(|n| (n, false))
            }
        })
        .collect()
}

fn speed_label(gen: Option<PcieGen>) -> String {
    gen.map_or_else(|| "unknown".to_string(), PcieGen::lspci_label)
}

fn mark(m: Option<model::inventory::pci::config::LinkMark>) -> &'static str {
    m.map_or("", |m| m.lspci_label())
}

/// Splits "16GT/s (downgraded)" into ("16GT/s", "downgraded").
fn value_and_mark(s: &str) -> (&str, &str) {
    match s.split_once(" (") {
        Some((v, m)) => (v, m.trim_end_matches(')')),
        None => (s, ""),
    }
}

struct Checker {
    context: String,
    compared: usize,
    failures: Vec<String>,
}

impl Checker {
    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, ours: T, lspci: T) {
        self.compared += 1;
        if ours != lspci {
            self.failures.push(format!(
                "{}: {what}: ours {ours:?}, lspci {lspci:?}",
                self.context
            ));
        }
    }
}

fn check_express(c: &mut Checker, e: &ExpressCap, r: &RefCap, lspci_314: bool) {
    // Title: "Express (v2) Root Port (Slot+), MSI 00".
    let title = r.title.strip_prefix("Express (v").unwrap();
    let (version, kind) = title.split_once(") ").unwrap();
    c.eq(
        "PCIe capability version",
        e.version.to_string().as_str(),
        version,
    );
    c.eq(
        "port type",
        true,
        kind.starts_with(e.port_type.lspci_name()),
    );
    if lspci_314 {
        c.eq(
            "FLIT Mode Supported",
            e.flit_mode_supported,
            r.title.contains("FLIT Mode Supported"),
        );
    }

    if let Some(devcap) = r.entry("DevCap") {
        let d = e.device.as_ref().unwrap();
        let mps = field(devcap, "MaxPayload ", &[" bytes"]).unwrap();
        c.eq(
            "DevCap MaxPayload",
            d.max_payload_supported.to_string().as_str(),
            mps,
        );
    }
    if let Some(devctl) = r.entry("DevCtl") {
        let d = e.device.as_ref().unwrap();
        let line = devctl
            .lines()
            .find(|l| l.starts_with("MaxPayload"))
            .unwrap();
        let mps = field(line, "MaxPayload ", &[" bytes"]).unwrap();
        let mrrs = field(line, "MaxReadReq ", &[" bytes"]).unwrap();
        c.eq("DevCtl MaxPayload", d.max_payload.to_string().as_str(), mps);
        c.eq(
            "DevCtl MaxReadReq",
            d.max_read_request.to_string().as_str(),
            mrrs,
        );
    }
    let Some(lnkcap) = r.entry("LnkCap") else {
        c.eq("link registers present", e.link.is_some(), false);
        return;
    };
    let l = e.link.as_ref().unwrap();
    c.eq(
        "LnkCap port",
        l.port_number.to_string().as_str(),
        field(lnkcap, "Port #", &[","]).unwrap(),
    );
    c.eq(
        "LnkCap speed",
        speed_label(l.max_speed).as_str(),
        field(lnkcap, "Speed ", &[","]).unwrap(),
    );
    c.eq(
        "LnkCap width",
        l.max_width.to_string().as_str(),
        field(lnkcap, "Width x", &[","]).unwrap(),
    );
    c.eq(
        "LnkCap ASPM",
        l.aspm_support.lspci_support_label(),
        field(lnkcap, "ASPM ", &[","]).unwrap(),
    );

    let lnkctl = r.entry("LnkCtl").unwrap();
    c.eq(
        "LnkCtl ASPM",
        l.aspm_control.lspci_control_label(),
        field(lnkctl, "ASPM ", &[";"]).unwrap(),
    );
    let rcb = field(lnkctl, "RCB ", &[" bytes"]).map(|s| s.parse::<u16>().unwrap());
    c.eq("LnkCtl RCB", l.rcb, rcb);
    if lspci_314 {
        let fmd = flags(lnkctl).into_iter().find(|(n, _)| *n == "FltModeDis");
        c.eq(
            "LnkCtl FltModeDis",
            Some(l.flit_mode_disable),
            fmd.map(|f| f.1),
        );
    }

    let lnksta = r.entry("LnkSta").unwrap();
    let (speed, speed_mark) = value_and_mark(field(lnksta, "Speed ", &[", Width"]).unwrap());
    let (width, width_mark) = value_and_mark(field(lnksta, "Width x", &[]).unwrap());
    c.eq("LnkSta speed", speed_label(l.speed).as_str(), speed);
    c.eq("LnkSta width", l.width.to_string().as_str(), width);
    c.eq(
        "LnkSta speed mark",
        mark(e.lspci_downgraded_speed()),
        speed_mark,
    );
    c.eq(
        "LnkSta width mark",
        mark(e.lspci_downgraded_width()),
        width_mark,
    );

    if let Some(lnkcap2) = r.entry("LnkCap2") {
        let l2 = e.link2.as_ref().unwrap();
        let lspci = field(lnkcap2, "Supported Link Speeds: ", &[","]).unwrap();
        let ours = match l2.supported_speeds.last() {
            Some(PcieGen::Gen1) => "2.5GT/s".to_string(),
            Some(g) => format!("2.5-{}", g.lspci_label()),
            None => "Unknown".to_string(),
        };
        c.eq("LnkCap2 supported speeds", ours.as_str(), lspci);
    }
    if let Some(lnkctl2) = r.entry("LnkCtl2") {
        let l2 = e.link2.as_ref().unwrap();
        let lspci = field(lnkctl2, "Target Link Speed: ", &[","]).unwrap();
        let ours = l2
            .target_speed
            .map_or_else(|| "Unknown".to_string(), PcieGen::lspci_label);
        c.eq("LnkCtl2 target speed", ours.as_str(), lspci);
    }
    if let (true, Some(lnksta2)) = (lspci_314, r.entry("LnkSta2")) {
        let l2 = e.link2.as_ref().unwrap();
        let fm = flags(lnksta2).into_iter().find(|(n, _)| *n == "FltMode");
        c.eq(
            "LnkSta2 FltMode",
            Some(l2.flit_mode_active),
            fm.map(|f| f.1),
        );
    }
}

fn check_aer(c: &mut Checker, config: &ConfigSpace, r: &RefCap) {
    let aer = config.aer.as_ref().unwrap();
    c.eq("AER offset", aer.offset, r.offset);
    for (key, reg) in [
        ("UESta", &aer.uncorrectable_status),
        ("UEMsk", &aer.uncorrectable_mask),
        ("UESvrt", &aer.uncorrectable_severity),
        ("CESta", &aer.correctable_status),
        ("CEMsk", &aer.correctable_mask),
    ] {
        let text = r.entry(key).unwrap();
        let printed = flags(text);
        assert!(!printed.is_empty(), "{}: no flags in {key}", c.context);
        for (name, set) in printed {
            c.eq(&format!("AER {key} {name}"), reg.is_set(name), set);
        }
    }
}

fn check_function(c: &mut Checker, config: &ConfigSpace, r: &RefDevice, lspci_314: bool) {
    // Capability offsets, standard and extended, in lspci's (walk) order.
    let ours: Vec<u16> = config
        .capabilities
        .iter()
        .map(|k| k.offset)
        .chain(config.extended_capabilities.iter().map(|k| k.offset))
        .collect();
    let theirs: Vec<u16> = r.caps.iter().map(|k| k.offset).collect();
    c.eq("capability offsets", ours, theirs);

    if let Some(bus) = r.lines.iter().find(|l| l.starts_with("Bus: primary=")) {
        let b = config.header.as_ref().unwrap().bridge_buses.unwrap();
        let ours = format!(
            "Bus: primary={:02x}, secondary={:02x}, subordinate={:02x},",
            b.primary, b.secondary, b.subordinate
        );
        c.eq("bridge bus numbers", true, bus.starts_with(&ours));
    }

    for cap in &r.caps {
        if cap.title.starts_with("Express (") {
            match &config.express {
                Some(e) => check_express(c, e, cap, lspci_314),
                None => c.eq("PCIe capability found", false, true),
            }
        } else if cap.title.starts_with("Advanced Error Reporting") {
            check_aer(c, config, cap);
        } else if let (true, Some(devcap3)) = (cap.title == "Device 3", cap.entry("DevCap3")) {
            // Only 3.14 names the Device 3 capability (3.9: "Extended Capability ID 0x2f").
            let d = config.device3.as_ref().unwrap();
            for (ours, name) in [
                (d.dmwr_request_routing, "DMWr Request Routing"),
                (d.tag14_completer, "14-Bit Tag Completer"),
                (d.tag14_requester, "14-Bit Tag Requester"),
                (d.l0p_supported, "L0p"),
            ] {
                let plus = devcap3.contains(&format!("{name}+"));
                let minus = devcap3.contains(&format!("{name}-"));
                c.eq(
                    &format!("DevCap3 {name}"),
                    Some(ours),
                    plus.then_some(true).or(minus.then_some(false)),
                );
            }
        }
    }
}

fn check_file(dump_path: &Path) -> (usize, Vec<String>) {
    let name = dump_path.file_name().unwrap().to_string_lossy().to_string();
    let text = fs::read_to_string(dump_path).unwrap();
    let dump = parse_lspci_dump(&text);
    assert!(
        dump.warnings.is_empty(),
        "{name}: the dump parser complained about a dump lspci reads: {:?}",
        dump.warnings
    );
    assert!(!dump.functions.is_empty(), "{name}: no functions");

    let mut total = 0;
    let mut failures = Vec::new();
    for (suffix, lspci_314) in [(".lspci.txt", false), (".lspci-3.14.txt", true)] {
        let ref_path = dump_path.with_file_name(format!("{name}{suffix}"));
        let reference = parse_reference(&fs::read_to_string(&ref_path).unwrap());
        let ours: Vec<PciAddress> = dump.functions.iter().map(|f| f.address).collect();
        let theirs: Vec<PciAddress> = reference.keys().copied().collect();
        let mut sorted = ours.clone();
        sorted.sort();
        assert_eq!(sorted, theirs, "{name}{suffix}: the functions differ");

        let mut c = Checker {
            context: String::new(),
            compared: 0,
            failures: Vec::new(),
        };
        for f in &dump.functions {
            c.context = format!("{name}{suffix} {}", f.address);
            let config = probe::pci::config::decode(&f.config);
            for w in &config.warnings {
                eprintln!("{}: decoder warning: {w}", c.context);
            }
            check_function(&mut c, &config, &reference[&f.address], lspci_314);
        }
        assert!(
            c.compared > 0,
            "{name}{suffix}: no field was compared, the test proves nothing"
        );
        eprintln!("{name}{suffix}: {} fields compared", c.compared);
        total += c.compared;
        failures.extend(c.failures);
    }
    (total, failures)
}

#[test]
fn decoder_agrees_with_lspci_on_every_shared_dump() {
    let Some(fixtures) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let dir = fixtures.join("pci");
    let mut dumps: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            !n.ends_with(".txt") && !n.ends_with(".md")
        })
        .collect();
    dumps.sort();
    assert!(
        dumps.len() >= 16,
        "expected the 16 dumps, found {}",
        dumps.len()
    );

    let mut failures = Vec::new();
    let mut total = 0;
    for d in &dumps {
        let (n, f) = check_file(d);
        total += n;
        failures.extend(f);
    }
    eprintln!(
        "{} dumps, {total} fields compared with lspci 3.9 and 3.14",
        dumps.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} fields disagree with lspci:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The cap-atomicops edge case: a root port whose link is down reads "Speed unknown,
/// Width x0", without "(downgraded)" (root ports are never marked).
#[test]
fn link_down_root_port_matches_lspci() {
    let Some(fixtures) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let text = fs::read_to_string(fixtures.join("pci/pciutils-tests_cap-atomicops.lspci")).unwrap();
    let dump = parse_lspci_dump(&text);
    assert_eq!(dump.functions.len(), 1);
    assert_eq!(dump.functions[0].config.len(), 256);
    let config = probe::pci::config::decode(&dump.functions[0].config);
    let e = config.express.unwrap();
    let l = e.link.as_ref().unwrap();
    assert_eq!((l.max_speed, l.max_width), (Some(PcieGen::Gen2), 4));
    assert_eq!((l.speed, l.speed_code, l.width), (None, 0, 0));
    assert_eq!(e.lspci_downgraded_speed(), None);
    assert_eq!(e.lspci_downgraded_width(), None);
}
