//! The USB inventory: `/sys/bus/usb/devices` as a tree of hubs and devices, as
//! `probe::usb` reads it (attributes: the kernel's Documentation/ABI/*/sysfs-bus-usb).

use super::gadget::DeviceSide;
use crate::ceiling::usb_endpoint::{AlternateSetting, Reserved, UsbEndpoint};
use crate::path::StorageTransport;
use crate::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UsbInventory {
    /// Every device, root hubs included, sorted by bus then port path.
    pub devices: Vec<UsbDevice>,
    /// The usb.ids file names were taken from, if one was found under the root.
    pub ids_file: Option<PathBuf>,
    /// Without one: the copy built into the binary ("built-in usb.ids VERSION"), if any.
    /// (Absent from documents written before the built-in copy.)
    #[serde(default)]
    pub ids_builtin: Option<String>,
    /// This section's findings, once `report::kinds::audit::findings` has judged it (probe leaves
    /// them empty); the document carries them per section.
    pub findings: Vec<Finding>,
    /// One sentence per thing that could not be read; the rest of the scan went on.
    pub warnings: Vec<String>,
    /// Whether the root has `/sys/bus/usb` at all (a machine without a USB host controller,
    /// or a kernel without USB, has none). Absent in documents written before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_present: Option<bool>,
    /// The device side: USB device controllers and configfs gadgets (a board that is itself a
    /// USB device), read whether or not the root has a USB host.
    #[serde(default, skip_serializing_if = "DeviceSide::is_empty")]
    pub device_side: DeviceSide,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbDevice {
    /// Kernel name: `usb5` for a root hub, `5-1.4` for a device (bus 5, port 1, port 4).
    pub name: String,
    pub bus: Option<u32>,
    /// Ports from the root hub down (`[1, 4]` for `5-1.4`); empty for a root hub.
    pub ports: Vec<u32>,
    pub root_hub: bool,
    /// The hub this device is plugged into (`None` for a root hub).
    pub parent: Option<String>,
    /// Devices plugged into this one (a hub), in port order.
    pub children: Vec<String>,
    pub devnum: Option<u32>,
    /// Negotiated signalling rate in Mb/s.
    #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
    pub speed_mbps: Option<f64>,
    pub rx_lanes: Option<u32>,
    pub tx_lanes: Option<u32>,
    /// bcdUSB as the kernel prints it, e.g. "3.20".
    pub version: Option<String>,
    pub vendor_id: Option<u16>,
    pub product_id: Option<u16>,
    /// Names from usb.ids.
    pub vendor_name: Option<String>,
    pub product_name: Option<String>,
    /// The device's own strings.
    pub manufacturer: Option<String>,
    pub product: Option<String>,
    pub device_class: Option<u8>,
    /// Number of downstream ports (hubs).
    pub max_child: Option<u32>,
    /// Driver bound to the device itself (`usb`, `hub`, `r8152-cfgselector`...).
    pub driver: Option<String>,
    pub interfaces: Vec<UsbInterface>,
    /// For a mass-storage device: which transport the kernel uses.
    pub storage: Option<MassStorage>,
    /// The controller of this device's bus.
    pub host_controller: Option<HostController>,
    /// Canonical sysfs directory, within the root.
    pub sysfs_path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbInterface {
    /// `5-1:1.0` (configuration 1, interface 0).
    pub name: String,
    pub number: Option<u8>,
    pub alt_setting: Option<u8>,
    pub class: Option<u8>,
    pub subclass: Option<u8>,
    pub protocol: Option<u8>,
    /// A name from headroom's own table, so a document read back has none.
    #[serde(skip_deserializing)]
    pub class_name: Option<&'static str>,
    /// `None`: no driver bound.
    pub driver: Option<String>,
    /// The endpoints of the current alternate setting (from the device's raw `descriptors`),
    /// each periodic one with the bandwidth it reserves at the device's speed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<UsbEndpoint>,
    /// The interface's other alternate settings, when it has more than one (a UVC or audio
    /// streaming interface: one per bandwidth the driver may choose).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_alt_settings: Vec<AlternateSetting>,
}

impl UsbInterface {
    /// What the current alternate setting's isochronous endpoints reserve together at
    /// `speed` (`None`: it has none, as alternate setting 0 of an idle UVC interface).
    pub fn isochronous_reserved(&self, speed: crate::ceiling::usb::UsbSpeed) -> Option<Reserved> {
        crate::ceiling::usb_endpoint::isochronous_reserved(speed, &self.endpoints)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MassStorage {
    pub interface: String,
    pub transport: StorageTransport,
    pub driver: Option<String>,
    /// Whether any alternate setting of the device offers UAS (from `descriptors`);
    /// `None` when the descriptors could not be read.
    pub uas_offered: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "bus", rename_all = "snake_case")]
pub enum HostAttachment {
    /// A PCI function, address like `0000:00:14.0`.
    Pci { address: String },
    /// A platform (SoC or ACPI) device, e.g. `fe9c0000.usb` or `80860F14:00`.
    Platform { name: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostController {
    pub attachment: HostAttachment,
    pub driver: Option<String>,
    /// xHCI, EHCI, OHCI, UHCI when the PCI class or the driver says so.
    /// A name from headroom's own table, so a document read back has none.
    #[serde(skip_deserializing)]
    pub kind: Option<&'static str>,
}

/// Whether a bcdUSB string is USB 3.0 or later ("3.00", "3.10", "3.20").
pub fn is_usb3_version(version: &str) -> bool {
    usb_major_version(version).is_some_and(|major| major >= 3)
}

/// The major version of a bcdUSB string: 2 for "2.00", 3 for "3.20".
pub fn usb_major_version(version: &str) -> Option<u32> {
    version.trim().split('.').next()?.parse().ok()
}

impl UsbDevice {
    /// How the user names it: `USB 4-1` or `USB root hub usb4`.
    pub fn label(&self) -> String {
        if self.root_hub {
            format!("USB root hub {}", self.name)
        } else {
            format!("USB {}", self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usb3_versions_as_the_kernel_writes_them() {
        assert!(is_usb3_version(" 3.20"));
        assert!(!is_usb3_version(" 2.10"));
    }
}
