//! `headroom path`: targets resolved to their links, ceilings and bottleneck.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use testsupport::cmd::*;

fn tree(name: &str) -> PathBuf {
    testsupport::fixtures::own(&format!("sysfs/{name}"))
}

fn path_json(root: &Path, target: &str) -> Value {
    json_of(
        headroom()
            .args(["path", "--json", "--root"])
            .arg(root)
            .arg(target),
    )
}

fn bottleneck(doc: &Value) -> &Value {
    let p = &doc["path"];
    &p["links"][p["bottleneck"].as_u64().unwrap() as usize]
}

#[test]
fn nvme_behind_a_downgraded_link_is_the_bottleneck() {
    let doc = path_json(&tree("sd-nvme-downgraded-sata"), "/data/x");
    assert_eq!(doc["kind"], "path");
    let b = bottleneck(&doc);
    assert_eq!(b["kind"], "pcie");
    assert_eq!(b["name"], "PCIe 0000:00:1c.0 -> 0000:01:00.0");
    assert_eq!(b["state"], "8 GT/s x1");
    assert_eq!(b["capable_state"], "16 GT/s x4");
    // Gen 3 x1 raw is 984.6 MB/s (seed table 1); the effective write ceiling sits below it.
    let c = b["ceiling_bytes_per_sec"].as_f64().unwrap();
    assert!(c < 984.62e6 && c > 700e6, "{c}");
    assert!(b["capable_ceiling_bytes_per_sec"].as_f64().unwrap() > 6e9);
}

#[test]
fn sata_and_sd_card_bottlenecks() {
    let root = tree("sd-nvme-downgraded-sata");
    let sata = path_json(&root, "/srv/sata/f");
    assert_eq!(bottleneck(&sata)["name"], "SATA ata2");
    assert_eq!(bottleneck(&sata)["state"], "3.0 Gbps");
    // 3 Gb/s after 8b/10b is 300 MB/s raw; FIS framing keeps the data ceiling below it.
    let c = bottleneck(&sata)["ceiling_bytes_per_sec"].as_f64().unwrap();
    assert!(c < 300e6 && c > 280e6, "{c}");
    // A mount point with a space (\040 in mountinfo).
    let sd = path_json(&root, "/media/sd card/x");
    assert_eq!(bottleneck(&sd)["kind"], "mmc");
    assert!(bottleneck(&sd)["state"]
        .as_str()
        .unwrap()
        .contains("SDR104"));
}

#[test]
fn usb3_disk_stuck_at_480m_names_the_usb_link() {
    let root = tree("usb3-uas-bot-r8152");
    let doc = path_json(&root, "sdb");
    let b = bottleneck(&doc);
    assert_eq!(b["name"], "USB 1-2");
    assert_eq!(b["state"], "480 Mb/s");
    assert_eq!(b["capable_state"], "5000 Mb/s");
    // The USB guide's table 1-2: USB 2.0 bulk 53.25 MB/s (10^6 B).
    assert!((b["ceiling_bytes_per_sec"].as_f64().unwrap() - 53.248e6).abs() < 1e3);
    assert!(b["note"].as_str().unwrap().contains("Bulk-Only"));
    headroom()
        .args(["path", "--root"])
        .arg(&root)
        .arg("sdb")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Bottleneck: USB 1-2 at 480 Mb/s: 53 MB/s",
        ));
}

#[test]
fn network_filesystem_stops_with_a_sentence() {
    let doc = path_json(&tree("sd-nvme-downgraded-sata"), "/mnt/nfs/a");
    assert!(doc["path"]["bottleneck"].is_null());
    assert!(doc["path"]["chain"]["stopped"]
        .as_str()
        .unwrap()
        .contains("not backed by a block device"));
    assert!(doc["path"]["no_bottleneck_reason"].is_string());
}

#[test]
fn this_machine_file_and_loopback() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = headroom()
        .args(["path", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hops = doc["path"]["chain"]["hops"].as_array().unwrap();
    assert_eq!(hops.first().unwrap()["hop"], "filesystem");
    assert_eq!(hops.last().unwrap()["hop"], "cpu", "{hops:#?}");
    headroom()
        .args(["path", "lo"])
        .assert()
        .success()
        .stdout(predicate::str::contains("interface lo (virtual)"))
        .stdout(predicate::str::contains("Bottleneck: none known"));
}

/// A directory on the machine's real disk, to run `headroom` from as a user does.
fn work_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// `headroom path TARGET` run from `cwd`: (exit code, stdout, stderr).
fn path_in(cwd: &Path, target: &str) -> (Option<i32>, String, String) {
    let out = headroom()
        .current_dir(cwd)
        .args(["path", target])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `./file`, `.`, `..` and `./etc` are taken from the current directory, as
/// every other tool takes them; `.` and `..` are directories, not interface names.
#[test]
fn relative_targets_are_taken_from_the_current_directory() {
    let dir = work_dir();
    std::fs::write(dir.path().join("file"), b"x").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for t in ["./file", "file", ".", "..", "sub", "./sub/../file"] {
        let (code, out, err) = path_in(dir.path(), t);
        assert_eq!(code, Some(0), "{t}: {err}");
        assert!(err.is_empty(), "{t}: {err}");
        let first_hop = out.lines().nth(1).unwrap_or_default();
        assert!(first_hop.contains(" mounted at "), "{t}: {out}");
        assert!(!out.contains("interface"), "{t}: {out}");
    }
    // ./etc here does not exist, although /etc does: it is not /etc.
    let (code, out, err) = path_in(dir.path(), "./etc");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(&format!(
            "./etc does not exist (looked up as {}/./etc)",
            dir.path().display()
        )) || err.contains(&format!(
            "./etc does not exist (looked up as {}/etc)",
            dir.path().display()
        )),
        "{err}"
    );
    // The JSON of `.` names the directory's filesystem, not /sys/class/net.
    let out = headroom()
        .current_dir(dir.path())
        .args(["path", "--json", "."])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["path"]["chain"]["hops"][0]["hop"], "filesystem",
        "{doc:#}"
    );
    assert!(!doc.to_string().contains("/sys/class/net"), "{doc:#}");
}

/// Anything that is no existing file or directory, no block device and no
/// interface is one sentence and exit 1, with nothing on stdout.
#[test]
fn unknown_targets_are_an_error() {
    let dir = work_dir();
    for (t, sentence) in [
        (
            "nosuchif",
            "nosuchif is not a network interface, a block device or a file here",
        ),
        (
            "vda9",
            "vda9 is not a network interface, a block device or a file here",
        ),
        (
            "/nonexistent",
            "/nonexistent does not exist: give an existing file or directory",
        ),
        (
            "/nonexistent/headroom/target",
            "/nonexistent/headroom/target does not exist",
        ),
        (
            "/dev/nvme9n9",
            "/dev/nvme9n9: no such block device on this machine",
        ),
        ("/dev/null", "/dev/null is a character device"),
    ] {
        let (code, out, err) = path_in(dir.path(), t);
        assert_eq!(code, Some(1), "{t}: {out}{err}");
        assert!(out.is_empty(), "{t}: {out}");
        assert!(err.contains(sentence), "{t}: {err}");
        assert_eq!(err.lines().count(), 1, "{t}: {err}");
        assert!(err.starts_with("headroom: error: "), "{t}: {err}");
    }
    // Inside a captured tree, a name that is none of its devices is an error too.
    let root = tree("usb3-uas-bot-r8152");
    headroom()
        .args(["path", "--root"])
        .arg(&root)
        .arg("nosuchdev0")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "nosuchdev0 is neither a network interface nor a block device in",
        ))
        .stderr(predicate::str::contains("panicked").not());
}

/// The terminal text of `path`, byte for byte, pinned from the renderer as it was in cli
/// before it moved to report (tests/snapshots/path): a downgraded PCIe link, a USB disk on
/// UAS, an SD card, a bridge over a USB NIC (a branch) and a dm loop (a stopped branch).
#[test]
fn path_text_is_unchanged() {
    let cases = [
        ("sd-nvme-downgraded-sata", "/data/x", "nvme-downgraded.txt"),
        ("sd-nvme-downgraded-sata", "/media/sd card/x", "sd-card.txt"),
        ("sd-nvme-downgraded-sata", "/mnt/loopy/f", "dm-loop.txt"),
        ("usb3-uas-bot-r8152", "sda", "uas-disk.txt"),
        ("usb3-uas-bot-r8152", "br0", "bridge-over-usb-nic.txt"),
    ];
    for (t, target, snapshot) in cases {
        let expected = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/snapshots/path")
                .join(snapshot),
        )
        .unwrap();
        let out = headroom()
            .args(["path", "--color", "never", "--root"])
            .arg(tree(t))
            .arg(target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{target}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{target}");
    }
}

/// A document `path --json` writes now reads back in `report` with every link field the
/// producer filled: the typed states come out as the text report expects.
#[test]
fn a_fresh_path_document_reads_back_in_report() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("path.json");
    let out = headroom()
        .args(["path", "--json", "--root"])
        .arg(tree("sd-nvme-downgraded-sata"))
        .arg("/data/x")
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&doc, &out.stdout).unwrap();
    let produced: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = bottleneck(&produced);
    let md = headroom().arg("report").arg(&doc).output().unwrap();
    assert!(md.status.success());
    let md = String::from_utf8(md.stdout).unwrap();
    let row = format!(
        "| {} | {} | {} | {:.1} | {} | bottleneck, downgraded, {} |",
        b["name"].as_str().unwrap(),
        b["state"].as_str().unwrap(),
        b["capable_state"].as_str().unwrap(),
        b["ceiling_bytes_per_sec"].as_f64().unwrap() / 1e6,
        b["basis"].as_str().unwrap(),
        b["note"].as_str().unwrap()
    );
    assert!(md.contains(&row), "{row}\nnot in\n{md}");
    assert!(!md.contains('–'), "a field shown as missing:\n{md}");
}
