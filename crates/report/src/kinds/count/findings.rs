//! What a `count` run finds: the root port's PCIe PMU (or why there is none) and what could
//! not be counted.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A root port as the audit found it, for the PMU findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootPortFact {
    /// `0000:00:1c.0`.
    pub address: String,
    pub vendor_id: Option<u16>,
}

/// PCI vendor IDs whose DesignWare root ports dwc_pcie_pmu binds (its dwc_pcie_vendor_ids
/// table: PCI_VENDOR_ID_ALIBABA 0x1ded, _AMPERE 0x1def, _QCOM 0x17cb in
/// include/linux/pci_ids.h; Rockchip 0x1d87 joined the list in 2025).
pub(super) const DWC_RAS_DES_VENDORS: [(u16, &str); 4] = [
    (0x1ded, "Alibaba"),
    (0x1def, "Ampere"),
    (0x17cb, "Qualcomm"),
    (0x1d87, "Rockchip"),
];

/// One finding per root port that no PMU counts, with the likely reason.
/// `kernel` is the release (`6.1.0-27-amd64`), for the "older than the driver" reason.
pub fn root_port_pmu_findings(
    ports: &[RootPortFact],
    links: &[PmuLink],
    kernel: Option<&str>,
) -> Vec<Finding> {
    use model::Severity;
    let counted = |a: &str| links.iter().any(|l| l.root_ports.iter().any(|p| p == a));
    let any_pcie_pmu = !links.is_empty();
    // dwc_pcie_pmu appeared in Linux 6.8 (drivers/perf/dwc_pcie_pmu.c, merged for v6.8).
    let old_kernel = kernel
        .and_then(|k| {
            let mut it = k.split(|c: char| !c.is_ascii_digit());
            Some((
                it.next()?.parse::<u32>().ok()?,
                it.next()?.parse::<u32>().ok()?,
            ))
        })
        .is_some_and(|v| v < (6, 8));
    ports
        .iter()
        .filter(|p| !counted(&p.address))
        .map(|p| {
            let vendor = p
                .vendor_id
                .and_then(|v| DWC_RAS_DES_VENDORS.iter().find(|(id, _)| *id == v));
            let reason = if old_kernel {
                format!(
                    "the kernel ({}) is older than dwc_pcie_pmu (Linux 6.8), the driver of \
                     DesignWare root-port PMUs",
                    kernel.unwrap_or("?")
                )
            } else if let Some((_, name)) = vendor {
                if any_pcie_pmu {
                    format!("a {name} root port should have a dwc_rootport PMU: dwc_pcie_pmu did not bind it (RAS DES capability absent or of another revision)")
                } else {
                    format!("no PCIe PMU driver is loaded: `modprobe dwc_pcie_pmu` (CONFIG_DWC_PCIE_PMU) counts {name} DesignWare root ports")
                }
            } else {
                format!(
                    "its vendor ({}) is not in dwc_pcie_pmu's RAS DES list (Alibaba, Ampere, \
                     Qualcomm; Rockchip since 2025), and no other PCIe PMU driver \
                     (hisi_pcie_pmu, Intel uncore IIO) covers it",
                    p.vendor_id.map_or("unknown".to_string(), |v| format!("{v:04x}"))
                )
            };
            Finding::new(
                Severity::Info,
                format!("root port {}", p.address),
                format!("no PMU counts this root port's traffic, so benchmarks cannot check the bus carried their bytes: {reason}"),
            )
            .with_advice("the kernel's count of the bytes (/proc/diskstats, /proc/net/dev) remains the cross-check")
        })
        .collect()
}

/// Why no PMU counts the path of PCI function `device`, in one sentence: the finding of
/// `count --list` for the root port above it (`port`, which `links` may count), or that the
/// path has no root port at all (a function on a root bus).
pub fn no_pmu_note(
    device: &str,
    port: Option<RootPortFact>,
    links: &[PmuLink],
    kernel: Option<&str>,
) -> Option<String> {
    let Some(port) = port else {
        return Some(no_root_port_note(device));
    };
    root_port_pmu_findings(&[port], links, kernel)
        .first()
        .map(|f| format!("{}: {}", f.subject, f.message))
}

/// Why no PMU counts a path whose PCI function `device` sits on a root bus with no root
/// port above it: the PCIe PMUs count at root ports (dwc_rootport, hisi_pcie) or at the
/// root-bus stacks of Intel's IIO, none of which a root-complex integrated or paravirtual
/// function (this VM's virtio) has.
pub fn no_root_port_note(device: &str) -> String {
    format!(
        "{device}: no PMU counts this device's traffic, so benchmarks cannot check the bus \
         carried their bytes: it sits on a root bus with no root port above it (an integrated \
         or paravirtual function), and PCIe PMUs count at root ports; the kernel's count of the \
         bytes (/proc/diskstats, /proc/net/dev) remains the cross-check"
    )
}

#[cfg(test)]
mod finding_tests {
    use super::*;

    #[test]
    fn a_root_port_without_pmu_says_why() {
        let ports = vec![
            RootPortFact {
                address: "0000:00:1c.0".into(),
                vendor_id: Some(0x8086),
            },
            RootPortFact {
                address: "0000:30:03.0".into(),
                vendor_id: Some(0x1ded),
            },
            RootPortFact {
                address: "0000:00:00.0".into(),
                vendor_id: Some(0x1d87),
            },
        ];
        let links = vec![PmuLink {
            pmu: "dwc_rootport_3018".into(),
            family: "dwc_rootport".into(),
            root_ports: vec!["0000:30:03.0".into()],
            covers: String::new(),
        }];
        let f = root_port_pmu_findings(&ports, &links, Some("6.12.1"));
        assert_eq!(f.len(), 2, "the counted port has no finding");
        assert!(
            f[0].message
                .contains("vendor (8086) is not in dwc_pcie_pmu's RAS DES list"),
            "{}",
            f[0].message
        );
        assert!(
            f[1].message
                .contains("a Rockchip root port should have a dwc_rootport PMU"),
            "{}",
            f[1].message
        );
        let old = root_port_pmu_findings(&ports[..1], &[], Some("6.1.0-27-amd64"));
        assert!(
            old[0]
                .message
                .contains("older than dwc_pcie_pmu (Linux 6.8)"),
            "{}",
            old[0].message
        );
        let none = root_port_pmu_findings(&ports[2..], &[], Some("6.12"));
        assert!(
            none[0].message.contains("`modprobe dwc_pcie_pmu`"),
            "{}",
            none[0].message
        );
    }
}
