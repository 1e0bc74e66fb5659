//! A block device by number, and what holds it: the facts `headroom bench disk` needs to say
//! which device a file lives on and to refuse writing to a device in use.
//!
//! Sources (kernel ABI): `/sys/dev/block/MAJ:MIN` links to the device's sysfs directory
//! (Documentation/ABI/stable/sysfs-block, sysfs-dev); a partition's directory sits inside its
//! disk's and has a `partition` attribute; `holders/` lists dm/md devices built on it.
//! Mounts come from [`crate::mounts`] (`/proc/self/mountinfo` field 3 is the mounted
//! device's `MAJ:MIN`); `/proc/swaps` lists active swap areas.

use crate::sysfs::{read_attr, read_parsed, ReadError, SysRoot};
use model::blockdev::{BlockDevice, Hold};
use std::path::{Path, PathBuf};

/// The block device numbered `major:minor`, named as sysfs names it. `Ok(None)` when sysfs has
/// no such device (e.g. a file on tmpfs or overlayfs, whose `st_dev` is an anonymous 0:N).
pub fn resolve(root: &SysRoot, major: u32, minor: u32) -> Result<Option<BlockDevice>, ReadError> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if crate::sysfs::read_link_target(&root.path(&link))?.is_none() {
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
    Ok(Some(BlockDevice {
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
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if !p.join("partition").exists() {
            continue;
        }
        if let (Some(name), Some(dev)) = (file_name(&p), read_attr(&p.join("dev"))?) {
            out.push((name, dev));
        }
    }
    out.sort();
    Ok(out)
}

/// Everything that holds `dev`'s whole disk or any of its partitions: mounts, swap, holders.
/// A whole disk is checked with all its partitions because writing to it overwrites them.
pub fn holds(root: &SysRoot, dev: &BlockDevice) -> Result<Vec<Hold>, ReadError> {
    let members = disk_and_partitions(root, &dev.disk)?;
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
        let rel = if *name == dev.disk {
            format!("/sys/block/{name}/holders")
        } else {
            format!("/sys/block/{}/{name}/holders", dev.disk)
        };
        let dir = root.path(root.canonical(&rel)?);
        if let Ok(entries) = std::fs::read_dir(&dir) {
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

    #[test]
    fn partition_resolves_to_its_disk_and_whole_disk_holds_are_listed() {
        let t = tree();
        let root = SysRoot::new(t.path());
        let part = resolve(&root, 8, 1).unwrap().unwrap();
        assert_eq!((part.name.as_str(), part.disk.as_str()), ("sda1", "sda"));
        assert_eq!(part.partition, Some(1));
        let disk = resolve(&root, 8, 0).unwrap().unwrap();
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
        assert!(resolve(&root, 0, 42).unwrap().is_none());
    }
}
