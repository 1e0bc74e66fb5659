//! Read-only discovery of the machine's I/O hardware under a root directory (default `/`).
//!
//! Nothing here changes a system setting. A missing file is a normal state of the world
//! (old kernel, no root, no such bus) and is reported as such, never as a crash.

pub mod path;
pub mod pci;
pub mod sysfs;

// Inventory of USB, block and network devices and the hardware chain of a target.
pub mod block;
pub mod chain;
pub mod mounts;
pub mod net;
pub mod system;
pub mod usb;
