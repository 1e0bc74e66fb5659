//! The background load of `headroom bench latency --stress`, as its document holds it: how
//! many workers of each kind (stress-ng's `-c/--io/--vm`) and how they were read. bench parses
//! the flag and runs the workers; report reads this type back.

use crate::units::{format_bytes_binary, size_label};
use serde::{Deserialize, Serialize};

/// What load to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StressSpec {
    pub cpu: u32,
    /// Percent of each slice a CPU worker spins (stress-ng `--cpu-load`, 1..=100).
    pub cpu_load: u8,
    pub io: u32,
    pub vm: u32,
    /// Bytes each vm worker maps, touches and unmaps per loop.
    pub vm_bytes_per_worker: u64,
    /// Bytes between two writes: 8 (every word, stress-ng) or 4096 (a byte a page, stress).
    pub vm_stride: u32,
    /// hdd workers (stress-ng's and stress's `--hdd`): each writes a temporary file of
    /// `hdd_bytes_per_worker`, reads it back and removes it, over and over. Absent (0) in
    /// documents written before headroom had them.
    #[serde(default)]
    pub hdd: u32,
    #[serde(default)]
    pub hdd_bytes_per_worker: u64,
    /// The directory of the hdd workers' files (stress-ng's `--temp-path`; the current
    /// directory by default, as stress-ng's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdd_path: Option<std::path::PathBuf>,
    /// How the spec was read, in words (`stress-ng semantics: 4 MiB divided by 1 worker`).
    pub interpretation: String,
    /// Options of a pasted command that headroom does not reproduce, each with what runs
    /// instead (`--cpu-method matrixprod: ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl StressSpec {
    pub fn workers(&self) -> u32 {
        self.cpu + self.io + self.vm + self.hdd
    }

    /// Whether the load makes disks interrupt by itself: io workers call sync() (a flush
    /// request to every disk), hdd workers write and read a file.
    pub fn drives_disks(&self) -> bool {
        self.io > 0 || self.hdd > 0
    }

    /// One line like stress-ng's own summary, e.g. `4 cpu, 2 io, 1 vm (4 MiB each)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.cpu > 0 {
            if self.cpu_load < 100 {
                parts.push(format!("{} cpu at {} %", self.cpu, self.cpu_load));
            } else {
                parts.push(format!("{} cpu", self.cpu));
            }
        }
        if self.io > 0 {
            parts.push(format!("{} io (sync)", self.io));
        }
        if self.vm > 0 {
            parts.push(format!(
                "{} vm ({} each)",
                self.vm,
                format_bytes_binary(self.vm_bytes_per_worker)
            ));
        }
        if self.hdd > 0 {
            parts.push(format!(
                "{} hdd ({} files each)",
                self.hdd,
                format_bytes_binary(self.hdd_bytes_per_worker)
            ));
        }
        parts.join(", ")
    }

    /// The load in `--stress` syntax (`cpu=2,io=1,vm=1,vm-bytes=4M`), which a user can paste
    /// back; `none` without workers.
    pub fn spec(&self) -> String {
        let mut parts = Vec::new();
        if self.cpu > 0 {
            parts.push(format!("cpu={}", self.cpu));
            if self.cpu_load < 100 {
                parts.push(format!("cpu-load={}", self.cpu_load));
            }
        }
        if self.io > 0 {
            parts.push(format!("io={}", self.io));
        }
        if self.vm > 0 {
            parts.push(format!("vm={}", self.vm));
            // vm-bytes is the total, divided across the workers (stress-ng's meaning), in
            // the flag's own spelling: 4M = 4 MiB, as stress-ng reads it.
            let total = self.vm_bytes_per_worker * u64::from(self.vm);
            parts.push(format!("vm-bytes={}", size_label(total)));
        }
        if self.hdd > 0 {
            parts.push(format!("hdd={}", self.hdd));
            // hdd-bytes is per worker, as in stress-ng and stress.
            parts.push(format!(
                "hdd-bytes={}",
                size_label(self.hdd_bytes_per_worker)
            ));
            if let Some(p) = &self.hdd_path {
                parts.push(format!("temp-path={}", p.display()));
            }
        }
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(",")
        }
    }
}

/// How a background load's workers ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopReport {
    /// Ended on SIGTERM (or had already ended at their deadline).
    pub stopped: u32,
    /// Needed SIGKILL.
    pub killed: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_reads_back_as_the_flag_and_in_words() {
        let s = StressSpec {
            cpu: 2,
            cpu_load: 50,
            io: 1,
            vm: 2,
            vm_bytes_per_worker: 2 << 20,
            vm_stride: 8,
            hdd: 1,
            hdd_bytes_per_worker: 64 << 20,
            hdd_path: None,
            interpretation: String::new(),
            notes: Vec::new(),
        };
        assert_eq!(
            s.spec(),
            "cpu=2,cpu-load=50,io=1,vm=2,vm-bytes=4M,hdd=1,hdd-bytes=64M"
        );
        assert_eq!(
            s.describe(),
            "2 cpu at 50 %, 1 io (sync), 2 vm (2 MiB each), 1 hdd (64 MiB files each)"
        );
        assert_eq!(s.workers(), 6);
        let none = StressSpec {
            cpu: 0,
            io: 0,
            vm: 0,
            hdd: 0,
            ..s
        };
        assert_eq!(none.spec(), "none");
    }
}
