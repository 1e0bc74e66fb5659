//! CPU caches from sysfs (Documentation/ABI/testing/sysfs-devices-system-cpu,
//! `/sys/devices/system/cpu/cpuX/cache/indexY/{level,type,size}`).

use crate::sysfs::{read_attr, SysRoot};

/// The size of CPU 0's largest-level data or unified cache in bytes, `None` when sysfs does
/// not describe its caches (some ARM boards, containers).
pub fn last_level_cache_bytes(root: &SysRoot) -> Option<u64> {
    let dir = root.path("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, u64)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
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
}
