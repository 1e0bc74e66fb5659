//! `headroom path TARGET`: the chain of hardware a file, block device or network interface
//! crosses, each link with its ceiling now and at its best, and the bottleneck.

use crate::output::GlobalArgs;
use clap::Args;
use model::root::SysRoot;
use report::kinds::path::PathDocument;
use report::kinds::{KindDocument as _, Text};
use report::terminal::Style;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
pub struct PathArgs {
    /// A file or directory, a block device (`/dev/nvme0n1p1` or `nvme0n1p1`) or a network
    /// interface (`eth0`).
    #[arg(value_name = "TARGET")]
    pub target: PathBuf,

    /// Root of the filesystem to read sysfs and procfs from (a captured tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

pub fn run(global: &GlobalArgs, args: &PathArgs) -> anyhow::Result<ExitCode> {
    if !args.root.is_dir() {
        anyhow::bail!(
            "--root {}: no such directory; give the directory that contains sys/",
            args.root.display()
        );
    }
    let root = SysRoot::new(&args.root);
    let audit = probe::pci::audit_sysfs(&root);
    let path = probe::path::resolve(&root, &args.target, &audit).map_err(anyhow::Error::msg)?;
    for w in &path.chain.warnings {
        crate::console::warn(w);
    }
    if global.json {
        crate::output::print_result(
            report::document::DocumentKind::Path,
            &PathDocument {
                root: args.root.clone(),
                path,
            },
        )?;
    } else {
        // A PCI function's name as lspci shows it, from the audit's pci.ids lookup.
        let pci_name = |address: &str| {
            audit
                .functions
                .iter()
                .find(|f| f.address.to_string() == address)
                .map(|f| f.display_name())
                .unwrap_or_default()
        };
        let document = PathDocument {
            root: args.root.clone(),
            path,
        };
        crate::out!(
            "{}",
            document.text(&Text {
                style: Style::new(global.use_color()),
                pci_names: Some(&pci_name),
                ..Text::default()
            })
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
