//! `headroom audit` as a user runs it: on this machine, on captured sysfs trees, on bad input.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use testsupport::cmd::*;

fn audit_json(root: &Path) -> Value {
    json_of(headroom().args(["audit", "--json", "--root"]).arg(root))
}

fn function<'a>(doc: &'a Value, addr: &str) -> &'a Value {
    doc["pci"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["address"] == addr)
        .unwrap_or_else(|| panic!("{addr} not in the audit"))
}

#[test]
fn no_arguments_audits_this_machine() {
    let out = headroom().output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // The host first (its hostname at least, as the kernel names it), then the system.
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        text.starts_with(&format!("Host: {}", hostname.trim())),
        "{text}"
    );
    assert!(
        text.lines().nth(1).unwrap().starts_with("System: kernel "),
        "{text}"
    );
    assert!(text.contains("\nPCI: "), "{text}");
    // Every function sysfs lists appears in the tree.
    if let Ok(entries) = std::fs::read_dir("/sys/bus/pci/devices") {
        for e in entries {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(text.contains(&name), "{name} missing from:\n{text}");
        }
    }
}

#[test]
fn json_document_is_versioned() {
    let doc = audit_json(Path::new("/"));
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "audit");
    assert!(doc["pci"]["functions"].is_array());
}

/// The VM tree against the `lspci -nnk` captured on that VM: ids, class, revision, driver
/// for every function, and names where a pci.ids is installed.
#[test]
fn this_vm_tree_agrees_with_lspci_nnk() {
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let tree = fx.join("sysfs/this-vm");
    let doc = audit_json(&tree);
    let expected = std::fs::read_to_string(tree.join("expected-lspci-nnk.txt")).unwrap();
    let have_ids = probe::pci::ids::PCI_IDS_PATHS
        .iter()
        .any(|p| Path::new(p).exists());
    let mut checked = 0;
    let mut current: Option<Value> = None;
    for line in expected.lines() {
        if let Some(driver) = line.trim().strip_prefix("Kernel driver in use: ") {
            let f = current.as_ref().unwrap();
            assert_eq!(f["driver"], driver);
            continue;
        }
        if line.starts_with('\t') || line.is_empty() {
            continue;
        }
        // "00:02.0 Mass storage controller [0180]: Red Hat, Inc. Virtio 1.0 block device [1af4:1042] (rev 01)"
        let (addr, rest) = line.split_once(' ').unwrap();
        let f = function(&doc, &format!("0000:{addr}")).clone();
        let class = &rest[rest.find('[').unwrap() + 1..][..4];
        assert_eq!(&f["class"].as_str().unwrap()[..4], class, "{line}");
        let ids = rest.rsplit_once(" [").unwrap().1;
        let ids = ids.split(']').next().unwrap();
        let (v, d) = ids.split_once(':').unwrap();
        assert_eq!(f["vendor_id"], v, "{line}");
        assert_eq!(f["device_id"], d, "{line}");
        if let Some(rev) = rest.split("(rev ").nth(1) {
            assert_eq!(f["revision"], &rev[..2], "{line}");
        }
        if have_ids {
            let class_name = rest.split(" [").next().unwrap();
            assert_eq!(f["names"]["class"], class_name, "{line}");
            let vendor_and_device = rest.split("]: ").nth(1).unwrap();
            let vendor = f["names"]["vendor"].as_str().unwrap();
            assert!(vendor_and_device.starts_with(vendor), "{line}");
        }
        current = Some(f);
        checked += 1;
    }
    assert_eq!(checked, 6);
}

/// hwloc's Dell R910 tree: an old kernel's link attributes ("8 GT/s", empty max_link_*).
#[test]
fn old_kernel_link_attributes() {
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let doc = audit_json(&fx.join("sysfs/hwloc-40intel64-4xeth-ib-2pciroots"));
    let ib = function(&doc, "0000:43:00.0");
    assert_eq!(ib["kernel_link"]["current"]["speed_gts"], 8.0);
    assert_eq!(ib["kernel_link"]["current"]["width"], 4);
    assert_eq!(ib["kernel_link"]["max"], Value::Null);
    assert_eq!(ib["parent"], "0000:40:03.0");
    assert_eq!(ib["driver"], "ib_qib");
    let eth = function(&doc, "0000:02:00.0");
    assert_eq!(eth["driver"], "bnx2");
    assert_eq!(eth["parent"], "0000:00:05.0");
    assert_eq!(eth["numa_node"], -1); // the file says -1: no NUMA affinity recorded
    assert_eq!(ib["numa_node"], 2); // second I/O hub
}

#[test]
fn root_that_does_not_exist_is_one_sentence() {
    headroom()
        .args(["audit", "--root", "/nonexistent/headroom"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--root /nonexistent/headroom: no such directory",
        ))
        .stderr(predicate::str::contains("panicked").not());
}

/// `audit --root /tmp`: nothing of a system there is an error, not an empty audit.
#[test]
fn root_that_is_not_a_sysfs_tree_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x\n").unwrap();
    for json in [false, true] {
        let mut cmd = headroom();
        cmd.args(["audit", "--root"]).arg(dir.path());
        if json {
            cmd.arg("--json");
        }
        cmd.assert()
            .code(1)
            .stdout("")
            .stderr(predicate::str::contains("has no sys/ directory"))
            .stderr(predicate::str::contains(format!(
                "headroom: error: --root {}: no PCI function, USB device, block device, \
                 network interface or kernel information found there",
                dir.path().display()
            )));
    }
}

#[test]
fn dangling_function_link_is_skipped_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let devs = dir.path().join("sys/bus/pci/devices");
    std::fs::create_dir_all(&devs).unwrap();
    let real = dir.path().join("sys/devices/pci0000:00/0000:00:01.0");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("vendor"), "0x8086\n").unwrap();
    std::fs::write(real.join("device"), "0x1234\n").unwrap();
    std::fs::write(real.join("class"), "0x020000\n").unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:00:01.0",
        devs.join("0000:00:01.0"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:00:09.0",
        devs.join("0000:00:09.0"),
    )
    .unwrap();
    headroom()
        .args(["audit", "--root"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("0000:00:01.0"))
        .stdout(predicate::str::contains(
            "PCI: 1 function, 0 PCI Express links\n",
        ))
        .stderr(predicate::str::contains(
            "devices/0000:00:09.0 through a dangling link); skipped",
        ));
}

fn dump_json(name: &str) -> Option<Value> {
    let fx = testsupport::fixtures::shared_fixtures()?;
    Some(json_of(
        headroom()
            .args(["audit", "--json", "--lspci"])
            .arg(fx.join("pci").join(name)),
    ))
}

fn findings(doc: &Value) -> Vec<String> {
    doc["pci"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// Samsung PM174X: Gen5 x2 capable, trained at 16 GT/s: lspci prints "(downgraded)".
#[test]
fn dump_downgraded_nvme_and_aer_status() {
    let Some(doc) = dump_json("pciutils-tests_cap-phy32.lspci") else {
        return;
    };
    let f = function(&doc, "0000:2e:00.0");
    let link = &f["config"]["express"]["link"];
    assert_eq!(link["max_speed"], 32.0);
    assert_eq!(link["speed"], 16.0);
    assert_eq!(link["width"], 2);
    assert_eq!(
        f["config"]["express"]["device"]["max_payload_supported"],
        512
    );
    assert_eq!(f["config"]["express"]["device"]["max_payload"], 256);
    let ce = f["config"]["aer"]["correctable_status"]["set"]
        .as_array()
        .unwrap();
    assert_eq!(ce, &vec![Value::from("AdvNonFatalErr")]);
    assert!(findings(&doc)
        .iter()
        .any(|m| m.contains("CESta AdvNonFatalErr")));
    // A dump does not say which machine it came from: the document names no host (it named
    // the machine that read it, which a lab's database would then credit with these links).
    assert_eq!(doc["host"]["hostname"], Value::Null, "{}", doc["host"]);
    assert_eq!(doc["host"]["kernel"], Value::Null, "{}", doc["host"]);
    assert!(doc["host"].get("machine_id").is_none(), "{}", doc["host"]);

    let fx = testsupport::fixtures::shared_fixtures().unwrap();
    headroom()
        .args(["audit", "--lspci"])
        .arg(fx.join("pci/pciutils-tests_cap-phy32.lspci"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "0000:2e:00.0 Non-Volatile memory controller",
        ))
        .stdout(predicate::str::contains(
            "link 16 GT/s x2 (speed downgraded) of 32 GT/s x2",
        ));
}

/// ASUS P6T6: X58 root port -> NF200 switch -> SAS HBA, topology from bus numbers
/// (what `lspci -F dump -t` draws: 03.0-[02-05]----00.0-[03-05]--+-00.0-[04]----00.0).
#[test]
fn dump_topology_through_a_switch() {
    let Some(doc) = dump_json("pciutils-tests_tree-asus-p6t6.lspci") else {
        return;
    };
    assert_eq!(doc["pci"]["functions"].as_array().unwrap().len(), 53);
    let hba = function(&doc, "0000:04:00.0");
    assert_eq!(hba["parent"], "0000:03:00.0");
    assert_eq!(hba["root_port"], "0000:00:03.0");
    assert_eq!(function(&doc, "0000:03:00.0")["parent"], "0000:02:00.0");
    assert_eq!(function(&doc, "0000:02:00.0")["parent"], "0000:00:03.0");
    assert_eq!(function(&doc, "0000:06:00.1")["parent"], "0000:00:07.0");
    let children = function(&doc, "0000:02:00.0")["children"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        children,
        vec![Value::from("0000:03:00.0"), Value::from("0000:03:02.0")]
    );
    // The SAS HBA link: device x8, switch port x16, running 5 GT/s x8: the device limits it.
    let links = doc["pci"]["links"].as_array().unwrap();
    let l = links
        .iter()
        .find(|l| l["downstream"] == "0000:04:00.0")
        .unwrap();
    assert_eq!(l["upstream"], "0000:03:00.0");
    assert_eq!(l["comparison"]["common"]["width"], 8);
    assert_eq!(l["comparison"]["width_limited_by"], "downstream");
    assert_eq!(l["comparison"]["width_below_common"], false);
}

/// Arm N1SDP: MPS 128 on a link whose ends both support 256 (the seed's pcie_bus_perf case).
#[test]
fn dump_mps_below_both_ends() {
    let Some(doc) = dump_json("linux-pci_arm-n1sdp_plx-pex8749_machine.lspci-xxx") else {
        return;
    };
    let f = findings(&doc);
    assert!(
        f.iter().any(|m| m.contains(
            "MaxPayload is 128 bytes on link 0000:00:00.0 -> 0000:01:00.0 where both ends \
             support 256 bytes"
        )),
        "{f:#?}"
    );
    // Functions 1-4 of the switch's upstream device do not control the link's target speed.
    assert!(!f
        .iter()
        .any(|m| m.contains("0000:01:00.1") && m.contains("target link speed")));
    assert_eq!(doc["pci"]["functions"].as_array().unwrap().len(), 16);
}

/// Freescale P2020: several PCI domains, downgraded links.
#[test]
fn dump_with_domains() {
    let Some(doc) = dump_json("pciutils-tests_tree-fsl-p2020.lspci") else {
        return;
    };
    assert_eq!(function(&doc, "0001:03:00.0")["parent"], "0001:02:00.0");
    assert_eq!(function(&doc, "0002:01:00.0")["parent"], "0002:00:00.0");
    assert_eq!(function(&doc, "0000:05:00.0")["parent"], "0000:04:00.0");
}

/// Freescale P2020: the TUSB73x0 behind 0002:00:00.0 is the one function lspci marks
/// "(downgraded)"; its link finding (the only one for that link) names the memory BARs lspci
/// lists as Regions and the `bench mmio` command for the first (a dump has no BAR sizes).
/// The endpoints at their best, with a memory BAR each, get no BAR sentence.
#[test]
fn a_downgraded_link_finding_names_the_bars_lspci_lists() {
    let Some(doc) = dump_json("pciutils-tests_tree-fsl-p2020.lspci") else {
        return;
    };
    let fx = testsupport::fixtures::shared_fixtures().unwrap();
    let lspci =
        std::fs::read_to_string(fx.join("pci/pciutils-tests_tree-fsl-p2020.lspci.lspci-3.14.txt"))
            .unwrap();
    // lspci -vv, function by function: the memory Regions and whether LnkSta is downgraded.
    let mut downgraded = Vec::new();
    for block in lspci.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let address = block.split_whitespace().next().unwrap().to_string();
        let regions: Vec<String> = block
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Region "))
            .filter(|r| r.contains(": Memory at"))
            .map(|r| format!("BAR {}", &r[..r.find(':').unwrap()]))
            .collect();
        let down = block
            .lines()
            .any(|l| l.contains("LnkSta:") && l.contains("(downgraded)"));
        let messages: Vec<String> = findings(&doc)
            .into_iter()
            .filter(|m| m.starts_with(&address) && m.contains("the best the slot allows"))
            .collect();
        if down {
            assert_eq!(messages.len(), 1, "{address}: {messages:?}");
            assert!(
                messages[0].ends_with(&format!(
                    "; CPU loads and stores to its memory BARs ({}) cross this link at 2.5 GT/s x1",
                    regions.join(", ")
                )),
                "{}",
                messages[0]
            );
            downgraded.push(address);
        } else {
            assert!(
                !findings(&doc)
                    .iter()
                    .any(|m| m.starts_with(&address) && m.contains("BAR")),
                "{address}"
            );
        }
    }
    assert_eq!(downgraded, ["0002:01:00.0"]);
    let advice: Vec<&str> = doc["pci"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["advice"].as_str())
        .filter(|a| a.contains("bench mmio"))
        .collect();
    assert_eq!(
        advice,
        [
            "measure what the CPU gets across it: `headroom bench mmio 0002:01:00.0:0` (BAR 0; an \
          lspci dump has no BAR sizes; with a driver bound it needs --allow-bound, as a \
          register read can change the device (virtio's ISR status clears when read))"
        ]
    );
    // Still three findings: the BARs joined the link's finding, none was added.
    assert_eq!(findings(&doc).len(), 3);
}

#[test]
fn malformed_dump_lines_are_named_and_the_rest_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("bug.txt");
    std::fs::write(
        &dump,
        "00:1c.0 PCI bridge: something\n\
         00: 86 80 10 3a 07 04 10 00 00 00 04 06 10 00 81 00\n\
         10: zz 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n\
         \n\
         01:00.0 Ethernet controller: something\n\
         00: ec 10 68 81 07 04 10 00 06 00 00 02 10 00 00 00\n",
    )
    .unwrap();
    headroom()
        .args(["audit", "--lspci"])
        .arg(&dump)
        .assert()
        .success()
        .stdout(predicate::str::contains("0000:01:00.0"))
        .stdout(predicate::str::contains("0000:00:1c.0"))
        .stderr(predicate::str::contains("line 3:"));
}

#[test]
fn missing_dump_file_is_one_sentence() {
    headroom()
        .args(["audit", "--lspci", "/nonexistent/dump.txt"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot read the lspci dump /nonexistent/dump.txt",
        ))
        .stderr(predicate::str::contains("panicked").not());
}

fn repo_tree(name: &str) -> std::path::PathBuf {
    testsupport::fixtures::own(&format!("sysfs/{name}"))
}

/// USB, block and network sections with their findings, on the hand-made USB tree.
#[test]
fn audit_covers_usb_block_and_network() {
    let root = repo_tree("usb3-uas-bot-r8152");
    let doc = audit_json(&root);
    let usb = doc["usb"]["devices"].as_array().unwrap();
    let t5 = usb.iter().find(|d| d["name"] == "2-1").unwrap();
    assert_eq!(t5["speed_mbits_per_sec"], 5000.0);
    assert_eq!(t5["storage"]["transport"], "uas");
    let net = doc["net"]["interfaces"].as_array().unwrap();
    assert!(net
        .iter()
        .any(|i| i["name"] == "eth2" && i["speed_mbits_per_sec"] == 1000));
    let block = doc["block"]["devices"].as_array().unwrap();
    let sdb = block.iter().find(|d| d["name"] == "sdb").unwrap();
    assert_eq!(sdb["queue"]["max_sectors_kb"], 120);
    let all: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        all.iter()
            .any(|m| m.contains("USB 3.20 device running at 480 Mb/s")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|m| m.contains("Bulk-Only Transport")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|m| m.contains("the USB connection caps")),
        "{all:#?}"
    );

    headroom()
        .args(["audit", "--root"])
        .arg(&root)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "2-1 5000M (USB 3.10) Samsung Electronics Co., Ltd Portable SSD T5 [uas] UAS = 474.9 MB/s",
        ))
        // A newline in a mount point stays on one line, escaped as mountinfo does.
        .stdout(predicate::str::contains("/mnt/new\\x0aline (ext4)"))
        .stdout(predicate::str::contains("warning: USB 1-2: USB 3.20 device running at 480 Mb/s"));
}

/// The VM: a virtio disk and virtio net, no USB bus.
#[test]
fn audit_of_this_machine_lists_its_disk_and_interfaces() {
    let doc = audit_json(Path::new("/"));
    let net = doc["net"]["interfaces"].as_array().unwrap();
    assert!(net
        .iter()
        .any(|i| i["name"] == "lo" && i["virtual"] == true));
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    if mounts.contains(" / / ") {
        let block = doc["block"]["devices"].as_array().unwrap();
        assert!(block.iter().any(|d| d["mounts"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["mount_point"] == "/"))));
    }
}

/// The CPU and kernel context: a board whose governor scales on two of four CPUs.
#[test]
fn audit_shows_kernel_context_and_a_scaling_governor() {
    let root = testsupport::fixtures::own("system/rt-board-handmade");
    let doc = audit_json(&root);
    assert_eq!(doc["system"]["kernel"]["preemption"]["model"], "rt");
    let f: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    let gov = f
        .iter()
        .find(|m| m.contains("governor is not `performance`"))
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert!(gov.contains("schedutil"), "{gov}");
    assert!(!gov.contains("CPU 0 (performance)"), "{gov}");
    headroom()
        .args(["audit", "--root"])
        .arg(&root)
        .assert()
        .success()
        .stdout(predicate::str::contains("System: kernel "))
        .stdout(predicate::str::contains("PREEMPT_RT"));
}

/// The SoC's devfreq devices in the system facts, the report (and so the survey's audit part)
/// and a warning when the DDR clock scales: an RK3588 tree made from the kernel's
/// sysfs-class-devfreq ABI, every CPU on `performance` and the DDR on `dmc_ondemand`.
#[test]
fn audit_shows_devfreq_devices_and_warns_of_a_scaling_ddr_clock() {
    let root = testsupport::fixtures::own("system/rk3588-devfreq");
    let doc = audit_json(&root);
    let devfreq = doc["system"]["devfreq"].as_array().unwrap();
    assert_eq!(devfreq.len(), 3);
    assert_eq!(devfreq[0]["name"], "dmc");
    assert_eq!(devfreq[0]["governor"], "dmc_ondemand");
    assert_eq!(devfreq[0]["max_hz"], 2_112_000_000u64);
    let findings = doc["findings"].as_array().unwrap();
    let ddr: Vec<&Value> = findings
        .iter()
        .filter(|f| f["subject"] == "devfreq")
        .collect();
    assert_eq!(ddr.len(), 1, "{findings:#?}");
    assert_eq!(ddr[0]["severity"], "Warning");
    let message = ddr[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the DDR frequency scales on dmc (dmc_ondemand)"),
        "{message}"
    );
    assert!(!message.contains("gpu"), "{message}");
    assert!(ddr[0]["advice"]
        .as_str()
        .unwrap()
        .contains("`performance` to /sys/class/devfreq/dmc/governor"));
    assert!(
        !findings.iter().any(|f| f["subject"] == "cpufreq"),
        "every CPU is on performance: {findings:#?}"
    );
    let text =
        String::from_utf8(stdout_of(headroom().args(["audit", "--root"]).arg(&root))).unwrap();
    for line in [
        "  devfreq dmc (DDR): dmc_ondemand 528-2112 MHz (now 1068 MHz)\n",
        "  devfreq fb000000.gpu: simple_ondemand 300-1000 MHz (now 300 MHz)\n",
        "  devfreq fdab0000.npu: performance 300-1000 MHz (now 1000 MHz)\n",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    // The kept document's report lists them in a table of their own.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let md = report_md(&file);
    assert!(
        md.contains("Frequency scaling (devfreq): 3 devices"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.contains("dmc (DDR)") && l.contains("dmc_ondemand") && l.contains("2112")),
        "{md}"
    );
}

/// An lspci hex dump of `(address, description, config bytes)`, as `lspci -xxxx` prints it.
fn lspci_dump_text(functions: &[(&str, &str, Vec<u8>)]) -> String {
    let mut out = String::new();
    for (addr, desc, bytes) in functions {
        out.push_str(&format!("{addr} {desc}\n"));
        for (i, row) in bytes.chunks(16).enumerate() {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("{:02x}: {}\n", i * 16, hex.join(" ")));
        }
        out.push('\n');
    }
    out
}

/// An empty file, /dev/null, random bytes or a JSON file are no lspci dump: exit 1 with
/// one sentence, nothing on stdout (lspci -F fails on them too).
#[test]
fn lspci_input_that_is_not_a_dump_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let random = dir.path().join("random.bin");
    let bytes: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&random, bytes).unwrap();
    let json = dir.path().join("audit.json");
    std::fs::write(&json, "{\"schema_version\": 1, \"kind\": \"audit\"}\n").unwrap();
    // (A device such as /dev/null is no file at all: refused before it is read, as every
    // input is, in results.rs.)
    for file in [&empty, &random, &json] {
        let out = headroom()
            .args(["audit", "--lspci"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", file.display());
        assert!(out.stdout.is_empty(), "{}", file.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            format!(
                "headroom: error: --lspci {}: no lspci device line in it (`BB:DD.F description` \
                 followed by `00: xx xx ...` lines): it is not an lspci hex dump; capture one \
                 with `sudo lspci -xxx > FILE`\n",
                file.display()
            )
        );
    }
}

/// A dump cut in the middle of a line: a warning names the line, the rest is audited, and
/// the advice is about the capture, never "run as root" (headroom reads a file here).
#[test]
fn truncated_dump_is_named_at_its_line_and_never_asks_for_root() {
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let whole =
        std::fs::read_to_string(fx.join("pci/linux-pci_xilinx-rme-hdsp-audio.lspci-xxx")).unwrap();
    // Cut the second device's block after 3 whole lines and half of the fourth.
    let second = whole.match_indices("\n\n").next().unwrap().0 + 2;
    let cut_at = second + whole[second..].match_indices('\n').nth(3).unwrap().0 + 12;
    let cut = &whole[..cut_at];
    let cut_line = cut.lines().count();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("cut.txt");
    std::fs::write(&dump, cut).unwrap();
    let out = headroom()
        .args(["audit", "--lspci"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stderr.contains(&format!(
            "headroom: warning: line {cut_line}: the bytes of "
        )),
        "{stderr}"
    );
    assert!(stderr.contains("the dump looks truncated here"), "{stderr}");
    assert!(stdout.contains("PCI: 2 functions"), "{stdout}");
    assert!(!stdout.contains("run as root") && !stderr.contains("run as root"));
    assert!(
        stdout.contains("the dump gives fewer than 256 bytes of config space for 1 function"),
        "{stdout}"
    );
    assert!(
        stdout.contains("capture the dump with `sudo lspci -xxx`"),
        "{stdout}"
    );
}

/// The JSON marks each link "downgraded" as lspci does; a device whose port above is not in
/// the dump still gets a finding when it runs below its own capability.
#[test]
fn downgraded_marks_in_json_and_single_ended_finding() {
    use model::{Aspm, LinkState, PcieGen, PortType};
    use testsupport::synth::{SynthExpress, SynthFunction};
    // A HiSilicon x4 endpoint trained at x2, alone in the dump.
    let device = SynthFunction {
        vendor_id: 0x19e5,
        device_id: 0x0123,
        class: 0x010802,
        buses: None,
        express: Some(SynthExpress {
            aspm_support: Aspm::default(),
            ..SynthExpress::new(
                PortType::Endpoint,
                LinkState::new(PcieGen::Gen3, 4),
                LinkState::new(PcieGen::Gen3, 2),
            )
        }),
        aer_status: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("one.txt");
    std::fs::write(
        &dump,
        lspci_dump_text(&[(
            "01:00.0",
            "Non-Volatile memory controller: X",
            device.config(),
        )]),
    )
    .unwrap();
    let doc = json_of(headroom().args(["audit", "--json", "--lspci"]).arg(&dump));
    let f = function(&doc, "0000:01:00.0");
    assert_eq!(
        f["downgraded"],
        serde_json::json!({"speed": false, "width": true})
    );
    let single: Vec<String> = findings(&doc)
        .into_iter()
        .filter(|m| m.contains("below its own capability"))
        .collect();
    assert_eq!(single.len(), 1, "{single:#?}");
    assert!(
        single[0].contains(
            "runs its link at 8 GT/s x2, below its own capability 8 GT/s x4 \
                            (width x2 of its x4)"
        ),
        "{}",
        single[0]
    );
    assert!(single[0].contains("(-50 %)"), "{}", single[0]);
    assert!(single[0].contains("the port above is not in the input"));
    headroom()
        .args(["audit", "--lspci"])
        .arg(&dump)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "PCI: 1 function, 1 PCI Express link\n",
        ))
        .stdout(predicate::str::contains(
            "link 8 GT/s x2 (width downgraded) of 8 GT/s x4",
        ))
        .stdout(predicate::str::contains("Findings:\n  warning: "));
    // Saved in the history, the audit reads "1 finding".
    let saved = dir.path().join("audit.json");
    let text = headroom()
        .args(["audit", "--json", "--lspci"])
        .arg(&dump)
        .output()
        .unwrap()
        .stdout;
    std::fs::write(&saved, text).unwrap();
    let db = dir.path().join("h.sqlite");
    headroom()
        .args(["history", "add", "--db"])
        .arg(&db)
        .arg(&saved)
        .assert()
        .success();
    headroom()
        .args(["history", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("audit  1 finding\n"));

    // Samsung PM174X alone (pciutils' cap-phy32): 16 of 32 GT/s, "Speed 16GT/s (downgraded)".
    let Some(doc) = dump_json("pciutils-tests_cap-phy32.lspci") else {
        return;
    };
    let f = function(&doc, "0000:2e:00.0");
    assert_eq!(
        f["downgraded"],
        serde_json::json!({"speed": true, "width": false})
    );
    assert!(findings(&doc)
        .iter()
        .any(|m| m.contains("runs its link at 16 GT/s x2, below its own capability 32 GT/s x2")));
    // Both ends in the input: the mark is on the link, from the device below (lspci never
    // marks a root or downstream port).
    let doc = dump_json("pciutils-tests_tree-fsl-p2020.lspci").unwrap();
    let links = doc["pci"]["links"].as_array().unwrap();
    assert!(!links.is_empty());
    for l in links {
        let down = function(&doc, l["downstream"].as_str().unwrap());
        assert_eq!(l["downgraded"], down["downgraded"], "{l:#}");
    }
    let lspci = std::fs::read_to_string(
        testsupport::fixtures::shared_fixtures()
            .unwrap()
            .join("pci/pciutils-tests_tree-fsl-p2020.lspci.lspci.txt"),
    )
    .unwrap();
    let marked_by_lspci = lspci.matches("(downgraded)").count();
    let marked_by_us: usize = doc["pci"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            usize::from(f["downgraded"]["speed"] == true)
                + usize::from(f["downgraded"]["width"] == true)
        })
        .sum();
    assert_eq!(marked_by_us, marked_by_lspci);
}

/// max_hw_sectors_kb 2147483647 is how a device says it sets no limit: the table says so.
#[test]
fn unlimited_max_hw_sectors_reads_no_limit() {
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let out = headroom()
        .args(["audit", "--root"])
        .arg(fx.join("sysfs/this-vm"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!text.contains("2147483647"), "{text}");
    let vda = text
        .lines()
        .find(|l| l.trim_start().starts_with("vda "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(vda.contains(" no limit "), "{vda}");
}

/// The PCI line counts the links the tree shows a state for, once each, in the right number.
#[test]
fn pci_line_counts_the_links_it_shows() {
    headroom()
        .args(["audit", "--root"])
        .arg(repo_tree("sd-nvme-downgraded-sata"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "PCI: 3 functions, 1 PCI Express link\n",
        ));
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    // An old kernel's link attributes: three devices show a link, no port above has one.
    let out = headroom()
        .args(["audit", "--root"])
        .arg(fx.join("sysfs/hwloc-40intel64-4xeth-ib-2pciroots"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("  link ").count(), 3, "{text}");
    assert!(
        text.contains("PCI: 37 functions, 3 PCI Express links\n"),
        "{text}"
    );
}

/// Two audits of a dump with no link (an X99's root ports with nothing below them) have
/// nothing to compare, and compare says so instead of an empty "Same configuration" list;
/// a dump with links lists them as the same in both.
#[test]
fn comparing_a_dump_with_itself() {
    let Some(fx) = testsupport::fixtures::shared_fixtures() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (dump, says, not) in [
        (
            "linux-pci_intel-x99-haswell-e_rootports.lspci-xxxx",
            "Nothing to compare: these audit documents record no links, settings or measurements.",
            "Same configuration",
        ),
        (
            "linux-pci_arm-n1sdp_plx-pex8749_machine.lspci-xxx",
            "| link PCIe 0000:02:13.0 -> 0000:07:00.0 | 2.5 GT/s x1 |",
            "Nothing to compare",
        ),
    ] {
        let doc = dir.path().join(format!("{dump}.json"));
        let out = output_ok(
            headroom()
                .args(["audit", "--json", "--lspci"])
                .arg(fx.join("pci").join(dump)),
        );
        std::fs::write(&doc, &out.stdout).unwrap();
        let c =
            String::from_utf8(stdout_of(headroom().arg("compare").arg(&doc).arg(&doc))).unwrap();
        assert!(c.contains(says), "{c}");
        assert!(!c.contains(not), "{c}");
    }
}

/// A captured tree is read as `/` would be in a chroot there: its links resolve inside it,
/// whoever made them. Another user's capture whose `proc/sys/kernel/hostname` links to a
/// root-only file (absolute), or whose machine-id climbs out with `..`, shows none of the
/// host's files; a link inside the tree (an absolute target taken from the tree's root, a
/// relative one) still reads the tree's own file.
#[test]
fn a_captured_tree_is_read_inside_itself_whatever_its_links_say() {
    use std::os::unix::fs::PermissionsExt;
    let shared = testsupport::process::sticky_dir();
    let tree = shared.path().join("capture");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(repo_tree("usb3-uas-bot-r8152"))
        .arg(&tree)
        .status()
        .unwrap();
    assert!(copied.success());
    let chowned = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&tree)
        .status()
        .unwrap();
    assert!(chowned.success());
    // Root's private files, outside the tree.
    let private = tempfile::tempdir().unwrap();
    let hostname_secret = private.path().join("secret-name");
    std::fs::write(&hostname_secret, "root-only-secret\n").unwrap();
    let id_secret = private.path().join("secret-id");
    std::fs::write(&id_secret, "5be0d5c1a77f4e0c9d3b2a61f08e4c27\n").unwrap();
    for f in [&hostname_secret, &id_secret] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let climb = format!("../../../../../../../../../..{}", id_secret.display());
    let script = format!(
        "set -e; cd '{tree}'; mkdir -p proc/sys/kernel etc sys/firmware/devicetree/base;
         ln -sf '{name}' proc/sys/kernel/hostname;
         ln -s '{climb}' etc/machine-id;
         printf 'Captured Board v1\\0' > etc/board-model;
         ln -s /etc/board-model sys/firmware/devicetree/base/model;
         printf 'captured-serial\\0' > etc/board-serial;
         ln -s ../../../../etc/board-serial sys/firmware/devicetree/base/serial-number",
        tree = tree.display(),
        name = hostname_secret.display(),
    );
    let Some(mut nobody) = testsupport::process::as_nobody(Path::new("/bin/sh")) else {
        return;
    };
    let made = nobody.args(["-c", &script]).output().unwrap();
    assert!(made.status.success(), "{made:?}");
    let out = headroom()
        .args(["audit", "--json", "--root"])
        .arg(&tree)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("root-only-secret"), "{text}");
    assert!(!text.contains("5be0d5c1a77f"), "{text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let host = &doc["host"];
    assert_eq!(host["hostname"], Value::Null, "{host}");
    assert!(host.get("machine_id").is_none(), "{host}");
    // Links that stay in the tree read the tree's files.
    assert_eq!(host["model"], "Captured Board v1", "{host}");
    assert_eq!(host["serial"], "captured-serial", "{host}");
    // The tree's own devices are audited as before.
    assert!(doc["usb"]["devices"]
        .as_array()
        .is_some_and(|d| d.iter().any(|d| d["name"] == "2-1")));
}
