//! `headroom audit`: its document (the inventory of PCI functions and links, USB, block and
//! network devices, the system, the findings) and what a report shows of it.

/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::DocumentKind;
use crate::document::{Document, DocumentError};
use crate::export::cases::Case;
use crate::export::openmetrics::Metrics;
use crate::summary::{counted_table, put, InterfaceCeiling, Summary};
use crate::table::{dash, mb, Table};
use crate::words::{serde_name, yes_no};
use model::inventory::block::BlockInventory;
use model::inventory::net::NetInventory;
use model::inventory::pci::PciAudit;
use model::inventory::usb::UsbInventory;
use model::system::SystemContext;
use model::units::MB;
use model::Finding;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `headroom audit --json` writes (the envelope aside), read back by report, compare,
/// history and the survey. An `--lspci` dump has the PCI section alone: the others are null.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuditDocument {
    /// What was audited; absent in documents that did not record it.
    #[serde(default)]
    pub source: Option<Source>,
    pub pci: PciAudit,
    #[serde(default)]
    pub system: Option<SystemContext>,
    #[serde(default)]
    pub usb: Option<UsbInventory>,
    #[serde(default)]
    pub block: Option<BlockInventory>,
    #[serde(default)]
    pub net: Option<NetInventory>,
    /// V4L2 video nodes: the card, driver and bus, and what QUERYCAP and the format
    /// enumeration said of each that could be opened.
    #[serde(default)]
    pub video: Option<Vec<model::video::VideoNode>>,
    /// Every finding of every section, most severe first.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

impl AuditDocument {
    /// The audit of a whole inventory read under `root` (`/`, or a captured tree), judged:
    /// each section's findings filled, and every finding in one list, most severe first.
    pub fn of_inventory(
        mut inventory: model::inventory::Inventory,
        root: PathBuf,
    ) -> AuditDocument {
        let findings = findings::judge(&mut inventory);
        AuditDocument {
            source: Some(Source::Root(root)),
            pci: inventory.pci,
            system: Some(inventory.system),
            usb: Some(inventory.usb),
            block: Some(inventory.block),
            net: Some(inventory.net),
            video: Some(inventory.video),
            findings,
        }
    }

    /// The audit of the PCI functions of an `lspci -xxx` dump read from `file`, judged.
    pub fn of_dump(mut pci: PciAudit, file: PathBuf) -> AuditDocument {
        let findings = findings::judge_pci(&mut pci);
        AuditDocument {
            source: Some(Source::LspciDump(file)),
            pci,
            system: None,
            usb: None,
            block: None,
            net: None,
            video: None,
            findings,
        }
    }
}

/// Where an audit read its facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A root directory holding sys/ and proc/ (`/`, or a captured tree).
    Root(PathBuf),
    /// An `lspci -xxx` dump.
    LspciDump(PathBuf),
}

/// The run's facts, tests and rows for every renderer ([`super::summarize`] adds what every kind
/// shares: the envelope, the path, the counters sampled beside the engine).
/// Whether a block device is listed, in the terminal's audit and in reports alike: those
/// with a medium. Unconfigured loop devices and an unused zram0 (size 0) would be a row of
/// dashes each on almost every machine.
pub(crate) fn listed(d: &model::inventory::block::BlockDevice) -> bool {
    d.size_bytes != Some(0)
}

pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let a = <AuditDocument as super::KindDocument>::read(doc, origin)?;
    s.parts = inventory(&a)
        .into_iter()
        .map(|t| crate::summary::Part::table(crate::summary::Place::Listing, t))
        .collect();
    // Each link's state, so compare shows a link that retrained or moved.
    for l in &a.pci.links {
        let c = &l.comparison;
        let mut state = c.current.to_string();
        if c.common != c.current {
            state.push_str(&format!(" (both ends support {})", c.common));
        }
        let key = format!("link PCIe {} -> {}", l.upstream, l.downstream);
        put(s, &key, state);
    }
    // Each devfreq device's governor and range, so compare shows a DDR clock fixed or freed.
    for d in a.system.iter().flat_map(|sys| &sys.devfreq) {
        put(
            s,
            &format!("devfreq {}", d.name),
            crate::kinds::audit::text::devfreq_line(d)
                .split_once(": ")
                .map_or(String::new(), |(_, v)| v.to_string()),
        );
    }
    for d in a.usb.iter().flat_map(|u| &u.devices) {
        if let Some(speed) = d.speed_mbps {
            let v = d.version.as_deref().unwrap_or("?");
            put(
                s,
                &format!("link USB {}", d.name),
                format!("{speed}M (USB {v})"),
            );
        }
    }
    for i in a.net.iter().flat_map(|n| &n.interfaces) {
        let speed = i
            .speed_mbps
            .map_or("speed unknown".into(), |x| format!("{x} Mb/s"));
        let mtu = i.mtu.map(|m| format!(", MTU {m}")).unwrap_or_default();
        // A shaper added or changed is a change of the link's ceiling.
        let tbf = i
            .shaper
            .map(|sh| format!(", tbf {:.2} Mbit/s on egress", sh.rate_bps / 1e6))
            .unwrap_or_default();
        put(
            s,
            &format!("link net {}", i.name),
            format!("{speed}{mtu}{tbf}"),
        );
    }
    Ok(())
}

/// An audit's inventory as the terminal lists it, one table per bus.
fn inventory(a: &AuditDocument) -> Vec<(String, Table)> {
    let opt = |v: Option<String>| v.unwrap_or_else(dash);
    let mut out = Vec::new();
    {
        let pci = &a.pci;
        let rows: Vec<Vec<String>> = pci
            .functions
            .iter()
            .map(|f| {
                let names = &f.names;
                let what = [&names.class, &names.vendor, &names.device]
                    .into_iter()
                    .flatten()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(": ");
                let link = &f.kernel_link;
                vec![
                    f.address.to_string(),
                    if what.is_empty() { dash() } else { what },
                    opt(f.driver.clone()),
                    opt(link.current.map(|s| s.to_string())),
                    opt(link.max.map(|s| s.to_string())),
                ]
            })
            .collect();
        out.push(counted_table(
            "PCI",
            ("function", "functions"),
            "",
            &[
                ("Address", false),
                ("Device", false),
                ("Driver", false),
                ("Link", false),
                ("Max", false),
            ],
            rows,
        ));
        let rows: Vec<Vec<String>> = pci
            .links
            .iter()
            .map(|l| {
                let cmp = &l.comparison;
                let downgraded = cmp.speed_below_common || cmp.width_below_common;
                vec![
                    format!("{} -> {}", l.upstream, l.downstream),
                    cmp.current.to_string(),
                    cmp.common.to_string(),
                    mb(l.ceiling.current.effective_write_bps / MB),
                    mb(l.ceiling.capable.effective_write_bps / MB),
                    if downgraded { "downgraded" } else { "" }.to_string(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            out.push(counted_table(
                "PCI Express",
                ("link", "links"),
                " (ceiling: effective write per direction)",
                &[
                    ("Link", false),
                    ("State", false),
                    ("Both ends support", false),
                    ("Ceiling (MB/s)", true),
                    ("Capable ceiling (MB/s)", true),
                    ("Note", false),
                ],
                rows,
            ));
        }
    }
    if let Some(usb) = a.usb.as_ref().filter(|u| !u.devices.is_empty()) {
        let rows: Vec<Vec<String>> = usb
            .devices
            .iter()
            .map(|d| {
                let product = [
                    d.vendor_name.clone(),
                    d.product_name.clone().or(d.product.clone()),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
                let drivers: Vec<String> = d
                    .interfaces
                    .iter()
                    .filter_map(|i| i.driver.clone())
                    .collect();
                let lanes = d.rx_lanes.unwrap_or(1).clamp(1, 2) as u8;
                // The audit's bulk ceiling of the device's link (root hubs have none).
                let ceiling = d
                    .speed_mbps
                    .filter(|_| !d.root_hub)
                    .and_then(|s| model::ceiling::usb::bulk_ceiling_for_sysfs(s, lanes));
                vec![
                    d.name.clone(),
                    opt(d.speed_mbps.map(|s| s.to_string())),
                    opt(d.version.clone()),
                    if product.is_empty() { dash() } else { product },
                    if d.root_hub {
                        "root hub".to_string()
                    } else if drivers.is_empty() {
                        dash()
                    } else {
                        drivers.join(", ")
                    },
                    opt(d
                        .storage
                        .as_ref()
                        .map(|s| serde_name(&s.transport).replace('_', " "))),
                    opt(ceiling.map(|c| mb(c / MB))),
                ]
            })
            .collect();
        out.push(counted_table(
            "USB",
            ("device", "devices"),
            "",
            &[
                ("Device", false),
                ("Speed (Mb/s)", true),
                ("USB", false),
                ("Product", false),
                ("Driver", false),
                ("Storage", false),
                ("Bulk ceiling (MB/s)", true),
            ],
            rows,
        ));
    }
    // Each interrupt and isochronous endpoint of the current alternate settings, with the
    // bandwidth it reserves.
    let endpoint_rows: Vec<Vec<String>> = a
        .usb
        .iter()
        .flat_map(|u| &u.devices)
        .filter(|d| !d.root_hub)
        .flat_map(|d| &d.interfaces)
        .flat_map(|i| {
            i.endpoints.iter().filter_map(move |e| {
                let r = e.reserved.as_ref()?;
                Some(vec![
                    i.name.clone(),
                    opt(i.alt_setting.map(|a| a.to_string())),
                    format!(
                        "{} {} 0x{:02x}",
                        e.transfer.label(),
                        e.direction.label(),
                        e.address
                    ),
                    format!(
                        "{} B per {}",
                        r.bytes_per_interval,
                        text::interval_words(r.interval_us)
                    ),
                    format!("{:.3}", r.bytes_per_second / MB),
                ])
            })
        })
        .collect();
    if !endpoint_rows.is_empty() {
        out.push(counted_table(
            "USB reserved bandwidth",
            ("endpoint", "endpoints"),
            "",
            &[
                ("Interface", false),
                ("Alt", true),
                ("Endpoint", false),
                ("Per service interval", false),
                ("Reserved (MB/s)", true),
            ],
            endpoint_rows,
        ));
    }
    let udc_rows: Vec<Vec<String>> = a
        .usb
        .iter()
        .flat_map(|u| &u.device_side.controllers)
        .map(|c| {
            vec![
                c.name.clone(),
                opt(c.state.clone()),
                opt(c.current_speed.clone()),
                opt(c.maximum_speed.clone()),
                opt(c.gadget.clone()),
            ]
        })
        .collect();
    if !udc_rows.is_empty() {
        out.push(counted_table(
            "USB device controllers",
            ("controller", "controllers"),
            "",
            &[
                ("UDC", false),
                ("State", false),
                ("Speed", false),
                ("Maximum", false),
                ("Gadget", false),
            ],
            udc_rows,
        ));
    }
    let block_rows = a
        .block
        .as_ref()
        .map(|b| b.devices.iter().filter(|d| listed(d)).collect::<Vec<_>>())
        .unwrap_or_default();
    if !block_rows.is_empty() {
        let rows: Vec<Vec<String>> = block_rows
            .into_iter()
            .map(|d| {
                let q = d.queue.as_ref();
                let kb = |v: Option<u64>| opt(v.map(|x| x.to_string()));
                vec![
                    d.name.clone(),
                    serde_name(&d.kind),
                    opt(d.size_bytes.map(model::units::format_capacity)),
                    serde_name(&d.transport),
                    opt(q.and_then(|q| q.rotational).map(yes_no)),
                    opt(q.and_then(|q| q.scheduler.clone())),
                    kb(q.and_then(|q| q.max_sectors_kb)),
                    // As the terminal says it: the driver set no limit of its own.
                    match q.and_then(|q| q.max_hw_sectors_kb) {
                        Some(model::inventory::block::MAX_HW_SECTORS_KB_NO_LIMIT..) => {
                            "no limit".to_string()
                        }
                        v => kb(v),
                    },
                    kb(q.and_then(|q| q.read_ahead_kb)),
                    d.mounts
                        .iter()
                        .map(|m| match m.fs_type.as_str() {
                            "" => m.mount_point.display().to_string(),
                            fs => format!("{} ({fs})", m.mount_point.display()),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                ]
            })
            .collect();
        out.push(counted_table(
            "Block",
            ("device", "devices"),
            " (sizes in binary units: GiB = 2^30 B; queue limits in KiB)",
            &[
                ("Name", false),
                ("Kind", false),
                ("Size", true),
                ("Transport", false),
                ("Rotational", false),
                ("Scheduler", false),
                ("max_sectors_kb", true),
                ("max_hw_sectors_kb", true),
                ("read_ahead_kb", true),
                ("Mounts", false),
            ],
            rows,
        ));
    }
    if let Some(net) = a.net.as_ref().filter(|n| !n.interfaces.is_empty()) {
        let rows: Vec<Vec<String>> = net
            .interfaces
            .iter()
            .map(|i| {
                // The audit's TCP goodput ceiling (IPv4, timestamps) of the interface each
                // way, as the terminal computes it (none for a virtual link; a tbf bounds
                // only what is sent).
                let tcp = InterfaceCeiling::of(i, |c| mb(c / MB)).map(|c| c.text);
                vec![
                    i.name.clone(),
                    opt(i.operstate.clone()),
                    opt(i.speed_mbps.map(|s| s.to_string())),
                    opt(i.duplex.clone()),
                    opt(i.mtu.map(|m| m.to_string())),
                    if i.is_virtual {
                        "virtual".to_string()
                    } else {
                        opt(i.driver.clone())
                    },
                    opt(tcp),
                ]
            })
            .collect();
        out.push(counted_table(
            "Network",
            ("interface", "interfaces"),
            "",
            &[
                ("Interface", false),
                ("State", false),
                ("Speed (Mb/s)", true),
                ("Duplex", false),
                ("MTU", true),
                ("Driver", false),
                ("TCP ceiling (MB/s)", true),
            ],
            rows,
        ));
    }
    if let Some(v) = a.video.as_ref().filter(|v| !v.is_empty()) {
        let rows = v.iter().map(text::video_row).collect();
        out.push(counted_table(
            "Video",
            ("device", "devices"),
            "",
            &[
                ("Node", false),
                ("Card", false),
                ("Driver", false),
                ("Bus", false),
                ("Capabilities", false),
                ("Formats", false),
            ],
            rows,
        ));
    }
    // The SoC's devfreq devices: a scaling DDR clock moves every DMA result.
    if let Some(sys) = a.system.as_ref().filter(|s| !s.devfreq.is_empty()) {
        let mhz = |hz: Option<u64>| opt(hz.map(|hz| (hz / 1_000_000).to_string()));
        let rows = sys
            .devfreq
            .iter()
            .map(|d| {
                vec![
                    if d.is_memory() {
                        format!("{} (DDR)", d.name)
                    } else {
                        d.name.clone()
                    },
                    opt(d.governor.clone()),
                    mhz(d.min_hz),
                    mhz(d.max_hz),
                    mhz(d.cur_hz),
                ]
            })
            .collect();
        out.push(counted_table(
            "Frequency scaling (devfreq)",
            ("device", "devices"),
            "",
            &[
                ("Device", false),
                ("Governor", false),
                ("Min (MHz)", true),
                ("Max (MHz)", true),
                ("Now (MHz)", true),
            ],
            rows,
        ));
    }
    out
}

mod om {
    use crate::export::openmetrics::Def;
    pub const SPEED: Def = Def {
        name: "pcie_link_speed",
        help: "PCI Express link speed per lane, transfers per second: `current` now, `capable` the best both ends support, `upstream_max`/`downstream_max` each end's own (LnkCap)",
        unit: Some("transfers_per_second"),
    };
    pub const WIDTH: Def = Def {
        name: "pcie_link_width",
        help: "PCI Express link width in lanes, by state as for the speed",
        unit: Some("lanes"),
    };
    pub const DOWNGRADED: Def = Def {
        name: "pcie_link_downgraded",
        help: "1 when a PCI Express link runs slower or narrower than both its ends support",
        unit: None,
    };
    pub const CEILING: Def = Def {
        name: "pcie_link_ceiling",
        help: "Theoretical ceiling of a PCI Express link (payload, as `headroom ceiling pcie` computes it), bytes per second, by state (current or capable) and direction (write: towards the device, read: completions back)",
        unit: Some("bytes_per_second"),
    };
    pub const MPS: Def = Def {
        name: "pcie_link_max_payload",
        help:
            "Max_Payload_Size of a link: each end's setting and the largest both support (common)",
        unit: Some("bytes"),
    };
    pub const ASPM: Def = Def {
        name: "pcie_link_aspm_enabled",
        help: "1 when an ASPM state (L0s, L1) is enabled on either end of a link",
        unit: None,
    };
    pub const AER: Def = Def {
        name: "pcie_aer_errors",
        help: "AER errors the kernel counted for a PCI function since boot (sysfs aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal), by severity and error name",
        unit: None,
    };
    pub const USB_SPEED: Def = Def {
        name: "usb_device_speed",
        help: "Negotiated USB signalling rate of a device in bytes per second (5000 Mb/s = 625e6)",
        unit: Some("bytes_per_second"),
    };
    pub const NET_SPEED: Def = Def {
        name: "net_interface_speed",
        help: "Link speed of a network interface (sysfs speed) in bytes per second, as node_exporter's node_network_speed_bytes",
        unit: Some("bytes_per_second"),
    };
}

/// An audit's own metrics: per PCIe link its speed and width (now, capable, each end's
/// maximum), the downgraded flag, its ceilings and MPS; per function its AER counters; USB
/// and network link speeds. Labels name the device as a user finds it: `address`, `device`
/// (lspci's name), `driver`, and for a link its `upstream` port.
pub fn metrics(m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
    let a = <AuditDocument as super::KindDocument>::read(doc, origin)?;
    let function = |addr: &model::inventory::pci::address::PciAddress| {
        a.pci.functions.iter().find(|f| &f.address == addr)
    };
    for l in &a.pci.links {
        let below = function(&l.downstream);
        let address = l.downstream.to_string();
        let upstream = l.upstream.to_string();
        let device = below.map(|f| f.display_name()).unwrap_or_default();
        let driver = below.and_then(|f| f.driver.clone()).unwrap_or_default();
        let slot = below.and_then(|f| f.slot.clone());
        let mut base = vec![
            ("address", address.as_str()),
            ("upstream", upstream.as_str()),
            ("device", device.as_str()),
            ("driver", driver.as_str()),
        ];
        // The physical slot, where the platform names one (/sys/bus/pci/slots).
        if let Some(slot) = &slot {
            base.push(("slot", slot.as_str()));
        }
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v: Vec<(&str, &str)> = base.clone();
            v.extend_from_slice(extra);
            v
        };
        let c = &l.comparison;
        for (state, s) in [
            ("current", c.current),
            ("capable", c.common),
            ("upstream_max", c.upstream),
            ("downstream_max", c.downstream),
        ] {
            m.gauge(&om::SPEED, &with(&[("state", state)]), s.gen.gts() * 1e9);
            m.gauge(&om::WIDTH, &with(&[("state", state)]), f64::from(s.width));
        }
        let down = c.speed_below_common || c.width_below_common;
        m.gauge(&om::DOWNGRADED, &base, if down { 1.0 } else { 0.0 });
        for (state, ceil) in [
            ("current", &l.ceiling.current),
            ("capable", &l.ceiling.capable),
        ] {
            for (direction, v) in [
                ("write", ceil.effective_write_bps),
                ("read", ceil.effective_read_bps),
            ] {
                m.gauge(
                    &om::CEILING,
                    &with(&[("state", state), ("direction", direction)]),
                    v,
                );
            }
        }
        for (end, v) in [
            ("upstream", l.max_payload_upstream),
            ("downstream", l.max_payload_downstream),
            ("common", l.max_payload_common),
        ] {
            if let Some(v) = v {
                m.gauge(&om::MPS, &with(&[("end", end)]), f64::from(v));
            }
        }
        for (state, on) in [("L0s", l.aspm_enabled.l0s), ("L1", l.aspm_enabled.l1)] {
            m.gauge(
                &om::ASPM,
                &with(&[("state", state)]),
                if on { 1.0 } else { 0.0 },
            );
        }
    }
    for f in &a.pci.functions {
        let Some(aer) = &f.aer_counters else {
            continue;
        };
        let address = f.address.to_string();
        let device = f.display_name();
        let driver = f.driver.clone().unwrap_or_default();
        for (severity, list) in [
            ("correctable", &aer.correctable),
            ("nonfatal", &aer.nonfatal),
            ("fatal", &aer.fatal),
        ] {
            // The TOTAL_ERR_* lines are the sums of the others: Prometheus sums by label.
            for (error, count) in list.iter().filter(|(n, _)| !n.starts_with("TOTAL_")) {
                let mut labels = vec![
                    ("address", address.as_str()),
                    ("device", device.as_str()),
                    ("driver", driver.as_str()),
                ];
                if let Some(slot) = &f.slot {
                    labels.push(("slot", slot.as_str()));
                }
                labels.extend([("severity", severity), ("error", error.as_str())]);
                m.counter(&om::AER, &labels, *count);
            }
        }
    }
    for d in a.usb.iter().flat_map(|u| &u.devices) {
        if let Some(speed) = d.speed_mbps {
            let product = d
                .product_name
                .clone()
                .or_else(|| d.product.clone())
                .unwrap_or_default();
            let driver = d
                .storage
                .as_ref()
                .and_then(|s| s.driver.clone())
                .or_else(|| d.driver.clone())
                .unwrap_or_default();
            m.gauge(
                &om::USB_SPEED,
                &[
                    ("device", d.name.as_str()),
                    ("product", product.as_str()),
                    ("driver", driver.as_str()),
                ],
                speed * 1e6 / 8.0,
            );
        }
    }
    for i in a.net.iter().flat_map(|n| &n.interfaces) {
        if let Some(speed) = i.speed_mbps {
            let driver = i.driver.clone().unwrap_or_default();
            m.gauge(
                &om::NET_SPEED,
                &[("interface", i.name.as_str()), ("driver", driver.as_str())],
                speed as f64 * 1e6 / 8.0,
            );
        }
    }
    Ok(())
}

/// The findings about a link the audit's text marks downgraded, each as (subject, message):
/// a link below what both ends support (a warning), or below what the device itself supports
/// while the port above allows no more (an info finding, "the best the slot allows", though
/// the text shows the link as `(downgraded)` with its loss). A finding is about the
/// downgrade when it is on the link's downstream function and names the device's own
/// capability (an MPS or ASPM finding on the same link does not).
pub fn downgrade_findings(
    doc: &Document,
    origin: &str,
) -> Result<Vec<(String, String)>, DocumentError> {
    let a = <AuditDocument as super::KindDocument>::read(doc, origin)?;
    let mut out = Vec::new();
    for l in a
        .pci
        .links
        .iter()
        .filter(|l| below_common(l) || below_device(l))
    {
        let subject = l.downstream.to_string();
        let capable = l.comparison.downstream.to_string();
        out.extend(
            a.findings
                .iter()
                .filter(|f| f.subject == subject && f.message.contains(&capable))
                .map(|f| (f.subject.clone(), f.message.clone())),
        );
    }
    Ok(out)
}

fn below_common(l: &model::inventory::pci::AuditedLink) -> bool {
    l.comparison.speed_below_common || l.comparison.width_below_common
}

/// The link runs below the downstream device's own capability (whatever the port allows).
fn below_device(l: &model::inventory::pci::AuditedLink) -> bool {
    let c = &l.comparison;
    c.current.gen < c.downstream.gen || c.current.width < c.downstream.width
}

/// An audit's own cases for a board lab ([`crate::export::cases`]): per PCIe link a check that it
/// runs at what its device can do (`link-not-downgraded`: the text's `(downgraded)` mark,
/// the slot's limit included) and one that it runs at what both ends can do
/// (`link-at-both-ends-best`: a downgrade the slot does not explain, the audit's warning),
/// with its speed, width and ceiling as figures; per function with AER counters a check that
/// none counted an error.
pub fn cases(
    doc: &Document,
    origin: &str,
) -> Result<Vec<crate::export::cases::Case>, DocumentError> {
    use crate::export::cases::Case;
    let a = <AuditDocument as super::KindDocument>::read(doc, origin)?;
    let mut out = Vec::new();
    for l in &a.pci.links {
        let address = l.downstream.to_string();
        let p = |what: &str| vec!["pcie".to_string(), address.clone(), what.to_string()];
        let c = &l.comparison;
        let found = format!(
            "{address} runs at {} GT/s x{}; the device can do {} GT/s x{}, both ends {} GT/s x{}",
            c.current.gen.gts(),
            c.current.width,
            c.downstream.gen.gts(),
            c.downstream.width,
            c.common.gen.gts(),
            c.common.width
        );
        let slot = if below_device(l) && !below_common(l) {
            ": the port above (the slot) allows no more"
        } else {
            ""
        };
        out.push(Case::check(
            p("link-not-downgraded"),
            !below_device(l) && !below_common(l),
            format!("{found}{slot}"),
        ));
        out.push(Case::check(
            p("link-at-both-ends-best"),
            !below_common(l),
            found,
        ));
        let figure = |what: &str, value: f64, unit: &'static str| Case {
            path: p(what),
            outcome: crate::export::cases::Outcome::Measured,
            measurement: Some((value, unit)),
            comment: None,
        };
        out.push(figure("link-speed", c.current.gen.gts(), "GT/s"));
        out.push(figure("link-width", f64::from(c.current.width), "lanes"));
        out.push(figure(
            "ceiling-read",
            l.ceiling.current.effective_read_bps / MB,
            "MB/s",
        ));
    }
    for f in &a.pci.functions {
        let Some(aer) = &f.aer_counters else {
            continue;
        };
        let errors: u64 = [&aer.correctable, &aer.nonfatal, &aer.fatal]
            .into_iter()
            .flatten()
            .filter(|(n, _)| !n.starts_with("TOTAL_"))
            .map(|(_, c)| *c)
            .sum();
        out.push(Case::check(
            vec!["pcie".into(), f.address.to_string(), "aer-no-errors".into()],
            errors == 0,
            format!("{} AER errors counted on {}", errors, f.display_name()),
        ));
    }
    Ok(out)
}

/// The audit as every report reads it.
pub struct AuditKind;

impl super::Kind for AuditKind {
    fn kind(&self) -> DocumentKind {
        <AuditDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["pci"]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize(doc, origin, s)
    }

    /// A finding on a link the text marks downgraded fails as the link does.
    fn downgraded_links(
        &self,
        doc: &Document,
        origin: &str,
    ) -> Result<Vec<(String, String)>, DocumentError> {
        downgrade_findings(doc, origin)
    }

    /// Its links' and AER counters' checks.
    fn own_cases(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        cases(doc, origin)
    }

    fn metrics_of(
        &self,
        m: &mut Metrics,
        doc: &Document,
        s: &Summary,
        origin: &str,
    ) -> Result<(), DocumentError> {
        crate::export::metrics::add_summary(m, doc, s);
        metrics(m, doc, origin)
    }

    /// `headroom.prom`: the host's links and AER counters, beside each benchmark's file.
    fn textfile_name(&self) -> String {
        "headroom.prom".to_string()
    }
}

impl super::KindDocument for AuditDocument {
    const KIND: DocumentKind = DocumentKind::Audit;

    fn text(&self, how: &super::Text<'_>) -> String {
        text::render(self, how.host, &how.style)
    }
}
