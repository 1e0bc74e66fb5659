//! I/O buffers aligned for O_DIRECT and the reproducible pseudo-random data that fills them.

use super::DiskError;
use model::disk::Buffers;

/// `queue_depth` buffers of `block_size` bytes in one allocation aligned for O_DIRECT.
///
/// Owned through a raw pointer (not a `Vec`) because the kernel writes into a slot while the
/// I/O is in flight: no Rust reference to a slot's bytes exists while its I/O is queued.
pub struct IoBuffers {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    block_size: usize,
    count: usize,
}

// SAFETY: the buffers are plain memory owned by this struct; a slot is only touched by the
// one job thread that owns the struct (the kernel touches it only while an I/O is in flight).
unsafe impl Send for IoBuffers {}

impl IoBuffers {
    /// Allocate `count` slots of `block_size` bytes aligned to `align` (a power of two) in
    /// `memory`, each filled with incompressible pseudo-random bytes, or zeros when `zero`.
    pub fn new(
        count: usize,
        block_size: usize,
        align: usize,
        memory: Buffers,
        zero: bool,
        seed: u64,
    ) -> Result<Self, DiskError> {
        let total = count
            .checked_mul(block_size)
            .filter(|t| *t > 0)
            .ok_or_else(|| DiskError::BadParameter("buffer size overflows".into()))?;
        // Huge pages: the whole allocation rounded up to 2 MiB (at most 2 MiB more per job),
        // aligned to 2 MiB and asked to be backed by huge pages (MADV_HUGEPAGE), so a 1 MiB
        // buffer is physically contiguous: the kernel maps it as a few segments of
        // max_segment_size instead of 256 pages, which a device with max_segments 254
        // (virtio-blk) or 128 (loop) splits into two requests. Pages: 4 KiB pages, also where
        // transparent huge pages are `always` (MADV_NOHUGEPAGE), as an application's malloc'd
        // buffers are under the usual `madvise` setting.
        let huge = memory == Buffers::HugePages;
        let (size, align) = if huge {
            (total.div_ceil(HUGE_PAGE) * HUGE_PAGE, align.max(HUGE_PAGE))
        } else {
            (total, align.max(4096))
        };
        let layout = std::alloc::Layout::from_size_align(size, align)
            .map_err(|e| DiskError::BadParameter(format!("buffer alignment {align}: {e}")))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(DiskError::BadParameter(format!(
                "cannot allocate {total} bytes of I/O buffers: lower --qd, --jobs or --bs"
            )));
        }
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is the allocation (page-aligned: align >= 4096, and size a multiple
        // of it for huge pages; madvise rounds the end up to a page for pages, which stays
        // inside the allocator's page); madvise only changes how it is backed (an error, e.g.
        // THP compiled out, leaves ordinary pages: nothing to handle).
        unsafe { libc::madvise(ptr.cast(), size, advice) };
        // SAFETY: the allocation holds `size` bytes; it is initialised here before any read.
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
        let mut b = IoBuffers {
            ptr,
            layout,
            block_size,
            count,
        };
        if !zero {
            let mut rng = Rng::new(seed);
            for slot in 0..count {
                rng.fill(b.slot_mut(slot));
            }
        }
        Ok(b)
    }

    /// The start of slot `i` (for the kernel).
    pub fn slot_ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.count);
        // SAFETY: i < count, so the offset stays inside the allocation.
        unsafe { self.ptr.add(i * self.block_size) }
    }

    /// Slot `i` as bytes, while the buffers are not shared with an engine yet.
    fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        // SAFETY: the slot lies inside the allocation; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(i), self.block_size) }
    }

    /// A copy of slot `i` (for tests and checks; the slot must have no I/O in flight).
    pub fn slot_copy(&self, i: usize) -> Vec<u8> {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        // SAFETY: inside the allocation; the caller has no I/O in flight on this slot, so
        // nothing writes it while it is read.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(i), self.block_size) }.to_vec()
    }

    /// Change the first 8 bytes of every 512 B sector of slot `i`, so no two writes carry the
    /// same data (defeats deduplication; the random rest defeats compression) at 1/64 of the
    /// cost of refilling the buffer (fio's `scramble_buffers` does the same). Written through
    /// the raw pointer: the engine holds `&self` too, and the slot is free (no I/O in flight).
    pub fn scramble_slot(&self, i: usize, rng: &mut Rng) {
        assert!(i < self.count, "slot {i} out of {}", self.count);
        let base = self.slot_ptr(i);
        let mut off = 0;
        while off + 8 <= self.block_size {
            // SAFETY: off + 8 <= block_size keeps the write inside slot i; no I/O is in flight
            // on it, so neither the kernel nor another reference reads it now.
            unsafe { std::ptr::write_unaligned(base.add(off).cast::<u64>(), rng.next_u64()) };
            off += 512;
        }
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }

    pub fn count(&self) -> usize {
        self.count
    }
}

impl Drop for IoBuffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// The x86-64 and arm64 (4 KiB granule) transparent huge page size.
const HUGE_PAGE: usize = 2 << 20;

/// xorshift64* (Vigna 2016): fast, good enough for offsets and incompressible data, and
/// reproducible from a seed. Not for secrets.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (n > 0) by Lemire's multiply-shift, without the modulo bias mattering
    /// at disk sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_ne_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn random_buffers_do_not_compress_and_scramble_changes_every_sector() {
        let b = IoBuffers::new(2, 4096, 4096, Buffers::Pages, false, 7).unwrap();
        let before = b.slot_copy(0);
        // No 8-byte word repeats in a random 4 KiB buffer.
        let mut words: Vec<&[u8]> = before.chunks(8).collect();
        words.sort();
        words.dedup();
        assert_eq!(words.len(), 512);
        b.scramble_slot(0, &mut Rng::new(3));
        let after = b.slot_copy(0);
        for (x, y) in before.chunks(512).zip(after.chunks(512)) {
            assert_ne!(x[..8], y[..8]);
            assert_eq!(x[8..], y[8..]);
        }
        assert!(b.slot_ptr(0) as usize % 4096 == 0);
        let z = IoBuffers::new(1, 512, 512, Buffers::HugePages, true, 7).unwrap();
        assert!(z.slot_ptr(0) as usize % 4096 == 0);
    }
}
