//! PCI: sysfs discovery, config-space decoding, `lspci -xxx` dumps, topology.

pub mod audit;
pub mod bar;
pub mod config;
pub mod dump;
pub mod ids;
pub mod regs;
pub mod sysfs;

use audit::FunctionInput;
use ids::PciNames;
use model::inventory::pci::{ConfigSource, PciAudit, PciPolicy};
use model::root::SysRoot;
use std::collections::HashSet;

/// The config-space length an unprivileged read of sysfs `config` returns (the kernel lets
/// only root read past the standard header: drivers/pci/pci-sysfs.c `pci_read_config`).
const UNPRIVILEGED_CONFIG_BYTES: usize = 64;

/// Audit the PCI functions of the machine (or captured tree) at `root`.
pub fn audit_sysfs(root: &SysRoot) -> PciAudit {
    let scan = sysfs::scan(root);
    let slots = sysfs::slots(root);
    let inputs: Vec<FunctionInput> = scan
        .functions
        .into_iter()
        .map(|mut f| {
            let bytes = std::mem::take(&mut f.config);
            f.slot = sysfs::slot_of(&slots, &f.address);
            // Absent in most captured trees: the BAR registers of config space stand in.
            let resource = crate::sysfs::read_attr(&root.path(f.device_path.join("resource")))
                .ok()
                .flatten();
            FunctionInput {
                address: f.address,
                memory_bars: audit::memory_bars(resource.as_deref(), &bytes),
                config_len: bytes.len(),
                config: (!bytes.is_empty()).then(|| config::decode(&bytes)),
                config_warnings: bytes.len() > UNPRIVILEGED_CONFIG_BYTES,
                description: None,
                sysfs: Some(f),
            }
        })
        .collect();
    let names = load_names(root, &inputs);
    audit::build(
        ConfigSource::Sysfs,
        inputs,
        scan.policy,
        &names,
        scan.warnings,
    )
}

/// Audit the functions of an `lspci -x`/`-xxx`/`-xxxx` dump; names from pci.ids under
/// `names_root`. Topology comes from the bridges' secondary bus numbers. A text with no
/// function in it (empty, not a dump) is an error, as for `lspci -F`.
pub fn audit_dump(text: &str, names_root: &SysRoot) -> Result<PciAudit, dump::DumpError> {
    let dump = dump::parse_lspci_dump(text).nonempty()?;
    let warnings: Vec<String> = dump
        .warnings
        .iter()
        .map(|w| format!("line {}: {}", w.line, w.message))
        .collect();
    let inputs: Vec<FunctionInput> = dump
        .functions
        .into_iter()
        .map(|f| FunctionInput {
            address: f.address,
            sysfs: None,
            config_len: f.config.len(),
            config: Some(config::decode(&f.config)),
            // As for sysfs: a 64-byte capture gets one finding, not a warning per function.
            config_warnings: f.config.len() > UNPRIVILEGED_CONFIG_BYTES,
            description: Some(f.description),
            memory_bars: audit::memory_bars(None, &f.config),
        })
        .collect();
    let names = load_names(names_root, &inputs);
    Ok(audit::build(
        ConfigSource::LspciDump,
        inputs,
        PciPolicy::default(),
        &names,
        warnings,
    ))
}

/// Names for the vendors present, from pci.ids under `root`, else the host's own (pci.ids is
/// a database, not machine state: a captured tree rarely carries one).
pub fn load_names(root: &SysRoot, inputs: &[FunctionInput]) -> PciNames {
    let vendors: HashSet<u16> = inputs
        .iter()
        .flat_map(|f| [f.vendor_id(), f.subsystem_vendor_id()])
        .flatten()
        .collect();
    let mut names = PciNames::load(root, &vendors);
    if names.source.is_none() && !root.is_live() {
        names = PciNames::load(&SysRoot::new("/"), &vendors);
    }
    if names.source.is_none() {
        names = PciNames::builtin(&vendors);
    }
    names
}
