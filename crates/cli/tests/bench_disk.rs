//! `headroom bench disk` as a user runs it: real runs on small files with every profile and
//! engine, Ctrl-C, a mounted loop device, bad flags. Root-only cases say so and skip.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use testsupport::cmd::*;
use testsupport::process::{is_root, output_within, signal, spawn_piped, wait_until};

/// A directory on the machine's real disk (not tmpfs), so the cross-check sees a block device.
fn disk_dir() -> tempfile::TempDir {
    testsupport::cmd::disk_dir("headroom-disk-test")
}

fn run_json(args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut c = headroom();
    c.arg("--json").arg("bench").arg("disk").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    json_of(&mut c)
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// What a user checks in every result: bytes moved, consistent units, the kernel agreeing.
fn check_result(doc: &Value, engine: &str, tests: usize) {
    check_result_on(doc, engine, tests, true)
}

/// `exact_proc_io`: /proc/self/io is the cross-check (a file, or psync); false for io_uring
/// on a block device, where it counts resubmitted I/Os and /proc/diskstats is the one.
fn check_result_on(doc: &Value, engine: &str, tests: usize, exact_proc_io: bool) {
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "disk");
    assert_eq!(doc["parameters"]["engine"], engine);
    let t = doc["tests"].as_array().unwrap();
    assert_eq!(t.len(), tests, "{:#}", doc["tests"]);
    for test in t {
        for run in test["runs"].as_array().unwrap() {
            let bytes = run["bytes"].as_u64().unwrap();
            let secs = run["seconds"].as_f64().unwrap();
            assert!(bytes > 0 && secs > 0.0, "{run:#}");
            let mbs = run["mb_per_s"].as_f64().unwrap();
            assert!((mbs - bytes as f64 / secs / 1e6).abs() < 1e-6 * mbs.max(1.0));
            let mibs = run["mib_per_s"].as_f64().unwrap();
            assert!((mibs * 1_048_576.0 - mbs * 1e6).abs() < 1e-3 * mbs.max(1.0) * 1e6);
            let lat = &run["latency"];
            let (min, p50, p99, max) = (
                lat["min_ns"].as_u64().unwrap(),
                lat["p50_ns"].as_u64().unwrap(),
                lat["p99_ns"].as_u64().unwrap(),
                lat["max_ns"].as_u64().unwrap(),
            );
            // HDR percentiles are within 0.1 % of the exact value.
            assert!(
                min as f64 <= p50 as f64 * 1.001 && p50 <= p99 && p99 as f64 <= max as f64 * 1.001
            );
            // clat (fio's: from the submitting call's return) is within lat (slat + clat);
            // a synchronous engine's submission is the whole I/O, so there they are equal.
            let clat = &run["clat"];
            for k in ["min_ns", "p50_ns", "p99_ns", "max_ns"] {
                let (c, l) = (clat[k].as_u64().unwrap(), lat[k].as_u64().unwrap());
                if engine == "psync" {
                    assert_eq!(c, l, "psync clat {k}: {run:#}");
                } else {
                    assert!(c as f64 <= l as f64 * 1.001, "clat {k} above lat: {run:#}");
                }
            }
            let (cm, lm) = (
                clat["mean_ns"].as_f64().unwrap(),
                lat["mean_ns"].as_f64().unwrap(),
            );
            assert!(cm > 0.0 && cm <= lm * 1.001, "clat mean {cm} vs lat {lm}");
            let cc = &run["cross_check"];
            // O_DIRECT reads: the kernel's count of this process's bytes equals the engine's.
            let n = |k: &str| cc[k].as_u64().unwrap() as f64;
            let (app_r, app_w) = (n("app_read_bytes"), n("app_write_bytes"));
            let (k_r, k_w) = (n("proc_io_read_bytes"), n("proc_io_write_bytes"));
            if exact_proc_io {
                assert!(
                    (k_r - app_r).abs() <= 0.01 * app_r,
                    "read cross-check: {cc:#}"
                );
                // Writes to a file can also dirty filesystem metadata, which the kernel charges
                // to the writer (up to 1.5 MB/s seen on this VM's root ext4): never less than
                // the data, at most a few MB per second of run.
                let extra = k_w - app_w;
                let bound = 4e6 * (secs + doc["parameters"]["ramp_s"].as_f64().unwrap()) + 1e6;
                assert!(
                    (0.0..=bound).contains(&extra),
                    "write cross-check: {extra} bytes over {secs} s: {cc:#}"
                );
            } else {
                assert!(cc["proc_io_error_percent"].is_null(), "{cc:#}");
                assert!(k_r + k_w >= app_r + app_w, "shown as counted: {cc:#}");
            }
            // The disk saw at least these bytes (other traffic only adds).
            if let Some(d) = cc["diskstats_error_percent"].as_f64() {
                assert!(d > -1.0, "diskstats saw fewer bytes than written: {cc:#}");
            }
        }
    }
}

#[test]
fn every_profile_runs_with_both_engines_and_leaves_no_file() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    for (profile, tests) in [
        ("cdm", 8),
        ("cdm-nvme", 8),
        ("peak", 4),
        ("real", 4),
        ("rk", 4),
        ("dd", 10),
    ] {
        for engine in ["io_uring", "psync"] {
            let mut args = vec![d, "--profile", profile, "--engine", engine];
            args.extend(SMALL_DISK_RUN);
            let doc = run_json(&args, &[]);
            check_result(&doc, engine, tests);
            assert!(
                entries(dir.path()).is_empty(),
                "{profile}: file left behind"
            );
        }
    }
}

#[test]
fn psync_fallback_when_io_uring_is_unavailable() {
    let dir = disk_dir();
    let mut args = vec![dir.path().to_str().unwrap(), "--rw", "randrw", "--qd", "8"];
    args.extend(SMALL_DISK_RUN);
    let doc = run_json(&args, &[("HEADROOM_DISABLE_IO_URING", "1")]);
    check_result(&doc, "psync", 1);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("using the psync engine instead"), "{notes}");
    assert!(notes.contains("queue depths above 1 run as QD1"), "{notes}");
    assert!(
        notes.contains("write cross-check may read a little high"),
        "{notes}"
    );
    let run = &doc["tests"][0]["runs"][0];
    assert!(run["read_bytes"].as_u64().unwrap() > 0 && run["write_bytes"].as_u64().unwrap() > 0);
    // Asking for io_uring by name when it is unavailable is an error, not a silent fallback.
    let out = headroom()
        .env("HEADROOM_DISABLE_IO_URING", "1")
        .args([
            "bench",
            "disk",
            dir.path().to_str().unwrap(),
            "--engine",
            "io_uring",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("io_uring is disabled"));
}

#[test]
fn table_has_units_in_every_header() {
    let dir = disk_dir();
    let mut args = vec![
        "bench",
        "disk",
        dir.path().to_str().unwrap(),
        "--profile",
        "real",
    ];
    args.extend(SMALL_DISK_RUN);
    let out = headroom().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for unit in ["(MB/s)", "(MiB/s)", "(IOPS)", "(us)", "error (%)"] {
        assert!(text.contains(unit), "{unit} missing in\n{text}");
    }
    // Microseconds are spelled `us` in every table headroom prints (cyclictest's spelling,
    // also the latency and compare tables'), so a survey or a log never mixes two spellings.
    assert!(!text.contains('µ'), "{text}");
    assert!(
        text.contains("SEQ1M Q1T1   read") || text.contains("SEQ1M Q1T1  read"),
        "{text}"
    );
    assert!(text.contains("no ceiling"), "{text}");
}

#[test]
fn ctrl_c_removes_the_test_file() {
    let dir = disk_dir();
    let mut child = headroom_process()
        .args(["bench", "disk"])
        .arg(dir.path())
        .args([
            "--rw",
            "randread",
            "--size",
            "32M",
            "--time-based",
            "--runtime",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) for the file to exist, then for the measured run to read from it.
    assert!(wait_for_file(dir.path()), "the test file never appeared");
    assert!(
        measured_reads(child.id(), 32 << 20),
        "the run never started reading"
    );
    signal(&child, libc::SIGINT);
    let out = output_within(&mut child, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        entries(dir.path()).is_empty(),
        "file left behind: {:?}",
        entries(dir.path())
    );
}

/// A target that cannot be used: one sentence, exit 1.
fn fails_with(args: &[&str], sentence: &str) {
    fails_with_code(args, sentence, 1)
}

/// A bad value of a flag: a usage error, one sentence, exit 2 (as clap and every command).
fn usage_error(args: &[&str], sentence: &str) {
    fails_with_code(args, sentence, 2)
}

fn fails_with_code(args: &[&str], sentence: &str, code: i32) {
    fails_saying(
        headroom().args(["bench", "disk"]).args(args),
        code,
        sentence,
    );
}

#[test]
fn bad_flags_get_one_clear_sentence() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    // Every bad value is a usage error, exit 2 (not a failure, 1).
    let bad: [(&[&str], &str); 11] = [
        (
            &["--bs", "3"],
            "--bs 3: block size must be between 512 bytes and 64 MiB",
        ),
        (
            &["--qd", "0"],
            "--qd 0: queue depth must be between 1 and 1024",
        ),
        (&["--bs", "4x"], "--bs 4x: unknown unit \"x\""),
        (
            &["--size", "0.3k"],
            "--size 0.3k: 307.2 is not a whole number",
        ),
        (&["--runtime", "5y"], "--runtime 5y: unknown unit \"y\""),
        (&["--profile", "atto"], "--profile atto: no such profile"),
        (&["--engine", "libaio"], "--engine libaio: no such engine"),
        (
            &["--jobs", "100000"],
            "--jobs 100000: jobs must be between 1 and",
        ),
        (&["--rwmixread", "101", "--rw", "randrw"], "--rwmixread 101"),
        // fio ignores rwmixread without a mix; a user who gave it meant one.
        (
            &["--rwmixread", "70"],
            "--rwmixread 70: only a mixed workload has a read share",
        ),
        (
            &["--rw", "randread", "--rwmixread", "70"],
            "--rwmixread 70: only a mixed workload has a read share",
        ),
    ];
    for (args, sentence) in bad {
        usage_error(&[&[d][..], args].concat(), sentence);
    }
    fails_with(
        &["/nonexistent/dir/file"],
        "its directory /nonexistent/dir does not exist; create it (mkdir -p /nonexistent/dir)",
    );
    // What a user types: a relative path whose directory is missing.
    fails_with(
        &["./nodir/x"],
        "./nodir/x: its directory ./nodir does not exist; create it (mkdir -p ./nodir)",
    );
    // An existing file is never written without --overwrite, and stays as it was.
    let keep = dir.path().join("keep.bin");
    std::fs::write(&keep, vec![42u8; 1 << 20]).unwrap();
    fails_with(
        &[keep.to_str().unwrap(), "--rw", "write", "--size", "1M"],
        "never overwrites a file without --overwrite",
    );
    assert_eq!(std::fs::read(&keep).unwrap(), vec![42u8; 1 << 20]);
    // Free space is checked before anything is written.
    fails_with(&[d, "--size", "1048576G"], "MiB free on the filesystem of");
    assert_eq!(entries(dir.path()), ["keep.bin"]);
}

#[test]
fn directory_without_write_permission() {
    let dir = disk_dir();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("headroom");
    let mut cmd = if is_root() {
        // Root ignores permission bits: run as nobody, as a user would be.
        if !Path::new("/usr/bin/setpriv").exists() {
            testsupport::skip::skip("running as root without setpriv to drop privileges");
            return;
        }
        let mut c = std::process::Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    let out = cmd
        .env("XDG_DATA_HOME", xdg_data_home())
        .args(["bench", "disk"])
        .arg(&ro)
        .args(["--size", "1M"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && err.contains("setpriv") {
        testsupport::skip::skip(&format!(
            "the binary is not reachable by user nobody: {err}"
        ));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("permission denied; choose a directory you can write to"),
        "{err}"
    );
}

/// Runs `cmd`, panicking with its stderr on failure.
fn sh(cmd: &[&str]) -> String {
    let out = std::process::Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Undoes mounts and loop devices whatever the test's outcome.
struct Cleanup(Vec<Vec<String>>);

impl Cleanup {
    /// A loop device over a new sparse image of `bytes` in `dir`, detached at the end.
    fn loop_device(&mut self, dir: &Path, bytes: u64) -> String {
        let img = dir.join("disk.img");
        std::fs::File::create(&img).unwrap().set_len(bytes).unwrap();
        self.losetup(&[img.to_str().unwrap()])
    }

    /// `losetup -f --show ARGS...`: a new loop device (its /dev path), detached at the end.
    fn losetup(&mut self, args: &[&str]) -> String {
        let dev = sh(&[&["losetup", "-f", "--show"], args].concat());
        self.0
            .push(vec!["losetup".into(), "-d".into(), dev.clone()]);
        dev
    }

    /// `mount ARGS... AT`, unmounted at the end.
    fn mount(&mut self, args: &[&str], at: &str) {
        sh(&["mount"]
            .iter()
            .chain(args)
            .chain(&[at])
            .copied()
            .collect::<Vec<_>>());
        self.0.push(vec!["umount".into(), at.to_string()]);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for cmd in self.0.iter().rev() {
            if let ["umount", at] = cmd.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                unmount(at);
            } else {
                run_ok(cmd);
            }
        }
    }
}

fn run_ok(cmd: &[String]) -> bool {
    std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A filesystem is busy for a moment after the benchmark exits (io_uring releases its files
/// from a kernel worker): retry for up to 5 s, then detach it lazily, so no test leaves a mount
/// behind.
fn unmount(at: &str) {
    for _ in 0..50 {
        if run_ok(&["umount".into(), at.into()]) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    run_ok(&["umount".into(), "-l".into(), at.into()]);
}

#[test]
fn writing_to_a_mounted_device_is_refused() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup) to mount a test device");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let dev = cleanup.loop_device(dir.path(), 64 << 20);
    sh(&["mkfs.ext4", "-q", "-F", &dev]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    cleanup.mount(&[&dev], mnt.to_str().unwrap());

    fails_with(
        &[&dev, "--rw", "write", "--size", "8M"],
        "writing to it destroys its data, so write tests need --destructive",
    );
    fails_with(
        &[&dev, "--rw", "write", "--size", "8M", "--destructive"],
        &format!("is mounted on {}", mnt.display()),
    );
    // Reading a mounted device is harmless and runs; it resolves to the loop device itself.
    let doc = run_json(
        &[&dev, "--rw", "read", "--size", "8M", "--runtime", "0.3"],
        &[],
    );
    check_result_on(&doc, "io_uring", 1, false);
    assert!(doc["notes"]
        .to_string()
        .contains("the kernel's cross-check is /proc/diskstats"));
    assert_eq!(doc["target"]["kind"], "block_device");
    assert_eq!(
        doc["target"]["device"]["name"],
        dev.trim_start_matches("/dev/")
    );
    // A file on the mounted filesystem resolves to the same device.
    let doc = run_json(
        &[mnt.to_str().unwrap(), "--rw", "write", "--size", "4M"],
        &[],
    );
    assert_eq!(
        doc["target"]["device"]["name"],
        dev.trim_start_matches("/dev/")
    );
    assert_eq!(entries(&mnt), ["lost+found"]);
}

/// A partition that backs a mounted loop device was written with
/// --destructive, destroying the filesystem on top (loop devices appear neither in holders/
/// nor as an exclusive claim). Two loop devices: a partitioned one (its partition added with
/// addpart, BLKPG: this kernel has no partition table parsers), whose second partition backs
/// a second loop device with a mounted ext4. Writing the partition, or its whole disk, is
/// refused naming the loop device and where it is mounted; the filesystem is intact.
#[test]
fn a_device_backing_a_mounted_loop_device_is_held() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup)");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let img = dir.path().join("parted.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let disk = cleanup.losetup(&["-P", img.to_str().unwrap()]);
    // Partition 2: 32 MiB from sector 34816 (512-byte sectors).
    sh(&["addpart", &disk, "2", "34816", "65536"]);
    let part = format!("{disk}p2");
    assert!(
        wait_until(Duration::from_secs(10), || Path::new(&part).exists()),
        "{part} did not appear"
    );
    let upper = cleanup.losetup(&[&part]);
    sh(&["mkfs.ext4", "-q", "-F", &upper]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    cleanup.mount(&[&upper], mnt.to_str().unwrap());
    std::fs::write(mnt.join("kept.txt"), "the filesystem on top\n").unwrap();
    let name = |d: &str| d.trim_start_matches("/dev/").to_string();
    for target in [&part, &disk] {
        let err = fails_saying(
            headroom()
                .args(["bench", "disk", target, "--rw", "write", "--size", "4M"])
                .arg("--destructive"),
            1,
            &format!(
                "{} backs loop device {}, and {} is mounted on {}",
                name(&part),
                name(&upper),
                name(&upper),
                mnt.display()
            ),
        );
        assert!(err.contains("losetup -d"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(mnt.join("kept.txt")).unwrap(),
        "the filesystem on top\n"
    );
}

/// A disk image that a loop device reads (mounted with `mount -o loop`) is held as a mounted
/// device is: `--overwrite` on it, by its own name or by another path to the same file (a
/// directory reached through a symbolic link), is refused naming the loop device and where
/// it is mounted, and the filesystem in the image is left intact.
#[test]
fn an_image_file_backing_a_mounted_loop_device_is_held() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup)");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    sh(&["mkfs.ext4", "-q", "-F", img.to_str().unwrap()]);
    let dev = cleanup.losetup(&[img.to_str().unwrap()]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    cleanup.mount(&[&dev], mnt.to_str().unwrap());
    std::fs::write(mnt.join("kept.txt"), "the filesystem in the image\n").unwrap();
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(dir.path(), &alias).unwrap();
    let loop_name = dev.trim_start_matches("/dev/");
    for target in [img.clone(), alias.join("disk.img")] {
        let err = fails_saying(
            headroom().args(["bench", "disk"]).arg(&target).args([
                "--overwrite",
                "--rw",
                "write",
                "--size",
                "4M",
                "--no-save",
            ]),
            1,
            &format!(
                "it is the backing file of loop device {loop_name}, and {loop_name} is \
                 mounted on {}",
                mnt.display()
            ),
        );
        assert!(err.contains("losetup -d"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(mnt.join("kept.txt")).unwrap(),
        "the filesystem in the image\n"
    );
}

#[test]
fn full_filesystem_is_a_clear_sentence() {
    if !is_root() {
        testsupport::skip::skip("needs root to mount a small tmpfs");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let m = dir.path().to_str().unwrap();
    cleanup.mount(&["-t", "tmpfs", "-o", "size=4m", "tmpfs"], m);
    fails_with(
        &[m, "--size", "16M", "--direct", "0"],
        "only 4 MiB free on the filesystem of",
    );
    // tmpfs is not a block device: the run still works and says there is no disk cross-check.
    let doc = run_json(
        &[m, "--size", "2M", "--direct", "0", "--runtime", "0.3"],
        &[],
    );
    assert!(doc["target"]["device"].is_null());
    assert!(doc["target"]["device_note"]
        .as_str()
        .unwrap()
        .contains("not a block device"));
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn ramp_is_excluded_but_cross_checked() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    let doc = run_json(
        &[
            d, "--rw", "randread", "--qd", "4", "--size", "16M", "--ramp", "0.2",
        ]
        .into_iter()
        .chain(["--time-based", "--runtime", "0.3"])
        .collect::<Vec<_>>(),
        &[],
    );
    check_result(&doc, "io_uring", 1);
    let run = &doc["tests"][0]["runs"][0];
    let measured = run["bytes"].as_u64().unwrap();
    let all = run["cross_check"]["app_read_bytes"].as_u64().unwrap();
    // The ramp's reads reached the disk (the kernel counted them) but not the result.
    assert!(all > measured, "ramp bytes missing: {run:#}");
    assert_eq!(doc["parameters"]["ramp_s"], 0.2);
}

#[test]
fn written_data_is_random_unless_zero_and_an_existing_file_stays() {
    let dir = disk_dir();
    let f = dir.path().join("existing.bin");
    std::fs::write(&f, vec![0xAAu8; 1 << 20]).unwrap();
    let p = f.to_str().unwrap();
    let write = [
        "--rw",
        "write",
        "--size",
        "1M",
        "--overwrite",
        "--fsync-end",
    ];
    let doc = run_json(&[&[p][..], &write, &["--zero"]].concat(), &[]);
    assert!(doc["tests"][0]["runs"][0]["fsync_s"].as_f64().unwrap() >= 0.0);
    let data = std::fs::read(&f).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert!(data.iter().all(|b| *b == 0), "--zero wrote non-zero bytes");
    run_json(&[&[p][..], &write].concat(), &[]);
    let data = std::fs::read(&f).unwrap();
    let zeros = data.iter().filter(|b| **b == 0).count();
    let marks = data.iter().filter(|b| **b == 0xAA).count();
    // Random bytes: about 1/256 of each value.
    assert!(
        zeros < data.len() / 100 && marks < data.len() / 100,
        "{zeros} {marks}"
    );
    assert_eq!(entries(dir.path()), ["existing.bin"]);
}

/// `--output` is written after each test: Ctrl-C after the first test leaves a document with
/// what was measured, marked interrupted, and the history keeps it too.
#[test]
fn interrupted_run_keeps_what_it_measured() {
    let dir = disk_dir();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("run.json");
    let db = out_dir.path().join("history.sqlite");
    let mut child = headroom_process()
        .args(["bench", "disk"])
        .arg(dir.path())
        .args([
            "--profile",
            "peak",
            "--size",
            "16M",
            "--runtime",
            "1",
            "--runs",
            "1",
        ])
        .arg("--output")
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The document appears after the first of the four tests; stop the run then.
    assert!(
        wait_until(Duration::from_secs(60), || out.exists()),
        "no result document after the first test"
    );
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(doc["kind"], "disk");
    let tests = doc["tests"].as_array().unwrap();
    assert!(!tests.is_empty());
    if status.code() == Some(130) {
        assert_eq!(doc["interrupted"], true);
        assert!(tests.len() < 4);
    } else {
        // The signal came after the last test: a complete run.
        assert!(status.success());
        assert_eq!(tests.len(), 4);
    }
    assert!(entries(dir.path()).is_empty(), "test file left behind");
    headroom()
        .args(["history", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("disk"));
}

/// Bytes this process has read from storage so far (`read_bytes` of /proc/PID/io).
/// Whether the benchmark `pid` has read 1 MiB from storage: its measured run is under way
/// (the fill only writes) and has completed I/Os (at most a queue's depth of the bytes read
/// is still in flight), so a stop now leaves a measurement.
/// Waits (bounded, 60 s each) until the run of `pid` has filled its test file of `size`
/// bytes and then read 1 MiB from it: the reads the measured run makes. Reads before the
/// fill ends are not the run's (a loaded machine pages the binary itself back in: that
/// read 1 MiB before anything was measured, and the run was stopped with nothing to keep).
fn measured_reads(pid: u32, size: u64) -> bool {
    use testsupport::process::io_counter;
    if !wait_until(Duration::from_secs(60), || {
        io_counter(pid, "write_bytes") >= size
    }) {
        return false;
    }
    let base = io_counter(pid, "read_bytes");
    wait_until(Duration::from_secs(60), || {
        io_counter(pid, "read_bytes") > base + (1 << 20)
    })
}

/// Waits (bounded, 30 s) until a file appears in `dir`; whether one did.
fn wait_for_file(dir: &Path) -> bool {
    wait_until(Duration::from_secs(30), || !entries(dir).is_empty())
}

/// One test stopped by SIGINT or SIGTERM while it measures keeps the
/// seconds it measured (as fio does), marked interrupted, on stdout, in --output and in the
/// history; the exit code is 128 + the signal.
#[test]
fn single_test_interrupted_keeps_its_partial_measurement() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = disk_dir();
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("run.json");
        let db = out_dir.path().join("history.sqlite");
        let mut child = spawn_piped(
            headroom_process()
                .args(["--json", "bench", "disk"])
                .arg(dir.path())
                .args(["--rw", "randread", "--size", "16M", "--time-based"])
                .args(["--runtime", "120", "--output"])
                .arg(&out)
                .arg("--db")
                .arg(&db),
        );
        assert!(
            measured_reads(child.id(), 16 << 20),
            "the run never started reading"
        );
        signal(&child, sig);
        let output = output_within(&mut child, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "signal {sig}: {err}");
        let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
        let saved: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        for d in [&doc, &saved] {
            assert_eq!(d["interrupted"], true, "{d:#}");
            let run = &d["tests"][0]["runs"][0];
            assert_eq!(run["interrupted"], true, "{run:#}");
            assert!(run["bytes"].as_u64().unwrap() > 0, "{run:#}");
            assert!(run["seconds"].as_f64().unwrap() > 0.0, "{run:#}");
            assert!(run["iops"].as_f64().unwrap() > 0.0, "{run:#}");
        }
        assert!(doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("was stopped after"));
        assert!(entries(dir.path()).is_empty(), "test file left behind");
        let listed = headroom()
            .args(["history", "--json", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(listed.status.success());
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains("disk"),
            "the interrupted run is not in the history"
        );
    }
}

/// --output in a missing directory or on a read-only mount is refused before
/// anything runs (a usage error), and a failure after the run still leaves the results on
/// stdout and in the history.
#[test]
fn output_is_checked_before_the_run_and_results_are_never_lost() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    usage_error(
        &[d, "--output", "/nonexistent/dir/run.json"],
        "--output /nonexistent/dir/run.json: the directory /nonexistent/dir does not exist",
    );
    usage_error(&[d, "--output", d], "is a directory: give a file name");
    assert!(entries(dir.path()).is_empty(), "a test file was created");
    if is_root() {
        let ro = tempfile::tempdir().unwrap();
        let m = ro.path().to_str().unwrap();
        let mut cleanup = Cleanup(Vec::new());
        cleanup.mount(&["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"], m);
        usage_error(
            &[d, "--output", &format!("{m}/run.json")],
            "its filesystem is read-only",
        );
    } else {
        testsupport::skip::skip("the read-only mount needs root");
    }
    // The directory of --output disappears during the run: the numbers still reach stdout and
    // the history, and the error says why once, without repeating the OS's words.
    let out_dir = tempfile::tempdir().unwrap();
    let gone = out_dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let db = out_dir.path().join("history.sqlite");
    let mut child = spawn_piped(
        headroom_process()
            .args(["--json", "bench", "disk", d])
            .args(["--rw", "randread", "--size", "8M", "--time-based"])
            .args(["--runtime", "3", "--output"])
            .arg(gone.join("run.json"))
            .arg("--db")
            .arg(&db),
    );
    wait_for_file(dir.path());
    std::fs::remove_dir(&gone).unwrap();
    let output = output_within(&mut child, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    check_result(&doc, "io_uring", 1);
    assert!(err.contains("cannot write the result to"), "{err}");
    for line in err.lines() {
        assert!(
            line.matches("No such file or directory").count() <= 1,
            "{err}"
        );
    }
    let listed = headroom()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("disk"));
}

/// A /dev path that is no block device is refused instead of benchmarking a
/// new file on devtmpfs (RAM); a bare block device name means the device, as in `path`.
#[test]
fn dev_paths_must_be_block_devices_and_bare_names_mean_devices() {
    for t in ["/dev/nvme9n9", "/dev/loop9p2"] {
        fails_with(&[t, "--size", "1M"], "no such block device on this machine");
        assert!(!Path::new(t).exists(), "{t} was created");
    }
    fails_with(&["lo"], "lo is a network interface, not a disk");
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("the loop device needs root and losetup");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let dev = cleanup.loop_device(dir.path(), 16 << 20);
    let name = dev.trim_start_matches("/dev/");
    let cwd = disk_dir();
    let doc = json_of(
        headroom()
            .current_dir(cwd.path())
            .args(["--json", "bench", "disk", name])
            .args(["--rw", "read", "--size", "4M", "--runtime", "1"]),
    );
    assert_eq!(doc["target"]["kind"], "block_device");
    assert_eq!(doc["target"]["file"], dev);
    assert!(
        entries(cwd.path()).is_empty(),
        "a file named {name} was created"
    );
}

/// `bench disk /dev/X` read with io_uring showed proc_io_error_percent 100
/// while /proc/diskstats agreed: /proc/self/io counts an I/O once per submission, and io_uring
/// resubmits from its worker every non-blocking I/O the block layer sends back (here: 1 MiB
/// from 4 KiB pages, 256 segments over the loop device's max_segments 128). The document
/// cross-checks with diskstats there and says why; psync, which blocks, is still checked
/// against /proc/self/io.
#[test]
fn a_block_device_is_cross_checked_by_diskstats_where_proc_io_counts_resubmissions() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup)");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let dev = cleanup.loop_device(dir.path(), 64 << 20);
    let read = |engine: &str, buffers: &str| {
        run_json(
            &[
                &dev,
                "--rw",
                "read",
                "--bs",
                "1M",
                "--qd",
                "1",
                "--size",
                "32M",
                "--runtime",
                "5",
                "--engine",
                engine,
                "--buffers",
                buffers,
            ],
            &[],
        )
    };
    let doc = read("io_uring", "pages");
    let run = &doc["tests"][0]["runs"][0];
    let cc = &run["cross_check"];
    let n = |k: &str| cc[k].as_u64().unwrap();
    assert_eq!(n("app_read_bytes"), 32 << 20, "{cc:#}");
    // What /proc/self/io counted is kept (above the engine's bytes), not compared.
    assert!(n("proc_io_read_bytes") > 32 << 20, "{cc:#}");
    assert!(cc["proc_io_error_percent"].is_null(), "{cc:#}");
    // diskstats, on a device nobody else uses, agrees to the byte.
    assert_eq!(n("diskstats_read_bytes"), 32 << 20, "{cc:#}");
    assert_eq!(cc["diskstats_error_percent"].as_f64(), Some(0.0), "{cc:#}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("the kernel's cross-check is /proc/diskstats")
            && notes.contains("counts an I/O of the io_uring engine again"),
        "{notes}"
    );
    assert!(!notes.contains("stacked device"), "{notes}");
    // The terminal shows no error for /proc/self/io, and diskstats' 0.
    let out = stdout_of(headroom().args(["bench", "disk", &dev]).args([
        "--rw",
        "read",
        "--bs",
        "1M",
        "--qd",
        "1",
        "--size",
        "8M",
        "--runtime",
        "5",
        "--buffers",
        "pages",
    ]));
    let text = String::from_utf8_lossy(&out);
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("SEQ1M Q1T1"))
        .unwrap()
        .split_whitespace()
        .collect();
    // proc io error, diskstats error, requests per I/O.
    assert_eq!(row[row.len() - 3..], ["-", "+0.00", "2.00"], "{text}");
    // psync blocks: no resubmission, and /proc/self/io is the cross-check again.
    let doc = read("psync", "pages");
    let cc = &doc["tests"][0]["runs"][0]["cross_check"];
    assert_eq!(cc["proc_io_error_percent"].as_f64(), Some(0.0), "{cc:#}");
    assert!(!doc["notes"]
        .to_string()
        .contains("the kernel's cross-check is"));
}

/// SEQ1M came out twice fio's with no word why: fio's 1 MiB buffers in
/// 4 KiB pages span more than the queue's max_segments, so each I/O becomes two requests;
/// headroom's huge-page buffers do not. The result says how many requests each I/O took
/// (/proc/diskstats) and which limit split them, `--buffers pages` measures as fio does, and
/// a huge-page run says what an application with 4 KiB pages would meet.
#[test]
fn requests_per_io_and_the_limit_that_split_them_are_in_the_result() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        testsupport::skip::skip("needs root and loop devices (losetup)");
        return;
    }
    let dir = disk_dir();
    let mut cleanup = Cleanup(Vec::new());
    let dev = cleanup.loop_device(dir.path(), 64 << 20);
    let name = dev.trim_start_matches("/dev/");
    let queue = |f: &str| sh(&["cat", &format!("/sys/block/{name}/queue/{f}")]);
    let segments: u64 = queue("max_segments").parse().unwrap();
    // The loop device splits a 1 MiB I/O from 4 KiB pages (256 of them); a kernel that lets
    // it take 256 segments would not, and this test would say nothing.
    assert!(segments < 256, "max_segments {segments}");
    let run = |buffers: &[&str]| {
        let args = [
            &[
                dev.as_str(),
                "--rw",
                "read",
                "--bs",
                "1M",
                "--qd",
                "1",
                "--size",
                "32M",
            ][..],
            &["--runtime", "10", "--engine", "psync"],
            buffers,
        ]
        .concat();
        run_json(&args, &[])
    };
    let per_io = |doc: &Value| {
        let cc = &doc["tests"][0]["runs"][0]["cross_check"];
        let r = cc["diskstats_read_requests"].as_u64().unwrap();
        (
            r as f64 / cc["app_ios"].as_u64().unwrap() as f64,
            cc.clone(),
        )
    };
    let pages = run(&[]);
    assert_eq!(pages["parameters"]["buffers"], "pages");
    assert_eq!(
        pages["target"]["queue"]["max_segments"].as_u64(),
        Some(segments)
    );
    let (r, cc) = per_io(&pages);
    // 256 pages in at most `segments` segments: two requests, unless the kernel happened to
    // give the buffer physically adjacent pages, which the block layer merges into one
    // segment (seen on a machine with much memory just freed: 1.0). Never more than two.
    assert!((1.0..=2.0).contains(&r), "{cc:#}");
    let findings = pages["findings"].to_string();
    // A finding from 1.5 requests per I/O (report's SPLIT_FROM).
    if r >= 1.5 {
        let requests = cc["diskstats_read_requests"].as_u64().unwrap();
        assert!(
            findings.contains(&format!(
                "{r:.2} requests per I/O (/proc/diskstats: {requests} requests of {name} for 32 \
                 I/Os of 1 MiB): the block layer split each I/O; from 4 KiB pages one request \
                 of {name} carries at most {} KiB (max_segments {segments} × 4 KiB pages)",
                segments * 4
            )),
            "{findings}"
        );
    }
    // Huge pages: one request per I/O, and a word on applications' pages.
    let huge = run(&["--buffers", "huge"]);
    assert_eq!(huge["parameters"]["buffers"], "huge_pages");
    let (r, cc) = per_io(&huge);
    // Where the kernel had no free 2 MiB blocks for some buffers (memory fragmented by other
    // work), the result says so, and those I/Os split as from 4 KiB pages.
    let notes = huge["notes"].to_string();
    if notes.contains("--buffers huge: ") {
        assert!(notes.contains("MiB of buffers are huge pages"), "{notes}");
        assert!((1.0..=2.0).contains(&r), "{cc:#}");
    } else {
        assert_eq!(r, 1.0, "{cc:#}");
    }
    let findings = huge["findings"].to_string();
    assert!(
        findings.contains(&format!(
            "applications whose I/O buffers are 4 KiB pages (fio, dd and most programs) have each \
             I/O of 1 MiB split into up to 2 requests by {name}"
        )) && findings.contains("the default, --buffers pages, measures as they do"),
        "{findings}"
    );
    usage_error(
        &[&dev, "--buffers", "small"],
        "\"small\" is not a kind of buffers: use pages or huge",
    );
}

/// A 1 MiB I/O from fio's buffers (4 KiB pages) may go down as two requests where one from a
/// huge page goes down as one, so a tool checked against fio uses 4 KiB pages unless asked:
/// by default the result says 4 KiB pages and its lines name no other memory; with
/// `--buffers huge` the header and every line of the table name huge pages.
#[test]
fn buffers_are_fios_4k_pages_unless_huge_pages_are_asked_and_then_each_line_says_so() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    let args = |buffers: &[&'static str]| -> Vec<String> {
        [
            &[
                "bench", "disk", d, "--rw", "read", "--bs", "1M", "--qd", "2",
            ][..],
            &[
                "--size",
                "8M",
                "--runtime",
                "1",
                "--engine",
                "psync",
                "--no-save",
            ],
            buffers,
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let doc = json_of(headroom().arg("--json").args(args(&[])));
    assert_eq!(
        doc["parameters"]["buffers"], "pages",
        "{:#}",
        doc["parameters"]
    );
    let row = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("SEQ1M Q2T1"))
            .unwrap_or_else(|| panic!("no SEQ1M Q2T1 line in\n{text}"))
            .to_string()
    };
    let text = String::from_utf8(stdout_of(headroom().args(args(&[])))).unwrap();
    assert!(text.contains(", buffers in 4 KiB pages,"), "{text}");
    assert!(!row(&text).contains("huge"), "{text}");
    assert!(row(&text).contains(" read "), "{text}");
    let doc = json_of(headroom().arg("--json").args(args(&["--buffers", "huge"])));
    assert_eq!(doc["parameters"]["buffers"], "huge_pages");
    let text = String::from_utf8(stdout_of(headroom().args(args(&["--buffers", "huge"])))).unwrap();
    assert!(text.contains(", buffers in huge pages,"), "{text}");
    assert!(row(&text).contains(" read, huge pages "), "{text}");
}

/// "QD 32" is fio's iodepth=32: 32 I/Os in flight all the time, less the one being refilled.
/// On the null engine (no device, so no speed in the way) the result counts 31 to 32 in
/// flight, and its IOPS times its mean latency (Little's law) is the same, in the document,
/// in the table and in the fio JSON a user compares with fio's (fewer in flight would show
/// as a lower latency than fio's at the same IOPS).
#[test]
fn queue_depth_32_keeps_32_ios_in_flight_as_fio_and_the_result_says_so() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    let args = [
        "bench",
        "disk",
        d,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "32",
        "--size",
        "8M",
        "--runtime",
        "0.5",
        "--ramp",
        "0.1",
        "--time-based",
        "--engine",
        "null",
        "--no-save",
    ];
    let doc = json_of(headroom().arg("--json").args(args));
    let run = &doc["tests"][0]["runs"][0];
    let f = |v: &Value| v.as_f64().unwrap();
    let little = f(&run["iops"]) * f(&run["latency"]["mean_ns"]) / 1e9;
    assert!(
        (31.0..=32.0).contains(&little),
        "Little's law: {little}\n{run:#}"
    );
    let counted = f(&run["in_flight"]);
    assert!((31.0..=32.0).contains(&counted), "{run:#}");
    let text = String::from_utf8(stdout_of(headroom().args(args))).unwrap();
    assert!(
        text.contains("In flight") && text.contains("(mean)"),
        "{text}"
    );
    let cells: Vec<String> = text
        .lines()
        .find(|l| l.starts_with("RND4K Q32T1"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    // Test (two words), direction, 3 rates, IOPS, then the mean in flight.
    let shown: f64 = cells[7].parse().unwrap();
    assert!((31.0..=32.0).contains(&shown), "{text}");
    let fio = json_of(headroom().args(args).args(["--output-format", "fio-json"]));
    let read = &fio["jobs"][0]["read"];
    let little = f(&read["iops"]) * f(&read["lat_ns"]["mean"]) / 1e9;
    assert!(
        (31.0..=32.0).contains(&little),
        "fio JSON, Little's law: {little}\n{read:#}"
    );
}

/// `--profile rk` ran 5 times with 5 s pauses where the Rockchip guide ran
/// each fio command once; a plan line says what a run takes before it starts, and interrupt
/// rates are per second of I/O, not of the pauses between runs.
#[test]
fn profiles_say_their_runs_and_pauses_and_rates_leave_the_pauses_out() {
    let dir = disk_dir();
    let d = dir.path().to_str().unwrap();
    let out = headroom()
        .args([
            "--json",
            "bench",
            "disk",
            d,
            "--profile",
            "rk",
            "--size",
            "4M",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "headroom: plan: 4 tests, 1 run per test, each up to 180 s or one pass, no pause: at \
             most 12 min"
        ),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &doc["parameters"];
    assert_eq!(
        (p["runs"].as_u64(), p["pause_s"].as_f64()),
        (Some(1), Some(0.0))
    );
    assert_eq!(p["time_based"], false);
    for t in doc["tests"].as_array().unwrap() {
        assert_eq!(t["runs"].as_array().unwrap().len(), 1, "{t:#}");
    }
    let help = stdout_of(headroom().args(["bench", "disk", "--help"]));
    let help = String::from_utf8_lossy(&help)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("rk (the Rockchip guide's fio commands: SEQ1M Q32T1 and RND4K Q32T1 read and write, each run once until --size or 180 s, no pause)")
            && help.contains("(CrystalDiskMark 8's sets: 5 runs of 5 s per test with a 5 s pause before each"),
        "{help}"
    );
    // Two runs with a 2 s pause between them: the device's interrupts are counted over the
    // whole bench, and divided by the seconds of I/O only.
    let doc = run_json(
        &[
            d,
            "--rw",
            "randread",
            "--size",
            "4M",
            "--runs",
            "2",
            "--pause",
            "2",
            "--runtime",
            "0.5",
            "--time-based",
        ],
        &[],
    );
    let busy: f64 = doc["tests"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seconds"].as_f64().unwrap())
        .sum();
    let counters = &doc["counters"];
    let notes = counters["notes"].to_string();
    match counters["interrupts"].as_array().and_then(|i| i.first()) {
        Some(irq) => {
            let (count, rate) = (
                irq["count"].as_f64().unwrap(),
                irq["per_second"].as_f64().unwrap(),
            );
            assert!(
                (rate - count / busy).abs() < 1e-6 * rate.max(1.0),
                "{counters:#} over {busy} s"
            );
            assert!(
                notes.contains("interrupt rates are per second of I/O: the"),
                "{notes}"
            );
            assert!(notes.contains("s of pauses between them"), "{notes}");
        }
        None => testsupport::skip::skip(
            "no interrupt line for this disk's device: its rates cannot be checked",
        ),
    }
}

/// `--size 32M` on an existing 8 MiB file recorded size_bytes 33554432; the
/// document holds the bytes the tests covered, and a note says the file was smaller.
#[test]
fn an_existing_file_smaller_than_size_is_recorded_at_its_size() {
    let dir = disk_dir();
    let f = dir.path().join("eight.bin");
    std::fs::write(&f, vec![0x5Au8; 8 << 20]).unwrap();
    let doc = run_json(
        &[f.to_str().unwrap(), "--size", "32M", "--runtime", "1"],
        &[],
    );
    assert_eq!(doc["parameters"]["size_bytes"], 8 << 20);
    assert_eq!(doc["target"]["size_bytes"], 8 << 20);
    assert!(
        doc["notes"].to_string().contains(
            "existed and was read as is (not filled): all of its 8 MiB, less than --size 32 MiB"
        ),
        "{}",
        doc["notes"]
    );
}

/// `bench disk vdb` meant as /dev/vda created ./vdb, benchmarked and removed
/// it. A bare name that is neither a block device nor an existing file is refused with both
/// readings and creates nothing; `./vdb` is the new file, and an existing file of that name
/// is still that file.
#[test]
fn a_bare_name_that_is_no_device_is_refused_with_both_readings() {
    let cwd = disk_dir();
    let out = fails_saying(
        headroom().current_dir(cwd.path()).args([
            "bench",
            "disk",
            "vdb9",
            "--size",
            "1M",
            "--runtime",
            "1",
        ]),
        1,
        "no block device vdb9 (lsblk lists them); to test a new file here, write ./vdb9",
    );
    assert_eq!(out.lines().count(), 1, "one sentence: {out}");
    assert!(entries(cwd.path()).is_empty(), "a file was created");
    // The file reading, as the sentence says, and an existing file by its bare name.
    for name in ["./vdb9", "vdb9"] {
        let doc = json_of(headroom().current_dir(cwd.path()).args([
            "--json",
            "bench",
            "disk",
            name,
            "--size",
            "1M",
            "--runtime",
            "1",
        ]));
        assert_eq!(doc["target"]["given"], name);
        if name == "./vdb9" {
            assert_eq!(doc["target"]["kind"], "new_file");
            // Left behind on purpose for the second reading: an existing file.
            std::fs::write(cwd.path().join("vdb9"), vec![7u8; 1 << 20]).unwrap();
        } else {
            assert_eq!(doc["target"]["kind"], "existing_file");
        }
    }
}

/// A run killed with SIGKILL leaves its test file; the next run in that
/// directory recognises it (its process is gone), removes it and says so. A file of a running
/// process is never touched.
#[test]
fn stale_test_file_of_a_killed_run_is_removed() {
    let dir = disk_dir();
    let mut child = headroom_process()
        .args(["bench", "disk"])
        .arg(dir.path())
        .args(["--rw", "randread", "--size", "8M", "--time-based"])
        .args(["--runtime", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(dir.path());
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let stale = entries(dir.path());
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0].starts_with(&format!("headroom-disk.{}.", child.id())));
    // A file named for this test process, which is alive, stays.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    let live = format!("headroom-disk.{}.{start}.tmp", std::process::id());
    std::fs::write(dir.path().join(&live), b"in use").unwrap();
    let out = headroom()
        .args(["bench", "disk"])
        .arg(dir.path())
        .args(["--size", "1M", "--runtime", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("removed {}", dir.path().join(&stale[0]).display())),
        "{err}"
    );
    assert!(err.contains("killed before it could remove it"), "{err}");
    assert_eq!(entries(dir.path()), [live]);
}

/// The cleanup ran as root over every file named like a test file whose
/// process is gone, whoever owned it. Now it removes only the running user's files made after
/// the process their name records started, and names the rest without touching them: a file
/// of user nobody's, one whose name records a start after the file was made, one of an older
/// headroom's names (no start time).
#[test]
fn stale_test_files_of_other_users_or_times_are_reported_not_removed() {
    if !is_root() {
        testsupport::skip::skip("needs root, to make a file of user nobody's");
        return;
    }
    // A process that ran and is gone, with its start time as /proc showed it.
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let pid = child.id();
    let dir = disk_dir();
    let file = |name: String| {
        std::fs::write(dir.path().join(&name), b"test data").unwrap();
        name
    };
    // Today's names (with a random part) and those of earlier headrooms are all recognised.
    let ours = file(format!("headroom-disk.{pid}.{start}.0000000a.tmp"));
    let nobodys = file(format!("headroom-disk.{pid}.{start}.tmp"));
    std::os::unix::fs::chown(dir.path().join(&nobodys), Some(65534), Some(65534)).unwrap();
    // Started a million seconds after the file was made: not the process that made it.
    let later = file(format!(
        "headroom-disk.{pid}.{}.0000000c.tmp",
        start + 100_000_000
    ));
    let older = file(format!("headroom-disk.{pid}.tmp"));
    let out = headroom()
        .args(["bench", "disk"])
        .arg(dir.path())
        .args([
            "--rw",
            "read",
            "--size",
            "1M",
            "--runtime",
            "0.2",
            "--no-save",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let shown = |n: &str| dir.path().join(n).display().to_string();
    assert!(err.contains(&format!("removed {}", shown(&ours))), "{err}");
    for (name, why) in [
        (&nobodys, "it belongs to user 65534, not to user 0"),
        (
            &later,
            "it was made before the process its name records started",
        ),
        (&older, "its name records no start time"),
    ] {
        assert!(
            err.contains(&format!(
                "{} is named like the test file of an earlier run (process {pid}, gone), but \
                 {why}",
                shown(name)
            )),
            "{err}"
        );
    }
    assert!(err.contains("it was left alone"), "{err}");
    let mut left = entries(dir.path());
    left.sort();
    let mut kept = vec![nobodys, later, older];
    kept.sort();
    assert_eq!(left, kept);
}

/// tmpfs does no block I/O, so there is no cross-check to show (not
/// "-100.00 %"), and a file smaller than one block is not told to "raise --size".
#[test]
fn tmpfs_and_small_files_get_the_right_sentence() {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let dir = tempfile::tempdir_in(shm).unwrap();
        let doc = run_json(
            &[
                dir.path().to_str().unwrap(),
                "--size",
                "4M",
                "--direct",
                "0",
                "--runtime",
                "0.3",
            ],
            &[],
        );
        let run = &doc["tests"][0]["runs"][0];
        assert!(
            run["cross_check"]["proc_io_error_percent"].is_null(),
            "{run:#}"
        );
        assert!(doc["notes"]
            .to_string()
            .contains("tmpfs keeps its files in memory and does no block I/O"));
    } else {
        testsupport::skip::skip("the tmpfs part needs /dev/shm");
    }
    let dir = disk_dir();
    let small = dir.path().join("small.bin");
    std::fs::write(&small, vec![1u8; 2048]).unwrap();
    let out = headroom()
        .args(["bench", "disk"])
        .arg(&small)
        .args(["--bs", "4k"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("raise --size"), "{err}");
    assert!(err.contains("holds only 2048 bytes"), "{err}");
}

/// Sizes with a fraction and durations with any unit, as in fio and as
/// `bench latency -D 2h` already took them.
#[test]
fn fractional_sizes_and_hours_are_accepted() {
    let dir = disk_dir();
    let doc = run_json(
        &[
            dir.path().to_str().unwrap(),
            "--rw",
            "read",
            "--size",
            "1.5M",
            "--runtime",
            "1h",
        ],
        &[],
    );
    assert_eq!(doc["parameters"]["size_bytes"], 1_572_864);
    assert_eq!(doc["parameters"]["runtime_s"], 3600.0);
    check_result(&doc, "io_uring", 1);
}
