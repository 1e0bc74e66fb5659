//! Options every command shares (JSON output, colour) and terminal styling.

use clap::{Args, ValueEnum};
use report::document::DocumentKind;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Print one JSON document (with `schema_version`) on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Colour in terminal output (NO_COLOR in the environment turns `auto` off).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

#[derive(ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl GlobalArgs {
    /// Whether to colour stdout: `--color always|never`, else only on a terminal and
    /// without `NO_COLOR` (https://no-color.org).
    pub fn use_color(&self) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        }
    }
}

/// Print a command's result as a result document (`report::document`): the common envelope
/// (`schema_version`, `kind`, `tool`, `created`, `host`) with `body`'s fields beside it. A
/// `schema_version`, `kind` or `tool` field in `body` is replaced by the envelope's.
pub fn print_result<T: serde::Serialize>(kind: DocumentKind, body: &T) -> anyhow::Result<()> {
    print_document(&wrap(kind, body)?)
}

/// `body` as a document of `kind` made now by this headroom on this machine (the envelope's
/// host as probe reads it).
pub fn wrap<T: serde::Serialize>(
    kind: DocumentKind,
    body: &T,
) -> Result<report::Document, report::DocumentError> {
    wrap_at(kind, body, Some(Path::new("/")))
}

/// [`wrap`] for the host whose files are under `root` (`--root`: a captured tree's machine),
/// or for no host at all (`None`).
pub fn wrap_at<T: serde::Serialize>(
    kind: DocumentKind,
    body: &T,
    root: Option<&Path>,
) -> Result<report::Document, report::DocumentError> {
    // No root: what was read is a capture (an lspci dump) that does not say which machine
    // it came from, so the document names none rather than the one that read it.
    let host = root
        .map(|r| probe::system::host(&model::root::SysRoot::new(r)))
        .unwrap_or_default();
    report::document::wrap(kind, env!("CARGO_PKG_VERSION"), host, body)
}

/// Print a result document as it is (`report --json` of one input keeps its envelope). A
/// closed pipe (`| head`) comes back as console::StdoutClosed: main exits 0 quietly.
pub fn print_document(doc: &report::Document) -> anyhow::Result<()> {
    crate::console::write_data(&doc.to_json_pretty())
}

/// Write a result document of `kind` to `path` atomically (temp file, then rename).
pub fn write_result<T: serde::Serialize>(
    path: &std::path::Path,
    kind: DocumentKind,
    body: &T,
) -> anyhow::Result<()> {
    let doc = wrap(kind, body)?;
    // WriteError's sentence already names the file and the OS's reason; a context on top
    // would print the reason twice ("Is a directory (os error 21): Is a directory ...").
    doc.write(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot write the result to {}: {}",
            path.display(),
            e.source
        )
    })
}

/// `--output` cannot be written: found before a benchmark runs (a usage error).
#[derive(Debug)]
pub struct OutputUnusable(pub String);

impl std::fmt::Display for OutputUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputUnusable {}

/// The database to use: `--db`, else `HEADROOM_DB`, else the default location.
pub fn db_path(db: Option<&Path>) -> anyhow::Result<PathBuf> {
    let env = std::env::var_os("HEADROOM_DB").filter(|v| !v.is_empty());
    match db.map(Path::to_path_buf).or(env.map(PathBuf::from)) {
        Some(p) => Ok(p),
        None => report::history::default_path().ok_or_else(|| {
            anyhow::anyhow!(
                "no place for the history: neither XDG_DATA_HOME nor HOME is set; give --db FILE"
            )
        }),
    }
}

/// The lab database's URL when `db` (from [`db_path`]) names one.
pub fn lab_url(db: &Path) -> Option<&str> {
    db.to_str().filter(|d| report::history_pg::is_url(d))
}

/// The local SQLite history to save in: `--db FILE` (whose directory must exist), else the
/// default one, whose directory is made (0700) when missing.
pub fn open_local(db: Option<&Path>) -> anyhow::Result<report::history::Store> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => {
            let p = db_path(None)?;
            report::history::create_default_dir(&p)?;
            p
        }
    };
    Ok(report::history::Store::open(&path)?)
}

/// The history to save in: a lab's PostgreSQL database (`--db postgresql://...` or
/// `HEADROOM_DB`), else the local SQLite history ([`open_local`]).
pub fn open_to_save(db: Option<&Path>) -> anyhow::Result<report::history_pg::History> {
    use report::history_pg::{History, LabStore};
    let path = db_path(db)?;
    Ok(match lab_url(&path) {
        Some(url) => History::Lab(Box::new(LabStore::open(url)?)),
        None if db.is_none() && std::env::var_os("HEADROOM_DB").is_none() => {
            History::Local(open_local(None)?)
        }
        None => History::Local(open_local(Some(&path))?),
    })
}

/// Keep a result document of `kind` in the history database (`db`, or the default one).
/// Runs for a lab's database are kept in the local history first, which is their spool:
/// then the lab's database gets this run and any it missed; where it cannot be reached,
/// the run stays in the local history, for `history push` or the next run.
pub fn save_result<T: serde::Serialize>(
    kind: DocumentKind,
    body: &T,
    db: Option<&std::path::Path>,
) -> anyhow::Result<i64> {
    let doc = wrap(kind, body)?;
    let path = db_path(db)?;
    let Some(url) = lab_url(&path) else {
        return Ok(open_to_save(db)?.insert(&doc.to_json_pretty())?.id);
    };
    let local = open_local(None)?;
    let kept = local.insert(&doc.to_json_pretty())?;
    let pushed = report::history_pg::LabStore::open(url).and_then(|mut lab| lab.push(&local));
    if let Err(e) = pushed {
        // Not lost: kept locally, and sent by the next push.
        crate::console::warn(format_args!(
            "the run is kept as #{} in the local history {}, not yet in the lab's: {e}; \
             `headroom history push --db {}` sends it, as the next run does",
            kept.id,
            local.path().display(),
            report::history_pg::redact_url(url)
        ));
    }
    Ok(kept.id)
}

/// Options every benchmark shares for keeping its result.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Also write the result document to FILE (atomically; benchmarks with several tests
    /// write it after each one, so an interrupted run keeps what it measured).
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// Do not keep the result in the history database.
    #[arg(long)]
    pub no_save: bool,

    /// History database: an SQLite FILE, or a lab's PostgreSQL database as
    /// postgresql://USER@HOST/DB or "host=HOST dbname=DB user=USER" (libpq's conventions:
    /// PGPASSWORD, ~/.pgpass, PGSERVICE...; not in the board binaries). Default: HEADROOM_DB, else
    /// $XDG_DATA_HOME/headroom/history.sqlite.
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<std::path::PathBuf>,

    /// Also write the result's metrics to DIR/headroom-KIND.prom (`headroom-disk.prom`...),
    /// atomically, for node_exporter's textfile collector (--collector.textfile.directory).
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<std::path::PathBuf>,
}

impl KeepArgs {
    /// Write `--output` and save to the history as asked; a history failure is a warning,
    /// not a lost run.
    /// The history keeps the result even when `--output` fails; that failure is returned.
    pub fn keep<T: serde::Serialize>(&self, kind: DocumentKind, body: &T) -> anyhow::Result<()> {
        let mut written = match &self.output {
            Some(path) => write_result(path, kind, body),
            None => Ok(()),
        };
        if let Some(dir) = &self.textfile_dir {
            let metrics = wrap(kind, body)
                .map_err(anyhow::Error::from)
                .and_then(|doc| write_textfile(dir, &report::kinds::textfile_name(kind), &doc));
            if written.is_ok() {
                written = metrics;
            }
        }
        if !self.no_save {
            if let Err(e) = save_result(kind, body, self.db.as_deref()) {
                crate::console::warn(format_args!(
                    "the result was not kept in the history: {}",
                    crate::console::sentence(&e)
                ));
            }
        }
        written
    }

    /// Whether `--output` can be written, checked before a benchmark so that a missing or
    /// read-only directory does not lose a whole run.
    pub fn check_output(&self) -> Result<(), OutputUnusable> {
        if let Some(path) = &self.output {
            check_writable("--output", path)?;
        }
        if let Some(dir) = &self.textfile_dir {
            check_textfile_dir(dir, "headroom.prom")?;
        }
        Ok(())
    }
}

/// Whether `--textfile-dir DIR` can take `name`: an existing directory where a file can be
/// created (checked before any work).
pub fn check_textfile_dir(dir: &Path, name: &str) -> Result<(), OutputUnusable> {
    if !dir.is_dir() {
        return Err(OutputUnusable(format!(
            "--textfile-dir {}: no such directory; give the directory node_exporter's \
             --collector.textfile.directory reads",
            dir.display()
        )));
    }
    check_writable("--textfile-dir", &dir.join(name))
}

/// Write `doc`'s metrics in the Prometheus text format to DIR/`name` atomically (a
/// temporary `.NAME.XXXXXX.tmp` in DIR, then a rename), as node_exporter's textfile collector
/// requires: it reads only `*.prom`, so it never sees half a file.
///
/// Something other than a regular file under that name (a directory, a link, a FIFO another
/// user put in a directory they can write) is refused: that file is not written.
pub fn write_textfile(dir: &Path, name: &str, doc: &report::Document) -> anyhow::Result<()> {
    let mut metrics = report::export::openmetrics::Metrics::new();
    report::kinds::add_metrics(&mut metrics, doc, name)?;
    write_metrics(dir, name, &metrics)?;
    // Said to a person at a terminal; a timer or cron job running it stays quiet.
    if std::io::stderr().is_terminal() {
        crate::console::info(format_args!("wrote {}", dir.join(name).display()));
    }
    Ok(())
}

/// Write `metrics` to DIR/`name` as [`write_textfile`] does, saying nothing (a command that
/// rewrites it every interval).
pub fn write_metrics(
    dir: &Path,
    name: &str,
    metrics: &report::export::openmetrics::Metrics,
) -> anyhow::Result<()> {
    let path = dir.join(name);
    if let Ok(m) = std::fs::symlink_metadata(&path) {
        let t = m.file_type();
        if !t.is_file() {
            let what = if t.is_dir() {
                "a directory"
            } else if t.is_symlink() {
                "a symbolic link"
            } else {
                "not a regular file"
            };
            anyhow::bail!(
                "--textfile-dir: {} is {what}, where headroom writes a file of metrics: it was \
                 not written; remove that entry",
                path.display()
            );
        }
    }
    report::write_atomic(&path, metrics.prometheus().as_bytes()).map_err(|e| {
        anyhow::anyhow!(
            "--textfile-dir: cannot write {}: {}",
            path.display(),
            e.source
        )
    })
}

/// What a command that writes `--textfile-dir DIR` again and again (a server) says of DIR
/// once, before its first write: a directory other users can write (mode o+w, or g+w for a
/// group other than root's) lets any of them put a directory or a link where the file goes
/// and stop its updates.
pub fn textfile_dir_warning(dir: &Path, name: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    let mode = m.mode();
    let others = mode & 0o002 != 0 || (mode & 0o020 != 0 && m.gid() != 0);
    others.then(|| {
        format!(
            "--textfile-dir {}: other users can write in it (mode {:o}): one of them can put \
             a directory or a link where {name} goes and stop its updates; give a directory \
             only root can write",
            dir.display(),
            mode & 0o7777
        )
    })
}

/// The machine-readable formats of a result besides `--json`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (ends in `# EOF`).
    Openmetrics,
    /// The Prometheus text format 0.0.4, as node_exporter's textfile collector reads it.
    Prometheus,
    /// OCP Test & Validation JSON lines (audit --expect's checks).
    Ocptv,
    /// LAVA test-case lines: `lava-test-case NAME --result pass|fail ...`, one per check
    /// and measured figure.
    Lava,
    /// KernelCI's KCIDB I/O JSON (schema 5.3): one test per check and measured figure.
    Kcidb,
}

impl Format {
    /// The formats `report` prints from result documents (ocptv is the output of
    /// `audit --expect`'s checks, which no document holds).
    pub const OF_DOCUMENTS: &'static [Format] = &[
        Format::Openmetrics,
        Format::Prometheus,
        Format::Lava,
        Format::Kcidb,
    ];

    /// Its name on the command line (`openmetrics`).
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    /// The board lab's format (`report::labs`), for lava and kcidb.
    pub fn lab(self) -> Option<report::labs::Lab> {
        match self {
            Format::Lava => Some(report::labs::Lab::Lava),
            Format::Kcidb => Some(report::labs::Lab::Kcidb),
            _ => None,
        }
    }
}

/// A `--format` value among `formats` only: `--help` lists these, and a format of another
/// command (`report --format ocptv`) is refused with the list and where it belongs.
#[derive(Clone)]
pub struct FormatAmong(pub &'static [Format]);

impl clap::builder::TypedValueParser for FormatAmong {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        let text = value.to_string_lossy();
        let list = self
            .0
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ");
        let why = match Format::from_str(&text, true) {
            Ok(f) if self.0.contains(&f) => return Ok(f),
            Ok(Format::Ocptv) => format!(
                "--format ocptv is the output of `headroom audit --expect MANIFEST`; `{}` prints {list}",
                cmd.get_bin_name().unwrap_or(cmd.get_name())
            ),
            _ => format!("--format {text:?} is none of {list}"),
        };
        Err(
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{why}\n"))
                .with_cmd(cmd),
        )
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().filter_map(|f| f.to_possible_value()),
        ))
    }
}

/// A file name of the kind `flag` writes, for the example in a refusal: `report.md` for
/// `--md`, `report.html` for `--html`, `counts.txt` for count's `-o` (perf stat's text; CSV
/// or a document with -x or --json), `expect.toml` for `--save-expect`'s manifest, `run.json`
/// for a result document (`--output`).
fn example_name(flag: &str) -> &'static str {
    match flag {
        "--md" => "report.md",
        "--html" => "report.html",
        "-o" => "counts.txt",
        "--save-expect" => "expect.toml",
        "--textfile-dir" => "headroom.prom",
        _ => "run.json",
    }
}

/// Whether FILE, given with `flag`, can be written before any work starts: the directory
/// exists, the name is not a directory, and a file can be created beside it (the atomic
/// write needs that).
pub fn check_writable(flag: &str, path: &std::path::Path) -> Result<(), OutputUnusable> {
    let show = path.display();
    if path.is_dir() {
        return Err(OutputUnusable(format!(
            "{flag} {show} is a directory: give a file name, e.g. {}",
            path.join(example_name(flag)).display()
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(OutputUnusable(format!(
            "{flag} {show}: the directory {} does not exist; create it or choose another \
             place",
            dir.display()
        )));
    }
    // The temporary file the write will make, made and removed now (unpredictable name,
    // O_EXCL: nothing another user planted in the directory is followed or reused).
    match report::atomic::check_writable(path) {
        Ok(()) => Ok(()),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EROFS) => "its filesystem is read-only".to_string(),
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    "no permission to create files there".to_string()
                }
                _ => e.to_string(),
            };
            Err(OutputUnusable(format!(
                "{flag} {show}: cannot write in {} ({why}); choose another place",
                dir.display()
            )))
        }
    }
}
