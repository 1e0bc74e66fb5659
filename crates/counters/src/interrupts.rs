//! `/proc/interrupts`: how many interrupts each device line raised, per CPU.
//!
//! Format: Documentation/filesystems/proc.rst §1.2 ("interrupts"): a header of `CPUn`
//! columns, then `IRQ: count... chip hwirq-trigger name`. The parser is
//! [`model::procfs::parse_interrupts`], shared with probe (which reads where each line is
//! delivered); this module counts what arrived during a run.

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
use model::inventory::pci::address::PciAddress;
use model::procfs::IrqLine;
use std::collections::BTreeMap;
use std::time::Duration;

/// The interrupts of one numbered line between two snapshots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqCounts {
    pub irq: u32,
    /// The device action name(s), e.g. `nvme0q1` or `virtio1-req.0`.
    pub name: String,
    /// The controller and trigger, e.g. `PCI-MSIX-0000:00:02.0 1-edge`.
    pub chip: String,
    /// Interrupts per CPU (CPUs that took none are left out).
    pub per_cpu: BTreeMap<u32, u64>,
    /// Whether it is a per-CPU interrupt (an ARM PPI) rather than a routed device line.
    pub per_cpu_by_nature: bool,
}

impl IrqCounts {
    pub fn total(&self) -> u64 {
        self.per_cpu.values().sum()
    }
}

/// What arrived between two snapshots, lines with no interrupt left out.
#[derive(Clone, Debug, PartialEq)]
pub struct InterruptsDelta {
    pub elapsed: Duration,
    pub lines: Vec<IrqCounts>,
}

impl InterruptsDelta {
    /// Device interrupts (per-CPU ones left out) that arrived on `cpu`, as
    /// (irq, name, count), largest first.
    pub fn on_cpu(&self, cpu: u32) -> Vec<(u32, String, u64)> {
        on_cpu(&self.lines, cpu)
    }

    /// Total interrupts of the given IRQ numbers (e.g. a device's MSI-X vectors).
    pub fn total_of(&self, irqs: &[u32]) -> u64 {
        self.lines
            .iter()
            .filter(|l| irqs.contains(&l.irq))
            .map(IrqCounts::total)
            .sum()
    }

    /// Interrupts per second of the given IRQ numbers over the interval (`None` for an empty
    /// interval).
    pub fn rate_of(&self, irqs: &[u32]) -> Option<f64> {
        let s = self.elapsed.as_secs_f64();
        (s > 0.0).then(|| self.total_of(irqs) as f64 / s)
    }
}

/// Device interrupts (per-CPU ones left out) of `lines` that arrived on `cpu`, as
/// (irq, name, count), largest first.
pub fn on_cpu(lines: &[IrqCounts], cpu: u32) -> Vec<(u32, String, u64)> {
    let mut out: Vec<(u32, String, u64)> = lines
        .iter()
        .filter(|l| !l.per_cpu_by_nature)
        .filter_map(|l| Some((l.irq, l.name.clone(), *l.per_cpu.get(&cpu)?)))
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    out
}

/// Difference of two parsed readings of `/proc/interrupts` (a pure function).
pub fn delta_lines(before: &[IrqLine], after: &[IrqLine]) -> Vec<IrqCounts> {
    after
        .iter()
        .filter_map(|l| {
            let then = before.iter().find(|b| b.irq == l.irq);
            let per_cpu: BTreeMap<u32, u64> = l
                .counts
                .iter()
                .map(|(&cpu, &now)| {
                    let was = then.and_then(|b| b.counts.get(&cpu).copied()).unwrap_or(0);
                    (cpu, now.saturating_sub(was))
                })
                .filter(|&(_, d)| d > 0)
                .collect();
            (!per_cpu.is_empty()).then(|| IrqCounts {
                irq: l.irq,
                name: l.name.clone(),
                chip: l.chip.clone(),
                per_cpu,
                per_cpu_by_nature: l.is_per_cpu(),
            })
        })
        .collect()
}

/// Samples the numbered lines of `/proc/interrupts`.
#[derive(Clone, Debug, Default)]
pub struct InterruptsSampler {
    pub root: SysRoot,
}

impl InterruptsSampler {
    pub fn new(root: SysRoot) -> InterruptsSampler {
        InterruptsSampler { root }
    }
}

impl Sampler for InterruptsSampler {
    type Snapshot = Stamped<Vec<IrqLine>>;
    type Delta = InterruptsDelta;

    fn snapshot(&self) -> Result<Self::Snapshot, Error> {
        let text = self.root.read("/proc/interrupts")?;
        Ok(Stamped::now(model::procfs::parse_interrupts(&text)))
    }

    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> InterruptsDelta {
        InterruptsDelta {
            elapsed: interval(before, after),
            lines: delta_lines(&before.value, &after.value),
        }
    }
}

/// The interrupt lines of PCI device `dev` (`0000:01:00.0` or `01:00.0`): its MSI/MSI-X
/// vectors (sysfs `msi_irqs/`, Documentation/ABI/testing/sysfs-bus-pci), else its INTx
/// `irq`.
pub fn pci_device_irqs(root: &SysRoot, dev: &str) -> Result<Vec<u32>, String> {
    let full = if dev.matches(':').count() == 1 {
        format!("0000:{dev}")
    } else {
        dev.to_string()
    };
    let base = format!("/sys/bus/pci/devices/{full}");
    if !root.path(&base).is_dir() {
        return Err(format!(
            "--irq {dev}: no PCI device {full} (give its address as `lspci -D` prints it)"
        ));
    }
    let mut irqs: Vec<u32> = std::fs::read_dir(root.path(format!("{base}/msi_irqs")))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if irqs.is_empty() {
        if let Some(n) = root
            .read(&format!("{base}/irq"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .filter(|&n| n > 0)
        {
            irqs.push(n);
        }
    }
    irqs.sort_unstable();
    if irqs.is_empty() {
        return Err(format!(
            "--irq {dev}: the device has no interrupt line (no msi_irqs/, irq 0)"
        ));
    }
    Ok(irqs)
}

/// The PCI functions of `pci` (a path's, from the device towards the CPU) other than `except`,
/// each with its interrupt lines ([`pci_device_irqs`]); a function whose lines cannot be read
/// is left out.
pub fn path_devices(
    root: &SysRoot,
    pci: &[String],
    except: Option<&str>,
) -> Vec<(String, Vec<u32>)> {
    pci.iter()
        .filter(|d| Some(d.as_str()) != except)
        .filter_map(|d| pci_device_irqs(root, d).ok().map(|l| (d.clone(), l)))
        .collect()
}

/// The devices whose interrupts a run over network interface `iface` counts, each a label and
/// its lines: the interface's own device first (`eth0 0000:01:00.0`, its lines as
/// [`interface_irqs`] finds them in /proc/interrupts now), then the other PCI functions of its
/// path `pci`; and a note where the interface's device has no line to count.
pub fn interface_devices(
    root: &SysRoot,
    iface: &str,
    pci: &[String],
) -> (Vec<(String, Vec<u32>)>, Vec<String>) {
    let lines = InterruptsSampler::new(root.clone())
        .snapshot()
        .map(|s| s.value)
        .unwrap_or_default();
    let mut notes = Vec::new();
    let mut devices = Vec::new();
    let own = match interface_irqs(root, iface, &lines) {
        Ok(i) => {
            let label = match &i.pci {
                Some(p) => format!("{iface} {p}"),
                None => iface.to_string(),
            };
            if i.irqs.is_empty() {
                notes.push(format!(
                    "{label}: no interrupt line of the device was found (no msi_irqs, no \
                     line in /proc/interrupts named after {iface})"
                ));
            } else {
                devices.push((label, i.irqs));
            }
            i.pci
        }
        Err(why) => {
            notes.push(why);
            None
        }
    };
    devices.extend(path_devices(root, pci, own.as_deref()));
    (devices, notes)
}

/// The IRQ lines of the disks' controllers, each with the disks behind it (`vda`, `sda,
/// sdb`): the PCI function on each disk's bus path (`disks`: each disk's bus path, as
/// `probe::block::disk_hardware` reads them) and its MSI/MSI-X (or INTx) lines.
pub fn storage_irqs(
    root: &SysRoot,
    disks: &[(String, Vec<model::path::Hop>)],
) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    for (disk, bus_path) in disks {
        let pci = bus_path.iter().find_map(|h| match h {
            model::path::Hop::Pci { address, .. } => Some(address.to_string()),
            _ => None,
        });
        let Some(pci) = pci else { continue };
        for irq in pci_device_irqs(root, &pci).unwrap_or_default() {
            match out.iter_mut().find(|(i, _)| *i == irq) {
                Some((_, names)) => names.push_str(&format!(", {disk}")),
                None => out.push((irq, disk.clone())),
            }
        }
    }
    out
}

/// The interrupt lines of a network interface's device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceIrqs {
    /// The PCI function that is the interface's device (or that carries its virtio
    /// device), when there is one.
    pub pci: Option<String>,
    /// Its MSI/MSI-X (or INTx) lines and the lines named after the interface, sorted.
    pub irqs: Vec<u32>,
}

/// Whether one of `line`'s actions is named after `prefix`: `eth0` itself, or `eth0-TxRx-0`
/// / `eth0:lpi` as drivers name per-queue vectors (igb, stmmac), `virtio2-input.0` for a
/// virtio device's queues.
fn named_after(line: &IrqLine, prefix: &str) -> bool {
    line.name.split(',').map(str::trim).any(|action| {
        action == prefix
            || action
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('-') || rest.starts_with(':'))
    })
}

/// The interrupt lines of network interface `iface`: the MSI/MSI-X vectors of its PCI
/// function (as [`pci_device_irqs`]) and the lines of `lines` named after the interface or
/// after its virtio device (`/sys/class/net/IFACE/device` -> `virtio2`, whose queues are
/// `virtio2-input.0`, `virtio2-output.0`). An interface without a device (lo, veth, a
/// bridge) has none: the error says so in one sentence.
pub fn interface_irqs(
    root: &SysRoot,
    iface: &str,
    lines: &[IrqLine],
) -> Result<InterfaceIrqs, String> {
    let class = root.path(format!("/sys/class/net/{iface}"));
    if !class.exists() {
        return Err(format!("there is no network interface {iface}"));
    }
    let Ok(device) = std::fs::canonicalize(class.join("device")) else {
        return Err(format!(
            "{iface} has no device (a loopback or virtual interface): it has no device \
             interrupts"
        ));
    };
    let base = |p: &std::path::Path| p.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let is_pci = |n: &str| PciAddress::from_sysfs_name(n).is_some();
    let name = base(&device).unwrap_or_default();
    let (pci, virtio) = if is_pci(&name) {
        (Some(name), None)
    } else if name.starts_with("virtio") {
        let parent = device.parent().and_then(base).filter(|p| is_pci(p));
        (parent, Some(name))
    } else {
        (None, None)
    };
    let mut irqs: Vec<u32> = pci
        .as_deref()
        .and_then(|p| pci_device_irqs(root, p).ok())
        .unwrap_or_default();
    for l in lines {
        let ours = named_after(l, iface) || virtio.as_deref().is_some_and(|v| named_after(l, v));
        if ours && !irqs.contains(&l.irq) {
            irqs.push(l.irq);
        }
    }
    irqs.sort_unstable();
    Ok(InterfaceIrqs { pci, irqs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::procfs::parse_interrupts;

    #[test]
    fn deltas_per_cpu() {
        let before = parse_interrupts(
            "           CPU0       CPU1\n 36:          0      34453   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n 39:       2625          0   PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n",
        );
        let after = parse_interrupts(
            "           CPU0       CPU1\n 36:          0      34500   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n 39:       2630          0   PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n",
        );
        let d = InterruptsDelta {
            elapsed: Duration::from_millis(500),
            lines: delta_lines(&before, &after),
        };
        assert_eq!(d.on_cpu(1), vec![(36, "virtio1-req.0".into(), 47)]);
        assert_eq!(d.on_cpu(0), vec![(39, "virtio2-output.0".into(), 5)]);
        assert_eq!(d.total_of(&[36, 39]), 52);
        assert_eq!(d.rate_of(&[36]), Some(94.0));
    }

    #[test]
    fn fixture_tree_reads() {
        let root = testsupport::fixtures::own_root("system/firecracker-vm-6.18");
        let s = InterruptsSampler::new(root);
        let a = s.snapshot().unwrap();
        assert_eq!(a.value.len(), 19);
        assert!(s.delta(&a, &a).lines.is_empty(), "no change, no lines");
    }

    #[test]
    fn a_devices_lines_from_msi_irqs_or_intx() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("sys/bus/pci/devices/0000:01:00.0");
        std::fs::create_dir_all(dev.join("msi_irqs")).unwrap();
        for n in ["41", "40"] {
            std::fs::write(dev.join("msi_irqs").join(n), "msix\n").unwrap();
        }
        std::fs::write(dev.join("irq"), "16\n").unwrap();
        let root = SysRoot::new(dir.path());
        assert_eq!(pci_device_irqs(&root, "01:00.0"), Ok(vec![40, 41]));
        std::fs::remove_dir_all(dev.join("msi_irqs")).unwrap();
        assert_eq!(pci_device_irqs(&root, "0000:01:00.0"), Ok(vec![16]), "INTx");
        let e = pci_device_irqs(&root, "02:00.0").unwrap_err();
        assert!(e.contains("no PCI device 0000:02:00.0"), "{e}");
    }

    /// A sysfs tree with `iface`'s device link pointing at `device` (under sys/devices).
    fn with_interface(dir: &std::path::Path, iface: &str, device: Option<&str>) {
        let class = dir.join("sys/class/net").join(iface);
        std::fs::create_dir_all(&class).unwrap();
        if let Some(d) = device {
            let target = dir.join("sys/devices").join(d);
            std::fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(&target, class.join("device")).unwrap();
        }
    }

    #[test]
    fn an_interfaces_lines_by_its_device_and_its_name() {
        // This VM's eth0: virtio2 on PCI 0000:00:03.0, MSI-X 37-39.
        let lines = parse_interrupts(
            "           CPU0       CPU1
 36:  0  9  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:  0  0  PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:  0  5  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:  4  0  PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 50:  4  0  GICv3  60 Level     eth1, eth1:lpi
 51:  4  0  GICv3  61 Level     eth10
 52:  1  0  PCI-MSIX-0000:01:00.0   1-edge      eth2-TxRx-0
 53:  1  0  PCI-MSIX-0000:01:00.0   2-edge      eth2-TxRx-1
",
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        with_interface(d, "eth0", Some("pci0000:00/0000:00:03.0/virtio2"));
        for n in ["37", "38", "39"] {
            let msi = d.join("sys/bus/pci/devices/0000:00:03.0/msi_irqs");
            std::fs::create_dir_all(&msi).unwrap();
            std::fs::write(msi.join(n), "msix\n").unwrap();
        }
        // A platform NIC (stmmac on an ARM board): no PCI, lines named after it.
        with_interface(d, "eth1", Some("platform/fe1b0000.ethernet"));
        // igb: its PCI function's vectors, named eth2-TxRx-N (msi_irqs not captured here).
        with_interface(d, "eth2", Some("pci0000:00/0000:00:1c.0/0000:01:00.0"));
        with_interface(d, "lo", None);
        let root = SysRoot::new(d);
        let eth0 = interface_irqs(&root, "eth0", &lines).unwrap();
        assert_eq!(eth0.pci.as_deref(), Some("0000:00:03.0"));
        assert_eq!(eth0.irqs, vec![37, 38, 39]);
        let eth1 = interface_irqs(&root, "eth1", &lines).unwrap();
        assert_eq!((eth1.pci, eth1.irqs), (None, vec![50]), "eth10 is not eth1");
        let eth2 = interface_irqs(&root, "eth2", &lines).unwrap();
        assert_eq!(eth2.pci.as_deref(), Some("0000:01:00.0"));
        assert_eq!(eth2.irqs, vec![52, 53]);
        let lo = interface_irqs(&root, "lo", &lines).unwrap_err();
        assert_eq!(
            lo,
            "lo has no device (a loopback or virtual interface): it has no device interrupts"
        );
        let none = interface_irqs(&root, "wlan9", &lines).unwrap_err();
        assert_eq!(none, "there is no network interface wlan9");
    }
}
