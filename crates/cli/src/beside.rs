//! The side samplers that run beside a benchmark's engine, started and stopped by the driver
//! (`crate::driver::Run::sides`): each is one entry of [`SIDE_SAMPLERS`] and one field of
//! [`SideResults`]. Registered: [`Beside`], which counts, for `bench disk` and `bench net`,
//! the interrupts of every device on the target's path, and the PCIe PMU of its root port
//! when the machine has one, whose payload bytes are set against the application's (Rx
//! against what the device wrote to memory: a disk read, a received packet; Tx against what
//! it read: a disk write, a sent packet; where no PMU can count the path, one note says why,
//! in the words of `count --list`'s finding); [`LinkWatch`], the AER errors and link changes
//! of the PCI functions on that path (not with `--no-watch`); and [`InterruptsOnCpus`], the
//! interrupts on the CPUs `bench latency` measures on.

use counters::event::Pmus;
use counters::pcie_pmu;
use counters::root_port::{self, PayloadCounters};
use counters::Sampler;
use model::latency::MeasuredInterrupts;
use model::procfs::IrqLine;
use model::root::SysRoot;
use report::kinds::count::{BesideCounters, IrqRate, PmuBytes};
use report::kinds::watch::beside::PathWatch;

/// The interval of a benchmark's link watch ([`LinkWatch`]).
const LINK_WATCH_MS: u64 = 1000;

/// What a benchmark's flags say of its side samplers (the driver's `Run::sides` passes them).
#[derive(Clone, Copy, Debug)]
pub struct SideFlags {
    /// Watch the AER errors and link changes of the target's path ([`LinkWatch`]): on unless
    /// `--no-watch` was given.
    pub watch_links: bool,
}

impl Default for SideFlags {
    fn default() -> SideFlags {
        SideFlags { watch_links: true }
    }
}

/// The flags of the side samplers, for a benchmark whose target has a path of PCI functions
/// (`bench disk`, `bench net`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SideArgs {
    /// Do not watch the AER errors and link changes of the target's path during the run.
    #[arg(long)]
    pub no_watch: bool,
}

impl SideArgs {
    /// What these flags say of the side samplers.
    pub fn flags(&self) -> SideFlags {
        SideFlags {
            watch_links: !self.no_watch,
        }
    }
}

/// What the side samplers sample beside an engine: the hardware its target crosses.
pub enum SideTarget<'a> {
    /// The PCI functions of the target's path, from the target towards the CPU.
    Path(&'a [String]),
    /// A network interface: its device, and the PCI functions of its path.
    Interface(&'a str),
    /// The CPUs a benchmark measures on (bench latency's threads).
    Cpus(&'a [u32]),
}

/// The bytes the benchmark moved, which side samplers set their counts against: `rx` the
/// device wrote to memory (a disk read, received packets), `tx` it read (a disk write, sent
/// packets); `busy_s`, the seconds the workload ran when it paused between runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Moved {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub busy_s: Option<f64>,
}

/// What the side samplers found, for the benchmark's document.
#[derive(Debug, Default)]
pub struct SideResults {
    /// The interrupts of the path's devices and its root port's PMU ([`Beside`]).
    pub counters: Option<report::kinds::count::BesideCounters>,
    /// What arrived on the measured CPUs ([`InterruptsOnCpus`]).
    pub cpu_interrupts: Option<MeasuredInterrupts>,
    /// The AER errors and link changes of the path's PCI functions ([`LinkWatch`]).
    pub links: Option<PathWatch>,
}

impl SideResults {
    /// What the document keeps of the path's samplers under `counters`: the interrupts and
    /// the PMU's bytes, with the links' watch beside them.
    pub fn beside_counters(self) -> Option<BesideCounters> {
        let mut counters = match (self.counters, &self.links) {
            (None, None) => return None,
            (c, _) => c.unwrap_or_default(),
        };
        counters.links = self.links;
        Some(counters)
    }
}

/// A sampler running beside an engine.
pub trait SideSampler: Send {
    /// Stop, and put what was sampled into `out`.
    fn stop(self: Box<Self>, moved: &Moved, out: &mut SideResults);
}

/// How a side sampler starts for a target (`None`: nothing to sample there).
pub type StartSide = fn(SysRoot, &Resolved<'_>, SideFlags) -> Option<Box<dyn SideSampler>>;

/// A target as the side samplers see it: the target, and the PCI functions of its path
/// (from the target towards the CPU; none for the CPUs or a virtual interface), resolved once
/// for them all.
pub struct Resolved<'a> {
    pub target: &'a SideTarget<'a>,
    pub pci: Vec<String>,
}

/// Every side sampler, started in this order beside every benchmark that names its target's
/// hardware; a new one is one entry here and a field of [`SideResults`].
pub const SIDE_SAMPLERS: &[StartSide] = &[start_counters, start_link_watch, start_cpu_interrupts];

/// The side samplers of one run.
pub struct Sides(Vec<Box<dyn SideSampler>>);

impl Sides {
    /// Start every registered sampler for `target`, as `flags` say (the driver's
    /// `Run::sides`).
    pub fn start(root: SysRoot, target: &SideTarget<'_>, flags: SideFlags) -> Sides {
        let resolved = Resolved {
            target,
            pci: match target {
                SideTarget::Path(pci) => pci.to_vec(),
                SideTarget::Interface(i) => interface_pci(&root, i),
                SideTarget::Cpus(_) => Vec::new(),
            },
        };
        Sides(
            SIDE_SAMPLERS
                .iter()
                .filter_map(|start| start(root.clone(), &resolved, flags))
                .collect(),
        )
    }

    /// Stop them all and gather what they sampled.
    pub fn stop(self, moved: &Moved) -> SideResults {
        let mut out = SideResults::default();
        for s in self.0 {
            s.stop(moved, &mut out);
        }
        out
    }
}

/// The counters sampler's registration: the interrupts and the root port's PMU of the
/// target's path, or of a network interface's device.
fn start_counters(
    root: SysRoot,
    target: &Resolved<'_>,
    _flags: SideFlags,
) -> Option<Box<dyn SideSampler>> {
    Some(Box::new(match target.target {
        SideTarget::Path(_) => Beside::start(root, &target.pci),
        SideTarget::Interface(i) => Beside::for_interface(root, i, &target.pci),
        SideTarget::Cpus(_) => return None,
    }))
}

/// The AER errors and link changes of the PCI functions on a target's path while the engine
/// runs: `probe::watch` samples them each second, and the bytes the benchmark moved are set
/// against the errors (errors per GB) when it stops.
pub struct LinkWatch(probe::watch::Background);

/// The registration of [`LinkWatch`]: the PCI functions of the target's path, or of a
/// network interface's device; not with `--no-watch`, nor for a path with no PCI function.
fn start_link_watch(
    root: SysRoot,
    target: &Resolved<'_>,
    flags: SideFlags,
) -> Option<Box<dyn SideSampler>> {
    if !flags.watch_links {
        return None;
    }
    let pci: Vec<_> = target.pci.iter().filter_map(|a| a.parse().ok()).collect();
    if pci.is_empty() {
        return None;
    }
    probe::watch::Background::start(&root, &pci, LINK_WATCH_MS)
        .map(|b| Box::new(LinkWatch(b)) as Box<dyn SideSampler>)
}

impl SideSampler for LinkWatch {
    fn stop(self: Box<Self>, moved: &Moved, out: &mut SideResults) {
        // The device wrote what was read from a disk or received (Rx) and read what was
        // written or sent (Tx).
        out.links = self
            .0
            .finish()
            .map(|w| PathWatch::new(w.result(), moved.rx_bytes, moved.tx_bytes));
    }
}

/// The PCI functions of network interface `iface`'s path, from its device towards the CPU
/// (none for a virtual interface).
fn interface_pci(root: &SysRoot, iface: &str) -> Vec<String> {
    probe::path::resolve(
        root,
        std::path::Path::new(iface),
        &probe::pci::audit_sysfs(root),
    )
    .map(|p| p.chain.pci_addresses())
    .unwrap_or_default()
}

/// /proc/interrupts when the measurement starts and when it stops: what arrived on the
/// measured CPUs while the threads measured, each line that fired named, the disks' among
/// them marked.
pub struct InterruptsOnCpus {
    root: SysRoot,
    sampler: counters::InterruptsSampler,
    before: Option<counters::Stamped<Vec<IrqLine>>>,
    cpus: Vec<u32>,
}

/// The registration of [`InterruptsOnCpus`], for the CPUs a benchmark measures on.
fn start_cpu_interrupts(
    root: SysRoot,
    target: &Resolved<'_>,
    _flags: SideFlags,
) -> Option<Box<dyn SideSampler>> {
    let SideTarget::Cpus(cpus) = target.target else {
        return None;
    };
    let sampler = counters::InterruptsSampler::new(root.clone());
    let before = sampler.snapshot().ok();
    Some(Box::new(InterruptsOnCpus {
        root,
        sampler,
        before,
        cpus: cpus.to_vec(),
    }))
}

impl SideSampler for InterruptsOnCpus {
    fn stop(self: Box<Self>, _moved: &Moved, out: &mut SideResults) {
        let after = self.sampler.snapshot().ok();
        let Some((before, after)) = self.before.as_ref().zip(after) else {
            return;
        };
        let delta = self.sampler.delta(before, &after);
        let elapsed_s = delta.elapsed.as_secs_f64();
        let mut m = MeasuredInterrupts::new(&self.cpus, elapsed_s, |cpu| delta.on_cpu(cpu));
        // Only a line that fired is named (the disks are looked up for it).
        if m.cpus.iter().any(|c| c.count > 0) {
            m.mark_block_devices(&counters::interrupts::storage_irqs(
                &self.root,
                &probe::block::disk_hardware(&self.root),
            ));
        }
        out.cpu_interrupts = Some(m);
    }
}

impl SideSampler for Beside {
    fn stop(self: Box<Self>, moved: &Moved, out: &mut SideResults) {
        out.counters = Some(self.finish(moved.rx_bytes, moved.tx_bytes, moved.busy_s));
    }
}

/// Samplers started before an engine runs; [`Beside::finish`] stops them.
pub struct Beside {
    irq_sampler: counters::InterruptsSampler,
    irq_before: Option<counters::Stamped<Vec<IrqLine>>>,
    devices: Vec<(String, Vec<u32>)>,
    pmu: Option<PayloadCounters>,
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

    /// Start sampling for network interface `iface`, whose path has the PCI functions `pci`:
    /// its device's interrupt lines (MSI/MSI-X and the lines named after it), those of the
    /// other PCI functions on its path, and the root port's PMU of that path.
    pub fn for_interface(root: SysRoot, iface: &str, pci: &[String]) -> Beside {
        let (devices, notes) = counters::interrupts::interface_devices(&root, iface, pci);
        Self::start_with(root, pci, devices, notes)
    }

    fn start_with(
        root: SysRoot,
        pci: &[String],
        devices: Vec<(String, Vec<u32>)>,
        mut notes: Vec<String>,
    ) -> Beside {
        let pmu = Self::open_pmu(&root, pci, &mut notes);
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

    /// The links of a benchmark's path are watched by a side sampler of its own: started for
    /// the path's PCI functions, its errors set against the bytes moved, kept under the
    /// document's counters; `--no-watch` leaves it out, and a target without PCI functions
    /// (the CPUs bench latency measures on) has none.
    #[test]
    fn the_links_of_a_path_are_watched_unless_no_watch_is_given() {
        let tree = testsupport::fixtures::own("sysfs/qemu-q35-lab");
        let root = SysRoot::new(&tree);
        let pci = ["0000:05:00.0".to_string(), "0000:00:12.0".to_string()];
        let moved = Moved {
            rx_bytes: 2_000_000_000,
            tx_bytes: 0,
            busy_s: None,
        };
        let path = SideTarget::Path(&pci);
        let on = Sides::start(root.clone(), &path, SideArgs::default().flags()).stop(&moved);
        let links = on.links.clone().unwrap();
        let mut watched: Vec<&str> = links.devices.iter().map(|d| d.device.as_str()).collect();
        watched.sort_unstable();
        assert_eq!(watched, ["0000:00:12.0", "0000:05:00.0"]);
        assert!(links.samples >= 2, "{links:?}");
        assert_eq!((links.read_bytes, links.write_bytes), (2_000_000_000, 0));
        assert_eq!(links.errors_per_gb(), Some(0.0));
        assert_eq!(on.beside_counters().unwrap().links, Some(links));
        let off = SideArgs { no_watch: true }.flags();
        let off = Sides::start(root.clone(), &path, off).stop(&moved);
        assert!(off.links.is_none());
        assert!(off.beside_counters().unwrap().links.is_none());
        let cpus = Sides::start(root, &SideTarget::Cpus(&[0]), SideFlags::default());
        assert!(cpus.stop(&moved).links.is_none());
    }

    #[test]
    fn this_vms_virtio_nic_has_lines_and_no_root_port() {
        // Live: eth0 of this VM is virtio on a root-bus function, so its lines are found and
        // no PMU can count it; `lo` has no device. Elsewhere only what exists is checked.
        let root = SysRoot::system();
        let lo = Beside::for_interface(root.clone(), "lo", &[]).finish(0, 0, None);
        assert!(lo.interrupts.is_empty());
        assert_eq!(
            lo.notes,
            vec!["lo has no device (a loopback or virtual interface): it has no device interrupts"]
        );
        let Ok(dev) = std::fs::canonicalize("/sys/class/net/eth0/device") else {
            testsupport::skip::skip("the eth0 part needs an eth0 with a device");
            return;
        };
        let b = Beside::for_interface(root.clone(), "eth0", &interface_pci(&root, "eth0"))
            .finish(0, 0, None);
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
