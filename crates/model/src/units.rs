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
}
