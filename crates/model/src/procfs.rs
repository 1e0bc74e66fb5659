//! Pure types and parsers of the kernel's `/proc` text formats that both discovery (probe:
//! where a device's interrupts are delivered) and the samplers (counters: how many arrived
//! during a run) read. Parsing is pure (text in, values out), so it lives here, once, where
//! both layers can use it; reading the files is theirs. The kernel's CPU-list format
//! (`0-3,8`, also in sysfs `cpumask`/`cpus` files) is here for the same reason.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `/proc/loadavg`: `0.45 0.35 0.16 1/85 9142`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LoadAverage {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    pub runnable: u32,
    pub tasks: u32,
}

/// One numbered line of `/proc/interrupts` with where the kernel delivers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct IrqLine {
    pub irq: u32,
    /// Count per CPU column, in the header's CPU order.
    pub counts: BTreeMap<u32, u64>,
    /// The controller and trigger words, e.g. `PCI-MSIX-0000:00:02.0 1-edge`.
    pub chip: String,
    /// The device action name(s), e.g. `virtio1-req.0`.
    pub name: String,
    /// `/proc/irq/N/effective_affinity_list` (where it is delivered now), when readable.
    pub effective_affinity: Option<Vec<u32>>,
}

impl IrqLine {
    /// Whether this is a per-CPU interrupt (each CPU has its own: the ARM architected timer,
    /// the PMU) rather than a device routed somewhere. On a GIC, hwirqs 16-31 are the PPIs
    /// (Private Peripheral Interrupts) and 0-15 the SGIs (ARM GIC architecture
    /// specification, IHI 0069, "INTID ranges"); `/proc/interrupts` prints the hwirq after
    /// the chip name.
    pub fn is_per_cpu(&self) -> bool {
        let mut words = self.chip.split_whitespace();
        let gic = words.next().is_some_and(|c| c.starts_with("GIC"));
        let hwirq = words.next().and_then(|w| w.parse::<u32>().ok());
        gic && hwirq.is_some_and(|h| h < 32)
    }

    /// Whether this interrupt is delivered to `cpu`: by its effective affinity when the
    /// kernel exposes it, otherwise by a non-zero count in that CPU's column.
    pub fn lands_on(&self, cpu: u32) -> bool {
        match &self.effective_affinity {
            Some(list) => list.contains(&cpu),
            None => self.counts.get(&cpu).is_some_and(|&n| n > 0),
        }
    }
}

/// Parse `/proc/loadavg` (proc(5)).
pub fn parse_loadavg(s: &str) -> Option<LoadAverage> {
    let mut it = s.split_whitespace();
    let one = it.next()?.parse().ok()?;
    let five = it.next()?.parse().ok()?;
    let fifteen = it.next()?.parse().ok()?;
    let (runnable, tasks) = it.next()?.split_once('/')?;
    Some(LoadAverage {
        one,
        five,
        fifteen,
        runnable: runnable.parse().ok()?,
        tasks: tasks.parse().ok()?,
    })
}

/// Parse the numbered lines of `/proc/interrupts` (filesystems/proc.rst, "interrupts"):
/// a header of `CPUn` columns, then `IRQ: count... chip... name`.
pub fn parse_interrupts(text: &str) -> Vec<IrqLine> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cpus: Vec<u32> = header
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut out = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = label.trim().parse::<u32>() else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let mut counts = BTreeMap::new();
        for &cpu in &cpus {
            match words.clone().next().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.insert(cpu, n);
                    words.next();
                }
                None => break,
            }
        }
        let tail: Vec<&str> = words.collect();
        // The chip and its hwirq/trigger come first; the last word(s) are the action names.
        // Names may be joined by ", " when an IRQ is shared.
        let (chip, name) = match tail.len() {
            0 => (String::new(), String::new()),
            1 => (String::new(), tail[0].to_string()),
            n => {
                let name_start = tail
                    .iter()
                    .position(|w| w.ends_with(','))
                    .unwrap_or(n - 1)
                    .min(n - 1);
                (tail[..name_start].join(" "), tail[name_start..].join(" "))
            }
        };
        out.push(IrqLine {
            irq,
            counts,
            chip,
            name,
            effective_affinity: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_line() {
        let l = parse_loadavg("9.36 9.67 9.84 8/1152 3678\n").unwrap();
        assert_eq!((l.one, l.runnable, l.tasks), (9.36, 8, 1152));
        assert_eq!(parse_loadavg("garbage"), None);
    }

    #[test]
    fn interrupts_lines() {
        // Captured on this project's build VM (kernel 6.18), shortened.
        let text = "           CPU0       CPU1\n  4:          0          0   IO-APIC   4-edge      ttyS0\n 36:          0      34453   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\nNMI:          0          0   Non-maskable interrupts\nLOC:     969384    1016329   Local timer interrupts\n";
        let l = parse_interrupts(text);
        assert_eq!(l.len(), 2, "only numbered lines");
        assert_eq!(l[1].irq, 36);
        assert_eq!(l[1].counts.get(&1), Some(&34453));
        assert_eq!(l[1].chip, "PCI-MSIX-0000:00:02.0 1-edge");
        assert_eq!(l[1].name, "virtio1-req.0");
        assert!(!l[1].is_per_cpu());
    }
}
