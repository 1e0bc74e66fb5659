//! Which PCIe root ports a PMU counts, from its name and sysfs attributes, so `count --list`
//! and the benchmarks can join a PMU to the audit's root ports.
//!
//! - `dwc_rootport_<sbdf hex>` (drivers/perf/dwc_pcie_pmu.c, dwc_pcie_register_dev():
//!   sbdf = domain << 16 | bus << 8 | devfn): one root port; reports TLP payload in bytes.
//! - `pcie_bdf_<hex>`: the vendor driver the Yitian 710 article (seed 002) uses, the
//!   ancestor of dwc_pcie_pmu, named the same way (`pcie_bdf_200` is its root port
//!   `000200`) and counting payload in 16-byte units.
//! - `hisi_pcie<sicl>_core<n>` (drivers/perf/hisilicon/hisi_pcie_pmu.c): the root ports
//!   whose routing IDs lie in `bdf_min..=bdf_max` (or on root bus `bus`).
//! - `uncore_iio_free_running_<n>` (arch/x86/events/intel/uncore_snbep.c): the root buses
//!   listed in `/sys/devices/uncore_iio_<n>/die<k>` (`0000:00` = segment:bus).

use crate::pmu::{parse_number, Pmu};
use crate::{ReadUnder, SysRoot};

/// What a PCIe PMU covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// One root port: domain, bus, devfn.
    RootPort { domain: u32, bus: u8, devfn: u8 },
    /// Routing IDs (bus << 8 | devfn) in a range, any domain.
    RoutingIds { min: u16, max: u16 },
    /// Every port on these root buses (segment, bus).
    RootBuses(Vec<(u32, u8)>),
}

/// A PCIe PMU and what it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciePmu {
    pub pmu: String,
    /// `dwc_rootport`, `vendor_pcie_bdf`, `hisi_pcie`, `uncore_iio_free_running`.
    pub family: &'static str,
    pub coverage: Coverage,
    /// The events that count payload bytes into the CPU side (Rx, device writes/DMA to
    /// memory: a disk read) and out of it (Tx: a disk write), when the family has them.
    pub rx_bytes_event: Option<String>,
    pub tx_bytes_event: Option<String>,
}

impl PciePmu {
    /// Whether it counts the traffic of root port `domain:bus:devfn`.
    pub fn covers(&self, domain: u32, bus: u8, devfn: u8) -> bool {
        match &self.coverage {
            Coverage::RootPort {
                domain: d,
                bus: b,
                devfn: f,
            } => (*d, *b, *f) == (domain, bus, devfn),
            Coverage::RoutingIds { min, max } => {
                let rid = (bus as u16) << 8 | devfn as u16;
                (*min..=*max).contains(&rid)
            }
            Coverage::RootBuses(list) => list.contains(&(domain, bus)),
        }
    }

    /// One phrase for the listing: `root port 0000:30:03.0`, `routing IDs 7c:00.0-7c:1f.7`.
    pub fn describe(&self) -> String {
        let rid = |r: u16| format!("{:02x}:{:02x}.{}", r >> 8, (r >> 3) & 0x1f, r & 7);
        match &self.coverage {
            Coverage::RootPort { domain, bus, devfn } => format!(
                "named for root port {domain:04x}:{bus:02x}:{:02x}.{}",
                devfn >> 3,
                devfn & 7
            ),
            Coverage::RoutingIds { min, max } => {
                format!(
                    "routing IDs {}..{} (sysfs bdf_min/bdf_max)",
                    rid(*min),
                    rid(*max)
                )
            }
            Coverage::RootBuses(l) => format!(
                "root bus {}",
                l.iter()
                    .map(|(s, b)| format!("{s:04x}:{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

fn sbdf(hex: &str) -> Option<Coverage> {
    let v = u32::from_str_radix(hex, 16).ok()?;
    Some(Coverage::RootPort {
        domain: v >> 16,
        bus: ((v >> 8) & 0xff) as u8,
        devfn: (v & 0xff) as u8,
    })
}

/// `0000:00` (segment:bus) as the uncore_iio die files print it.
fn segment_bus(s: &str) -> Option<(u32, u8)> {
    let (seg, bus) = s.trim().split_once(':')?;
    Some((
        u32::from_str_radix(seg, 16).ok()?,
        u8::from_str_radix(bus, 16).ok()?,
    ))
}

/// The event of `pmu` named `name` in any case (the driver renamed them to lower case).
fn event_named(pmu: &Pmu, name: &str) -> Option<String> {
    pmu.events
        .keys()
        .find(|k| k.eq_ignore_ascii_case(name))
        .cloned()
}

/// What `pmu` covers, when it is one of the PCIe families.
pub fn classify(pmu: &Pmu, root: &SysRoot) -> Option<PciePmu> {
    let n = &pmu.name;
    let payload = |family: &'static str, coverage| PciePmu {
        pmu: n.clone(),
        family,
        coverage,
        rx_bytes_event: event_named(pmu, "Rx_PCIe_TLP_Data_Payload"),
        tx_bytes_event: event_named(pmu, "Tx_PCIe_TLP_Data_Payload"),
    };
    if let Some(hex) = n.strip_prefix("dwc_rootport_") {
        return Some(payload("dwc_rootport", sbdf(hex)?));
    }
    if let Some(hex) = n.strip_prefix("pcie_bdf_") {
        return Some(payload("vendor_pcie_bdf", sbdf(hex)?));
    }
    if n.starts_with("hisi_pcie") && n.contains("_core") {
        let num = |k: &str| pmu.attributes.get(k).and_then(|v| parse_number(v));
        let coverage = match (num("bdf_min"), num("bdf_max"), num("bus")) {
            (Some(a), Some(b), _) => Coverage::RoutingIds {
                min: a as u16,
                max: b as u16,
            },
            (_, _, Some(bus)) => Coverage::RoutingIds {
                min: (bus as u16) << 8,
                max: (bus as u16) << 8 | 0xff,
            },
            _ => return None,
        };
        return Some(PciePmu {
            pmu: n.clone(),
            family: "hisi_pcie",
            coverage,
            // Rx: the device writes memory (a disk read's DMA); Tx: completions of its reads.
            rx_bytes_event: event_named(pmu, "rx_mwr_flux"),
            tx_bytes_event: event_named(pmu, "rx_mrd_flux"),
        });
    }
    if let Some(idx) = n.strip_prefix("uncore_iio_free_running_") {
        let dir = format!("/sys/devices/uncore_iio_{idx}");
        let mut buses = Vec::new();
        if let Ok(rd) = std::fs::read_dir(root.path(&dir)) {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|f| f.starts_with("die"))
                .collect();
            names.sort();
            for f in names {
                if let Some(sb) = root
                    .read(&format!("{dir}/{f}"))
                    .ok()
                    .as_deref()
                    .and_then(segment_bus)
                {
                    buses.push(sb);
                }
            }
        }
        return Some(PciePmu {
            pmu: n.clone(),
            family: "uncore_iio_free_running",
            coverage: Coverage::RootBuses(buses),
            // Per port of the IIO stack; which port a root port is needs the stack's port
            // map, so the whole stack's bw_in_port0 is only a hint: none chosen here.
            rx_bytes_event: None,
            tx_bytes_event: None,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::read_pmu;

    fn root(f: &str) -> SysRoot {
        testsupport::fixtures::own_root(f)
    }

    #[test]
    fn dwc_and_vendor_names_are_root_ports() {
        let r = root("pmu-dwc-rootport");
        let p = classify(&read_pmu(&r, "dwc_rootport_3018").unwrap(), &r).unwrap();
        // 0x3018: domain 0, bus 0x30, devfn 0x18 = device 3 function 0.
        assert!(p.covers(0, 0x30, 0x18));
        assert!(!p.covers(1, 0x30, 0x18));
        assert_eq!(p.describe(), "named for root port 0000:30:03.0");
        assert_eq!(
            p.rx_bytes_event.as_deref(),
            Some("Rx_PCIe_TLP_Data_Payload")
        );
        let d = classify(&read_pmu(&r, "dwc_rootport_10008").unwrap(), &r).unwrap();
        assert!(d.covers(1, 0, 0x08), "domain 1, bus 0, 01.0");
        let v = classify(&read_pmu(&r, "pcie_bdf_200").unwrap(), &r).unwrap();
        assert_eq!(v.family, "vendor_pcie_bdf");
        assert!(
            v.covers(0, 2, 0),
            "seed 002: pcie_bdf_200 is root port 000200"
        );
    }

    #[test]
    fn hisi_by_routing_ids_and_iio_by_die_files() {
        let r = root("pmu-hisi-pcie");
        let h = classify(&read_pmu(&r, "hisi_pcie0_core1").unwrap(), &r).unwrap();
        assert!(h.covers(0, 0x7c, 0x08));
        assert!(!h.covers(0, 0x7d, 0));
        let r = root("pmu-uncore-iio");
        let i = classify(&read_pmu(&r, "uncore_iio_free_running_1").unwrap(), &r).unwrap();
        assert_eq!(i.coverage, Coverage::RootBuses(vec![(0, 0x16)]));
        assert!(i.covers(0, 0x16, 0));
        assert!(classify(&read_pmu(&r, "software").unwrap(), &r).is_none());
    }
}
