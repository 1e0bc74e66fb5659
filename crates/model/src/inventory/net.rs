//! The network inventory: `/sys/class/net` interfaces with link speed, duplex, MTU, state,
//! driver and the device they hang off, as `probe::net` reads them
//! (Documentation/ABI/testing/sysfs-class-net).

use crate::net::{audit_transfers, link_ceiling, LinkFacts, Way, WayCeiling};
use crate::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NetInventory {
    pub interfaces: Vec<NetInterface>,
    /// This section's findings, once `report::kinds::audit::findings` has judged it (probe leaves
    /// them empty); the document carries them per section.
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetInterface {
    pub name: String,
    /// Negotiated link speed, Mb/s; `None` when down, virtual or not reported.
    #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
    pub speed_mbps: Option<u64>,
    /// `full`, `half`, `unknown`.
    pub duplex: Option<String>,
    pub mtu: Option<u32>,
    /// `up`, `down`, `unknown`, `dormant`...
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub mac_address: Option<String>,
    /// Driver of the device (`e1000e`, `virtio_net`, `r8152`).
    pub driver: Option<String>,
    /// What it hangs off; `None` for virtual interfaces.
    pub attachment: Option<Attachment>,
    /// No hardware below (lo, veth, bridge, bond, tun, ifb...).
    #[serde(rename = "virtual")]
    pub is_virtual: bool,
    /// `DEVTYPE` from uevent (`bridge`, `vlan`, `wlan`, `bond`) when the kernel sets one.
    pub devtype: Option<String>,
    pub sysfs_path: PathBuf,
    /// The token-bucket shaper (tbf) at the root of the interface's egress, read on the live
    /// system only (rtnetlink, through iproute2's `tc`); documents from before it have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper: Option<crate::net::Shaper>,
}

impl NetInterface {
    /// What the inventory knows of the interface (speed, MTU, virtual, the USB link of its
    /// adapter, its root tbf) as the facts [`link_ceiling`] judges a link by: the audit's and
    /// `path`'s, to which bench net adds what it learns on the live system (timestamps, the
    /// PCIe link, offloads).
    pub fn link_facts(&self) -> LinkFacts {
        LinkFacts {
            interface: self.name.clone(),
            speed_mbps: self.speed_mbps,
            duplex: self.duplex.clone(),
            mtu: self.mtu,
            is_virtual: self.is_virtual,
            is_loopback: self.name == "lo",
            driver: self.driver.clone(),
            usb_speed_mbps: match &self.attachment {
                Some(Attachment::Usb { speed_mbps, .. }) => *speed_mbps,
                _ => None,
            },
            shaper: self.shaper,
            ..LinkFacts::default()
        }
    }

    /// The TCP goodput ceiling (IPv4, timestamps on: [`audit_transfers`]) of the interface
    /// in the direction `way`, or why it has none ([`link_ceiling`]: a tbf at its root
    /// bounds what this host sends; a virtual interface's nominal speed is no ceiling).
    pub fn tcp_ceiling(&self, way: Way) -> Result<WayCeiling, String> {
        let mtu = self
            .mtu
            .ok_or_else(|| format!("the MTU of {} is not known", self.name))?;
        let (p, what) = audit_transfers(mtu);
        link_ceiling(&self.link_facts(), &p, what, way)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "bus", rename_all = "snake_case")]
pub enum Attachment {
    Pci {
        address: String,
    },
    Usb {
        device: String,
        /// The USB device's own rate, Mb/s: a ceiling for the Ethernet link.
        #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
        speed_mbps: Option<f64>,
    },
    /// A virtio device, on a PCI function when there is one.
    Virtio {
        name: String,
        pci: Option<String>,
    },
    Platform {
        name: String,
    },
}
