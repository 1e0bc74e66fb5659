//! CPU access to memory-mapped regions (a PCI BAR, a file, a DRAM buffer): the access
//! widths, the operations and the measured result of one (width, operation) pair.
//!
//! The shape follows section 5 of the Rockchip PCIe guide (seeds/000, "Bar interface
//! performance"): one row per access kind (32-bit, 128-bit SIMD, memcpy_toio/fromio), a store
//! and a load column in MB/s (10^6 B/s).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the CPU touches the region: one volatile, naturally aligned access of exactly this
/// many bits per step, or an aligned copy loop of the widest width (`memcpy`) between the
/// region and an ordinary buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AccessWidth {
    #[serde(rename = "8")]
    W8,
    #[serde(rename = "16")]
    W16,
    #[serde(rename = "32")]
    W32,
    #[serde(rename = "64")]
    W64,
    /// SSE2 `movdqa` on x86_64, NEON `ldr q`/`str q` on aarch64.
    #[serde(rename = "128")]
    W128,
    /// An aligned copy loop of 128-bit accesses between the region and a DRAM buffer, what
    /// the kernel's `memcpy_toio`/`memcpy_fromio` do; never the C library's memcpy.
    #[serde(rename = "memcpy")]
    Memcpy,
}

impl AccessWidth {
    pub const ALL: [AccessWidth; 6] = [
        AccessWidth::W8,
        AccessWidth::W16,
        AccessWidth::W32,
        AccessWidth::W64,
        AccessWidth::W128,
        AccessWidth::Memcpy,
    ];

    /// Bytes moved by one access (the copy loop moves 16 bytes per step).
    pub fn bytes(self) -> usize {
        match self {
            AccessWidth::W8 => 1,
            AccessWidth::W16 => 2,
            AccessWidth::W32 => 4,
            AccessWidth::W64 => 8,
            AccessWidth::W128 | AccessWidth::Memcpy => 16,
        }
    }

    /// The row title: `32-bit`, `128-bit SIMD`, `memcpy loop`.
    pub fn label(self) -> &'static str {
        match self {
            AccessWidth::W8 => "8-bit",
            AccessWidth::W16 => "16-bit",
            AccessWidth::W32 => "32-bit",
            AccessWidth::W64 => "64-bit",
            AccessWidth::W128 => "128-bit SIMD",
            AccessWidth::Memcpy => "memcpy loop (128-bit)",
        }
    }
}

impl fmt::Display for AccessWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessWidth::W8 => "8",
            AccessWidth::W16 => "16",
            AccessWidth::W32 => "32",
            AccessWidth::W64 => "64",
            AccessWidth::W128 => "128",
            AccessWidth::Memcpy => "memcpy",
        })
    }
}

impl FromStr for AccessWidth {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().trim_end_matches("-bit") {
            "8" => Ok(AccessWidth::W8),
            "16" => Ok(AccessWidth::W16),
            "32" => Ok(AccessWidth::W32),
            "64" => Ok(AccessWidth::W64),
            "128" => Ok(AccessWidth::W128),
            "memcpy" | "copy" => Ok(AccessWidth::Memcpy),
            _ => Err(format!(
                "`{s}` is not an access width (use 8, 16, 32, 64, 128 or memcpy)"
            )),
        }
    }
}

/// A load (device or memory to CPU) or a store (CPU to device or memory). In `memcpy` mode
/// a store copies a DRAM buffer into the region (memcpy_toio), a load copies the region
/// into a DRAM buffer (memcpy_fromio).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessOp {
    Store,
    Load,
}

impl fmt::Display for AccessOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessOp::Store => "store",
            AccessOp::Load => "load",
        })
    }
}

impl FromStr for AccessOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "load" | "read" => Ok(AccessOp::Load),
            "store" | "write" => Ok(AccessOp::Store),
            _ => Err(format!("`{s}` is not an operation (use load or store)")),
        }
    }
}

/// A fault the kernel signalled during an access (SIGBUS: the page behind the access is
/// gone, e.g. a truncated file, or the device did not answer), with where it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessFault {
    /// `SIGBUS` or `SIGSEGV`.
    pub signal: String,
    /// Byte offset of the faulting address from the start of the measured window.
    pub offset: u64,
}

/// A (width, operation) pair that did not run or did not finish, in one sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairError {
    pub width: AccessWidth,
    pub op: AccessOp,
    pub message: String,
}

/// The measured result of one (width, operation) pair on one region.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessResult {
    pub width: AccessWidth,
    pub op: AccessOp,
    pub threads: u32,
    /// Accesses of `width` made by all threads (for memcpy: 16-byte steps).
    pub accesses: u64,
    /// Bytes moved: accesses × width.
    pub bytes: u64,
    /// Wall-clock time from the first thread's start to the last thread's end.
    pub elapsed_ns: u64,
    /// bytes / elapsed, in MB/s (10^6 B/s).
    pub mb_per_s: f64,
    /// Time per access, from batches of accesses timed as a whole: median and 99th
    /// percentile over the batches, in ns.
    pub ns_per_access_p50: f64,
    pub ns_per_access_p99: f64,
    /// Timed batches (each one sweep over a chunk of the window).
    pub batches: u64,
    /// The fault that ended the run early, if one did; the counts above are those made
    /// before it.
    pub fault: Option<AccessFault>,
}

impl AccessResult {
    /// `32-bit load`.
    pub fn name(&self) -> String {
        format!("{} {}", self.width.label(), self.op)
    }
}

/// The C library's memcpy between two halves of a DRAM buffer: what `mbw`'s MEMCPY test
/// and most users' notion of "memory bandwidth" measure (bytes copied, not read + written).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemCopyResult {
    /// Bytes per memcpy call.
    pub block_bytes: u64,
    /// Bytes copied.
    pub bytes: u64,
    pub elapsed_ns: u64,
    /// bytes copied / elapsed, MB/s (10^6 B/s).
    pub mb_per_s: f64,
}

/// What was mapped, as a `bench mmio` document records it: `bench::mmio::target` fills it when
/// it maps the region, report writes and reads it (one type: the two cannot drift).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Region {
    pub given: String,
    /// `bar`, `file` or `device` (a character device such as /dev/mem).
    pub kind: String,
    /// The file mapped (`.../resource2`, `/proc/bus/pci/01/00.0`, the file given).
    pub file: String,
    pub bar: Option<String>,
    pub bar_bytes: Option<u64>,
    pub bar_start: Option<u64>,
    pub prefetchable: Option<bool>,
    pub is_64bit: Option<bool>,
    pub write_combining: bool,
    /// Whether the kernel offers a write-combining mapping (`resourceN_wc`).
    pub write_combining_available: Option<bool>,
    pub window_offset: u64,
    pub window_bytes: u64,
    pub writable: bool,
    pub driver: Option<String>,
}

/// bytes / ns in MB/s (10^6 B/s).
pub fn mb_per_s(bytes: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        return 0.0;
    }
    bytes as f64 / (elapsed_ns as f64 / 1e9) / crate::units::MB
}

/// The value at or below which `q` (0..=1) of `sorted` (ascending) falls, nearest rank;
/// `None` for no samples.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// A size or offset of `bench mmio` and `bench mem` as given (`4096`, `64K`, `1M`, `0x1000`),
/// or the sentence naming `flag`.
pub fn parse_bytes(flag: &str, s: &str) -> Result<u64, String> {
    if let Some(hex) = s.trim().strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("{flag} {s}: not a hex number"));
    }
    crate::units::parse_size(s).map_err(|why| format!("{flag} {s}: {why}"))
}

/// The upper bound of each run (`1s`, `500ms`, `2m`): above 0 and at most 1 h.
pub fn parse_run_time(flag: &str, s: &str) -> Result<std::time::Duration, String> {
    let secs = crate::units::parse_duration(s)
        .map_err(|why| format!("{flag} {s}: {why}"))?
        .as_secs_f64();
    if secs <= 0.0 || secs > 3600.0 {
        return Err(format!("{flag} {s}: give a time above 0 and at most 1h"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// The buffer size for a last-level cache of `llc_bytes`: four times it (a sweep then evicts
/// what the previous one cached), at least 64 MiB, rounded to whole MiB.
pub fn buffer_for_llc(llc_bytes: Option<u64>) -> u64 {
    let min = 64u64 << 20;
    let want = llc_bytes.map_or(min, |l| l.saturating_mul(4)).max(min);
    want.div_ceil(1 << 20) << 20
}

/// Check a buffer of `buffer` bytes (`given` as the user wrote `--size`) for `threads`
/// threads: it is populated up front, so never more than half of the `available` memory
/// (MemAvailable: a typo such as `--size 100G` cannot push the machine into swap or the OOM
/// killer), and at least 16 bytes per thread. A buffer that fits the last-level cache gets a
/// note: its speeds are the cache's.
pub fn check_buffer(
    buffer: u64,
    given: &str,
    threads: u32,
    available: Option<u64>,
    llc: Option<u64>,
) -> Result<Option<String>, String> {
    if let Some(avail) = available.filter(|&m| buffer > m / 2) {
        return Err(format!(
            "--size {given}: a buffer above half of the {} MiB of available memory (MemAvailable \
             in /proc/meminfo) is refused; give a smaller --size",
            avail >> 20
        ));
    }
    if buffer < 16 * u64::from(threads) {
        return Err(format!(
            "--size {buffer}: the buffer needs at least 16 bytes per thread"
        ));
    }
    Ok(llc.filter(|&l| buffer <= l).map(|l| {
        format!(
            "the {buffer}-byte buffer fits in the {} KiB last-level cache: these are cache \
             speeds, not DRAM's",
            l >> 10
        )
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn widths_parse_as_users_write_them() {
        assert_eq!("32".parse::<AccessWidth>(), Ok(AccessWidth::W32));
        assert_eq!("128-bit".parse::<AccessWidth>(), Ok(AccessWidth::W128));
        assert_eq!("MEMCPY".parse::<AccessWidth>(), Ok(AccessWidth::Memcpy));
        let e = "31".parse::<AccessWidth>().unwrap_err();
        assert!(e.contains("8, 16, 32, 64, 128 or memcpy"), "{e}");
        assert_eq!(AccessWidth::Memcpy.bytes(), 16);
        assert_eq!(serde_json::to_string(&AccessWidth::W64).unwrap(), "\"64\"");
    }

    #[test]
    fn rates_are_si_megabytes() {
        // 4 MB in one second is 4 MB/s, as the seed's 32-bit load row.
        assert_eq!(mb_per_s(4_000_000, 1_000_000_000), 4.0);
        assert_eq!(mb_per_s(1, 0), 0.0);
    }

    #[test]
    fn quantile_is_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn a_buffer_is_checked_against_memory_threads_and_cache() {
        let gib = 1u64 << 30;
        let e = check_buffer(64 * gib, "64G", 1, Some(8 * gib), None).unwrap_err();
        assert!(
            e.starts_with("--size 64G: a buffer above half of the 8192 MiB"),
            "{e}"
        );
        let e = check_buffer(32, "32", 4, None, None).unwrap_err();
        assert!(e.contains("16 bytes per thread"), "{e}");
        assert_eq!(
            check_buffer(gib, "1G", 4, Some(8 * gib), Some(32 << 20)),
            Ok(None)
        );
        let note = check_buffer(1 << 20, "1M", 4, None, Some(32 << 20)).unwrap();
        assert!(note
            .unwrap()
            .contains("fits in the 32768 KiB last-level cache"));
    }

    #[test]
    fn the_buffer_outgrows_the_cache() {
        // This VM's 32 MiB L3 (/sys/devices/system/cpu/cpu0/cache/index3/size).
        assert_eq!(buffer_for_llc(Some(32 << 20)), 128 << 20);
        assert_eq!(buffer_for_llc(Some(1 << 20)), 64 << 20);
        assert_eq!(buffer_for_llc(None), 64 << 20);
        assert_eq!(buffer_for_llc(Some(3 << 19)), 64 << 20);
    }

    #[test]
    fn bytes_and_times_name_the_flag() {
        assert_eq!(parse_bytes("--offset", "0x1000"), Ok(4096));
        assert_eq!(parse_bytes("--size", "64K"), Ok(64 << 10));
        assert_eq!(
            parse_bytes("--offset", "0xZZ"),
            Err("--offset 0xZZ: not a hex number".to_string())
        );
        assert_eq!(
            parse_run_time("--duration", "500ms"),
            Ok(std::time::Duration::from_millis(500))
        );
        assert_eq!(
            parse_run_time("--duration", "2h"),
            Err("--duration 2h: give a time above 0 and at most 1h".to_string())
        );
    }
}
