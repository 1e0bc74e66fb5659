//! A function's BARs as sysfs shows them and the facts `bench mmio` checks before it maps
//! one: pure data, filled by `probe::pci::bar` and read by `bench::mmio::target`.

use super::address::PciAddress;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Resource flags of sysfs `resource` (include/linux/ioport.h).
const IORESOURCE_IO: u64 = 0x0000_0100;
const IORESOURCE_MEM: u64 = 0x0000_0200;
const IORESOURCE_PREFETCH: u64 = 0x0000_2000;
const IORESOURCE_MEM_64: u64 = 0x0010_0000;

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
    /// The kernel's lockdown mode (`/sys/kernel/security/lockdown`), `None` when unreadable:
    /// what a refused mapping is explained by.
    pub lockdown: Option<String>,
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
}
