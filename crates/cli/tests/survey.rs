#![allow(clippy::unwrap_used)]
//! `headroom survey`: the plan on captured trees, a short real survey on this machine read
//! back by `report` and `compare`, and Ctrl-C at random points leaving a valid partial
//! document and nothing behind.

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use testsupport::cmd::{fails_saying, headroom, headroom_process, json_of, stdout_of};
use testsupport::process::is_root;

fn shared_tree(name: &str) -> Option<PathBuf> {
    testsupport::fixtures::shared(&format!("sysfs/{name}"))
}

fn repo_tree(name: &str) -> PathBuf {
    testsupport::fixtures::own(&format!("sysfs/{name}"))
}

fn part<'a>(plan: &'a Value, id: &str) -> &'a Value {
    plan["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no part {id} in {plan:#}"))
}

#[test]
fn plan_of_a_captured_tree_names_the_devices_and_never_writes_a_raw_one() {
    let tree = repo_tree("sd-nvme-downgraded-sata");
    let plan = json_of(
        headroom()
            .args(["survey", "--dry-run", "--json", "--root"])
            .arg(&tree),
    );
    assert_eq!(plan["kind"], "survey-plan");
    // Each mounted, writable filesystem gets a test file of its own, never its raw device.
    for (id, dir) in [
        ("disk nvme0n1", "/"),
        ("disk sdc", "/srv/sata"),
        ("disk mmcblk1", "/media/sd card"),
    ] {
        let p = part(&plan, id);
        assert_eq!(p["run"], true, "{p:#}");
        assert_eq!(p["command"][2], dir, "{p:#}");
        assert!(
            p["what"].as_str().unwrap().contains("removed afterwards"),
            "{p:#}"
        );
    }
    // A device-mapper layer with nothing mounted is not benchmarked.
    assert_eq!(part(&plan, "disk dm-2")["run"], false);
    // Nothing in the plan writes to /dev.
    for p in plan["parts"].as_array().unwrap() {
        let cmd: Vec<&str> = p["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        if cmd.iter().any(|w| w.starts_with("/dev/")) {
            assert!(
                cmd.windows(2).any(|w| w == ["--rw", "read"]),
                "raw device written: {cmd:?}"
            );
        }
    }
    // The text plan says it is a plan only and quotes the path with a space as a shell does.
    let out = headroom()
        .args(["survey", "--dry-run", "--root"])
        .arg(&tree)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("Plan only: the tree was captured on another machine"),
        "{text}"
    );
    assert!(
        text.contains("$ headroom bench disk '/media/sd card' --profile survey"),
        "{text}"
    );
}

#[test]
fn plan_of_the_shared_trees_reads_unmounted_disks_only() {
    let Some(tree) = shared_tree("ul-fc27-nvme-sata-lvm") else {
        return;
    };
    let plan = json_of(
        headroom()
            .args(["survey", "--dry-run", "--json", "--budget", "2m", "--root"])
            .arg(&tree),
    );
    // sda holds /, nvme0n1 /home, sdb /home/archive: each tested in a file there.
    assert_eq!(part(&plan, "disk sda")["command"][2], "/");
    assert_eq!(part(&plan, "disk nvme0n1")["command"][2], "/home");
    assert_eq!(part(&plan, "disk sdb")["command"][2], "/home/archive");
    // The LVM volume is built on loop devices: not storage hardware.
    let dm = part(&plan, "disk dm-0");
    assert_eq!(dm["run"], false);
    assert!(dm["reason"].as_str().unwrap().contains("loop0"), "{dm:#}");
    // The plan fits its budget.
    let total: f64 = plan["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["run"] == true)
        .map(|p| {
            p["fixed_s"].as_f64().unwrap()
                + p["units"].as_f64().unwrap() * p["unit_s"].as_f64().unwrap()
        })
        .sum();
    assert!(total <= 120.5, "{total} s planned for a 2 min budget");
    // Every captured tree plans without error.
    for name in [
        "checkbox-baytrail-emmc-sdhci-acpi",
        "hwloc-40intel64-4xeth-ib-2pciroots",
        "systemd-t60p-usbstorage-md-e1000e",
        "this-vm",
        "umockdev-intel-ehci-hubchain-kbd",
    ] {
        if let Some(t) = shared_tree(name) {
            json_of(
                headroom()
                    .args(["survey", "--dry-run", "--json", "--root"])
                    .arg(&t),
            );
        }
    }
}

#[test]
fn bad_input_is_a_usage_error() {
    for args in [
        vec!["survey", "--budget", "soon", "--dry-run"],
        vec!["survey", "--exclude", "gpu", "--dry-run"],
        vec!["survey", "--root", "/tmp"],
    ] {
        let err = fails_saying(headroom().args(&args), 2, "");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // A report that cannot be written is refused before anything runs, as a bad value
    // (exit 2, as bench disk refuses its --output).
    let out = headroom()
        .args(["survey", "--quick", "--output", "/nonexistent-dir/s.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

/// Test files in `dir` that no running process owns (`headroom-disk.PID.START.tmp` whose
/// PID is gone): what an interrupted run would leave behind. Files of live processes are
/// other runs on this machine at the same time, not ours.
fn test_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("headroom-disk"))
                .filter(|n| {
                    let pid = n.split('.').nth(1).unwrap_or("");
                    !Path::new("/proc").join(pid).exists()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The disk parts' directories of this machine's plan.
fn disk_dirs() -> Vec<PathBuf> {
    let plan = json_of(headroom().args(["survey", "--dry-run", "--json", "--quick"]));
    plan["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "disk" && p["run"] == true)
        .map(|p| PathBuf::from(p["command"][2].as_str().unwrap()))
        .filter(|d| d.is_dir())
        .collect()
}

/// The surveys of this file write in the same directories and count the test files there, and
/// their latency parts use tracefs: one at a time, with every test that uses tracefs.
fn one_survey() -> std::sync::MutexGuard<'static, ()> {
    testsupport::tracefs_lock()
}

#[test]
fn a_short_survey_runs_and_reads_back_in_report_and_compare() {
    if !is_root() {
        // CI runs as root.
        testsupport::skip::skip("not root: the survey's latency parts need SCHED_FIFO");
        return;
    }
    let _one = one_survey();
    let dirs = disk_dirs();
    let before: Vec<Vec<String>> = dirs.iter().map(|d| test_files(d)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let out_json = tmp.path().join("survey.json");
    let html = tmp.path().join("survey.html");
    let out = headroom()
        .current_dir(tmp.path())
        .args([
            "survey",
            "--quick",
            "--budget",
            "60s",
            "--output",
            "survey.json",
            "--html",
            "survey.html",
            "--no-save",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The plan came first, on stderr, and fitted the budget.
    assert!(stderr.starts_with("Survey plan:"), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("headroom survey of"), "{text}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    assert_eq!(doc["kind"], "survey");
    assert_eq!(doc["interrupted"], false);
    // Every part ran or says why not.
    for p in doc["parts"].as_array().unwrap() {
        match p["status"].as_str().unwrap() {
            "ran" => assert!(p["document"].is_object(), "{p:#}"),
            _ => assert!(p["reason"].as_str().is_some_and(|r| !r.is_empty()), "{p:#}"),
        }
    }
    let ran: Vec<&str> = doc["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "ran")
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        ran.contains(&"audit") && ran.contains(&"latency idle") && ran.contains(&"latency stress"),
        "{ran:?}"
    );
    // The latency parts split each wake-up into IRQ and thread latency where the kernel
    // allows it (as root, with tracefs), and say what delayed them.
    if testsupport::process::is_root()
        && std::path::Path::new("/sys/kernel/tracing/events/timer/hrtimer_start").exists()
    {
        for p in doc["parts"].as_array().unwrap() {
            if p["kind"] == "latency" && p["status"] == "ran" {
                let split = &p["document"]["split"];
                assert_eq!(split["source"], "tracepoints", "{}", p["id"]);
                assert!(split["total"]["matched"].as_u64().unwrap() > 0, "{split}");
            }
        }
    }
    assert!(!doc["summary"].as_str().unwrap().is_empty());
    let html_text = std::fs::read_to_string(&html).unwrap();
    assert!(
        html_text.contains("Survey of") && html_text.contains("<svg"),
        "no plots in the HTML"
    );
    // report and compare read it back.
    let rep = stdout_of(headroom().arg("report").arg(&out_json));
    assert!(String::from_utf8_lossy(&rep).contains("## Conclusions, by what they cost"));
    let cmp = stdout_of(headroom().arg("compare").arg(&out_json).arg(&out_json));
    assert!(String::from_utf8_lossy(&cmp).contains("# Surveys compared"));
    // Nothing left behind in any filesystem it wrote to.
    for (d, b) in dirs.iter().zip(&before) {
        assert_eq!(&test_files(d), b, "test file left in {}", d.display());
    }
}

/// Processes still in process group `pgid` (the survey, its parts, their stress workers).
fn group_members(pgid: i32) -> Vec<i32> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Field 5 is the process group; the command in field 2 may hold spaces: skip past it.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            && fields.first() != Some(&"Z")
        {
            left.push(pid);
        }
    }
    left
}

#[test]
fn ctrl_c_at_random_points_keeps_a_valid_partial_document_and_leaves_nothing() {
    if !is_root() {
        testsupport::skip::skip("not root (CI runs as root)");
        return;
    }
    let _one = one_survey();
    let dirs = disk_dirs();
    let before: Vec<Vec<String>> = dirs.iter().map(|d| test_files(d)).collect();
    let tmp = tempfile::tempdir().unwrap();
    // Deterministic "random" points (a linear congruential sequence) spread over the first
    // 7 s, where the audit, the disk part and the idle latency part run.
    let mut x: u64 = 0x2545_f491;
    for round in 0..20 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let at = Duration::from_millis(200 + (x >> 33) % 7000);
        let out = tmp.path().join(format!("s{round}.json"));
        let mut child = headroom_process()
            .args([
                "survey",
                "--quick",
                "--budget",
                "20s",
                "--no-save",
                "--output",
            ])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group, as a terminal's foreground job: Ctrl-C reaches all of it.
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        std::thread::sleep(at);
        // SAFETY: signalling the group of our own child.
        unsafe {
            libc::killpg(pgid, libc::SIGINT);
        }
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "round {round}: no exit after Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // Interrupted (130), or done just before the signal (0).
        assert!(
            matches!(status.code(), Some(130) | Some(0)),
            "round {round} at {at:?}: {status:?}"
        );
        // The parts and their stress workers are gone too.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !group_members(pgid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            group_members(pgid).is_empty(),
            "round {round}: processes left: {:?}",
            group_members(pgid)
        );
        for (d, b) in dirs.iter().zip(&before) {
            assert_eq!(
                &test_files(d),
                b,
                "round {round}: test file left in {}",
                d.display()
            );
        }
        // The document, when the survey got as far as one part, is whole and says what ran.
        if out.exists() {
            let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap())
                .unwrap_or_else(|e| panic!("round {round}: partial document unreadable: {e}"));
            assert_eq!(doc["kind"], "survey");
            let parts = doc["parts"].as_array().unwrap();
            assert_eq!(parts.len(), doc["plan"]["parts"].as_array().unwrap().len());
            if status.code() == Some(130) {
                assert_eq!(doc["interrupted"], true, "round {round}");
            }
            for p in parts {
                assert!(
                    p["status"] == "ran" || p["reason"].is_string(),
                    "round {round}: {p:#}"
                );
            }
        }
    }
}

/// Kills the server when the test ends, also when it fails.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_network_part_measures_both_directions_against_a_server() {
    // A headroom server on loopback (an iperf3 server works the same: bench net speaks its
    // protocol); a port of its own so other tests' servers are not in the way, used once it
    // listens.
    let port = testsupport::net::free_port();
    let _server = Server(
        headroom_process()
            .args(["bench", "net", "--server", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    testsupport::net::wait_listening(port);
    // The budget leaves room (the parts are 2 x 6 s at --quick's default times): a part
    // slowed down by a loaded machine is not cut short by it.
    let doc = json_of(headroom().args([
        "survey",
        "--quick",
        "--budget",
        "60s",
        "--include",
        "net",
        "--no-save",
        "--json",
        "--net",
        "127.0.0.1",
        "--net-port",
        &port.to_string(),
    ]));
    let parts = doc["parts"].as_array().unwrap();
    for id in ["net 127.0.0.1 send", "net 127.0.0.1 receive"] {
        let p = parts
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{doc:#}"));
        assert_eq!(p["status"], "ran", "{p:#}");
        assert_eq!(p["document"]["kind"], "net", "{p:#}");
    }
    // Everything else was left out by --include, with the reason (or by the plan itself:
    // a RAM disk someone configured on this machine is no storage hardware).
    for p in parts.iter().filter(|p| p["kind"] != "net") {
        assert_eq!(p["status"], "not_run");
        let why = p["reason"].as_str().unwrap();
        assert!(
            why.contains("--include net") || why.contains("not storage hardware"),
            "{p:#}"
        );
    }
    let summary = doc["summary"].as_str().unwrap();
    assert!(
        summary.contains("Network part net 127.0.0.1 send, TCP client -> server: ")
            && summary.contains("Network part net 127.0.0.1 receive, TCP server -> client: ")
            && summary.contains("Mbit/s"),
        "{summary}"
    );
}

/// A budget is a promise. `survey --budget 60s --quick` took
/// 81.3 s on the lab's aarch64 board: the plan was fitted once, up front, and parts that
/// overran took the later ones' time. A part that overruns here for sure: the network part
/// against a server that takes the connection and never answers (the client would wait
/// 10 s for it). At the end of the budget the part is stopped, the part after it is left
/// out with the reason, and the document says what each was planned and took.
#[test]
fn a_part_that_overruns_is_stopped_at_the_end_of_the_budget_and_the_rest_left_out() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("survey.md");
    let out = headroom()
        .args(["survey", "--quick", "--budget", "8s", "--include", "net"])
        .args([
            "--net",
            "127.0.0.1",
            "--net-port",
            &port,
            "--no-save",
            "--json",
        ])
        .arg("--md")
        .arg(&md)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let part = |id: &str| {
        doc["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {doc:#}"))
            .clone()
    };
    // The plan gave each direction 3.5 s (1 s to start, -t 3) of the 8 s but the survey's
    // last second, kept for stopping a part that runs late and writing the document.
    let send = part("net 127.0.0.1 send");
    assert_eq!(send["status"], "interrupted", "{send:#}");
    assert_eq!(send["planned_s"], 3.5, "{send:#}");
    assert!(send["seconds"].as_f64().unwrap() > 3.5, "{send:#}");
    let why = send["reason"].as_str().unwrap();
    assert!(
        why.starts_with("stopped at the end of the 8 s budget")
            && why.ends_with("before it had measured anything"),
        "{why}"
    );
    // How long it took to stop is said, in the document and the reason: the one time a
    // survey may run past its budget. Never more than the stop and the survey's 200 ms poll.
    let stopping = send["stopping_s"].as_f64().unwrap();
    assert!(
        why.contains(&format!(
            "(it took {} to stop)",
            model::survey::format_seconds(stopping)
        )),
        "{why}"
    );
    assert!(
        doc["seconds"].as_f64().unwrap() <= 8.0 + stopping + 0.3,
        "{doc:#}"
    );
    let receive = part("net 127.0.0.1 receive");
    assert_eq!(receive["status"], "not_run", "{receive:#}");
    let why = receive["reason"].as_str().unwrap();
    assert!(
        why.starts_with("left out as the survey ran: the parts before it took")
            && why.contains("more than estimated")
            && why.contains("left of the 8 s budget leave no room for it"),
        "{why}"
    );
    // Planned against actual, in the document and its report.
    assert_eq!(doc["plan"]["budget_s"], 8.0);
    let took = doc["seconds"].as_f64().unwrap();
    assert!(took >= send["seconds"].as_f64().unwrap(), "{doc:#}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains(&format!(
            "budget 8 s, took {}",
            model::survey::format_seconds(took)
        )) && (stopping < 0.5 || md.contains("net 127.0.0.1 send took ")),
        "{md}"
    );
    assert!(
        md.contains("| Part | Status | Planned (s) | Took (s) | What, or why not |"),
        "{md}"
    );
    drop(silent);
}

/// The plan printed before a survey is what each part gets: a part that ends early (the
/// audit, estimated at 2 s, takes a fraction of it here) leaves its time unused instead of
/// lengthening the next parts, which squeezed the last one into a stop at the budget's end.
/// The report prints as text, as every command does (Markdown with `--md`), and the history
/// listing counts the parts as the report's parts table does.
#[test]
fn each_part_gets_at_most_what_the_plan_gave_it() {
    let port = testsupport::net::free_port();
    let _server = Server(
        headroom_process()
            .args(["bench", "net", "--server", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    testsupport::net::wait_listening(port);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    // --quick's network parts (1 s to start and 5 s each way) and the audit's 2 s do not fit
    // in 12 s: the plan gives each direction 4 s to measure.
    let out = headroom()
        .current_dir(dir.path())
        .args([
            "survey",
            "--quick",
            "--budget",
            "12s",
            "--include",
            "audit,net",
        ])
        .args(["--net", "127.0.0.1", "--net-port", &port.to_string()])
        .args(["--output", "s.json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    let plan = &doc["plan"];
    assert!(plan["scale"].as_f64().unwrap() < 1.0, "{plan:#}");
    for p in doc["parts"].as_array().unwrap() {
        if p["status"] == "not_run" {
            continue;
        }
        let (planned, given) = (p["planned_s"].as_f64(), p["given_s"].as_f64());
        assert!(
            given.unwrap_or(0.0) <= planned.unwrap() + 1e-9,
            "{} was planned {planned:?} s and given {given:?} s",
            p["id"]
        );
    }
    // Text, not Markdown.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("headroom survey of"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with('#') || l.starts_with('|')),
        "{text}"
    );
    // The history listing and the parts table count alike.
    let report = String::from_utf8(stdout_of(
        headroom().arg("report").arg("1").arg("--db").arg(&db),
    ))
    .unwrap();
    let counts = report
        .lines()
        .find_map(|l| l.strip_prefix("## Parts: "))
        .unwrap_or_else(|| panic!("{report}"));
    let list =
        String::from_utf8(stdout_of(headroom().arg("history").arg("--db").arg(&db))).unwrap();
    let parts = doc["parts"].as_array().unwrap().len();
    assert!(
        list.contains(&format!("survey ({parts} parts: {counts})")),
        "{counts}\n{list}"
    );
    assert!(text.contains(&format!("\nParts: {counts}\n")), "{text}");

    // `--md` alone: the report as Markdown on stdout.
    let md = String::from_utf8(stdout_of(headroom().args([
        "survey",
        "--budget",
        "10s",
        "--include",
        "audit",
        "--no-save",
        "--md",
    ])))
    .unwrap();
    assert!(md.starts_with("# headroom survey of"), "{md}");
    assert!(md.contains("\n## audit\n"), "{md}");
}
