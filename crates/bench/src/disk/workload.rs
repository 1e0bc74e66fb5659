//! The operation of one I/O. What a test does (the access pattern and read/write mix, fio's
//! `--rw`) is a document type: `model::disk::{Pattern, Workload}`.

/// The operation of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}
