//! `headroom bench latency` end to end: short real runs (structure and sums, never timing),
//! the stress workers' lifetime, the unprivileged path, and bad flags.

// Helpers of an integration test are test code too; clippy only knows that for #[test] fns.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use testsupport::cmd::*;
use testsupport::process::{children, is_root, on_path, thread_sleeps, wait_until};

fn run_json(args: &[&str]) -> Value {
    json_of(headroom().args(args).arg("--json"))
}

fn hist_sum(h: &Value) -> u64 {
    let buckets: u64 = h["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    buckets + h["overflow"].as_u64().unwrap()
}

/// Whether a process still exists and is a stress worker (a reused pid would not be).
fn worker_alive(pid: u64) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("stress-worker"))
        .unwrap_or(false)
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
}

#[test]
fn one_thread_histogram_sums_to_the_loop_count() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-l",
        "300",
        "-q",
        "--allow-unprivileged",
    ]);
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "latency");
    let m = &doc["measurement"];
    assert_eq!(m["stopped_by"], "loops");
    let t = &m["threads"][0];
    assert_eq!(t["stats"]["count"], 300);
    assert_eq!(hist_sum(&t["stats"]["histogram"]), 300);
    assert_eq!(hist_sum(&m["total"]["histogram"]), 300);
    assert!(t["stats"]["min_ns"].as_u64().unwrap() <= t["stats"]["max_ns"].as_u64().unwrap());
    assert!(doc["context"]["kernel"]["release"].is_string());
}

#[test]
fn two_threads_by_duration_with_cyclictest_flags() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-t",
        "2",
        "-i",
        "1000",
        "-d",
        "500",
        "-D",
        "1s",
        "-m",
        "-q",
        "-h",
        "400",
        "--allow-unprivileged",
    ]);
    assert_eq!(doc["config"]["interval_us"], 1000);
    assert_eq!(doc["config"]["distance_us"], 500);
    assert_eq!(doc["config"]["limits"]["duration_s"], 1.0);
    let m = &doc["measurement"];
    assert_eq!(m["stopped_by"], "duration");
    let threads = m["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[1]["interval_us"], 1500);
    let mut total = 0;
    for t in threads {
        let n = t["stats"]["count"].as_u64().unwrap();
        assert!(n > 0);
        assert_eq!(hist_sum(&t["stats"]["histogram"]), n);
        assert_eq!(t["stats"]["histogram"]["limit_us"], 400);
        total += n;
    }
    assert_eq!(m["total"]["count"].as_u64().unwrap(), total);
    assert_eq!(hist_sum(&m["total"]["histogram"]), total);
}

#[test]
fn stressed_run_records_load_and_leaves_no_worker() {
    let doc = run_json(&[
        "bench",
        "latency",
        "-t",
        "2",
        "-D",
        "1s",
        "-q",
        "--allow-unprivileged",
        "--stress",
        "cpu=2,io=1,vm=1,vm-bytes=1M",
    ]);
    let pids: Vec<u64> = doc["stress"]["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 4);
    let stop = &doc["stress"]["stop"];
    assert_eq!(
        stop["stopped"].as_u64().unwrap() + stop["killed"].as_u64().unwrap(),
        4
    );
    assert!(pids.iter().all(|&p| !worker_alive(p)));
    assert!(!doc["load_average"].as_array().unwrap().is_empty());
    for t in doc["measurement"]["threads"].as_array().unwrap() {
        assert_eq!(
            hist_sum(&t["stats"]["histogram"]),
            t["stats"]["count"].as_u64().unwrap()
        );
    }
}

/// Start headroom with a load for 30 s, wait until its workers run, and return them.
fn start_loaded(extra: &[&str]) -> (std::process::Child, Vec<u64>) {
    let child = headroom_process()
        .args([
            "bench",
            "latency",
            "-D",
            "30s",
            "-q",
            "--json",
            "--allow-unprivileged",
        ])
        .args(["--stress", "cpu=2,io=1"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut workers = Vec::new();
    while t0.elapsed() < Duration::from_secs(10) {
        workers = children(child.id()).into_iter().map(u64::from).collect();
        if workers.len() == 3 && workers.iter().all(|&p| worker_alive(p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers.len(), 3, "the workers did not start");
    (child, workers)
}

fn wait_gone(workers: &[u64]) {
    let t0 = Instant::now();
    while workers.iter().any(|&p| worker_alive(p)) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&u64> = workers.iter().filter(|&&p| worker_alive(p)).collect();
    assert!(left.is_empty(), "workers left running: {left:?}");
}

/// Signal a loaded run after it measured a little; the run must stop at once, keep its
/// partial measurement (stdout, --output, the history, all marked interrupted), stop its
/// workers, name the signal and exit 128 + signal.
fn interrupt_loaded_run(signal: i32, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.sqlite");
    let file = dir.path().join("run.json");
    let (child, workers) = start_loaded(&[
        "--db",
        db.to_str().unwrap(),
        "--output",
        file.to_str().unwrap(),
    ]);
    // Until the measuring thread has slept and woken 50 times: each period of its loop is
    // one sleep, and before the run starts it waits only at the start gate (once), so by
    // then dozens of wake-ups are measured however slowly a loaded machine got there.
    assert!(
        wait_until(Duration::from_secs(60), || {
            thread_sleeps(child.id(), "latency-0").is_some_and(|n| n >= 50)
        }),
        "the measuring thread never ran"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + signal), "{err}");
    assert!(
        err.contains(&format!("headroom: interrupted by {name}")),
        "{err}"
    );
    if signal != libc::SIGINT {
        assert!(!err.contains("Ctrl-C"), "{name} is not Ctrl-C: {err}");
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["measurement"]["stopped_by"], "interrupted");
    assert_eq!(doc["interrupted"], true);
    let total = &doc["measurement"]["total"];
    assert!(
        total["count"].as_u64().unwrap() > 0,
        "nothing measured after 50 wake-ups"
    );
    assert_eq!(
        hist_sum(&total["histogram"]),
        total["count"].as_u64().unwrap()
    );
    assert!(doc["findings"]
        .to_string()
        .contains(&format!("interrupted by {name}")));
    let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(written["interrupted"], true);
    assert_eq!(written["measurement"]["total"]["count"], total["count"]);
    // The history keeps it, marked interrupted.
    let listed = json_of(headroom().args(["history", "--db", db.to_str().unwrap(), "--json"]));
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{listed}");
    let id = runs[0]["id"].as_i64().unwrap().to_string();
    let saved = json_of(
        headroom()
            .args(["history", "show", &id, "--json", "--db"])
            .arg(&db),
    );
    assert_eq!(saved["interrupted"], true);
    assert_eq!(saved["measurement"]["total"]["count"], total["count"]);
    wait_gone(&workers);
}

/// The text on stdout (what a user pastes into a report) said neither
/// under which load the run measured nor that Ctrl-C cut it short: both went to stderr only.
#[test]
fn stdout_says_the_load_and_that_the_run_was_cut_short() {
    let child = headroom_process()
        .args([
            "bench",
            "latency",
            "-D",
            "30s",
            "-q",
            "-t",
            "1",
            "--no-save",
        ])
        .args(["--stress", "cpu=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("load: 1 cpu (--stress cpu=1; ")),
        "{text}"
    );
    assert!(
        text.contains("interrupted: stopped by SIGINT (Ctrl-C) after ")
            && text.contains(" s of the 30 s asked; the numbers cover the wake-ups measured"),
        "{text}"
    );
    // An idle run that ran to its end says so too.
    let out = stdout_of(headroom().args(["bench", "latency", "-D", "0.5s", "-q", "--no-save"]));
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("\nload: none (idle; --stress adds one)\n"),
        "{text}"
    );
    assert!(!text.contains("interrupted"), "{text}");
}

/// A pasted stress-ng option headroom does not reproduce was a hard error
/// where cyclictest's get a note; it gets a note saying what runs instead. `--hdd` (stress-ng's
/// hdd stressor) runs: its files are written in temp-path and gone after the run, also after
/// Ctrl-C.
#[test]
fn pasted_stress_ng_options_get_a_note_and_hdd_workers_clean_up() {
    let out = headroom()
        .args(["--json", "bench", "latency", "-D", "1s", "-q", "--no-save"])
        .args(["--stress", "stress-ng --cpu 1 --cpu-method matrixprod"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let note = "stress-ng --cpu-method matrixprod: not reproduced; the cpu workers spin on \
                headroom's integer and floating-point loop";
    assert!(err.contains(&format!("headroom: note: {note}")), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["notes"].to_string().contains(note), "{}", doc["notes"]);
    assert_eq!(doc["stress"]["spec"]["cpu"], 1);

    let dir = testsupport::cmd::disk_dir("headroom-hdd-test");
    let child = headroom_process()
        .args([
            "--json",
            "bench",
            "latency",
            "-D",
            "30s",
            "-q",
            "--no-save",
            "--stress",
        ])
        .arg(format!(
            "hdd=1,hdd-bytes=8M,temp-path={}",
            dir.path().display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spec = &doc["stress"]["spec"];
    assert_eq!(
        (spec["hdd"].as_u64(), spec["hdd_bytes_per_worker"].as_u64()),
        (Some(1), Some(8 << 20))
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "hdd files left: {left:?}");
}

#[test]
fn ctrl_c_stops_the_load_keeps_the_partial_run_and_exits_130() {
    interrupt_loaded_run(libc::SIGINT, "SIGINT (Ctrl-C)");
}

#[test]
fn sigterm_is_named_and_exits_143() {
    interrupt_loaded_run(libc::SIGTERM, "SIGTERM");
}

#[test]
fn workers_die_with_a_killed_parent() {
    let (mut child, workers) = start_loaded(&[]);
    child.kill().unwrap(); // SIGKILL: no handler runs; PR_SET_PDEATHSIG must do it.
    child.wait().unwrap();
    wait_gone(&workers);
}

/// The one warning of a run without SCHED_FIFO or locked memory: what was refused, why the
/// numbers are not comparable with cyclictest, how to fix it.
fn assert_one_not_realtime_warning(err: &str) {
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("measured without"))
        .collect();
    assert_eq!(lines.len(), 1, "one warning, said once:\n{err}");
    let w = lines[0];
    assert!(
        w.starts_with("headroom: warning: measured without SCHED_FIFO priority"),
        "{w}"
    );
    for part in [
        "not comparable with cyclictest's under SCHED_FIFO",
        "run as root",
        "CAP_SYS_NICE",
        "ulimit -l",
    ] {
        assert!(w.contains(part), "`{part}` not in: {w}");
    }
    // One sentence: no full stop inside it.
    assert!(!w.trim_end_matches('.').contains(". "), "{w}");
}

/// `headroom report --md` of `doc`.
fn report_md_of(doc: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latency.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    report_md(&file)
}

/// What the document of an unprivileged run says: the refused steps, the finding, and the
/// report's context table.
fn assert_document_says_not_realtime(doc: &Value, loops: u64) {
    let p = &doc["measurement"]["privileges"];
    assert_eq!(p["sched_fifo"]["state"], "refused", "{p}");
    assert_eq!(doc["measurement"]["threads"][0]["stats"]["count"], loops);
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["message"]
                .as_str()
                .unwrap()
                .starts_with("measured without SCHED_FIFO")
        })
        .unwrap_or_else(|| panic!("no not-real-time finding: {}", doc["findings"]));
    assert_eq!(f["severity"], "Warning");
    let md = report_md_of(doc);
    assert!(md.contains("| SCHED_FIFO | no ("), "{md}");
    assert!(md.contains("measured without SCHED_FIFO"), "{md}");
}

#[test]
fn unprivileged_run_warns_once_and_measures() {
    // 50 wake-ups without the privileged steps, as an unprivileged user gets.
    let unprivileged = [
        "bench",
        "latency",
        "-l",
        "50",
        "-q",
        "--skip-privileged-steps",
        "--no-save",
    ];
    // No --allow-unprivileged: the run happens anyway.
    let out = output_ok(headroom().args(unprivileged).arg("--json"));
    assert_one_not_realtime_warning(&String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_document_says_not_realtime(&doc, 50);
    // --allow-unprivileged is still accepted (scripts pass it) and changes nothing; --help
    // no longer offers it.
    let doc = run_json(&[&unprivileged[..], &["--allow-unprivileged"]].concat());
    assert_document_says_not_realtime(&doc, 50);
    let help = stdout_of(headroom().args(["bench", "latency", "--help"]));
    let help = String::from_utf8_lossy(&help);
    assert!(!help.contains("allow-unprivileged"), "{help}");
    // --help says what SCHED_FIFO and locked memory need, and what happens without them.
    for part in ["CAP_SYS_NICE", "ulimit -r", "CAP_IPC_LOCK", "ulimit -l"] {
        assert!(help.contains(part), "`{part}` not in:\n{help}");
    }
}

#[test]
fn really_unprivileged_user_measures_with_one_warning() {
    // Drop root for real where we can (setpriv from util-linux: user nobody, no capabilities,
    // so no CAP_SYS_NICE or CAP_IPC_LOCK); otherwise this machine's user is already
    // unprivileged.
    let bin = assert_cmd::cargo::cargo_bin("headroom");
    let readable_by_nobody = bin.ancestors().all(|d| {
        d.metadata()
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o001 != 0)
            .unwrap_or(false)
            || d == Path::new("/")
    });
    let dropped = is_root() && Path::new("/usr/bin/setpriv").exists() && readable_by_nobody;
    let args = ["bench", "latency", "-l", "20", "-q", "--no-save", "--json"];
    let out = if dropped {
        std::process::Command::new("/usr/bin/setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ])
            .arg(&bin)
            .args(args)
            .output()
            .unwrap()
    } else if !is_root() {
        std::process::Command::new(&bin)
            .args(args)
            .output()
            .unwrap()
    } else {
        testsupport::skip::skip(
            "cannot drop root here (no setpriv or unreadable binary); covered by \
             --skip-privileged-steps",
        );
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    if dropped || doc["measurement"]["privileges"]["sched_fifo"]["state"] == "refused" {
        assert_one_not_realtime_warning(&err);
        assert_document_says_not_realtime(&doc, 20);
    } else {
        // A non-root user with raised RLIMIT_RTPRIO and RLIMIT_MEMLOCK is privileged enough.
        assert!(!err.contains("measured without"), "{err}");
    }
}

/// Device interrupts per CPU of /proc/interrupts (numbered lines only), by IRQ.
fn device_interrupts() -> std::collections::BTreeMap<(u32, u32), u64> {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap();
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|w| w.trim_start_matches("CPU").parse().unwrap())
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for l in lines {
        let Some((irq, rest)) = l.split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.trim().parse::<u32>() else {
            continue;
        };
        for (cpu, n) in cpus.iter().zip(rest.split_whitespace()) {
            out.insert((irq, *cpu), n.parse::<u64>().unwrap());
        }
    }
    out
}

/// The interrupts that arrived on the measured CPU during the
/// measurement, per source, in the document, the text and the report; never more than
/// /proc/interrupts counted around the whole command.
#[test]
fn interrupts_on_the_measured_cpus_by_source() {
    let cpu = *bench::latency::available_cpus().last().unwrap_or(&0);
    let cpu_s = cpu.to_string();
    // One thread on that CPU.
    let on_cpu = [
        "bench",
        "latency",
        "-t",
        "1",
        "-a",
        &cpu_s,
        "-q",
        "--no-save",
    ];
    let before = device_interrupts();
    let doc = run_json(&[&on_cpu[..], &["-D", "1s"]].concat());
    let after = device_interrupts();
    let irq = &doc["interrupts"];
    let elapsed = irq["elapsed_s"].as_f64().unwrap();
    assert!(elapsed > 0.5, "{irq}");
    let cpus = irq["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1, "only the measured CPU: {irq}");
    let c = &cpus[0];
    assert_eq!(c["cpu"], cpu);
    let sources = c["sources"].as_array().unwrap();
    let sum: u64 = sources.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(c["count"].as_u64().unwrap(), sum, "{c}");
    let rate = c["per_second"].as_f64().unwrap();
    assert!((rate - sum as f64 / elapsed).abs() < 1e-6, "{c}");
    for s in sources {
        let n = s["count"].as_u64().unwrap();
        let line = u32::try_from(s["irq"].as_u64().unwrap()).unwrap();
        let around = after[&(line, cpu)] - before.get(&(line, cpu)).copied().unwrap_or(0);
        assert!(
            n > 0 && n <= around,
            "IRQ {line}: {n} in the document, {around} around the command"
        );
    }
    // Most first.
    let counts: Vec<u64> = sources
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
    // The text and the report say the same.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("l.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let md = report_md(&file);
    assert!(
        md.contains(&format!("| interrupts on CPU {cpu} | {rate:.2} | /s |")),
        "{md}"
    );
    let cmp = headroom()
        .arg("compare")
        .args([&file, &file])
        .output()
        .unwrap();
    let cmp = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        cmp.contains(&format!(
            "| interrupts on CPU {cpu} (/s) | {rate:.2} | {rate:.2} |"
        )),
        "{cmp}"
    );
    let text = headroom()
        .args(on_cpu)
        .args(["-l", "200"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("\ninterrupts on CPU {cpu}: ")),
        "{text}"
    );
}

#[test]
fn the_stress_own_disk_interrupts_are_named_as_its_load() {
    // Under `--stress io=1` a warning blamed "52876 device interrupts
    // (36 virtio1-req.0: 52837, ...)": the io workers' sync() makes every disk interrupt.
    // The document names the disk behind each line and the finding names the load as the
    // run's own.
    if !std::path::Path::new("/sys/block/vda").exists() {
        testsupport::skip::skip("no /sys/block/vda (a disk whose controller interrupts)");
        return;
    }
    let doc = run_json(&[
        "bench",
        "latency",
        "-S",
        "-D",
        "2s",
        "-q",
        "--no-save",
        "--stress",
        "io=1",
    ]);
    let sources: Vec<&Value> = doc["interrupts"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["sources"].as_array().unwrap())
        .collect();
    let disk: Vec<&&Value> = sources
        .iter()
        .filter(|s| s["block_device"] == "vda")
        .collect();
    assert!(
        !disk.is_empty()
            && disk
                .iter()
                .all(|s| s["name"].as_str().unwrap().starts_with("virtio")),
        "vda's controller interrupted on a measured CPU: {sources:#?}"
    );
    let findings = doc["findings"].as_array().unwrap();
    let named = findings.iter().find(|f| {
        f["message"].as_str().unwrap().contains(
            "of them are load this run generated itself: its stress's io workers call sync()",
        )
    });
    let f = named.unwrap_or_else(|| panic!("{findings:#?}"));
    assert!(
        f["message"].as_str().unwrap().contains("vda answered each"),
        "{f}"
    );
    assert!(f["advice"].as_str().is_some(), "{f}");
}

#[test]
fn bad_flags_get_one_sentence_and_exit_2() {
    for (args, expect) in [
        (&["-i", "0"][..], "interval"),
        (&["-p", "100"][..], "priority 100 is out of range"),
        (&["-t", "1000"][..], "threads requested"),
        (&["-a", "4095"][..], "CPU 4095 does not exist"),
        (&["--stress", "gpu=1"][..], "unknown stress key"),
    ] {
        let err = fails_saying(
            headroom()
                .args(["bench", "latency", "-D", "1s", "-q"])
                .args(args),
            2,
            expect,
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one sentence: {err}");
    }
}

#[test]
fn removed_n_flag_is_explained_and_measured_anyway() {
    let out = headroom()
        .args([
            "bench", "latency", "-c", "0", "-m", "-n", "-t", "1", "-p", "99", "-l", "20", "-q",
        ])
        .arg("--allow-unprivileged")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-n (clock_nanosleep) was removed from cyclictest in 2017"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("T: 0 (") && text.contains("C:     20"),
        "{text}"
    );
}

#[test]
fn pasted_cyclictest_flags_are_accepted_or_explained() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ct.json");
    let doc_file = dir.path().join("run.json");
    let json_arg = format!("--json={}", file.display());
    // rt-tests 2.x meanings: -N ns, -v every value, -b break trace, -M refresh on max,
    // -x POSIX timers, -y/--policy, -H/--histofall, --json=FILE.
    let out = headroom()
        .args([
            "bench",
            "latency",
            "-l",
            "40",
            "-q",
            "--allow-unprivileged",
            "--no-save",
        ])
        .args([
            "-N", "-v", "-b", "100000", "-M", "-x", "-y", "fifo", "-H", "500",
        ])
        .arg(&json_arg)
        .arg("--output")
        .arg(&doc_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for said in [
        "headroom: note: -v:",
        "headroom: note: -b 100000:",
        "headroom: note: -x:",
        "0 wake-ups were above 100000 us",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    // --output: headroom's document; -H is the histogram limit, and its text on stdout.
    let doc: Value = serde_json::from_slice(&std::fs::read(&doc_file).unwrap()).unwrap();
    assert_eq!(doc["kind"], "latency");
    assert_eq!(doc["config"]["histogram_limit_us"], 500);
    let t = &doc["measurement"]["threads"][0]["stats"];
    assert_eq!(t["count"], 40);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# Histogram\n000000 "), "{text}");
    assert!(
        text.contains("\n000499 ") && !text.contains("\n000500 "),
        "{text}"
    );
    // --json=FILE: rt-tests' document of the same run (crates/cli/tests/cyclictest_formats.rs
    // compares it with cyclictest's own).
    let ct: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(ct["thread"]["0"]["cycles"], 40);
    assert_eq!(
        ct["thread"]["0"]["max"].as_u64().unwrap(),
        t["max_ns"].as_u64().unwrap() / 1000
    );

    // `--json FILE` as getopt also reads it; --policy other is normal scheduling (-p 0).
    let file2 = dir.path().join("ct2.json");
    let doc_file2 = dir.path().join("run2.json");
    let out = headroom()
        .args([
            "bench",
            "latency",
            "-l",
            "20",
            "-q",
            "--no-save",
            "-N",
            "--policy",
            "other",
        ])
        .arg("--json")
        .arg(&file2)
        .arg("--output")
        .arg(&doc_file2)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ct: Value = serde_json::from_slice(&std::fs::read(&file2).unwrap()).unwrap();
    assert_eq!(ct["thread"]["0"]["cycles"], 20);
    let doc: Value = serde_json::from_slice(&std::fs::read(&doc_file2).unwrap()).unwrap();
    assert_eq!(doc["config"]["priority"], 0);
    assert_eq!(doc["measurement"]["threads"][0]["priority"], 0);
    // -N: the cyclictest line in ns, the same numbers as the document's.
    let t = &doc["measurement"]["threads"][0]["stats"];
    let text = String::from_utf8_lossy(&out.stdout);
    let min = t["min_ns"].as_u64().unwrap();
    let max = t["max_ns"].as_u64().unwrap();
    assert!(
        text.contains(&format!("Min:{min:7}")) && text.contains(&format!("Max:{max:8}")),
        "min {min} ns, max {max} ns: {text}"
    );

    // What headroom cannot do is refused with a sentence, exit 2.
    for (args, expect) in [
        (&["--policy", "batch"][..], "--policy batch"),
        (&["-y", "deadline"][..], "not a scheduling policy"),
    ] {
        fails_saying(
            headroom()
                .args(["bench", "latency", "-l", "20", "-q"])
                .args(args),
            2,
            expect,
        );
    }
}

#[test]
fn warnings_go_to_stderr_and_counts_agree_with_their_nouns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let out = headroom()
        .args([
            "bench",
            "latency",
            "-l",
            "30",
            "-q",
            "--skip-privileged-steps",
        ])
        .args(["--allow-unprivileged", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    // Data on stdout; every warning on stderr, behind the one prefix.
    assert!(text.contains("T: 0 ("), "{text}");
    for line in text.lines() {
        assert!(
            !line.starts_with("warning") && !line.starts_with("info") && !line.contains("note:"),
            "a diagnostic on stdout: {line}"
        );
    }
    assert!(
        err.contains("headroom: warning: measured without SCHED_FIFO priority 99"),
        "{err}"
    );
    for line in err.lines() {
        assert!(line.starts_with("headroom: "), "unprefixed: {line}");
    }
    // One thread is `1 thread` in the history list.
    let list = headroom()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("latency (1 thread)"), "{list}");
    assert!(!list.contains("1 threads"), "{list}");
}

/// The state letter and user CPU ticks of a process (/proc/PID/stat fields 3 and 14).
fn state_and_utime(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields[0].chars().next()?, fields[11].parse().ok()?))
}

/// `--stress cpu=1000` used to take minutes to start: each worker spun as soon as it ran, and
/// the parent starting the next one competed with all of them for the CPUs. A worker now
/// waits at a start gate (its stdin, until the parent closes it after starting them all).
#[test]
fn stress_workers_wait_at_the_start_gate_until_all_are_started() {
    use std::io::Write as _;
    let mut worker = headroom_process()
        .args(["bench", "stress-worker", "cpu", "100"])
        .arg(std::process::id().to_string())
        .arg("20000")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = worker.id();
    let t0 = Instant::now();
    let mut state = None;
    while t0.elapsed() < Duration::from_secs(10) {
        state = state_and_utime(pid);
        if matches!(state, Some(('S', _))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (s, before) = state.unwrap();
    assert_eq!(s, 'S', "a gated CPU worker must sleep, not spin");
    // A byte is not the signal; end-of-file is.
    worker.stdin.as_mut().unwrap().write_all(b"x").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(state_and_utime(pid).map(|s| s.0), Some('S'));
    drop(worker.stdin.take());
    let t0 = Instant::now();
    let mut spun = false;
    while t0.elapsed() < Duration::from_secs(20) && !spun {
        std::thread::sleep(Duration::from_millis(50));
        spun = state_and_utime(pid).is_some_and(|(_, t)| t > before);
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    assert!(
        spun,
        "the worker did not start its loop when the gate opened"
    );
}

#[test]
fn stress_ng_cpu_0_starts_one_worker_per_cpu() {
    // SAFETY: sysconf takes an integer.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as usize;
    let doc = run_json(&[
        "bench",
        "latency",
        "-l",
        "20",
        "-q",
        "--allow-unprivileged",
        "--no-save",
        "--stress",
        "stress-ng --cpu 0 --timeout 10s",
    ]);
    assert_eq!(doc["stress"]["spec"]["cpu"], configured as u64);
    assert_eq!(doc["stress"]["pids"].as_array().unwrap().len(), configured);
    let stop = &doc["stress"]["stop"];
    assert_eq!(
        stop["stopped"].as_u64().unwrap() + stop["killed"].as_u64().unwrap(),
        configured as u64
    );
}

/// bench/vs-cyclictest.sh reports a median outside its target as a verdict and exits 0: a
/// timing is not a failure (README). A stand-in headroom, 500 us on every wake-up, puts the
/// median far outside the target whatever this machine measures with cyclictest.
#[test]
fn vs_cyclictest_prints_a_verdict_and_exits_0_outside_the_target() {
    if !is_root()
        || !["cyclictest", "stress-ng", "python3"]
            .iter()
            .all(|t| on_path(t))
    {
        testsupport::skip::skip("needs root, cyclictest, stress-ng and python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("slow.json");
    std::fs::write(
        &doc,
        r#"{"measurement": {"total": {"histogram": {"buckets": [[500, 1000]], "overflow": 0},
            "missed_periods": 0}, "threads": [{"cpu_time_ns": 1000000}]}}"#,
    )
    .unwrap();
    let fake = dir.path().join("headroom");
    std::fs::write(&fake, format!("#!/bin/sh\ncat '{}'\n", doc.display())).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/vs-cyclictest.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .env("ROUNDS", "1")
        .env("SECS", "1")
        .env("THREADS", "1")
        .env("CONDITIONS", "idle")
        .env("HEADROOM", &fake)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    assert!(
        text.contains("verdict (idle): outside the 2 us target"),
        "{text}"
    );
}

/// `-h US` is cyclictest's histogram, but `-h` alone prints the help, as every other
/// subcommand's `-h` does, instead of a usage error.
#[test]
fn h_alone_prints_the_help_and_h_with_a_value_is_the_histogram() {
    let help = stdout_of(headroom().args(["bench", "latency", "--help"]));
    assert!(String::from_utf8_lossy(&help).contains("Usage: headroom bench latency"));
    for alone in [&["-h"][..], &["-q", "-h"], &["-h", "-q"]] {
        let out = output_ok(headroom().args(["bench", "latency"]).args(alone));
        assert_eq!(out.stdout, help, "{alone:?}");
    }
    // With a value: the histogram of a run, as cyclictest prints it.
    let out = output_ok(headroom().args([
        "bench",
        "latency",
        "-q",
        "-l",
        "20",
        "-h",
        "50",
        "--skip-privileged-steps",
        "--no-save",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# Histogram"), "{text}");
}
