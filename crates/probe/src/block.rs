//! Block inventory: disks and partitions from `/sys/block` and `/sys/class/block`, their
//! queue settings, stacking (holders/slaves), mounts and transport.
//!
//! Attributes: Documentation/ABI/stable/sysfs-block of the kernel. `size` counts 512-byte
//! sectors whatever the logical block size; the `*_kb` queue values are KiB (2^10 B);
//! `scheduler` lists the available elevators with the active one in brackets.

use crate::chain::{self, LayerKind, Transport};
use crate::mounts::{self, Mount};
use crate::sysfs::{read_attr_noting, read_parsed_noting, ReadError, ReadErrorKind, SysRoot};
use model::{Finding, Severity};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Bytes per unit of the `size` attribute (include/linux/blk_types.h: SECTOR_SHIFT 9).
const SECTOR_BYTES: u64 = 512;

#[derive(Clone, Debug, Default, Serialize)]
pub struct BlockInventory {
    /// Disks, each followed by its partitions.
    pub devices: Vec<BlockDevice>,
    /// The mount table under the root (empty when it has no `/proc/self/mountinfo`).
    pub mounts: Vec<Mount>,
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Disk,
    Partition,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// The bus devices from the disk up to the CPU (disks only; see [`chain::Hop`]).
    pub bus_path: Vec<chain::Hop>,
    /// Where it is mounted, from mountinfo.
    pub mounts: Vec<MountedAt>,
    /// Canonical sysfs directory, within the root.
    pub sysfs_path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountedAt {
    pub mount_point: PathBuf,
    pub fs_type: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    pub nr_requests: Option<u64>,
    pub read_ahead_kb: Option<u64>,
    /// `write back` or `write through`.
    pub write_cache: Option<String>,
}

/// Where block device `name` lives in sysfs (canonical, within the root): through
/// `/sys/class/block`, else `/sys/block` and the partition directories inside each disk
/// (dumps of old systems and util-linux's lsblk dumps have no `/sys/class/block`).
pub fn locate(root: &SysRoot, name: &str) -> Result<PathBuf, ReadError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(not_found(root, name));
    }
    for base in ["/sys/class/block", "/sys/block"] {
        let rel = format!("{base}/{name}");
        if root.path(&rel).symlink_metadata().is_ok() {
            return root.canonical(rel);
        }
    }
    for disk in root.list("/sys/block")? {
        let Ok(disk_path) = root.canonical(format!("/sys/block/{disk}")) else {
            continue;
        };
        let part = disk_path.join(name);
        if is_partition(&root.path(&part)) {
            return Ok(part);
        }
    }
    Err(not_found(root, name))
}

fn not_found(root: &SysRoot, name: &str) -> ReadError {
    ReadError {
        path: root.path(format!("/sys/class/block/{name}")),
        kind: ReadErrorKind::Other("no such block device".to_string()),
    }
}

/// Read every disk and partition under the root.
pub fn scan(root: &SysRoot) -> BlockInventory {
    let mut inv = BlockInventory::default();
    match mounts::read(root) {
        Ok((m, w)) => {
            inv.mounts = m;
            inv.warnings.extend(w);
        }
        Err(e) => inv.warnings.push(e.to_string()),
    }
    let disks = match root.list("/sys/block") {
        Ok(d) => d,
        Err(e) => {
            inv.warnings.push(e.to_string());
            return inv;
        }
    };
    for disk in disks {
        let path = match root.canonical(format!("/sys/block/{disk}")) {
            Ok(p) => p,
            Err(e) => {
                inv.warnings
                    .push(format!("block device {disk} skipped: {e}"));
                continue;
            }
        };
        let d = read_device(root, &disk, &path, None, &inv.mounts, &mut inv.warnings);
        let parts: Vec<String> = root
            .list(&path)
            .unwrap_or_else(|e| {
                inv.warnings.push(e.to_string());
                Vec::new()
            })
            .into_iter()
            .filter(|p| is_partition(&root.path(path.join(p))))
            .collect();
        let mut partitions: Vec<BlockDevice> = parts
            .iter()
            .map(|p| {
                read_device(
                    root,
                    p,
                    &path.join(p),
                    Some(&d),
                    &inv.mounts,
                    &mut inv.warnings,
                )
            })
            .collect();
        partitions.sort_by_key(|p| partition_number(&p.name, &disk));
        inv.findings.extend(findings_for(&d));
        inv.devices.push(d);
        inv.devices.extend(partitions);
    }
    // The same unreadable file (an MMC host's ios, say) is met once per disk on it.
    let mut seen = std::collections::HashSet::new();
    inv.warnings.retain(|w| seen.insert(w.clone()));
    inv
}

/// Whether a block device directory is a partition: it has a `partition` attribute, or
/// (in structure-only dumps) its uevent says `DEVTYPE=partition`.
pub(crate) fn is_partition(dir: &Path) -> bool {
    dir.join("partition").exists()
        || chain::uevent_value(&dir.join("uevent"), "DEVTYPE").as_deref() == Some("partition")
}

/// The number at the end of a partition name, for sorting `sda2` before `sda10`.
fn partition_number(part: &str, disk: &str) -> u64 {
    part.strip_prefix(disk)
        .unwrap_or(part)
        .trim_start_matches('p')
        .parse()
        .unwrap_or(u64::MAX)
}

fn read_device(
    root: &SysRoot,
    name: &str,
    path: &Path,
    disk: Option<&BlockDevice>,
    mounts: &[Mount],
    w: &mut Vec<String>,
) -> BlockDevice {
    let dir = root.path(path);
    let num = |f: &str, w: &mut Vec<String>| {
        read_parsed_noting(&dir.join(f), |s| s.parse::<u64>().ok(), w)
    };
    let flag = |f: &str, w: &mut Vec<String>| read_parsed_noting(&dir.join(f), parse_flag, w);
    let dev = read_attr_noting(&dir.join("dev"), w);
    let list = |sub: &str, w: &mut Vec<String>| {
        root.list(path.join(sub)).unwrap_or_else(|e| {
            w.push(e.to_string());
            Vec::new()
        })
    };
    let (transport, layer, bus_path) = match disk {
        Some(d) => (d.transport, None, Vec::new()),
        None => {
            let (hops, t, hw_warnings) = chain::hardware_at(root, path);
            w.extend(hw_warnings);
            let hops = if t == Transport::Virtual {
                Vec::new()
            } else {
                hops
            };
            (t, layer_of(&dir, name, w), hops)
        }
    };
    let mounted = mounts
        .iter()
        .filter(|m| {
            dev.as_deref() == Some(m.dev().as_str()) || m.source.strip_prefix("/dev/") == Some(name)
        })
        .map(|m| MountedAt {
            mount_point: m.mount_point.clone(),
            fs_type: m.fs_type.clone(),
        })
        .collect();
    BlockDevice {
        name: name.to_string(),
        kind: if disk.is_some() {
            BlockKind::Partition
        } else {
            BlockKind::Disk
        },
        dev,
        parent: disk.map(|d| d.name.clone()),
        size_bytes: num("size", w).map(|s| s.saturating_mul(SECTOR_BYTES)),
        removable: flag("removable", w),
        read_only: flag("ro", w),
        model: disk
            .is_none()
            .then(|| read_attr_noting(&root.attr(path.join("device/model")), w))
            .flatten(),
        vendor: disk
            .is_none()
            .then(|| read_attr_noting(&root.attr(path.join("device/vendor")), w))
            .flatten(),
        queue: disk.is_none().then(|| read_queue(&dir.join("queue"), w)),
        holders: list("holders", w),
        slaves: list("slaves", w),
        layer,
        transport,
        bus_path,
        mounts: mounted,
        sysfs_path: path.to_path_buf(),
    }
}

/// The stacking layer a block device is (dm, md, loop), from its sysfs directory.
pub(crate) fn layer_of(dir: &Path, name: &str, w: &mut Vec<String>) -> Option<LayerKind> {
    if dir.join("dm").is_dir() {
        return Some(LayerKind::Dm {
            name: read_attr_noting(&dir.join("dm/name"), w),
            uuid: read_attr_noting(&dir.join("dm/uuid"), w),
        });
    }
    if dir.join("md").is_dir() {
        return Some(LayerKind::Md {
            level: read_attr_noting(&dir.join("md/level"), w),
        });
    }
    if name.starts_with("loop") && dir.join("loop").is_dir() {
        return Some(LayerKind::Loop {
            backing_file: read_attr_noting(&dir.join("loop/backing_file"), w)
                // The kernel appends " (deleted)" when the file was unlinked.
                .map(|f| PathBuf::from(f.trim_end_matches(" (deleted)"))),
        });
    }
    None
}

fn parse_flag(s: &str) -> Option<bool> {
    match s {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

fn read_queue(q: &Path, w: &mut Vec<String>) -> QueueSettings {
    let num =
        |f: &str, w: &mut Vec<String>| read_parsed_noting(&q.join(f), |s| s.parse::<u64>().ok(), w);
    let (scheduler, schedulers) = read_attr_noting(&q.join("scheduler"), w)
        .map(|s| parse_scheduler(&s))
        .unwrap_or_default();
    QueueSettings {
        scheduler,
        schedulers,
        rotational: read_parsed_noting(&q.join("rotational"), parse_flag, w),
        logical_block_size: num("logical_block_size", w).and_then(|v| u32::try_from(v).ok()),
        physical_block_size: num("physical_block_size", w).and_then(|v| u32::try_from(v).ok()),
        max_sectors_kb: num("max_sectors_kb", w),
        max_hw_sectors_kb: num("max_hw_sectors_kb", w),
        nr_requests: num("nr_requests", w),
        read_ahead_kb: num("read_ahead_kb", w),
        write_cache: read_attr_noting(&q.join("write_cache"), w),
    }
}

/// `none [mq-deadline] kyber bfq` -> (Some("mq-deadline"), all four). A single name without
/// brackets is the active one.
pub fn parse_scheduler(s: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let mut all = Vec::new();
    for word in s.split_whitespace() {
        match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(a) => {
                active = Some(a.to_string());
                all.push(a.to_string());
            }
            None => all.push(word.to_string()),
        }
    }
    if active.is_none() && all.len() == 1 {
        active = all.first().cloned();
    }
    (active, all)
}

fn findings_for(d: &BlockDevice) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(q) = &d.queue else { return out };
    if let (Some(max), Some(hw)) = (q.max_sectors_kb, q.max_hw_sectors_kb) {
        if max < hw {
            // max_hw_sectors_kb 2147483647 (UINT_MAX sectors in KiB) is how virtio-blk and
            // others say they set no limit.
            let accepts = if hw >= 2_147_483_647 {
                "the device sets no limit".to_string()
            } else {
                format!("the device accepts {hw} KiB")
            };
            out.push(
                Finding::new(
                    Severity::Info,
                    d.name.clone(),
                    format!(
                        "max_sectors_kb is {max} KiB while {accepts}: larger I/O is split into \
                         {max} KiB requests."
                    ),
                )
                .with_advice(format!(
                    "For large sequential I/O, raise /sys/block/{}/queue/max_sectors_kb (up \
                     to {hw}).",
                    d.name
                )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_strings_in_the_three_styles() {
        let (a, all) = parse_scheduler("noop anticipatory deadline [cfq]");
        assert_eq!(a.as_deref(), Some("cfq"));
        assert_eq!(all.len(), 4);
        assert_eq!(
            parse_scheduler("[none] mq-deadline").0.as_deref(),
            Some("none")
        );
        let (a, all) = parse_scheduler("none [mq-deadline] kyber bfq");
        assert_eq!(a.as_deref(), Some("mq-deadline"));
        assert_eq!(all, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(parse_scheduler("none").0.as_deref(), Some("none"));
    }

    #[test]
    fn partition_order_is_numeric() {
        assert!(partition_number("sda2", "sda") < partition_number("sda10", "sda"));
        assert_eq!(partition_number("nvme0n1p3", "nvme0n1"), 3);
    }
}
