//! One module per result kind: the kind's one document type (written by cli, read back by
//! report, compare and history), its judgement, its summary and its text.

pub mod ceiling;
