//! The CPU and kernel context a latency (or any CPU-bound) number depends on: kernel
//! version and preemption model, the isolation options of the kernel command line, CPUs
//! online, cpufreq governors and frequencies, SMT, load average, and which device interrupts
//! land on which CPU. `probe::system` reads it; report judges and renders it.

use crate::procfs::{IrqLine, LoadAverage};
use serde::{Deserialize, Serialize};

/// The machine a document was made on: the envelope's `host` of every document. probe reads
/// it (`probe::system::host`); report writes and reads it, and never reads /proc itself.
/// Results from many hosts stay apart by it (fio #515 asks which host produced a result): the
/// hostname is often the same on every board of a lab (`raspberrypi`, `localhost`), the
/// machine-id and serial are not. Every field but the first two came in schema 2's documents
/// of 2026-11-28 and reads as absent from older ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel: Option<String>,
    /// systemd's machine-id (machine-id(5): 32 lowercase hex digits, `/etc/machine-id`, or
    /// D-Bus' `/var/lib/dbus/machine-id` where systemd is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// What the firmware calls the machine: the device tree's root `model` (`Raspberry Pi 5
    /// Model B Rev 1.0`), else DMI's `sys_vendor` and `product_name` (`QEMU Standard PC (Q35 +
    /// ICH9, 2009)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// DMI's `board_vendor` and `board_name` (the mainboard, where `model` is the system).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    /// The device tree's root `compatible` list, most specific first (`raspberrypi,5-model-b`,
    /// `brcm,bcm2712`): what KernelCI and LAVA name a board by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compatible: Vec<String>,
    /// The device tree's `serial-number`, else DMI's `product_serial` (readable by root only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// The longest text kept of a firmware string (model, board, serial, one `compatible` entry):
/// DMI strings are at most 255 bytes (SMBIOS 3.x, 6.1.3), device-tree properties are not
/// bounded at all.
pub const HOST_TEXT_MAX: usize = 256;

/// The most `compatible` entries kept (device trees list two to four).
pub const COMPATIBLE_MAX: usize = 16;

/// A firmware or configuration string made safe to print and to carry in a document: cut at
/// the first NUL (device-tree strings are NUL-terminated), control characters dropped,
/// surrounding whitespace trimmed, at most [`HOST_TEXT_MAX`] bytes (cut on a character
/// boundary); `None` when nothing is left. The bytes come from files that a captured tree
/// (`--root`) or a compromised firmware fills as it likes.
pub fn host_text(raw: &[u8]) -> Option<String> {
    let until_nul = raw.split(|&b| b == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(until_nul);
    let mut out = String::new();
    for c in text.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > HOST_TEXT_MAX {
            break;
        }
        out.push(c);
    }
    let out = out.trim();
    (!out.is_empty()).then(|| out.to_string())
}

/// A device tree's `compatible` property (NUL-separated strings) as a list, each entry made
/// safe by [`host_text`], at most [`COMPATIBLE_MAX`] of them.
pub fn compatible_list(raw: &[u8]) -> Vec<String> {
    raw.split(|&b| b == 0)
        .filter_map(host_text)
        .take(COMPATIBLE_MAX)
        .collect()
}

/// A machine-id as machine-id(5) writes it: 32 hexadecimal digits (lowercased); `None` for
/// anything else (`uninitialized`, an empty file, a file of another format).
pub fn machine_id(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?.trim();
    (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| text.to_ascii_lowercase())
}

impl Host {
    /// What tells this host from others, most specific first: the machine-id, else the
    /// serial, else the hostname; `None` when the document says none of them.
    pub fn identity(&self) -> Option<String> {
        if let Some(m) = &self.machine_id {
            Some(format!("machine-id {m}"))
        } else if let Some(s) = &self.serial {
            Some(format!("serial {s}"))
        } else {
            self.hostname.as_ref().map(|h| format!("hostname {h}"))
        }
    }

    /// The host in one line, as reports show it: `rpi5 (Raspberry Pi 5 Model B Rev 1.0,
    /// serial 6a7f1c2e, machine-id 5be0...)`; what the document lacks is left out. The
    /// machine-id is shortened to 12 digits, as `git` shortens a commit: enough to tell a lab's
    /// boards apart, and the whole one is in the document.
    pub fn describe(&self) -> Option<String> {
        let mut extra = Vec::new();
        if let Some(m) = &self.model {
            extra.push(m.clone());
        }
        if let Some(b) = &self.board {
            if self.model.as_deref() != Some(b.as_str()) {
                extra.push(format!("board {b}"));
            }
        }
        if let Some(s) = &self.serial {
            extra.push(format!("serial {s}"));
        }
        if let Some(m) = &self.machine_id {
            extra.push(format!(
                "machine-id {}",
                m.chars().take(12).collect::<String>()
            ));
        }
        let name = self.hostname.clone();
        match (name, extra.is_empty()) {
            (None, true) => None,
            (Some(n), true) => Some(n),
            (None, false) => Some(extra.join(", ")),
            (Some(n), false) => Some(format!("{n} ({})", extra.join(", "))),
        }
    }
}

/// Everything this module knows about the CPUs and the kernel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SystemContext {
    pub kernel: Kernel,
    pub cmdline: Option<Cmdline>,
    /// `/sys/devices/system/cpu/online`.
    pub cpus_online: Option<Vec<u32>>,
    /// One entry per online CPU that has a cpufreq policy; empty when cpufreq is absent
    /// (virtual machines, kernels without CONFIG_CPU_FREQ).
    pub cpufreq: Vec<CpuFreq>,
    /// The devices whose clock the kernel's devfreq framework scales (`/sys/class/devfreq`):
    /// the DDR controller of an SoC, its GPU, its NPU; empty where there are none (virtual
    /// machines, most PCs) and in documents written before they were recorded; not written
    /// when empty, so those documents read back as they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devfreq: Vec<DevFreq>,
    /// `/sys/devices/system/cpu/smt/active` (absent on kernels before 4.19 and some arches).
    pub smt_active: Option<bool>,
    pub load_average: Option<LoadAverage>,
    /// Device interrupt lines of `/proc/interrupts` (numbered lines only; LOC, RES, ... are
    /// per-CPU by nature and say nothing about where a device was routed).
    pub irqs: Option<Vec<IrqLine>>,
    /// Attributes that exist but could not be read, with the reason.
    pub unreadable: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Kernel {
    /// `/proc/sys/kernel/osrelease`, e.g. `5.10.160-rt89`.
    pub release: Option<String>,
    /// `/proc/version`.
    pub version: Option<String>,
    pub preemption: Preemption,
}

/// The kernel's preemption model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Preemption {
    /// PREEMPT_RT (`/sys/kernel/realtime` is 1, or `PREEMPT_RT` in `/proc/version`).
    Rt,
    /// CONFIG_PREEMPT_DYNAMIC; `mode` is the one selected now (`none`, `voluntary`, `full`,
    /// `lazy`) when `/sys/kernel/debug/sched/preempt` is readable (root, debugfs mounted).
    Dynamic { mode: Option<String> },
    /// CONFIG_PREEMPT (low-latency desktop), `PREEMPT` in `/proc/version`.
    Full,
    /// CONFIG_PREEMPT_LAZY without dynamic switching.
    Lazy,
    /// No PREEMPT word in `/proc/version`: CONFIG_PREEMPT_NONE or _VOLUNTARY (server).
    NoneOrVoluntary,
    /// `/proc/version` unreadable.
    Unknown,
}

impl Preemption {
    /// Whether the kernel is a real-time (PREEMPT_RT) kernel.
    pub fn is_realtime(&self) -> bool {
        matches!(self, Preemption::Rt)
    }

    /// The model as the document names it: `rt`, `dynamic`, `full`, `lazy`,
    /// `none_or_voluntary`, `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Preemption::Rt => "rt",
            Preemption::Dynamic { .. } => "dynamic",
            Preemption::Full => "full",
            Preemption::Lazy => "lazy",
            Preemption::NoneOrVoluntary => "none_or_voluntary",
            Preemption::Unknown => "unknown",
        }
    }

    /// A short human name, e.g. `PREEMPT_DYNAMIC (full)`.
    pub fn describe(&self) -> String {
        match self {
            Preemption::Rt => "PREEMPT_RT".into(),
            Preemption::Dynamic { mode: Some(m) } => format!("PREEMPT_DYNAMIC ({m})"),
            Preemption::Dynamic { mode: None } => "PREEMPT_DYNAMIC (mode not readable)".into(),
            Preemption::Full => "PREEMPT".into(),
            Preemption::Lazy => "PREEMPT_LAZY".into(),
            Preemption::NoneOrVoluntary => "no forced preemption (NONE or VOLUNTARY)".into(),
            Preemption::Unknown => "preemption model unknown".into(),
        }
    }
}

/// The kernel command line with the CPU isolation options parsed
/// (Documentation/admin-guide/kernel-parameters.txt).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cmdline {
    pub raw: String,
    /// `isolcpus=[flags,]list`: CPUs removed from the scheduler's balancing.
    pub isolcpus: Option<Vec<u32>>,
    /// The flags of `isolcpus=` (`nohz`, `domain`, `managed_irq`).
    pub isolcpus_flags: Vec<String>,
    /// `nohz_full=list`: CPUs without the periodic tick while running one task.
    pub nohz_full: Option<Vec<u32>>,
    /// `rcu_nocbs=list`: CPUs whose RCU callbacks run elsewhere.
    pub rcu_nocbs: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CpuFreq {
    pub cpu: u32,
    pub governor: Option<String>,
    pub cur_khz: Option<u64>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
}

impl CpuFreq {
    /// Whether the frequency can move during a run: a governor other than `performance`
    /// (or `userspace`, which holds what it is told) with a min below the max.
    pub fn scales(&self) -> bool {
        let fixed_governor = matches!(self.governor.as_deref(), Some("performance" | "userspace"));
        let range = match (self.min_khz, self.max_khz) {
            (Some(lo), Some(hi)) => lo < hi,
            _ => true,
        };
        !fixed_governor && range && self.governor.is_some()
    }
}

/// One devfreq device, `/sys/class/devfreq/NAME` (Documentation/ABI/testing/
/// sysfs-class-devfreq): its governor and frequencies, in Hz as the kernel writes them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DevFreq {
    /// The directory's name: `dmc` (Rockchip's DDR controller), `fb000000.gpu`, ...
    pub name: String,
    pub governor: Option<String>,
    pub cur_hz: Option<u64>,
    pub min_hz: Option<u64>,
    pub max_hz: Option<u64>,
    /// `available_frequencies`, as listed.
    #[serde(default)]
    pub available_hz: Vec<u64>,
}

impl DevFreq {
    /// Whether it clocks the memory: a DDR (dynamic) memory controller, `dmc` on Rockchip,
    /// Samsung Exynos and MediaTek kernels (`dmc`, `ff610000.dmc`, `memory-controller`).
    pub fn is_memory(&self) -> bool {
        let n = self.name.to_ascii_lowercase();
        n == "dmc"
            || n.ends_with(".dmc")
            || n.contains("ddr")
            || n.contains("memory-controller")
            || self
                .governor
                .as_deref()
                .is_some_and(|g| g.starts_with("dmc"))
    }

    /// Whether the frequency can move during a run: a governor other than `performance`,
    /// `powersave` (the highest and the lowest frequency) or `userspace` (what it is told),
    /// with a minimum below the maximum.
    pub fn scales(&self) -> bool {
        let fixed = matches!(
            self.governor.as_deref(),
            Some("performance" | "powersave" | "userspace")
        );
        let range = match (self.min_hz, self.max_hz) {
            (Some(lo), Some(hi)) => lo < hi,
            _ => true,
        };
        !fixed && range && self.governor.is_some()
    }

    /// `dmc (dmc_ondemand)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({})",
            self.name,
            self.governor.as_deref().unwrap_or("?")
        )
    }
}

impl SystemContext {
    /// The memory controllers whose frequency can move during a run, as `dmc (dmc_ondemand)`.
    pub fn scaling_memory(&self) -> Vec<String> {
        self.devfreq
            .iter()
            .filter(|d| d.is_memory() && d.scales())
            .map(DevFreq::describe)
            .collect()
    }

    /// The CPUs (of `among`, or all of them) whose frequency can move during a run, as
    /// `CPU 0 (schedutil)`.
    pub fn scaling_cpus(&self, among: Option<&[u32]>) -> Vec<String> {
        self.cpufreq
            .iter()
            .filter(|f| among.is_none_or(|c| c.contains(&f.cpu)) && f.scales())
            .map(|f| format!("CPU {} ({})", f.cpu, f.governor.as_deref().unwrap_or("?")))
            .collect()
    }

    /// The device interrupts delivered to `cpu` (empty when `/proc/interrupts` is absent);
    /// per-CPU interrupts such as the local timer are not device interrupts and not listed.
    pub fn irqs_on_cpu(&self, cpu: u32) -> Vec<&IrqLine> {
        self.irqs
            .iter()
            .flatten()
            .filter(|l| !l.is_per_cpu() && l.lands_on(cpu))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firmware_strings_lose_nuls_control_characters_and_excess() {
        // The device tree's model ends in a NUL; what follows it is not the model.
        assert_eq!(
            host_text(b"Raspberry Pi 5 Model B Rev 1.0\0junk").as_deref(),
            Some("Raspberry Pi 5 Model B Rev 1.0")
        );
        // An escape sequence would repaint a terminal: its ESC goes, the rest is plain text.
        assert_eq!(
            host_text(b"evil\x1b[2J\x07board\n").as_deref(),
            Some("evil[2Jboard")
        );
        assert_eq!(host_text(b"  \n\0"), None);
        let long = vec![b'a'; 100_000];
        assert_eq!(host_text(&long).map(|s| s.len()), Some(HOST_TEXT_MAX));
        // Cut on a character boundary, never inside one.
        let wide = "é".repeat(200);
        let cut = host_text(wide.as_bytes()).unwrap();
        assert!(cut.len() <= HOST_TEXT_MAX && cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn compatible_is_a_bounded_list_of_the_nul_separated_strings() {
        assert_eq!(
            compatible_list(b"raspberrypi,5-model-b\0brcm,bcm2712\0"),
            ["raspberrypi,5-model-b", "brcm,bcm2712"]
        );
        let many = b"a,b\0".repeat(1000);
        assert_eq!(compatible_list(&many).len(), COMPATIBLE_MAX);
    }

    #[test]
    fn machine_id_is_32_hex_digits_or_nothing() {
        assert_eq!(
            machine_id(b"5BE0D5C1A77F4E0C9D3B2A61F08E4C27\n").as_deref(),
            Some("5be0d5c1a77f4e0c9d3b2a61f08e4c27")
        );
        assert_eq!(machine_id(b"uninitialized\n"), None);
        assert_eq!(machine_id(b""), None);
        assert_eq!(machine_id(b"5be0d5c1a77f4e0c9d3b2a61f08e4c2z"), None);
    }

    #[test]
    fn a_host_is_told_by_its_machine_id_then_serial_then_name() {
        let mut h = Host {
            hostname: Some("raspberrypi".into()),
            ..Host::default()
        };
        assert_eq!(h.identity().as_deref(), Some("hostname raspberrypi"));
        assert_eq!(h.describe().as_deref(), Some("raspberrypi"));
        h.serial = Some("6a7f1c2e".into());
        assert_eq!(h.identity().as_deref(), Some("serial 6a7f1c2e"));
        h.machine_id = Some("5be0d5c1a77f4e0c9d3b2a61f08e4c27".into());
        h.model = Some("Raspberry Pi 5 Model B Rev 1.0".into());
        assert_eq!(
            h.identity().as_deref(),
            Some("machine-id 5be0d5c1a77f4e0c9d3b2a61f08e4c27")
        );
        assert_eq!(
            h.describe().as_deref(),
            Some(
                "raspberrypi (Raspberry Pi 5 Model B Rev 1.0, serial 6a7f1c2e, machine-id \
                 5be0d5c1a77f)"
            )
        );
        assert_eq!(Host::default().describe(), None);
    }

    #[test]
    fn documents_without_the_new_fields_still_read() {
        let old: Host = serde_json::from_str(r#"{"hostname":"rpi5","kernel":"6.6"}"#).unwrap();
        assert_eq!(old.hostname.as_deref(), Some("rpi5"));
        assert_eq!(old.machine_id, None);
        assert!(old.compatible.is_empty());
        // And a host without them writes the same JSON as before.
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"{"hostname":"rpi5","kernel":"6.6"}"#
        );
    }
}
