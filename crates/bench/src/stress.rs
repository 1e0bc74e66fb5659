//! A background load like stress-ng's `-c/--io/--vm` (and the older `stress`), without them.
//!
//! Workers are child processes (the caller's own binary, re-executed with a hidden worker
//! command), not threads: a thread would share the measuring process's address space, so
//! `mlockall(MCL_FUTURE)` would lock the vm workers' memory and their munmap() would send
//! TLB shootdowns to the measured CPUs, a load stress-ng does not create. Each worker:
//! - asks the kernel to kill it when its parent dies (`PR_SET_PDEATHSIG`), so nothing is
//!   left running even if the parent is killed with SIGKILL;
//! - stops by itself at a deadline given by the parent (every loop is bounded);
//! - is stopped with SIGTERM (then SIGKILL) by [`Load::stop`], also called on drop.
//!
//! `vm-bytes` semantics: the key=value form and a pasted `stress-ng` command divide the bytes
//! across the vm workers (stress-ng: `vm_bytes /= num_instances`); a pasted `stress` command
//! gives each worker that much (stress 1.0). Sizes use stress-ng's and stress's suffixes,
//! which are binary: `4M` = 4 MiB. The touching follows the tool too: stress-ng writes and
//! checks the whole mapping each pass (memory traffic), stress writes a byte per page
//! (page faults).

use model::units::{format_bytes_binary, parse_size};
use serde::Serialize;
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

/// What load to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StressSpec {
    pub cpu: u32,
    /// Percent of each slice a CPU worker spins (stress-ng `--cpu-load`, 1..=100).
    pub cpu_load: u8,
    pub io: u32,
    pub vm: u32,
    /// Bytes each vm worker maps, touches and unmaps per loop.
    pub vm_bytes_per_worker: u64,
    /// Bytes between two writes: 8 (every word, stress-ng) or 4096 (a byte a page, stress).
    pub vm_stride: u32,
    /// How the spec was read, in words (`stress-ng semantics: 4 MiB divided by 1 worker`).
    pub interpretation: String,
}

impl StressSpec {
    /// Parse `cpu=4,io=2,vm=1,vm-bytes=4M[,cpu-load=100]`, or a pasted `stress-ng ...` or
    /// `stress ...` command line.
    pub fn parse(s: &str) -> Result<StressSpec, String> {
        let s = s.trim();
        let mut words = s.split_whitespace();
        match words.next() {
            Some("stress-ng") => parse_command(words.collect(), true),
            Some("stress") => parse_command(words.collect(), false),
            _ => parse_pairs(s),
        }
    }

    pub fn workers(&self) -> u32 {
        self.cpu + self.io + self.vm
    }

    /// One line like stress-ng's own summary, e.g. `4 cpu, 2 io, 1 vm (4 MiB each)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.cpu > 0 {
            if self.cpu_load < 100 {
                parts.push(format!("{} cpu at {} %", self.cpu, self.cpu_load));
            } else {
                parts.push(format!("{} cpu", self.cpu));
            }
        }
        if self.io > 0 {
            parts.push(format!("{} io (sync)", self.io));
        }
        if self.vm > 0 {
            parts.push(format!(
                "{} vm ({} each)",
                self.vm,
                format_bytes_binary(self.vm_bytes_per_worker)
            ));
        }
        parts.join(", ")
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

fn finish(
    cpu: u32,
    cpu_load: u8,
    io: u32,
    vm: u32,
    vm_bytes: Option<u64>,
    divided: bool,
) -> Result<StressSpec, String> {
    if cpu + io + vm == 0 {
        return Err("the stress spec starts no worker: give cpu=N, io=N or vm=N".into());
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
        cpu_load,
        io,
        vm,
        vm_bytes_per_worker: per,
        // stress-ng semantics go with stress-ng's way of touching memory.
        vm_stride: if divided { WORD_STRIDE } else { PAGE_STRIDE },
        interpretation,
    })
}

fn load_pct(v: &str) -> Result<u8, String> {
    match v.parse::<u8>() {
        Ok(p) if (1..=100).contains(&p) => Ok(p),
        _ => Err(format!("cpu-load {v}: expected a percentage from 1 to 100")),
    }
}

fn parse_pairs(s: &str) -> Result<StressSpec, String> {
    let (mut cpu, mut io, mut vm, mut load, mut bytes) = (0, 0, 0, 100, None);
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!(
                "stress item {item:?} is not key=value (e.g. cpu=4,io=2,vm=1,vm-bytes=4M)"
            ));
        };
        match k.trim() {
            "cpu" | "c" => cpu = count("cpu", v)?,
            "io" | "i" => io = count("io", v)?,
            "vm" | "m" => vm = count("vm", v)?,
            "cpu-load" | "l" => load = load_pct(v)?,
            "vm-bytes" => {
                bytes = Some(parse_size(v).map_err(|why| format!("vm-bytes={v}: {why}"))?)
            }
            other => {
                return Err(format!(
                    "unknown stress key {other:?}: use cpu, io, vm, vm-bytes, cpu-load"
                ))
            }
        }
    }
    finish(cpu, load, io, vm, bytes, true)
}

/// A pasted stress-ng/stress command. `--timeout`, `-t` and `-v` are accepted and ignored
/// (the load stops with the measurement). stress-ng reads the seed's `-vm 4` as `-v -m 4`.
fn parse_command(args: Vec<&str>, stress_ng: bool) -> Result<StressSpec, String> {
    let tool = if stress_ng { "stress-ng" } else { "stress" };
    let (mut cpu, mut io, mut vm, mut load, mut bytes) = (0, 0, 0, 100, None);
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
        match flag {
            "-c" | "--cpu" => cpu = count("cpu", value()?)?,
            "-i" | "--io" => io = count("io", value()?)?,
            "-m" | "--vm" | "-vm" => vm = count("vm", value()?)?,
            "-l" | "--cpu-load" if stress_ng => load = load_pct(value()?)?,
            "--vm-bytes" => {
                let v = value()?;
                bytes = Some(parse_size(v).map_err(|why| format!("{tool} --vm-bytes {v}: {why}"))?)
            }
            "-t" | "--timeout" => {
                value()?;
            }
            "-v" | "--verbose" | "-q" | "--quiet" => {}
            other => {
                return Err(format!(
                    "{tool} option {other:?} is not one headroom reproduces \
                     (supported: -c, --io, --vm, --vm-bytes, --cpu-load, --timeout)"
                ))
            }
        }
        i += 1;
    }
    finish(cpu, load, io, vm, bytes, stress_ng)
}

/// Which kind of worker, with its parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    Cpu { load_pct: u8 },
    Io,
    Vm { bytes: u64, stride: u32 },
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
}

/// How the workers ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StopReport {
    /// Ended on SIGTERM (or had already ended at their deadline).
    pub stopped: u32,
    /// Needed SIGKILL.
    pub killed: u32,
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
        let mut load = Load {
            children: Vec::new(),
        };
        for kind in kinds {
            let args = WorkerArgs {
                kind,
                parent,
                deadline: max_duration,
            };
            let child = Command::new(&launcher.program)
                .args(&launcher.args)
                .args(args.to_args())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn();
            match child {
                Ok(c) => load.children.push((kind, c)),
                Err(e) => {
                    load.stop();
                    return Err(StressError {
                        kind: format!("{kind:?}"),
                        program: launcher.program.display().to_string(),
                        reason: e.to_string(),
                    });
                }
            }
        }
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
        let deadline = Instant::now() + Duration::from_secs(2);
        for (_, c) in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) => {
                        report.stopped += 1;
                        break;
                    }
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        report.killed += 1;
                        break;
                    }
                }
            }
        }
        self.children.clear();
        report
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
    let until = Instant::now() + args.deadline;
    Ok(run_worker(args.kind, until))
}

/// Run one worker's loop in the calling thread until `until`.
pub fn run_worker(kind: WorkerKind, until: Instant) -> u64 {
    match kind {
        WorkerKind::Cpu { load_pct } => cpu_worker(load_pct, until),
        WorkerKind::Io => io_worker(until),
        WorkerKind::Vm { bytes, stride } => vm_worker(bytes, stride, until),
    }
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
        let a = StressSpec::parse("stress-ng -c 4 --io 2 --vm 1 --vm-bytes 4M --timeout 1000000s")
            .unwrap();
        assert_eq!(
            (a.cpu, a.io, a.vm, a.vm_bytes_per_worker),
            (4, 2, 1, 4 << 20)
        );
        assert_eq!(a, StressSpec::parse("cpu=4,io=2,vm=1,vm-bytes=4M").unwrap());
        // RK3562: the older `stress`, bytes per worker.
        let b = StressSpec::parse("stress -c 4 --io 2 --vm 1 --vm-bytes 256M --timeout 1000000s")
            .unwrap();
        assert_eq!(b.vm_bytes_per_worker, 256 << 20);
        assert_eq!(
            (a.vm_stride, b.vm_stride),
            (8, 4096),
            "stress-ng writes it all"
        );
        assert!(b.interpretation.starts_with("stress semantics"));
        // RK3576: `-vm 4` is stress-ng's `-v -m 4`; 512M divided across 4 workers.
        let c = StressSpec::parse(
            "stress-ng -c8 --io 8 --cpu-load 100 -vm 4 --vm-bytes 512M --timeout 10000000s",
        )
        .unwrap();
        assert_eq!((c.cpu, c.io, c.vm, c.cpu_load), (8, 8, 4, 100));
        assert_eq!(c.vm_bytes_per_worker, 128 << 20);
        assert_eq!(c.describe(), "8 cpu, 8 io (sync), 4 vm (128 MiB each)");
        let d = StressSpec::parse("stress -m 4 --vm-bytes 512M").unwrap();
        assert_eq!(d.vm_bytes_per_worker, 512 << 20, "stress: each worker");
    }

    #[test]
    fn bad_specs_get_a_sentence() {
        assert!(StressSpec::parse("cpu=x")
            .unwrap_err()
            .contains("worker count"));
        assert!(StressSpec::parse("gpu=1")
            .unwrap_err()
            .contains("unknown stress key"));
        assert!(StressSpec::parse("cpu=0")
            .unwrap_err()
            .contains("no worker"));
        assert!(StressSpec::parse("cpu=1,cpu-load=0")
            .unwrap_err()
            .contains("1 to 100"));
        assert!(StressSpec::parse("stress-ng --hdd 1")
            .unwrap_err()
            .contains("--hdd"));
        assert!(StressSpec::parse("vm=1,vm-bytes=1")
            .unwrap_err()
            .contains("4K to 64G"));
        // Sizes read as in every other command (model::units): 4k = 4KB = 4 KiB.
        for s in [
            "vm=1,vm-bytes=4k",
            "vm=1,vm-bytes=4KB",
            "stress-ng --vm 1 --vm-bytes 4KiB",
        ] {
            assert_eq!(
                StressSpec::parse(s).unwrap().vm_bytes_per_worker,
                4096,
                "{s}"
            );
        }
        assert!(StressSpec::parse("vm=1,vm-bytes=M")
            .unwrap_err()
            .contains("vm-bytes=M: not a size"));
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
