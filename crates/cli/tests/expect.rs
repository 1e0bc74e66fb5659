//! `headroom audit --expect MANIFEST` and `--save-expect`: a host checked against its expected
//! state, as a fleet's golden host writes it; `--format ocptv` validated with the OCPTV JSON
//! schema (opencomputeproject/ocp-diag-core json_spec/output, copied to
//! tests/fixtures/ocptv-schema) by the PyPI `jsonschema` validator.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use testsupport::cmd::*;
use testsupport::fixtures::own;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// How a tree or dump is given to audit: `--root DIR` or `--lspci FILE`.
fn source_args(p: &Path) -> Vec<std::ffi::OsString> {
    let flag = if p.is_dir() { "--root" } else { "--lspci" };
    vec![flag.into(), p.as_os_str().to_owned()]
}

/// Every captured tree and dump: the repository's own trees, and the shared ones where present.
fn captured() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = [
        "sd-nvme-downgraded-sata",
        "usb3-uas-bot-r8152",
        "qemu-q35-lab",
    ]
    .iter()
    .map(|t| own(&format!("sysfs/{t}")))
    .collect();
    if let Some(shared) = testsupport::fixtures::shared_fixtures() {
        for dir in ["sysfs", "pci"] {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(shared.join(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    p.is_dir()
                        || p.extension().is_some_and(|e| e != "txt" && e != "md")
                            && !p.to_string_lossy().ends_with(".txt")
                })
                .collect();
            entries.sort();
            all.extend(entries);
        }
    }
    all
}

/// `audit --save-expect` of `source` into `dir`, then the manifest's text.
fn save(source: &Path, dir: &Path) -> (PathBuf, String) {
    let manifest = dir.join("expect.toml");
    let mut cmd = headroom();
    cmd.arg("audit")
        .args(source_args(source))
        .arg("--save-expect")
        .arg(&manifest);
    let out = output_ok(&mut cmd);
    assert!(out.stdout.is_empty(), "--save-expect printed on stdout");
    let written = String::from_utf8_lossy(&out.stderr);
    assert!(written.contains("wrote "), "{written}");
    let text = std::fs::read_to_string(&manifest).unwrap();
    (manifest, text)
}

fn expect(source: &Path, manifest: &Path, extra: &[&str]) -> Output {
    let mut cmd = headroom();
    cmd.arg("audit")
        .args(source_args(source))
        .arg("--expect")
        .arg(manifest)
        .args(extra);
    cmd.output().unwrap()
}

#[test]
fn save_expect_then_expect_passes_on_this_host() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("golden.toml");
    output_ok(headroom().args(["audit", "--save-expect"]).arg(&manifest));
    let before = std::fs::read(&manifest).unwrap();
    let out = headroom()
        .args(["audit", "--expect"])
        .arg(&manifest)
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("PASS "), "{t}");
    assert!(!t.contains("FAIL "), "{t}");
    assert!(t.ends_with(" failed\n") && t.contains(", 0 failed"), "{t}");
    // --expect only reads the manifest.
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
}

#[test]
fn save_expect_then_expect_passes_on_every_captured_tree() {
    let dir = tempfile::tempdir().unwrap();
    let all = captured();
    assert!(all.len() >= 3);
    for source in all {
        let (manifest, saved) = save(&source, dir.path());
        let out = expect(&source, &manifest, &[]);
        let t = text(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}:\n{saved}\n{t}",
            source.display()
        );
        assert!(!t.contains("FAIL "), "{}: {t}", source.display());
        // Every PCI function the audit lists is expected (and so present).
        let lines = t.lines().filter(|l| l.starts_with("PASS pci ")).count();
        let entries = saved.matches("[[pci]]").count();
        assert!(
            lines >= entries,
            "{}: {entries} entries, {t}",
            source.display()
        );
    }
}

/// The hand edits a user makes survive: comments, reordered keys, `01:00.0` for
/// `0000:01:00.0`, a selector by id and driver, `exactly`.
#[test]
fn a_hand_written_manifest_is_read_as_written() {
    let tree = own("sysfs/sd-nvme-downgraded-sata");
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("hand.toml");
    std::fs::write(
        &manifest,
        "# the NVMe of this board\n[[pci]]\nlink_width = 1 # x1 on this board\nid = \"144D:A80A\"\n\
         driver = \"nvme\"\nlink_speed_gts = 8\nlink_match = \"exactly\"\n\n\
         [[pci]]\naddress = \"00:1c.0\"\nlink_speed_gts = 2.5\n\n\
         [[pci]]\nblock = \"nvme0n1p1\"\nclass = \"0108\"\n",
    )
    .unwrap();
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("PASS pci 0000:01:00.0 (Samsung"), "{t}");
    assert!(t.contains("link speed: 8 GT/s (expected 8 GT/s)"), "{t}");
    assert!(t.contains("link width: x1 (expected x1)"), "{t}");
    assert!(t.contains("PASS pci 0000:00:1c.0"), "{t}");
    assert!(
        t.contains("link speed: 8 GT/s (expected at least 2.5 GT/s)"),
        "{t}"
    );
    // nvme0n1p1 is a partition of the disk on 0000:01:00.0.
    assert!(t.contains("PASS pci 0000:01:00.0 (Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3/980PRO, driver nvme) present"), "{t}");
    // A block device selects the function it sits on, not the root port above it.
    assert_eq!(t.matches("pci 0000:00:1c.0").count(), 1, "{t}");
    // `exactly` fails a faster link too.
    std::fs::write(
        &manifest,
        "[[pci]]\naddress = \"0000:00:1c.0\"\nlink_speed_gts = 5\nlink_match = \"exactly\"\n",
    )
    .unwrap();
    let out = expect(&tree, &manifest, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("FAIL pci 0000:00:1c.0"),
        "{}",
        text(&out)
    );
}

/// The PCI links of an audit that run below what both ends support: (downstream address,
/// common speed in GT/s, common width).
fn downgraded_links(source: &Path) -> Vec<(String, f64, u64)> {
    let mut cmd = headroom();
    cmd.args(["audit", "--json"]).args(source_args(source));
    let doc: Value = json_of(&mut cmd);
    doc["pci"]["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| {
            let c = &l["comparison"];
            c["speed_below_common"] == true || c["width_below_common"] == true
        })
        .map(|l| {
            let common = &l["comparison"]["common"];
            (
                l["downstream"].as_str().unwrap().to_string(),
                common["speed_gts"].as_f64().unwrap(),
                common["width"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// On every captured tree with a downgraded link, the manifest of its healthy twin (the
/// saved one, with the link expected at the speed and width both its ends support) fails on
/// that device, naming the check and what was found.
#[test]
fn a_healthy_twin_fails_on_each_downgraded_link() {
    let dir = tempfile::tempdir().unwrap();
    let mut trees_with_downgrades = 0;
    for source in captured() {
        let down = downgraded_links(&source);
        if down.is_empty() {
            continue;
        }
        trees_with_downgrades += 1;
        let (manifest, mut twin) = save(&source, dir.path());
        for (address, speed, width) in &down {
            twin.push_str(&format!(
                "\n[[pci]]\nname = \"healthy twin\"\naddress = \"{address}\"\n\
                 link_speed_gts = {speed}\nlink_width = {width}\n"
            ));
        }
        std::fs::write(&manifest, &twin).unwrap();
        let out = expect(&source, &manifest, &[]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {t}", source.display());
        for (address, speed, width) in &down {
            let fails: Vec<&str> = t
                .lines()
                .filter(|l| l.starts_with(&format!("FAIL pci {address} ")))
                .collect();
            assert!(
                !fails.is_empty(),
                "{}: {address} not failed: {t}",
                source.display()
            );
            assert!(
                fails.iter().all(|l| {
                    let speed = model::pcie::PcieGen::from_gts(*speed).unwrap();
                    l.contains(&format!("(expected at least {speed})"))
                        || l.contains(&format!("(expected at least x{width})"))
                }),
                "{}: {fails:?}",
                source.display()
            );
        }
        // Nothing else fails.
        let others = t
            .lines()
            .filter(|l| {
                l.starts_with("FAIL") && !down.iter().any(|(a, _, _)| l.contains(a.as_str()))
            })
            .count();
        assert_eq!(others, 0, "{}: {t}", source.display());
    }
    assert!(
        trees_with_downgrades >= 1,
        "no captured tree has a downgraded link"
    );
}

/// A copy of sd-nvme-downgraded-sata whose NVMe (0000:01:00.0) has AER errors counted.
pub fn tree_with_aer_errors(dir: &Path) -> PathBuf {
    let copy = dir.join("nvme-aer");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(own("sysfs/sd-nvme-downgraded-sata"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let f = copy.join("sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0");
    // Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats: one `NAME COUNT` per line.
    std::fs::write(
        f.join("aer_dev_correctable"),
        "RxErr 3\nBadTLP 2\nBadDLLP 0\nRollover 0\nTimeout 0\nTOTAL_ERR_COR 5\n",
    )
    .unwrap();
    std::fs::write(
        f.join("aer_dev_nonfatal"),
        "Undefined 0\nDLP 0\nCmpltTO 1\nTOTAL_ERR_NONFATAL 1\n",
    )
    .unwrap();
    std::fs::write(
        f.join("aer_dev_fatal"),
        "Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n",
    )
    .unwrap();
    copy
}

#[test]
fn a_twin_without_aer_errors_fails_on_the_function_that_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with_aer_errors(dir.path());
    let (manifest, saved) = save(&tree, dir.path());
    assert!(saved.contains("aer_errors = 6"), "{saved}");
    assert_eq!(expect(&tree, &manifest, &[]).status.code(), Some(0));
    std::fs::write(&manifest, saved.replace("aer_errors = 6", "aer_errors = 0")).unwrap();
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let fails: Vec<&str> = t.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{t}");
    assert!(
        fails[0].starts_with("FAIL pci 0000:01:00.0 (Samsung"),
        "{t}"
    );
    assert!(
        fails[0].ends_with("AER errors: 6 (RxErr 3, BadTLP 2, CmpltTO 1) (expected none)"),
        "{t}"
    );
}

#[test]
fn a_missing_device_is_a_fail() {
    let tree = own("sysfs/usb3-uas-bot-r8152");
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        "[[pci]]\naddress = \"0000:7f:00.0\"\nname = \"the NIC\"\n\n\
         [[usb]]\ndevice = \"2-1\"\ntransport = \"uas\"\nspeed_mbps = 5000\n\n\
         [[usb]]\ndevice = \"1-2\"\ntransport = \"uas\"\nspeed_mbps = 5000\n\n\
         [[net]]\ninterface = \"eth9\"\n\n\
         [[usb]]\nblock = \"sdb\"\ntransport = \"usb-storage\"\n",
    )
    .unwrap();
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL pci [address 0000:7f:00.0] (the NIC) present: no such device"),
        "{t}"
    );
    assert!(
        t.contains("FAIL net [interface eth9] present: no such device"),
        "{t}"
    );
    // The T5 on uas at 5000M passes; the JMS567 stuck at 480M on usb-storage fails both.
    assert!(t.contains("PASS usb 2-1"), "{t}");
    assert!(t.contains("transport: uas (expected uas)"), "{t}");
    assert!(t.contains("speed: 480M (expected at least 5000M)"), "{t}");
    assert!(t.contains("transport: usb-storage (expected uas)"), "{t}");
    // sdb is on the JMS567 bridge (1-2), not on its root hub.
    assert!(
        t.contains(
            "PASS usb 1-2 (JMS567 SATA 6Gb/s bridge) transport: usb-storage (expected usb-storage)"
        ),
        "{t}"
    );
    assert!(!t.contains("usb usb1"), "{t}");
}

#[test]
fn a_broken_or_hostile_manifest_is_one_sentence() {
    let tree = own("sysfs/sd-nvme-downgraded-sata");
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.toml");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"[[pci]\naddress = 1".to_vec(),
            "is not a valid manifest: TOML parse error at line 1",
        ),
        (
            b"[[pci]]\naddress = \"0000:01:00.0\"\nlink_speed_gts = 3\n".to_vec(),
            "line 3",
        ),
        (
            b"[[pci]]\nlink_width = 4\n".to_vec(),
            "[[pci]] entry 1 selects nothing",
        ),
        (
            b"[[pci]]\naddress = \"zz:00.0\"\n".to_vec(),
            "[[pci]] entry 1: address",
        ),
        (b"[[disk]]\nname = \"x\"\n".to_vec(), "unknown field `disk`"),
        (vec![0xff, 0xfe, 0x00, 0x01], "is not UTF-8 text"),
        (vec![b'#'; 5 << 20], "is larger than 4 MiB"),
        (
            b"[[pci]]\naddress = \"01:00.0\"\nlink_width = 99999\n".to_vec(),
            "line 3",
        ),
    ];
    for (bytes, sentence) in cases {
        std::fs::write(&m, &bytes).unwrap();
        let mut cmd = headroom();
        cmd.args(["audit", "--root"])
            .arg(&tree)
            .arg("--expect")
            .arg(&m);
        let err = fails_saying(&mut cmd, 2, sentence);
        assert!(err.contains(&format!("--expect {}", m.display())), "{err}");
    }
    let mut cmd = headroom();
    cmd.args(["audit", "--expect"]).arg(dir.path());
    fails_saying(&mut cmd, 2, "is a directory: give the manifest file");
    let mut cmd = headroom();
    cmd.args(["audit", "--expect", "no-such-manifest.toml"]);
    fails_saying(
        &mut cmd,
        2,
        "--expect no-such-manifest.toml: cannot open the manifest",
    );
    let mut cmd = headroom();
    cmd.args(["audit", "--format", "ocptv"]);
    fails_saying(
        &mut cmd,
        2,
        "--format ocptv prints the checks of --expect MANIFEST",
    );
}

/// The Python with `jsonschema` and `prometheus_client` that .ci/run installs in
/// target/py-checks (`HEADROOM_PY_CHECKS` overrides it); `None` (a skip) when missing.
pub fn py_checks() -> Option<PathBuf> {
    let p = std::env::var_os("HEADROOM_PY_CHECKS")
        .map(PathBuf::from)
        .unwrap_or_else(|| testsupport::fixtures::repo_root().join("target/py-checks/bin/python"));
    if p.exists() {
        Some(p)
    } else {
        testsupport::skip::skip(&format!(
            "{} missing: python3 -m venv target/py-checks && target/py-checks/bin/pip install \
             jsonschema rfc3339-validator prometheus-client",
            p.display()
        ));
        None
    }
}

/// Validate OCPTV JSON lines against the OCPTV 2.0 output schema: `Ok(lines)` or the first
/// error.
fn ocptv_validate(python: &Path, lines: &str) -> Result<usize, String> {
    const CHECK: &str = r#"
import json, sys, pathlib
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
d = pathlib.Path(sys.argv[1])
resources = []
for p in sorted(d.glob('*.json')):
    s = json.loads(p.read_text())
    resources.append((s['$id'], Resource.from_contents(s)))
root = json.loads((d / 'root.json').read_text())
v = Draft202012Validator(root, registry=Registry().with_resources(resources),
                         format_checker=Draft202012Validator.FORMAT_CHECKER)
n = 0
for i, line in enumerate(sys.stdin):
    errors = list(v.iter_errors(json.loads(line)))
    if errors:
        print(f'line {i + 1}: {errors[0].message}')
        sys.exit(1)
    n += 1
print(n)
"#;
    let out = fed(
        std::process::Command::new(python)
            .args(["-c", CHECK])
            .arg(own("ocptv-schema")),
        lines.as_bytes(),
    );
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(said.parse().unwrap())
    } else {
        Err(said)
    }
}

#[test]
fn ocptv_output_follows_the_ocptv_schema() {
    let Some(python) = py_checks() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with_aer_errors(dir.path());
    let (manifest, saved) = save(&tree, dir.path());
    // The healthy twin: no AER errors, the link at what both ends support.
    let twin = saved.replace("aer_errors = 6", "aer_errors = 0")
        + "\n[[pci]]\naddress = \"0000:01:00.0\"\nlink_speed_gts = 16\nlink_width = 4\n";
    std::fs::write(&manifest, twin).unwrap();
    let out = expect(&tree, &manifest, &["--format", "ocptv"]);
    assert_eq!(out.status.code(), Some(1));
    let lines = text(&out);
    let n = ocptv_validate(&python, &lines).unwrap_or_else(|e| panic!("{e}\n{lines}"));
    assert_eq!(n, lines.lines().count());
    let artifacts: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // sequence numbers count from 0
    for (i, a) in artifacts.iter().enumerate() {
        assert_eq!(a["sequenceNumber"], i);
    }
    let start = &artifacts[1]["testRunArtifact"]["testRunStart"];
    let infos = start["dutInfo"]["hardwareInfos"].as_array().unwrap();
    let nvme = infos
        .iter()
        .find(|h| h["location"] == "0000:01:00.0")
        .unwrap();
    let fails: Vec<&Value> = artifacts
        .iter()
        .filter_map(|a| {
            a["testStepArtifact"]["diagnosis"]
                .as_object()
                .map(|_| &a["testStepArtifact"]["diagnosis"])
        })
        .filter(|d| d["type"] == "FAIL")
        .collect();
    let verdicts: Vec<&str> = fails
        .iter()
        .map(|d| d["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        ["aer-errors-fail", "link-speed-fail", "link-width-fail"]
    );
    assert!(fails
        .iter()
        .all(|d| d["hardwareInfoId"] == nvme["hardwareInfoId"]));
    assert_eq!(
        artifacts.last().unwrap()["testRunArtifact"]["testRunEnd"],
        serde_json::json!({"status": "COMPLETE", "result": "FAIL"})
    );
    // The validator is not lenient: a diagnosis of an unknown type is refused.
    let broken = lines.replacen("\"type\":\"PASS\"", "\"type\":\"MAYBE\"", 1);
    assert!(ocptv_validate(&python, &broken).is_err());
    // The same host against its own manifest: PASS.
    std::fs::write(&manifest, &saved).unwrap();
    let out = expect(&tree, &manifest, &["--format", "ocptv"]);
    assert_eq!(out.status.code(), Some(0));
    let lines = text(&out);
    ocptv_validate(&python, &lines).unwrap_or_else(|e| panic!("{e}\n{lines}"));
    assert!(
        lines.contains("\"testRunEnd\":{\"status\":\"COMPLETE\",\"result\":\"PASS\"}"),
        "{lines}"
    );
}

/// A physical slot (/sys/bus/pci/slots/NAME/address, `DDDD:BB:DD`) selects the function in
/// it, and names it in the metrics.
#[test]
fn a_slot_selects_the_function_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with_aer_errors(dir.path());
    let slot = tree.join("sys/bus/pci/slots/J5");
    std::fs::create_dir_all(&slot).unwrap();
    std::fs::write(slot.join("address"), "0000:01:00\n").unwrap();
    let manifest = dir.path().join("m.toml");
    std::fs::write(&manifest, "[[pci]]\nslot = \"J5\"\nlink_width = 4\n").unwrap();
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.starts_with("FAIL pci 0000:01:00.0 (Samsung"), "{t}");
    assert!(t.contains("link width: x1 (expected at least x4)"), "{t}");
    let mut cmd = headroom();
    cmd.args(["audit", "--format", "prometheus", "--root"])
        .arg(&tree);
    let prom = String::from_utf8(stdout_of(&mut cmd)).unwrap();
    assert!(
        prom.lines().any(|l| l.starts_with("headroom_pcie_link_downgraded{")
            && l.contains(",slot=\"J5\"}")),
        "{prom}"
    );
    assert!(
        prom.lines()
            .any(|l| l.starts_with("headroom_pcie_aer_errors_total{")
                && l.contains(",slot=\"J5\",severity=\"correctable\",error=\"RxErr\"} 3")),
        "{prom}"
    );
}

/// The `[[block]]` entries of a saved manifest, each as its text.
fn block_entries(manifest: &str) -> impl Iterator<Item = &str> {
    manifest
        .split("\n[[")
        .filter_map(|e| e.strip_prefix("block]]"))
}

/// A captured host whose only devices are disks (util-linux's lsblk tree: NVMe and two SATA
/// disks, no PCI functions in the capture) got a manifest that expected nothing, so it passed
/// on any host. Its disks are expected now, keyed by where they sit and by their world-wide
/// id, with model, transport, size, rotational, scheduler and queue limits checked.
#[test]
fn a_host_of_disks_alone_expects_its_disks() {
    let Some(tree) = testsupport::fixtures::shared("sysfs/ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (manifest, saved) = save(&tree, dir.path());
    assert_eq!(saved.matches("\n[[block]]\n").count(), 3, "{saved}");
    for line in [
        "path = \"pci-0000:01:00.0-nvme-1\"",
        "path = \"pci-0000:00:1f.2-ata1\"",
        "path = \"pci-0000:00:1f.2-ata2\"",
        "model = \"KINGSTON SKC1000240G\"",
        "transport = \"nvme\"",
        "size_bytes = 240057409536",
        "rotational = false",
        "scheduler = \"cfq\"",
        "max_sectors_kb = 1280",
        "max_hw_sectors_kb = 32767",
    ] {
        assert!(saved.contains(line), "{line} missing in\n{saved}");
    }
    // Not keyed by the kernel's name: sda may be sdb after the next boot.
    assert!(
        block_entries(&saved).all(|e| !e.contains("\ndevice = ")),
        "{saved}"
    );
    // Loop and dm devices are configuration, not hardware.
    assert!(
        !saved.contains("loop0") && !saved.contains("dm-0"),
        "{saved}"
    );
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("PASS block sda (KINGSTON SH103S3, at pci-0000:00:1f.2-ata1) scheduler: cfq (expected cfq)"),
        "{t}"
    );
    // Another host does not pass it.
    let Some(other) = testsupport::fixtures::shared("sysfs/this-vm") else {
        return;
    };
    let out = expect(&other, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL block [path pci-0000:00:1f.2-ata1, wwid ")
            && t.contains("present: no such device"),
        "{t}"
    );
    // A changed disk fails on what changed.
    let changed = dir.path().join("changed.toml");
    std::fs::write(
        &changed,
        "[[block]]\npath = \"pci-0000:00:1f.2-ata2\"\nscheduler = \"mq-deadline\"\n\
         rotational = false\nsize_bytes = 80026361856\n",
    )
    .unwrap();
    let out = expect(&tree, &changed, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL block sdb"), "{t}");
    assert!(t.contains("scheduler: cfq (expected mq-deadline)"), "{t}");
    assert!(
        t.contains("rotational: rotational (expected not rotational)"),
        "{t}"
    );
    assert!(
        t.contains("PASS block sdb (WDC WD800JD-00MS, at pci-0000:00:1f.2-ata2) size"),
        "{t}"
    );
}

/// The eMMC of a Bay Trail board and its boot areas are expected apart, keyed by the
/// platform device and the card, not by `mmcblk0` alone.
#[test]
fn an_emmc_and_its_boot_areas_are_expected_apart() {
    let Some(tree) = testsupport::fixtures::shared("sysfs/checkbox-baytrail-emmc-sdhci-acpi")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (manifest, saved) = save(&tree, dir.path());
    for path in [
        "path = \"platform-80860F14:00-mmc0:0001\"\n",
        "path = \"platform-80860F14:00-mmc0:0001-boot0\"\n",
        "path = \"platform-80860F14:00-mmc0:0001-boot1\"\n",
        "path = \"platform-80860F14:00-mmc0:0001-rpmb\"\n",
    ] {
        assert!(saved.contains(path), "{path} missing in\n{saved}");
    }
    assert!(
        block_entries(&saved).all(|e| !e.contains("\ndevice = ")),
        "{saved}"
    );
    let out = expect(&tree, &manifest, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(t.matches("PASS block ").count(), 4, "{t}");
}

/// A virtio NIC reports no speed while its link is up: a manifest that asks a speed fails
/// there, saying so, not "speed unknown (link down?)" of an interface the same audit shows
/// up; a saved manifest asks no speed where there was none.
#[test]
fn an_interface_up_without_a_speed_is_not_called_down() {
    let Some(tree) = testsupport::fixtures::shared("sysfs/this-vm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (manifest, saved) = save(&tree, dir.path());
    assert!(!saved.contains("speed_mbps ="), "{saved}");
    let t = text(&expect(&tree, &manifest, &[]));
    assert!(
        t.contains("PASS net eth0 (driver virtio_net) present"),
        "{t}"
    );
    let asks = dir.path().join("speed.toml");
    std::fs::write(&asks, "[[net]]\ninterface = \"eth0\"\nspeed_mbps = 1000\n").unwrap();
    let out = expect(&tree, &asks, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "FAIL net eth0 (driver virtio_net) speed: no speed reported: the link is up, but its driver virtio_net reports no speed (expected at least 1000 Mb/s)"
        ),
        "{t}"
    );
    assert!(!t.contains("down"), "{t}");
}

/// "1 network interfaces expected": the line --save-expect prints counts in words that agree.
#[test]
fn the_saved_counts_agree_with_their_numbers() {
    let Some(tree) = testsupport::fixtures::shared("sysfs/this-vm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.toml");
    let out = output_ok(
        headroom()
            .args(["audit", "--root"])
            .arg(&tree)
            .arg("--save-expect")
            .arg(&manifest),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(": 6 PCI functions, 0 USB devices, 1 disk, 1 network interface expected"),
        "{err}"
    );
}
