//! bench mmio's judgement: a BAR reached through a link that trained below what its ends
//! support, so every timed access crosses the slower link; a width stopped by a fault; a
//! window small enough to measure the cache.

use model::mmio::{AccessResult, Region};
use model::path::TargetPath;
use model::{Finding, Severity};

/// What a reader must know of a region's numbers: each width whose run a fault stopped (where
/// in the region, after how many accesses), and that a window of a file that fits in the
/// last-level cache (`llc` bytes) measured the cache, not DRAM.
pub fn region_notes(region: &Region, results: &[AccessResult], llc: Option<u64>) -> Vec<String> {
    let mut notes = Vec::new();
    for r in results {
        if let Some(f) = &r.fault {
            notes.push(format!(
                "{} {} took {} at offset {:#x} of {} ({:#x} into the window) after {} \
                 accesses: the page behind it is gone (a truncated file) or the device did not \
                 answer; the run of that width stopped there",
                r.width.label(),
                r.op,
                f.signal,
                region.window_offset + f.offset,
                region.given,
                f.offset,
                r.accesses
            ));
        }
    }
    if let Some(l) = llc.filter(|&l| region.kind != "bar" && region.window_bytes <= l) {
        notes.push(format!(
            "the {}-byte window of a file fits in the {} KiB last-level cache: its numbers are \
             cache speeds, above DRAM's",
            region.window_bytes,
            l >> 10
        ));
    }
    notes
}

/// A warning for each link on `path` that runs below its capable state (`lspci -vv`'s
/// LnkSta below LnkCap), about the BAR named `bar` (`0000:01:00.0:2`). A link whose capable
/// state is unknown, or equal to its state, makes none.
pub fn downgraded_links(bar: &str, path: &TargetPath) -> Vec<Finding> {
    path.links
        .iter()
        .filter_map(|l| {
            let capable = l.capable_state.as_ref()?;
            (capable != &l.state).then(|| {
                Finding::new(
                    Severity::Warning,
                    bar,
                    format!(
                        "the BAR's accesses cross {} at {} (capable {capable}): the link is \
                         downgraded",
                        l.name, l.state
                    ),
                )
                .with_advice(
                    "reseat the card or check the slot's lanes and the link training (lspci \
                     -vv LnkSta)",
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::path::{Chain, LinkKind, PathLink, PathLinkState};
    use model::{LinkState, PcieGen};

    fn path(state: LinkState, capable: Option<LinkState>) -> TargetPath {
        TargetPath {
            chain: Chain {
                target: "0000:01:00.0".into(),
                hops: Vec::new(),
                stopped: None,
                warnings: Vec::new(),
            },
            links: vec![PathLink {
                kind: LinkKind::Pcie,
                hop: "0000:01:00.0".into(),
                name: "PCIe 0000:00:01.0 -> 0000:01:00.0".into(),
                state: PathLinkState::Pcie(state),
                capable_state: capable.map(PathLinkState::Pcie),
                ceiling_bps: Some(1e9),
                ceiling_other_direction_bps: None,
                capable_ceiling_bps: None,
                basis: String::new(),
                note: None,
            }],
            bottleneck: Some(0),
            no_bottleneck_reason: None,
            bottleneck_from_cpu: Some(0),
            backs_gadget_luns: Vec::new(),
        }
    }

    #[test]
    fn a_bar_behind_a_downgraded_link_is_a_finding() {
        // The Rockchip guide's RK3588 endpoint trained at Gen 2 x1 instead of Gen 3 x4.
        let f = downgraded_links(
            "0000:01:00.0:2",
            &path(
                LinkState::new(PcieGen::Gen2, 1),
                Some(LinkState::new(PcieGen::Gen3, 4)),
            ),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].subject, "0000:01:00.0:2");
        assert_eq!(
            f[0].message,
            "the BAR's accesses cross PCIe 0000:00:01.0 -> 0000:01:00.0 at 5 GT/s x1 \
             (capable 8 GT/s x4): the link is downgraded"
        );
        let same = LinkState::new(PcieGen::Gen3, 4);
        assert!(downgraded_links("0000:01:00.0:2", &path(same, Some(same))).is_empty());
        assert!(downgraded_links("0000:01:00.0:2", &path(same, None)).is_empty());
    }
}
