//! Every wake-up of every measuring thread, handed to the caller for the IRQ/thread split
//! (`Config::record_wakeups`): one single-producer, single-consumer ring per thread, written
//! by the thread after each wake-up and emptied by the caller's [`WakeupTap::drain`].
//!
//! The measuring thread never waits for the caller: it stores three words and moves its head;
//! when the ring is full (the caller fell [`CAPACITY`] wake-ups behind) the wake-up is
//! counted as dropped instead. The ring is allocated and touched before the threads are
//! released, so it is locked with the rest of their memory and costs no page fault.

use model::latency::trace::WakeUp;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// Wake-ups a thread's ring holds: 8 s at 1 kHz (24 bytes each, 192 KiB a thread); the
/// caller drains every 100 ms.
pub const CAPACITY: usize = 8192;

/// One thread's ring.
pub(super) struct Ring {
    /// (programmed, woke, cycle) of each slot.
    slots: Box<[[AtomicU64; 3]]>,
    /// Written by the thread (Release), read by the caller (Acquire).
    head: AtomicU64,
    /// Written by the caller (Release), read by the thread (Acquire).
    tail: AtomicU64,
    dropped: AtomicU64,
    tid: AtomicI32,
}

impl Ring {
    fn new() -> Ring {
        let slots: Box<[[AtomicU64; 3]]> = (0..CAPACITY)
            .map(|_| [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)])
            .collect();
        // Touch every page now (the measuring loop must not take a first-touch fault).
        for s in slots.iter() {
            s[0].store(0, Ordering::Relaxed);
        }
        Ring {
            slots,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            tid: AtomicI32::new(0),
        }
    }

    pub(super) fn set_tid(&self, tid: i32) {
        self.tid.store(tid, Ordering::Relaxed);
    }

    /// Called by the measuring thread after each wake-up; never waits.
    #[inline]
    pub(super) fn push(&self, programmed_ns: u64, woke_ns: u64, cycle: u64) {
        let head = self.head.load(Ordering::Relaxed);
        if head - self.tail.load(Ordering::Acquire) >= CAPACITY as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let s = &self.slots[(head % CAPACITY as u64) as usize];
        s[0].store(programmed_ns, Ordering::Relaxed);
        s[1].store(woke_ns, Ordering::Relaxed);
        s[2].store(cycle, Ordering::Relaxed);
        self.head.store(head + 1, Ordering::Release);
    }
}

/// The rings of a session, shared with the caller.
#[derive(Clone)]
pub struct WakeupTap {
    rings: Arc<[Ring]>,
}

impl WakeupTap {
    pub(super) fn new(threads: usize) -> WakeupTap {
        WakeupTap {
            rings: (0..threads).map(|_| Ring::new()).collect(),
        }
    }

    pub(super) fn ring(&self, thread: usize) -> Option<&Ring> {
        self.rings.get(thread)
    }

    /// Move every wake-up recorded since the last drain into `out`, each thread's in order;
    /// the wake-ups dropped since then, per thread (`(thread, count)` for those with any).
    pub fn drain(&self, out: &mut Vec<WakeUp>) -> Vec<(usize, u64)> {
        let mut dropped = Vec::new();
        for (thread, r) in self.rings.iter().enumerate() {
            let head = r.head.load(Ordering::Acquire);
            let tid = r.tid.load(Ordering::Relaxed);
            let mut tail = r.tail.load(Ordering::Relaxed);
            while tail < head {
                let s = &r.slots[(tail % CAPACITY as u64) as usize];
                out.push(WakeUp {
                    thread,
                    tid,
                    programmed_ns: s[0].load(Ordering::Relaxed),
                    woke_ns: s[1].load(Ordering::Relaxed),
                    cycle: s[2].load(Ordering::Relaxed),
                });
                tail += 1;
            }
            r.tail.store(tail, Ordering::Release);
            let d = r.dropped.swap(0, Ordering::Relaxed);
            if d > 0 {
                dropped.push((thread, d));
            }
        }
        dropped
    }

    /// The measuring threads' ids, by thread number (0 before a thread has started).
    pub fn tids(&self) -> Vec<i32> {
        self.rings
            .iter()
            .map(|r| r.tid.load(Ordering::Relaxed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_counts_what_it_drops_and_keeps_the_order() {
        let tap = WakeupTap::new(2);
        let r = tap.ring(1).unwrap();
        r.set_tid(77);
        for i in 0..(CAPACITY as u64 + 5) {
            r.push(1000 * i, 1000 * i + 7, i);
        }
        let mut out = Vec::new();
        assert_eq!(tap.drain(&mut out), vec![(1, 5)]);
        assert_eq!(out.len(), CAPACITY);
        assert_eq!(
            out[3],
            WakeUp {
                thread: 1,
                tid: 77,
                cycle: 3,
                programmed_ns: 3000,
                woke_ns: 3007
            }
        );
        assert!(out.windows(2).all(|w| w[0].cycle + 1 == w[1].cycle));
        // Drained, it takes wake-ups again; and a second drain gives only the new ones.
        r.push(1, 2, 99);
        out.clear();
        assert!(tap.drain(&mut out).is_empty());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cycle, 99);
    }

    #[test]
    fn a_concurrent_reader_sees_every_wakeup_once() {
        let tap = WakeupTap::new(1);
        let writer = tap.clone();
        let n = 100_000u64;
        let h = std::thread::spawn(move || {
            let r = writer.ring(0).unwrap();
            for i in 0..n {
                r.push(i, i + 1, i);
                if i % 1000 == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut seen = Vec::new();
        let mut dropped = 0;
        while !h.is_finished() {
            dropped += tap.drain(&mut seen).iter().map(|d| d.1).sum::<u64>();
        }
        h.join().unwrap();
        dropped += tap.drain(&mut seen).iter().map(|d| d.1).sum::<u64>();
        assert_eq!(seen.len() as u64 + dropped, n);
        assert!(seen.windows(2).all(|w| w[0].cycle < w[1].cycle));
        assert!(seen.iter().all(|w| w.woke_ns == w.programmed_ns + 1));
    }
}
