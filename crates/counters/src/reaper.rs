//! A process that outlives a run to undo what the run changed in tracefs, when the run
//! cannot undo it itself.
//!
//! `bench latency --split` records in a tracefs instance of its own (tracing on, scheduler,
//! timer and interrupt tracepoints enabled, megabytes of ring buffer per measured CPU) and
//! `--engine timerlat` also changes the global `osnoise/` settings. A drop or a panic hook
//! undoes that, but nothing runs in a process killed with SIGKILL (the OOM killer, `kill -9`,
//! a lab's timeout): the instance would keep recording, and slowing every context switch,
//! until the next run. So before it changes anything, the run forks a [`Reaper`]: a small
//! process in a session of its own that waits on a pipe the run holds. The kernel closes the
//! pipe when the run ends, however it ends; the reaper then stops the instance's tracing,
//! disables its events, puts the settings back and removes the instance. A run that cleans up
//! by itself says so first ([`Reaper::release`]) and the reaper leaves without touching
//! anything.
//!
//! The reaper is forked, not executed: everything it needs (paths and values as C strings) is
//! made before the fork, and the child makes only async-signal-safe calls (setsid, sigaction,
//! close, read, open, write, rmdir, nanosleep, _exit), as a child of a threaded process must.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a reaper waits to undo.
pub struct Reaper {
    pid: libc::pid_t,
    /// The write end of the pipe the reaper reads: closed by the kernel when this process
    /// ends, however it ends.
    line: Option<OwnedFd>,
}

/// The byte that tells the reaper the run undid everything itself.
const RELEASED: u8 = b'r';

/// How long the reaper retries removing an instance whose files the ending run still holds
/// open (rmdir answers EBUSY until the kernel has released them): 500 tries 10 ms apart.
const RMDIR_TRIES: u32 = 500;

fn c_path(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} contains a NUL byte", p.display()),
        )
    })
}

impl Reaper {
    /// Fork a reaper that, when this process ends without [`Reaper::release`], stops and
    /// removes the tracefs instance `instance` (which need not exist yet) and then writes
    /// each `(file, value)` of `restore` back, last first.
    pub fn spawn(instance: &Path, restore: &[(PathBuf, String)]) -> std::io::Result<Reaper> {
        // The writes in the order the reaper makes them: the instance stopped first (its
        // tracing, its events, its tracer), then the global settings put back.
        let mut writes: Vec<(CString, Vec<u8>)> = Vec::new();
        for (rel, value) in [
            ("tracing_on", "0"),
            ("events/enable", "0"),
            ("current_tracer", "nop"),
        ] {
            writes.push((c_path(&instance.join(rel))?, value.as_bytes().to_vec()));
        }
        for (file, value) in restore.iter().rev() {
            writes.push((c_path(file)?, value.as_bytes().to_vec()));
        }
        let dir = c_path(instance)?;
        let name = c"headroom-reaper";
        let (read_end, write_end) = crate::workload::pipe()?;
        // SAFETY: the child below makes only async-signal-safe calls on memory prepared
        // above, and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: async-signal-safe calls on valid pointers; never returns.
            unsafe { reap(read_end.as_raw_fd(), &writes, &dir, name) }
        }
        drop(read_end);
        Ok(Reaper {
            pid,
            line: Some(write_end),
        })
    }

    /// The reaper's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Everything was undone by this process: let the reaper go without touching anything,
    /// and wait (up to a second) for it to end.
    pub fn release(mut self) {
        self.let_go();
    }

    /// Let the reaper undo now what it was told to (this process could not finish it), and
    /// do not wait for it.
    pub fn hand_over(mut self) {
        self.line = None;
    }

    fn let_go(&mut self) {
        let Some(line) = self.line.take() else {
            return;
        };
        // SAFETY: writing one byte from a valid buffer to our pipe's write end.
        unsafe { libc::write(line.as_raw_fd(), (&RELEASED as *const u8).cast(), 1) };
        drop(line);
        let t0 = Instant::now();
        // Bounded: the reaper ends as soon as it reads the byte; after a second it is left
        // to init.
        while t0.elapsed() < Duration::from_secs(1) {
            let mut status = 0;
            // SAFETY: our own child's pid and a valid status pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Reaper {
    /// A reaper dropped without [`Reaper::release`] is released too: the owner's drop has
    /// undone what the reaper would.
    fn drop(&mut self) {
        self.let_go();
    }
}

/// The reaper: wait until the pipe says released (leave) or ends (undo), then `_exit`.
///
/// # Safety
/// To be called only in a freshly forked child, with `line` the pipe's read end.
unsafe fn reap(
    line: i32,
    writes: &[(CString, Vec<u8>)],
    dir: &CString,
    name: &std::ffi::CStr,
) -> ! {
    // SAFETY (whole body): async-signal-safe system calls on valid pointers, in a child
    // that never returns to Rust code of its parent.
    unsafe {
        // Out of the run's session and process group: Ctrl-C, a terminal's hangup or a kill
        // of the run's process group leave the reaper to do its work.
        libc::setsid();
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        for sig in [
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGTERM,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::sigaction(sig, &ignore, std::ptr::null_mut());
        }
        libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0);
        // Hold nothing of the run's: an instance's file held open would keep it from being
        // removed, and a pipe the run's caller reads would not end while the reaper lives.
        let max = libc::c_uint::MAX;
        let line_u = line as libc::c_uint;
        if line_u > 0 {
            libc::syscall(libc::SYS_close_range, 0 as libc::c_uint, line_u - 1, 0);
        }
        if libc::syscall(libc::SYS_close_range, line_u + 1, max, 0) != 0 {
            // Before Linux 5.9: one by one, as far as a default limit goes.
            for fd in (line + 1)..4096 {
                libc::close(fd);
            }
        }
        let mut b = 0u8;
        loop {
            let n = libc::read(line, (&mut b as *mut u8).cast(), 1);
            if n == 1 && b == RELEASED {
                libc::_exit(0);
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break;
        }
        for (path, value) in writes {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                libc::write(fd, value.as_ptr().cast(), value.len());
                libc::close(fd);
            }
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        for _ in 0..RMDIR_TRIES {
            if libc::rmdir(dir.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                break;
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}
