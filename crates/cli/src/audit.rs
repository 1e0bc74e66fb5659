//! `headroom audit`: the inventory of PCI functions and links with their state against
//! what both ends can do, and the findings.

use crate::output::GlobalArgs;
use clap::Args;
use model::root::SysRoot;
use report::kinds::{KindDocument as _, Text};

use report::kinds::audit::AuditDocument;
use report::kinds::expect::Layout;
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

    /// Check this host against MANIFEST, its expected state (TOML, written by --save-expect
    /// or by hand): one PASS or FAIL line per check with what was found; exit 1 on a FAIL.
    #[arg(long, value_name = "MANIFEST", conflicts_with = "save_expect")]
    pub expect: Option<PathBuf>,

    /// Write the manifest of this host (every device and its state now as expectations) to
    /// MANIFEST, for --expect on other hosts.
    #[arg(long, value_name = "MANIFEST")]
    pub save_expect: Option<PathBuf>,

    /// Print the audit's metrics (openmetrics, prometheus), --expect's checks as OCP Test &
    /// Validation JSON lines (ocptv), or the checks and figures as LAVA test-case lines (lava)
    /// or KCIDB JSON (kcidb) instead of text.
    #[arg(long, value_enum, conflicts_with = "json")]
    pub format: Option<crate::output::Format>,

    /// Also write the audit's metrics to DIR/headroom.prom, atomically, for node_exporter's
    /// textfile collector.
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<PathBuf>,
}

impl Default for AuditArgs {
    fn default() -> Self {
        AuditArgs {
            root: PathBuf::from("/"),
            lspci: None,
            expect: None,
            save_expect: None,
            format: None,
            textfile_dir: None,
        }
    }
}

pub fn run(global: &GlobalArgs, args: &AuditArgs) -> anyhow::Result<ExitCode> {
    use crate::output::Format;
    if args.format == Some(Format::Ocptv) && args.expect.is_none() {
        return Err(crate::console::usage(
            "--format ocptv prints the checks of --expect MANIFEST: give the manifest",
        ));
    }
    if args.format == Some(Format::Ocptv) && global.json {
        return Err(crate::console::usage(
            "--format ocptv and --json are two outputs: choose one",
        ));
    }
    if let Some(file) = &args.save_expect {
        crate::output::check_writable("--save-expect", file)
            .map_err(|e| crate::console::usage(e.0))?;
    }
    if let Some(dir) = &args.textfile_dir {
        crate::output::check_textfile_dir(dir, "headroom.prom")
            .map_err(|e| crate::console::usage(e.0))?;
    }
    // The manifest is read before the audit: a broken one is said at once.
    // A manifest that cannot be read is a usage error (exit 2), told apart from a host that
    // fails its checks (exit 1).
    let manifest = match &args.expect {
        Some(file) => Some(
            read_manifest(file).map_err(|e| crate::console::usage(crate::console::sentence(&e)))?,
        ),
        None => None,
    };
    if let Some(m) = &manifest {
        if m.is_empty() {
            crate::console::warn(report::kinds::expect::EMPTY_MANIFEST);
        }
    }
    // A dump has PCI alone; a root has the whole inventory. probe reads, report judges and
    // assembles the document.
    let document = match &args.lspci {
        Some(file) => {
            // What went wrong first, then what to do.
            let text = report::input::read(file, MAX_DUMP_BYTES).map_err(|e| {
                let show = file.display();
                match e {
                    report::input::InputError::Io(e) => anyhow::anyhow!(
                        "cannot read the lspci dump {show}: {e}; give the file `lspci -xxx` \
                         printed"
                    ),
                    e => anyhow::anyhow!(
                        "the lspci dump {}",
                        e.describe(file, "the file `lspci -xxx` printed", MAX_DUMP_BYTES)
                    ),
                }
            })?;
            let text = String::from_utf8_lossy(&text);
            let names_root = SysRoot::new("/");
            let dump = probe::pci::audit_dump(&text, &names_root)
                .map_err(|e| anyhow::anyhow!("--lspci {}: {e}", file.display()))?;
            for w in &dump.warnings {
                crate::console::warn(w);
            }
            AuditDocument::of_dump(dump, file.clone())
        }
        None => {
            if !args.root.is_dir() {
                anyhow::bail!(
                    "--root {}: no such directory; give the directory that contains sys/",
                    args.root.display()
                );
            }
            let mut inventory = probe::inventory::scan(&SysRoot::new(&args.root));
            // The running system's video nodes say what they are when asked (QUERYCAP, the
            // formats); a captured tree has only its sysfs.
            if SysRoot::new(&args.root).is_live() {
                for n in &mut inventory.video {
                    match bench::video::Device::query(std::path::Path::new(&n.dev)) {
                        Ok((caps, formats)) => (n.caps, n.formats) = (Some(caps), formats),
                        Err(e) => n.unreadable = Some(e.to_string()),
                    }
                }
            }
            for w in inventory.warnings() {
                crate::console::warn(w);
            }
            if !inventory.found_anything() {
                anyhow::bail!(
                    "--root {}: no PCI function, USB device, block device, network interface \
                     or kernel information found there; give the directory that contains sys/ \
                     and proc/ (a captured tree, or / for this machine)",
                    args.root.display()
                );
            }
            AuditDocument::of_inventory(inventory, args.root.clone())
        }
    };
    let described = match &args.lspci {
        Some(f) => format!("the lspci dump {}", f.display()),
        None => format!("the host at --root {}", args.root.display()),
    };
    if let Some(file) = &args.save_expect {
        let manifest = report::kinds::expect::manifest_of(&document);
        let text = report::kinds::expect::to_toml(&manifest, &described);
        report::write_atomic(file, text.as_bytes()).map_err(|e| {
            anyhow::anyhow!(
                "--save-expect: cannot write {}: {}",
                file.display(),
                e.source
            )
        })?;
        crate::console::info(format_args!(
            "wrote {}: {} expected",
            file.display(),
            report::kinds::expect::counts(&manifest)
        ));
        if manifest.is_empty() {
            crate::console::warn(report::kinds::expect::EMPTY_MANIFEST);
        }
    }
    // The machine the audit read: this one, or the tree's with --root; a dump does not say
    // which machine it came from.
    let read_from = args.lspci.is_none().then_some(args.root.as_path());
    let wrapped =
        || crate::output::wrap_at(report::document::DocumentKind::Audit, &document, read_from);
    if let Some(dir) = &args.textfile_dir {
        crate::output::write_textfile(dir, "headroom.prom", &wrapped()?)?;
    }
    if let Some(lab) = args.format.and_then(Format::lab) {
        let (out, failed) = report::labs::audit(lab, &wrapped()?, manifest.as_ref(), &document)?;
        crate::console::write_data(&out)?;
        return Ok(ExitCode::from(u8::from(failed)));
    }
    if let (Some(manifest), Some(file)) = (&manifest, &args.expect) {
        let checks = report::kinds::expect::check(manifest, &document);
        let failed = checks.iter().any(|c| !c.pass);
        let command_line: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let command_line = command_line.join(" ");
        let layout = match args.format {
            Some(Format::Ocptv) => Layout::Ocptv {
                version: env!("CARGO_PKG_VERSION"),
                command_line: &command_line,
            },
            _ if global.json => Layout::Json,
            _ => Layout::Text,
        };
        let manifest = file.display().to_string();
        let text = matches!(layout, Layout::Text);
        let out = report::kinds::expect::render(&checks, &wrapped()?, &manifest, layout);
        if text {
            crate::out!("{out}")?;
        } else {
            crate::console::write_data(&out)?;
        }
        return Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    if matches!(args.format, Some(Format::Openmetrics | Format::Prometheus)) {
        let doc = wrapped()?;
        let mut m = report::export::openmetrics::Metrics::new();
        report::kinds::add_metrics(&mut m, &doc, "the audit")?;
        if args.format == Some(Format::Openmetrics) {
            crate::console::write_data(&m.openmetrics())?;
        } else {
            crate::console::write_data(&m.prometheus())?;
        }
    } else if args.save_expect.is_some() || args.textfile_dir.is_some() {
        // What was asked for is written; the inventory is not printed as well.
    } else if global.json {
        crate::output::print_document(&wrapped()?)?;
    } else {
        let style = Style::new(global.use_color());
        let host = read_from.map(|r| probe::system::host(&SysRoot::new(r)));
        crate::out!(
            "{}",
            document.text(&Text {
                style,
                host: host.as_ref(),
                ..Text::default()
            })
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The largest `--lspci` dump read: `lspci -xxxx` prints about 13 kB for each function (4 KiB
/// of config space in hex), so this is thousands of functions.
const MAX_DUMP_BYTES: u64 = 64 << 20;

/// Read `--expect`'s manifest: bounded in size, one sentence (with the line, from toml) for a
/// broken one.
fn read_manifest(file: &std::path::Path) -> anyhow::Result<model::expect::Manifest> {
    use report::input::InputError;
    let show = file.display();
    let max = report::kinds::expect::MAX_MANIFEST_BYTES;
    let bytes = report::input::read(file, max).map_err(|e| match e {
        InputError::NotAFile(what) => {
            anyhow::anyhow!("--expect {show} is {what}: give the manifest file (TOML)")
        }
        InputError::TooLarge(_) => anyhow::anyhow!(
            "--expect {show} is larger than {} MiB: not a manifest (give the TOML file \
             --save-expect wrote)",
            max >> 20
        ),
        InputError::Io(e) => anyhow::anyhow!("--expect {show}: cannot open the manifest: {e}"),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("--expect {show} is not UTF-8 text: not a manifest"))?;
    report::kinds::expect::parse(&text, &format!("--expect {show}")).map_err(anyhow::Error::msg)
}
