//! USB, block and network inventories and chain resolution on captured and hand-made trees.
//!
//! Captured trees (tests/fixtures/captured/sysfs) are checked against the facts their
//! SOURCE.md states and the lsblk/lsusb outputs saved beside them; hand-made trees
//! (tests/fixtures/sysfs, built by make_trees.py) cover what no capture has: uas at 5000M, a
//! USB 3 device stuck at 480M, r8152 adapters, an SD card with its timing, a downgraded NVMe
//! link, a SATA link speed, and bad input.

use model::inventory::block::{BlockDevice, BlockKind};
use model::inventory::usb::{HostAttachment, UsbDevice};
use model::path::{Chain, Hop, LayerKind, StorageTransport, Transport};
use model::root::SysRoot;
use probe::block;
use probe::chain;
use probe::net;
use probe::sysfs::SysfsExt;
use probe::usb;
use std::path::{Path, PathBuf};

fn shared(tree: &str) -> Option<SysRoot> {
    let dir = testsupport::fixtures::shared_fixtures()?
        .join("sysfs")
        .join(tree);
    assert!(
        dir.is_dir(),
        "missing captured fixture tree {}",
        dir.display()
    );
    Some(SysRoot::new(dir))
}

fn own(tree: &str) -> SysRoot {
    SysRoot::new(testsupport::fixtures::own(&format!("sysfs/{tree}")))
}

fn usb_dev<'a>(inv: &'a model::inventory::usb::UsbInventory, name: &str) -> &'a UsbDevice {
    inv.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no USB device {name}"))
}

fn blk<'a>(inv: &'a model::inventory::block::BlockInventory, name: &str) -> &'a BlockDevice {
    inv.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no block device {name}"))
}

fn iface<'a>(
    inv: &'a model::inventory::net::NetInventory,
    name: &str,
) -> &'a model::inventory::net::NetInterface {
    inv.interfaces
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no interface {name}"))
}

/// A compact text of a chain's hops, for assertions that read like the design's examples.
fn names(c: &Chain) -> Vec<String> {
    c.hops.iter().map(short).collect()
}

fn short(h: &Hop) -> String {
    match h {
        Hop::Filesystem { fs_type, dev, .. } => format!("fs {fs_type} {dev}"),
        Hop::Partition { name, .. } => format!("part {name}"),
        Hop::Layer { name, .. } => format!("layer {name}"),
        Hop::Disk {
            name, transport, ..
        } => format!("disk {name} {transport:?}"),
        Hop::Network { name, .. } => format!("net {name}"),
        Hop::Ata { port, .. } => format!("ata {port}"),
        Hop::ScsiHost { host, .. } => format!("scsi {host}"),
        Hop::Usb { name, .. } => format!("usb {name}"),
        Hop::Mmc { host, .. } => format!("mmc {host}"),
        Hop::Virtio { name, .. } => format!("virtio {name}"),
        Hop::Pci { address, .. } => format!("pci {address}"),
        Hop::Platform { name, .. } => format!("platform {name}"),
        Hop::Video { name, .. } => format!("video {name}"),
        Hop::Cpu => "cpu".to_string(),
    }
}

fn resolve(root: &SysRoot, target: &str) -> Chain {
    chain::resolve(root, Path::new(target))
}

// ---- systemd T60p: USB stick on usb-storage behind EHCI, SATA without ataN, md RAID1 ----

#[test]
fn t60p_usb_stick_on_ehci() {
    let Some(root) = shared("systemd-t60p-usbstorage-md-e1000e") else {
        return;
    };
    let inv = usb::scan(&root);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    // lsusb -t shows five buses.
    assert_eq!(inv.devices.iter().filter(|d| d.root_hub).count(), 5);
    let stick = usb_dev(&inv, "5-1");
    assert_eq!(stick.speed_mbps, Some(480.0));
    assert_eq!(stick.version.as_deref(), Some("2.00"));
    assert_eq!(stick.parent.as_deref(), Some("usb5"));
    assert_eq!(stick.rx_lanes, None, "this kernel has no rx_lanes");
    let ms = stick.storage.as_ref().unwrap();
    assert_eq!(ms.transport, StorageTransport::BulkOnly);
    assert_eq!(ms.driver.as_deref(), Some("usb-storage"));
    let hc = stick.host_controller.as_ref().unwrap();
    assert_eq!(
        hc.attachment,
        HostAttachment::Pci {
            address: "0000:00:1d.7".into()
        }
    );
    assert_eq!(hc.driver.as_deref(), Some("ehci_hcd"));
    assert_eq!(hc.kind, Some("EHCI"));
    // The low-speed mouse on a UHCI bus, and the phone's interfaces (lsusb -t).
    assert_eq!(usb_dev(&inv, "3-1").speed_mbps, Some(1.5));
    assert_eq!(
        usb_dev(&inv, "usb3").host_controller.as_ref().unwrap().kind,
        Some("UHCI")
    );
    let phone = usb_dev(&inv, "5-2");
    // lsusb -t lists interfaces 0-6 and 9-13 for this phone.
    let numbers: Vec<u8> = phone.interfaces.iter().filter_map(|i| i.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13]);
    assert_eq!(phone.interfaces[0].driver.as_deref(), Some("cdc_acm"));
    assert_eq!(phone.interfaces[0].class_name, Some("Communications"));
    assert_eq!(phone.interfaces[2].driver, None, "unbound interface");
    assert_eq!(
        usb_dev(&inv, "usb5").interfaces[0].driver.as_deref(),
        Some("hub")
    );

    let c = resolve(&root, "sdb");
    assert_eq!(
        names(&c),
        [
            "disk sdb Usb",
            "usb 5-1",
            "usb usb5",
            "pci 0000:00:1d.7",
            "cpu"
        ]
    );
    assert_eq!(c.stopped, None);
    match &c.hops[1] {
        Hop::Usb {
            speed_mbps,
            driver,
            storage,
            ..
        } => {
            assert_eq!(*speed_mbps, Some(480.0));
            assert_eq!(driver.as_deref(), Some("usb-storage"));
            assert_eq!(*storage, Some(StorageTransport::BulkOnly));
        }
        h => panic!("expected the USB device, got {h:?}"),
    }
    assert_eq!(c.hops[1].nominal_rate_mbps(), Some(480.0));
}

#[test]
fn t60p_block_matches_lsblk() {
    let Some(root) = shared("systemd-t60p-usbstorage-md-e1000e") else {
        return;
    };
    let inv = block::scan(&root);
    let sdb = blk(&inv, "sdb");
    let q = sdb.queue.as_ref().unwrap();
    assert_eq!(q.max_sectors_kb, Some(120));
    assert_eq!(q.max_hw_sectors_kb, Some(120));
    assert_eq!(q.scheduler.as_deref(), Some("cfq"));
    assert_eq!(q.nr_requests, Some(128), "lsblk RQ-SIZE 128");
    assert_eq!(q.rotational, None, "too old for queue/rotational");
    assert_eq!(sdb.removable, Some(true));
    assert_eq!(sdb.transport, Transport::Usb);
    assert_eq!(sdb.model.as_deref(), Some("USB Flash Drive"));
    // lsblk: 125.5M.
    assert_eq!(sdb.size_bytes, Some(131_596_288));
    // lsblk TRAN: sda sata (ahci host without ataN), sr0 ata (ata_piix).
    assert_eq!(blk(&inv, "sda").transport, Transport::Ata);
    assert_eq!(blk(&inv, "sr0").transport, Transport::Ata);
    let parts: Vec<&str> = inv
        .devices
        .iter()
        .filter(|d| d.parent.as_deref() == Some("sda"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        parts,
        ["sda1", "sda5", "sda6", "sda7", "sda8", "sda9", "sda10"]
    );
    assert_eq!(blk(&inv, "sda9").holders, ["md0"]);
    let md0 = blk(&inv, "md0");
    assert_eq!(md0.slaves, ["sda9"]);
    assert_eq!(
        md0.layer,
        Some(LayerKind::Md {
            level: Some("raid1".into())
        })
    );

    let c = resolve(&root, "md0");
    let Hop::Layer { branches, .. } = &c.hops[0] else {
        panic!("md0 is a layer: {:?}", c.hops)
    };
    assert_eq!(branches.len(), 1);
    let below: Vec<String> = branches[0].hops.iter().map(short).collect();
    assert_eq!(
        below,
        [
            "part sda9",
            "disk sda Ata",
            "scsi host0",
            "pci 0000:00:1f.2",
            "cpu"
        ]
    );
    assert_eq!(c.pci_addresses(), ["0000:00:1f.2"]);
}

#[test]
fn t60p_network() {
    let Some(root) = shared("systemd-t60p-usbstorage-md-e1000e") else {
        return;
    };
    let inv = net::scan(&root);
    let eth0 = iface(&inv, "eth0");
    assert_eq!(eth0.speed_mbps, None, "old e1000e has no speed attribute");
    assert_eq!(eth0.driver.as_deref(), Some("e1000e"));
    assert_eq!(
        eth0.attachment,
        Some(model::inventory::net::Attachment::Pci {
            address: "0000:02:00.0".into()
        })
    );
    assert!(!eth0.is_virtual);
    let lo = iface(&inv, "lo");
    assert!(lo.is_virtual);
    assert_eq!(lo.mtu, Some(16436));
    let c = resolve(&root, "eth0");
    assert_eq!(
        names(&c),
        ["net eth0", "pci 0000:02:00.0", "pci 0000:00:1c.0", "cpu"]
    );
}

// ---- util-linux Fedora 27: NVMe, SATA on ataN, LVM on loops, mountinfo ----

#[test]
fn fc27_file_on_nvme_follows_mountinfo() {
    let Some(root) = shared("ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let c = resolve(&root, "/home/test/some/file");
    assert_eq!(
        names(&c),
        [
            "fs ext4 259:3",
            "part nvme0n1p3",
            "disk nvme0n1 Nvme",
            "pci 0000:01:00.0",
            "pci 0000:00:01.0",
            "cpu"
        ]
    );
    assert_eq!(c.stopped, None);
    assert_eq!(c.pci_addresses(), ["0000:01:00.0", "0000:00:01.0"]);

    let c = resolve(&root, "/home/archive/x");
    assert_eq!(
        names(&c)[..4],
        ["fs ext4 8:17", "part sdb1", "disk sdb Ata", "ata ata2"]
    );
    assert_eq!(names(&c)[4..], ["pci 0000:00:1f.2", "cpu"]);

    let c = resolve(&root, "/tmp/scratch");
    assert_eq!(names(&c), ["fs tmpfs 0:43"]);
    assert!(
        c.stopped.as_deref().unwrap().contains("tmpfs"),
        "{:?}",
        c.stopped
    );
}

#[test]
fn fc27_lvm_on_loops_branches_to_backing_files() {
    let Some(root) = shared("ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let c = resolve(&root, "/dev/dm-0");
    let Hop::Layer {
        kind: LayerKind::Dm { name, uuid },
        branches,
        ..
    } = &c.hops[0]
    else {
        panic!("dm-0 is a dm layer: {:?}", c.hops)
    };
    assert_eq!(name.as_deref(), Some("vg_foo.4059-lv_foo.4059"));
    assert!(uuid.as_deref().unwrap().starts_with("LVM-"));
    assert_eq!(branches.len(), 4);
    // Each loop's file is in /tmp, a tmpfs on that machine: the branch says so.
    let Hop::Layer {
        kind: LayerKind::Loop { backing_file },
        branches: files,
        ..
    } = &branches[2].hops[0]
    else {
        panic!("loop layer expected: {:?}", branches[2])
    };
    assert_eq!(
        backing_file.as_deref(),
        Some(Path::new("/tmp/foo.4059-2.img"))
    );
    assert!(files[0].stopped.as_deref().unwrap().contains("tmpfs"));
}

#[test]
fn fc27_block_matches_lsblk_basic() {
    let Some(root) = shared("ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let inv = block::scan(&root);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    // expected-lsblk-basic.txt: NAME, MAJ:MIN, SIZE (binary units), MOUNTPOINT.
    let gib = 1u64 << 30;
    for (name, dev, size, mount) in [
        ("nvme0n1p2", "259:2", 200 * gib, Some("/home")),
        ("nvme0n1p3", "259:3", 16_952_925_696, Some("/home/test")),
        ("sda4", "8:4", 50 * gib, Some("/")),
        ("sda1", "8:1", 200 << 20, Some("/boot/efi")),
        ("sdb1", "8:17", 80_025_313_280, Some("/home/archive")),
        ("dm-0", "253:0", 32 << 20, None),
        ("loop1", "7:1", 10 << 20, None),
    ] {
        let d = blk(&inv, name);
        assert_eq!(d.dev.as_deref(), Some(dev), "{name}");
        assert_eq!(d.size_bytes, Some(size), "{name}");
        let mp: Vec<_> = d.mounts.iter().map(|m| m.mount_point.as_path()).collect();
        assert_eq!(
            mp,
            mount.map(Path::new).into_iter().collect::<Vec<_>>(),
            "{name}"
        );
    }
    assert_eq!(blk(&inv, "sda4").kind, BlockKind::Partition);
    assert_eq!(
        blk(&inv, "dm-0").slaves,
        ["loop0", "loop1", "loop2", "loop3"]
    );
    assert_eq!(blk(&inv, "loop0").holders, ["dm-0"]);
    let nvme = blk(&inv, "nvme0n1");
    assert_eq!(nvme.transport, Transport::Nvme);
    assert_eq!(nvme.model.as_deref(), Some("KINGSTON SKC1000240G"));
    let q = nvme.queue.as_ref().unwrap();
    assert_eq!(
        (q.max_sectors_kb, q.max_hw_sectors_kb),
        (Some(1280), Some(2048))
    );
    assert_eq!(q.scheduler.as_deref(), Some("none"));
    assert_eq!(q.rotational, Some(false));
    assert_eq!(
        blk(&inv, "sdb").queue.as_ref().unwrap().rotational,
        Some(true)
    );
}

// ---- hwloc R910: four bnx2 ports, InfiniBand on a second PCI root, MegaRAID ----

#[test]
fn r910_network_and_raid() {
    let Some(root) = shared("hwloc-40intel64-4xeth-ib-2pciroots") else {
        return;
    };
    let inv = net::scan(&root);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    let eth0 = iface(&inv, "eth0");
    assert_eq!(eth0.speed_mbps, Some(1000));
    assert_eq!(eth0.duplex.as_deref(), Some("full"));
    assert_eq!(eth0.mtu, Some(1500));
    assert_eq!(eth0.operstate.as_deref(), Some("up"));
    for down in ["eth1", "eth2", "eth3"] {
        let i = iface(&inv, down);
        assert_eq!(i.speed_mbps, None, "{down}: empty speed file");
        assert_eq!(i.duplex, None, "{down}");
        assert_eq!(i.operstate.as_deref(), Some("down"));
        assert_eq!(i.driver.as_deref(), Some("bnx2"));
    }
    assert_eq!(iface(&inv, "ib0").mtu, Some(2044));
    let c = resolve(&root, "ib0");
    assert_eq!(
        names(&c),
        ["net ib0", "pci 0000:43:00.0", "pci 0000:40:03.0", "cpu"]
    );
    assert_eq!(
        resolve(&root, "eth3").pci_addresses(),
        ["0000:03:00.1", "0000:00:06.0"]
    );
    assert_eq!(c.hops[0].nominal_rate_mbps(), None);
    assert_eq!(
        resolve(&root, "eth0").hops[0].nominal_rate_mbps(),
        Some(1000.0)
    );

    let b = block::scan(&root);
    let sda = blk(&b, "sda");
    assert_eq!(sda.transport, Transport::Scsi);
    assert_eq!(sda.model.as_deref(), Some("PERC H700"));
    let c = resolve(&root, "sda");
    assert_eq!(
        names(&c),
        [
            "disk sda Scsi",
            "scsi host0",
            "pci 0000:01:00.0",
            "pci 0000:00:03.0",
            "cpu"
        ]
    );
    match &c.hops[1] {
        Hop::ScsiHost { driver, .. } => assert_eq!(driver.as_deref(), Some("megaraid_sas")),
        h => panic!("{h:?}"),
    }
}

// ---- umockdev: full-speed keyboard behind high-speed hubs ----

#[test]
fn hub_chain_speeds_are_per_device() {
    let Some(root) = shared("umockdev-intel-ehci-hubchain-kbd") else {
        return;
    };
    let inv = usb::scan(&root);
    let kbd = usb_dev(&inv, "1-1.5.4.2");
    assert_eq!(kbd.speed_mbps, Some(12.0));
    assert_eq!(kbd.ports, [1, 5, 4, 2]);
    assert_eq!(kbd.parent.as_deref(), Some("1-1.5.4"));
    assert_eq!(kbd.interfaces[0].driver.as_deref(), Some("usbhid"));
    assert_eq!(kbd.interfaces[0].class_name, Some("Human Interface Device"));
    assert_eq!(usb_dev(&inv, "1-1.5.4").speed_mbps, Some(12.0));
    assert_eq!(usb_dev(&inv, "1-1.5.4").version.as_deref(), Some("1.10"));
    assert_eq!(usb_dev(&inv, "1-1.5").speed_mbps, Some(480.0));
    assert_eq!(usb_dev(&inv, "1-1").parent.as_deref(), Some("usb1"));
    let hc = kbd.host_controller.as_ref().unwrap();
    assert_eq!(hc.driver.as_deref(), Some("ehci-pci"));
    assert_eq!(hc.kind, Some("EHCI"));
    assert_eq!(inv.devices.len(), 5);
}

// ---- checkbox Bay Trail: eMMC on an ACPI platform host ----

#[test]
fn emmc_on_acpi_platform_host() {
    let Some(root) = shared("checkbox-baytrail-emmc-sdhci-acpi") else {
        return;
    };
    let c = resolve(&root, "/dev/mmcblk0p2");
    assert_eq!(
        names(&c),
        [
            "part mmcblk0p2",
            "disk mmcblk0 Mmc",
            "mmc mmc0",
            "platform 80860F14:00",
            "cpu"
        ]
    );
    match &c.hops[2] {
        Hop::Mmc {
            card,
            card_type,
            timing,
            ..
        } => {
            assert_eq!(card.as_deref(), Some("mmc0:0001"));
            assert_eq!(card_type.as_deref(), Some("MMC"));
            assert_eq!(*timing, None, "no debugfs in this tree");
        }
        h => panic!("{h:?}"),
    }
    assert!(
        c.warnings.iter().any(|w| w.contains("ios")),
        "{:?}",
        c.warnings
    );
    assert_eq!(c.pci_addresses(), Vec::<String>::new());

    let b = block::scan(&root);
    let parts: Vec<_> = b
        .devices
        .iter()
        .filter(|d| d.parent.as_deref() == Some("mmcblk0"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(parts, ["mmcblk0p1", "mmcblk0p2", "mmcblk0p3"]);
    assert_eq!(blk(&b, "mmcblk0boot0").transport, Transport::Mmc);
    assert_eq!(blk(&b, "mmcblk0").size_bytes, None, "structure-only tree");
    let n = net::scan(&root);
    assert_eq!(iface(&n, "wlan0").driver.as_deref(), Some("ath9k"));
    assert_eq!(iface(&n, "wlan0").devtype.as_deref(), Some("wlan"));
}

// ---- this VM, captured ----

#[test]
fn vm_capture_virtio() {
    let Some(root) = shared("this-vm") else {
        return;
    };
    let c = resolve(&root, "vda");
    assert_eq!(
        names(&c),
        [
            "disk vda Virtio",
            "virtio virtio1",
            "pci 0000:00:02.0",
            "cpu"
        ]
    );
    let b = block::scan(&root);
    let vda = blk(&b, "vda");
    // expected-lsblk.txt: 256G, ROTA 1, mq-deadline, RQ-SIZE 256, PHY-SEC 4096, LOG-SEC 512.
    assert_eq!(vda.size_bytes, Some(256 << 30));
    let q = vda.queue.as_ref().unwrap();
    assert_eq!(q.rotational, Some(true));
    assert_eq!(q.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(q.nr_requests, Some(256));
    assert_eq!(
        (q.physical_block_size, q.logical_block_size),
        (Some(4096), Some(512))
    );
    assert_eq!(q.max_sectors_kb, Some(4096));
    assert_eq!(q.max_hw_sectors_kb, Some(2_147_483_647));
    assert_eq!(q.read_ahead_kb, Some(8192));
    assert_eq!(q.write_cache.as_deref(), Some("write back"));
    let zram = blk(&b, "zram0");
    assert_eq!(zram.transport, Transport::Virtual);
    assert_eq!(
        zram.queue.as_ref().unwrap().scheduler,
        None,
        "no scheduler file"
    );
    let z = resolve(&root, "zram0");
    assert!(
        z.stopped.as_deref().unwrap().contains("virtual"),
        "{:?}",
        z.stopped
    );

    let n = net::scan(&root);
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    let eth0 = iface(&n, "eth0");
    assert_eq!(eth0.speed_mbps, None, "-1 is SPEED_UNKNOWN");
    assert_eq!(eth0.duplex.as_deref(), Some("unknown"));
    assert_eq!(eth0.mtu, Some(1400));
    assert_eq!(
        eth0.attachment,
        Some(model::inventory::net::Attachment::Virtio {
            name: "virtio2".into(),
            pci: Some("0000:00:03.0".into())
        })
    );
    for v in ["lo", "ifb0", "ifb1"] {
        assert!(iface(&n, v).is_virtual, "{v}");
        assert_eq!(iface(&n, v).attachment, None);
    }
    assert_eq!(names(&resolve(&root, "lo")), ["net lo", "cpu"]);
    // No /sys/bus/usb at all on this VM: an empty inventory, no complaint.
    let u = usb::scan(&root);
    assert!(u.devices.is_empty() && u.warnings.is_empty());
}

// ---- hand-made: uas at 5000M, USB 3 stuck at 480M on usb-storage, r8152 ----

#[test]
fn uas_disk_at_superspeed() {
    let root = own("usb3-uas-bot-r8152");
    let inv = usb::scan(&root);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    assert_eq!(
        inv.ids_file.as_deref(),
        Some(Path::new("/usr/share/misc/usb.ids"))
    );
    let t5 = usb_dev(&inv, "2-1");
    assert_eq!(t5.speed_mbps, Some(5000.0));
    assert_eq!((t5.rx_lanes, t5.tx_lanes), (Some(1), Some(1)));
    assert_eq!(
        t5.vendor_name.as_deref(),
        Some("Samsung Electronics Co., Ltd")
    );
    assert_eq!(t5.product_name.as_deref(), Some("Portable SSD T5"));
    let ms = t5.storage.as_ref().unwrap();
    assert_eq!(ms.transport, StorageTransport::Uas);
    assert_eq!(ms.uas_offered, Some(true));
    assert_eq!(t5.interfaces[0].alt_setting, Some(1));
    assert_eq!(
        usb_dev(&inv, "usb2").product_name.as_deref(),
        Some("3.0 root hub")
    );
    assert_eq!(
        usb_dev(&inv, "usb2").host_controller.as_ref().unwrap().kind,
        Some("xHCI")
    );

    let c = resolve(&root, "/media/usb disk/photo.jpg");
    assert_eq!(
        names(&c),
        [
            "fs exfat 8:1",
            "part sda1",
            "disk sda Usb",
            "usb 2-1",
            "usb usb2",
            "pci 0000:00:14.0",
            "cpu"
        ]
    );
    match &c.hops[3] {
        Hop::Usb {
            driver,
            storage,
            version,
            rx_lanes,
            ..
        } => {
            assert_eq!(driver.as_deref(), Some("uas"));
            assert_eq!(*storage, Some(StorageTransport::Uas));
            assert_eq!(version.as_deref(), Some("3.10"));
            assert_eq!(*rx_lanes, Some(1));
        }
        h => panic!("{h:?}"),
    }
    assert_eq!(c.hops[3].nominal_rate_mbps(), Some(5000.0));
}

#[test]
fn usb3_device_stuck_at_480_on_bulk_only() {
    let root = own("usb3-uas-bot-r8152");
    let c = resolve(&root, "/mnt/new\nline/f");
    assert_eq!(
        names(&c)[..5],
        [
            "fs ext4 8:17",
            "part sdb1",
            "disk sdb Usb",
            "usb 1-2",
            "usb usb1"
        ]
    );
    let b = block::scan(&root);
    assert_eq!(
        blk(&b, "sdb").queue.as_ref().unwrap().max_sectors_kb,
        Some(120)
    );
    assert_eq!(
        blk(&b, "sdb1").mounts[0].mount_point,
        PathBuf::from("/mnt/new\nline")
    );
    assert_eq!(
        blk(&b, "sda1").mounts[0].mount_point,
        PathBuf::from("/media/usb disk")
    );
}

#[test]
fn usb_ethernet_adapters() {
    let root = own("usb3-uas-bot-r8152");
    let inv = net::scan(&root);
    let eth1 = iface(&inv, "eth1");
    assert_eq!(eth1.driver.as_deref(), Some("r8152"));
    assert_eq!(eth1.speed_mbps, Some(1000));
    assert_eq!(
        eth1.attachment,
        Some(model::inventory::net::Attachment::Usb {
            device: "2-2".into(),
            speed_mbps: Some(5000.0)
        })
    );
    let br0 = iface(&inv, "br0");
    assert!(br0.is_virtual);
    assert_eq!(br0.devtype.as_deref(), Some("bridge"));
    let c = resolve(&root, "br0");
    let Hop::Layer {
        kind: LayerKind::Net { devtype },
        branches,
        ..
    } = &c.hops[1]
    else {
        panic!("{:?}", c.hops)
    };
    assert_eq!(devtype.as_deref(), Some("bridge"));
    let below: Vec<String> = branches[0].hops.iter().map(short).collect();
    assert_eq!(
        below,
        ["net eth1", "usb 2-2", "usb usb2", "pci 0000:00:14.0", "cpu"]
    );
    assert_eq!(usb::scan(&root).devices[0].children, ["1-2", "1-3"]);

    let c = resolve(&root, "eth2");
    assert_eq!(
        names(&c),
        ["net eth2", "usb 1-3", "usb usb1", "pci 0000:00:14.0", "cpu"]
    );
    match &c.hops[1] {
        Hop::Usb { driver, .. } => assert_eq!(driver.as_deref(), Some("r8152")),
        h => panic!("{h:?}"),
    }
    let rates: Vec<_> = c.hops.iter().map(Hop::nominal_rate_mbps).collect();
    assert_eq!(rates, [Some(1000.0), Some(480.0), Some(480.0), None, None]);
}

// ---- hand-made: SD card timing, NVMe on a downgraded link, SATA link speed, bad input ----

#[test]
fn sd_card_with_bus_timing() {
    let root = own("sd-nvme-downgraded-sata");
    let c = resolve(&root, "/media/sd card/DCIM/1.jpg");
    assert_eq!(
        names(&c),
        [
            "fs vfat 179:1",
            "part mmcblk1p1",
            "disk mmcblk1 Mmc",
            "mmc mmc1",
            "platform fe2c0000.mmc",
            "cpu"
        ]
    );
    match &c.hops[3] {
        Hop::Mmc {
            card_type, timing, ..
        } => {
            assert_eq!(card_type.as_deref(), Some("SD"));
            assert_eq!(timing.as_deref(), Some("sd uhs SDR104"));
        }
        h => panic!("{h:?}"),
    }
    // 150 MHz x 4 data lines, single data rate.
    assert_eq!(c.hops[3].nominal_rate_mbps(), Some(600.0));
}

#[test]
fn nvme_behind_downgraded_link_and_sata_speed() {
    let root = own("sd-nvme-downgraded-sata");
    let c = resolve(&root, "/");
    assert_eq!(
        names(&c),
        [
            "fs ext4 259:1",
            "part nvme0n1p1",
            "disk nvme0n1 Nvme",
            "pci 0000:01:00.0",
            "pci 0000:00:1c.0",
            "cpu"
        ]
    );
    // The link attributes sit on the PCI functions the chain names, for the PCI side to read.
    for addr in c.pci_addresses() {
        let dev = root.path(format!("/sys/bus/pci/devices/{addr}"));
        let speed = std::fs::read_to_string(dev.join("current_link_speed")).unwrap();
        let max = std::fs::read_to_string(dev.join("max_link_speed")).unwrap();
        assert_eq!(
            (speed.trim(), max.trim()),
            ("8.0 GT/s PCIe", "16.0 GT/s PCIe")
        );
    }
    let c = resolve(&root, "/srv/sata/db");
    assert_eq!(
        names(&c),
        [
            "fs xfs 8:33",
            "part sdc1",
            "disk sdc Ata",
            "ata ata2",
            "pci 0000:00:17.0",
            "cpu"
        ]
    );
    match &c.hops[3] {
        Hop::Ata { sata_spd, .. } => assert_eq!(sata_spd.as_deref(), Some("3.0 Gbps")),
        h => panic!("{h:?}"),
    }
    assert_eq!(c.hops[3].nominal_rate_mbps(), Some(3000.0));
}

#[test]
fn bad_input_is_reported_and_the_rest_continues() {
    let root = own("sd-nvme-downgraded-sata");
    let b = block::scan(&root);
    // Dangling /sys/block/ghost, a directory where nr_requests should be, a garbage
    // mountinfo line: one sentence each, and every real disk still listed.
    assert!(
        b.warnings
            .iter()
            .any(|w| w.contains("ghost") && w.contains("dangling")),
        "{:?}",
        b.warnings
    );
    assert!(
        b.warnings
            .iter()
            .any(|w| w.contains("nr_requests") && w.contains("directory")),
        "{:?}",
        b.warnings
    );
    assert!(
        b.warnings.iter().any(|w| w.contains("mountinfo:6")),
        "{:?}",
        b.warnings
    );
    for d in ["nvme0n1", "sdc", "mmcblk1", "dm-1", "dm-2"] {
        blk(&b, d);
    }
    let nvme = blk(&b, "nvme0n1").queue.as_ref().unwrap();
    assert_eq!(nvme.nr_requests, None);
    assert_eq!(
        nvme.max_sectors_kb,
        Some(128),
        "the rest of the queue is read"
    );

    let c = resolve(&root, "ghost");
    assert!(c.hops.is_empty());
    assert!(
        c.stopped.as_deref().unwrap().contains("ghost"),
        "{:?}",
        c.stopped
    );

    // dm-1 and dm-2 are each other's slaves: the loop is named, not followed forever.
    let c = resolve(&root, "/mnt/loopy/f");
    let Hop::Layer { branches, .. } = &c.hops[1] else {
        panic!("{:?}", c.hops)
    };
    let Hop::Layer {
        branches: inner, ..
    } = &branches[0].hops[0]
    else {
        panic!("{:?}", branches)
    };
    assert!(inner[0].stopped.as_deref().unwrap().contains("loop"));

    let c = resolve(&root, "/mnt/nfs/share/f");
    assert_eq!(names(&c), ["fs nfs4 0:40"]);
    assert!(c.stopped.as_deref().unwrap().contains("nfs4"));
}

#[test]
fn root_without_sysfs_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = SysRoot::new(dir.path());
    let c = chain::resolve(&root, Path::new("/data/f"));
    assert!(c.hops.is_empty());
    assert!(c.stopped.as_deref().unwrap().contains("no sysfs"));
    assert!(usb::scan(&root).devices.is_empty());
    assert!(block::scan(&root).devices.is_empty());
    assert!(net::scan(&root).interfaces.is_empty());
}

// ---- the live system ----

#[test]
fn live_temp_file_and_loopback_resolve() {
    let root = SysRoot::new("/");
    if !root.has_sysfs() {
        testsupport::skip::skip("the live chain test needs /sys");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("target file");
    std::fs::write(&file, b"x").unwrap();
    let c = chain::resolve(&root, &file);
    // The filesystem hop carries the st_dev of the file.
    let Some(Hop::Filesystem { dev, fs_type, .. }) = c.hops.first() else {
        panic!("no filesystem hop: {c:?}")
    };
    use std::os::unix::fs::MetadataExt;
    let (maj, min) = model::blockdev::split_dev(std::fs::metadata(&file).unwrap().dev());
    assert_eq!(dev, &format!("{maj}:{min}"));
    assert_ne!(fs_type, "unknown");
    // Either it reaches the CPU through a disk, or it says why not (tmpfs, overlay...).
    let reaches_cpu = c.hops.last() == Some(&Hop::Cpu);
    assert!(reaches_cpu || c.stopped.is_some(), "{c:?}");
    if reaches_cpu {
        assert!(
            c.hops.iter().any(|h| matches!(h, Hop::Disk { .. })),
            "{c:?}"
        );
    }
    // On this VM: ext4 on vda, virtio, PCI 0000:00:02.0 (see tests/fixtures/captured/sysfs/this-vm/SOURCE.md).
    if maj == 254 && root.path("/sys/block/vda").exists() {
        let n = names(&c);
        assert_eq!(n[1..3], ["disk vda Virtio", "virtio virtio1"], "{n:?}");
        // The device node resolves by its st_rdev to the same disk.
        if Path::new("/dev/vda").exists() {
            let d = chain::resolve(&root, Path::new("/dev/vda"));
            assert_eq!(names(&d)[..2], ["disk vda Virtio", "virtio virtio1"]);
        }
    }

    let lo = chain::resolve(&root, Path::new("lo"));
    assert_eq!(names(&lo), ["net lo", "cpu"]);
    let n = net::scan(&root);
    assert!(iface(&n, "lo").is_virtual);
}
