//! Read-only discovery of the machine's I/O hardware under a root directory (default `/`).
//!
//! Nothing here changes a system setting. A missing file is a normal state of the world
//! (old kernel, no root, no such bus) and is reported as such, never as a crash.

pub mod builtin_ids;
pub mod inventory;
pub mod path;
pub mod pci;
pub mod sysfs;

// Inventory of USB, block and network devices and the hardware chain of a target, in one
// direction: sysfs <- per-bus parsers (usb, bus, pci) <- walk <- block, net <- chain (the
// resolver) <- path (links and ceilings). Types are model's (`model::path`).
pub mod block;
pub mod bus;
pub mod chain;
pub mod gadget;
pub mod memory;
pub mod mounts;
pub mod net;
pub mod qdisc;
pub mod system;
pub mod usb;
pub mod video;
mod walk;
pub mod watch;
