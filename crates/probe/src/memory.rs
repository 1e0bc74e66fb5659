//! The memory hierarchy: CPU caches from sysfs (Documentation/ABI/testing/
//! sysfs-devices-system-cpu, `/sys/devices/system/cpu/cpuX/cache/indexY/{level,type,size}`)
//! and the RAM available from /proc/meminfo (Documentation/filesystems/proc.rst).

use crate::sysfs::read_attr;
use model::root::SysRoot;

/// The size of CPU 0's largest-level data or unified cache in bytes, `None` when sysfs does
/// not describe its caches (some ARM boards, containers).
pub fn last_level_cache_bytes(root: &SysRoot) -> Option<u64> {
    let dir = root.path("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, u64)> = None;
    for entry in crate::sysfs::read_dir(&dir).ok()?.flatten() {
        let p = entry.path();
        let attr = |n: &str| read_attr(&p.join(n)).ok().flatten();
        if attr("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let (Some(level), Some(size)) = (
            attr("level").and_then(|l| l.trim().parse::<u32>().ok()),
            attr("size").as_deref().and_then(parse_size),
        ) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|b| b.1)
}

/// `32768K`, `1M`, `512` (bytes): the kernel prints sizes in K (drivers/base/cacheinfo.c).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, shift) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 10),
        'M' | 'm' => (&s[..s.len() - 1], 20),
        'G' | 'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<u64>().ok().map(|n| n << shift)
}

/// `MemAvailable` of /proc/meminfo in bytes: what can be allocated without swapping.
pub fn available_bytes(root: &SysRoot) -> Option<u64> {
    let text = read_attr(&root.path("/proc/meminfo")).ok().flatten()?;
    parse_mem_available(&text)
}

pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_as_the_kernel_prints_them() {
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("big"), None);
    }

    #[test]
    fn mem_available_in_bytes() {
        let m = "MemTotal:       24683520 kB\nMemFree:        14223360 kB\nMemAvailable:   23688192 kB\n";
        assert_eq!(parse_mem_available(m), Some(23688192 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB"), None);
    }
}
