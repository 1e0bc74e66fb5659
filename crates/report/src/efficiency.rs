//! Efficiency: a measured rate over the ceiling of the path it crossed. bench measures,
//! `model::path` gives the ceiling per direction and the duplex rule; the judgement is made
//! here, once, for every renderer and document.

use model::ceiling::PathCeiling;

/// Measured / ceiling for `bytes` moved in `seconds` by a workload reading `read_percent` %
/// of its bytes (100 = all reads, 0 = all writes), against the path's `ceiling` for that
/// mix ([`PathCeiling::for_read_percent`]). `None` when the ceiling is zero (nothing to
/// judge against). A window shorter than 1 ns counts as 1 ns, so a run that measured nothing
/// is judged 0, never infinite.
pub fn efficiency(
    bytes: u64,
    seconds: f64,
    read_percent: u8,
    ceiling: &PathCeiling,
) -> Option<f64> {
    let c = ceiling.for_read_percent(read_percent);
    (c > 0.0).then(|| bytes as f64 / seconds.max(1e-9) / c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceiling(read: f64, write: f64, full_duplex: bool) -> PathCeiling {
        PathCeiling {
            read_bytes_per_sec: read,
            write_bytes_per_sec: write,
            full_duplex,
            bottleneck: "test".into(),
        }
    }

    #[test]
    fn measured_over_the_ceiling_of_its_direction() {
        // 4 MB in 2 s = 2 MB/s of reads against a 4 MB/s read ceiling: 50 %.
        let c = ceiling(4e6, 1e6, true);
        assert!((efficiency(4_000_000, 2.0, 100, &c).unwrap() - 0.5).abs() < 1e-9);
        // The same rate of writes meets the 1 MB/s write ceiling: 200 %.
        assert!((efficiency(4_000_000, 2.0, 0, &c).unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_mix_on_a_shared_medium_is_judged_against_the_sum() {
        // 50/50 on a 50 MB/s shared medium: 50 MB/s in total, so 25 MB/s is 50 %.
        let c = ceiling(50e6, 50e6, false);
        assert!((efficiency(25_000_000, 1.0, 50, &c).unwrap() - 0.5).abs() < 1e-9);
        // Full duplex, 50/50: each direction carries half, reads saturate at 100 MB/s total.
        let c = ceiling(50e6, 50e6, true);
        assert!((efficiency(25_000_000, 1.0, 50, &c).unwrap() - 0.25).abs() < 1e-9);
    }

    #[test]
    fn no_ceiling_no_efficiency_and_no_division_by_zero() {
        assert_eq!(efficiency(1, 1.0, 100, &ceiling(0.0, 0.0, true)), None);
        assert_eq!(efficiency(0, 0.0, 100, &ceiling(1e6, 1e6, true)), Some(0.0));
    }
}
