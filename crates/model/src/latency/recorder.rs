//! What one measuring thread records: the 1 us histogram with its overflow, the largest
//! latencies with their timestamps and the maximum of every window, summarized into
//! [`Stats`] (whose merge across threads is [`super::merge`]). Both engines fill it: the
//! timer loop (`bench::latency`) wake-up by wake-up, and the kernel's timerlat tracer's
//! samples ([`super::timerlat`]).

use super::{Config, Histogram, Spike, Stats, WindowMax};

const NS_PER_SEC: u64 = 1_000_000_000;

/// Per-thread measuring state, allocated and touched before the run starts.
pub struct Recorder {
    thread: usize,
    hist: Histogram,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    act_ns: u64,
    missed: u64,
    largest: Vec<Spike>,
    keep: usize,
    /// The smallest of `largest` once it holds `keep`: what a wake-up must exceed to enter
    /// it (compared without reading the list, whose cache line a wake-up after a sleep
    /// would have to fetch).
    largest_floor: u64,
    /// The finished windows; the current one is `window`.
    windows: Vec<WindowMax>,
    window: Option<WindowMax>,
    /// The `at_ns` range of the current window (`at_ns / window_ns` the same): inside it a
    /// wake-up updates `window` with no division.
    window_at: std::ops::Range<u64>,
    window_ns: u64,
    /// The first wake-ups at or above the histogram's limit (their cycle numbers), as many as
    /// the histogram has buckets: cyclictest's outliers.
    overflow_cycles: Vec<u64>,
    /// The histogram's limit in ns: a wake-up at or above it overflows.
    overflow_ns: u64,
}

impl Recorder {
    /// Thread `thread`'s recorder for a run of `cfg`, every page it will write touched.
    pub fn new(thread: usize, cfg: &Config) -> Self {
        let window_ns = cfg.window.as_nanos() as u64;
        // Pre-size the window list for the whole run so no allocation happens in the loop.
        let expected = cfg
            .limits
            .duration
            .map(|d| (d.as_nanos() as u64 / window_ns.max(1)) as usize + 2)
            .unwrap_or(16)
            .min(1 << 20);
        Recorder {
            thread,
            hist: Histogram::new(cfg.histogram_limit_us),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            act_ns: 0,
            missed: 0,
            largest: Vec::with_capacity(cfg.keep_largest + 1),
            keep: cfg.keep_largest,
            largest_floor: 0,
            windows: Vec::with_capacity(expected),
            window: None,
            window_at: 0..0,
            window_ns,
            // Room for the usual few without an allocation in the loop.
            overflow_cycles: Vec::with_capacity((cfg.histogram_limit_us as usize).min(4096)),
            overflow_ns: u64::from(cfg.histogram_limit_us) * 1000,
        }
    }

    /// One wake-up `latency_ns` late, programmed `at_ns` after the start of the run.
    #[inline]
    pub fn record(&mut self, latency_ns: u64, at_ns: u64) {
        let cycle = self.count;
        self.count += 1;
        self.sum_ns += latency_ns as u128;
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.act_ns = latency_ns;
        self.hist.add(latency_ns);
        if latency_ns >= self.overflow_ns {
            self.add_overflow(cycle);
        }
        if self.keep > 0 && (self.largest.len() < self.keep || latency_ns > self.largest_floor) {
            self.add_largest(latency_ns, at_ns, cycle);
        }
        match &mut self.window {
            Some(w) if self.window_at.contains(&at_ns) => {
                w.max_ns = w.max_ns.max(latency_ns);
                w.count += 1;
            }
            _ => self.next_window(latency_ns, at_ns),
        }
    }

    #[cold]
    fn add_largest(&mut self, latency_ns: u64, at_ns: u64, cycle: u64) {
        let spike = Spike {
            latency_ns,
            at_ns,
            cycle,
            thread: self.thread,
        };
        let pos = self.largest.partition_point(|s| s.latency_ns >= latency_ns);
        self.largest.insert(pos, spike);
        self.largest.truncate(self.keep);
        if self.largest.len() == self.keep {
            self.largest_floor = self.largest.last().map_or(0, |s| s.latency_ns);
        }
    }

    /// cyclictest keeps the cycle numbers of as many overflows as the histogram has buckets
    /// (`stat->outliers`); the rest it counts as `others`.
    #[cold]
    fn add_overflow(&mut self, cycle: u64) {
        if self.overflow_cycles.len() < self.hist.limit_us() as usize {
            self.overflow_cycles.push(cycle);
        }
    }

    /// A wake-up outside the current window's range: the window it falls in (the current
    /// one again when both start in the same second, as windows under a second do).
    #[cold]
    fn next_window(&mut self, latency_ns: u64, at_ns: u64) {
        let window_ns = self.window_ns.max(1);
        let w = at_ns / window_ns;
        let start_s = w * window_ns / NS_PER_SEC;
        self.window_at = w * window_ns..(w + 1).saturating_mul(window_ns);
        match &mut self.window {
            Some(cur) if cur.start_s == start_s => {
                cur.max_ns = cur.max_ns.max(latency_ns);
                cur.count += 1;
            }
            cur => {
                if let Some(done) = cur.replace(WindowMax {
                    start_s,
                    max_ns: latency_ns,
                    count: 1,
                }) {
                    self.windows.push(done);
                }
            }
        }
    }

    /// Wake-ups recorded.
    #[inline]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest latency so far (`u64::MAX` before the first).
    #[inline]
    pub fn min_ns(&self) -> u64 {
        self.min_ns
    }

    #[inline]
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// A period skipped because its wake-up came after the next one was due.
    #[inline]
    pub fn add_missed(&mut self) {
        self.missed += 1;
    }

    pub fn stats(mut self) -> Stats {
        self.windows.extend(self.window.take());
        Stats {
            count: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
            avg_ns: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64
            },
            act_ns: self.act_ns,
            missed_periods: self.missed,
            histogram: self.hist,
            largest: self.largest,
            window_maxima: self.windows,
            overflow_cycles: self.overflow_cycles,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{merge, Limits, NS_PER_US};
    use super::*;
    use std::time::Duration;

    /// 200 loops, no duration.
    fn cfg() -> Config {
        Config {
            limits: Limits {
                duration: None,
                loops: Some(200),
            },
            ..Config::default()
        }
    }

    #[test]
    fn quantiles_lie_between_the_printed_min_and_max() {
        let mut h = Histogram::new(1000);
        let (mut min, mut max) = (u64::MAX, 0);
        for i in 0..5000u64 {
            let ns = 165_999 + (i * 7919) % 647_000;
            h.add(ns);
            min = min.min(ns);
            max = max.max(ns);
        }
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let p = u64::from(h.quantile_us(q).unwrap());
            assert!(
                (min / NS_PER_US..=max / NS_PER_US).contains(&p),
                "q {q}: {p} outside {min}..{max} ns"
            );
        }
    }

    #[test]
    fn histogram_quantiles_and_overflow() {
        let mut h = Histogram::new(10);
        for ns in [1_500, 1_999, 2_000, 9_999, 10_000, 50_000] {
            h.add(ns);
        }
        assert_eq!(h.counts[1], 2); // truncated like cyclictest
        assert_eq!(h.counts[2], 1);
        assert_eq!(h.counts[9], 1);
        assert_eq!(h.overflow, 2);
        assert_eq!(h.total(), 6);
        assert_eq!(h.quantile_us(0.5), Some(2));
        assert_eq!(h.quantile_us(0.99), None, "p99 is in the overflow");
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json["buckets"], serde_json::json!([[1, 2], [2, 1], [9, 1]]));
        assert_eq!(json["overflow"], 2);
    }

    /// cyclictest's outliers: the cycle numbers (0-based) of the first overflows, as many as
    /// the histogram has buckets; the rest only counted.
    #[test]
    fn the_first_overflows_keep_their_cycle_numbers() {
        let c = Config {
            histogram_limit_us: 3,
            ..cfg()
        };
        let mut r = Recorder::new(0, &c);
        // 2_999 ns is bucket 2 (no overflow); 3_000 ns is the first overflow.
        for (i, ns) in [1_000, 2_999, 3_000, 500, 9_000, 40_000, 3_500, 7_000]
            .into_iter()
            .enumerate()
        {
            r.record(ns, i as u64 * 1000);
        }
        let s = r.stats();
        assert_eq!(s.histogram.overflow, 5);
        assert_eq!(s.overflow_cycles, [2, 4, 5]);
        // Kept in the document of the thread, not in the merged total.
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["overflow_cycles"], serde_json::json!([2, 4, 5]));
        assert!(merge(&[&s], 1).overflow_cycles.is_empty());
    }

    #[test]
    fn recorder_keeps_largest_and_windows() {
        let c = Config {
            keep_largest: 3,
            window: Duration::from_secs(60),
            ..cfg()
        };
        let mut r = Recorder::new(0, &c);
        let minute = 60 * NS_PER_SEC;
        for (lat, at) in [
            (5, 0),
            (90, 10),
            (7, minute),
            (300, minute + 1),
            (40, 3 * minute),
        ] {
            r.record(lat * NS_PER_US, at);
        }
        let s = r.stats();
        let l: Vec<u64> = s.largest.iter().map(|x| x.latency_ns / NS_PER_US).collect();
        assert_eq!(l, vec![300, 90, 40]);
        assert_eq!(s.largest[0].at_ns, minute + 1);
        assert_eq!(s.largest[0].cycle, 3);
        let w: Vec<(u64, u64)> = s
            .window_maxima
            .iter()
            .map(|w| (w.start_s, w.max_ns / NS_PER_US))
            .collect();
        assert_eq!(w, vec![(0, 90), (60, 300), (180, 40)]);
        assert_eq!(s.count, 5);
        assert_eq!(s.min_ns, 5_000);
    }

    /// Windows under a second are keyed by the second they start in, as before the current
    /// window was kept apart: 0 and 0.6 s share second 0.
    #[test]
    fn windows_under_a_second_share_the_second_they_start_in() {
        let c = Config {
            keep_largest: 2,
            window: Duration::from_millis(500),
            ..cfg()
        };
        let mut r = Recorder::new(0, &c);
        let ms = NS_PER_SEC / 1000;
        for (lat, at) in [
            (5, 0),
            (9, 100 * ms),
            (7, 600 * ms),
            (4, 1_200 * ms),
            (8, 1_300 * ms),
        ] {
            r.record(lat * NS_PER_US, at);
        }
        let s = r.stats();
        let w: Vec<(u64, u64, u64)> = s
            .window_maxima
            .iter()
            .map(|w| (w.start_s, w.max_ns / NS_PER_US, w.count))
            .collect();
        assert_eq!(w, vec![(0, 9, 3), (1, 8, 2)]);
        let l: Vec<u64> = s.largest.iter().map(|x| x.latency_ns / NS_PER_US).collect();
        assert_eq!(l, vec![9, 8]);
    }

    #[test]
    fn merge_sums_counts() {
        let c = cfg();
        let mut a = Recorder::new(0, &c);
        let mut b = Recorder::new(1, &c);
        a.record(3_000, 0);
        a.record(5_000, 1);
        b.record(20_000_000, 0); // above the 10 ms limit
        let (a, b) = (a.stats(), b.stats());
        let m = merge(&[&a, &b], 10);
        assert_eq!(m.count, 3);
        assert_eq!(m.histogram.total(), 3);
        assert_eq!(m.histogram.overflow, 1);
        assert_eq!((m.min_ns, m.max_ns), (3_000, 20_000_000));
        assert_eq!(m.largest[0].thread, 1);
    }
}
