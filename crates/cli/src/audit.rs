//! `headroom audit`: the inventory of PCI functions and links with their state against
//! what both ends can do, and the findings.

use crate::output::{GlobalArgs, Style};
use crate::terminal::count;
use anyhow::Context;
use clap::Args;
use model::units::{GIB, MB};
use model::Finding;
use probe::block::{BlockDevice, BlockInventory};
use probe::net::{Attachment, NetInventory};
use probe::pci::address::PciAddress;
use probe::pci::audit::{AuditedFunction, PciAudit};
use probe::sysfs::SysRoot;
use probe::system::SystemContext;
use probe::usb::{HostAttachment, UsbDevice, UsbInventory};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    /// Root of the filesystem to read sysfs and procfs from (a captured tree, for tests or
    /// another machine's data).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,

    /// Audit an `lspci -x`/`-xxx`/`-xxxx` hex dump (e.g. from a bug report) instead of this
    /// machine.
    #[arg(long, value_name = "FILE", conflicts_with = "root")]
    pub lspci: Option<PathBuf>,
}

impl Default for AuditArgs {
    fn default() -> Self {
        AuditArgs {
            root: PathBuf::from("/"),
            lspci: None,
        }
    }
}

/// The audit's JSON body (`output::print_result` puts the envelope in front of it).
#[derive(Serialize)]
struct AuditDocument<'a> {
    source: Source,
    pci: &'a PciAudit,
    system: Option<&'a SystemContext>,
    usb: Option<&'a UsbInventory>,
    block: Option<&'a BlockInventory>,
    net: Option<&'a NetInventory>,
    /// Every finding of every section, most severe first.
    findings: &'a [Finding],
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Source {
    Root(PathBuf),
    LspciDump(PathBuf),
}

pub fn run(global: &GlobalArgs, args: &AuditArgs) -> anyhow::Result<ExitCode> {
    // A dump has PCI alone; a root has the whole inventory.
    let dump_audit;
    let inventory;
    let (audit, inv, source) = match &args.lspci {
        Some(file) => {
            let text = std::fs::read(file).with_context(|| {
                format!(
                    "cannot read the lspci dump {}: give the file `lspci -xxx` printed",
                    file.display()
                )
            })?;
            let text = String::from_utf8_lossy(&text);
            let names_root = SysRoot::new("/");
            dump_audit = probe::pci::audit_dump(&text, &names_root)
                .map_err(|e| anyhow::anyhow!("--lspci {}: {e}", file.display()))?;
            (&dump_audit, None, Source::LspciDump(file.clone()))
        }
        None => {
            if !args.root.is_dir() {
                anyhow::bail!(
                    "--root {}: no such directory; give the directory that contains sys/",
                    args.root.display()
                );
            }
            inventory = probe::inventory::scan(&SysRoot::new(&args.root));
            (
                &inventory.pci,
                Some(&inventory),
                Source::Root(args.root.clone()),
            )
        }
    };
    let findings = match inv {
        Some(inv) => report::findings::audit::collect([
            &inv.pci.findings[..],
            &report::findings::system::cpufreq(&inv.system.scaling_cpus(None)),
            &inv.usb.findings,
            &inv.block.findings,
            &inv.net.findings,
        ]),
        None => report::findings::audit::collect([&audit.findings[..]]),
    };
    let warnings: Vec<&String> = match inv {
        Some(inv) => inv.warnings().collect(),
        None => audit.warnings.iter().collect(),
    };
    for w in warnings {
        eprintln!("headroom: warning: {w}");
    }
    if let Some(inv) = inv {
        if !inv.found_anything() {
            anyhow::bail!(
                "--root {}: no PCI function, USB device, block device, network interface or \
                 kernel information found there; give the directory that contains sys/ and \
                 proc/ (a captured tree, or / for this machine)",
                args.root.display()
            );
        }
    }
    if global.json {
        crate::output::print_result(
            "audit",
            &AuditDocument {
                source,
                pci: audit,
                system: inv.map(|i| &i.system),
                usb: inv.map(|i| &i.usb),
                block: inv.map(|i| &i.block),
                net: inv.map(|i| &i.net),
                findings: &findings,
            },
        )?;
    } else {
        let style = Style::new(global.use_color());
        let mut text = String::new();
        if let Some(inv) = inv {
            text.push_str(&render_system(&inv.system));
        }
        text.push_str(&render_pci(audit, &style));
        if let Some(inv) = inv {
            text.push_str(&render_usb(&inv.usb, &style));
            text.push_str(&render_block(&inv.block));
            text.push_str(&render_net(&inv.net));
        }
        text.push_str(&report::terminal::audit::findings(&findings, |s| {
            style.severity(s)
        }));
        crate::out!("{text}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The PCI section: a tree of functions (like `lspci -tv`, one line each with its link
/// state and ceiling).
pub fn render_pci(audit: &PciAudit, style: &Style) -> String {
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
pub fn render_system(ctx: &SystemContext) -> String {
    let mut out = String::new();
    let k = &ctx.kernel;
    let _ = write!(
        out,
        "System: kernel {}, {}",
        k.release.as_deref().unwrap_or("unknown"),
        k.preemption.describe()
    );
    if let Some(c) = &ctx.cpus_online {
        let _ = write!(
            out,
            "; {} CPUs online ({})",
            c.len(),
            probe::system::format_cpu_list(c)
        );
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
            let _ = writeln!(
                out,
                "  cpufreq CPUs {}: {k}",
                probe::system::format_cpu_list(&cpus)
            );
        }
    }
    if let Some(c) = &ctx.cmdline {
        let list = |v: &Option<Vec<u32>>| {
            v.as_deref()
                .map(probe::system::format_cpu_list)
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
pub fn render_usb(usb: &UsbInventory, style: &Style) -> String {
    let mut out = String::new();
    if usb.devices.is_empty() {
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
    out
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
    if !names.is_empty() {
        let _ = write!(line, " {}", names.join(" "));
    }
    if d.root_hub {
        if let Some(hc) = &d.host_controller {
            let at = match &hc.attachment {
                HostAttachment::Pci { address } => format!("PCI {address}"),
                HostAttachment::Platform { name } => format!("platform {name}"),
            };
            let _ = write!(
                line,
                " root hub on {} {at}",
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

/// The block section, like `lsblk`: disks with size (GiB = 2^30 B), transport, queue
/// settings the seeds tune, and mounts.
pub fn render_block(block: &BlockInventory) -> String {
    let mut out = String::new();
    let disks: Vec<&BlockDevice> = block
        .devices
        .iter()
        .filter(|d| d.size_bytes.unwrap_or(0) > 0)
        .collect();
    if disks.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nBlock devices (size in GiB = 2^30 B, queue limits in KiB):"
    );
    let _ = writeln!(
        out,
        "  {:<12} {:>9} {:<8} {:>4} {:<12} {:>8} {:>10} {:>8}  MOUNTS",
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
            .map(|m| format!("{} ({})", printable(&m.mount_point), m.fs_type))
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
            "  {:<12} {:>9} {:<8} {:>4} {:<12} {:>8} {:>10} {:>8}  {}",
            name,
            d.size_bytes
                .map(|b| format!("{:.1}", b as f64 / GIB))
                .unwrap_or_else(|| "-".into()),
            tran,
            q.and_then(|q| q.rotational)
                .map(|r| if r { "1" } else { "0" })
                .unwrap_or("-"),
            q.and_then(|q| q.scheduler.clone())
                .unwrap_or_else(|| "-".into()),
            num(q.and_then(|q| q.max_sectors_kb)),
            match q.and_then(|q| q.max_hw_sectors_kb) {
                Some(probe::block::MAX_HW_SECTORS_KB_NO_LIMIT..) => "no limit".to_string(),
                v => num(v),
            },
            num(q.and_then(|q| q.read_ahead_kb)),
            mounts.join(", ")
        );
    }
    out
}

/// The network section, like `ip -br link` with speed and what each interface hangs off.
pub fn render_net(net: &NetInventory) -> String {
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
        if let (Some(s), Some(m)) = (i.speed_mbps, i.mtu) {
            if let Some(c) = model::ceiling::eth::tcp_goodput_bps(s as f64 * 1e6, m) {
                let _ = write!(line, " = {:.1} MB/s TCP", c / MB);
            }
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
pub fn function_line(audit: &PciAudit, f: &AuditedFunction, style: &Style) -> String {
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

/// A path as one printable line: control characters (a newline in a mount point) escaped the
/// way mountinfo writes them (`\012`).
pub fn printable(p: &std::path::Path) -> String {
    p.to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_control() {
                format!("\\{:03o}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}
