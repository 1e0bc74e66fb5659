//! What a watch's counts mean: links that retrained or went down, AER errors by severity,
//! devices that left, network links that flapped. Pure functions of the run's summary.

use model::watch::{AerSeverity, DeviceSummary, WatchResult};
use model::{Finding, LinkState, Severity};

fn state(l: Option<LinkState>) -> String {
    l.map_or_else(
        || "link down".to_string(),
        |l| format!("{} x{}", l.gen.lspci_label(), l.width),
    )
}

fn times(n: u64) -> String {
    if n == 1 {
        "once".to_string()
    } else {
        format!("{n} times")
    }
}

/// `12 correctable (RxErr 10, BadTLP 2)`.
fn errors_text(d: &DeviceSummary, severity: AerSeverity) -> Option<String> {
    let total = d.errors_of(severity);
    if total == 0 {
        return None;
    }
    let names: Vec<String> = d
        .errors
        .iter()
        .filter(|e| e.severity == severity && e.count > 0)
        .map(|e| format!("{} {}", e.error, e.count))
        .collect();
    let plural = if total == 1 { "" } else { "s" };
    Some(format!(
        "{total} {} AER error{plural} ({})",
        severity.label(),
        names.join(", ")
    ))
}

/// The findings of a run, most severe first.
pub fn collect(r: &WatchResult) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &r.devices {
        if d.departures > 0 {
            let back = if d.present {
                " and came back"
            } else {
                ", and was not back at the end"
            };
            out.push(
                Finding::new(
                    Severity::Error,
                    &d.device,
                    format!(
                        "{} left {} during the watch{back}: a surprise removal, a hot unplug \
                         or a link that dropped",
                        d.device,
                        times(d.departures)
                    ),
                )
                .with_advice("Read the kernel log (dmesg) for pciehp, AER or USB disconnect lines of that time."),
            );
        }
        for severity in [AerSeverity::Fatal, AerSeverity::Nonfatal] {
            if let Some(t) = errors_text(d, severity) {
                out.push(
                    Finding::new(
                        Severity::Error,
                        &d.device,
                        format!(
                            "{t} on {} during the watch: uncorrectable, so data was lost or \
                             the device was reset",
                            d.device
                        ),
                    )
                    .with_advice("Read the kernel log (dmesg) for the AER report of each error and the device's recovery."),
                );
            }
        }
        if let Some(t) = errors_text(d, AerSeverity::Correctable) {
            out.push(
                Finding::new(
                    Severity::Warning,
                    &d.device,
                    format!(
                        "{t} on {} during the watch, at {}: each one \
                         is a replayed or repaired transfer; a link that keeps counting them \
                         is marginal at its speed",
                        d.device,
                        state(d.errors_at)
                    ),
                )
                .with_advice("Check the slot, riser or cable; compare a run one generation lower (the firmware's or the kernel's link speed setting)."),
            );
        }
        // A port and the function below it show the same link: the finding is said once,
        // of the function below.
        let said_below = r.devices.iter().any(|e| {
            e.parent.as_deref() == Some(d.device.as_str())
                && (e.link_changes, e.first, e.last, e.lowest)
                    == (d.link_changes, d.first, d.last, d.lowest)
        });
        if d.link_changes > 0 && !said_below {
            let downs = if d.link_downs > 0 {
                format!(", down {}", times(d.link_downs))
            } else {
                String::new()
            };
            out.push(
                Finding::new(
                    Severity::Warning,
                    &d.device,
                    format!(
                        "{}'s link changed {}{downs} during the watch: {} at the start, {} \
                         at the end, {} at its lowest (capable {})",
                        d.device,
                        times(d.link_changes),
                        state(d.first),
                        state(d.last),
                        state(d.lowest),
                        state(d.capable)
                    ),
                )
                .with_advice("A link that retrains is marginal at its speed or has a power-management problem: check the slot, riser or cable and the ASPM policy."),
            );
        }
        if d.carrier_changes > 0 {
            out.push(
                Finding::new(
                    Severity::Warning,
                    &d.device,
                    format!(
                        "{}'s carrier changed {} during the watch: the link went down and up",
                        d.device,
                        times(d.carrier_changes)
                    ),
                )
                .with_advice("Check the cable, the port and the link partner; `ethtool` shows what was negotiated."),
            );
        }
        if d.speed_changes > 0 {
            out.push(Finding::new(
                Severity::Warning,
                &d.device,
                format!(
                    "{}'s speed changed {} during the watch",
                    d.device,
                    times(d.speed_changes)
                ),
            ));
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::watch::ErrorCount;

    #[test]
    fn correctable_errors_name_the_link_they_were_counted_at() {
        let d = DeviceSummary {
            device: "0000:00:1c.0".into(),
            errors_at: Some(LinkState::new(model::PcieGen::Gen3, 1)),
            errors: vec![ErrorCount {
                severity: AerSeverity::Correctable,
                error: "RxErr".into(),
                count: 12,
            }],
            present: true,
            ..DeviceSummary::default()
        };
        let r = WatchResult {
            devices: vec![d],
            ..WatchResult::default()
        };
        let f = collect(&r);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.starts_with(
                "12 correctable AER errors (RxErr 12) on 0000:00:1c.0 during the watch, at 8GT/s x1:"
            ),
            "{}",
            f[0].message
        );
    }
}
