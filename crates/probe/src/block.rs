//! Block inventory: disks and partitions from `/sys/block` and `/sys/class/block`, their
//! queue settings, stacking (holders/slaves), mounts and transport.
//!
//! Attributes: Documentation/ABI/stable/sysfs-block of the kernel. `size` counts 512-byte
//! sectors whatever the logical block size; the `*_kb` queue values are KiB (2^10 B);
//! `scheduler` lists the available elevators with the active one in brackets.
//!
//! A device by number and what holds it ([`by_number`], [`holds`]): `/sys/dev/block/MAJ:MIN`
//! links to the device's directory (Documentation/ABI/stable/sysfs-dev); a partition's
//! directory sits inside its disk's; `holders/` lists dm/md devices built on it; mounts come
//! from [`crate::mounts`] (mountinfo field 3 is `MAJ:MIN`); `/proc/swaps` lists swap areas.

use crate::mounts;
use crate::sysfs::SysfsExt;
use crate::sysfs::{
    read_attr, read_attr_noting, read_link_target, read_parsed, read_parsed_noting, ReadError,
    ReadErrorKind,
};
use crate::walk;
use model::blockdev::{DeviceNumber, Hold};
use model::inventory::block::Mount;
use model::path::{LayerKind, Transport};
use model::root::SysRoot;

use model::inventory::block::{BlockDevice, BlockInventory, BlockKind, MountedAt, QueueSettings};
use std::path::{Path, PathBuf};

/// Bytes per unit of the `size` attribute (include/linux/blk_types.h: SECTOR_SHIFT 9).
const SECTOR_BYTES: u64 = 512;

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
/// Each whole disk of /sys/block with the hardware it sits on (its bus path, as
/// [`scan`] gives it: empty for a virtual device), without reading its attributes,
/// partitions or mounts: what the interrupt lines of the disks' controllers are found from,
/// after a latency run, at a tenth of a scan's cost.
pub fn disk_hardware(root: &SysRoot) -> Vec<(String, Vec<model::path::Hop>)> {
    let Ok(disks) = root.list("/sys/block") else {
        return Vec::new();
    };
    disks
        .into_iter()
        .filter_map(|disk| {
            let path = root.canonical(format!("/sys/block/{disk}")).ok()?;
            let (hops, t, _) = walk::hardware_at(root, &path);
            Some((
                disk,
                if t == Transport::Virtual {
                    Vec::new()
                } else {
                    hops
                },
            ))
        })
        .collect()
}

pub(crate) fn is_partition(dir: &Path) -> bool {
    dir.join("partition").exists()
        || crate::sysfs::uevent_value(&dir.join("uevent"), "DEVTYPE").as_deref()
            == Some("partition")
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
            let (hops, t, hw_warnings) = walk::hardware_at(root, path);
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
        // Identifiers are optional facts (most disks lack one of the two): a missing or
        // unreadable one is simply not known, not a warning.
        serial: disk
            .is_none()
            .then(|| first_attr(root, path, &["serial", "device/serial"]))
            .flatten(),
        wwid: disk
            .is_none()
            .then(|| first_attr(root, path, &["wwid", "device/wwid"]))
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

/// The first of the attributes `names` (relative to the disk's directory `path`, maybe through
/// its `device` link) that holds a value, trimmed.
fn first_attr(root: &SysRoot, path: &Path, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| read_attr(&root.attr(path.join(n))).ok().flatten())
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

/// The request queue of whole disk `disk` (`nvme0n1`, `loop0`; a partition shares its disk's
/// queue), as the audit reads it. `None` when the disk has no queue directory.
pub fn queue_of(root: &SysRoot, disk: &str) -> Option<QueueSettings> {
    let q = root.path(format!("/sys/block/{disk}/queue"));
    q.is_dir().then(|| read_queue(&q, &mut Vec::new()))
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
        max_segments: num("max_segments", w),
        max_segment_size: num("max_segment_size", w),
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

/// The block device numbered `major:minor` (a file's `st_dev`, a device node's `st_rdev`), named as sysfs names it. `Ok(None)` when sysfs has
/// no such device (e.g. a file on tmpfs or overlayfs, whose `st_dev` is an anonymous 0:N).
pub fn by_number(
    root: &SysRoot,
    major: u32,
    minor: u32,
) -> Result<Option<DeviceNumber>, ReadError> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if read_link_target(&root.path(&link))?.is_none() {
        return Ok(None);
    }
    let dir = root.canonical(&link)?;
    let Some(name) = file_name(&dir) else {
        return Ok(None);
    };
    let partition = read_parsed(&root.path(dir.join("partition")), |s| s.parse().ok())?;
    let disk = match partition {
        Some(_) => dir
            .parent()
            .and_then(file_name)
            .unwrap_or_else(|| name.clone()),
        None => name.clone(),
    };
    Ok(Some(DeviceNumber {
        major,
        minor,
        name,
        disk,
        partition,
    }))
}

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The whole disk `disk` and its partitions as `(name, "MAJ:MIN")`.
pub fn disk_and_partitions(root: &SysRoot, disk: &str) -> Result<Vec<(String, String)>, ReadError> {
    let base = PathBuf::from(format!("/sys/block/{disk}"));
    let mut out = Vec::new();
    if let Some(dev) = read_attr(&root.path(base.join("dev")))? {
        out.push((disk.to_string(), dev));
    }
    let dir = root.path(root.canonical(&base)?);
    let Ok(entries) = crate::sysfs::read_dir(&dir) else {
        return Ok(out);
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if !is_partition(&p) {
            continue;
        }
        if let (Some(name), Some(dev)) = (file_name(&p), read_attr(&p.join("dev"))?) {
            out.push((name, dev));
        }
    }
    out.sort();
    Ok(out)
}

/// Everything that holds `dev`'s whole disk or any of its partitions: mounts, swap, holders,
/// loop devices it backs. A whole disk is checked with all its partitions because writing to
/// it overwrites them.
pub fn holds(root: &SysRoot, dev: &DeviceNumber) -> Result<Vec<Hold>, ReadError> {
    holds_of_disk(root, &dev.disk, 0)
}

/// How deep a chain of loop devices is followed (a loop device backing another's backing):
/// the kernel refuses cycles (drivers/block/loop.c loop_validate_file); this bounds the walk
/// whatever a captured tree says.
const LOOP_DEPTH: usize = 8;

/// The holds of disk `disk` and its partitions; `depth` loop devices deep.
fn holds_of_disk(root: &SysRoot, disk: &str, depth: usize) -> Result<Vec<Hold>, ReadError> {
    let members = disk_and_partitions(root, disk)?;
    let mut out = Vec::new();
    // A line that does not parse cannot name one of these devices: its warning is not ours.
    let (mounts, _) = crate::mounts::read(root)?;
    for m in &mounts {
        if let Some((name, _)) = members.iter().find(|(_, d)| *d == m.dev()) {
            out.push(Hold::Mounted {
                device: name.clone(),
                mount_point: m.mount_point.display().to_string(),
            });
        }
    }
    let swaps = read_attr(&root.path("/proc/swaps"))?.unwrap_or_default();
    for swap in parse_swaps(&swaps) {
        let base = swap.rsplit('/').next().unwrap_or(&swap).to_string();
        if members.iter().any(|(n, _)| *n == base) {
            out.push(Hold::Swap { device: base });
        }
    }
    for (name, _) in &members {
        let rel = if name == disk {
            format!("/sys/block/{name}/holders")
        } else {
            format!("/sys/block/{disk}/{name}/holders")
        };
        let dir = root.path(root.canonical(&rel)?);
        if let Ok(entries) = crate::sysfs::read_dir(&dir) {
            let mut holders: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            holders.sort();
            out.extend(holders.into_iter().map(|holder| Hold::HeldBy {
                device: name.clone(),
                holder,
            }));
        }
    }
    for (loop_device, backing_file, number) in loop_backings(root)? {
        let Some((name, _)) = members.iter().find(|(_, d)| *d == number) else {
            continue;
        };
        let used = if depth < LOOP_DEPTH {
            holds_of_disk(root, &loop_device, depth + 1)?
                .iter()
                .map(Hold::to_string)
                .collect()
        } else {
            Vec::new()
        };
        out.push(Hold::BacksLoop {
            device: name.clone(),
            loop_device,
            backing_file,
            used,
        });
    }
    Ok(out)
}

/// Each bound loop device with its backing file's path (`/sys/block/loopN/loop/backing_file`,
/// Documentation/ABI/testing/sysfs-block-loop) and what that file is (links followed, inside
/// the root). A backing that is gone (` (deleted)`) or cannot be looked at is left out:
/// nothing names it any more.
fn bound_loops(root: &SysRoot) -> Result<Vec<(String, String, std::fs::Metadata)>, ReadError> {
    let mut out = Vec::new();
    for name in root.list("/sys/block")? {
        if !name.starts_with("loop") {
            continue;
        }
        let Some(backing) = read_attr(&root.path(format!("/sys/block/{name}/loop/backing_file")))?
        else {
            continue;
        };
        if let Ok(meta) = crate::sysfs::metadata(&root.path(&backing)) {
            out.push((name, backing, meta));
        }
    }
    Ok(out)
}

/// The loop devices whose backing file is the regular file `(dev, ino)` (its `st_dev` and
/// `st_ino`): matched by device and inode, not by name, so another name of the same file (a
/// hard link, a bind mount, a path through a symbolic link) is found as well. What holds
/// each such loop device in turn (a mount of it) is said with it.
pub fn loops_backed_by_file(root: &SysRoot, dev: u64, ino: u64) -> Result<Vec<Hold>, ReadError> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for (name, _, meta) in bound_loops(root)? {
        if !meta.is_file() || meta.dev() != dev || meta.ino() != ino {
            continue;
        }
        let used = holds_of_disk(root, &name, 1)?
            .iter()
            .map(Hold::to_string)
            .collect();
        out.push(Hold::BacksLoopAsFile {
            loop_device: name,
            used,
        });
    }
    Ok(out)
}

/// Each bound loop device with its backing file ([`bound_loops`]) and the `MAJ:MIN` of the
/// block device the backing is (a device node: its `st_rdev`) or lives on (a file: the
/// `st_dev` of its filesystem).
pub fn loop_backings(root: &SysRoot) -> Result<Vec<(String, String, String)>, ReadError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut out: Vec<_> = bound_loops(root)?
        .into_iter()
        .map(|(name, backing, meta)| {
            let number = if meta.file_type().is_block_device() {
                meta.rdev()
            } else {
                meta.dev()
            };
            let (major, minor) = model::blockdev::split_dev(number);
            (name, backing, format!("{major}:{minor}"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The device paths of `/proc/swaps` (first column after the header line).
pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(crate::mounts::unescape)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    // Captured from this project's build VM (kernel 6.18, virtio disk `vda` = 254:0).
    const MOUNTINFO: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        88 27 7:0 / /tmp/my\\040mnt rw,relatime - ext4 /dev/loop0 rw\n";

    #[test]
    fn mountinfo_gives_device_and_unescaped_mount_point() {
        let (m, _) = crate::mounts::parse(MOUNTINFO, Path::new("mountinfo"));
        let dev_and_point = |i: usize| (m[i].dev(), m[i].mount_point.display().to_string());
        assert_eq!(dev_and_point(1), ("254:0".to_string(), "/".to_string()));
        assert_eq!(
            dev_and_point(2),
            ("7:0".to_string(), "/tmp/my mnt".to_string())
        );
    }

    #[test]
    fn swaps_skip_the_header() {
        let s = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /dev/sda2                               partition\t8388604\t\t0\t\t-2\n";
        assert_eq!(parse_swaps(s), vec!["/dev/sda2".to_string()]);
    }

    /// A sysfs tree like the kernel's: disk `sda` (8:0) with partitions `sda1` (8:1, mounted)
    /// and `sda2` (8:2, swap, held by dm-0).
    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let disk = r.join("sys/devices/pci0000:00/0000:00:17.0/ata1/block/sda");
        for (p, dev) in [("sda1", "8:1"), ("sda2", "8:2")] {
            fs::create_dir_all(disk.join(p).join("holders")).unwrap();
            fs::write(disk.join(p).join("dev"), format!("{dev}\n")).unwrap();
            fs::write(disk.join(p).join("partition"), &p[3..]).unwrap();
        }
        fs::create_dir_all(disk.join("sda2/holders/dm-0")).unwrap();
        fs::create_dir_all(disk.join("holders")).unwrap();
        fs::write(disk.join("dev"), "8:0\n").unwrap();
        fs::create_dir_all(r.join("sys/dev/block")).unwrap();
        fs::create_dir_all(r.join("sys/block")).unwrap();
        let up = "../../devices/pci0000:00/0000:00:17.0/ata1/block/sda";
        std::os::unix::fs::symlink(&up[3..], r.join("sys/block/sda")).unwrap();
        std::os::unix::fs::symlink(up, r.join("sys/dev/block/8:0")).unwrap();
        std::os::unix::fs::symlink(format!("{up}/sda1"), r.join("sys/dev/block/8:1")).unwrap();
        fs::create_dir_all(r.join("proc/self")).unwrap();
        fs::write(
            r.join("proc/self/mountinfo"),
            "30 1 8:1 / /boot rw - ext4 /dev/sda1 rw\n",
        )
        .unwrap();
        fs::write(
            r.join("proc/swaps"),
            "Filename Type Size Used Priority\n/dev/sda2 partition 100 0 -2\n",
        )
        .unwrap();
        t
    }

    /// A loop device whose backing is a file on one of the disk's
    /// partitions (or the partition itself) holds the disk; what holds the loop device in
    /// turn (mounted) is said. The partition's number is the real `st_dev` of the temporary
    /// directory's filesystem, where the tree keeps the backing file.
    #[test]
    fn a_loop_device_backed_by_a_partition_or_a_file_on_it_holds_the_disk() {
        use std::os::unix::fs::MetadataExt;
        let t = tree();
        let r = t.path();
        let (major, minor) = model::blockdev::split_dev(fs::metadata(r).unwrap().dev());
        // sda2 is the device the tree's own files are on.
        let disk = r.join("sys/devices/pci0000:00/0000:00:17.0/ata1/block/sda");
        fs::write(disk.join("sda2/dev"), format!("{major}:{minor}\n")).unwrap();
        fs::create_dir_all(r.join("img")).unwrap();
        fs::write(r.join("img/disk.img"), b"an image").unwrap();
        let lp = r.join("sys/devices/virtual/block/loop3");
        fs::create_dir_all(lp.join("loop")).unwrap();
        fs::create_dir_all(lp.join("holders")).unwrap();
        fs::write(lp.join("dev"), "7:3\n").unwrap();
        fs::write(lp.join("loop/backing_file"), "/img/disk.img\n").unwrap();
        std::os::unix::fs::symlink("../devices/virtual/block/loop3", r.join("sys/block/loop3"))
            .unwrap();
        // An unbound loop device has no backing_file.
        fs::create_dir_all(r.join("sys/devices/virtual/block/loop4")).unwrap();
        std::os::unix::fs::symlink("../devices/virtual/block/loop4", r.join("sys/block/loop4"))
            .unwrap();
        fs::write(
            r.join("proc/self/mountinfo"),
            "30 1 8:1 / /boot rw - ext4 /dev/sda1 rw\n31 1 7:3 / /mnt/x rw - ext4 /dev/loop3 rw\n",
        )
        .unwrap();
        let root = SysRoot::new(r);
        let sda = DeviceNumber {
            major: 8,
            minor: 0,
            name: "sda".into(),
            disk: "sda".into(),
            partition: None,
        };
        let h = holds(&root, &sda).unwrap();
        assert_eq!(
            h.last().unwrap().to_string(),
            "sda2 backs loop device loop3 (through /img/disk.img), and loop3 is mounted on /mnt/x"
        );
        assert_eq!(
            loop_backings(&root).unwrap(),
            [(
                "loop3".to_string(),
                "/img/disk.img".to_string(),
                format!("{major}:{minor}")
            )]
        );
    }

    #[test]
    fn partition_resolves_to_its_disk_and_whole_disk_holds_are_listed() {
        let t = tree();
        let root = SysRoot::new(t.path());
        let part = by_number(&root, 8, 1).unwrap().unwrap();
        assert_eq!((part.name.as_str(), part.disk.as_str()), ("sda1", "sda"));
        assert_eq!(part.partition, Some(1));
        let disk = by_number(&root, 8, 0).unwrap().unwrap();
        assert_eq!(disk.partition, None);
        let h: Vec<String> = holds(&root, &disk)
            .unwrap()
            .iter()
            .map(|h| h.to_string())
            .collect();
        assert_eq!(
            h,
            vec![
                "sda1 is mounted on /boot",
                "sda2 is used as swap",
                "sda2 is held by dm-0 (dm/md)"
            ]
        );
        assert!(by_number(&root, 0, 42).unwrap().is_none());
    }
}
