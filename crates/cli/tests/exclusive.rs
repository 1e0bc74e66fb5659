//! The tests that must have the machine to themselves (tracefs, real-time priorities), one
//! module per file, linked as a second binary that runs after the others.

mod latency_split;
mod split_killed;
