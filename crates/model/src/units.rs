//! Units. headroom follows fio and the seed documents: MB = 10^6 bytes, MiB = 2^20 bytes.
//! Every command parses sizes, durations, rates and CPU lists with the functions below.
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
/// be printed or compared as bytes: convert with [`BitsPerSec::to_bytes`]. In JSON
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

// ---- parsing what users type: sizes, durations, rates, CPU lists ----
//
// One parser per kind for every command, so `--bs 4k`, `--size 1.5G`, `vm-bytes=4M`,
// `--runtime 1h` and `-D 2h` read the same everywhere. Each returns the reason a value was
// refused (without the flag's name: the caller puts `--flag VALUE:` in front).

/// Bytes of a size suffix, case-insensitive. The rule (fio's default `kb_base=1024`, which
/// stress-ng and CrystalDiskMark share): `K`, `KB` and `KiB` are 2^10 bytes, `M`/`MB`/`MiB`
/// 2^20, `G` 2^30, `T` 2^40, `P` 2^50; `B` or nothing is bytes. fio's compatibility mode
/// reads `KiB` as 10^3 (fio HOWTO, "kb_base"; fio 3.33 takes `--bs=4KiB` as 4000 bytes),
/// which nobody typing KiB means: here every spelling of a prefix is binary, and the help
/// says so.
fn size_multiplier(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => return None,
    })
}

/// Split `12.5ms` into `("12.5", "ms")`; surrounding blanks and a blank between are ignored.
fn split_number(s: &str) -> (&str, &str) {
    let t = s.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, u) = t.split_at(at);
    (n, u.trim())
}

/// A non-negative decimal number (`12`, `1.5`, `.5`); no sign, no exponent.
fn parse_decimal(n: &str) -> Option<f64> {
    if n.is_empty() || n == "." || n.matches('.').count() > 1 {
        return None;
    }
    n.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// Why a value is not a size (the caller names the flag and the value).
pub const NOT_A_SIZE: &str =
    "not a size: give a number with an optional K, M, G or T, e.g. 4k, 64M, 1.5G";

/// Why a value is not a duration (the caller names the flag and the value).
pub const NOT_A_DURATION: &str =
    "not a duration: give a number with an optional unit, e.g. 10s, 500ms, 5m, 2h";

/// A size in bytes: `4096`, `4k`, `4K`, `4KB`, `4KiB`, `1m`, `64M`, `1.5G` (binary multiples,
/// see [`size_multiplier`]). A fraction is read in full (`1.5G` = 1610612736 bytes), where
/// fio 3.33 stops at the point and silently takes `--size=1.5M` as 1 byte ("size too small
/// ... 1 < 4096", tried on this project's VM); the product must be a whole number of bytes
/// (`0.3k` is refused).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s);
    // The number first: `abc` is not a size at all, not a size in unit "abc".
    let Some(v) = parse_decimal(num) else {
        return Err(NOT_A_SIZE.into());
    };
    let Some(mult) = size_multiplier(unit) else {
        return Err(format!(
            "unknown unit {unit:?}: use K, M, G or T (each 1024 times the one before; KB and \
             KiB mean the same) or a number of bytes, e.g. 4k, 64M"
        ));
    };
    let bytes = v * mult as f64;
    if bytes >= u64::MAX as f64 {
        return Err("too large".into());
    }
    if bytes.fract() != 0.0 {
        return Err(format!(
            "{bytes} is not a whole number of bytes; write it in a smaller unit"
        ));
    }
    Ok(bytes as u64)
}

/// Seconds in a duration unit, case-insensitive (cyclictest's `-D8H`): `d`, `h`, `m`/`min`,
/// `s`/`sec`, `ms`/`msec`, `us`/`usec` (fio's time suffixes); nothing means seconds, as in
/// fio's `runtime` and cyclictest's `-D`.
fn seconds_per(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "usec" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return None,
    })
}

/// The longest duration accepted: a year, a bound against typos (`--runtime 1000000d`).
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 86_400);

/// A duration: `10`, `10s`, `2.5s`, `500ms`, `250us`, `5m`, `1h`, `2d` (see [`seconds_per`]).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (num, unit) = split_number(s);
    // The number first: `abc` is not a duration at all, not one in unit "abc".
    let Some(v) = parse_decimal(num) else {
        return Err(NOT_A_DURATION.into());
    };
    let Some(per) = seconds_per(unit) else {
        return Err(format!(
            "unknown unit {unit:?}: use us, ms, s, m, h or d, e.g. 10s, 500ms"
        ));
    };
    std::time::Duration::try_from_secs_f64(v * per)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(|| "too long (at most 366 days)".to_string())
}

/// A bit rate in bits per second, as iperf3's `-b`: `100M`, `1.5G`, `800k`, `1000000`
/// (decimal multiples: K = 10^3, M = 10^6, G = 10^9, T = 10^12, as networks count bits;
/// iperf3's unit_atof_rate). A trailing `bit/s`, `bps` or `b/s` is allowed.
pub fn parse_bit_rate(s: &str) -> Result<f64, String> {
    let (num, unit) = split_number(s);
    let Some(v) = parse_decimal(num) else {
        return Err("not a rate: give a number with an optional K, M or G, e.g. 100M, 1.5G".into());
    };
    let lower = unit.to_ascii_lowercase();
    let prefix = ["bit/s", "bps", "b/s", "bit"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        .unwrap_or(&lower);
    let mult = match prefix {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: use K, M, G or T (bits per second, 10^3 steps), e.g. 100M"
            ))
        }
    };
    Ok(v * mult)
}

/// A kernel CPU list (`0-3,8,10-11`, Documentation/admin-guide/kernel-parameters.rst "cpu
/// lists"), sorted and without duplicates. An empty string is an empty list; anything
/// malformed is `None`.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let s = s.trim();
    let mut cpus = Vec::new();
    if s.is_empty() {
        return Some(cpus);
    }
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                // Bounded: no real machine has more than 64k CPUs.
                if b < a || b - a > 65_536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// A CPU list in the kernel's compact form (`0-3,8`), as /sys/devices/system/cpu/online
/// writes it. `cpus` need not be sorted.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
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

/// A byte count with the largest binary unit that divides it exactly: `4 KiB`, `256 MiB`,
/// `1 GiB`, `1536 B`... (`1536` is `3 x 512`: `1.5 KiB` would hide that it is not 2^n).
pub fn format_bytes_binary(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b % (1 << shift) == 0 {
            return format!("{} {unit}", b >> shift);
        }
    }
    format!("{b} B")
}

/// A device's capacity in the largest binary unit it reaches, one decimal: `931.5 GiB`,
/// `16.0 MiB`, `512 B` (what `lsblk` prints; a 16 MiB device is not "0.0 GiB").
pub fn format_capacity(b: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift {
            return format!("{:.1} {unit}", b as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{b} B")
}

/// A byte count as fio and CrystalDiskMark write block sizes in test names: `1M`, `128K`,
/// `4K`, `512` (binary multiples, no space).
pub fn size_label(b: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b % (1 << shift) == 0 {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn capacities_in_the_unit_they_reach() {
        assert_eq!(super::format_capacity(16 << 20), "16.0 MiB");
        assert_eq!(super::format_capacity(1_000_204_886_016), "931.5 GiB");
        assert_eq!(super::format_capacity(512), "512 B");
        assert_eq!(super::format_capacity(3 << 40), "3.0 TiB");
    }

    use super::*;

    #[test]
    fn sizes_read_as_fio_reads_them() {
        assert_eq!(parse_size("4096"), Ok(4096));
        for s in ["4k", "4K", "4KB", "4kb", "4KiB", " 4k "] {
            assert_eq!(parse_size(s), Ok(4096), "{s}");
        }
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        // 1.5 * 2^30 bytes (fio 3.33 would read 1 byte).
        assert_eq!(parse_size("1.5G"), Ok(1_610_612_736));
        assert_eq!(parse_size("0.5k"), Ok(512));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert!(parse_size("0.3k").unwrap_err().contains("whole number"));
        assert!(parse_size("4x").unwrap_err().contains("unknown unit"));
        for bad in ["", "k", "-1", "1..5G", "1e3", "."] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("100000000P").unwrap_err().contains("too large"));
    }

    #[test]
    fn durations_take_fio_and_cyclictest_units() {
        use std::time::Duration;
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("8H"), Ok(Duration::from_secs(28_800)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("2x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("1000d").unwrap_err().contains("too long"));
    }

    #[test]
    fn bit_rates_are_decimal() {
        assert_eq!(parse_bit_rate("100M"), Ok(100e6));
        assert_eq!(parse_bit_rate("1.5G"), Ok(1.5e9));
        assert_eq!(parse_bit_rate("800kbit/s"), Ok(800e3));
        assert_eq!(parse_bit_rate("1000"), Ok(1000.0));
        assert!(parse_bit_rate("1Q").is_err());
    }

    #[test]
    fn cpu_lists_round_trip_in_the_kernel_form() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[8, 0, 1, 10, 11, 3]), "0-1,3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn byte_counts_in_binary_units() {
        assert_eq!(format_bytes_binary(4096), "4 KiB");
        assert_eq!(format_bytes_binary(256 << 20), "256 MiB");
        assert_eq!(format_bytes_binary(1536), "1536 B");
        assert_eq!(size_label(1 << 20), "1M");
        assert_eq!(size_label(128 << 10), "128K");
        assert_eq!(size_label(512), "512");
    }

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
