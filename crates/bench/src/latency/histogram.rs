//! What one thread measured: the 1 us histogram with its overflow, the largest latencies with
//! their timestamps, the maximum of every window, and their merge across threads.

use super::config::Config;
use super::{NS_PER_SEC, NS_PER_US};
use serde::{Serialize, Serializer};

/// A histogram of 1 us buckets `[0, limit)` plus an overflow count. Serialised sparse
/// (`[us, count]` pairs for the non-empty buckets) so a 10 ms limit costs nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub overflow: u64,
}

impl Histogram {
    fn new(limit_us: u32) -> Self {
        let mut counts = vec![0u64; limit_us as usize];
        // Touch every page now, not during the measurement (a first-touch page fault would
        // be measured as latency when memory is not locked).
        for c in counts.iter_mut() {
            *c = std::hint::black_box(0);
        }
        Histogram {
            counts,
            overflow: 0,
        }
    }

    #[inline]
    fn add(&mut self, latency_ns: u64) {
        // cyclictest truncates to whole microseconds before bucketing.
        let us = (latency_ns / NS_PER_US) as usize;
        match self.counts.get_mut(us) {
            Some(c) => *c += 1,
            None => self.overflow += 1,
        }
    }

    /// The bucket limit in us.
    pub fn limit_us(&self) -> u32 {
        self.counts.len() as u32
    }

    /// All samples, buckets and overflow.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.overflow
    }

    /// The latency (us, bucket floor) below or at which `q` (0..=1) of the samples fall;
    /// `None` when that falls in the overflow or the histogram is empty. Unlike an HDR
    /// histogram's highest equivalent value (clamped in `bench disk`), a bucket floor needs no
    /// clamp: it is the truncated value of a sample in it, so it lies between the truncated
    /// min and max that cyclictest and headroom print.
    pub fn quantile_us(&self, q: f64) -> Option<u32> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (us, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(us as u32);
            }
        }
        None
    }

    fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.overflow += other.overflow;
    }
}

impl Serialize for Histogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let buckets: Vec<(usize, u64)> = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(us, &c)| (us, c))
            .collect();
        let mut st = s.serialize_struct("Histogram", 4)?;
        st.serialize_field("bucket_us", &1)?;
        st.serialize_field("limit_us", &self.limit_us())?;
        st.serialize_field("buckets", &buckets)?;
        st.serialize_field("overflow", &self.overflow)?;
        st.end()
    }
}

/// One of the largest latencies of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Spike {
    pub latency_ns: u64,
    /// When it happened: the programmed wake-up time, since the start of the run.
    pub at_ns: u64,
    /// The wake-up number (0-based) in its thread.
    pub cycle: u64,
    pub thread: usize,
}

/// The maximum latency of one window of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowMax {
    /// Window start, seconds since the start of the run.
    pub start_s: u64,
    pub max_ns: u64,
    pub count: u64,
}

/// The numbers of one thread, or of the whole run merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Mean of the exact (ns) latencies.
    pub avg_ns: f64,
    /// Latency of the last wake-up (cyclictest's `Act`).
    pub act_ns: u64,
    /// Wake-ups that came after the next one was already due; those periods were skipped.
    pub missed_periods: u64,
    pub histogram: Histogram,
    /// The largest latencies, largest first.
    pub largest: Vec<Spike>,
    pub window_maxima: Vec<WindowMax>,
}

/// Per-thread measuring state, allocated and touched before the run starts.
pub(super) struct Recorder {
    pub(super) thread: usize,
    pub(super) hist: Histogram,
    pub(super) count: u64,
    pub(super) sum_ns: u128,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    pub(super) act_ns: u64,
    pub(super) missed: u64,
    pub(super) largest: Vec<Spike>,
    pub(super) keep: usize,
    pub(super) windows: Vec<WindowMax>,
    pub(super) window_ns: u64,
}

impl Recorder {
    pub(super) fn new(thread: usize, cfg: &Config) -> Self {
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
            windows: Vec::with_capacity(expected),
            window_ns,
        }
    }

    #[inline]
    pub(super) fn record(&mut self, latency_ns: u64, at_ns: u64) {
        let cycle = self.count;
        self.count += 1;
        self.sum_ns += latency_ns as u128;
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.act_ns = latency_ns;
        self.hist.add(latency_ns);
        if self.keep > 0
            && (self.largest.len() < self.keep
                || self
                    .largest
                    .last()
                    .is_some_and(|s| latency_ns > s.latency_ns))
        {
            let spike = Spike {
                latency_ns,
                at_ns,
                cycle,
                thread: self.thread,
            };
            let pos = self.largest.partition_point(|s| s.latency_ns >= latency_ns);
            self.largest.insert(pos, spike);
            self.largest.truncate(self.keep);
        }
        let w = at_ns / self.window_ns.max(1);
        let start_s = w * self.window_ns / NS_PER_SEC;
        match self.windows.last_mut() {
            Some(last) if last.start_s == start_s => {
                last.max_ns = last.max_ns.max(latency_ns);
                last.count += 1;
            }
            _ => self.windows.push(WindowMax {
                start_s,
                max_ns: latency_ns,
                count: 1,
            }),
        }
    }

    pub(super) fn stats(self) -> Stats {
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
        }
    }
}

/// Merge per-thread stats into the whole run's.
pub fn merge(stats: &[&Stats], keep_largest: usize) -> Stats {
    let mut hist = Histogram {
        counts: Vec::new(),
        overflow: 0,
    };
    let mut count = 0;
    let mut sum = 0.0;
    let mut min_ns = u64::MAX;
    let mut max_ns = 0;
    let mut missed = 0;
    let mut largest: Vec<Spike> = Vec::new();
    let mut windows: std::collections::BTreeMap<u64, WindowMax> = Default::default();
    for s in stats {
        hist.merge(&s.histogram);
        count += s.count;
        sum += s.avg_ns * s.count as f64;
        if s.count > 0 {
            min_ns = min_ns.min(s.min_ns);
        }
        max_ns = max_ns.max(s.max_ns);
        missed += s.missed_periods;
        largest.extend_from_slice(&s.largest);
        for w in &s.window_maxima {
            let e = windows.entry(w.start_s).or_insert(WindowMax {
                start_s: w.start_s,
                max_ns: 0,
                count: 0,
            });
            e.max_ns = e.max_ns.max(w.max_ns);
            e.count += w.count;
        }
    }
    largest.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.at_ns.cmp(&b.at_ns)));
    largest.truncate(keep_largest);
    Stats {
        count,
        min_ns: if count == 0 { 0 } else { min_ns },
        max_ns,
        avg_ns: if count == 0 { 0.0 } else { sum / count as f64 },
        act_ns: stats.last().map_or(0, |s| s.act_ns),
        missed_periods: missed,
        histogram: hist,
        largest,
        window_maxima: windows.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::test_config as cfg;
    use super::*;
    use std::time::Duration;

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
