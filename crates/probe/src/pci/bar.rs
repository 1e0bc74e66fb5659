//! A function's BARs as sysfs shows them, and the facts `bench mmio` checks before it maps
//! one: the bound driver, the `enable` state, the BAR holding the MSI-X table, the kernel's
//! lockdown mode.

use crate::sysfs::{link_name, read_attr, read_bytes};
use model::inventory::pci::address::PciAddress;
use model::root::SysRoot;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Resource flags of sysfs `resource` (include/linux/ioport.h).
const IORESOURCE_IO: u64 = 0x0000_0100;
const IORESOURCE_MEM: u64 = 0x0000_0200;
const IORESOURCE_PREFETCH: u64 = 0x0000_2000;
const IORESOURCE_MEM_64: u64 = 0x0010_0000;
/// MSI-X capability ID (PCI Code and ID Assignment Specification 1.11, section 2).
pub const CAP_ID_MSIX: u8 = 0x11;

/// `DDDD:BB:DD.F:N`: BAR N (0..=5) of a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BarAddress {
    pub function: PciAddress,
    pub bar: u8,
}

impl fmt::Display for BarAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.function, self.bar)
    }
}

impl FromStr for BarAddress {
    type Err = String;
    /// `0000:01:00.0:2` or `01:00.0:2`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (f, bar) = s
            .rsplit_once(':')
            .filter(|(f, _)| f.contains('.'))
            .ok_or_else(|| format!("`{s}` is not a BAR: write DDDD:BB:DD.F:N or BB:DD.F:N"))?;
        let function: PciAddress = f.parse().map_err(|e| format!("{e}"))?;
        match bar.parse::<u8>() {
            Ok(bar) if bar <= 5 => Ok(BarAddress { function, bar }),
            _ => Err(format!(
                "`{s}`: the BAR number `{bar}` is not 0 to 5 (a type 0 header has six BARs)"
            )),
        }
    }
}

/// One line of sysfs `resource`: start, end (inclusive) and flags, in hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Resource {
    pub start: u64,
    pub end: u64,
    pub flags: u64,
}

impl Resource {
    /// `0x0000004000080000 0x00000040000fffff 0x0000000000140204` (drivers/pci/pci-sysfs.c
    /// `resource_show`).
    pub fn parse_line(line: &str) -> Option<Resource> {
        let mut it = line.split_whitespace().map(|t| {
            u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
        });
        Some(Resource {
            start: it.next()??,
            end: it.next()??,
            flags: it.next()??,
        })
    }

    /// Bytes; 0 for an unimplemented BAR.
    pub fn size(&self) -> u64 {
        if self.end == 0 && self.start == 0 {
            0
        } else {
            self.end.wrapping_sub(self.start).wrapping_add(1)
        }
    }

    pub fn is_io(&self) -> bool {
        self.flags & IORESOURCE_IO != 0
    }

    pub fn is_memory(&self) -> bool {
        self.flags & IORESOURCE_MEM != 0
    }

    pub fn prefetchable(&self) -> bool {
        self.flags & IORESOURCE_PREFETCH != 0
    }

    pub fn is_64bit(&self) -> bool {
        self.flags & IORESOURCE_MEM_64 != 0
    }
}

/// Where the function's directory is, and what `bench mmio` checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionFacts {
    /// The BAR lines of `resource` (the first six).
    pub bars: Vec<Resource>,
    pub driver: Option<String>,
    /// sysfs `enable`: `Some(false)` when the function's memory decoding is off.
    pub enabled: Option<bool>,
    /// The BAR holding the MSI-X table and the one holding its PBA, from config space.
    pub msix_table_bar: Option<u8>,
    pub msix_pba_bar: Option<u8>,
}

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
    fn bar_addresses() {
        let b: BarAddress = "0000:01:00.0:2".parse().unwrap();
        assert_eq!(b.to_string(), "0000:01:00.0:2");
        assert_eq!(
            "01:00.0:2".parse::<BarAddress>().unwrap().to_string(),
            "0000:01:00.0:2"
        );
        assert!("01:00.0:6"
            .parse::<BarAddress>()
            .unwrap_err()
            .contains("0 to 5"));
        assert!("01:00.0".parse::<BarAddress>().is_err());
    }

    #[test]
    fn resource_lines_of_this_vms_virtio_block_device() {
        // /sys/bus/pci/devices/0000:00:02.0/resource on the test VM: BAR 0, 512 KiB, 64-bit
        // non-prefetchable memory.
        let r = Resource::parse_line("0x0000004000080000 0x00000040000fffff 0x0000000000140204")
            .unwrap();
        assert_eq!(r.size(), 512 * 1024);
        assert!(r.is_memory() && !r.prefetchable() && r.is_64bit() && !r.is_io());
        let empty =
            Resource::parse_line("0x0000000000000000 0x0000000000000000 0x0000000000000000")
                .unwrap();
        assert_eq!(empty.size(), 0);
        let io = Resource::parse_line("0x000000000000c000 0x000000000000c03f 0x0000000000040101")
            .unwrap();
        assert!(io.is_io());
        assert_eq!(io.size(), 64);
    }

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
