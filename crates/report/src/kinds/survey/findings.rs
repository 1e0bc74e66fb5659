//! What a survey concludes from its parts: a sentence per fact, a link lost or changed between
//! two surveys, the disks' actions.

#[allow(clippy::wildcard_imports)]
use super::*;

/// `s` as a sentence: its first letter capitalised, a full stop at its end.
pub(super) fn as_sentence(s: &str) -> String {
    let mut chars = s.chars();
    let mut o: String = match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => return String::new(),
    };
    if !o.ends_with('.') {
        o.push('.');
    }
    o
}

/// The interrupts the stress part's own disk workers (io, hdd) caused on the measured CPUs, in words
/// (`its io workers made vda interrupt 52837 times on the measured CPUs: load the survey
/// generated itself`), when they caused any: the latency document names the disk behind
/// each line, and its stress spec says whether io or hdd workers ran.
pub(super) fn self_generated_load(docs: &[PartDoc<'_>]) -> Option<String> {
    let d = docs.iter().find(|d| d.part.id == "latency stress")?;
    let view: crate::kinds::latency::LatencyDocument = d.document.view("latency stress").ok()?;
    let spec = &view.stress.as_ref()?.spec;
    let workers = match (spec.io > 0, spec.hdd > 0) {
        (false, false) => return None,
        (true, false) => "io workers",
        (false, true) => "hdd workers",
        (true, true) => "io and hdd workers",
    };
    let mut disks: Vec<(String, u64)> = Vec::new();
    for src in view
        .interrupts
        .iter()
        .flat_map(|i| &i.cpus)
        .flat_map(|c| &c.sources)
    {
        if let Some(disk) = &src.block_device {
            match disks.iter_mut().find(|(d, _)| d == disk) {
                Some((_, n)) => *n += src.count,
                None => disks.push((disk.clone(), src.count)),
            }
        }
    }
    let total: u64 = disks.iter().map(|(_, n)| n).sum();
    (total > 0).then(|| {
        let names: Vec<&str> = disks.iter().map(|(d, _)| d.as_str()).collect();
        format!(
            "its {workers} made {} interrupt {total} times on the measured CPUs: load the \
             survey generated itself",
            names.join(", ")
        )
    })
}

/// What to do about a storage device at efficiency `eff` of its path's bottleneck.
pub(super) fn disk_action(s: &Summary, eff: f64) -> String {
    let link = s.bottleneck.and_then(|i| s.links.get(i));
    let below = link.and_then(|l| {
        l.capable_state
            .as_ref()
            .filter(|c| **c != l.state)
            .map(|c| (l.name.clone(), l.state.clone(), c.clone()))
    });
    match below {
        // Near a ceiling that is itself lowered: the link state is the lever (seed 003).
        Some((name, now, capable)) if eff >= 0.7 => format!(
            "the link limits it and runs below its capability: {name} at {now} of {capable}; \
             raise the link speed or width"
        ),
        _ if eff >= 0.9 => "none: the device runs near the ceiling of its path".to_string(),
        _ => "the link is not the limit: the device itself, its filesystem or the I/O size \
              is; see the part's findings"
            .to_string(),
    }
}

/// A link of an audit document that runs below what both its ends support.
pub(super) struct LostLink {
    pub(super) address: String,
    pub(super) device: String,
    pub(super) now: String,
    pub(super) capable: String,
    pub(super) loss_bps: f64,
    pub(super) loss_percent: f64,
}

/// The links of an audit document that lose bandwidth against what both ends support.
pub(super) fn audit_links(doc: &Document) -> Vec<LostLink> {
    let Ok(AuditDocument { pci, .. }) = doc.view::<AuditDocument>("audit") else {
        return Vec::new();
    };
    pci.links
        .iter()
        // Below half a percent is rounding of the model, not a lost link.
        .filter(|l| l.ceiling.loss_percent >= 0.5)
        .map(|l| {
            let f = pci.functions.iter().find(|f| f.address == l.downstream);
            let name = f
                .map(|f| {
                    [f.names.vendor.as_deref(), f.names.device.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|n| !n.is_empty());
            LostLink {
                address: l.downstream.to_string(),
                device: match name {
                    Some(n) => format!("{} ({n})", l.downstream),
                    None => l.downstream.to_string(),
                },
                now: l.comparison.current.to_string(),
                capable: l.comparison.common.to_string(),
                loss_bps: l.ceiling.loss_bps,
                loss_percent: l.ceiling.loss_percent,
            }
        })
        .collect()
}

/// The PCI Express links of audits side by side: each link's state in every survey, the
/// ones that changed first (the seed-003 Gen 2 -> Gen 3 before/after).
pub(super) fn compare_links(all: &[(String, Vec<PartDoc<'_>>)], audits: &[&Document]) -> String {
    let states: Vec<Vec<(String, String)>> = audits
        .iter()
        .map(|d| {
            let Ok(view) = d.view::<AuditDocument>("audit") else {
                return Vec::new();
            };
            view.pci
                .links
                .iter()
                .map(|l| (l.downstream.to_string(), l.comparison.current.to_string()))
                .collect()
        })
        .collect();
    let mut addresses: Vec<String> = states.iter().flatten().map(|(a, _)| a.clone()).collect();
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return "No PCI Express link in these audits.\n".to_string();
    }
    let mut rows: Vec<(bool, Vec<String>)> = addresses
        .iter()
        .map(|a| {
            let cells: Vec<String> = states
                .iter()
                .map(|s| {
                    s.iter()
                        .find(|(x, _)| x == a)
                        .map_or_else(crate::table::dash, |(_, st)| st.clone())
                })
                .collect();
            let changed = cells.windows(2).any(|w| w[0] != w[1]);
            let mut row = vec![a.clone()];
            row.extend(cells);
            row.push(if changed { "changed" } else { "" }.to_string());
            (changed, row)
        })
        .collect();
    rows.sort_by_key(|(changed, _)| !changed);
    let mut columns: Vec<(&str, bool)> = vec![("Link (device)", false)];
    for (name, _) in all {
        columns.push((name.as_str(), false));
    }
    columns.push(("", false));
    let mut o = String::new();
    let rows: Vec<Vec<String>> = rows.into_iter().map(|(_, r)| r).collect();
    crate::markdown::table(&mut o, &columns, &rows);
    o
}
