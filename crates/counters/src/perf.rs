//! Counting with perf_event_open(2), as `perf stat` does.
//!
//! One file descriptor per event and CPU: a process and its children (`inherit`, enabled at
//! `exec` so the count starts with the command, not with headroom), or every CPU of a list
//! (system-wide, `pid = -1`), an uncore PMU on the CPU of its `cpumask` only. Each fd is
//! read as `{value, time_enabled, time_running}` (PERF_FORMAT_TOTAL_TIME_ENABLED |
//! _RUNNING): when the kernel had to multiplex (more events than counters), the value is
//! scaled by enabled/running and the fraction is reported, as perf prints `(62.50%)`.
//! Events of a group `{a,b}` share a leader and are scheduled together.

use crate::event::Event;
use backend::{attr_for, disable_fd, enable_fd, open_one};
use std::os::fd::{AsRawFd, OwnedFd};

/// Where to count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Process `pid` and the children it creates from now on; the counters start when it
    /// calls exec (enable_on_exec), so a workload held before exec is counted whole.
    Process(i32),
    /// These CPUs, every process (perf stat -a / -C).
    Cpus(Vec<u32>),
}

/// Why an event could not be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The kernel or hardware does not have the event (ENOENT, EOPNOTSUPP, ENODEV on a
    /// generic hardware event): perf prints `<not supported>` and goes on.
    NotSupported(String),
    /// perf_event_paranoid or a missing capability (EACCES, EPERM).
    Permission(String),
    /// Anything else, said in one sentence.
    Other(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::NotSupported(s) | OpenError::Permission(s) | OpenError::Other(s) => {
                f.write_str(s)
            }
        }
    }
}

/// One event's file descriptors (one per CPU, or one for a process).
struct Slot {
    fds: Vec<OwnedFd>,
    error: Option<OpenError>,
}

/// The open counters of a run.
pub struct Session {
    slots: Vec<Slot>,
    /// The events perf's fallback opened in user space only (see [`Session::open`]).
    user_only: Vec<usize>,
}

/// One raw reading, summed over the event's CPUs (perf's aggregation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

impl Reading {
    /// `self - earlier`, for interval printing.
    pub fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.wrapping_sub(earlier.value),
            enabled_ns: self.enabled_ns.saturating_sub(earlier.enabled_ns),
            running_ns: self.running_ns.saturating_sub(earlier.running_ns),
        }
    }
}

/// What a reading means, as perf states it.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Counted; `value` already scaled by enabled/running and by the event's scale;
    /// `running_percent` < 100 when the kernel multiplexed it.
    Counted {
        value: f64,
        raw: u64,
        running_percent: f64,
    },
    /// Opened but never scheduled (time_running 0): perf's `<not counted>`.
    NotCounted,
    /// perf's `<not supported>`, with the reason.
    NotSupported(String),
}

/// Scale a reading as perf does (tools/perf/util/stat.c perf_counts_values__scale): a
/// counter that ran part of the time it was enabled is extrapolated to the whole time.
pub fn outcome(r: &Reading, scale: f64) -> Outcome {
    if r.running_ns == 0 {
        return Outcome::NotCounted;
    }
    let extrapolated = if r.running_ns < r.enabled_ns {
        r.value as f64 * r.enabled_ns as f64 / r.running_ns as f64
    } else {
        r.value as f64
    };
    let pct = if r.enabled_ns == 0 {
        100.0
    } else {
        (r.running_ns as f64 / r.enabled_ns as f64 * 100.0).min(100.0)
    };
    Outcome::Counted {
        value: extrapolated * scale,
        raw: r.value,
        running_percent: pct,
    }
}

/// perf_event_open(2) through perf-event-open-sys, where the crate has the architecture's
/// bindings (every 64-bit target headroom is built for).
#[cfg(not(target_arch = "arm"))]
mod backend {
    use crate::event::Event;
    use perf_event_open_sys as sys;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    pub(super) type Attr = sys::bindings::perf_event_attr;

    pub(super) fn attr_for(e: &Event, leader: bool, process: bool) -> Attr {
        // Zero-filled first (the crate's advice: fields added by newer kernels stay 0).
        let mut a = Attr {
            type_: e.type_id,
            size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
            config: e.config[0],
            config3: e.config[3],
            read_format: (sys::bindings::PERF_FORMAT_TOTAL_TIME_ENABLED
                | sys::bindings::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64,
            ..Default::default()
        };
        a.__bindgen_anon_3.config1 = e.config[1];
        a.__bindgen_anon_4.config2 = e.config[2];
        // Counting, never sampling: sample_period 0 is what every uncore driver demands.
        a.__bindgen_anon_1.sample_period = 0;
        // Every exclude bit set deliberately (see event::Exclude): uncore PMUs reject any.
        a.set_exclude_user(e.exclude.user as u64);
        a.set_exclude_kernel(e.exclude.kernel as u64);
        a.set_exclude_hv(e.exclude.hv as u64);
        a.set_exclude_idle(e.exclude.idle as u64);
        a.set_exclude_host(e.exclude.host as u64);
        a.set_exclude_guest(e.exclude.guest as u64);
        // Only a leader starts disabled; members follow it.
        a.set_disabled(leader as u64);
        if process {
            a.set_inherit(1);
            a.set_enable_on_exec(leader as u64);
        }
        a
    }

    pub(super) fn open_one(
        attr: &mut Attr,
        pid: i32,
        cpu: i32,
        group_fd: i32,
    ) -> Result<OwnedFd, i32> {
        // SAFETY: `attr` is a fully initialised perf_event_attr with its own size; the kernel
        // reads it and returns a new file descriptor or -1.
        let fd = unsafe {
            sys::perf_event_open(
                attr,
                pid,
                cpu,
                group_fd,
                sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        // SAFETY: a file descriptor the kernel just returned, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Start counting on `fd`.
    pub(super) fn enable_fd(fd: &OwnedFd) {
        // SAFETY: an open perf event fd; ENABLE takes an integer flag argument.
        unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) };
    }

    /// Stop counting on `fd`.
    pub(super) fn disable_fd(fd: &OwnedFd) {
        // SAFETY: as in enable_fd().
        unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
    }
}

/// 32-bit ARM: perf-event-open-sys has no bindings for it, so nothing is opened and every
/// event says why (ENOSYS, described by `describe`); the PMU list still works.
#[cfg(target_arch = "arm")]
mod backend {
    use crate::event::Event;
    use std::os::fd::OwnedFd;

    pub(super) type Attr = ();

    pub(super) fn attr_for(_e: &Event, _leader: bool, _process: bool) -> Attr {}

    pub(super) fn open_one(
        _attr: &mut Attr,
        _pid: i32,
        _cpu: i32,
        _group: i32,
    ) -> Result<OwnedFd, i32> {
        Err(libc::ENOSYS)
    }

    pub(super) fn enable_fd(_fd: &OwnedFd) {}

    pub(super) fn disable_fd(_fd: &OwnedFd) {}
}

/// The current perf_event_paranoid level (for the permission message).
fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn describe(e: &Event, errno: i32, scope: &Scope, cpu: i32) -> OpenError {
    let name = &e.name;
    // SAFETY: sysconf has no preconditions.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if cpu >= 0
        && configured > 0
        && i64::from(cpu) >= configured as i64
        && matches!(errno, libc::EINVAL | libc::ENODEV | libc::ENXIO)
    {
        return OpenError::Other(format!(
            "{name}: CPU {cpu} does not exist on this machine ({configured} CPUs): check -C, or \
             the --root tree's cpu/online"
        ));
    }
    let sysfs_pmu = !matches!(e.pmu.as_str(), "software" | "tracepoint" | "cpu");
    match errno {
        // A PMU sysfs listed, with its own dynamic type number (above the fixed ones, 0-5 in
        // enum perf_type_id), that the running kernel does not know.
        libc::ENOENT | libc::ENODEV if sysfs_pmu && e.type_id > 5 => {
            OpenError::NotSupported(format!(
                "{name}: the running kernel has no PMU {} of type {} (it vanished: its driver \
                 was unloaded or its device removed since it was listed, or --root describes \
                 another machine)",
                e.pmu, e.type_id
            ))
        }
        libc::ENOENT | libc::EOPNOTSUPP => OpenError::NotSupported(format!(
            "{name}: the kernel or the hardware does not have this event"
        )),
        libc::ENODEV if e.pmu == "cpu" || e.type_id == crate::pmu::PERF_TYPE_HARDWARE => {
            OpenError::NotSupported(format!(
                "{name}: no hardware PMU (a virtual machine without a virtual PMU)"
            ))
        }
        libc::ENODEV => OpenError::Other(format!(
            "{name}: the PMU {} is gone (ENODEV): its driver was unloaded or its device removed",
            e.pmu
        )),
        libc::EACCES | libc::EPERM => {
            let unprivileged = format!(
                "perf_event_paranoid is {}; run as root or with CAP_PERFMON, or lower \
                 /proc/sys/kernel/perf_event_paranoid (-1 allows every event; 0 system-wide \
                 counting{})",
                paranoid().map_or("unknown".to_string(), |p| p.to_string()),
                if matches!(scope, Scope::Cpus(_)) {
                    ", which -a needs"
                } else {
                    ""
                }
            );
            // SAFETY: geteuid cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            OpenError::Permission(format!(
                "No permission to enable {name} event: {}",
                model::privilege::refusal(root, &unprivileged)
            ))
        }
        libc::EINVAL if e.cpumask.is_some() && e.exclude.any() => OpenError::Other(format!(
            "{name}: the {} PMU counts the whole device and accepts no :u/:k/:h modifier \
             (EINVAL)",
            e.pmu
        )),
        libc::EINVAL if e.pmu.starts_with("hisi_pcie") => OpenError::Other(format!(
            "{name}: hisi_pcie PMUs need a target, port= (a root port's bitmap) or bdf= \
             (a function), and accept one of each counter kind at a time (EINVAL)"
        )),
        libc::EINVAL => OpenError::Other(format!(
            "{name}: the PMU {} rejected the event's attributes (EINVAL): check the terms \
             against its format/ in sysfs",
            e.pmu
        )),
        libc::ENOSYS => OpenError::NotSupported(format!(
            "{name}: this build cannot count: perf_event_open is not built for this \
             architecture (32-bit ARM), or the kernel lacks it (CONFIG_PERF_EVENTS)"
        )),
        libc::EMFILE => OpenError::Other(format!(
            "{name}: too many open files (EMFILE): raise `ulimit -n` or count fewer CPUs/events"
        )),
        libc::ENOSPC | libc::EBUSY => OpenError::Other(format!(
            "{name}: the PMU {} has no free counter (another user holds it)",
            e.pmu
        )),
        other => OpenError::Other(format!(
            "{name}: perf_event_open failed: {}",
            std::io::Error::from_raw_os_error(other)
        )),
    }
}

/// perf's name for an event counted in user space only: `task-clock:u`, `cpu/cycles/u`.
fn user_only_name(name: &str) -> String {
    if name.ends_with('/') {
        format!("{name}u")
    } else {
        format!("{name}:u")
    }
}

/// The CPUs an event is opened on in a scope: a PMU with a cpumask counts on its mask (the
/// first CPU: uncore PMUs move their context there, one is enough), whatever `-C` says.
fn cpus_for(e: &Event, scope: &Scope) -> Vec<i32> {
    match (&e.cpumask, scope) {
        (Some(mask), _) => mask.first().map(|&c| vec![c as i32]).unwrap_or_default(),
        (None, Scope::Cpus(list)) => list.iter().map(|&c| c as i32).collect(),
        (None, Scope::Process(_)) => vec![-1],
    }
}

impl Session {
    /// Open every event. An event the kernel does not support, or that it refuses, keeps
    /// its reason and the others are still counted (perf goes on too); a permission error
    /// is returned at once, since every event would hit it.
    ///
    /// perf's fallback (tools/perf/util/evsel.c evsel__fallback): an event refused with
    /// EACCES because perf_event_paranoid is above 1 (no kernel profiling without
    /// CAP_PERFMON) is opened again excluding the kernel and the hypervisor, renamed with
    /// perf's `:u` (`task-clock:u`), unless the user excluded user space (`:k`) or the PMU
    /// accepts no exclusion (an uncore PMU). [`Session::user_only_note`] says so.
    pub fn open(events: &mut [Event], scope: &Scope) -> Result<Session, OpenError> {
        let mut slots: Vec<Slot> = Vec::with_capacity(events.len());
        let mut user_only = Vec::new();
        // (group, cpu) -> leader fd
        let mut leaders: std::collections::HashMap<(usize, i32), i32> = Default::default();
        for (i, e) in events.iter_mut().enumerate() {
            let uncore = e.cpumask.is_some();
            let process = matches!(scope, Scope::Process(_)) && !uncore;
            let pid = match scope {
                Scope::Process(p) if !uncore => *p,
                _ => -1,
            };
            let mut slot = Slot {
                fds: Vec::new(),
                error: None,
            };
            // Bounded: at most one retry, after which the event excludes the kernel.
            'event: loop {
                for cpu in cpus_for(e, scope) {
                    let leader_fd = e.group.and_then(|g| leaders.get(&(g, cpu)).copied());
                    let mut attr = attr_for(e, leader_fd.is_none(), process);
                    match open_one(&mut attr, pid, cpu, leader_fd.unwrap_or(-1)) {
                        Ok(fd) => {
                            if let (Some(g), None) = (e.group, leader_fd) {
                                leaders.insert((g, cpu), fd.as_raw_fd());
                            }
                            slot.fds.push(fd);
                        }
                        Err(libc::EACCES)
                            if !e.exclude.kernel
                                && !e.exclude.user
                                && !uncore
                                && paranoid().is_some_and(|p| p > 1) =>
                        {
                            e.exclude.kernel = true;
                            e.exclude.hv = true;
                            e.name = user_only_name(&e.name);
                            user_only.push(i);
                            slot.fds.clear();
                            continue 'event;
                        }
                        Err(errno) => {
                            let d = describe(e, errno, scope, cpu);
                            if matches!(d, OpenError::Permission(_)) {
                                return Err(d);
                            }
                            slot.fds.clear();
                            slot.error = Some(d);
                            break;
                        }
                    }
                }
                break;
            }
            slots.push(slot);
        }
        Ok(Session { slots, user_only })
    }

    /// The sentence for the events perf's fallback counted in user space only (`None` when
    /// none was), naming them as they are now called.
    pub fn user_only_note(&self, events: &[Event]) -> Option<String> {
        if self.user_only.is_empty() {
            return None;
        }
        let names: Vec<&str> = self
            .user_only
            .iter()
            .filter_map(|&i| events.get(i).map(|e| e.name.as_str()))
            .collect();
        Some(format!(
            "perf_event_paranoid is {} (kernel profiling needs root or CAP_PERFMON): {} counted \
             in user space only, as perf stat falls back ({}); run as root, or lower \
             /proc/sys/kernel/perf_event_paranoid to 1, to count kernel time too",
            paranoid().map_or("above 1".to_string(), |p| p.to_string()),
            if names.len() == 1 {
                "the event is"
            } else {
                "the events are"
            },
            names.join(", ")
        ))
    }

    /// Why event `i` is not counted, if it could not be opened.
    pub fn error(&self, i: usize) -> Option<&OpenError> {
        self.slots.get(i).and_then(|s| s.error.as_ref())
    }

    /// Start every counter now (system-wide counting; a process scope starts at exec).
    pub fn enable(&self) {
        for fd in self.slots.iter().flat_map(|s| &s.fds) {
            enable_fd(fd);
        }
    }

    /// Stop every counter.
    pub fn disable(&self) {
        for fd in self.slots.iter().flat_map(|s| &s.fds) {
            disable_fd(fd);
        }
    }

    /// Read every event, summed over its CPUs; `None` for an event that was not opened or
    /// whose read failed (a PMU that vanished mid-run reads ENODEV).
    pub fn read(&self) -> Vec<Option<Reading>> {
        self.slots
            .iter()
            .map(|s| {
                if s.fds.is_empty() {
                    return None;
                }
                let mut sum = Reading::default();
                for fd in &s.fds {
                    let mut buf = [0u64; 3];
                    // SAFETY: reading 24 bytes into a 24-byte buffer from a perf fd whose
                    // read_format is TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.
                    let n = unsafe {
                        libc::read(
                            fd.as_raw_fd(),
                            buf.as_mut_ptr().cast(),
                            std::mem::size_of_val(&buf),
                        )
                    };
                    if n != std::mem::size_of_val(&buf) as isize {
                        return None;
                    }
                    sum.value = sum.value.wrapping_add(buf[0]);
                    sum.enabled_ns += buf[1];
                    sum.running_ns += buf[2];
                }
                Some(sum)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplexed_counts_are_extrapolated_with_the_fraction() {
        // Ran 5 ms of the 8 ms it was enabled: 1000 counted -> 1600, "(62.50%)".
        let r = Reading {
            value: 1000,
            enabled_ns: 8_000_000,
            running_ns: 5_000_000,
        };
        match outcome(&r, 1.0) {
            Outcome::Counted {
                value,
                raw,
                running_percent,
            } => {
                assert_eq!((value, raw), (1600.0, 1000));
                assert_eq!(running_percent, 62.5);
            }
            other => panic!("{other:?}"),
        }
        let never = Reading {
            value: 0,
            enabled_ns: 8_000_000,
            running_ns: 0,
        };
        assert_eq!(outcome(&never, 1.0), Outcome::NotCounted);
        let full = Reading {
            value: 2_000_000,
            enabled_ns: 5,
            running_ns: 5,
        };
        assert_eq!(
            outcome(&full, 1e-6),
            Outcome::Counted {
                value: 2.0,
                raw: 2_000_000,
                running_percent: 100.0
            }
        );
    }
}
