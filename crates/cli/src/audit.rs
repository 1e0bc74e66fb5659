//! `headroom audit`: the inventory of PCI functions and links with their state against
//! what both ends can do, and the findings.

use crate::output::GlobalArgs;
use anyhow::Context;
use clap::Args;
use model::root::SysRoot;
use report::kinds::audit::text;
use report::kinds::audit::{AuditDocument, Source};
use report::terminal::Style;
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

pub fn run(global: &GlobalArgs, args: &AuditArgs) -> anyhow::Result<ExitCode> {
    // A dump has PCI alone; a root has the whole inventory. probe reads, report judges.
    let mut dump_audit;
    let mut inventory;
    let (audit, inv, source, findings) = match &args.lspci {
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
            let findings = report::kinds::audit::findings::judge_pci(&mut dump_audit);
            (&dump_audit, None, Source::LspciDump(file.clone()), findings)
        }
        None => {
            if !args.root.is_dir() {
                anyhow::bail!(
                    "--root {}: no such directory; give the directory that contains sys/",
                    args.root.display()
                );
            }
            inventory = probe::inventory::scan(&SysRoot::new(&args.root));
            let findings = report::kinds::audit::findings::judge(&mut inventory);
            (
                &inventory.pci,
                Some(&inventory),
                Source::Root(args.root.clone()),
                findings,
            )
        }
    };
    let warnings: Vec<&String> = match inv {
        Some(inv) => inv.warnings().collect(),
        None => audit.warnings.iter().collect(),
    };
    for w in warnings {
        crate::console::warn(w);
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
            report::document::DocumentKind::Audit,
            &AuditDocument {
                source: Some(source),
                pci: audit.clone(),
                system: inv.map(|i| i.system.clone()),
                usb: inv.map(|i| i.usb.clone()),
                block: inv.map(|i| i.block.clone()),
                net: inv.map(|i| i.net.clone()),
                findings,
            },
        )?;
    } else {
        let style = Style::new(global.use_color());
        let mut out = String::new();
        if let Some(inv) = inv {
            out.push_str(&text::system(&inv.system));
        }
        out.push_str(&text::pci(audit, &style));
        if let Some(inv) = inv {
            out.push_str(&text::usb(&inv.usb, &style));
            out.push_str(&text::block(&inv.block));
            out.push_str(&text::net(&inv.net));
        }
        out.push_str(&report::terminal::findings(&findings, |s| {
            style.severity(s)
        }));
        crate::out!("{out}")?;
    }
    Ok(ExitCode::SUCCESS)
}
