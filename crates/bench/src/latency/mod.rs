//! Wake-up latency, measured the way cyclictest (rt-tests) measures it.
//!
//! One thread per measurement, SCHED_FIFO at a priority, memory locked, `/dev/cpu_dma_latency`
//! held at 0 for the run, and an absolute-time `clock_nanosleep(CLOCK_MONOTONIC,
//! TIMER_ABSTIME)` loop: latency = the time read on wake-up minus the time programmed.
//! Thread `i` sleeps `interval + i x distance` (cyclictest's `-i`/`-d`).
//!
//! Beyond cyclictest: missed periods are counted (cyclictest skips them silently), the
//! largest latencies keep their timestamps, and the maximum of every window (a minute by
//! default) is kept, so a long run shows when its spikes happened.
//!
//! The engine measures and reports what it could set up; it never judges a number.
//! Usage: [`Session::prepare`] (privileged setup, threads parked), then [`Session::run`].
//!
//! - [`config`]: the errors of a run (what a run is asked to do, checked before it starts, is
//!   `model::latency::Config`, like every type the measurement holds).
//! - [`rt`]: real-time helpers (affinity, SCHED_FIFO, mlockall, `/dev/cpu_dma_latency`).
//! - [`session`]: the threads, their run and the measurement.
//! - [`wakeups`]: every wake-up handed to the caller, for the IRQ/thread split.

pub mod config;
pub mod rt;
pub mod session;
pub mod wakeups;

pub use config::LatencyError;
pub use rt::{available_cpus, measured_cpus};
pub use session::{Progress, Session, PROGRESS_EVERY};
pub use wakeups::WakeupTap;

const NS_PER_US: u64 = 1_000;

const NS_PER_SEC: u64 = 1_000_000_000;
