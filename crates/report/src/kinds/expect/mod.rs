//! `headroom audit --expect MANIFEST` and `--save-expect`: an audit judged against the
//! expected state of its host ([`model::expect::Manifest`]), one PASS or FAIL per check with
//! what was found; the manifest of a known-good host; the checks as text and as OCP Test &
//! Validation output (OCPTV JSON lines, schema 2.0 of opencomputeproject/ocp-diag-core's
//! json_spec).

pub mod findings;
pub use findings::check;
pub mod text;
pub use text::{render, text, to_json, Layout};
pub mod ocptv;
pub use ocptv::{ocptv, OcptvRun};

use super::audit::AuditDocument;
use model::expect::{BlockExpect, Manifest, Match, NetExpect, PciExpect, UsbExpect};
use model::inventory::block::{BlockDevice, BlockKind};
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::AuditedFunction;
use model::inventory::usb::UsbDevice;

/// The largest manifest read, bytes: a hand-written one for a large server is a few tens of
/// kilobytes; anything much larger is not a manifest.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// One check of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub pass: bool,
    /// `pci`, `usb`, `block` or `net`, and the entry's number in its section (1-based).
    pub section: &'static str,
    pub entry: usize,
    /// The device checked (`0000:01:00.0`, `2-1`, `eth0`), or the entry's selectors when no
    /// device matched.
    pub device: String,
    /// What the device is (`Samsung NVMe SSD, driver nvme`), when known.
    pub description: String,
    /// `present`, `link speed`, `link width`, `MPS`, `AER errors`, `ASPM`, `speed`,
    /// `transport`, `model`, `size`, `rotational`, `scheduler`, `max_sectors_kb`,
    /// `max_hw_sectors_kb`, `logical block size`, `physical block size`.
    pub check: &'static str,
    pub expected: String,
    pub found: String,
}

impl Check {
    /// `PASS pci 0000:01:00.0 link speed: 8 GT/s (expected at least 8 GT/s)`.
    pub fn line(&self) -> String {
        let verdict = if self.pass { "PASS" } else { "FAIL" };
        let what = if self.description.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.description)
        };
        format!(
            "{verdict} {} {}{what} {}: {} (expected {})",
            self.section, self.device, self.check, self.found, self.expected
        )
    }
}

/// The checks as board-lab cases (`--format lava`, `kcidb`): `expect.pci.1.0000:01:00.0.link
/// speed`, a pass or a fail, with the check's line as the comment.
pub fn cases(checks: &[Check]) -> Vec<crate::export::cases::Case> {
    checks
        .iter()
        .map(|c| {
            crate::export::cases::Case::check(
                vec![
                    "expect".into(),
                    c.section.into(),
                    c.entry.to_string(),
                    c.device.clone(),
                    c.check.replace(' ', "-"),
                ],
                c.pass,
                c.line(),
            )
        })
        .collect()
}

/// Read a manifest from its text; `origin` names the file. TOML's own error gives the line
/// and column; an entry without a selector, or with a value that cannot be one, is named by
/// its section and number.
pub fn parse(text: &str, origin: &str) -> Result<Manifest, String> {
    let m: Manifest = toml::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.trim_end();
        format!("{origin} is not a valid manifest: {msg}")
    })?;
    validate(&m).map_err(|e| format!("{origin}: {e}"))?;
    Ok(m)
}

fn hex_pair(v: &str) -> bool {
    v.split_once(':').is_some_and(|(a, b)| {
        [a, b]
            .iter()
            .all(|x| (1..=4).contains(&x.len()) && x.chars().all(|c| c.is_ascii_hexdigit()))
    })
}

fn validate(m: &Manifest) -> Result<(), String> {
    for (i, e) in m.pci.iter().enumerate() {
        let at = format!("[[pci]] entry {}", i + 1);
        let selectors = [
            &e.address,
            &e.slot,
            &e.id,
            &e.class,
            &e.driver,
            &e.block,
            &e.interface,
        ];
        if selectors.iter().all(|s| s.is_none()) {
            return Err(format!(
                "{at} selects nothing: give address, slot, id, class, driver, block or interface"
            ));
        }
        if let Some(a) = &e.address {
            a.parse::<PciAddress>()
                .map_err(|err| format!("{at}: address {err}"))?;
        }
        if let Some(id) = &e.id {
            if !hex_pair(id) {
                return Err(format!(
                    "{at}: id {id:?} is not vendor:device in hex (e.g. \"144d:a808\")"
                ));
            }
        }
        if let Some(c) = &e.class {
            if !(c.len() == 4 || c.len() == 6) || !c.chars().all(|x| x.is_ascii_hexdigit()) {
                return Err(format!(
                    "{at}: class {c:?} is not 4 or 6 hex digits (e.g. \"0108\")"
                ));
            }
        }
        if let Some(a) = &e.aspm {
            if aspm_from_label(a).is_none() {
                return Err(format!(
                    "{at}: aspm {a:?} is none of \"disabled\", \"L0s\", \"L1\", \"L0s L1\""
                ));
            }
        }
    }
    for (i, e) in m.usb.iter().enumerate() {
        let at = format!("[[usb]] entry {}", i + 1);
        if [&e.device, &e.id, &e.block, &e.interface]
            .iter()
            .all(|s| s.is_none())
        {
            return Err(format!(
                "{at} selects nothing: give device, id, block or interface"
            ));
        }
        if let Some(id) = &e.id {
            if !hex_pair(id) {
                return Err(format!(
                    "{at}: id {id:?} is not vendor:product in hex (e.g. \"04e8:61f5\")"
                ));
            }
        }
        if let Some(t) = &e.transport {
            if t != "uas" && t != "usb-storage" {
                return Err(format!(
                    "{at}: transport {t:?} is neither \"uas\" nor \"usb-storage\""
                ));
            }
        }
    }
    for (i, e) in m.block.iter().enumerate() {
        let at = format!("[[block]] entry {}", i + 1);
        if [&e.path, &e.wwid, &e.serial, &e.device]
            .iter()
            .all(|s| s.is_none())
        {
            return Err(format!(
                "{at} selects nothing: give path, wwid, serial or device"
            ));
        }
        if let Some(t) = &e.transport {
            if !BLOCK_TRANSPORTS.contains(&t.as_str()) {
                return Err(format!(
                    "{at}: transport {t:?} is none of {}",
                    BLOCK_TRANSPORTS
                        .iter()
                        .map(|t| format!("\"{t}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    for (i, e) in m.net.iter().enumerate() {
        if e.interface.is_none() && e.driver.is_none() {
            return Err(format!(
                "[[net]] entry {} selects nothing: give interface or driver",
                i + 1
            ));
        }
    }
    Ok(())
}

/// The transports a `[[block]]` entry may expect, as `headroom audit` names them.
const BLOCK_TRANSPORTS: [&str; 6] = ["nvme", "ata", "scsi", "usb", "mmc", "virtio"];

/// The name `headroom audit` shows for a disk's transport (`nvme`, `ata`, `usb`).
fn transport_name(t: model::path::Transport) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `disabled`, `L0s`, `L1`, `L0s L1` (any case, `none` for disabled) to (L0s, L1).
fn aspm_from_label(label: &str) -> Option<(bool, bool)> {
    match label.to_ascii_lowercase().as_str() {
        "disabled" | "none" => Some((false, false)),
        "l0s" => Some((true, false)),
        "l1" => Some((false, true)),
        "l0s l1" | "l0s+l1" | "l1 l0s" => Some((true, true)),
        _ => None,
    }
}

fn aspm_label(l0s: bool, l1: bool) -> &'static str {
    match (l0s, l1) {
        (false, false) => "disabled",
        (true, false) => "L0s",
        (false, true) => "L1",
        (true, true) => "L0s L1",
    }
}

/// The manifest's TOML, with a header saying what it is and how to edit it.
pub fn to_toml(m: &Manifest, source: &str) -> String {
    let body = toml::to_string(m).unwrap_or_default();
    format!(
        "# The expected state of a host, written by `headroom audit --save-expect` from {source}.\n\
         # Check a host against it with `headroom audit --expect FILE` (this file is only read).\n\
         # Each entry selects devices (address, slot, id, class, driver, block, interface; all\n\
         # given must match) and checks what is given: link_speed_gts and link_width (at least,\n\
         # or link_match = \"exactly\"), mps, aer_errors (the most allowed; 0 = none), aspm\n\
         # (\"disabled\", \"L0s\", \"L1\", \"L0s L1\"), speed_mbps, transport (\"uas\").\n\
         # A [[block]] entry selects a disk by path (where it sits, from the CPU down), wwid,\n\
         # serial or device (the kernel's name, which may change between boots) and checks\n\
         # model, transport, size_bytes, rotational, scheduler, max_sectors_kb,\n\
         # max_hw_sectors_kb, logical_block_size and physical_block_size, exactly.\n\
         # Delete an entry to stop checking a device; a device that is missing is a FAIL.\n\n{body}"
    )
}

/// What a saved manifest expects, for the line `--save-expect` prints: `6 PCI functions,
/// 0 USB devices, 1 disk, 1 network interface`.
pub fn counts(m: &Manifest) -> String {
    use crate::words::plural;
    [
        plural(m.pci.len(), "PCI function", "PCI functions"),
        plural(m.usb.len(), "USB device", "USB devices"),
        plural(m.block.len(), "disk", "disks"),
        plural(m.net.len(), "network interface", "network interfaces"),
    ]
    .join(", ")
}

/// The warning for a manifest without an entry: it would pass on any host.
pub const EMPTY_MANIFEST: &str =
    "the manifest lists no [[pci]], [[usb]], [[block]] or [[net]] entry: nothing is checked, so it passes on any host";

fn id_of(v: Option<u16>, d: Option<u16>) -> Option<String> {
    Some(format!("{:04x}:{:04x}", v?, d?))
}

fn describe_function(f: &AuditedFunction) -> String {
    match &f.driver {
        Some(d) => format!("{}, driver {d}", f.display_name()),
        None => f.display_name(),
    }
}

/// The manifest of the audited host: every PCI function, USB device and network interface
/// with its state now as the expectation (links at least as fast and wide, the MPS and ASPM
/// they have, no more AER errors than now).
pub fn manifest_of(a: &AuditDocument) -> Manifest {
    let mut m = Manifest::default();
    for f in &a.pci.functions {
        let link = f.upstream_link.and_then(|i| a.pci.links.get(i));
        let current = f.current_link();
        m.pci.push(PciExpect {
            name: Some(describe_function(f)),
            address: Some(f.address.to_string()),
            id: id_of(f.vendor_id, f.device_id),
            link_speed_gts: current.map(|c| c.gen),
            link_width: current.map(|c| c.width),
            mps: link.and_then(|l| l.max_payload_downstream),
            aer_errors: f.aer_counters.as_ref().map(|c| c.total()),
            aspm: link.map(|l| aspm_label(l.aspm_enabled.l0s, l.aspm_enabled.l1).to_string()),
            ..PciExpect::default()
        });
    }
    for d in a.usb.iter().flat_map(|u| &u.devices) {
        if d.root_hub {
            continue;
        }
        m.usb.push(UsbExpect {
            name: usb_name(d),
            device: Some(d.name.clone()),
            id: id_of(d.vendor_id, d.product_id),
            speed_mbps: d.speed_mbps,
            transport: d.storage.as_ref().and_then(transport_of),
            ..UsbExpect::default()
        });
    }
    let disks: Vec<&BlockDevice> = a
        .block
        .iter()
        .flat_map(|b| &b.devices)
        .filter(|d| is_hardware_disk(d))
        .collect();
    for d in &disks {
        let path = d.bus_key();
        let id = d.wwid.clone().or_else(|| d.serial.clone());
        // The kernel's name only where nothing stable tells two disks apart.
        let ambiguous = id.is_none()
            && (path.is_none() || disks.iter().filter(|o| o.bus_key() == path).count() > 1);
        let q = d.queue.as_ref();
        m.block.push(BlockExpect {
            name: Some(describe_disk(d)),
            path,
            wwid: d.wwid.clone(),
            serial: d.wwid.is_none().then(|| d.serial.clone()).flatten(),
            device: ambiguous.then(|| d.name.clone()),
            model: d.model.clone(),
            transport: Some(transport_name(d.transport)),
            size_bytes: d.size_bytes,
            rotational: q.and_then(|q| q.rotational),
            scheduler: q.and_then(|q| q.scheduler.clone()),
            max_sectors_kb: q.and_then(|q| q.max_sectors_kb),
            max_hw_sectors_kb: q.and_then(|q| q.max_hw_sectors_kb),
            logical_block_size: q.and_then(|q| q.logical_block_size),
            physical_block_size: q.and_then(|q| q.physical_block_size),
        });
    }
    for i in a.net.iter().flat_map(|n| &n.interfaces) {
        if i.is_virtual {
            continue;
        }
        m.net.push(NetExpect {
            name: i.driver.as_ref().map(|d| format!("driver {d}")),
            interface: Some(i.name.clone()),
            speed_mbps: i.speed_mbps,
            ..NetExpect::default()
        });
    }
    m
}

/// A whole disk with hardware below it: what a host's manifest expects (partitions follow
/// their disk; loop, dm, md, zram and ram devices are configuration, not hardware).
fn is_hardware_disk(d: &BlockDevice) -> bool {
    use model::path::Transport;
    d.kind == BlockKind::Disk && !matches!(d.transport, Transport::Virtual | Transport::Unknown)
}

/// `sda, KINGSTON SH103S3240G` (the kernel's name now, then the model when known).
fn describe_disk(d: &BlockDevice) -> String {
    match &d.model {
        Some(m) => format!("{}, {}", d.name, m.trim()),
        None => d.name.clone(),
    }
}

fn usb_name(d: &UsbDevice) -> Option<String> {
    d.product_name
        .clone()
        .or_else(|| d.product.clone())
        .or_else(|| d.vendor_name.clone())
}

fn transport_of(s: &model::inventory::usb::MassStorage) -> Option<String> {
    use model::path::StorageTransport;
    match (&s.driver, s.transport) {
        (Some(d), _) if d == "uas" || d == "usb-storage" => Some(d.clone()),
        (_, StorageTransport::Uas) => Some("uas".into()),
        (_, StorageTransport::BulkOnly) => Some("usb-storage".into()),
        _ => None,
    }
}

/// The PCI function (`pci`) or USB device a block device sits on: the nearest of its kind on
/// the way to the CPU (an NVMe, not the root port above it; a USB disk, not its hub). A
/// partition's is its disk's.
fn block_device(a: &AuditDocument, name: &str, pci: bool) -> Option<String> {
    use model::path::Hop;
    let block = a.block.as_ref()?;
    let mut dev = block.devices.iter().find(|d| d.name == name)?;
    if let Some(parent) = &dev.parent {
        dev = block
            .devices
            .iter()
            .find(|d| &d.name == parent)
            .unwrap_or(dev);
    }
    dev.bus_path.iter().find_map(|h| match h {
        Hop::Pci { address, .. } if pci => Some(address.clone()),
        Hop::Usb { name, .. } if !pci => Some(name.clone()),
        _ => None,
    })
}

/// The bus device (`0000:01:00.0`, `2-1`) a network interface sits on.
fn interface_device(a: &AuditDocument, name: &str) -> Option<String> {
    use model::inventory::net::Attachment;
    let i = a.net.as_ref()?.interfaces.iter().find(|i| i.name == name)?;
    match i.attachment.as_ref()? {
        Attachment::Pci { address } => Some(address.clone()),
        Attachment::Usb { device, .. } => Some(device.clone()),
        Attachment::Virtio { pci, .. } => pci.clone(),
        Attachment::Platform { .. } => None,
    }
}

fn same_address(text: &str, a: &PciAddress) -> bool {
    text.parse::<PciAddress>().is_ok_and(|t| &t == a)
}

fn pci_matches(a: &AuditDocument, e: &PciExpect, f: &AuditedFunction) -> bool {
    let eq = |x: &Option<String>, y: Option<String>| match x {
        Some(x) => y.is_some_and(|y| y.eq_ignore_ascii_case(x)),
        None => true,
    };
    e.address
        .as_ref()
        .is_none_or(|s| same_address(s, &f.address))
        && e.slot
            .as_ref()
            .is_none_or(|s| f.slot.as_deref() == Some(s.as_str()))
        && eq(&e.id, id_of(f.vendor_id, f.device_id))
        && e.class.as_ref().is_none_or(|c| match f.class {
            Some(class) if c.len() == 4 => format!("{:04x}", class >> 8).eq_ignore_ascii_case(c),
            Some(class) => format!("{class:06x}").eq_ignore_ascii_case(c),
            None => false,
        })
        && eq(&e.driver, f.driver.clone())
        && e.block
            .as_ref()
            .is_none_or(|b| block_device(a, b, true).is_some_and(|d| same_address(&d, &f.address)))
        && e.interface
            .as_ref()
            .is_none_or(|i| interface_device(a, i).is_some_and(|d| same_address(&d, &f.address)))
}

fn selectors_of(pairs: &[(&str, &Option<String>)]) -> String {
    let s: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
        .collect();
    s.join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use model::pcie::PcieGen;

    #[test]
    fn a_broken_manifest_is_one_sentence_with_its_line() {
        let e = parse(
            "[[pci]]\naddress = \"0000:01:00.0\"\nlink_speed_gts = 9\n",
            "m.toml",
        )
        .unwrap_err();
        assert!(e.starts_with("m.toml is not a valid manifest"), "{e}");
        assert!(e.contains("line 3"), "{e}");
        assert!(e.contains("not a PCI Express rate"), "{e}");
        let e = parse("[[pci]]\nlink_width = 4\n", "m.toml").unwrap_err();
        assert!(e.contains("[[pci]] entry 1 selects nothing"), "{e}");
        let e = parse("[[pci]]\nadress = \"01:00.0\"\n", "m.toml").unwrap_err();
        assert!(e.contains("unknown field `adress`"), "{e}");
        assert!(e.contains("line 2"), "{e}");
        // In a later entry, with another after it: the field's own line, not a table's header
        // (basic-toml 0.1 named the next `[[pci]]`'s line here, which is why it is not used).
        let two = "[[pci]]\naddress = \"01:00.0\"\n\n[[pci]]\nid = \"8086:7ae2\"\nadress = \"x\"\n\n[[pci]]\nid = \"1:2\"\n";
        let e = parse(two, "m.toml").unwrap_err();
        assert!(e.contains("unknown field `adress`"), "{e}");
        assert!(e.contains("line 6"), "{e}");
        let e = parse(
            &two.replace("adress = \"x\"", "link_match = \"exact\""),
            "m.toml",
        )
        .unwrap_err();
        assert!(e.contains("unknown variant `exact`"), "{e}");
        assert!(e.contains("line 6"), "{e}");
        let e = parse("[[usb]]\ndevice = \"2-1\"\ntransport = \"bot\"\n", "m.toml").unwrap_err();
        assert!(e.contains("neither \"uas\" nor \"usb-storage\""), "{e}");
    }

    #[test]
    fn a_saved_manifest_reads_back_the_same() {
        let m = Manifest {
            pci: vec![PciExpect {
                name: Some("NVMe \"quoted\"\nnewline".into()),
                address: Some("0000:01:00.0".into()),
                link_speed_gts: Some(PcieGen::Gen1),
                link_width: Some(4),
                link_match: Match::Exactly,
                aspm: Some("L1".into()),
                ..PciExpect::default()
            }],
            ..Manifest::default()
        };
        let text = to_toml(&m, "/");
        assert!(text.contains("link_speed_gts = 2.5"), "{text}");
        assert_eq!(parse(&text, "x").unwrap(), m);
    }
}
