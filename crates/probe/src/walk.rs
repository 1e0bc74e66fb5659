//! The walk from a device's sysfs directory up to the CPU: each ancestor directory
//! recognised by its kernel name (`0000:01:00.0`, `usb4`, `4-1`, `ata1`, `host7`, `mmc0`,
//! `virtio1`) or its `subsystem` link (`platform`), read through the per-bus parsers
//! ([`crate::usb`], [`crate::bus`]).
//!
//! Topology comes from the canonical sysfs path of the device (Documentation/ABI/testing/
//! sysfs-devices: a device's directory sits inside its parent's), so the walk is the list of
//! ancestor directories. Below this module: sysfs and the per-bus parsers; above it: the
//! block and network inventories and the chain resolver.

use crate::bus::{
    ata_port, is_mmc_card, is_mmc_host, is_virtio, parse_mmc_ios, parse_sata_spd, scsi_host,
};
use crate::sysfs::{link_name, read_attr, read_attr_noting};
use crate::usb;
use model::inventory::pci::address::PciAddress;
use model::path::{Hop, Transport};
use model::root::SysRoot;
use std::path::{Path, PathBuf};

/// A chain that ends here, and why when it ends before the CPU.
pub(crate) type Walk = (Vec<Hop>, Option<String>);

/// The bus devices from the device at canonical sysfs path `path` (`/sys/devices/...`) up to
/// the CPU, and why the walk stops short when it does; what could not be read is added to
/// `warnings`.
pub(crate) fn hardware(root: &SysRoot, path: &Path, warnings: &mut Vec<String>) -> Walk {
    let mut w = Walker {
        root,
        warnings: Vec::new(),
    };
    let walk = w.hardware(path);
    warnings.append(&mut w.warnings);
    walk
}

/// The bus devices from the device at canonical sysfs path `path` up to the CPU, and the
/// storage transport they make, for the inventories.
pub(crate) fn hardware_at(root: &SysRoot, path: &Path) -> (Vec<Hop>, Transport, Vec<String>) {
    let mut warnings = Vec::new();
    let (hw, _) = hardware(root, path, &mut warnings);
    let t = transport_of(&hw, path);
    (hw, t, warnings)
}

struct Walker<'a> {
    root: &'a SysRoot,
    warnings: Vec<String>,
}

impl Walker<'_> {
    /// The bus devices from a device's sysfs directory up to the CPU.
    fn hardware(&mut self, path: &Path) -> Walk {
        let mut hops = Vec::new();
        let comps: Vec<&Path> = path.ancestors().skip(1).collect();
        let under_usb = comps
            .iter()
            .any(|p| name_of(p).is_some_and(|n| usb::is_device_name(&n)));
        let has_ata = comps
            .iter()
            .any(|p| name_of(p).is_some_and(|n| ata_port(&n)));
        let mut iface: Option<(String, Option<String>)> = None; // (interface, driver)
        let mut mmc_card: Option<PathBuf> = None;
        for anc in comps {
            let Some(name) = name_of(anc) else { break };
            let dir = self.root.path(anc);
            if anc == Path::new("/sys/devices") || anc == Path::new("/sys") {
                break;
            }
            if name.starts_with("pci")
                && PciAddress::from_sysfs_name(&name).is_none()
                && anc.parent() == Some(Path::new("/sys/devices"))
            {
                hops.push(Hop::Cpu);
                return (hops, None);
            }
            if anc == Path::new("/sys/devices/platform") || anc == Path::new("/sys/devices/system")
            {
                hops.push(Hop::Cpu);
                return (hops, None);
            }
            if PciAddress::from_sysfs_name(&name).is_some() {
                hops.push(Hop::Pci {
                    address: name,
                    driver: self.driver(&dir),
                });
            } else if usb::is_interface_name(&name) {
                iface = Some((name, self.driver(&dir)));
            } else if usb::is_device_name(&name) {
                let dev = usb::device_at(self.root, anc, None, &mut self.warnings);
                let through = iface
                    .take()
                    .filter(|(i, _)| i.starts_with(&format!("{name}:")));
                let driver = match &through {
                    Some((_, d)) => d.clone(),
                    None => dev.driver.clone(),
                };
                let storage = through.as_ref().and_then(|(i, _)| {
                    dev.storage
                        .as_ref()
                        .filter(|s| &s.interface == i)
                        .map(|s| s.transport)
                });
                hops.push(Hop::Usb {
                    name: dev.name,
                    root_hub: dev.root_hub,
                    speed_mbps: dev.speed_mbps,
                    rx_lanes: dev.rx_lanes,
                    tx_lanes: dev.tx_lanes,
                    version: dev.version,
                    driver,
                    storage,
                });
            } else if ata_port(&name) {
                let (sata_spd, rate_mbps) = self.sata_speed(anc, &name);
                hops.push(Hop::Ata {
                    port: name,
                    sata_spd,
                    rate_mbps,
                });
            } else if scsi_host(&name) {
                if !under_usb && !has_ata {
                    let proc_name = read_attr(&dir.join(format!("scsi_host/{name}/proc_name")))
                        .ok()
                        .flatten();
                    let driver = proc_name
                        .or_else(|| anc.parent().and_then(|p| self.driver(&self.root.path(p))));
                    hops.push(Hop::ScsiHost { host: name, driver });
                }
            } else if is_mmc_card(&name) {
                mmc_card = Some(anc.to_path_buf());
            } else if is_mmc_host(&name, anc) {
                hops.push(self.mmc(&name, mmc_card.take()));
            } else if is_virtio(&name) {
                hops.push(Hop::Virtio {
                    driver: self.driver(&dir),
                    name,
                });
            } else if self.is_platform_device(&dir, anc) {
                hops.push(Hop::Platform {
                    driver: self.driver(&dir),
                    name,
                });
            }
            // Other directories (block, net, nvme, mmc_host, targetH:C:T, H:C:T:L, nvmeN)
            // are class or grouping directories, not a hop of their own.
        }
        let where_ = path.display();
        (
            hops,
            Some(format!(
                "{where_} is not below a PCI root or platform bus that sysfs shows: the chain \
                 ends at the last device found"
            )),
        )
    }

    /// A platform (SoC, ACPI) device: its `subsystem` link says `platform`; in dumps
    /// without `subsystem` links, a directory under /sys/devices/platform with a driver.
    fn is_platform_device(&self, dir: &Path, path: &Path) -> bool {
        match link_name(&dir.join("subsystem")).ok().flatten() {
            Some(subsystem) => subsystem == "platform",
            None => {
                path.starts_with("/sys/devices/platform")
                    && dir.join("driver").symlink_metadata().is_ok()
            }
        }
    }

    fn driver(&mut self, dir: &Path) -> Option<String> {
        link_name(&dir.join("driver")).unwrap_or_else(|e| {
            self.warnings.push(e.to_string());
            None
        })
    }

    /// The SATA link speed of libata port `ataN`: `ataN/linkN/ata_link/linkN/sata_spd`
    /// (Documentation/ABI/testing/sysfs-ata), else `/sys/class/ata_link/linkN/sata_spd`.
    fn sata_speed(&mut self, port_path: &Path, port: &str) -> (Option<String>, Option<f64>) {
        let n = port.trim_start_matches("ata");
        let link = format!("link{n}");
        let candidates = [
            self.root.path(
                port_path
                    .join(&link)
                    .join("ata_link")
                    .join(&link)
                    .join("sata_spd"),
            ),
            self.root
                .path(format!("/sys/class/ata_link/{link}/sata_spd")),
        ];
        for c in candidates {
            if let Some(v) = read_attr_noting(&c, &mut self.warnings) {
                let rate = parse_sata_spd(&v);
                return (Some(v), rate);
            }
        }
        (None, None)
    }

    fn mmc(&mut self, host: &str, card: Option<PathBuf>) -> Hop {
        let card_type = card
            .as_ref()
            .and_then(|c| read_attr_noting(&self.root.path(c).join("type"), &mut self.warnings));
        let ios_path = self.root.path(format!("/sys/kernel/debug/{host}/ios"));
        let (timing, rate_mbps) = match read_attr(&ios_path) {
            Ok(Some(text)) => {
                let ios = parse_mmc_ios(&text);
                let rate = ios.rate_mbps();
                (ios.timing, rate)
            }
            Ok(None) => {
                self.warnings.push(format!(
                    "{}: not found, so the bus timing of {host} is unknown (mount debugfs on \
                     /sys/kernel/debug and run as root to see it)",
                    ios_path.display()
                ));
                (None, None)
            }
            Err(e) => {
                self.warnings
                    .push(format!("{e}; the bus timing of {host} is unknown"));
                (None, None)
            }
        };
        Hop::Mmc {
            host: host.to_string(),
            card: card.as_deref().and_then(name_of),
            card_type,
            timing,
            rate_mbps,
        }
    }
}

pub(crate) fn name_of(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

pub(crate) fn is_virtual(path: &Path) -> bool {
    path.starts_with("/sys/devices/virtual")
}

/// The storage transport a disk's ancestor hops say (nearest first).
pub(crate) fn transport_of(hw: &[Hop], path: &Path) -> Transport {
    if is_virtual(path) {
        return Transport::Virtual;
    }
    if path.components().any(|c| c.as_os_str() == "nvme") {
        return Transport::Nvme;
    }
    for h in hw {
        match h {
            Hop::Ata { .. } => return Transport::Ata,
            Hop::Usb { .. } => return Transport::Usb,
            Hop::Mmc { .. } => return Transport::Mmc,
            Hop::Virtio { .. } => return Transport::Virtio,
            // libata hosts whose path has no ataN (kernels before 2.6.2x): the driver says it,
            // as lsblk decides TRAN from scsi_host proc_name.
            Hop::ScsiHost {
                driver: Some(d), ..
            } if d == "ahci"
                || d.starts_with("sata_")
                || d.starts_with("ata_")
                || d.starts_with("pata_") =>
            {
                return Transport::Ata
            }
            Hop::ScsiHost { .. } => return Transport::Scsi,
            _ => {}
        }
    }
    Transport::Unknown
}
