//! What a run measured, recorded here and summarized into `model::disk`'s types (the
//! document's latency summaries, cross-check, runs, tests and the whole `bench disk`
//! result live in model, where report reads them back).

use hdrhistogram::Histogram;
use model::disk::{DirectionDetail, Latency, LatencyDetail, Moments};
use std::time::Duration;

/// Latencies of one job or one run: an HDR histogram with the exact min and max.
pub(super) struct LatencyRecorder {
    pub(super) hist: Histogram<u64>,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    /// Exact count, mean and spread (fio's N, mean, stddev).
    pub(super) moments: Moments,
}

impl LatencyRecorder {
    pub(super) fn new() -> LatencyRecorder {
        LatencyRecorder {
            hist: Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds"),
            min_ns: u64::MAX,
            max_ns: 0,
            moments: Moments::default(),
        }
    }

    pub(super) fn record(&mut self, d: Duration) {
        let ns = d.as_nanos().min(HIST_MAX_NS as u128) as u64;
        self.hist.saturating_record(ns.max(1));
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.moments.add(ns);
    }

    pub(super) fn add(&mut self, other: &LatencyRecorder) {
        // Both histograms have the same bounds: adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.moments.merge(&other.moments);
    }

    /// The moments and the non-empty buckets (each at its highest equivalent value).
    pub(super) fn detail(&self) -> LatencyDetail {
        LatencyDetail {
            moments: self.moments,
            buckets: self
                .hist
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    pub(super) fn summary(&self) -> Latency {
        latency_from_histogram(&self.hist, self.min_ns, self.max_ns)
    }
}

/// What one direction (reads or writes) of a job or a run measured.
pub(super) struct DirectionRecorder {
    pub(super) lat: LatencyRecorder,
    pub(super) clat: LatencyRecorder,
    pub(super) slat: Moments,
    pub(super) ios: u64,
    pub(super) bytes: u64,
}

impl DirectionRecorder {
    pub(super) fn new() -> DirectionRecorder {
        DirectionRecorder {
            lat: LatencyRecorder::new(),
            clat: LatencyRecorder::new(),
            slat: Moments::default(),
            ios: 0,
            bytes: 0,
        }
    }

    /// One measured I/O of `bytes`: begun at `issued`, taken by the kernel at `submitted`
    /// (the same instant for a synchronous engine, which has no separate submission: no slat,
    /// as fio's sync engines), seen complete at `done`.
    #[inline]
    pub(super) fn record(
        &mut self,
        issued: std::time::Instant,
        submitted: std::time::Instant,
        done: std::time::Instant,
        bytes: u64,
    ) {
        self.lat.record(done - issued);
        self.clat.record(done.saturating_duration_since(submitted));
        if submitted != issued {
            self.slat
                .add(submitted.saturating_duration_since(issued).as_nanos() as u64);
        }
        self.ios += 1;
        self.bytes += bytes;
    }

    pub(super) fn add(&mut self, o: &DirectionRecorder) {
        self.lat.add(&o.lat);
        self.clat.add(&o.clat);
        self.slat.merge(&o.slat);
        self.ios += o.ios;
        self.bytes += o.bytes;
    }

    pub(super) fn detail(&self) -> DirectionDetail {
        DirectionDetail {
            ios: self.ios,
            bytes: self.bytes,
            slat: self.slat,
            clat: self.clat.detail(),
            lat: self.lat.detail(),
        }
    }
}

/// The summary of a histogram whose exact extremes are `min` and `max`, ns.
fn latency_from_histogram(h: &Histogram<u64>, min: u64, max: u64) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    // hdrhistogram answers a quantile with the highest value equivalent to its bucket
    // (up to 0.1 % above the samples at 3 significant digits), so a p99.9 could read
    // above the exact max (813.1 vs 812.6 us) or a p50 of one sample above it. No sample
    // lies outside [min, max]: clamped to the exact extremes kept beside the histogram.
    Latency {
        min_ns: min,
        mean_ns: h.mean(),
        p50_ns: h.value_at_quantile(0.50),
        p90_ns: h.value_at_quantile(0.90),
        p99_ns: h.value_at_quantile(0.99),
        p99_9_ns: h.value_at_quantile(0.999),
        max_ns: max,
    }
    .clamped()
}

/// (kernel − engine) / engine in percent; `None` when the engine moved nothing.
pub(super) fn error_percent(kernel: u64, app: u64) -> Option<f64> {
    (app > 0).then(|| (kernel as f64 - app as f64) / app as f64 * 100.0)
}

/// Latencies above one hour are clamped (a run never lasts that long).
const HIST_MAX_NS: u64 = 3_600_000_000_000;

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    #[test]
    fn percentiles_stay_within_min_and_max() {
        // "p50 166.1 vs max 166.0". One sample of 166.05 us: its HDR bucket's
        // highest equivalent value lies above it.
        let mut r = LatencyRecorder::new();
        r.record(Duration::from_nanos(166_050));
        let l = r.summary();
        assert_eq!((l.min_ns, l.max_ns), (166_050, 166_050));
        for p in [l.p50_ns, l.p90_ns, l.p99_ns, l.p99_9_ns] {
            assert_eq!(p, 166_050);
        }
        // Many samples: every percentile within the exact min and max, and ordered.
        let mut r = LatencyRecorder::new();
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            r.record(Duration::from_nanos(800_000 + rng.below(12_600)));
        }
        let l = r.summary();
        let ps = [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.p99_9_ns, l.max_ns];
        assert!(ps.windows(2).all(|w| w[0] <= w[1]), "{ps:?}");
    }
}
