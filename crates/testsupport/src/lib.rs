//! What headroom's tests share, in one place (a dev-dependency of the other crates only, so no
//! crate's public API carries test helpers):
//!
//! - [`fixtures`]: where the fixtures are, all in the repository's `tests/fixtures` (the
//!   captured-hardware ones in `tests/fixtures/captured`); a missing fixture fails its test.
//! - [`skip`]: the one way a test that needs root, a tool, a device or a fixture is skipped
//!   (a failure under `CI=true`).
//! - [`synth`]: synthetic PCI config space and sysfs trees.
//! - [`cmd`]: the `headroom` binary as a user runs it, and its JSON output.
//! - [`net`]: loopback ports and one-test servers for `bench net`.
//! - [`mount`]: a scratch tmpfs, read-only on demand.
//! - [`process`]: bounded waits for and signals to the `headroom` processes a test starts.
//! - [`latency`]: latency measurements and findings for the unit tests that judge and render them.
//! - [`tracefs_lock`]: the lock of the tests that use tracefs and the osnoise tracer.
//! - [`disk`]: a real disk measurement (the null engine on a small file) for the tests that
//!   judge and render one.

pub mod cmd;
pub mod disk;
pub mod fixtures;
pub mod latency;
pub mod mount;
pub mod net;
pub mod process;
pub mod skip;
pub mod synth;

static TRACEFS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by every test that uses tracefs and the osnoise tracer's settings (`bench latency
/// --split`, the survey's latency parts, split runs killed mid-way), whichever file of its
/// crate's one test binary it is in: the kernel has one set of tracer settings, the cleanup
/// checks see every headroom instance, and runs at real-time priority on the same CPUs would
/// be in each other's numbers.
pub fn tracefs_lock() -> std::sync::MutexGuard<'static, ()> {
    TRACEFS.lock().unwrap_or_else(|e| e.into_inner())
}
