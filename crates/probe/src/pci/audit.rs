//! The PCI audit: every function with its names, link state against both ends' capability,
//! and findings. Built from sysfs (a live machine or a captured tree) or from an lspci dump.

use super::address::PciAddress;
use super::config::{Aer, ConfigSpace, ExpressCap, ExpressLink, Header, LinkMark};
use super::ids::PciNames;
use super::sysfs::{AerCounters, KernelLink, PciPolicy, SysfsFunction};
use model::ceiling::pcie::{link_ceiling, PcieCeiling, TlpParams};
use model::units::format_mb_per_s;
use model::{Aspm, Finding, LinkComparison, LinkState, PortType, Severity};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// One function as found, before the audit judges it.
#[derive(Debug, Clone)]
pub struct FunctionInput {
    pub address: PciAddress,
    /// What sysfs says of it (`None` for a function from an lspci dump).
    pub sysfs: Option<SysfsFunction>,
    /// Bytes of config space that could be read.
    pub config_len: usize,
    /// The decoded config space (`None` when no bytes could be read).
    pub config: Option<ConfigSpace>,
    /// Whether the decoder's warnings are worth showing: not for the 64 bytes an
    /// unprivileged sysfs read gives, where one "run as root" finding says it all.
    pub config_warnings: bool,
    /// The text lspci printed on the device line of a dump.
    pub description: Option<String>,
}

impl FunctionInput {
    fn header(&self) -> Option<&Header> {
        self.config.as_ref().and_then(|c| c.header.as_ref())
    }

    /// Vendor id: the kernel's reading first, config space otherwise.
    pub fn vendor_id(&self) -> Option<u16> {
        self.sysfs
            .as_ref()
            .and_then(|s| s.vendor_id)
            .or(self.header().map(|h| h.vendor_id))
    }

    pub fn subsystem_vendor_id(&self) -> Option<u16> {
        self.sysfs
            .as_ref()
            .and_then(|s| s.subsystem_vendor_id)
            .or(self.header().and_then(|h| h.subsystem.map(|s| s.vendor_id)))
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Names {
    pub vendor: Option<String>,
    pub device: Option<String>,
    pub subsystem: Option<String>,
    pub class: Option<String>,
}

/// Where the config space of an audit came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct AuditedFunction {
    pub address: PciAddress,
    pub parent: Option<PciAddress>,
    pub children: Vec<PciAddress>,
    #[serde(serialize_with = "crate::sysfs::hex_id::u16_opt")]
    pub vendor_id: Option<u16>,
    #[serde(serialize_with = "crate::sysfs::hex_id::u16_opt")]
    pub device_id: Option<u16>,
    #[serde(serialize_with = "crate::sysfs::hex_id::u16_opt")]
    pub subsystem_vendor_id: Option<u16>,
    #[serde(serialize_with = "crate::sysfs::hex_id::u16_opt")]
    pub subsystem_device_id: Option<u16>,
    #[serde(serialize_with = "crate::sysfs::hex_id::class_opt")]
    pub class: Option<u32>,
    #[serde(serialize_with = "crate::sysfs::hex_id::u8_opt")]
    pub revision: Option<u8>,
    pub names: Names,
    pub description: Option<String>,
    pub driver: Option<String>,
    pub numa_node: Option<i32>,
    pub local_cpulist: Option<String>,
    /// Bytes of config space that could be read (64 without root; 256 or 4096 with).
    pub config_bytes: usize,
    /// Config space decoded: header, capability lists, PCI Express capability, AER.
    pub config: Option<ConfigSpace>,
    pub kernel_link: KernelLink,
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
    fn compute_downgraded(&self) -> Option<LinkDowngrade> {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkSource {
    /// Both ends' PCI Express capabilities (config space).
    ConfigSpace,
    /// The kernel's current/max link attributes (config space not readable).
    Sysfs,
}

/// A PCI Express link: the port above (root port or switch downstream port) and the device
/// below it.
#[derive(Debug, Clone, Serialize)]
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
    /// status is never marked).
    pub downgraded: LinkDowngrade,
}

/// A link's ceilings (model::ceiling::pcie, the "default" assumption set: 4DW headers, no
/// ECRC, MPS-sized completions), per direction, in bytes per second.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Default, Serialize)]
pub struct PciAudit {
    /// Where the config space came from (sysfs or an lspci dump).
    pub config_source: ConfigSource,
    pub functions: Vec<AuditedFunction>,
    pub links: Vec<AuditedLink>,
    pub policy: PciPolicy,
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

/// Build the audit from the functions found. `names` gives vendor/device names.
pub fn build(
    source: ConfigSource,
    inputs: Vec<FunctionInput>,
    policy: PciPolicy,
    names: &PciNames,
    mut warnings: Vec<String>,
) -> PciAudit {
    let mut functions: Vec<AuditedFunction> = Vec::with_capacity(inputs.len());
    let mut seen = HashSet::new();
    for input in inputs {
        let address = input.address;
        if !seen.insert(address) {
            warnings.push(format!(
                "{address} is listed twice; the second entry was ignored"
            ));
            continue;
        }
        if input.config_warnings {
            if let Some(c) = &input.config {
                warnings.extend(c.warnings.iter().map(|w| format!("{address}: {w}")));
            }
        }
        let h = input.header();
        let sy = input.sysfs.as_ref();
        // sysfs attributes first (the kernel's own reading), config space otherwise.
        let vendor_id = input.vendor_id();
        let device_id = sy.and_then(|s| s.device_id).or(h.map(|h| h.device_id));
        let subsystem_vendor_id = input.subsystem_vendor_id();
        let subsystem_device_id = sy
            .and_then(|s| s.subsystem_device_id)
            .or(h.and_then(|h| h.subsystem.map(|s| s.device_id)));
        let class = sy.and_then(|s| s.class).or(h.map(|h| h.class));
        let revision = sy.and_then(|s| s.revision).or(h.map(|h| h.revision));
        let n = Names {
            vendor: vendor_id.and_then(|v| names.vendor(v)).map(str::to_string),
            device: vendor_id
                .zip(device_id)
                .and_then(|(v, d)| names.device(v, d))
                .map(str::to_string),
            subsystem: match (
                vendor_id,
                device_id,
                subsystem_vendor_id,
                subsystem_device_id,
            ) {
                (Some(v), Some(d), Some(sv), Some(sd)) => {
                    names.subsystem(v, d, sv, sd).map(str::to_string)
                }
                _ => None,
            },
            class: class.and_then(|c| names.class(c)).map(str::to_string),
        };
        let sysfs = input.sysfs;
        functions.push(AuditedFunction {
            address,
            parent: sysfs.as_ref().and_then(|s| s.parent),
            children: Vec::new(),
            vendor_id,
            device_id,
            subsystem_vendor_id,
            subsystem_device_id,
            class,
            revision,
            names: n,
            description: input.description,
            config_bytes: input.config_len,
            config: input.config,
            driver: sysfs.as_ref().and_then(|s| s.driver.clone()),
            numa_node: sysfs.as_ref().and_then(|s| s.numa_node),
            local_cpulist: sysfs.as_ref().and_then(|s| s.local_cpulist.clone()),
            kernel_link: sysfs
                .as_ref()
                .map(|s| s.kernel_link.clone())
                .unwrap_or_default(),
            aer_counters: sysfs.and_then(|s| s.aer),
            upstream_link: None,
            root_port: None,
            own_link_ceiling: None,
            downgraded: None,
        });
    }
    functions.sort_by_key(|f| f.address);
    link_parents_by_bus(&mut functions);
    let index: BTreeMap<PciAddress, usize> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.address, i))
        .collect();
    // Children, root ports.
    for i in 0..functions.len() {
        if let Some(p) = functions[i].parent {
            match index.get(&p) {
                Some(&pi) => {
                    let a = functions[i].address;
                    functions[pi].children.push(a);
                }
                None => {
                    // The parent bridge is not in the list (hidden by firmware, or the dump
                    // holds only part of the machine): treat this function as top-level.
                    functions[i].parent = None;
                }
            }
        }
    }
    for i in 0..functions.len() {
        functions[i].root_port = find_root_port(&functions, &index, i);
    }
    for f in functions.iter_mut() {
        f.downgraded = f.compute_downgraded();
    }
    let links = build_links(&mut functions, &index);
    for f in functions.iter_mut() {
        f.own_link_ceiling = own_link_ceiling(f);
    }
    let mut audit = PciAudit {
        config_source: source,
        functions,
        links,
        policy,
        findings: Vec::new(),
        warnings,
        names_source: names.source.clone(),
    };
    audit.findings = findings(&audit);
    audit
}

/// For functions with no parent yet (dumps), the bridge whose secondary bus is their bus.
fn link_parents_by_bus(functions: &mut [AuditedFunction]) {
    // (domain, secondary bus) -> bridge; the first bridge wins when firmware left two
    // bridges claiming the same bus (unconfigured ones say 0).
    let mut by_secondary: BTreeMap<(u32, u8), PciAddress> = BTreeMap::new();
    for f in functions.iter() {
        if let Some(sec) = f.header().and_then(|h| h.bridge_buses).map(|b| b.secondary) {
            if sec != 0 && sec != f.address.bus {
                by_secondary
                    .entry((f.address.domain, sec))
                    .or_insert(f.address);
            }
        }
    }
    for f in functions.iter_mut() {
        if f.parent.is_none() {
            if let Some(&p) = by_secondary.get(&(f.address.domain, f.address.bus)) {
                if p != f.address {
                    f.parent = Some(p);
                }
            }
        }
    }
}

/// Follow parents up to a root port (bounded by the number of functions: no loop can hang).
fn find_root_port(
    functions: &[AuditedFunction],
    index: &BTreeMap<PciAddress, usize>,
    start: usize,
) -> Option<PciAddress> {
    let mut i = start;
    for _ in 0..=functions.len() {
        let f = &functions[i];
        if f.port_type() == Some(PortType::RootPort) {
            return Some(f.address);
        }
        match f.parent.and_then(|p| index.get(&p)) {
            Some(&pi) => i = pi,
            None => return None,
        }
    }
    None
}

fn build_links(
    functions: &mut [AuditedFunction],
    index: &BTreeMap<PciAddress, usize>,
) -> Vec<AuditedLink> {
    let mut links = Vec::new();
    // A link belongs to a device (bus:device), not to each of its functions: functions
    // 1..7 of a multi-function device share function 0's link.
    let mut seen_devices: HashSet<(PciAddress, u32, u8, u8)> = HashSet::new();
    for i in 0..functions.len() {
        let f = &functions[i];
        let Some(&pi) = f.parent.and_then(|p| index.get(&p)) else {
            continue;
        };
        let p = &functions[pi];
        let key = (p.address, f.address.domain, f.address.bus, f.address.device);
        let link = match (f.express(), p.express()) {
            (Some(fe), Some(pe)) => {
                if !fe.port_type.is_upstream_facing() || !pe.port_type.is_downstream_facing() {
                    continue;
                }
                let (fl, pl) = (f.express_link(), p.express_link());
                let (Some(current), Some(down_cap), Some(up_cap)) = (
                    fl.and_then(ExpressLink::current)
                        .or(pl.and_then(ExpressLink::current)),
                    fl.and_then(ExpressLink::capable),
                    pl.and_then(ExpressLink::capable),
                ) else {
                    continue;
                };
                let mps = |e: &ExpressCap| e.device.as_ref().map(|d| d.max_payload);
                let mps_cap = |e: &ExpressCap| e.device.as_ref().map(|d| d.max_payload_supported);
                let aspm = |l: Option<&ExpressLink>| l.map(|l| l.aspm_control).unwrap_or_default();
                let (fa, pa) = (aspm(fl), aspm(pl));
                let comparison = LinkComparison::new(current, up_cap, down_cap);
                let mps_common = mps_cap(fe).zip(mps_cap(pe)).map(|(a, b)| a.min(b));
                // The link carries TLPs no larger than the smaller MPS of its two ends.
                let mps_in_use = match (mps(fe), mps(pe)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let mrrs = fe.device.as_ref().map(|d| d.max_read_request);
                let rcb = fl.and_then(|l| l.rcb);
                AuditedLink {
                    upstream: p.address,
                    downstream: f.address,
                    source: LinkSource::ConfigSpace,
                    ceiling: link_ceilings(&comparison, mps_in_use, mps_common, mrrs, rcb),
                    comparison,
                    max_payload_common: mps_common,
                    max_payload_upstream: mps(pe),
                    max_payload_downstream: mps(fe),
                    aspm_enabled: Aspm {
                        l0s: fa.l0s || pa.l0s,
                        l1: fa.l1 || pa.l1,
                    },
                    max_read_request: mrrs,
                    read_completion_boundary: rcb,
                    downgraded: f.downgraded.unwrap_or_default(),
                }
            }
            _ => {
                // Without config space, the kernel's attributes still give both ends'
                // capability and the current state. Bridges are left out: without the
                // port type we cannot tell which side of a switch port its status is for.
                if f.class.map(|c| c >> 8) == Some(0x0604) {
                    continue;
                }
                let (Some(current), Some(down_cap), Some(up_cap)) =
                    (f.kernel_link.current, f.kernel_link.max, p.kernel_link.max)
                else {
                    continue;
                };
                let comparison = LinkComparison::new(current, up_cap, down_cap);
                AuditedLink {
                    upstream: p.address,
                    downstream: f.address,
                    source: LinkSource::Sysfs,
                    ceiling: link_ceilings(&comparison, None, None, None, None),
                    comparison,
                    max_payload_common: None,
                    max_payload_upstream: None,
                    max_payload_downstream: None,
                    aspm_enabled: Aspm::default(),
                    max_read_request: None,
                    read_completion_boundary: None,
                    downgraded: f.downgraded.unwrap_or_default(),
                }
            }
        };
        if !seen_devices.insert(key) {
            continue;
        }
        functions[i].upstream_link = Some(links.len());
        links.push(link);
    }
    links
}

/// Ceilings of a function's link against its own capability, for a device with a link but
/// no audited port above it (function 0 only: the others share its link).
fn own_link_ceiling(f: &AuditedFunction) -> Option<LinkCeilings> {
    if f.upstream_link.is_some() || f.address.function != 0 {
        return None;
    }
    match f.port_type() {
        Some(t) if !t.is_upstream_facing() => return None,
        None if f.class.map(|c| c >> 8) == Some(0x0604) => return None,
        _ => {}
    }
    let (current, capable) = (f.current_link()?, f.capable_link()?);
    let dev = f.express().and_then(|e| e.device.as_ref());
    Some(link_ceilings(
        &LinkComparison::new(current, capable, capable),
        dev.map(|d| d.max_payload),
        None,
        dev.map(|d| d.max_read_request),
        f.express_link().and_then(|l| l.rcb),
    ))
}

/// A device's link below its own capability when the port above is not in the input (an
/// lspci dump of one endpoint, a bridge firmware hides) or reports no capability (a 4.19
/// platform root port without `max_link_*`): what is known is that the device
/// could do more; whether the port or the slot allows it is not.
fn single_ended_downgrade(f: &AuditedFunction, name: &str) -> Option<Finding> {
    let c = f.own_link_ceiling.as_ref()?;
    let down = f.downgraded.filter(|d| d.any())?;
    let (current, capable) = (f.current_link()?, f.capable_link()?);
    let mut what = Vec::new();
    if down.speed {
        what.push(format!("speed {} of its {}", current.gen, capable.gen));
    }
    if down.width {
        what.push(format!(
            "width x{} of its x{}",
            current.width, capable.width
        ));
    }
    Some(
        Finding::new(
            Severity::Warning,
            f.address.to_string(),
            format!(
                "{name} runs its link at {current}, below its own capability {capable} \
                 ({}): its ceiling is {} instead of {} (-{:.0} %); the port above is not in \
                 the input or does not report its capability, so whether it or the slot \
                 allows more is unknown",
                what.join(", "),
                format_mb_per_s(c.current.effective_write_bps),
                format_mb_per_s(c.capable.effective_write_bps),
                c.loss_percent
            ),
        )
        .with_advice(
            "read the port above's LnkCap (`lspci -vv -s PORT`): if it supports more, check \
             the slot, cable, riser or retimer; if not, the slot is the limit",
        ),
    )
}

/// The findings of the audit, most severe first.
pub fn findings(audit: &PciAudit) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_addr: BTreeMap<PciAddress, &AuditedFunction> =
        audit.functions.iter().map(|f| (f.address, f)).collect();
    let name = |a: &PciAddress| {
        by_addr
            .get(a)
            .map(|f| format!("{a} ({})", f.display_name()))
            .unwrap_or_else(|| a.to_string())
    };
    for l in &audit.links {
        let c = &l.comparison;
        let subject = l.downstream.to_string();
        if c.below_common() {
            let mut what = Vec::new();
            if c.speed_below_common {
                what.push(format!(
                    "speed {} where both ends support {}",
                    c.current.gen, c.common.gen
                ));
            }
            if c.width_below_common {
                what.push(format!(
                    "width x{} where both ends support x{}",
                    c.current.width, c.common.width
                ));
            }
            out.push(
                Finding::new(
                    Severity::Warning,
                    &subject,
                    format!(
                        "link {} -> {} runs below what both ends support: {}; its ceiling \
                         is {} instead of {} (-{:.0} %)",
                        l.upstream,
                        name(&l.downstream),
                        what.join(", "),
                        format_mb_per_s(l.ceiling.current.effective_write_bps),
                        format_mb_per_s(l.ceiling.capable.effective_write_bps),
                        l.ceiling.loss_percent
                    ),
                )
                .with_advice(
                    "check the slot, cable, riser or retimer and the firmware's link speed \
                     setting; a link that retrains lower under load points to signal integrity",
                ),
            );
        } else if c.current.gen < c.downstream.gen || c.current.width < c.downstream.width {
            out.push(Finding::new(
                Severity::Info,
                &subject,
                format!(
                    "{} can do {} but the port above ({}) supports only {}: the link runs at {}, \
                     the best the slot allows",
                    name(&l.downstream),
                    c.downstream,
                    l.upstream,
                    c.upstream,
                    c.current
                ),
            ));
        }
        if let (Some(common), Some(up), Some(down)) = (
            l.max_payload_common,
            l.max_payload_upstream,
            l.max_payload_downstream,
        ) {
            if up.min(down) < common {
                out.push(
                    Finding::new(
                        Severity::Info,
                        &subject,
                        format!(
                            "MaxPayload is {} bytes on link {} -> {} where both ends support {} \
                             bytes: every TLP carries less data for the same overhead{}",
                            up.min(down),
                            l.upstream,
                            l.downstream,
                            common,
                            l.ceiling
                                .at_best_mps
                                .as_ref()
                                .map(|b| format!(
                                    " ({} instead of {} per direction, +{:.1} %)",
                                    format_mb_per_s(b.effective_write_bps),
                                    format_mb_per_s(l.ceiling.current.effective_write_bps),
                                    100.0
                                        * (b.effective_write_bps
                                            / l.ceiling.current.effective_write_bps
                                            - 1.0)
                                ))
                                .unwrap_or_default()
                        ),
                    )
                    .with_advice(
                        "boot with pci=pcie_bus_perf to let the kernel raise MPS (the Rockchip PCIe \
                         guide's tuning), if no peer-to-peer DMA needs the smaller size",
                    ),
                );
            }
        }
        if let (Some(mrrs), Some(best)) = (l.max_read_request, &l.ceiling.at_max_mrrs) {
            let mps = l.ceiling.current.params.mps;
            if mrrs < u32::from(mps) {
                out.push(
                    Finding::new(
                        Severity::Info,
                        &subject,
                        format!(
                            "MaxReadReq is {mrrs} bytes on {}, below its MaxPayload {mps}: every \
                             read completion carries at most {mrrs} bytes; reads top at {} \
                             instead of {} with MaxReadReq 4096",
                            l.downstream,
                            format_mb_per_s(l.ceiling.current.effective_read_bps),
                            format_mb_per_s(best.effective_read_bps)
                        ),
                    )
                    .with_advice(
                        "the driver or pci=pcie_bus_perf sets MaxReadReq; raise it unless a \
                         quality-of-service reason keeps it small",
                    ),
                );
            }
        }
        if l.aspm_enabled.any() {
            out.push(
                Finding::new(
                    Severity::Info,
                    &subject,
                    format!(
                        "ASPM {} enabled on link {} -> {}: the link sleeps when idle and pays \
                         an exit latency on the next transfer",
                        l.aspm_enabled.label(),
                        l.upstream,
                        l.downstream
                    ),
                )
                .with_advice(
                    "for benchmarks, set /sys/module/pcie_aspm/parameters/policy to \
                     performance or boot with pcie_aspm=off",
                ),
            );
        }
    }
    for f in &audit.functions {
        let subject = f.address.to_string();
        if let Some(finding) = single_ended_downgrade(f, &name(&f.address)) {
            out.push(finding);
        }
        // In a multi-function device only function 0's Target Link Speed controls the link
        // (PCIe Base Spec 6.0 section 7.5.3.19: RsvdP in the other functions).
        let controls_link =
            f.address.function == 0 || f.port_type().is_some_and(|t| t.is_downstream_facing());
        let target = f
            .express()
            .and_then(|e| e.link2.as_ref())
            .and_then(|l| l.target_speed)
            .filter(|_| controls_link);
        if let (Some(t), Some(cap)) = (target, f.express_link().and_then(ExpressLink::capable)) {
            if t < cap.gen {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        &subject,
                        format!(
                            "{}: target link speed (LnkCtl2) is {} below its capability {}: \
                             the link will not train faster",
                            name(&f.address),
                            t,
                            cap.gen
                        ),
                    )
                    .with_advice(
                        "firmware or a driver capped the speed (e.g. a device-tree \
                         max-link-speed); raise it if the board's signal path allows",
                    ),
                );
            }
        }
        let counted = f
            .aer_counters
            .as_ref()
            .map(|a| a.nonzero())
            .unwrap_or_default();
        if !counted.is_empty() {
            let list: Vec<String> = counted.iter().map(|(n, c)| format!("{n} {c}")).collect();
            let fatal = f.aer_counters.as_ref().is_some_and(|a| {
                a.fatal
                    .iter()
                    .any(|(n, c)| *c > 0 && !n.starts_with("TOTAL_"))
            });
            out.push(Finding::new(
                if fatal {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                &subject,
                format!(
                    "{} has counted AER errors since boot: {}",
                    name(&f.address),
                    list.join(", ")
                ),
            ));
        }
        if let Some(a) = f.aer() {
            let (ue, ce) = (&a.uncorrectable_status.set, &a.correctable_status.set);
            if !ue.is_empty() || !ce.is_empty() {
                let mut parts = Vec::new();
                if !ue.is_empty() {
                    parts.push(format!("UESta {}", ue.join(" ")));
                }
                if !ce.is_empty() {
                    parts.push(format!("CESta {}", ce.join(" ")));
                }
                out.push(Finding::new(
                    if ue.is_empty() {
                        Severity::Warning
                    } else {
                        Severity::Error
                    },
                    &subject,
                    format!(
                        "{} reports AER error status bits set: {}",
                        name(&f.address),
                        parts.join("; ")
                    ),
                ));
            }
        }
    }
    let unreadable = audit
        .functions
        .iter()
        .filter(|f| f.config_bytes > 0 && f.config_bytes < 256)
        .count();
    if unreadable > 0 {
        let functions = if unreadable == 1 {
            "1 function".to_string()
        } else {
            format!("{unreadable} functions")
        };
        out.push(match audit.config_source {
            ConfigSource::Sysfs => Finding::new(
                Severity::Info,
                "config space",
                format!(
                    "only the first 64 bytes of config space were readable for {functions}: \
                     MPS, ASPM, AER and link capabilities of both ends are unknown"
                ),
            )
            .with_advice("run as root for the full audit"),
            // Running headroom as root cannot add bytes to a file: the capture must change.
            ConfigSource::LspciDump => Finding::new(
                Severity::Info,
                "config space",
                format!(
                    "the dump gives fewer than 256 bytes of config space for {functions} \
                     (captured with `lspci -x`, by lspci without root, or cut short): what \
                     lies past them (MPS, ASPM, AER, link capabilities) is unknown"
                ),
            )
            .with_advice("capture the dump with `sudo lspci -xxx` for the full audit"),
        });
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}
