//! PCI functions as the kernel shows them in `/sys/bus/pci/devices`
//! (ABI: Documentation/ABI/testing/sysfs-bus-pci and sysfs-bus-pci-devices-aer_stats).

use crate::sysfs::SysfsExt;
use crate::sysfs::{self, ReadError};
use model::inventory::pci::address::PciAddress;
use model::root::SysRoot;
use model::{LinkState, PcieGen};
use serde::Serialize;

use model::inventory::pci::{AerCounters, KernelLink, PciPolicy};
use std::path::{Path, PathBuf};

/// One PCI function read from sysfs.
#[derive(Debug, Clone, Serialize)]
pub struct SysfsFunction {
    pub address: PciAddress,
    /// The device directory under /sys/devices (relative to the root), e.g.
    /// `/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0`.
    pub device_path: PathBuf,
    /// The PCI function above this one in the device path (its bridge), if any.
    pub parent: Option<PciAddress>,
    pub vendor_id: Option<u16>,
    pub device_id: Option<u16>,
    pub subsystem_vendor_id: Option<u16>,
    pub subsystem_device_id: Option<u16>,
    pub class: Option<u32>,
    pub revision: Option<u8>,
    pub driver: Option<String>,
    /// NUMA node (-1 = none, as the kernel writes it).
    pub numa_node: Option<i32>,
    pub local_cpulist: Option<String>,
    /// The kernel's own view of the link (`current_link_speed` & co).
    pub kernel_link: KernelLink,
    /// AER counters, where the kernel exposes them (CONFIG_PCIEAER and an AER capability).
    pub aer: Option<AerCounters>,
    /// The physical slot the function sits in (/sys/bus/pci/slots/NAME/address).
    pub slot: Option<String>,
    /// Config space as read from the `config` file: 64 bytes without root, 256 or 4096 with.
    #[serde(skip)]
    pub config: Vec<u8>,
}

/// Result of a sysfs scan: the functions and one sentence per problem met.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SysfsScan {
    pub functions: Vec<SysfsFunction>,
    pub policy: PciPolicy,
    pub warnings: Vec<String>,
}

/// Parse `8.0 GT/s PCIe`, `2.5 GT/s`, `16 GT/s` (the formats kernels have used) into a
/// generation. `Unknown`/`Unknown speed` and anything else give `None`.
pub fn parse_link_speed(s: &str) -> Option<PcieGen> {
    let num = s.split_whitespace().next()?;
    let num = num.strip_suffix("GT/s").unwrap_or(num);
    PcieGen::from_gts(num.parse::<f64>().ok()?)
}

/// Parse a link width attribute: `4` (what the kernel prints), or `x4`. `0` means no link.
pub fn parse_link_width(s: &str) -> Option<u8> {
    let s = s.trim();
    s.strip_prefix('x').unwrap_or(s).parse().ok()
}

/// Parse an aer_dev_* file: lines of `NAME count`.
pub fn parse_aer_stats(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?;
            let count = it.next()?.parse().ok()?;
            Some((name.to_string(), count))
        })
        .collect()
}

/// The bracketed choice of a sysfs policy file: `[default] performance` -> `default`.
pub fn parse_selected(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

/// The MPS policy among the `pci=` options of a kernel command line (options are
/// comma-separated and may repeat; the last one wins, as the kernel parses them in order).
pub fn parse_mps_policy(cmdline: &str) -> Option<String> {
    let mut policy = None;
    for word in cmdline.split_whitespace() {
        if word == "--" {
            break; // what follows goes to init, not the kernel
        }
        if let Some(opts) = word.strip_prefix("pci=") {
            for o in opts.split(',') {
                if matches!(
                    o,
                    "pcie_bus_tune_off" | "pcie_bus_safe" | "pcie_bus_perf" | "pcie_bus_peer2peer"
                ) {
                    policy = Some(o.to_string());
                }
            }
        }
    }
    policy
}

/// Scan /sys/bus/pci/devices under `root`.
pub fn scan(root: &SysRoot) -> SysfsScan {
    let mut out = SysfsScan::default();
    let dir = root.path("/sys/bus/pci/devices");
    let entries = match crate::sysfs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !root.has_sysfs() {
                out.warnings.push(format!(
                    "{} has no sys/ directory: it is not a system root or sysfs tree; \
                     give --root the directory that contains sys/",
                    root.root().display()
                ));
            }
            // A machine without PCI (many ARM boards) is not an error.
            return out;
        }
        Err(e) => {
            out.warnings
                .push(ReadError::from_io(&dir, &e).to_string() + "; no PCI functions listed");
            return out;
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let Ok(address) = name.parse::<PciAddress>() else {
            out.warnings.push(format!(
                "{}: not a PCI address, skipped",
                dir.join(&name).display()
            ));
            continue;
        };
        match read_function(root, &dir.join(&name), address, &mut out.warnings) {
            Some(f) => out.functions.push(f),
            None => continue,
        }
    }
    out.functions.sort_by_key(|f| f.address);
    out.policy = read_policy(root, &mut out.warnings);
    out
}

fn read_policy(root: &SysRoot, warnings: &mut Vec<String>) -> PciPolicy {
    let aspm = match sysfs::read_attr(&root.path("/sys/module/pcie_aspm/parameters/policy")) {
        Ok(v) => v.and_then(|s| parse_selected(&s)),
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    };
    let mps = match sysfs::read_attr(&root.path("/proc/cmdline")) {
        Ok(v) => v.and_then(|s| parse_mps_policy(&s)),
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    };
    PciPolicy {
        aspm_policy: aspm,
        mps_policy: mps,
    }
}

/// Read one function. `None` when it vanished (hot unplug) — said in `warnings`.
fn read_function(
    root: &SysRoot,
    link: &Path,
    address: PciAddress,
    warnings: &mut Vec<String>,
) -> Option<SysfsFunction> {
    // The device directory: the bus entry is a symlink into /sys/devices.
    let rel = Path::new("/sys/bus/pci/devices").join(address.to_string());
    let device_path = match root.canonical(&rel) {
        Ok(p) if root.path(&p).is_dir() => p,
        Ok(_) => {
            warnings.push(format!(
                "{}: does not resolve to a device directory (removed during the scan, or a \
                 dangling link); skipped",
                link.display()
            ));
            return None;
        }
        Err(e) => {
            warnings.push(format!("{e}; skipped"));
            return None;
        }
    };
    let real = root.path(&device_path);
    let parent = device_path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse::<PciAddress>().ok());

    let mut attr = |name: &str| -> Option<String> {
        match sysfs::read_attr(&real.join(name)) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        }
    };
    let hex = |v: Option<String>| v.and_then(|s| sysfs::parse_hex_u32(&s));
    let vendor_id = hex(attr("vendor")).map(|v| v as u16);
    let device_id = hex(attr("device")).map(|v| v as u16);
    let subsystem_vendor_id = hex(attr("subsystem_vendor")).map(|v| v as u16);
    let subsystem_device_id = hex(attr("subsystem_device")).map(|v| v as u16);
    let class = hex(attr("class"));
    let revision = hex(attr("revision")).map(|v| v as u8);
    let numa_node = attr("numa_node").and_then(|s| s.parse().ok());
    let local_cpulist = attr("local_cpulist");
    let cur_speed = attr("current_link_speed").and_then(|s| parse_link_speed(&s));
    let cur_width = attr("current_link_width").and_then(|s| parse_link_width(&s));
    let max_speed = attr("max_link_speed").and_then(|s| parse_link_speed(&s));
    let max_width = attr("max_link_width").and_then(|s| parse_link_width(&s));
    let state = |g: Option<PcieGen>, w: Option<u8>| match (g, w) {
        (Some(gen), Some(width)) if width > 0 => Some(LinkState { gen, width }),
        _ => None,
    };
    let kernel_link = KernelLink {
        current: state(cur_speed, cur_width),
        max: state(max_speed, max_width),
    };
    let aer_files = [
        attr("aer_dev_correctable"),
        attr("aer_dev_nonfatal"),
        attr("aer_dev_fatal"),
    ];
    let rp = [
        attr("aer_rootport_total_err_cor"),
        attr("aer_rootport_total_err_fatal"),
        attr("aer_rootport_total_err_nonfatal"),
    ];
    let aer =
        (aer_files.iter().any(Option::is_some) || rp.iter().any(Option::is_some)).then(|| {
            let [c, n, f] = aer_files;
            let [rc, rf, rn] = rp;
            let num = |v: Option<String>| v.and_then(|s| s.parse().ok());
            AerCounters {
                correctable: c.map(|s| parse_aer_stats(&s)).unwrap_or_default(),
                nonfatal: n.map(|s| parse_aer_stats(&s)).unwrap_or_default(),
                fatal: f.map(|s| parse_aer_stats(&s)).unwrap_or_default(),
                rootport_total_cor: num(rc),
                rootport_total_fatal: num(rf),
                rootport_total_nonfatal: num(rn),
            }
        });
    let driver = match sysfs::link_name(&real.join("driver")) {
        Ok(d) => d,
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    };
    let config = match read_config(&real.join("config")) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(e.to_string());
            Vec::new()
        }
    };
    if vendor_id.is_none() && config.is_empty() && !real.exists() {
        warnings.push(format!(
            "{}: disappeared during the scan (hot unplug?); skipped",
            link.display()
        ));
        return None;
    }
    Some(SysfsFunction {
        address,
        device_path,
        parent,
        vendor_id,
        device_id,
        subsystem_vendor_id,
        subsystem_device_id,
        class,
        revision,
        driver,
        numa_node,
        local_cpulist,
        kernel_link,
        aer,
        slot: None,
        config,
    })
}

/// The physical slots (Documentation/ABI/testing/sysfs-bus-pci, /sys/bus/pci/slots/NAME/
/// address: `DDDD:BB:DD`, the device without its function) by name.
pub fn slots(root: &SysRoot) -> Vec<(String, String)> {
    let Ok(entries) = crate::sysfs::read_dir(&root.path("/sys/bus/pci/slots")) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let address = crate::sysfs::read_attr(&e.path().join("address")).ok()??;
            Some((name, address))
        })
        .collect();
    out.sort();
    out
}

/// The slot whose `address` (`DDDD:BB:DD`) holds the function at `a`.
pub fn slot_of(slots: &[(String, String)], a: &PciAddress) -> Option<String> {
    let device = format!("{:04x}:{:02x}:{:02x}", a.domain, a.bus, a.device);
    slots
        .iter()
        .find(|(_, addr)| addr.trim().eq_ignore_ascii_case(&device))
        .map(|(name, _)| name.clone())
}

/// Conventional configuration space (PCI Local Bus Spec 3.0 section 6.1).
const CONVENTIONAL_CONFIG: usize = 256;

/// Read a function's `config` file: the 256 bytes of conventional space, and the 4 KiB of
/// extended space only when the function has a PCI Express capability (only PCIe functions
/// have extended space, PCIe Base Spec 6.0 section 7.2.2). Each config read can trap to a
/// hypervisor or go through a slow ECAM window, so 4 KiB for a conventional function is 16
/// times the work for nothing. Missing file: empty.
fn read_config(path: &Path) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ReadError::from_io(path, &e)),
    };
    let mut buf = Vec::with_capacity(4096);
    (&mut file)
        .take(CONVENTIONAL_CONFIG as u64)
        .read_to_end(&mut buf)
        .map_err(|e| ReadError::from_io(path, &e))?;
    let express = buf.len() == CONVENTIONAL_CONFIG && super::config::decode(&buf).express.is_some();
    if express {
        file.read_to_end(&mut buf)
            .map_err(|e| ReadError::from_io(path, &e))?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_speed_formats() {
        assert_eq!(parse_link_speed("8.0 GT/s PCIe"), Some(PcieGen::Gen3));
        assert_eq!(parse_link_speed("2.5 GT/s"), Some(PcieGen::Gen1));
        assert_eq!(parse_link_speed("16GT/s"), Some(PcieGen::Gen4));
        assert_eq!(parse_link_speed("Unknown"), None);
        assert_eq!(parse_link_speed("Unknown speed"), None);
        assert_eq!(parse_link_width("4"), Some(4));
        assert_eq!(parse_link_width("x16"), Some(16));
    }

    #[test]
    fn aer_stats_lines() {
        let t = "RxErr 0\nBadTLP 3\nBadDLLP 0\nTOTAL_ERR_COR 3\n";
        let v = parse_aer_stats(t);
        assert_eq!(v[1], ("BadTLP".to_string(), 3));
        let c = AerCounters {
            correctable: v,
            ..Default::default()
        };
        assert_eq!(c.total(), 3);
        assert_eq!(c.nonzero(), vec![("BadTLP".to_string(), 3)]);
    }

    #[test]
    fn policies() {
        assert_eq!(
            parse_selected("[default] performance powersave powersupersave"),
            Some("default".into())
        );
        assert_eq!(
            parse_mps_policy("ro quiet pci=noaer,pcie_bus_perf"),
            Some("pcie_bus_perf".into())
        );
        assert_eq!(
            parse_mps_policy("pci=pcie_bus_safe pci=pcie_bus_perf"),
            Some("pcie_bus_perf".into())
        );
        assert_eq!(parse_mps_policy("quiet -- pci=pcie_bus_perf"), None);
        assert_eq!(parse_mps_policy("quiet"), None);
    }
}
