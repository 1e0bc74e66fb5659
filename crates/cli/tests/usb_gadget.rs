//! The device side of USB in the audit (device controllers, configfs gadgets and their
//! functions) and `path` of a gadget LUN's backing file, on a tree laid out as the board lab's
//! dummy_hcd gadget.

use testsupport::cmd::*;

fn gadget_tree() -> std::path::PathBuf {
    testsupport::fixtures::own("sysfs/usb-gadget-dummy-udc")
}

#[test]
fn the_audit_shows_the_udc_and_the_gadgets_functions() {
    let text = String::from_utf8(stdout_of(
        headroom().arg("audit").arg("--root").arg(gadget_tree()),
    ))
    .unwrap();
    assert!(
        text.contains(
            "UDC dummy_udc.0 [dummy_udc] configured, high-speed (at most high-speed), gadget g1"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "mass_storage.0 mass storage: lun.0 backed by /srv/gadget/lun0.img (removable)"
        ),
        "{text}"
    );
    assert!(text.contains("ncm.usb0 NCM: interface usb0"), "{text}");
    // f_hid at high speed: bInterval 4 = 8 microframes = 1 ms, one 8 B report each.
    assert!(
        text.contains(
            "hid.usb0 HID: reports of 8 B, bInterval 4: at most 1000 reports/s (8.0 kB/s"
        ),
        "{text}"
    );
    // A gadget bound to no UDC, with a function in no configuration.
    assert!(text.contains("(bound to no UDC)"), "{text}");
    assert!(
        text.contains("uvc.0 UVC camera (in no configuration)"),
        "{text}"
    );
    // The product string the gadget's author wrote reaches the terminal escaped.
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.contains("cam\\x1b]0;owned\\x07"), "{text}");

    let doc = json_of(
        headroom()
            .arg("audit")
            .arg("--json")
            .arg("--root")
            .arg(gadget_tree()),
    );
    let side = &doc["usb"]["device_side"];
    assert_eq!(side["controllers"][0]["state"], "configured");
    assert_eq!(side["controllers"][0]["gadget"], "g1");
    let g1 = side["gadgets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "g1")
        .unwrap();
    let hid = g1["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "hid.usb0")
        .unwrap();
    assert_eq!(hid["kind"]["hid"]["reserved"]["bytes_per_sec"], 8000.0);
}

#[test]
fn path_of_a_luns_backing_file_names_the_gadget_and_the_storage_under_it() {
    let text = String::from_utf8(stdout_of(
        headroom()
            .arg("path")
            .arg("--root")
            .arg(gadget_tree())
            .arg("/srv/gadget/lun0.img"),
    ))
    .unwrap();
    assert!(text.contains("disk nvme0n1"), "{text}");
    assert!(
        text.contains(
            "backs USB gadget g1's mass_storage.0 lun.0 on UDC dummy_udc.0 (configured, \
             high-speed, bulk ceiling 53.2 MB/s)"
        ),
        "{text}"
    );
    let doc = json_of(
        headroom()
            .arg("path")
            .arg("--json")
            .arg("--root")
            .arg(gadget_tree())
            .arg("/srv/gadget/lun0.img"),
    );
    let lun = &doc["path"]["backs_gadget_luns"][0];
    assert_eq!(lun["gadget"], "g1");
    assert_eq!(lun["usb_bulk_ceiling_bps"], 53_248_000.0);
    // Another file on the same disk backs nothing.
    let doc = json_of(
        headroom()
            .arg("path")
            .arg("--json")
            .arg("--root")
            .arg(gadget_tree())
            .arg("/srv/other.img"),
    );
    assert!(doc["path"].get("backs_gadget_luns").is_none(), "{doc}");
}

/// The board lab's capture of dummy_hcd with its gadget bound (Debian's 6.1 kernel): the
/// host side's view of the HID function's endpoint, from its real descriptors, agrees with
/// the ceiling the gadget side works out from f_hid's bInterval; u_ether's addresses, which
/// the kernel shows with their string's NUL, read as plain addresses.
#[test]
fn both_ends_of_the_labs_captured_gadget_agree() {
    let tree = testsupport::fixtures::own("sysfs/qemu-dummy-hcd-gadget");
    let text =
        String::from_utf8(stdout_of(headroom().arg("audit").arg("--root").arg(&tree))).unwrap();
    assert!(
        text.contains("UDC dummy_udc.0 [dummy_udc] configured, high-speed"),
        "{text}"
    );
    assert!(
        text.contains("1-1 480M (USB 2.00) Linux Foundation Multifunction Composite Gadget"),
        "{text}"
    );
    assert!(
        text.contains(
            "Human Interface Device alt 0: interrupt IN 0x8a 8 B per 1 ms = 8.0 kB/s reserved, \
             1000 transfers/s"
        ),
        "{text}"
    );
    assert!(text.contains("at most 1000 reports/s (8.0 kB/s"), "{text}");
    assert!(
        text.contains("lun.0 backed by /mnt/ext4/lun0.img (removable)"),
        "{text}"
    );
    assert!(
        text.contains("device address b2:97:5e:6f:02:d2, host address 8a:e5:37:23:32:13\n"),
        "{text}"
    );
    let text = String::from_utf8(stdout_of(
        headroom()
            .arg("path")
            .arg("--root")
            .arg(&tree)
            .arg("/mnt/ext4/lun0.img"),
    ))
    .unwrap();
    assert!(
        text.contains("backs USB gadget g1's mass_storage.0 lun.0 on UDC dummy_udc.0"),
        "{text}"
    );
}
