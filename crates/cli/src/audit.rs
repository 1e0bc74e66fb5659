//! `headroom audit`: the inventory of links with their state, ceilings and findings.

use crate::output::GlobalArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug, Clone, Default)]
pub struct AuditArgs {
    /// Root of the filesystem to read sysfs and procfs from (a fixture tree for tests).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,

    /// Audit an `lspci -x`/`-xxx`/`-xxxx` hex dump instead of this machine.
    #[arg(long, value_name = "FILE")]
    pub lspci: Option<PathBuf>,
}

pub fn run(_global: &GlobalArgs, _args: &AuditArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the audit is not built yet")
}
