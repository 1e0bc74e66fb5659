//! The expected state of a host (`headroom audit --expect MANIFEST`): what each device (PCI
//! function, USB device, disk, network interface) should show, written by hand or by `audit --save-expect` on a known-good host, read as TOML.
//!
//! Each entry selects devices (every selector given must match; at least one is needed) and
//! lists checks (each optional). `report::kinds::expect` judges an audit against it; this is
//! only the data.

use crate::pcie::PcieGen;
use serde::{Deserialize, Serialize};

/// The whole manifest: PCI functions, USB devices, disks, network interfaces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci: Vec<PciExpect>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usb: Vec<UsbExpect>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block: Vec<BlockExpect>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetExpect>,
}

impl Manifest {
    /// Whether it has no entry at all (it then checks nothing).
    pub fn is_empty(&self) -> bool {
        self.pci.is_empty() && self.usb.is_empty() && self.block.is_empty() && self.net.is_empty()
    }
}

/// How a speed or width compares with the expected one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// The value found is this or more (a faster link passes).
    #[default]
    AtLeast,
    /// The value found is this one.
    Exactly,
}

impl Match {
    fn is_default(&self) -> bool {
        *self == Match::AtLeast
    }
}

/// One PCI function (or several: a selector by id, class or driver may match more than one;
/// each is checked).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciExpect {
    /// What the device is, for the reader (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Selector: the PCI address, `0000:01:00.0` (`01:00.0` means domain 0000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Selector: the physical slot's name (/sys/bus/pci/slots/NAME).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// Selector: `vendor:device` in hex, as lspci -n prints it (`144d:a808`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Selector: the class in hex, 4 digits (`0108`) or 6 with the programming interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Selector: the bound driver (`nvme`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Selector: the function a block device sits on (`nvme0n1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// Selector: the function a network interface sits on (`enp1s0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Check: the link speed per lane in GT/s (2.5, 5, 8, 16, 32, 64, 128).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_speed_gts: Option<PcieGen>,
    /// Check: the link width in lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_width: Option<u8>,
    /// How speed and width compare: `at_least` (the default) or `exactly`.
    #[serde(default, skip_serializing_if = "Match::is_default")]
    pub link_match: Match,
    /// Check: the Max_Payload_Size the function is set to, bytes (exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mps: Option<u32>,
    /// Check: the most AER errors (all severities) the kernel may have counted; 0 = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aer_errors: Option<u64>,
    /// Check: the ASPM states enabled on the link above the function, exactly: `disabled`,
    /// `L0s`, `L1` or `L0s L1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aspm: Option<String>,
}

/// One USB device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsbExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Selector: the device's sysfs name, bus-port.port (`2-1`, `1-3.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Selector: `vendor:product` in hex, as lsusb prints it (`04e8:61f5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Selector: the device a block device sits on (`sda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// Selector: the device a network interface sits on (`eth1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Check: the negotiated speed in Mb/s (1.5, 12, 480, 5000, 10000, 20000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<f64>,
    /// How the speed compares: `at_least` (the default) or `exactly`.
    #[serde(default, skip_serializing_if = "Match::is_default")]
    pub speed_match: Match,
    /// Check: a mass-storage device's transport driver, `uas` or `usb-storage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

/// One disk (a whole block device with hardware below it; partitions and virtual devices
/// such as loop, dm, md and zram are not hardware).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockExpect {
    /// What the disk is, for the reader (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Selector: where the disk sits, from the CPU down, as `headroom audit --save-expect`
    /// writes it (`pci-0000:00:1f.2-ata1`, `pci-0000:01:00.0-nvme-1`,
    /// `platform-80860F14:00-mmc0:0001`): stable across boots, as a PCI address is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Selector: the kernel's world-wide identifier (`wwid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwid: Option<String>,
    /// Selector: the serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Selector: the kernel's name (`sda`, `nvme0n1`): it may change between boots, so use
    /// it beside `path`, `wwid` or `serial` rather than alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Check: the model string (`device/model`), exactly (spaces around it ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Check: the transport, as `headroom audit` shows it (`nvme`, `ata`, `scsi`, `usb`,
    /// `mmc`, `virtio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Check: the size in bytes, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Check: whether the kernel sees a rotating disk (`queue/rotational`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Check: the active I/O scheduler (`queue/scheduler`: `none`, `mq-deadline`, `bfq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// Check: the largest request the kernel builds, KiB (`queue/max_sectors_kb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u64>,
    /// Check: the largest request the device accepts, KiB (`queue/max_hw_sectors_kb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hw_sectors_kb: Option<u64>,
    /// Check: the logical block size, bytes (`queue/logical_block_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_block_size: Option<u32>,
    /// Check: the physical block size, bytes (`queue/physical_block_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_block_size: Option<u32>,
}

/// One network interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Selector: the interface name (`eth0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Selector: the bound driver (`igb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Check: the link speed in Mb/s (sysfs `speed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// How the speed compares: `at_least` (the default) or `exactly`.
    #[serde(default, skip_serializing_if = "Match::is_default")]
    pub speed_match: Match,
}
