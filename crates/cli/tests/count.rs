//! `headroom count` as a user runs it, against `perf stat` (Debian's linux-perf) on the
//! events this VM has: software counters and tracepoints (no hardware PMU here), PCIe PMUs
//! from fixture trees, bad input in perf's words.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use serde_json::Value;
use std::process::Command as Std;
use testsupport::cmd::*;
use testsupport::process::{signal, wait_exit, wait_until};

fn fixture(name: &str) -> String {
    testsupport::fixtures::own(name).display().to_string()
}

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("headroom")
        .display()
        .to_string()
}

/// `headroom --json count -o FILE ARGS`: the document as the user gets it in FILE (the
/// counts never go to stdout, which belongs to the command).
fn count_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("count.json");
    output_ok(
        headroom()
            .args(["--json", "count", "-o", file.to_str().unwrap()])
            .args(args),
    );
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
}

fn have_perf() -> bool {
    let ok = Std::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        // CI installs it (.ci/run): there a missing perf is a failure, not a skip.
        testsupport::skip::skip("perf (linux-perf) is not installed");
    }
    ok
}

/// `value,unit,event,...` lines of perf's or headroom's `-x,` output, by event name.
fn csv_values(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 5 {
                return None;
            }
            Some((f[2].to_string(), f[0].parse().ok()?))
        })
        .collect()
}

fn value_of(rows: &[(String, f64)], name: &str) -> f64 {
    rows.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
        .1
}

fn within_1_percent(ours: f64, perf: f64, what: &str) {
    let err = (ours - perf).abs() / perf;
    assert!(
        err <= 0.01,
        "{what}: headroom {ours} vs perf {perf} ({:.3} %)",
        err * 100.0
    );
}

/// One event of `perf stat -j`: (counter value, metric value), e.g. task-clock's msec and
/// its "CPUs utilized".
fn perf_json_event(stderr: &str, name: &str) -> (f64, f64) {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == name)
        .map(|v| {
            let value = v["counter-value"].as_str().unwrap().parse().unwrap();
            (value, v["metric-value"].as_f64().unwrap())
        })
        .unwrap_or_else(|| panic!("no {name} in perf's output: {stderr}"))
}

#[test]
fn software_events_agree_with_perf_stat() {
    if !have_perf() {
        return;
    }
    // perf stat counts headroom and the workload (its counters follow headroom's fork),
    // headroom's count the workload alone, in the same run: perf's number is headroom's
    // plus headroom's own share, never less.
    let dir = tempfile::tempdir().unwrap();
    let ours_file = dir.path().join("ours.json");
    let out = output_ok(
        assert_cmd::Command::new("perf")
            .args(["stat", "-j", "-e", "task-clock,context-switches", "--"])
            .args([&bin(), "--json", "count", "--no-save", "-o"])
            .arg(&ours_file)
            .args(["-e", "task-clock,context-switches", "--"])
            .args(["perf", "bench", "sched", "pipe", "-l", "200000"])
            .env("NO_COLOR", "1"),
    );
    let perf = String::from_utf8_lossy(&out.stderr);
    let ours: Value = serde_json::from_str(&std::fs::read_to_string(&ours_file).unwrap()).unwrap();
    let ours_of = |name: &str| {
        ours["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_f64())
            .unwrap_or_else(|| panic!("no {name} in {ours:#}"))
    };
    // task-clock, ms. headroom's own share is CPU time of headroom (one thread: it blocks in
    // wait4 while the workload runs) and of its child between fork and exec, where counting
    // starts. Neither can run longer than it exists outside the workload's run: perf's
    // elapsed time (task-clock / "CPUs utilized") less the workload's (headroom's
    // elapsed_s, from just before it starts the command to its exit), twice for the two
    // tasks. A bound from the run itself, however loaded the machine: CPU time, unlike a
    // fixed share, does not grow past the time that passed.
    let (perf_ms, cpus_utilized) = perf_json_event(&perf, "task-clock");
    let ours_ms = ours_of("task-clock");
    let perf_elapsed_ms = perf_ms / cpus_utilized;
    let outside_ms = perf_elapsed_ms - ours["elapsed_s"].as_f64().unwrap() * 1e3;
    let share_ms = perf_ms - ours_ms;
    // The child's CPU between fork and exec falls inside headroom's elapsed time (it starts
    // just before the fork), so the bound above leaves it out: a fork and an exec take a few
    // milliseconds of CPU at most, however loaded the machine (CPU time, not time waited).
    const FORK_EXEC_CPU_MS: f64 = 5.0;
    assert!(
        share_ms >= -0.01 && share_ms <= 2.0 * outside_ms.max(0.0) + FORK_EXEC_CPU_MS,
        "task-clock: headroom {ours_ms} ms, perf {perf_ms} ms: a share of {share_ms:.3} ms \
         for headroom, which ran {outside_ms:.3} ms outside the workload"
    );
    // Context switches: headroom's own are the few times it waits (the command's start, its
    // end, writing the file) and its preemptions while it runs, at most one per scheduler
    // tick of those few milliseconds: far under 1 % of the workload's 400,000.
    let (perf_cs, _) = perf_json_event(&perf, "context-switches");
    let ours_cs = ours_of("context-switches");
    assert!(
        ours_cs <= perf_cs && perf_cs - ours_cs <= perf_cs * 0.01,
        "context-switches: headroom {ours_cs} vs perf {perf_cs}"
    );
    assert!(ours_cs > 200_000.0, "{ours:#}");
}

#[test]
fn page_faults_and_a_syscall_tracepoint_match_perf_stat() {
    if !have_perf() {
        return;
    }
    // A 32 MiB buffer faults in 8192 pages: deterministic, so separate runs agree.
    let workload = ["dd", "if=/dev/zero", "of=/dev/null", "bs=32M", "count=1"];
    let events = "page-faults,syscalls:sys_enter_write";
    let p = Std::new("perf")
        .args(["stat", "-x,", "-e", events, "--"])
        .args(workload)
        .output()
        .unwrap();
    let h = output_ok(
        headroom()
            .args(["count", "-x,", "-e", events, "--"])
            .args(workload),
    );
    let perf = csv_values(&String::from_utf8_lossy(&p.stderr));
    let ours = csv_values(&String::from_utf8_lossy(&h.stderr));
    within_1_percent(
        value_of(&ours, "page-faults"),
        value_of(&perf, "page-faults"),
        "page-faults",
    );
    assert!(value_of(&ours, "page-faults") > 8192.0);
    assert_eq!(
        value_of(&ours, "syscalls:sys_enter_write"),
        value_of(&perf, "syscalls:sys_enter_write"),
        "the same writes"
    );
}

#[test]
fn a_block_tracepoint_counts_the_disk_benchmarks_requests() {
    // A file on the real disk (not tmpfs) read with O_DIRECT 4 KiB at QD1: one request each.
    let dir = disk_dir("headroom-count-test");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![0x5a; 4 << 20]).unwrap();
    // Written back before the count: an O_DIRECT read of a file with dirty pages in the
    // page cache first writes them out from the reading process (filemap_write_and_wait),
    // which the process-scoped tracepoint would count as extra requests.
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    // The document goes to a memory filesystem: creating a file on the disk's filesystem
    // may read its inode and block bitmaps from the counted process.
    let out = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let json = out.path().join("bench.json");
    // The program runs from the memory filesystem too: pages of a ~90 MB debug binary evicted
    // by other work come back by readahead, whose requests no fault counter sees.
    let exe = out.path().join("headroom");
    let exe = match std::fs::copy(bin(), &exe) {
        Ok(_) => exe.display().to_string(),
        Err(_) => bin(),
    };
    let bench = format!(
        "{} --json bench disk {} --rw randread --bs 4k --qd 1 --size 4M --engine psync --no-save > {}",
        exe,
        file.display(),
        json.display()
    );
    // Once outside the count: the programs' pages (a debug headroom is ~100 MB, evicted by a
    // build that just ran) come into the page cache here, not as requests during the count.
    let warm = std::process::Command::new("sh")
        .args(["-c", &bench])
        .status()
        .unwrap();
    assert!(warm.success());
    // The same events of the same command, counted by headroom and by perf.
    let counted = [
        "-x,",
        "-e",
        "block:block_getrq",
        "-e",
        "major-faults",
        "--",
        "sh",
        "-c",
        &bench,
    ];
    let h = output_ok(headroom().arg("count").args(counted));
    let rows = csv_values(&String::from_utf8_lossy(&h.stderr));
    let requests = value_of(&rows, "block:block_getrq");
    // A page of the programs evicted by other work on the machine comes back as a major fault,
    // which reads the disk from the counted processes: those requests are explained, not error.
    let faults = value_of(&rows, "major-faults");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ios = doc["tests"][0]["runs"][0]["ios"].as_f64().unwrap();
    assert_eq!(ios, 1024.0);
    // Every I/O is a request; a page of the programs read from disk may add a few.
    assert!(
        requests >= ios && requests <= (ios + faults) * 1.01,
        "{requests} requests for {ios} I/Os and {faults} major faults"
    );
    if have_perf() {
        let p = Std::new("perf").arg("stat").args(counted).output().unwrap();
        let rows = csv_values(&String::from_utf8_lossy(&p.stderr));
        let perf = value_of(&rows, "block:block_getrq");
        let perf_faults = value_of(&rows, "major-faults");
        // The two runs agree within 1 % on the requests that are not page-ins of a program.
        let gap = (requests - perf).abs();
        assert!(
            gap <= 0.01 * perf + faults + perf_faults,
            "block:block_getrq: headroom {requests} ({faults} major faults) vs perf {perf} \
             ({perf_faults} major faults)"
        );
    }
}

#[test]
fn not_supported_and_csv_lines_are_perfs() {
    let text = stderr_of(headroom().args(["count", "-x,", "-e", "cycles,cs", "--", "true"]));
    // No hardware PMU in this VM: perf prints `<not supported>,,cycles,0,100.00,,`.
    assert!(
        text.starts_with("<not supported>,,cycles,0,100.00,,\n"),
        "{text}"
    );
    assert!(
        text.lines().nth(1).unwrap().ends_with(",,cs,") || text.contains(",,cs,"),
        "{text}"
    );
    let t = stderr_of(headroom().args(["count", "-e", "cycles", "--", "true"]));
    assert!(t.contains(" Performance counter stats for 'true':"), "{t}");
    assert!(t.contains("   <not supported>      cycles"), "{t}");
    assert!(t.contains(" seconds time elapsed"), "{t}");
}

#[test]
fn interval_prints_every_period_and_the_exit_code_is_the_commands() {
    let h = headroom()
        .args([
            "count",
            "-I",
            "100",
            "-e",
            "cs",
            "--",
            "sh",
            "-c",
            "sleep 0.35; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(h.status.code(), Some(3), "the command's exit code");
    let text = String::from_utf8_lossy(&h.stderr).into_owned();
    assert!(
        text.starts_with("#           time             counts unit events\n"),
        "{text}"
    );
    assert!(
        text.lines().filter(|l| l.ends_with(" cs")).count() >= 3,
        "{text}"
    );
}

#[test]
fn system_wide_json_is_a_count_document() {
    let doc = count_json(&["-a", "-e", "{cs,cpu-clock}", "--", "sleep", "0.2"]);
    assert_eq!(doc["kind"], "count");
    assert_eq!(doc["scope"], "system_wide");
    assert_eq!(doc["target"], "'system wide'");
    let ev = doc["events"].as_array().unwrap();
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["unit"], "msec");
    // cpu-clock on every CPU for 0.2 s: at least 0.2 s × CPUs × (nearly all of it).
    let cpus = doc["cpus"].as_array().unwrap().len() as f64;
    assert!(ev[1]["value"].as_f64().unwrap() > 150.0 * cpus, "{doc:#}");
}

#[test]
fn json_goes_to_stdout_the_commands_stdout_apart_and_report_reads_it() {
    // `headroom count --json -e cs -- true > j.out` left j.out empty (the
    // document went to stderr). The document is on stdout like every command's; the
    // command's own stdout goes to stderr, so the document stays one JSON document.
    let out = headroom()
        .args([
            "--json",
            "count",
            "-e",
            "cs,task-clock",
            "--",
            "echo",
            "hello",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "count");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "hello\n");
    // With -o FILE the document goes there and the command keeps its stdout.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counts.json");
    let kept = headroom()
        .args(["--json", "count", "-o", file.to_str().unwrap()])
        .args(["-e", "cs", "--", "echo", "hello"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&kept.stdout), "hello\n");
    let in_file: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(in_file["kind"], "count");
    // The help says where each goes.
    let help = String::from_utf8(stdout_of(headroom().args(["count", "--help"]))).unwrap();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("With --json the document goes to stdout")
            && help.contains("the command's own stdout is sent to stderr"),
        "{help}"
    );
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    std::fs::write(&a, &out.stdout).unwrap();
    std::fs::write(&b, &out.stdout).unwrap();
    let md = report_md(&a);
    assert!(md.contains("### Counters"), "{md}");
    assert!(md.contains("| task-clock |"), "{md}");
    let db = dir.path().join("history.sqlite");
    let db = db.to_str().unwrap();
    // As perf stat, count keeps nothing unless asked: `count -- true` in a loop must not fill
    // the history.
    let own_data = dir.path().join("xdg-data");
    output_ok(
        headroom()
            .env("XDG_DATA_HOME", &own_data)
            .args(["count", "-e", "cs", "--", "true"]),
    );
    let h = stdout_of(headroom().env("XDG_DATA_HOME", &own_data).args(["history"]));
    assert!(
        String::from_utf8_lossy(&h).starts_with("no runs saved"),
        "{}",
        String::from_utf8_lossy(&h)
    );
    let help = String::from_utf8(stdout_of(headroom().args(["count", "--help"]))).unwrap();
    assert!(
        help.contains("--save") && help.contains("unless --save is given"),
        "{help}"
    );
    output_ok(headroom().args([
        "count",
        "--save",
        "--db",
        db,
        "-e",
        "cs,page-faults",
        "--",
        "true",
    ]));
    let h = String::from_utf8(stdout_of(headroom().args(["history", "--db", db]))).unwrap();
    assert!(h.contains("count (2 events)") && h.contains("cs: "), "{h}");
    assert_eq!(
        h.lines().filter(|l| l.contains("count (")).count(),
        1,
        "{h}"
    );
    let cmp = String::from_utf8(stdout_of(headroom().arg("compare").arg(&a).arg(&b))).unwrap();
    assert!(cmp.contains("| cs (count) |"), "{cmp}");
    assert!(cmp.contains("task-clock (msec)"), "{cmp}");
}

/// The PCI address of the VM's disk (virtio-blk, the function behind /sys/block/vda); `None`
/// with a note where there is none.
fn vda_pci_address() -> Option<String> {
    let Ok(dev) = std::fs::canonicalize("/sys/block/vda/device/..") else {
        testsupport::skip::skip("no /sys/block/vda");
        return None;
    };
    Some(dev.file_name()?.to_string_lossy().into_owned())
}

#[test]
fn interrupts_per_second_of_a_device() {
    let Some(bdf) = vda_pci_address() else {
        return;
    };
    let dir = disk_dir("headroom-count-irq");
    let file = dir.path().join("d.bin");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let input = format!("if={}", file.display());
    let doc = count_json(&[
        "-e",
        "cs",
        "--irq",
        &bdf,
        "--",
        "dd",
        &input,
        "of=/dev/null",
        "iflag=direct",
        "bs=4k",
    ]);
    let irq = &doc["interrupts"][0];
    assert_eq!(irq["device"], bdf);
    // 256 direct reads complete with interrupts (virtio may coalesce some).
    assert!(irq["count"].as_u64().unwrap() >= 64, "{irq:#}");
    assert!(irq["per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn irq_counts_are_system_wide_and_a_short_run_gives_no_rate() {
    // `count --irq` over a 1 ms command printed "1591 /sec" (one or two
    // interrupts extrapolated) and never said it counts every CPU and every process.
    let Some(bdf) = vda_pci_address() else {
        return;
    };
    let err = stderr_of(headroom().args([
        "count",
        "--no-save",
        "-e",
        "cs",
        "--irq",
        &bdf,
        "--",
        "true",
    ]));
    let line = err
        .lines()
        .find(|l| l.contains("interrupts of"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(&format!("interrupts of {bdf}, system-wide (IRQ")),
        "{line}"
    );
    assert!(line.contains(": no rate from a run under 1 s"), "{line}");
    assert!(!line.contains("/sec"), "{line}");
    // A second's run gives the rate.
    let err = stderr_of(headroom().args([
        "count",
        "--no-save",
        "-e",
        "cs",
        "--irq",
        &bdf,
        "--",
        "sleep",
        "1.1",
    ]));
    assert!(
        err.contains("system-wide (IRQ") && err.contains(" /sec"),
        "{err}"
    );
}

/// The names `perf list` prints with `tag` (`Software event`, `Tracepoint event`).
fn perf_list(kind: &str, tag: &str) -> Vec<String> {
    let out = Std::new("perf").args(["list", kind]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&format!("[{tag}]")))
        .map(|l| l.split('[').next().unwrap().trim().to_string())
        .collect()
}

/// The names `headroom count --list` prints with `tag`.
fn our_list(text: &str, tag: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains(&format!("[{tag}]")))
        .map(|l| l.split('[').next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn list_has_the_software_events_and_tracepoints_perf_list_has() {
    // `count --list` printed the sysfs PMUs only (9 lines here), while
    // every "unknown event" error says "`headroom count --list` lists them".
    let t = String::from_utf8(stdout_of(headroom().args(["count", "--list"]))).unwrap();
    let ours = our_list(&t, "Software event");
    for e in [
        "context-switches OR cs",
        "task-clock",
        "page-faults OR faults",
    ] {
        assert!(ours.iter().any(|o| o == e), "{e} not in {ours:?}");
    }
    let tracepoints = our_list(&t, "Tracepoint event");
    // A captured tree lists its own tracefs.
    let fixture_list = String::from_utf8(stdout_of(headroom().args([
        "count",
        "--list",
        "--root",
        &fixture("pmu-core"),
    ])))
    .unwrap();
    assert!(
        our_list(&fixture_list, "Tracepoint event").contains(&"block:block_rq_issue".to_string()),
        "{fixture_list}"
    );
    if !have_perf() {
        return;
    }
    // Every software event perf counts and headroom knows, every tracepoint of this kernel.
    for e in perf_list("sw", "Software event") {
        if e != "bpf-output" && e != "dummy" {
            assert!(ours.contains(&e), "perf lists {e}; headroom: {ours:?}");
        }
    }
    if testsupport::process::is_root() {
        let perfs = perf_list("tracepoint", "Tracepoint event");
        let missing: Vec<&String> = perfs.iter().filter(|t| !tracepoints.contains(t)).collect();
        let extra: Vec<&String> = tracepoints.iter().filter(|t| !perfs.contains(t)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "perf lists but headroom not: {missing:?}; headroom but not perf: {extra:?}"
        );
        assert!(tracepoints.len() > 100, "{}", tracepoints.len());
    }
}

#[test]
fn list_joins_pcie_pmus_to_root_ports() {
    let out = headroom()
        .args(["count", "--list", "--root", &fixture("pmu-dwc-rootport")])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(t.contains("dwc_rootport_3018 (type 12), counts on CPU 0, PCIe dwc_rootport: named for root port 0000:30:03.0"), "{t}");
    assert!(
        t.contains("dwc_rootport_3018/rx_memory_read,lane=?/"),
        "{t}"
    );
    assert!(t.contains("pcie_bdf_200 (type 14), counts on CPU 0, PCIe vendor_pcie_bdf: named for root port 0000:02:00.0"), "{t}");
    let out = headroom()
        .args(["count", "--list", "--root", &fixture("pmu-hisi-pcie")])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(t.contains("hisi_pcie0_core1 (type 21), counts on CPU 0, PCIe hisi_pcie: routing IDs 7c:00.0..7c:1f.7"), "{t}");
    let out = headroom()
        .args([
            "--json",
            "count",
            "--list",
            "--root",
            &fixture("pmu-uncore-iio"),
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let iio = doc["pmus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "uncore_iio_free_running_1")
        .unwrap();
    assert_eq!(iio["link"]["covers"], "root bus 0000:16");
}

#[test]
fn a_root_port_without_pmu_gets_a_finding() {
    let root = fixture("sysfs/sd-nvme-downgraded-sata");
    let t = stdout_of(headroom().args(["count", "--list", "--root", &root]));
    let t = String::from_utf8_lossy(&t);
    assert!(
        t.contains("root port 0000:00:1c.0: no PMU counts this root port's traffic"),
        "{t}"
    );
    assert!(t.contains("not in dwc_pcie_pmu's RAS DES list"), "{t}");
}

fn fails_with(args: &[&str], code: i32, sentence: &str) {
    let err = fails_saying(headroom().args(args), code, sentence);
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
}

#[test]
fn bad_input_in_perfs_words() {
    let dwc = fixture("pmu-dwc-rootport");
    let on_dwc =
        |event: &'static str| -> Vec<&str> { vec!["--root", &dwc, "-e", event, "--", "true"] };
    let bad: [(Vec<&str>, i32, &str); 13] = [
        (
            vec!["-e", "foo/bar/", "--", "true"],
            2,
            "event syntax error: 'foo/bar/': Cannot find PMU `foo'. Missing kernel support?",
        ),
        (
            vec!["-e", "software/bar/", "--", "true"],
            2,
            "unknown term 'bar' for pmu 'software'",
        ),
        (
            vec!["-e", "block:nosuch", "--", "true"],
            2,
            "unknown tracepoint",
        ),
        (vec!["-e", "nosuchevent", "--", "true"], 2, "parser error"),
        (
            on_dwc("dwc_rootport_3018/rx_memory_read,lane=256/"),
            2,
            "value too big for format (lane), maximum is 255",
        ),
        (
            on_dwc("dwc_rootport_3018/rx_memory_read/"),
            2,
            "Required parameter 'lane' not specified",
        ),
        (
            on_dwc("dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload,eventid=0x10000/"),
            2,
            "value too big for format (eventid), maximum is 65535",
        ),
        (vec!["-e", "cs"], 2, "give a command after --"),
        (
            vec!["-I", "5", "-e", "cs", "--", "true"],
            2,
            "at least 10 ms",
        ),
        (
            vec!["-C", "x", "-e", "cs", "--", "true"],
            2,
            "-C x: not a CPU list",
        ),
        (
            vec!["--root", "no/such/dir", "--list"],
            2,
            "--root no/such/dir: no such directory",
        ),
        (
            vec!["-e", "cs", "--irq", "0000:99:00.0", "--", "true"],
            2,
            "no PCI device 0000:99:00.0",
        ),
        (
            vec!["-e", "cs", "--", "no-such-command-h7"],
            127,
            "Workload failed: `no-such-command-h7`: command not found",
        ),
    ];
    for (args, code, sentence) in bad {
        fails_with(&[&["count"][..], &args].concat(), code, sentence);
    }
}

#[test]
fn absurd_event_lists_are_refused_with_the_bound() {
    // 100,000 commas and 10,000 copies of one event were accepted silently
    // (10,000 counters opened for `cs`, 10,000 lines printed).
    let copies = vec!["cs"; 10_000].join(",");
    let err = fails_saying(
        headroom().args(["count", "--no-save", "-e", &copies, "--", "true"]),
        2,
        "more than 256 events given: headroom counts at most 256 in one run, since a PMU has a \
         few counters",
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Over several -e too.
    let mut args = vec!["count", "--no-save"];
    for _ in 0..300 {
        args.extend(["-e", "cs"]);
    }
    args.extend(["--", "true"]);
    fails_saying(headroom().args(&args), 2, "more than 256 events given");
    // 100,000 commas: perf's parser error, and the text is not echoed back whole.
    let commas = format!("cs{}cs", ",".repeat(100_000));
    let err = fails_saying(
        headroom().args(["count", "--no-save", "-e", &commas, "--", "true"]),
        2,
        "parser error: an empty event",
    );
    assert!(
        err.len() < 500 && err.contains("(100004 characters)"),
        "{err}"
    );
    for bad in ["cs,", ",cs", "{}", "{cs,}"] {
        fails_saying(
            headroom().args(["count", "--no-save", "-e", bad, "--", "true"]),
            2,
            "parser error",
        );
    }
    // Within the bound all is counted, perf's way.
    let ok = vec!["cs"; 256].join(",");
    let out =
        output_ok(headroom().args(["count", "--no-save", "-x", ",", "-e", &ok, "--", "true"]));
    assert_eq!(csv_values(&String::from_utf8_lossy(&out.stderr)).len(), 256);
}

/// perf_event_paranoid set for a test and put back when it ends (also when it fails); tests
/// that depend on it hold PARANOID so they never see each other's setting.
struct Paranoid(String);

static PARANOID: std::sync::Mutex<()> = std::sync::Mutex::new(());
const PARANOID_FILE: &str = "/proc/sys/kernel/perf_event_paranoid";

impl Paranoid {
    fn set(level: i32) -> Paranoid {
        let old = std::fs::read_to_string(PARANOID_FILE).unwrap();
        std::fs::write(PARANOID_FILE, level.to_string()).unwrap();
        Paranoid(old.trim().to_string())
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        let _ = std::fs::write(PARANOID_FILE, &self.0);
    }
}

#[test]
fn an_unprivileged_user_counts_in_user_space_as_perf_does() {
    // As a user with perf_event_paranoid 2 the default events failed
    // ("No permission to enable task-clock event") where perf stat counts them in user space
    // only (`task-clock:u`); a tracepoint tracefs does not let the user read was "event
    // syntax error" (exit 2).
    let Some(mut ours) = testsupport::process::as_nobody(&assert_cmd::cargo::cargo_bin("headroom"))
    else {
        return;
    };
    let _one_at_a_time = PARANOID.lock().unwrap_or_else(|e| e.into_inner());
    let _paranoid = Paranoid::set(2);
    let out = ours
        .args(["count", "--no-save", "-x", ",", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "perf_event_paranoid is 2 (kernel profiling needs root or CAP_PERFMON): the events \
             are counted in user space only, as perf stat falls back (task-clock:u, \
             context-switches:u"
        ),
        "{err}"
    );
    let rows = csv_values(&err);
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "task-clock:u",
            "context-switches:u",
            "cpu-migrations:u",
            "page-faults:u"
        ],
        "the software events counted, named as perf names them: {err}"
    );
    assert!(value_of(&rows, "page-faults:u") > 0.0, "{err}");
    if have_perf() {
        // perf stat as the same user falls back the same way and prints the same names.
        let perf = testsupport::process::as_nobody(std::path::Path::new("/usr/bin/perf"))
            .unwrap()
            .args(["stat", "-x", ",", "--", "true"])
            .output()
            .unwrap();
        let perf_rows = csv_values(&String::from_utf8_lossy(&perf.stderr));
        let perf_names: Vec<&str> = perf_rows.iter().map(|(n, _)| n.as_str()).collect();
        for n in &names {
            assert!(
                perf_names.contains(n),
                "perf: {perf_names:?}, headroom: {names:?}"
            );
        }
    }
    // The document names them the same and keeps the sentence.
    let doc = testsupport::process::as_nobody(&assert_cmd::cargo::cargo_bin("headroom"))
        .unwrap()
        .args(["--json", "count", "--no-save", "-e", "cs", "--", "true"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&doc.stdout).unwrap();
    assert_eq!(doc["events"][0]["name"], "cs:u");
    assert!(
        doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("user space only"),
        "{doc:#}"
    );
    // A tracepoint: where tracefs is root's alone, a permission sentence (exit 1), not a
    // syntax error; where it is readable, perf's fallback again.
    let tracefs_private = std::fs::metadata("/sys/kernel/tracing")
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o005 == 0)
        .unwrap_or(false);
    let tp = testsupport::process::as_nobody(&assert_cmd::cargo::cargo_bin("headroom"))
        .unwrap()
        .args([
            "count",
            "--no-save",
            "-e",
            "sched:sched_switch",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&tp.stderr);
    if tracefs_private {
        assert_eq!(tp.status.code(), Some(1), "{err}");
        assert!(
            err.contains(
                "sched:sched_switch: no permission to read \
                 /sys/kernel/tracing/events/sched/sched_switch/id"
            ) && err.contains("run as root"),
            "{err}"
        );
        assert!(!err.contains("syntax error"), "{err}");
    } else {
        assert_eq!(tp.status.code(), Some(0), "{err}");
        assert!(err.contains("sched:sched_switch:u"), "{err}");
    }
}

#[test]
fn no_permission_says_what_to_do() {
    let Some(mut ours) = testsupport::process::as_nobody(&assert_cmd::cargo::cargo_bin("headroom"))
    else {
        return;
    };
    // At 1, system-wide counting is refused and perf has no fallback for it.
    let _one_at_a_time = PARANOID.lock().unwrap_or_else(|e| e.into_inner());
    let _paranoid = Paranoid::set(1);
    let out = ours
        .args(["count", "--no-save", "-a", "-e", "cs", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("No permission to enable cs event: perf_event_paranoid is 1"),
        "{err}"
    );
}

#[test]
fn bench_disk_reports_the_interrupts_of_its_path() {
    let Some(bdf) = vda_pci_address() else {
        return;
    };
    let dir = disk_dir("headroom-count-bench");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    let doc = json_of(
        headroom()
            .args(["--json", "bench", "disk"])
            .arg(&file)
            .args([
                "--rw",
                "randread",
                "--bs",
                "4k",
                "--qd",
                "1",
                "--size",
                "4M",
                "--engine",
                "psync",
                "--no-save",
            ]),
    );
    let ios = doc["tests"][0]["runs"][0]["ios"].as_u64().unwrap();
    let irq = doc["counters"]["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["device"] == bdf)
        .unwrap_or_else(|| panic!("no interrupts of {bdf}: {:#}", doc["counters"]));
    // QD1 O_DIRECT: each read completes with an interrupt (other traffic only adds).
    assert!(
        irq["count"].as_u64().unwrap() >= ios / 2,
        "{irq:#} for {ios} I/Os"
    );
    assert!(irq["per_second"].as_f64().unwrap() > 0.0);
    // No PCIe PMU on a virtio VM: none claimed.
    assert!(doc["counters"]["pmu"].is_null());
    // The report carries the counter column.
    let saved = dir.path().join("disk.json");
    std::fs::write(&saved, doc.to_string()).unwrap();
    let md = report_md(&saved);
    assert!(md.contains(&format!("| interrupts of {bdf} |")), "{md}");
}

#[test]
fn a_pmu_that_vanished_is_one_sentence_and_the_rest_is_counted() {
    // The fixture lists dwc_rootport_3018 (type 12); this kernel has no such PMU, as after
    // the driver is unloaded between listing and counting.
    let root = fixture("pmu-dwc-rootport");
    let err = stderr_of(
        headroom()
            .args(["count", "--root", &root, "-C", "0", "-x,"])
            .args(["-e", "dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/,cs"])
            .args(["--", "true"]),
    );
    assert!(
        err.contains("the running kernel has no PMU dwc_rootport_3018 of type 12 (it vanished"),
        "{err}"
    );
    assert!(
        err.contains("<not supported>,B,dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/,0,100.00,,"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.ends_with(",,cs,") || l.contains(",,cs,")),
        "{err}"
    );
}

/// Ctrl-C or SIGTERM ends a system-wide count with its numbers and exits 128 + the signal
/// (SIGTERM said 130).
#[test]
fn ctrl_c_ends_a_system_wide_count_with_its_numbers() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counts.txt");
        let mut child = headroom_process()
            .args(["count", "-a", "-e", "cs", "-o", file.to_str().unwrap()])
            .spawn()
            .unwrap();
        // -o's file is made once the Ctrl-C handler is in place.
        assert!(
            wait_until(std::time::Duration::from_secs(60), || file.exists()),
            "count never created {}",
            file.display()
        );
        signal(&child, sig);
        let status = wait_exit(&mut child, std::time::Duration::from_secs(30));
        assert_eq!(status.code(), Some(code), "signal {sig}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(" Performance counter stats for 'system wide':"),
            "{text}"
        );
        assert!(text.lines().any(|l| l.ends_with(" cs")), "{text}");
    }
}

/// `-o FILE` was opened after the counted command had started, so
/// a name that cannot be written failed only after the command ran (and did its work, once
/// for nothing). It is checked first, as every benchmark checks --output: a usage error
/// (exit 2) with the sentence of `bench --output`, and the command never runs.
#[test]
fn a_bad_output_file_is_refused_before_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let touch = ["--", "touch", ran.to_str().unwrap()];
    let missing = dir.path().join("no/such/dir/c.txt");
    let missing = missing.to_str().unwrap();
    let here = dir.path().to_str().unwrap();
    for (o, sentence, code) in [
        (
            missing,
            format!(
                "-o {missing}: the directory {} does not exist; create it or choose another place",
                dir.path().join("no/such/dir").display()
            ),
            2,
        ),
        (
            here,
            format!(
                "-o {here} is a directory: give a file name, e.g. {}",
                dir.path().join("counts.txt").display()
            ),
            2,
        ),
    ] {
        fails_saying(
            headroom().args(["count", "-e", "cs", "-o", o]).args(touch),
            code,
            &sentence,
        );
        assert!(!ran.exists(), "-o {o}: the command ran");
    }
    // What only opening the file can refuse (a link planted in its place) is refused before
    // the command runs too.
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    fails_saying(
        headroom()
            .args(["count", "-e", "cs", "-o", link.to_str().unwrap()])
            .args(touch),
        1,
        "it is a symbolic link, which headroom does not follow",
    );
    assert!(!ran.exists(), "-o LINK: the command ran");
    assert!(!dir.path().join("elsewhere").exists());
}

/// perf's own linter of `perf stat -j` (tools/perf/tests/shell/lib/perf_json_output_lint.py,
/// shipped by Debian's linux-perf for `perf test`).
const PERF_JSON_LINT: &str = "/usr/lib/perf-core/tests/shell/lib/perf_json_output_lint.py";

/// Run perf's JSON linter with `mode` (`--no-args`, `--interval`, ...) on `lines`; its
/// verdict and what it said.
fn perf_json_lint(mode: &str, lines: &str) -> (bool, String) {
    let out = fed(
        Std::new("python3").args([PERF_JSON_LINT, mode]),
        lines.as_bytes(),
    );
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// perf's lines and headroom's of the same events in one run: `perf stat FLAGS -e EVENTS --
/// headroom count FLAGS -e EVENTS -o FILE -- WORKLOAD` (perf counts headroom too).
fn side_by_side(flags: &[&str], events: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.txt");
    let out = output_ok(
        assert_cmd::Command::new("perf")
            .arg("stat")
            .args(flags)
            .args(["-e", events, "--"])
            .args([&bin(), "count", "--no-save", "-o"])
            .arg(&ours)
            .args(flags)
            .args(["-e", events, "--"])
            .args(["dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "count=50000"])
            .env("NO_COLOR", "1"),
    );
    let perf = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with('{') || l.contains(','))
        .filter(|l| {
            !l.contains("records in") && !l.contains("records out") && !l.contains("copied")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    (perf, std::fs::read_to_string(&ours).unwrap())
}

/// A JSON line's keys in order and its event.
fn keys_and_event(line: &str) -> (Vec<String>, String) {
    // Keys in the order written: serde_json's map keeps no order without a feature, so
    // read them off the text (`"key" : value, ...`).
    let keys = line
        .trim_matches(|c| c == '{' || c == '}')
        .split(", \"")
        .map(|kv| {
            kv.trim_start_matches('"')
                .split('"')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let v: Value = serde_json::from_str(line).unwrap();
    (keys, v["event"].as_str().unwrap().to_string())
}

/// `/sec`, `K/sec`, `M/sec` are one unit at different magnitudes.
fn metric_kind(unit: &str) -> &str {
    unit.trim_start_matches(['K', 'M', 'G'])
}

#[test]
fn json_and_csv_lines_pass_perfs_own_checks_beside_perf() {
    if !have_perf() {
        return;
    }
    if !testsupport::skip::unless(
        std::path::Path::new(PERF_JSON_LINT).exists(),
        "perf's perf_json_output_lint.py (linux-perf) is missing",
    ) {
        return;
    }
    let events = "task-clock,context-switches,page-faults,sched:sched_switch,cycles";
    // -j, plain and with -I: perf's linter (7 keys, 8 with `interval`) on headroom's lines,
    // and perf's own lines of the same run have the same keys and units.
    for (flags, mode) in [
        (&["-j"][..], "--no-args"),
        (&["-j", "-I", "100"][..], "--interval"),
    ] {
        let (perf, ours) = side_by_side(flags, events);
        let (ok, said) = perf_json_lint(mode, &ours);
        assert!(ok, "perf's linter {mode} refused headroom's lines: {said}");
        let (ok, said) = perf_json_lint(mode, &perf);
        assert!(ok, "perf's linter {mode} refused perf's own lines: {said}");
        let theirs: Vec<(Vec<String>, String)> = perf.lines().map(keys_and_event).collect();
        let mine: Vec<(Vec<String>, String)> = ours.lines().map(keys_and_event).collect();
        assert!(!mine.is_empty(), "{ours}");
        if flags.len() == 1 {
            assert_eq!(
                mine.iter().map(|m| &m.1).collect::<Vec<_>>(),
                theirs.iter().map(|t| &t.1).collect::<Vec<_>>(),
                "events\n{ours}\n{perf}"
            );
        }
        for (line, (keys, event)) in ours.lines().zip(&mine) {
            let same = theirs.iter().find(|t| &t.1 == event).unwrap();
            assert_eq!(keys, &same.0, "{event}: keys\n{ours}\n{perf}");
            let v: Value = serde_json::from_str(line).unwrap();
            let p: Value = serde_json::from_str(
                perf.lines()
                    .find(|l| keys_and_event(l).1 == *event)
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(v["unit"], p["unit"], "{event}: unit");
            // Each has its own -I timer: an interval one of them did not count says nothing.
            let counted = |x: &Value| !x["counter-value"].as_str().unwrap().starts_with('<');
            if !counted(&v) || !counted(&p) {
                continue;
            }
            assert_eq!(
                metric_kind(v["metric-unit"].as_str().unwrap()),
                metric_kind(p["metric-unit"].as_str().unwrap()),
                "{event}: metric\n{ours}\n{perf}"
            );
        }
        if flags.len() == 1 {
            // The derived columns are headroom's own counts set against each other as perf
            // sets them: "/sec" per second of task-clock, "CPUs utilized" over the wall time.
            let value = |name: &str, key: &str| -> f64 {
                let l = ours.lines().find(|l| keys_and_event(l).1 == name).unwrap();
                let v: Value = serde_json::from_str(l).unwrap();
                match &v[key] {
                    Value::String(s) => s.parse().unwrap(),
                    x => x.as_f64().unwrap(),
                }
            };
            let clock_ns = value("task-clock", "counter-value") * 1e6;
            let faults = value("page-faults", "counter-value");
            let scale = match ours
                .lines()
                .find(|l| keys_and_event(l).1 == "page-faults")
                .unwrap()
            {
                l if l.contains("\"K/sec\"") => 1e3,
                l if l.contains("\"M/sec\"") => 1e6,
                _ => 1.0,
            };
            let per_s = value("page-faults", "metric-value") * scale;
            assert!(
                (per_s - faults * 1e9 / clock_ns).abs() <= 1e-6 * per_s.max(1.0) + 1e-3,
                "page-faults /sec: {per_s} vs {faults} over {clock_ns} ns\n{ours}"
            );
            assert!(value("task-clock", "metric-value") > 0.0, "{ours}");
        }
    }
    // -x,: perf's stat+csv_output.sh counts 6 separators per line, 7 with -I (the time);
    // perf's own lines of the same run have as many, and the same units and metric units.
    for (flags, commas) in [(&["-x,"][..], 6), (&["-x,", "-I", "100"][..], 7)] {
        let (perf, ours) = side_by_side(flags, events);
        assert!(!ours.is_empty());
        for line in ours.lines().chain(perf.lines()) {
            assert_eq!(
                line.matches(',').count(),
                commas,
                "{flags:?}: {line:?}\nheadroom:\n{ours}\nperf:\n{perf}"
            );
        }
        let field = |l: &str, i: usize| l.split(',').nth(i).unwrap_or("").to_string();
        let off = usize::from(flags.contains(&"-I"));
        for line in ours.lines() {
            let event = field(line, 2 + off);
            let theirs = perf
                .lines()
                .find(|l| field(l, 2 + off) == event)
                .unwrap_or_else(|| panic!("{event} not in perf's lines:\n{perf}"));
            assert_eq!(
                field(line, 1 + off),
                field(theirs, 1 + off),
                "{event}: unit"
            );
            if !field(line, off).starts_with('<') && !field(theirs, off).starts_with('<') {
                assert_eq!(
                    metric_kind(&field(line, 6 + off)),
                    metric_kind(&field(theirs, 6 + off)),
                    "{event}: metric unit\n{ours}\n{perf}"
                );
            }
        }
    }
    // Text: perf's derived columns, the `#` in the same column as perf's.
    let (perf, ours) = {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ours.txt");
        let out = output_ok(
            assert_cmd::Command::new("perf")
                .args(["stat", "-e", events, "--"])
                .args([&bin(), "count", "--no-save", "-o"])
                .arg(&file)
                .args(["-e", events, "--", "sleep", "0.1"]),
        );
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            std::fs::read_to_string(&file).unwrap(),
        )
    };
    for event in ["task-clock", "context-switches", "sched:sched_switch"] {
        let find = |text: &str| -> String {
            text.lines()
                .find(|l| l.split_whitespace().any(|w| w == event))
                .unwrap_or_else(|| panic!("no {event} in\n{text}"))
                .to_string()
        };
        let (mine, theirs) = (find(&ours), find(&perf));
        assert_eq!(
            mine.find('#'),
            theirs.find('#'),
            "{event}:\n{mine}\n{theirs}"
        );
        let unit = |l: &str| metric_kind(l.split_whitespace().last().unwrap()).to_string();
        assert_eq!(unit(&mine), unit(&theirs), "{event}:\n{mine}\n{theirs}");
    }
    assert!(ours.contains(" CPUs utilized"), "{ours}");
}
