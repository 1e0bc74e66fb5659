//! Typed views of command bodies: serde structs with only the fields reports read.
//!
//! Producers (`bench disk`, `bench latency`, `path`, `audit`) own their full types; a view
//! names the few fields a report, compare or the history needs, with `#[serde(default)]`
//! where a field may be absent, so a producer adding fields never breaks a reader and a
//! field renamed at merge time is fixed here, in one place.

use serde::Deserialize;

/// One finding, as `model::Finding` writes it (`Info`) or as a bench writes it (`info`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct FindingView {
    pub severity: String,
    #[serde(default)]
    pub subject: Option<String>,
    pub message: String,
    #[serde(default)]
    pub advice: Option<String>,
}

/// The fields every kind may carry: findings, notes and the target's path.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CommonView {
    #[serde(default)]
    pub findings: Vec<FindingView>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The target's path (`headroom path`'s `path` field; benches may carry the same).
    #[serde(default)]
    pub path: Option<PathView>,
}

/// `probe::path::TargetPath`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PathView {
    #[serde(default)]
    pub chain: Option<ChainView>,
    #[serde(default)]
    pub links: Vec<LinkView>,
    #[serde(default)]
    pub bottleneck: Option<usize>,
    #[serde(default)]
    pub no_bottleneck_reason: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ChainView {
    #[serde(default)]
    pub target: Option<String>,
}

/// `probe::path::PathLink`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct LinkView {
    pub kind: String,
    pub name: String,
    pub state: String,
    #[serde(default)]
    pub capable_state: Option<String>,
    /// Bytes per second towards the CPU.
    pub ceiling_bps: f64,
    #[serde(default)]
    pub capable_ceiling_bps: Option<f64>,
    #[serde(default)]
    pub basis: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// `headroom bench disk`'s body.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DiskView {
    #[serde(default)]
    pub parameters: Option<DiskParametersView>,
    #[serde(default)]
    pub system: Option<DiskSystemView>,
    #[serde(default)]
    pub target: Option<DiskTargetView>,
    #[serde(default)]
    pub ceiling: Option<DiskCeilingView>,
    #[serde(default)]
    pub tests: Vec<DiskTestView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DiskParametersView {
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    /// `best` (CrystalDiskMark's habit) or `mean`: which number is the test's headline.
    #[serde(default)]
    pub shown: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DiskSystemView {
    #[serde(default)]
    pub kernel: Option<String>,
    /// The CPU frequency governor(s) during the run, when the bench records it.
    #[serde(default)]
    pub governor: Option<String>,
    #[serde(default)]
    pub hostname: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DiskTargetView {
    #[serde(default)]
    pub given: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct DiskCeilingView {
    /// Device towards the CPU (what a read from the disk moves), bytes/s.
    pub read_bytes_per_sec: f64,
    /// CPU towards the device (what a write moves), bytes/s.
    pub write_bytes_per_sec: f64,
    pub bottleneck: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct DiskTestView {
    pub spec: DiskSpecView,
    #[serde(default)]
    pub runs: Vec<DiskRunView>,
    #[serde(default)]
    pub mean_mb_per_s: Option<f64>,
    #[serde(default)]
    pub best_run: usize,
    #[serde(default)]
    pub efficiency: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct DiskSpecView {
    pub label: String,
    #[serde(default)]
    pub workload: Option<WorkloadView>,
    #[serde(default)]
    pub block_size: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct WorkloadView {
    #[serde(default)]
    pub read_percent: Option<u8>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct DiskRunView {
    /// MB/s = 10^6 B/s.
    pub mb_per_s: f64,
    #[serde(default)]
    pub cross_check: Option<CrossCheckView>,
}

/// The kernel's count of the same bytes, as (kernel − engine) / engine in percent.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CrossCheckView {
    /// `/proc/self/io`: this process's bytes only.
    #[serde(default)]
    pub proc_io_error_percent: Option<f64>,
    /// `/proc/diskstats`: every process's bytes to the device.
    #[serde(default)]
    pub diskstats_error_percent: Option<f64>,
}

impl DiskTestView {
    /// `SEQ1M Q8T1 read`: the label and the direction, as the disk bench names a test.
    pub fn name(&self) -> String {
        match self.direction() {
            Some(d) => format!("{} {d}", self.spec.label),
            None => self.spec.label.clone(),
        }
    }

    /// `read`, `write` or `mix 70% read`, as the disk bench words it.
    pub fn direction(&self) -> Option<String> {
        self.workload()
            .and_then(|w| w.read_percent)
            .map(|p| match p {
                100 => "read".to_string(),
                0 => "write".to_string(),
                p => format!("mix {p}% read"),
            })
    }

    /// The share of reads in percent (100 when the document does not say).
    pub fn read_percent(&self) -> u8 {
        self.workload().and_then(|w| w.read_percent).unwrap_or(100)
    }

    fn workload(&self) -> Option<&WorkloadView> {
        self.spec.workload.as_ref()
    }
}

/// `headroom bench latency`'s body.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LatencyView {
    #[serde(default)]
    pub config: Option<LatencyConfigView>,
    #[serde(default)]
    pub context: Option<LatencyContextView>,
    pub measurement: LatencyMeasurementView,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct LatencyConfigView {
    #[serde(default)]
    pub interval_us: Option<u64>,
    #[serde(default)]
    pub priority: Option<i64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct LatencyContextView {
    #[serde(default)]
    pub kernel: Option<LatencyKernelView>,
    #[serde(default)]
    pub cpufreq: Vec<CpuFreqView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct LatencyKernelView {
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub preemption: Option<PreemptionView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct PreemptionView {
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct CpuFreqView {
    pub cpu: u32,
    #[serde(default)]
    pub governor: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct LatencyMeasurementView {
    #[serde(default)]
    pub threads: Vec<LatencyThreadView>,
    #[serde(default)]
    pub total: Option<LatencyStatsView>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct LatencyThreadView {
    pub thread: u32,
    #[serde(default)]
    pub cpu: Option<u32>,
    #[serde(default)]
    pub interval_us: Option<u64>,
    pub stats: LatencyStatsView,
}

#[derive(Clone, Debug, Deserialize)]
pub struct LatencyStatsView {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub avg_ns: f64,
    #[serde(default)]
    pub missed_periods: u64,
    #[serde(default)]
    pub histogram: HistogramView,
}

/// cyclictest's histogram: 1 µs buckets, only the non-empty ones as `[µs, count]` pairs, and
/// the samples above the limit in `overflow`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct HistogramView {
    #[serde(default)]
    pub buckets: Vec<(u32, u64)>,
    #[serde(default)]
    pub overflow: u64,
}

impl HistogramView {
    /// The latency (µs, bucket floor) at or below which `q` (0..=1) of the samples fall,
    /// counting the overflow as samples (as the latency bench does); `None` when that rank
    /// falls in the overflow or there are no samples.
    pub fn quantile_us(&self, q: f64) -> Option<u32> {
        let total: u64 = self.buckets.iter().map(|b| b.1).sum::<u64>() + self.overflow;
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut sorted = self.buckets.clone();
        sorted.sort_unstable_by_key(|b| b.0);
        let mut seen = 0;
        for (us, c) in sorted {
            seen += c;
            if seen >= rank {
                return Some(us);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn quantile_counts_the_overflow() {
        let h = HistogramView {
            buckets: vec![(5, 98), (7, 1)],
            overflow: 1,
        };
        assert_eq!(h.quantile_us(0.5), Some(5));
        assert_eq!(h.quantile_us(0.99), Some(7));
        assert_eq!(
            h.quantile_us(0.999),
            None,
            "the last sample is in the overflow"
        );
        assert_eq!(HistogramView::default().quantile_us(0.99), None);
    }

    #[test]
    fn disk_test_names_follow_the_bench() {
        let t: DiskTestView = serde_json::from_str(
            r#"{"spec": {"label": "SEQ1M Q8T1", "workload": {"pattern": "sequential", "read_percent": 0}}, "runs": []}"#,
        )
        .unwrap();
        assert_eq!(t.name(), "SEQ1M Q8T1 write");
    }
}

/// `headroom bench net`'s body (`report::net::NetReport`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetView {
    #[serde(default)]
    pub measurement: NetMeasurementView,
    #[serde(default)]
    pub ceiling: Option<NetCeilingView>,
    #[serde(default)]
    pub no_ceiling_reason: Option<String>,
    #[serde(default)]
    pub flows: Vec<NetFlowView>,
    #[serde(default)]
    pub interface_check: Option<NetInterfaceCheckView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetMeasurementView {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub peer: Option<String>,
    #[serde(default)]
    pub interface: Option<String>,
    #[serde(default)]
    pub config: NetConfigView,
    #[serde(default)]
    pub streams: Vec<NetStreamView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetConfigView {
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub direction: Option<String>,
    #[serde(default)]
    pub streams: Option<u32>,
    #[serde(default)]
    pub len: Option<u64>,
    #[serde(default)]
    pub bitrate_bps: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetStreamView {
    pub flow: String,
    #[serde(default)]
    pub intervals: Vec<NetIntervalView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetIntervalView {
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetCeilingView {
    /// Application bytes per second.
    pub goodput_bps: f64,
    #[serde(default)]
    pub basis: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetFlowView {
    pub flow: String,
    #[serde(default)]
    pub summary: NetFlowSummaryView,
    #[serde(default)]
    pub efficiency: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetFlowSummaryView {
    /// Bits per second.
    #[serde(default)]
    pub receiver_bps: Option<f64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct NetInterfaceCheckView {
    pub interface: String,
    #[serde(default)]
    pub overhead: Option<f64>,
}
