//! The command a count runs, held between fork and exec so its counters can be opened on
//! its pid first and start exactly at exec (perf's evlist__prepare_workload: the child
//! waits on a pipe; `enable_on_exec` starts the counters when it execs).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why the command could not run.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("no command given after --")]
    Empty,
    #[error("Workload failed: `{0}`: command not found (not a path, and not in PATH)")]
    NotFound(String),
    #[error("Workload failed: `{0}`: {1}")]
    Exec(String, std::io::Error),
    #[error("cannot start `{0}`: {1}")]
    Spawn(String, std::io::Error),
}

/// How the command ended, with its CPU time (wait4's rusage: it and its waited-for
/// children, like perf's `seconds user` / `seconds sys`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub user_s: f64,
    pub sys_s: f64,
}

impl Exit {
    /// The shell's convention: the exit code, or 128 + the signal.
    pub fn shell_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => 1,
        }
    }
}

/// Where the command's standard output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandStdout {
    /// Where headroom's goes (perf's way: the counts are on stderr, stdout is the command's).
    Inherit,
    /// To headroom's stderr: headroom's stdout carries a document of its own (`--json`).
    ToStderr,
}

/// A forked child waiting for [`Workload::start`] before it execs the command.
pub struct Workload {
    pid: libc::pid_t,
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
    program: String,
    reaped: bool,
}

fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a valid two-int array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Workload {
    /// Fork a child that waits; nothing of the command runs yet.
    pub fn prepare(argv: &[String], stdout: CommandStdout) -> Result<Workload, WorkloadError> {
        let program = argv.first().ok_or(WorkloadError::Empty)?.clone();
        let path =
            find_program(&program).ok_or_else(|| WorkloadError::NotFound(program.clone()))?;
        let spawn = |e| WorkloadError::Spawn(program.clone(), e);
        let bad_arg = || {
            WorkloadError::Spawn(
                program.clone(),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "an argument contains a NUL byte",
                ),
            )
        };
        // Everything the child needs is allocated before fork: after it, only
        // async-signal-safe calls (read, write, execv, _exit).
        let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| bad_arg())?;
        let c_args: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| bad_arg())?;
        let mut ptrs: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe().map_err(spawn)?;
        let (err_r, err_w) = pipe().map_err(spawn)?;
        // SAFETY: fork in a process that then only calls async-signal-safe functions in the
        // child (read, write, execv, _exit) on memory prepared above.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn(std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // Child. Wait for the parent's go (EOF means the parent gave up: do not run).
            let mut b = 0u8;
            // SAFETY: valid fds and a one-byte buffer; only async-signal-safe calls follow.
            unsafe {
                // Our copy of the write end would keep the pipe open forever.
                libc::close(go_w.as_raw_fd());
                let n = libc::read(go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
                if n != 1 {
                    libc::_exit(127);
                }
                if stdout == CommandStdout::ToStderr
                    && libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0
                {
                    libc::_exit(127);
                }
                libc::execv(c_path.as_ptr(), ptrs.as_ptr());
                let errno = *libc::__errno_location();
                libc::write(err_w.as_raw_fd(), (&errno as *const i32).cast(), 4);
                libc::_exit(127);
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(Workload {
            pid,
            go: Some(go_w),
            exec_error: err_r,
            program,
            reaped: false,
        })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Let the child exec the command; an exec failure (ENOEXEC, EACCES) is returned.
    pub fn start(&mut self) -> Result<(), WorkloadError> {
        if let Some(go) = self.go.take() {
            // SAFETY: writing one byte from a valid buffer to our pipe's write end.
            unsafe { libc::write(go.as_raw_fd(), b"g".as_ptr().cast(), 1) };
        }
        let mut errno = 0i32;
        // SAFETY: reading at most 4 bytes into an i32. EOF (0) means exec succeeded, since
        // the write end is close-on-exec.
        let n = unsafe {
            libc::read(
                self.exec_error.as_raw_fd(),
                (&mut errno as *mut i32).cast(),
                4,
            )
        };
        if n == 4 {
            let _ = self.wait();
            return Err(WorkloadError::Exec(
                self.program.clone(),
                std::io::Error::from_raw_os_error(errno),
            ));
        }
        Ok(())
    }

    fn wait_with(&mut self, flags: i32) -> Option<Exit> {
        if self.reaped {
            return None;
        }
        let mut status = 0;
        // SAFETY: rusage is plain data, zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: our own child's pid, valid out-pointers.
            let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut ru) };
            if r == self.pid {
                break;
            }
            if r == 0 {
                return None;
            }
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            self.reaped = true;
            return None;
        }
        self.reaped = true;
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(Exit {
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            user_s: s(ru.ru_utime),
            sys_s: s(ru.ru_stime),
        })
    }

    /// Wait for the command to end.
    pub fn wait(&mut self) -> Option<Exit> {
        self.wait_with(0)
    }

    /// The exit if the command has ended, without blocking.
    pub fn try_wait(&mut self) -> Option<Exit> {
        self.wait_with(libc::WNOHANG)
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // A child never started exits on EOF of its pipe; one started is waited for, so no
        // zombie is left behind.
        self.go.take();
        if !self.reaped {
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_reports_the_exit_code() {
        let mut w = Workload::prepare(
            &["sh".into(), "-c".into(), "exit 3".into()],
            CommandStdout::Inherit,
        )
        .unwrap();
        w.start().unwrap();
        assert_eq!(w.wait().unwrap().shell_code(), 3);
    }

    #[test]
    fn a_workload_never_started_does_not_run_or_hang() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let w = Workload::prepare(
            &[
                "sh".into(),
                "-c".into(),
                format!("touch {}", marker.display()),
            ],
            CommandStdout::Inherit,
        )
        .unwrap();
        drop(w);
        assert!(!marker.exists());
    }

    #[test]
    fn missing_and_unrunnable_commands_are_sentences() {
        let e = Workload::prepare(&["no-such-command-xyz".into()], CommandStdout::Inherit)
            .err()
            .unwrap();
        assert!(e.to_string().contains("command not found"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("not-a-program");
        std::fs::write(&f, [0u8, 1, 2, 3]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut w = Workload::prepare(&[f.display().to_string()], CommandStdout::Inherit).unwrap();
        let e = w.start().unwrap_err();
        assert!(e.to_string().starts_with("Workload failed: "), "{e}");
    }
}
