//! The integration tests of this crate, one module per file, linked as one binary.

mod audit;
mod audit_findings;
mod audit_text;
mod bench_disk;
mod bench_latency;
mod bench_mmio;
mod bench_net;
mod ceiling;
mod count;
mod cyclictest_formats;
mod docs;
mod expect;
mod fio_formats;
mod io_uring_unavailable;
mod lab_formats;
mod latency_findings;
mod layers;
mod messages;
mod openmetrics;
mod path;
mod rate_keys;
mod results;
mod roundtrip;
mod size_check;
mod survey;
mod terminal;
