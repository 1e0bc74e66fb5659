//! `/proc/loadavg`: the run queue's 1/5/15-minute averages and runnable/total tasks.
//!
//! Format: proc(5) and Documentation/filesystems/proc.rst §1.2 ("loadavg"). The parser is
//! [`model::procfs::parse_loadavg`], shared with probe's context.

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
use model::procfs::LoadAverage;
use std::time::Duration;

/// A load average is a gauge, not a counter: its "delta" is the two readings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadAverageChange {
    pub elapsed: Duration,
    pub before: LoadAverage,
    pub after: LoadAverage,
}

/// Samples `/proc/loadavg`.
#[derive(Clone, Debug, Default)]
pub struct LoadAverageSampler {
    pub root: SysRoot,
}

impl LoadAverageSampler {
    pub fn new(root: SysRoot) -> LoadAverageSampler {
        LoadAverageSampler { root }
    }
}

impl Sampler for LoadAverageSampler {
    type Snapshot = Stamped<LoadAverage>;
    type Delta = LoadAverageChange;

    fn snapshot(&self) -> Result<Self::Snapshot, Error> {
        let text = self.root.read("/proc/loadavg")?;
        model::procfs::parse_loadavg(&text)
            .map(Stamped::now)
            .ok_or_else(|| Error::Format {
                path: self.root.path("/proc/loadavg"),
                what: format!(
                    "expected `1.00 0.50 0.25 2/100 1234`, found `{}`",
                    text.trim()
                ),
            })
    }

    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> LoadAverageChange {
        LoadAverageChange {
            elapsed: interval(before, after),
            before: before.value,
            after: after.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_and_live() {
        let root = testsupport::fixtures::own_root("system/rt-board-handmade");
        let s = LoadAverageSampler::new(root);
        let a = s.snapshot().unwrap();
        assert_eq!(a.value.one, 1.70);
        let c = s.delta(&a, &a);
        assert_eq!(c.before, c.after);
        let live = LoadAverageSampler::default().snapshot().unwrap();
        assert!(live.value.tasks >= 1, "this test is a task");
    }
}
