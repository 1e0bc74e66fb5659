//! The same facts as 4.19, 5.10 and 6.1 kernels print them (tests/fixtures/kernel-*, built by
//! tests/fixtures/make_kernel_trees.py; each tree's README.md cites the kernel sources).
//!
//! What differs between kernels: `current_link_speed`/`max_link_speed` read "8 GT/s" and
//! "Unknown speed" before pci_speed_string(), "8.0 GT/s PCIe" and "Unknown" after; some
//! platform root ports show no `max_link_*`; debugfs `mmcN/ios` is absent unless debugfs is
//! mounted.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::{LinkState, PcieGen};
use probe::chain::{self, Hop};
use probe::pci::address::PciAddress;
use probe::pci::audit::{AuditedFunction, LinkSource, PciAudit};
use probe::sysfs::SysRoot;
use std::path::{Path, PathBuf};

fn tree(kernel: &str) -> SysRoot {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(format!("kernel-{kernel}"));
    assert!(dir.is_dir(), "missing fixture tree {}", dir.display());
    SysRoot::new(dir)
}

fn function<'a>(a: &'a PciAudit, addr: &str) -> &'a AuditedFunction {
    let addr: PciAddress = addr.parse().unwrap();
    a.functions
        .iter()
        .find(|f| f.address == addr)
        .unwrap_or_else(|| panic!("no function {addr}"))
}

fn state(gen: PcieGen, width: u8) -> Option<LinkState> {
    Some(LinkState::new(gen, width))
}

/// The MMC hop of the chain of `/dev/mmcblk0`.
fn mmc_hop(root: &SysRoot) -> (Hop, Vec<String>) {
    let c = chain::resolve(root, Path::new("/dev/mmcblk0"));
    let hop = c
        .hops
        .iter()
        .find(|h| matches!(h, Hop::Mmc { .. }))
        .unwrap_or_else(|| panic!("no mmc hop in {:?}", c.hops))
        .clone();
    (hop, c.warnings)
}

#[test]
fn kernel_4_19_link_speed_without_decimal_and_root_port_without_max_link() {
    let root = tree("4.19");
    let a = probe::pci::audit_sysfs(&root);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    // "8 GT/s" (4.19's PCIE_SPEED2STR) is Gen 3 like "8.0 GT/s PCIe".
    let nvme = function(&a, "0002:21:00.0");
    assert_eq!(nvme.kernel_link.current, state(PcieGen::Gen3, 2));
    assert_eq!(nvme.kernel_link.max, state(PcieGen::Gen3, 4));
    // The root port has no max_link_*: its capability is unknown, not zero and not an error.
    let rp = function(&a, "0002:20:00.0");
    assert_eq!(rp.kernel_link.current, state(PcieGen::Gen3, 2));
    assert_eq!(rp.kernel_link.max, None);
    // So the link cannot be judged against both ends: no link; the device's own capability
    // still gives a ceiling, now and at its best, and the link is marked width-downgraded.
    assert!(a.links.is_empty(), "{:?}", a.links);
    let own = nvme.own_link_ceiling.as_ref().expect("own link ceiling");
    assert_eq!(own.current.link, LinkState::new(PcieGen::Gen3, 2));
    assert_eq!(own.capable.link, LinkState::new(PcieGen::Gen3, 4));
    // (The finding it makes of that: audit_findings.rs in the headroom crate.)
    assert_eq!(
        nvme.downgraded.map(|d| (d.speed, d.width)),
        Some((false, true))
    );
    // "Unknown speed" with width 0: no current link; max "5 GT/s" x1 is Gen 2.
    let idle = function(&a, "0000:00:00.0");
    assert_eq!(idle.kernel_link.current, None);
    assert_eq!(idle.kernel_link.max, state(PcieGen::Gen2, 1));
}

#[test]
fn kernel_4_19_emmc_without_debugfs() {
    let root = tree("4.19");
    let (hop, warnings) = mmc_hop(&root);
    match &hop {
        Hop::Mmc {
            host,
            card_type,
            timing,
            rate_mbps,
            ..
        } => {
            assert_eq!(host, "mmc0");
            assert_eq!(card_type.as_deref(), Some("MMC"));
            assert_eq!((timing, rate_mbps), (&None, &None));
        }
        h => panic!("{h:?}"),
    }
    // One sentence saying what is missing and how to get it.
    let w: Vec<_> = warnings.iter().filter(|w| w.contains("ios")).collect();
    assert_eq!(w.len(), 1, "{warnings:?}");
    assert!(w[0].contains("mount debugfs"), "{}", w[0]);
}

#[test]
fn kernel_5_10_pcie_suffix_and_unknown() {
    let root = tree("5.10");
    let a = probe::pci::audit_sysfs(&root);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let nvme = function(&a, "0000:01:00.0");
    assert_eq!(nvme.kernel_link.current, state(PcieGen::Gen3, 4));
    assert_eq!(nvme.kernel_link.max, state(PcieGen::Gen4, 4));
    // Both ends' max present: the link is judged from sysfs, limited by the Gen 3 port.
    assert_eq!(a.links.len(), 1);
    let l = &a.links[0];
    assert_eq!(l.source, LinkSource::Sysfs);
    assert_eq!(l.comparison.common, LinkState::new(PcieGen::Gen3, 4));
    assert!(!l.comparison.speed_below_common && !l.comparison.width_below_common);
    // "Unknown" (pci_speed_string() for an untrained link) is no link, not a parse error.
    let idle = function(&a, "0002:20:00.0");
    assert_eq!(idle.kernel_link.current, None);
    assert_eq!(idle.kernel_link.max, state(PcieGen::Gen3, 1));
}

#[test]
fn kernel_5_10_emmc_hs400_enhanced_strobe() {
    let root = tree("5.10");
    let (hop, warnings) = mmc_hop(&root);
    assert!(warnings.is_empty(), "{warnings:?}");
    match &hop {
        Hop::Mmc { timing, .. } => {
            assert_eq!(timing.as_deref(), Some("mmc HS400 enhanced strobe"));
        }
        h => panic!("{h:?}"),
    }
    // 200 MHz x 8 lines x 2 edges (HS400 is double data rate): 3200 Mb/s = 400 MB/s, the
    // JEDEC eMMC 5.1 HS400 bus rate.
    assert_eq!(hop.nominal_rate_mbps(), Some(3200.0));
}

#[test]
fn kernel_6_1_downgraded_by_the_port_and_sd_timing() {
    let root = tree("6.1");
    let a = probe::pci::audit_sysfs(&root);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.links.len(), 1);
    let l = &a.links[0];
    assert_eq!(l.comparison.current, LinkState::new(PcieGen::Gen2, 1));
    assert_eq!(l.comparison.common, LinkState::new(PcieGen::Gen2, 1));
    // The Raspberry Pi 5 situation of seed 003: the port, not the SSD, sets Gen 2 x1.
    assert!(!l.comparison.speed_below_common);
    let (hop, warnings) = mmc_hop(&root);
    assert!(warnings.is_empty(), "{warnings:?}");
    // SDR104 at 100 MHz on 4 lines, single data rate.
    assert_eq!(hop.nominal_rate_mbps(), Some(400.0));
}

/// Every tree gives its PCI functions and its eMMC/SD disk.
#[test]
fn every_kernel_tree_audits_cleanly() {
    for k in ["4.19", "5.10", "6.1"] {
        let root = tree(k);
        let a = probe::pci::audit_sysfs(&root);
        assert!(!a.functions.is_empty(), "{k}");
        let b = probe::block::scan(&root);
        assert!(
            b.devices.iter().any(|d| d.name == "mmcblk0"),
            "{k}: {:?}",
            b.devices
        );
    }
}
