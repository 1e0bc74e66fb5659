//! Synthetic config space and sysfs trees, for tests and benchmarks of the audit.
//!
//! Register offsets and field positions follow the PCI Local Bus Spec 3.0 (type 0/1 headers)
//! and the PCIe Base Spec 6.0 section 7.5.3 (PCI Express Capability) and 7.8.4 (AER).

use model::inventory::pci::address::PciAddress;
use model::{Aspm, LinkState, PortType};
use probe::pci::regs::*;
use std::io;
use std::path::{Path, PathBuf};

/// A function's config space to synthesize.
#[derive(Debug, Clone)]
pub struct SynthFunction {
    pub vendor_id: u16,
    pub device_id: u16,
    /// 24-bit class code (base, sub, prog-if).
    pub class: u32,
    /// Bridges: (primary, secondary, subordinate) bus numbers, type 1 header.
    pub buses: Option<(u8, u8, u8)>,
    pub express: Option<SynthExpress>,
    /// AER UESta and CESta raw values, in an AER extended capability at 0x100.
    pub aer_status: Option<(u32, u32)>,
}

#[derive(Debug, Clone)]
pub struct SynthExpress {
    pub port_type: PortType,
    pub capable: LinkState,
    pub status: LinkState,
    pub mps_supported: u16,
    pub mps: u16,
    pub mrrs: u16,
    pub aspm_support: Aspm,
    pub aspm_enabled: Aspm,
    /// LnkCtl2 target speed; `None` leaves it at the capability.
    pub target: Option<model::PcieGen>,
}

impl SynthExpress {
    /// A port or device of `port_type` capable of `capable`, trained at `status`: MPS 256 of
    /// 256 supported, MRRS 512, ASPM L0s and L1 supported and off, no target speed set.
    /// Change the rest with struct update syntax.
    pub fn new(port_type: PortType, capable: LinkState, status: LinkState) -> SynthExpress {
        SynthExpress {
            port_type,
            capable,
            status,
            mps_supported: 256,
            mps: 256,
            mrrs: 512,
            aspm_support: Aspm {
                l0s: true,
                l1: true,
            },
            aspm_enabled: Aspm::default(),
            target: None,
        }
    }
}

fn size_code(bytes: u16) -> u16 {
    // 128 << code, code 0..=5 (DevCap/DevCtl encodings).
    (bytes.max(128) / 128).trailing_zeros() as u16
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

impl SynthFunction {
    /// 4096 bytes of config space.
    pub fn config(&self) -> Vec<u8> {
        let mut b = vec![0u8; PCI_CFG_SPACE_EXP_SIZE];
        put16(&mut b, PCI_VENDOR_ID, self.vendor_id);
        put16(&mut b, PCI_DEVICE_ID, self.device_id);
        put16(&mut b, PCI_COMMAND, 0x0006); // memory space + bus master
        b[PCI_CLASS_PROG] = self.class as u8;
        put16(&mut b, PCI_CLASS_DEVICE, (self.class >> 8) as u16);
        if let Some((p, s, sub)) = self.buses {
            b[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_BRIDGE;
            b[PCI_PRIMARY_BUS] = p;
            b[PCI_SECONDARY_BUS] = s;
            b[PCI_SUBORDINATE_BUS] = sub;
        }
        if let Some(e) = &self.express {
            // The PCI Express capability at 0x40, alone in the list.
            const EXP: usize = 0x40;
            put16(&mut b, PCI_STATUS, PCI_STATUS_CAP_LIST);
            b[PCI_CAPABILITY_LIST] = EXP as u8;
            b[EXP + PCI_CAP_LIST_ID] = PCI_CAP_ID_EXP;
            b[EXP + PCI_CAP_LIST_NEXT] = 0x00; // last in list
            let pt: u16 = match e.port_type {
                PortType::Endpoint => 0,
                PortType::LegacyEndpoint => 1,
                PortType::RootPort => 4,
                PortType::UpstreamPort => 5,
                PortType::DownstreamPort => 6,
                PortType::PcieToPciBridge => 7,
                PortType::PciToPcieBridge => 8,
                PortType::RootComplexIntegratedEndpoint => 9,
                PortType::RootComplexEventCollector => 10,
                PortType::Unknown(c) => u16::from(c),
            };
            put16(&mut b, EXP + PCI_EXP_FLAGS, 0x0002 | (pt << 4)); // version 2
            put32(
                &mut b,
                EXP + PCI_EXP_DEVCAP,
                u32::from(size_code(e.mps_supported)),
            );
            put16(
                &mut b,
                EXP + PCI_EXP_DEVCTL,
                (size_code(e.mps) << 5) | (size_code(e.mrrs) << 12),
            );
            let aspm_bits = |a: Aspm| u32::from(a.l0s) | (u32::from(a.l1) << 1);
            put32(
                &mut b,
                EXP + PCI_EXP_LNKCAP,
                u32::from(e.capable.gen.number())
                    | (u32::from(e.capable.width) << 4)
                    | (aspm_bits(e.aspm_support) << 10),
            );
            put16(
                &mut b,
                EXP + PCI_EXP_LNKCTL,
                aspm_bits(e.aspm_enabled) as u16,
            );
            put16(
                &mut b,
                EXP + PCI_EXP_LNKSTA,
                u16::from(e.status.gen.number()) | (u16::from(e.status.width) << 4),
            );
            // LnkCap2 supported speeds vector: bits 1..=gen.
            let vector: u32 = (1..=u32::from(e.capable.gen.number()))
                .map(|g| 1 << g)
                .sum();
            put32(&mut b, EXP + PCI_EXP_LNKCAP2, vector);
            let target = e.target.unwrap_or(e.capable.gen);
            put16(&mut b, EXP + PCI_EXP_LNKCTL2, u16::from(target.number()));
        }
        if let Some((ue, ce)) = self.aer_status {
            const AER: usize = PCI_CFG_SPACE_SIZE;
            put32(&mut b, AER, u32::from(PCI_EXT_CAP_ID_ERR) | (2 << 16)); // version 2, last
            put32(&mut b, AER + PCI_ERR_UNCOR_STATUS, ue);
            put32(&mut b, AER + PCI_ERR_COR_STATUS, ce);
        }
        b
    }
}

/// Write a sysfs tree under `root` with `functions` laid out as the kernel does:
/// `/sys/devices/pciDDDD:BB/<parent chain>/<address>/` with `vendor`, `device`, `class`,
/// `config`, link attributes, and `/sys/bus/pci/devices/<address>` symlinks.
/// `parent_of` gives each function's bridge.
pub fn write_tree(
    root: &Path,
    functions: &[(PciAddress, Option<PciAddress>, SynthFunction)],
) -> io::Result<()> {
    let bus_dir = root.join("sys/bus/pci/devices");
    std::fs::create_dir_all(&bus_dir)?;
    let mut paths: std::collections::HashMap<PciAddress, PathBuf> = Default::default();
    for (addr, parent, f) in functions {
        let base = match parent.and_then(|p| paths.get(&p)) {
            Some(p) => p.clone(),
            None => PathBuf::from(format!(
                "sys/devices/pci{:04x}:{:02x}",
                addr.domain, addr.bus
            )),
        };
        let rel = base.join(addr.to_string());
        let dir = root.join(&rel);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("vendor"), format!("0x{:04x}\n", f.vendor_id))?;
        std::fs::write(dir.join("device"), format!("0x{:04x}\n", f.device_id))?;
        std::fs::write(dir.join("class"), format!("0x{:06x}\n", f.class))?;
        std::fs::write(dir.join("config"), f.config())?;
        if let Some(e) = &f.express {
            let speed = |l: LinkState| format!("{:.1} GT/s PCIe\n", l.gen.gts());
            std::fs::write(dir.join("current_link_speed"), speed(e.status))?;
            std::fs::write(
                dir.join("current_link_width"),
                format!("{}\n", e.status.width),
            )?;
            std::fs::write(dir.join("max_link_speed"), speed(e.capable))?;
            std::fs::write(dir.join("max_link_width"), format!("{}\n", e.capable.width))?;
        }
        // /sys/bus/pci/devices/X -> ../../../devices/...: three levels up from bus/pci/devices.
        let below_sys = rel.strip_prefix("sys").unwrap_or(&rel);
        let target = Path::new("../../..").join(below_sys);
        std::os::unix::fs::symlink(target, bus_dir.join(addr.to_string()))?;
        paths.insert(*addr, rel);
    }
    Ok(())
}
