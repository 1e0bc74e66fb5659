//! `headroom bench mmio` and `bench mem` as a user runs them. The BAR stand-in is a file on
//! tmpfs (/dev/shm); the refusals are checked on this machine's real PCI functions.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;
use testsupport::cmd::{headroom, headroom_process, json_of};
use testsupport::process::{children, wait_until};

/// Wait (bounded) until `bench mem`/`bench mmio` measures: each (width, operation) runs in a
/// process of its own, forked once the buffer is filled, and it makes at least one pass
/// before it looks at the stop flag, so a stop from now on leaves a measurement.
fn wait_measuring(child: &Child) {
    assert!(
        wait_until(Duration::from_secs(120), || !children(child.id())
            .is_empty()),
        "no width was ever measured"
    );
}

/// A tmpfs file of `len` bytes holding `fill(i)` at byte i, removed on drop.
fn bar_file(len: usize, fill: impl Fn(usize) -> u8) -> tempfile::NamedTempFile {
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let f = tempfile::Builder::new()
        .prefix("headroom-bar-")
        .tempfile_in(dir)
        .unwrap();
    let bytes: Vec<u8> = (0..len).map(fill).collect();
    std::fs::write(f.path(), bytes).unwrap();
    f
}

fn stderr_of(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The function the tests' refusals use: this VM's virtio block device, bound to virtio-pci,
/// MSI-X table in BAR 0.
const FUNCTION: &str = "0000:00:02.0";

fn have_function() -> bool {
    let there = Path::new("/sys/bus/pci/devices").join(FUNCTION).exists();
    if !there {
        testsupport::skip::skip(&format!("no PCI function {FUNCTION} on this machine"));
    }
    there
}

#[test]
fn loads_on_a_file_count_every_access_of_every_width() {
    let f = bar_file(64 * 1024, |i| i as u8);
    let v = json_of(headroom().args([
        "bench",
        "mmio",
        f.path().to_str().unwrap(),
        "--width",
        "8,16,32,64,128,memcpy",
        "--max-sweeps",
        "3",
        "--duration",
        "30s",
        "--no-mem",
        "--no-save",
        "--json",
    ]));
    assert_eq!(v["kind"], "mmio");
    assert_eq!(v["region"]["kind"], "file");
    assert_eq!(v["region"]["writable"], false);
    assert_eq!(v["region"]["window_bytes"], 65536);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for r in results {
        let w = match r["width"].as_str().unwrap() {
            "memcpy" => 16,
            n => n.parse::<u64>().unwrap() / 8,
        };
        assert_eq!(r["op"], "load");
        assert_eq!(r["accesses"].as_u64().unwrap(), 3 * 65536 / w, "{r}");
        assert_eq!(r["bytes"].as_u64().unwrap(), 3 * 65536);
        assert!(r["mb_per_s"].as_f64().unwrap() > 0.0);
        assert!(r["fault"].is_null());
    }
    assert!(v["memory"].is_null(), "--no-mem skips DRAM");
}

#[test]
fn a_store_without_write_is_refused_and_never_reaches_the_file() {
    let f = bar_file(8192, |i| (i * 3) as u8);
    let before = std::fs::read(f.path()).unwrap();
    let p = f.path().to_str().unwrap();
    let (code, stdout, stderr) =
        stderr_of(headroom().args(["bench", "mmio", p, "--op", "store", "--no-save"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("--op store") && stderr.contains(&format!("--write {p}")),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was mapped"), "{stderr}");
    // --write naming something else is no permission either.
    let (code, _, stderr) = stderr_of(headroom().args([
        "bench",
        "mmio",
        p,
        "--op",
        "store",
        "--write",
        "/dev/shm/other",
        "--no-save",
    ]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("does not name the target"), "{stderr}");
    assert_eq!(std::fs::read(f.path()).unwrap(), before);
}

#[test]
fn stores_with_write_put_exactly_the_width_asked_in_the_window() {
    let f = bar_file(16 * 1024, |_| 0xee);
    let p = f.path().to_str().unwrap();
    let v = json_of(headroom().args([
        "bench",
        "mmio",
        p,
        "--write",
        p,
        "--op",
        "store",
        "--width",
        "32",
        "--offset",
        "4K",
        "--size",
        "0x1000",
        "--max-sweeps",
        "1",
        "--duration",
        "30s",
        "--no-mem",
        "--no-save",
        "--json",
    ]));
    assert_eq!(v["region"]["writable"], true);
    assert_eq!(v["results"][0]["accesses"], 1024);
    let got = std::fs::read(f.path()).unwrap();
    assert!(
        got[..4096].iter().all(|&b| b == 0xee),
        "bytes before the window changed"
    );
    assert!(
        got[8192..].iter().all(|&b| b == 0xee),
        "bytes after the window changed"
    );
    for (i, el) in got[4096..8192].chunks(4).enumerate() {
        assert_eq!(el, &(i as u32).to_le_bytes(), "element {i}");
    }
}

#[test]
fn windows_outside_the_file_and_bad_values_are_usage_errors() {
    let f = bar_file(8192, |_| 0);
    let p = f.path().to_str().unwrap();
    for (args, want) in [
        (vec!["--offset", "8"], "not aligned to 16 bytes"),
        (
            vec!["--size", "16K"],
            "outside the mapped region of 8192 bytes",
        ),
        (vec!["--offset", "8K"], "outside the mapped region"),
        (vec!["--duration", "0s"], "above 0"),
        (vec!["--size", "lots"], "--size lots: not a size"),
    ] {
        let mut cmd = headroom();
        cmd.args(["bench", "mmio", p, "--no-mem", "--no-save"])
            .args(&args);
        let (code, _, stderr) = stderr_of(&mut cmd);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // clap's own usage errors: a width that does not exist, a thread count out of range.
    for args in [vec!["--width", "31"], vec!["--threads", "0"]] {
        let mut cmd = headroom();
        cmd.args(["bench", "mmio", p]).args(&args);
        let (code, _, stderr) = stderr_of(&mut cmd);
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
    let (code, _, stderr) = stderr_of(headroom().args(["bench", "mmio", "01:00.0:6"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not 0 to 5"), "{stderr}");
    let (code, _, stderr) = stderr_of(headroom().args(["bench", "mmio", "./no-such-bar"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("./no-such-bar does not exist"), "{stderr}");
    let (code, _, stderr) = stderr_of(headroom().args(["bench", "mmio", "."]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is a directory"), "{stderr}");
    let (code, _, stderr) = stderr_of(headroom().args(["bench", "mmio", "0000:00:1f.7:0"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no PCI function 0000:00:1f.7"), "{stderr}");
}

#[test]
fn mapping_a_bar_here_is_refused_by_the_kernel_with_the_reason() {
    if !have_function() {
        return;
    }
    // A driver is bound to it (virtio-pci): loads need --allow-bound to reach the kernel.
    let (code, stdout, stderr) = stderr_of(headroom().args([
        "bench",
        "mmio",
        &format!("{FUNCTION}:0"),
        "--allow-bound",
        "--no-save",
    ]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
    let mode = std::fs::read_to_string("/sys/kernel/security/lockdown").ok();
    match mode.as_deref().and_then(|m| {
        let (_, rest) = m.split_once('[')?;
        rest.split_once(']').map(|(x, _)| x.to_string())
    }) {
        Some(m) if m != "none" => {
            assert!(
                stderr.contains(&format!("locked down in `{m}` mode")),
                "{stderr}"
            )
        }
        Some(_) => assert!(stderr.contains("lockdown is `none`"), "{stderr}"),
        None => assert!(
            stderr.contains("kernel lockdown forbids user-space BAR access")
                && stderr.contains("/sys/kernel/security/lockdown is missing"),
            "{stderr}"
        ),
    }
}

/// Loads from this machine's virtio block device, bound to virtio-pci, are
/// refused before any mapping without --allow-bound, and the sentence says why: a register
/// read can change the device (virtio's ISR status clears when read).
#[test]
fn loads_on_a_function_with_a_driver_need_allow_bound() {
    if !have_function() {
        return;
    }
    let driver = std::fs::read_link(
        Path::new("/sys/bus/pci/devices")
            .join(FUNCTION)
            .join("driver"),
    )
    .ok()
    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let Some(driver) = driver else {
        testsupport::skip::skip(&format!("{FUNCTION} has no driver bound"));
        return;
    };
    let (code, stdout, stderr) =
        stderr_of(headroom().args(["bench", "mmio", &format!("{FUNCTION}:0"), "--no-save"]));
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
    assert!(
        stderr.contains(&format!("{FUNCTION} is bound to driver {driver}"))
            && stderr.contains("virtio's ISR status clears when read")
            && stderr.contains("give --allow-bound to load anyway"),
        "{stderr}"
    );
    // Refused on what sysfs says, before the kernel was asked for a mapping.
    assert!(
        !stderr.contains("lockdown") && !stderr.contains("resource0"),
        "{stderr}"
    );
}

#[test]
fn a_store_on_a_function_with_a_driver_is_refused_before_any_mapping() {
    if !have_function() {
        return;
    }
    let target = format!("{FUNCTION}:0");
    let driver = std::fs::read_link(
        Path::new("/sys/bus/pci/devices")
            .join(FUNCTION)
            .join("driver"),
    )
    .ok()
    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let Some(driver) = driver else {
        testsupport::skip::skip(&format!("{FUNCTION} has no driver bound"));
        return;
    };
    // The short form of the address is the same BAR.
    let (code, _, stderr) = stderr_of(headroom().args([
        "bench",
        "mmio",
        &target,
        "--write",
        "00:02.0:0",
        "--op",
        "store",
        "--no-save",
    ]));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("bound to driver {driver}"))
            && stderr.contains(&format!(
                "echo {FUNCTION} > /sys/bus/pci/drivers/{driver}/unbind"
            )),
        "{stderr}"
    );
    // Refused on what sysfs says, before the kernel was asked for a mapping.
    assert!(
        !stderr.contains("lockdown") && !stderr.contains("resource0"),
        "{stderr}"
    );
    // BAR 0 of this virtio device holds its MSI-X table (lspci: Vector table: BAR=0).
    let config = std::fs::read(
        Path::new("/sys/bus/pci/devices")
            .join(FUNCTION)
            .join("config"),
    )
    .unwrap_or_default();
    if probe::pci::bar::msix_bars(&config).0 == Some(0) {
        assert!(stderr.contains("MSI-X table"), "{stderr}");
    }
}

/// `text` is a bench's terminal output titled `title`: no Markdown, the table's columns
/// aligned (every line of the table as long as its header, the numbers right-aligned), the
/// units on the line under the titles.
fn assert_terminal_table(text: &str, title: &str, columns: &[&str]) {
    assert_eq!(text.lines().next(), Some(title), "{text}");
    assert!(
        !text.contains('|') && !text.contains("##") && !text.contains("---"),
        "Markdown on the terminal: {text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("Access "))
        .unwrap_or_else(|| panic!("{text}"));
    for c in columns {
        assert!(lines[header].contains(c), "{c}: {}", lines[header]);
    }
    assert!(
        lines[header + 1].trim_start().starts_with("(MB/s)"),
        "{text}"
    );
    // The width rows end where the titles end: numbers aligned right.
    let width = lines[header].chars().count();
    let rows: Vec<&&str> = lines[header + 2..]
        .iter()
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(!rows.is_empty(), "{text}");
    for r in rows {
        assert_eq!(r.chars().count(), width, "not aligned: {r:?} in\n{text}");
    }
}

#[test]
fn bench_mem_prints_an_aligned_table_titled_mem() {
    // `bench mem` printed "## mmio — this run", a Context table and pipe
    // tables on the terminal.
    let (code, text, stderr) = stderr_of(headroom().args([
        "bench",
        "mem",
        "--size",
        "16M",
        "--width",
        "8,64",
        "--duration",
        "100ms",
        "--no-save",
    ]));
    assert_eq!(code, 0, "{stderr}");
    assert_terminal_table(
        &text,
        "headroom bench mem",
        &[
            "Access",
            "DRAM store",
            "DRAM load",
            "Load per access, batch p50 / p99",
        ],
    );
    // The time per access is a batch's mean, and said so: a load in cache takes a fraction
    // of a nanosecond of it, below one CPU cycle, which as a bare "p50" read as one load's.
    assert!(
        text.contains("Per access: a batch of accesses (one sweep of about 64 KiB)")
            && text.contains("A mean, not one access's latency"),
        "{text}"
    );
    assert!(!text.contains("mmio"), "{text}");
    assert!(text.contains("DRAM memcpy (C library"), "{text}");
}

/// A result that cannot be kept is still shown: the textfile directory passes the check made
/// before the run, but a directory stands where the metrics file goes, so writing it fails
/// after minutes of measuring; the table reaches stdout first, then the failure (exit 1).
#[test]
fn bench_mem_shows_a_result_it_could_not_keep() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("headroom-mmio.prom")).unwrap();
    let (code, text, stderr) = stderr_of(headroom().args([
        "bench",
        "mem",
        "--size",
        "16M",
        "--width",
        "64",
        "--duration",
        "1s",
        "--no-save",
        "--textfile-dir",
        dir.path().to_str().unwrap(),
    ]));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        text.contains("DRAM load"),
        "the table was not shown: {text:?}\n{stderr}"
    );
    assert!(
        stderr.contains("headroom-mmio.prom is a directory"),
        "{stderr}"
    );
}

#[test]
fn bench_mem_measures_every_width_and_memcpy_on_a_buffer_beyond_the_cache() {
    let v = json_of(headroom().args([
        "bench",
        "mem",
        "--width",
        "32,128",
        "--max-sweeps",
        "1",
        "--duration",
        "30s",
        "--no-save",
        "--json",
    ]));
    let m = &v["memory"];
    let buffer = m["buffer_bytes"].as_u64().unwrap();
    if let Some(llc) = m["llc_bytes"].as_u64() {
        assert!(buffer > llc, "the buffer must outgrow the {llc}-byte cache");
    }
    let results = m["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "2 widths x load, store");
    for r in results {
        let w = r["width"].as_str().unwrap().parse::<u64>().unwrap() / 8;
        assert_eq!(r["accesses"].as_u64().unwrap(), buffer / w, "{r}");
    }
    // A typo in --size cannot push the machine into the OOM killer.
    let (code, _, stderr) = stderr_of(headroom().args(["bench", "mem", "--size", "64T"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--size 64T: a buffer above half of the"),
        "{stderr}"
    );
    let copy = &m["copy"];
    assert_eq!(
        copy["bytes"].as_u64().unwrap(),
        buffer / 2,
        "one sweep of half the buffer"
    );
    assert!(v["region"].is_null());
}

#[test]
fn reports_compare_and_history_read_mmio_results() {
    let f = bar_file(64 * 1024, |i| i as u8);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite");
    let run = |out: &str| {
        let (code, stdout, stderr) = stderr_of(headroom().args([
            "bench",
            "mmio",
            f.path().to_str().unwrap(),
            "--width",
            "32,128",
            "--duration",
            "100ms",
            "--output",
            dir.path().join(out).to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ]));
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let text = run("a.json");
    // The seed's shape: one row per access kind, Store and Load MB/s, DRAM beside, as an
    // aligned terminal table (it printed Markdown on the terminal).
    assert_terminal_table(
        &text,
        &format!("headroom bench mmio {}", f.path().display()),
        &["Access", "Store", "Load", "DRAM store", "DRAM load"],
    );
    assert!(
        text.lines().any(|l| l.starts_with("128-bit SIMD ")),
        "{text}"
    );
    run("b.json");
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let (code, report, stderr) = stderr_of(headroom().args(["report", a.to_str().unwrap()]));
    assert_eq!(code, 0, "{stderr}");
    assert!(report.contains("### CPU access by width"), "{report}");
    let (code, cmp, stderr) =
        stderr_of(headroom().args(["compare", a.to_str().unwrap(), b.to_str().unwrap()]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        cmp.contains("32-bit load") && cmp.contains("DRAM 128-bit SIMD load"),
        "{cmp}"
    );
    let (code, hist, stderr) =
        stderr_of(headroom().args(["history", "--db", db.to_str().unwrap()]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(hist.matches("mmio").count(), 2, "{hist}");
}

#[test]
fn sigterm_keeps_what_was_measured_and_exits_143() {
    let child = headroom_process()
        .args([
            "bench",
            "mem",
            "--size",
            "16M",
            "--width",
            "8",
            "--op",
            "load",
            "--duration",
            "20s",
            "--no-save",
            "--no-copy",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_measuring(&child);
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("8-bit ")), "{stdout}");
}

#[test]
fn ctrl_c_keeps_what_was_measured_and_exits_130() {
    let child = headroom_process()
        .args([
            "bench",
            "mem",
            "--duration",
            "3s",
            "--no-save",
            "--width",
            "8,16,32,64",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_measuring(&child);
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with("8-bit ")),
        "the first width was measured: {stdout}"
    );
}

/// Resident memory of `pid`, KiB (VmRSS in /proc/PID/status).
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// The state letter of `pid` (`R`, `S`, `T` when stopped) in /proc/PID/stat.
fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

/// `bench mem` stopped while it fills its buffer (the default
/// is four times the last-level cache, 1 GiB here, written before the first width runs)
/// said "the results above are those measured before it" under an empty table. It is
/// caught in the fill deterministically: stopped (SIGSTOP) once its buffer is partly
/// resident and before it forked the first width's measuring process, then Ctrl-C is sent
/// and it is let go: the handler runs before anything else of it does.
#[test]
fn ctrl_c_while_the_buffer_fills_says_nothing_was_measured() {
    for attempt in 0..5 {
        let child = headroom_process()
            .args([
                "bench",
                "mem",
                "--size",
                "512M",
                "--width",
                "8",
                "--no-save",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let filling = || resident_kib(pid) > 64 << 10 || !children(pid).is_empty();
        assert!(wait_until(Duration::from_secs(60), filling), "no fill");
        // SAFETY: signals to our own child.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        assert!(wait_until(Duration::from_secs(10), || state_of(pid) == Some('T')));
        let in_fill = children(pid).is_empty();
        // SAFETY: as above.
        unsafe {
            libc::kill(pid as i32, libc::SIGINT);
            libc::kill(pid as i32, libc::SIGCONT);
        }
        let out = child.wait_with_output().unwrap();
        if !in_fill {
            // A fast machine filled it between two looks: the first width had begun.
            eprintln!("attempt {attempt}: the fill was over before the stop");
            continue;
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        assert!(
            stderr.contains(
                "headroom: interrupted by SIGINT (Ctrl-C): nothing was measured: it came while \
                 the 512 MiB buffer was being filled, before the first width ran"
            ),
            "{stderr}"
        );
        assert!(!stderr.contains("results above"), "{stderr}");
        assert!(stdout.is_empty(), "no empty table: {stdout}");
        return;
    }
    panic!("the fill of 512 MiB was always over before the stop");
}

#[test]
fn path_of_a_function_and_its_bar_reaches_the_cpu() {
    if !have_function() {
        return;
    }
    for t in [FUNCTION, "00:02.0:0"] {
        let v = json_of(headroom().args(["path", t, "--json"]));
        let hops = v["path"]["chain"]["hops"].as_array().unwrap();
        assert_eq!(hops[0]["hop"], "pci", "{v}");
        assert_eq!(hops[0]["address"], FUNCTION);
        assert_eq!(hops.last().unwrap()["hop"], "cpu");
    }
}

#[test]
fn a_file_truncated_during_the_run_is_a_reported_sigbus_not_a_crash() {
    // The stand-in for a device that stops answering: the file shrinks under the mapping.
    for attempt in 0..3 {
        let f = bar_file(1 << 20, |_| 7);
        let child = headroom_process()
            .args([
                "bench",
                "mmio",
                f.path().to_str().unwrap(),
                "--width",
                "32",
                "--duration",
                "20s",
                "--no-mem",
                "--no-save",
                "--json",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_measuring(&child);
        std::fs::OpenOptions::new()
            .write(true)
            .open(f.path())
            .unwrap()
            .set_len(256 * 1024)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["region"]["window_bytes"] != 1 << 20 {
            // The file was cut before headroom mapped it: nothing to see, try again.
            eprintln!("attempt {attempt}: truncated before the mapping");
            continue;
        }
        let r = &v["results"][0];
        assert_eq!(r["fault"]["signal"], "SIGBUS", "{v}");
        // Where the sweep was when the pages went: past the cut, inside the file as mapped,
        // on an access of the width asked.
        let at = r["fault"]["offset"].as_u64().unwrap();
        assert!((256 * 1024..1 << 20).contains(&at) && at % 4 == 0, "{v}");
        assert!(
            r["mb_per_s"].as_f64().unwrap() > 0.0,
            "the accesses before count: {v}"
        );
        assert_eq!(r["width"], "32");
        let note = v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n.as_str().unwrap().contains("took SIGBUS"))
            .expect("a note says where");
        assert!(
            note.as_str()
                .unwrap()
                .contains(&format!("32-bit load took SIGBUS at offset {at:#x}")),
            "{note}"
        );
        return;
    }
    panic!("the file was always cut before headroom mapped it");
}

/// `program ARGS` run as user nobody; `None` (skipped) where the tests cannot drop to it.
fn as_nobody_ran(program: &str, args: &[&str]) -> Option<()> {
    let out = testsupport::process::as_nobody(Path::new(program))?
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?} as nobody: {out:?}"
    );
    Some(())
}

/// Stores into a file go only into a regular file of the user running headroom with no other
/// name, opened without following a link: in a sticky world-writable directory (/dev/shm,
/// /tmp) another user can plant a link to root's file, or a file of their own, under the name
/// root then gives to `--write`. Neither is mapped; root's file keeps its bytes.
#[test]
fn stores_refuse_a_link_or_another_users_file_planted_in_a_shared_directory() {
    use std::os::unix::fs::PermissionsExt;
    let Some(_links) = testsupport::process::Sysctl::unprotected_symlinks() else {
        return;
    };
    let shared = testsupport::process::sticky_dir();
    // Root's private file, elsewhere.
    let victim = bar_file(64 * 1024, |i| (i % 251) as u8);
    std::fs::set_permissions(victim.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::read(victim.path()).unwrap();
    let link = shared.path().join("bar.bin");
    let link_s = link.to_str().unwrap();
    let Some(()) = as_nobody_ran(
        "/usr/bin/ln",
        &["-s", victim.path().to_str().unwrap(), link_s],
    ) else {
        return;
    };
    let store = |target: &str| {
        stderr_of(headroom().args([
            "bench",
            "mmio",
            target,
            "--write",
            target,
            "--width",
            "64",
            "--max-sweeps",
            "1",
            "--no-save",
        ]))
    };
    let (code, _, stderr) = store(link_s);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stores to {link_s} are refused: it is a symbolic link"
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(victim.path()).unwrap(),
        before,
        "root's file was written"
    );
    // A file of nobody's own under the name is not written either.
    let planted = shared.path().join("planted.bin");
    let planted_s = planted.to_str().unwrap();
    let Some(()) = as_nobody_ran(
        "/usr/bin/dd",
        &[
            "if=/dev/zero",
            &format!("of={planted_s}"),
            "bs=4096",
            "count=16",
            "status=none",
        ],
    ) else {
        return;
    };
    let (code, _, stderr) = store(planted_s);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("it belongs to user 65534, and headroom writes only into its own"),
        "{stderr}"
    );
    assert!(std::fs::read(&planted).unwrap().iter().all(|&b| b == 0));
    // Root's own file there is written as asked.
    let own = shared.path().join("own.bin");
    std::fs::write(&own, vec![0u8; 64 * 1024]).unwrap();
    let (code, _, stderr) = store(own.to_str().unwrap());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        std::fs::read(&own).unwrap().iter().any(|&b| b != 0),
        "no store landed"
    );
}
