//! `headroom watch` over a time series of sysfs trees (tests/fixtures/watch/series.txt,
//! derived from the board lab's capture): the line a user reads for each change (downtrain
//! with what the NVMe's path loses, AER errors by name, retrain back up, a flapping network
//! link, counters reset by a driver reload, a device that leaves and comes back), the
//! summary per device and the findings; and the command itself on a captured tree.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::root::SysRoot;
use model::watch::Watcher;
use report::kinds::watch::{findings, text};

use std::path::Path;

/// `from` copied into `to`, links as links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if t.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn remove(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).unwrap(),
        Ok(_) => std::fs::remove_file(p).unwrap(),
        Err(e) => panic!("{}: {e}", p.display()),
    }
}

/// One line of series.txt applied to the tree at `root` (the capture at `base`).
fn apply(root: &Path, base: &Path, line: &str) {
    let mut words = line.splitn(3, ' ');
    let (op, path) = (words.next().unwrap(), words.next().unwrap());
    let rest = words.next().unwrap_or("");
    let at = root.join(path);
    match op {
        "write" => std::fs::write(&at, format!("{}\n", rest.replace("\\n", "\n"))).unwrap(),
        "setbits" => {
            let (offset, mask) = rest.split_once(' ').unwrap();
            let mut bytes = std::fs::read(&at).unwrap();
            bytes[usize::from_str_radix(offset, 16).unwrap()] |=
                u8::from_str_radix(mask, 16).unwrap();
            std::fs::write(&at, bytes).unwrap();
        }
        "remove" => remove(&at),
        "restore" => {
            let src = base.join(path);
            let t = std::fs::symlink_metadata(&src).unwrap().file_type();
            if t.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &at).unwrap();
            } else if t.is_dir() {
                copy_tree(&src, &at);
            } else {
                std::fs::copy(&src, &at).unwrap();
            }
        }
        other => panic!("series.txt: unknown operation {other}"),
    }
}

/// The steps of series.txt: each one's name and lines.
fn steps() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(testsupport::fixtures::own("watch/series.txt")).unwrap();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        match line.strip_prefix("step ") {
            Some(name) => out.push((name.to_string(), Vec::new())),
            None => out.last_mut().unwrap().1.push(line.to_string()),
        }
    }
    out
}

/// 2026-12-06 12:00:00 UTC: the series' first sample; one step a second after it.
const START_UNIX_MS: i64 = 1_796_558_400_000;

#[test]
fn a_series_of_trees_reads_as_the_changes_a_user_sees() {
    let base = testsupport::fixtures::own("sysfs/qemu-q35-lab");
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("root");
    copy_tree(&base, &tree);
    let root = SysRoot::new(&tree);
    let mut watch: Option<(probe::watch::Sampler, Watcher)> = None;
    let mut lines = Vec::new();
    for (i, (_, edits)) in steps().iter().enumerate() {
        for e in edits {
            apply(&tree, &base, e);
        }
        let (sampler, watcher) = watch.get_or_insert_with(|| {
            let audit = probe::pci::audit_sysfs(&root);
            (
                probe::watch::Sampler::new(&root, None),
                Watcher::new(1000, probe::watch::contexts(&root, &audit)),
            )
        });
        let at = i as u64 * 1000;
        let sample = sampler.sample();
        for c in watcher.observe(&sample, at, START_UNIX_MS + at as i64) {
            lines.push(text::change_line(&c));
        }
    }
    // The ceilings are `headroom ceiling pcie`'s effective write at MPS 128 B (the link's
    // MPS in the capture), default assumptions: 3228.7 MB/s at 8 GT/s x4, 802 at 5 GT/s x2.
    let expected = [
        "12:00:01 0000:00:12.0 Link Bandwidth Management Status set: the link retrained or changed speed since the bit was last cleared",
        "12:00:01 0000:05:00.0 8GT/s x4 -> 5GT/s x2 (retrained, below its 8GT/s x4): /dev/nvme0n1's ceiling falls from 3229 to 802 MB/s",
        "12:00:02 0000:00:12.0 +13 correctable AER errors: RxErr +12, BadTLP +1",
        "12:00:03 0000:05:00.0 5GT/s x2 -> 8GT/s x4 (retrained): /dev/nvme0n1's ceiling rises from 802 to 3229 MB/s",
        "12:00:04 eth0 carrier changed 4 times (the link went down or up)",
        "12:00:05 0000:00:12.0 correctable AER counters went down (the function was reset or enumerated again): counting on from their new values",
        "12:00:05 0000:00:12.0 +2 correctable AER errors: RxErr +2",
        "12:00:06 0000:00:12.0 8GT/s x4 -> link down (link down): /dev/nvme0n1 is cut off (its ceiling was 3229 MB/s)",
        "12:00:06 0000:05:00.0 left (removed, or its link dropped and the kernel removed it): /dev/nvme0n1 is cut off (its ceiling was 3229 MB/s)",
        "12:00:06 usb 2-1 left",
        "12:00:07 0000:00:12.0 link down -> 8GT/s x4 (link up): /dev/nvme0n1 is back, its ceiling 3229 MB/s",
        "12:00:07 0000:05:00.0 arrived (8GT/s x4)",
    ];
    assert_eq!(lines, expected, "\n{}", lines.join("\n"));

    // The summary counts every error once across the reset, and each event on its device.
    let (_, watcher) = watch.unwrap();
    let r = watcher.result();
    assert_eq!((r.samples, r.changes.len()), (8, expected.len()));
    let port = watcher.device("0000:00:12.0").unwrap();
    let count = |name: &str| {
        port.errors
            .iter()
            .find(|e| e.error == name)
            .map(|e| e.count)
    };
    assert_eq!((count("RxErr"), count("BadTLP")), (Some(14), Some(1)));
    assert_eq!((port.counter_resets, port.link_status_events), (1, 1));
    let nvme = watcher.device("0000:05:00.0").unwrap();
    assert_eq!(
        (
            nvme.link_changes,
            nvme.departures,
            nvme.arrivals,
            nvme.present
        ),
        (2, 1, 1, true)
    );
    assert_eq!(
        nvme.lowest.map(|l| l.to_string()).as_deref(),
        Some("5 GT/s x2")
    );
    assert_eq!(watcher.device("eth0").unwrap().carrier_changes, 4);
    assert_eq!(watcher.device("usb 2-1").unwrap().departures, 1);
    let said: Vec<String> = findings::collect(&r)
        .iter()
        .map(|f| f.message.clone())
        .collect();
    for sentence in [
        "0000:05:00.0 left once during the watch and came back: a surprise removal, a hot unplug or a link that dropped",
        "15 correctable AER errors (RxErr 14, BadTLP 1) on 0000:00:12.0 during the watch, at 8GT/s x4: each one is a replayed or repaired transfer; a link that keeps counting them is marginal at its speed",
        "eth0's carrier changed 4 times during the watch: the link went down and up",
    ] {
        assert!(said.iter().any(|s| s == sentence), "{sentence}\nnot among\n{}", said.join("\n"));
    }
}

/// A copy of the lab board's tree whose NVMe link (port `0000:00:12.0`, endpoint
/// `0000:05:00.0`) can train at x4, running at x4.
fn nvme_at_x4(dir: &Path) -> std::path::PathBuf {
    let tree = dir.join("root");
    copy_tree(&testsupport::fixtures::own("sysfs/qemu-q35-lab"), &tree);
    for f in [
        "sys/devices/pci0000:00/0000:00:12.0",
        "sys/devices/pci0000:00/0000:00:12.0/0000:05:00.0",
    ] {
        std::fs::write(tree.join(f).join("max_link_width"), "4\n").unwrap();
        std::fs::write(tree.join(f).join("current_link_width"), "4\n").unwrap();
    }
    tree
}

fn promtool(text: &str) -> Result<(), String> {
    let out = testsupport::cmd::fed(
        std::process::Command::new("promtool").args(["check", "metrics"]),
        text.as_bytes(),
    );
    out.status
        .success()
        .then_some(())
        .ok_or_else(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn sigterm_ends_the_watch_with_its_summary_document_and_a_textfile_never_half_written() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let tree = nvme_at_x4(dir.path());
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let doc = dir.path().join("watch.json");
    let mut cmd = testsupport::cmd::headroom_process();
    cmd.args(["watch", "--interval", "50ms", "--no-save", "--root"])
        .arg(&tree)
        .arg("-o")
        .arg(&doc)
        .arg("--textfile-dir")
        .arg(&textfiles);
    let mut child = testsupport::process::spawn_piped(&mut cmd);
    let stderr = testsupport::process::StderrWatch::of(&mut child);
    assert!(
        stderr.wait_for("watching 13 PCI functions", Duration::from_secs(30)),
        "{}",
        stderr.text()
    );
    // The NVMe's link retrains to x1 while node_exporter reads the textfile: every read is
    // a whole file.
    for f in [
        "sys/devices/pci0000:00/0000:00:12.0",
        "sys/devices/pci0000:00/0000:00:12.0/0000:05:00.0",
    ] {
        std::fs::write(tree.join(f).join("current_link_width"), "1\n").unwrap();
    }
    let prom = textfiles.join("headroom-watch.prom");
    let x1 = "headroom_pcidevice_current_link_width{segment=\"0000\",bus=\"05\",device=\"00\",function=\"0\"} 1";
    let mut reads = 0;
    let seen = testsupport::process::wait_until(Duration::from_secs(30), || {
        let Ok(text) = std::fs::read_to_string(&prom) else {
            return false;
        };
        reads += 1;
        assert!(
            text.contains("\nheadroom_watch_late_samples_total ") && text.ends_with("\n"),
            "read {reads} saw a partial file:\n{text}"
        );
        text.contains(x1)
    });
    assert!(seen, "{}", stderr.text());
    testsupport::process::signal(&child, libc::SIGTERM);
    let out = testsupport::process::output_within(&mut child, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(143), "{stdout}\n{}", stderr.text());
    assert!(
        stdout.contains(
            " 0000:05:00.0 2.5GT/s x4 -> 2.5GT/s x1 (retrained, below its 2.5GT/s x4): \
             /dev/nvme0n1's ceiling falls from 794 to 196 MB/s"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("headroom watch: "), "{stdout}");
    assert!(stdout.contains("Findings:"), "{stdout}");
    // Said once, at the start, not again in the summary.
    assert_eq!(
        stderr
            .text()
            .matches("no pci:pcie_link_event tracepoint")
            .count()
            + stdout.matches("no pci:pcie_link_event tracepoint").count(),
        1
    );
    // The document is written and read back by report.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    assert_eq!(v["kind"], "watch");
    assert_eq!(v["interrupted"], true);
    let md = testsupport::cmd::report_md(&doc);
    assert!(
        md.contains("| 0000:05:00.0 | 2.5GT/s x4 -> 2.5GT/s x1 |"),
        "{md}"
    );
    // Only the textfile is left in its directory (no temporary file), and promtool takes it.
    let names: Vec<_> = std::fs::read_dir(&textfiles)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["headroom-watch.prom"]);
    let text = std::fs::read_to_string(&prom).unwrap();
    if testsupport::skip::unless(
        testsupport::process::on_path("promtool"),
        "promtool (Debian's prometheus package) is not installed",
    ) {
        promtool(&text).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    }
    assert!(text.contains(
        "headroom_pcidevice_aer_errors_total{segment=\"0000\",bus=\"00\",device=\"12\",function=\"0\",severity=\"correctable\",error=\"RxErr\"} 0"
    ), "{text}");
}

#[test]
fn bad_values_and_targets_get_one_sentence() {
    let root = testsupport::fixtures::own("sysfs/qemu-q35-lab");
    let root = root.to_str().unwrap();
    for (args, sentence) in [
        (
            vec!["--interval", "0"],
            "--interval 0: must be at least 1ms; give e.g. --interval 1s",
        ),
        (vec!["--interval", "soon"], "--interval soon: "),
        (vec!["--for", "forever"], "--for forever: "),
        (vec!["no-such-device"], "no-such-device"),
        (
            vec!["--textfile-dir", "no-such-dir"],
            "--textfile-dir no-such-dir: no such directory",
        ),
    ] {
        let mut cmd = testsupport::cmd::headroom();
        cmd.args(["watch", "--no-save", "--root", root]).args(&args);
        let err = testsupport::cmd::fails_saying(&mut cmd, 2, sentence);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn targets_limit_the_watch_to_their_paths() {
    let root = testsupport::fixtures::own("sysfs/qemu-q35-lab");
    let mut cmd = testsupport::cmd::headroom();
    cmd.args([
        "watch",
        "nvme0n1",
        "--for",
        "1ms",
        "--no-save",
        "--json",
        "--root",
    ])
    .arg(&root);
    let v = testsupport::cmd::json_of(&mut cmd);
    let devices: Vec<&str> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["0000:00:12.0", "0000:05:00.0"]);
}

#[test]
fn without_root_the_link_status_bits_are_one_sentence_and_the_rest_is_watched() {
    // What the kernel gives a user without root: the first 64 bytes of config space
    // (drivers/pci/pci-sysfs.c), here cut in a copy of the tree.
    let dir = tempfile::tempdir().unwrap();
    let tree = nvme_at_x4(dir.path());
    for f in [
        "sys/devices/pci0000:00/0000:00:12.0/config",
        "sys/devices/pci0000:00/0000:00:12.0/0000:05:00.0/config",
    ] {
        let bytes = std::fs::read(tree.join(f)).unwrap();
        std::fs::write(tree.join(f), &bytes[..64]).unwrap();
    }
    let mut cmd = testsupport::cmd::headroom();
    cmd.args(["watch", "nvme0n1", "--for", "1ms", "--no-save", "--root"])
        .arg(&tree);
    let out = testsupport::cmd::output_ok(&mut cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("which only root can read; run as root to see them")
            .count(),
        1,
        "{err}"
    );
    // And as user nobody on this machine: what it can read, exit 0.
    let bin = assert_cmd::cargo::cargo_bin("headroom");
    if let Some(mut nobody) = testsupport::process::as_nobody(&bin) {
        let out = nobody
            .args([
                "watch",
                "--for",
                "200ms",
                "--interval",
                "100ms",
                "--no-save",
            ])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn bench_disk_records_the_links_of_its_path_unless_told_not_to() {
    let dir = testsupport::cmd::disk_dir("watch-bench");
    let run = |extra: &[&str]| {
        let mut cmd = testsupport::cmd::headroom();
        cmd.args(["bench", "disk"])
            .arg(dir.path())
            .args(testsupport::cmd::SMALL_DISK_RUN)
            .args(["--profile", "dd", "--no-save", "--json"])
            .args(extra);
        testsupport::cmd::json_of(&mut cmd)
    };
    let v = run(&[]);
    let path_pci: Vec<String> = v["path"]["chain"]["hops"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["address"].as_str().map(str::to_string))
        .collect();
    if !testsupport::skip::unless(
        !path_pci.is_empty(),
        "the test disk's path crosses no PCI function",
    ) {
        return;
    }
    let links = &v["counters"]["links"];
    let watched: Vec<&str> = links["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = path_pci.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(watched, want, "{links}");
    assert!(links["samples"].as_u64().unwrap() >= 2, "{links}");
    assert!(
        links["read_bytes"].as_u64().unwrap() + links["write_bytes"].as_u64().unwrap() > 0,
        "{links}"
    );
    assert!(run(&["--no-watch"])["counters"]["links"].is_null());
}

#[test]
fn errors_during_a_benchmark_are_a_finding_with_errors_per_gb() {
    // A bench disk document whose path's root port counted 12 Receiver Errors while 5.2 GB
    // were written (the Raspberry Pi 5 at Gen 3 of the seed), as report reads it.
    let file = testsupport::fixtures::own("results/disk-null-dd.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    v["counters"]["links"] = serde_json::json!({
        "samples": 6,
        "interval_ms": 1000,
        "devices": [{
            "device": "0000:00:00.0",
            "first": {"speed_gts": 8.0, "width": 1},
            "last": {"speed_gts": 8.0, "width": 1},
            "lowest": {"speed_gts": 8.0, "width": 1},
            "capable": {"speed_gts": 8.0, "width": 1},
            "link_changes": 0, "link_downs": 0,
            "errors": [{"severity": "correctable", "error": "RxErr", "count": 12}],
            "has_aer": true,
            "errors_at": {"speed_gts": 8.0, "width": 1},
            "counter_resets": 0, "link_status_events": 0, "arrivals": 0, "departures": 0,
            "present": true, "carrier_changes": 0, "speed_changes": 0
        }],
        "read_bytes": 0,
        "write_bytes": 5_200_000_000u64
    });
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("disk.json");
    std::fs::write(&doc, v.to_string()).unwrap();
    let md = testsupport::cmd::report_md(&doc);
    assert!(
        md.contains(
            "12 correctable RxErr on 0000:00:00.0 during 5.2 GB of writes at 8GT/s x1, 2.31 per \
             GB: the link is marginal at this speed"
        ),
        "{md}"
    );
    assert!(md.contains("| AER errors on the path | 12 |"), "{md}");
}

#[test]
fn error_names_from_a_hostile_tree_are_escaped_in_the_textfile() {
    let dir = tempfile::tempdir().unwrap();
    let tree = nvme_at_x4(dir.path());
    std::fs::write(
        tree.join("sys/devices/pci0000:00/0000:00:12.0/aer_dev_correctable"),
        "Rx\"Err\\\x1b[31m 3\nTOTAL_ERR_COR 3\n",
    )
    .unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let mut cmd = testsupport::cmd::headroom();
    cmd.args(["watch", "--for", "1ms", "--no-save", "--root"])
        .arg(&tree)
        .arg("--textfile-dir")
        .arg(&textfiles);
    testsupport::cmd::output_ok(&mut cmd);
    let text = std::fs::read_to_string(textfiles.join("headroom-watch.prom")).unwrap();
    assert!(!text.contains('\x1b'), "{text:?}");
    let line = text
        .lines()
        .find(|l| l.starts_with("headroom_pcidevice_aer_errors_total{") && l.ends_with(" 3"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("error=\"Rx\\\"Err\\\\"), "{line}");
    if testsupport::skip::unless(
        testsupport::process::on_path("promtool"),
        "promtool (Debian's prometheus package) is not installed",
    ) {
        promtool(&text).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    }
}
