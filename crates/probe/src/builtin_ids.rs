//! pci.ids and usb.ids built into the binary (cargo feature `builtin-ids`, on by default), for
//! boards without pciutils, usbutils or hwdata (busybox, minimal Debian images).
//!
//! The system's own files come first (they are usually newer); these copies are used only when
//! none is found. They are Debian 12's `pci.ids` and `usb.ids` packages, xz-compressed in
//! `crates/probe/data/` (see the README there for versions, checksums and the licences:
//! GPL-2.0-or-later or BSD-3-Clause, both databases). The built-in pci.ids has no subsystem
//! lines (a subsystem is shown by number without the system's file). Without the feature the
//! names are absent and the audit shows numeric ids, as lspci does without a pci.ids.

/// The built-in pci.ids's `# Version:` line (checked against the data by a test).
#[macro_export]
macro_rules! builtin_pci_ids_version {
    () => {
        "2023.04.10"
    };
}

/// The built-in usb.ids's `# Version:` line (checked against the data by a test).
#[macro_export]
macro_rules! builtin_usb_ids_version {
    () => {
        "2025.07.26"
    };
}

/// What a result says its names came from when the built-in pci.ids was used.
pub const PCI_IDS_SOURCE: &str = concat!("built-in pci.ids ", builtin_pci_ids_version!());
/// What a result says its names came from when the built-in usb.ids was used.
pub const USB_IDS_SOURCE: &str = concat!("built-in usb.ids ", builtin_usb_ids_version!());

/// One line for `headroom --version`: which copies are built in, if any.
#[cfg(feature = "builtin-ids")]
#[macro_export]
macro_rules! builtin_ids_summary {
    () => {
        concat!(
            "built-in pci.ids ",
            $crate::builtin_pci_ids_version!(),
            ", usb.ids ",
            $crate::builtin_usb_ids_version!(),
            " (Debian 12, pci.ids without its subsystem lines; used when the system has none)"
        )
    };
}

/// One line for `headroom --version`: which copies are built in, if any.
#[cfg(not(feature = "builtin-ids"))]
#[macro_export]
macro_rules! builtin_ids_summary {
    () => {
        "no built-in pci.ids/usb.ids (feature builtin-ids off): numeric ids without the system's"
    };
}

#[cfg(feature = "builtin-ids")]
static PCI_IDS_XZ: &[u8] = include_bytes!("../data/pci.ids.xz");
#[cfg(feature = "builtin-ids")]
static USB_IDS_XZ: &[u8] = include_bytes!("../data/usb.ids.xz");

/// The built-in pci.ids text; `None` when the feature is off.
pub fn pci_ids() -> Option<String> {
    #[cfg(feature = "builtin-ids")]
    {
        unxz(PCI_IDS_XZ)
    }
    #[cfg(not(feature = "builtin-ids"))]
    {
        None
    }
}

/// The built-in usb.ids text; `None` when the feature is off.
pub fn usb_ids() -> Option<String> {
    #[cfg(feature = "builtin-ids")]
    {
        unxz(USB_IDS_XZ)
    }
    #[cfg(not(feature = "builtin-ids"))]
    {
        None
    }
}

/// Decompress one of the embedded files. They are fixed at build time and checked by the tests
/// below, so a failure here is a broken build, reported as "no names" rather than a panic.
#[cfg(feature = "builtin-ids")]
fn unxz(xz: &[u8]) -> Option<String> {
    let mut text = Vec::new();
    lzma_rs::xz_decompress(&mut &xz[..], &mut text).ok()?;
    String::from_utf8(text).ok()
}

#[cfg(all(test, feature = "builtin-ids"))]
mod tests {
    use super::*;

    /// The `# Version:` line of an ids file's header.
    fn version_line(text: &str) -> Option<&str> {
        text.lines()
            .take(20)
            .find_map(|l| {
                l.trim_start_matches(['#', ' ', '\t'])
                    .strip_prefix("Version:")
            })
            .map(str::trim)
    }

    #[test]
    fn pci_ids_decompress_and_match_their_version() {
        let text = pci_ids().expect("built-in pci.ids");
        assert_eq!(version_line(&text), Some(builtin_pci_ids_version!()));
        // The whole file but its subsystem lines, not a truncated one: the class section
        // (with its programming interfaces, two tabs deep) is at its end.
        assert!(text.contains("\nC 0c  Serial bus controller\n"));
        assert!(text.contains("\n\t\t30  XHCI\n"));
        assert!(text.contains("\n\t1001  Virtio block device\n"));
        let subsystem = |l: &str| {
            l.strip_prefix("\t\t")
                .is_some_and(|r| r.len() > 10 && r.as_bytes()[4] == b' ' && r.as_bytes()[9] == b' ')
        };
        assert!(!text.lines().any(subsystem));
        assert_eq!(
            text.len(),
            778_712,
            "pci.ids 2023.04.10 without its subsystem lines, byte for byte"
        );
    }

    #[test]
    fn usb_ids_decompress_and_match_their_version() {
        let text = usb_ids().expect("built-in usb.ids");
        assert_eq!(version_line(&text), Some(builtin_usb_ids_version!()));
        assert!(text.contains("\n1d6b  Linux Foundation\n"));
        // The whole vendor list (its last vendor and product), and nothing after it: the
        // class, HID, language and video sections, which headroom never reads, were cut.
        assert!(text.ends_with(
            "\nffee  FNK Tech\n\t0100  Card Reader Controller RTS5101/RTS5111/RTS5116\n"
        ));
        assert!(!text.contains("\nC 08  Mass Storage\n"));
        assert_eq!(
            text.len(),
            696_041,
            "the vendor list of usb.ids 2025.07.26, byte for byte"
        );
    }

    #[test]
    fn sources_name_the_versions() {
        assert_eq!(PCI_IDS_SOURCE, "built-in pci.ids 2023.04.10");
        assert_eq!(USB_IDS_SOURCE, "built-in usb.ids 2025.07.26");
    }
}
