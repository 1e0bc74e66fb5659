//! Names without the system's pci.ids/usb.ids: the copies built into the binary (feature
//! `builtin-ids`, on by default), or numeric ids when the feature is off
//! (`cargo test -p headroom-probe --no-default-features --test builtin_ids`).

use model::root::SysRoot;
use probe::pci::ids::PciNames;
use probe::usb;
use std::collections::HashSet;

/// A captured tree with USB devices and no usb.ids under it (umockdev's Intel EHCI capture).
fn usb_tree() -> Option<SysRoot> {
    let dir = testsupport::fixtures::shared_fixtures()?
        .join("sysfs")
        .join("umockdev-intel-ehci-hubchain-kbd");
    assert!(
        dir.is_dir(),
        "missing captured fixture tree {}",
        dir.display()
    );
    assert!(
        !dir.join("usr/share/misc/usb.ids").exists(),
        "the tree must not carry its own usb.ids for this test"
    );
    Some(SysRoot::new(dir))
}

fn dev<'a>(
    inv: &'a model::inventory::usb::UsbInventory,
    name: &str,
) -> &'a model::inventory::usb::UsbDevice {
    inv.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no USB device {name}"))
}

#[cfg(feature = "builtin-ids")]
#[test]
fn usb_names_come_from_the_builtin_copy_when_the_root_has_none() {
    let Some(root) = usb_tree() else { return };
    let inv = usb::scan(&root);
    assert_eq!(inv.ids_file, None);
    assert_eq!(
        inv.ids_builtin.as_deref(),
        Some("built-in usb.ids 2025.07.26")
    );
    // The names lsusb prints for these ids with usb.ids 2025.07.26.
    let hub = dev(&inv, "usb1");
    assert_eq!(hub.vendor_name.as_deref(), Some("Linux Foundation"));
    assert_eq!(hub.product_name.as_deref(), Some("2.0 root hub"));
    let rmh = dev(&inv, "1-1");
    assert_eq!(rmh.vendor_name.as_deref(), Some("Intel Corp."));
    assert_eq!(
        rmh.product_name.as_deref(),
        Some("Integrated Rate Matching Hub")
    );
}

#[cfg(feature = "builtin-ids")]
#[test]
fn pci_names_from_the_builtin_copy() {
    let n = PciNames::builtin(&HashSet::from([0x8086, 0x1af4]));
    assert_eq!(n.source.as_deref(), Some("built-in pci.ids 2023.04.10"));
    assert_eq!(n.vendor(0x8086), Some("Intel Corporation"));
    assert_eq!(n.device(0x1af4, 0x1001), Some("Virtio block device"));
    assert_eq!(n.class(0x010802), Some("Non-Volatile memory controller"));
    // Only the vendors asked for are kept.
    assert_eq!(n.vendor(0x10de), None);
}

#[cfg(not(feature = "builtin-ids"))]
#[test]
fn numeric_ids_without_the_feature() {
    let n = PciNames::builtin(&HashSet::from([0x8086]));
    assert!(n.is_empty());
    assert_eq!(n.vendor(0x8086), None);
    let Some(root) = usb_tree() else { return };
    let inv = usb::scan(&root);
    assert_eq!(
        (inv.ids_file.as_ref(), inv.ids_builtin.as_ref()),
        (None, None)
    );
    let hub = dev(&inv, "usb1");
    assert_eq!(hub.vendor_id, Some(0x1d6b));
    assert_eq!(hub.vendor_name, None);
}
