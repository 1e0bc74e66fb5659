//! `headroom audit`: the inventory of PCI functions and links with their state against
//! what both ends can do, and the findings.

use crate::output::{print_json, GlobalArgs, Style};
use anyhow::Context;
use clap::Args;
use model::units::MB;
use probe::pci::address::PciAddress;
use probe::pci::audit::{AuditedFunction, PciAudit};
use probe::pci::config::LinkMark;
use probe::sysfs::SysRoot;
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

/// The audit's JSON document.
#[derive(Serialize)]
struct AuditDocument<'a> {
    schema_version: u32,
    kind: &'static str,
    tool: crate::output::Tool,
    source: Source,
    pci: &'a PciAudit,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Source {
    Root(PathBuf),
    LspciDump(PathBuf),
}

pub fn run(global: &GlobalArgs, args: &AuditArgs) -> anyhow::Result<ExitCode> {
    let (audit, source) = match &args.lspci {
        Some(file) => {
            let text = std::fs::read(file).with_context(|| {
                format!(
                    "cannot read the lspci dump {}: give the file `lspci -xxx` printed",
                    file.display()
                )
            })?;
            let text = String::from_utf8_lossy(&text);
            let names_root = SysRoot::new("/");
            (
                probe::pci::audit_dump(&text, &names_root),
                Source::LspciDump(file.clone()),
            )
        }
        None => {
            let root = SysRoot::new(&args.root);
            if !args.root.is_dir() {
                anyhow::bail!(
                    "--root {}: no such directory; give the directory that contains sys/",
                    args.root.display()
                );
            }
            (
                probe::pci::audit_sysfs(&root),
                Source::Root(args.root.clone()),
            )
        }
    };
    for w in &audit.warnings {
        eprintln!("headroom: warning: {w}");
    }
    if global.json {
        print_json(&AuditDocument {
            schema_version: 1,
            kind: "audit",
            tool: crate::output::Tool::this(),
            source,
            pci: &audit,
        })?;
    } else {
        let style = Style::new(global.use_color());
        print!("{}", render_text(&audit, &style));
    }
    Ok(ExitCode::SUCCESS)
}

/// The terminal view: a tree of functions (like `lspci -tv`, one line each with its link
/// state), then the findings.
pub fn render_text(audit: &PciAudit, style: &Style) -> String {
    let mut out = String::new();
    let by_addr: BTreeMap<PciAddress, &AuditedFunction> =
        audit.functions.iter().map(|f| (f.address, f)).collect();
    let _ = writeln!(
        out,
        "PCI: {} functions, {} PCI Express links",
        audit.functions.len(),
        audit.links.len()
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
    if audit.findings.is_empty() {
        let _ = writeln!(out, "\nFindings: none");
    } else {
        let _ = writeln!(out, "\nFindings:");
        for f in &audit.findings {
            let sev = style.severity(f.severity);
            let _ = writeln!(out, "  {sev}: {}", f.message);
            if let Some(a) = &f.advice {
                let _ = writeln!(out, "      -> {a}");
            }
        }
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
        let (down_speed, down_width) = match f.express() {
            Some(_) => {
                let (s, w) = f.lspci_marks();
                let down = |m| m == Some(LinkMark::Downgraded);
                (down(s), down(w))
            }
            None => {
                // Kernel attributes only: apply lspci's rule to non-bridges.
                let bridge = f.class.map(|c| c >> 8) == Some(0x0604);
                match cap {
                    Some(c) if !bridge => (cur.gen < c.gen, cur.width < c.width),
                    _ => (false, false),
                }
            }
        };
        if down_speed || down_width {
            let what = match (down_speed, down_width) {
                (true, true) => "downgraded",
                (true, false) => "speed downgraded",
                _ => "width downgraded",
            };
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
