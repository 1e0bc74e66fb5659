//! The audit's findings: each section's (PCI, USB, block, net; the CPU context's are in
//! [`system`]) as pure functions of `model::inventory`, and every section's findings
//! in one list, most severe first.

pub mod pci;
pub mod system;

use model::inventory::block::{BlockDevice, BlockInventory, BlockKind, MAX_HW_SECTORS_KB_NO_LIMIT};
use model::inventory::net::{Attachment, NetInterface, NetInventory};
use model::inventory::pci::PciAudit;
use model::inventory::usb::{is_usb3_version, usb_major_version, UsbDevice, UsbInventory};
use model::inventory::Inventory;
use model::path::StorageTransport;
use model::{Finding, Severity};

/// Judge a whole inventory: each section's `findings` are filled (the audit document carries
/// them per section) and every finding, the CPU context's too, is returned in one list, most
/// severe first.
pub fn judge(inv: &mut Inventory) -> Vec<Finding> {
    inv.pci.findings = pci::findings(&inv.pci);
    inv.usb.findings = usb(&inv.usb);
    inv.block.findings = block(&inv.block);
    inv.net.findings = net(&inv.net);
    collect([
        &inv.pci.findings[..],
        &system::cpufreq(&inv.system.scaling_cpus(None)),
        &system::devfreq(&inv.system.scaling_memory()),
        &inv.usb.findings,
        &inv.block.findings,
        &inv.net.findings,
    ])
}

/// Judge a PCI audit alone (an lspci dump): its `findings` are filled and returned.
pub fn judge_pci(audit: &mut PciAudit) -> Vec<Finding> {
    audit.findings = pci::findings(audit);
    audit.findings.clone()
}

/// The USB section's findings, device by device in the inventory's order.
pub fn usb(inv: &UsbInventory) -> Vec<Finding> {
    inv.devices
        .iter()
        .flat_map(|d| usb_device(d, inv))
        .collect()
}

/// The block section's findings, disk by disk (partitions share their disk's queue).
pub fn block(inv: &BlockInventory) -> Vec<Finding> {
    inv.devices
        .iter()
        .filter(|d| d.kind == BlockKind::Disk)
        .flat_map(block_device)
        .collect()
}

/// The network section's findings, interface by interface.
pub fn net(inv: &NetInventory) -> Vec<Finding> {
    inv.interfaces.iter().flat_map(net_interface).collect()
}

fn usb_device(dev: &UsbDevice, inv: &UsbInventory) -> Vec<Finding> {
    let mut out = Vec::new();
    if let (false, Some(v), Some(speed)) = (dev.root_hub, dev.version.as_deref(), dev.speed_mbps) {
        // 480 Mb/s is the High-Speed rate (USB 2.0 spec 7.1.11); a USB 3 device that ends
        // up there did not get a SuperSpeed link.
        if is_usb3_version(v) && speed <= 480.0 {
            out.push(
                Finding::new(
                    Severity::Warning,
                    dev.label(),
                    format!(
                        "USB {v} device running at {speed} Mb/s: it is connected through a \
                         USB 2 port, hub or cable, not SuperSpeed."
                    ),
                )
                .with_advice(
                    "Plug it into a USB 3 port (directly or through a USB 3 hub) with a USB 3 cable.",
                ),
            );
        }
    }
    if let Some(ms) = &dev.storage {
        if ms.transport == StorageTransport::BulkOnly && ms.uas_offered == Some(true) {
            out.push(
                Finding::new(
                    Severity::Warning,
                    dev.label(),
                    "Mass storage runs on Bulk-Only Transport (usb-storage) although the device \
                     offers UAS: one command at a time instead of queued commands.",
                )
                .with_advice(
                    "Check that the uas module is available and that no usb-storage quirk \
                     ('u' flag) disables UAS for this device.",
                ),
            );
        } else if ms.transport == StorageTransport::BulkOnly
            && ms.uas_offered == Some(false)
            && dev.speed_mbps.is_some_and(|s| s >= SUPER_SPEED_MBPS)
        {
            // On a SuperSpeed link the transport, not the link, limits random I/O: BOT carries
            // one command at a time (USB Mass Storage Class Bulk-Only Transport 1.0, 5), UAS
            // queues them (USB Attached SCSI Protocol 1.0).
            out.push(
                Finding::new(
                    Severity::Info,
                    dev.label(),
                    format!(
                        "Mass storage on Bulk-Only Transport (usb-storage) at {} Mb/s: the \
                         device does not offer UAS, so it takes one command at a time and \
                         random I/O gains nothing from a deeper queue.",
                        dev.speed_mbps.unwrap_or_default()
                    ),
                )
                .with_advice(
                    "Where random I/O matters, use an enclosure or adapter whose bridge offers \
                     UAS (USB Attached SCSI).",
                ),
            );
        }
        if let (false, Some(v), Some(speed)) =
            (dev.root_hub, dev.version.as_deref(), dev.speed_mbps)
        {
            // A USB 2.0 disk held at Full Speed (12 Mb/s, USB 2.0 spec 7.1.11) by a USB 1.1
            // hub or port: 40 times below the High-Speed rate it was built for. (Keyboards
            // and mice declare 2.00 at Full Speed too, so mass storage only.)
            if !is_usb3_version(v) && usb_major_version(v) >= Some(2) && speed <= FULL_SPEED_MBPS {
                let by = match slow_hub(dev, inv) {
                    Some(hub) => format!(
                        "it is plugged into hub {} (USB {}), which runs at {} Mb/s",
                        hub.name,
                        hub.version.as_deref().unwrap_or("?"),
                        hub.speed_mbps.unwrap_or_default()
                    ),
                    None => {
                        "its port runs at Full Speed (a USB 1.1 port or controller)".to_string()
                    }
                };
                out.push(
                    Finding::new(
                        Severity::Warning,
                        dev.label(),
                        format!(
                            "USB {v} mass storage running at {speed} Mb/s: {by}, not at the \
                             480 Mb/s of High Speed."
                        ),
                    )
                    .with_advice(
                        "Connect it to a USB 2.0 or faster port, directly or through a USB 2.0 \
                         (or faster) hub.",
                    ),
                );
            }
        }
    }
    out
}

/// SuperSpeed's signalling rate, Mb/s (USB 3.2 spec 3.2.1).
const SUPER_SPEED_MBPS: f64 = 5000.0;
/// Full Speed's signalling rate, Mb/s (USB 2.0 spec 7.1.11).
const FULL_SPEED_MBPS: f64 = 12.0;

/// The nearest hub above DEV (not a root hub) that runs at Full Speed or slower: the one
/// holding DEV at that speed.
fn slow_hub<'a>(dev: &UsbDevice, inv: &'a UsbInventory) -> Option<&'a UsbDevice> {
    let mut parent = dev.parent.as_deref();
    // Bounded by USB's tier limit (at most 5 hubs between the root and a device, USB 2.0
    // spec 4.1.1), and by the inventory's size against a loop in a captured tree.
    for _ in 0..inv.devices.len().min(8) {
        let hub = inv
            .devices
            .iter()
            .find(|d| Some(d.name.as_str()) == parent)?;
        if hub.root_hub {
            return None;
        }
        if hub.speed_mbps.is_some_and(|s| s <= FULL_SPEED_MBPS) {
            return Some(hub);
        }
        parent = hub.parent.as_deref();
    }
    None
}

fn block_device(d: &BlockDevice) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(q) = &d.queue else { return out };
    if let (Some(max), Some(hw)) = (q.max_sectors_kb, q.max_hw_sectors_kb) {
        if max < hw {
            let accepts = if hw >= MAX_HW_SECTORS_KB_NO_LIMIT {
                "the device sets no limit".to_string()
            } else {
                format!("the device accepts {hw} KiB")
            };
            out.push(
                Finding::new(
                    Severity::Info,
                    d.name.clone(),
                    format!(
                        "max_sectors_kb is {max} KiB while {accepts}: larger I/O is split into \
                         {max} KiB requests."
                    ),
                )
                .with_advice(if hw >= MAX_HW_SECTORS_KB_NO_LIMIT {
                    format!(
                        "For large sequential I/O, raise /sys/block/{}/queue/max_sectors_kb \
                         (the device sets no upper limit) and measure with headroom bench disk.",
                        d.name
                    )
                } else {
                    format!(
                        "For large sequential I/O, raise /sys/block/{}/queue/max_sectors_kb (up \
                         to {hw}).",
                        d.name
                    )
                }),
            );
        }
    }
    out
}

fn net_interface(i: &NetInterface) -> Vec<Finding> {
    let mut out = Vec::new();
    let up = i.operstate.as_deref() == Some("up");
    if up && i.duplex.as_deref() == Some("half") {
        out.push(
            Finding::new(
                Severity::Warning,
                i.name.clone(),
                format!(
                    "{} runs at half duplex{}: usually an autonegotiation mismatch with the \
                     switch port, with collisions and a fraction of the link's throughput.",
                    i.name,
                    i.speed_mbps
                        .map(|s| format!(" ({s} Mb/s)"))
                        .unwrap_or_default()
                ),
            )
            .with_advice(
                "Set both ends to autonegotiate (or both to the same fixed speed and duplex).",
            ),
        );
    }
    if let (
        Some(link),
        Some(Attachment::Usb {
            device,
            speed_mbps: Some(usb),
        }),
    ) = (i.speed_mbps, &i.attachment)
    {
        if (link as f64) > *usb {
            out.push(
                Finding::new(
                    Severity::Warning,
                    i.name.clone(),
                    format!(
                        "{} links at {link} Mb/s but its USB device {device} runs at {usb} Mb/s: \
                         the USB connection caps the throughput.",
                        i.name
                    ),
                )
                .with_advice(
                    "Connect the adapter to a faster USB port (USB 3 for gigabit and above).",
                ),
            );
        }
    }
    out
}

/// Every section's findings (in the order given: PCI, system, USB, block, net) as one list,
/// most severe first; within a severity, the sections' order and each section's own order
/// are kept (a stable sort), so the list reads the same on every run.
pub fn collect<'a>(sections: impl IntoIterator<Item = &'a [Finding]>) -> Vec<Finding> {
    let mut all: Vec<Finding> = sections.into_iter().flatten().cloned().collect();
    all.sort_by_key(|f| std::cmp::Reverse(f.severity));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Severity;

    fn interface(name: &str, speed_mbps: u64, duplex: &str, usb: Option<f64>) -> NetInterface {
        NetInterface {
            name: name.into(),
            speed_mbps: Some(speed_mbps),
            duplex: Some(duplex.into()),
            mtu: Some(1500),
            operstate: Some("up".into()),
            carrier: Some(true),
            mac_address: None,
            driver: Some("r8152".into()),
            attachment: usb.map(|s| Attachment::Usb {
                device: "1-3".into(),
                speed_mbps: Some(s),
            }),
            is_virtual: false,
            devtype: None,
            sysfs_path: "/sys/class/net/x".into(),
            shaper: None,
        }
    }

    #[test]
    fn half_duplex_and_a_usb_adapter_slower_than_its_link() {
        let inv = NetInventory {
            interfaces: vec![
                interface("eth0", 100, "half", None),
                interface("eth1", 1000, "full", Some(480.0)),
                // A gigabit adapter on a 5 Gb/s USB link is not capped.
                interface("eth2", 1000, "full", Some(5000.0)),
            ],
            ..NetInventory::default()
        };
        let f = net(&inv);
        let got: Vec<(&str, &str)> = f
            .iter()
            .map(|f| (f.subject.as_str(), f.message.as_str()))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].0 == "eth0" && got[0].1.contains("half duplex (100 Mb/s)"));
        assert!(
            got[1].0 == "eth1"
                && got[1]
                    .1
                    .contains("links at 1000 Mb/s but its USB device 1-3 runs at 480 Mb/s")
        );
    }

    #[test]
    fn max_sectors_below_the_device_limit_on_disks_only() {
        let disk = |name: &str, kind, max, hw| BlockDevice {
            name: name.into(),
            kind,
            dev: None,
            parent: None,
            size_bytes: None,
            removable: None,
            read_only: None,
            model: None,
            vendor: None,
            serial: None,
            wwid: None,
            queue: Some(model::inventory::block::QueueSettings {
                max_sectors_kb: Some(max),
                max_hw_sectors_kb: Some(hw),
                ..Default::default()
            }),
            holders: Vec::new(),
            slaves: Vec::new(),
            layer: None,
            transport: model::path::Transport::Nvme,
            bus_path: Vec::new(),
            mounts: Vec::new(),
            sysfs_path: "/sys/block/x".into(),
        };
        let inv = BlockInventory {
            devices: vec![
                disk("nvme0n1", BlockKind::Disk, 1280, 2048),
                disk("nvme0n1p1", BlockKind::Partition, 1280, 2048),
                disk("vda", BlockKind::Disk, 4096, MAX_HW_SECTORS_KB_NO_LIMIT),
                disk("sda", BlockKind::Disk, 128, 128),
            ],
            ..BlockInventory::default()
        };
        let f = block(&inv);
        let subjects: Vec<&str> = f.iter().map(|f| f.subject.as_str()).collect();
        assert_eq!(subjects, ["nvme0n1", "vda"]);
        assert!(f[0].message.contains("the device accepts 2048 KiB"));
        assert!(f[1].message.contains("the device sets no limit"));
        assert!(f[1]
            .advice
            .as_deref()
            .unwrap()
            .contains("/sys/block/vda/queue"));
    }

    #[test]
    fn most_severe_first_and_otherwise_in_section_order() {
        let pci = [
            Finding::new(Severity::Info, "00:1c.0", "a"),
            Finding::new(Severity::Warning, "00:1c.0", "b"),
        ];
        let usb = [
            Finding::new(Severity::Warning, "USB 4-1", "c"),
            Finding::new(Severity::Error, "USB 4-2", "d"),
        ];
        let block = [Finding::new(Severity::Info, "sda", "e")];
        let all = collect([&pci[..], &usb[..], &block[..]]);
        let order: Vec<&str> = all.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(order, ["d", "b", "c", "a", "e"]);
        assert!(collect([]).is_empty());
    }
}
