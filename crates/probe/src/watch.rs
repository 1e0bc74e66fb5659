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
    /// Errors counted from the AER status registers of functions the kernel keeps no
    /// `aer_dev_*` counters for.
    status: BTreeMap<PciAddress, StatusCounts>,
    /// Said once per run: what a sample could not read, and why.
    notes: Vec<String>,
    new_notes: Vec<String>,
}

/// Config space past the standard header needs root (drivers/pci/pci-sysfs.c
/// `pci_read_config` gives others the first 64 bytes).
const UNPRIVILEGED_CONFIG_BYTES: usize = 64;
/// The capabilities list lives in the first 256 bytes (PCI Local Bus Spec 3.0 section 6.7).
const CONVENTIONAL_CONFIG: u64 = 256;
/// Extended configuration space, where the AER capability is (PCIe Base Spec 6.0 section 7.8.4).
const EXTENDED_CONFIG: u64 = 4096;

impl Sampler {
    pub fn new(root: &SysRoot, only: Option<Only>) -> Sampler {
        Sampler {
            root: root.clone(),
            only,
            dirs: BTreeMap::new(),
            named: BTreeMap::new(),
            status: BTreeMap::new(),
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
        // Without the kernel's counters, the AER status registers in config space (root).
        let aer = match aer {
            None if current.is_some() || max.is_some() => self.status_counts(address, &at),
            a => a,
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

    /// The AER errors counted so far from `address`'s status registers, where it has an AER
    /// capability and its extended config space is readable.
    fn status_counts(&mut self, address: PciAddress, at: &std::path::Path) -> Option<AerCounters> {
        let mut bytes = Vec::with_capacity(EXTENDED_CONFIG as usize);
        sysfs::open_read(&at.join("config"))
            .and_then(|f| f.take(EXTENDED_CONFIG).read_to_end(&mut bytes))
            .ok()?;
        if bytes.len() <= CONVENTIONAL_CONFIG as usize {
            return None;
        }
        let aer = crate::pci::config::decode(&bytes).aer?;
        self.note(
            "the kernel keeps no AER counters (aer_dev_*) for some functions: their AER status \
             registers in config space are read instead, and an error counts when its status \
             bit goes from clear to set; while nothing clears the bit (the kernel's AER driver \
             would), later errors of the same kind are not seen"
                .to_string(),
        );
        let counts = self.status.entry(address).or_default();
        counts.observe(&aer);
        Some(counts.counters())
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

/// The AER errors of one function counted from its status registers (PCIe Base Spec 6.0
/// sections 7.8.4.2, Uncorrectable Error Status, and 7.8.4.5, Correctable Error Status): the
/// bits are sticky until software writes 1 to clear them, so an error is one bit going from
/// clear to set between two samples. A bit set at the first sample counts once (the baseline
/// the watch starts from). Masked errors are left out, as the kernel leaves them out of its
/// counters; an uncorrectable error is fatal when its bit is set in the Uncorrectable Error
/// Severity register.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts {
    correctable: u32,
    uncorrectable: u32,
    counts: BTreeMap<(model::watch::AerSeverity, &'static str), u64>,
}

impl StatusCounts {
    /// Take in the registers of one sample.
    pub fn observe(&mut self, aer: &model::inventory::pci::config::Aer) {
        use model::inventory::pci::config::{CORRECTABLE_ERROR_BITS, UNCORRECTABLE_ERROR_BITS};
        use model::watch::AerSeverity;
        let cor = aer.correctable_status.raw & !aer.correctable_mask.raw;
        let uncor = aer.uncorrectable_status.raw & !aer.uncorrectable_mask.raw;
        for &(bit, name) in &CORRECTABLE_ERROR_BITS {
            let b = 1u32 << bit;
            if cor & b != 0 && self.correctable & b == 0 {
                *self
                    .counts
                    .entry((AerSeverity::Correctable, name))
                    .or_default() += 1;
            }
        }
        for &(bit, name) in &UNCORRECTABLE_ERROR_BITS {
            let b = 1u32 << bit;
            if uncor & b != 0 && self.uncorrectable & b == 0 {
                let severity = if aer.uncorrectable_severity.raw & b != 0 {
                    AerSeverity::Fatal
                } else {
                    AerSeverity::Nonfatal
                };
                *self.counts.entry((severity, name)).or_default() += 1;
            }
        }
        self.correctable = cor;
        self.uncorrectable = uncor;
    }

    /// The counts so far, as the kernel's counters would give them (every name of the
    /// registers, 0 for those never set).
    pub fn counters(&self) -> AerCounters {
        use model::inventory::pci::config::{CORRECTABLE_ERROR_BITS, UNCORRECTABLE_ERROR_BITS};
        use model::watch::AerSeverity;
        let of = |severity: AerSeverity, table: &[(u8, &'static str)]| {
            table
                .iter()
                .map(|&(_, name)| {
                    let n = self.counts.get(&(severity, name)).copied().unwrap_or(0);
                    (name.to_string(), n)
                })
                .collect()
        };
        AerCounters {
            correctable: of(AerSeverity::Correctable, &CORRECTABLE_ERROR_BITS),
            nonfatal: of(AerSeverity::Nonfatal, &UNCORRECTABLE_ERROR_BITS),
            fatal: of(AerSeverity::Fatal, &UNCORRECTABLE_ERROR_BITS),
            ..AerCounters::default()
        }
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

    /// A function without the kernel's AER counters: the Samsung PM174X NVMe of pciutils'
    /// tests/cap-phy32 (tests/fixtures/captured/pci/pciutils-tests_cap-phy32.lspci; AER at
    /// 0x100, lspci: UESvrt DLP+ CmpltTO-, CESta AdvNonFatalErr+ masked by CEMsk), then the
    /// same dump with RxErr, CmpltTO (nonfatal) and DLP (fatal) set in its status registers.
    #[test]
    fn aer_status_registers_count_errors_where_sysfs_has_no_counters() {
        use model::watch::{AerSeverity, ChangeKind, Watcher};
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/captured/pci/pciutils-tests_cap-phy32.lspci"
        ))
        .unwrap();
        let mut config = crate::pci::dump::parse_lspci_dump(&text).functions[0]
            .config
            .clone();
        assert_eq!(config.len(), 4096);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sys/bus/pci/devices/0000:2e:00.0");
        std::fs::create_dir_all(&f).unwrap();
        for (name, value) in [
            ("current_link_speed", "16.0 GT/s PCIe"),
            ("current_link_width", "2"),
            ("max_link_speed", "32.0 GT/s PCIe"),
            ("max_link_width", "2"),
        ] {
            std::fs::write(f.join(name), format!("{value}\n")).unwrap();
        }
        let root = SysRoot::new(dir.path());
        let mut sampler = Sampler::new(&root, None);
        let mut watcher = Watcher::new(1000, Vec::new());
        let mut notes = Vec::new();
        let mut step = |config: &[u8], at: u64| {
            std::fs::write(f.join("config"), config).unwrap();
            let sample = sampler.sample();
            notes.extend(sampler.take_notes());
            watcher.observe(&sample, at, 0)
        };
        // The baseline: AdvNonFatalErr is set but masked, so nothing is counted.
        assert!(step(&config, 0).is_empty());
        // Uncorrectable Error Status at 0x104: DLP bit 4, CmpltTO bit 14; Correctable Error
        // Status at 0x110: RxErr bit 0 (PCIe Base Spec 6.0 sections 7.8.4.2 and 7.8.4.5).
        config[0x104] |= 1 << 4;
        config[0x105] |= 1 << (14 - 8);
        config[0x110] |= 1;
        let errors =
            |changes: Vec<model::watch::Change>| -> Vec<(AerSeverity, Vec<(String, u64)>)> {
                changes
                    .into_iter()
                    .filter_map(|c| match c.kind {
                        ChangeKind::Aer { severity, errors } => Some((severity, errors)),
                        _ => None,
                    })
                    .collect()
            };
        let one = |n: &str| vec![(n.to_string(), 1)];
        assert_eq!(
            errors(step(&config, 1000)),
            [
                (AerSeverity::Correctable, one("RxErr")),
                (AerSeverity::Nonfatal, one("CmpltTO")),
                (AerSeverity::Fatal, one("DLP")),
            ]
        );
        // Still set: the same errors, not new ones.
        assert!(errors(step(&config, 2000)).is_empty());
        // Cleared (written 1 to) and set again: one more.
        config[0x110] &= !1;
        assert!(errors(step(&config, 3000)).is_empty());
        config[0x110] |= 1;
        assert_eq!(
            errors(step(&config, 4000)),
            [(AerSeverity::Correctable, one("RxErr"))]
        );
        assert!(
            notes.iter().any(|n| n.contains("AER status registers")),
            "{notes:?}"
        );
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
