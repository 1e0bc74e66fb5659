//! What headroom's tests share, in one place (a dev-dependency of the other crates only, so no
//! crate's public API carries test helpers):
//!
//! - [`fixtures`]: where the captured-hardware fixtures are (`HEADROOM_FIXTURES`, else
//!   `../shared/fixtures` beside the clone) and the repository's own `tests/fixtures`; a test
//!   whose fixtures are missing is skipped with a note and listed in a log, and fails under
//!   `CI=true`.
//! - [`skip`]: the one way a test that needs root, a tool, a device or a fixture is skipped
//!   (a failure under `CI=true`).
//! - [`synth`]: synthetic PCI config space and sysfs trees.
//! - [`cmd`]: the `headroom` binary as a user runs it, and its JSON output.
//! - [`net`]: loopback ports and one-test servers for `bench net`.
//! - [`mount`]: a scratch tmpfs, read-only on demand.
//! - [`process`]: bounded waits for and signals to the `headroom` processes a test starts.
//! - [`latency`]: latency measurements and findings for the unit tests that judge and render them.
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
