//! What a latency run is asked to do (cyclictest's `-t -a -p -i -d -D -l -h -m`), checked
//! against the machine before anything starts, and the errors of a run.

use serde::{Serialize, Serializer};
use std::time::Duration;

/// Highest SCHED_FIFO priority on Linux (sched(7): 1..99).
pub const MAX_PRIORITY: u8 = 99;

/// How many threads per available CPU we accept. More threads than CPUs measure each
/// other's wake-ups more than the kernel's, and every thread's stack is locked in memory.
pub const MAX_THREADS_PER_CPU: usize = 4;

/// The largest histogram we keep per thread (1 us buckets: 1 s, 8 MB per thread).
pub const MAX_HISTOGRAM_US: u32 = 1_000_000;

fn as_us<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

fn as_s<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn opt_as_s<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// Where the measuring threads run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "cpus", rename_all = "snake_case")]
pub enum Affinity {
    /// Not pinned: the scheduler places the threads.
    Free,
    /// Thread `i` pinned to `cpus[i % cpus.len()]` (cyclictest `-a CPUSET`).
    Pinned(Vec<u32>),
}

/// How the run ends (the first reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Stop after this time (cyclictest `-D`).
    #[serde(rename = "duration_s", serialize_with = "opt_as_s")]
    pub duration: Option<Duration>,
    /// Stop each thread after this many wake-ups (cyclictest `-l`).
    pub loops: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    pub threads: usize,
    pub affinity: Affinity,
    /// SCHED_FIFO priority 1..=99; 0 runs the threads at SCHED_OTHER like cyclictest `-p 0`.
    pub priority: u8,
    /// Base interval (cyclictest `-i`, default 1000 us).
    #[serde(rename = "interval_us", serialize_with = "as_us")]
    pub interval: Duration,
    /// Added per thread (cyclictest `-d`, default 500 us).
    #[serde(rename = "distance_us", serialize_with = "as_us")]
    pub distance: Duration,
    pub limits: Limits,
    /// Histogram buckets of 1 us from 0 up to this limit; above goes to the overflow count.
    pub histogram_limit_us: u32,
    /// How many of the largest latencies to keep, with their timestamps.
    pub keep_largest: usize,
    /// Length of the windows whose maxima are kept (one minute like OSADL's long-term plots).
    #[serde(rename = "window_s", serialize_with = "as_s")]
    pub window: Duration,
    /// Lock memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`, cyclictest `-m`).
    pub lock_memory: bool,
    /// Hold `/dev/cpu_dma_latency` at 0 during the run (cyclictest does by default).
    pub hold_dma_latency: bool,
    /// Skip every privileged step (scheduling class, mlock, cpu_dma_latency), as an
    /// unprivileged user would get; for tests of that path on a machine where we are root.
    pub skip_privileged_steps: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: 1,
            affinity: Affinity::Free,
            priority: MAX_PRIORITY,
            interval: Duration::from_micros(1000),
            distance: Duration::from_micros(500),
            limits: Limits {
                duration: Some(Duration::from_secs(10)),
                loops: None,
            },
            histogram_limit_us: 10_000,
            keep_largest: 10,
            window: Duration::from_secs(60),
            lock_memory: true,
            hold_dma_latency: true,
            skip_privileged_steps: false,
        }
    }
}

impl Config {
    /// The interval of thread `i`.
    pub fn interval_of(&self, i: usize) -> Duration {
        self.interval + self.distance * i as u32
    }

    /// The CPU thread `i` is pinned to, if any.
    pub fn cpu_of(&self, i: usize) -> Option<u32> {
        match &self.affinity {
            Affinity::Free => None,
            Affinity::Pinned(cpus) if cpus.is_empty() => None,
            Affinity::Pinned(cpus) => Some(cpus[i % cpus.len()]),
        }
    }

    /// Check the configuration against this machine; `available` is the CPUs this process
    /// may run on. Each error is one sentence naming the flag.
    pub fn validate(&self, available: &[u32]) -> Result<(), ConfigError> {
        if self.interval.is_zero() {
            return Err(ConfigError(
                "the interval (-i/--interval) must be at least 1 us".into(),
            ));
        }
        if self.interval > Duration::from_secs(10) || self.distance > Duration::from_secs(10) {
            return Err(ConfigError(
                "the interval and distance (-i/-d) must be at most 10 s each".into(),
            ));
        }
        if self.priority > MAX_PRIORITY {
            return Err(ConfigError(format!(
                "priority {} is out of range: SCHED_FIFO priorities are 1 to {MAX_PRIORITY} \
                 (0 = normal scheduling)",
                self.priority
            )));
        }
        let max_threads = MAX_THREADS_PER_CPU * available.len().max(1);
        if self.threads == 0 || self.threads > max_threads {
            return Err(ConfigError(format!(
                "{} threads requested: between 1 and {max_threads} are allowed here \
                 ({MAX_THREADS_PER_CPU} per available CPU; more would measure each other)",
                self.threads
            )));
        }
        if let Affinity::Pinned(cpus) = &self.affinity {
            if cpus.is_empty() {
                return Err(ConfigError("the affinity list (-a) is empty".into()));
            }
            if let Some(bad) = cpus.iter().find(|c| !available.contains(c)) {
                return Err(ConfigError(format!(
                    "CPU {bad} does not exist or is not available to this process \
                     (available: {}); choose CPUs from that list with -a/--affinity",
                    model::units::format_cpu_list(available)
                )));
            }
        }
        if self.histogram_limit_us == 0 || self.histogram_limit_us > MAX_HISTOGRAM_US {
            return Err(ConfigError(format!(
                "the histogram limit (-h/--histogram) must be 1 to {MAX_HISTOGRAM_US} us"
            )));
        }
        if self.window < Duration::from_secs(1) {
            return Err(ConfigError("the maxima window must be at least 1 s".into()));
        }
        if self.limits.duration.is_none() && self.limits.loops.is_none() {
            return Err(ConfigError(
                "give a duration (-D/--duration) or a loop count (-l/--loops)".into(),
            ));
        }
        if self.limits.loops == Some(0) || self.limits.duration.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError(
                "the duration and loop count must be above 0".into(),
            ));
        }
        Ok(())
    }
}

/// A configuration the machine cannot run, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("could not start measuring thread {thread}: {reason}")]
    Thread { thread: usize, reason: String },
}

/// The configuration the unit tests start from: 200 loops, no duration.
#[cfg(test)]
pub(crate) fn test_config() -> Config {
    Config {
        limits: Limits {
            duration: None,
            loops: Some(200),
        },
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use super::test_config as cfg;
    use super::*;

    #[test]
    fn intervals_follow_cyclictest() {
        let c = Config::default();
        let v: Vec<u128> = (0..4).map(|i| c.interval_of(i).as_micros()).collect();
        assert_eq!(v, vec![1000, 1500, 2000, 2500]); // seeds/001: I:1000 ... I:2500
        let p = Config {
            affinity: Affinity::Pinned(vec![2, 3]),
            ..Config::default()
        };
        assert_eq!(
            (p.cpu_of(0), p.cpu_of(1), p.cpu_of(2)),
            (Some(2), Some(3), Some(2))
        );
    }

    #[test]
    fn bad_configs_get_a_sentence() {
        let avail = [0, 1];
        let bad = |c: Config| c.validate(&avail).unwrap_err().0;
        assert!(bad(Config {
            interval: Duration::ZERO,
            ..cfg()
        })
        .contains("interval"));
        assert!(bad(Config {
            priority: 100,
            ..cfg()
        })
        .contains("priority 100"));
        assert!(bad(Config {
            threads: 9,
            ..cfg()
        })
        .contains("between 1 and 8"));
        let e = bad(Config {
            affinity: Affinity::Pinned(vec![7]),
            ..cfg()
        });
        assert!(
            e.contains("CPU 7 does not exist") && e.contains("available: 0-1"),
            "{e}"
        );
        assert!(cfg().validate(&avail).is_ok());
    }
}
