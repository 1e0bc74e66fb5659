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

use model::stress::StressSpec;
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
fn parse_command(args: Vec<&str>, stress_ng: bool, cpus: Cpus) -> Result<StressSpec, String> {
    let tool = if stress_ng { "stress-ng" } else { "stress" };
    let (mut cpu, mut io, mut vm, mut load, mut bytes) = (0, 0, 0, 100, None);
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
        match flag {
            "-c" | "--cpu" if stress_ng => cpu = ng_count("cpu", value()?, cpus, &mut per_cpu)?,
            "-i" | "--io" if stress_ng => io = ng_count("io", value()?, cpus, &mut per_cpu)?,
            "-m" | "--vm" | "-vm" if stress_ng => {
                vm = ng_count("vm", value()?, cpus, &mut per_cpu)?
            }
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
    let mut spec = finish(cpu, load, io, vm, bytes, stress_ng)?;
    for said in per_cpu {
        spec.interpretation
            .push_str(&format!("; {said}, as stress-ng"));
    }
    Ok(spec)
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
        // The start gate: each worker blocks reading its stdin until the parent closes the
        // pipe, after the last worker started (or on an error, before stopping them).
        let mut gates = Vec::with_capacity(kinds.len());
        for kind in kinds {
            let args = WorkerArgs {
                kind,
                parent,
                deadline: max_duration,
            };
            let child = Command::new(&launcher.program)
                .args(&launcher.args)
                .args(args.to_args())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn();
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
        assert!(parse_spec("stress-ng --hdd 1")
            .unwrap_err()
            .contains("--hdd"));
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
