//! DRAM yardstick for [`crate::mmio`]: the same widths and operations, by the same engine, on
//! an ordinary buffer larger than the last-level cache (so the numbers are DRAM's, not the
//! cache's), plus the C library's memcpy between two halves of the buffer, what `mbw`'s
//! MEMCPY test measures.

use crate::mmio::{self, Mapping, Measured, MmioError, Progress, Step};
use crate::{Bench, Phase, Stop};
use model::mmio::PairError;
use model::mmio::{mb_per_s, AccessResult, MemCopyResult};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The buffer size for a last-level cache of `llc_bytes`: four times it (a sweep then evicts
/// what the previous one cached), at least 64 MiB, rounded to whole MiB.
pub fn buffer_for_llc(llc_bytes: Option<u64>) -> u64 {
    let min = 64u64 << 20;
    let want = llc_bytes.map_or(min, |l| l.saturating_mul(4)).max(min);
    want.div_ceil(1 << 20) << 20
}

/// Check a buffer of `buffer` bytes (`given` as the user wrote `--size`) for `threads`
/// threads: it is populated up front, so never more than half of the `available` memory
/// (MemAvailable: a typo such as `--size 100G` cannot push the machine into swap or the OOM
/// killer), and at least 16 bytes per thread. A buffer that fits the last-level cache gets a
/// note: its speeds are the cache's.
pub fn check_buffer(
    buffer: u64,
    given: &str,
    threads: u32,
    available: Option<u64>,
    llc: Option<u64>,
) -> Result<Option<String>, String> {
    if let Some(avail) = available.filter(|&m| buffer > m / 2) {
        return Err(format!(
            "--size {given}: a buffer above half of the {} MiB of available memory (MemAvailable \
             in /proc/meminfo) is refused; give a smaller --size",
            avail >> 20
        ));
    }
    if buffer < 16 * u64::from(threads) {
        return Err(format!(
            "--size {buffer}: the buffer needs at least 16 bytes per thread"
        ));
    }
    Ok(llc.filter(|&l| buffer <= l).map(|l| {
        format!(
            "the {buffer}-byte buffer fits in the {} KiB last-level cache: these are cache \
             speeds, not DRAM's",
            l >> 10
        )
    }))
}

#[derive(Clone, Debug)]
pub struct MemConfig {
    pub buffer_bytes: u64,
    /// Widths, operations, threads, duration: as for a region.
    pub access: mmio::Config,
    /// Also time the C library's memcpy.
    pub copy: bool,
}

/// What the DRAM yardstick measured.
#[derive(Debug, Serialize)]
pub struct MemMeasured {
    pub buffer_bytes: u64,
    pub results: Vec<AccessResult>,
    pub errors: Vec<PairError>,
    pub copy: Option<MemCopyResult>,
    /// The stop flag ended the run (the steps not run are left out).
    pub interrupted: bool,
}

/// `bench mem` (and `bench mmio`'s yardstick) in the run shape of every engine
/// ([`crate::Bench`]): allocate the buffer, fill it (so no page is shared with the zero
/// page), run every pair on it, then the C library's memcpy if asked.
pub struct MemRun {
    pub config: MemConfig,
}

impl Bench for MemRun {
    // Its document is an `mmio` document with the `memory` part only.
    const KIND: &'static str = "mmio";
    type Progress<'p> = Progress;
    type Measurement = MemMeasured;
    type Error = MmioError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<MemMeasured, MmioError>
    where
        F: for<'p> Fn(&Progress) + Sync,
    {
        let cfg = &self.config;
        let start = Instant::now();
        let at = |step, phase| progress(&Progress::at(start, step, phase));
        let len = usize::try_from(cfg.buffer_bytes).map_err(|_| MmioError::OutOfBounds {
            offset: 0,
            size: cfg.buffer_bytes,
            len: usize::MAX as u64,
        })?;
        at(Step::Fill, Phase::Setup);
        let map = Mapping::anonymous(len).map_err(|source| MmioError::Os {
            what: format!("cannot allocate the {} MiB DRAM buffer", len >> 20),
            source,
        })?;
        // SAFETY: the mapping is ours, writable and len bytes long.
        unsafe { std::ptr::write_bytes(map.as_ptr(), 0x5a, len) };
        let pairs = mmio::run_pairs(&cfg.access, &map, 0, len as u64, stop, &|step| {
            at(step, Phase::Run)
        })?;
        let copy = (cfg.copy && !stop.load(Ordering::Relaxed)).then(|| {
            at(Step::LibcMemcpy, Phase::Run);
            copy(&map, cfg, stop)
        });
        let Measured {
            results,
            errors,
            interrupted,
        } = Measured::of(pairs, stop);
        Ok(MemMeasured {
            buffer_bytes: cfg.buffer_bytes,
            results,
            errors,
            copy,
            interrupted,
        })
    }

    fn interrupted(m: &MemMeasured) -> bool {
        m.interrupted
    }
}

/// memcpy from the first half of the buffer to the second until the duration or the sweep
/// bound.
fn copy(map: &Mapping, cfg: &MemConfig, stop: &AtomicBool) -> MemCopyResult {
    let half = map.len() / 2;
    // One call for the whole half, as mbw copies its whole array: glibc picks its strategy
    // by size (non-temporal stores above a fraction of the cache), so a smaller block would
    // measure a different memcpy than a user's big copy.
    let block = half;
    let blocks = 1;
    let start = Instant::now();
    let deadline = start + cfg.access.duration;
    let mut bytes = 0u64;
    let mut sweeps = 0u64;
    'run: loop {
        for b in 0..blocks {
            // SAFETY: both ranges are inside the mapping and do not overlap (two halves).
            unsafe {
                let src = map.as_ptr().add(b * block);
                let dst = map.as_ptr().add(half + b * block);
                std::ptr::copy_nonoverlapping(src, dst, block);
            }
            bytes += block as u64;
            if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                break 'run;
            }
        }
        sweeps += 1;
        if cfg.access.max_sweeps.is_some_and(|m| sweeps >= m) {
            break;
        }
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    MemCopyResult {
        block_bytes: block as u64,
        bytes,
        elapsed_ns,
        mb_per_s: mb_per_s(bytes, elapsed_ns),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use model::mmio::{AccessOp, AccessWidth};
    use std::time::Duration;

    #[test]
    fn a_buffer_is_checked_against_memory_threads_and_cache() {
        let gib = 1u64 << 30;
        let e = check_buffer(64 * gib, "64G", 1, Some(8 * gib), None).unwrap_err();
        assert!(
            e.starts_with("--size 64G: a buffer above half of the 8192 MiB"),
            "{e}"
        );
        let e = check_buffer(32, "32", 4, None, None).unwrap_err();
        assert!(e.contains("16 bytes per thread"), "{e}");
        assert_eq!(
            check_buffer(gib, "1G", 4, Some(8 * gib), Some(32 << 20)),
            Ok(None)
        );
        let note = check_buffer(1 << 20, "1M", 4, None, Some(32 << 20)).unwrap();
        assert!(note
            .unwrap()
            .contains("fits in the 32768 KiB last-level cache"));
    }

    /// The plain loops a user would write to measure DRAM: volatile reads summed, or volatile
    /// writes of the index, `sweeps` times over the buffer; (MB/s, sum of what was read).
    fn reference<T: Copy + Into<u64>>(
        map: &Mapping,
        sweeps: u64,
        op: AccessOp,
        of: impl Fn(u64) -> T,
    ) -> (f64, u64) {
        let p = map.as_ptr().cast::<T>();
        let n = map.len() / std::mem::size_of::<T>();
        let start = Instant::now();
        let mut sum = 0u64;
        for _ in 0..sweeps {
            for i in 0..n {
                // SAFETY: i < n elements of the mapping.
                unsafe {
                    match op {
                        AccessOp::Load => {
                            sum = sum.wrapping_add(std::ptr::read_volatile(p.add(i)).into())
                        }
                        AccessOp::Store => std::ptr::write_volatile(p.add(i), of(i as u64)),
                    }
                }
            }
        }
        let ns = start.elapsed().as_nanos() as u64;
        (mb_per_s(sweeps * map.len() as u64, ns), sum)
    }

    #[test]
    fn the_engine_adds_nothing_to_a_plain_loop() {
        // Timing is never asserted (a shared machine); the counts and the sums are. The
        // ratios are printed: `cargo test -p headroom-bench --lib engine_adds -- --nocapture`.
        let len = 64usize << 20;
        let sweeps = 4;
        let map = Mapping::anonymous(len).unwrap();
        // SAFETY: our own writable mapping.
        unsafe { std::ptr::write_bytes(map.as_ptr(), 0x11, len) };
        for (w, op) in [
            (AccessWidth::W8, AccessOp::Load),
            (AccessWidth::W32, AccessOp::Load),
            (AccessWidth::W64, AccessOp::Load),
            (AccessWidth::W32, AccessOp::Store),
            (AccessWidth::W64, AccessOp::Store),
        ] {
            let mut ratios = Vec::new();
            for _ in 0..5 {
                let mut c = mmio::Config::new(vec![w], vec![op], Duration::from_secs(60));
                c.max_sweeps = Some(sweeps);
                let out =
                    mmio::run_pairs(&c, &map, 0, len as u64, &AtomicBool::new(false), &|_| {})
                        .unwrap();
                let r = out[0].result.as_ref().unwrap();
                assert_eq!(r.accesses, sweeps * (len / w.bytes()) as u64);
                let (reference, sum) = match w {
                    AccessWidth::W8 => reference::<u8>(&map, sweeps, op, |i| i as u8),
                    AccessWidth::W32 => reference::<u32>(&map, sweeps, op, |i| i as u32),
                    _ => reference::<u64>(&map, sweeps, op, |i| i),
                };
                if op == AccessOp::Load {
                    assert_eq!(out[0].checksum, sum, "the engine read the same values");
                }
                ratios.push(r.mb_per_s / reference);
            }
            ratios.sort_by(f64::total_cmp);
            println!(
                "{} {op}: engine / plain loop, 5 rounds: median {:.3} (min {:.3}, max {:.3})",
                w.label(),
                ratios[2],
                ratios[0],
                ratios[4]
            );
        }
    }

    #[test]
    fn the_buffer_outgrows_the_cache() {
        // This VM's 32 MiB L3 (/sys/devices/system/cpu/cpu0/cache/index3/size).
        assert_eq!(buffer_for_llc(Some(32 << 20)), 128 << 20);
        assert_eq!(buffer_for_llc(Some(1 << 20)), 64 << 20);
        assert_eq!(buffer_for_llc(None), 64 << 20);
        assert_eq!(buffer_for_llc(Some(3 << 19)), 64 << 20);
    }
}
