//! What a test does: the access pattern and read/write mix (fio's `--rw`), and the operation
//! of one I/O.

use serde::Serialize;

/// What a workload does with each I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Sequential,
    Random,
}

/// Read, write or a mix, by fio's names (`read`, `write`, `randread`, `randwrite`, `rw`,
/// `randrw` with `--rwmixread`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    pub pattern: Pattern,
    /// Percentage of I/Os that are reads: 100 = read, 0 = write.
    pub read_percent: u8,
}

impl Workload {
    pub const READ: Workload = Workload {
        pattern: Pattern::Sequential,
        read_percent: 100,
    };
    pub const WRITE: Workload = Workload {
        pattern: Pattern::Sequential,
        read_percent: 0,
    };
    pub const RANDREAD: Workload = Workload {
        pattern: Pattern::Random,
        read_percent: 100,
    };
    pub const RANDWRITE: Workload = Workload {
        pattern: Pattern::Random,
        read_percent: 0,
    };

    /// fio's `--rw` name for this workload.
    pub fn fio_name(&self) -> &'static str {
        match (self.pattern, self.read_percent) {
            (Pattern::Sequential, 100) => "read",
            (Pattern::Sequential, 0) => "write",
            (Pattern::Random, 100) => "randread",
            (Pattern::Random, 0) => "randwrite",
            (Pattern::Sequential, _) => "rw",
            (Pattern::Random, _) => "randrw",
        }
    }

    /// Whether any I/O writes.
    pub fn writes(&self) -> bool {
        self.read_percent < 100
    }

    /// The short name in a results table.
    pub fn direction(&self) -> String {
        match self.read_percent {
            100 => "read".into(),
            0 => "write".into(),
            p => format!("mix {p}% read"),
        }
    }
}

/// The operation of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_names_round_trip() {
        assert_eq!(Workload::RANDWRITE.fio_name(), "randwrite");
        let mix = Workload {
            pattern: Pattern::Random,
            read_percent: 70,
        };
        assert_eq!(mix.fio_name(), "randrw");
        assert_eq!(mix.direction(), "mix 70% read");
    }
}
