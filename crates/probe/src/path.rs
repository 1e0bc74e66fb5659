//! The path of a target: its hardware chain ([`crate::chain`]) with every link's state and
//! ceiling attached (PCIe from the audit, USB/SATA/MMC/Ethernet from the model), and the
//! bottleneck: the link with the smallest ceiling.

use crate::chain;
use crate::sysfs::SysfsExt;
use model::ceiling::{mmc, sata, usb};
use model::inventory::net::NetInterface;
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::{AuditedFunction, PciAudit};
use model::net;
use model::net::LinkFacts;
use model::path::{Branch, Hop};
use model::path::{LinkKind, PathLink, PathLinkState, TargetPath};
use model::root::SysRoot;
use std::path::{Path, PathBuf};

/// What a target names, decided before anything is resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named {
    /// An existing file or directory (absolute: a relative path is taken from the current
    /// directory; inside a captured tree, from its root).
    File(PathBuf),
    /// A path that does not exist yet (absolute), outside /dev. `bare` when it was given as a
    /// plain name (`foo`), which `path` takes for a mistyped interface or device name.
    Missing { path: PathBuf, bare: bool },
    /// A block device by its kernel name (`nvme0n1p1`), given by name or by a node in /dev.
    BlockDevice(String),
    /// An existing network interface, given by its name.
    Interface(String),
    /// An existing PCI function (`0000:01:00.0`, `01:00.0`), or one of its BARs as `bench
    /// mmio` names them (`0000:01:00.0:2`), given as written.
    PciFunction(String),
    /// A V4L2 device node by its kernel name (`video0`), given by a node in /dev.
    VideoDevice(String),
}

/// What `given` names, the way every command reads a target: a file or directory when it
/// exists as one (relative to the current directory), a block device by its kernel name or a
/// block device node, a network interface only by the name of one that exists. `.` and `..`
/// are directories. A path under /dev that is not a block device node, a directory or a file
/// is refused (`/dev/nvme0n1` on a machine without it), as is anything that is none of these
/// (a character device, a FIFO). `root` other than `/` is a captured tree: names are looked
/// up in its sysfs, files only by its mount table.
pub fn classify(root: &SysRoot, given: &Path) -> Result<Named, String> {
    let text = given.to_string_lossy();
    if text.is_empty() {
        return Err(
            "the target is empty: give a file, a directory, a block device or a network \
             interface"
                .to_string(),
        );
    }
    let live = root.is_live();
    let exists = |rel: &str| root.path(rel).symlink_metadata().is_ok();
    let bare = !text.contains('/') && text != "." && text != "..";
    if bare {
        if exists(&format!("/sys/class/net/{text}")) {
            return Ok(Named::Interface(text.into_owned()));
        }
        if exists(&format!("/sys/class/block/{text}")) || crate::block::locate(root, &text).is_ok()
        {
            return Ok(Named::BlockDevice(text.into_owned()));
        }
        let function = text
            .parse::<model::inventory::pci::address::PciAddress>()
            .ok()
            .or_else(|| text.rsplit_once(':').and_then(|(a, _)| a.parse().ok()));
        if function.is_some_and(|a| exists(&format!("/sys/bus/pci/devices/{a}"))) {
            return Ok(Named::PciFunction(text.into_owned()));
        }
        if !live {
            return Err(format!(
                "{text} is neither a network interface nor a block device in {}: give a name \
                 from its sys/class/net or sys/class/block, or an absolute path",
                root.root().display()
            ));
        }
    }
    if !live {
        let abs = Path::new("/").join(given);
        if let Some(name) = abs
            .strip_prefix("/dev")
            .ok()
            .and_then(|r| r.to_str())
            .filter(|n| exists(&format!("{}/{n}", crate::video::CLASS_DIR)))
        {
            return Ok(Named::VideoDevice(name.to_string()));
        }
        if let Ok(rest) = abs.strip_prefix("/dev") {
            let name = rest.file_name().map(|n| n.to_string_lossy().into_owned());
            return match name.filter(|n| crate::block::locate(root, n).is_ok()) {
                Some(n) => Ok(Named::BlockDevice(n)),
                None => Err(format!(
                    "{text}: no such block device in {}",
                    root.root().display()
                )),
            };
        }
        return Ok(Named::File(abs));
    }
    let abs = std::path::absolute(given).map_err(|e| format!("{text}: {e}"))?;
    match std::fs::metadata(&abs) {
        Ok(m) => {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            let t = m.file_type();
            if t.is_block_device() {
                let (major, minor) = model::blockdev::split_dev(m.rdev());
                return root
                    .canonical(format!("/sys/dev/block/{major}:{minor}"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .map(Named::BlockDevice)
                    .ok_or_else(|| {
                        format!(
                            "{text} is a block device node ({major}:{minor}) that the kernel \
                             does not list in /sys/dev/block: the device is gone"
                        )
                    });
            }
            if t.is_dir() || t.is_file() {
                return Ok(Named::File(abs));
            }
            if t.is_char_device() {
                // A V4L2 node (/dev/video0, or a /dev/v4l/by-id link to one): its kernel
                // name from the device number.
                let (major, minor) = model::blockdev::split_dev(m.rdev());
                let node = root
                    .canonical(format!("/sys/dev/char/{major}:{minor}"))
                    .ok()
                    .filter(|p| {
                        p.parent()
                            .and_then(|d| d.file_name())
                            .is_some_and(|d| d == "video4linux")
                    })
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
                if let Some(name) = node {
                    return Ok(Named::VideoDevice(name));
                }
            }
            let what = if t.is_char_device() {
                "a character device"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else {
                "not a regular file"
            };
            Err(format!(
                "{text} is {what}: give a file, a directory, a block device or a network \
                 interface"
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if on_devtmpfs(&abs) {
                return Err(format!(
                    "{text}: no such block device on this machine (lsblk lists them); /dev \
                     holds device nodes, not files to test"
                ));
            }
            Ok(Named::Missing { path: abs, bare })
        }
        Err(e) => Err(format!("{text}: {e}")),
    }
}

/// The file or device `given` names for `bench disk`, by the rules of `headroom path`
/// ([`classify`]): a bare block device name is the device's /dev node, a bare name
/// that is neither a device nor an existing file is refused with both readings, a path under
/// /dev that is not a block device is refused, an interface is not a disk.
pub fn disk_target(root: &SysRoot, given: &Path) -> Result<PathBuf, String> {
    match classify(root, given)? {
        Named::BlockDevice(name) if !given.to_string_lossy().contains('/') => {
            let node = Path::new("/dev").join(&name);
            if node.exists() {
                Ok(node)
            } else {
                Err(format!(
                    "{name} is a block device without a node in /dev ({} is missing): give the \
                     path of its node",
                    node.display()
                ))
            }
        }
        Named::Interface(name) => Err(format!(
            "{name} is a network interface, not a disk: give a directory, a file (./{name} for \
             one of that name here) or a block device"
        )),
        // `bench disk vdb` for /dev/vda must not create ./vdb: a bare name is a device, as in
        // `path`; a new file needs a path that says so.
        Named::Missing { bare: true, .. } => {
            let name = given.display();
            Err(format!(
                "no block device {name} (lsblk lists them); to test a new file here, write \
                 ./{name}"
            ))
        }
        Named::PciFunction(name) => Err(format!(
            "{name} is a PCI function, not a disk: give its block device (`headroom audit` \
             lists them), a directory or a file; `headroom bench mmio {name}:BAR` measures its \
             BARs"
        )),
        _ => Ok(given.to_path_buf()),
    }
}

/// Whether a path that does not exist would be created on /dev's own filesystem (devtmpfs,
/// in RAM): its nearest existing ancestor is on the filesystem of /dev. `/dev/shm/x` is not
/// (tmpfs of its own); `/dev/nvme0n1` is.
fn on_devtmpfs(abs: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if !abs.starts_with("/dev") {
        return false;
    }
    let Ok(dev) = std::fs::metadata("/dev").map(|m| m.dev()) else {
        return false;
    };
    // Bounded by the path's depth.
    abs.ancestors()
        .skip(1)
        .find_map(|a| std::fs::metadata(a).ok())
        .is_some_and(|m| m.dev() == dev)
}

/// Resolve `target` under `root` to its path, using `audit` for the PCIe links. A target
/// that [`classify`] refuses, or that does not exist on the live system, is an error in one
/// sentence.
pub fn resolve(root: &SysRoot, target: &Path, audit: &PciAudit) -> Result<TargetPath, String> {
    let mut backs_gadget_luns = Vec::new();
    let walk_from: PathBuf = match classify(root, target)? {
        Named::File(p) => {
            backs_gadget_luns = crate::gadget::luns_backed_by(root, &p);
            p
        }
        Named::BlockDevice(name) | Named::Interface(name) | Named::PciFunction(name) => {
            PathBuf::from(name)
        }
        Named::VideoDevice(name) => PathBuf::from(format!("/dev/{name}")),
        Named::Missing { bare: true, .. } => {
            let t = target.display();
            return Err(format!(
                "{t} is not a network interface, a block device or a file here: give a path \
                 (./{t}), a /dev node, or a name from /sys/class/net or /sys/class/block"
            ));
        }
        Named::Missing { path, .. } => {
            let from_cwd = if target.is_absolute() {
                String::new()
            } else {
                format!(" (looked up as {})", path.display())
            };
            return Err(format!(
                "{} does not exist{from_cwd}: give an existing file or directory",
                target.display()
            ));
        }
    };
    let mut chain = chain::resolve(root, &walk_from);
    chain.target = target.display().to_string();
    // The interfaces on the path as the audit's inventory has them (speed, MTU, the shaper
    // at their root): one network ceiling for audit, path and bench net.
    let interfaces = if contains_hop(&chain.hops, &|h| matches!(h, Hop::Network { .. })) {
        let inv = crate::net::scan(root);
        chain.warnings.extend(inv.warnings);
        inv.interfaces
    } else {
        Vec::new()
    };
    let mut links = Vec::new();
    let mut why_none = Vec::new();
    collect_links(&chain.hops, audit, &interfaces, &mut links, &mut why_none);
    let bottleneck = TargetPath::find_bottleneck(&links);
    let bottleneck_from_cpu = TargetPath::find_bottleneck_from_cpu(&links);
    let no_bottleneck_reason = bottleneck.is_none().then(|| {
        let virtio = contains_hop(&chain.hops, &|h| matches!(h, Hop::Virtio { .. }));
        if virtio {
            "no link on this path has a ceiling: virtio is paravirtual (the host's storage or \
             network sets the limit, not a bus headroom can see)"
                .to_string()
        } else if let Some(why) = why_none.first() {
            // An interface says why it bounds nothing (loopback, virtual, no speed).
            why.clone()
        } else if let Some(s) = &chain.stopped {
            format!("no link with a known ceiling before the chain stopped: {s}")
        } else {
            "no link on this path has a known ceiling".to_string()
        }
    });
    Ok(TargetPath {
        chain,
        links,
        bottleneck,
        no_bottleneck_reason,
        bottleneck_from_cpu,
        backs_gadget_luns,
    })
}

fn contains_hop(hops: &[Hop], pred: &dyn Fn(&Hop) -> bool) -> bool {
    hops.iter().any(|h| {
        pred(h)
            || matches!(h, Hop::Layer { branches, .. }
                if branches.iter().any(|b: &Branch| contains_hop(&b.hops, pred)))
    })
}

/// The links of `hops` with their ceilings into `out`; an interface that bounds nothing
/// towards the CPU says why in `why_none`.
fn collect_links(
    hops: &[Hop],
    audit: &PciAudit,
    interfaces: &[NetInterface],
    out: &mut Vec<PathLink>,
    why_none: &mut Vec<String>,
) {
    for h in hops {
        match h {
            Hop::Layer { branches, .. } => {
                for b in branches {
                    collect_links(&b.hops, audit, interfaces, out, why_none);
                }
            }
            Hop::Pci { address, .. } => {
                if let Some(l) = address.parse().ok().and_then(|a| pcie_link(audit, a)) {
                    out.push(l);
                }
            }
            Hop::Usb {
                name,
                root_hub: false,
                speed_mbps: Some(speed),
                rx_lanes,
                version,
                storage,
                ..
            } => {
                let lanes = rx_lanes.unwrap_or(1).clamp(1, 2) as u8;
                let Some(bps) = usb::bulk_ceiling_for_sysfs(*speed, lanes) else {
                    continue;
                };
                // A SuperSpeed device (bcdUSB >= 3.00) could run at 5000 Mb/s at least.
                let v3 = version
                    .as_deref()
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .is_some_and(|v| v >= 3.0);
                let capable = (v3 && *speed < 5000.0).then_some(5000.0);
                let mut notes = Vec::new();
                if capable.is_some() {
                    notes.push("a USB 3 device running at USB 2 speed (port or cable)".into());
                }
                if let Some(s) = storage {
                    notes.push(s.label().to_string());
                }
                out.push(PathLink {
                    hop: h.id().unwrap_or_default().to_string(),
                    kind: LinkKind::Usb,
                    name: format!("USB {name}"),
                    state: PathLinkState::Usb { mbps: *speed },
                    capable_state: capable.map(|c| PathLinkState::Usb { mbps: c }),
                    ceiling_bps: Some(bps),
                    ceiling_other_direction_bps: None,
                    capable_ceiling_bps: capable.and_then(|c| usb::bulk_ceiling_for_sysfs(c, 1)),
                    basis: "bulk transfers (USB 2.0 5.8.4, USB 3.2 8.4: `headroom ceiling usb`)"
                        .into(),
                    note: (!notes.is_empty()).then(|| notes.join("; ")),
                });
            }
            Hop::Ata {
                port,
                rate_mbps: Some(rate),
                ..
            } => {
                if let Some(bps) = sata::data_bps(rate / 1000.0) {
                    out.push(PathLink {
                        hop: h.id().unwrap_or_default().to_string(),
                        kind: LinkKind::Sata,
                        name: format!("SATA {port}"),
                        state: PathLinkState::Sata {
                            gbps: rate / 1000.0,
                        },
                        capable_state: None,
                        ceiling_bps: Some(bps),
                        ceiling_other_direction_bps: None,
                        capable_ceiling_bps: None,
                        basis: "data FIS payload after 8b/10b (SATA 3.x 10.5.11: `headroom ceiling sata`)".into(),
                        note: None,
                    });
                }
            }
            Hop::Mmc {
                host,
                timing,
                rate_mbps,
                ..
            } => {
                let mode = timing.as_deref().and_then(mmc::MmcMode::from_ios_timing);
                let (bps, state) = match (mode, rate_mbps) {
                    (Some(m), _) => (mmc::ceiling(m).block_bps, PathLinkState::Mmc(m)),
                    (None, Some(r)) => (r * 1e6 / 8.0, PathLinkState::MmcBus { mbps: *r }),
                    (None, None) => continue,
                };
                out.push(PathLink {
                    hop: h.id().unwrap_or_default().to_string(),
                    kind: LinkKind::Mmc,
                    name: format!("MMC {host}"),
                    state,
                    capable_state: None,
                    ceiling_bps: Some(bps),
                    ceiling_other_direction_bps: None,
                    capable_ceiling_bps: None,
                    basis: "bus clock x width x edges, 512 B blocks (JESD84-B51 6.15: `headroom ceiling mmc`)".into(),
                    note: None,
                });
            }
            Hop::Network { name, .. } => {
                if let Some(i) = interfaces.iter().find(|i| &i.name == name) {
                    interface_links(i, out, why_none);
                }
            }
            _ => {}
        }
    }
}

/// An interface's own links: its Ethernet link at its speed (both directions; none for a
/// virtual or loopback interface, or one without a speed) and the tbf shaper at its root
/// (only what this host sends), each with the ceiling [`model::net::link_ceiling`] is made
/// of, for the audit's transfers (TCP/IPv4 with timestamps). The adapter's USB or PCIe link
/// is a link of its own on the path, so neither caps these.
fn interface_links(i: &NetInterface, out: &mut Vec<PathLink>, why_none: &mut Vec<String>) {
    let Some(mtu) = i.mtu else {
        why_none.push(format!("the MTU of {} is not known: no ceiling", i.name));
        return;
    };
    let (p, what) = net::audit_transfers(mtu);
    // What arrives is bounded by the link alone: its ceiling, or why there is none.
    let facts = net::LinkFacts {
        usb_speed_mbps: None,
        ..i.link_facts()
    };
    match (
        net::link_ceiling(&facts, &p, what, net::Way::Receives),
        i.speed_mbps,
    ) {
        (Ok(c), Some(mbps)) => out.push(PathLink {
            kind: LinkKind::Ethernet,
            hop: i.name.clone(),
            name: i.name.clone(),
            state: PathLinkState::Ethernet { mbps, mtu },
            capable_state: None,
            ceiling_bps: Some(c.goodput_bps),
            ceiling_other_direction_bps: None,
            capable_ceiling_bps: None,
            basis: c.basis,
            note: None,
        }),
        (Err(why), _) => why_none.push(why),
        (Ok(_), None) => {}
    }
    let Some(shaper) = &i.shaper else {
        return;
    };
    match net::shaper_ceiling(&facts, &p, what) {
        Some(Ok(c)) => out.push(PathLink {
            kind: LinkKind::Shaper,
            hop: i.name.clone(),
            name: format!("tbf qdisc on {}", i.name),
            state: PathLinkState::Tbf {
                bits_per_sec: shaper.rate_bps.round() as u64,
                overhead: shaper.overhead,
            },
            capable_state: None,
            ceiling_bps: None,
            ceiling_other_direction_bps: Some(c.goodput_bps),
            capable_ceiling_bps: None,
            basis: c.basis,
            note: Some(format!(
                "egress of {}: it bounds what this host sends, not what it receives",
                i.name
            )),
        }),
        Some(Err(why)) => why_none.push(why),
        None => {}
    }
}

/// The PCIe link above function `a` (its own, or function 0's for a multi-function device),
/// or the function's own link when its port above is not visible.
fn pcie_link(audit: &PciAudit, a: PciAddress) -> Option<PathLink> {
    let same_device = |b: &PciAddress| (b.domain, b.bus, b.device) == (a.domain, a.bus, a.device);
    let f: &AuditedFunction = audit.functions.iter().find(|f| f.address == a)?;
    let (name, c, ceil, note) = match audit.links.iter().find(|l| same_device(&l.downstream)) {
        Some(l) => {
            let c = &l.comparison;
            let note = if c.below_common() {
                Some(format!("link below what both ends support ({})", c.common))
            } else if c.current.gen < c.downstream.gen || c.current.width < c.downstream.width {
                Some(format!(
                    "the device can do {}, the port above only {}",
                    c.downstream, c.upstream
                ))
            } else {
                None
            };
            (
                format!("PCIe {} -> {}", l.upstream, l.downstream),
                *c,
                &l.ceiling,
                note,
            )
        }
        None => {
            let ceil = f.own_link_ceiling.as_ref()?;
            let cur = f.current_link()?;
            let cap = f.capable_link()?;
            let c = model::LinkComparison::new(cur, cap, cap);
            let note = (cur != cap).then(|| format!("downgraded from {cap}"));
            (format!("PCIe {a}"), c, ceil, note)
        }
    };
    let capable = (c.common != c.current).then_some(PathLinkState::Pcie(c.common));
    Some(PathLink {
        kind: LinkKind::Pcie,
        hop: a.to_string(),
        name,
        state: PathLinkState::Pcie(c.current),
        capable_ceiling_bps: capable.as_ref().map(|_| ceil.capable.effective_write_bps),
        capable_state: capable,
        ceiling_bps: Some(ceil.current.effective_write_bps),
        ceiling_other_direction_bps: Some(ceil.current.effective_read_bps),
        basis: format!(
            "effective PCIe write, MPS {} B (`headroom ceiling pcie`, default assumptions)",
            ceil.current.params.mps
        ),
        note,
    })
}

/// What probe can tell about the interface a network test used (`bench net`): the audit's facts of it
/// ([`NetInterface::link_facts`](model::inventory::net::NetInterface::link_facts): speed, MTU, the USB link of its adapter, the tbf at its
/// root), and what only this end's live system says (timestamps, the PCIe link, GSO).
/// What probe could not read of the interfaces is returned as notes.
pub fn net_link_facts(root: &SysRoot, iface: &str) -> (Option<LinkFacts>, Vec<String>) {
    let inv = crate::net::scan(root);
    let notes = inv.warnings;
    let Some(i) = inv.interfaces.iter().find(|i| i.name == iface) else {
        return (None, notes);
    };
    // Documentation/networking/ip-sysctl.rst: 0 off, 1 on (with random offsets), 2 on.
    let tcp_timestamps = crate::sysfs::read_attr(&root.path("/proc/sys/net/ipv4/tcp_timestamps"))
        .ok()
        .flatten()
        .and_then(|s| s.parse().ok());
    let mut facts_notes = Vec::new();
    if crate::qdisc::gso_max_segs(iface) == Some(1) {
        facts_notes.push(format!(
            "GSO is limited to one segment per packet on {iface} (gso_max_segs 1): every \
             packet crosses the stack alone, which costs CPU per byte"
        ));
    }
    // The bus links below the interface (`headroom path IFACE`): the narrowest PCIe one.
    let pcie_ceiling = if i.is_virtual {
        None
    } else {
        let path = resolve(root, Path::new(iface), &crate::pci::audit_sysfs(root));
        // An interface that cannot be resolved has no bus link to cap it: the Ethernet
        // model alone gives the ceiling.
        path.map(|p| p.links)
            .unwrap_or_default()
            .iter()
            .filter(|l| l.kind == LinkKind::Pcie)
            .filter_map(|l| {
                let c = match (l.ceiling_to_cpu_bps(), l.ceiling_from_cpu_bps()) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => a.or(b)?,
                };
                Some((format!("{} at {}", l.name, l.state), c))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    (
        Some(LinkFacts {
            tcp_timestamps,
            pcie_ceiling,
            notes: facts_notes,
            ..i.link_facts()
        }),
        notes,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    #[test]
    fn what_bench_disk_refuses_to_take_for_a_disk() {
        let root = SysRoot::system();
        // Every Linux has `lo`; a bare name that names nothing is taken for a device.
        let e = disk_target(&root, Path::new("lo")).unwrap_err();
        assert!(
            e.starts_with("lo is a network interface, not a disk"),
            "{e}"
        );
        let e = disk_target(&root, Path::new("no-such-disk-s9")).unwrap_err();
        assert!(e.contains("write ./no-such-disk-s9"), "{e}");
        // A path that says it is a file is taken as given (bench disk creates it).
        let file = Path::new("./no-such-disk-s9");
        assert_eq!(disk_target(&root, file).unwrap(), file);
    }
}
