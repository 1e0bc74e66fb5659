//! The kernel's timerlat tracer (Documentation/trace/timerlat-tracer.rst,
//! CONFIG_TIMERLAT_TRACER, Linux 5.14+): where the kernel has it, `bench latency --engine
//! timerlat` lets it measure and reads its IRQ and thread latencies
//! ([`model::latency::timerlat`]).
//!
//! The tracer runs in a tracefs instance of headroom's own ([`crate::trace::Instance`]);
//! its CPUs and period are the global `osnoise/cpus` and `osnoise/timerlat_period_us`, which
//! are written for the run and put back as they were when it ends, by the instance's reaper
//! ([`crate::reaper`]) when the run is killed. Its samples are read from the instance's
//! `trace_pipe`, one line each.

use crate::trace::{Instance, TraceError};
use crate::{ReadUnder, SysRoot};
use model::latency::split::Split;
use model::latency::timerlat::{Aggregator, Context, Sample};
use model::latency::{Config, Measurement, Privileges, Step, StopReason};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The tracefs mount of `root` that has `available_tracers`.
fn tracefs(root: &SysRoot) -> Option<(&'static str, PathBuf)> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(|b| (b, root.path(b)))
        .find(|(_, p)| p.join("available_tracers").exists())
}

/// Whether this kernel can run the timerlat tracer; the sentence saying what is missing
/// otherwise.
pub fn available(root: &SysRoot) -> Result<(), String> {
    let Some((base, _)) = tracefs(root) else {
        return Err(
            "tracefs is not mounted, or not readable (no /sys/kernel/tracing/available_tracers): \
             mount it (`mount -t tracefs nodev /sys/kernel/tracing`) and run as root"
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

/// One line of the tracer's output: `<idle>-0 [000] d.h1 54.029328: #1 context irq
/// timer_latency 932 ns` (the tracer's print format, kernel/trace/trace_output.c:
/// `#%-5u context %6s timer_latency %9llu ns`); `None` for any other line (headers, other
/// events).
pub fn parse_line(line: &str) -> Option<Sample> {
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let cpu = line[open + 1..close].trim().parse().ok()?;
    let task = line[..open].trim();
    let pid = task.rsplit('-').next()?.parse().ok()?;
    let mut words = line[close + 1..].split_whitespace();
    let mut at_ns = None;
    let mut seq = None;
    for w in words.by_ref() {
        if let Some(ts) = w.strip_suffix(':') {
            at_ns = seconds_to_ns(ts);
        } else if let Some(n) = w.strip_prefix('#') {
            seq = n.parse().ok();
            break;
        }
    }
    if words.next()? != "context" {
        return None;
    }
    let context = match words.next()? {
        "irq" => Context::Irq,
        "thread" => Context::Thread,
        "user-ret" => Context::UserRet,
        _ => return None,
    };
    if words.next()? != "timer_latency" {
        return None;
    }
    let latency_ns = words.next()?.parse().ok()?;
    if words.next()? != "ns" {
        return None;
    }
    Some(Sample {
        cpu,
        seq: seq?,
        context,
        latency_ns,
        at_ns: at_ns?,
        pid,
    })
}

/// `54.029328` (seconds, six or nine decimals) as ns.
fn seconds_to_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    Some(secs * 1_000_000_000 + frac_ns)
}

/// The global osnoise settings changed for a run (`osnoise/cpus`,
/// `osnoise/timerlat_period_us`) and the instance the tracer runs in: the settings are put
/// back on drop, or by the instance's reaper when the process is killed.
pub struct OsnoiseSettings {
    instance: Instance,
    /// The settings as they were.
    saved: Vec<(PathBuf, String)>,
}

impl OsnoiseSettings {
    /// Create the tracer's instance and set the tracer's CPUs to `cpus` and its period to
    /// `period_us`. The settings are read before anything changes and handed to the
    /// instance's reaper before they are written.
    pub fn apply(root: &SysRoot, cpus: &[u32], period_us: u64) -> Result<OsnoiseSettings, String> {
        let (_, dir) = tracefs(root).ok_or("tracefs is not mounted")?;
        let settings = [
            ("osnoise/cpus", model::units::format_cpu_list(cpus)),
            ("osnoise/timerlat_period_us", period_us.to_string()),
        ];
        let mut saved = Vec::new();
        for (file, _) in &settings {
            let path = dir.join(file);
            let before = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            saved.push((path, before.trim_end().to_string()));
        }
        let instance =
            Instance::create(root, &dir, &saved).map_err(|e: TraceError| e.to_string())?;
        for (i, (file, value)) in settings.iter().enumerate() {
            let path = dir.join(file);
            if let Err(e) = std::fs::write(&path, value) {
                restore(&saved[..i]);
                return Err(format!("setting {} to {value}: {e}", path.display()));
            }
        }
        Ok(OsnoiseSettings { instance, saved })
    }

    /// The instance the tracer runs in.
    pub fn instance(&self) -> &Instance {
        &self.instance
    }
}

impl Drop for OsnoiseSettings {
    /// Put the settings back (before the instance, a field, is removed and its reaper let go).
    fn drop(&mut self) {
        restore(&self.saved);
    }
}

/// The tracer running for a run.
pub struct Timerlat {
    /// The instance's `trace_pipe`, non-blocking (before `settings`: it closes first).
    pipe: std::fs::File,
    settings: OsnoiseSettings,
    partial: String,
}

impl Timerlat {
    /// Start the tracer on `cpus` with a period of `period_us`.
    pub fn start(root: &SysRoot, cpus: &[u32], period_us: u64) -> Result<Timerlat, String> {
        available(root)?;
        // Dropped on an error below: the settings are put back and the instance removed.
        let settings = OsnoiseSettings::apply(root, cpus, period_us)?;
        let instance = settings.instance();
        instance.write("current_tracer", "timerlat").map_err(|e| {
            format!(
                "starting the timerlat tracer in a tracefs instance: {e} (timerlat runs in \
                 instances from Linux 5.16)"
            )
        })?;
        let path = instance.dir.join("trace_pipe");
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        instance
            .write("tracing_on", "1")
            .map_err(|e| format!("starting the trace: {e}"))?;
        Ok(Timerlat {
            pipe,
            settings,
            partial: String::new(),
        })
    }

    /// Move every complete line the tracer wrote since the last call into `out`.
    pub fn drain(&mut self, out: &mut Vec<Sample>) {
        let mut buf = [0u8; 64 << 10];
        // Bounded: each read takes what the pipe holds; 256 reads of 64 KiB.
        for _ in 0..256 {
            match self.pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.partial.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        let complete = self.partial.rfind('\n').map_or(0, |i| i + 1);
        out.extend(self.partial[..complete].lines().filter_map(parse_line));
        self.partial.drain(..complete);
    }

    /// The SCHED_FIFO priority of the tracer's thread `pid` (`/proc/PID/stat`, field 40).
    pub fn priority(root: &SysRoot, pid: i32) -> u8 {
        root.read(&format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 1..];
                rest.split_whitespace().nth(40 - 3)?.parse().ok()
            })
            .unwrap_or(0)
    }
}

fn restore(saved: &[(PathBuf, String)]) {
    for (path, value) in saved.iter().rev() {
        let _ = std::fs::write(path, value);
    }
}

impl Drop for Timerlat {
    /// Stop the tracer; then the settings are put back and the instance removed (its drop).
    fn drop(&mut self) {
        let _ = self.settings.instance.write("tracing_on", "0");
        let _ = self.settings.instance.write("current_tracer", "nop");
    }
}

/// Measure with the tracer on `cpus` at `config`'s period until its limits (its duration, or
/// its loop count with 10 s to spare) or until `stop` is set: the measurement (`dma`: whether
/// /dev/cpu_dma_latency was held, which the caller does) and the IRQ/thread split the tracer
/// gives by itself. Bounded: it wakes every 100 ms.
pub fn measure(
    root: &SysRoot,
    config: &Config,
    cpus: &[u32],
    stop: &AtomicBool,
    dma: Step,
) -> Result<(Measurement, Split), String> {
    let period_us = config.interval.as_micros() as u64;
    let mut tracer = Timerlat::start(root, cpus, period_us)?;
    let mut agg = Aggregator::new(config, cpus);
    let started = Instant::now();
    // Bounded: the duration, or the loop count at the period with 10 s to spare.
    let limit = config.limits.duration.unwrap_or_else(|| {
        config.interval * u32::try_from(config.limits.loops.unwrap_or(1)).unwrap_or(u32::MAX)
            + Duration::from_secs(10)
    });
    let mut samples = Vec::new();
    let stopped_by = loop {
        std::thread::sleep(Duration::from_millis(100));
        tracer.drain(&mut samples);
        for s in samples.drain(..) {
            agg.add(&s);
        }
        if stop.load(Ordering::SeqCst) {
            break StopReason::Interrupted;
        }
        if config.limits.loops.is_some_and(|n| agg.min_count() >= n) {
            break StopReason::Loops;
        }
        if started.elapsed() >= limit {
            break if config.limits.duration.is_some() {
                StopReason::Duration
            } else {
                StopReason::Loops
            };
        }
    };
    // The tracer's threads exist while it runs: their priorities now.
    let priorities: Vec<u8> = agg
        .tids()
        .iter()
        .map(|&pid| Timerlat::priority(root, pid))
        .collect();
    drop(tracer);
    let privileges = Privileges {
        sched_fifo: if priorities.iter().any(|&p| p > 0) {
            Step::Done
        } else {
            Step::NotRequested
        },
        memory_locked: Step::NotRequested,
        cpu_dma_latency_held: dma,
    };
    let elapsed_ns = started.elapsed().as_nanos() as u64;
    let (m, split) = agg.finish(privileges, elapsed_ns, stopped_by, &priorities);
    Ok((m, split))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracer_lines_parse_and_others_are_left_out() {
        let l = "          <idle>-0       [000] d.h1    54.029328: #1     context    irq \
                 timer_latency       932 ns";
        assert_eq!(
            parse_line(l),
            Some(Sample {
                cpu: 0,
                seq: 1,
                context: Context::Irq,
                latency_ns: 932,
                at_ns: 54_029_328_000,
                pid: 0
            })
        );
        let t = "      timerlat/5-1035    [005] .......   548.771104: #402268 context thread \
                 timer_latency     39960 ns";
        let s = parse_line(t).unwrap();
        assert_eq!(
            (s.cpu, s.seq, s.context, s.latency_ns, s.pid),
            (5, 402268, Context::Thread, 39960, 1035)
        );
        for other in [
            "# tracer: timerlat",
            "#            | |         |   ||||      |         |                  |  ",
            "             cc1-87882   [005] dNLh1..   548.771082: irq_noise: local_timer:236 \
             start 548.771077442 duration 7597 ns",
            "",
        ] {
            assert_eq!(parse_line(other), None, "{other}");
        }
        assert_eq!(seconds_to_ns("548.771077442"), Some(548_771_077_442));
        assert_eq!(seconds_to_ns("1.5"), Some(1_500_000_000));
        assert_eq!(seconds_to_ns("x.5"), None);
    }
}
