//! What a test does: the access pattern and read/write mix (fio's `--rw`, the document's
//! `model::disk` types), and the operation of one I/O.

pub use model::disk::{Pattern, Workload};

/// The operation of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}
