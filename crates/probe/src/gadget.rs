//! The device side of USB: USB device controllers from `/sys/class/udc` (Documentation/ABI/
//! stable/sysfs-class-udc) and the gadgets configured through configfs, with their functions
//! (Documentation/ABI/testing/configfs-usb-gadget*, Documentation/usb/gadget_configfs.rst).
//!
//! configfs is where mountinfo says it is mounted, `/sys/kernel/config` when it does not say;
//! under `--root` both are read inside the tree through the root's resolver. Only reads:
//! nothing here writes a configfs attribute (writing `UDC` would bind a gadget).

use crate::sysfs::SysfsExt;
use crate::sysfs::{link_name, parse_hex_u32, read_attr_noting, read_link_target};
use model::ceiling::usb::{TransferType, UsbSpeed};
use model::ceiling::usb_endpoint::{reserved, Direction, SsCompanion, UsbEndpoint};
use model::inventory::gadget::{DeviceSide, FunctionKind, Gadget, GadgetFunction, Lun, Udc};
use model::path::BackedLun;
use model::root::SysRoot;
use std::path::{Path, PathBuf};

/// Where configfs lives when mountinfo does not say otherwise (Documentation/filesystems/
/// configfs.rst: "mounted at /sys/kernel/config").
const CONFIGFS_DEFAULT: &str = "/sys/kernel/config";

/// Bounds on what is listed: a configfs tree is the administrator's, but a captured tree
/// could hold anything.
const MAX_ENTRIES: usize = 256;

/// Every UDC and configfs gadget under the root.
pub fn scan(root: &SysRoot) -> DeviceSide {
    let mut side = DeviceSide::default();
    let configfs = configfs_dir(root);
    if let Some(dir) = &configfs {
        let gadget_dir = dir.join("usb_gadget");
        let names = root.list(&gadget_dir).unwrap_or_else(|e| {
            side.warnings.push(e.to_string());
            Vec::new()
        });
        for name in names.into_iter().take(MAX_ENTRIES) {
            let g = gadget_at(root, &gadget_dir.join(&name), &name, &mut side.warnings);
            side.gadgets.push(g);
        }
        side.configfs = Some(dir.clone());
    }
    let names = root.list("/sys/class/udc").unwrap_or_else(|e| {
        side.warnings.push(e.to_string());
        Vec::new()
    });
    for name in names.into_iter().take(MAX_ENTRIES) {
        let gadget = side
            .gadgets
            .iter()
            .find(|g| g.udc.as_deref() == Some(name.as_str()))
            .map(|g| g.name.clone());
        side.controllers
            .push(udc_at(root, &name, gadget, &mut side.warnings));
    }
    // What each function's endpoints reserve depends on the speed its UDC runs at.
    for g in &mut side.gadgets {
        let speed = side
            .controllers
            .iter()
            .find(|c| Some(&c.name) == g.udc.as_ref())
            .and_then(Udc::speed);
        for f in &mut g.functions {
            add_reserved(&mut f.kind, speed);
        }
    }
    side
}

/// The gadget logical units whose backing file is `file` (on a live system compared after
/// resolving its links, as the kernel shows the file it opened; in a tree, as written).
pub fn luns_backed_by(root: &SysRoot, file: &Path) -> Vec<BackedLun> {
    let file = if root.is_live() {
        std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())
    } else {
        file.to_path_buf()
    };
    let side = scan(root);
    side.luns_backed_by(&file)
        .map(|(g, f, l)| {
            let udc = side
                .controllers
                .iter()
                .find(|c| Some(&c.name) == g.udc.as_ref());
            BackedLun {
                gadget: g.name.clone(),
                function: f.name.clone(),
                lun: l.name.clone(),
                read_only: l.ro,
                udc: g.udc.clone(),
                udc_state: udc.and_then(|c| c.state.clone()),
                udc_speed: udc.and_then(|c| c.current_speed.clone()),
                usb_bulk_ceiling_bps: udc.and_then(Udc::speed).and_then(|s| {
                    model::ceiling::usb::transfer_ceiling(s, TransferType::Bulk).bytes_per_second
                }),
            }
        })
        .collect()
}

/// configfs's directory within the root, if it holds `usb_gadget`.
fn configfs_dir(root: &SysRoot) -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from(CONFIGFS_DEFAULT)];
    if let Ok((mounts, _)) = crate::mounts::read(root) {
        candidates.extend(
            mounts
                .into_iter()
                .filter(|m| m.fs_type == "configfs")
                .map(|m| m.mount_point),
        );
    }
    candidates
        .into_iter()
        .find(|c| root.path(c.join("usb_gadget")).is_dir())
}

fn udc_at(root: &SysRoot, name: &str, gadget: Option<String>, w: &mut Vec<String>) -> Udc {
    let rel = format!("/sys/class/udc/{name}");
    let dir = root.attr(&rel);
    let text = |f: &str, w: &mut Vec<String>| read_attr_noting(&dir.join(f), w);
    let flag = |f: &str, w: &mut Vec<String>| text(f, w).map(|v| v == "1");
    // The class device sits in its controller's directory: .../dummy_udc.0/udc/dummy_udc.0.
    let parent_dir = root
        .canonical(&rel)
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.to_path_buf()));
    let parent = parent_dir
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let driver = parent_dir.and_then(|p| {
        link_name(&root.path(p).join("driver")).unwrap_or_else(|e| {
            w.push(e.to_string());
            None
        })
    });
    Udc {
        name: name.to_string(),
        parent,
        driver,
        state: text("state", w),
        current_speed: text("current_speed", w),
        maximum_speed: text("maximum_speed", w),
        is_otg: flag("is_otg", w),
        is_a_peripheral: flag("is_a_peripheral", w),
        function: text("function", w),
        gadget,
    }
}

fn gadget_at(root: &SysRoot, rel: &Path, name: &str, w: &mut Vec<String>) -> Gadget {
    let dir = root.path(rel);
    let text = |f: &str, w: &mut Vec<String>| read_attr_noting(&dir.join(f), w);
    let hex16 = |f: &str, w: &mut Vec<String>| {
        text(f, w)
            .and_then(|v| parse_hex_u32(&v))
            .and_then(|v| u16::try_from(v).ok())
    };
    // The US English strings (0x409), which every gadget example writes.
    let strings = dir.join("strings/0x409");
    let string = |f: &str, w: &mut Vec<String>| read_attr_noting(&strings.join(f), w);
    let mut configs = Vec::new();
    let mut linked_functions: Vec<String> = Vec::new();
    for c in root
        .list(rel.join("configs"))
        .unwrap_or_default()
        .into_iter()
        .take(MAX_ENTRIES)
    {
        let cdir = rel.join("configs").join(&c);
        let functions: Vec<String> = root
            .list(&cdir)
            .unwrap_or_default()
            .into_iter()
            .take(MAX_ENTRIES)
            .filter(|f| {
                // A linked function is a symlink into functions/.
                matches!(read_link_target(&root.path(cdir.join(f))), Ok(Some(_)))
            })
            .collect();
        linked_functions.extend(functions);
        configs.push(c);
    }
    let mut functions = Vec::new();
    for f in root
        .list(rel.join("functions"))
        .unwrap_or_default()
        .into_iter()
        .take(MAX_ENTRIES)
    {
        let linked = linked_functions.contains(&f);
        let kind = function_kind(root, &rel.join("functions").join(&f), &f, w);
        functions.push(GadgetFunction {
            name: f,
            linked,
            kind,
        });
    }
    Gadget {
        name: name.to_string(),
        udc: text("UDC", w),
        vendor_id: hex16("idVendor", w),
        product_id: hex16("idProduct", w),
        bcd_usb: text("bcdUSB", w),
        manufacturer: string("manufacturer", w),
        product: string("product", w),
        serial: string("serialnumber", w),
        configs,
        functions,
    }
}

/// A function directory (`mass_storage.0`) read by its type, the part before the dot.
fn function_kind(root: &SysRoot, rel: &Path, name: &str, w: &mut Vec<String>) -> FunctionKind {
    let dir = root.path(rel);
    // u_ether's `dev_addr` and `host_addr` (drivers/usb/gadget/function/u_ether_configfs.h)
    // end in the string's NUL before the newline, as Debian's 6.1 kernel shows them.
    let text = |f: &str, w: &mut Vec<String>| {
        read_attr_noting(&dir.join(f), w)
            .map(|v| v.trim_end_matches(['\0', '\n', ' ']).to_string())
            .filter(|v| !v.is_empty())
    };
    let num = |f: &str, w: &mut Vec<String>| text(f, w).and_then(|v| v.parse::<u32>().ok());
    let kind = name.split('.').next().unwrap_or(name);
    match kind {
        "mass_storage" => {
            let mut luns = Vec::new();
            for l in root
                .list(rel)
                .unwrap_or_default()
                .into_iter()
                .filter(|l| l.starts_with("lun."))
                .take(MAX_ENTRIES)
            {
                let ldir = dir.join(&l);
                let flag = |f: &str, w: &mut Vec<String>| {
                    read_attr_noting(&ldir.join(f), w).map(|v| v == "1")
                };
                luns.push(Lun {
                    file: read_attr_noting(&ldir.join("file"), w).map(PathBuf::from),
                    ro: flag("ro", w),
                    removable: flag("removable", w),
                    cdrom: flag("cdrom", w),
                    nofua: flag("nofua", w),
                    name: l,
                });
            }
            FunctionKind::MassStorage { luns }
        }
        "ncm" | "ecm" | "eem" | "rndis" | "geth" | "subset" => FunctionKind::Net {
            protocol: kind.to_ascii_uppercase(),
            ifname: text("ifname", w),
            dev_addr: text("dev_addr", w),
            host_addr: text("host_addr", w),
            qmult: num("qmult", w),
        },
        "uvc" => FunctionKind::Uvc {
            streaming_maxpacket: num("streaming_maxpacket", w),
            streaming_maxburst: num("streaming_maxburst", w),
            streaming_interval: num("streaming_interval", w),
            reserved: None,
        },
        "hid" => {
            // Kernels with the `interval` attribute let the gadget choose bInterval; before
            // it (Linux 6.1's drivers/usb/gadget/function/f_hid.c) it is fixed: 10 at full
            // speed (hidg_fs_in_ep_desc), 4 at high and SuperSpeed (hidg_hs_in_ep_desc).
            let interval = num("interval", w);
            FunctionKind::Hid {
                protocol: num("protocol", w),
                subclass: num("subclass", w),
                report_length: num("report_length", w),
                interval_source: Some(
                    if interval.is_some() {
                        "the function's interval attribute"
                    } else {
                        "f_hid's fixed bInterval (10 at full speed, 4 above)"
                    }
                    .to_string(),
                ),
                interval,
                reserved: None,
                dev: text("dev", w),
            }
        }
        _ => FunctionKind::Other {
            r#type: kind.to_string(),
        },
    }
}

/// What a UVC or HID function's periodic endpoint reserves at the UDC's speed.
fn add_reserved(kind: &mut FunctionKind, speed: Option<UsbSpeed>) {
    let Some(speed) = speed else { return };
    match kind {
        FunctionKind::Uvc {
            streaming_maxpacket: Some(maxp),
            streaming_maxburst,
            streaming_interval,
            reserved: r,
        } => {
            // f_uvc (drivers/usb/gadget/function/f_uvc.c, uvc_function_bind, Linux 6.1):
            // streaming_maxpacket clamped to 1..3072 and split into 1, 2 or 3 transactions
            // (maxpacket / mult each); full speed gets min(maxpacket, 1023) in one; a
            // high-bandwidth high-speed endpoint gets bInterval 1; at SuperSpeed Mult is
            // that split, the burst streaming_maxburst + 1 and wBytesPerInterval their
            // product.
            let maxp = (*maxp).clamp(1, 3072);
            let mult = match maxp {
                0..=1024 => 1,
                1025..=2048 => 2,
                _ => 3,
            };
            let burst = streaming_maxburst.unwrap_or(0).min(15);
            let interval = streaming_interval.unwrap_or(1).clamp(1, 16);
            let (packet, extra, interval) = match speed {
                UsbSpeed::Low | UsbSpeed::Full => (maxp.min(1023), 0, interval),
                UsbSpeed::High if mult > 1 => (maxp / mult, mult - 1, 1),
                _ => (maxp / mult, mult - 1, interval),
            };
            let ep = UsbEndpoint {
                address: 0x81,
                transfer: TransferType::Isochronous,
                direction: Direction::In,
                max_packet: packet as u16,
                additional_transactions: if speed.is_superspeed() {
                    0
                } else {
                    extra as u8
                },
                interval: interval as u8,
                ss_companion: speed.is_superspeed().then(|| SsCompanion {
                    max_burst: burst as u8,
                    attributes: extra as u8,
                    bytes_per_interval: u16::try_from(packet * (burst + 1) * (extra + 1))
                        .unwrap_or(u16::MAX),
                }),
                ssp_bytes_per_interval: None,
                reserved: None,
            };
            *r = reserved(speed, &ep);
        }
        FunctionKind::Hid {
            report_length: Some(len),
            interval,
            reserved: r,
            ..
        } => {
            let b = interval.unwrap_or(if speed == UsbSpeed::Full { 10 } else { 4 });
            let ep = UsbEndpoint {
                address: 0x81,
                transfer: TransferType::Interrupt,
                direction: Direction::In,
                max_packet: (*len).min(1024) as u16,
                additional_transactions: 0,
                interval: b.clamp(1, 255) as u8,
                ss_companion: speed.is_superspeed().then(|| SsCompanion {
                    max_burst: 0,
                    attributes: 0,
                    bytes_per_interval: (*len).min(1024) as u16,
                }),
                ssp_bytes_per_interval: None,
                reserved: None,
            };
            *interval = Some(b);
            *r = reserved(speed, &ep);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uvc(maxpacket: u32, burst: u32, speed: UsbSpeed) -> f64 {
        let mut k = FunctionKind::Uvc {
            streaming_maxpacket: Some(maxpacket),
            streaming_maxburst: Some(burst),
            streaming_interval: Some(1),
            reserved: None,
        };
        add_reserved(&mut k, Some(speed));
        match k {
            FunctionKind::Uvc {
                reserved: Some(r), ..
            } => r.bytes_per_second,
            _ => panic!("nothing reserved"),
        }
    }

    #[test]
    fn a_uvc_functions_endpoint_as_f_uvc_declares_it() {
        // streaming_maxpacket 3072 at high speed: 3 transactions of 1024 B per microframe.
        assert_eq!(uvc(3072, 0, UsbSpeed::High), 24_576_000.0);
        // 2048: two of 1024 B.
        assert_eq!(uvc(2048, 0, UsbSpeed::High), 16_384_000.0);
        // Full speed: one packet of at most 1023 B per frame.
        assert_eq!(uvc(3072, 0, UsbSpeed::Full), 1_023_000.0);
        // SuperSpeed: Mult 3 x burst 16 x 1024 B per 125 us.
        assert_eq!(uvc(3072, 15, UsbSpeed::Gen1), 393_216_000.0);
    }

    #[test]
    fn a_hid_functions_reports_per_second() {
        let mut k = FunctionKind::Hid {
            protocol: Some(1),
            subclass: Some(1),
            report_length: Some(8),
            interval: None,
            interval_source: None,
            reserved: None,
            dev: None,
        };
        add_reserved(&mut k, Some(UsbSpeed::Full));
        let FunctionKind::Hid {
            reserved: Some(r),
            interval,
            ..
        } = k
        else {
            panic!("nothing reserved")
        };
        // f_hid's full-speed bInterval 10: one 8 B report every 10 ms, 100 reports/s.
        assert_eq!(interval, Some(10));
        assert_eq!(r.interval_us, 10_000.0);
        assert_eq!(r.bytes_per_second, 800.0);
    }
}
