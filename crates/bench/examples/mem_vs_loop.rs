//! Does `bench mem`'s engine add anything to a plain loop? ("within 10 % of a plain
//! reference loop of the same width".)
//!
//!     cargo run --release -p headroom-bench --example mem_vs_loop -- [--rounds 31]
//!         [--mib 128] [--sweeps 1] [--cpu N] [--width 8,16,32,64,128,memcpy] [--op load,store]
//!         [--chunk-kib 64]   (the engine's timed batch, `mmio::DEFAULT_CHUNK` by default)
//!
//! Fair on a noisy, shared machine: the engine (`bench::mmio::run`, what `headroom bench mem`
//! calls) and the reference loop run in the same process (the engine's measuring child is
//! forked from it), on the same buffer, pinned to one CPU (the child inherits the affinity),
//! in short rounds that alternate their order (A B, then B A) so a slow moment hits both
//! sides alike. Each round gives one ratio per width and operation, engine MB/s over loop
//! MB/s (10^6 B/s, bytes accessed over the time of the whole sweeps); the table shows the
//! median, min and max ratio over the rounds. Nothing here asserts a timing; the loads'
//! checksums must match (both read the same values), else it exits 1.
//!
//! The reference loops are what a user writes: `read_volatile` summed or `write_volatile` of
//! the element's index, one integer of the width per access; SSE2/NEON intrinsics' vector type
//! through `read_volatile`/`write_volatile` for 128 bits; for the copy, 128-bit loads into a
//! cache-sized DRAM block (as the engine's memcpy mode does).

use bench::latency::rt::set_affinity;
use bench::mmio::{self, Mapping, DEFAULT_CHUNK};
use model::mmio::{mb_per_s, AccessOp, AccessWidth};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

struct Args {
    rounds: usize,
    mib: usize,
    sweeps: u64,
    cpu: Option<u32>,
    chunk: usize,
    widths: Vec<AccessWidth>,
    ops: Vec<AccessOp>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        rounds: 31,
        mib: 128,
        sweeps: 1,
        cpu: None,
        chunk: DEFAULT_CHUNK,
        widths: AccessWidth::ALL.to_vec(),
        ops: vec![AccessOp::Load, AccessOp::Store],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see the top of mem_vs_loop.rs)"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--rounds" => a.rounds = value.parse().map_err(|e| bad(&e))?,
            "--mib" => a.mib = value.parse().map_err(|e| bad(&e))?,
            "--sweeps" => a.sweeps = value.parse().map_err(|e| bad(&e))?,
            "--cpu" => a.cpu = Some(value.parse().map_err(|e| bad(&e))?),
            "--chunk-kib" => a.chunk = value.parse::<usize>().map_err(|e| bad(&e))? << 10,
            "--width" => {
                a.widths = value
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(&e))?
            }
            "--op" => {
                a.ops = value
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(&e))?
            }
            _ => {
                return Err(format!(
                    "unknown flag {flag} (see the top of mem_vs_loop.rs)"
                ))
            }
        }
    }
    if a.rounds == 0 || a.mib == 0 || a.sweeps == 0 || a.chunk == 0 {
        return Err("--rounds, --mib, --sweeps and --chunk-kib must be at least 1".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mem_vs_loop: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: plain call.
    let cpu = args
        .cpu
        .unwrap_or_else(|| unsafe { libc::sched_getcpu() }.max(0) as u32);
    if let Err(e) = set_affinity(cpu) {
        eprintln!("mem_vs_loop: cannot pin to CPU {cpu}: {e}");
        return ExitCode::from(2);
    }
    let len = args.mib << 20;
    let map = match Mapping::anonymous(len) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mem_vs_loop: cannot map {} MiB: {e}", args.mib);
            return ExitCode::FAILURE;
        }
    };
    // SAFETY: our own writable mapping of len bytes; filled so no page is the zero page.
    unsafe { std::ptr::write_bytes(map.as_ptr(), 0x5a, len) };
    let mut pairs = Vec::new();
    for &op in &args.ops {
        for &w in &args.widths {
            if w.bytes() == 16 && !mmio::has_128() {
                continue;
            }
            pairs.push((w, op));
        }
    }
    eprintln!(
        "mem_vs_loop: {} rounds, {} MiB buffer, {} sweep(s) per side, pinned to CPU {cpu}",
        args.rounds, args.mib, args.sweeps
    );
    let stop = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal();
    // Per pair: (ratio, engine MB/s, loop MB/s) per round.
    let mut seen: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); pairs.len()];
    let mut mismatches = 0;
    for round in 0..args.rounds {
        for (k, &(w, op)) in pairs.iter().enumerate() {
            let engine = || {
                let mut c = mmio::Config::new(vec![w], vec![op], Duration::from_secs(600));
                c.max_sweeps = Some(args.sweeps);
                c.chunk = args.chunk;
                let out = mmio::run_pairs(&c, &map, 0, len as u64, &stop, &|_| {})
                    .map_err(|e| e.to_string())?;
                let p = out.into_iter().next().ok_or("the engine ran nothing")?;
                let r = p.result.map_err(|e| e.to_string())?;
                Ok::<_, String>((r.mb_per_s, p.checksum))
            };
            let plain = || reference(&map, w, op, args.sweeps);
            let (e, l) = if (round + k) % 2 == 0 {
                let e = engine();
                (e, plain())
            } else {
                let l = plain();
                (engine(), l)
            };
            let (e, esum) = match e {
                Ok(x) => x,
                Err(err) => {
                    eprintln!("mem_vs_loop: {} {op}: {err}", w.label());
                    return ExitCode::FAILURE;
                }
            };
            let (l, lsum) = l;
            if op == AccessOp::Load && esum != lsum {
                eprintln!(
                    "mem_vs_loop: {} load: the engine's checksum {esum:#x} differs from the \
                     loop's {lsum:#x}",
                    w.label()
                );
                mismatches += 1;
            }
            seen[k].push((e / l, e, l));
        }
        if tty {
            eprint!("\rmem_vs_loop: round {}/{}", round + 1, args.rounds);
        }
    }
    if tty {
        eprintln!();
    }
    println!(
        "| width | op | engine MB/s | loop MB/s | engine / loop, median | min..max | rounds |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (&(w, op), s) in pairs.iter().zip(&seen) {
        let med = |f: fn(&(f64, f64, f64)) -> f64| {
            let mut v: Vec<f64> = s.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let m = if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            };
            (m, v[0], v[n - 1])
        };
        let (r, lo, hi) = med(|x| x.0);
        println!(
            "| {} | {op} | {:.0} | {:.0} | {r:.3} | {lo:.3}..{hi:.3} | {} |",
            w.label(),
            med(|x| x.1).0,
            med(|x| x.2).0,
            s.len()
        );
    }
    if mismatches > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The plain loop of `w` over the whole buffer, `sweeps` times: (MB/s, wrapping sum of what
/// was loaded, as u64 lanes).
fn reference(map: &Mapping, w: AccessWidth, op: AccessOp, sweeps: u64) -> (f64, u64) {
    let p = map.as_ptr();
    let len = map.len();
    let start = Instant::now();
    let mut sum = 0u64;
    for _ in 0..sweeps {
        // SAFETY: every access below stays inside the mapping (n elements of the width), which
        // is writable and 16-byte aligned (page aligned).
        sum = sum.wrapping_add(unsafe {
            match (w, op) {
                (AccessWidth::W8, AccessOp::Load) => load::<u8>(p, len),
                (AccessWidth::W16, AccessOp::Load) => load::<u16>(p, len),
                (AccessWidth::W32, AccessOp::Load) => load::<u32>(p, len),
                (AccessWidth::W64, AccessOp::Load) => load::<u64>(p, len),
                (AccessWidth::W8, AccessOp::Store) => store(p, len, |i| i as u8),
                (AccessWidth::W16, AccessOp::Store) => store(p, len, |i| i as u16),
                (AccessWidth::W32, AccessOp::Store) => store(p, len, |i| i as u32),
                (AccessWidth::W64, AccessOp::Store) => store(p, len, |i| i as u64),
                (AccessWidth::W128, AccessOp::Load) => v128::load(p, len),
                (AccessWidth::W128, AccessOp::Store) => v128::store(p, len),
                (AccessWidth::Memcpy, AccessOp::Load) => v128::copy_from(p, len),
                (AccessWidth::Memcpy, AccessOp::Store) => v128::copy_to(p, len),
            }
        });
    }
    let ns = start.elapsed().as_nanos() as u64;
    (mb_per_s(sweeps * len as u64, ns), sum)
}

unsafe fn load<T: Copy + Into<u64>>(p: *mut u8, len: usize) -> u64 {
    let p = p.cast::<T>();
    let mut sum = 0u64;
    for i in 0..len / size_of::<T>() {
        // SAFETY: the caller's contract.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(p.add(i)) }.into());
    }
    sum
}

unsafe fn store<T: Copy>(p: *mut u8, len: usize, of: fn(usize) -> T) -> u64 {
    let p = p.cast::<T>();
    for i in 0..len / size_of::<T>() {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::write_volatile(p.add(i), of(i)) };
    }
    0
}

/// 128-bit loops with the architecture's vector type (SSE2 on x86_64, NEON on aarch64).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod v128 {
    #[cfg(target_arch = "aarch64")]
    use core::arch::aarch64::uint64x2_t as V;
    #[cfg(target_arch = "x86_64")]
    use core::arch::x86_64::__m128i as V;

    fn lanes(v: V) -> [u64; 2] {
        // SAFETY: both are 16 plain bytes.
        unsafe { std::mem::transmute::<V, [u64; 2]>(v) }
    }

    fn vector(a: [u64; 2]) -> V {
        // SAFETY: both are 16 plain bytes.
        unsafe { std::mem::transmute::<[u64; 2], V>(a) }
    }

    pub unsafe fn load(p: *mut u8, len: usize) -> u64 {
        let p = p.cast::<V>();
        let mut sum = 0u64;
        for i in 0..len / 16 {
            // SAFETY: the caller's contract.
            let [a, b] = lanes(unsafe { std::ptr::read_volatile(p.add(i)) });
            sum = sum.wrapping_add(a).wrapping_add(b);
        }
        sum
    }

    pub unsafe fn store(p: *mut u8, len: usize) -> u64 {
        let p = p.cast::<V>();
        for i in 0..len / 16 {
            let v = i as u64;
            // SAFETY: the caller's contract.
            unsafe { std::ptr::write_volatile(p.add(i), vector([v, v])) };
        }
        0
    }

    /// Block of DRAM on the other side of the copy: the engine's batch size, so it stays in
    /// the cache as the engine's does.
    const BLOCK: usize = super::DEFAULT_CHUNK;

    /// Buffer -> block, 128 bits at a time (memcpy_fromio's shape).
    pub unsafe fn copy_from(p: *mut u8, len: usize) -> u64 {
        let mut block = vec![vector([0, 0]); BLOCK / 16];
        let p = p.cast::<V>();
        let mut sum = 0u64;
        for i in 0..len / 16 {
            // SAFETY: the caller's contract.
            let v = unsafe { std::ptr::read_volatile(p.add(i)) };
            let [a, b] = lanes(v);
            sum = sum.wrapping_add(a).wrapping_add(b);
            block[i % (BLOCK / 16)] = v;
        }
        std::hint::black_box(&block);
        sum
    }

    /// Block -> buffer (memcpy_toio's shape): the block is filled with the index pattern, then
    /// copied out, one block at a time.
    pub unsafe fn copy_to(p: *mut u8, len: usize) -> u64 {
        let per = BLOCK / 16;
        let mut block = vec![vector([0, 0]); per];
        let p = p.cast::<V>();
        let n = len / 16;
        let mut i = 0;
        while i < n {
            let m = per.min(n - i);
            for (j, slot) in block[..m].iter_mut().enumerate() {
                let v = (i + j) as u64;
                *slot = vector([v, v]);
            }
            for (j, v) in block[..m].iter().enumerate() {
                // SAFETY: the caller's contract.
                unsafe { std::ptr::write_volatile(p.add(i + j), *v) };
            }
            i += m;
        }
        0
    }
}

/// No 128-bit accesses on this architecture: those pairs are skipped before the run.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod v128 {
    pub unsafe fn load(_: *mut u8, _: usize) -> u64 {
        unreachable!("skipped")
    }
    pub use load as store;
    pub use load as copy_from;
    pub use load as copy_to;
}
