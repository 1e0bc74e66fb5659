//! Video4Linux device nodes (`/sys/class/video4linux`, Documentation/ABI/testing/
//! sysfs-class-video4linux... and the driver model's `device`, `driver`, `subsystem` links),
//! and for a USB camera what its video streaming interface reserves on the bus (the sysfs
//! `descriptors` of the device and `bAlternateSetting` of the interface).

use crate::sysfs::{read_attr, read_bytes, SysfsExt};
use crate::usb::{endpoint_descriptors, is_device_name, EndpointDescriptor};
use model::ceiling::usb::{TransferType, UsbSpeed};
use model::root::SysRoot;
use model::video::{reserved_bandwidth, PeriodicEndpoint, UsbStreaming, VideoNode};
use std::path::{Path, PathBuf};

/// The class directory every V4L2 node is listed in.
pub const CLASS_DIR: &str = "/sys/class/video4linux";

/// USB Video Class: interface class 0x0e, subclass 0x02 video streaming (UVC 1.5, A.1/A.2).
const CLASS_VIDEO: &str = "0e";
const SUBCLASS_STREAMING: &str = "02";

/// Every `videoN` node, in number order (`video2` before `video10`); other nodes (vbi, radio,
/// v4l-subdev, v4l-touch) are not video devices and are left out. A missing class directory
/// is no node.
pub fn nodes(root: &SysRoot) -> Result<Vec<VideoNode>, String> {
    let names = root.list(CLASS_DIR).map_err(|e| e.to_string())?;
    let mut out: Vec<(u32, VideoNode)> = names
        .into_iter()
        .filter_map(|n| {
            let number: u32 = n.strip_prefix("video")?.parse().ok()?;
            Some((number, node(root, &n)))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    Ok(out.into_iter().map(|(_, n)| n).collect())
}

/// The node `/dev/NAME` or `NAME` names, when sysfs lists it.
pub fn node_of(root: &SysRoot, dev: &Path) -> Option<VideoNode> {
    let name = dev.file_name()?.to_str()?;
    root.path(format!("{CLASS_DIR}/{name}"))
        .exists()
        .then(|| node(root, name))
}

fn attr(root: &SysRoot, rel: impl AsRef<Path>) -> Option<String> {
    read_attr(&root.attr(rel)).ok().flatten()
}

/// The name a sysfs link points to (`uvcvideo`, `usb`), read from the link itself: its
/// target need not exist (a captured tree may hold the link without the driver's directory).
fn link_name(root: &SysRoot, rel: String) -> Option<String> {
    crate::sysfs::link_name(&root.path(rel)).ok().flatten()
}

fn node(root: &SysRoot, name: &str) -> VideoNode {
    let base = format!("{CLASS_DIR}/{name}");
    let device = root.canonical(format!("{base}/device")).ok();
    let bus = link_name(root, format!("{base}/device/subsystem"));
    let usb_device = match (&bus, &device) {
        (Some(b), Some(d)) if b == "usb" => usb_device_of(d),
        _ => None,
    };
    VideoNode {
        name: name.to_string(),
        dev: format!("/dev/{name}"),
        title: attr(root, format!("{base}/name")),
        index: attr(root, format!("{base}/index")).and_then(|v| v.parse().ok()),
        device: device.as_ref().map(|d| d.display().to_string()),
        driver: link_name(root, format!("{base}/device/driver")),
        bus,
        usb_device,
        ..VideoNode::default()
    }
}

/// The USB device (`1-1`) a node's device directory (its interface `1-1:1.0`, or the device)
/// is part of.
fn usb_device_of(dir: &Path) -> Option<String> {
    dir.ancestors()
        .filter_map(|p| p.file_name()?.to_str())
        .find(|n| is_device_name(n))
        .map(str::to_string)
}

/// What the video streaming interface of the USB camera behind `node` reserves now; None
/// when the node is not on USB or the device has no streaming interface.
pub fn usb_streaming(root: &SysRoot, node: &VideoNode) -> Option<UsbStreaming> {
    let name = node.usb_device.as_deref()?;
    let dev: PathBuf = root
        .canonical(format!("/sys/bus/usb/devices/{name}"))
        .ok()?;
    let dev_s = dev.display().to_string();
    let speed_mbps: Option<f64> = attr(root, format!("{dev_s}/speed")).and_then(|v| v.parse().ok());
    let lanes: u8 = attr(root, format!("{dev_s}/rx_lanes"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let speed = speed_mbps.and_then(|s| UsbSpeed::from_sysfs(s, lanes));
    let active: u8 = attr(root, format!("{dev_s}/bConfigurationValue"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let raw = read_bytes(&root.path(format!("{dev_s}/descriptors"))).ok()??;
    let eps: Vec<EndpointDescriptor> = endpoint_descriptors(&raw)
        .into_iter()
        .filter(|e| e.configuration == active)
        .collect();
    // The streaming interface: the device's interface of class 0e subclass 02 (a camera
    // with several streams has several; the first is the one its first node captures).
    let iface = root
        .list(&dev_s)
        .ok()?
        .into_iter()
        .filter(|n| n.starts_with(&format!("{name}:")))
        .find(|n| {
            attr(root, format!("{dev_s}/{n}/bInterfaceClass")).as_deref() == Some(CLASS_VIDEO)
                && attr(root, format!("{dev_s}/{n}/bInterfaceSubClass")).as_deref()
                    == Some(SUBCLASS_STREAMING)
        })?;
    let number = u8::from_str_radix(
        &attr(root, format!("{dev_s}/{iface}/bInterfaceNumber"))?,
        16,
    )
    .ok()?;
    let alt_setting: u8 = attr(root, format!("{dev_s}/{iface}/bAlternateSetting"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let periodic = |e: &EndpointDescriptor| -> Option<PeriodicEndpoint> {
        let transfer = match e.attributes & 3 {
            1 => TransferType::Isochronous,
            _ => return None,
        };
        // Input endpoints only: a camera's video comes in (bEndpointAddress bit 7).
        (e.address & 0x80 != 0).then_some(())?;
        Some(PeriodicEndpoint {
            speed: speed?,
            transfer,
            max_packet_size: e.max_packet_size,
            interval: e.interval,
            max_burst: e.companion.map(|c| c.0),
            companion_attributes: e.companion.map(|c| c.1),
            bytes_per_interval: e.companion.map(|c| c.2),
        })
    };
    let mine = eps.iter().filter(|e| e.interface == number);
    let endpoint = mine
        .clone()
        .filter(|e| e.alt_setting == alt_setting)
        .find_map(periodic);
    let reserved = endpoint.as_ref().and_then(|e| reserved_bandwidth(e).ok());
    let largest = mine
        .clone()
        .filter_map(|e| Some((e.alt_setting, reserved_bandwidth(&periodic(e)?).ok()?)))
        .max_by(|a, b| a.1.bytes_per_second.total_cmp(&b.1.bytes_per_second));
    let bulk = mine
        .clone()
        .any(|e| e.attributes & 3 == 2 && e.address & 0x80 != 0);
    Some(UsbStreaming {
        device: name.to_string(),
        speed_mbps,
        interface: number,
        alt_setting,
        endpoint,
        reserved,
        largest,
        bulk,
    })
}
