//! `headroom audit`'s terminal text: the CPU/kernel context, the `lspci -tv`-like PCI tree,
//! the USB tree, the block table, the network list (each from `model::inventory`) and the
//! findings list.

use crate::terminal::Style;
use crate::words::plural as count;
use model::ceiling::usb::TransferType;
use model::ceiling::usb_endpoint::UsbEndpoint;
use model::inventory::block::{BlockDevice, BlockInventory, MAX_HW_SECTORS_KB_NO_LIMIT};
use model::inventory::gadget::{DeviceSide, FunctionKind};
use model::inventory::net::{Attachment, NetInventory};
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::{AuditedFunction, PciAudit};
use model::inventory::usb::{HostAttachment, UsbDevice, UsbInventory};
use model::system::SystemContext;
use model::units::{format_cpu_list, MB};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `headroom audit`'s text: the host (as `report` shows it under its title), the system, the
/// PCI functions, USB, block and network devices (those a `--root` scan found; a dump has
/// PCI alone), then the findings. `host` is the machine the audit read (with `--root`, the
/// tree's); a line only when it says something.
pub(crate) fn render(
    doc: &super::AuditDocument,
    host: Option<&model::system::Host>,
    style: &Style,
) -> String {
    let mut out = String::new();
    if let Some(h) = host.and_then(model::system::Host::describe) {
        out.push_str(&format!("Host: {h}\n"));
    }
    if let Some(s) = &doc.system {
        out.push_str(&system(s));
    }
    out.push_str(&pci(&doc.pci, style));
    if let Some(u) = &doc.usb {
        out.push_str(&usb(u, style));
    }
    if let Some(b) = &doc.block {
        out.push_str(&block(b));
    }
    if let Some(n) = &doc.net {
        out.push_str(&net(n));
    }
    if let Some(v) = doc.video.as_ref().filter(|v| !v.is_empty()) {
        let _ = writeln!(out, "\nVideo devices:");
        for n in v {
            let r = video_row(n);
            let mut line = format!("  {:<12} {} [{}] on {}", r[0], r[1], r[2], r[3]);
            for (what, v) in [("", &r[4]), ("formats ", &r[5])] {
                if *v != crate::table::dash() {
                    let _ = write!(line, "; {what}{v}");
                }
            }
            let _ = writeln!(out, "{line}");
        }
    }
    out.push_str(&crate::terminal::findings(&doc.findings, |s| {
        style.severity(s)
    }));
    out
}

/// The PCI section: a tree of functions (like `lspci -tv`, one line each with its link
/// state and ceiling).
pub fn pci(audit: &PciAudit, style: &Style) -> String {
    let mut out = String::new();
    let by_addr: BTreeMap<PciAddress, &AuditedFunction> =
        audit.functions.iter().map(|f| (f.address, f)).collect();
    let _ = writeln!(
        out,
        "PCI: {}, {}",
        count(audit.functions.len() as u64, "function", "functions"),
        count(
            audit.link_count() as u64,
            "PCI Express link",
            "PCI Express links"
        )
    );
    if !audit.links.is_empty() || audit.functions.iter().any(|f| f.own_link_ceiling.is_some()) {
        let _ = writeln!(
            out,
            "Link ceilings: effective write per direction, MB/s = 10^6 B/s (now of capable)"
        );
    }
    if let Some(p) = &audit.policy.aspm_policy {
        let _ = write!(out, "ASPM policy: {p}");
        let _ = writeln!(
            out,
            "; MPS policy: {}",
            audit
                .policy
                .mps_policy
                .as_deref()
                .unwrap_or("kernel default (no pci=pcie_bus_* option)")
        );
    }
    let roots: Vec<&AuditedFunction> = audit
        .functions
        .iter()
        .filter(|f| f.parent.is_none())
        .collect();
    for (i, f) in roots.iter().enumerate() {
        let last = i + 1 == roots.len();
        render_node(&mut out, audit, &by_addr, f, "", last, style, 0);
    }
    out
}

/// The CPU and kernel context the seeds' results depend on.
pub fn system(ctx: &SystemContext) -> String {
    let mut out = String::new();
    let k = &ctx.kernel;
    let _ = write!(
        out,
        "System: kernel {}, {}",
        k.release.as_deref().unwrap_or("release unknown"),
        k.preemption.describe()
    );
    if let Some(c) = &ctx.cpus_online {
        let _ = write!(out, "; {} CPUs online ({})", c.len(), format_cpu_list(c));
    }
    match ctx.smt_active {
        Some(true) => out.push_str("; SMT on"),
        Some(false) => out.push_str("; SMT off"),
        None => {}
    }
    out.push('\n');
    if ctx.cpufreq.is_empty() {
        out.push_str("  cpufreq: absent (no governor; the frequency is not visible)\n");
    } else {
        // Group CPUs by governor and range, as `cpupower frequency-info` users read them.
        let mut groups: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for f in &ctx.cpufreq {
            let mhz = |k: Option<u64>| k.map(|k| (k / 1000).to_string()).unwrap_or("?".into());
            let key = format!(
                "{} {}-{} MHz (now {} MHz)",
                f.governor.as_deref().unwrap_or("?"),
                mhz(f.min_khz),
                mhz(f.max_khz),
                mhz(f.cur_khz)
            );
            groups.entry(key).or_default().push(f.cpu);
        }
        for (k, cpus) in groups {
            let _ = writeln!(out, "  cpufreq CPUs {}: {k}", format_cpu_list(&cpus));
        }
    }
    // devfreq devices (the DDR controller, GPU, NPU), where the SoC has them.
    for d in &ctx.devfreq {
        let _ = writeln!(out, "  devfreq {}", devfreq_line(d));
    }
    if let Some(c) = &ctx.cmdline {
        let list = |v: &Option<Vec<u32>>| {
            v.as_deref()
                .map(format_cpu_list)
                .unwrap_or_else(|| "no".into())
        };
        let _ = writeln!(
            out,
            "  isolation: isolcpus={} nohz_full={} rcu_nocbs={}",
            list(&c.isolcpus),
            list(&c.nohz_full),
            list(&c.rcu_nocbs)
        );
        let _ = writeln!(out, "  cmdline: {}", c.raw);
    }
    out
}

/// The USB section: each bus as a tree (like `lsusb -t`) with speed, version, names, the
/// storage protocol and the bulk ceiling of each device's link.
pub fn usb(usb: &UsbInventory, style: &Style) -> String {
    let mut out = String::new();
    if usb.devices.is_empty() {
        // Said, not left out: a reader cannot tell a missing section from a forgotten one.
        let why = match usb.bus_present {
            Some(false) => "no /sys/bus/usb",
            _ => "no device in /sys/bus/usb/devices",
        };
        let _ = writeln!(out, "\nUSB: none ({why})");
        out.push_str(&device_side(&usb.device_side));
        return out;
    }
    let _ = writeln!(
        out,
        "\nUSB: {} (bulk ceiling per device link, MB/s = 10^6 B/s)",
        count(usb.devices.len() as u64, "device", "devices")
    );
    let by_name: BTreeMap<&str, &UsbDevice> =
        usb.devices.iter().map(|d| (d.name.as_str(), d)).collect();
    for d in usb.devices.iter().filter(|d| d.parent.is_none()) {
        usb_node(&mut out, &by_name, d, "", 0, style);
    }
    out.push_str(&device_side(&usb.device_side));
    out
}

/// The device side: each USB device controller with its state and speed, each configfs
/// gadget with its functions (a LUN's backing file, a network function's interface, a HID
/// function's reports-per-second ceiling, a UVC function's reserved bandwidth).
pub fn device_side(side: &DeviceSide) -> String {
    let mut out = String::new();
    if side.controllers.is_empty() && side.gadgets.is_empty() {
        return out;
    }
    let o = |s: &str| crate::outside::line(s).into_owned();
    let _ = write!(
        out,
        "\nUSB device side: {}, {}",
        count(
            side.controllers.len() as u64,
            "device controller",
            "device controllers"
        ),
        count(side.gadgets.len() as u64, "gadget", "gadgets")
    );
    if let Some(c) = &side.configfs {
        let _ = write!(out, " (configfs at {})", o(&c.to_string_lossy()));
    }
    out.push('\n');
    for c in &side.controllers {
        let mut line = format!("  UDC {}", o(&c.name));
        if let Some(d) = &c.driver {
            let _ = write!(line, " [{}]", o(d));
        }
        let _ = write!(
            line,
            " {}",
            o(c.state.as_deref().unwrap_or("state unknown"))
        );
        if let Some(s) = &c.current_speed {
            let _ = write!(line, ", {}", o(s));
        }
        if let Some(m) = &c.maximum_speed {
            let _ = write!(line, " (at most {})", o(m));
        }
        if c.is_otg == Some(true) {
            line.push_str(", OTG");
        }
        match &c.gadget {
            Some(g) => {
                let _ = write!(line, ", gadget {}", o(g));
            }
            None => line.push_str(", no gadget bound"),
        }
        let _ = writeln!(out, "{line}");
    }
    for g in &side.gadgets {
        let mut line = format!("  gadget {}", o(&g.name));
        if let (Some(v), Some(p)) = (g.vendor_id, g.product_id) {
            let _ = write!(line, " {v:04x}:{p:04x}");
        }
        let names: Vec<String> = [g.manufacturer.as_deref(), g.product.as_deref()]
            .into_iter()
            .flatten()
            .map(o)
            .collect();
        if !names.is_empty() {
            let _ = write!(line, " {}", names.join(" "));
        }
        match &g.udc {
            Some(u) => {
                let _ = write!(line, " on {}", o(u));
            }
            None => line.push_str(" (bound to no UDC)"),
        }
        let _ = writeln!(out, "{line}");
        for f in &g.functions {
            let mut line = format!("    {} {}", o(&f.name), o(f.kind.label()));
            if !f.linked {
                line.push_str(" (in no configuration)");
            }
            line.push(':');
            function_words(&mut line, &f.kind);
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

fn function_words(line: &mut String, kind: &FunctionKind) {
    let o = |s: &str| crate::outside::line(s).into_owned();
    match kind {
        FunctionKind::MassStorage { luns } => {
            if luns.is_empty() {
                line.push_str(" no LUN");
            }
            let each: Vec<String> = luns
                .iter()
                .map(|l| {
                    let mut w = format!(
                        " {} {}",
                        o(&l.name),
                        l.file
                            .as_ref()
                            .map(|f| format!("backed by {}", o(&f.to_string_lossy())))
                            .unwrap_or_else(|| "no medium".to_string())
                    );
                    let flags: Vec<&str> = [
                        (l.ro == Some(true)).then_some("read-only"),
                        (l.removable == Some(true)).then_some("removable"),
                        (l.cdrom == Some(true)).then_some("CD-ROM"),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    if !flags.is_empty() {
                        let _ = write!(w, " ({})", flags.join(", "));
                    }
                    w
                })
                .collect();
            line.push_str(&each.join(";"));
        }
        FunctionKind::Net {
            ifname,
            dev_addr,
            host_addr,
            ..
        } => {
            let _ = write!(
                line,
                " interface {}",
                o(ifname.as_deref().unwrap_or("unknown"))
            );
            if let Some(a) = dev_addr {
                let _ = write!(line, ", device address {}", o(a));
            }
            if let Some(a) = host_addr {
                let _ = write!(line, ", host address {}", o(a));
            }
        }
        FunctionKind::Uvc {
            streaming_maxpacket,
            reserved,
            ..
        } => {
            if let Some(m) = streaming_maxpacket {
                let _ = write!(line, " streaming_maxpacket {m} B");
            }
            match reserved {
                Some(r) => {
                    let _ = write!(
                        line,
                        ", {} reserved ({})",
                        rate_words(r.bytes_per_second),
                        r.basis
                    );
                }
                None => line.push_str(", nothing reserved until a UDC runs it"),
            }
        }
        FunctionKind::Hid {
            report_length,
            interval,
            reserved,
            ..
        } => {
            if let Some(l) = report_length {
                let _ = write!(line, " reports of {l} B");
            }
            if let Some(i) = interval {
                let _ = write!(line, ", bInterval {i}");
            }
            if let Some(r) = reserved {
                let per_s = f64::from(r.packets_per_interval) * 1e6 / r.interval_us;
                let _ = write!(
                    line,
                    ": at most {} reports/s ({}, one every {})",
                    trim_float(per_s),
                    rate_words(r.bytes_per_second),
                    interval_words(r.interval_us / f64::from(r.packets_per_interval.max(1)))
                );
            }
        }
        FunctionKind::Other { .. } => line.push_str(" not described"),
    }
}

fn usb_node(
    out: &mut String,
    by_name: &BTreeMap<&str, &UsbDevice>,
    d: &UsbDevice,
    prefix: &str,
    depth: usize,
    style: &Style,
) {
    let mut line = format!("{prefix}{}", style.bold(&d.name));
    if let Some(s) = d.speed_mbps {
        let _ = write!(line, " {s}M");
    }
    if let Some(v) = &d.version {
        let _ = write!(line, " (USB {})", v.trim());
    }
    // Without a usb.ids name (no database, or the feature builtin-ids off), the numeric ids
    // as lsusb prints them.
    if let (None, Some(v), Some(p)) = (&d.vendor_name, d.vendor_id, d.product_id) {
        let _ = write!(line, " {v:04x}:{p:04x}");
    }
    let names: Vec<&str> = [
        d.vendor_name.as_deref().or(d.manufacturer.as_deref()),
        d.product_name.as_deref().or(d.product.as_deref()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let names = names.join(" ");
    if !names.is_empty() {
        let _ = write!(line, " {names}");
    }
    if d.root_hub {
        if let Some(hc) = &d.host_controller {
            let at = match &hc.attachment {
                HostAttachment::Pci { address } => format!("PCI {address}"),
                HostAttachment::Platform { name } => format!("platform {name}"),
            };
            // usb.ids names root hubs "2.0 root hub": said once.
            let what = if names.to_ascii_lowercase().ends_with("root hub") {
                ""
            } else {
                " root hub"
            };
            let _ = write!(
                line,
                "{what} on {} {at}",
                hc.kind.unwrap_or("host controller")
            );
        }
    } else {
        let drivers: Vec<&str> = d
            .interfaces
            .iter()
            .filter_map(|i| i.driver.as_deref())
            .collect();
        if !drivers.is_empty() {
            let _ = write!(line, " [{}]", drivers.join(", "));
        }
        if let Some(st) = &d.storage {
            let _ = write!(line, " {}", st.transport.label());
        }
        let lanes = d.rx_lanes.unwrap_or(1).clamp(1, 2) as u8;
        if let Some(c) = d
            .speed_mbps
            .and_then(|s| model::ceiling::usb::bulk_ceiling_for_sysfs(s, lanes))
        {
            let _ = write!(line, " = {:.1} MB/s", c / MB);
        }
    }
    let _ = writeln!(out, "  {line}");
    if !d.root_hub {
        for l in endpoint_lines(d) {
            let _ = writeln!(out, "  {prefix}    {l}");
        }
    }
    if depth > 16 {
        return;
    }
    for c in &d.children {
        if let Some(child) = by_name.get(c.as_str()) {
            usb_node(
                out,
                by_name,
                child,
                &format!("{prefix}  "),
                depth + 1,
                style,
            );
        }
    }
}

/// One line per interface with interrupt or isochronous endpoints in its current alternate
/// setting (each endpoint's reserved bandwidth), or whose other alternate settings have some
/// (a UVC or audio streaming interface idle in alternate setting 0).
pub fn endpoint_lines(d: &UsbDevice) -> Vec<String> {
    let mut lines = Vec::new();
    for i in &d.interfaces {
        let periodic: Vec<&UsbEndpoint> = i
            .endpoints
            .iter()
            .filter(|e| e.reserved.is_some())
            .collect();
        let most = i
            .other_alt_settings
            .iter()
            .filter_map(|a| {
                let r = isochronous_total(&a.endpoints)?;
                Some((a.alt_setting, r))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if periodic.is_empty() && most.is_none() {
            continue;
        }
        let mut line = crate::outside::line(&i.name).into_owned();
        if let Some(c) = i.class_name {
            let _ = write!(line, " {c}");
        }
        if let Some(a) = i.alt_setting {
            let _ = write!(line, " alt {a}");
        }
        line.push(':');
        if periodic.is_empty() {
            line.push_str(" nothing reserved");
        }
        let each: Vec<String> = periodic.iter().map(|e| endpoint_words(e)).collect();
        if !each.is_empty() {
            let _ = write!(line, " {}", each.join("; "));
        }
        if let Some((alt, bps)) = most {
            let current = isochronous_total(&i.endpoints).unwrap_or(0.0);
            if bps > current {
                let _ = write!(
                    line,
                    " (alt {alt} would reserve {} isochronous)",
                    rate_words(bps)
                );
            }
        }
        lines.push(line);
    }
    lines
}

/// What an alternate setting's isochronous endpoints reserve together, bytes/s.
fn isochronous_total(endpoints: &[UsbEndpoint]) -> Option<f64> {
    let v: Vec<f64> = endpoints
        .iter()
        .filter(|e| e.transfer == TransferType::Isochronous)
        .filter_map(|e| Some(e.reserved.as_ref()?.bytes_per_second))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

/// `isochronous IN 0x81 3 x 1020 B every 1 microframes of 125 us = 24.48 MB/s reserved`.
fn endpoint_words(e: &UsbEndpoint) -> String {
    let ep = e;
    let mut w = format!(
        "{} {} 0x{:02x}",
        ep.transfer.label(),
        ep.direction.label(),
        ep.address
    );
    if let Some(r) = &e.reserved {
        let maxp = u32::from(ep.max_packet);
        let bytes = if r.packets_per_interval > 1
            && r.bytes_per_interval == r.packets_per_interval * maxp
        {
            format!("{} x {maxp}", r.packets_per_interval)
        } else {
            r.bytes_per_interval.to_string()
        };
        let _ = write!(
            w,
            " {bytes} B per {} = {} reserved",
            interval_words(r.interval_us),
            rate_words(r.bytes_per_second)
        );
        if ep.transfer == TransferType::Interrupt {
            let _ = write!(
                w,
                ", {} transfers/s",
                trim_float(f64::from(r.packets_per_interval) * 1e6 / r.interval_us)
            );
        }
        if let Some(o) = &r.out_of_spec {
            let _ = write!(w, " (out of spec: {o})");
        }
    }
    w
}

/// 125 us, 1 ms, 16 ms.
pub fn interval_words(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", trim_float(us / 1000.0))
    } else {
        format!("{} us", trim_float(us))
    }
}

/// A reserved rate in the unit that keeps it readable (10^6 and 10^3 B/s).
pub fn rate_words(bps: f64) -> String {
    if bps >= 1e6 {
        format!("{:.2} MB/s", bps / MB)
    } else if bps >= 1e3 {
        format!("{:.1} kB/s", bps / 1e3)
    } else {
        format!("{} B/s", trim_float(bps))
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The block section, like `lsblk`: disks with size (GiB = 2^30 B; `?` when the kernel
/// showed none), transport, queue settings the seeds tune, and mounts. Devices of size 0
/// (an unattached loop device, an empty card reader) are left out, as lsblk does.
pub fn block(block: &BlockInventory) -> String {
    let mut out = String::new();
    let disks: Vec<&BlockDevice> = block.devices.iter().filter(|d| super::listed(d)).collect();
    if disks.is_empty() {
        return out;
    }
    let unknown = if disks.iter().any(|d| d.size_bytes.is_none()) {
        ", ? = not readable"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\nBlock devices (sizes in binary units: GiB = 2^30 B{unknown}; queue limits in KiB):"
    );
    let _ = writeln!(
        out,
        "  {:<12} {:>10} {:<8} {:>4} {:<12} {:>8} {:>10} {:>8}  MOUNTS",
        "NAME", "SIZE", "TRAN", "ROTA", "SCHED", "MAX_SECT", "MAX_HW", "RA"
    );
    for d in disks {
        let q = d.queue.as_ref();
        let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        let name = if d.parent.is_some() {
            format!("  {}", d.name)
        } else {
            d.name.clone()
        };
        let mounts: Vec<String> = d
            .mounts
            .iter()
            .map(|m| {
                format!(
                    "{} ({})",
                    crate::outside::line(&m.mount_point.to_string_lossy()).into_owned(),
                    m.fs_type
                )
            })
            .collect();
        let tran = if d.parent.is_some() {
            String::new()
        } else {
            serde_json::to_value(d.transport)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "  {:<12} {:>10} {:<8} {:>4} {:<12} {:>8} {:>10} {:>8}  {}",
            name,
            d.size_bytes
                .map(model::units::format_capacity)
                .unwrap_or_else(|| "?".into()),
            tran,
            q.and_then(|q| q.rotational)
                .map(|r| if r { "1" } else { "0" })
                .unwrap_or("-"),
            q.and_then(|q| q.scheduler.clone())
                .unwrap_or_else(|| "-".into()),
            num(q.and_then(|q| q.max_sectors_kb)),
            match q.and_then(|q| q.max_hw_sectors_kb) {
                Some(MAX_HW_SECTORS_KB_NO_LIMIT..) => "no limit".to_string(),
                v => num(v),
            },
            num(q.and_then(|q| q.read_ahead_kb)),
            mounts.join(", ")
        );
    }
    out
}

/// The network section, like `ip -br link` with speed and what each interface hangs off.
pub fn net(net: &NetInventory) -> String {
    let mut out = String::new();
    if net.interfaces.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nNetwork interfaces (TCP ceiling in MB/s = 10^6 B/s):"
    );
    for i in &net.interfaces {
        let mut line = format!(
            "  {:<10} {:<8}",
            i.name,
            i.operstate.as_deref().unwrap_or("?")
        );
        match i.speed_mbps {
            Some(s) => {
                let _ = write!(line, " {s} Mb/s");
            }
            None => line.push_str(" speed unknown"),
        }
        if let Some(d) = i.duplex.as_deref().filter(|d| *d != "unknown") {
            let _ = write!(line, " {d}");
        }
        if let Some(m) = i.mtu {
            let _ = write!(line, " MTU {m}");
        }
        if let Some(d) = &i.driver {
            let _ = write!(line, " [{d}]");
        }
        if i.is_virtual {
            line.push_str(" virtual");
        }
        if let Some(a) = &i.attachment {
            let on = match a {
                Attachment::Pci { address } => format!("PCI {address}"),
                Attachment::Usb { device, speed_mbps } => format!(
                    "USB {device}{}",
                    speed_mbps.map(|s| format!(" ({s}M)")).unwrap_or_default()
                ),
                Attachment::Virtio { name, pci } => format!(
                    "{name}{}",
                    pci.as_deref()
                        .map(|p| format!(" on PCI {p}"))
                        .unwrap_or_default()
                ),
                Attachment::Platform { name } => format!("platform {name}"),
            };
            let _ = write!(line, " on {on}");
        }
        if let Some(sh) = &i.shaper {
            let _ = write!(
                line,
                ", tbf qdisc {:.2} Mbit/s on its egress",
                sh.rate_bps / 1e6
            );
        }
        // One figure when both ways have it; else each way (a tbf bounds what is sent).
        match crate::summary::InterfaceCeiling::of(i, |c| format!("{:.1} MB/s", c / MB)) {
            Some(c) if c.both_ways => {
                let _ = write!(line, " = {} TCP", c.text);
            }
            Some(c) => {
                let _ = write!(line, " = TCP {}", c.text);
            }
            None => {}
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn render_node(
    out: &mut String,
    audit: &PciAudit,
    by_addr: &BTreeMap<PciAddress, &AuditedFunction>,
    f: &AuditedFunction,
    prefix: &str,
    last: bool,
    style: &Style,
    depth: usize,
) {
    let branch = if depth == 0 {
        ""
    } else if last {
        "\\-"
    } else {
        "+-"
    };
    let _ = writeln!(out, "{prefix}{branch}{}", function_line(audit, f, style));
    if depth > 64 {
        return; // a parent loop in a damaged tree cannot recurse forever
    }
    let child_prefix = if depth == 0 {
        format!("{prefix}  ")
    } else if last {
        format!("{prefix}   ")
    } else {
        format!("{prefix}|  ")
    };
    for (i, c) in f.children.iter().enumerate() {
        if let Some(child) = by_addr.get(c) {
            let last_child = i + 1 == f.children.len();
            render_node(
                out,
                audit,
                by_addr,
                child,
                &child_prefix,
                last_child,
                style,
                depth + 1,
            );
        }
    }
}

/// One line per function: address, class and names, driver, link state, AER errors.
fn function_line(audit: &PciAudit, f: &AuditedFunction, style: &Style) -> String {
    let mut s = format!("{} ", style.bold(&f.address.to_string()));
    if let Some(c) = &f.names.class {
        let _ = write!(s, "{c}: ");
    } else if let Some(c) = f.class {
        let _ = write!(s, "Class [{:04x}]: ", c >> 8);
    }
    s.push_str(&f.display_name());
    if let Some(r) = f.revision.filter(|r| *r != 0) {
        let _ = write!(s, " (rev {r:02x})");
    }
    if let Some(d) = &f.driver {
        let _ = write!(s, " [{d}]");
    }
    if let Some(pt) = f.port_type() {
        let _ = write!(s, " <{}>", pt.lspci_name());
    }
    if let Some(cur) = f.current_link() {
        let cap = f.capable_link();
        let _ = write!(s, "  link {cur}");
        if let Some(what) = f.downgraded.and_then(|d| d.label()) {
            let _ = write!(s, " ({})", style.warn(what));
        }
        if let Some(c) = cap {
            if c != cur {
                let _ = write!(s, " of {c}");
            }
        }
        let link = f.upstream_link.and_then(|li| audit.links.get(li));
        if let Some(l) = link {
            if l.comparison.below_common() {
                let _ = write!(
                    s,
                    " {}",
                    style.warn(&format!("below both ends' {}", l.comparison.common))
                );
            }
        }
        if let Some(c) = link.map(|l| &l.ceiling).or(f.own_link_ceiling.as_ref()) {
            // The effective write ceiling per direction, MB/s = 10^6 B/s.
            let now = c.current.effective_write_bps / MB;
            let best = c.capable.effective_write_bps / MB;
            if c.loss_percent >= 0.5 {
                let _ = write!(
                    s,
                    " = {now:.0} of {best:.0} MB/s (-{:.0} %)",
                    c.loss_percent
                );
            } else {
                let _ = write!(s, " = {now:.0} MB/s");
            }
        }
    }
    if let Some(a) = &f.aer_counters {
        let nz = a.nonzero();
        if !nz.is_empty() {
            let list: Vec<String> = nz.iter().map(|(n, c)| format!("{n} {c}")).collect();
            let _ = write!(s, "  {}", style.err(&format!("AER: {}", list.join(", "))));
        }
    }
    if let Some(a) = f.aer() {
        let bits: Vec<&str> = a
            .uncorrectable_status
            .set
            .iter()
            .chain(a.correctable_status.set.iter())
            .copied()
            .collect();
        if !bits.is_empty() {
            let _ = write!(
                s,
                "  {}",
                style.err(&format!("AER status: {}", bits.join(" ")))
            );
        }
    }
    s
}

/// One devfreq device as the system facts list it: `dmc (DDR): dmc_ondemand 528-2112 MHz
/// (now 1068 MHz)`.
pub fn devfreq_line(d: &model::system::DevFreq) -> String {
    let mhz = |hz: Option<u64>| hz.map_or("?".into(), |hz| (hz / 1_000_000).to_string());
    format!(
        "{}{}: {} {}-{} MHz (now {} MHz)",
        d.name,
        if d.is_memory() { " (DDR)" } else { "" },
        d.governor.as_deref().unwrap_or("?"),
        mhz(d.min_hz),
        mhz(d.max_hz),
        mhz(d.cur_hz)
    )
}

/// One video node as the audit lists it: node, card, driver, bus (with the USB device),
/// capabilities and formats (what QUERYCAP and the enumeration said, or why they could not).
pub fn video_row(n: &model::video::VideoNode) -> Vec<String> {
    let dash = crate::table::dash;
    let card = n
        .caps
        .as_ref()
        .map(|c| c.card.clone())
        .or_else(|| n.title.clone())
        .unwrap_or_else(dash);
    let bus = match (&n.bus, &n.usb_device) {
        (Some(b), Some(u)) => format!("{b} {u}"),
        (Some(b), None) => b.clone(),
        _ => dash(),
    };
    let caps = match (&n.caps, &n.unreadable) {
        (Some(c), _) => c.capability_names().join(", "),
        (None, Some(why)) => format!("not read: {why}"),
        (None, None) => dash(),
    };
    let formats = if n.formats.is_empty() {
        dash()
    } else {
        n.formats
            .iter()
            .map(|f| f.fourcc.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        n.dev.clone(),
        card,
        n.driver.clone().unwrap_or_else(dash),
        bus,
        caps,
        formats,
    ]
}
