//! `count --list`'s facts: the PMUs sysfs describes (with their events and terms, a PCIe PMU
//! with the root ports it counts) and the events of no sysfs PMU. counters reads them
//! (`counters::list`); report's `pmu_list` document carries and shows them.

use serde::{Deserialize, Serialize};

/// A PCIe PMU and the root port it counts (from `count --list`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmuLink {
    pub pmu: String,
    /// `dwc_rootport`, `vendor_pcie_bdf`, `hisi_pcie`, `uncore_iio_free_running`.
    pub family: String,
    /// The root ports (PCI addresses) it counts for, as the audit names them.
    pub root_ports: Vec<String>,
    /// How the name (or sysfs) says what it covers.
    pub covers: String,
}

/// `count --list`: the PMUs with their events, PCIe ones with the root ports they count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmuListing {
    pub name: String,
    pub type_id: u32,
    #[serde(default)]
    pub cpumask: Option<Vec<u32>>,
    pub events: Vec<String>,
    pub formats: Vec<String>,
    #[serde(default)]
    pub link: Option<PmuLink>,
}

/// `count --list`'s events of no sysfs PMU, as `perf list` lists them: perf's software and
/// generic hardware names, and every tracepoint of tracefs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventListing {
    pub software: Vec<String>,
    pub hardware: Vec<String>,
    pub tracepoints: Vec<String>,
    /// Why the tracepoints could not be listed (tracefs unreadable or absent).
    #[serde(default)]
    pub tracepoints_missing: Option<String>,
}
