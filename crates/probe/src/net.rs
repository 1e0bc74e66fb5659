//! Network inventory: `/sys/class/net` interfaces with link speed, duplex, MTU, state,
//! driver and the device they hang off.
//!
//! Attributes: Documentation/ABI/testing/sysfs-class-net. `speed` is in Mb/s; reading it
//! fails with EINVAL when the link is down or the driver has no idea (the fixtures store such
//! a file empty), and virtio reports -1 (SPEED_UNKNOWN). The link partner's abilities are
//! not in sysfs at all (only the ethtool netlink/ioctl API has them), so a link negotiated
//! below what the partner offers cannot be seen from here.

use crate::sysfs::SysfsExt;
use crate::sysfs::{
    link_name, read_attr, read_attr_noting, read_parsed_noting, ReadErrorKind, SysRoot,
};
use crate::walk;
use model::path::Hop;
use model::{Finding, Severity};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, Serialize)]
pub struct NetInventory {
    pub interfaces: Vec<NetInterface>,
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetInterface {
    pub name: String,
    /// Negotiated link speed, Mb/s; `None` when down, virtual or not reported.
    pub speed_mbps: Option<u64>,
    /// `full`, `half`, `unknown`.
    pub duplex: Option<String>,
    pub mtu: Option<u32>,
    /// `up`, `down`, `unknown`, `dormant`...
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub mac_address: Option<String>,
    /// Driver of the device (`e1000e`, `virtio_net`, `r8152`).
    pub driver: Option<String>,
    /// What it hangs off; `None` for virtual interfaces.
    pub attachment: Option<Attachment>,
    /// No hardware below (lo, veth, bridge, bond, tun, ifb...).
    #[serde(rename = "virtual")]
    pub is_virtual: bool,
    /// `DEVTYPE` from uevent (`bridge`, `vlan`, `wlan`, `bond`) when the kernel sets one.
    pub devtype: Option<String>,
    pub sysfs_path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "bus", rename_all = "snake_case")]
pub enum Attachment {
    Pci {
        address: String,
    },
    Usb {
        device: String,
        /// The USB device's own rate, Mb/s: a ceiling for the Ethernet link.
        speed_mbps: Option<f64>,
    },
    /// A virtio device, on a PCI function when there is one.
    Virtio {
        name: String,
        pci: Option<String>,
    },
    Platform {
        name: String,
    },
}

/// Read every network interface under the root.
pub fn scan(root: &SysRoot) -> NetInventory {
    let mut inv = NetInventory::default();
    let names = match root.list("/sys/class/net") {
        Ok(n) => n,
        Err(e) => {
            inv.warnings.push(e.to_string());
            return inv;
        }
    };
    for name in names {
        let path = match root.canonical(format!("/sys/class/net/{name}")) {
            Ok(p) => p,
            Err(e) => {
                inv.warnings
                    .push(format!("network interface {name} skipped: {e}"));
                continue;
            }
        };
        if !root.path(&path).is_dir() {
            // bonding_masters and similar files live in /sys/class/net too.
            continue;
        }
        let iface = read_interface(root, &name, &path, &mut inv.warnings);
        inv.findings.extend(findings_for(&iface));
        inv.interfaces.push(iface);
    }
    inv
}

fn read_interface(root: &SysRoot, name: &str, path: &Path, w: &mut Vec<String>) -> NetInterface {
    let dir = root.path(path);
    let is_virtual = path.starts_with("/sys/devices/virtual");
    let attachment = if is_virtual {
        None
    } else {
        let (hops, _, hw_warnings) = walk::hardware_at(root, path);
        w.extend(hw_warnings);
        attachment_of(&hops)
    };
    NetInterface {
        name: name.to_string(),
        speed_mbps: read_speed(&dir.join("speed"), w),
        duplex: read_optional(&dir.join("duplex"), w),
        mtu: read_parsed_noting(&dir.join("mtu"), |s| s.parse().ok(), w),
        operstate: read_attr_noting(&dir.join("operstate"), w),
        carrier: read_optional(&dir.join("carrier"), w).and_then(|c| match c.as_str() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        }),
        mac_address: read_attr_noting(&dir.join("address"), w),
        driver: link_name(&root.attr(path.join("device/driver"))).unwrap_or_else(|e| {
            w.push(e.to_string());
            None
        }),
        attachment,
        is_virtual,
        devtype: crate::sysfs::uevent_value(&dir.join("uevent"), "DEVTYPE"),
        sysfs_path: path.to_path_buf(),
    }
}

/// The first bus device below the interface.
fn attachment_of(hops: &[Hop]) -> Option<Attachment> {
    let first = hops.iter().position(|h| !matches!(h, Hop::Cpu))?;
    match &hops[first] {
        Hop::Pci { address, .. } => Some(Attachment::Pci {
            address: address.clone(),
        }),
        Hop::Usb {
            name, speed_mbps, ..
        } => Some(Attachment::Usb {
            device: name.clone(),
            speed_mbps: *speed_mbps,
        }),
        Hop::Virtio { name, .. } => Some(Attachment::Virtio {
            name: name.clone(),
            pci: hops[first..].iter().find_map(|h| match h {
                Hop::Pci { address, .. } => Some(address.clone()),
                _ => None,
            }),
        }),
        Hop::Platform { name, .. } => Some(Attachment::Platform { name: name.clone() }),
        _ => None,
    }
}

/// An attribute the kernel refuses to read for down or virtual links (EINVAL): that is a
/// state, not an error, so it reads as `None` without a warning. Other errors are noted.
fn read_optional(path: &Path, w: &mut Vec<String>) -> Option<String> {
    match read_attr(path) {
        Ok(v) => v,
        Err(e) if e.kind == ReadErrorKind::Invalid => None,
        Err(e) => {
            w.push(e.to_string());
            None
        }
    }
}

/// `speed` in Mb/s; -1 (SPEED_UNKNOWN, include/uapi/linux/ethtool.h), 0, empty or
/// refused with EINVAL (link down): `None`. Other read errors are noted in `w`.
pub fn read_speed(path: &Path, w: &mut Vec<String>) -> Option<u64> {
    read_optional(path, w).and_then(|s| parse_speed(&s))
}

/// Parse a `speed` value: a positive number of Mb/s.
pub fn parse_speed(s: &str) -> Option<u64> {
    s.trim()
        .parse::<i64>()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)
}

fn findings_for(i: &NetInterface) -> Vec<Finding> {
    let mut out = Vec::new();
    let up = i.operstate.as_deref() == Some("up");
    if up && i.duplex.as_deref() == Some("half") {
        out.push(
            Finding::new(
                Severity::Warning,
                i.name.clone(),
                format!(
                    "{} runs at half duplex{}: usually an autonegotiation mismatch with the \
                     switch port, with collisions and a fraction of the link's throughput.",
                    i.name,
                    i.speed_mbps
                        .map(|s| format!(" ({s} Mb/s)"))
                        .unwrap_or_default()
                ),
            )
            .with_advice(
                "Set both ends to autonegotiate (or both to the same fixed speed and duplex).",
            ),
        );
    }
    if let (
        Some(link),
        Some(Attachment::Usb {
            device,
            speed_mbps: Some(usb),
        }),
    ) = (i.speed_mbps, &i.attachment)
    {
        if (link as f64) > *usb {
            out.push(
                Finding::new(
                    Severity::Warning,
                    i.name.clone(),
                    format!(
                        "{} links at {link} Mb/s but its USB device {device} runs at {usb} Mb/s: \
                         the USB connection caps the throughput.",
                        i.name
                    ),
                )
                .with_advice(
                    "Connect the adapter to a faster USB port (USB 3 for gigabit and above).",
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_values() {
        assert_eq!(parse_speed("1000\n"), Some(1000));
        assert_eq!(parse_speed("-1"), None);
        assert_eq!(parse_speed(""), None);
        assert_eq!(parse_speed("0"), None);
    }
}
