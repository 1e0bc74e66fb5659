//! The hardware chain of a target: from a file, a block device or a network interface down
//! through filesystem, partition, dm/md/loop layers, disk, bus devices and PCI functions to
//! the CPU.
//!
//! The chain is data: the PCI side (link states, ceilings) is attached by address later, and
//! every other hop carries its nominal rate ([`Hop::nominal_rate_mbps`]). A chain that cannot
//! be followed to the end keeps what it found and says in `stopped` why it ends there.
//!
//! Topology comes from the canonical sysfs path of the device (Documentation/ABI/testing/
//! sysfs-devices: a device's directory sits inside its parent's), so the walk is the list of
//! ancestor directories, each recognised by its kernel name (`0000:01:00.0`, `usb4`, `4-1`,
//! `ata1`, `host7`, `mmc0`, `virtio1`) or its `subsystem` link (`platform`).

use crate::mounts::{self, Mount};
use crate::sysfs::{link_name, read_attr, read_attr_noting, read_parsed_noting, SysRoot};
use crate::usb::{self, StorageTransport};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The resolved chain of one target.
#[derive(Clone, Debug, Serialize)]
pub struct Chain {
    /// The target as given.
    pub target: String,
    /// From the target towards the CPU.
    pub hops: Vec<Hop>,
    /// Why the chain ends before the CPU (tmpfs, network filesystem, missing sysfs...).
    pub stopped: Option<String>,
    pub warnings: Vec<String>,
}

/// One branch below a layer (a dm/md slave, a loop device's backing file).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Branch {
    pub hops: Vec<Hop>,
    pub stopped: Option<String>,
}

/// Which kind of storage interface a disk hangs off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Nvme,
    /// SATA or PATA through libata (an `ataN` port in the path).
    Ata,
    /// A SCSI host adapter (SAS, RAID, old AHCI paths without `ataN`).
    Scsi,
    Usb,
    Mmc,
    Virtio,
    /// No hardware below (loop, dm, md, zram, ram).
    Virtual,
    Unknown,
}

/// The kind of a stacking layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LayerKind {
    /// Device mapper: `name` from `dm/name`, `uuid` prefix tells LVM/CRYPT/...
    Dm {
        name: Option<String>,
        uuid: Option<String>,
    },
    /// Software RAID, `level` like `raid1`.
    Md { level: Option<String> },
    /// A loop device and the file behind it.
    Loop { backing_file: Option<PathBuf> },
    /// A network device stacked on others (bridge, bond, VLAN), `DEVTYPE` from its uevent.
    Net { devtype: Option<String> },
}

/// One hop of a chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "hop", rename_all = "snake_case")]
pub enum Hop {
    Filesystem {
        fs_type: String,
        source: String,
        mount_point: PathBuf,
        /// `major:minor` of the filesystem (`st_dev`).
        dev: String,
    },
    Partition {
        name: String,
        number: Option<u32>,
    },
    Layer {
        name: String,
        kind: LayerKind,
        branches: Vec<Branch>,
    },
    Disk {
        name: String,
        transport: Transport,
        model: Option<String>,
        rotational: Option<bool>,
    },
    Network {
        name: String,
        /// Link speed in Mb/s (`None` when down or not reported).
        speed_mbps: Option<u64>,
        duplex: Option<String>,
        driver: Option<String>,
        #[serde(rename = "virtual")]
        is_virtual: bool,
    },
    /// A libata port with its negotiated SATA link speed.
    Ata {
        port: String,
        /// `sata_spd` as the kernel writes it: "6.0 Gbps".
        sata_spd: Option<String>,
        rate_mbps: Option<f64>,
    },
    /// A SCSI host adapter (when there is no libata port or USB device to name instead).
    ScsiHost {
        host: String,
        driver: Option<String>,
    },
    Usb {
        name: String,
        root_hub: bool,
        /// Negotiated rate in Mb/s; already counts both lanes of a Gen 2x2 link.
        speed_mbps: Option<f64>,
        rx_lanes: Option<u32>,
        tx_lanes: Option<u32>,
        version: Option<String>,
        /// Driver of the interface the chain goes through (`uas`, `usb-storage`, `r8152`),
        /// or of the device for hubs.
        driver: Option<String>,
        storage: Option<StorageTransport>,
    },
    Mmc {
        host: String,
        card: Option<String>,
        /// `MMC`, `SD`, `SDIO`.
        card_type: Option<String>,
        /// `timing spec` of debugfs `ios`, e.g. "mmc HS200".
        timing: Option<String>,
        rate_mbps: Option<f64>,
    },
    Virtio {
        name: String,
        driver: Option<String>,
    },
    Pci {
        /// `0000:01:00.0`.
        address: String,
        driver: Option<String>,
    },
    Platform {
        name: String,
        driver: Option<String>,
    },
    Cpu,
}

impl Hop {
    /// The hop's own name, for a hop that can own a link: a PCI address, a USB device name,
    /// a libata port, an MMC host, an interface.
    pub fn id(&self) -> Option<&str> {
        match self {
            Hop::Pci { address, .. } => Some(address),
            Hop::Usb { name, .. } | Hop::Network { name, .. } => Some(name),
            Hop::Ata { port, .. } => Some(port),
            Hop::Mmc { host, .. } => Some(host),
            _ => None,
        }
    }

    /// The nominal signalling rate of this hop in Mb/s (10^6 bit/s), before any encoding
    /// or protocol overhead, where the hop has one of its own. PCI hops get theirs from the
    /// PCIe link state, which is not read here.
    pub fn nominal_rate_mbps(&self) -> Option<f64> {
        match self {
            Hop::Usb { speed_mbps, .. } => *speed_mbps,
            Hop::Ata { rate_mbps, .. } | Hop::Mmc { rate_mbps, .. } => *rate_mbps,
            Hop::Network { speed_mbps, .. } => speed_mbps.map(|s| s as f64),
            _ => None,
        }
    }
}

impl Chain {
    /// Every PCI address on the chain, branches included, from the target towards the CPU.
    pub fn pci_addresses(&self) -> Vec<String> {
        fn walk(hops: &[Hop], out: &mut Vec<String>) {
            for h in hops {
                match h {
                    Hop::Pci { address, .. } => out.push(address.clone()),
                    Hop::Layer { branches, .. } => {
                        branches.iter().for_each(|b| walk(&b.hops, out));
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.hops, &mut out);
        out
    }
}

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

type Walk = (Vec<Hop>, Option<String>);

impl Resolver<'_> {
    fn live(&self) -> bool {
        self.root.root() == Path::new("/")
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

    /// The walk from PCI function `text` (optionally `:BAR`), when it exists here.
    fn pci_function(&mut self, text: &str) -> Option<Walk> {
        let addr = text
            .parse::<crate::pci::address::PciAddress>()
            .ok()
            .or_else(|| text.rsplit_once(':').and_then(|(a, _)| a.parse().ok()))?;
        let path = self
            .root
            .canonical(format!("/sys/bus/pci/devices/{addr}"))
            .ok()?;
        let mut hops = vec![Hop::Pci {
            address: addr.to_string(),
            driver: self.driver(&self.root.path(&path)),
        }];
        let (hw, stopped) = self.hardware(&path);
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
                    let (maj, min) = dev_major_minor(meta.rdev());
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

        let (hw, stopped) = self.hardware(&path);
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
            return (
                hops,
                Some(format!(
                    "{name} is a virtual block device (RAM disk, zram, ...) with no hardware below it"
                )),
            );
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
            let (hw, stopped) = self.hardware(&path);
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
                && !usb::is_pci_address(&name)
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
            if usb::is_pci_address(&name) {
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

/// The value of `KEY=value` in a uevent file.
pub(crate) fn uevent_value(path: &Path, key: &str) -> Option<String> {
    let text = read_attr(path).ok().flatten()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
}

fn name_of(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn is_virtual(path: &Path) -> bool {
    path.starts_with("/sys/devices/virtual")
}

/// The storage transport a disk's ancestor hops say (nearest first).
fn transport_of(hw: &[Hop], path: &Path) -> Transport {
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

/// The bus devices from the device at canonical sysfs path `path` up to the CPU, and the
/// storage transport they make, for the inventories.
pub(crate) fn hardware_at(root: &SysRoot, path: &Path) -> (Vec<Hop>, Transport, Vec<String>) {
    let mut r = Resolver {
        root,
        warnings: Vec::new(),
        visited: BTreeSet::new(),
        mounts: None,
    };
    let (hw, _) = r.hardware(path);
    let t = transport_of(&hw, path);
    (hw, t, r.warnings)
}

fn ata_port(name: &str) -> bool {
    name.strip_prefix("ata")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn scsi_host(name: &str) -> bool {
    name.strip_prefix("host")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn is_virtio(name: &str) -> bool {
    name.strip_prefix("virtio")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `mmc0` directly inside an `mmc_host` directory.
fn is_mmc_host(name: &str, path: &Path) -> bool {
    name.strip_prefix("mmc")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && path.parent().and_then(|p| p.file_name()) == Some("mmc_host".as_ref())
}

/// `mmc0:0001`: host 0, card address (RCA) 0001.
fn is_mmc_card(name: &str) -> bool {
    name.strip_prefix("mmc")
        .and_then(|n| n.split_once(':'))
        .is_some_and(|(h, rca)| {
            !h.is_empty()
                && h.bytes().all(|b| b.is_ascii_digit())
                && rca.len() == 4
                && rca.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// `sata_spd` ("1.5 Gbps", "3.0 Gbps", "6.0 Gbps"; "<unknown>" when the link is down) in
/// Mb/s of line rate.
pub fn parse_sata_spd(s: &str) -> Option<f64> {
    let gbps: f64 = s.trim().strip_suffix("Gbps")?.trim().parse().ok()?;
    Some(gbps * 1000.0)
}

/// The fields of debugfs `mmcN/ios` that set the bus rate (drivers/mmc/core/debugfs.c,
/// `mmc_ios_show`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MmcIos {
    pub clock_hz: Option<u64>,
    pub actual_clock_hz: Option<u64>,
    pub bus_width_bits: Option<u32>,
    /// The name in parentheses of `timing spec`, e.g. "mmc HS200".
    pub timing: Option<String>,
}

impl MmcIos {
    /// Whether the timing transfers on both clock edges (DDR50, DDR52, HS400).
    pub fn double_data_rate(&self) -> bool {
        self.timing
            .as_deref()
            .is_some_and(|t| t.contains("DDR") || t.contains("HS400"))
    }

    /// Bus rate in Mb/s: clock x data lines x (2 for DDR). The actual clock is preferred
    /// over the requested one when the kernel shows both.
    pub fn rate_mbps(&self) -> Option<f64> {
        let clock = self.actual_clock_hz.filter(|c| *c > 0).or(self.clock_hz)?;
        let width = self.bus_width_bits?;
        let edges = if self.double_data_rate() { 2.0 } else { 1.0 };
        Some(clock as f64 * f64::from(width) * edges / 1e6)
    }
}

/// Parse debugfs `ios`: lines `clock:\t\t200000000 Hz`, `bus width:\t3 (8 bits)`,
/// `timing spec:\t9 (mmc HS200)`.
pub fn parse_mmc_ios(text: &str) -> MmcIos {
    let mut ios = MmcIos::default();
    let paren = |v: &str| {
        v.split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(inner, _)| inner.trim().to_string())
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let hz = || value.strip_suffix("Hz").and_then(|v| v.trim().parse().ok());
        match key.trim() {
            "clock" => ios.clock_hz = hz(),
            "actual clock" => ios.actual_clock_hz = hz(),
            "bus width" => {
                ios.bus_width_bits = paren(value)
                    .and_then(|p| p.strip_suffix("bits").map(|b| b.trim().to_string()))
                    .and_then(|b| b.parse().ok());
            }
            "timing spec" => ios.timing = paren(value),
            _ => {}
        }
    }
    ios
}

/// `st_dev` of `path` or of its nearest existing ancestor (a target file may not exist
/// yet), as (major, minor).
fn live_st_dev(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .find_map(|p| std::fs::metadata(p).ok())
        .map(|m| dev_major_minor(m.dev()))
}

/// `(major, minor)` of a `dev_t` (model::blockdev::split_dev, kept here for callers).
pub use model::blockdev::split_dev as dev_major_minor;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_t_split() {
        // makedev(259, 3) and makedev(8, 17) as glibc builds them.
        assert_eq!(dev_major_minor((259 << 8) | 3), (259, 3));
        assert_eq!(dev_major_minor((8 << 8) | 17), (8, 17));
        assert_eq!(
            dev_major_minor((254 << 8) | (300 & 0xff) | ((300 & !0xff) << 12)),
            (254, 300)
        );
    }

    #[test]
    fn sata_speeds() {
        assert_eq!(parse_sata_spd("6.0 Gbps\n"), Some(6000.0));
        assert_eq!(parse_sata_spd("1.5 Gbps"), Some(1500.0));
        assert_eq!(parse_sata_spd("<unknown>"), None);
    }

    #[test]
    fn mmc_ios_hs200_and_hs400() {
        // Layout of mmc_ios_show() output (kernel 6.x) for an eMMC in HS200.
        let hs200 = "clock:\t\t200000000 Hz\nactual clock:\t200000000 Hz\nvdd:\t\t21 (3.3 ~ 3.4 V)\n\
                     bus mode:\t2 (push-pull)\nchip select:\t0 (don't care)\npower mode:\t2 (on)\n\
                     bus width:\t3 (8 bits)\ntiming spec:\t9 (mmc HS200)\nsignal voltage:\t1 (1.80 V)\n\
                     driver type:\t0 (driver type B)\n";
        let ios = parse_mmc_ios(hs200);
        assert_eq!(ios.timing.as_deref(), Some("mmc HS200"));
        assert_eq!(ios.bus_width_bits, Some(8));
        assert_eq!(ios.rate_mbps(), Some(1600.0));
        let hs400 = hs200.replace("9 (mmc HS200)", "10 (mmc HS400)");
        assert_eq!(parse_mmc_ios(&hs400).rate_mbps(), Some(3200.0));
        // Kernels before 4.x named HS200/HS400 "mmc high-speed SDR200" / "mmc high-speed HS400".
        let old = hs200.replace("9 (mmc HS200)", "10 (mmc high-speed HS400)");
        assert_eq!(parse_mmc_ios(&old).rate_mbps(), Some(3200.0));
        let sd = "clock:\t\t50000000 Hz\nbus width:\t2 (4 bits)\ntiming spec:\t2 (sd high-speed)\n";
        assert_eq!(parse_mmc_ios(sd).rate_mbps(), Some(200.0));
    }

    #[test]
    fn names() {
        assert!(ata_port("ata1"));
        assert!(!ata_port("ata_port"));
        assert!(scsi_host("host7"));
        assert!(!scsi_host("scsi_host"));
        assert!(is_mmc_card("mmc0:0001"));
        assert!(!is_mmc_card("mmc0"));
        assert!(is_mmc_host(
            "mmc0",
            Path::new("/sys/devices/x/mmc_host/mmc0")
        ));
        assert!(is_virtio("virtio1"));
    }
}
