//! Real-time helpers, as rt-tests' rt-utils: CPU affinity, SCHED_FIFO, mlockall,
//! `/dev/cpu_dma_latency`, clocks and absolute sleeps, and how each privileged step went.

use super::NS_PER_SEC;
use model::latency::Step;
use std::fs::File;
use std::io::Write;

/// The CPUs the measurement ran on: the pinned ones, or every available CPU for free threads.
pub fn measured_cpus(config: &model::latency::Config) -> Vec<u32> {
    let mut cpus: Vec<u32> = match &config.affinity {
        model::latency::Affinity::Pinned(_) => (0..config.threads)
            .filter_map(|i| config.cpu_of(i))
            .collect(),
        model::latency::Affinity::Free => available_cpus(),
    };
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The CPUs this process may run on (`sched_getaffinity`).
pub fn available_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as u32)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect()
}

/// The time of `clock` (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID) in nanoseconds.
pub fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; the clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Sleep until the absolute CLOCK_MONOTONIC time `t_ns`, retrying after a signal.
pub fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        // `as _`: time_t is i64 or i32 (32-bit musl), and libc deprecates naming it on musl.
        tv_sec: (t_ns / NS_PER_SEC) as _,
        tv_nsec: (t_ns % NS_PER_SEC) as libc::c_long,
    };
    // Bounded: each EINTR needs a signal; a handful is plenty.
    for _ in 0..1000 {
        // SAFETY: `ts` is valid; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Pin the calling thread to `cpu` (`sched_setaffinity`); the error is the kernel's words.
pub fn set_affinity(cpu: u32) -> Result<(), String> {
    // SAFETY: plain data, zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu was validated against the available set, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: valid set of the size passed; 0 = the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "pinning to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Run the calling thread under SCHED_FIFO at `priority` (the `sched_setscheduler` system call).
///
/// Through `syscall(2)`, not the C library's wrapper: musl's `sched_setscheduler()` (and
/// `sched_getscheduler`, `sched_setparam`, `sched_getparam`) always fail with ENOSYS by design
/// (src/sched/sched_setscheduler.c: POSIX says they act on processes, Linux's act on threads),
/// so the static board binaries would measure a normal thread as root. The system call sets
/// the policy of one thread on every libc; `pthread_setschedparam` would do the same in both
/// libcs but through a thread handle this thread already is.
pub fn set_fifo(priority: u8) -> Step {
    // musl's sched_param has more fields than glibc's (the SCHED_SPORADIC ones it reserves):
    // start from zero and set the one Linux reads (its struct sched_param is one int), so the
    // same code builds for both.
    // SAFETY: plain data, all-zero is a valid value.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = i32::from(priority);
    // SAFETY: valid sched_param that outlives the call; pid 0 = the calling thread.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            0 as libc::pid_t,
            libc::SCHED_FIFO,
            &param as *const libc::sched_param,
        )
    };
    if rc == 0 {
        Step::Done
    } else {
        Step::Refused(std::io::Error::last_os_error().to_string())
    }
}

/// The CPU the calling thread runs on now (`sched_getcpu`).
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments, returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Lock the process's memory, present and future (`mlockall(MCL_CURRENT | MCL_FUTURE)`).
pub fn lock_memory() -> Step {
    // SAFETY: plain flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Step::Done
    } else {
        Step::Refused(std::io::Error::last_os_error().to_string())
    }
}

/// Whether this process's locked memory counts against a limit: RLIMIT_MEMLOCK finite and
/// no CAP_IPC_LOCK (with it mlock ignores the limit, capabilities(7)). Unknown counts as
/// limited.
pub fn memlock_limited() -> bool {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid rlimit the kernel fills.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return true;
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        return false;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    !has_cap_ipc_lock(&status)
}

/// Whether `/proc/self/status` text has CAP_IPC_LOCK (bit 14) in its effective set
/// (`CapEff:`, hexadecimal; proc(5), include/uapi/linux/capability.h).
fn has_cap_ipc_lock(status: &str) -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// Hold the PM QoS CPU latency request at 0 us: the request lasts while the file is open
/// (Documentation/admin-guide/pm/cpuidle.rst, "CPU latency QoS"; cyclictest does the same).
pub fn hold_dma_latency() -> (Step, Option<File>) {
    let path = "/dev/cpu_dma_latency";
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(mut f) => match f.write_all(&0i32.to_ne_bytes()) {
            Ok(()) => (Step::Done, Some(f)),
            Err(e) => (Step::Refused(format!("{path}: {e}")), None),
        },
        Err(e) => (Step::Refused(format!("{path}: {e}")), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_ipc_lock_is_read_from_the_effective_set() {
        // Root's full set (6.x kernels: 41 capabilities), and a plain user's empty one.
        assert!(has_cap_ipc_lock(
            "Name:\tx\nCapPrm:\t0\nCapEff:\t000001ffffffffff\n"
        ));
        assert!(!has_cap_ipc_lock("CapEff:\t0000000000000000\n"));
        assert!(has_cap_ipc_lock("CapEff:\t0000000000004000\n"));
        assert!(!has_cap_ipc_lock("no such line"));
    }
}
