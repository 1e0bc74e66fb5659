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
fn rk3588_devfreq_system_tree() {
    insta::assert_snapshot!(audit_text("system/rk3588-devfreq", false));
}

#[test]
fn firecracker_vm_system_tree() {
    insta::assert_snapshot!(audit_text("system/firecracker-vm-6.18", false));
}

/// Strings from sysfs are from outside too. In a captured tree whose interface
/// name, driver name, USB product string and disk model carry escape sequences (headroom's
/// own bold, red, yellow and reset among them, a title and a bell), `audit` and `path` show
/// each escaped, with `--color always` as without, on stdout and stderr; the Markdown and
/// HTML reports of the audit's document too. headroom's own colours still pass.
#[test]
fn hostile_sysfs_strings_reach_no_terminal_as_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let fixture = testsupport::fixtures::own("sysfs/usb3-uas-bot-r8152");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&fixture)
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    let usb = root.join("sys/devices/pci0000:00/0000:00:14.0");
    let iface = "ev\u{1b}[1mil";
    let driver = "drv\u{1b}[33m\u{1b}]0;T\u{7}";
    let product = "\u{1b}[31mRED\u{1b}[0m";
    let model = "M\u{1b}[2J\u{1b}[0m";
    // A virtual interface named with bold, the r8152 adapter's driver link, its strings
    // (an unknown vendor, so sysfs's own strings are shown), the UAS disk's model.
    let virt = root.join("sys/devices/virtual/net").join(iface);
    std::fs::create_dir_all(&virt).unwrap();
    std::fs::write(virt.join("mtu"), "1500\n").unwrap();
    std::fs::write(virt.join("operstate"), "up\n").unwrap();
    std::os::unix::fs::symlink(
        format!("../../devices/virtual/net/{iface}"),
        root.join("sys/class/net").join(iface),
    )
    .unwrap();
    // An interface whose sysfs directory is gone: a warning on stderr names it.
    let gone = "gone\u{1b}[31m";
    std::os::unix::fs::symlink(
        format!("../../devices/virtual/net/{gone}"),
        root.join("sys/class/net").join(gone),
    )
    .unwrap();
    let adapter = usb.join("usb1/1-3");
    let link = adapter.join("1-3:1.0/driver");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(format!("../../../../../../bus/usb/drivers/{driver}"), &link)
        .unwrap();
    std::fs::write(adapter.join("idVendor"), "fffe\n").unwrap();
    std::fs::write(adapter.join("manufacturer"), format!("{product}\n")).unwrap();
    std::fs::write(adapter.join("product"), format!("{product}\n")).unwrap();
    std::fs::write(
        usb.join("usb2/2-1/2-1:1.0/host2/target2:0:0/2:0:0:0/model"),
        format!("{model}\n"),
    )
    .unwrap();
    let escaped = |s: &str| report::outside::terminal(s).into_owned();
    let own = ["\u{1b}[1m", "\u{1b}[33m", "\u{1b}[31m", "\u{1b}[0m"];
    let check = |what: &str, bytes: &[u8], expect: &[&str], colour: bool| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let mut plain = text.clone();
        for sgr in own {
            plain = plain.replace(sgr, "");
        }
        assert!(
            !plain.contains(['\u{1b}', '\u{7}']),
            "{what}: a control character other than headroom's colours:\n{text}"
        );
        assert_eq!(colour, plain != text, "{what}: colour {colour}:\n{text}");
        for s in expect {
            assert!(
                text.contains(&escaped(s)),
                "{what}: {:?} not shown escaped:\n{text}",
                escaped(s)
            );
        }
    };
    for colour in [false, true] {
        let run = |args: &[&str]| {
            let mut c = headroom();
            if colour {
                c.args(["--color", "always"]);
            }
            c.args(args).arg("--root").arg(&root);
            let out = c.output().unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            out
        };
        let audit = run(&["audit"]);
        check("audit", &audit.stdout, &[iface, driver, product], colour);
        check("audit's stderr", &audit.stderr, &[gone], false);
        let path = run(&["path", "sda"]);
        check("path sda", &path.stdout, &[model], colour);
        let path = run(&["path", "eth2"]);
        check("path eth2", &path.stdout, &[driver], colour);
    }
    // The audit's document as Markdown and HTML: no control character at all.
    let doc = dir.path().join("audit.json");
    let json = headroom()
        .args(["audit", "--json", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    std::fs::write(&doc, &json.stdout).unwrap();
    let md = headroom().arg("report").arg(&doc).output().unwrap();
    assert!(md.status.success());
    check("report", &md.stdout, &[iface], false);
    let html = dir.path().join("audit.html");
    let out = headroom()
        .arg("report")
        .arg(&doc)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success());
    check(
        "report --html",
        &std::fs::read(&html).unwrap(),
        &[iface],
        false,
    );
}
