//! The watch of a benchmark's path (`bench disk`, `bench net`): the AER errors and link
//! changes of the PCI functions the target's I/O crossed during the run, set against the
//! bytes it moved (errors per GB), and the finding when anything happened.

use super::findings;
use model::watch::{AerSeverity, Change, DeviceSummary, WatchResult};
use model::{Finding, LinkState, Severity};
use serde::{Deserialize, Serialize};

/// The changes a benchmark's document keeps (every one is counted in its device's summary).
const KEPT_CHANGES: usize = 100;

/// What the path's watch saw during a benchmark.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathWatch {
    pub samples: u64,
    pub interval_ms: u64,
    /// The functions of the path, each with what happened to it.
    pub devices: Vec<DeviceSummary>,
    /// The first changes, as `headroom watch` prints them.
    #[serde(default)]
    pub changes: Vec<Change>,
    /// Bytes the workload read and wrote (the application's count).
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl PathWatch {
    pub fn new(result: WatchResult, read_bytes: u64, write_bytes: u64) -> PathWatch {
        PathWatch {
            samples: result.samples,
            interval_ms: result.interval_ms,
            devices: result.devices,
            changes: result.changes.into_iter().take(KEPT_CHANGES).collect(),
            read_bytes,
            write_bytes,
        }
    }

    /// AER errors of every severity on the path during the run.
    pub fn errors(&self) -> u64 {
        self.devices
            .iter()
            .map(|d| {
                AerSeverity::ALL
                    .iter()
                    .map(|s| d.errors_of(*s))
                    .sum::<u64>()
            })
            .sum()
    }

    /// Errors per GB (10^9 B) moved, when bytes moved and a function of the path counts AER
    /// errors (none counted on a path without AER counters is no rate, not zero).
    pub fn errors_per_gb(&self) -> Option<f64> {
        let bytes = self.read_bytes + self.write_bytes;
        let counted = self.errors() > 0 || self.devices.iter().any(|d| d.has_aer);
        (bytes > 0 && counted).then(|| self.errors() as f64 / (bytes as f64 / 1e9))
    }

    /// `5.2 GB of writes`, `1.0 GB of reads and writes`; below a GB in MB (`33.6 MB of
    /// writes`), which a short run moves and `0.0 GB` would hide.
    fn moved(&self) -> String {
        let what = match (self.read_bytes > 0, self.write_bytes > 0) {
            (true, true) => "reads and writes",
            (true, false) => "reads",
            _ => "writes",
        };
        let gb = (self.read_bytes + self.write_bytes) as f64 / 1e9;
        if gb < 1.0 {
            return format!("{:.1} MB of {what}", gb * 1e3);
        }
        format!("{gb:.1} GB of {what}")
    }
}

fn state(l: Option<LinkState>) -> String {
    l.map_or_else(
        || "link down".to_string(),
        |l| format!("{} x{}", l.gen.lspci_label(), l.width),
    )
}

/// The findings of a run's path: AER errors with the bytes they came with, and the watch's
/// findings for link changes and departures (said of the run).
pub fn collect(w: &PathWatch) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &w.devices {
        let total: u64 = AerSeverity::ALL.iter().map(|s| d.errors_of(*s)).sum();
        if total == 0 {
            continue;
        }
        let names: Vec<String> = d
            .errors
            .iter()
            .filter(|e| e.count > 0)
            .map(|e| format!("{} {} {}", e.count, e.severity.label(), e.error))
            .collect();
        let uncorrectable = d.errors_of(AerSeverity::Nonfatal) + d.errors_of(AerSeverity::Fatal);
        let per_gb = w
            .errors_per_gb()
            .map(|_| {
                let bytes = (w.read_bytes + w.write_bytes) as f64;
                format!(", {:.2} per GB", total as f64 / (bytes / 1e9))
            })
            .unwrap_or_default();
        let capable = match (d.errors_at.or(d.last), d.capable) {
            (Some(a), Some(c)) if a.gen < c.gen || a.width < c.width => {
                format!(" (capable {})", state(Some(c)))
            }
            _ => String::new(),
        };
        let (severity, meaning) = if uncorrectable > 0 {
            (
                Severity::Error,
                "uncorrectable errors lose data or reset the device".to_string(),
            )
        } else {
            (
                Severity::Warning,
                "the link is marginal at this speed".to_string(),
            )
        };
        out.push(
            Finding::new(
                severity,
                &d.device,
                format!(
                    "{} on {} during {} at {}{capable}{per_gb}: {meaning}",
                    names.join(", "),
                    d.device,
                    w.moved(),
                    state(d.errors_at.or(d.last)),
                ),
            )
            .with_advice(
                "Run it again one generation lower (the firmware's or the kernel's link speed \
                 setting) and compare the errors per GB; check the slot, riser or cable.",
            ),
        );
    }
    let rest = WatchResult {
        devices: w
            .devices
            .iter()
            .map(|d| DeviceSummary {
                errors: Vec::new(),
                ..d.clone()
            })
            .collect(),
        ..WatchResult::default()
    };
    out.extend(findings::collect(&rest).into_iter().map(|mut f| {
        f.message = f.message.replace("during the watch", "during the run");
        f
    }));
    out
}

/// The lines a benchmark prints under its table.
pub fn render(w: &PathWatch) -> String {
    let mut out = String::new();
    let changed: Vec<&DeviceSummary> = w.devices.iter().filter(|d| d.eventful()).collect();
    let watchable = w
        .devices
        .iter()
        .any(|d| d.has_aer || d.first.is_some() || d.capable.is_some());
    if !watchable {
        out.push_str(&format!(
            "Links: the path's {} PCI functions have no PCIe link and no AER counters to \
             watch\n",
            w.devices.len()
        ));
    } else if changed.is_empty() {
        out.push_str(&format!(
            "Links: no AER error and no link change on the path's {} PCI functions during \
             the run ({} samples)\n",
            w.devices.len(),
            w.samples
        ));
    }
    for c in &w.changes {
        out.push_str(&format!("Links: {}\n", super::text::change_line(c)));
    }
    for f in collect(w) {
        out.push_str(&format!("Links: {}\n", crate::outside::line(&f.message)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::watch::ErrorCount;

    #[test]
    fn errors_are_set_against_the_bytes_moved() {
        let w = PathWatch {
            samples: 40,
            interval_ms: 1000,
            devices: vec![DeviceSummary {
                device: "0000:00:00.0".into(),
                errors: vec![ErrorCount {
                    severity: AerSeverity::Correctable,
                    error: "RxErr".into(),
                    count: 12,
                }],
                errors_at: Some(LinkState::new(model::PcieGen::Gen3, 1)),
                capable: Some(LinkState::new(model::PcieGen::Gen3, 1)),
                present: true,
                ..DeviceSummary::default()
            }],
            changes: Vec::new(),
            read_bytes: 0,
            write_bytes: 5_200_000_000,
        };
        let f = collect(&w);
        assert_eq!(
            f[0].message,
            "12 correctable RxErr on 0000:00:00.0 during 5.2 GB of writes at 8GT/s x1, \
             2.31 per GB: the link is marginal at this speed"
        );
        assert_eq!(w.errors_per_gb().map(|v| (v * 100.0).round()), Some(231.0));
        // A short run moves less than a GB: its bytes in MB, not `0.0 GB`.
        let short = PathWatch {
            write_bytes: 33_554_432,
            ..w.clone()
        };
        assert_eq!(
            collect(&short)[0].message,
            "12 correctable RxErr on 0000:00:00.0 during 33.6 MB of writes at 8GT/s x1, \
             357.63 per GB: the link is marginal at this speed"
        );
    }

    /// A path whose functions count no AER errors (virtio, a function without the AER
    /// capability) has no error rate: none is a count the kernel never made, not zero errors.
    #[test]
    fn a_path_without_aer_counters_has_no_error_rate() {
        let function = |has_aer| DeviceSummary {
            device: "0000:00:04.0".into(),
            has_aer,
            present: true,
            ..DeviceSummary::default()
        };
        let mut w = PathWatch {
            samples: 3,
            interval_ms: 1000,
            devices: vec![function(false)],
            changes: Vec::new(),
            read_bytes: 4_000_000,
            write_bytes: 0,
        };
        assert_eq!(w.errors_per_gb(), None);
        w.devices.push(function(true));
        assert_eq!(w.errors_per_gb(), Some(0.0));
    }
}
