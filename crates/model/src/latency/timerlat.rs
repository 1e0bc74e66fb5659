//! The kernel's timerlat tracer as a measuring engine (`bench latency --engine timerlat`):
//! its per-CPU threads wake on a timer every period and the tracer writes, for each
//! activation, the timer latency seen in the timer interrupt (`context irq`) and by the
//! thread (`context thread`) under one activation number
//! (Documentation/trace/timerlat-tracer.rst). [`Aggregator`] turns those samples into the
//! same measurement and IRQ/thread split the timer loop gives, so the two can be compared on
//! one kernel.

use super::split::{Split, SplitSource, SplitStats};
use super::{merge, Config, Measurement, Privileges, Recorder, StopReason, ThreadResult};
use std::collections::HashMap;

/// Where a timerlat sample was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// In the timer interrupt: the IRQ latency.
    Irq,
    /// By the woken thread: the thread latency.
    Thread,
    /// A user-space workload's return to user space (`timerlat_fd`, Linux 6.5+).
    UserRet,
}

/// One line of the timerlat tracer's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub cpu: u32,
    /// The activation number (`#N`), shared by an activation's IRQ and thread samples.
    pub seq: u64,
    pub context: Context,
    pub latency_ns: u64,
    /// The trace's timestamp, ns (the instance's trace clock).
    pub at_ns: u64,
    /// The task the line was written by (`timerlat/1-867`: 867); the thread sample's is the
    /// measuring thread.
    pub pid: i32,
}

/// The samples of a run, thread by thread (one per measured CPU, in the order given).
pub struct Aggregator {
    config: Config,
    cpus: Vec<u32>,
    recorders: Vec<Recorder>,
    split: Vec<SplitStats>,
    tids: Vec<i32>,
    /// IRQ samples waiting for their thread sample, by (CPU, activation).
    irq: HashMap<(u32, u64), u64>,
    start_ns: Option<u64>,
}

impl Aggregator {
    pub fn new(config: &Config, cpus: &[u32]) -> Aggregator {
        Aggregator {
            recorders: (0..cpus.len()).map(|i| Recorder::new(i, config)).collect(),
            split: (0..cpus.len())
                .map(|i| SplitStats::new(Some(i), config.histogram_limit_us))
                .collect(),
            tids: vec![0; cpus.len()],
            config: config.clone(),
            cpus: cpus.to_vec(),
            irq: HashMap::new(),
            start_ns: None,
        }
    }

    /// Take one sample (others' CPUs are ignored).
    pub fn add(&mut self, s: &Sample) {
        let Some(t) = self.cpus.iter().position(|&c| c == s.cpu) else {
            return;
        };
        let start = *self.start_ns.get_or_insert(s.at_ns);
        match s.context {
            Context::Irq => {
                // An activation's IRQ sample comes first; keep only the unanswered ones of
                // this CPU (bounded: a thread sample answers each within a period).
                if self.irq.len() > 4096 {
                    self.irq.clear();
                }
                self.irq.insert((s.cpu, s.seq), s.latency_ns);
            }
            Context::Thread => {
                self.tids[t] = s.pid;
                // The thread reads the time after its wake-up: the period began a latency
                // before this line.
                self.recorders[t].record(s.latency_ns, s.at_ns.saturating_sub(start));
                match self.irq.remove(&(s.cpu, s.seq)) {
                    Some(irq) => self.split[t].add(irq, s.latency_ns),
                    None => self.split[t].add_unmatched(),
                }
            }
            Context::UserRet => {}
        }
    }

    /// The tracer's thread of each measured CPU, as its samples named it (0: none yet).
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Thread samples taken on the measured CPU with the fewest.
    pub fn min_count(&self) -> u64 {
        self.recorders
            .iter()
            .map(Recorder::count)
            .min()
            .unwrap_or(0)
    }

    /// The measurement and the split. `privileges`: what the run obtained (the tracer's
    /// threads are the kernel's own); `priorities`: their SCHED_FIFO priorities as read after
    /// the run, by thread.
    pub fn finish(
        self,
        privileges: Privileges,
        elapsed_ns: u64,
        stopped_by: StopReason,
        priorities: &[u8],
    ) -> (Measurement, Split) {
        let interval_us = self.config.interval.as_micros() as u64;
        let threads: Vec<ThreadResult> = self
            .recorders
            .into_iter()
            .enumerate()
            .map(|(i, r)| ThreadResult {
                thread: i,
                tid: self.tids[i],
                cpu: Some(self.cpus[i]),
                last_cpu: Some(self.cpus[i]),
                priority: priorities.get(i).copied().unwrap_or(0),
                interval_us,
                stats: r.stats(),
                cpu_time_ns: 0,
                cpu_time_per_wakeup_ns: 0.0,
            })
            .collect();
        let per: Vec<&super::Stats> = threads.iter().map(|t| &t.stats).collect();
        let total = merge(&per, self.config.keep_largest);
        let mut split_total = SplitStats::new(None, self.config.histogram_limit_us);
        for s in &self.split {
            split_total.merge(s);
        }
        (
            Measurement {
                privileges,
                elapsed_ns,
                stopped_by,
                threads,
                total,
            },
            Split {
                source: SplitSource::Timerlat,
                threads: self.split,
                total: split_total,
                lost_events: 0,
                dropped_wakeups: 0,
                causes: Vec::new(),
                largest: Vec::new(),
                analyze_above_us: None,
                analysis: None,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::latency::{Affinity, Limits, Step};
    use std::time::Duration;

    fn sample(cpu: u32, seq: u64, context: Context, latency_ns: u64, at_ns: u64) -> Sample {
        Sample {
            cpu,
            seq,
            context,
            latency_ns,
            at_ns,
            pid: 866 + cpu as i32,
        }
    }

    #[test]
    fn activations_pair_irq_and_thread_latency_per_cpu() {
        let config = Config {
            threads: 2,
            affinity: Affinity::Pinned(vec![0, 1]),
            limits: Limits {
                duration: Some(Duration::from_secs(1)),
                loops: None,
            },
            ..Config::default()
        };
        let mut a = Aggregator::new(&config, &[0, 1]);
        for s in [
            sample(0, 1, Context::Irq, 932, 54_029_328_000),
            sample(0, 1, Context::Thread, 11_700, 54_029_339_000),
            sample(1, 1, Context::Irq, 2_833, 54_029_346_000),
            sample(1, 1, Context::Thread, 9_820, 54_029_353_000),
            sample(0, 2, Context::Irq, 769, 54_030_328_000),
            sample(0, 2, Context::Thread, 3_070, 54_030_330_000),
            // A thread sample whose IRQ sample was lost, and one of a CPU not measured.
            sample(1, 3, Context::Thread, 4_351, 54_030_347_000),
            sample(2, 1, Context::Irq, 1, 54_030_348_000),
        ] {
            a.add(&s);
        }
        assert_eq!(a.min_count(), 2);
        let p = Privileges {
            sched_fifo: Step::Done,
            memory_locked: Step::NotRequested,
            cpu_dma_latency_held: Step::NotRequested,
        };
        let (m, s) = a.finish(p, 1_000_000_000, StopReason::Duration, &[95, 95]);
        assert_eq!(m.total.count, 4);
        assert_eq!((m.threads[0].tid, m.threads[0].cpu), (866, Some(0)));
        assert_eq!(m.threads[0].stats.max_ns, 11_700);
        assert_eq!(m.threads[1].priority, 95);
        assert_eq!(s.source, SplitSource::Timerlat);
        assert_eq!((s.threads[0].matched, s.threads[0].unmatched), (2, 0));
        assert_eq!((s.threads[1].matched, s.threads[1].unmatched), (1, 1));
        assert_eq!((s.total.irq.min_ns, s.total.irq.max_ns), (769, 2_833));
        assert_eq!(s.total.thread_latency.max_ns, 11_700);
        assert_eq!(s.total.irq_above_thread, 0);
    }
}
