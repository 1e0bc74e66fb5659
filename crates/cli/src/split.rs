//! `bench latency --split` / `--analyze`: the kernel's tracepoints recorded beside the timer
//! loop (`counters::trace`), drained with the measuring threads' wake-ups
//! (`bench::latency::WakeupTap`) while they measure, and matched into the IRQ/thread split
//! (`model::latency::split`). Orchestration only: what the split means is report's.

use bench::latency::WakeupTap;
use counters::trace::TraceSampler;
use model::latency::split::{MatchConfig, Matcher, Source, Split, SplitSource};
use model::latency::trace::{TraceEvent, WakeUp};
use model::root::SysRoot;

/// How long after a wake-up its events are waited for before it counts as unmatched: an
/// event another CPU was still writing when the buffers were drained comes with the next
/// drain, 100 ms later.
const GRACE_NS: u64 = 100_000_000;

/// The tracepoints being recorded for a run.
pub struct TraceRecorder {
    sampler: TraceSampler,
    root: SysRoot,
}

impl TraceRecorder {
    /// Open the recorder on `cpus`; the sentence saying why the split cannot be made here
    /// otherwise (not root, no tracefs, a tracepoint missing).
    pub fn open(root: &SysRoot, cpus: &[u32]) -> Result<TraceRecorder, String> {
        TraceSampler::open(root, cpus)
            .map(|sampler| TraceRecorder {
                sampler,
                root: root.clone(),
            })
            .map_err(|e| e.to_string())
    }

    /// Optional tracepoints the kernel lacks, in one note (`None` when it has them all).
    pub fn missing_note(&self) -> Option<String> {
        let m = self.sampler.missing();
        (!m.is_empty()).then(|| {
            format!(
                "--split: this kernel lacks {}; the explanations name no {} (the split itself \
                 is whole)",
                m.join(", "),
                if m.iter().any(|e| e.starts_with("irq:softirq")) {
                    "softirq or interrupt that ran meanwhile"
                } else {
                    "interrupt that ran meanwhile"
                }
            )
        })
    }

    /// Start recording and matching the run of the threads behind `tap` (started now, on
    /// CLOCK_MONOTONIC ns `start_ns`).
    pub fn start(
        self,
        tap: WakeupTap,
        start_ns: u64,
        histogram_limit_us: u32,
        analyze_above_ns: Option<u64>,
    ) -> Splitting {
        let matcher = Matcher::new(MatchConfig {
            tids: tap.tids(),
            start_ns,
            histogram_limit_us,
            keep_largest: 3,
            analyze_above_ns,
        });
        self.sampler.enable();
        Splitting {
            recorder: self,
            tap,
            matcher,
            events: Vec::new(),
            wakeups: Vec::new(),
        }
    }
}

/// A run being split.
pub struct Splitting {
    recorder: TraceRecorder,
    tap: WakeupTap,
    matcher: Matcher,
    events: Vec<TraceEvent>,
    wakeups: Vec<WakeUp>,
}

impl Splitting {
    /// Move what the threads and the kernel recorded since the last call into the matcher,
    /// and match what is complete (`now_ns`: CLOCK_MONOTONIC). The wake-ups first: every
    /// event of a wake-up taken is in the buffers before the wake-up is.
    pub fn drain(&mut self, now_ns: u64, grace_ns: u64) {
        for (thread, n) in self.tap.drain(&mut self.wakeups) {
            self.matcher.dropped(thread, n);
        }
        let lost = self.recorder.sampler.drain(&mut self.events);
        self.matcher.ingest(self.events.drain(..));
        // After the events recorded beside them: a CPU's records are incomplete up to its
        // newest.
        for (cpu, n) in lost {
            self.matcher.lost(cpu, n);
        }
        self.matcher.wakeups(self.wakeups.drain(..));
        self.matcher.settle(now_ns, grace_ns);
    }

    /// A drain during the run.
    pub fn tick(&mut self, now_ns: u64) {
        self.drain(now_ns, GRACE_NS);
    }

    /// Stop recording, match everything and name the policy of every task an explanation
    /// names, while they still exist (the tracepoints give only the kernel's priority).
    pub fn finish(mut self) -> Split {
        self.recorder.sampler.disable();
        self.drain(u64::MAX, 0);
        let root = self.recorder.root.clone();
        let mut split = self.matcher.finish(SplitSource::Tracepoints);
        let fill = |t: &mut model::latency::split::TaskInfo| {
            if t.pid > 0 {
                t.policy = counters::trace::task_policy(&root, t.pid);
                if t.comm.is_empty() {
                    t.comm = counters::trace::task_comm(&root, t.pid).unwrap_or_default();
                }
            }
        };
        for a in split.largest.iter_mut().chain(split.analysis.iter_mut()) {
            a.tasks_mut().for_each(fill);
        }
        for c in &mut split.causes {
            if let Source::Thread(t) = &mut c.source {
                fill(t);
            }
        }
        split
    }
}

/// `--engine timerlat`: the kernel's tracer measures until the limits or the stop flag
/// (`counters::timerlat::measure`), with /dev/cpu_dma_latency held as the timer loop holds it.
pub fn measure_timerlat(
    root: &SysRoot,
    config: &model::latency::Config,
    cpus: &[u32],
    interrupt: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<(model::latency::Measurement, Option<Split>)> {
    let (dma, _held) = if config.hold_dma_latency && !config.skip_privileged_steps {
        bench::latency::rt::hold_dma_latency()
    } else {
        (model::latency::Step::NotRequested, None)
    };
    counters::timerlat::measure(root, config, cpus, interrupt, dma)
        .map(|(m, split)| (m, Some(split)))
        .map_err(|e| anyhow::Error::msg(format!("--engine timerlat: {e}")))
}
