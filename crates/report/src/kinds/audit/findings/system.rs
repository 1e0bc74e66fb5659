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
