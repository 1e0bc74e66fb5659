//! Efficiency: a measured rate over the ceiling of the path it crossed. bench measures,
//! `model::path` gives the ceiling per direction and the duplex rule; the judgement is made
//! here, once, for every renderer and document.

use model::ceiling::PathCeiling;
use model::{Finding, Severity};

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

/// The PCI vendors whose devices a hypervisor emulates or paravirtualises (pci.ids): the link
/// state such a device reports is the emulator's word, and its data moves as memory copies, so
/// a PCIe ceiling does not bound it.
const EMULATED_VENDORS: [(u16, &str); 5] = [
    (0x1af4, "virtio (paravirtual)"),
    (0x1b36, "QEMU's emulated hardware (Red Hat, Inc.)"),
    (0x15ad, "VMware's virtual hardware"),
    (0x1414, "Hyper-V's virtual hardware (Microsoft)"),
    (0x80ee, "VirtualBox's virtual hardware (InnoTek)"),
];

/// What an emulated or paravirtual device of PCI vendor `vendor_id` is, or `None` for a
/// vendor of real hardware.
pub fn emulated_vendor(vendor_id: u16) -> Option<&'static str> {
    EMULATED_VENDORS
        .iter()
        .find(|(v, _)| *v == vendor_id)
        .map(|(_, what)| *what)
}

/// The first emulated or paravirtual device on `path` (a function of `audit`), as a fact in
/// words (`0000:00:04.0 is virtio (paravirtual)`): its link state is the emulator's.
pub fn emulated_on_path(
    path: &model::path::TargetPath,
    audit: &model::inventory::pci::PciAudit,
) -> Option<String> {
    path.chain.pci_addresses().into_iter().find_map(|a| {
        let f = audit
            .functions
            .iter()
            .find(|f| f.address.to_string() == a)?;
        let what = emulated_vendor(f.vendor_id?)?;
        Some(format!("{a} is {what}"))
    })
}

/// What a run knows that can carry a rate past the ceiling of its path, strongest first in
/// the order [`above_ceiling`] weighs it. Each is a fact in words (`0000:01:00.0 is QEMU's
/// emulated hardware`), or `None` when the run does not show it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Beyond {
    /// No data crossed the path at all (a diskless engine: fio's `null`): the rate is the
    /// tool's own.
    pub no_io: Option<String>,
    /// A device on the path is emulated or paravirtual: its link state is the emulator's
    /// (the bytes cross no such link).
    pub emulated: Option<String>,
    /// A cache answered some I/O (buffered I/O and the page cache, a shaper's burst).
    pub cache: Option<String>,
    /// The data is easy to compress or deduplicate (zeros written).
    pub compression: Option<String>,
    /// The link is virtual and its speed a nominal figure (veth, a bridge), or its reading is
    /// known to be unreliable.
    pub nominal_link: Option<String>,
}

/// A measured rate above the ceiling of the path it crossed is no efficiency to quote: the
/// ceiling does not bound this path. `None` at or below 100 %. The finding says what was
/// measured against which bottleneck, what headroom believes carried it past the link (the
/// first of `beyond` that the run shows, else a link reading that does not match what carried
/// the data, or a cache in the device), and why. The one sentence for every kind that judges
/// efficiency (disk, net, survey).
pub fn above_ceiling(
    subject: &str,
    measured: &str,
    efficiency: f64,
    bottleneck: &str,
    beyond: &Beyond,
) -> Option<Finding> {
    if efficiency.is_nan() || efficiency <= 1.0 {
        return None;
    }
    let (belief, advice) = if let Some(n) = &beyond.no_io {
        (
            format!("no data crossed it: {n}"),
            "measure with an engine that does I/O (bench disk: --engine io_uring or psync)",
        )
    } else if let Some(e) = &beyond.emulated {
        (
            format!(
                "the path is emulated: {e}, so the link state it reports is the emulator's and \
                 the bytes move as memory copies in the host"
            ),
            "measure on the real hardware for an efficiency; here compare runs with each other \
             only",
        )
    } else if let Some(c) = &beyond.cache {
        (
            format!("a cache answered part of the I/O: {c}"),
            "measure without the cache (bench disk: --direct 1, the default) for an efficiency",
        )
    } else if let Some(c) = &beyond.compression {
        (
            format!("the data compresses: {c}"),
            "measure with incompressible data (bench disk without --zero)",
        )
    } else if let Some(n) = &beyond.nominal_link {
        (
            format!("the link's speed is a nominal figure that nothing enforces: {n}"),
            "give the real ceiling (a shaper with tc, or the physical link behind it)",
        )
    } else {
        (
            "the link reading does not match what carried the data (a link state sysfs reports \
             wrongly, a device whose own cache answered), as nothing in this run shows a cache, \
             compression or emulation"
                .to_string(),
            "check the link state with lspci -vv (LnkSta) or the device's documentation against \
             the bottleneck named here",
        )
    };
    Some(
        Finding::new(
            Severity::Warning,
            subject,
            format!(
                "{measured} is {:.0} % of the ceiling of {bottleneck}: more than that link can \
                 carry, so the ceiling does not bound this path and the efficiency is no number \
                 to quote; headroom believes {belief}",
                efficiency * 100.0
            ),
        )
        .with_advice(advice),
    )
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

    /// 1030 MB/s against a 196 MB/s PCIe ceiling in an emulated board read
    /// "efficiency 526 %" and nothing else.
    #[test]
    fn above_the_ceiling_is_a_finding_that_says_what_headroom_believes() {
        let bottleneck = "PCIe 0000:00:01.0 -> 0000:01:00.0 at 2.5 GT/s x1";
        assert_eq!(
            above_ceiling("t", "1 MB/s", 1.0, bottleneck, &Beyond::default()),
            None
        );
        let emulated = Beyond {
            emulated: Some(format!(
                "0000:01:00.0 is {}",
                emulated_vendor(0x1b36).unwrap()
            )),
            cache: Some("buffered I/O".into()),
            ..Beyond::default()
        };
        let f = above_ceiling(
            "SEQ1M Q8T1 read",
            "1030.0 MB/s",
            5.26,
            bottleneck,
            &emulated,
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.starts_with(
                "1030.0 MB/s is 526 % of the ceiling of PCIe 0000:00:01.0 -> 0000:01:00.0 at \
                 2.5 GT/s x1: more than that link can carry, so the ceiling does not bound this \
                 path and the efficiency is no number to quote; headroom believes the path is \
                 emulated: 0000:01:00.0 is QEMU's emulated hardware (Red Hat, Inc.)"
            ),
            "{}",
            f.message
        );
        // The strongest fact wins; without any, the link reading is what is left.
        let cached = Beyond {
            cache: Some("buffered I/O (--direct 0)".into()),
            compression: Some("zeros".into()),
            ..Beyond::default()
        };
        let f = above_ceiling("t", "x", 1.5, bottleneck, &cached).unwrap();
        assert!(f
            .message
            .contains("believes a cache answered part of the I/O: buffered"));
        let f = above_ceiling("t", "x", 1.5, bottleneck, &Beyond::default()).unwrap();
        assert!(f
            .message
            .contains("believes the link reading does not match"));
        assert!(f.advice.unwrap().contains("lspci -vv"));
        assert_eq!(emulated_vendor(0x8086), None);
    }

    #[test]
    fn no_ceiling_no_efficiency_and_no_division_by_zero() {
        assert_eq!(efficiency(1, 1.0, 100, &ceiling(0.0, 0.0, true)), None);
        assert_eq!(efficiency(0, 0.0, 100, &ceiling(1e6, 1e6, true)), Some(0.0));
    }
}
