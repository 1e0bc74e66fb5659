//! Typed views of command bodies: serde structs with the fields reports read.
//!
//! Where the producer's type lives in `model` or in report itself (the path, findings, PCIe
//! link states and comparisons; bench latency's configuration, context and measurement;
//! bench net's measurement, ceiling, flows and interface check; the audit's PCI, USB, block
//! and network sections), the view holds that type: a field renamed there changes what is
//! read here, at compile time. The rest (bench disk's body, bench latency's stress) are typed
//! in bench, which report may not depend on, so their views name the fields, with
//! `#[serde(default)]` where a field is optional or missing from older documents;
//! [`unread_fields`] lists every field a view names that a document does not have, and the
//! round-trip tests (crates/cli/tests/roundtrip.rs) assert that list for freshly produced
//! documents, so a field renamed in a producer fails them.

use model::path::TargetPath;
use model::Finding;
use serde::{Deserialize, Serialize};

/// The fields view `V` reads that `doc` (a document's body) does not have, as paths
/// (`tests[].runs[].latency.p99_ns`), sorted and without repeats: where a report shows "–"
/// although the producer may have had a value under another name.
pub fn unread_fields<V: serde::de::DeserializeOwned + Serialize>(
    doc: &serde_json::Value,
) -> Result<Vec<String>, serde_json::Error> {
    use serde_json::Value;
    fn walk(view: &Value, doc: &Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
        match (view, doc) {
            (Value::Object(v), Value::Object(d)) => {
                for (k, x) in v {
                    let here = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    match d.get(k) {
                        Some(y) => walk(x, y, &here, out),
                        None => {
                            out.insert(here);
                        }
                    }
                }
            }
            (Value::Array(v), Value::Array(d)) => {
                for (x, y) in v.iter().zip(d) {
                    walk(x, y, &format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }
    let view: V = serde_json::from_value(doc.clone())?;
    let mut out = std::collections::BTreeSet::new();
    walk(&serde_json::to_value(&view)?, doc, "", &mut out);
    Ok(out.into_iter().collect())
}

/// The fields every kind may carry: findings, notes and the target's path, as the
/// producers' own model types (a field renamed there changes what is read here).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct CommonView {
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The target's path (`headroom path`'s `path` field; benches may carry the same).
    #[serde(default)]
    pub path: Option<TargetPath>,
}

/// `headroom bench disk`'s body.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
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
    /// Stopped by a signal before every test ran.
    #[serde(default)]
    pub interrupted: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct DiskParametersView {
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    /// `best` (CrystalDiskMark's habit) or `mean`: which number is the test's headline.
    #[serde(default)]
    pub shown: Option<String>,
    /// O_DIRECT (true) or buffered.
    #[serde(default)]
    pub direct: Option<bool>,
    #[serde(default)]
    pub size_bytes: Option<u64>,
    #[serde(default)]
    pub runs: Option<u32>,
    #[serde(default)]
    pub runtime_s: Option<f64>,
    #[serde(default)]
    pub ramp_s: Option<f64>,
    #[serde(default)]
    pub pause_s: Option<f64>,
    #[serde(default)]
    pub time_based: Option<bool>,
    #[serde(default)]
    pub fsync_end: Option<bool>,
    #[serde(default)]
    pub zero_buffers: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct DiskSystemView {
    #[serde(default)]
    pub kernel: Option<String>,
    /// The CPU frequency governor(s) during the run, when the bench records it.
    #[serde(default)]
    pub governor: Option<String>,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub cpus: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct DiskTargetView {
    #[serde(default)]
    pub given: Option<String>,
    /// The file or device the tests read and wrote.
    #[serde(default)]
    pub file: Option<String>,
    /// `new_file`, `existing_file`, `block_device`...
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub device: Option<DiskDeviceView>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct DiskDeviceView {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub major: Option<u32>,
    #[serde(default)]
    pub minor: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct DiskCeilingView {
    /// Device towards the CPU (what a read from the disk moves), bytes/s.
    pub read_bytes_per_sec: f64,
    /// CPU towards the device (what a write moves), bytes/s.
    pub write_bytes_per_sec: f64,
    pub bottleneck: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
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

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct DiskSpecView {
    pub label: String,
    #[serde(default)]
    pub workload: Option<WorkloadView>,
    #[serde(default)]
    pub block_size: Option<u64>,
    #[serde(default)]
    pub queue_depth: Option<u32>,
    #[serde(default)]
    pub jobs: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct WorkloadView {
    #[serde(default)]
    pub read_percent: Option<u8>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct DiskRunView {
    /// MB/s = 10^6 B/s.
    pub mb_per_s: f64,
    #[serde(default)]
    pub iops: Option<f64>,
    /// CPU time (user + system) per I/O, us.
    #[serde(default)]
    pub cpu_us_per_io: Option<f64>,
    /// Submission to completion (fio's lat).
    #[serde(default)]
    pub latency: Option<DiskLatencyView>,
    #[serde(default)]
    pub cross_check: Option<CrossCheckView>,
}

/// `bench::disk::Latency`, nanoseconds.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct DiskLatencyView {
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    #[serde(default)]
    pub p90_ns: Option<u64>,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub max_ns: u64,
}

/// The kernel's count of the same bytes, as (kernel − engine) / engine in percent.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
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

/// `headroom bench latency`'s body: its configuration and measurement as `model::latency`
/// types, its context as `model::system`'s.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct LatencyView {
    #[serde(default)]
    pub config: Option<model::latency::Config>,
    #[serde(default)]
    pub context: Option<model::system::SystemContext>,
    pub measurement: model::latency::Measurement,
    /// Device interrupts on the measured CPUs during the measurement (absent in documents
    /// written before they were sampled).
    #[serde(default)]
    pub interrupts: Option<model::latency::MeasuredInterrupts>,
    /// The background load; absent or null when the run had none.
    #[serde(default)]
    pub stress: Option<StressView>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct StressView {
    pub spec: StressSpecView,
}

/// `bench::stress::StressSpec`: worker counts as `--stress` takes them.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct StressSpecView {
    #[serde(default)]
    pub cpu: u32,
    #[serde(default)]
    pub cpu_load: Option<u32>,
    #[serde(default)]
    pub io: u32,
    #[serde(default)]
    pub vm: u32,
    #[serde(default)]
    pub vm_bytes_per_worker: u64,
}

impl StressSpecView {
    /// The load in `--stress` syntax (`cpu=2,io=1,vm=1,vm-bytes=4M`), which a user can paste
    /// back; `none` without workers.
    pub fn spec(&self) -> String {
        let mut parts = Vec::new();
        if self.cpu > 0 {
            parts.push(format!("cpu={}", self.cpu));
            if let Some(l) = self.cpu_load.filter(|&l| l < 100) {
                parts.push(format!("cpu-load={l}"));
            }
        }
        if self.io > 0 {
            parts.push(format!("io={}", self.io));
        }
        if self.vm > 0 {
            parts.push(format!("vm={}", self.vm));
            // vm-bytes is the total, divided across the workers (stress-ng's meaning).
            let total = self.vm_bytes_per_worker * u64::from(self.vm);
            // In the flag's own spelling: 4M = 4 MiB, as stress-ng reads it.
            let size = model::units::format_bytes_binary(total)
                .replace(" B", "")
                .replace("iB", "")
                .replace(' ', "");
            parts.push(format!("vm-bytes={size}"));
        }
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(",")
        }
    }
}

/// `headroom audit`'s body: the inventory a report lists link by link, as
/// `model::inventory`'s types.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct AuditView {
    #[serde(default)]
    pub pci: Option<model::inventory::pci::PciAudit>,
    #[serde(default)]
    pub usb: Option<model::inventory::usb::UsbInventory>,
    #[serde(default)]
    pub block: Option<model::inventory::block::BlockInventory>,
    #[serde(default)]
    pub net: Option<model::inventory::net::NetInventory>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn disk_test_names_follow_the_bench() {
        let t: DiskTestView = serde_json::from_str(
            r#"{"spec": {"label": "SEQ1M Q8T1", "workload": {"pattern": "sequential", "read_percent": 0}}, "runs": []}"#,
        )
        .unwrap();
        assert_eq!(t.name(), "SEQ1M Q8T1 write");
    }

    #[test]
    fn a_field_renamed_by_its_producer_is_listed_as_unread() {
        let doc = serde_json::json!({
            "tests": [{
                "spec": {"label": "RND4K Q32T1", "workload": {"read_percent": 100},
                         "block_size": 4096, "queue_depth": 32, "jobs": 1},
                "runs": [],
                "mean_mb_per_sec": 12.5,
                "best_run": 0,
                "efficiency": null
            }],
            "interrupted": false
        });
        let unread = unread_fields::<DiskView>(&doc).unwrap();
        assert!(
            unread.contains(&"tests[].mean_mb_per_s".to_string()),
            "{unread:?}"
        );
        // Fields the document has, null ones included, are read.
        assert!(!unread
            .iter()
            .any(|f| f.contains("efficiency") || f.contains("spec")));
        assert!(unread.contains(&"parameters".to_string()), "{unread:?}");
    }
}

/// `headroom bench net`'s body (`report::net::NetReport`): the measurement as
/// `model::net::NetMeasurement`, the ceiling, flows and interface check as report::net's
/// own types.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct NetView {
    pub measurement: model::net::NetMeasurement,
    #[serde(default)]
    pub ceiling: Option<crate::net::NetCeiling>,
    #[serde(default)]
    pub no_ceiling_reason: Option<String>,
    #[serde(default)]
    pub flows: Vec<crate::net::FlowVerdict>,
    #[serde(default)]
    pub interface_check: Option<crate::net::InterfaceCheck>,
}
