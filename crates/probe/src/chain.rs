//! The hardware chain of a target: from a file, a block device or a network interface down
//! through filesystem, partition, dm/md/loop layers, disk, bus devices and PCI functions to
//! the CPU.
//!
//! The chain is data ([`model::path::Chain`]): the PCI side (link states, ceilings) is
//! attached by address later ([`crate::path`]), and every other hop carries its nominal rate
//! ([`Hop::nominal_rate_mbps`]). A chain that cannot be followed to the end keeps what it
//! found and says in `stopped` why it ends there.
//!
//! This module is the resolver at the top of probe's one-way chain: it reads the mount table
//! ([`crate::mounts`]), the block and network devices ([`crate::block`], [`crate::net`]) and
//! hands each device's sysfs directory to the hardware walk ([`crate::walk`]); none of them
//! calls back into it.

use crate::mounts;
use crate::sysfs::SysfsExt;
use crate::sysfs::{link_name, read_attr, read_parsed_noting, uevent_value};
use crate::walk::{self, is_virtual, transport_of, Walk};
use model::blockdev::split_dev;
use model::inventory::block::Mount;
use model::path::{Branch, Chain, Hop, LayerKind};
use model::root::SysRoot;
use std::collections::BTreeSet;
use std::path::Path;

/// Deepest nesting of layers and loop files followed (a loop file on a filesystem on a loop
/// ... ); deeper stacks are reported, not followed.
const MAX_DEPTH: usize = 16;

/// Resolve `target` (a file or directory path, `/dev/NAME`, a block device name like
/// `nvme0n1p1`, or a network interface name like `eth0`) under `root`.
pub fn resolve(root: &SysRoot, target: &Path) -> Chain {
    let mut r = Resolver {
        root,
        warnings: Vec::new(),
        visited: BTreeSet::new(),
        mounts: None,
    };
    let (hops, stopped) = r.target(target);
    Chain {
        target: target.display().to_string(),
        hops,
        stopped,
        warnings: r.warnings,
    }
}

struct Resolver<'a> {
    root: &'a SysRoot,
    warnings: Vec<String>,
    /// Block devices already on the current descent: a holder/slave loop ends there.
    visited: BTreeSet<String>,
    mounts: Option<Vec<Mount>>,
}

impl Resolver<'_> {
    fn live(&self) -> bool {
        self.root.is_live()
    }

    fn target(&mut self, target: &Path) -> Walk {
        if !self.root.has_sysfs() {
            return (
                vec![],
                Some(format!(
                    "no sysfs under {}: nothing to follow (is /sys mounted?)",
                    self.root.root().display()
                )),
            );
        }
        let text = target.to_string_lossy();
        // `.` and `..` are directories, never interface names (/sys/class/net/. exists).
        let is_bare_name = !text.contains('/') && !text.is_empty() && text != "." && text != "..";
        if is_bare_name && self.exists(&format!("/sys/class/net/{text}")) {
            return self.net(&text, 0);
        }
        // A name in /sys/class/block whose link dangles is still meant as a block device:
        // resolving it says what is wrong with it.
        if is_bare_name
            && (self.exists(&format!("/sys/class/block/{text}"))
                || crate::block::locate(self.root, &text).is_ok())
        {
            return self.block(&text, 0);
        }
        if let Some(dev) = text.strip_prefix("/dev/") {
            if let Some(walk) = self.video(dev) {
                return walk;
            }
            if let Some(name) = self.dev_node_name(target, dev) {
                return self.block(&name, 0);
            }
        }
        // A PCI function (`0000:01:00.0`, `01:00.0`), or one of its BARs (`0000:01:00.0:2`,
        // as `bench mmio` names them): the function and the links above it.
        if is_bare_name {
            if let Some(walk) = self.pci_function(&text) {
                return walk;
            }
        }
        // A bare name that is no interface, no block device and no file here is a typo, not
        // a file to be created in the current directory.
        if is_bare_name && !(self.live() && target.symlink_metadata().is_ok()) {
            return (
                vec![],
                Some(format!(
                    "{text} is not a network interface, a block device or a file here: give \
                     a path (./{text}), a /dev node or a name from /sys/class/net or \
                     /sys/class/block"
                )),
            );
        }
        self.file(target, 0)
    }

    /// The walk from V4L2 node `name` (`video0`), when sysfs lists it: the node, then the
    /// device it belongs to (a USB camera's interface, a platform device) up to the CPU.
    fn video(&mut self, name: &str) -> Option<Walk> {
        let node = crate::video::node_of(self.root, Path::new(name))?;
        let class = self
            .root
            .canonical(format!("{}/{name}", crate::video::CLASS_DIR))
            .ok()?;
        let mut hops = vec![Hop::Video {
            name: node.name,
            card: node.title,
            driver: node.driver,
        }];
        let (hw, stopped) = walk::hardware(self.root, &class, &mut self.warnings);
        hops.extend(hw);
        Some((hops, stopped))
    }

    /// The walk from PCI function `text` (optionally `:BAR`), when it exists here.
    fn pci_function(&mut self, text: &str) -> Option<Walk> {
        let addr = text
            .parse::<model::inventory::pci::address::PciAddress>()
            .ok()
            .or_else(|| text.rsplit_once(':').and_then(|(a, _)| a.parse().ok()))?;
        let path = self
            .root
            .canonical(format!("/sys/bus/pci/devices/{addr}"))
            .ok()?;
        // The function's own hop, then the walk from it up through the ports above it.
        let driver = link_name(&self.root.path(&path).join("driver")).unwrap_or_else(|e| {
            self.warnings.push(e.to_string());
            None
        });
        let mut hops = vec![Hop::Pci {
            address: addr.to_string(),
            driver,
        }];
        let (hw, stopped) = walk::hardware(self.root, &path, &mut self.warnings);
        hops.extend(hw);
        Some((hops, stopped))
    }

    fn exists(&self, rel: &str) -> bool {
        self.root.path(rel).symlink_metadata().is_ok()
    }

    /// The block device a `/dev/...` path names: by `st_rdev` on the live system (so
    /// `/dev/mapper/x` and `/dev/disk/by-id/...` work), by name elsewhere.
    fn dev_node_name(&mut self, target: &Path, rest: &str) -> Option<String> {
        if self.live() {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            if let Ok(meta) = std::fs::metadata(target) {
                if meta.file_type().is_block_device() {
                    let (maj, min) = split_dev(meta.rdev());
                    return self.name_of_dev(&format!("{maj}:{min}"));
                }
            }
        }
        let name = Path::new(rest).file_name()?.to_string_lossy().into_owned();
        crate::block::locate(self.root, &name)
            .is_ok()
            .then_some(name)
    }

    /// The kernel name of block device `maj:min` (`/sys/dev/block/8:1` -> `sda1`).
    fn name_of_dev(&mut self, dev: &str) -> Option<String> {
        match self.root.canonical(format!("/sys/dev/block/{dev}")) {
            Ok(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Err(e) => {
                self.warnings.push(e.to_string());
                None
            }
        }
    }

    fn mounts(&mut self) -> &[Mount] {
        if self.mounts.is_none() {
            let m = match mounts::read(self.root) {
                Ok((m, w)) => {
                    self.warnings.extend(w);
                    m
                }
                Err(e) => {
                    self.warnings.push(e.to_string());
                    Vec::new()
                }
            };
            self.mounts = Some(m);
        }
        self.mounts.as_deref().unwrap_or_default()
    }

    /// A file: its filesystem (by `st_dev` on the live system, by the mount table otherwise),
    /// then the block device below.
    fn file(&mut self, target: &Path, depth: usize) -> Walk {
        let abs = if target.is_absolute() {
            target.to_path_buf()
        } else if self.live() {
            std::env::current_dir().unwrap_or_default().join(target)
        } else {
            Path::new("/").join(target)
        };
        let stat_dev = if self.live() { live_st_dev(&abs) } else { None };
        let mount = {
            let mounts = self.mounts();
            match stat_dev {
                // Several mounts can share a device (bind mounts): prefer the one holding the path.
                Some(dev) => mounts
                    .iter()
                    .filter(|m| (m.major, m.minor) == dev)
                    .filter(|m| abs.starts_with(&m.mount_point))
                    .max_by_key(|m| m.mount_point.components().count())
                    .or_else(|| mounts.iter().find(|m| (m.major, m.minor) == dev))
                    .cloned(),
                None => mounts::mount_of(mounts, &abs).cloned(),
            }
        };
        let (major, minor) = match (stat_dev, &mount) {
            (Some(d), _) => d,
            (None, Some(m)) => (m.major, m.minor),
            (None, None) => {
                return (
                    vec![],
                    Some(format!(
                        "{} is on no mount listed in {} and cannot be examined here: \
                         its filesystem is unknown",
                        abs.display(),
                        self.root.path("/proc/self/mountinfo").display()
                    )),
                )
            }
        };
        let dev = format!("{major}:{minor}");
        let mut hops = vec![Hop::Filesystem {
            fs_type: mount
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |m| m.fs_type.clone()),
            source: mount.as_ref().map(|m| m.source.clone()).unwrap_or_default(),
            mount_point: mount
                .as_ref()
                .map(|m| m.mount_point.clone())
                .unwrap_or_default(),
            dev: dev.clone(),
        }];
        let name = if major == 0 {
            // Anonymous device: tmpfs, proc, NFS, FUSE... or btrfs/overlay, whose st_dev is
            // anonymous too although a block device sits below; the mount source names it.
            let source = mount.as_ref().map(|m| m.source.clone()).unwrap_or_default();
            let by_source = source
                .strip_prefix("/dev/")
                .and_then(|d| Path::new(d).file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| crate::block::locate(self.root, n).is_ok());
            match by_source {
                Some(n) => n,
                None => {
                    let fs = mount.as_ref().map_or("unknown", |m| m.fs_type.as_str());
                    return (
                        hops,
                        Some(format!(
                            "{fs} filesystem ({source}) is not backed by a block device \
                             (memory, network or pseudo filesystem): the chain ends here"
                        )),
                    );
                }
            }
        } else {
            match self.name_of_dev(&dev) {
                Some(n) => n,
                None => {
                    return (
                        hops,
                        Some(format!(
                            "block device {dev} has no entry in /sys/dev/block: the chain ends \
                             at the filesystem"
                        )),
                    )
                }
            }
        };
        let (more, stopped) = self.block(&name, depth);
        hops.extend(more);
        (hops, stopped)
    }

    /// A block device (disk or partition) down to the hardware.
    fn block(&mut self, name: &str, depth: usize) -> Walk {
        if depth > MAX_DEPTH {
            return (
                vec![],
                Some(format!(
                    "{name}: more than {MAX_DEPTH} nested layers, not followed"
                )),
            );
        }
        if !self.visited.insert(name.to_string()) {
            return (
                vec![],
                Some(format!(
                    "{name} is already on this chain: its holders/slaves form a loop"
                )),
            );
        }
        let walk = self.block_inner(name, depth);
        self.visited.remove(name);
        walk
    }

    fn block_inner(&mut self, name: &str, depth: usize) -> Walk {
        let path = match crate::block::locate(self.root, name) {
            Ok(p) => p,
            Err(e) => return (vec![], Some(format!("block device {name}: {e}"))),
        };
        let dir = self.root.path(&path);
        let mut hops = Vec::new();
        if crate::block::is_partition(&dir) {
            hops.push(Hop::Partition {
                name: name.to_string(),
                number: read_parsed_noting(
                    &dir.join("partition"),
                    |s| s.parse().ok(),
                    &mut self.warnings,
                ),
            });
            let Some(disk) = path.parent().and_then(|p| p.file_name()) else {
                return (hops, Some(format!("partition {name} has no parent disk")));
            };
            let disk = disk.to_string_lossy().into_owned();
            let (more, stopped) = self.block(&disk, depth);
            hops.extend(more);
            return (hops, stopped);
        }

        let slaves = self.root.list(path.join("slaves")).unwrap_or_else(|e| {
            self.warnings.push(e.to_string());
            Vec::new()
        });
        if let Some(kind) = crate::block::layer_of(&dir, name, &mut self.warnings) {
            let mut branches = Vec::new();
            if let LayerKind::Loop {
                backing_file: Some(f),
            } = &kind
            {
                let (h, s) = self.file(f, depth + 1);
                branches.push(Branch {
                    hops: h,
                    stopped: s,
                });
            }
            for slave in &slaves {
                let (h, s) = self.block(slave, depth + 1);
                branches.push(Branch {
                    hops: h,
                    stopped: s,
                });
            }
            let stopped = branches
                .is_empty()
                .then(|| format!("{name} is a layer with nothing below it that sysfs shows"));
            hops.push(Hop::Layer {
                name: name.to_string(),
                kind,
                branches,
            });
            return (hops, stopped);
        }

        let (hw, stopped) = walk::hardware(self.root, &path, &mut self.warnings);
        hops.push(Hop::Disk {
            name: name.to_string(),
            transport: transport_of(&hw, &path),
            model: read_attr(&self.root.attr(path.join("device/model")))
                .ok()
                .flatten(),
            rotational: read_parsed_noting(
                &dir.join("queue/rotational"),
                |s| match s {
                    "0" => Some(false),
                    "1" => Some(true),
                    _ => None,
                },
                &mut self.warnings,
            ),
        });
        if is_virtual(&path) {
            return (hops, Some(virtual_disk_words(name)));
        }
        hops.extend(hw);
        (hops, stopped)
    }

    /// A network interface down to the hardware; virtual ones through their lower devices.
    fn net(&mut self, name: &str, depth: usize) -> Walk {
        let path = match self.root.canonical(format!("/sys/class/net/{name}")) {
            Ok(p) => p,
            Err(e) => return (vec![], Some(format!("network interface {name}: {e}"))),
        };
        let dir = self.root.path(&path);
        let virt = is_virtual(&path);
        let speed = crate::net::read_speed(&dir.join("speed"), &mut self.warnings);
        let mut hops = vec![Hop::Network {
            name: name.to_string(),
            speed_mbps: speed,
            duplex: read_attr(&dir.join("duplex")).ok().flatten(),
            driver: link_name(&self.root.attr(path.join("device/driver")))
                .ok()
                .flatten(),
            is_virtual: virt,
        }];
        if !virt {
            let (hw, stopped) = walk::hardware(self.root, &path, &mut self.warnings);
            hops.extend(hw);
            return (hops, stopped);
        }
        // Bridges, bonds, VLANs list what they sit on as `lower_<name>` links.
        let lowers: Vec<String> = self
            .root
            .list(&path)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| n.strip_prefix("lower_").map(str::to_string))
            .collect();
        if lowers.is_empty() || depth > MAX_DEPTH {
            // lo, veth, dummy, ifb: packets are copied in memory by the CPU.
            hops.push(Hop::Cpu);
            return (hops, None);
        }
        let branches = lowers
            .iter()
            .map(|l| {
                let (h, s) = self.net(l, depth + 1);
                Branch {
                    hops: h,
                    stopped: s,
                }
            })
            .collect();
        let devtype = uevent_value(&dir.join("uevent"), "DEVTYPE");
        hops.push(Hop::Layer {
            name: name.to_string(),
            kind: LayerKind::Net { devtype },
            branches,
        });
        (hops, None)
    }
}

/// `st_dev` of `path` or of its nearest existing ancestor (a target file may not exist
/// yet), as (major, minor).
fn live_st_dev(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .find_map(|p| std::fs::metadata(p).ok())
        .map(|m| split_dev(m.dev()))
}
/// Why the chain of virtual block device `name` ends at it, by the kernel's name for it: a loop
/// device without a backing file (a layer once one is attached), zram, a RAM disk
/// (`brd`: ram0), or another virtual device.
fn virtual_disk_words(name: &str) -> String {
    let kind = if name.starts_with("loop") {
        "a loop device with no backing file attached (`losetup FILE` attaches one; `losetup -a` \
         lists those that have one): "
    } else if name.starts_with("zram") {
        "a compressed RAM disk (zram): "
    } else if name.starts_with("ram") {
        "a RAM disk (brd): "
    } else if name.starts_with("nullb") {
        "a null block device (null_blk), which moves no data: "
    } else {
        ""
    };
    format!("{name} is {kind}a virtual block device with no hardware below it")
}
