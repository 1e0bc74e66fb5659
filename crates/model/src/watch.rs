//! Link health over time (`headroom watch`): what one sample of a machine's links holds, what
//! changed between two samples and what each change costs the paths through the link (from
//! the ceiling model), the summary of a run per device, and the sampling schedule.
//!
//! Pure: probe fills the samples, cli keeps the clock and hands its readings in. Everything a
//! [`Watcher`] keeps is bounded whatever the run's length: the changes it holds
//! ([`MAX_CHANGES`], the oldest dropped and counted), the timeline ([`MAX_TIMELINE`], halved
//! in resolution when full), the devices it summarises ([`MAX_DEVICES`]) and the error names
//! per device ([`MAX_ERROR_NAMES`]).

use crate::ceiling::pcie::{link_ceiling, TlpParams};
use crate::inventory::pci::address::PciAddress;
use crate::inventory::pci::AerCounters;
use crate::LinkState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// The changes a run keeps for its document (the most recent ones; every one is printed as
/// it happens and counted in its device's summary).
pub const MAX_CHANGES: usize = 10_000;
/// The points of the timeline a run keeps; when full, every other point is dropped.
pub const MAX_TIMELINE: usize = 4_096;
/// The devices a run summarises (a machine has far fewer; USB devices that come and go under
/// new names are what could grow without it).
pub const MAX_DEVICES: usize = 1_024;
/// The error names kept per device and severity (the kernel has 8 correctable and 27
/// uncorrectable names: drivers/pci/pcie/aer.c `aer_correctable_error_string`,
/// `aer_uncorrectable_error_string`).
pub const MAX_ERROR_NAMES: usize = 64;

/// An AER error's severity, as the kernel's `aer_dev_*` files split them
/// (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AerSeverity {
    Correctable,
    Nonfatal,
    Fatal,
}

impl AerSeverity {
    pub const ALL: [AerSeverity; 3] = [
        AerSeverity::Correctable,
        AerSeverity::Nonfatal,
        AerSeverity::Fatal,
    ];

    pub fn label(self) -> &'static str {
        match self {
            AerSeverity::Correctable => "correctable",
            AerSeverity::Nonfatal => "nonfatal",
            AerSeverity::Fatal => "fatal",
        }
    }

    /// The counts of this severity in `aer` (the kernel's `TOTAL_ERR_*` sums left out).
    pub fn counts(self, aer: &AerCounters) -> impl Iterator<Item = &(String, u64)> {
        match self {
            AerSeverity::Correctable => &aer.correctable,
            AerSeverity::Nonfatal => &aer.nonfatal,
            AerSeverity::Fatal => &aer.fatal,
        }
        .iter()
        .filter(|(n, _)| !n.starts_with("TOTAL_"))
    }
}

/// The two status bits of the PCI Express Link Status register that latch a change of the
/// link's bandwidth (PCIe Base Spec 6.0 section 7.5.3.8): Link Bandwidth Management Status
/// (bit 14: the link retrained or changed speed without the port asking) and Link Autonomous
/// Bandwidth Status (bit 15: the hardware changed speed or width on its own). Both stay set
/// until software clears them, so a sample sees a retrain that came and went between samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStatusBits {
    pub bandwidth_management: bool,
    pub autonomous_bandwidth: bool,
}

/// One PCI function as one sample saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionSample {
    pub address: PciAddress,
    /// `current_link_speed`/`current_link_width` (`None`: no link, or not PCI Express).
    pub current: Option<LinkState>,
    /// `max_link_speed`/`max_link_width`: what this end supports.
    pub max: Option<LinkState>,
    /// The `aer_dev_*` counters, where the kernel has them for this function.
    pub aer: Option<AerCounters>,
    /// Where config space past the first 64 bytes was readable (root).
    pub link_status: Option<LinkStatusBits>,
}

/// One USB device (not an interface) as one sample saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbSample {
    /// The kernel's name: `2-1`, `1-3.1`, `usb1` for a root hub.
    pub name: String,
    /// sysfs `speed`, Mb/s (1.5, 12, 480, 5000, 10000, 20000).
    pub speed_mbps: Option<f64>,
    pub product: Option<String>,
}

/// One network interface as one sample saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetSample {
    pub name: String,
    /// `carrier_changes`: every carrier up and down since the interface was made
    /// (Documentation/ABI/testing/sysfs-class-net).
    pub carrier_changes: Option<u64>,
    /// `speed` in Mb/s (`None` with no carrier, where the kernel refuses the read).
    pub speed_mbps: Option<u64>,
}

/// What one reading of the machine found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub pci: Vec<FunctionSample>,
    pub usb: Vec<UsbSample>,
    pub net: Vec<NetSample>,
}

/// What a watch knows of a PCI function from the start: its parent, its name, the TLP
/// parameters its link's ceiling is computed with, and the paths (block devices, network
/// interfaces) that cross its link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionContext {
    pub address: PciAddress,
    /// The port above it (the other end of its link), if it is on a bus below a bridge.
    pub parent: Option<PciAddress>,
    pub name: String,
    /// The link's MPS, MRRS and RCB as the audit read them (spec defaults where it could not).
    pub params: TlpParams,
    /// What crosses this function's link towards the CPU, as a user names it:
    /// `/dev/nvme0n1`, `eth0`.
    pub paths: Vec<String>,
}

/// A path's ceiling before and after a change, bytes per second (effective PCIe write at the
/// links' MPS, as `headroom path` and `headroom ceiling pcie` give it; 0 when a link on it is
/// down).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathCeilingChange {
    pub path: String,
    pub before_bytes_per_sec: f64,
    pub after_bytes_per_sec: f64,
}

/// What changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChangeKind {
    /// The link's speed or width changed, or it went down (`after: None`) or up.
    PciLink {
        before: Option<LinkState>,
        after: Option<LinkState>,
        capable: Option<LinkState>,
    },
    PciArrived {
        link: Option<LinkState>,
    },
    PciLeft,
    /// Errors counted since the last sample, by name.
    Aer {
        severity: AerSeverity,
        errors: Vec<(String, u64)>,
    },
    /// A counter went down: the device was removed and enumerated again (or reset); counting
    /// goes on from the new values.
    AerReset {
        severity: AerSeverity,
    },
    /// A Link Status bit that latches a bandwidth change went from clear to set.
    LinkStatus {
        bit: String,
    },
    UsbArrived {
        speed_mbps: Option<f64>,
    },
    UsbLeft,
    UsbSpeed {
        before: Option<f64>,
        after: Option<f64>,
    },
    NetCarrier {
        /// Carrier transitions since the last sample (each down and each up counts one).
        changes: u64,
    },
    NetSpeed {
        before: Option<u64>,
        after: Option<u64>,
    },
    NetArrived,
    NetLeft,
}

/// One change, when it was seen and what it costs the paths through the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Milliseconds since the watch began.
    pub at_ms: u64,
    /// Wall-clock time of the sample, milliseconds since the Unix epoch (UTC).
    pub unix_ms: i64,
    /// `0000:01:00.0`, `usb 2-1`, `eth0`.
    pub device: String,
    #[serde(flatten)]
    pub kind: ChangeKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathCeilingChange>,
}

/// The errors of one name and severity a run counted on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorCount {
    pub severity: AerSeverity,
    pub error: String,
    pub count: u64,
}

/// One device over a whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSummary {
    pub device: String,
    /// PCI functions: the port above (the other end of the link), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// PCI functions: the link at the first sample, at the last, the lowest seen, and what
    /// the function supports.
    pub first: Option<LinkState>,
    pub last: Option<LinkState>,
    pub lowest: Option<LinkState>,
    pub capable: Option<LinkState>,
    pub link_changes: u64,
    pub link_downs: u64,
    /// AER errors counted during the run, by severity and name.
    pub errors: Vec<ErrorCount>,
    /// PCI functions: whether the kernel counts AER errors for it (`aer_dev_*` files).
    #[serde(default)]
    pub has_aer: bool,
    /// The link when errors were last counted.
    #[serde(default)]
    pub errors_at: Option<LinkState>,
    pub counter_resets: u64,
    pub link_status_events: u64,
    pub arrivals: u64,
    pub departures: u64,
    /// Still there at the last sample.
    pub present: bool,
    /// Network interfaces: carrier transitions during the run.
    pub carrier_changes: u64,
    /// USB and network: speed changes during the run.
    pub speed_changes: u64,
    /// What crosses the function's link.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

impl DeviceSummary {
    /// The errors of `severity` counted during the run.
    pub fn errors_of(&self, severity: AerSeverity) -> u64 {
        self.errors
            .iter()
            .filter(|e| e.severity == severity)
            .map(|e| e.count)
            .sum()
    }

    /// Whether anything happened to the device during the run.
    pub fn eventful(&self) -> bool {
        self.link_changes
            + self.errors.iter().map(|e| e.count).sum::<u64>()
            + self.counter_resets
            + self.link_status_events
            + self.arrivals
            + self.departures
            + self.carrier_changes
            + self.speed_changes
            > 0
    }
}

/// A PCI function's link and cumulative errors at one moment (the HTML timeline).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub at_ms: u64,
    pub device: String,
    pub link: Option<LinkState>,
    /// The link's ceiling at that state, bytes per second (effective write at its MPS; 0 while
    /// the link is down), where its parameters are known.
    #[serde(default)]
    pub ceiling_bytes_per_sec: Option<f64>,
    /// Errors counted since the watch began: correctable, nonfatal, fatal.
    pub errors: [u64; 3],
}

/// What a watch found over its whole run: the document's body besides its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchResult {
    pub interval_ms: u64,
    /// Milliseconds from the first sample to the last.
    pub duration_ms: u64,
    pub samples: u64,
    /// Samples taken more than half an interval after they were due.
    pub late_samples: u64,
    /// The most recent changes (at most [`MAX_CHANGES`]).
    pub changes: Vec<Change>,
    /// Older changes left out of `changes` (each was printed and is in its device's summary).
    pub changes_dropped: u64,
    pub devices: Vec<DeviceSummary>,
    /// Devices seen after [`MAX_DEVICES`] were summarised (their changes are still printed).
    #[serde(default)]
    pub devices_dropped: u64,
    pub timeline: Vec<TimelinePoint>,
}

/// Turns a run's samples into changes and summaries, keeping only what is bounded.
#[derive(Debug, Default)]
pub struct Watcher {
    interval_ms: u64,
    contexts: BTreeMap<PciAddress, FunctionContext>,
    pci: BTreeMap<PciAddress, FunctionSample>,
    usb: BTreeMap<String, UsbSample>,
    net: BTreeMap<String, NetSample>,
    summaries: BTreeMap<String, DeviceSummary>,
    devices_dropped: u64,
    changes: VecDeque<Change>,
    changes_dropped: u64,
    timeline: Vec<TimelinePoint>,
    timeline_step: u64,
    timeline_seen: u64,
    samples: u64,
    late_samples: u64,
    first_ms: Option<u64>,
    last_ms: u64,
}

/// The ceiling of one link state under `params` (effective write, bytes per second).
pub fn link_ceiling_bps(link: LinkState, params: &TlpParams) -> f64 {
    link_ceiling(link, params).effective_write_bps
}

impl Watcher {
    /// A watcher sampling every `interval_ms`, with what is known of the PCI functions.
    pub fn new(interval_ms: u64, contexts: Vec<FunctionContext>) -> Watcher {
        Watcher {
            interval_ms,
            contexts: contexts.into_iter().map(|c| (c.address, c)).collect(),
            timeline_step: 1,
            ..Watcher::default()
        }
    }

    /// Count a sample that was taken late (more than half an interval after it was due).
    pub fn late(&mut self) {
        self.late_samples += 1;
    }

    /// Take in the sample made `at_ms` after the watch began (`unix_ms` on the wall clock);
    /// returns the changes since the previous sample (none for the first one, which is the
    /// baseline).
    pub fn observe(&mut self, sample: &Sample, at_ms: u64, unix_ms: i64) -> Vec<Change> {
        let first = self.first_ms.is_none();
        self.first_ms.get_or_insert(at_ms);
        self.last_ms = at_ms;
        self.samples += 1;
        let mut out = Vec::new();
        self.observe_pci(sample, first, &mut out);
        self.observe_usb(sample, first, &mut out);
        self.observe_net(sample, first, &mut out);
        for c in &mut out {
            c.at_ms = at_ms;
            c.unix_ms = unix_ms;
        }
        for c in &out {
            if self.changes.len() == MAX_CHANGES {
                self.changes.pop_front();
                self.changes_dropped += 1;
            }
            self.changes.push_back(c.clone());
        }
        out
    }

    fn summary(&mut self, device: &str) -> Option<&mut DeviceSummary> {
        if !self.summaries.contains_key(device) {
            if self.summaries.len() >= MAX_DEVICES {
                self.devices_dropped += 1;
                return None;
            }
            self.summaries.insert(
                device.to_string(),
                DeviceSummary {
                    device: device.to_string(),
                    ..DeviceSummary::default()
                },
            );
        }
        self.summaries.get_mut(device)
    }

    /// The ceiling of `path` now (`before` empty: every link as the last sample has it), or
    /// before the last sample (`before`: the states the functions that changed had). A
    /// function that just left counts as a link that is down; one never seen is left out.
    fn path_ceiling(
        &self,
        path: &str,
        before: Option<&BTreeMap<PciAddress, Option<LinkState>>>,
        left: &BTreeMap<PciAddress, Option<LinkState>>,
    ) -> f64 {
        let mut ceiling = f64::INFINITY;
        for ctx in self.contexts.values() {
            if !ctx.paths.iter().any(|p| p == path) {
                continue;
            }
            let link = match (
                before.and_then(|b| b.get(&ctx.address)),
                self.pci.get(&ctx.address),
            ) {
                (Some(was), _) => *was,
                (None, Some(f)) => f.current,
                (None, None) if left.contains_key(&ctx.address) => None,
                (None, None) => continue,
            };
            let c = link.map_or(0.0, |l| link_ceiling_bps(l, &ctx.params));
            ceiling = ceiling.min(c);
        }
        ceiling
    }

    /// What the change of `address`'s link costs each path through it, given the states the
    /// functions that changed in this sample had before it (`before`).
    fn consequences(
        &self,
        address: PciAddress,
        before: &BTreeMap<PciAddress, Option<LinkState>>,
    ) -> Vec<PathCeilingChange> {
        let Some(ctx) = self.contexts.get(&address) else {
            return Vec::new();
        };
        ctx.paths
            .iter()
            .map(|p| PathCeilingChange {
                path: p.clone(),
                before_bytes_per_sec: self.path_ceiling(p, Some(before), before),
                after_bytes_per_sec: self.path_ceiling(p, None, before),
            })
            .filter(|c| c.before_bytes_per_sec.is_finite() && c.after_bytes_per_sec.is_finite())
            .collect()
    }

    /// Whether `c` is a port's view of a link change the function below it also reported in
    /// `all` (both ends of a link show its state: one line says it, at the end below).
    fn seen_from_below(&self, c: &Change, all: &[Change]) -> bool {
        let ChangeKind::PciLink { before, after, .. } = &c.kind else {
            return false;
        };
        all.iter().any(|o| {
            matches!(&o.kind, ChangeKind::PciLink { before: b, after: a, .. }
                if b == before && a == after)
                && o.device
                    .parse::<PciAddress>()
                    .ok()
                    .and_then(|a| self.contexts.get(&a))
                    .and_then(|x| x.parent)
                    .is_some_and(|p| p.to_string() == c.device)
        })
    }

    fn observe_pci(&mut self, sample: &Sample, first: bool, out: &mut Vec<Change>) {
        let start = out.len();
        self.observe_functions(sample, first, out);
        let made = out.split_off(start);
        let kept: Vec<Change> = made
            .iter()
            .filter(|c| !self.seen_from_below(c, &made))
            .cloned()
            .collect();
        out.extend(kept);
    }

    fn observe_functions(&mut self, sample: &Sample, first: bool, out: &mut Vec<Change>) {
        let start = out.len();
        // The link state each function whose link changed had before this sample.
        let mut before_states: BTreeMap<PciAddress, Option<LinkState>> = BTreeMap::new();
        for f in &sample.pci {
            let previous = self.pci.get(&f.address);
            if previous == Some(f) {
                continue;
            }
            let device = f.address.to_string();
            let (paths, parent) = self
                .contexts
                .get(&f.address)
                .map(|c| (c.paths.clone(), c.parent.map(|p| p.to_string())))
                .unwrap_or_default();
            let mut changes = Vec::new();
            let mut link_changed = false;
            match previous {
                None => {
                    if !first {
                        changes.push(ChangeKind::PciArrived { link: f.current });
                    }
                }
                Some(p) => {
                    if p.current != f.current {
                        link_changed = true;
                        changes.push(ChangeKind::PciLink {
                            before: p.current,
                            after: f.current,
                            capable: f.max.or(p.max),
                        });
                    }
                    if let (Some(a), Some(b)) = (&p.aer, &f.aer) {
                        for severity in AerSeverity::ALL {
                            let (errors, reset) = aer_delta(severity, a, b);
                            if reset {
                                changes.push(ChangeKind::AerReset { severity });
                            }
                            if !errors.is_empty() {
                                changes.push(ChangeKind::Aer { severity, errors });
                            }
                        }
                    }
                    let was = p.link_status.unwrap_or_default();
                    if let Some(now) = f.link_status {
                        for (bit, before, after) in [
                            (
                                "bandwidth_management",
                                was.bandwidth_management,
                                now.bandwidth_management,
                            ),
                            (
                                "autonomous_bandwidth",
                                was.autonomous_bandwidth,
                                now.autonomous_bandwidth,
                            ),
                        ] {
                            if after && !before && p.link_status.is_some() {
                                changes.push(ChangeKind::LinkStatus { bit: bit.into() });
                            }
                        }
                    }
                }
            }
            let before = previous.and_then(|p| p.current);
            if link_changed || previous.is_none() {
                before_states.insert(f.address, before);
            }
            let mut made: Vec<Change> = changes
                .into_iter()
                .map(|kind| plain_change(device.clone(), kind))
                .collect();
            self.pci.insert(f.address, f.clone());
            if let Some(s) = self.summary(&device) {
                s.present = true;
                s.paths = paths;
                s.parent = parent;
                s.has_aer |= f.aer.is_some();
                if s.first.is_none() && first {
                    s.first = f.current;
                }
                s.last = f.current;
                s.capable = f.max.or(s.capable);
                s.lowest = match (s.lowest, f.current) {
                    (Some(l), Some(c)) if c.gts_total() < l.gts_total() => Some(c),
                    (None, c) => c,
                    (l, _) => l,
                };
                if link_changed {
                    s.link_changes += 1;
                    if f.current.is_none() && before.is_some() {
                        s.link_downs += 1;
                    }
                }
                for c in &made {
                    match &c.kind {
                        ChangeKind::PciArrived { .. } => s.arrivals += 1,
                        ChangeKind::AerReset { .. } => s.counter_resets += 1,
                        ChangeKind::LinkStatus { .. } => s.link_status_events += 1,
                        ChangeKind::Aer { severity, errors } => {
                            s.errors_at = f.current;
                            for (name, n) in errors {
                                add_error(&mut s.errors, *severity, name, *n);
                            }
                        }
                        _ => {}
                    }
                }
            }
            if !made.is_empty() || first {
                self.timeline_point(f.address, f.current);
            }
            out.append(&mut made);
        }
        // Every function of the sample is in `self.pci` by now: one that left is what is
        // more (the set is made only then; a watch samples the same functions for days).
        let gone: Vec<PciAddress> = if self.pci.len() > sample.pci.len() {
            let present: std::collections::BTreeSet<PciAddress> =
                sample.pci.iter().map(|f| f.address).collect();
            self.pci
                .keys()
                .filter(|a| !present.contains(a))
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        for a in gone {
            let Some(p) = self.pci.remove(&a) else {
                continue;
            };
            let device = a.to_string();
            before_states.insert(a, p.current);
            if let Some(s) = self.summary(&device) {
                s.departures += 1;
                s.present = false;
                if p.current.is_some() {
                    s.link_downs += 1;
                }
            }
            self.timeline_point(a, None);
            out.push(plain_change(device, ChangeKind::PciLeft));
        }
        // What each change of a link costs the paths through it, once every function of the
        // sample is in: both ends of a link change together.
        let mut made = out.split_off(start);
        for c in &mut made {
            if matches!(c.kind, ChangeKind::PciLink { .. } | ChangeKind::PciLeft) {
                if let Ok(a) = c.device.parse() {
                    c.paths = self.consequences(a, &before_states);
                }
            }
        }
        out.append(&mut made);
    }

    fn observe_usb(&mut self, sample: &Sample, first: bool, out: &mut Vec<Change>) {
        for u in &sample.usb {
            let device = format!("usb {}", u.name);
            let kind = match self.usb.get(&u.name) {
                Some(p) if p == u => continue,
                Some(p) if p.speed_mbps != u.speed_mbps => Some(ChangeKind::UsbSpeed {
                    before: p.speed_mbps,
                    after: u.speed_mbps,
                }),
                Some(_) => None,
                None if first => None,
                None => Some(ChangeKind::UsbArrived {
                    speed_mbps: u.speed_mbps,
                }),
            };
            self.usb.insert(u.name.clone(), u.clone());
            if let Some(kind) = kind {
                if let Some(s) = self.summary(&device) {
                    match kind {
                        ChangeKind::UsbArrived { .. } => s.arrivals += 1,
                        _ => s.speed_changes += 1,
                    }
                    s.present = true;
                }
                out.push(plain_change(device, kind));
            }
        }
        let gone: Vec<String> = self
            .usb
            .keys()
            .filter(|n| !sample.usb.iter().any(|u| &u.name == *n))
            .cloned()
            .collect();
        for name in gone {
            self.usb.remove(&name);
            let device = format!("usb {name}");
            if let Some(s) = self.summary(&device) {
                s.departures += 1;
                s.present = false;
            }
            out.push(plain_change(device, ChangeKind::UsbLeft));
        }
    }

    fn observe_net(&mut self, sample: &Sample, first: bool, out: &mut Vec<Change>) {
        for n in &sample.net {
            let previous = self.net.insert(n.name.clone(), n.clone());
            let Some(p) = previous else {
                if !first {
                    if let Some(s) = self.summary(&n.name) {
                        s.arrivals += 1;
                        s.present = true;
                    }
                    out.push(plain_change(n.name.clone(), ChangeKind::NetArrived));
                }
                continue;
            };
            if &p == n {
                continue;
            }
            let mut kinds = Vec::new();
            if let (Some(a), Some(b)) = (p.carrier_changes, n.carrier_changes) {
                if b > a {
                    kinds.push(ChangeKind::NetCarrier { changes: b - a });
                }
            }
            if p.speed_mbps != n.speed_mbps {
                kinds.push(ChangeKind::NetSpeed {
                    before: p.speed_mbps,
                    after: n.speed_mbps,
                });
            }
            for kind in kinds {
                if let Some(s) = self.summary(&n.name) {
                    match kind {
                        ChangeKind::NetCarrier { changes } => s.carrier_changes += changes,
                        _ => s.speed_changes += 1,
                    }
                }
                out.push(plain_change(n.name.clone(), kind));
            }
        }
        let gone: Vec<String> = self
            .net
            .keys()
            .filter(|name| !sample.net.iter().any(|n| &&n.name == name))
            .cloned()
            .collect();
        for name in gone {
            self.net.remove(&name);
            if let Some(s) = self.summary(&name) {
                s.departures += 1;
                s.present = false;
            }
            out.push(plain_change(name, ChangeKind::NetLeft));
        }
    }

    /// Add a timeline point for `address`; when the timeline is full, keep every other point
    /// and from then on only every other new one (the resolution halves, the span stays).
    fn timeline_point(&mut self, address: PciAddress, link: Option<LinkState>) {
        self.timeline_seen += 1;
        if self.timeline_seen % self.timeline_step != 0 {
            return;
        }
        if self.timeline.len() >= MAX_TIMELINE {
            let mut i = 0;
            self.timeline.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.timeline_step *= 2;
        }
        let device = address.to_string();
        let errors = self
            .summaries
            .get(&device)
            .map(|s| AerSeverity::ALL.map(|sev| s.errors_of(sev)))
            .unwrap_or_default();
        let ceiling_bytes_per_sec = self
            .contexts
            .get(&address)
            .map(|c| link.map_or(0.0, |l| link_ceiling_bps(l, &c.params)));
        self.timeline.push(TimelinePoint {
            at_ms: self.last_ms,
            device,
            link,
            ceiling_bytes_per_sec,
            errors,
        });
    }

    /// The run so far, as its document holds it.
    pub fn result(&self) -> WatchResult {
        WatchResult {
            interval_ms: self.interval_ms,
            duration_ms: self.last_ms - self.first_ms.unwrap_or(self.last_ms),
            samples: self.samples,
            late_samples: self.late_samples,
            changes: self.changes.iter().cloned().collect(),
            changes_dropped: self.changes_dropped,
            devices: self.summaries.values().cloned().collect(),
            devices_dropped: self.devices_dropped,
            timeline: self.timeline.clone(),
        }
    }

    /// The samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The samples taken late so far.
    pub fn late_samples(&self) -> u64 {
        self.late_samples
    }

    /// The counts of the last sample of each PCI function (for metrics).
    pub fn functions(&self) -> impl Iterator<Item = &FunctionSample> {
        self.pci.values()
    }

    /// The last sample of each network interface (for metrics).
    pub fn interfaces(&self) -> impl Iterator<Item = &NetSample> {
        self.net.values()
    }

    /// The summary of `device`, if the run keeps one.
    pub fn device(&self, device: &str) -> Option<&DeviceSummary> {
        self.summaries.get(device)
    }
}

fn plain_change(device: String, kind: ChangeKind) -> Change {
    Change {
        at_ms: 0,
        unix_ms: 0,
        device,
        kind,
        paths: Vec::new(),
    }
}

fn add_error(errors: &mut Vec<ErrorCount>, severity: AerSeverity, name: &str, n: u64) {
    if let Some(e) = errors
        .iter_mut()
        .find(|e| e.severity == severity && e.error == name)
    {
        e.count += n;
    } else if errors.iter().filter(|e| e.severity == severity).count() < MAX_ERROR_NAMES {
        errors.push(ErrorCount {
            severity,
            error: name.to_string(),
            count: n,
        });
    }
}

/// The errors of `severity` counted between `before` and `after`, by name, and whether a
/// counter went down (a reset: then the new value is what was counted since).
pub fn aer_delta(
    severity: AerSeverity,
    before: &AerCounters,
    after: &AerCounters,
) -> (Vec<(String, u64)>, bool) {
    let mut reset = false;
    let mut out = Vec::new();
    for (name, now) in severity.counts(after) {
        let was = severity
            .counts(before)
            .find(|(n, _)| n == name)
            .map_or(0, |(_, c)| *c);
        let delta = if *now < was {
            reset = true;
            *now
        } else {
            now - was
        };
        if delta > 0 {
            out.push((name.clone(), delta));
        }
    }
    (out, reset)
}

/// The sampling schedule: sample `k` is due at `k * interval` after the start. A sample taken
/// more than half an interval after it was due is late; the next one is due at the first
/// multiple of the interval still ahead (missed ones are skipped, not made up in a burst).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub interval_ms: u64,
    next_due_ms: u64,
}

impl Schedule {
    pub fn new(interval_ms: u64) -> Schedule {
        Schedule {
            interval_ms: interval_ms.max(1),
            next_due_ms: 0,
        }
    }

    /// When the next sample is due, milliseconds after the start.
    pub fn due_ms(&self) -> u64 {
        self.next_due_ms
    }

    /// A sample was taken at `now_ms`: whether it was late, and the schedule moves on.
    pub fn taken(&mut self, now_ms: u64) -> bool {
        let late = now_ms > self.next_due_ms + self.interval_ms / 2;
        let next = self.next_due_ms + self.interval_ms;
        self.next_due_ms = if now_ms >= next {
            (now_ms / self.interval_ms + 1) * self.interval_ms
        } else {
            next
        };
        late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PcieGen;

    fn addr(s: &str) -> PciAddress {
        s.parse().unwrap()
    }

    fn function(a: &str, gen: PcieGen, width: u8) -> FunctionSample {
        FunctionSample {
            address: addr(a),
            current: Some(LinkState::new(gen, width)),
            max: Some(LinkState::new(PcieGen::Gen4, 4)),
            aer: None,
            link_status: None,
        }
    }

    #[test]
    fn a_late_sample_is_counted_and_missed_ticks_are_skipped() {
        let mut s = Schedule::new(1000);
        assert!(!s.taken(0));
        assert_eq!(s.due_ms(), 1000);
        assert!(!s.taken(1400));
        assert_eq!(s.due_ms(), 2000);
        assert!(s.taken(2600));
        assert_eq!(s.due_ms(), 3000);
        // Stalled for three intervals: one late sample, the next due after now.
        assert!(s.taken(6200));
        assert_eq!(s.due_ms(), 7000);
    }

    #[test]
    fn a_downtrain_says_what_the_path_loses() {
        let ctx = FunctionContext {
            address: addr("0000:01:00.0"),
            parent: None,
            name: "NVMe".into(),
            params: TlpParams::default_for(256, 512, 64),
            paths: vec!["/dev/nvme0n1".into()],
        };
        let mut w = Watcher::new(1000, vec![ctx]);
        let s0 = Sample {
            pci: vec![function("0000:01:00.0", PcieGen::Gen3, 1)],
            ..Sample::default()
        };
        assert!(w.observe(&s0, 0, 0).is_empty());
        let s1 = Sample {
            pci: vec![function("0000:01:00.0", PcieGen::Gen2, 1)],
            ..Sample::default()
        };
        let c = w.observe(&s1, 1000, 1000);
        assert_eq!(c.len(), 1);
        let p = &c[0].paths[0];
        let params = TlpParams::default_for(256, 512, 64);
        assert_eq!(
            p.before_bytes_per_sec,
            link_ceiling_bps(LinkState::new(PcieGen::Gen3, 1), &params)
        );
        assert_eq!(
            p.after_bytes_per_sec,
            link_ceiling_bps(LinkState::new(PcieGen::Gen2, 1), &params)
        );
        let d = w.device("0000:01:00.0").unwrap();
        assert_eq!(d.link_changes, 1);
        assert_eq!(d.lowest, Some(LinkState::new(PcieGen::Gen2, 1)));
    }

    #[test]
    fn a_network_interface_that_leaves_and_comes_back_is_two_lines() {
        let eth = |carrier| Sample {
            net: vec![NetSample {
                name: "eth1".into(),
                carrier_changes: Some(carrier),
                speed_mbps: Some(1000),
            }],
            ..Sample::default()
        };
        let mut w = Watcher::new(1000, Vec::new());
        assert!(w.observe(&eth(2), 0, 0).is_empty());
        let gone = w.observe(&Sample::default(), 1000, 1000);
        assert_eq!(gone[0].kind, ChangeKind::NetLeft);
        let back = w.observe(&eth(0), 2000, 2000);
        assert_eq!(back[0].kind, ChangeKind::NetArrived);
        let d = w.device("eth1").unwrap();
        assert_eq!((d.departures, d.arrivals, d.present), (1, 1, true));
    }

    #[test]
    fn a_counter_that_goes_down_is_a_reset_not_a_negative_count() {
        let a = AerCounters {
            correctable: vec![("RxErr".into(), 5), ("TOTAL_ERR_COR".into(), 5)],
            ..AerCounters::default()
        };
        let b = AerCounters {
            correctable: vec![("RxErr".into(), 2), ("TOTAL_ERR_COR".into(), 2)],
            ..AerCounters::default()
        };
        let (errors, reset) = aer_delta(AerSeverity::Correctable, &a, &b);
        assert!(reset);
        assert_eq!(errors, vec![("RxErr".to_string(), 2)]);
    }
}
