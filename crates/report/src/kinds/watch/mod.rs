//! Kind `watch` (`headroom watch`): link health over time. The document (every change with
//! what it cost the paths through the device, a summary per device, the timeline), the
//! summary every renderer reads, and the run's metrics for node_exporter's textfile
//! collector.

/// The watch of a benchmark's path: errors per GB moved, and its findings.
pub mod beside;
/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text: one line per change, the summary per device.
pub mod text;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::openmetrics::{Def, Metrics};
use crate::summary::{CounterRow, RateSeries, Summary};
use crate::table::Table;
use model::inventory::pci::address::PciAddress;
use model::watch::{AerSeverity, WatchResult, Watcher};
use model::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `headroom watch --json` writes (the envelope aside), read back by report, compare and
/// history.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatchDocument {
    pub parameters: Parameters,
    #[serde(flatten)]
    pub result: WatchResult,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Stopped by SIGINT or SIGTERM before `--for` ran out.
    #[serde(default)]
    pub interrupted: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Parameters {
    pub interval_ms: u64,
    /// `--for`, when given.
    pub for_ms: Option<u64>,
    /// The targets whose paths were watched (none: every device).
    #[serde(default)]
    pub targets: Vec<String>,
    pub root: PathBuf,
    /// The kernel's event source for link changes between samples, when it has one.
    #[serde(default)]
    pub link_events: Option<String>,
}

/// The run's facts for every renderer: the devices' counts as counters (compare and the
/// history line them up), the summary table, the findings and notes (added by
/// [`super::summarize`]).
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let w = <WatchDocument as super::KindDocument>::read(doc, origin)?;
    if !w.parameters.targets.is_empty() {
        s.target = Some(w.parameters.targets.join(" "));
    }
    s.context.push((
        "Watched".into(),
        text::duration(&w.result, w.parameters.interval_ms),
    ));
    for d in w.result.devices.iter().filter(|d| d.eventful()) {
        let mut row = |what: &str, value: u64| {
            if value > 0 {
                s.counters.push(CounterRow {
                    name: format!("{what} of {}", d.device),
                    value: Some(value as f64),
                    unit: String::new(),
                    running_percent: None,
                    status: "counted".into(),
                });
            }
        };
        row("link changes", d.link_changes);
        for sev in AerSeverity::ALL {
            row(&format!("{} AER errors", sev.label()), d.errors_of(sev));
        }
        row("departures", d.departures);
        row("carrier changes", d.carrier_changes);
    }
    // The HTML report's plot over time: the link ceiling of each function whose link changed.
    let start = w.result.timeline.first().map_or(0, |p| p.at_ms);
    let end_s = w.result.duration_ms as f64 / 1000.0;
    for d in w.result.devices.iter().filter(|d| d.link_changes > 0) {
        let mut points: Vec<(f64, f64)> = Vec::new();
        for p in w.result.timeline.iter().filter(|p| p.device == d.device) {
            let (Some(v), t) = (p.ceiling_bytes_per_sec, (p.at_ms - start) as f64 / 1000.0) else {
                continue;
            };
            if let Some(&(_, before)) = points.last() {
                points.push((t, before));
            }
            points.push((t, v / model::units::MB));
        }
        if let Some(&(_, last)) = points.last() {
            points.push((end_s, last));
            s.series.push(RateSeries {
                name: format!("{} link ceiling", d.device),
                points,
            });
        }
    }
    // Beside it: the errors counted since the watch began, by device and severity.
    for d in &w.result.devices {
        for (i, sev) in AerSeverity::ALL.into_iter().enumerate() {
            if d.errors_of(sev) == 0 {
                continue;
            }
            let mut points: Vec<(f64, f64)> = Vec::new();
            for p in w.result.timeline.iter().filter(|p| p.device == d.device) {
                let t = (p.at_ms - start) as f64 / 1000.0;
                if let Some(&(_, before)) = points.last() {
                    points.push((t, before));
                }
                points.push((t, p.errors[i] as f64));
            }
            if let Some(&(_, last)) = points.last() {
                points.push((end_s, last));
                s.counts_over_time.push(RateSeries {
                    name: format!("{} {} AER errors", d.device, sev.label()),
                    points,
                });
            }
        }
    }
    let rows = text::device_rows(&w.result);
    s.list((
        format!(
            "Devices that changed: {} of {} watched",
            rows.len(),
            w.result.devices.len()
        ),
        Table::new(&text::DEVICE_COLUMNS, rows),
    ));
    Ok(())
}

/// `headroom watch` as every report reads it: its summary (the devices' counts as counters,
/// the table of the devices that changed, each changed link's ceiling over time); its metrics
/// and lab cases are those of that summary.
pub struct WatchKind;

impl super::Kind for WatchKind {
    fn kind(&self) -> DocumentKind {
        <WatchDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["parameters", "devices"]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s)
    }
}

impl super::KindDocument for WatchDocument {
    const KIND: DocumentKind = DocumentKind::Watch;

    fn text(&self, how: &super::Text<'_>) -> String {
        text::render(self, &how.style)
    }
}

mod om {
    use super::Def;
    // node_exporter's pcidevice collector (collector/pcidevice_linux.go) exports these four
    // as node_pcidevice_*: the same meaning (T/s, lanes, -1 when unknown) and labels
    // (segment, bus, device, function), under headroom's prefix so that both can be
    // collected at once without a clash.
    pub const CURRENT_SPEED: Def = Def {
        name: "pcidevice_current_link_transfers_per_second",
        help: "Value of current link's transfers per second (T/s), as node_pcidevice_current_link_transfers_per_second",
        unit: None,
    };
    pub const MAX_SPEED: Def = Def {
        name: "pcidevice_max_link_transfers_per_second",
        help: "Value of maximum link's transfers per second (T/s), as node_pcidevice_max_link_transfers_per_second",
        unit: None,
    };
    pub const CURRENT_WIDTH: Def = Def {
        name: "pcidevice_current_link_width",
        help:
            "Value of current link's width (number of lanes), as node_pcidevice_current_link_width",
        unit: None,
    };
    pub const MAX_WIDTH: Def = Def {
        name: "pcidevice_max_link_width",
        help: "Value of maximum link's width (number of lanes), as node_pcidevice_max_link_width",
        unit: None,
    };
    pub const AER: Def = Def {
        name: "pcidevice_aer_errors",
        help: "AER errors the kernel counted for a PCI function (sysfs aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal) by severity and error name; back to 0 when the function is enumerated again",
        unit: None,
    };
    pub const LINK_CHANGES: Def = Def {
        name: "pcidevice_link_changes",
        help: "Changes of a PCI function's link speed or width (down and up included) seen by headroom watch since it started",
        unit: None,
    };
    pub const CARRIER: Def = Def {
        name: "network_carrier_changes",
        help: "Carrier changes of a network interface (sysfs carrier_changes), as node_network_carrier_changes_total",
        unit: None,
    };
    pub const SAMPLES: Def = Def {
        name: "watch_samples",
        help: "Samples headroom watch has taken since it started",
        unit: None,
    };
    pub const LATE: Def = Def {
        name: "watch_late_samples",
        help: "Samples headroom watch took more than half an interval after they were due",
        unit: None,
    };
}

/// node_exporter's pcidevice labels of a function: `segment` (4 hex digits), `bus`, `device`
/// (2 each), `function` (1), as procfs' `PciDeviceLocation.Strings` writes them.
pub fn pcidevice_labels(a: &PciAddress) -> [(&'static str, String); 4] {
    [
        ("segment", format!("{:04x}", a.domain)),
        ("bus", format!("{:02x}", a.bus)),
        ("device", format!("{:02x}", a.device)),
        ("function", format!("{:x}", a.function)),
    ]
}

/// The metrics of a running watch, from its last sample and its counts: the links' current
/// and maximum speed and width, the kernel's AER counters by severity and name, link changes,
/// carrier changes and the watch's own sample counts.
pub fn metrics(m: &mut Metrics, watcher: &Watcher) {
    for f in watcher.functions() {
        let labels = pcidevice_labels(&f.address);
        let base: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let t_per_s = |l: Option<model::LinkState>| l.map_or(-1.0, |l| l.gen.gts() * 1e9);
        let lanes = |l: Option<model::LinkState>| l.map_or(-1.0, |l| f64::from(l.width));
        m.gauge(&om::CURRENT_SPEED, &base, t_per_s(f.current));
        m.gauge(&om::MAX_SPEED, &base, t_per_s(f.max));
        m.gauge(&om::CURRENT_WIDTH, &base, lanes(f.current));
        m.gauge(&om::MAX_WIDTH, &base, lanes(f.max));
        let device = f.address.to_string();
        let changes = watcher.device(&device).map_or(0, |d| d.link_changes);
        m.counter(&om::LINK_CHANGES, &base, changes);
        if let Some(aer) = &f.aer {
            for sev in AerSeverity::ALL {
                for (error, count) in sev.counts(aer) {
                    let mut l = base.clone();
                    l.extend([("severity", sev.label()), ("error", error.as_str())]);
                    m.counter(&om::AER, &l, *count);
                }
            }
        }
    }
    for n in watcher.interfaces() {
        if let Some(c) = n.carrier_changes {
            m.counter(&om::CARRIER, &[("device", n.name.as_str())], c);
        }
    }
    m.counter(&om::SAMPLES, &[], watcher.samples());
    m.counter(&om::LATE, &[], watcher.late_samples());
}
