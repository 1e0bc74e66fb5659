//! The PCI audit's data: every function with its names, config space, the kernel's view of
//! its link and AER counters; every PCI Express link with both ends' capability and its
//! ceilings. Pure data: `probe::pci` fills it (from sysfs or an lspci dump),
//! `report::kinds::audit::findings` judges it and `report::kinds::audit::text` draws it.

pub mod address;
pub mod bar;
pub mod config;

use crate::ceiling::pcie::{link_ceiling, PcieCeiling, TlpParams};
use crate::pcie::{Aspm, LinkComparison, LinkState, PortType};
use crate::Finding;
use address::PciAddress;
use config::{Aer, ConfigSpace, ExpressCap, ExpressLink, Header, LinkMark};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// `current_link_speed`, `current_link_width`, `max_link_speed`, `max_link_width`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelLink {
    pub current: Option<LinkState>,
    pub max: Option<LinkState>,
}

/// The AER statistics files (sysfs-bus-pci-devices-aer_stats): per error name, its count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AerCounters {
    pub correctable: Vec<(String, u64)>,
    pub nonfatal: Vec<(String, u64)>,
    pub fatal: Vec<(String, u64)>,
    /// Root ports only: `aer_rootport_total_err_cor`, `_fatal`, `_nonfatal`.
    pub rootport_total_cor: Option<u64>,
    pub rootport_total_fatal: Option<u64>,
    pub rootport_total_nonfatal: Option<u64>,
}

impl AerCounters {
    /// Sum of the counts of real error names (the `TOTAL_ERR_*` lines excluded).
    pub fn total(&self) -> u64 {
        [&self.correctable, &self.nonfatal, &self.fatal]
            .iter()
            .flat_map(|v| v.iter())
            .filter(|(n, _)| !n.starts_with("TOTAL_"))
            .map(|(_, c)| *c)
            .sum()
    }

    /// The error names with a non-zero count, with their count.
    pub fn nonzero(&self) -> Vec<(String, u64)> {
        [&self.correctable, &self.nonfatal, &self.fatal]
            .iter()
            .flat_map(|v| v.iter())
            .filter(|(n, c)| *c > 0 && !n.starts_with("TOTAL_"))
            .cloned()
            .collect()
    }
}

/// System-wide PCI policy facts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PciPolicy {
    /// The selected value of /sys/module/pcie_aspm/parameters/policy (`[default] performance`
    /// -> `default`).
    pub aspm_policy: Option<String>,
    /// `pci=pcie_bus_tune_off|pcie_bus_safe|pcie_bus_perf|pcie_bus_peer2peer` from /proc/cmdline
    /// (Documentation/admin-guide/kernel-parameters.txt); `None` = the kernel's default.
    pub mps_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Names {
    pub vendor: Option<String>,
    pub device: Option<String>,
    pub subsystem: Option<String>,
    pub class: Option<String>,
}

/// Where the config space of an audit came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigSource {
    /// sysfs of a machine or a captured tree (64 bytes without root).
    #[default]
    Sysfs,
    /// An `lspci -x`/`-xxx`/`-xxxx` dump (as many bytes as it was captured with).
    LspciDump,
}

/// lspci's "(downgraded)" marks on a link's status: the speed or width below what the
/// function itself can do (see [`AuditedFunction::downgraded`] for the rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkDowngrade {
    pub speed: bool,
    pub width: bool,
}

impl LinkDowngrade {
    pub fn any(self) -> bool {
        self.speed || self.width
    }

    /// "downgraded", "speed downgraded" or "width downgraded"; `None` when neither.
    pub fn label(self) -> Option<&'static str> {
        match (self.speed, self.width) {
            (true, true) => Some("downgraded"),
            (true, false) => Some("speed downgraded"),
            (false, true) => Some("width downgraded"),
            (false, false) => None,
        }
    }
}

/// One audited function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditedFunction {
    pub address: PciAddress,
    pub parent: Option<PciAddress>,
    pub children: Vec<PciAddress>,
    #[serde(default, with = "hex_id::u16_opt")]
    pub vendor_id: Option<u16>,
    #[serde(default, with = "hex_id::u16_opt")]
    pub device_id: Option<u16>,
    #[serde(default, with = "hex_id::u16_opt")]
    pub subsystem_vendor_id: Option<u16>,
    #[serde(default, with = "hex_id::u16_opt")]
    pub subsystem_device_id: Option<u16>,
    #[serde(default, with = "hex_id::class_opt")]
    pub class: Option<u32>,
    #[serde(default, with = "hex_id::u8_opt")]
    pub revision: Option<u8>,
    pub names: Names,
    pub description: Option<String>,
    pub driver: Option<String>,
    /// The physical slot's name (/sys/bus/pci/slots); absent in documents written before.
    #[serde(default)]
    pub slot: Option<String>,
    pub numa_node: Option<i32>,
    pub local_cpulist: Option<String>,
    /// Bytes of config space that could be read (64 without root; 256 or 4096 with).
    pub config_bytes: usize,
    /// Config space decoded: header, capability lists, PCI Express capability, AER. Not
    /// read back from a document (`None` there): reports show the link states, ceilings and
    /// findings the audit derived from it, and reading the whole decode back would add its
    /// code to every binary.
    #[serde(skip_deserializing)]
    pub config: Option<ConfigSpace>,
    pub kernel_link: KernelLink,
    /// Read back from a document for its metrics (`report --format openmetrics`); absent
    /// (`None`) in documents written before.
    #[serde(default)]
    pub aer_counters: Option<AerCounters>,
    /// Index into `PciAudit::links` of the link above this function, if any.
    pub upstream_link: Option<usize>,
    /// Root port above this function (itself for a root port), following parents.
    pub root_port: Option<PciAddress>,
    /// For a device whose port above is not in the audit (a dump of one device, a hidden
    /// bridge): the ceilings of its link judged against its own capability only.
    pub own_link_ceiling: Option<LinkCeilings>,
    /// lspci's "(downgraded)" marks on this function's link status; `None` when no link
    /// state is known.
    pub downgraded: Option<LinkDowngrade>,
    /// The function's memory BARs, which CPU loads and stores reach across its link. Not in
    /// the audit document (its JSON stays as history and the cross-build checks know it);
    /// the link findings name them.
    #[serde(skip)]
    pub memory_bars: Vec<MemoryBar>,
}

/// One memory BAR of a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryBar {
    /// BAR number, 0..=5 (a 64-bit BAR is named by its lower register).
    pub index: u8,
    /// Bytes, from sysfs `resource`; `None` from config space alone (an lspci dump): sizing
    /// a BAR takes a write to it, which a capture never did.
    pub size: Option<u64>,
    pub prefetchable: bool,
    pub is_64bit: bool,
}

impl AuditedFunction {
    pub fn header(&self) -> Option<&Header> {
        self.config.as_ref().and_then(|c| c.header.as_ref())
    }

    pub fn express(&self) -> Option<&ExpressCap> {
        self.config.as_ref().and_then(|c| c.express.as_ref())
    }

    pub fn express_link(&self) -> Option<&ExpressLink> {
        self.express().and_then(|e| e.link.as_ref())
    }

    pub fn aer(&self) -> Option<&Aer> {
        self.config.as_ref().and_then(|c| c.aer.as_ref())
    }

    pub fn port_type(&self) -> Option<PortType> {
        self.express().map(|e| e.port_type)
    }

    /// A root port by its PCIe capability; without config space (a fixture, no root), a
    /// PCI-to-PCI bridge (class 0604) on a root bus.
    pub fn is_root_port(&self) -> bool {
        match self.port_type() {
            Some(t) => t == PortType::RootPort,
            None => self.parent.is_none() && self.class.is_some_and(|c| c >> 8 == 0x0604),
        }
    }

    /// lspci's marks on LnkSta speed and width.
    pub fn lspci_marks(&self) -> (Option<LinkMark>, Option<LinkMark>) {
        match self.express() {
            Some(e) => (e.lspci_downgraded_speed(), e.lspci_downgraded_width()),
            None => (None, None),
        }
    }

    /// Whether the link status is below this function's own capability, as lspci marks it
    /// "(downgraded)": from config space, pciutils' rule (never on root ports, downstream
    /// ports and PCI-to-PCIe bridges); from the kernel's attributes alone, the same rule on
    /// anything but a bridge (class 0x0604, whose port type is unknown). `None` when the
    /// link state is unknown.
    pub fn link_downgrade(&self) -> Option<LinkDowngrade> {
        let current = self.current_link()?;
        if self.express_link().and_then(ExpressLink::current).is_some() {
            let (speed, width) = self.lspci_marks();
            let down = |m| m == Some(LinkMark::Downgraded);
            return Some(LinkDowngrade {
                speed: down(speed),
                width: down(width),
            });
        }
        let bridge = self.class.map(|c| c >> 8) == Some(0x0604);
        Some(match self.capable_link() {
            Some(c) if !bridge => LinkDowngrade {
                speed: current.gen < c.gen,
                width: current.width < c.width,
            },
            _ => LinkDowngrade::default(),
        })
    }

    /// "Vendor Device" or numeric ids, the way lspci -nn falls back.
    pub fn display_name(&self) -> String {
        let v = self
            .names
            .vendor
            .clone()
            .or_else(|| self.vendor_id.map(|v| format!("Vendor {v:04x}")));
        let d = self
            .names
            .device
            .clone()
            .or_else(|| self.device_id.map(|d| format!("Device {d:04x}")));
        match (v, d, &self.description) {
            (Some(v), Some(d), _) => format!("{v} {d}"),
            (_, _, Some(desc)) => desc.clone(),
            (Some(v), None, None) => v,
            (None, Some(d), None) => d,
            (None, None, None) => "unknown device".to_string(),
        }
    }

    /// The PCIe link state this function reports: LnkSta, else the kernel's attribute.
    pub fn current_link(&self) -> Option<LinkState> {
        self.express_link()
            .and_then(ExpressLink::current)
            .or(self.kernel_link.current)
    }

    /// The function's own capability: LnkCap, else the kernel's `max_link_*`.
    pub fn capable_link(&self) -> Option<LinkState> {
        self.express_link()
            .and_then(ExpressLink::capable)
            .or(self.kernel_link.max)
    }
}

/// Where a link's facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkSource {
    /// Both ends' PCI Express capabilities (config space).
    ConfigSpace,
    /// The kernel's current/max link attributes (config space not readable).
    Sysfs,
}

/// A PCI Express link: the port above (root port or switch downstream port) and the device
/// below it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditedLink {
    pub upstream: PciAddress,
    pub downstream: PciAddress,
    pub source: LinkSource,
    pub comparison: LinkComparison,
    /// MPS both ends support (the smaller DevCap), and what each end is set to.
    pub max_payload_common: Option<u32>,
    pub max_payload_upstream: Option<u32>,
    pub max_payload_downstream: Option<u32>,
    /// ASPM states enabled on either end (LnkCtl).
    pub aspm_enabled: Aspm,
    /// Max_Read_Request_Size of the device below, bytes.
    pub max_read_request: Option<u32>,
    /// Read Completion Boundary the device below reports for its link, bytes.
    pub read_completion_boundary: Option<u16>,
    /// Theoretical ceilings of the link now and at its best.
    pub ceiling: LinkCeilings,
    /// lspci's "(downgraded)" marks on the device below (the end lspci marks; a port's
    /// status is never marked). Absent from documents written before the marks: none.
    #[serde(default)]
    pub downgraded: LinkDowngrade,
}

/// A link's ceilings (model::ceiling::pcie, the "default" assumption set: 4DW headers, no
/// ECRC, MPS-sized completions), per direction, in bytes per second.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkCeilings {
    /// At the state the link runs now, with its MPS and MRRS.
    pub current: PcieCeiling,
    /// At the best state both ends support, same MPS and MRRS.
    pub capable: PcieCeiling,
    /// What the link loses against `capable`: effective write ceiling, bytes/s and percent.
    #[serde(rename = "loss_bytes_per_sec", alias = "loss_bps")]
    pub loss_bps: f64,
    pub loss_percent: f64,
    /// At the largest MPS both ends support, where that is above the one in use.
    pub at_best_mps: Option<PcieCeiling>,
    /// At MRRS 4096 B (the largest the spec allows), where the one in use is smaller: reads
    /// then need fewer requests and, when MRRS was below MPS, carry larger completions.
    pub at_max_mrrs: Option<PcieCeiling>,
    /// Which parameters were not read from the hardware and were assumed instead.
    pub assumed: Vec<String>,
}

/// Spec reset values, used where config space could not be read: MPS 128 B and MRRS 512 B
/// (PCIe Base Spec 6.0 section 7.5.3.4, Device Control defaults), RCB 64 B (section 7.5.3.7).
const DEFAULT_MPS: u32 = 128;
const DEFAULT_MRRS: u32 = 512;
const DEFAULT_RCB: u16 = 64;

/// Ceilings of a link from its comparison and what is known of its MPS, MRRS and RCB.
pub fn link_ceilings(
    comparison: &LinkComparison,
    mps: Option<u32>,
    mps_common: Option<u32>,
    mrrs: Option<u32>,
    rcb: Option<u16>,
) -> LinkCeilings {
    let mut assumed = Vec::new();
    // Sizes outside u16 (the reserved 8192/16384 codes) cannot be valid MPS values: cap them.
    let size = |v: u32| u16::try_from(v.min(4096)).unwrap_or(4096);
    let mps_v = mps.unwrap_or_else(|| {
        assumed.push(format!(
            "MPS {DEFAULT_MPS} B (spec default; config space not read)"
        ));
        DEFAULT_MPS
    });
    let mrrs_v = mrrs.unwrap_or_else(|| {
        assumed.push(format!(
            "MRRS {DEFAULT_MRRS} B (spec default; config space not read)"
        ));
        DEFAULT_MRRS
    });
    let rcb_v = rcb.unwrap_or(DEFAULT_RCB);
    let params = TlpParams::default_for(size(mps_v), size(mrrs_v).max(128), rcb_v);
    let current = link_ceiling(comparison.current, &params);
    let capable = link_ceiling(comparison.common, &params);
    let loss_bps = (capable.effective_write_bps - current.effective_write_bps).max(0.0);
    let loss_percent = if capable.effective_write_bps > 0.0 {
        100.0 * loss_bps / capable.effective_write_bps
    } else {
        0.0
    };
    let at_best_mps = mps_common
        .filter(|&best| best > mps_v)
        .map(|best| link_ceiling(comparison.current, &params.with_mps(size(best))));
    // PCIe Base Spec 6.0 section 7.5.3.4: Max_Read_Request_Size encodings stop at 4096 B.
    const MAX_MRRS: u16 = 4096;
    let at_max_mrrs = (params.mrrs < MAX_MRRS).then(|| {
        link_ceiling(
            comparison.current,
            &TlpParams {
                mrrs: MAX_MRRS,
                ..params
            },
        )
    });
    LinkCeilings {
        current,
        capable,
        loss_bps,
        loss_percent,
        at_best_mps,
        at_max_mrrs,
        assumed,
    }
}

/// The whole audit.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PciAudit {
    /// Where the config space came from (sysfs or an lspci dump). Absent from documents
    /// written before dumps were read: sysfs.
    #[serde(default)]
    pub config_source: ConfigSource,
    pub functions: Vec<AuditedFunction>,
    pub links: Vec<AuditedLink>,
    /// Not read back from a document (the default there): its findings are.
    #[serde(skip_deserializing)]
    pub policy: PciPolicy,
    /// This section's findings, once `report::kinds::audit::findings` has judged it (probe leaves
    /// them empty); the document carries them per section.
    pub findings: Vec<Finding>,
    /// One sentence per problem met while reading; the audit went on past each.
    pub warnings: Vec<String>,
    /// The pci.ids file names came from, if any.
    pub names_source: Option<String>,
}

impl PciAudit {
    /// The PCI Express links the audit shows a state for, each counted once: a link is
    /// named by the device below it (all functions of a device share its link); a port
    /// (root or downstream) counts only when the device below is not in the audit. Without
    /// config space (no root) a switch's ports cannot be told apart, so a switch may count
    /// one link too many there.
    pub fn link_count(&self) -> usize {
        let ports: HashSet<PciAddress> = self.links.iter().map(|l| l.upstream).collect();
        let mut seen = HashSet::new();
        for f in self.functions.iter().filter(|f| f.current_link().is_some()) {
            let downstream_facing = f.port_type().is_some_and(|t| t.is_downstream_facing());
            if ports.contains(&f.address) || (downstream_facing && !f.children.is_empty()) {
                continue;
            }
            let a = f.address;
            let function = if downstream_facing { a.function } else { 0 };
            seen.insert((a.domain, a.bus, a.device, function));
        }
        seen.len()
    }
}

/// Serde helpers: PCI ids as the hex strings lspci and sysfs print (`"8086"`, class
/// `"010802"`), not as decimal numbers nobody recognises; read back from the same form.
pub mod hex_id {
    use super::address::hex_field;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// `v` as `digits` lower-case hex digits, or null.
    fn write<T: Copy + Into<u32>, S: Serializer>(
        v: &Option<T>,
        digits: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => {
                let v: u32 = (*v).into();
                s.collect_str(&format_args!("{v:0digits$x}"))
            }
            None => s.serialize_none(),
        }
    }

    /// A hex id of 1..=`digits` digits, as written or with `0x` before it (as in C sources
    /// and hand-edited documents), or null.
    fn read<'de, T, D>(d: D, digits: usize) -> Result<Option<T>, D::Error>
    where
        T: TryFrom<u32>,
        T::Error: std::fmt::Display,
        D: Deserializer<'de>,
    {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        let hex = text.strip_prefix("0x").unwrap_or(&text);
        let v = hex_field(hex, digits).ok_or_else(|| {
            D::Error::custom(format!(
                "`{text}` is not a PCI id: expected 1 to {digits} hex digits, as lspci -n \
                 prints them (e.g. 8086)"
            ))
        })?;
        T::try_from(v).map(Some).map_err(D::Error::custom)
    }

    /// Vendor and device ids: 4 digits.
    pub mod u16_opt {
        use super::*;

        pub fn serialize<S: Serializer>(v: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
            write(v, 4, s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
            read(d, 4)
        }
    }

    /// Class code (base class, subclass, programming interface): 6 digits.
    pub mod class_opt {
        use super::*;

        pub fn serialize<S: Serializer>(v: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
            write(v, 6, s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
            read(d, 6)
        }
    }

    /// Revision: 2 digits.
    pub mod u8_opt {
        use super::*;

        pub fn serialize<S: Serializer>(v: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
            write(v, 2, s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
            read(d, 2)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Ids {
        #[serde(default, with = "hex_id::u16_opt")]
        vendor: Option<u16>,
        #[serde(default, with = "hex_id::class_opt")]
        class: Option<u32>,
        #[serde(default, with = "hex_id::u8_opt")]
        revision: Option<u8>,
    }

    #[test]
    fn hex_ids_read_back_as_lspci_prints_them() {
        let ids = Ids {
            vendor: Some(0x8086),
            class: Some(0x010802),
            revision: Some(0x0a),
        };
        let json = serde_json::to_string(&ids).unwrap();
        assert_eq!(
            json,
            r#"{"vendor":"8086","class":"010802","revision":"0a"}"#
        );
        assert_eq!(serde_json::from_str::<Ids>(&json).unwrap(), ids);
        let none = r#"{"vendor":null,"class":null,"revision":null}"#;
        let read: Ids = serde_json::from_str(none).unwrap();
        assert_eq!((read.vendor, read.class, read.revision), (None, None, None));
        assert_eq!(serde_json::to_string(&read).unwrap(), none);
        // Absent (a document from before the field) reads as unknown.
        assert_eq!(serde_json::from_str::<Ids>("{}").unwrap().vendor, None);
        // The C spelling of a hand-edited document reads too.
        let c: Ids = serde_json::from_str(r#"{"vendor":"0x8086","class":"0x010802"}"#).unwrap();
        assert_eq!((c.vendor, c.class), (Some(0x8086), Some(0x010802)));
    }

    #[test]
    fn a_hex_id_that_is_not_one_says_what_was_expected() {
        for bad in [
            r#"{"vendor":"0x18086"}"#,
            r#"{"vendor":"18086"}"#,
            r#"{"vendor":""}"#,
            r#"{"vendor":"0x"}"#,
            r#"{"vendor":"+123"}"#,
        ] {
            let e = serde_json::from_str::<Ids>(bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a PCI id: expected 1 to 4 hex digits"),
                "{e}"
            );
        }
        let e = serde_json::from_str::<Ids>(r#"{"revision":"100"}"#).unwrap_err();
        assert!(e.to_string().contains("`100` is not a PCI id"), "{e}");
        // A number is not the text form either.
        assert!(serde_json::from_str::<Ids>(r#"{"vendor":32902}"#).is_err());
    }
}
