//! A block device as the kernel names it, and what holds it (mounts, swap, dm/md).
//!
//! Pure types: `probe::block::{by_number, holds}` fill them from sysfs and procfs, `bench::disk` reads them to
//! say which device a file lives on and to refuse writing to a device that is in use.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A block device by its `major:minor` number (`stat(2)`'s `st_dev` for a file, `st_rdev`
/// for a device node) and the names sysfs gives it under `/sys/dev/block/MAJ:MIN`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNumber {
    pub major: u32,
    pub minor: u32,
    /// The kernel name of this device (`nvme0n1p2`, `sda1`, `vda`, `dm-0`).
    pub name: String,
    /// The whole disk it belongs to (`nvme0n1` for `nvme0n1p2`; itself for a whole disk).
    pub disk: String,
    /// Partition number when `name` is a partition (sysfs `partition` attribute).
    pub partition: Option<u32>,
}

/// Split a `dev_t` (`st_dev`, `st_rdev`) into `(major, minor)` as glibc's
/// `gnu_dev_major`/`gnu_dev_minor` do (sysmacros.h): 12 bits of major at 8..20 and more above
/// 32; minor in the low 8 bits, at 20..32 and above 44. The one splitter of every crate.
pub fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

impl DeviceNumber {
    /// `MAJ:MIN`, as `/proc/self/mountinfo` and `/sys/dev/block` write it.
    pub fn maj_min(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

/// Why a block device (or one of its partitions) must not be written to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hold {
    /// Mounted: `device` is mounted on `mount_point` (from `/proc/self/mountinfo`).
    Mounted { device: String, mount_point: String },
    /// Used as swap (from `/proc/swaps`).
    Swap { device: String },
    /// Held by another block device (`/sys/block/X/holders/`: device-mapper, md, bcache).
    HeldBy { device: String, holder: String },
    /// The backing of a loop device (`/sys/block/LOOP/loop/backing_file` names it, or a file
    /// on a filesystem of it): loop devices appear neither in `holders/` nor as an exclusive
    /// claim, so writing `device` would silently change what `loop_device` reads. `used`
    /// says what holds the loop device in turn (`loop3 is mounted on /mnt/x`).
    BacksLoop {
        device: String,
        loop_device: String,
        backing_file: String,
        used: Vec<String>,
    },
    /// A regular file that backs loop device `loop_device` (the file
    /// `/sys/block/LOOP/loop/backing_file` names, matched by device and inode): writing it
    /// changes what the loop device, and any filesystem mounted from it, reads underneath.
    /// `used` says what holds the loop device in turn.
    BacksLoopAsFile {
        loop_device: String,
        used: Vec<String>,
    },
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hold::Mounted {
                device,
                mount_point,
            } => write!(f, "{device} is mounted on {mount_point}"),
            Hold::Swap { device } => write!(f, "{device} is used as swap"),
            Hold::HeldBy { device, holder } => write!(f, "{device} is held by {holder} (dm/md)"),
            Hold::BacksLoop {
                device,
                loop_device,
                backing_file,
                used,
            } => {
                write!(f, "{device} backs loop device {loop_device}")?;
                if backing_file != &format!("/dev/{device}") {
                    write!(f, " (through {backing_file})")?;
                }
                if !used.is_empty() {
                    write!(f, ", and {}", used.join(", "))?;
                }
                Ok(())
            }
            Hold::BacksLoopAsFile { loop_device, used } => {
                write!(f, "it is the backing file of loop device {loop_device}")?;
                if !used.is_empty() {
                    write!(f, ", and {}", used.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_read_as_sentences() {
        let h = Hold::Mounted {
            device: "loop0".into(),
            mount_point: "/mnt/x".into(),
        };
        assert_eq!(h.to_string(), "loop0 is mounted on /mnt/x");
        let h = Hold::BacksLoop {
            device: "loop1p2".into(),
            loop_device: "loop3".into(),
            backing_file: "/dev/loop1p2".into(),
            used: vec!["loop3 is mounted on /mnt/x".into()],
        };
        assert_eq!(
            h.to_string(),
            "loop1p2 backs loop device loop3, and loop3 is mounted on /mnt/x"
        );
        let h = Hold::BacksLoopAsFile {
            loop_device: "loop0".into(),
            used: vec!["loop0 is mounted on /mnt/img".into()],
        };
        assert_eq!(
            h.to_string(),
            "it is the backing file of loop device loop0, and loop0 is mounted on /mnt/img"
        );
        let d = DeviceNumber {
            major: 259,
            minor: 1,
            name: "nvme0n1p1".into(),
            disk: "nvme0n1".into(),
            partition: Some(1),
        };
        assert_eq!(d.maj_min(), "259:1");
    }

    #[test]
    fn dev_t_split() {
        // makedev(259, 3) and makedev(8, 17) as glibc builds them.
        assert_eq!(split_dev((259 << 8) | 3), (259, 3));
        assert_eq!(split_dev((8 << 8) | 17), (8, 17));
        assert_eq!(
            split_dev((254 << 8) | (300 & 0xff) | ((300 & !0xff) << 12)),
            (254, 300)
        );
    }
}
