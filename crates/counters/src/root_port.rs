//! The PCIe PMU beside an engine: which PMU counts the path of a benchmark's target (the one
//! whose root port is on it), the payload-byte events it counts with, and the counters opened
//! for a run and read at its end. `bench disk` and `bench net` use it through cli's samplers;
//! `count --list` joins PMUs and root ports with the same [`AuditedFunction::is_root_port`].

use crate::event::{resolve, Event, Pmus};
use crate::pcie_pmu::{self, PciePmu};
use crate::perf::{outcome, Outcome, Scope, Session};
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::{AuditedFunction, PciAudit};
use model::root::SysRoot;

/// The root ports of `audit`.
pub fn root_ports(audit: &PciAudit) -> impl Iterator<Item = &AuditedFunction> {
    audit.functions.iter().filter(|f| f.is_root_port())
}

/// The root port among `pci` (PCI addresses from a target towards the CPU), if the path has one.
pub fn on_path<'a>(audit: &'a PciAudit, pci: &[String]) -> Option<&'a AuditedFunction> {
    pci.iter()
        .find_map(|d| root_ports(audit).find(|f| f.address.to_string() == *d))
}

/// The PCIe PMU that counts one of the functions of `pci` (listed from the target towards the
/// CPU), and the function it covers (the root port).
pub fn root_port_pmu(root: &SysRoot, pmus: &Pmus, pci: &[String]) -> Option<(PciePmu, String)> {
    let addr = |s: &str| s.parse::<PciAddress>().ok();
    pmus.list.iter().find_map(|p| {
        let c = pcie_pmu::classify(p, root)?;
        let port = pci.iter().find(|d| {
            addr(d).is_some_and(|a| c.covers(a.domain, a.bus, a.device << 3 | a.function))
        })?;
        Some((c, port.clone()))
    })
}

/// The payload events of `class` in perf's syntax, as (side, event): 0 = Rx, 1 = Tx. A
/// hisi_pcie PMU counts for a target: the function the benchmark drives (the first PCI
/// address of `pci`), by its requester ID (`bdf=`).
pub fn payload_events(class: &PciePmu, pci: &[String]) -> Vec<(usize, String)> {
    let target = match (
        class.family,
        pci.first().and_then(|d| d.parse::<PciAddress>().ok()),
    ) {
        ("hisi_pcie", Some(a)) => format!(
            ",bdf=0x{:x}",
            u16::from(a.bus) << 8 | u16::from(a.device) << 3 | u16::from(a.function)
        ),
        _ => String::new(),
    };
    [(0, &class.rx_bytes_event), (1, &class.tx_bytes_event)]
        .into_iter()
        .filter_map(|(side, name)| {
            Some((side, format!("{}/{}{target}/", class.pmu, name.as_ref()?)))
        })
        .collect()
}

/// The root port's PMU opened for a run: its name, the root port, the (side, event) pairs
/// (0 = Rx, 1 = Tx) and their counters.
pub struct PayloadCounters {
    pub pmu: String,
    pub port: String,
    events: Vec<(usize, Event)>,
    session: Session,
}

/// One side's count at the end of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SideCount {
    pub event: Option<String>,
    /// Bytes counted; `None` when the counter did not run.
    pub bytes: Option<f64>,
}

/// What the root port's PMU counted: Rx (what the device wrote to memory), Tx (what it read),
/// and why a counter could not count, if one could not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PayloadCount {
    pub rx: SideCount,
    pub tx: SideCount,
    pub reason: Option<String>,
}

impl PayloadCounters {
    /// Open the payload counters of `class` for a run on the functions `pci` (its root port
    /// `port`), disabled; what stops them is said in `notes`.
    pub fn open(
        root: &SysRoot,
        pmus: &Pmus,
        class: &PciePmu,
        port: String,
        pci: &[String],
        notes: &mut Vec<String>,
    ) -> Option<PayloadCounters> {
        let mut events = Vec::new();
        for (side, spec) in payload_events(class, pci) {
            match resolve(&spec, None, pmus) {
                Ok(e) => events.push((side, e)),
                Err(e) => notes.push(e.to_string()),
            }
        }
        if events.is_empty() {
            notes.push(format!(
                "{} covers root port {port} but has no payload-byte event headroom knows",
                class.pmu
            ));
            return None;
        }
        let cpus = crate::pmu::online_cpus(root).unwrap_or_default();
        let mut only: Vec<Event> = events.iter().map(|(_, e)| e.clone()).collect();
        match Session::open(&mut only, &Scope::Cpus(cpus)) {
            Ok(session) => Some(PayloadCounters {
                pmu: class.pmu.clone(),
                port,
                events,
                session,
            }),
            Err(e) => {
                notes.push(format!("{}: {e}", class.pmu));
                None
            }
        }
    }

    pub fn enable(&self) {
        self.session.enable();
    }

    /// Stop the counters and read them.
    pub fn stop(&self) -> PayloadCount {
        self.session.disable();
        let readings = self.session.read();
        let mut out = PayloadCount::default();
        for (k, (side, e)) in self.events.iter().enumerate() {
            let value = match (self.session.error(k), readings.get(k).copied().flatten()) {
                (Some(err), _) => {
                    out.reason = Some(err.to_string());
                    None
                }
                (None, Some(r)) => match outcome(&r, e.scale) {
                    Outcome::Counted { value, .. } => Some(value),
                    _ => None,
                },
                (None, None) => None,
            };
            let count = SideCount {
                event: Some(e.name.clone()),
                bytes: value,
            };
            if *side == 0 {
                out.rx = count;
            } else {
                out.tx = count;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    fn fixture(name: &str) -> SysRoot {
        testsupport::fixtures::own_root(name)
    }

    fn strings(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_nic_behind_a_dwc_root_port_is_counted_by_its_pmu() {
        // A NIC at 0000:31:00.0 under root port 0000:30:03.0 (sbdf 0x3018).
        let root = fixture("pmu-dwc-rootport");
        let pmus = Pmus::read(&root).unwrap();
        let path = strings(&["0000:31:00.0", "0000:30:03.0"]);
        let (class, port) = root_port_pmu(&root, &pmus, &path).unwrap();
        assert_eq!(
            (class.pmu.as_str(), port.as_str()),
            ("dwc_rootport_3018", "0000:30:03.0")
        );
        assert_eq!(
            payload_events(&class, &path),
            vec![
                (0, "dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/".to_string()),
                (1, "dwc_rootport_3018/Tx_PCIe_TLP_Data_Payload/".to_string()),
            ]
        );
        // Both resolve to the driver's encodings (eventid 0x21 / 0x20 of type 0, lane events
        // aside: Documentation/admin-guide/perf/dwc_pcie_pmu.rst).
        for (_, spec) in payload_events(&class, &path) {
            resolve(&spec, None, &pmus).unwrap();
        }
        // A path elsewhere is not this PMU's.
        assert!(root_port_pmu(&root, &pmus, &strings(&["0000:41:00.0", "0000:40:01.0"])).is_none());
    }

    #[test]
    fn a_hisi_pmu_counts_the_nic_by_its_requester_id() {
        let root = fixture("pmu-hisi-pcie");
        let pmus = Pmus::read(&root).unwrap();
        let path = strings(&["0000:7d:00.0", "0000:7c:08.0"]);
        let (class, port) = root_port_pmu(&root, &pmus, &path).unwrap();
        assert_eq!(port, "0000:7c:08.0");
        let ev = payload_events(&class, &path);
        // Rx: the NIC's writes to memory (received packets); Tx: completions of its reads
        // (packets sent); both for requester 7d:00.0.
        assert_eq!(ev[0], (0, format!("{}/rx_mwr_flux,bdf=0x7d00/", class.pmu)));
        assert_eq!(ev[1], (1, format!("{}/rx_mrd_flux,bdf=0x7d00/", class.pmu)));
    }
}
