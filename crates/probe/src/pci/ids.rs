//! Vendor, device, subsystem and class names from the system's `pci.ids`
//! (format: https://pci-ids.ucw.cz/, the file lspci reads).
//!
//! The file is 1.3 MB; we scan it once and keep only the vendors and classes asked for, so an
//! audit stays well under its 50 ms budget.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Where distributions install pci.ids (Debian's pciutils; Fedora's hwdata).
pub const PCI_IDS_PATHS: [&str; 2] = ["/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"];

/// Names for a set of ids, loaded from one pci.ids file.
#[derive(Debug, Default, Clone)]
pub struct PciNames {
    vendors: HashMap<u16, String>,
    devices: HashMap<(u16, u16), String>,
    subsystems: HashMap<(u16, u16, u16, u16), String>,
    classes: HashMap<u8, String>,
    subclasses: HashMap<(u8, u8), String>,
    /// The file the names came from, or the built-in copy ("built-in pci.ids VERSION").
    pub source: Option<String>,
}

impl PciNames {
    /// Load names for `vendors` (and all classes) from the first pci.ids found under `root`.
    /// No file: an empty table, and lookups return `None` (numeric ids are shown).
    pub fn load(root: &model::root::SysRoot, vendors: &HashSet<u16>) -> Self {
        for p in PCI_IDS_PATHS {
            let path = root.path(p);
            if let Ok(Some(bytes)) = crate::sysfs::read_bytes(&path) {
                // pci.ids is UTF-8; a damaged file still gives what can be read.
                let text = match std::str::from_utf8(&bytes) {
                    Ok(t) => std::borrow::Cow::Borrowed(t),
                    Err(_) => String::from_utf8_lossy(&bytes),
                };
                let mut names = Self::parse(&text, vendors);
                names.source = Some(path.display().to_string());
                return names;
            }
        }
        Self::default()
    }

    /// Names from the pci.ids built into the binary (feature `builtin-ids`), for systems
    /// without one; an empty table (numeric ids) when the feature is off.
    pub fn builtin(vendors: &HashSet<u16>) -> Self {
        match crate::builtin_ids::pci_ids() {
            Some(text) => {
                let mut names = Self::parse(&text, vendors);
                names.source = Some(crate::builtin_ids::PCI_IDS_SOURCE.to_string());
                names
            }
            None => Self::default(),
        }
    }

    /// Parse pci.ids text, keeping entries of `vendors` only.
    pub fn parse(text: &str, vendors: &HashSet<u16>) -> Self {
        let mut n = PciNames::default();
        let mut vendor: Option<u16> = None; // the vendor block we are in, if kept
        let mut device: Option<u16> = None;
        let mut class: Option<u8> = None;
        let mut in_classes = false;
        for line in text.split('\n') {
            // Most of the file is device and subsystem lines of vendors we do not keep:
            // step over them before any parsing.
            if vendor.is_none() && !in_classes && line.starts_with('\t') {
                continue;
            }
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix("C ") {
                in_classes = true;
                vendor = None;
                class = split_id(rest).and_then(|(id, name)| {
                    let c = u8::from_str_radix(id, 16).ok()?;
                    n.classes.insert(c, name.to_string());
                    Some(c)
                });
                continue;
            }
            if in_classes {
                if let (Some(c), Some(rest)) = (class, line.strip_prefix('\t')) {
                    if !rest.starts_with('\t') {
                        if let Some((id, name)) = split_id(rest) {
                            if let Ok(sc) = u8::from_str_radix(id, 16) {
                                n.subclasses.insert((c, sc), name.to_string());
                            }
                        }
                    }
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("\t\t") {
                // Subsystem: "\t\tSSSS DDDD  name"
                if let (Some(v), Some(d)) = (vendor, device) {
                    let mut it = rest.splitn(3, ' ');
                    let sv = it.next().and_then(|t| u16::from_str_radix(t, 16).ok());
                    let sd = it.next().and_then(|t| u16::from_str_radix(t, 16).ok());
                    if let (Some(sv), Some(sd), Some(name)) = (sv, sd, it.next()) {
                        n.subsystems
                            .insert((v, d, sv, sd), name.trim_start().to_string());
                    }
                }
            } else if let Some(rest) = line.strip_prefix('\t') {
                device = None;
                if let Some(v) = vendor {
                    if let Some((id, name)) = split_id(rest) {
                        if let Ok(d) = u16::from_str_radix(id, 16) {
                            n.devices.insert((v, d), name.to_string());
                            device = Some(d);
                        }
                    }
                }
            } else {
                device = None;
                vendor = split_id(line).and_then(|(id, name)| {
                    let v = u16::from_str_radix(id, 16).ok()?;
                    if vendors.contains(&v) {
                        n.vendors.insert(v, name.to_string());
                        Some(v)
                    } else {
                        None
                    }
                });
            }
        }
        n
    }

    pub fn vendor(&self, v: u16) -> Option<&str> {
        self.vendors.get(&v).map(String::as_str)
    }

    pub fn device(&self, v: u16, d: u16) -> Option<&str> {
        self.devices.get(&(v, d)).map(String::as_str)
    }

    pub fn subsystem(&self, v: u16, d: u16, sv: u16, sd: u16) -> Option<&str> {
        self.subsystems.get(&(v, d, sv, sd)).map(String::as_str)
    }

    /// The class name as lspci prints it: subclass name, else base class name.
    pub fn class(&self, class_code: u32) -> Option<&str> {
        let base = (class_code >> 16) as u8;
        let sub = (class_code >> 8) as u8;
        self.subclasses
            .get(&(base, sub))
            .or_else(|| self.classes.get(&base))
            .map(String::as_str)
    }

    /// Whether any names were loaded.
    pub fn is_empty(&self) -> bool {
        self.source.is_none() && self.vendors.is_empty()
    }
}

/// "8086  Intel Corporation" -> ("8086", "Intel Corporation").
fn split_id(s: &str) -> Option<(&str, &str)> {
    let (id, name) = s.split_once(' ')?;
    Some((id, name.trim_start()))
}

/// Whether a path exists that names could be loaded from (for the "install pciutils" hint).
pub fn any_ids_file(root: &model::root::SysRoot) -> Option<PathBuf> {
    PCI_IDS_PATHS
        .iter()
        .map(|p| root.path(p))
        .find(|p| Path::new(p).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# comment
1af4  Red Hat, Inc.
\t1001  Virtio block device
\t\t1af4 0002  Virtio block device (QEMU)
\t1041  Virtio network device
8086  Intel Corporation
\t1237  440FX - 82441FX PMC [Natoma]
C 01  Mass storage controller
\t08  Non-Volatile memory controller
\t\t02  NVM Express
C 02  Network controller
";

    #[test]
    fn keeps_only_wanted_vendors() {
        let n = PciNames::parse(SAMPLE, &HashSet::from([0x1af4]));
        assert_eq!(n.vendor(0x1af4), Some("Red Hat, Inc."));
        assert_eq!(n.device(0x1af4, 0x1001), Some("Virtio block device"));
        assert_eq!(
            n.subsystem(0x1af4, 0x1001, 0x1af4, 0x0002),
            Some("Virtio block device (QEMU)")
        );
        assert_eq!(n.vendor(0x8086), None);
        assert_eq!(n.device(0x8086, 0x1237), None);
    }

    #[test]
    fn class_names() {
        let n = PciNames::parse(SAMPLE, &HashSet::new());
        assert_eq!(n.class(0x010802), Some("Non-Volatile memory controller"));
        assert_eq!(n.class(0x020000), Some("Network controller"));
        assert_eq!(n.class(0x030000), None);
    }
}
