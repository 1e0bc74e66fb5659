//! Video4Linux nodes and a USB camera's reserved bandwidth read from sysfs trees: a Logitech
//! StreamCam streaming on a USB 2.0 port (its descriptors from a public capture, see
//! tests/fixtures/sysfs/make_trees.py) and vivid's platform device.

use model::ceiling::usb::UsbSpeed;
use model::path::Hop;
use probe::video;
use std::path::Path;
use testsupport::fixtures::own_root;

#[test]
fn video_nodes_are_listed_in_number_order_with_their_bus() {
    let root = own_root("sysfs/uvc-camera");
    let nodes = video::nodes(&root).unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    // vbi0 is not a video node.
    assert_eq!(names, ["video0", "video1", "video2"]);
    let cam = &nodes[0];
    assert_eq!(cam.dev, "/dev/video0");
    assert_eq!(cam.title.as_deref(), Some("Logitech StreamCam"));
    assert_eq!(cam.bus.as_deref(), Some("usb"));
    assert_eq!(cam.driver.as_deref(), Some("uvcvideo"));
    assert_eq!(cam.usb_device.as_deref(), Some("1-4"));
    let vivid = &nodes[2];
    assert_eq!(vivid.bus.as_deref(), Some("platform"));
    assert_eq!(vivid.driver.as_deref(), Some("vivid"));
    assert_eq!(vivid.usb_device, None);
    assert!(video::usb_streaming(&root, vivid).is_none());
}

/// The StreamCam's alternate setting 11 is wMaxPacketSize 0x1400: 3 x 1024 B every 125 us
/// microframe, 24.576 MB/s, the most a USB 2.0 isochronous endpoint reserves (USB 2.0
/// section 5.9); its smallest setting is 192 B per microframe.
#[test]
fn a_streaming_uvc_camera_reserves_what_its_alternate_setting_says() {
    let root = own_root("sysfs/uvc-camera");
    let nodes = video::nodes(&root).unwrap();
    let u = video::usb_streaming(&root, &nodes[0]).unwrap();
    assert_eq!(u.device, "1-4");
    assert_eq!(u.speed_mbps, Some(480.0));
    assert_eq!((u.interface, u.alt_setting), (1, 11));
    let ep = u.endpoint.unwrap();
    assert_eq!(ep.speed, UsbSpeed::High);
    assert_eq!(ep.max_packet_size, 0x1400);
    let r = u.reserved.unwrap();
    assert_eq!(r.bytes_per_interval, 3072);
    assert!((r.bytes_per_second - 24_576_000.0).abs() < 1e-6);
    let (alt, most) = u.largest.unwrap();
    assert_eq!(alt, 11);
    assert_eq!(most.bytes_per_second, r.bytes_per_second);
    assert!(!u.bulk);
    // Every setting is read: the smallest, 192 B per microframe, is 1.536 MB/s.
    let raw = std::fs::read(root.path("/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4/descriptors"))
        .unwrap();
    let eps = probe::usb::endpoint_descriptors(&raw);
    let first = eps
        .iter()
        .find(|e| e.interface == 1 && e.alt_setting == 1)
        .unwrap();
    assert_eq!((first.max_packet_size, first.interval), (0x00C0, 1));
    assert_eq!(eps.iter().filter(|e| e.interface == 1).count(), 11);
    assert_eq!(
        eps[0].attributes & 3,
        3,
        "the control interface's interrupt endpoint"
    );
}

/// `path /dev/videoN` ends at the USB chain of a UVC camera; vivid's node is a platform
/// device with no bus to the CPU.
#[test]
fn the_path_of_a_video_node_follows_its_device() {
    let root = own_root("sysfs/uvc-camera");
    let audit = probe::pci::audit_sysfs(&root);
    let p = probe::path::resolve(&root, Path::new("/dev/video0"), &audit).unwrap();
    let hops: Vec<String> = p
        .chain
        .hops
        .iter()
        .map(|h| match h {
            Hop::Video { name, driver, .. } => {
                format!("video {name} {}", driver.as_deref().unwrap_or(""))
            }
            Hop::Usb {
                name, speed_mbps, ..
            } => format!("usb {name} {}", speed_mbps.unwrap_or(0.0)),
            Hop::Pci { address, .. } => format!("pci {address}"),
            Hop::Platform { name, .. } => format!("platform {name}"),
            Hop::Cpu => "cpu".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        hops,
        [
            "video video0 uvcvideo",
            "usb 1-4 480",
            "usb usb1 480",
            "pci 0000:00:14.0",
            "cpu"
        ]
    );
    assert!(
        !p.links.is_empty(),
        "the USB link of the camera has a ceiling"
    );
    let v = probe::path::resolve(&root, Path::new("/dev/video2"), &audit).unwrap();
    assert!(matches!(&v.chain.hops[0], Hop::Video { name, .. } if name == "video2"));
    assert!(matches!(&v.chain.hops[1], Hop::Platform { name, .. } if name == "vivid.0"));
    assert!(v.links.is_empty());
}
