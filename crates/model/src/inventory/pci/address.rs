//! PCI function addresses: `DDDD:BB:DD.F` (domain, bus, device, function).
//!
//! The form is the one the kernel uses for `/sys/bus/pci/devices/*` names and lspci prints
//! with `-D`. The domain ("segment") is 16 bits on most machines, but Intel VMD creates
//! domains from 0x10000 up, so it is kept as `u32` and printed with at least four digits.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One PCI function's address. Orders by domain, bus, device, function: the order lspci
/// and sysfs list them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    pub domain: u32,
    pub bus: u8,
    /// 0..=31 (5 bits in a routing ID).
    pub device: u8,
    /// 0..=7 (3 bits in a routing ID).
    pub function: u8,
}

impl PciAddress {
    pub fn new(domain: u32, bus: u8, device: u8, function: u8) -> Self {
        PciAddress {
            domain,
            bus,
            device,
            function,
        }
    }

    /// The address a sysfs directory name stands for, if the name is one the kernel gives
    /// a PCI function (`0000:00:14.0`, and `10000:e1:1f.7` under Intel VMD): the full form,
    /// lower-case hex, exactly as [`fmt::Display`] prints it. `pci0000:00` (a host
    /// bridge), `80860F14:00` (an ACPI platform device), `1-1:1.0` (a USB interface) and
    /// the short `00:14.0` that users type are not.
    pub fn from_sysfs_name(name: &str) -> Option<PciAddress> {
        let a: PciAddress = name.parse().ok()?;
        (a.to_string() == name).then_some(a)
    }
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

/// Serialized as its text form (`"0000:01:00.0"`), the way users search for it.
impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back from that text form through [`FromStr`] (the short `BB:DD.F` means domain 0);
/// anything else is an error that names the text and the expected form.
impl<'de> Deserialize<'de> for PciAddress {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A string that is not a PCI address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressParseError {
    pub text: String,
    pub reason: &'static str,
}

impl fmt::Display for AddressParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a PCI address: {} (expected DDDD:BB:DD.F or BB:DD.F, hex)",
            self.text, self.reason
        )
    }
}

impl std::error::Error for AddressParseError {}

impl FromStr for PciAddress {
    type Err = AddressParseError;

    /// Accepts `DDDD:BB:DD.F` (1 to 8 domain digits) and `BB:DD.F` (domain 0), in hex,
    /// as sysfs names and lspci print them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| AddressParseError {
            text: s.to_string(),
            reason,
        };
        let (rest, function) = s
            .rsplit_once('.')
            .ok_or_else(|| err("no `.` before the function"))?;
        let mut parts = rest.rsplitn(3, ':');
        let device = parts.next().ok_or_else(|| err("no device number"))?;
        let bus = parts
            .next()
            .ok_or_else(|| err("no `:` between bus and device"))?;
        let domain = parts.next();

        let function =
            hex_field(function, 1).ok_or_else(|| err("the function is not one hex digit"))?;
        let device = hex_field(device, 2).ok_or_else(|| err("the device is not 1-2 hex digits"))?;
        let bus = hex_field(bus, 2).ok_or_else(|| err("the bus is not 1-2 hex digits"))?;
        let domain = match domain {
            Some(d) => hex_field(d, 8).ok_or_else(|| err("the domain is not 1-8 hex digits"))?,
            None => 0,
        };
        // A routing ID has 5 bits of device and 3 bits of function (PCIe Base Spec 6.0,
        // section 2.2.4.2).
        if device > 0x1f {
            return Err(err("the device number is above 1f"));
        }
        if function > 7 {
            return Err(err("the function number is above 7"));
        }
        Ok(PciAddress {
            domain,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// `s` as hex of 1..=`max_digits` digits.
pub(crate) fn hex_field(s: &str, max_digits: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_sysfs_names() {
        let a: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(a, PciAddress::new(0, 1, 0, 0));
        assert_eq!(a.to_string(), "0000:01:00.0");
        let vmd: PciAddress = "10000:e1:1f.7".parse().unwrap();
        assert_eq!(vmd, PciAddress::new(0x10000, 0xe1, 0x1f, 7));
        assert_eq!(vmd.to_string(), "10000:e1:1f.7");
    }

    #[test]
    fn sysfs_names_are_only_the_full_form() {
        assert_eq!(
            PciAddress::from_sysfs_name("0000:00:1d.7"),
            Some(PciAddress::new(0, 0, 0x1d, 7))
        );
        assert_eq!(
            PciAddress::from_sysfs_name("10000:e1:1f.7"),
            Some(PciAddress::new(0x10000, 0xe1, 0x1f, 7))
        );
        for not in [
            "pci0000:00",
            "80860F14:00",
            "1-1:1.0",
            "00:1d.7",
            "0000:00:1D.7",
            "virtio2",
            "0000:00:1d.7x",
            "",
        ] {
            assert_eq!(PciAddress::from_sysfs_name(not), None, "{not}");
        }
    }

    #[test]
    fn short_form_means_domain_zero() {
        let a: PciAddress = "2e:00.0".parse().unwrap();
        assert_eq!(a.to_string(), "0000:2e:00.0");
    }

    #[test]
    fn orders_like_lspci() {
        let mut v: Vec<PciAddress> = [
            "0001:00:00.0",
            "0000:02:00.0",
            "0000:01:00.1",
            "0000:01:00.0",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        v.sort();
        let s: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(
            s,
            [
                "0000:01:00.0",
                "0000:01:00.1",
                "0000:02:00.0",
                "0001:00:00.0"
            ]
        );
    }

    #[test]
    fn rejects_bad_addresses_with_a_reason() {
        for (text, reason) in [
            ("01:00", "no `.` before the function"),
            ("01:20.0", "the device number is above 1f"),
            ("01:00.8", "the function number is above 7"),
            ("0000:1:00.0x", "the function is not one hex digit"),
            ("0000:100:00.0", "the bus is not 1-2 hex digits"),
            ("00.0", "no `:` between bus and device"),
            ("", "no `.` before the function"),
        ] {
            let e = text.parse::<PciAddress>().unwrap_err();
            assert_eq!(e.reason, reason, "{text}");
            assert!(e.to_string().contains("expected DDDD:BB:DD.F"));
        }
    }

    #[test]
    fn serializes_as_text() {
        let a = PciAddress::new(0, 0x2e, 0, 0);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"0000:2e:00.0\"");
    }

    #[test]
    fn reads_back_what_it_writes() {
        for a in [
            PciAddress::new(0, 0x2e, 0, 0),
            PciAddress::new(0x10000, 0xe1, 0x1f, 7),
        ] {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(serde_json::from_str::<PciAddress>(&json).unwrap(), a);
        }
        let e = serde_json::from_str::<PciAddress>("\"0000:01:20.0\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("`0000:01:20.0` is not a PCI address: the device number is above 1f"),
            "{e}"
        );
        assert!(serde_json::from_str::<PciAddress>("1").is_err());
    }
}
