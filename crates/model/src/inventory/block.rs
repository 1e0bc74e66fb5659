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
