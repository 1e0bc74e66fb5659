//! The whole inventory under one root (`model::inventory::Inventory`): PCI (functions,
//! links, policy), the CPU/kernel context, USB, block and network devices, each read by its
//! own module.

use model::root::SysRoot;

use model::inventory::Inventory;

/// Read every part of the inventory under `root`. Each part that is missing is empty (a
/// container has no PCI, an old kernel no cpufreq); what could not be read is in the parts'
/// `warnings`.
pub fn scan(root: &SysRoot) -> Inventory {
    Inventory {
        pci: crate::pci::audit_sysfs(root),
        system: crate::system::read_context(root),
        usb: crate::usb::scan(root),
        block: crate::block::scan(root),
        net: crate::net::scan(root),
        // A class directory that cannot be listed is no video device to show.
        video: crate::video::nodes(root).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn tree(rel: &str) -> SysRoot {
        SysRoot::new(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(rel),
        )
    }

    #[test]
    fn a_captured_tree_has_every_part() {
        let inv = scan(&tree("tests/fixtures/sysfs/usb3-uas-bot-r8152"));
        assert!(inv.found_anything());
        assert!(!inv.usb.devices.is_empty());
        assert!(!inv.net.interfaces.is_empty());
    }

    #[test]
    fn an_empty_directory_has_nothing() {
        let dir = std::env::temp_dir().join(format!("headroom-inventory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inv = scan(&SysRoot::new(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!inv.found_anything());
        // One sentence for the missing sys/, not one per part.
        let warnings: Vec<&String> = inv.warnings().collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("has no sys/ directory"),
            "{warnings:?}"
        );
    }
}
