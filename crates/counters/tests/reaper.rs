//! What a latency run changes in tracefs is undone however the run ends: a run killed with
//! SIGKILL has its instance removed and the timerlat tracer's global osnoise settings put back
//! by its reaper; a run that ends normally undoes them itself and its reaper leaves without
//! touching anything; instances left by processes that are gone are removed by the next run,
//! and no one else's. On tracefs trees laid out as the kernel lays them out
//! (Documentation/trace/ftrace.rst "Instances", Documentation/trace/timerlat-tracer.rst).

#![allow(clippy::unwrap_used)]

use counters::timerlat::OsnoiseSettings;
use counters::trace::{remove_stale_instances, start_time};
use model::root::SysRoot;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use testsupport::process::{signal, wait_exit, wait_until};

/// The environment variable that makes [`killed_run`] a run to be killed, on that tracefs
/// tree.
const CHILD_ROOT: &str = "HEADROOM_TEST_KILLED_RUN_ROOT";

/// A tracefs tree with the timerlat tracer and its osnoise settings: CPUs 0-1, 1000 us.
fn tracefs_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("sys/kernel/tracing");
    std::fs::create_dir_all(t.join("instances")).unwrap();
    std::fs::create_dir_all(t.join("osnoise")).unwrap();
    std::fs::create_dir_all(t.join("events")).unwrap();
    std::fs::write(t.join("available_tracers"), "timerlat osnoise nop\n").unwrap();
    std::fs::write(t.join("osnoise/cpus"), "0-1\n").unwrap();
    std::fs::write(t.join("osnoise/timerlat_period_us"), "1000\n").unwrap();
    dir
}

fn tracing(root: &Path) -> PathBuf {
    root.join("sys/kernel/tracing")
}

fn osnoise(root: &Path) -> (String, String) {
    let read = |f: &str| {
        std::fs::read_to_string(tracing(root).join("osnoise").join(f))
            .unwrap()
            .trim_end()
            .to_string()
    };
    (read("cpus"), read("timerlat_period_us"))
}

/// Whether process `pid` has ended (gone, or a zombie its new parent has not reaped yet).
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn instances(root: &Path) -> Vec<String> {
    std::fs::read_dir(tracing(root).join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Not a test of its own: the run [`a_killed_timerlat_run_has_its_settings_put_back`] kills,
/// when started by it (with [`CHILD_ROOT`] set). It sets the tracer's settings as a timerlat
/// run does, says so on stdout and waits to be killed (at most 30 s).
#[test]
fn killed_run() {
    let Some(root) = std::env::var_os(CHILD_ROOT) else {
        return;
    };
    let settings = OsnoiseSettings::apply(&SysRoot::new(&root), &[1], 250).unwrap();
    println!(
        "applied {} reaper {}",
        settings.instance().dir.display(),
        settings.instance().reaper_pid().unwrap()
    );
    std::thread::sleep(Duration::from_secs(30));
}

/// The harness's name of test `f` of this file (its module path inside the test binary).
fn test_name(f: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{f}"),
        None => f.to_string(),
    }
}

#[test]
fn a_killed_timerlat_run_has_its_settings_put_back_and_its_instance_removed() {
    let tree = tracefs_tree();
    let root = tree.path();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &test_name("killed_run"),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ROOT, root)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // The child's line (the harness writes "running 1 test" and the test's name around it).
    let mut out = BufReader::new(child.stdout.take().unwrap());
    while !line.contains("applied ") {
        line.clear();
        assert_ne!(out.read_line(&mut line).unwrap(), 0, "the run ended early");
    }
    let mut words = line[line.find("applied ").unwrap()..]
        .split_whitespace()
        .skip(1);
    let instance = PathBuf::from(words.next().unwrap());
    let reaper: u32 = words.nth(1).unwrap().parse().unwrap();
    assert!(instance.is_dir());
    assert_eq!(osnoise(root), ("1".to_string(), "250".to_string()));

    signal(&child, libc::SIGKILL);
    wait_exit(&mut child, Duration::from_secs(10));
    // No other command runs: the reaper alone puts everything back, and ends.
    assert!(
        wait_until(Duration::from_secs(10), || ended(reaper)),
        "the reaper (pid {reaper}) is still there"
    );
    assert_eq!(osnoise(root), ("0-1".to_string(), "1000".to_string()));
    assert!(!instance.exists(), "{} is left", instance.display());
    assert_eq!(instances(root), Vec::<String>::new());
}

#[test]
fn a_run_that_ends_normally_puts_its_settings_back_and_its_reaper_touches_nothing() {
    let tree = tracefs_tree();
    let root = tree.path();
    let settings = OsnoiseSettings::apply(&SysRoot::new(root), &[0], 100).unwrap();
    let reaper = settings.instance().reaper_pid().unwrap();
    let instance = settings.instance().dir.clone();
    assert_eq!(osnoise(root), ("0".to_string(), "100".to_string()));
    drop(settings);
    assert_eq!(osnoise(root), ("0-1".to_string(), "1000".to_string()));
    assert!(!instance.exists());
    // The reaper has ended (and was waited for): a setting changed afterwards by someone
    // else stays as they set it.
    assert!(ended(reaper as u32));
    std::fs::write(tracing(root).join("osnoise/cpus"), "3").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(osnoise(root).0, "3");
}

#[test]
fn instances_of_processes_that_are_gone_are_removed_and_no_others() {
    let tree = tracefs_tree();
    let root = tree.path();
    let live = SysRoot::new("/");
    let me = std::process::id();
    let started = start_time(&live, me).unwrap();
    // This process's stat, as the tree's /proc shows it.
    let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    std::fs::create_dir_all(root.join(format!("proc/{me}"))).unwrap();
    std::fs::write(root.join(format!("proc/{me}/stat")), stat).unwrap();
    let names = [
        // A process that is gone.
        "headroom-4194000-77-0123456789abcdef".to_string(),
        // A live one: this process.
        format!("headroom-{me}-{started}-00000000000000aa"),
        // This process id, but a process that started earlier: the id was reused.
        format!(
            "headroom-{me}-{}-00000000000000bb",
            started.saturating_sub(1)
        ),
        // Without the start time (an older headroom): kept while the id is in use.
        format!("headroom-{me}-00000000000000cc"),
        "headroom-4194001-0000000000000dd".to_string(),
        // Another tool's.
        "rtla-timerlat".to_string(),
    ];
    for n in &names {
        std::fs::create_dir(tracing(root).join("instances").join(n)).unwrap();
    }
    let mut removed = remove_stale_instances(&SysRoot::new(root));
    removed.sort();
    let mut want = vec![names[0].clone(), names[2].clone(), names[4].clone()];
    want.sort();
    assert_eq!(removed, want);
    let mut left = instances(root);
    left.sort();
    let mut kept = vec![names[1].clone(), names[3].clone(), names[5].clone()];
    kept.sort();
    assert_eq!(left, kept);
}
