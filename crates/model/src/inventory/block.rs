//! The block inventory: disks and partitions with their queue settings, stacking, mounts and
//! transport, as `probe::block` reads them (Documentation/ABI/stable/sysfs-block).

use crate::path::{Hop, LayerKind, Transport};
use crate::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BlockInventory {
    /// Disks, each followed by its partitions.
    pub devices: Vec<BlockDevice>,
    /// The mount table under the root (empty when it has no `/proc/self/mountinfo`).
    pub mounts: Vec<Mount>,
    /// This section's findings, once `report::kinds::audit::findings` has judged it (probe leaves
    /// them empty); the document carries them per section.
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

/// Room on a mounted filesystem now (statvfs(3)): what a test file may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeSpace {
    /// Bytes available to an unprivileged user (`f_bavail * f_frsize`).
    pub available_bytes: u64,
    /// Mounted read-only (`ST_RDONLY`).
    pub read_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Disk,
    Partition,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    pub kind: BlockKind,
    /// `major:minor`.
    pub dev: Option<String>,
    /// The disk of a partition.
    pub parent: Option<String>,
    pub size_bytes: Option<u64>,
    pub removable: Option<bool>,
    pub read_only: Option<bool>,
    pub model: Option<String>,
    pub vendor: Option<String>,
    /// The disk's serial number as the kernel shows it (`serial` of a virtio disk,
    /// `device/serial` of an NVMe controller or an MMC card), trimmed. Absent in documents
    /// written before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The kernel's world-wide identifier of the disk (`wwid` of an NVMe namespace,
    /// `device/wwid` of a SCSI or ATA disk: what /dev/disk/by-id names are made of), trimmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwid: Option<String>,
    /// Queue settings (disks only: partitions share their disk's queue).
    pub queue: Option<QueueSettings>,
    /// Devices built on this one (`dm-0`, `md0`).
    pub holders: Vec<String>,
    /// Devices this one is built on.
    pub slaves: Vec<String>,
    /// dm/md/loop details when this is such a layer.
    pub layer: Option<LayerKind>,
    pub transport: Transport,
    /// The bus devices from the disk up to the CPU (disks only; see [`Hop`]).
    pub bus_path: Vec<Hop>,
    /// Where it is mounted, from mountinfo.
    pub mounts: Vec<MountedAt>,
    /// Canonical sysfs directory, within the root.
    pub sysfs_path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountedAt {
    pub mount_point: PathBuf,
    pub fs_type: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueSettings {
    /// The active I/O scheduler (`mq-deadline`, `none`, `cfq`).
    pub scheduler: Option<String>,
    /// All schedulers offered.
    pub schedulers: Vec<String>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    /// Largest request the kernel builds, KiB.
    pub max_sectors_kb: Option<u64>,
    /// Largest request the device accepts, KiB.
    pub max_hw_sectors_kb: Option<u64>,
    /// Most pieces of physically contiguous memory (segments) one request may carry
    /// (Documentation/ABI/stable/sysfs-block, `queue/max_segments`). Absent in documents
    /// written before it was read.
    #[serde(default)]
    pub max_segments: Option<u64>,
    /// Largest segment, bytes (`queue/max_segment_size`).
    #[serde(default)]
    pub max_segment_size: Option<u64>,
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// `write back` or `write through`.
    pub write_cache: Option<String>,
}

impl BlockDevice {
    /// Where the disk sits, from the CPU down, in the style of udev's `ID_PATH`
    /// (/dev/disk/by-path): `pci-0000:00:02.0`, `pci-0000:00:1f.2-ata1`,
    /// `pci-0000:00:1d.7-usb-5-1`, `platform-80860F14:00-mmc0:0001`, with `-nvme-N` for
    /// namespace N of an NVMe controller and `-boot0`, `-boot1`, `-rpmb` for an eMMC's
    /// hardware areas. Made only of names that stay the same across boots
    /// (PCI addresses, platform device names, USB port paths, libata ports, MMC card
    /// addresses), never of the kernel's disk name; `None` for a device with no hardware below.
    pub fn bus_key(&self) -> Option<String> {
        // From the PCI function nearest the disk down (the bridges above it add nothing a
        // PCI address does not already say), as udev's path_id does.
        let from = self
            .bus_path
            .iter()
            .position(|h| matches!(h, Hop::Pci { .. }))
            .map_or(self.bus_path.len(), |i| i + 1);
        let mut parts: Vec<String> = Vec::new();
        for h in self.bus_path[..from].iter().rev() {
            match h {
                Hop::Pci { address, .. } => parts.push(format!("pci-{address}")),
                Hop::Platform { name, .. } => parts.push(format!("platform-{name}")),
                Hop::Usb {
                    name,
                    root_hub: false,
                    ..
                } => parts.push(format!("usb-{name}")),
                Hop::Ata { port, .. } => parts.push(port.clone()),
                Hop::Mmc { host, card, .. } => parts.push(card.clone().unwrap_or(host.clone())),
                _ => {}
            }
        }
        if parts.is_empty() {
            return None;
        }
        if let Some(ns) = nvme_namespace(&self.name) {
            parts.push(format!("nvme-{ns}"));
        }
        if let Some(area) = mmc_area(&self.name) {
            parts.push(area.to_string());
        }
        Some(parts.join("-"))
    }
}

/// The hardware area of an eMMC that the kernel shows as its own disk: `mmcblk0boot1` ->
/// `boot1`, `mmcblk0rpmb` -> `rpmb` (the user area, `mmcblk0`, has none).
fn mmc_area(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mmcblk")?;
    let area = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    (area.starts_with("boot") || area == "rpmb").then_some(area)
}

/// The namespace number of an NVMe disk name (`nvme0n2` -> 2; `nvme0c1n2`, a path of a
/// multipath namespace, -> 2).
fn nvme_namespace(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("nvme")?;
    let (_, ns) = rest.rsplit_once('n')?;
    ns.parse().ok()
}

/// `max_hw_sectors_kb` of a device that sets no limit: UINT_MAX sectors of 512 B in KiB
/// ((2^32 - 1) / 2, rounded down), what a driver that calls
/// `blk_queue_max_hw_sectors(q, UINT_MAX)` (virtio-blk and others) shows.
pub const MAX_HW_SECTORS_KB_NO_LIMIT: u64 = 2_147_483_647;

/// One line of mountinfo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub mount_id: u32,
    pub parent_id: u32,
    /// `st_dev` of files on this mount, as `(major, minor)`.
    pub major: u32,
    pub minor: u32,
    /// The directory of the filesystem that is mounted here (`/` unless a bind mount).
    pub root: PathBuf,
    pub mount_point: PathBuf,
    pub options: String,
    pub fs_type: String,
    /// `/dev/sda1`, `tmpfs`, `server:/export`...
    pub source: String,
}

impl Mount {
    /// `"8:1"`, the form of `/sys/dev/block` names.
    pub fn dev(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, bus_path: Vec<Hop>) -> BlockDevice {
        BlockDevice {
            name: name.into(),
            kind: BlockKind::Disk,
            dev: None,
            parent: None,
            size_bytes: None,
            removable: None,
            read_only: None,
            model: None,
            vendor: None,
            serial: None,
            wwid: None,
            queue: None,
            holders: Vec::new(),
            slaves: Vec::new(),
            layer: None,
            transport: Transport::Unknown,
            bus_path,
            mounts: Vec::new(),
            sysfs_path: PathBuf::new(),
        }
    }

    fn pci(a: &str) -> Hop {
        Hop::Pci {
            address: a.into(),
            driver: None,
        }
    }

    #[test]
    fn a_disk_is_keyed_by_stable_bus_names_not_by_its_kernel_name() {
        let nvme = disk(
            "nvme3n2",
            vec![pci("0000:01:00.0"), pci("0000:00:01.0"), Hop::Cpu],
        );
        assert_eq!(nvme.bus_key().as_deref(), Some("pci-0000:01:00.0-nvme-2"));
        let sata = disk(
            "sdc",
            vec![
                Hop::Ata {
                    port: "ata2".into(),
                    sata_spd: None,
                    rate_mbps: None,
                },
                pci("0000:00:1f.2"),
                Hop::Cpu,
            ],
        );
        assert_eq!(sata.bus_key().as_deref(), Some("pci-0000:00:1f.2-ata2"));
        let mmc = |name: &str| {
            disk(
                name,
                vec![
                    Hop::Mmc {
                        host: "mmc0".into(),
                        card: Some("mmc0:0001".into()),
                        card_type: None,
                        timing: None,
                        rate_mbps: None,
                    },
                    Hop::Platform {
                        name: "80860F14:00".into(),
                        driver: None,
                    },
                    Hop::Cpu,
                ],
            )
        };
        assert_eq!(
            mmc("mmcblk0").bus_key().as_deref(),
            Some("platform-80860F14:00-mmc0:0001")
        );
        assert_eq!(
            mmc("mmcblk0boot1").bus_key().as_deref(),
            Some("platform-80860F14:00-mmc0:0001-boot1")
        );
        assert_eq!(disk("loop0", Vec::new()).bus_key(), None);
    }
}
