//! Counters that run beside a benchmark's engine (docs/ARCHITECTURE.md: the cli starts samplers, runs the
//! engine, stops them), shared by `bench disk` and `bench net`: the interrupts of every
//! device on the target's path, and the PCIe PMU of its root port when the machine has one,
//! whose payload bytes are set against the application's (Rx against what the device wrote
//! to memory: a disk read, a received packet; Tx against what it read: a disk write, a sent
//! packet). Where no PMU can count the path, one note says why, in the words of `count
//! --list`'s finding.

use counters::event::Pmus;
use counters::pcie_pmu;
use counters::root_port::{self, PayloadCounters};
use counters::Sampler;
use model::procfs::IrqLine;
use model::root::SysRoot;
use report::kinds::count::{IrqRate, PmuBytes};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the samplers watch the path's links (AER errors, link changes): on unless the
/// benchmark was given `--no-watch`.
static WATCH_LINKS: AtomicBool = AtomicBool::new(true);

/// Set by a benchmark from its `--no-watch` before it starts its samplers.
pub fn watch_links(on: bool) {
    WATCH_LINKS.store(on, Ordering::Relaxed);
}

/// The interval of a benchmark's link watch.
const LINK_WATCH_MS: u64 = 1000;

/// Samplers started before an engine runs; [`Beside::finish`] stops them.
pub struct Beside {
    irq_sampler: counters::InterruptsSampler,
    irq_before: Option<counters::Stamped<Vec<IrqLine>>>,
    devices: Vec<(String, Vec<u32>)>,
    pmu: Option<PayloadCounters>,
    links: Option<probe::watch::Background>,
    notes: Vec<String>,
}

/// The interrupt rates of `devices` (a label and its IRQ lines) between two readings of
/// /proc/interrupts (`count --irq` and the benchmarks), per second of `busy_s` when given (the
/// seconds the workload ran, without the pauses between its runs), else of the time between
/// the readings.
pub fn irq_rates(
    sampler: &counters::InterruptsSampler,
    before: &counters::Stamped<Vec<IrqLine>>,
    after: &counters::Stamped<Vec<IrqLine>>,
    devices: Vec<(String, Vec<u32>)>,
    busy_s: Option<f64>,
) -> Vec<IrqRate> {
    let d = sampler.delta(before, after);
    let secs = busy_s.unwrap_or(d.elapsed.as_secs_f64());
    devices
        .into_iter()
        .map(|(device, irqs)| {
            let count = d.total_of(&irqs);
            IrqRate {
                names: after
                    .value
                    .iter()
                    .filter(|l| irqs.contains(&l.irq))
                    .map(|l| l.name.clone())
                    .collect(),
                device,
                irqs,
                count,
                per_second: if secs > 0.0 { count as f64 / secs } else { 0.0 },
                seconds: secs,
            }
        })
        .collect()
}

/// Why no PMU counts the path of `pci`, in one sentence: the finding of `count --list` for
/// its root port, or that the path has no root port at all (a function on a root bus).
fn no_pmu_note(root: &SysRoot, pmus: &Pmus, pci: &[String]) -> Option<String> {
    let first = pci.first()?;
    let audit = probe::pci::audit_sysfs(root);
    let port = root_port::on_path(&audit, pci).map(|f| report::kinds::count::RootPortFact {
        address: f.address.to_string(),
        vendor_id: f.vendor_id,
    });
    let links: Vec<_> = pmus
        .list
        .iter()
        .filter_map(|p| pcie_pmu::classify(p, root))
        .map(|c| c.link(&[]))
        .collect();
    let kernel = probe::system::kernel_release(root);
    report::kinds::count::no_pmu_note(first, port, &links, kernel.as_deref())
}

impl Beside {
    /// Start sampling for the PCI functions `pci` (from the target towards the CPU).
    pub fn start(root: SysRoot, pci: &[String]) -> Beside {
        let devices = counters::interrupts::path_devices(&root, pci, None);
        Self::start_with(root, pci, devices, Vec::new())
    }

    /// Start sampling for network interface `iface`: its device's interrupt lines (MSI/MSI-X
    /// and the lines named after it), those of the other PCI functions on its path, and the
    /// root port's PMU of that path.
    pub fn for_interface(root: SysRoot, iface: &str) -> Beside {
        let sys = root.clone();
        let pci = probe::path::resolve(
            &sys,
            std::path::Path::new(iface),
            &probe::pci::audit_sysfs(&sys),
        )
        .map(|p| p.chain.pci_addresses())
        .unwrap_or_default();
        let (devices, notes) = counters::interrupts::interface_devices(&root, iface, &pci);
        Self::start_with(root, &pci, devices, notes)
    }

    fn start_with(
        root: SysRoot,
        pci: &[String],
        devices: Vec<(String, Vec<u32>)>,
        mut notes: Vec<String>,
    ) -> Beside {
        let pmu = Self::open_pmu(&root, pci, &mut notes);
        let links = if WATCH_LINKS.load(Ordering::Relaxed) && !pci.is_empty() {
            let pci: Vec<_> = pci.iter().filter_map(|a| a.parse().ok()).collect();
            probe::watch::Background::start(&root, &pci, LINK_WATCH_MS)
        } else {
            None
        };
        let irq_sampler = counters::InterruptsSampler::new(root.clone());
        let irq_before = irq_sampler.snapshot().ok();
        if let Some(p) = &pmu {
            p.enable();
        }
        Beside {
            irq_sampler,
            irq_before,
            devices,
            pmu,
            links,
            notes,
        }
    }

    fn open_pmu(
        root: &SysRoot,
        pci: &[String],
        notes: &mut Vec<String>,
    ) -> Option<PayloadCounters> {
        if pci.is_empty() {
            return None;
        }
        let pmus = Pmus::read(root).ok()?;
        let Some((class, port)) = root_port::root_port_pmu(root, &pmus, pci) else {
            notes.extend(no_pmu_note(root, &pmus, pci));
            return None;
        };
        PayloadCounters::open(root, &pmus, &class, port, pci, notes)
    }

    /// Stop and say what was counted, against the application's bytes: `app_rx_bytes` the
    /// device wrote to memory (a disk read, received packets), `app_tx_bytes` it read (a disk
    /// write, sent packets). `busy_s`: the seconds the workload ran, when it paused between
    /// runs (bench disk's profiles): interrupt rates are per second of those, not of the pauses
    /// in which the device idled.
    pub fn finish(
        self,
        app_rx_bytes: u64,
        app_tx_bytes: u64,
        busy_s: Option<f64>,
    ) -> report::kinds::count::BesideCounters {
        let mut out = report::kinds::count::BesideCounters {
            notes: self.notes,
            ..Default::default()
        };
        if let (Some(before), Ok(after)) = (&self.irq_before, self.irq_sampler.snapshot()) {
            let busy = busy_s.filter(|s| *s > 0.0);
            out.interrupts = irq_rates(&self.irq_sampler, before, &after, self.devices, busy);
            if let (Some(s), false) = (busy, out.interrupts.is_empty()) {
                let paused = after.at.duration_since(before.at).as_secs_f64() - s;
                out.notes.push(format!(
                    "interrupt rates are per second of I/O: the {s:.1} s the runs took, without \
                     the {:.1} s of pauses between them",
                    paused.max(0.0)
                ));
            }
        }
        // The device wrote what was read from a disk or received (Rx) and read what was
        // written or sent (Tx).
        out.links = self.links.and_then(|l| l.finish()).map(|w| {
            report::kinds::watch::beside::PathWatch::new(w.result(), app_rx_bytes, app_tx_bytes)
        });
        if let Some(counters) = self.pmu {
            let count = counters.stop();
            let error =
                |v: Option<f64>, app| v.and_then(|v| report::kinds::count::error_percent(v, app));
            out.pmu = Some(PmuBytes {
                rx_event: count.rx.event,
                rx_bytes: count.rx.bytes,
                tx_event: count.tx.event,
                tx_bytes: count.tx.bytes,
                app_read_bytes: app_rx_bytes,
                app_write_bytes: app_tx_bytes,
                read_error_percent: error(count.rx.bytes, app_rx_bytes),
                write_error_percent: error(count.tx.bytes, app_tx_bytes),
                reason: count.reason,
                pmu: counters.pmu,
                root_port: counters.port,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    #[test]
    fn this_vms_virtio_nic_has_lines_and_no_root_port() {
        // Live: eth0 of this VM is virtio on a root-bus function, so its lines are found and
        // no PMU can count it; `lo` has no device. Elsewhere only what exists is checked.
        let root = SysRoot::system();
        let lo = Beside::for_interface(root.clone(), "lo").finish(0, 0, None);
        assert!(lo.interrupts.is_empty());
        assert_eq!(
            lo.notes,
            vec!["lo has no device (a loopback or virtual interface): it has no device interrupts"]
        );
        let Ok(dev) = std::fs::canonicalize("/sys/class/net/eth0/device") else {
            testsupport::skip::skip("the eth0 part needs an eth0 with a device");
            return;
        };
        let b = Beside::for_interface(root, "eth0").finish(0, 0, None);
        let own = &b.interrupts[0];
        assert!(own.device.starts_with("eth0"), "{own:?}");
        if dev.to_string_lossy().contains("/virtio") {
            let pci = dev
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let mut msi: Vec<u32> =
                std::fs::read_dir(format!("/sys/bus/pci/devices/{pci}/msi_irqs"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
                    .collect();
            msi.sort_unstable();
            assert_eq!(own.device, format!("eth0 {pci}"));
            assert_eq!(own.irqs, msi);
            assert!(own.names.iter().any(|n| n.contains("-input.")), "{own:?}");
        }
        if b.pmu.is_none() && std::path::Path::new("/sys/bus/event_source/devices").is_dir() {
            assert_eq!(b.notes.len(), 1, "said once: {:?}", b.notes);
        }
    }
}
