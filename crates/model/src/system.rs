//! The CPU and kernel context a latency (or any CPU-bound) number depends on: kernel
//! version and preemption model, the isolation options of the kernel command line, CPUs
//! online, cpufreq governors and frequencies, SMT, load average, and which device interrupts
//! land on which CPU. `probe::system` reads it; report judges and renders it.

use crate::procfs::{IrqLine, LoadAverage};
use serde::{Deserialize, Serialize};

/// The machine a document was made on: the envelope's `host` of every document. probe reads
/// it (`probe::system::host`); report writes and reads it, and never reads /proc itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel: Option<String>,
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
            Preemption::Unknown => "unknown".into(),
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

impl SystemContext {
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
