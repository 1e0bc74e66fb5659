//! What headroom's tests share, in one place (a dev-dependency of the other crates only, so no
//! crate's public API carries test helpers):
//!
//! - [`fixtures`]: where the captured-hardware fixtures are (`HEADROOM_FIXTURES`, else
//!   `../shared/fixtures` beside the clone) and the repository's own `tests/fixtures`; a test
//!   whose fixtures are missing is skipped with a note and listed in a log, and fails under
//!   `CI=true`.
//! - [`synth`]: synthetic PCI config space and sysfs trees.
//! - [`cmd`]: the `headroom` binary as a user runs it, and its JSON output.
//! - [`net`]: loopback ports for `bench net` servers.

pub mod cmd;
pub mod fixtures;
pub mod net;
pub mod synth;
