//! The PCI audit: every function with its names and link state against both ends'
//! capability, built from sysfs (a live machine or a captured tree) or from an lspci dump.
//! The types are `model::inventory::pci`'s; the findings are `report::findings::audit`'s.

use super::ids::PciNames;
use super::regs::*;
use super::sysfs::SysfsFunction;
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::bar::Resource;
use model::inventory::pci::config::{ConfigSpace, ExpressCap, ExpressLink, Header};
use model::inventory::pci::PciPolicy;
use model::{Aspm, LinkComparison, PortType};
use std::collections::{BTreeMap, HashSet};

use model::inventory::pci::{
    link_ceilings, AuditedFunction, AuditedLink, ConfigSource, LinkCeilings, LinkSource, MemoryBar,
    Names, PciAudit,
};

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
    /// Its memory BARs ([`memory_bars`]).
    pub memory_bars: Vec<MemoryBar>,
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
            slot: sysfs.as_ref().and_then(|s| s.slot.clone()),
            aer_counters: sysfs.and_then(|s| s.aer),
            upstream_link: None,
            root_port: None,
            own_link_ceiling: None,
            downgraded: None,
            memory_bars: input.memory_bars,
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
        f.downgraded = f.link_downgrade();
    }
    let links = build_links(&mut functions, &index);
    for f in functions.iter_mut() {
        f.own_link_ceiling = own_link_ceiling(f);
    }
    // The findings are report's judgement (`report::findings::audit::judge_pci`): empty here.
    PciAudit {
        config_source: source,
        functions,
        links,
        policy,
        findings: Vec::new(),
        warnings,
        names_source: names.source.clone(),
    }
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

/// A function's memory BARs: from sysfs `resource` (drivers/pci/pci-sysfs.c
/// `resource_show`: one line per BAR, with its size) when it was read, else from the base
/// address registers of config space (PCIe Base Spec 6.0 section 7.5.1.2.1; an lspci dump),
/// where the size is unknown. I/O BARs and unimplemented ones are left out.
pub fn memory_bars(resource: Option<&str>, config: &[u8]) -> Vec<MemoryBar> {
    if let Some(text) = resource {
        return (0u8..)
            .zip(text.lines().take(6))
            .filter_map(|(index, line)| {
                let r = Resource::parse_line(line)?;
                (r.is_memory() && r.size() > 0).then(|| MemoryBar {
                    index,
                    size: Some(r.size()),
                    prefetchable: r.prefetchable(),
                    is_64bit: r.is_64bit(),
                })
            })
            .collect();
    }
    let count = match config
        .get(PCI_HEADER_TYPE)
        .map(|h| h & PCI_HEADER_TYPE_MASK)
    {
        Some(PCI_HEADER_TYPE_NORMAL) => 6,
        Some(PCI_HEADER_TYPE_BRIDGE) => 2,
        _ => 0,
    };
    let register = |i: usize| {
        let at = PCI_BASE_ADDRESS_0 + 4 * i;
        config
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < count {
        let Some(raw) = register(i) else { break };
        let index = i as u8;
        i += 1;
        // 0: not implemented; all ones: a function that is gone (lspci shows neither).
        if raw == 0 || raw == u32::MAX || raw & PCI_BASE_ADDRESS_SPACE_IO != 0 {
            continue;
        }
        let is_64bit = raw & PCI_BASE_ADDRESS_MEM_TYPE_MASK == PCI_BASE_ADDRESS_MEM_TYPE_64;
        if is_64bit {
            i += 1; // the upper half of the address
        }
        out.push(MemoryBar {
            index,
            size: None,
            prefetchable: raw & PCI_BASE_ADDRESS_MEM_PREFETCH != 0,
            is_64bit,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config header with `bars` in its base address registers.
    fn header(header_type: u8, bars: &[u32]) -> Vec<u8> {
        let mut c = vec![0u8; 64];
        c[PCI_HEADER_TYPE] = header_type;
        for (i, b) in bars.iter().enumerate() {
            let at = PCI_BASE_ADDRESS_0 + 4 * i;
            c[at..at + 4].copy_from_slice(&b.to_le_bytes());
        }
        c
    }

    #[test]
    fn memory_bars_from_config_space_as_lspci_lists_its_regions() {
        // BAR 0: 64-bit memory (its upper half in BAR 1); BAR 2: I/O; BAR 3: 32-bit
        // prefetchable memory; BAR 4: not implemented; BAR 5: all ones (no function).
        let c = header(0, &[0xc000_0004, 0, 0xe001, 0x8000_0008, 0, u32::MAX]);
        let bars = memory_bars(None, &c);
        let got: Vec<(u8, bool, bool)> = bars
            .iter()
            .map(|b| (b.index, b.is_64bit, b.prefetchable))
            .collect();
        assert_eq!(got, [(0, true, false), (3, false, true)]);
        assert!(bars.iter().all(|b| b.size.is_none()));
        // A bridge has two BARs; what follows them is its bus numbers, not a BAR.
        let bridge = header(1, &[0xfff0_0000, 0, 0x0001_0100]);
        assert_eq!(memory_bars(None, &bridge).len(), 1);
        // Fewer bytes than the registers: what is there.
        assert_eq!(memory_bars(None, &c[..0x14]).len(), 1);
        assert!(memory_bars(None, &[]).is_empty());
    }

    #[test]
    fn memory_bars_from_sysfs_resource_have_sizes() {
        // This VM's virtio block device 0000:00:02.0 (BAR 0 512 KiB, 64-bit memory), with an
        // I/O BAR 1 added.
        let resource = "0x0000004000080000 0x00000040000fffff 0x0000000000140204\n\
                        0x000000000000c000 0x000000000000c03f 0x0000000000040101\n\
                        0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
        let bars = memory_bars(Some(resource), &[]);
        assert_eq!(
            bars,
            [MemoryBar {
                index: 0,
                size: Some(512 * 1024),
                prefetchable: false,
                is_64bit: true,
            }]
        );
    }
}
