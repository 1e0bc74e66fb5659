//! `count --list`: the PMUs sysfs describes as `perf list` shows them (each event with the
//! terms the user must give as `TERM=?`, each format term with its bits), a PCIe PMU joined
//! to the root ports it counts, and the events of no sysfs PMU (perf's software and generic
//! hardware names, the tracepoints of tracefs).

use crate::pcie_pmu::{self, PciePmu};
use crate::pmu::{self, Format, Pmu, TermValue};
use crate::SysRoot;
use model::inventory::pci::address::PciAddress;
use model::pmu::{EventListing, PmuLink, PmuListing};

impl PciePmu {
    /// The PMU as a listing shows it, with those of `ports` (the audit's root ports) it
    /// counts.
    pub fn link(&self, ports: &[PciAddress]) -> PmuLink {
        PmuLink {
            pmu: self.pmu.clone(),
            family: self.family.to_string(),
            root_ports: ports
                .iter()
                .filter(|a| self.covers(a.domain, a.bus, a.device << 3 | a.function))
                .map(|a| a.to_string())
                .collect(),
            covers: self.describe(),
        }
    }
}

/// A format term's bits as perf prints them: `config:0-7`, `config1:0,32-39`.
fn format_bits(f: &Format) -> String {
    let word = ["config", "config1", "config2", "config3"][f.word];
    let ranges: Vec<String> = f
        .ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    format!("{word}:{}", ranges.join(","))
}

/// Every PMU of `pmus` (read under `root`) as `count --list` shows it, a PCIe one with those
/// of `ports` it counts.
pub fn pmus(root: &SysRoot, pmus: &[Pmu], ports: &[PciAddress]) -> Vec<PmuListing> {
    pmus.iter()
        .map(|p| PmuListing {
            name: p.name.clone(),
            type_id: p.type_id,
            cpumask: p.cpumask.clone(),
            // perf lists a parameter the user must give as `lane=?`.
            events: p
                .events
                .iter()
                .map(|(k, alias)| {
                    let mut name = k.clone();
                    for t in &alias.terms {
                        if t.value == TermValue::Required {
                            name.push_str(&format!(",{}=?", t.name));
                        }
                    }
                    name
                })
                .collect(),
            formats: p
                .formats
                .iter()
                .map(|(k, f)| format!("{k}={}", format_bits(f)))
                .collect(),
            link: pcie_pmu::classify(p, root).map(|c| c.link(ports)),
        })
        .collect()
}

/// The events of no sysfs PMU: perf's software and generic hardware names, and the
/// tracepoints under `root` (or why they could not be listed).
pub fn events(root: &SysRoot) -> EventListing {
    let (software, hardware) = crate::event::builtin_names();
    let (tracepoints, tracepoints_missing) = match pmu::tracepoints(root) {
        Ok(t) if t.is_empty() => (
            t,
            Some(format!(
                "none found: tracefs is not mounted at {} (mount -t tracefs nodev \
                 /sys/kernel/tracing)",
                pmu::TRACEFS_EVENTS.join(" or ")
            )),
        ),
        Ok(t) => (t, None),
        Err(e) => (
            Vec::new(),
            Some(format!(
                "not listed: {e}; tracefs is root's alone here: run `headroom count --list` as \
                 root, or `mount -o remount,mode=755 /sys/kernel/tracing`"
            )),
        ),
    };
    EventListing {
        software,
        hardware,
        tracepoints,
        tracepoints_missing,
    }
}
