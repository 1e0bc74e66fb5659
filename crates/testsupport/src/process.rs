//! Child processes of a test: bounded waits and signals (a test never waits forever for a
//! `headroom` that hangs).

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Poll `done` every 20 ms until it holds or `limit` has passed; whether it held.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (bounded) until the child exits; kill it and fail after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let mut status = None;
    let exited = wait_until(limit, || {
        status = child.try_wait().unwrap_or_else(|e| panic!("{e}"));
        status.is_some()
    });
    match status {
        Some(s) if exited => s,
        _ => {
            let _ = child.kill();
            panic!("headroom did not stop within {limit:?}");
        }
    }
}

/// The processes `pid`'s threads started that still exist (/proc/PID/task/TID/children,
/// CONFIG_PROC_CHILDREN): a benchmark's workers and measuring processes.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(c.split_whitespace().filter_map(|w| w.parse::<u32>().ok()));
        }
    }
    out
}

/// A counter of /proc/PID/io (`read_bytes`: bytes the process had read from storage);
/// 0 when the process or the field is gone.
pub fn io_counter(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix(field)
                    .and_then(|r| r.strip_prefix(": "))
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// How many times the thread of `pid` named `name` (its comm, as `std::thread::Builder`
/// names it) gave up its CPU to wait (voluntary_ctxt_switches): each sleep of a measuring
/// loop counts one. `None` while no such thread exists.
pub fn thread_sleeps(pid: u32, name: &str) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks.flatten().find_map(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        if comm.trim_end() != name {
            return None;
        }
        let status = std::fs::read_to_string(t.path().join("status")).ok()?;
        status.lines().find_map(|l| {
            l.strip_prefix("voluntary_ctxt_switches:")
                .and_then(|v| v.trim().parse().ok())
        })
    })
}

/// A child's stderr read as it comes by a thread of its own (so the pipe never fills): wait
/// for a line saying that a state was reached, then read all of it.
pub struct StderrWatch {
    text: std::sync::Arc<std::sync::Mutex<String>>,
}

impl StderrWatch {
    /// Take `child`'s piped stderr and read it in the background until it closes.
    pub fn of(child: &mut Child) -> StderrWatch {
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("a piped stderr");
        let into = std::sync::Arc::clone(&text);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = into.lock() {
                    t.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        StderrWatch { text }
    }

    /// Wait (up to `limit`) until a whole line containing `what` has come; whether one did.
    pub fn wait_for(&self, what: &str, limit: Duration) -> bool {
        wait_until(limit, || {
            self.text()
                .split_inclusive('\n')
                .any(|l| l.ends_with('\n') && l.contains(what))
        })
    }

    /// What came so far.
    pub fn text(&self) -> String {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// Send `signal` (libc::SIGINT, ...) to the child, as Ctrl-C or `kill` would.
pub fn signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: kill(2) on the pid of our own child; it cannot touch our memory.
    let rc = unsafe { libc::kill(pid, signal) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {signal}): {}",
        std::io::Error::last_os_error()
    );
}

/// Wait (bounded, as [`wait_exit`]) until the child exits; its status and what it wrote to
/// the stdout and stderr it was given as pipes (empty where it was not).
pub fn output_within(child: &mut Child, limit: Duration) -> Output {
    let status = wait_exit(child, limit);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut stdout).unwrap_or_else(|e| panic!("{e}"));
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut stderr).unwrap_or_else(|e| panic!("{e}"));
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Start `cmd` in the background with its stdout and stderr piped (read them with
/// [`output_within`]).
pub fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// Whether the tests run as root (loop devices, mounts, network namespaces, SCHED_FIFO).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `tool` is an executable file in a directory of PATH.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// `program` as an unprivileged user runs it: user and group nobody (65534), no supplementary
/// groups, no capabilities (setuid from root drops them). `None`, skipped ([`crate::skip`]),
/// unless the tests run as root and nobody may reach `program` (every directory above it
/// searchable by others).
pub fn as_nobody(program: &std::path::Path) -> Option<Command> {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !is_root() {
        crate::skip::skip("needs root to drop to user nobody");
        return None;
    }
    let reachable = program.ancestors().skip(1).all(|d| {
        d.metadata()
            .is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
    });
    if !reachable {
        crate::skip::skip(&format!(
            "user nobody cannot reach {} (a directory above it is not searchable)",
            program.display()
        ));
        return None;
    }
    let mut c = Command::new(program);
    // std's uid() also clears the supplementary groups when the parent is root.
    c.uid(65534).gid(65534).current_dir("/");
    Some(c)
}

/// A kernel setting (`/proc/sys/...`) changed for a test and put back when dropped, also
/// when the test fails. Tests of one binary that depend on the same setting hold
/// [`SYSCTLS`] while it is set, so they never see each other's value.
pub struct Sysctl {
    path: std::path::PathBuf,
    old: String,
    _held: std::sync::MutexGuard<'static, ()>,
}

/// Held while a [`Sysctl`] is set.
pub static SYSCTLS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Sysctl {
    /// Set `path` to `value`; `None`, skipped ([`crate::skip`]), unless the tests run as root
    /// and the setting exists.
    pub fn set(path: &str, value: &str) -> Option<Sysctl> {
        let held = SYSCTLS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Ok(old) = std::fs::read_to_string(path) else {
            crate::skip::skip(&format!("{path} cannot be read"));
            return None;
        };
        if std::fs::write(path, value).is_err() {
            crate::skip::skip(&format!("{path} cannot be set (needs root)"));
            return None;
        }
        Some(Sysctl {
            path: path.into(),
            old: old.trim().to_string(),
            _held: held,
        })
    }

    /// `fs.protected_symlinks` at 0, the kernel's own default: root follows a link another
    /// user planted in a sticky world-writable directory, which is what local-attacker tests
    /// of links rely on.
    pub fn unprotected_symlinks() -> Option<Sysctl> {
        Sysctl::set("/proc/sys/fs/protected_symlinks", "0")
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        // Best effort: a drop cannot fail the test any more.
        let _ = std::fs::write(&self.path, &self.old);
    }
}

/// A directory every user may create files in and only their owners may remove them from
/// (mode 1777, like /tmp), on tmpfs (/dev/shm) where there is one; removed when dropped.
pub fn sticky_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let d = tempfile::Builder::new()
        .prefix("headroom-sticky-")
        .tempdir_in(base)
        .unwrap_or_else(|e| panic!("a scratch directory: {e}"));
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777))
        .unwrap_or_else(|e| panic!("chmod 1777: {e}"));
    d
}
