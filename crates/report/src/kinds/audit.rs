//! `headroom audit`: its document (the inventory of PCI functions and links, USB, block and
//! network devices, the system, the findings) and what a report shows of it.

/// Its judgement: the findings of a run, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::{Document, DocumentError};
use crate::summary::{counted_table, put, serde_name, yes_no, InterfaceCeiling, Summary};
use crate::table::{dash, mb, Table};
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
    /// Every finding of every section, most severe first.
    #[serde(default)]
    pub findings: Vec<Finding>,
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
pub(crate) fn summarize(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let a: AuditDocument = doc.view(origin)?;
    s.inventory = inventory(&a);
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
    if let Some(block) = a.block.as_ref().filter(|b| !b.devices.is_empty()) {
        let rows: Vec<Vec<String>> = block
            .devices
            .iter()
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
    out
}
