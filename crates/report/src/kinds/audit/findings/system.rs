//! The audit's findings on the CPU and kernel context.

use model::{Finding, Severity};

/// A frequency governor that scales makes every benchmark's small-block and latency numbers
/// depend on the load. `scaling_cpus`: the CPUs whose governor scales, each as
/// `CPU 0 (schedutil)` (`model::system::SystemContext::scaling_cpus`).
pub fn cpufreq(scaling_cpus: &[String]) -> Vec<Finding> {
    if scaling_cpus.is_empty() {
        return Vec::new();
    }
    vec![Finding::new(
        Severity::Warning,
        "cpufreq",
        format!(
            "the CPU frequency governor is not `performance` on {}: the clock follows the \
             load, so small-block I/O and latency results vary from run to run",
            scaling_cpus.join(", ")
        ),
    )
    .with_advice(
        "for benchmarks, write `performance` to /sys/devices/system/cpu/cpufreq/policy*/\
         scaling_governor (the Rockchip PCIe guide also fixes the CPU and DDR clocks)",
    )]
}

/// A DDR controller whose devfreq governor scales (`dmc_ondemand`, `simple_ondemand`) changes
/// the memory clock with the load, and every transfer to or from memory (DMA of a disk, a NIC,
/// a PCIe device) with it: the Rockchip PCIe guide's first tuning step fixes the CPU and the
/// DDR at their highest frequency. `scaling_memory`: the memory controllers whose governor
/// scales, each as `dmc (dmc_ondemand)` (`model::system::SystemContext::scaling_memory`).
pub fn devfreq(scaling_memory: &[String]) -> Vec<Finding> {
    if scaling_memory.is_empty() {
        return Vec::new();
    }
    vec![Finding::new(
        Severity::Warning,
        "devfreq",
        format!(
            "the DDR frequency scales on {}: the memory clock follows the load, so DMA \
             throughput and latency results vary from run to run",
            scaling_memory.join(", ")
        ),
    )
    .with_advice(DDR_ADVICE)]
}

/// What fixes the DDR clock for a benchmark (devfreq's `performance` governor holds the
/// highest frequency: Documentation/ABI/testing/sysfs-class-devfreq, drivers/devfreq/
/// governor_performance.c).
pub const DDR_ADVICE: &str = "for benchmarks, write `performance` to \
                              /sys/class/devfreq/dmc/governor (the Rockchip PCIe guide fixes \
                              the CPU and the DDR at their highest frequency first)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_scaling_governor_is_a_finding() {
        assert!(cpufreq(&[]).is_empty());
        let f = cpufreq(&["CPU 0 (schedutil)".into(), "CPU 1 (ondemand)".into()]);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].severity, f[0].subject.as_str()),
            (Severity::Warning, "cpufreq")
        );
        assert!(f[0]
            .message
            .contains("not `performance` on CPU 0 (schedutil), CPU 1 (ondemand):"));
        assert!(f[0]
            .advice
            .as_deref()
            .unwrap_or("")
            .contains("scaling_governor"));
    }
}
