//! Which machine a document comes from (`probe::system::host`): the machine-id, the device
//! tree's model, `compatible` and serial on a board, DMI's strings on a PC, each read under
//! `--root` from the fixture tree, and made safe when the files are hostile.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::root::SysRoot;
use model::system::{Host, COMPATIBLE_MAX, HOST_TEXT_MAX};
use probe::system::host;

#[test]
fn a_board_is_named_by_its_device_tree() {
    // Raspberry Pi 5 (tests/fixtures/kernel-6.1, made by make_kernel_trees.py).
    let h = host(&testsupport::fixtures::own_root("kernel-6.1"));
    assert_eq!(h.model.as_deref(), Some("Raspberry Pi 5 Model B Rev 1.0"));
    assert_eq!(h.compatible, ["raspberrypi,5-model-b", "brcm,bcm2712"]);
    assert_eq!(h.serial.as_deref(), Some("6a7f1c2e9b3d4a10"));
    assert_eq!(
        h.machine_id.as_deref(),
        Some("5be0d5c1a77f4e0c9d3b2a61f08e4c27")
    );
    assert_eq!(h.board, None, "a device-tree board has no DMI");
}

#[test]
fn a_pc_is_named_by_its_dmi_strings() {
    let h = host(&testsupport::fixtures::own_root(
        "sysfs/sd-nvme-downgraded-sata",
    ));
    assert_eq!(h.model.as_deref(), Some("Dell Inc. OptiPlex 7000"));
    assert_eq!(h.board.as_deref(), Some("Dell Inc. 0C8JVT"));
    assert_eq!(h.serial.as_deref(), Some("7XK2QK3"));
    assert!(h.compatible.is_empty());
    assert_eq!(
        h.machine_id.as_deref(),
        Some("8e5ab0d6c2f94c0e9d1f3a7b6c5d4e21")
    );
}

#[test]
fn a_tree_without_them_names_nothing_more() {
    // The older kernel trees have no /etc, no DMI and no device tree.
    let h = host(&testsupport::fixtures::own_root("kernel-4.19"));
    assert_eq!(
        (h.machine_id, h.model, h.board, h.serial),
        (None, None, None, None)
    );
    assert!(h.compatible.is_empty());
}

fn write(root: &std::path::Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

#[test]
fn hostile_files_are_bounded_and_stripped() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    // A model that repaints the terminal, a megabyte of compatible strings, a serial that is a
    // FIFO (a plain read would block forever), a machine-id that is not one, and DMI
    // placeholders the firmware left unfilled.
    write(
        r,
        "sys/firmware/devicetree/base/model",
        b"\x1b]0;owned\x07Board\r\nX\0tail",
    );
    let many: Vec<u8> = b"vendor,board-with-a-long-name\0".repeat(40_000);
    write(r, "sys/firmware/devicetree/base/compatible", &many);
    let fifo = r.join("sys/firmware/devicetree/base/serial-number");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    write(r, "etc/machine-id", b"uninitialized\n");
    write(
        r,
        "var/lib/dbus/machine-id",
        b"0123456789abcdef0123456789ABCDEF\n",
    );
    write(
        r,
        "sys/class/dmi/id/product_serial",
        b"To Be Filled By O.E.M.\n",
    );
    write(r, "sys/class/dmi/id/board_vendor", &vec![b'v'; 1 << 20]);
    let h = host(&SysRoot::new(r));
    assert_eq!(h.model.as_deref(), Some("]0;ownedBoardX"));
    assert_eq!(h.compatible.len(), COMPATIBLE_MAX);
    assert!(h
        .compatible
        .iter()
        .all(|c| c == "vendor,board-with-a-long-name"));
    if made.is_ok_and(|s| s.success()) {
        // Neither the FIFO nor DMI's placeholder is a serial.
        assert_eq!(h.serial, None, "a FIFO is not read");
    }
    // systemd's file is not a machine-id yet (first boot): D-Bus' copy is.
    assert_eq!(
        h.machine_id.as_deref(),
        Some("0123456789abcdef0123456789abcdef")
    );
    // 4 KiB are read of the megabyte, and HOST_TEXT_MAX bytes kept.
    assert_eq!(h.board.as_deref().map(str::len), Some(HOST_TEXT_MAX));
    assert_ne!(h, Host::default());
}
