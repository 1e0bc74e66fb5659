//! The audit's findings (`report::kinds::audit::findings`) on what probe reads: synthetic sysfs
//! trees with full config space (every PCI finding it can make) and the captured and
//! hand-made trees of the USB, block and network inventories.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::inventory::pci::address::PciAddress;
use model::inventory::pci::PciAudit;
use model::inventory::Inventory;
use model::root::SysRoot;
use model::{Aspm, LinkState, PcieGen, PortType, Severity};
use testsupport::synth::{write_tree, SynthExpress, SynthFunction};

/// The PCI audit of the tree at `root`, judged.
fn audit(root: &std::path::Path) -> PciAudit {
    let mut a = probe::pci::audit_sysfs(&SysRoot::new(root));
    report::kinds::audit::findings::judge_pci(&mut a);
    a
}

/// The whole inventory of `root`, judged: each section's findings filled.
fn inventory(root: &SysRoot) -> Inventory {
    let mut inv = probe::inventory::scan(root);
    report::kinds::audit::findings::judge(&mut inv);
    inv
}

fn shared(tree: &str) -> Option<SysRoot> {
    testsupport::fixtures::shared(&format!("sysfs/{tree}")).map(SysRoot::new)
}

fn own(tree: &str) -> SysRoot {
    SysRoot::new(testsupport::fixtures::own(tree))
}

fn addr(s: &str) -> PciAddress {
    s.parse().unwrap()
}

fn express(port_type: PortType, cap: LinkState, status: LinkState, mps: u16) -> SynthExpress {
    SynthExpress {
        mps,
        ..SynthExpress::new(port_type, cap, status)
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

/// A Xilinx endpoint `dev` below a Gen 3 x4 root port with MPS 256.
fn gen3_x4_endpoint(root: &std::path::Path, dev: SynthExpress) {
    let g3x4 = LinkState::new(PcieGen::Gen3, 4);
    root_port_and_device(
        root,
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
}

#[test]
fn downgraded_nvme_link_and_every_finding() {
    let dir = tempfile::tempdir().unwrap();
    downgraded_tree(dir.path());
    let audit = audit(dir.path());
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
    let audit = audit(dir.path());
    assert!(audit.warnings.is_empty(), "{:?}", audit.warnings);
    let hint: Vec<_> = audit
        .findings
        .iter()
        .filter(|f| f.advice.as_deref() == Some("run as root for the full audit"))
        .collect();
    assert_eq!(hint.len(), 1);
    // The kernel's link attributes still give the link and its ceiling.
    assert_eq!(audit.links.len(), 1);
    assert_eq!(
        audit.links[0].source,
        model::inventory::pci::LinkSource::Sysfs
    );
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
    let audit = audit(dir.path());
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
    gen3_x4_endpoint(dir.path(), dev);
    let audit = audit(dir.path());
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

#[test]
fn kernel_4_19_root_port_without_max_link_gives_one_single_ended_finding() {
    // The root port has no max_link_*: the NVMe's link (8 GT/s x2 of its x4) cannot be judged
    // against both ends, so the one finding says it runs below its own capability without
    // blaming the port.
    let a = inventory(&own("kernel-4.19")).pci;
    assert_eq!(a.findings.len(), 1, "{:?}", a.findings);
    let f = &a.findings[0];
    assert_eq!(f.subject, "0002:21:00.0");
    assert!(
        f.message.contains("below its own capability 8 GT/s x4")
            && f.message.contains("does not report its capability"),
        "{}",
        f.message
    );
}

#[test]
fn t60p_block_queue_limit_and_no_usb_finding() {
    let Some(root) = shared("systemd-t60p-usbstorage-md-e1000e") else {
        return;
    };
    let inv = inventory(&root);
    // The USB 2 stick at 480 Mb/s on usb-storage is as fast as it can be.
    assert!(inv.usb.findings.is_empty(), "{:?}", inv.usb.findings);
    // sda: 512 of 32767 KiB.
    assert!(inv
        .block
        .findings
        .iter()
        .any(|f| f.subject == "sda" && f.message.contains("32767")));
    assert!(!inv.block.findings.iter().any(|f| f.subject == "sdb"));
}

#[test]
fn fc27_nvme_max_sectors_below_the_device_limit() {
    let Some(root) = shared("ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let inv = inventory(&root);
    assert!(inv.block.findings.iter().any(|f| f.subject == "nvme0n1"));
}

#[test]
fn r910_raid_at_its_limit_has_no_block_finding() {
    let Some(root) = shared("hwloc-40intel64-4xeth-ib-2pciroots") else {
        return;
    };
    let b = inventory(&root).block;
    assert!(b.findings.is_empty(), "128 = 128 KiB: {:?}", b.findings);
}

#[test]
fn vm_virtio_disk_without_a_limit_says_so() {
    let Some(root) = shared("this-vm") else {
        return;
    };
    let b = inventory(&root).block;
    let f = b.findings.iter().find(|f| f.subject == "vda").unwrap();
    assert!(f.message.contains("no limit"), "{}", f.message);
}

#[test]
fn usb3_devices_stuck_at_480_and_bulk_only_beside_uas() {
    let inv = inventory(&own("sysfs/usb3-uas-bot-r8152"));
    let subjects: Vec<(&str, &str)> = inv
        .usb
        .findings
        .iter()
        .map(|f| (f.subject.as_str(), f.message.as_str()))
        .collect();
    // The T5 on UAS at 5000M is fine.
    assert!(
        !subjects.iter().any(|(s, _)| *s == "USB 2-1"),
        "{subjects:?}"
    );
    assert!(
        subjects
            .iter()
            .any(|(s, m)| *s == "USB 1-2" && m.contains("480") && m.contains("3.20")),
        "{subjects:?}"
    );
    assert!(
        subjects
            .iter()
            .any(|(s, m)| *s == "USB 1-2" && m.contains("Bulk-Only") && m.contains("UAS")),
        "{subjects:?}"
    );
    // The r8152 on the USB 2 root hub is a USB 3 device at 480 too.
    assert!(subjects.iter().any(|(s, _)| *s == "USB 1-3"));
    assert_eq!(inv.usb.findings.len(), 3, "{subjects:?}");
    // And its 1000 Mb/s Ethernet link is capped by that 480 Mb/s USB link.
    let capped: Vec<_> = inv
        .net
        .findings
        .iter()
        .map(|f| f.subject.as_str())
        .collect();
    assert_eq!(capped, ["eth2"], "1000 Mb/s link behind 480 Mb/s USB");
}

#[test]
fn a_downgraded_link_names_the_bars_it_carries_and_the_largest_to_measure() {
    let dir = tempfile::tempdir().unwrap();
    downgraded_tree(dir.path());
    // sysfs `resource` (drivers/pci/pci-sysfs.c resource_show): BAR 0 16 KiB and BAR 2
    // 16 MiB prefetchable, both 64-bit memory (flags 0x140204, 0x14220c); BAR 4 I/O ports.
    let zero = "0x0000000000000000 0x0000000000000000 0x0000000000000000";
    let resource = [
        "0x00000000fe000000 0x00000000fe003fff 0x0000000000140204",
        zero,
        "0x00000000e0000000 0x00000000e0ffffff 0x000000000014220c",
        zero,
        "0x000000000000e000 0x000000000000e01f 0x0000000000040101",
        zero,
        zero,
    ]
    .join("\n");
    std::fs::write(
        dir.path()
            .join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/resource"),
        resource + "\n",
    )
    .unwrap();
    let a = audit(dir.path());
    // One finding for the downgraded link, as before, now with its BARs: no second one.
    let link: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.message.contains("runs below what both ends support"))
        .collect();
    assert_eq!(link.len(), 1, "{:#?}", a.findings);
    assert!(
        link[0].message.ends_with(
            "; CPU loads and stores to its memory BARs (BAR 0 of 16 KiB, BAR 2 of 16 MiB) \
             cross this link at 5 GT/s x1"
        ),
        "{}",
        link[0].message
    );
    let advice = link[0].advice.as_deref().unwrap();
    assert!(
        advice.starts_with("check the slot")
            && advice.ends_with("`headroom bench mmio 0000:01:00.0:2` (BAR 2, the largest)"),
        "{advice}"
    );
    // The root port above has no BAR here and its link is the same one: no BAR sentence
    // anywhere else.
    assert_eq!(
        a.findings
            .iter()
            .filter(|f| f.message.contains("BAR"))
            .count(),
        1
    );
    // With a driver bound, the command asks for --allow-bound and the
    // advice says why (a register read can change the device).
    let drv = dir.path().join("sys/bus/pci/drivers/nvme");
    std::fs::create_dir_all(&drv).unwrap();
    std::os::unix::fs::symlink(
        &drv,
        dir.path()
            .join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/driver"),
    )
    .unwrap();
    let a = audit(dir.path());
    let advice = a
        .findings
        .iter()
        .find(|f| f.message.contains("runs below what both ends support"))
        .and_then(|f| f.advice.clone())
        .unwrap();
    assert!(
        advice.ends_with(
            "`headroom bench mmio 0000:01:00.0:2 --allow-bound` (BAR 2, the largest; driver \
             nvme is bound, and a register read can change the device (virtio's ISR status \
             clears when read): load a window whose registers you know (--offset, --size) or \
             unbind the driver first)"
        ),
        "{advice}"
    );
}

#[test]
fn a_link_at_its_best_says_nothing_of_its_bars() {
    let dir = tempfile::tempdir().unwrap();
    let g3x4 = LinkState::new(PcieGen::Gen3, 4);
    gen3_x4_endpoint(dir.path(), express(PortType::Endpoint, g3x4, g3x4, 256));
    std::fs::write(
        dir.path()
            .join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/resource"),
        "0x00000000fe000000 0x00000000fe003fff 0x0000000000140204\n",
    )
    .unwrap();
    let a = audit(dir.path());
    assert_eq!(a.functions[1].memory_bars.len(), 1);
    assert!(
        !a.findings.iter().any(|f| f.message.contains("BAR")),
        "{:#?}",
        a.findings
    );
}

/// The board lab's x86_64 q35 board (lab/boards/x86_64-q35.board) as its kernel showed it
/// (captured with `run: capture`): QEMU's bulk-only disk on SuperSpeed offers no UAS, and a
/// USB 2.0 disk behind QEMU's USB 1.1 hub runs at 12 Mb/s. Both need a finding a user acts
/// on; the UAS disk none.
#[test]
fn lab_board_bulk_only_without_uas_and_a_usb2_disk_behind_a_full_speed_hub() {
    let inv = inventory(&own("sysfs/qemu-q35-lab"));
    let usb: Vec<(&str, Severity, &str)> = inv
        .usb
        .findings
        .iter()
        .map(|f| (f.subject.as_str(), f.severity, f.message.as_str()))
        .collect();
    assert!(
        usb.iter().any(|(s, sev, m)| *s == "USB 2-1"
            && *sev == Severity::Info
            && m.contains("Bulk-Only")
            && m.contains("does not offer UAS")),
        "{usb:?}"
    );
    assert!(
        usb.iter().any(|(s, sev, m)| *s == "USB 1-3.1"
            && *sev == Severity::Warning
            && m.contains("12 Mb/s")
            && m.contains("hub 1-3")),
        "{usb:?}"
    );
    // The UAS disk (2-2) and the hub itself (a USB 1.1 device at its own speed) are fine.
    assert!(
        !usb.iter()
            .any(|(s, _, _)| *s == "USB 2-2" || *s == "USB 1-3"),
        "{usb:?}"
    );
    assert_eq!(usb.len(), 2, "{usb:?}");
}
