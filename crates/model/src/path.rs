//! The path of a target: the chain of hops from a file, a block device or a network
//! interface down to the CPU (filesystem, partition, dm/md/loop layers, disk, bus devices,
//! PCI functions), the links on it with their ceilings, and the bottleneck.
//!
//! probe fills these types (`probe::chain::resolve`, `probe::path::resolve`); report reads
//! them. The duplex rule ([`LinkKind::full_duplex`]) and the path's ceiling for a workload
//! ([`TargetPath::ceiling`]) are decided here, once.

use crate::ceiling::mmc::MmcMode;
use crate::ceiling::PathCeiling;
use crate::pcie::LinkState;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;

/// The resolved chain of one target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    /// The target as given.
    pub target: String,
    /// From the target towards the CPU.
    pub hops: Vec<Hop>,
    /// Why the chain ends before the CPU (tmpfs, network filesystem, missing sysfs...).
    pub stopped: Option<String>,
    pub warnings: Vec<String>,
}

/// One branch below a layer (a dm/md slave, a loop device's backing file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    pub hops: Vec<Hop>,
    pub stopped: Option<String>,
}

/// Which kind of storage interface a disk hangs off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Nvme,
    /// SATA or PATA through libata (an `ataN` port in the path).
    Ata,
    /// A SCSI host adapter (SAS, RAID, old AHCI paths without `ataN`).
    Scsi,
    Usb,
    Mmc,
    Virtio,
    /// No hardware below (loop, dm, md, zram, ram).
    Virtual,
    Unknown,
}

/// The kind of a stacking layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LayerKind {
    /// Device mapper: `name` from `dm/name`, `uuid` prefix tells LVM/CRYPT/...
    Dm {
        name: Option<String>,
        uuid: Option<String>,
    },
    /// Software RAID, `level` like `raid1`.
    Md { level: Option<String> },
    /// A loop device and the file behind it.
    Loop { backing_file: Option<PathBuf> },
    /// A network device stacked on others (bridge, bond, VLAN), `DEVTYPE` from its uevent.
    Net { devtype: Option<String> },
}

/// One hop of a chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "hop", rename_all = "snake_case")]
pub enum Hop {
    Filesystem {
        fs_type: String,
        source: String,
        mount_point: PathBuf,
        /// `major:minor` of the filesystem (`st_dev`).
        dev: String,
    },
    Partition {
        name: String,
        number: Option<u32>,
    },
    Layer {
        name: String,
        kind: LayerKind,
        branches: Vec<Branch>,
    },
    Disk {
        name: String,
        transport: Transport,
        model: Option<String>,
        rotational: Option<bool>,
    },
    Network {
        name: String,
        /// Link speed in Mb/s (`None` when down or not reported).
        #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
        speed_mbps: Option<u64>,
        duplex: Option<String>,
        driver: Option<String>,
        #[serde(rename = "virtual")]
        is_virtual: bool,
    },
    /// A libata port with its negotiated SATA link speed.
    Ata {
        port: String,
        /// `sata_spd` as the kernel writes it: "6.0 Gbps".
        sata_spd: Option<String>,
        #[serde(rename = "rate_mbits_per_sec", alias = "rate_mbps")]
        rate_mbps: Option<f64>,
    },
    /// A SCSI host adapter (when there is no libata port or USB device to name instead).
    ScsiHost {
        host: String,
        driver: Option<String>,
    },
    Usb {
        name: String,
        root_hub: bool,
        /// Negotiated rate in Mb/s; already counts both lanes of a Gen 2x2 link.
        #[serde(rename = "speed_mbits_per_sec", alias = "speed_mbps")]
        speed_mbps: Option<f64>,
        rx_lanes: Option<u32>,
        tx_lanes: Option<u32>,
        version: Option<String>,
        /// Driver of the interface the chain goes through (`uas`, `usb-storage`, `r8152`),
        /// or of the device for hubs.
        driver: Option<String>,
        storage: Option<StorageTransport>,
    },
    Mmc {
        host: String,
        card: Option<String>,
        /// `MMC`, `SD`, `SDIO`.
        card_type: Option<String>,
        /// `timing spec` of debugfs `ios`, e.g. "mmc HS200".
        timing: Option<String>,
        #[serde(rename = "rate_mbits_per_sec", alias = "rate_mbps")]
        rate_mbps: Option<f64>,
    },
    Virtio {
        name: String,
        driver: Option<String>,
    },
    Pci {
        /// `0000:01:00.0`.
        address: String,
        driver: Option<String>,
    },
    Platform {
        name: String,
        driver: Option<String>,
    },
    /// A V4L2 device node (`video0`) and the card its driver names.
    Video {
        name: String,
        card: Option<String>,
        driver: Option<String>,
    },
    Cpu,
}

impl Hop {
    /// The hop's own name, for a hop that can own a link: a PCI address, a USB device name,
    /// a libata port, an MMC host, an interface.
    pub fn id(&self) -> Option<&str> {
        match self {
            Hop::Pci { address, .. } => Some(address),
            Hop::Usb { name, .. } | Hop::Network { name, .. } => Some(name),
            Hop::Ata { port, .. } => Some(port),
            Hop::Mmc { host, .. } => Some(host),
            _ => None,
        }
    }

    /// The nominal signalling rate of this hop in Mb/s (10^6 bit/s), before any encoding
    /// or protocol overhead, where the hop has one of its own. PCI hops get theirs from the
    /// PCIe link state, which is not read here.
    pub fn nominal_rate_mbps(&self) -> Option<f64> {
        match self {
            Hop::Usb { speed_mbps, .. } => *speed_mbps,
            Hop::Ata { rate_mbps, .. } | Hop::Mmc { rate_mbps, .. } => *rate_mbps,
            Hop::Network { speed_mbps, .. } => speed_mbps.map(|s| s as f64),
            _ => None,
        }
    }
}

impl Chain {
    /// Every PCI address on the chain, branches included, from the target towards the CPU.
    pub fn pci_addresses(&self) -> Vec<String> {
        fn walk(hops: &[Hop], out: &mut Vec<String>) {
            for h in hops {
                match h {
                    Hop::Pci { address, .. } => out.push(address.clone()),
                    Hop::Layer { branches, .. } => {
                        branches.iter().for_each(|b| walk(&b.hops, out));
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.hops, &mut out);
        out
    }
}

/// How a USB mass-storage interface moves its commands and data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageTransport {
    /// USB Attached SCSI (driver `uas`, protocol 62h): command queueing, streams.
    Uas,
    /// Bulk-Only Transport (driver `usb-storage`, protocol 50h): one command at a time.
    BulkOnly,
    /// Another protocol (CBI, vendor specific) or no driver bound.
    Other,
}

impl StorageTransport {
    /// How users name it: "UAS", "Bulk-Only (usb-storage)".
    pub fn label(self) -> &'static str {
        match self {
            StorageTransport::Uas => "UAS",
            StorageTransport::BulkOnly => "Bulk-Only (usb-storage)",
            StorageTransport::Other => "other storage protocol",
        }
    }
}

/// The kind of a link on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    Pcie,
    Usb,
    Sata,
    Mmc,
    Ethernet,
    /// A traffic shaper (a tbf qdisc) at the root of an interface: it bounds only what the
    /// host sends out of it (its egress), not what it receives.
    Shaper,
}

/// The state of a link, typed per kind of link. Documents and terminals show it as one
/// piece of text ([`fmt::Display`]), the same for every kind: "8 GT/s x1", "5000 Mb/s",
/// "6.0 Gbps", "SD UHS-I SDR104", "52 Mb/s bus", "1000 Mb/s, MTU 1500", "100 Mbit/s, overhead
/// 24 B" (a shaper).
#[derive(Clone, Debug, PartialEq)]
pub enum PathLinkState {
    /// A PCIe link: speed and width.
    Pcie(LinkState),
    /// A USB link at its negotiated rate in Mb/s (both lanes of Gen 2x2 counted).
    Usb { mbps: f64 },
    /// A SATA link at its negotiated line rate in Gb/s (sysfs `sata_spd`: 1.5, 3.0, 6.0).
    Sata { gbps: f64 },
    /// An MMC/SD bus in a known timing mode.
    Mmc(MmcMode),
    /// An MMC/SD bus whose timing mode is not known, by its bus rate in Mb/s.
    MmcBus { mbps: f64 },
    /// An Ethernet link at its speed in Mb/s with the interface's MTU in bytes.
    Ethernet { mbps: u64, mtu: u32 },
    /// A token-bucket shaper at its rate in bits per second (tc prints it in whole bytes per
    /// second) and the bytes it adds to each packet's length: "100 Mbit/s, overhead 24 B".
    Tbf { bits_per_sec: u64, overhead: u32 },
}

impl fmt::Display for PathLinkState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathLinkState::Pcie(l) => write!(f, "{l}"),
            PathLinkState::Usb { mbps } => write!(f, "{mbps} Mb/s"),
            // As the kernel writes sata_spd (drivers/ata/libata-sata.c: "%s Gbps").
            PathLinkState::Sata { gbps } => write!(f, "{gbps:.1} Gbps"),
            PathLinkState::Mmc(m) => f.write_str(m.label()),
            PathLinkState::MmcBus { mbps } => write!(f, "{mbps} Mb/s bus"),
            PathLinkState::Ethernet { mbps, mtu } => write!(f, "{mbps} Mb/s, MTU {mtu}"),
            // The rate as tc-tbf(8) is given it ("100mbit"); bits per second when not whole.
            PathLinkState::Tbf {
                bits_per_sec,
                overhead,
            } => {
                if bits_per_sec % 1_000_000 == 0 {
                    write!(f, "{} Mbit/s", bits_per_sec / 1_000_000)?;
                } else {
                    write!(f, "{bits_per_sec} bit/s")?;
                }
                if *overhead > 0 {
                    write!(f, ", overhead {overhead} B")?;
                }
                Ok(())
            }
        }
    }
}

impl Serialize for PathLinkState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for PathLinkState {
    type Err = String;

    /// The text [`fmt::Display`] writes, read back: a document's `state` and
    /// `capable_state`.
    fn from_str(t: &str) -> Result<PathLinkState, String> {
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let unknown = || format!("{t:?} is not a link state headroom writes");
        if let Some(mode) = MmcMode::ALL.into_iter().find(|m| m.label() == t) {
            return Ok(PathLinkState::Mmc(mode));
        }
        if let Some((gts, width)) = t.split_once(" GT/s x") {
            let gen = num(gts)
                .and_then(crate::pcie::PcieGen::from_gts)
                .ok_or_else(unknown)?;
            let width = width.parse::<u8>().map_err(|_| unknown())?;
            return Ok(PathLinkState::Pcie(LinkState::new(gen, width)));
        }
        if let Some((mbps, mtu)) = t.split_once(" Mb/s, MTU ") {
            return match (mbps.parse::<u64>(), mtu.parse::<u32>()) {
                (Ok(mbps), Ok(mtu)) => Ok(PathLinkState::Ethernet { mbps, mtu }),
                _ => Err(unknown()),
            };
        }
        let (rate, overhead) = match t.split_once(", overhead ") {
            Some((r, o)) => (r, o.strip_suffix(" B").and_then(|o| o.parse().ok())),
            None => (t, Some(0)),
        };
        if rate.ends_with(" Mbit/s") || rate.ends_with(" bit/s") {
            let bits_per_sec = match (rate.strip_suffix(" Mbit/s"), rate.strip_suffix(" bit/s")) {
                (Some(m), _) => m.parse::<u64>().ok().and_then(|m| m.checked_mul(1_000_000)),
                (None, Some(b)) => b.parse::<u64>().ok(),
                (None, None) => None,
            };
            return match (bits_per_sec, overhead) {
                (Some(bits_per_sec), Some(overhead)) => Ok(PathLinkState::Tbf {
                    bits_per_sec,
                    overhead,
                }),
                _ => Err(unknown()),
            };
        }
        if let Some(mbps) = t.strip_suffix(" Mb/s bus").and_then(num) {
            return Ok(PathLinkState::MmcBus { mbps });
        }
        if let Some(mbps) = t.strip_suffix(" Mb/s").and_then(num) {
            return Ok(PathLinkState::Usb { mbps });
        }
        if let Some(gbps) = t.strip_suffix(" Gbps").and_then(num) {
            return Ok(PathLinkState::Sata { gbps });
        }
        Err(unknown())
    }
}

impl<'de> Deserialize<'de> for PathLinkState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PathLinkState, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One link of a path with its ceiling, in bytes per second, towards the CPU (for PCIe: the
/// device's DMA writes to memory, what a disk read or a received packet uses; the other
/// direction is in `ceiling_other_direction_bps`). A shaper bounds only the direction away
/// from the CPU (what the host sends): it has no ceiling towards it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathLink {
    pub kind: LinkKind,
    /// The chain hop this link belongs to ([`Hop::id`]: `0000:01:00.0`, `2-1`, `ata2`).
    /// Documents written before links named their hop have none: empty.
    #[serde(default)]
    pub hop: String,
    /// "PCIe 0000:00:01.0 -> 0000:01:00.0", "USB 4-1", "SATA ata1", "MMC mmc0", "eth0".
    pub name: String,
    /// The state now: "5 GT/s x1", "480 Mb/s", "6.0 Gbps", "SD UHS-I SDR104", "1000 Mb/s,
    /// MTU 1500" (typed; written as this text).
    pub state: PathLinkState,
    /// The best state its ends support, where known and different.
    pub capable_state: Option<PathLinkState>,
    /// Towards the CPU; `None` when the link does not bound that direction (a shaper).
    #[serde(rename = "ceiling_bytes_per_sec", alias = "ceiling_bps")]
    pub ceiling_bps: Option<f64>,
    /// Away from the CPU, where it differs from `ceiling_bps` (or that is `None`).
    #[serde(
        rename = "ceiling_other_direction_bytes_per_sec",
        alias = "ceiling_other_direction_bps"
    )]
    pub ceiling_other_direction_bps: Option<f64>,
    /// The ceiling at `capable_state`.
    #[serde(
        rename = "capable_ceiling_bytes_per_sec",
        alias = "capable_ceiling_bps"
    )]
    pub capable_ceiling_bps: Option<f64>,
    /// What the ceiling counts ("effective PCIe write, MPS 256", "bulk transfers").
    pub basis: String,
    /// Why it is below its best ("downgraded", "Bulk-Only, not UAS").
    pub note: Option<String>,
}

/// A target resolved to its path and bottleneck.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetPath {
    pub chain: Chain,
    /// Links from the target towards the CPU (every branch of a layered device included).
    pub links: Vec<PathLink>,
    /// Index into `links` of the smallest ceiling towards the CPU (what a disk read or a
    /// received packet crosses).
    pub bottleneck: Option<usize>,
    /// Why there is no bottleneck, when there is none.
    pub no_bottleneck_reason: Option<String>,
    /// Index into `links` of the smallest ceiling away from the CPU (what a disk write or a
    /// sent packet crosses: a shaper on an interface's egress is one). Documents from before
    /// it have none: [`TargetPath::bottleneck_from_cpu_link`] finds it in their links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck_from_cpu: Option<usize>,
    /// The USB gadget logical units this file backs: a host reading that gadget's disk gets
    /// at most what this path delivers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backs_gadget_luns: Vec<BackedLun>,
}

/// A USB gadget's mass-storage logical unit whose backing file is the target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackedLun {
    pub gadget: String,
    pub function: String,
    pub lun: String,
    pub read_only: Option<bool>,
    /// The UDC the gadget is bound to, its state and speed as the kernel words them.
    pub udc: Option<String>,
    pub udc_state: Option<String>,
    pub udc_speed: Option<String>,
    /// The bulk ceiling of the UDC's current speed, bytes/s: what the host side can read at
    /// most, whatever the storage.
    pub usb_bulk_ceiling_bps: Option<f64>,
}

impl LinkKind {
    /// Whether the link carries both directions at once, so that a read/write mix is bound
    /// by its busier direction ([`PathCeiling::for_read_percent`]): PCIe (a transmit and a
    /// receive pair per lane) and Ethernet (full duplex as `ethtool` reports it for the
    /// links headroom models). The others share one medium, so a mix is bound by the sum:
    /// SATA (one FIS on the link at a time), MMC (one data bus), USB (USB 2.0 is half duplex;
    /// the bulk ceiling of `ceiling::usb` is one figure for both directions, so USB 3 is
    /// counted the same way).
    pub fn full_duplex(self) -> bool {
        matches!(self, LinkKind::Pcie | LinkKind::Ethernet | LinkKind::Shaper)
    }
}

impl PathLink {
    /// Bytes per second towards the CPU (what a disk read or a received packet moves), when
    /// the link bounds that direction.
    pub fn ceiling_to_cpu_bps(&self) -> Option<f64> {
        self.ceiling_bps
    }

    /// Bytes per second away from the CPU (what a disk write or a sent packet moves): the
    /// other direction's ceiling where the link has its own for it, else the same.
    pub fn ceiling_from_cpu_bps(&self) -> Option<f64> {
        self.ceiling_other_direction_bps.or(self.ceiling_bps)
    }
}

impl TargetPath {
    /// The index into `links` of the link with the smallest ceiling towards the CPU (the
    /// value [`TargetPath::bottleneck`] holds once probe has filled the links).
    pub fn find_bottleneck(links: &[PathLink]) -> Option<usize> {
        smallest(links, PathLink::ceiling_to_cpu_bps)
    }

    /// The index into `links` of the link with the smallest ceiling away from the CPU (the
    /// value [`TargetPath::bottleneck_from_cpu`] holds).
    pub fn find_bottleneck_from_cpu(links: &[PathLink]) -> Option<usize> {
        smallest(links, PathLink::ceiling_from_cpu_bps)
    }

    /// The bottleneck link towards the CPU, when the path has a link with a known ceiling
    /// that way.
    pub fn bottleneck_link(&self) -> Option<&PathLink> {
        self.bottleneck.and_then(|i| self.links.get(i))
    }

    /// The bottleneck link away from the CPU: the document's, or for a document from before
    /// it, the one its links give.
    pub fn bottleneck_from_cpu_link(&self) -> Option<&PathLink> {
        self.bottleneck_from_cpu
            .or_else(|| Self::find_bottleneck_from_cpu(&self.links))
            .and_then(|i| self.links.get(i))
    }

    /// The path's ceiling per direction at its bottleneck link, with the duplex rule of that
    /// link ([`LinkKind::full_duplex`]), or why there is none (virtio, tmpfs, a network
    /// filesystem, no sysfs) in one sentence.
    pub fn ceiling(&self) -> Result<PathCeiling, String> {
        let why = || {
            self.no_bottleneck_reason
                .clone()
                .unwrap_or_else(|| "the path could not be resolved".to_string())
        };
        let Some(b) = self.bottleneck_link() else {
            return Err(why());
        };
        // The bottleneck towards the CPU has a ceiling that way, unless a document says
        // otherwise.
        let Some(read) = b.ceiling_to_cpu_bps() else {
            return Err(why());
        };
        let mut bottleneck = format!("{} at {}", b.name, b.state);
        if let Some(n) = &b.note {
            bottleneck.push_str(&format!(" ({n})"));
        }
        Ok(PathCeiling {
            read_bytes_per_sec: read,
            write_bytes_per_sec: b.ceiling_from_cpu_bps().unwrap_or(read),
            full_duplex: b.kind.full_duplex(),
            bottleneck,
        })
    }
}

/// The index of the link with the smallest `ceiling` among those that have one.
fn smallest(links: &[PathLink], ceiling: impl Fn(&PathLink) -> Option<f64>) -> Option<usize> {
    links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| ceiling(l).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_state_reads_back_from_its_text() {
        let mut states = vec![
            PathLinkState::Pcie(LinkState::new(crate::pcie::PcieGen::Gen1, 1)),
            PathLinkState::Pcie(LinkState::new(crate::pcie::PcieGen::Gen4, 16)),
            PathLinkState::Usb { mbps: 480.0 },
            PathLinkState::Usb { mbps: 20000.0 },
            PathLinkState::Sata { gbps: 1.5 },
            PathLinkState::Sata { gbps: 6.0 },
            PathLinkState::MmcBus { mbps: 52.0 },
            PathLinkState::Ethernet {
                mbps: 1000,
                mtu: 1500,
            },
            PathLinkState::Tbf {
                bits_per_sec: 100_000_000,
                overhead: 24,
            },
            PathLinkState::Tbf {
                bits_per_sec: 1_234_568,
                overhead: 0,
            },
        ];
        states.extend(MmcMode::ALL.map(PathLinkState::Mmc));
        for s in states {
            let text = s.to_string();
            assert_eq!(text.parse::<PathLinkState>(), Ok(s.clone()), "{text}");
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<PathLinkState>(&json).unwrap(), s);
        }
        let e = "fast".parse::<PathLinkState>().unwrap_err();
        assert_eq!(e, "\"fast\" is not a link state headroom writes");
        assert!("3 GT/s x4".parse::<PathLinkState>().is_err());
    }

    #[test]
    fn a_written_path_reads_back_as_it_was() {
        let mut p = path(vec![
            link(LinkKind::Usb, 400e6, None),
            link(LinkKind::Pcie, 900e6, Some(950e6)),
        ]);
        p.chain.hops = vec![
            Hop::Filesystem {
                fs_type: "ext4".into(),
                source: "/dev/sda1".into(),
                mount_point: "/".into(),
                dev: "8:1".into(),
            },
            Hop::Layer {
                name: "dm-0".into(),
                kind: LayerKind::Dm {
                    name: Some("vg-root".into()),
                    uuid: None,
                },
                branches: vec![Branch {
                    hops: vec![Hop::Cpu],
                    stopped: None,
                }],
            },
            Hop::Network {
                name: "eth0".into(),
                speed_mbps: Some(1000),
                duplex: Some("full".into()),
                driver: None,
                is_virtual: false,
            },
        ];
        let json = serde_json::to_value(&p).unwrap();
        let back: TargetPath = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        // A document from before links named their hop (tests/fixtures/results/rpi5-*.json).
        let mut old = json;
        old["links"][0].as_object_mut().unwrap().remove("hop");
        let back: TargetPath = serde_json::from_value(old).unwrap();
        assert_eq!(back.links[0].hop, "");
    }

    fn link(kind: LinkKind, to_cpu: f64, from_cpu: Option<f64>) -> PathLink {
        PathLink {
            kind,
            hop: "h".into(),
            name: format!("{kind:?}"),
            state: PathLinkState::Usb { mbps: 5000.0 },
            capable_state: None,
            ceiling_bps: Some(to_cpu),
            ceiling_other_direction_bps: from_cpu,
            capable_ceiling_bps: None,
            basis: "b".into(),
            note: None,
        }
    }

    fn path(links: Vec<PathLink>) -> TargetPath {
        TargetPath {
            chain: Chain {
                target: "/x".into(),
                hops: vec![],
                stopped: None,
                warnings: vec![],
            },
            bottleneck: TargetPath::find_bottleneck(&links),
            bottleneck_from_cpu: TargetPath::find_bottleneck_from_cpu(&links),
            links,
            no_bottleneck_reason: Some("virtio is paravirtual".into()),
            backs_gadget_luns: Vec::new(),
        }
    }

    #[test]
    fn bottleneck_is_the_smallest_ceiling_and_sets_the_duplex_rule() {
        // A USB 3 bridge (shared medium) behind a PCIe link: the USB link bounds the path.
        let p = path(vec![
            link(LinkKind::Usb, 400e6, None),
            link(LinkKind::Pcie, 900e6, Some(950e6)),
        ]);
        assert_eq!(p.bottleneck_link().map(|l| l.kind), Some(LinkKind::Usb));
        let c = p.ceiling().unwrap();
        assert_eq!(
            (c.read_bytes_per_sec, c.write_bytes_per_sec),
            (400e6, 400e6)
        );
        assert!(!c.full_duplex);
        assert_eq!(c.bottleneck, "Usb at 5000 Mb/s");
        // A 50/50 mix on one medium: 400 MB/s in total.
        assert!((c.for_read_percent(50) - 400e6).abs() < 1.0);

        // PCIe alone: the write direction has its own ceiling and a mix is bound by the
        // busier direction (800/0.5 vs 600/0.5: 1200 MB/s).
        let p = path(vec![link(LinkKind::Pcie, 800e6, Some(600e6))]);
        let c = p.ceiling().unwrap();
        assert!(c.full_duplex);
        assert_eq!(c.write_bytes_per_sec, 600e6);
        assert!((c.for_read_percent(50) - 1200e6).abs() < 1.0);
    }

    #[test]
    fn a_shaper_is_the_bottleneck_only_of_what_leaves_the_cpu() {
        // An interface's 1000 Mb/s link both ways and a tbf on its egress.
        let shaper = PathLink {
            kind: LinkKind::Shaper,
            state: PathLinkState::Tbf {
                bits_per_sec: 100_000_000,
                overhead: 24,
            },
            ceiling_bps: None,
            ceiling_other_direction_bps: Some(11.8e6),
            ..link(LinkKind::Shaper, 0.0, None)
        };
        let p = path(vec![link(LinkKind::Ethernet, 117.7e6, None), shaper]);
        assert_eq!(p.bottleneck, Some(0));
        assert_eq!(p.bottleneck_from_cpu, Some(1));
        assert_eq!(p.ceiling().unwrap().read_bytes_per_sec, 117.7e6);
        // A document from before the field finds it in the links; it reads back as written.
        let json = serde_json::to_value(&p).unwrap();
        assert!(json["links"][1]["ceiling_bytes_per_sec"].is_null());
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("bottleneck_from_cpu");
        let old: TargetPath = serde_json::from_value(old).unwrap();
        assert_eq!(old.bottleneck_from_cpu_link(), p.links.get(1));
        let back: TargetPath = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
        // Alone on a virtual interface: nothing bounds what arrives.
        let p = path(vec![p.links[1].clone()]);
        assert_eq!(p.bottleneck, None);
        assert_eq!(p.bottleneck_from_cpu, Some(0));
        assert_eq!(p.ceiling().unwrap_err(), "virtio is paravirtual");
    }

    #[test]
    fn no_link_no_ceiling_says_why() {
        let p = path(vec![]);
        assert_eq!(p.bottleneck, None);
        assert_eq!(p.ceiling().unwrap_err(), "virtio is paravirtual");
    }

    #[test]
    fn states_are_written_as_the_kernel_and_the_seeds_write_them() {
        let pcie = LinkState::new(crate::PcieGen::Gen3, 1);
        let shown = [
            (PathLinkState::Pcie(pcie), "8 GT/s x1"),
            (PathLinkState::Usb { mbps: 480.0 }, "480 Mb/s"),
            (PathLinkState::Usb { mbps: 20000.0 }, "20000 Mb/s"),
            (PathLinkState::Sata { gbps: 3.0 }, "3.0 Gbps"),
            (PathLinkState::Sata { gbps: 1.5 }, "1.5 Gbps"),
            (PathLinkState::Mmc(MmcMode::EmmcHs200), "eMMC HS200"),
            (PathLinkState::MmcBus { mbps: 52.0 }, "52 Mb/s bus"),
            (
                PathLinkState::Ethernet {
                    mbps: 1000,
                    mtu: 9000,
                },
                "1000 Mb/s, MTU 9000",
            ),
            (
                PathLinkState::Tbf {
                    bits_per_sec: 200_000_000,
                    overhead: 0,
                },
                "200 Mbit/s",
            ),
        ];
        for (state, text) in shown {
            assert_eq!(state.to_string(), text);
            assert_eq!(serde_json::to_value(&state).unwrap(), text);
        }
    }

    #[test]
    fn duplex_by_kind() {
        assert!(LinkKind::Pcie.full_duplex() && LinkKind::Ethernet.full_duplex());
        assert!(![LinkKind::Usb, LinkKind::Sata, LinkKind::Mmc]
            .iter()
            .any(|k| k.full_duplex()));
    }
}
