//! What `headroom audit` finds on a machine (or a captured tree): PCI functions and links,
//! the CPU and kernel context, USB, block and network devices. Pure data: `probe` fills it,
//! `report::kinds::audit::findings` judges it, `report::kinds::audit::text` draws it; nothing here
//! reads a file.

pub mod block;
pub mod gadget;
pub mod net;
pub mod pci;
pub mod usb;

use crate::system::SystemContext;
use block::BlockInventory;
use net::NetInventory;
use pci::PciAudit;
use usb::UsbInventory;

/// Everything `headroom audit` shows of a machine (or a captured tree).
#[derive(Debug)]
pub struct Inventory {
    pub pci: PciAudit,
    pub system: SystemContext,
    pub usb: UsbInventory,
    pub block: BlockInventory,
    pub net: NetInventory,
    /// V4L2 video nodes (`/sys/class/video4linux`).
    pub video: Vec<crate::video::VideoNode>,
}

impl Inventory {
    /// Whether the root held anything of a Linux system: a PCI function, a USB, block or
    /// network device, or kernel/CPU information.
    pub fn found_anything(&self) -> bool {
        !self.pci.functions.is_empty()
            || !self.usb.devices.is_empty()
            || !self.block.devices.is_empty()
            || !self.net.interfaces.is_empty()
            || self.system.kernel.release.is_some()
            || self.system.cpus_online.is_some()
            || !self.system.cpufreq.is_empty()
            || self.system.cmdline.is_some()
    }

    /// Every part's warnings (problems met while reading), PCI, USB, block, net in turn.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.pci
            .warnings
            .iter()
            .chain(&self.usb.warnings)
            .chain(&self.block.warnings)
            .chain(&self.net.warnings)
    }
}
