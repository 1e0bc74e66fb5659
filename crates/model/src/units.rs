//! Units. headroom follows fio and the seed documents: MB = 10^6 bytes, MiB = 2^20 bytes.
//! The two are never mixed silently: every rate is kept in bytes per second (`f64`) and only
//! converted when printed, with the unit named.

use serde::{Deserialize, Serialize};

/// One megabyte, 10^6 bytes (SI; fio's "MB/s", the seeds' "MB/s").
pub const MB: f64 = 1_000_000.0;
/// One gigabyte, 10^9 bytes.
pub const GB: f64 = 1_000_000_000.0;
/// One mebibyte, 2^20 bytes (IEC).
pub const MIB: f64 = 1_048_576.0;
/// One gibibyte, 2^30 bytes.
pub const GIB: f64 = 1_073_741_824.0;

/// The unit a rate is printed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RateUnit {
    /// 10^6 bytes per second.
    #[default]
    #[serde(rename = "MB/s")]
    MBps,
    /// 2^20 bytes per second.
    #[serde(rename = "MiB/s")]
    MiBps,
}

impl RateUnit {
    /// Bytes in one of this unit's "mega" steps.
    pub fn divisor(self) -> f64 {
        match self {
            RateUnit::MBps => MB,
            RateUnit::MiBps => MIB,
        }
    }

    /// The unit's printed name.
    pub fn label(self) -> &'static str {
        match self {
            RateUnit::MBps => "MB/s",
            RateUnit::MiBps => "MiB/s",
        }
    }

    /// A rate in bytes per second expressed in this unit.
    pub fn of(self, bytes_per_sec: f64) -> f64 {
        bytes_per_sec / self.divisor()
    }
}

/// A rate in bytes per second, printed with SI prefixes as the seeds do
/// ("984.6 MB/s", "7.877 GB/s"), with four significant digits.
pub fn format_rate_si(bytes_per_sec: f64) -> String {
    if bytes_per_sec >= GB {
        format!("{} GB/s", sig4(bytes_per_sec / GB))
    } else {
        format!("{} MB/s", sig4(bytes_per_sec / MB))
    }
}

/// A rate in bytes per second as whole MB/s (10^6 B/s): "397 MB/s", the form of the link
/// ceilings in the audit and the path.
pub fn format_mb_per_s(bytes_per_sec: f64) -> String {
    format!("{:.0} MB/s", bytes_per_sec / MB)
}

/// A rate in bytes per second. Bytes and bits are distinct types so a link's bit rate cannot
/// be printed or compared as bytes (issue 12): convert with [`BitsPerSec::to_bytes`]. In JSON
/// a bare number in a field named `..._bytes_per_sec`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BytesPerSec(pub f64);

/// A rate in bits per second (Ethernet's MAC rate, `speed` in sysfs x 10^6). In JSON a bare
/// number in a field named `..._bits_per_sec`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitsPerSec(pub f64);

impl BytesPerSec {
    /// The same rate in bits per second.
    pub fn to_bits(self) -> BitsPerSec {
        BitsPerSec(self.0 * 8.0)
    }

    /// This rate in `unit` (MB/s or MiB/s).
    pub fn in_unit(self, unit: RateUnit) -> f64 {
        unit.of(self.0)
    }
}

impl BitsPerSec {
    /// The same rate in bytes per second.
    pub fn to_bytes(self) -> BytesPerSec {
        BytesPerSec(self.0 / 8.0)
    }

    /// Megabits per second (10^6 bit/s), iperf3's `Mbits/sec`.
    pub fn mbit(self) -> f64 {
        self.0 / 1e6
    }
}

impl std::fmt::Display for BytesPerSec {
    /// "984.6 MB/s", as [`format_rate_si`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_rate_si(self.0))
    }
}

impl std::fmt::Display for BitsPerSec {
    /// "941.5 Mbit/s" (10^6 bit/s).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} Mbit/s", self.mbit())
    }
}

/// Whole microseconds of a latency in nanoseconds, truncated as cyclictest does for its
/// integer columns (rt-tests src/cyclictest/cyclictest.c: `calcdiff` divides the
/// nanoseconds by 1000 in integer arithmetic, and min, max and the histogram's 1 us buckets
/// keep that value). Every latency headroom prints in whole us goes through here, so the
/// terminal, the report, compare and the history agree with each other and with cyclictest.
pub fn whole_us(ns: u64) -> u64 {
    ns / 1000
}

/// A mean latency in us with one decimal, truncated (not rounded) like [`whole_us`], so
/// "21.9" never reads above cyclictest's "Avg: 21".
pub fn tenths_us(ns: f64) -> f64 {
    (ns / 100.0).floor() / 10.0
}

/// A size in bytes with the largest binary unit that divides it exactly ("16 MiB",
/// "1536 KiB", "1000 B"), as fio and the size flags spell them.
pub fn format_bytes_binary(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (size, name) in UNITS {
        if bytes >= size && bytes % size == 0 {
            return format!("{} {name}", bytes / size);
        }
    }
    format!("{bytes} B")
}

/// A CPU list compactly, as the kernel writes them in sysfs and on its command line
/// (`0-3,8`; Documentation/admin-guide/kernel-parameters.rst, "cpu lists").
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Four significant digits, without trailing zeros after the point being forced.
fn sig4(v: f64) -> String {
    let decimals = if v >= 1000.0 {
        0
    } else if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mb_and_mib_differ_as_documented() {
        assert_eq!(RateUnit::MBps.of(1_000_000.0), 1.0);
        assert!((RateUnit::MiBps.of(1_000_000.0) - 0.953_674).abs() < 1e-6);
    }

    #[test]
    fn whole_mb_per_s() {
        assert_eq!(format_mb_per_s(396.9e6), "397 MB/s");
        assert_eq!(format_mb_per_s(1_048_576.0), "1 MB/s");
    }

    #[test]
    fn si_format_matches_seed_style() {
        assert_eq!(format_rate_si(984.615_384e6), "984.6 MB/s");
        assert_eq!(format_rate_si(7.876_923e9), "7.877 GB/s");
        assert_eq!(format_rate_si(250e6), "250.0 MB/s");
    }

    #[test]
    fn latencies_truncate_like_cyclictest() {
        assert_eq!(whole_us(726_999), 726);
        assert_eq!(whole_us(999), 0);
        assert_eq!(tenths_us(21_950.0), 21.9);
        assert_eq!(format!("{:.1}", tenths_us(719_990.0)), "719.9");
    }

    #[test]
    fn bits_and_bytes_are_different_types() {
        let link = BitsPerSec(1e9);
        assert_eq!(link.to_bytes(), BytesPerSec(125e6));
        assert_eq!(link.to_string(), "1000.0 Mbit/s");
        assert_eq!(link.to_bytes().to_string(), "125.0 MB/s");
        assert_eq!(
            serde_json::to_string(&BitsPerSec(1e9)).unwrap(),
            "1000000000.0"
        );
    }

    #[test]
    fn binary_sizes() {
        assert_eq!(format_bytes_binary(16 << 20), "16 MiB");
        assert_eq!(format_bytes_binary(1536 << 10), "1536 KiB");
        assert_eq!(format_bytes_binary(1 << 30), "1 GiB");
        assert_eq!(format_bytes_binary(1000), "1000 B");
    }
}
