//! The formats others read, each written in one place: OpenMetrics and the Prometheus text
//! ([`openmetrics`], with the figures every document has in [`metrics`]), board labs' LAVA
//! test-case lines ([`lava`]) and KCIDB JSON ([`kcidb`]) of a document's checks and figures
//! ([`cases`]). The peers' own layouts of one kind's run (fio's JSON, cyclictest's histogram
//! and JSON, iperf3's `-J`, perf stat's `-x`/`-j`, OCPTV's lines of `--expect`) read that
//! kind's document type, so each is its kind's module's (`kinds::disk::fio`,
//! `kinds::latency::cyclictest`, `kinds::net::iperf3`, `kinds::count::perf`,
//! `kinds::expect::ocptv`); a kind says which of all these it offers through
//! [`crate::kinds::Kind::exports`].

pub mod cases;
pub mod kcidb;
pub mod lava;
pub mod metrics;
pub mod openmetrics;

/// An outside format a document can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Export {
    /// OpenMetrics 1.0 text and the Prometheus text format 0.0.4 ([`openmetrics`]).
    OpenMetrics,
    /// LAVA test-case lines ([`lava`]).
    Lava,
    /// KernelCI's KCIDB I/O JSON ([`kcidb`]).
    Kcidb,
    /// fio 3.33's `--output-format=json` (`bench disk --output-format fio-json`).
    FioJson,
    /// fio's `json+`, with each latency's bins.
    FioJsonPlus,
    /// cyclictest's histogram text (`bench latency -h`/`-H`).
    CyclictestHistogram,
    /// rt-tests' `--json=FILE` document.
    CyclictestJson,
    /// iperf3 3.12's `-J` document.
    Iperf3Json,
    /// perf stat's `-x SEP` lines.
    PerfCsv,
    /// perf stat's `-j` JSON lines.
    PerfJson,
    /// OCP Test & Validation JSON lines of `audit --expect`'s checks.
    Ocptv,
}

/// What every kind's document offers: its metrics and its cases for the labs.
pub const EVERY_DOCUMENT: &[Export] = &[Export::OpenMetrics, Export::Lava, Export::Kcidb];
