//! `/proc/interrupts`: how many interrupts each device line raised, per CPU.
//!
//! Format: Documentation/filesystems/proc.rst §1.2 ("interrupts"): a header of `CPUn`
//! columns, then `IRQ: count... chip hwirq-trigger name`. The parser is
//! [`model::procfs::parse_interrupts`], shared with probe (which reads where each line is
//! delivered); this module counts what arrived during a run.

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
pub use model::procfs::IrqLine;
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
        let root = SysRoot::new(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/system/firecracker-vm-6.18"),
        );
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
}
