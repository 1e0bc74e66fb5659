//! Tracepoints recorded beside a latency run (`bench latency --split`): every event of the
//! timer, interrupt and scheduler tracepoints ([`EVENTS`]) on the measured CPUs, in a tracefs
//! instance of headroom's own (Documentation/trace/ftrace.rst, "Instances"), read from its
//! per-CPU binary ring buffers (`per_cpu/cpuN/trace_pipe_raw`), as rtla and trace-cmd read
//! them.
//!
//! Each event's raw record is read at the offsets its `format` file gives
//! (Documentation/trace/events.rst, "Event formats"), never at assumed ones, and stamped on
//! the instance's `mono` trace clock: CLOCK_MONOTONIC, the clock of the timers and of the
//! measuring threads. The ring buffer pages are parsed as `events/header_page` and
//! `events/header_event` lay them out (kernel/trace/ring_buffer.c).
//!
//! Not perf_event_open: since Linux 6.11 perf keeps its recursion guard per task
//! (`task_struct::perf_recursion`), and where a task's guard is left set every event in its
//! context is dropped without a PERF_RECORD_LOST; on this project's 6.18 VM that hid the idle
//! task of CPU 1 (`perf record` kept 7 of cyclictest's 300 wake-ups there, the tracefs ring
//! buffer all 300). The ring buffer has no such guard, but it is not complete either: on the
//! same VM no `sched_switch` out of the idle task (`swapper/N`) ever reaches it (486
//! switches into idle, none out, in one run), so a task woken on an idle CPU shows no
//! switch-in; the analysis (`model::latency::split`, `held`) takes such a task's run from
//! its own events instead of assuming every switch is recorded.
//!
//! The kernel never waits for the reader: the instance does not overwrite, so when a CPU's
//! buffer is full new events are dropped and counted (`per_cpu/cpuN/stats`, "dropped
//! events"); the measured threads are never held up by the recording.
//! [`TraceSampler::drain`] empties the buffers from the caller's thread. Memory is bounded:
//! [`BUFFER_KB`] per measured CPU in the kernel. The instance is removed when the sampler is
//! dropped, by [`remove_instances`] from a panic hook, and by its reaper
//! ([`crate::reaper`]) when the run is killed; one left all the same (its reaper killed too)
//! is removed by the next headroom command ([`remove_stale_instances`]).

use crate::pmu::TRACEFS_EVENTS;
use crate::reaper::Reaper;
use crate::{ReadUnder, SysRoot};
use model::latency::trace::{Comm, EventKind, Irq, Task, TraceEvent};
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The ring buffer of each measured CPU, KiB: about 250,000 events (16 bytes for a softirq's,
/// 72 for a switch), two seconds of a CPU busy with 10,000 device interrupts a second, so a
/// reader held off for a while (its drains come every 100 ms) loses nothing.
pub const BUFFER_KB: u32 = 4096;

/// The ring buffer of every other CPU (none of their events is recorded: `tracing_cpumask`).
const IDLE_BUFFER_KB: u32 = 4;

/// What a tracepoint is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    TimerStart,
    TimerExpire,
    Waking,
    Switch,
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    /// An x86 system vector (`irq_vectors:NAME_entry`), with its name.
    VectorEntry(&'static str),
    VectorExit,
}

/// The tracepoints recorded: those the split needs (`required`), then those that explain
/// a late wake-up where the kernel has them (x86 names its own timer interrupt and IPIs in
/// `irq_vectors`; elsewhere the timer is a device line of `irq_handler_entry`).
const EVENTS: [(&str, &str, Role, bool); 16] = [
    ("timer", "hrtimer_start", Role::TimerStart, true),
    ("timer", "hrtimer_expire_entry", Role::TimerExpire, true),
    ("sched", "sched_waking", Role::Waking, true),
    ("sched", "sched_switch", Role::Switch, true),
    ("irq", "irq_handler_entry", Role::IrqEntry, false),
    ("irq", "irq_handler_exit", Role::IrqExit, false),
    ("irq", "softirq_entry", Role::SoftirqEntry, false),
    ("irq", "softirq_exit", Role::SoftirqExit, false),
    (
        "irq_vectors",
        "local_timer_entry",
        Role::VectorEntry("local_timer"),
        false,
    ),
    ("irq_vectors", "local_timer_exit", Role::VectorExit, false),
    (
        "irq_vectors",
        "reschedule_entry",
        Role::VectorEntry("reschedule"),
        false,
    ),
    ("irq_vectors", "reschedule_exit", Role::VectorExit, false),
    (
        "irq_vectors",
        "call_function_entry",
        Role::VectorEntry("call_function"),
        false,
    ),
    ("irq_vectors", "call_function_exit", Role::VectorExit, false),
    (
        "irq_vectors",
        "call_function_single_entry",
        Role::VectorEntry("call_function_single"),
        false,
    ),
    (
        "irq_vectors",
        "call_function_single_exit",
        Role::VectorExit,
        false,
    ),
];

/// One field of a tracepoint's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the field holds (length << 16 | offset) of a string elsewhere in the
    /// record.
    pub data_loc: bool,
}

/// A tracepoint's `format` file: its id and fields by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub id: u64,
    pub fields: HashMap<String, Field>,
}

/// The fields of a tracefs `format` file (or of `events/header_page`): lines like
/// `field:s64 expires;<TAB>offset:24;<TAB>size:8;<TAB>signed:1;`.
pub fn parse_fields(text: &str) -> Result<HashMap<String, Field>, String> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let mut parts = rest.split(';').map(str::trim);
        let decl = parts.next().unwrap_or_default().trim();
        let get = |key: &str| -> Option<usize> {
            parts
                .clone()
                .find_map(|p| p.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        let (Some(offset), Some(size)) = (get("offset:"), get("size:")) else {
            return Err(format!("a field without offset or size: `{line}`"));
        };
        let signed = get("signed:") == Some(1);
        // The name is the declaration's last word, without an array's brackets.
        let name = decl
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or_default()
            .split('[')
            .next()
            .unwrap_or_default();
        if name.is_empty() {
            return Err(format!("a field without a name: `{line}`"));
        }
        // The first of two fields at one place wins (header_page's `commit` before
        // `overwrite`).
        fields.entry(name.to_string()).or_insert(Field {
            offset,
            size,
            signed,
            data_loc: decl.starts_with("__data_loc"),
        });
    }
    Ok(fields)
}

/// Parse a tracefs `format` file (`ID: 460` and its fields).
pub fn parse_format(text: &str) -> Result<Format, String> {
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("ID:"))
        .and_then(|v| v.trim().parse().ok());
    Ok(Format {
        id: id.ok_or("no `ID:` line")?,
        fields: parse_fields(text)?,
    })
}

impl Format {
    fn field(&self, name: &str) -> Option<Field> {
        self.fields.get(name).copied()
    }
}

/// The number in `field` of a raw record, sign-extended when the field is signed.
fn number(raw: &[u8], f: Field) -> Option<i64> {
    let b = raw.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 if f.signed => i64::from(b[0] as i8),
        1 => i64::from(b[0]),
        2 if f.signed => i64::from(i16::from_ne_bytes([b[0], b[1]])),
        2 => i64::from(u16::from_ne_bytes([b[0], b[1]])),
        4 if f.signed => i64::from(i32::from_ne_bytes(b.try_into().ok()?)),
        4 => i64::from(u32::from_ne_bytes(b.try_into().ok()?)),
        8 => i64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// The bytes of a `__data_loc char[]` field (the kernel's NUL-terminated copy), without the
/// NUL.
fn data_loc_bytes(raw: &[u8], f: Field) -> Option<&[u8]> {
    let loc = number(raw, f)? as u32;
    let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    let bytes = raw.get(off..off + len)?;
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    Some(&bytes[..end])
}

/// A fixed `char[16]` field (`prev_comm`).
fn comm(raw: &[u8], f: Field) -> Option<Comm> {
    let b = raw.get(f.offset..f.offset + f.size.min(16))?;
    let mut c = [0u8; 16];
    c[..b.len()].copy_from_slice(b);
    Some(Comm(c))
}

/// How to read one tracepoint's records.
#[derive(Clone, Debug)]
struct Decoder {
    role: Role,
    common_pid: Field,
    fields: Vec<Field>,
    /// The interrupt names met so far, shared by every event that names one.
    names: std::collections::BTreeMap<Vec<u8>, std::sync::Arc<str>>,
}

impl Decoder {
    /// The fields `role` reads, in the order [`Decoder::decode`] uses them.
    fn new(role: Role, f: &Format) -> Result<Decoder, String> {
        let names: &[&str] = match role {
            Role::TimerStart => &["hrtimer", "expires", "softexpires"],
            Role::TimerExpire => &["hrtimer", "now"],
            Role::Waking => &["pid"],
            Role::Switch => &[
                "prev_comm",
                "prev_pid",
                "prev_prio",
                "next_comm",
                "next_pid",
                "next_prio",
                "prev_state",
            ],
            Role::IrqEntry => &["irq", "name"],
            Role::IrqExit => &["irq"],
            Role::SoftirqEntry | Role::SoftirqExit => &["vec"],
            Role::VectorEntry(_) | Role::VectorExit => &["vector"],
        };
        let get = |n: &str| f.field(n).ok_or(format!("no field `{n}` in its format"));
        Ok(Decoder {
            role,
            common_pid: get("common_pid")?,
            fields: names.iter().map(|n| get(n)).collect::<Result<_, _>>()?,
            names: Default::default(),
        })
    }

    /// The shared copy of an interrupt's name (bounded: a kernel has a few hundred lines).
    fn name(&mut self, bytes: &[u8]) -> std::sync::Arc<str> {
        if let Some(n) = self.names.get(bytes) {
            return n.clone();
        }
        let n: std::sync::Arc<str> = String::from_utf8_lossy(bytes).into();
        if self.names.len() < 4096 {
            self.names.insert(bytes.to_vec(), n.clone());
        }
        n
    }

    fn decode(&mut self, raw: &[u8], at_ns: u64, cpu: u32) -> Option<TraceEvent> {
        let n = |i: usize| number(raw, self.fields[i]);
        let u = |i: usize| n(i).map(|v| v as u64);
        let kind = match self.role {
            Role::TimerStart => EventKind::TimerStart {
                timer: u(0)?,
                expires_ns: u(1)?,
                soft_ns: u(2)?,
            },
            Role::TimerExpire => EventKind::TimerExpire {
                timer: u(0)?,
                now_ns: u(1)?,
            },
            Role::Waking => EventKind::Waking { pid: n(0)? as i32 },
            Role::Switch => EventKind::Switch {
                prev: Task {
                    comm: comm(raw, self.fields[0])?,
                    pid: n(1)? as i32,
                    prio: n(2)? as i32,
                },
                next: Task {
                    comm: comm(raw, self.fields[3])?,
                    pid: n(4)? as i32,
                    prio: n(5)? as i32,
                },
                // No sleeping state (TASK_REPORT, the low byte): still runnable, preempted
                // (include/trace/events/sched.h, __trace_sched_switch_state).
                preempted: n(6)? & 0xff == 0,
            },
            Role::IrqEntry => {
                let number = n(0)? as i32;
                let bytes = data_loc_bytes(raw, self.fields[1])?;
                EventKind::IrqEntry(Irq {
                    number,
                    name: self.name(bytes),
                    vector: false,
                })
            }
            Role::IrqExit => EventKind::IrqExit {
                number: n(0)? as i32,
                vector: false,
            },
            Role::SoftirqEntry => EventKind::SoftirqEntry { vec: n(0)? as u32 },
            Role::SoftirqExit => EventKind::SoftirqExit { vec: n(0)? as u32 },
            Role::VectorEntry(name) => {
                let number = n(0)? as i32;
                EventKind::IrqEntry(Irq {
                    number,
                    name: self.name(name.as_bytes()),
                    vector: true,
                })
            }
            Role::VectorExit => EventKind::IrqExit {
                number: n(0)? as i32,
                vector: true,
            },
        };
        Some(TraceEvent {
            at_ns,
            cpu,
            pid: number(raw, self.common_pid)? as i32,
            kind,
        })
    }
}

/// Why the tracepoints could not be recorded, in one sentence each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The kernel lacks a tracepoint the split needs, or tracefs is not mounted.
    #[error("{0}")]
    Missing(String),
    /// Not allowed (tracefs is root's; system-wide sampling needs CAP_PERFMON).
    #[error("{0}")]
    Permission(String),
    #[error("{0}")]
    Other(String),
}

/// The tracepoints recorded on the measured CPUs, in an instance of headroom's own.
pub struct TraceSampler {
    /// Each measured CPU's `trace_pipe_raw`, opened non-blocking, and its drops so far
    /// (before `instance`: they close first, and an instance with an open file cannot be
    /// removed).
    readers: Vec<(u32, std::fs::File, u64)>,
    instance: Instance,
    decoders: HashMap<u16, Decoder>,
    layout: PageLayout,
    /// Optional tracepoints this kernel lacks (`irq:softirq_entry`, ...).
    missing: Vec<String>,
    page: Vec<u8>,
}

/// The tracefs mount: the directory that holds `events/` and `instances/`.
fn tracefs(root: &SysRoot) -> Option<PathBuf> {
    TRACEFS_EVENTS
        .iter()
        .map(|e| root.path(e.trim_end_matches("/events")))
        .find(|p| p.join("events").is_dir())
}

/// `SYSTEM/NAME/format` of tracefs's `events` directory.
fn format_of(root: &SysRoot, system: &str, name: &str) -> Result<Option<Format>, TraceError> {
    for base in TRACEFS_EVENTS {
        match root.read(&format!("{base}/{system}/{name}/format")) {
            Ok(text) => {
                return parse_format(&text).map(Some).map_err(|e| {
                    TraceError::Other(format!(
                        "{base}/{system}/{name}/format is not in the documented format: {e}"
                    ))
                })
            }
            Err(e) if e.is_unsupported() => continue,
            Err(crate::Error::Read { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                return Err(TraceError::Permission(format!(
                    "reading tracepoint {system}:{name} needs root (tracefs is root's): run as \
                     root for --split"
                )))
            }
            Err(e) => return Err(TraceError::Other(e.to_string())),
        }
    }
    Ok(None)
}

/// A tracefs file read with one large read: `events/header_page` answers a small first read
/// (std's 32-byte probe of a file whose size reads 0) with its start and then end of file.
fn read_whole(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    // Bounded: at most the buffer's size is read.
    while len < buf.len() {
        match f.read(&mut buf[len..])? {
            0 => break,
            n => len += n,
        }
    }
    buf.truncate(len);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A CPU list as tracefs's `tracing_cpumask` takes it: hexadecimal, in comma-separated 32-bit
/// words, most significant first (`3`, `1,00000000`).
pub fn cpumask(cpus: &[u32]) -> String {
    let words = cpus.iter().map(|&c| c / 32 + 1).max().unwrap_or(1) as usize;
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[(c / 32) as usize] |= 1 << (c % 32);
    }
    let mut out = format!("{:x}", w[words - 1]);
    for word in w[..words - 1].iter().rev() {
        out.push_str(&format!(",{word:08x}"));
    }
    out
}

impl TraceSampler {
    /// Record every tracepoint of [`EVENTS`] on `cpus`, stopped until
    /// [`TraceSampler::enable`]. A required one the kernel lacks is an error naming it; an
    /// optional one is listed by [`TraceSampler::missing`].
    pub fn open(root: &SysRoot, cpus: &[u32]) -> Result<TraceSampler, TraceError> {
        let Some(tracefs) = tracefs(root) else {
            let refused = TRACEFS_EVENTS.iter().any(|e| {
                let dir = root.path(e.trim_end_matches("/events"));
                matches!(std::fs::read_dir(&dir), Err(ref err)
                    if err.kind() == std::io::ErrorKind::PermissionDenied)
            });
            if refused {
                return Err(TraceError::Permission(
                    "tracefs (/sys/kernel/tracing) is root's: --split needs root".to_string(),
                ));
            }
            return Err(TraceError::Missing(
                "tracefs is not mounted (no /sys/kernel/tracing/events): mount it (`mount -t \
                 tracefs nodev /sys/kernel/tracing`) for --split"
                    .to_string(),
            ));
        };
        let mut decoders = HashMap::new();
        let mut wanted = Vec::new();
        let mut missing = Vec::new();
        for (system, name, role, required) in EVENTS {
            let format = match format_of(root, system, name)? {
                Some(f) => f,
                None if required => {
                    return Err(TraceError::Missing(format!(
                        "this kernel has no tracepoint {system}:{name} (tracefs lists none under \
                         events/{system}/{name}), which --split needs"
                    )))
                }
                None => {
                    missing.push(format!("{system}:{name}"));
                    continue;
                }
            };
            let decoder = Decoder::new(role, &format).map_err(|e| {
                TraceError::Other(format!(
                    "tracepoint {system}:{name} is not the one headroom reads: {e}"
                ))
            })?;
            let Ok(type_id) = u16::try_from(format.id) else {
                return Err(TraceError::Other(format!(
                    "tracepoint {system}:{name} has id {}, above a record's 16-bit type",
                    format.id
                )));
            };
            decoders.insert(type_id, decoder);
            wanted.push((system, name, required));
        }
        let header = read_whole(&tracefs.join("events/header_page"))
            .map_err(|e| TraceError::Other(format!("reading events/header_page: {e}")))?;
        let layout = PageLayout::parse(&header).map_err(|e| {
            TraceError::Other(format!(
                "events/header_page is not in the documented format: {e}"
            ))
        })?;
        let instance = Instance::create(root, &tracefs, &[])?;
        let setup = |rel: &str, value: &str| {
            instance.write(rel, value).map_err(|e| {
                TraceError::Other(format!(
                    "setting {rel} of tracefs instance {} to {value}: {e}",
                    instance.dir.display()
                ))
            })
        };
        setup("tracing_on", "0")?;
        setup("trace_clock", "mono").map_err(|_| {
            TraceError::Missing(
                "this kernel's tracefs has no `mono` trace clock (Linux 3.10+), which --split \
                 times events with"
                    .to_string(),
            )
        })?;
        setup("options/overwrite", "0")?;
        setup("buffer_size_kb", &IDLE_BUFFER_KB.to_string())?;
        for &cpu in cpus {
            setup(
                &format!("per_cpu/cpu{cpu}/buffer_size_kb"),
                &BUFFER_KB.to_string(),
            )?;
        }
        setup("tracing_cpumask", &cpumask(cpus))?;
        for (system, name, required) in wanted {
            let rel = format!("events/{system}/{name}/enable");
            if let Err(e) = instance.write(&rel, "1") {
                if required {
                    return Err(TraceError::Other(format!(
                        "enabling tracepoint {system}:{name}: {e}"
                    )));
                }
                missing.push(format!("{system}:{name}"));
            }
        }
        let mut readers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let path = instance
                .dir
                .join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| TraceError::Other(format!("opening {}: {e}", path.display())))?;
            readers.push((cpu, f, 0));
        }
        Ok(TraceSampler {
            page: vec![0; layout.page_size()],
            instance,
            readers,
            decoders,
            layout,
            missing,
        })
    }

    /// The optional tracepoints this kernel lacks.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Start recording.
    pub fn enable(&self) {
        let _ = self.instance.write("tracing_on", "1");
    }

    /// Stop recording (what was recorded stays to be drained).
    pub fn disable(&self) {
        let _ = self.instance.write("tracing_on", "0");
    }

    /// Move every recorded event into `out` (each CPU's in the order recorded); the events
    /// the kernel dropped since the last drain, by CPU (those that lost none left out).
    pub fn drain(&mut self, out: &mut Vec<TraceEvent>) -> Vec<(u32, u64)> {
        let mut lost = Vec::new();
        let decoders = &mut self.decoders;
        for (cpu, f, dropped) in &mut self.readers {
            // Bounded: a read takes a page out of the buffer, which holds BUFFER_KB.
            for _ in 0..=(BUFFER_KB as usize * 1024 / self.page.len().max(1) + 16) {
                match f.read(&mut self.page) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let cpu = *cpu;
                        self.layout.events(&self.page[..n], |at_ns, raw| {
                            let ty = u16::from_ne_bytes([*raw.first()?, *raw.get(1)?]);
                            out.push(decoders.get_mut(&ty)?.decode(raw, at_ns, cpu)?);
                            Some(())
                        });
                    }
                }
            }
            let stats = self
                .instance
                .read(&format!("per_cpu/cpu{cpu}/stats"))
                .unwrap_or_default();
            let now = parse_dropped(&stats);
            if now > *dropped {
                lost.push((*cpu, now - *dropped));
            }
            *dropped = now;
        }
        lost
    }
}

/// `dropped events:` of a `per_cpu/cpuN/stats` file (events a full, non-overwriting buffer
/// refused), plus `overrun:` (events an overwriting one lost) and `commit overrun:` (events
/// lost when nested events filled the buffer during a commit: "should always be zero",
/// Documentation/trace/ftrace.rst, "per_cpu/cpuN/stats").
pub fn parse_dropped(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| {
            l.strip_prefix("dropped events:")
                .or_else(|| l.strip_prefix("overrun:"))
                .or_else(|| l.strip_prefix("commit overrun:"))
        })
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum()
}

/// Instances created by this process, for [`remove_instances`].
static CREATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Remove every tracefs instance this process created and still holds: for a panic hook (the
/// board binaries abort on a panic, where no drop runs).
pub fn remove_instances() {
    let list = match CREATED.try_lock() {
        Ok(l) => l.clone(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for dir in list {
        let _ = std::fs::write(dir.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&dir);
    }
}

/// A tracefs instance of headroom's own, `instances/headroom-PID-START-RANDOM` (`START`: the
/// process's start time, so that a later process with the same id is not taken for its
/// owner), removed on drop, or by its [`Reaper`] when the process ends without dropping it.
pub struct Instance {
    pub dir: PathBuf,
    /// Undoes the instance, and the settings put back with it, if this process is killed.
    reaper: Option<Reaper>,
}

/// The owner of an instance named `headroom-PID-START-RANDOM` (or, before the start time was
/// part of the name, `headroom-PID-RANDOM`): its process id and start time.
pub fn instance_owner(name: &str) -> Option<(u32, Option<u64>)> {
    let parts: Vec<&str> = name.strip_prefix("headroom-")?.split('-').collect();
    let pid = parts.first()?.parse().ok()?;
    match parts.len() {
        2 => Some((pid, None)),
        3 => Some((pid, Some(parts[1].parse().ok()?))),
        _ => None,
    }
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, clock ticks after boot; proc(5));
/// `None` when it is gone.
pub fn start_time(root: &SysRoot, pid: u32) -> Option<u64> {
    let stat = root.read(&format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Stop and remove the instances of headroom processes that no longer exist (a run killed
/// with SIGKILL whose reaper was killed too, or a headroom older than the reaper): every
/// command that can see tracefs does this as it starts. Their names are returned. Nothing
/// else is touched: instances of live headroom processes and of other tools stay.
pub fn remove_stale_instances(root: &SysRoot) -> Vec<String> {
    // Only a tracefs already mounted: looking into /sys/kernel/debug/tracing would mount it
    // (debugfs automounts tracefs there), a change no command that only reads may make.
    let mounted: Vec<PathBuf> = match root.read("/proc/self/mounts") {
        Ok(mounts) => tracefs_mounts(&mounts)
            .into_iter()
            .map(|m| root.path(&m))
            .collect(),
        // A tree without /proc (a fixture): its tracefs directory.
        Err(_) => tracefs(root).into_iter().collect(),
    };
    let mut removed = Vec::new();
    for tracefs in mounted {
        let Ok(rd) = std::fs::read_dir(tracefs.join("instances")) else {
            continue;
        };
        removed.extend(remove_stale_in(root, rd));
    }
    removed
}

/// The mount points of tracefs in a `/proc/self/mounts` text (proc(5): device, mount point,
/// type, ...; a space in a mount point is written `\040`).
pub fn tracefs_mounts(mounts: &str) -> Vec<String> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, ty) = (f.next()?, f.next()?, f.next()?);
            (ty == "tracefs").then(|| at.replace("\\040", " "))
        })
        .collect()
}

/// [`remove_stale_instances`] in one `instances` directory.
fn remove_stale_in(root: &SysRoot, rd: std::fs::ReadDir) -> Vec<String> {
    let mut removed = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, started)) = instance_owner(&name) else {
            continue;
        };
        let alive = match (start_time(root, pid), started) {
            (None, _) => false,
            (Some(now), Some(then)) => now == then,
            (Some(_), None) => true,
        };
        if alive {
            continue;
        }
        let dir = e.path();
        for (rel, value) in [
            ("tracing_on", "0"),
            ("events/enable", "0"),
            ("current_tracer", "nop"),
        ] {
            // Not created where missing: a fixture's or an older kernel's instance.
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(dir.join(rel))
            {
                let _ = std::io::Write::write_all(&mut f, value.as_bytes());
            }
        }
        if std::fs::remove_dir(&dir).is_ok() {
            removed.push(name);
        }
    }
    removed
}

impl Instance {
    /// Create a new instance under `tracefs` (of `root`), after removing those of headroom
    /// processes that are gone; `restore`: global files this run is about to change, with
    /// their values now, which the reaper writes back if the run is killed (the caller puts
    /// them back itself otherwise, before dropping the instance).
    pub fn create(
        root: &SysRoot,
        tracefs: &Path,
        restore: &[(PathBuf, String)],
    ) -> Result<Instance, TraceError> {
        remove_stale_instances(root);
        let instances = tracefs.join("instances");
        // Unpredictable: mkdir fails on an existing name, so nobody can hand us theirs.
        let mut random = [0u8; 8];
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            let _ = f.read_exact(&mut random);
        }
        let pid = std::process::id();
        let random = u64::from_ne_bytes(random);
        // Without a readable start time (no /proc), the process id alone names the owner.
        let dir = instances.join(match start_time(&SysRoot::new("/"), pid) {
            Some(started) => format!("headroom-{pid}-{started}-{random:016x}"),
            None => format!("headroom-{pid}-{random:016x}"),
        });
        // The reaper first: from the moment the instance exists, a SIGKILL cannot leave it.
        let reaper = Reaper::spawn(&dir, restore).ok();
        if let Err(e) = std::fs::create_dir(&dir) {
            return Err(match e.kind() {
                std::io::ErrorKind::PermissionDenied => TraceError::Permission(format!(
                    "creating a tracefs instance ({}) needs root: run as root for --split",
                    instances.display()
                )),
                std::io::ErrorKind::NotFound => TraceError::Missing(format!(
                    "tracefs has no instances directory ({}): this kernel is older than 3.15",
                    instances.display()
                )),
                _ => TraceError::Other(format!("creating {}: {e}", dir.display())),
            });
        }
        if let Ok(mut l) = CREATED.lock() {
            l.push(dir.clone());
        }
        Ok(Instance { dir, reaper })
    }

    /// Write `value` to the instance's file `rel` (never created: tracefs makes them all).
    pub fn write(&self, rel: &str, value: &str) -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.dir.join(rel))?;
        std::io::Write::write_all(&mut f, value.as_bytes())
    }

    pub fn read(&self, rel: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.dir.join(rel))
    }

    /// The process that undoes this instance if this one is killed.
    pub fn reaper_pid(&self) -> Option<i32> {
        self.reaper.as_ref().map(Reaper::pid)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        // rmdir fails with EBUSY while a file of the instance is open; its readers close
        // before it (field order), and a retry covers a reader on its way out. Bounded.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(_) => break,
            }
        }
        if let Ok(mut l) = CREATED.lock() {
            l.retain(|d| d != &self.dir);
        }
        if let Some(r) = self.reaper.take() {
            if self.dir.exists() {
                // Still held open (a reader on its way out): the reaper retries for longer.
                r.hand_over();
            } else {
                r.release();
            }
        }
    }
}

/// Where a ring buffer page keeps its parts (`events/header_page`): the time of its first
/// event, the length of its data (`commit`), the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    pub timestamp: usize,
    pub commit: usize,
    pub commit_size: usize,
    pub data: usize,
    pub data_size: usize,
}

/// A page's `commit` flags (kernel/trace/ring_buffer.c: RB_MISSED_EVENTS, RB_MISSED_STORED):
/// above the length.
const COMMIT_FLAGS: u64 = (1 << 31) | (1 << 30);

/// The event types of `events/header_event`.
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// A time delta's bits in the 32-bit event header (the rest is the type).
const TS_SHIFT: u32 = 27;
/// The bits of an absolute time stamp event kept from the running time (TS_MSB).
const TS_MSB: u64 = 0xf << 59;

impl PageLayout {
    pub fn parse(header_page: &str) -> Result<PageLayout, String> {
        let f = parse_fields(header_page)?;
        let get = |n: &str| f.get(n).copied().ok_or(format!("no field `{n}`"));
        let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
        Ok(PageLayout {
            timestamp: ts.offset,
            commit: commit.offset,
            commit_size: commit.size,
            data: data.offset,
            data_size: data.size,
        })
    }

    pub fn page_size(&self) -> usize {
        self.data + self.data_size
    }

    /// Call `each(time, record)` for every data event of a page read from
    /// `trace_pipe_raw`, times on the instance's trace clock.
    pub fn events(&self, page: &[u8], mut each: impl FnMut(u64, &[u8]) -> Option<()>) {
        let word = |at: usize| -> Option<u64> {
            let b = page.get(at..at + 8)?;
            Some(u64::from_ne_bytes(b.try_into().ok()?))
        };
        let u32_at = |at: usize| -> Option<u32> {
            let b = page.get(at..at + 4)?;
            Some(u32::from_ne_bytes(b.try_into().ok()?))
        };
        let (Some(mut ts), Some(commit)) = (word(self.timestamp), word(self.commit)) else {
            return;
        };
        let commit = if self.commit_size == 4 {
            commit & 0xffff_ffff
        } else {
            commit
        };
        let len = ((commit & !COMMIT_FLAGS) as usize).min(self.data_size);
        let end = self.data + len;
        let mut at = self.data;
        // Bounded: every step moves `at` forward by at least 4 bytes.
        while at + 4 <= end {
            let Some(h) = u32_at(at) else { return };
            let (ty, delta) = (h & 0x1f, u64::from(h >> 5));
            match ty {
                TYPE_PADDING => {
                    // Padding with no delta ends the page; else array[0] is its length.
                    if delta == 0 {
                        return;
                    }
                    let Some(n) = u32_at(at + 4) else { return };
                    at += 4 + (n as usize).max(4);
                }
                TYPE_TIME_EXTEND => {
                    let Some(hi) = u32_at(at + 4) else { return };
                    ts = ts.wrapping_add((u64::from(hi) << TS_SHIFT) | delta);
                    at += 8;
                }
                TYPE_TIME_STAMP => {
                    let Some(hi) = u32_at(at + 4) else { return };
                    let mut abs = (u64::from(hi) << TS_SHIFT) | delta;
                    if ts & TS_MSB != 0 {
                        abs |= ts & TS_MSB;
                        if abs < ts {
                            abs = abs.wrapping_add(1 << 59);
                        }
                    }
                    ts = abs;
                    at += 8;
                }
                0 => {
                    // The length is in array[0], counting itself.
                    let Some(n) = u32_at(at + 4) else { return };
                    let n = n as usize;
                    if n < 4 {
                        return;
                    }
                    ts = ts.wrapping_add(delta);
                    let Some(raw) = page.get(at + 8..at + 4 + n) else {
                        return;
                    };
                    let _ = each(ts, raw);
                    at += 4 + n.div_ceil(4) * 4;
                }
                n => {
                    let n = n as usize * 4;
                    ts = ts.wrapping_add(delta);
                    let Some(raw) = page.get(at + 4..at + 4 + n) else {
                        return;
                    };
                    let _ = each(ts, raw);
                    at += 4 + n;
                }
            }
        }
    }
}

/// The scheduling policy of task `pid` (a thread id works too), from field 41 of
/// `/proc/PID/stat` (proc(5); the numbers of include/uapi/linux/sched.h); `None` when the
/// task is gone.
pub fn task_policy(root: &SysRoot, pid: i32) -> Option<String> {
    let stat = root.read(&format!("/proc/{pid}/stat")).ok()?;
    parse_policy(&stat)
}

/// The policy in a `/proc/PID/stat` line: fields after the command's closing parenthesis
/// start at field 3, so field 41 is the 39th of them.
pub fn parse_policy(stat: &str) -> Option<String> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let policy: u32 = rest.split_whitespace().nth(41 - 3)?.parse().ok()?;
    Some(
        match policy {
            0 => "SCHED_OTHER",
            1 => "SCHED_FIFO",
            2 => "SCHED_RR",
            3 => "SCHED_BATCH",
            5 => "SCHED_IDLE",
            6 => "SCHED_DEADLINE",
            n => return Some(format!("policy {n}")),
        }
        .to_string(),
    )
}

/// The name of task `pid` (`/proc/PID/comm`), for a task no event named.
pub fn task_comm(root: &SysRoot, pid: i32) -> Option<String> {
    root.read(&format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sched_switch` and `irq_handler_entry` as this VM's 6.18 kernel lists them
    /// (/sys/kernel/tracing/events/sched/sched_switch/format).
    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d\"
";

    const IRQ_ENTRY: &str = "name: irq_handler_entry
ID: 225
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;

print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)
";

    const HRTIMER_START: &str = "name: hrtimer_start
ID: 460
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;
\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;
\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;
\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;
\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;
\tfield:bool was_armed;\toffset:44;\tsize:1;\tsigned:0;
";

    #[test]
    fn formats_give_offsets_sizes_and_string_locations() {
        let f = parse_format(SWITCH).unwrap();
        assert_eq!(f.id, 372);
        assert_eq!(
            f.fields["prev_comm"],
            Field {
                offset: 8,
                size: 16,
                signed: false,
                data_loc: false
            }
        );
        assert_eq!(f.fields["next_prio"].offset, 60);
        assert!(f.fields["common_pid"].signed);
        let i = parse_format(IRQ_ENTRY).unwrap();
        assert!(i.fields["name"].data_loc);
        let h = parse_format(HRTIMER_START).unwrap();
        assert_eq!(h.fields["hrtimer"].size, 8, "`void * hrtimer`");
        assert_eq!(h.fields["softexpires"].offset, 32);
        assert!(parse_format("name: x\nformat:\n").is_err(), "no ID");
        assert!(parse_format("ID: 3\n\tfield:int x;\tsize:4;\n").is_err());
    }

    fn put(raw: &mut [u8], at: usize, bytes: &[u8]) {
        raw[at..at + bytes.len()].copy_from_slice(bytes);
    }

    #[test]
    fn raw_records_decode_at_the_formats_offsets() {
        let mut switch = Decoder::new(Role::Switch, &parse_format(SWITCH).unwrap()).unwrap();
        let mut raw = vec![0u8; 64];
        put(&mut raw, 0, &372u16.to_ne_bytes());
        put(&mut raw, 4, &77i32.to_ne_bytes());
        put(&mut raw, 8, b"stress-ng-cpu\0");
        put(&mut raw, 24, &77i32.to_ne_bytes());
        put(&mut raw, 28, &120i32.to_ne_bytes());
        put(&mut raw, 40, b"latency-0\0");
        put(&mut raw, 56, &4242i32.to_ne_bytes());
        put(&mut raw, 60, &49i32.to_ne_bytes());
        let e = switch.decode(&raw, 123, 1).unwrap();
        assert_eq!((e.at_ns, e.cpu, e.pid), (123, 1, 77));
        match e.kind {
            EventKind::Switch {
                prev,
                next,
                preempted,
            } => {
                assert!(preempted, "prev_state 0: still runnable");
                assert_eq!(
                    (prev.comm.name(), prev.pid, prev.prio),
                    ("stress-ng-cpu".into(), 77, 120)
                );
                assert_eq!(
                    (next.comm.name(), next.pid, next.prio),
                    ("latency-0".into(), 4242, 49)
                );
            }
            other => panic!("{other:?}"),
        }
        let mut irq = Decoder::new(Role::IrqEntry, &parse_format(IRQ_ENTRY).unwrap()).unwrap();
        let mut raw = vec![0u8; 24];
        put(&mut raw, 8, &36i32.to_ne_bytes());
        // name: 9 bytes at offset 16 ("virtio1\0" padded), length << 16 | offset.
        put(&mut raw, 12, &((8u32 << 16) | 16).to_ne_bytes());
        put(&mut raw, 16, b"virtio1\0");
        let e = irq.decode(&raw, 5, 0).unwrap();
        assert_eq!(
            e.kind,
            EventKind::IrqEntry(Irq {
                number: 36,
                name: "virtio1".into(),
                vector: false
            })
        );
        // A record cut short decodes to nothing, never to garbage.
        assert_eq!(irq.decode(&raw[..10], 5, 0), None);
        let mut start =
            Decoder::new(Role::TimerStart, &parse_format(HRTIMER_START).unwrap()).unwrap();
        let mut raw = vec![0u8; 48];
        put(&mut raw, 8, &0xffff_8880_1234_5678u64.to_ne_bytes());
        put(&mut raw, 24, &5_000_000_000i64.to_ne_bytes());
        put(&mut raw, 32, &4_999_950_000i64.to_ne_bytes());
        assert_eq!(
            start.decode(&raw, 1, 0).unwrap().kind,
            EventKind::TimerStart {
                timer: 0xffff_8880_1234_5678,
                expires_ns: 5_000_000_000,
                soft_ns: 4_999_950_000
            }
        );
        // A format without the fields read is refused with the field's name.
        let e = Decoder::new(Role::Waking, &parse_format(IRQ_ENTRY).unwrap()).unwrap_err();
        assert!(e.contains("`pid`"), "{e}");
    }

    /// `events/header_page` of this VM's kernel (and of every kernel since 2.6.31).
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";

    /// One ring buffer page as trace_pipe_raw returns it: the base time, the data length
    /// (with a flag above it), and events of each header type.
    fn page() -> Vec<u8> {
        let mut data: Vec<u8> = Vec::new();
        let mut push32 = |v: u32| data.extend_from_slice(&v.to_ne_bytes());
        // A small event: type_len 2 (8 bytes), delta 100.
        push32((100 << 5) | 2);
        push32(0x1111_0001);
        push32(0x1111_0002);
        // A time extend of (1 << 27) + 5 ns.
        push32((5 << 5) | TYPE_TIME_EXTEND);
        push32(1);
        // A large event: type_len 0, array[0] = 4 + 12 bytes, delta 7.
        push32(7 << 5);
        push32(16);
        push32(0x2222_0001);
        push32(0x2222_0002);
        push32(0x2222_0003);
        // Padding that ends the page.
        push32(TYPE_PADDING);
        let mut p = vec![0u8; 16];
        p[..8].copy_from_slice(&1_000_000u64.to_ne_bytes());
        let len = data.len() as u64 | (1 << 31);
        p[8..16].copy_from_slice(&len.to_ne_bytes());
        p.extend(data);
        p.resize(4096, 0xee);
        p
    }

    #[test]
    fn a_ring_buffer_page_gives_each_event_with_its_time() {
        let layout = PageLayout::parse(HEADER_PAGE).unwrap();
        assert_eq!(layout.page_size(), 4096);
        assert_eq!((layout.commit, layout.commit_size, layout.data), (8, 8, 16));
        let mut seen = Vec::new();
        layout.events(&page(), |t, raw| {
            seen.push((t, raw.len(), raw[2]));
            Some(())
        });
        assert_eq!(
            seen,
            vec![
                (1_000_100, 8, 0x11),
                (1_000_100 + (1 << 27) + 5 + 7, 12, 0x22)
            ]
        );
        // A page cut short gives what it holds and stops.
        let mut n = 0;
        layout.events(&page()[..30], |_, _| {
            n += 1;
            Some(())
        });
        assert_eq!(n, 1);
    }

    #[test]
    fn cpumasks_and_drop_counts_read_as_tracefs_writes_them() {
        assert_eq!(cpumask(&[0, 1]), "3");
        assert_eq!(cpumask(&[1]), "2");
        assert_eq!(cpumask(&[32]), "1,00000000");
        assert_eq!(cpumask(&[3, 33]), "2,00000008");
        let stats = "entries: 0\noverrun: 2\ncommit overrun: 3\nbytes: 0\n\
                     oldest event ts:     0.000000\nnow ts:  8382.547786\n\
                     dropped events: 5\nread events: 0\n";
        assert_eq!(parse_dropped(stats), 10);
    }

    #[test]
    fn tracefs_mount_points_are_read_from_the_mount_table() {
        let mounts = "sysfs /sys sysfs rw,nosuid 0 0\n\
                      tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec 0 0\n\
                      debugfs /sys/kernel/debug debugfs rw 0 0\n\
                      nodev /mnt/my\\040trace tracefs rw 0 0\n";
        assert_eq!(
            tracefs_mounts(mounts),
            ["/sys/kernel/tracing", "/mnt/my trace"]
        );
        assert!(tracefs_mounts("proc /proc proc rw 0 0\n").is_empty());
    }

    #[test]
    fn policy_is_field_41_of_stat_after_the_command() {
        // /proc/PID/stat of a SCHED_FIFO 60 thread whose name has a space and a parenthesis.
        let stat = "4242 (hog (x) 1) R 1 4242 4242 0 -1 4194560 95 0 0 0 500 0 0 0 -61 0 1 0 \
                    1234 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 60 1 0 0 0 0 0 0 \
                    0 0 0 0 0";
        assert_eq!(parse_policy(stat).as_deref(), Some("SCHED_FIFO"));
        let other = stat.replace(" 60 1 0", " 0 0 0");
        assert_eq!(parse_policy(&other).as_deref(), Some("SCHED_OTHER"));
        assert_eq!(parse_policy("12 (x) S 1"), None);
    }
}
