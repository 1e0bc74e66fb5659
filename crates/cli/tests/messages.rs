#![allow(clippy::unwrap_used)]
//! The messages a new user met that said a thing twice, told root to run as
//! root, lost the `headroom:` prefix, broke a table, misnamed a device or left commands out.

use std::path::Path;
use testsupport::cmd::*;
use testsupport::process::is_root;

/// "cannot read /tmp: Is a directory (os error 21): Is a directory (os error 21)": an error
/// whose message includes its cause was printed with the cause again. Every command's error
/// goes through one writer that says a cause once.
#[test]
fn an_error_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for args in [&["compare", d, d][..], &["report", d]] {
        let err = fails_saying(
            headroom().args(args),
            1,
            &format!("{d} is a directory, not a file"),
        );
        assert_eq!(
            err.to_lowercase().matches("is a directory").count(),
            1,
            "{args:?}: {err}"
        );
    }
}

/// clap's own errors lacked the `headroom:` prefix every other message carries.
#[test]
fn usage_errors_of_the_command_line_carry_the_prefix() {
    let err = fails_saying(
        headroom().args(["bench", "disk", "--bogus"]),
        2,
        "unexpected argument '--bogus' found",
    );
    assert!(
        err.starts_with("headroom: error: unexpected argument '--bogus' found"),
        "{err}"
    );
    assert!(err.contains("Usage: headroom bench disk"), "{err}");
    // Help and version are answers, not errors: stdout, exit 0, as clap prints them.
    let out = headroom().arg("--help").output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("How far is each Linux I/O path"));
    let out = headroom().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("headroom "));
    // A command without its subcommand: its help, as a usage error.
    let out = headroom().arg("bench").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: headroom bench"));
}

/// A number flag given text (`-t x`, `-i 1k`) got the standard library's "invalid digit found
/// in string", which says nothing of what the flag takes.
#[test]
fn a_number_flag_given_text_says_what_it_takes() {
    for (args, flag) in [
        (&["bench", "latency", "-t", "x"][..], "--threads x: "),
        (&["bench", "latency", "-i", "1k"], "--interval 1k: "),
        (&["bench", "latency", "--analyze", "abc"], "--analyze abc: "),
        (
            &["bench", "latency", "-l", "99999999999999999999999"],
            "--loops",
        ),
    ] {
        let err = fails_saying(headroom().args(args), 2, flag);
        assert!(!err.contains("invalid digit"), "{args:?}: {err}");
        assert!(
            err.contains("not a whole number: give digits only")
                || err.contains("out of range for this flag"),
            "{args:?}: {err}"
        );
    }
}

/// The top-level and `bench` help named only disk and latency.
#[test]
fn help_names_every_benchmark() {
    let words = |args: &[&str]| {
        let out = stdout_of(headroom().args(args));
        String::from_utf8_lossy(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let top = words(&["--help"]);
    let bench = words(&["bench", "--help"]);
    for help in [&top, &bench] {
        assert!(
            help.contains(
                "Run a benchmark: storage (fio/CrystalDiskMark-like) and network throughput \
                 (iperf3's protocol) against the path's ceiling, wake-up latency (cyclictest's \
                 method) under a built-in stress load, CPU loads and stores on a PCI BAR (MMIO) \
                 and DRAM"
            ),
            "{help}"
        );
    }
}

/// "Operation not permitted ... or run as root" while running as root: root is told what can
/// refuse root (here an immutable file, chattr +i).
#[test]
fn root_is_not_told_to_run_as_root() {
    if !is_root() {
        testsupport::skip::skip("needs root to see what refuses root");
        return;
    }
    let dir = disk_dir("headroom-messages-test");
    let f = dir.path().join("immutable.bin");
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    let chattr = |flag: &str| {
        std::process::Command::new("chattr")
            .arg(flag)
            .arg(&f)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !chattr("+i") {
        testsupport::skip::skip("chattr +i is not available on this filesystem");
        return;
    }
    let out = headroom()
        .args(["bench", "disk"])
        .arg(&f)
        .args(["--rw", "write", "--size", "1M", "--overwrite"])
        .output()
        .unwrap();
    chattr("-i");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Operation not permitted (os error 1): permission denied; refused even to root: an immutable or append-only file"),
        "{err}"
    );
    assert!(!err.contains("run as root"), "{err}");
}

/// A `count` of a command with a newline in it broke the `history` table in two lines.
#[test]
fn the_history_lists_one_line_per_run_whatever_its_strings_hold() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite");
    let out = headroom()
        .args(["count", "--save", "--db"])
        .arg(&db)
        .args(["-e", "task-clock", "--", "sh", "-c", "true\ntrue"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = stdout_of(headroom().args(["history", "--db"]).arg(&db));
    let list = String::from_utf8_lossy(&list);
    assert_eq!(list.lines().count(), 2, "a header and one run: {list}");
    assert!(list.contains("sh -c true\\x0atrue"), "{list}");
}

/// An unattached loop device was called "a virtual block device (RAM disk, zram, ...)".
#[test]
fn an_unattached_loop_device_is_called_what_it_is() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup -f)");
        return;
    }
    let free = std::process::Command::new("losetup")
        .arg("-f")
        .output()
        .unwrap();
    let dev = String::from_utf8_lossy(&free.stdout).trim().to_string();
    let name = dev.trim_start_matches("/dev/");
    let out = stdout_of(headroom().args(["path", name]));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains(&format!(
            "{name} is a loop device with no backing file attached (`losetup FILE` attaches one"
        )),
        "{text}"
    );
    assert!(!text.contains("RAM disk, zram"), "{text}");
}

/// `report /nonexistent.json` printed two errors: the file's, then "no result document could
/// be read: nothing to report". One input that cannot be read is one sentence; several name
/// each, then say none could be read.
#[test]
fn a_report_of_a_missing_file_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("run.json");
    let m = missing.to_str().unwrap();
    let err = fails_saying(
        headroom().args(["report", m]),
        1,
        &format!("{m}: no such file"),
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let err = fails_saying(
        headroom().args(["report", m, m]),
        1,
        "none of the 2 inputs could be read: nothing to report",
    );
    assert_eq!(err.lines().count(), 3, "{err}");
}

/// `--runtime abc` said "unknown unit \"abc\"": text with no number is not a duration at all.
/// Every duration, size and number flag, whether clap or the command reads it, refuses in one
/// style: `FLAG VALUE: not a ...: give ..., e.g. ...`.
#[test]
fn a_duration_or_size_flag_given_text_says_it_is_not_one_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (args, said) in [
        (
            &["bench", "disk", d, "--runtime", "abc"][..],
            "--runtime abc: not a duration: give a number with an optional unit, e.g. 10s",
        ),
        (
            &["bench", "latency", "-D", "abc"],
            "--duration abc: not a duration: give a number with an optional unit, e.g. 10s",
        ),
        (
            &["survey", "--budget", "abc"],
            "--budget abc: not a duration: give a number with an optional unit, e.g. 10s",
        ),
        (
            &["bench", "disk", d, "--bs", "abc"],
            "--bs abc: not a size: give a number with an optional K, M, G or T, e.g. 4k",
        ),
        (
            &["bench", "net", "127.0.0.1", "-t", "abc"],
            "--time abc: not a number of seconds: give a whole number, e.g. -t 10",
        ),
        (
            &["bench", "latency", "--analyze", "abc"],
            "--analyze abc: not a whole number: give digits only, without a unit or a sign, e.g. 4",
        ),
    ] {
        let err = fails_saying(headroom().args(args), 2, said);
        assert!(!err.contains("unknown unit"), "{args:?}: {err}");
        assert!(!err.contains("invalid digit"), "{args:?}: {err}");
        // The value is said once, after its flag.
        assert_eq!(err.matches("abc").count(), 1, "{args:?}: {err}");
    }
    // A number with a unit that does not exist is still told about its unit.
    fails_saying(
        headroom().args(["bench", "disk", d, "--runtime", "5y"]),
        2,
        "--runtime 5y: unknown unit \"y\": use us, ms, s, m, h or d, e.g. 10s",
    );
}

/// `report --format ocptv` said "report prints openmetrics or prometheus" while it prints lava
/// and kcidb too, and its `--help` listed ocptv. One list, the one the parser takes, in the
/// help and in the refusal.
#[test]
fn report_formats_are_one_list_in_the_help_and_the_refusal() {
    let help = String::from_utf8(stdout_of(headroom().args(["report", "--help"]))).unwrap();
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.contains("--format <FORMAT>"))
        .skip_while(|l| !l.contains("Possible values:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["openmetrics", "prometheus", "lava", "kcidb"],
        "{help}"
    );
    let err = fails_saying(
        headroom().args(["report", "--format", "ocptv", "a.json"]),
        2,
        "--format ocptv is the output of `headroom audit --expect MANIFEST`",
    );
    assert!(err.contains(&listed.join(", ")), "{err}");
    let err = fails_saying(
        headroom().args(["report", "--format", "csv", "a.json"]),
        2,
        "is none of",
    );
    assert!(err.contains(&listed.join(", ")), "{err}");
    // audit prints ocptv (with --expect): its help lists it.
    let help = String::from_utf8(stdout_of(headroom().args(["audit", "--help"]))).unwrap();
    assert!(help.contains("- ocptv"), "{help}");
}

/// The bytes of every text a user reads from `audit` (text, JSON, OpenMetrics), `path` of each
/// disk and interface, `ceiling` and every command's `--help`, on every captured tree.
fn user_outputs() -> Vec<(String, String)> {
    let mut roots: Vec<std::path::PathBuf> = [
        "sd-nvme-downgraded-sata",
        "usb3-uas-bot-r8152",
        "qemu-q35-lab",
    ]
    .iter()
    .map(|t| testsupport::fixtures::own(&format!("sysfs/{t}")))
    .collect();
    for t in [
        "checkbox-baytrail-emmc-sdhci-acpi",
        "hwloc-40intel64-4xeth-ib-2pciroots",
        "systemd-t60p-usbstorage-md-e1000e",
        "this-vm",
        "ul-fc27-nvme-sata-lvm",
        "umockdev-intel-ehci-hubchain-kbd",
    ] {
        roots.extend(testsupport::fixtures::shared(&format!("sysfs/{t}")));
    }
    let mut outs = Vec::new();
    let mut run = |args: Vec<String>| {
        let out = headroom().args(&args).output().unwrap();
        let both = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        outs.push((args.join(" "), both));
        out
    };
    for root in &roots {
        let r = root.to_str().unwrap().to_string();
        for extra in [&[][..], &["--json"], &["--format", "openmetrics"]] {
            let mut a = vec!["audit".to_string(), "--root".into(), r.clone()];
            a.extend(extra.iter().map(|s| s.to_string()));
            run(a);
        }
        let doc: serde_json::Value = serde_json::from_slice(
            &run(vec![
                "audit".into(),
                "--root".into(),
                r.clone(),
                "--json".into(),
            ])
            .stdout,
        )
        .unwrap();
        let mut targets: Vec<String> = Vec::new();
        // Whole disks (a partition's path is its disk's, one more line).
        for d in doc["block"]["devices"].as_array().into_iter().flatten() {
            if d["kind"] == "disk" {
                targets.push(d["name"].as_str().unwrap().to_string());
            }
        }
        for i in doc["net"]["interfaces"].as_array().into_iter().flatten() {
            targets.push(i["name"].as_str().unwrap().to_string());
        }
        for t in targets {
            run(vec!["path".into(), "--root".into(), r.clone(), t]);
        }
    }
    for c in ["pcie", "usb", "sata", "eth", "mmc"] {
        run(vec!["ceiling".into(), c.into()]);
    }
    let commands: &[&[&str]] = &[
        &[],
        &["audit"],
        &["ceiling"],
        &["path"],
        &["bench"],
        &["bench", "disk"],
        &["bench", "latency"],
        &["bench", "net"],
        &["bench", "mmio"],
        &["bench", "mem"],
        &["report"],
        &["compare"],
        &["history"],
        &["survey"],
        &["count"],
    ];
    for c in commands {
        let mut a: Vec<String> = c.iter().map(|s| s.to_string()).collect();
        a.push("--help".into());
        run(a);
    }
    outs
}

/// `path` printed "(bulk transfers (model::ceiling::usb); ...)": a module of headroom's code in
/// what a user reads. No output names a Rust path (`word::word`).
#[test]
fn no_output_names_a_module_of_the_code() {
    let rust_path = |t: &str| -> Option<String> {
        let b = t.as_bytes();
        let ident = |c: u8| c.is_ascii_alphabetic() || c == b'_';
        (2..b.len().saturating_sub(3)).find_map(|i| {
            (b[i] == b':'
                && b[i + 1] == b':'
                && ident(b[i - 1])
                && ident(b[i - 2])
                && ident(b[i + 2])
                && ident(b[i + 3]))
            .then(|| t[i.saturating_sub(20)..(i + 20).min(t.len())].to_string())
        })
    };
    let outs = user_outputs();
    assert!(outs.len() > 40, "{}", outs.len());
    for (args, text) in outs {
        assert_eq!(rust_path(&text), None, "headroom {args}");
    }
}

fn shared_root(tree: &str) -> Option<String> {
    testsupport::fixtures::shared(&format!("sysfs/{tree}")).map(|p| p.to_str().unwrap().to_string())
}

fn audit_of(root: &str) -> String {
    String::from_utf8(stdout_of(headroom().args(["audit", "--root", root]))).unwrap()
}

/// "Linux Foundation 2.0 root hub root hub": usb.ids' name of a root hub already says it.
#[test]
fn a_root_hub_is_called_one_once() {
    let Some(root) = shared_root("systemd-t60p-usbstorage-md-e1000e") else {
        return;
    };
    let text = audit_of(&root);
    assert!(!text.contains("root hub root hub"), "{text}");
    assert!(
        text.contains(
            "usb5 480M (USB 2.00) Linux Foundation 2.0 root hub on EHCI PCI 0000:00:1d.7"
        ),
        "{text}"
    );
}

/// The eMMC of a Bay Trail board, whose size the capture lacks, was in `--json` only: a
/// device whose size is not known is listed with `?`.
#[test]
fn a_disk_of_unknown_size_is_listed_with_a_question_mark() {
    let Some(root) = shared_root("checkbox-baytrail-emmc-sdhci-acpi") else {
        return;
    };
    let text = audit_of(&root);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("mmcblk0 "))
        .unwrap_or_else(|| panic!("no mmcblk0 line in\n{text}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[..3], ["mmcblk0", "?", "mmc"], "{line}");
    assert!(text.contains("? = not readable"), "{text}");
    assert!(text.contains("mmcblk0boot0"), "{text}");
}

/// "System: kernel unknown, unknown" (the second was the preemption model) and `path eth0`'s
/// "interface eth0 unknown [virtio_net]" (the duplex sysfs calls unknown, read as the
/// speed): an unknown says what is unknown.
#[test]
fn an_unknown_says_what_is_unknown() {
    let Some(root) = shared_root("this-vm") else {
        return;
    };
    let text = audit_of(&root);
    assert!(
        text.contains("System: kernel release unknown, preemption model unknown"),
        "{text}"
    );
    let path = String::from_utf8(stdout_of(
        headroom().args(["path", "--root", &root, "eth0"]),
    ))
    .unwrap();
    assert!(
        path.contains("interface eth0 (no link speed reported) [virtio_net]"),
        "{path}"
    );
    for t in [&text, &path] {
        assert!(
            !t.lines()
                .any(|l| l.contains(" unknown [") || l.ends_with(", unknown")),
            "{t}"
        );
    }
}

/// A machine without a USB bus had no USB line at all, so a reader could not tell "none"
/// from "not looked at".
#[test]
fn a_machine_without_a_usb_bus_says_so() {
    let Some(root) = shared_root("this-vm") else {
        return;
    };
    let text = audit_of(&root);
    assert!(text.contains("\nUSB: none (no /sys/bus/usb)\n"), "{text}");
}

/// The advice came before the OS's reason: "cannot read the lspci dump X: give the file
/// `lspci -xxx` printed: No such file or directory". What went wrong first, then what to do.
#[test]
fn an_unreadable_lspci_dump_says_why_then_what_to_do() {
    let err = fails_saying(
        headroom().args(["audit", "--lspci", "/nonexistent/dump.txt"]),
        1,
        "cannot read the lspci dump /nonexistent/dump.txt: No such file or directory",
    );
    assert!(
        err.trim_end()
            .ends_with("give the file `lspci -xxx` printed"),
        "{err}"
    );
}

/// `report 13` and `compare 13 a.json` printed `\#13` on the terminal: a history id inside a
/// heading or a table cell cannot start a heading, so it is printed as typed.
#[test]
fn a_history_id_is_printed_as_typed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite");
    let doc = testsupport::fixtures::own("results/count-true.json");
    output_ok(
        headroom()
            .args(["history", "--db"])
            .arg(&db)
            .arg("add")
            .arg(&doc),
    );
    let md = String::from_utf8(stdout_of(
        headroom().args(["report", "--db"]).arg(&db).arg("1"),
    ))
    .unwrap();
    assert!(md.contains("— #1"), "{md}");
    assert!(!md.contains("\\#"), "{md}");
}
