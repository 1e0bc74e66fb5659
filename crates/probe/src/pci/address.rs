//! A PCI function's address: domain, bus, device, function (`0000:01:00.0`).

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Parses `DDDD:BB:DD.F` (domain of 4 to 6 hex digits, as lspci prints it) or `BB:DD.F`.
impl FromStr for PciAddress {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?} is not a PCI address (expected [DDDD:]BB:DD.F)");
        let (rest, function) = s.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [b, d] => ("0", *b, *d),
            [dom, b, d] if (1..=6).contains(&dom.len()) => (*dom, *b, *d),
            _ => return Err(bad()),
        };
        let hex = |t: &str, max_len: usize| {
            if t.is_empty() || t.len() > max_len {
                None
            } else {
                u32::from_str_radix(t, 16).ok()
            }
        };
        let domain = hex(domain, 6).ok_or_else(bad)?;
        let bus = hex(bus, 2).ok_or_else(bad)?;
        let device = hex(device, 2).filter(|d| *d < 32).ok_or_else(bad)?;
        let function = hex(function, 1).filter(|f| *f < 8).ok_or_else(bad)?;
        Ok(PciAddress {
            domain,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(a.to_string(), "0000:01:00.0");
        let b: PciAddress = "2e:00.1".parse().unwrap();
        assert_eq!(b.to_string(), "0000:2e:00.1");
        let c: PciAddress = "10000:00:1f.7".parse().unwrap();
        assert_eq!(c.domain, 0x10000);
    }

    #[test]
    fn rejects_garbage() {
        assert!("0000:01:00".parse::<PciAddress>().is_err());
        assert!("0000:01:20.0".parse::<PciAddress>().is_err());
        assert!("0000:01:00.8".parse::<PciAddress>().is_err());
        assert!("pci0000:00".parse::<PciAddress>().is_err());
    }
}
