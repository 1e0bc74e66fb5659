//! Reads the facts `bench mmio` checks before it maps a BAR (model::inventory::pci::bar): the
//! BARs of sysfs `resource`, the bound driver, the `enable` state, the BAR holding the MSI-X
//! table, the kernel's lockdown mode.

use crate::sysfs::{link_name, read_attr, read_bytes};
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::bar::{FunctionFacts, Resource};
use model::root::SysRoot;

/// MSI-X capability ID (PCI Code and ID Assignment Specification 1.11, section 2).
pub const CAP_ID_MSIX: u8 = 0x11;

/// Read the facts of `addr` under `root`; `None` when there is no such function.
pub fn function_facts(root: &SysRoot, addr: &PciAddress) -> Option<FunctionFacts> {
    let dir = root.path(format!("/sys/bus/pci/devices/{addr}"));
    let resource = read_attr(&dir.join("resource")).ok().flatten()?;
    let bars = resource
        .lines()
        .take(6)
        .filter_map(Resource::parse_line)
        .collect();
    let driver = link_name(&dir.join("driver")).ok().flatten();
    let enabled = read_attr(&dir.join("enable"))
        .ok()
        .flatten()
        .map(|s| s.trim() != "0");
    let config = read_bytes(&dir.join("config")).ok().flatten();
    let (msix_table_bar, msix_pba_bar) = config.as_deref().map(msix_bars).unwrap_or((None, None));
    Some(FunctionFacts {
        bars,
        driver,
        enabled,
        msix_table_bar,
        msix_pba_bar,
        lockdown: lockdown_mode(root),
    })
}

/// The BIRs of the MSI-X table and PBA: Table Offset/BIR at capability + 4, PBA Offset/BIR
/// at + 8, BIR in bits 2:0 (PCIe Base Spec 6.0 section 7.7.2.3/7.7.2.4).
pub fn msix_bars(config: &[u8]) -> (Option<u8>, Option<u8>) {
    let space = super::config::decode(config);
    let Some(cap) = space.capabilities.iter().find(|c| c.id == CAP_ID_MSIX) else {
        return (None, None);
    };
    let bir = |at: usize| config.get(at).map(|b| b & 0x7);
    let o = usize::from(cap.offset);
    (bir(o + 4), bir(o + 8))
}

/// The kernel's lockdown mode from securityfs (`none [integrity] confidentiality`: the one
/// in brackets), `None` when the file cannot be read (securityfs not mounted, no lockdown
/// LSM).
pub fn lockdown_mode(root: &SysRoot) -> Option<String> {
    let text = read_attr(&root.path("/sys/kernel/security/lockdown"))
        .ok()
        .flatten()?;
    parse_lockdown(&text)
}

pub fn parse_lockdown(text: &str) -> Option<String> {
    let open = text.find('[')?;
    let close = text[open..].find(']')? + open;
    Some(text[open + 1..close].to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lockdown_mode_is_the_bracketed_word() {
        assert_eq!(
            parse_lockdown("none [integrity] confidentiality\n").as_deref(),
            Some("integrity")
        );
        assert_eq!(
            parse_lockdown("[none] integrity confidentiality").as_deref(),
            Some("none")
        );
        assert_eq!(parse_lockdown("garbage"), None);
    }

    #[test]
    fn msix_table_bar_from_config_space() {
        // A minimal type 0 header with a capability list at 0x40: MSI-X, table in BAR 4
        // (offset 0x2000), PBA in BAR 4 (offset 0x3000).
        let mut c = vec![0u8; 256];
        c[0..2].copy_from_slice(&0x1af4u16.to_le_bytes());
        c[2..4].copy_from_slice(&0x1042u16.to_le_bytes());
        c[6] = 0x10; // status: capabilities list
        c[0x34] = 0x40;
        c[0x40] = CAP_ID_MSIX;
        c[0x41] = 0;
        c[0x44..0x48].copy_from_slice(&(0x2000u32 | 4).to_le_bytes());
        c[0x48..0x4c].copy_from_slice(&(0x3000u32 | 4).to_le_bytes());
        assert_eq!(msix_bars(&c), (Some(4), Some(4)));
        c[0x40] = 0x05; // MSI instead
        assert_eq!(msix_bars(&c), (None, None));
    }
}
