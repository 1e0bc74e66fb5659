//! One sample of a machine's links for `headroom watch`: each PCI function's link state, AER
//! counters and Link Status bits, the USB devices and their speeds, the network interfaces'
//! carrier changes and speeds; and, once at the start, what crosses each function's link.
//!
//! A sample reads only what can change (a few small attributes per device, and the first
//! 256 bytes of config space where the kernel gives them), so that sampling every second
//! costs little (bench/watch-cost.sh measures it). Everything under a `--root` tree is read
//! through [`crate::sysfs`]'s resolver.

use crate::sysfs::{self, SysfsExt};
use model::ceiling::pcie::TlpParams;
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::{AerCounters, PciAudit};
use model::root::SysRoot;
use model::watch::{FunctionContext, FunctionSample, LinkStatusBits, NetSample, Sample, UsbSample};
use model::LinkState;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;

/// Which devices a watch samples: all of them, or those on the paths of its targets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Only {
    pub pci: BTreeSet<PciAddress>,
    pub usb: BTreeSet<String>,
    pub net: BTreeSet<String>,
}

/// Reads samples under one root, remembering where each PCI function's directory is.
pub struct Sampler {
    root: SysRoot,
    only: Option<Only>,
    dirs: BTreeMap<PciAddress, PathBuf>,
    /// USB devices and network interfaces by their class or bus path.
    named: BTreeMap<String, PathBuf>,
    /// Said once per run: what a sample could not read, and why.
    notes: Vec<String>,
    new_notes: Vec<String>,
}

/// Config space past the standard header needs root (drivers/pci/pci-sysfs.c
/// `pci_read_config` gives others the first 64 bytes).
const UNPRIVILEGED_CONFIG_BYTES: usize = 64;
/// The capabilities list lives in the first 256 bytes (PCI Local Bus Spec 3.0 section 6.7).
const CONVENTIONAL_CONFIG: u64 = 256;

impl Sampler {
    pub fn new(root: &SysRoot, only: Option<Only>) -> Sampler {
        Sampler {
            root: root.clone(),
            only,
            dirs: BTreeMap::new(),
            named: BTreeMap::new(),
            notes: Vec::new(),
            new_notes: Vec::new(),
        }
    }

    /// Sentences about what could not be read, each once per run, since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.new_notes)
    }

    fn note(&mut self, sentence: String) {
        if !self.notes.contains(&sentence) {
            self.notes.push(sentence.clone());
            self.new_notes.push(sentence);
        }
    }

    /// Read one sample.
    pub fn sample(&mut self) -> Sample {
        Sample {
            pci: self.pci(),
            usb: self.usb(),
            net: self.net(),
        }
    }

    fn pci(&mut self) -> Vec<FunctionSample> {
        let names = match self.root.list("/sys/bus/pci/devices") {
            Ok(n) => n,
            Err(e) if e.kind == sysfs::ReadErrorKind::Vanished => Vec::new(),
            Err(e) => {
                self.note(format!("{e}; no PCI function is watched"));
                Vec::new()
            }
        };
        let mut out = Vec::new();
        for name in names {
            let Ok(address) = name.parse::<PciAddress>() else {
                continue;
            };
            if self
                .only
                .as_ref()
                .is_some_and(|o| !o.pci.contains(&address))
            {
                continue;
            }
            let dir = match self.dirs.get(&address) {
                Some(d) => d.clone(),
                None => match self.root.canonical(format!("/sys/bus/pci/devices/{name}")) {
                    Ok(d) => {
                        self.dirs.insert(address, d.clone());
                        d
                    }
                    // Removed between the listing and here: absent from this sample.
                    Err(_) => continue,
                },
            };
            if let Some(f) = self.function(address, &dir) {
                out.push(f);
            } else {
                self.dirs.remove(&address);
            }
        }
        out
    }

    fn function(&mut self, address: PciAddress, dir: &std::path::Path) -> Option<FunctionSample> {
        let at = self.root.path(dir);
        if sysfs::metadata(&at).is_err() {
            return None;
        }
        let attr = |name: &str| sysfs::read_attr(&at.join(name)).ok().flatten();
        let state = |speed: &str, width: &str| -> Option<LinkState> {
            let gen = crate::pci::sysfs::parse_link_speed(&attr(speed)?)?;
            let width = crate::pci::sysfs::parse_link_width(&attr(width)?)?;
            (width > 0).then_some(LinkState { gen, width })
        };
        let current = state("current_link_speed", "current_link_width");
        let max = state("max_link_speed", "max_link_width");
        let files = ["aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"].map(attr);
        let aer = files.iter().any(Option::is_some).then(|| {
            let [c, n, f] = files;
            let parse = |v: Option<String>| {
                v.map(|s| crate::pci::sysfs::parse_aer_stats(&s))
                    .unwrap_or_default()
            };
            AerCounters {
                correctable: parse(c),
                nonfatal: parse(n),
                fatal: parse(f),
                ..AerCounters::default()
            }
        });
        let link_status = if current.is_some() || max.is_some() {
            self.link_status(&at.join("config"))
        } else {
            None
        };
        Some(FunctionSample {
            address,
            current,
            max,
            aer,
            link_status,
        })
    }

    fn link_status(&mut self, config: &std::path::Path) -> Option<LinkStatusBits> {
        let mut bytes = Vec::with_capacity(CONVENTIONAL_CONFIG as usize);
        let read = sysfs::open_read(config)
            .and_then(|f| f.take(CONVENTIONAL_CONFIG).read_to_end(&mut bytes));
        if read.is_err() || bytes.is_empty() {
            return None;
        }
        if bytes.len() <= UNPRIVILEGED_CONFIG_BYTES {
            self.note(
                "the Link Status bits that latch a retrain between two samples (LBMS, LABS) \
                 are in config space past its first 64 bytes, which only root can read; run \
                 as root to see them"
                    .to_string(),
            );
            return None;
        }
        link_status_bits(&bytes)
    }

    /// The directory of `/sys/{dir}/{name}` (a link on a live system, a recorded one in a
    /// capture), remembered; `None` when it is gone.
    fn named_dir(&mut self, dir: &str, name: &str) -> Option<PathBuf> {
        let key = format!("{dir}/{name}");
        if let Some(d) = self.named.get(&key) {
            let at = self.root.path(d);
            if sysfs::metadata(&at).is_ok() {
                return Some(at);
            }
        }
        let d = self.root.canonical(&key).ok()?;
        let at = self.root.path(&d);
        self.named.insert(key, d);
        Some(at)
    }

    fn usb(&mut self) -> Vec<UsbSample> {
        let Ok(names) = self.root.list("/sys/bus/usb/devices") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in names {
            if !crate::usb::is_device_name(&name)
                || name.starts_with("usb")
                || self.only.as_ref().is_some_and(|o| !o.usb.contains(&name))
            {
                continue;
            }
            let Some(at) = self.named_dir("/sys/bus/usb/devices", &name) else {
                continue;
            };
            let attr = |a: &str| sysfs::read_attr(&at.join(a)).ok().flatten();
            out.push(UsbSample {
                speed_mbps: attr("speed").and_then(|s| crate::usb::parse_speed(&s)),
                product: attr("product"),
                name,
            });
        }
        out
    }

    fn net(&mut self) -> Vec<NetSample> {
        let Ok(names) = self.root.list("/sys/class/net") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for name in names {
            if name == "lo" || self.only.as_ref().is_some_and(|o| !o.net.contains(&name)) {
                continue;
            }
            let Some(at) = self.named_dir("/sys/class/net", &name) else {
                continue;
            };
            let attr = |a: &str| sysfs::read_attr(&at.join(a)).ok().flatten();
            out.push(NetSample {
                carrier_changes: attr("carrier_changes").and_then(|s| s.parse().ok()),
                speed_mbps: attr("speed").and_then(|s| crate::net::parse_speed(&s)),
                name,
            });
        }
        out
    }
}

/// A watch of some PCI functions by a thread of its own, beside a benchmark: a sample every
/// `interval_ms` (a few small sysfs reads each), one at the start and one at the stop, so that
/// a link that retrains during the run and comes back is seen, and every AER error counted.
pub struct Background {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<model::watch::Watcher>,
}

impl Background {
    /// Start watching the functions `pci` under `root`.
    pub fn start(root: &SysRoot, pci: &[PciAddress], interval_ms: u64) -> Option<Background> {
        use std::sync::atomic::Ordering;
        let audit = crate::pci::audit_sysfs(root);
        let only = Only {
            pci: pci.iter().copied().collect(),
            ..Only::default()
        };
        let mut sampler = Sampler::new(root, Some(only));
        let mut watcher = model::watch::Watcher::new(interval_ms, contexts(root, &audit));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let start = std::time::Instant::now();
        let mut take = move |watcher: &mut model::watch::Watcher| {
            let at = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            watcher.observe(&sampler.sample(), at, unix);
        };
        take(&mut watcher);
        let thread = std::thread::Builder::new()
            .name("link watch".into())
            .spawn(move || {
                let mut next = interval_ms;
                // Bounded by the stop flag, checked every 50 ms.
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    if start.elapsed().as_millis() >= u128::from(next) {
                        take(&mut watcher);
                        next += interval_ms;
                    }
                }
                take(&mut watcher);
                watcher
            })
            .ok()?;
        Some(Background { stop, thread })
    }

    /// Take the last sample and stop: what was seen.
    pub fn finish(self) -> Option<model::watch::Watcher> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().ok()
    }
}

/// The Link Status bits of a function's PCI Express capability in `config` (at least its
/// first 256 bytes): Link Status is at offset 0x12 of the capability, LBMS bit 14 and LABS
/// bit 15 (PCIe Base Spec 6.0 section 7.5.3.8). `None` without the capability.
pub fn link_status_bits(config: &[u8]) -> Option<LinkStatusBits> {
    let express = crate::pci::config::decode(config).express?;
    let at = usize::from(express.offset) + 0x12;
    let status = u16::from_le_bytes([*config.get(at)?, *config.get(at + 1)?]);
    Some(LinkStatusBits {
        bandwidth_management: status & (1 << 14) != 0,
        autonomous_bandwidth: status & (1 << 15) != 0,
    })
}

/// The devices on the paths of `targets` (files, block devices, interfaces, PCI addresses):
/// every PCI function, USB device and interface from each target up to the CPU. A target
/// that does not resolve is an error naming it.
pub fn only_for(root: &SysRoot, audit: &PciAudit, targets: &[PathBuf]) -> Result<Only, String> {
    fn walk(hops: &[model::path::Hop], only: &mut Only) {
        use model::path::Hop;
        for h in hops {
            match h {
                Hop::Pci { address, .. } => {
                    if let Ok(a) = address.parse() {
                        only.pci.insert(a);
                    }
                }
                Hop::Usb { name, .. } => {
                    only.usb.insert(name.clone());
                }
                Hop::Network { name, .. } => {
                    only.net.insert(name.clone());
                }
                Hop::Layer { branches, .. } => branches.iter().for_each(|b| walk(&b.hops, only)),
                _ => {}
            }
        }
    }
    let mut only = Only::default();
    for t in targets {
        let path = crate::path::resolve(root, t, audit)?;
        walk(&path.chain.hops, &mut only);
    }
    Ok(only)
}

/// The tracepoint a kernel has for link changes between samples (`pci:pcie_link_event`,
/// include/trace/events/pci.h), if this one has it.
pub fn link_event_tracepoint(root: &SysRoot) -> Option<&'static str> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| {
            sysfs::metadata(&root.path(format!("{t}/events/pci/pcie_link_event")))
                .is_ok_and(|m| m.is_dir())
        })
        .then_some("pci:pcie_link_event")
}

/// What each PCI function of `audit` needs for the change lines: its name, the parameters of
/// its link's ceiling, and the block devices (`/dev/NAME`, whole disks) and network
/// interfaces whose device sits below it.
pub fn contexts(root: &SysRoot, audit: &PciAudit) -> Vec<FunctionContext> {
    let mut below: BTreeMap<PciAddress, Vec<String>> = BTreeMap::new();
    for (class, user_name) in [
        (
            "block",
            (|n: &str| format!("/dev/{n}")) as fn(&str) -> String,
        ),
        ("net", |n: &str| n.to_string()),
    ] {
        let dir = format!("/sys/class/{class}");
        for name in root.list(&dir).unwrap_or_default() {
            let Ok(device) = root.canonical(format!("{dir}/{name}")) else {
                continue;
            };
            // Partitions cross the same links as their disk.
            if sysfs::metadata(&root.path(&device).join("partition")).is_ok() {
                continue;
            }
            for a in device
                .components()
                .filter_map(|c| c.as_os_str().to_str()?.parse::<PciAddress>().ok())
            {
                below.entry(a).or_default().push(user_name(&name));
            }
        }
    }
    audit
        .functions
        .iter()
        .map(|f| {
            let link = f.upstream_link.and_then(|i| audit.links.get(i));
            let params = link
                .map(|l| l.ceiling.current.params)
                .or_else(|| f.own_link_ceiling.as_ref().map(|c| c.current.params))
                .unwrap_or_else(|| TlpParams::default_for(128, 512, 64));
            FunctionContext {
                address: f.address,
                parent: f.parent,
                name: f.display_name(),
                params,
                paths: below.remove(&f.address).unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_event_tracepoint_is_found_where_the_kernel_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path());
        assert_eq!(link_event_tracepoint(&root), None);
        std::fs::create_dir_all(
            dir.path()
                .join("sys/kernel/tracing/events/pci/pcie_link_event"),
        )
        .unwrap();
        assert_eq!(link_event_tracepoint(&root), Some("pci:pcie_link_event"));
    }

    #[test]
    fn link_status_bits_of_a_captured_config_space() {
        // A PCI Express capability at 0x40 whose Link Status has LBMS set (0x4011: x1, 2.5
        // GT/s, bit 14).
        let mut c = vec![0u8; 256];
        c[0x06] = 0x10; // capabilities list
        c[0x34] = 0x40;
        c[0x40] = 0x10;
        c[0x42] = 0x02; // version 2, endpoint
        c[0x52] = 0x11;
        c[0x53] = 0x40;
        let bits = link_status_bits(&c).unwrap();
        assert!(bits.bandwidth_management);
        assert!(!bits.autonomous_bandwidth);
        assert_eq!(link_status_bits(&[0u8; 256]), None);
    }
}
