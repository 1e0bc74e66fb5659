//! The words of `headroom watch`: one line per change as it happens (the time, the device,
//! before -> after, and what it costs the paths through the device), and at the end the
//! summary per device, the findings and the notes.

use super::WatchDocument;
use crate::terminal::Style;
use model::units::MB;
use model::watch::{AerSeverity, Change, ChangeKind, DeviceSummary, WatchResult};
use model::LinkState;
use std::fmt::Write as _;

/// A link state as lspci writes it: `8GT/s x1`.
fn state(l: Option<LinkState>) -> String {
    match l {
        Some(l) => format!("{} x{}", l.gen.lspci_label(), l.width),
        None => "link down".to_string(),
    }
}

/// A ceiling in whole MB/s (10^6 B/s), as the and `headroom path`'s lines round them.
fn mb_s(bps: f64) -> String {
    format!("{:.0}", bps / MB)
}

/// `HH:MM:SS` of a sample, UTC.
pub fn clock(unix_ms: i64) -> String {
    let layout = time::macros::format_description!("[hour]:[minute]:[second]");
    super::super::utc(unix_ms.div_euclid(1000), &layout)
}

fn speed_mbps(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown speed".to_string(), |v| format!("{v}M"))
}

fn paths_text(c: &Change) -> String {
    let words: Vec<String> = c
        .paths
        .iter()
        .map(|p| {
            let path = crate::outside::line(&p.path);
            let (b, a) = (p.before_bytes_per_sec, p.after_bytes_per_sec);
            if a == 0.0 {
                format!("{path} is cut off (its ceiling was {} MB/s)", mb_s(b))
            } else if b == 0.0 {
                format!("{path} is back, its ceiling {} MB/s", mb_s(a))
            } else if mb_s(a) == mb_s(b) {
                format!(
                    "{path}'s ceiling stays at {} MB/s (its bottleneck is another link)",
                    mb_s(a)
                )
            } else {
                let verb = if a < b { "falls" } else { "rises" };
                format!(
                    "{path}'s ceiling {verb} from {} to {} MB/s",
                    mb_s(b),
                    mb_s(a)
                )
            }
        })
        .collect();
    if words.is_empty() {
        String::new()
    } else {
        format!(": {}", words.join("; "))
    }
}

/// One change as one line, e.g. `12:03:07 0000:01:00.0 8GT/s x1 -> 5GT/s x1 (retrained):
/// /dev/nvme0n1's ceiling falls from 862 to 438 MB/s`.
pub fn change_line(c: &Change) -> String {
    let t = clock(c.unix_ms);
    let d = crate::outside::line(&c.device);
    let what = match &c.kind {
        ChangeKind::PciLink {
            before,
            after,
            capable,
        } => {
            let cause = match (before, after) {
                (Some(_), None) => "link down",
                (None, Some(_)) => "link up",
                _ => "retrained",
            };
            let below = match (after, capable) {
                (Some(a), Some(c)) if a.gts_total() < c.gts_total() => {
                    format!(", below its {}", state(Some(*c)))
                }
                _ => String::new(),
            };
            format!(
                "{} -> {} ({cause}{below}){}",
                state(*before),
                state(*after),
                paths_text(c)
            )
        }
        ChangeKind::PciArrived { link } => format!("arrived ({})", state(*link)),
        ChangeKind::PciLeft => format!(
            "left (removed, or its link dropped and the kernel removed it){}",
            paths_text(c)
        ),
        ChangeKind::Aer { severity, errors } => {
            let total: u64 = errors.iter().map(|(_, n)| n).sum();
            let names: Vec<String> = errors
                .iter()
                .map(|(n, k)| format!("{} +{k}", crate::outside::line(n)))
                .collect();
            format!(
                "+{total} {} AER error{}: {}",
                severity.label(),
                if total == 1 { "" } else { "s" },
                names.join(", ")
            )
        }
        ChangeKind::AerReset { severity } => format!(
            "{} AER counters went down (the function was reset or enumerated again): \
             counting on from their new values",
            severity.label()
        ),
        ChangeKind::LinkStatus { bit } => match bit.as_str() {
            "bandwidth_management" => "Link Bandwidth Management Status set: the link \
                                       retrained or changed speed since the bit was last cleared"
                .to_string(),
            _ => "Link Autonomous Bandwidth Status set: the hardware changed the link's speed \
                  or width on its own"
                .to_string(),
        },
        ChangeKind::UsbArrived { speed_mbps: s } => format!("arrived at {}", speed_mbps(*s)),
        ChangeKind::UsbLeft => "left".to_string(),
        ChangeKind::UsbSpeed { before, after } => {
            format!("{} -> {}", speed_mbps(*before), speed_mbps(*after))
        }
        ChangeKind::NetCarrier { changes } => format!(
            "carrier changed {changes} time{} (the link went down or up)",
            if *changes == 1 { "" } else { "s" }
        ),
        ChangeKind::NetArrived => "arrived".to_string(),
        ChangeKind::NetLeft => "left".to_string(),
        ChangeKind::NetSpeed { before, after } => {
            let s = |v: &Option<u64>| v.map_or("no link".to_string(), |v| format!("{v} Mb/s"));
            format!("{} -> {}", s(before), s(after))
        }
    };
    format!("{t} {d} {what}")
}

/// What a run says once of the kernel's event source for link changes between samples.
pub fn link_events_note(source: Option<&str>, interval_ms: u64) -> String {
    match source {
        Some(s) => format!(
            "this kernel has the {s} tracepoint; headroom watch does not record it yet, so a \
             link that goes down and comes back within one interval ({interval_ms} ms) is seen \
             only through the AER counters and the Link Status bits"
        ),
        None => format!(
            "this kernel has no pci:pcie_link_event tracepoint (include/trace/events/pci.h, \
             in newer kernels): a link that goes down and comes back within one interval \
             ({interval_ms} ms) can be missed; the AER counters, the Link Status bits (as root) \
             and carrier_changes still count what happened between samples"
        ),
    }
}

/// What a run says of its late samples.
pub fn late_note(late: u64, interval_ms: u64) -> String {
    format!(
        "{late} samples were taken more than half an interval ({} ms) after they were due: \
         the machine was too busy to keep the interval; changes shorter than the gaps may \
         have been missed",
        interval_ms / 2
    )
}

/// The plan line of a run.
pub fn plan(functions: usize, usb: usize, net: usize, interval_ms: u64) -> String {
    let n = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    format!(
        "watching {}, {} and {} every {interval_ms} ms (Ctrl-C stops it and prints the \
         summary); times in UTC; a path's ceiling is the effective PCIe write at each link's \
         MPS, as `headroom path` gives it (MB/s = 10^6 B/s)",
        n(functions, "PCI function", "PCI functions"),
        n(usb, "USB device", "USB devices"),
        n(net, "network interface", "network interfaces")
    )
}

/// How long, how often and how many samples: `120 samples every 1 s over 2 min (3 late)`.
pub fn duration(r: &WatchResult, interval_ms: u64) -> String {
    let secs = |ms: u64| {
        let s = ms as f64 / 1000.0;
        if ms < 1000 {
            format!("{ms} ms")
        } else if s < 120.0 {
            format!("{s:.1} s")
        } else if s < 7200.0 {
            format!("{:.0} min", s / 60.0)
        } else {
            format!("{:.1} h", s / 3600.0)
        }
    };
    let late = if r.late_samples > 0 {
        format!(" ({} late by more than half an interval)", r.late_samples)
    } else {
        String::new()
    };
    format!(
        "{} samples every {} over {}{late}",
        r.samples,
        secs(interval_ms),
        secs(r.duration_ms)
    )
}

pub(crate) const DEVICE_COLUMNS: [(&str, bool); 9] = [
    ("Device", false),
    ("Link at start -> end", false),
    ("Lowest", false),
    ("Capable", false),
    ("Link changes", true),
    ("Correctable", true),
    ("Nonfatal", true),
    ("Fatal", true),
    ("Left / arrived / carrier", true),
];

fn device_row(d: &DeviceSummary) -> Vec<String> {
    let link = if d.first.is_none() && d.last.is_none() && d.capable.is_none() {
        "–".to_string()
    } else {
        format!("{} -> {}", state(d.first), state(d.last))
    };
    let opt = |l: Option<LinkState>| l.map_or("–".to_string(), |l| state(Some(l)));
    vec![
        d.device.clone(),
        link,
        opt(d.lowest),
        opt(d.capable),
        d.link_changes.to_string(),
        d.errors_of(AerSeverity::Correctable).to_string(),
        d.errors_of(AerSeverity::Nonfatal).to_string(),
        d.errors_of(AerSeverity::Fatal).to_string(),
        format!("{} / {} / {}", d.departures, d.arrivals, d.carrier_changes),
    ]
}

/// The rows of the devices something happened to.
pub(crate) fn device_rows(r: &WatchResult) -> Vec<Vec<String>> {
    r.devices
        .iter()
        .filter(|d| d.eventful())
        .map(device_row)
        .collect()
}

/// The end of a run: what was watched, the devices something happened to, the findings and
/// the notes.
pub(crate) fn render(doc: &WatchDocument, style: &Style) -> String {
    let mut out = String::new();
    let r = &doc.result;
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!(
            "headroom watch: {}",
            duration(r, doc.parameters.interval_ms)
        ))
    );
    let rows = device_rows(r);
    let quiet = r.devices.len() - rows.len();
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "No change on the {} devices watched: every link kept its speed and width, no \
             AER error was counted.",
            r.devices.len()
        );
    } else {
        let mut table = vec![DEVICE_COLUMNS.iter().map(|c| c.0.to_string()).collect()];
        table.extend(rows);
        crate::terminal::table(&mut out, &table, 1, 4, style);
        if quiet > 0 {
            let _ = writeln!(out, "{quiet} other devices: no change.");
        }
    }
    if r.changes_dropped > 0 {
        let _ = writeln!(
            out,
            "The document keeps the last {} changes; {} earlier ones were printed as they \
             happened and are counted above.",
            r.changes.len(),
            r.changes_dropped
        );
    }
    out.push_str(&crate::terminal::findings(&doc.findings, |sev| {
        style.severity(sev)
    }));
    if !doc.notes.is_empty() {
        out.push('\n');
        for n in &doc.notes {
            let _ = writeln!(out, "{} {}", style.warn("note:"), crate::outside::line(n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::watch::PathCeilingChange;
    use model::PcieGen;

    #[test]
    fn a_retrain_reads_like_the_line_users_expect() {
        let c = Change {
            at_ms: 7000,
            // 2026-12-06 12:03:07 UTC
            unix_ms: 1_796_558_587_000,
            device: "0000:01:00.0".into(),
            kind: ChangeKind::PciLink {
                before: Some(LinkState::new(PcieGen::Gen3, 1)),
                after: Some(LinkState::new(PcieGen::Gen2, 1)),
                capable: Some(LinkState::new(PcieGen::Gen3, 1)),
            },
            paths: vec![PathCeilingChange {
                path: "/dev/nvme0n1".into(),
                before_bytes_per_sec: 984.6e6,
                after_bytes_per_sec: 500e6,
            }],
        };
        assert_eq!(
            change_line(&c),
            "12:03:07 0000:01:00.0 8GT/s x1 -> 5GT/s x1 (retrained, below its 8GT/s x1): \
             /dev/nvme0n1's ceiling falls from 985 to 500 MB/s"
        );
    }
}
