//! `/proc/diskstats`: the block layer's per-device I/O counters.
//!
//! Format: Documentation/admin-guide/iostats.rst ("/proc/diskstats" and the field list):
//! `major minor name` then 11 fields (kernels before 4.18), 15 (4.18: discard fields 12-15)
//! or 17 (5.5: flush fields 16-17). Sectors are 512-byte units whatever the device's logical
//! block size (include/linux/blk_types.h, SECTOR_SHIFT 9).

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
use std::collections::BTreeMap;
use std::time::Duration;

/// The counters of one device line. In a delta every field is the difference, except
/// `in_flight`, a gauge, which is the later reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Field 1: reads completed successfully.
    pub reads: u64,
    /// Field 2: reads merged.
    pub reads_merged: u64,
    /// Field 3: sectors read (512 B each).
    pub sectors_read: u64,
    /// Field 4: milliseconds spent reading.
    pub read_ms: u64,
    /// Field 5: writes completed.
    pub writes: u64,
    /// Field 6: writes merged.
    pub writes_merged: u64,
    /// Field 7: sectors written (512 B each).
    pub sectors_written: u64,
    /// Field 8: milliseconds spent writing.
    pub write_ms: u64,
    /// Field 9: I/Os currently in progress (a gauge).
    pub in_flight: u64,
    /// Field 10: milliseconds spent doing I/Os (the device was busy).
    pub io_ms: u64,
    /// Field 11: weighted milliseconds spent doing I/Os.
    pub weighted_io_ms: u64,
    /// Fields 12-15 (4.18+): discards completed, merged, sectors, milliseconds.
    pub discards: Option<[u64; 4]>,
    /// Fields 16-17 (5.5+): flush requests completed, milliseconds.
    pub flushes: Option<[u64; 2]>,
}

impl DiskStats {
    pub fn read_bytes(&self) -> u64 {
        self.sectors_read.saturating_mul(512)
    }
    pub fn write_bytes(&self) -> u64 {
        self.sectors_written.saturating_mul(512)
    }

    /// `self - earlier`, counter by counter (0 where a counter went backwards).
    pub fn since(&self, earlier: &DiskStats) -> DiskStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let arr4 = match (self.discards, earlier.discards) {
            (Some(a), Some(b)) => {
                Some([d(a[0], b[0]), d(a[1], b[1]), d(a[2], b[2]), d(a[3], b[3])])
            }
            _ => None,
        };
        let arr2 = match (self.flushes, earlier.flushes) {
            (Some(a), Some(b)) => Some([d(a[0], b[0]), d(a[1], b[1])]),
            _ => None,
        };
        DiskStats {
            reads: d(self.reads, earlier.reads),
            reads_merged: d(self.reads_merged, earlier.reads_merged),
            sectors_read: d(self.sectors_read, earlier.sectors_read),
            read_ms: d(self.read_ms, earlier.read_ms),
            writes: d(self.writes, earlier.writes),
            writes_merged: d(self.writes_merged, earlier.writes_merged),
            sectors_written: d(self.sectors_written, earlier.sectors_written),
            write_ms: d(self.write_ms, earlier.write_ms),
            in_flight: self.in_flight,
            io_ms: d(self.io_ms, earlier.io_ms),
            weighted_io_ms: d(self.weighted_io_ms, earlier.weighted_io_ms),
            discards: arr4,
            flushes: arr2,
        }
    }
}

/// Parse one line of `/proc/diskstats` into (device name, counters); `None` for a line with
/// fewer than the 11 documented fields or a non-number among them.
pub fn parse_line(line: &str) -> Option<(String, DiskStats)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let name = f.get(2)?.to_string();
    let n: Vec<u64> = f
        .get(3..)?
        .iter()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    if n.len() < 11 {
        return None;
    }
    Some((
        name,
        DiskStats {
            reads: n[0],
            reads_merged: n[1],
            sectors_read: n[2],
            read_ms: n[3],
            writes: n[4],
            writes_merged: n[5],
            sectors_written: n[6],
            write_ms: n[7],
            in_flight: n[8],
            io_ms: n[9],
            weighted_io_ms: n[10],
            discards: (n.len() >= 15).then(|| [n[11], n[12], n[13], n[14]]),
            flushes: (n.len() >= 17).then(|| [n[15], n[16]]),
        },
    ))
}

/// Parse the whole text of `/proc/diskstats`, device name to counters. A malformed line is
/// skipped (one bad line does not hide every other device).
pub fn parse(text: &str) -> BTreeMap<String, DiskStats> {
    text.lines().filter_map(parse_line).collect()
}

/// The counters of device `name` (e.g. `nvme0n1`, `vda`) in the text of `/proc/diskstats`.
pub fn parse_device(text: &str, name: &str) -> Option<DiskStats> {
    text.lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(name))
        .find_map(parse_line)
        .map(|(_, s)| s)
}

/// Samples `/proc/diskstats` under a root: every device, or only the ones asked for.
#[derive(Clone, Debug, Default)]
pub struct DiskStatsSampler {
    pub root: SysRoot,
    /// Keep only these device names (all when empty).
    pub devices: Vec<String>,
}

/// What the devices did between two snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskStatsDelta {
    pub elapsed: Duration,
    pub devices: BTreeMap<String, DiskStats>,
}

impl DiskStatsDelta {
    pub fn device(&self, name: &str) -> Option<&DiskStats> {
        self.devices.get(name)
    }
}

impl DiskStatsSampler {
    pub fn new(root: SysRoot) -> DiskStatsSampler {
        DiskStatsSampler {
            root,
            devices: Vec::new(),
        }
    }

    /// A sampler of one device.
    pub fn device(root: SysRoot, name: &str) -> DiskStatsSampler {
        DiskStatsSampler {
            root,
            devices: vec![name.to_string()],
        }
    }
}

impl Sampler for DiskStatsSampler {
    type Snapshot = Stamped<BTreeMap<String, DiskStats>>;
    type Delta = DiskStatsDelta;

    fn snapshot(&self) -> Result<Self::Snapshot, Error> {
        let text = self.root.read("/proc/diskstats")?;
        let mut all = parse(&text);
        if !self.devices.is_empty() {
            all.retain(|k, _| self.devices.contains(k));
        }
        Ok(Stamped::now(all))
    }

    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> DiskStatsDelta {
        let devices = after
            .value
            .iter()
            .filter_map(|(k, a)| Some((k.clone(), a.since(before.value.get(k)?))))
            .collect();
        DiskStatsDelta {
            elapsed: interval(before, after),
            devices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on this project's build VM (kernel 6.18: 17 fields), and a 4.4-era line (11).
    const DISKSTATS: &str = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n \
        254       0 vda 27781 5177 2198826 34597 57080 43620 8301168 72392 0 14740 109411 \
        11795 31 912064 1265 42816 1156\n   8       0 sda 100 2 800 10 50 1 400 5 1 12 15\n";

    #[test]
    fn fields_by_kernel_version() {
        let all = parse(DISKSTATS);
        let vda = all["vda"];
        assert_eq!(vda.sectors_read, 2_198_826);
        assert_eq!(vda.write_bytes(), 8_301_168 * 512);
        assert_eq!(vda.discards, Some([11795, 31, 912_064, 1265]));
        assert_eq!(vda.flushes, Some([42816, 1156]));
        let sda = all["sda"];
        assert_eq!((sda.reads, sda.in_flight, sda.discards), (100, 1, None));
        assert_eq!(parse_device(DISKSTATS, "vd"), None);
        assert_eq!(parse_line("8 0 sdb 1 2 3"), None, "too few fields");
    }

    #[test]
    fn delta_of_two_fixture_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let file = dir.path().join("proc/diskstats");
        let s = DiskStatsSampler::device(SysRoot::new(dir.path()), "sda");
        std::fs::write(&file, "8 0 sda 100 2 800 10 50 1 400 5 1 12 15\n").unwrap();
        let a = s.snapshot().unwrap();
        std::fs::write(
            &file,
            "8 0 sda 110 2 880 11 50 1 400 5 0 13 16\n8 1 sda1 1 1 1 1 1 1 1 1 1 1 1\n",
        )
        .unwrap();
        let b = s.snapshot().unwrap();
        let d = s.delta(&a, &b);
        assert_eq!(d.devices.len(), 1, "only the device asked for");
        let sda = d.device("sda").unwrap();
        assert_eq!(
            (sda.reads, sda.read_bytes(), sda.in_flight),
            (10, 80 * 512, 0)
        );
    }
}
