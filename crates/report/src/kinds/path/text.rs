//! `headroom path`: the chain, one hop per line, each link with its ceiling now and at its
//! best, and the bottleneck.

use crate::terminal::Style;
use model::path::{Hop, LayerKind, PathLink, TargetPath};
use model::units::format_mb_per_s;
use std::fmt::Write as _;

/// The chain, one hop per line, indented per layer branch; then the bottleneck.
pub(crate) fn render(
    path: &TargetPath,
    pci_name: &dyn Fn(&str) -> String,
    style: &Style,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold(&path.chain.target));
    render_hops(&mut out, &path.chain.hops, path, pci_name, "  ", 0);
    if let Some(s) = &path.chain.stopped {
        let _ = writeln!(out, "  {} {s}", style.warn("stopped:"));
    }
    for l in &path.backs_gadget_luns {
        let _ = writeln!(out, "  {}", backed_lun_words(l));
    }
    let _ = writeln!(out);
    let why = path.no_bottleneck_reason.as_deref().unwrap_or("unknown");
    let to_cpu = path.bottleneck_link();
    let from_cpu = path.bottleneck_from_cpu_link();
    if to_cpu == from_cpu || from_cpu.is_none() {
        bottleneck(&mut out, "Bottleneck", to_cpu, why, style);
    } else {
        // Each direction has its own (a shaper bounds only what this host sends).
        let (to, from) = directions(path);
        bottleneck(
            &mut out,
            &format!("Bottleneck for {to}"),
            to_cpu,
            why,
            style,
        );
        bottleneck(
            &mut out,
            &format!("Bottleneck for {from}"),
            from_cpu,
            why,
            style,
        );
    }
    out
}

/// `backs USB gadget g1's mass_storage.0 lun.0 (UDC dummy_udc.0, configured, high-speed:
/// bulk ceiling 53.2 MB/s): the host reads that USB disk at most as fast as this path`.
pub fn backed_lun_words(l: &model::path::BackedLun) -> String {
    let o = |s: &str| crate::outside::line(s).into_owned();
    let mut w = format!(
        "backs USB gadget {}'s {} {}",
        o(&l.gadget),
        o(&l.function),
        o(&l.lun)
    );
    if l.read_only == Some(true) {
        w.push_str(" (read-only)");
    }
    match &l.udc {
        Some(udc) => {
            let facts: Vec<String> = [l.udc_state.as_deref(), l.udc_speed.as_deref()]
                .into_iter()
                .flatten()
                .map(o)
                .chain(
                    l.usb_bulk_ceiling_bps
                        .map(|c| format!("bulk ceiling {:.1} MB/s", c / model::units::MB)),
                )
                .collect();
            let _ = write!(w, " on UDC {}", o(udc));
            if !facts.is_empty() {
                let _ = write!(w, " ({})", facts.join(", "));
            }
            w.push_str(": the host reads that USB disk at most as fast as this path and that link");
        }
        None => w.push_str(" (the gadget is bound to no UDC)"),
    }
    w
}

/// How a path's two directions are called: towards the CPU and away from it.
fn directions(path: &TargetPath) -> (&'static str, &'static str) {
    match path.chain.hops.first() {
        Some(Hop::Network { .. }) => ("receiving", "sending"),
        _ => ("reads", "writes"),
    }
}

fn bottleneck(out: &mut String, title: &str, b: Option<&PathLink>, why: &str, style: &Style) {
    let ceiling = b.and_then(|b| Some((b, b.ceiling_to_cpu_bps().or(b.ceiling_from_cpu_bps())?)));
    match ceiling {
        Some((b, c)) => {
            let _ = writeln!(
                out,
                "{title}: {} at {}: {}{}",
                b.name,
                b.state,
                style.bold(&format_mb_per_s(c)),
                capable_text(b)
            );
            let _ = writeln!(out, "  ({}; MB/s = 10^6 B/s)", b.basis);
        }
        None => {
            let _ = writeln!(out, "{title}: none known: {why}");
        }
    }
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
                match speed_mbps {
                    Some(s) => format!(" {s} Mb/s"),
                    None if *is_virtual => String::new(),
                    // Down, or a driver that has no speed to report (virtio_net).
                    None => " (no link speed reported)".to_string(),
                },
                // sysfs says `unknown` where the driver reports no duplex: nothing to show.
                duplex
                    .as_deref()
                    .filter(|d| *d != "unknown")
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
            Hop::Video { name, card, driver } => format!(
                "video {name}{}{}",
                card.as_deref().map(|c| format!(" {c}")).unwrap_or_default(),
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

/// "  link 5 GT/s x1 = 397 MB/s ..." for each link the hop owns on the path (an interface:
/// its Ethernet link, and the tbf shaper on its egress).
fn link_suffix(h: &Hop, path: &TargetPath) -> String {
    let Some(id) = h.id() else {
        return String::new();
    };
    let from_cpu = path.bottleneck_from_cpu_link();
    let (_, sending) = directions(path);
    let mut s = String::new();
    for (i, l) in path.links.iter().enumerate().filter(|(_, l)| l.hop == id) {
        match l.ceiling_to_cpu_bps() {
            Some(c) => {
                let _ = write!(s, "  link {}", l.state);
                if let Some(n) = &l.note {
                    let _ = write!(s, " ({n})");
                }
                let _ = write!(s, " = {}{}", format_mb_per_s(c), capable_text(l));
            }
            None => {
                // Only one way: a shaper on the interface's egress.
                let c = l.ceiling_from_cpu_bps().map_or("–".into(), format_mb_per_s);
                let _ = write!(s, "  {} {} = {c} {sending} only", l.name, l.state);
            }
        }
        if path.bottleneck == Some(i) {
            s.push_str("  <- bottleneck");
            if from_cpu.is_some_and(|f| f != l) {
                let _ = write!(s, " ({})", directions(path).0);
            }
        } else if from_cpu == Some(l) {
            let _ = write!(s, "  <- bottleneck for {sending}");
        }
    }
    s
}
