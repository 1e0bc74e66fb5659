//! I/O buffers aligned for O_DIRECT and the reproducible pseudo-random data that fills them.

use super::DiskError;
use model::disk::Buffers;

/// What the buffers hold before the first I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Incompressible pseudo-random bytes from this seed (what write tests write).
    Random(u64),
    /// Zeros, written by the process (write tests with `--zero`).
    Zeros,
    /// Left as the kernel maps them (zeros, no page touched) for read-only tests: the pages
    /// come into being when the engine pins them or the first read fills them, in one pass
    /// of the kernel, as fio's untouched read buffers do.
    Untouched,
}

/// `queue_depth` buffers of `block_size` bytes in one mapping aligned for O_DIRECT.
///
/// Owned through a raw pointer (not a `Vec`) because the kernel writes into a slot while the
/// I/O is in flight: no Rust reference to a slot's bytes exists while its I/O is queued.
pub struct IoBuffers {
    /// The mapping as made by mmap (unmapped on drop).
    map: *mut u8,
    map_len: usize,
    /// The first slot: `map` rounded up to the alignment asked for.
    ptr: *mut u8,
    block_size: usize,
    count: usize,
}

// SAFETY: the buffers are plain memory owned by this struct; a slot is only touched by the
// one job thread that owns the struct (the kernel touches it only while an I/O is in flight).
unsafe impl Send for IoBuffers {}

impl IoBuffers {
    /// Map `count` slots of `block_size` bytes aligned to `align` (a power of two) in
    /// `memory`, holding `content`.
    ///
    /// The slots are a fresh anonymous mapping of their own rather than the allocator's heap:
    /// an allocator may hand back memory the process used and freed before, whose pages lie
    /// scattered in physical memory; fresh pages faulted in order are mostly physically
    /// adjacent, and the block layer gives adjacent pages to the device as one segment. How
    /// scattered a buffer's pages are changes a sequential test's MB/s on a VM's disk by up
    /// to 2x, so it must be what fio's buffers get, not what the process did before.
    pub fn new(
        count: usize,
        block_size: usize,
        align: usize,
        memory: Buffers,
        content: Content,
    ) -> Result<Self, DiskError> {
        let total = count
            .checked_mul(block_size)
            .filter(|t| *t > 0)
            .ok_or_else(|| DiskError::BadParameter("buffer size overflows".into()))?;
        // Huge pages: the slots start on a 2 MiB boundary and the mapping is asked to be
        // backed by huge pages (MADV_HUGEPAGE), so a 1 MiB buffer is physically contiguous:
        // the kernel maps it as a few segments of max_segment_size instead of 256 pages, which
        // a device with max_segments 254 (virtio-blk) or 128 (loop) splits into two requests.
        // Pages: 4 KiB pages, also where transparent huge pages are `always`
        // (MADV_NOHUGEPAGE), as an application's malloc'd buffers are under the usual
        // `madvise` setting.
        let huge = memory == Buffers::HugePages;
        let align = if huge {
            align.max(HUGE_PAGE)
        } else {
            align.max(PAGE)
        };
        let too_big = || {
            DiskError::BadParameter(format!(
                "cannot allocate {total} bytes of I/O buffers: lower --qd, --jobs or --bs"
            ))
        };
        // A huge page backs only a whole 2 MiB-aligned range of a mapping advised so: the
        // advised range is rounded up to 2 MiB (at most 2 MiB more per job).
        let unit = if huge { HUGE_PAGE } else { PAGE };
        let size = total.div_ceil(unit).checked_mul(unit).ok_or_else(too_big)?;
        // mmap aligns to a page; a larger alignment is made by mapping `align` more and
        // starting at the first aligned address inside.
        let map_len = size
            .checked_add(if align > PAGE { align } else { 0 })
            .ok_or_else(too_big)?;
        // SAFETY: a new private anonymous mapping; no existing memory is affected.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(too_big());
        }
        let map = map.cast::<u8>();
        let ptr = map.wrapping_add((align - (map as usize) % align) % align);
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is inside the mapping (ptr + size <= map + map_len); madvise only
        // changes how it is backed (an error, e.g. THP compiled out, leaves ordinary pages:
        // nothing to handle).
        unsafe { libc::madvise(ptr.cast(), size, advice) };
        let mut b = IoBuffers {
            map,
            map_len,
            ptr,
            block_size,
            count,
        };
        // An anonymous mapping reads as zeros: initialised before any read, touched or not.
        // Huge pages are touched here all the same, so that whether the kernel had free 2 MiB
        // blocks for them is known before the first I/O (`huge_page_bytes`).
        let content = match content {
            Content::Untouched if huge => Content::Zeros,
            c => c,
        };
        match content {
            Content::Untouched => {}
            Content::Zeros => {
                // SAFETY: the slots lie inside the mapping; writing zeros faults the pages in
                // order (what a writer's buffers look like after its first fill).
                unsafe { std::ptr::write_bytes(b.ptr, 0, total) }
            }
            Content::Random(seed) => {
                let mut rng = Rng::new(seed);
                for slot in 0..count {
                    rng.fill(b.slot_mut(slot));
                }
            }
        }
        Ok(b)
    }

    /// Bytes of the slots' mapping backed by huge pages, from /proc/self/smaps
    /// (`AnonHugePages` of the mapping that starts at the first slot); `None` when smaps cannot
    /// be read or holds no such mapping.
    pub fn huge_page_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        anon_huge_bytes(&smaps, self.ptr as usize)
    }

    /// The slots' bytes (what the huge pages should cover).
    pub fn total_bytes(&self) -> usize {
        self.block_size * self.count
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
        // SAFETY: mapped in `new` with this length, unmapped once; no I/O is in flight (the
        // engine that borrowed the buffers is gone).
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// `AnonHugePages` (in bytes) of the mapping of `smaps` (the text of /proc/PID/smaps) that
/// starts at address `start`.
fn anon_huge_bytes(smaps: &str, start: usize) -> Option<u64> {
    let mut in_it = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if let Some((from, _)) = first.split_once('-') {
            if from.chars().all(|c| c.is_ascii_hexdigit()) && !from.is_empty() {
                in_it = usize::from_str_radix(from, 16).ok() == Some(start);
                continue;
            }
        }
        if in_it {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                let kib: u64 = v.trim().trim_end_matches("kB").trim().parse().ok()?;
                return Some(kib * 1024);
            }
        }
    }
    None
}

/// The x86-64 and arm64 (4 KiB granule) transparent huge page size.
const HUGE_PAGE: usize = 2 << 20;

/// The base page size of x86-64, arm64 (4 KiB granule) and armv7 kernels.
const PAGE: usize = 4096;

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
    fn huge_page_bytes_are_read_from_the_mapping_that_starts_at_the_slots() {
        let smaps = "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n\
                     Size:               2048 kB\n\
                     AnonHugePages:         0 kB\n\
                     7f0000200000-7f0002200000 rw-p 00000000 00:00 0 \n\
                     Size:              32768 kB\n\
                     AnonHugePages:     30720 kB\n\
                     VmFlags: rd wr mr mw me ac hg\n";
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0020_0000), Some(30 << 20));
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0000_0000), Some(0));
        assert_eq!(anon_huge_bytes(smaps, 0x1000), None);
        // This process's own buffers: the mapping is found (how much is huge depends on the
        // free 2 MiB blocks of the moment).
        let b = IoBuffers::new(2, 1 << 20, 4096, Buffers::HugePages, Content::Untouched).unwrap();
        assert!(b.huge_page_bytes().is_some_and(|h| h <= 2 << 20));
    }

    /// Pages of the mapping that are in memory (mincore), for the buffers' `len` bytes.
    fn resident_pages(b: &IoBuffers, len: usize) -> usize {
        let pages = len.div_ceil(PAGE);
        let mut vec = vec![0u8; pages];
        // SAFETY: the range lies inside the mapping; `vec` has one byte per page.
        let rc = unsafe { libc::mincore(b.slot_ptr(0).cast(), len, vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|v| **v & 1 == 1).count()
    }

    /// A read test's buffers are a fresh mapping the process never touches: their pages are
    /// made by the kernel in one pass when the engine pins them or the first read lands, as
    /// fio's are, not reused from what the process freed before (scattered pages that a VM's
    /// disk reads at up to half the MB/s).
    #[test]
    fn read_buffers_are_left_for_the_kernel_and_write_buffers_are_filled() {
        let untouched =
            IoBuffers::new(4, 1 << 20, 4096, Buffers::Pages, Content::Untouched).unwrap();
        assert_eq!(resident_pages(&untouched, 4 << 20), 0);
        let filled = IoBuffers::new(4, 1 << 20, 4096, Buffers::Pages, Content::Random(1)).unwrap();
        assert_eq!(resident_pages(&filled, 4 << 20), 1024);
    }

    #[test]
    fn random_buffers_do_not_compress_and_scramble_changes_every_sector() {
        let b = IoBuffers::new(2, 4096, 4096, Buffers::Pages, Content::Random(7)).unwrap();
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
        let z = IoBuffers::new(1, 512, 512, Buffers::HugePages, Content::Zeros).unwrap();
        assert!(z.slot_ptr(0) as usize % (2 << 20) == 0);
        assert_eq!(z.slot_copy(0), vec![0; 512]);
        let u = IoBuffers::new(3, 8192, 4096, Buffers::Pages, Content::Untouched).unwrap();
        assert_eq!(u.slot_copy(2), vec![0; 8192]);
    }
}
