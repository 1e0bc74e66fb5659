//! `headroom path`: the chain, one hop per line, each link with its ceiling now and at its
//! best, and the bottleneck.

use super::Style;
use model::path::{Hop, LayerKind, PathLink, TargetPath};
use model::units::format_mb_per_s;
use std::fmt::Write as _;

/// The chain, one hop per line, indented per layer branch; then the bottleneck.
pub fn render(path: &TargetPath, pci_name: &dyn Fn(&str) -> String, style: &Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(&path.chain.target));
    render_hops(&mut out, &path.chain.hops, path, pci_name, "  ", 0);
    if let Some(s) = &path.chain.stopped {
        let _ = writeln!(out, "  {} {s}", style.warn("stopped:"));
    }
    let _ = writeln!(out);
    match path.bottleneck_link() {
        Some(b) => {
            let _ = writeln!(
                out,
                "Bottleneck: {} at {}: {}{}",
                b.name,
                b.state,
                style.bold(&format_mb_per_s(b.ceiling_bps)),
                capable_text(b)
            );
            let _ = writeln!(out, "  ({}; MB/s = 10^6 B/s)", b.basis);
        }
        None => {
            let why = path.no_bottleneck_reason.as_deref().unwrap_or("unknown");
            let _ = writeln!(out, "Bottleneck: none known: {why}");
        }
    }
    out
}

fn capable_text(l: &PathLink) -> String {
    match (&l.capable_state, l.capable_ceiling_bps) {
        (Some(s), Some(c)) => format!(" (capable {s}: {})", format_mb_per_s(c)),
        _ => String::new(),
    }
}

fn render_hops(
    out: &mut String,
    hops: &[Hop],
    path: &TargetPath,
    pci_name: &dyn Fn(&str) -> String,
    indent: &str,
    depth: usize,
) {
    for h in hops {
        let line = match h {
            Hop::Filesystem {
                fs_type,
                source,
                mount_point,
                dev,
            } => format!(
                "{fs_type} on {source} ({dev}) mounted at {}",
                mount_point.display()
            ),
            Hop::Partition { name, number } => match number {
                Some(n) => format!("partition {name} (#{n})"),
                None => format!("partition {name}"),
            },
            Hop::Layer { name, kind, .. } => match kind {
                LayerKind::Dm { name: dm, uuid } => format!(
                    "device-mapper {name}{}{}",
                    dm.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
                    uuid.as_deref()
                        .and_then(|u| u.split('-').next())
                        .map(|t| format!(" [{t}]"))
                        .unwrap_or_default()
                ),
                LayerKind::Md { level } => {
                    format!("md {name} {}", level.as_deref().unwrap_or(""))
                }
                LayerKind::Loop { backing_file } => format!(
                    "loop {name}{}",
                    backing_file
                        .as_ref()
                        .map(|f| format!(" -> {}", f.display()))
                        .unwrap_or_default()
                ),
                LayerKind::Net { devtype } => {
                    format!("{name} ({})", devtype.as_deref().unwrap_or("stacked"))
                }
            },
            Hop::Disk {
                name,
                transport,
                model,
                rotational,
            } => format!(
                "disk {name} ({}{}{})",
                serde_json::to_value(transport)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                model
                    .as_deref()
                    .map(|m| format!(", {m}"))
                    .unwrap_or_default(),
                match rotational {
                    Some(true) => ", rotational",
                    _ => "",
                }
            ),
            Hop::Network {
                name,
                speed_mbps,
                duplex,
                driver,
                is_virtual,
            } => format!(
                "interface {name}{}{}{}{}",
                speed_mbps.map(|s| format!(" {s} Mb/s")).unwrap_or_default(),
                duplex
                    .as_deref()
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default(),
                driver
                    .as_deref()
                    .map(|d| format!(" [{d}]"))
                    .unwrap_or_default(),
                if *is_virtual { " (virtual)" } else { "" }
            ),
            Hop::Ata { port, sata_spd, .. } => format!(
                "SATA {port} {}",
                sata_spd.as_deref().unwrap_or("(speed unknown)")
            ),
            Hop::ScsiHost { host, driver } => format!(
                "SCSI {host}{}",
                driver
                    .as_deref()
                    .map(|d| format!(" [{d}]"))
                    .unwrap_or_default()
            ),
            Hop::Usb {
                name,
                root_hub,
                speed_mbps,
                version,
                driver,
                ..
            } => format!(
                "USB {name}{}{}{}{}",
                if *root_hub { " root hub" } else { "" },
                speed_mbps.map(|s| format!(" {s}M")).unwrap_or_default(),
                version
                    .as_deref()
                    .map(|v| format!(" (USB {})", v.trim()))
                    .unwrap_or_default(),
                driver
                    .as_deref()
                    .map(|d| format!(" [{d}]"))
                    .unwrap_or_default()
            ),
            Hop::Mmc {
                host,
                card,
                card_type,
                timing,
                ..
            } => format!(
                "MMC {host}{}{}{}",
                card.as_deref().map(|c| format!(" {c}")).unwrap_or_default(),
                card_type
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                timing
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            ),
            Hop::Virtio { name, driver } => format!(
                "{name}{}",
                driver
                    .as_deref()
                    .map(|d| format!(" [{d}]"))
                    .unwrap_or_default()
            ),
            Hop::Pci { address, driver } => {
                let name = pci_name(address);
                format!(
                    "PCI {address} {name}{}",
                    driver
                        .as_deref()
                        .map(|d| format!(" [{d}]"))
                        .unwrap_or_default()
                )
            }
            Hop::Platform { name, driver } => format!(
                "platform {name}{}",
                driver
                    .as_deref()
                    .map(|d| format!(" [{d}]"))
                    .unwrap_or_default()
            ),
            Hop::Cpu => "CPU".to_string(),
        };
        let _ = writeln!(out, "{indent}{line}{}", link_suffix(h, path));
        if let Hop::Layer { branches, .. } = h {
            if depth < 16 {
                for b in branches {
                    let sub = format!("{indent}  | ");
                    render_hops(out, &b.hops, path, pci_name, &sub, depth + 1);
                    if let Some(s) = &b.stopped {
                        let _ = writeln!(out, "{sub}stopped: {s}");
                    }
                }
            }
        }
    }
}

/// " = 397 of 6996 MB/s: link 5 GT/s x1 ..." for the hop that owns a link on the path.
fn link_suffix(h: &Hop, path: &TargetPath) -> String {
    let Some(id) = h.id() else {
        return String::new();
    };
    let Some((i, l)) = path.links.iter().enumerate().find(|(_, l)| l.hop == id) else {
        return String::new();
    };
    let mut s = format!("  link {}", l.state);
    if let Some(n) = &l.note {
        let _ = write!(s, " ({n})");
    }
    let _ = write!(
        s,
        " = {}{}",
        format_mb_per_s(l.ceiling_bps),
        capable_text(l)
    );
    if path.bottleneck == Some(i) {
        s.push_str("  <- bottleneck");
    }
    s
}
