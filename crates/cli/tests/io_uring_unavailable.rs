//! `bench disk` where the kernel refuses io_uring, as on some boards' kernels: a seccomp
//! filter in the child makes io_uring_setup(2) fail with EPERM (what `kernel.io_uring_disabled`
//! and container filters give) or ENOSYS (kernels before 5.1, qemu-user). Unlike the
//! HEADROOM_DISABLE_IO_URING switch (tests/bench_disk.rs), this goes through the real system
//! call and headroom's reading of its error.
#![allow(clippy::unwrap_used)]
// a panic in a test is a failed assertion
// The filter checks the architecture; these are the two it knows.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::process::Output;
use testsupport::cmd::{disk_dir, headroom_process, SMALL_DISK_RUN};

/// io_uring_setup's number: 425 on every architecture since Linux 5.1
/// (include/uapi/asm-generic/unistd.h, arch/x86/entry/syscalls/syscall_64.tbl).
const NR_IO_URING_SETUP: u32 = 425;

/// The architecture the filter checks before trusting the syscall number
/// (include/uapi/linux/audit.h: EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Offsets in `struct seccomp_data` (include/uapi/linux/seccomp.h): nr, then arch.
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// A seccomp program: io_uring_setup fails with `errno`, every other call is allowed.
fn filter(errno: i32) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_NR),
        jump(BPF_JMP | BPF_JEQ | BPF_K, NR_IO_URING_SETUP, 0, 1),
        stmt(
            BPF_RET | BPF_K,
            libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA),
        ),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Run `headroom --json bench disk DIR ARGS` with io_uring_setup failing with `errno`.
fn bench_disk_without_io_uring(errno: i32, extra: &[&str]) -> (Output, tempfile::TempDir) {
    // On the target dir's filesystem (not a tmpfs /tmp): O_DIRECT must work.
    let dir = disk_dir("headroom-no-uring");
    let program = filter(errno);
    let mut cmd = headroom_process();
    cmd.args(["--json", "bench", "disk"])
        .arg(dir.path())
        .args(SMALL_DISK_RUN)
        .args(["--no-save"])
        .args(extra);
    // SAFETY: between fork and exec only prctl(2) runs (async-signal-safe, no allocation:
    // `program` was built before the fork and moves into the closure, which the Command
    // keeps until after the spawn); no_new_privs lets an unprivileged process install it.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: program.len() as u16,
                filter: program.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    (out, dir)
}

fn check_fallback(errno: i32, why: &str) {
    let (out, dir) = bench_disk_without_io_uring(errno, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["parameters"]["engine"], "psync", "{doc}");
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let note = notes
        .iter()
        .find(|n| n.contains("io_uring"))
        .unwrap_or_else(|| panic!("no io_uring note in {notes:?}"));
    // What happened, why it may happen, and what was done instead, in one note.
    assert!(note.contains("io_uring is not available here"), "{note}");
    assert!(note.contains(why), "{note}");
    assert!(note.contains("using the psync engine instead"), "{note}");
    let run = &doc["tests"][0]["runs"][0];
    assert!(run["bytes"].as_u64().unwrap() > 0, "{run}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "file left"
    );
}

#[test]
fn eperm_from_the_kernel_falls_back_to_psync_with_a_note() {
    check_fallback(
        libc::EPERM,
        "(kernel.io_uring_disabled, or a seccomp filter)",
    );
}

#[test]
fn enosys_from_the_kernel_falls_back_to_psync_with_a_note() {
    check_fallback(libc::ENOSYS, "(kernel older than 5.1, or qemu-user)");
}

#[test]
fn asking_for_io_uring_by_name_is_an_error_not_a_fallback() {
    let (out, _dir) = bench_disk_without_io_uring(libc::EPERM, &["--engine", "io_uring"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.starts_with("headroom: ") && err.contains("io_uring is not available here"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
}
