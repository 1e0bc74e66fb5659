//! USB inventory: `/sys/bus/usb/devices` as a tree of hubs and devices.
//!
//! Attributes follow Documentation/ABI/stable/sysfs-bus-usb and
//! Documentation/ABI/testing/sysfs-bus-usb of the kernel: `speed` is the negotiated rate in
//! Mb/s ("1.5", "12", "480", "5000", "10000", "20000"; for SuperSpeedPlus it already counts
//! both lanes of a x2 link), `rx_lanes`/`tx_lanes` (since 4.18), `version` (bcdUSB, printed
//! with a leading space), and per interface the *active* alternate setting's
//! `bInterfaceClass`/`bInterfaceSubClass`/`bInterfaceProtocol`. The other alternate settings
//! are only visible in the device's raw `descriptors` file, which is how a UAS alternate
//! setting that usb-storage did not use is found.

use crate::sysfs::SysfsExt;
use crate::sysfs::{link_name, parse_hex_u32, read_attr_noting, read_bytes, read_parsed_noting};
use model::root::SysRoot;

use model::ceiling::usb::UsbSpeed;
use model::ceiling::usb_endpoint::{alternate_settings, AlternateSetting, UsbEndpoint};
use model::inventory::pci::address::PciAddress;
use model::inventory::usb::{
    HostAttachment, HostController, MassStorage, UsbDevice, UsbInterface, UsbInventory,
};
use model::path::StorageTransport;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Mass Storage class code (USB-IF "Defined Class Codes", base class 08h).
const CLASS_MASS_STORAGE: u8 = 0x08;
/// USB Attached SCSI protocol code (USB Mass Storage Class Specification Overview 1.4,
/// table 3: 62h = UAS).
const PROTOCOL_UAS: u8 = 0x62;
/// Bulk-Only Transport protocol code (same table: 50h = BBB, Bulk-Only).
const PROTOCOL_BULK_ONLY: u8 = 0x50;

/// Where usb.ids lives on the common distributions (usbutils and hwdata packages).
pub const USB_IDS_PATHS: [&str; 3] = [
    "/usr/share/misc/usb.ids",
    "/usr/share/hwdata/usb.ids",
    "/var/lib/usbutils/usb.ids",
];

/// Read the whole USB tree under the root.
pub fn scan(root: &SysRoot) -> UsbInventory {
    let mut inv = UsbInventory {
        bus_present: Some(root.path("/sys/bus/usb").is_dir()),
        device_side: crate::gadget::scan(root),
        ..UsbInventory::default()
    };
    let names = match root.list("/sys/bus/usb/devices") {
        Ok(n) => n,
        Err(e) => {
            inv.warnings.push(e.to_string());
            return inv;
        }
    };
    // Names only when there is something to name (the built-in copy costs a decompression).
    let ids = if names.is_empty() {
        None
    } else {
        load_ids(root, &mut inv)
    };
    for name in names.iter().filter(|n| !n.contains(':')) {
        let rel = format!("/sys/bus/usb/devices/{name}");
        let path = match root.canonical(&rel) {
            Ok(p) => p,
            Err(e) => {
                inv.warnings.push(format!("USB device {name} skipped: {e}"));
                continue;
            }
        };
        let dev = device_at(root, &path, ids.as_ref(), &mut inv.warnings);
        inv.devices.push(dev);
    }
    inv.devices
        .sort_by(|a, b| (a.bus, &a.ports).cmp(&(b.bus, &b.ports)));
    let links: Vec<(String, String)> = inv
        .devices
        .iter()
        .filter_map(|d| Some((d.parent.clone()?, d.name.clone())))
        .collect();
    for (parent, child) in links {
        if let Some(p) = inv.devices.iter_mut().find(|d| d.name == parent) {
            p.children.push(child);
        }
    }
    inv
}

fn load_ids(root: &SysRoot, inv: &mut UsbInventory) -> Option<UsbIds> {
    for p in USB_IDS_PATHS {
        let path = root.path(p);
        match read_bytes(&path) {
            Ok(Some(bytes)) => {
                inv.ids_file = Some(PathBuf::from(p));
                return Some(UsbIds::parse(&String::from_utf8_lossy(&bytes)));
            }
            Ok(None) => {}
            Err(e) => inv.warnings.push(e.to_string()),
        }
    }
    let text = crate::builtin_ids::usb_ids()?;
    inv.ids_builtin = Some(crate::builtin_ids::USB_IDS_SOURCE.to_string());
    Some(UsbIds::parse(&text))
}

/// Whether a sysfs directory name is a USB device (`usb3`, `3-1`, `3-1.4.2`), not an
/// interface (`3-1:1.0`) or anything else.
pub fn is_device_name(name: &str) -> bool {
    if let Some(n) = name.strip_prefix("usb") {
        return !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    parse_port_path(name).is_some()
}

/// Whether a name is a USB interface (`3-1:1.0`, root hub interface `3-0:1.0`).
pub fn is_interface_name(name: &str) -> bool {
    name.split_once(':')
        .is_some_and(|(dev, _)| parse_port_path(dev).is_some())
}

/// `3-1.4.2` -> bus 3, ports [1, 4, 2].
pub fn parse_port_path(name: &str) -> Option<(u32, Vec<u32>)> {
    let (bus, ports) = name.split_once('-')?;
    let bus = bus.parse().ok()?;
    let ports = ports
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    Some((bus, ports))
}

/// Parse a `speed` value ("1.5", "480", "5000") in Mb/s. "UNKNOWN" and other text: `None`.
pub fn parse_speed(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| *v > 0.0)
}

/// Read one USB device directory (canonical path within the root).
pub(crate) fn device_at(
    root: &SysRoot,
    path: &Path,
    ids: Option<&UsbIds>,
    warnings: &mut Vec<String>,
) -> UsbDevice {
    let dir = root.path(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let root_hub = name.starts_with("usb");
    let (bus, ports) = match parse_port_path(&name) {
        Some((b, p)) => (Some(b), p),
        None => (
            name.strip_prefix("usb").and_then(|n| n.parse().ok()),
            vec![],
        ),
    };
    let hex16 = |f: &str, w: &mut Vec<String>| {
        read_parsed_noting(&dir.join(f), parse_hex_u32, w).and_then(|v| u16::try_from(v).ok())
    };
    let hex8 = |p: &Path, w: &mut Vec<String>| {
        read_parsed_noting(p, parse_hex_u32, w).and_then(|v| u8::try_from(v).ok())
    };
    let num = |f: &str, w: &mut Vec<String>| {
        read_parsed_noting(&dir.join(f), |s| s.parse::<u32>().ok(), w)
    };
    let vendor_id = hex16("idVendor", warnings);
    let product_id = hex16("idProduct", warnings);
    let (vendor_name, product_name) = match (ids, vendor_id) {
        (Some(ids), Some(v)) => (
            ids.vendor(v).map(str::to_string),
            product_id
                .and_then(|p| ids.product(v, p))
                .map(str::to_string),
        ),
        _ => (None, None),
    };
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !root_hub && is_device_name(n));

    let speed_mbps = read_parsed_noting(&dir.join("speed"), parse_speed, warnings);
    let rx_lanes = num("rx_lanes", warnings);
    let speed = speed_mbps
        .and_then(|s| UsbSpeed::from_sysfs(s, u8::try_from(rx_lanes.unwrap_or(1)).unwrap_or(1)));
    let raw = read_descriptors(&dir, warnings);
    let alts = raw.as_deref().map(alternate_settings).unwrap_or_default();

    let mut interfaces = Vec::new();
    // Root hub usbN holds interface N-0:1.0; device 5-1 holds 5-1:1.0.
    let prefix = match (root_hub, bus) {
        (true, Some(b)) => format!("{b}-0:"),
        _ => format!("{name}:"),
    };
    for entry in root.list(path).unwrap_or_else(|e| {
        warnings.push(e.to_string());
        Vec::new()
    }) {
        if !entry.starts_with(&prefix) {
            continue;
        }
        let idir = dir.join(&entry);
        let class = hex8(&idir.join("bInterfaceClass"), warnings);
        let number = hex8(&idir.join("bInterfaceNumber"), warnings);
        let alt_setting = read_parsed_noting(
            &idir.join("bAlternateSetting"),
            |s| s.trim().parse().ok(),
            warnings,
        );
        let (endpoints, other_alt_settings) =
            interface_endpoints(&alts, &entry, number, alt_setting, speed);
        interfaces.push(UsbInterface {
            number,
            alt_setting,
            class,
            subclass: hex8(&idir.join("bInterfaceSubClass"), warnings),
            protocol: hex8(&idir.join("bInterfaceProtocol"), warnings),
            class_name: class.and_then(class_name),
            driver: link_or_warn(&idir.join("driver"), warnings),
            name: entry,
            endpoints,
            other_alt_settings,
        });
    }
    interfaces.sort_by_key(|i| (i.number, i.name.clone()));

    let storage = mass_storage(&interfaces, raw.as_deref());
    UsbDevice {
        bus,
        ports,
        root_hub,
        parent,
        children: Vec::new(),
        devnum: num("devnum", warnings),
        speed_mbps,
        rx_lanes,
        tx_lanes: num("tx_lanes", warnings),
        version: read_attr_noting(&dir.join("version"), warnings),
        vendor_id,
        product_id,
        vendor_name,
        product_name,
        manufacturer: read_attr_noting(&dir.join("manufacturer"), warnings),
        product: read_attr_noting(&dir.join("product"), warnings),
        device_class: hex8(&dir.join("bDeviceClass"), warnings),
        max_child: num("maxchild", warnings),
        driver: link_or_warn(&dir.join("driver"), warnings),
        interfaces,
        storage,
        host_controller: host_controller(root, path, warnings),
        sysfs_path: path.to_path_buf(),
        name,
    }
}

fn link_or_warn(path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    link_name(path).unwrap_or_else(|e| {
        warnings.push(e.to_string());
        None
    })
}

fn mass_storage(interfaces: &[UsbInterface], raw: Option<&[u8]>) -> Option<MassStorage> {
    let iface = interfaces
        .iter()
        .find(|i| i.class == Some(CLASS_MASS_STORAGE))?;
    let transport = match (iface.driver.as_deref(), iface.protocol) {
        (Some("uas"), _) => StorageTransport::Uas,
        (Some("usb-storage"), _) => StorageTransport::BulkOnly,
        (None, Some(PROTOCOL_UAS)) => StorageTransport::Uas,
        (None, Some(PROTOCOL_BULK_ONLY)) => StorageTransport::BulkOnly,
        _ => StorageTransport::Other,
    };
    Some(MassStorage {
        interface: iface.name.clone(),
        transport,
        driver: iface.driver.clone(),
        uas_offered: raw.map(offers_uas),
    })
}

/// The device's raw `descriptors` file (`None`, said once, when it cannot be read).
fn read_descriptors(dir: &Path, warnings: &mut Vec<String>) -> Option<Vec<u8>> {
    match read_bytes(&dir.join("descriptors")) {
        Ok(raw) => raw,
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    }
}

/// Whether raw descriptors (the sysfs `descriptors` file: the device descriptor followed by
/// the configuration descriptors with all their alternate settings, USB 2.0 spec 9.6) hold
/// a mass-storage interface with the UAS protocol.
pub fn offers_uas(raw: &[u8]) -> bool {
    alternate_settings(raw)
        .iter()
        .any(|d| d.class == CLASS_MASS_STORAGE && d.protocol == PROTOCOL_UAS)
}

/// The configuration value in an interface's sysfs name (`5-1:1.0` -> 1; Documentation/ABI/
/// stable/sysfs-bus-usb: `BUS-PORT[.PORT...]:CONFIG.INTERFACE`).
pub fn interface_configuration(name: &str) -> Option<u8> {
    name.split_once(':')?.1.split_once('.')?.0.parse().ok()
}

/// The current alternate setting's endpoints of one interface (by its sysfs name, number and
/// `bAlternateSetting`), and its other alternate settings when it has more than one.
fn interface_endpoints(
    alts: &[AlternateSetting],
    name: &str,
    number: Option<u8>,
    current: Option<u8>,
    speed: Option<UsbSpeed>,
) -> (Vec<UsbEndpoint>, Vec<AlternateSetting>) {
    let (Some(number), Some(configuration)) = (number, interface_configuration(name)) else {
        return (Vec::new(), Vec::new());
    };
    let mine: Vec<&AlternateSetting> = alts
        .iter()
        .filter(|a| a.configuration == configuration && a.interface == number)
        .collect();
    let with_bandwidth = |a: &AlternateSetting| -> Vec<UsbEndpoint> {
        a.endpoints
            .iter()
            .map(|e| e.clone().at_speed(speed))
            .collect()
    };
    let current = current.unwrap_or(0);
    let endpoints = mine
        .iter()
        .find(|a| a.alt_setting == current)
        .map(|a| with_bandwidth(a))
        .unwrap_or_default();
    let others = if mine.len() > 1 {
        mine.iter()
            .filter(|a| a.alt_setting != current)
            .map(|a| AlternateSetting {
                endpoints: with_bandwidth(a),
                ..(*a).clone()
            })
            .collect()
    } else {
        Vec::new()
    };
    (endpoints, others)
}

/// One endpoint descriptor (USB 2.0 spec table 9-13) with the SuperSpeed endpoint companion
/// that follows it (USB 3.2 spec 9.6.7), and the configuration and alternate setting it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointDescriptor {
    pub configuration: u8,
    pub interface: u8,
    pub alt_setting: u8,
    pub address: u8,
    /// bmAttributes: bits 1..0 the transfer type (0 control, 1 isochronous, 2 bulk, 3
    /// interrupt).
    pub attributes: u8,
    /// wMaxPacketSize as in the descriptor (bits 12..11: additional transactions).
    pub max_packet_size: u16,
    pub interval: u8,
    /// The companion's bMaxBurst, bmAttributes and wBytesPerInterval.
    pub companion: Option<(u8, u8, u16)>,
}

/// Every endpoint of every configuration and alternate setting in raw descriptors (the
/// sysfs `descriptors` file), as the one descriptor walk reads them
/// ([`model::ceiling::usb_endpoint::alternate_settings`]), with the numbers as declared.
pub fn endpoint_descriptors(raw: &[u8]) -> Vec<EndpointDescriptor> {
    use model::ceiling::usb::TransferType;
    model::ceiling::usb_endpoint::alternate_settings(raw)
        .into_iter()
        .flat_map(|a| {
            a.endpoints.into_iter().map(move |e| EndpointDescriptor {
                configuration: a.configuration,
                interface: a.interface,
                alt_setting: a.alt_setting,
                address: e.address,
                // bmAttributes bits 1..0 (USB 2.0 table 9-13).
                attributes: match e.transfer {
                    TransferType::Control => 0,
                    TransferType::Isochronous => 1,
                    TransferType::Bulk => 2,
                    TransferType::Interrupt => 3,
                },
                max_packet_size: e.max_packet | (u16::from(e.additional_transactions) << 11),
                interval: e.interval,
                companion: e
                    .ss_companion
                    .map(|c| (c.max_burst, c.attributes, c.bytes_per_interval)),
            })
        })
        .collect()
}

/// The controller of the bus a device sits on: the first ancestor directory that is not a
/// USB device or interface.
fn host_controller(
    root: &SysRoot,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Option<HostController> {
    let hc = path.ancestors().skip(1).find(|p| {
        p.file_name()
            .map(|n| n.to_string_lossy())
            .is_some_and(|n| !is_device_name(&n) && !is_interface_name(&n))
    })?;
    let name = hc.file_name()?.to_string_lossy().into_owned();
    if name == "devices" || name.is_empty() {
        return None;
    }
    let dir = root.path(hc);
    let driver = link_or_warn(&dir.join("driver"), warnings);
    let class = read_parsed_noting(&dir.join("class"), parse_hex_u32, warnings);
    let kind = class
        .and_then(hc_kind_from_class)
        .or_else(|| driver.as_deref().and_then(hc_kind_from_driver));
    let attachment = if PciAddress::from_sysfs_name(&name).is_some() {
        HostAttachment::Pci { address: name }
    } else {
        HostAttachment::Platform { name }
    };
    Some(HostController {
        attachment,
        driver,
        kind,
    })
}

/// USB host controller kind from the PCI class code (PCI Code and ID Assignment
/// Specification, class 0Ch subclass 03h: prog-if 00h UHCI, 10h OHCI, 20h EHCI, 30h xHCI).
pub fn hc_kind_from_class(class: u32) -> Option<&'static str> {
    match class {
        0x0c0300 => Some("UHCI"),
        0x0c0310 => Some("OHCI"),
        0x0c0320 => Some("EHCI"),
        0x0c0330 => Some("xHCI"),
        _ => None,
    }
}

/// USB host controller kind from the kernel driver's name (`xhci_hcd`, `ehci-pci`,
/// `xhci-hcd` on platforms, `ohci-platform`...).
pub fn hc_kind_from_driver(driver: &str) -> Option<&'static str> {
    let d = driver.to_ascii_lowercase();
    [
        ("xhci", "xHCI"),
        ("ehci", "EHCI"),
        ("ohci", "OHCI"),
        ("uhci", "UHCI"),
    ]
    .into_iter()
    .find(|(k, _)| d.starts_with(k))
    .map(|(_, v)| v)
}

/// Class names as lsusb prints them (usb.ids "C" section, after the USB-IF "Defined Class
/// Codes" list).
pub fn class_name(class: u8) -> Option<&'static str> {
    Some(match class {
        0x01 => "Audio",
        0x02 => "Communications",
        0x03 => "Human Interface Device",
        0x05 => "Physical Interface Device",
        0x06 => "Imaging",
        0x07 => "Printer",
        0x08 => "Mass Storage",
        0x09 => "Hub",
        0x0a => "CDC Data",
        0x0b => "Chip/SmartCard",
        0x0d => "Content Security",
        0x0e => "Video",
        0x0f => "Personal Healthcare",
        0x10 => "Audio/Video",
        0x11 => "Billboard",
        0x12 => "Type-C Bridge",
        0xdc => "Diagnostic",
        0xe0 => "Wireless",
        0xef => "Miscellaneous Device",
        0xfe => "Application Specific Interface",
        0xff => "Vendor Specific Class",
        _ => return None,
    })
}

/// Vendor and product names from a usb.ids file.
#[derive(Clone, Debug, Default)]
pub struct UsbIds {
    vendors: HashMap<u16, (String, HashMap<u16, String>)>,
}

impl UsbIds {
    /// Parse usb.ids: `vvvv  Name` lines, each followed by `\tpppp  Name` lines; the other
    /// sections (`C 08  Mass Storage`, `HID ...`) end the vendor list.
    pub fn parse(text: &str) -> Self {
        let mut ids = UsbIds::default();
        let mut current: Option<u16> = None;
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('\t') {
                if rest.starts_with('\t') {
                    continue; // interface lines
                }
                if let (Some(v), Some((id, name))) = (current, split_id(rest)) {
                    if let Some(entry) = ids.vendors.get_mut(&v) {
                        entry.1.insert(id, name.to_string());
                    }
                }
                continue;
            }
            current = split_id(line).map(|(id, name)| {
                ids.vendors.insert(id, (name.to_string(), HashMap::new()));
                id
            });
        }
        ids
    }

    pub fn vendor(&self, vendor: u16) -> Option<&str> {
        self.vendors.get(&vendor).map(|v| v.0.as_str())
    }

    pub fn product(&self, vendor: u16, product: u16) -> Option<&str> {
        self.vendors
            .get(&vendor)
            .and_then(|v| v.1.get(&product))
            .map(String::as_str)
    }
}

/// `0bda  Realtek Semiconductor Corp.` -> (0x0bda, "Realtek Semiconductor Corp.").
fn split_id(line: &str) -> Option<(u16, &str)> {
    let (id, name) = line.split_once("  ")?;
    if id.len() != 4 {
        return None;
    }
    Some((u16::from_str_radix(id, 16).ok()?, name.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_port_paths() {
        assert!(is_device_name("usb5"));
        assert!(is_device_name("1-1.5.4.2"));
        assert!(!is_device_name("1-1.5.4.2:1.0"));
        assert!(!is_device_name("0000:00:1d.7"));
        assert!(!is_device_name("usb"));
        assert_eq!(parse_port_path("1-1.5.4"), Some((1, vec![1, 5, 4])));
        assert!(PciAddress::from_sysfs_name("0000:00:1d.7").is_some());
        assert!(PciAddress::from_sysfs_name("80860F14:00").is_none());
    }

    #[test]
    fn speeds_as_the_kernel_writes_them() {
        assert_eq!(parse_speed("1.5\n"), Some(1.5));
        assert_eq!(parse_speed("480"), Some(480.0));
        assert_eq!(parse_speed("20000"), Some(20000.0));
        assert_eq!(parse_speed("UNKNOWN"), None);
    }

    #[test]
    fn usb_ids_lines() {
        // Lines as in usb.ids (linux-usb.org), including a class section after the vendors.
        let text =
            "# comment\n1d6b  Linux Foundation\n\t0002  2.0 root hub\n\t0003  3.0 root hub\n\
                    0bda  Realtek Semiconductor Corp.\n\t8153  RTL8153 Gigabit Ethernet Adapter\n\
                    \t\t00  some interface\nC 08  Mass Storage\n\t06  SCSI\n";
        let ids = UsbIds::parse(text);
        assert_eq!(ids.vendor(0x1d6b), Some("Linux Foundation"));
        assert_eq!(ids.product(0x1d6b, 3), Some("3.0 root hub"));
        assert_eq!(
            ids.product(0x0bda, 0x8153),
            Some("RTL8153 Gigabit Ethernet Adapter")
        );
        assert_eq!(ids.product(0x0bda, 0x06), None);
    }

    #[test]
    fn uas_alternate_setting_in_raw_descriptors() {
        // Device descriptor, configuration, interface 0 alt 0 (08/06/50), two endpoints,
        // interface 0 alt 1 (08/06/62): the layout of a UAS-capable bridge (JMS578-like).
        let mut raw = vec![
            18, 1, 0x20, 3, 0, 0, 0, 9, 0x2b, 0x15, 0x78, 0x05, 0, 1, 1, 2, 3, 1,
        ];
        raw.extend([9, 2, 0x55, 0, 1, 1, 0, 0x80, 0x32]);
        raw.extend([9, 4, 0, 0, 2, 8, 6, 0x50, 0]);
        raw.extend([7, 5, 0x81, 2, 0, 4, 0]);
        raw.extend([7, 5, 0x02, 2, 0, 4, 0]);
        raw.extend([9, 4, 0, 1, 4, 8, 6, 0x62, 0]);
        let ifs = alternate_settings(&raw);
        assert_eq!(ifs.len(), 2);
        assert_eq!(ifs[1].alt_setting, 1);
        assert!(offers_uas(&raw));
        raw.truncate(raw.len() - 9);
        assert!(!offers_uas(&raw));
        // A truncated descriptor ends the walk instead of reading past the end.
        raw.extend([9, 4, 0]);
        assert!(!offers_uas(&raw));
    }

    #[test]
    fn configuration_of_an_interface_name() {
        assert_eq!(interface_configuration("5-1.4:2.3"), Some(2));
        assert_eq!(interface_configuration("1-0:1.0"), Some(1));
        assert_eq!(interface_configuration("5-1"), None);
    }
}
