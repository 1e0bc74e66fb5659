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
}
