//! A background load like stress-ng's `-c/--io/--vm` (and the older `stress`), without them.
//!
//! Workers are child processes (the caller's own binary, re-executed with a hidden worker
//! command), not threads: a thread would share the measuring process's address space, so
//! `mlockall(MCL_FUTURE)` would lock the vm workers' memory and their munmap() would send
//! TLB shootdowns to the measured CPUs, a load stress-ng does not create. Each worker:
//! - asks the kernel to kill it when its parent dies (`PR_SET_PDEATHSIG`), so nothing is
//!   left running even if the parent is killed with SIGKILL;
//! - stops by itself at a deadline given by the parent (every loop is bounded);
//! - is stopped with SIGTERM (then SIGKILL) by [`Load::stop`], also called on drop;
//! - waits, before its loop, until the parent has started every worker (a start gate: its
//!   stdin is a pipe the parent closes). Without the gate the parent competed for the CPUs
//!   with every worker already spinning, so each next start took longer: 200 CPU workers
//!   took 66 s to start on 2 CPUs, where stress-ng starts 1000 in 2 s.
//!
//! `vm-bytes` semantics: the key=value form and a pasted `stress-ng` command divide the bytes
//! across the vm workers (stress-ng: `vm_bytes /= num_instances`); a pasted `stress` command
//! gives each worker that much (stress 1.0). Sizes use stress-ng's and stress's suffixes,
//! which are binary: `4M` = 4 MiB. The touching follows the tool too: stress-ng writes and
//! checks the whole mapping each pass (memory traffic), stress writes a byte per page
//! (page faults).

use model::stress::{StopReport, StressSpec};
use model::units::{format_bytes_binary, parse_size};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The default of both stress-ng and stress for `--vm-bytes` (256 MiB).
pub const DEFAULT_VM_BYTES: u64 = 256 << 20;
/// Length of a busy/idle slice for a CPU worker below 100 % load.
const CPU_SLICE: Duration = Duration::from_millis(10);
/// Page stride of the older stress's vm workers (its `--vm-stride` default, 4096): one byte
/// written per page, so its load is mostly page faults.
const PAGE_STRIDE: u32 = 4096;
/// stress-ng's vm workers write (and check) the whole mapping on every pass; we write every
/// 64-bit word and read it back, so the load is mostly memory traffic in user space.
const WORD_STRIDE: u32 = 8;
/// The default of both stress-ng and stress for `--hdd-bytes`: a 1 GiB file per worker.
pub const DEFAULT_HDD_BYTES: u64 = 1 << 30;
/// stress-ng's `--hdd-write-size` default: 64 KiB per write(2).
const HDD_WRITE: usize = 64 << 10;
/// The hdd workers' file names: `headroom-hdd.PID.RANDOM.tmp`, PID being the worker's, so the
/// parent can remove what a killed worker left.
const HDD_PREFIX: &str = "headroom-hdd.";

/// Parse `cpu=4,io=2,vm=1,vm-bytes=4M[,cpu-load=100]`, or a pasted `stress-ng ...` or
/// `stress ...` command line.
pub fn parse_spec(s: &str) -> Result<StressSpec, String> {
    parse_spec_for(s, Cpus::of_this_machine())
}

/// [`parse_spec`] on a machine with `cpus` (what stress-ng's `--cpu 0` means).
pub fn parse_spec_for(s: &str, cpus: Cpus) -> Result<StressSpec, String> {
    let s = s.trim();
    let mut words = s.split_whitespace();
    match words.next() {
        Some("stress-ng") => parse_command(words.collect(), true, cpus),
        Some("stress") => parse_command(words.collect(), false, cpus),
        _ => parse_pairs(s),
    }
}

fn count(key: &str, v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err(format!(
            "stress {key}={v}: expected a worker count from 0 to 1024"
        )),
    }
}

/// The CPU counts stress-ng reads for a worker count of 0 (configured CPUs) or below 0
/// (online CPUs): stress-ng(1), "specifying a zero value will select the number of processors
/// available as defined by sysconf(_SC_NPROCESSORS_CONF) ... If the value is less than zero
/// then the number of online CPUs is used".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpus {
    pub configured: u32,
    pub online: u32,
}

impl Cpus {
    pub fn of_this_machine() -> Cpus {
        let read = |name| {
            // SAFETY: sysconf takes an integer and returns a long (-1 when unknown).
            let n = unsafe { libc::sysconf(name) };
            u32::try_from(n).ok().filter(|&n| n > 0)
        };
        let online = read(libc::_SC_NPROCESSORS_ONLN).unwrap_or(1);
        Cpus {
            configured: read(libc::_SC_NPROCESSORS_CONF).unwrap_or(online),
            online,
        }
    }
}

/// A worker count of a pasted stress-ng command: 0 is one per configured CPU, below 0 one
/// per online CPU (said in `per_cpu`).
fn ng_count(key: &str, v: &str, cpus: Cpus, per_cpu: &mut Vec<String>) -> Result<u32, String> {
    match v.parse::<i64>() {
        Ok(0) => {
            per_cpu.push(format!(
                "--{key} 0: one worker per configured CPU ({})",
                cpus.configured
            ));
            Ok(cpus.configured)
        }
        Ok(n) if n < 0 => {
            per_cpu.push(format!(
                "--{key} {n}: one worker per online CPU ({})",
                cpus.online
            ));
            Ok(cpus.online)
        }
        _ => count(key, v),
    }
}

/// What a spec asked for, before the checks and the defaults.
#[derive(Debug, Default)]
struct Asked {
    cpu: u32,
    cpu_load: Option<u8>,
    io: u32,
    vm: u32,
    vm_bytes: Option<u64>,
    hdd: u32,
    hdd_bytes: Option<u64>,
    temp_path: Option<PathBuf>,
    notes: Vec<String>,
}

fn finish(a: Asked, divided: bool) -> Result<StressSpec, String> {
    let Asked {
        cpu,
        cpu_load,
        io,
        vm,
        vm_bytes,
        hdd,
        hdd_bytes,
        temp_path,
        notes,
    } = a;
    if cpu + io + vm + hdd == 0 {
        return Err("the stress spec starts no worker: give cpu=N, io=N, vm=N or hdd=N".into());
    }
    let hdd_per = if hdd > 0 {
        hdd_bytes.unwrap_or(DEFAULT_HDD_BYTES)
    } else {
        0
    };
    // A file of at least one write and at most 64 GiB (a typo guard); Load::start checks it
    // fits the filesystem.
    if hdd > 0 && !(HDD_WRITE as u64..=64 << 30).contains(&hdd_per) {
        return Err(format!(
            "hdd-bytes gives each hdd worker a {hdd_per}-byte file: use 64K to 64G per worker"
        ));
    }
    let given = vm_bytes.unwrap_or(DEFAULT_VM_BYTES);
    let per = match vm {
        0 => 0,
        n if divided => given / u64::from(n),
        _ => given,
    };
    // A worker must map at least a page and at most 64 GiB (a typo guard).
    if vm > 0 && !(u64::from(PAGE_STRIDE)..=64 << 30).contains(&per) {
        return Err(format!(
            "vm-bytes gives each vm worker {per} bytes: use 4K to 64G per worker"
        ));
    }
    let interpretation = if vm == 0 {
        "no vm workers".to_string()
    } else if divided {
        format!(
            "stress-ng semantics: vm-bytes {} divided across {vm} vm worker(s)",
            format_bytes_binary(given)
        )
    } else {
        format!(
            "stress semantics: vm-bytes {} for each of {vm} vm worker(s)",
            format_bytes_binary(given)
        )
    };
    Ok(StressSpec {
        cpu,
        cpu_load: cpu_load.unwrap_or(100),
        io,
        vm,
        vm_bytes_per_worker: per,
        // stress-ng semantics go with stress-ng's way of touching memory.
        vm_stride: if divided { WORD_STRIDE } else { PAGE_STRIDE },
        hdd,
        hdd_bytes_per_worker: hdd_per,
        hdd_path: temp_path.filter(|_| hdd > 0),
        interpretation,
        notes,
    })
}

fn load_pct(v: &str) -> Result<u8, String> {
    match v.parse::<u8>() {
        Ok(p) if (1..=100).contains(&p) => Ok(p),
        _ => Err(format!("cpu-load {v}: expected a percentage from 1 to 100")),
    }
}

fn parse_pairs(s: &str) -> Result<StressSpec, String> {
    let mut a = Asked::default();
    let size = |k: &str, v: &str| parse_size(v).map_err(|why| format!("{k}={v}: {why}"));
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!(
                "stress item {item:?} is not key=value (e.g. cpu=4,io=2,vm=1,vm-bytes=4M)"
            ));
        };
        match k.trim() {
            "cpu" | "c" => a.cpu = count("cpu", v)?,
            "io" | "i" => a.io = count("io", v)?,
            "vm" | "m" => a.vm = count("vm", v)?,
            "hdd" | "d" => a.hdd = count("hdd", v)?,
            "cpu-load" | "l" => a.cpu_load = Some(load_pct(v)?),
            "vm-bytes" => a.vm_bytes = Some(size("vm-bytes", v)?),
            "hdd-bytes" => a.hdd_bytes = Some(size("hdd-bytes", v)?),
            "temp-path" => a.temp_path = Some(PathBuf::from(v)),
            other => {
                return Err(format!(
                    "unknown stress key {other:?}: use cpu, io, vm, vm-bytes, cpu-load, hdd, \
                     hdd-bytes, temp-path"
                ))
            }
        }
    }
    finish(a, true)
}

/// What headroom runs in place of a stress-ng or stress option it does not reproduce: the
/// note a pasted command gets instead of an error (as cyclictest's flags do).
fn instead_of(tool: &str, option: &str, value: Option<&str>) -> String {
    let shown = value.map_or(option.to_string(), |v| format!("{option} {v}"));
    let has = |words: &[&str]| words.iter().any(|w| option.contains(w));
    let what = if option.ends_with("-ops") || option == "--ops" {
        "the workers run until the measurement ends, whatever their count of operations"
    } else if option.starts_with("--cpu-") {
        "the cpu workers spin on headroom's integer and floating-point loop (xorshift and a \
         square root) whatever the method"
    } else if option.starts_with("--vm-") {
        "the vm workers map their bytes, write every word, read it back and unmap, the same \
         way every pass"
    } else if option.starts_with("--io-") {
        "the io workers call sync() in a loop"
    } else if option.starts_with("--hdd-") {
        "the hdd workers write their file in 64 KiB writes, read it back and remove it"
    } else if has(&[
        "metrics", "times", "tz", "perf", "yaml", "log", "stdout", "syslog",
    ]) {
        "headroom describes the load it ran in its own output, not stress-ng's reports"
    } else if has(&["sched", "taskset", "affinity", "nice", "ionice"]) {
        "the workers run at normal priority on any CPU"
    } else {
        "headroom runs cpu, io, vm and hdd workers only, and nothing in its place"
    };
    format!("{tool} {shown}: not reproduced; {what}")
}

/// A pasted stress-ng/stress command. `--timeout`, `-t` and `-v` are accepted and ignored
/// (the load stops with the measurement). stress-ng reads the seed's `-vm 4` as `-v -m 4`.
fn parse_command(args: Vec<&str>, stress_ng: bool, cpus: Cpus) -> Result<StressSpec, String> {
    let tool = if stress_ng { "stress-ng" } else { "stress" };
    let mut asked = Asked::default();
    let mut per_cpu = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        // `-c8` and `--cpu=8` carry their value; otherwise it is the next word.
        let (flag, inline) = if let Some((f, v)) = a.split_once('=') {
            (f, Some(v))
        } else if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") && a != "-vm" {
            (&a[..2], Some(&a[2..]))
        } else {
            (a, None)
        };
        let mut value = || -> Result<&str, String> {
            if let Some(v) = inline {
                return Ok(v);
            }
            i += 1;
            args.get(i)
                .copied()
                .ok_or_else(|| format!("{tool} {flag}: missing its value"))
        };
        let size = |v: &str| parse_size(v).map_err(|why| format!("{tool} {flag} {v}: {why}"));
        match flag {
            "-c" | "--cpu" if stress_ng => {
                asked.cpu = ng_count("cpu", value()?, cpus, &mut per_cpu)?
            }
            "-i" | "--io" if stress_ng => asked.io = ng_count("io", value()?, cpus, &mut per_cpu)?,
            "-m" | "--vm" | "-vm" if stress_ng => {
                asked.vm = ng_count("vm", value()?, cpus, &mut per_cpu)?
            }
            "-d" | "--hdd" if stress_ng => {
                asked.hdd = ng_count("hdd", value()?, cpus, &mut per_cpu)?
            }
            "-c" | "--cpu" => asked.cpu = count("cpu", value()?)?,
            "-i" | "--io" => asked.io = count("io", value()?)?,
            "-m" | "--vm" | "-vm" => asked.vm = count("vm", value()?)?,
            "-d" | "--hdd" => asked.hdd = count("hdd", value()?)?,
            "-l" | "--cpu-load" if stress_ng => asked.cpu_load = Some(load_pct(value()?)?),
            "--vm-bytes" => asked.vm_bytes = Some(size(value()?)?),
            "--hdd-bytes" => asked.hdd_bytes = Some(size(value()?)?),
            "--temp-path" if stress_ng => asked.temp_path = Some(PathBuf::from(value()?)),
            "-t" | "--timeout" => {
                value()?;
            }
            "-v" | "--verbose" | "-q" | "--quiet" => {}
            other if other.starts_with('-') => {
                // An option headroom does not reproduce: its value (if it takes one) is the
                // inline one or the next word that is no option, and a note says what runs
                // instead.
                let v = match inline {
                    Some(v) => Some(v),
                    None => match args.get(i + 1) {
                        Some(next) if !next.starts_with('-') => {
                            i += 1;
                            Some(*next)
                        }
                        _ => None,
                    },
                };
                asked.notes.push(instead_of(tool, other, v));
            }
            other => {
                return Err(format!(
                    "{tool} {other:?}: a word where an option was expected (options start with \
                     -, e.g. --cpu 4)"
                ))
            }
        }
        i += 1;
    }
    let mut spec = finish(asked, stress_ng)?;
    for said in per_cpu {
        spec.interpretation
            .push_str(&format!("; {said}, as stress-ng"));
    }
    Ok(spec)
}

/// Which kind of worker, with its parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    Cpu {
        load_pct: u8,
    },
    Io,
    Vm {
        bytes: u64,
        stride: u32,
    },
    /// Files of `bytes` in the worker's current directory.
    Hdd {
        bytes: u64,
    },
}

/// The arguments a worker process gets (after the caller's hidden command): one place for
/// both ends of the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerArgs {
    pub kind: WorkerKind,
    /// The parent's pid: the worker exits at once if its parent is already gone.
    pub parent: u32,
    /// Stop by itself after this long.
    pub deadline: Duration,
}

impl WorkerArgs {
    pub fn to_args(&self) -> Vec<String> {
        let (kind, param) = match self.kind {
            WorkerKind::Cpu { load_pct } => ("cpu", u64::from(load_pct)),
            WorkerKind::Io => ("io", 0),
            WorkerKind::Hdd { bytes } => ("hdd", bytes),
            WorkerKind::Vm { bytes, stride } => {
                return vec![
                    format!("vm:{stride}"),
                    bytes.to_string(),
                    self.parent.to_string(),
                    self.deadline.as_millis().to_string(),
                ]
            }
        };
        vec![
            kind.into(),
            param.to_string(),
            self.parent.to_string(),
            self.deadline.as_millis().to_string(),
        ]
    }

    pub fn from_args(args: &[String]) -> Result<WorkerArgs, String> {
        let [kind, param, parent, deadline_ms] = args else {
            return Err("a stress worker takes: KIND PARAM PARENT_PID DEADLINE_MS".into());
        };
        let num = |s: &str| s.parse::<u64>().map_err(|_| format!("not a number: {s:?}"));
        let param = num(param)?;
        let kind = match kind.as_str() {
            "cpu" => WorkerKind::Cpu {
                load_pct: u8::try_from(param.clamp(1, 100)).unwrap_or(100),
            },
            "io" => WorkerKind::Io,
            "hdd" => WorkerKind::Hdd { bytes: param },
            k if k.starts_with("vm:") => match k[3..].parse::<u32>() {
                Ok(stride) if (1..=PAGE_STRIDE).contains(&stride) => WorkerKind::Vm {
                    bytes: param,
                    stride,
                },
                _ => return Err(format!("bad vm stride in {k:?}")),
            },
            k => return Err(format!("unknown stress worker kind {k:?}")),
        };
        Ok(WorkerArgs {
            kind,
            parent: u32::try_from(num(parent)?).map_err(|_| "bad parent pid".to_string())?,
            deadline: Duration::from_millis(num(deadline_ms)?),
        })
    }
}

/// How to start a worker: the program and the arguments that select the worker mode.
#[derive(Debug, Clone)]
pub struct Launcher {
    pub program: PathBuf,
    pub args: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("could not start stress worker {kind} ({program}): {reason}")]
pub struct StressError {
    kind: String,
    program: String,
    reason: String,
}

/// The running load.
#[derive(Debug)]
pub struct Load {
    children: Vec<(WorkerKind, Child)>,
    /// Where the hdd workers write (their current directory), to remove what a killed one
    /// left there.
    hdd_dir: Option<PathBuf>,
}

impl Load {
    /// Start every worker of `spec`. They stop by themselves after `max_duration` at the
    /// latest. On any failure the ones already started are stopped.
    pub fn start(
        spec: &StressSpec,
        launcher: &Launcher,
        max_duration: Duration,
    ) -> Result<Load, StressError> {
        let parent = std::process::id();
        let mut kinds = Vec::new();
        kinds.extend((0..spec.cpu).map(|_| WorkerKind::Cpu {
            load_pct: spec.cpu_load,
        }));
        kinds.extend((0..spec.io).map(|_| WorkerKind::Io));
        kinds.extend((0..spec.vm).map(|_| WorkerKind::Vm {
            bytes: spec.vm_bytes_per_worker,
            stride: spec.vm_stride,
        }));
        kinds.extend((0..spec.hdd).map(|_| WorkerKind::Hdd {
            bytes: spec.hdd_bytes_per_worker,
        }));
        let hdd_dir =
            (spec.hdd > 0).then(|| spec.hdd_path.clone().unwrap_or_else(|| PathBuf::from(".")));
        if let Some(dir) = &hdd_dir {
            check_hdd_room(dir, spec).map_err(|reason| StressError {
                kind: "hdd".into(),
                program: launcher.program.display().to_string(),
                reason,
            })?;
        }
        let mut load = Load {
            children: Vec::new(),
            hdd_dir: hdd_dir.clone(),
        };
        // The start gate: each worker blocks reading its stdin until the parent closes the
        // pipe, after the last worker started (or on an error, before stopping them).
        let mut gates = Vec::with_capacity(kinds.len());
        for kind in kinds {
            let args = WorkerArgs {
                kind,
                parent,
                deadline: max_duration,
            };
            let mut cmd = Command::new(&launcher.program);
            cmd.args(&launcher.args)
                .args(args.to_args())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            // An hdd worker writes in its current directory.
            if let (WorkerKind::Hdd { .. }, Some(dir)) = (kind, &hdd_dir) {
                cmd.current_dir(dir);
            }
            let child = cmd.spawn();
            match child {
                Ok(mut c) => {
                    gates.extend(c.stdin.take());
                    load.children.push((kind, c));
                }
                Err(e) => {
                    drop(gates);
                    load.stop();
                    return Err(StressError {
                        kind: format!("{kind:?}"),
                        program: launcher.program.display().to_string(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        // Open the gate: every worker sees end-of-file on its stdin and starts its loop.
        drop(gates);
        Ok(load)
    }

    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(|(_, c)| c.id()).collect()
    }

    /// Stop every worker: SIGTERM, up to 2 s to exit, then SIGKILL. Reaps them all.
    pub fn stop(&mut self) -> StopReport {
        let mut report = StopReport {
            stopped: 0,
            killed: 0,
        };
        for (_, c) in &self.children {
            if let Ok(pid) = i32::try_from(c.id()) {
                // SAFETY: plain syscall on our own child's pid (not yet reaped, so the pid
                // cannot have been reused).
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        // One pass over all of them per 5 ms (not 5 ms per worker): a thousand workers that
        // need the CPUs in turn to exit must not make the wait a thousand times longer.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut left: Vec<&mut Child> = self.children.iter_mut().map(|(_, c)| c).collect();
        loop {
            left.retain_mut(|c| match c.try_wait() {
                Ok(Some(_)) => {
                    report.stopped += 1;
                    false
                }
                _ => true,
            });
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        for c in left {
            let _ = c.kill();
            let _ = c.wait();
            report.killed += 1;
        }
        // A worker removes its file right after creating it; one killed in between leaves it.
        if let Some(dir) = &self.hdd_dir {
            let pids: Vec<u32> = self
                .children
                .iter()
                .filter(|(k, _)| matches!(k, WorkerKind::Hdd { .. }))
                .map(|(_, c)| c.id())
                .collect();
            remove_hdd_files(dir, &pids);
        }
        self.children.clear();
        report
    }
}

/// Refuse hdd files that would take more than half of the free space of `dir` (or a
/// directory that cannot be written), in one sentence.
fn check_hdd_room(dir: &std::path::Path, spec: &StressSpec) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let show = dir.display();
    let meta = std::fs::metadata(dir).map_err(|e| format!("hdd files in {show}: {e}"))?;
    if !meta.is_dir() {
        return Err(format!(
            "hdd files in {show}: not a directory (temp-path=DIR)"
        ));
    }
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return Err(format!("hdd files in {show}: the path holds a NUL byte"));
    };
    // SAFETY: statvfs is plain data, zeroed is valid; `c` is a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(format!(
            "hdd files in {show}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    let need = u64::from(spec.hdd) * spec.hdd_bytes_per_worker;
    if need > free / 2 {
        return Err(format!(
            "{} hdd file(s) of {} in {show} need more than half of its {} free: lower \
             hdd-bytes or choose another temp-path",
            spec.hdd,
            format_bytes_binary(spec.hdd_bytes_per_worker),
            format_bytes_binary(free / (1 << 20) * (1 << 20))
        ));
    }
    Ok(())
}

/// Remove the files hdd workers `pids` left in `dir` (`headroom-hdd.PID.*`), nothing else;
/// bounded by the directory's entries.
fn remove_hdd_files(dir: &std::path::Path, pids: &[u32]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(HDD_PREFIX)
            .and_then(|rest| rest.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pids.contains(&pid) && e.path().symlink_metadata().is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The body of a worker process. Returns the operations done (loops of its kind).
pub fn worker_main(args: &WorkerArgs) -> Result<u64, String> {
    // SAFETY: no arguments.
    let parent_alive = || u32::try_from(unsafe { libc::getppid() }).ok() == Some(args.parent);
    if !parent_alive() {
        return Ok(0);
    }
    // SAFETY: prctl with integer arguments only. The signal is sent when the thread that
    // forked us exits; the caller spawns workers from its main thread.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    if !parent_alive() {
        // The parent died before PR_SET_PDEATHSIG took hold.
        return Ok(0);
    }
    wait_for_start();
    if !parent_alive() {
        return Ok(0);
    }
    let until = Instant::now() + args.deadline;
    Ok(run_worker(args.kind, until))
}

/// The start gate: block until stdin reaches end-of-file (the parent closed its end of the
/// pipe after starting every worker, or died). Bounded by the parent: PR_SET_PDEATHSIG is
/// set before, and its end closes when it exits in any way.
fn wait_for_start() {
    use std::io::Read as _;
    let mut byte = [0u8; 1];
    let mut stdin = std::io::stdin().lock();
    loop {
        match stdin.read(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(1) => continue,
            _ => return,
        }
    }
}

/// Run one worker's loop in the calling thread until `until`.
pub fn run_worker(kind: WorkerKind, until: Instant) -> u64 {
    match kind {
        WorkerKind::Cpu { load_pct } => cpu_worker(load_pct, until),
        WorkerKind::Io => io_worker(until),
        WorkerKind::Vm { bytes, stride } => vm_worker(bytes, stride, until),
        // The parent started it in the directory of its files.
        WorkerKind::Hdd { bytes } => hdd_worker(std::path::Path::new("."), bytes, until),
    }
}

/// stress-ng's hdd stressor: write a temporary file of `bytes` in 64 KiB writes, read it
/// back, remove it; repeat until `until`. The file is created in `dir` with
/// O_EXCL|O_NOFOLLOW under an unpredictable name (the directory may be writable by others:
/// headroom runs as root) and unlinked at once: its blocks live while the descriptor is
/// open and are freed when it closes, however the worker ends (SIGKILL included); the parent
/// removes a file whose worker was killed between the two calls. A full filesystem ends the
/// write phase early. Returns the files written.
fn hdd_worker(dir: &std::path::Path, bytes: u64, until: Instant) -> u64 {
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut chunk = vec![0u8; HDD_WRITE];
    let mut files = 0;
    while Instant::now() < until {
        let name = dir.join(format!(
            "{HDD_PREFIX}{}.{:016x}.tmp",
            std::process::id(),
            random_u64()
        ));
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&name);
        let mut f = match opened {
            Ok(f) => f,
            Err(_) => {
                // A name taken (or the directory gone): wait rather than spin on the failure.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let _ = std::fs::remove_file(&name);
        let mut written = 0u64;
        // Bounded by bytes / 64 KiB writes and by the deadline.
        while written < bytes && Instant::now() < until {
            // Different data each write, as stress-ng's (no deduplication).
            chunk[..8].copy_from_slice(&(written ^ files).to_ne_bytes());
            let n = (bytes - written).min(HDD_WRITE as u64) as usize;
            if f.write_all(&chunk[..n]).is_err() {
                break; // ENOSPC and friends: read back what was written
            }
            written += n as u64;
        }
        if f.rewind().is_ok() {
            while Instant::now() < until {
                match f.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
        files += 1;
    }
    files
}

/// 64 bits from the kernel's random source (getrandom(2)), for names nobody can guess; the
/// time and pid where it is missing (kernels before 3.17).
fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: getrandom writes at most 8 bytes into `b`, a valid buffer of that size.
    let n = unsafe { libc::syscall(libc::SYS_getrandom, b.as_mut_ptr(), b.len(), 0) };
    if n == 8 {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ u64::from(std::process::id()).rotate_left(32)
}

/// Spin on integer and floating-point arithmetic, `load_pct` of every 10 ms slice.
fn cpu_worker(load_pct: u8, until: Instant) -> u64 {
    let busy = CPU_SLICE * u32::from(load_pct) / 100;
    let mut ops = 0u64;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut f = 1.000_001f64;
    while Instant::now() < until {
        let slice = Instant::now();
        while slice.elapsed() < busy {
            for _ in 0..1000 {
                // xorshift64 and a square root: ALU and FPU both busy, nothing optimised out.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                f = (f * 1.000_000_1 + (x & 0xff) as f64).sqrt();
            }
            ops += 1;
            std::hint::black_box((x, f));
        }
        if load_pct < 100 {
            std::thread::sleep(CPU_SLICE.saturating_sub(slice.elapsed()));
        }
    }
    ops
}

/// Loop on sync(), like stress-ng's and stress's io workers.
fn io_worker(until: Instant) -> u64 {
    let mut ops = 0;
    while Instant::now() < until {
        // SAFETY: sync() takes no arguments and cannot fail.
        unsafe { libc::sync() };
        ops += 1;
    }
    ops
}

/// Map `bytes` of anonymous memory, write it (every word, or a byte every `stride`), unmap;
/// repeat. mmap and munmap directly, not the allocator: glibc would keep a freed block for
/// reuse and the page faults would stop after the first loop.
fn vm_worker(bytes: u64, stride: u32, until: Instant) -> u64 {
    let Ok(len) = usize::try_from(bytes) else {
        return 0;
    };
    let mut ops: u64 = 0;
    while Instant::now() < until {
        // SAFETY: anonymous private mapping, no file; checked for MAP_FAILED below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // Memory is short: wait rather than spin on the failure.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        if stride <= WORD_STRIDE {
            // SAFETY: the mapping is `len` bytes, page-aligned (so u64-aligned), writable,
            // zero-filled (a valid u64 array) and ours alone until the munmap below.
            let words = unsafe { std::slice::from_raw_parts_mut(p.cast::<u64>(), len / 8) };
            let pattern = ops.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            words.fill(pattern);
            // Read it back like stress-ng's verification, so the writes cannot be elided.
            std::hint::black_box(words.iter().fold(0u64, |a, &w| a ^ w));
        } else {
            let base = p.cast::<u8>();
            for off in (0..len).step_by(stride as usize) {
                // SAFETY: off < len, inside the mapping just created and writable.
                unsafe { base.add(off).write_volatile(ops as u8) };
            }
        }
        // SAFETY: unmapping exactly the mapping created above.
        unsafe { libc::munmap(p, len) };
        ops += 1;
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_recipes() {
        // seeds/001, RK3568 stress test 1.
        let a =
            parse_spec("stress-ng -c 4 --io 2 --vm 1 --vm-bytes 4M --timeout 1000000s").unwrap();
        assert_eq!(
            (a.cpu, a.io, a.vm, a.vm_bytes_per_worker),
            (4, 2, 1, 4 << 20)
        );
        assert_eq!(a, parse_spec("cpu=4,io=2,vm=1,vm-bytes=4M").unwrap());
        // RK3562: the older `stress`, bytes per worker.
        let b = parse_spec("stress -c 4 --io 2 --vm 1 --vm-bytes 256M --timeout 1000000s").unwrap();
        assert_eq!(b.vm_bytes_per_worker, 256 << 20);
        assert_eq!(
            (a.vm_stride, b.vm_stride),
            (8, 4096),
            "stress-ng writes it all"
        );
        assert!(b.interpretation.starts_with("stress semantics"));
        // RK3576: `-vm 4` is stress-ng's `-v -m 4`; 512M divided across 4 workers.
        let c = parse_spec(
            "stress-ng -c8 --io 8 --cpu-load 100 -vm 4 --vm-bytes 512M --timeout 10000000s",
        )
        .unwrap();
        assert_eq!((c.cpu, c.io, c.vm, c.cpu_load), (8, 8, 4, 100));
        assert_eq!(c.vm_bytes_per_worker, 128 << 20);
        assert_eq!(c.describe(), "8 cpu, 8 io (sync), 4 vm (128 MiB each)");
        let d = parse_spec("stress -m 4 --vm-bytes 512M").unwrap();
        assert_eq!(d.vm_bytes_per_worker, 512 << 20, "stress: each worker");
    }

    #[test]
    fn the_spec_a_report_prints_parses_back_to_the_same_workers() {
        for given in [
            "cpu=4,io=2,vm=1,vm-bytes=4M",
            "cpu=2,cpu-load=50",
            "io=3",
            "stress-ng -c 8 --io 8 --cpu-load 100 -vm 4 --vm-bytes 512M",
            // stress gives each worker the bytes: the spec says the total.
            "stress -m 4 --vm-bytes 512M",
        ] {
            let a = parse_spec(given).unwrap();
            let b = parse_spec(&a.spec()).unwrap();
            let workers = |x: &StressSpec| (x.cpu, x.cpu_load, x.io, x.vm, x.vm_bytes_per_worker);
            assert_eq!(workers(&a), workers(&b), "{given} -> {}", a.spec());
        }
    }

    #[test]
    fn bad_specs_get_a_sentence() {
        assert!(parse_spec("cpu=x").unwrap_err().contains("worker count"));
        assert!(parse_spec("gpu=1")
            .unwrap_err()
            .contains("unknown stress key"));
        assert!(parse_spec("cpu=0").unwrap_err().contains("no worker"));
        assert!(parse_spec("cpu=1,cpu-load=0")
            .unwrap_err()
            .contains("1 to 100"));
        assert!(parse_spec("hdd=1,hdd-bytes=4k")
            .unwrap_err()
            .contains("use 64K to 64G per worker"));
        assert!(parse_spec("stress-ng 4")
            .unwrap_err()
            .contains("a word where an option was expected"));
        assert!(parse_spec("vm=1,vm-bytes=1")
            .unwrap_err()
            .contains("4K to 64G"));
        // Sizes read as in every other command (model::units): 4k = 4KB = 4 KiB.
        for s in [
            "vm=1,vm-bytes=4k",
            "vm=1,vm-bytes=4KB",
            "stress-ng --vm 1 --vm-bytes 4KiB",
        ] {
            assert_eq!(parse_spec(s).unwrap().vm_bytes_per_worker, 4096, "{s}");
        }
        assert!(parse_spec("vm=1,vm-bytes=M")
            .unwrap_err()
            .contains("vm-bytes=M: not a size"));
    }

    #[test]
    fn stress_ng_zero_is_one_worker_per_cpu() {
        let cpus = Cpus {
            configured: 4,
            online: 3,
        };
        let a = parse_spec_for("stress-ng --cpu 0", cpus).unwrap();
        assert_eq!(a.cpu, 4);
        assert!(
            a.interpretation
                .contains("--cpu 0: one worker per configured CPU (4), as stress-ng"),
            "{}",
            a.interpretation
        );
        let b = parse_spec_for("stress-ng -c -1 --io 0 --vm 2", cpus).unwrap();
        assert_eq!((b.cpu, b.io, b.vm), (3, 4, 2));
        // The older stress and headroom's key=value form keep 0 as none.
        assert!(parse_spec_for("stress -c 0", cpus)
            .unwrap_err()
            .contains("no worker"));
        assert!(parse_spec_for("cpu=0", cpus)
            .unwrap_err()
            .contains("no worker"));
        // This machine: as many as sysconf says.
        let here = Cpus::of_this_machine();
        assert!(here.configured >= here.online && here.online >= 1);
        assert_eq!(
            parse_spec("stress-ng --cpu 0").unwrap().cpu,
            here.configured
        );
    }

    #[test]
    fn worker_args_round_trip() {
        for kind in [
            WorkerKind::Cpu { load_pct: 40 },
            WorkerKind::Io,
            WorkerKind::Vm {
                bytes: 1 << 20,
                stride: 8,
            },
        ] {
            let a = WorkerArgs {
                kind,
                parent: 42,
                deadline: Duration::from_millis(1500),
            };
            assert_eq!(WorkerArgs::from_args(&a.to_args()).unwrap(), a);
        }
        assert!(
            WorkerArgs::from_args(&["gpu".into(), "0".into(), "1".into(), "1".into()]).is_err()
        );
    }

    /// `--stress "stress-ng --cpu 2 --cpu-method matrixprod"` was a hard
    /// error; an option headroom does not reproduce is a note saying what runs instead.
    #[test]
    fn a_pasted_option_headroom_does_not_reproduce_is_a_note() {
        let s = parse_spec(
            "stress-ng --cpu 2 --cpu-method matrixprod --metrics-brief --sched fifo --matrix 1",
        )
        .unwrap();
        assert_eq!((s.cpu, s.io, s.vm, s.hdd), (2, 0, 0, 0));
        assert_eq!(
            s.notes,
            [
                "stress-ng --cpu-method matrixprod: not reproduced; the cpu workers spin on \
                 headroom's integer and floating-point loop (xorshift and a square root) \
                 whatever the method",
                "stress-ng --metrics-brief: not reproduced; headroom describes the load it ran \
                 in its own output, not stress-ng's reports",
                "stress-ng --sched fifo: not reproduced; the workers run at normal priority on \
                 any CPU",
                "stress-ng --matrix 1: not reproduced; headroom runs cpu, io, vm and hdd \
                 workers only, and nothing in its place",
            ]
        );
        // Inline values, and the older stress.
        let s = parse_spec("stress -c 1 --backoff=3000").unwrap();
        assert_eq!(
            s.notes,
            [
                "stress --backoff 3000: not reproduced; headroom runs cpu, io, vm and hdd workers \
              only, and nothing in its place"
            ]
        );
        // Nothing reproduced at all is still no load.
        assert!(parse_spec("stress-ng --matrix 2")
            .unwrap_err()
            .contains("starts no worker"));
    }

    /// stress-ng's and stress's `--hdd N` (and `hdd=N`): files of `--hdd-bytes` each (1 GiB
    /// by default, as both tools), in `--temp-path` (stress-ng) or the current directory.
    #[test]
    fn hdd_workers_parse_as_both_tools_write_them() {
        let s = parse_spec("stress-ng --hdd 2 --hdd-bytes 64M --temp-path /mnt/x").unwrap();
        assert_eq!((s.hdd, s.hdd_bytes_per_worker), (2, 64 << 20));
        assert_eq!(s.hdd_path.as_deref(), Some(std::path::Path::new("/mnt/x")));
        assert_eq!(s.spec(), "hdd=2,hdd-bytes=64M,temp-path=/mnt/x");
        assert_eq!(parse_spec(&s.spec()).unwrap(), s);
        let s = parse_spec("stress -d 1").unwrap();
        assert_eq!((s.hdd, s.hdd_bytes_per_worker), (1, DEFAULT_HDD_BYTES));
        assert_eq!(parse_spec("hdd=1").unwrap().hdd_path, None);
    }

    /// The hdd worker writes, reads back and removes its files (O_EXCL, unlinked at once), so
    /// its directory is empty again however it ends; the parent removes what a worker killed
    /// between create and unlink left, and only that.
    #[test]
    fn hdd_workers_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let files = hdd_worker(dir.path(), 1 << 20, t0 + Duration::from_millis(300));
        assert!(files > 0, "no file written");
        assert!(t0.elapsed() < Duration::from_secs(5), "overran");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        let leftover = dir.path().join("headroom-hdd.4242.00000000deadbeef.tmp");
        let other = dir.path().join("headroom-hdd.4343.00000000deadbeef.tmp");
        std::fs::write(&leftover, b"x").unwrap();
        std::fs::write(&other, b"x").unwrap();
        remove_hdd_files(dir.path(), &[4242]);
        assert!(!leftover.exists() && other.exists());
        // More than half the free space is refused before any worker starts.
        let mut huge = parse_spec("hdd=1,hdd-bytes=64G").unwrap();
        huge.hdd_path = Some(dir.path().to_path_buf());
        let e = check_hdd_room(dir.path(), &huge).unwrap_err();
        assert!(e.contains("need more than half of its"), "{e}");
    }

    #[test]
    fn workers_work_and_stop_at_their_deadline() {
        for kind in [
            WorkerKind::Cpu { load_pct: 100 },
            WorkerKind::Cpu { load_pct: 30 },
            WorkerKind::Io,
            WorkerKind::Vm {
                bytes: 1 << 20,
                stride: 8,
            },
            WorkerKind::Vm {
                bytes: 1 << 20,
                stride: 4096,
            },
        ] {
            let t0 = Instant::now();
            let ops = run_worker(kind, t0 + Duration::from_millis(100));
            assert!(ops > 0, "{kind:?} did nothing");
            assert!(t0.elapsed() < Duration::from_secs(5), "{kind:?} overran");
        }
    }

    #[test]
    fn worker_of_a_gone_parent_exits_at_once() {
        let a = WorkerArgs {
            kind: WorkerKind::Cpu { load_pct: 100 },
            parent: u32::MAX,
            deadline: Duration::from_secs(60),
        };
        // Our parent is the test harness's parent, not u32::MAX.
        assert_eq!(worker_main(&a), Ok(0));
    }
}
