//! The audit on synthetic sysfs trees with full config space: every finding it can make.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::{Aspm, LinkState, PcieGen, PortType, Severity};
use probe::pci::address::PciAddress;
use probe::sysfs::SysRoot;
use testsupport::synth::{write_tree, SynthExpress, SynthFunction};

fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

fn express(port_type: PortType, cap: LinkState, status: LinkState, mps: u16) -> SynthExpress {
    SynthExpress {
        port_type,
        capable: cap,
        status,
        mps_supported: 256,
        mps,
        mrrs: 512,
        aspm_support: Aspm {
            l0s: true,
            l1: true,
        },
        aspm_enabled: Aspm::default(),
        target: None,
    }
}

/// A Gen4 x4 NVMe behind a Gen4 x4 root port, trained at 5 GT/s x1 (the Raspberry Pi 5
/// situation, worse), with MPS 128 where both ends do 256, ASPM L1 on, the target speed
/// capped at Gen 2 and a correctable error logged.
fn downgraded_tree(root: &std::path::Path) {
    let g4x4 = LinkState::new(PcieGen::Gen4, 4);
    let g2x1 = LinkState::new(PcieGen::Gen2, 1);
    let mut nvme = express(PortType::Endpoint, g4x4, g2x1, 128);
    nvme.aspm_enabled = Aspm {
        l0s: false,
        l1: true,
    };
    nvme.target = Some(PcieGen::Gen2);
    root_port_and_device(
        root,
        express(PortType::RootPort, g4x4, g2x1, 128),
        SynthFunction {
            vendor_id: 0x144d,
            device_id: 0xa808,
            class: 0x010802,
            buses: None,
            express: Some(nvme),
            aer_status: Some((0, 1 << 6)), // CESta BadTLP
        },
    );
}

/// Root port 0000:00:01.0 (Intel, secondary bus 1) with `device` at 0000:01:00.0 below it.
fn root_port_and_device(root: &std::path::Path, port: SynthExpress, device: SynthFunction) {
    write_tree(
        root,
        &[
            (
                addr("0000:00:01.0"),
                None,
                SynthFunction {
                    vendor_id: 0x8086,
                    device_id: 0x1901,
                    class: 0x060400,
                    buses: Some((0, 1, 1)),
                    express: Some(port),
                    aer_status: None,
                },
            ),
            (addr("0000:01:00.0"), Some(addr("0000:00:01.0")), device),
        ],
    )
    .unwrap();
}

#[test]
fn downgraded_nvme_link_and_every_finding() {
    let dir = tempfile::tempdir().unwrap();
    downgraded_tree(dir.path());
    let audit = probe::pci::audit_sysfs(&SysRoot::new(dir.path()));
    assert!(audit.warnings.is_empty(), "{:?}", audit.warnings);
    assert_eq!(audit.functions.len(), 2);
    assert_eq!(audit.links.len(), 1);
    let l = &audit.links[0];
    assert_eq!(l.upstream, addr("0000:00:01.0"));
    assert_eq!(l.downstream, addr("0000:01:00.0"));
    assert!(l.comparison.speed_below_common && l.comparison.width_below_common);
    assert_eq!(l.comparison.common, LinkState::new(PcieGen::Gen4, 4));
    // Gen 2 x1 is 500 MB/s raw (seed table); Gen 4 x4 is 7.877 GB/s raw.
    assert!((l.ceiling.current.raw_bps - 500e6).abs() < 1.0);
    assert!((l.ceiling.capable.raw_bps - 7.876_923e9).abs() < 1e3);
    assert!(l.ceiling.loss_percent > 90.0);
    let best = l.ceiling.at_best_mps.as_ref().unwrap();
    assert_eq!(best.params.mps, 256);
    assert!(best.effective_write_bps > l.ceiling.current.effective_write_bps);

    let msgs: Vec<&str> = audit.findings.iter().map(|f| f.message.as_str()).collect();
    let has = |needle: &str| msgs.iter().any(|m| m.contains(needle));
    assert!(has("runs below what both ends support: speed 5 GT/s where both ends support 16 GT/s, width x1 where both ends support x4"), "{msgs:#?}");
    assert!(has("MaxPayload is 128 bytes on link 0000:00:01.0 -> 0000:01:00.0 where both ends support 256 bytes"), "{msgs:#?}");
    assert!(
        has("ASPM L1 enabled on link 0000:00:01.0 -> 0000:01:00.0"),
        "{msgs:#?}"
    );
    assert!(
        has("target link speed (LnkCtl2) is 5 GT/s below its capability 16 GT/s"),
        "{msgs:#?}"
    );
    assert!(has("CESta BadTLP"), "{msgs:#?}");
    // Most severe first.
    assert!(audit
        .findings
        .windows(2)
        .all(|w| w[0].severity >= w[1].severity));
    assert!(audit
        .findings
        .iter()
        .any(|f| f.severity == Severity::Warning));
}

#[test]
fn unprivileged_read_gives_one_root_hint_not_a_warning_per_device() {
    let dir = tempfile::tempdir().unwrap();
    downgraded_tree(dir.path());
    // What a non-root reader of sysfs `config` gets: the first 64 bytes.
    for d in [
        "pci0000:00/0000:00:01.0",
        "pci0000:00/0000:00:01.0/0000:01:00.0",
    ] {
        let p = dir.path().join("sys/devices").join(d).join("config");
        let full = std::fs::read(&p).unwrap();
        std::fs::write(&p, &full[..64]).unwrap();
    }
    let audit = probe::pci::audit_sysfs(&SysRoot::new(dir.path()));
    assert!(audit.warnings.is_empty(), "{:?}", audit.warnings);
    let hint: Vec<_> = audit
        .findings
        .iter()
        .filter(|f| f.advice.as_deref() == Some("run as root for the full audit"))
        .collect();
    assert_eq!(hint.len(), 1);
    // The kernel's link attributes still give the link and its ceiling.
    assert_eq!(audit.links.len(), 1);
    assert_eq!(audit.links[0].source, probe::pci::audit::LinkSource::Sysfs);
    assert!(audit.links[0].comparison.below_common());
    assert_eq!(audit.links[0].ceiling.assumed.len(), 2);
}

#[test]
fn config_space_of_a_device_that_vanished_is_named() {
    let dir = tempfile::tempdir().unwrap();
    downgraded_tree(dir.path());
    let p = dir
        .path()
        .join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/config");
    std::fs::write(&p, vec![0xffu8; 256]).unwrap();
    let audit = probe::pci::audit_sysfs(&SysRoot::new(dir.path()));
    assert!(
        audit
            .warnings
            .iter()
            .any(|w| w.starts_with("0000:01:00.0: configuration space reads as all 0xff")),
        "{:?}",
        audit.warnings
    );
    assert_eq!(audit.functions.len(), 2);
}

#[test]
fn small_max_read_request_is_a_finding_with_its_cost() {
    let dir = tempfile::tempdir().unwrap();
    let g3x4 = LinkState::new(PcieGen::Gen3, 4);
    let mut dev = express(PortType::Endpoint, g3x4, g3x4, 256);
    dev.mrrs = 128;
    root_port_and_device(
        dir.path(),
        express(PortType::RootPort, g3x4, g3x4, 256),
        SynthFunction {
            vendor_id: 0x10ee,
            device_id: 0x7024,
            class: 0x058000,
            buses: None,
            express: Some(dev),
            aer_status: None,
        },
    );
    let audit = probe::pci::audit_sysfs(&SysRoot::new(dir.path()));
    let l = &audit.links[0];
    assert_eq!(l.max_read_request, Some(128));
    let best = l.ceiling.at_max_mrrs.as_ref().unwrap();
    assert!(best.effective_read_bps > l.ceiling.current.effective_read_bps);
    assert!(audit.findings.iter().any(|f| f
        .message
        .contains("MaxReadReq is 128 bytes on 0000:01:00.0, below its MaxPayload 256")));
    // The link itself is at its best: no other finding.
    assert!(!audit
        .findings
        .iter()
        .any(|f| f.message.contains("runs below")));
}
