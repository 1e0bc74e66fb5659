//! The terminal text of `headroom audit`, pinned byte for byte (insta snapshots) on the repo's
//! fixture trees, without and with colour, so moving its renderer cannot change what a user
//! reads. PCI names come from the host's pci.ids (pciutils, installed by .ci/run).
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use testsupport::cmd::headroom;

fn audit_text(tree: &str, color: bool) -> String {
    let root = testsupport::fixtures::own("");
    let mut cmd = headroom();
    cmd.current_dir(root).args(["audit", "--root", tree]);
    if color {
        cmd.args(["--color", "always"]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "audit --root {tree} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn nvme_downgraded_sata_tree() {
    insta::assert_snapshot!(audit_text("sysfs/sd-nvme-downgraded-sata", false));
}

#[test]
fn usb3_uas_bot_r8152_tree() {
    insta::assert_snapshot!(audit_text("sysfs/usb3-uas-bot-r8152", false));
}

#[test]
fn usb3_uas_bot_r8152_tree_in_colour() {
    insta::assert_snapshot!(audit_text("sysfs/usb3-uas-bot-r8152", true));
}

#[test]
fn rt_board_system_tree() {
    insta::assert_snapshot!(audit_text("system/rt-board-handmade", false));
}

#[test]
fn firecracker_vm_system_tree() {
    insta::assert_snapshot!(audit_text("system/firecracker-vm-6.18", false));
}
