//! Network inventory: `/sys/class/net` interfaces with link speed, duplex, MTU, state,
//! driver and the device they hang off.
//!
//! Attributes: Documentation/ABI/testing/sysfs-class-net. `speed` is in Mb/s; reading it
//! fails with EINVAL when the link is down or the driver has no idea (the fixtures store such
//! a file empty), and virtio reports -1 (SPEED_UNKNOWN). The link partner's abilities are
//! not in sysfs at all (only the ethtool netlink/ioctl API has them), so a link negotiated
//! below what the partner offers cannot be seen from here.

use crate::sysfs::SysfsExt;
use crate::sysfs::{link_name, read_attr, read_attr_noting, read_parsed_noting, ReadErrorKind};
use crate::walk;
use model::path::Hop;
use model::root::SysRoot;

use model::inventory::net::{Attachment, NetInterface, NetInventory};
use std::path::Path;

/// Read every network interface under the root; on the live system also the tbf shaper at
/// the root of each ([`crate::qdisc`]: rtnetlink has it, sysfs does not, and a captured tree
/// has neither).
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
        inv.interfaces.push(iface);
    }
    if root.is_live() && !inv.interfaces.is_empty() {
        match crate::qdisc::root_shapers() {
            Ok(shapers) => {
                for i in &mut inv.interfaces {
                    i.shaper = shapers.get(&i.name).copied();
                }
            }
            Err(e) => inv.warnings.push(e),
        }
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
        shaper: None,
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
