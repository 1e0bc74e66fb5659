//! The kernel's timerlat tracer (Documentation/trace/timerlat-tracer.rst,
//! CONFIG_TIMERLAT_TRACER, Linux 5.14+): where the kernel has it, `bench latency --engine
//! timerlat` lets it measure and reads its IRQ and thread latencies.

use crate::{ReadUnder, SysRoot};

/// Whether this kernel can run the timerlat tracer; the sentence saying what is missing
/// otherwise.
pub fn available(root: &SysRoot) -> Result<(), String> {
    let mut mounted = None;
    for base in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if root.path(base).join("available_tracers").exists() {
            mounted = Some(base);
            break;
        }
    }
    let Some(base) = mounted else {
        return Err(
            "tracefs is not mounted (no /sys/kernel/tracing/available_tracers): mount it \
             (`mount -t tracefs nodev /sys/kernel/tracing`)"
                .to_string(),
        );
    };
    let tracers = root
        .read(&format!("{base}/available_tracers"))
        .map_err(|e| e.to_string())?;
    if tracers.split_whitespace().any(|t| t == "timerlat") {
        Ok(())
    } else {
        Err(format!(
            "this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER, Linux 5.14 and later; \
             {base}/available_tracers lists: {})",
            tracers.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }
}
