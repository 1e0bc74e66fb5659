//! PCI: sysfs discovery, config-space decoding, `lspci -xxx` dumps, topology.

pub mod address;
pub mod audit;
pub mod config;
pub mod dump;
pub mod ids;
pub mod synth;
pub mod sysfs;

use crate::sysfs::SysRoot;
use audit::{FunctionInput, PciAudit};
use config::ConfigSpace;
use ids::PciNames;
use std::collections::HashSet;

/// The config-space length an unprivileged read of sysfs `config` returns (the kernel lets
/// only root read past the standard header: drivers/pci/pci-sysfs.c `pci_read_config`).
const UNPRIVILEGED_CONFIG_BYTES: usize = 64;

/// Audit the PCI functions of the machine (or captured tree) at `root`.
pub fn audit_sysfs(root: &SysRoot) -> PciAudit {
    let scan = sysfs::scan(root);
    let inputs: Vec<FunctionInput> = scan
        .functions
        .into_iter()
        .map(|f| FunctionInput {
            address: Some(f.address),
            parent: f.parent,
            vendor_id: f.vendor_id,
            device_id: f.device_id,
            subsystem_vendor_id: f.subsystem_vendor_id,
            subsystem_device_id: f.subsystem_device_id,
            class: f.class,
            revision: f.revision,
            driver: f.driver,
            numa_node: f.numa_node,
            local_cpulist: f.local_cpulist,
            kernel_link: f.kernel_link,
            aer_counters: f.aer,
            config_len: f.config.len(),
            config: (!f.config.is_empty()).then(|| ConfigSpace::decode(&f.config)),
            config_warnings: f.config.len() > UNPRIVILEGED_CONFIG_BYTES,
            description: None,
        })
        .collect();
    let names = load_names(root, &inputs);
    audit::build(inputs, scan.policy, &names, scan.warnings)
}

/// Audit the functions of an `lspci -x`/`-xxx`/`-xxxx` dump; names from pci.ids under
/// `names_root`. Topology comes from the bridges' secondary bus numbers.
pub fn audit_dump(text: &str, names_root: &SysRoot) -> PciAudit {
    let dump = dump::parse_lspci_dump(text);
    let warnings: Vec<String> = dump
        .warnings
        .iter()
        .map(|w| format!("line {}: {}", w.line, w.message))
        .collect();
    let inputs: Vec<FunctionInput> = dump
        .functions
        .into_iter()
        .map(|f| FunctionInput {
            address: Some(f.address),
            config_len: f.config.len(),
            config: Some(ConfigSpace::decode(&f.config)),
            config_warnings: true,
            description: Some(f.description),
            ..FunctionInput::default()
        })
        .collect();
    let names = load_names(names_root, &inputs);
    audit::build(inputs, sysfs::PciPolicy::default(), &names, warnings)
}

/// Names for the vendors present, from pci.ids under `root`, else the host's own (pci.ids is
/// a database, not machine state: a captured tree rarely carries one).
pub fn load_names(root: &SysRoot, inputs: &[FunctionInput]) -> PciNames {
    let header = |f: &FunctionInput| f.config.as_ref().and_then(|c| c.header.clone());
    let vendors: HashSet<u16> = inputs
        .iter()
        .filter_map(|f| f.vendor_id.or(header(f).map(|h| h.vendor_id)))
        .chain(inputs.iter().filter_map(|f| {
            f.subsystem_vendor_id
                .or(header(f).and_then(|h| h.subsystem.map(|s| s.vendor_id)))
        }))
        .collect();
    let names = PciNames::load(root, &vendors);
    if names.source.is_none() && root.root() != std::path::Path::new("/") {
        return PciNames::load(&SysRoot::new("/"), &vendors);
    }
    names
}
