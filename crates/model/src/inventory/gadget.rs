//! The device side of USB: the USB device controllers (UDCs) of a board that acts as a USB
//! device, and the configfs gadgets bound to them with their functions, as `probe::gadget`
//! reads them (Documentation/ABI/stable/sysfs-class-udc; Documentation/ABI/testing/
//! configfs-usb-gadget and configfs-usb-gadget-{mass-storage,ncm,ecm,rndis,uvc,hid}).

use crate::ceiling::usb::UsbSpeed;
use crate::ceiling::usb_endpoint::Reserved;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Every UDC and configfs gadget under one root.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSide {
    pub controllers: Vec<Udc>,
    pub gadgets: Vec<Gadget>,
    /// Where configfs was read (`/sys/kernel/config` or the mount point mountinfo names);
    /// `None` when no configfs with `usb_gadget` was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configfs: Option<PathBuf>,
    /// One sentence per thing that could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl DeviceSide {
    pub fn is_empty(&self) -> bool {
        self.controllers.is_empty() && self.gadgets.is_empty() && self.warnings.is_empty()
    }

    /// The gadget LUNs whose backing file is `file` (a path within the root), with their
    /// gadget and function.
    pub fn luns_backed_by<'a>(
        &'a self,
        file: &'a std::path::Path,
    ) -> impl Iterator<Item = (&'a Gadget, &'a GadgetFunction, &'a Lun)> + 'a {
        self.gadgets.iter().flat_map(move |g| {
            g.functions.iter().flat_map(move |f| {
                let luns: &[Lun] = match &f.kind {
                    FunctionKind::MassStorage { luns } => luns,
                    _ => &[],
                };
                luns.iter()
                    .filter(move |l| l.file.as_deref() == Some(file))
                    .map(move |l| (g, f, l))
            })
        })
    }
}

/// One USB device controller (`/sys/class/udc/NAME`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Udc {
    pub name: String,
    /// The device it belongs to (`dummy_udc.0`, `fe800000.usb`) and its driver.
    pub parent: Option<String>,
    pub driver: Option<String>,
    /// `state` as the kernel words it (`not attached`, `configured`, `suspended`...).
    pub state: Option<String>,
    /// `current_speed` and `maximum_speed` as the kernel words them (`high-speed`,
    /// `super-speed`, `UNKNOWN`).
    pub current_speed: Option<String>,
    pub maximum_speed: Option<String>,
    pub is_otg: Option<bool>,
    pub is_a_peripheral: Option<bool>,
    /// `function`: the gadget driver bound to it, as the kernel names it.
    pub function: Option<String>,
    /// The configfs gadget whose `UDC` names this controller.
    pub gadget: Option<String>,
}

impl Udc {
    /// The negotiated speed, when the kernel's word for it names one.
    pub fn speed(&self) -> Option<UsbSpeed> {
        self.current_speed.as_deref().and_then(speed_from_word)
    }
}

/// A speed as drivers/usb/common/common.c `usb_speed_string` words it.
pub fn speed_from_word(s: &str) -> Option<UsbSpeed> {
    Some(match s.trim() {
        "low-speed" => UsbSpeed::Low,
        "full-speed" => UsbSpeed::Full,
        "high-speed" => UsbSpeed::High,
        "super-speed" => UsbSpeed::Gen1,
        "super-speed-plus" => UsbSpeed::Gen2,
        _ => return None,
    })
}

/// One configfs gadget (`usb_gadget/NAME`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gadget {
    pub name: String,
    /// The UDC it is bound to (`UDC`; `None` when empty: not bound).
    pub udc: Option<String>,
    pub vendor_id: Option<u16>,
    pub product_id: Option<u16>,
    /// bcdUSB as written (`0x0200`).
    pub bcd_usb: Option<String>,
    pub manufacturer: Option<String>,
    pub product: Option<String>,
    pub serial: Option<String>,
    /// Its configurations (`c.1`).
    pub configs: Vec<String>,
    pub functions: Vec<GadgetFunction>,
}

/// One function instance (`functions/TYPE.INSTANCE`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GadgetFunction {
    /// `mass_storage.0`, `ncm.usb0`...
    pub name: String,
    /// Whether a configuration links it (an unlinked function is not offered to the host).
    pub linked: bool,
    pub kind: FunctionKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionKind {
    /// f_mass_storage: its logical units.
    MassStorage { luns: Vec<Lun> },
    /// f_ncm, f_ecm, f_eem, f_rndis, f_subset (u_ether): the gadget's network interface.
    Net {
        protocol: String,
        ifname: Option<String>,
        dev_addr: Option<String>,
        host_addr: Option<String>,
        qmult: Option<u32>,
    },
    /// f_uvc: the isochronous streaming endpoint it declares.
    Uvc {
        streaming_maxpacket: Option<u32>,
        streaming_maxburst: Option<u32>,
        streaming_interval: Option<u32>,
        /// What that endpoint reserves at the UDC's current speed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reserved: Option<Reserved>,
    },
    /// f_hid: one report per interrupt transaction.
    Hid {
        protocol: Option<u32>,
        subclass: Option<u32>,
        report_length: Option<u32>,
        /// bInterval of its interrupt IN endpoint, and where it came from.
        interval: Option<u32>,
        interval_source: Option<String>,
        /// What that endpoint reserves at the UDC's current speed: one report per
        /// transaction, so its transactions per second are the reports-per-second ceiling.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reserved: Option<Reserved>,
        /// The character device (`/dev/hidgN`'s major:minor).
        dev: Option<String>,
    },
    /// A function headroom does not describe (acm, midi, printer, ffs...).
    Other { r#type: String },
}

/// One logical unit of a mass-storage function (`lun.N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lun {
    pub name: String,
    /// The backing file or device as the kernel shows it (`None`: no medium).
    pub file: Option<PathBuf>,
    pub ro: Option<bool>,
    pub removable: Option<bool>,
    pub cdrom: Option<bool>,
    pub nofua: Option<bool>,
}

impl FunctionKind {
    /// The function type, the part of the directory name before the dot.
    pub fn label(&self) -> &str {
        match self {
            FunctionKind::MassStorage { .. } => "mass storage",
            FunctionKind::Net { protocol, .. } => protocol,
            FunctionKind::Uvc { .. } => "UVC camera",
            FunctionKind::Hid { .. } => "HID",
            FunctionKind::Other { r#type } => r#type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_speed_words() {
        assert_eq!(speed_from_word("high-speed\n"), Some(UsbSpeed::High));
        assert_eq!(speed_from_word("super-speed-plus"), Some(UsbSpeed::Gen2));
        assert_eq!(speed_from_word("UNKNOWN"), None);
    }
}
