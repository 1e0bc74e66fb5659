//! The history: every saved run in one SQLite database (embedded, bundled SQLite).
//!
//! Several runs may save at once (two benches on one board, a lab's parallel jobs): the
//! database runs in WAL mode (readers never block the writer) with a busy timeout, so a
//! writer waits for another's transaction instead of failing. A file that is not ours (not
//! SQLite, or SQLite of another program) is refused with a sentence and never written.

use crate::document::Document;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of a headroom history ("hdrm"): how a foreign SQLite file is told
/// from ours (https://www.sqlite.org/pragma.html#pragma_application_id).
const APPLICATION_ID: i32 = 0x6864_726d;

/// How long a writer waits for another's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The table of runs (also created in an older history that lacks it). `host` is the
/// hostname; `machine_id`, `model` and `serial` tell apart the hosts of a lab that share one
/// (two boards named `raspberrypi`): a history made before them gains them in place, filled
/// from its documents, when it is next opened to save ([`HOST_COLUMNS`]).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS runs (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     created TEXT,
     host TEXT,
     kind TEXT NOT NULL,
     target TEXT,
     test TEXT NOT NULL,
     headline TEXT NOT NULL,
     document TEXT NOT NULL,
     machine_id TEXT,
     model TEXT,
     serial TEXT
 );";

/// The version of the history's schema this headroom makes and reads, kept in the file's
/// `PRAGMA user_version` (https://www.sqlite.org/pragma.html#pragma_user_version), as the lab's
/// PostgreSQL history keeps its own (`history_pg::SCHEMA_VERSION`): 1, the first `runs`; 2, with
/// the host's identity ([`HOST_COLUMNS`]). A history of an older headroom (0 when it was made
/// before the version was kept) is brought up to date when opened to save; a history of a
/// newer headroom is refused, untouched, by this one.
pub const SCHEMA_VERSION: i32 = 2;

/// The host's identity columns of `runs` that came after its first version, each with where
/// a saved document keeps it (`model::system::Host` in the envelope's `host`).
const HOST_COLUMNS: [(&str, &str); 3] = [
    ("machine_id", "$.host.machine_id"),
    ("model", "$.host.model"),
    ("serial", "$.host.serial"),
];

/// The first 16 bytes of every SQLite 3 file (https://www.sqlite.org/fileformat.html §1.3).
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "{} is not a headroom history ({why}); it was left untouched: choose another file \
         with --db",
        path.display()
    )]
    Foreign { path: PathBuf, why: String },
    #[error("cannot create the directory {} for the history: {error}", path.display())]
    Dir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "cannot create the history {}: the directory {} does not exist; create it, or give \
         --db a file in a directory that exists",
        path.display(),
        dir.display()
    )]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error(
        "the history {} is in {}, which {why}: they could put links where SQLite keeps the \
         history's journal ({name}-wal, {name}-shm) and make headroom write through them; \
         keep the history in a directory only you can write (the default is \
         $XDG_DATA_HOME/headroom)",
        path.display(),
        dir.display()
    )]
    UnsafeDirectory {
        path: PathBuf,
        dir: PathBuf,
        name: String,
        why: String,
    },
    #[error(
        "the history {} is reached through {}, which {why}: that user could point it at any \
         directory (a link to /etc/cron.d would make headroom create its files there); keep \
         the history under directories only you and root control (as root, run without \
         `sudo -E`, which keeps another user's HOME and XDG_DATA_HOME, or give --db)",
        path.display(),
        through.display()
    )]
    UnsafePath {
        path: PathBuf,
        through: PathBuf,
        why: String,
    },
    #[error("cannot read the history {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot create the history {}: {error}", path.display())]
    Create {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "cannot save in the history {}: {error}; give --db FILE on a writable filesystem",
        path.display()
    )]
    NotWritable {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the history {} failed: {error}", path.display())]
    Sqlite {
        path: PathBuf,
        error: rusqlite::Error,
    },
    #[error("there is no run {id} in the history {}: `headroom history` lists them", path.display())]
    NoSuchRun { path: PathBuf, id: i64 },
    #[error(
        "the history {} has schema version {found}, newer than this headroom knows \
         ({SCHEMA_VERSION}): upgrade headroom to use it; it was left untouched",
        path.display()
    )]
    Newer { path: PathBuf, found: i32 },
    #[error(
        "run {id} in the history {} is damaged: {what}; the other runs are intact \
         (`headroom history` lists them)",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        id: i64,
        what: String,
    },
    #[error(transparent)]
    Document(#[from] crate::document::DocumentError),
}

/// One line of `headroom history`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub created: Option<String>,
    /// The hostname.
    pub host: Option<String>,
    /// What tells the host from others that share its hostname (`model::system::Host`):
    /// absent where the document does not say (documents made before 2026-11-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The kernel release the run was made on (`uname -r`), where its document says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    pub kind: String,
    pub target: Option<String>,
    pub test: String,
    pub headline: String,
    /// The run was stopped (Ctrl-C, SIGTERM) before it finished: its document says
    /// `"interrupted": true` and holds what was measured until then.
    pub interrupted: bool,
    /// What is wrong with the run's row when it is damaged (its document is not JSON, or not
    /// text); the other runs are listed as usual.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

impl RunRow {
    /// The machine beside the hostname, as reports show it (`Raspberry Pi 5 Model B Rev 1.0,
    /// serial 6a7f1c2e, machine-id 5be0d5c1a77f`), `None` when the run's document does not say.
    pub fn machine(&self) -> Option<String> {
        model::system::Host {
            machine_id: self.machine_id.clone(),
            model: self.model.clone(),
            serial: self.serial.clone(),
            ..Default::default()
        }
        .describe()
    }
}

/// `history`'s list of runs as a table: one line per run whatever its strings hold (a `count`
/// of a command with a newline in it: the terminal's table writes them printable), a damaged
/// run marked as such (its damage is said below the table). The host is its hostname and the
/// machine (model, serial, machine-id): boards of a lab often share a hostname.
pub fn list_text(rows: &[RunRow], style: &crate::terminal::Style) -> String {
    let header = [
        "id",
        "time (UTC)",
        "host",
        "machine",
        "target",
        "test",
        "result",
    ];
    let mut table: Vec<Vec<String>> = vec![header.map(String::from).to_vec()];
    table.extend(rows.iter().map(|r| {
        vec![
            r.id.to_string(),
            r.created.clone().unwrap_or_else(|| "-".into()),
            r.host.clone().unwrap_or_else(|| "-".into()),
            r.machine().unwrap_or_else(|| "-".into()),
            r.target.clone().unwrap_or_else(|| "-".into()),
            r.test.clone(),
            match &r.damaged {
                Some(_) => "damaged (see below)".to_string(),
                None if r.interrupted => format!("{} (interrupted)", r.headline),
                None => r.headline.clone(),
            },
        ]
    }));
    let mut text = String::new();
    crate::terminal::table(&mut text, &table, 1, header.len(), style);
    text
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Whether `runs` has the [`HOST_COLUMNS`]: a history of an older headroom opened only
    /// to read has not, and its hosts are read from its documents instead.
    host_columns: bool,
}

/// Which runs `history` lists: all, or those of one host.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    /// `--host NAME`: the hostname (any case, as DNS names are), a machine-id's first
    /// digits (at least 4) or the serial.
    pub host: Option<&'a str>,
    /// `--kind KIND`: runs of this kind only (`disk`, `latency`, `survey`...).
    pub kind: Option<&'a str>,
    /// `--since`: runs made at or after this time (RFC 3339 in UTC).
    pub since: Option<&'a str>,
}

/// The fewest digits of a machine-id `--host` takes as its beginning: fewer would match
/// hosts by chance (`--host 3` would pick a sixteenth of a lab).
pub const MACHINE_ID_PREFIX_MIN: usize = 4;

/// The names of the columns of the history's `runs` table.
fn run_columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info('runs')")?;
    let names = st.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// Whether the history's `runs` table has every one of [`HOST_COLUMNS`].
fn has_host_columns(conn: &Connection) -> rusqlite::Result<bool> {
    let names = run_columns(conn)?;
    Ok(HOST_COLUMNS
        .iter()
        .all(|(c, _)| names.iter().any(|n| n == c)))
}

/// Refuses a history whose schema a newer headroom made (its `user_version` above
/// [`SCHEMA_VERSION`]): before its tables are looked at, whose new columns this headroom would
/// call foreign.
fn check_version(conn: &Connection, path: &Path) -> Result<(), HistoryError> {
    let found: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|error| HistoryError::Sqlite {
            path: path.to_path_buf(),
            error,
        })?;
    if found > SCHEMA_VERSION {
        return Err(HistoryError::Newer {
            path: path.to_path_buf(),
            found,
        });
    }
    Ok(())
}

/// Adds the [`HOST_COLUMNS`] a history of an older headroom lacks, filled from each run's
/// document (rows whose document is damaged keep them empty): in place, in the caller's
/// write transaction, every row kept.
fn add_host_columns(conn: &Connection) -> rusqlite::Result<()> {
    let names = run_columns(conn)?;
    for (column, json_path) in HOST_COLUMNS {
        if names.iter().any(|n| n == column) {
            continue;
        }
        conn.execute_batch(&format!(
            "ALTER TABLE runs ADD COLUMN {column} TEXT;
             UPDATE runs SET {column} = json_extract(document, '{json_path}') WHERE {VALID};"
        ))?;
    }
    Ok(())
}

/// `$XDG_DATA_HOME/headroom/history.sqlite`, else `~/.local/share/headroom/history.sqlite`
/// (XDG Base Directory Specification); `None` when neither variable is set.
pub fn default_path() -> Option<PathBuf> {
    let from = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    let base = from("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| from("HOME").map(|h| h.join(".local/share")))?;
    Some(base.join("headroom").join("history.sqlite"))
}

/// What [`Store::insert`] did with a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Saved {
    /// The run's id: the new one, or the one that already held the same document.
    pub id: i64,
    /// `false` when the same document was already saved (it is not stored twice).
    pub new: bool,
}

/// A run id as the user writes it: `12` or `#12` (as `headroom history` lists it), the same
/// for `history show`, `report` and `compare`.
pub fn parse_run_id(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('#').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok().filter(|&id| id > 0)
}

/// Looks at the bytes before SQLite does: SQLite would take an empty file for an empty
/// database and write into it, and would fail on any other non-database only at the first
/// statement, with "file is not a database". `Ok(false)` when there is no file.
fn check_header(path: &Path) -> Result<bool, HistoryError> {
    let foreign = |why: &str| HistoryError::Foreign {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let mut f = match crate::input::open(path) {
        Ok((f, _)) => f,
        Err(crate::input::InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(false)
        }
        Err(crate::input::InputError::NotAFile(what)) => {
            return Err(foreign(&format!("it is {what}, not a file")))
        }
        Err(e) => {
            return Err(HistoryError::Read {
                path: path.to_path_buf(),
                error: match e {
                    crate::input::InputError::Io(error) => error,
                    other => std::io::Error::other(other.to_string()),
                },
            })
        }
    };
    use std::io::Read;
    let mut head = [0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(error) => {
                return Err(HistoryError::Read {
                    path: path.to_path_buf(),
                    error,
                })
            }
        }
    }
    if n == 0 {
        // Every history headroom creates has its header from the start (see `create`), so
        // an empty file is someone else's.
        return Err(foreign("it is an empty file, not an SQLite database"));
    }
    if n < 16 || &head != SQLITE_MAGIC {
        return Err(foreign("it is not an SQLite database"));
    }
    Ok(true)
}

/// `path` as an SQLite URI with `immutable=1`: SQLite then reads the file without locks and
/// without the `-shm` file it cannot create on a read-only filesystem
/// (https://www.sqlite.org/uri.html#uriimmutable).
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The directory `path` is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Refuses a history in a directory other users can write (or that another user owns):
/// SQLite creates its journal beside the database under fixed names (`NAME-wal`,
/// `NAME-shm`, `NAME-journal`), following links, so another user could plant a link there
/// and have headroom, often root, write through it (docs/ARCHITECTURE.md: files headroom creates where
/// others can write have unpredictable names). Every directory on the way there is checked
/// too ([`check_ancestors`]). A missing directory is left to the caller.
fn check_directory(path: &Path) -> Result<(), HistoryError> {
    use std::os::unix::fs::MetadataExt;
    let dir = directory_of(path);
    check_ancestors(path, dir)?;
    let Ok(meta) = std::fs::metadata(dir) else {
        return Ok(());
    };
    // SAFETY: geteuid(2) and getegid(2) have no arguments and cannot fail.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let why = if meta.mode() & 0o002 != 0 {
        "every user can write".to_string()
    } else if meta.mode() & 0o020 != 0 && meta.gid() != egid {
        format!("the users of group {} can write", meta.gid())
    } else if meta.uid() != euid && meta.uid() != 0 {
        format!("user {} owns", meta.uid())
    } else {
        return Ok(());
    };
    Err(HistoryError::UnsafeDirectory {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        why,
    })
}

/// Refuses a history whose directory `dir` is reached through a name another user controls:
/// each component from `/` on, links followed as the kernel follows them, must belong to
/// the user running headroom or to root, and sit in a directory that no other user can
/// write, or only with the sticky bit (/tmp: there only an entry's owner may rename or
/// remove it). Otherwise that user could swap the component for a link and move the
/// history, and the files SQLite makes beside it, anywhere: root running with a user's
/// HOME or XDG_DATA_HOME (`sudo -E`) created `/etc/cron.d/history.sqlite` through a link
/// at `~/.local/share/headroom`. Components that do not exist yet are left to the caller
/// (the default directory is then made by this user, 0700).
fn check_ancestors(path: &Path, dir: &Path) -> Result<(), HistoryError> {
    use model::root::{walked_names, MAX_LINK_HOPS};
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) and getegid(2) have no arguments and cannot fail.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let unsafe_path = |through: PathBuf, why: String| HistoryError::UnsafePath {
        path: path.to_path_buf(),
        through,
        why,
    };
    let absolute = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(dir),
            Err(_) => return Ok(()),
        }
    };
    let mut todo: VecDeque<OsString> = walked_names(&absolute).into();
    let mut current = PathBuf::from("/");
    let mut hops = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            current.pop();
            continue;
        }
        let entry = current.join(&name);
        let meta = match std::fs::symlink_metadata(&entry) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(unsafe_path(entry, format!("cannot be examined ({e})"))),
        };
        let parent = std::fs::metadata(&current)
            .map_err(|e| unsafe_path(current.clone(), format!("cannot be examined ({e})")))?;
        let others_write = parent.mode() & 0o002 != 0
            || (parent.mode() & 0o020 != 0 && parent.gid() != egid && parent.gid() != 0);
        let sticky = parent.mode() & 0o1000 != 0;
        if meta.uid() != euid && meta.uid() != 0 {
            let what = if meta.file_type().is_symlink() {
                "a symbolic link"
            } else {
                "a directory"
            };
            return Err(unsafe_path(
                entry,
                format!("is {what} that user {} owns", meta.uid()),
            ));
        }
        if others_write && !sticky {
            return Err(unsafe_path(
                entry,
                format!(
                    "is in {}, which other users can write (without the sticky bit, they \
                     can replace it)",
                    current.display()
                ),
            ));
        }
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(unsafe_path(
                    entry,
                    format!("leads through more than {MAX_LINK_HOPS} links (a link loop?)"),
                ));
            }
            let target = std::fs::read_link(&entry)
                .map_err(|e| unsafe_path(entry.clone(), format!("cannot be read ({e})")))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            for c in walked_names(&target).into_iter().rev() {
                todo.push_front(c);
            }
            continue;
        }
        current = entry;
    }
    Ok(())
}

/// Makes the directory of the default history ([`default_path`]) and any missing parent,
/// readable only by its user (0700): the history says what ran on the machine. Only the
/// default location is made; a directory given with `--db` must exist.
pub fn create_default_dir(path: &Path) -> Result<(), HistoryError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = directory_of(path);
    // Before anything is made: a missing directory is made through the names that exist.
    check_ancestors(path, dir)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| HistoryError::Dir {
            path: dir.to_path_buf(),
            error,
        })
}

/// The longest value (a document, a string) SQLite hands over from the history: a saved
/// document is at most [`crate::document::MAX_DOCUMENT_BYTES`]; the rest is room for the
/// JSON SQLite builds around it. A crafted file's larger value is an error, not memory.
const MAX_VALUE_BYTES: i32 = 2 * (crate::document::MAX_DOCUMENT_BYTES as i32);

/// The most objects (tables, indexes) a history's schema holds; headroom makes two.
const MAX_SCHEMA_OBJECTS: usize = 16;

/// Readies a connection for a file someone else may have made: defensive mode (the schema
/// cannot be written as plain data, nor can the file be damaged on purpose through SQL:
/// SQLITE_DBCONFIG_DEFENSIVE), functions in the schema limited to the innocuous ones
/// (SQLITE_DBCONFIG_TRUSTED_SCHEMA off, what `PRAGMA trusted_schema=OFF` sets; that pragma
/// is left out of this build with the other flag pragmas), and no value longer than
/// [`MAX_VALUE_BYTES`] (https://www.sqlite.org/security.html, "Untrusted SQLite Database
/// Files").
fn harden(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    let mut now: std::os::raw::c_int = 1;
    // SAFETY: sqlite3_db_config with SQLITE_DBCONFIG_TRUSTED_SCHEMA takes an int (0: off)
    // and a pointer to an int it writes the new setting to; the handle is this open
    // connection's.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_config(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBCONFIG_TRUSTED_SCHEMA,
            0 as std::os::raw::c_int,
            &mut now as *mut std::os::raw::c_int,
        )
    };
    if rc != rusqlite::ffi::SQLITE_OK || now != 0 {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rc),
            Some("trusted_schema could not be turned off".into()),
        ));
    }
    // SAFETY: sqlite3_limit only sets a number of this open connection (rusqlite wraps it
    // only with its `limits` feature).
    unsafe {
        rusqlite::ffi::sqlite3_limit(
            conn.handle(),
            rusqlite::ffi::SQLITE_LIMIT_LENGTH,
            MAX_VALUE_BYTES,
        );
    }
    Ok(())
}

/// Refuses a history whose schema holds what headroom never makes: `runs` must be a plain
/// table with headroom's columns (not a view, which a query could make run without end, nor
/// a table with computed columns), beside SQLite's own `sqlite_sequence` and indexes of
/// `runs`; no view, no trigger, no other table. Every query of the history then reads a
/// table of stored rows, in time and memory bounded by the file.
fn check_schema(conn: &Connection, path: &Path) -> Result<(), HistoryError> {
    let foreign = |why: String| HistoryError::Foreign {
        path: path.to_path_buf(),
        why,
    };
    let sql = |error| HistoryError::Sqlite {
        path: path.to_path_buf(),
        error,
    };
    let objects: Vec<(String, String, String, Option<String>)> = conn
        .prepare(&format!(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema LIMIT {}",
            MAX_SCHEMA_OBJECTS + 1
        ))
        .and_then(|mut st| {
            st.query_map([], |r| {
                Ok((
                    lenient_text(r.get_ref(0)?).unwrap_or_default(),
                    lenient_text(r.get_ref(1)?).unwrap_or_default(),
                    lenient_text(r.get_ref(2)?).unwrap_or_default(),
                    lenient_text(r.get_ref(3)?),
                ))
            })?
            .collect()
        })
        .map_err(sql)?;
    if objects.len() > MAX_SCHEMA_OBJECTS {
        return Err(foreign(format!(
            "its schema holds more than {MAX_SCHEMA_OBJECTS} tables, indexes, views or \
             triggers; a headroom history holds two tables"
        )));
    }
    for (kind, name, table, text) in &objects {
        let plain_table = text.as_deref().is_some_and(|t| {
            t.trim_start()
                .get(..12)
                .is_some_and(|h| h.eq_ignore_ascii_case("CREATE TABLE"))
        });
        match (kind.as_str(), name.as_str()) {
            ("table", "runs") | ("table", "sqlite_sequence") if plain_table => {}
            ("index", _) if table == "runs" => {}
            ("view", "runs") => {
                return Err(foreign(
                    "its `runs` is a view, not the table of saved runs headroom makes".into(),
                ))
            }
            _ => {
                return Err(foreign(format!(
                    "it holds the {kind} {name:?}, which a headroom history does not"
                )))
            }
        }
    }
    let known: Vec<&str> = [
        "id", "created", "host", "kind", "target", "test", "headline", "document",
    ]
    .into_iter()
    .chain(HOST_COLUMNS.iter().map(|(c, _)| *c))
    .collect();
    let columns: Vec<(String, i64)> = conn
        .prepare("SELECT name, hidden FROM pragma_table_xinfo('runs') LIMIT 64")
        .and_then(|mut st| {
            st.query_map([], |r| {
                Ok((lenient_text(r.get_ref(0)?).unwrap_or_default(), r.get(1)?))
            })?
            .collect()
        })
        .map_err(sql)?;
    for (name, hidden) in &columns {
        if *hidden != 0 {
            return Err(foreign(format!(
                "its `runs` table has the computed column {name:?}, which headroom never makes"
            )));
        }
        if !known.contains(&name.as_str()) {
            return Err(foreign(format!(
                "its `runs` table has the column {name:?}, which headroom never makes"
            )));
        }
    }
    Ok(())
}

impl Store {
    /// Open an existing history to read it; `Ok(None)` when there is none at `path`. Reading
    /// never creates a file or directory, and works on a read-only filesystem.
    pub fn open_existing(path: &Path) -> Result<Option<Store>, HistoryError> {
        // The names on the way first: reading through another user's link would read (and
        // for a WAL database, write the -shm of) whatever it points at.
        check_directory(path)?;
        if !check_header(path)? {
            return Ok(None);
        }
        let sql = |error| HistoryError::Sqlite {
            path: path.to_path_buf(),
            error,
        };
        let read_only = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, read_only).map_err(sql)?;
        harden(&conn).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // A WAL database needs its `-shm` file; where it is absent and cannot be created
        // (a read-only filesystem: SQLITE_CANTOPEN, code 14) the file is read as immutable.
        // Nothing can write there anyway.
        let conn = match Self::check_ours(&conn, path) {
            Ok(()) => conn,
            Err(HistoryError::Sqlite {
                error: rusqlite::Error::SqliteFailure(f, _),
                ..
            }) if f.code == rusqlite::ErrorCode::CannotOpen => {
                drop(conn);
                let conn = Connection::open_with_flags(
                    immutable_uri(path),
                    read_only | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(sql)?;
                harden(&conn).map_err(sql)?;
                Self::check_ours(&conn, path)?;
                conn
            }
            Err(e) => return Err(e),
        };
        check_version(&conn, path)?;
        check_schema(&conn, path)?;
        let host_columns = has_host_columns(&conn).map_err(sql)?;
        Ok(Some(Store {
            conn,
            path: path.to_path_buf(),
            host_columns,
        }))
    }

    /// Whether the open database is a headroom history (read only: nothing is written).
    fn check_ours(conn: &Connection, path: &Path) -> Result<(), HistoryError> {
        let app_id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::NotADatabase =>
                {
                    HistoryError::Foreign {
                        path: path.to_path_buf(),
                        why: "it is damaged or not an SQLite database".into(),
                    }
                }
                e => HistoryError::Sqlite {
                    path: path.to_path_buf(),
                    error: e,
                },
            })?;
        if app_id != APPLICATION_ID {
            return Err(HistoryError::Foreign {
                path: path.to_path_buf(),
                why: "it is an SQLite database of another program".into(),
            });
        }
        Ok(())
    }

    /// Open the history at `path` to save runs in it, creating it when there is none (its
    /// directory must exist: see [`create_default_dir`]).
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
        check_directory(path)?;
        let sql = |error| HistoryError::Sqlite {
            path: path.to_path_buf(),
            error,
        };
        let foreign = |why: &str| HistoryError::Foreign {
            path: path.to_path_buf(),
            why: why.to_string(),
        };
        if !check_header(path)? {
            Self::create(path)?;
        }
        // SQLite would say only "unable to open database file" for a read-only filesystem
        // or file; the system's own words say which.
        if let Err(error) = std::fs::OpenOptions::new().write(true).open(path) {
            return Err(HistoryError::NotWritable {
                path: path.to_path_buf(),
                error,
            });
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        harden(&conn).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let not_a_db = |e: rusqlite::Error| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                foreign("it is damaged or not an SQLite database")
            }
            e => sql(e),
        };
        // Check the file and claim it (a history of an older headroom, or an SQLite file
        // without tables) in one write transaction; BEGIN IMMEDIATE waits for another
        // writer up to the busy timeout.
        conn.execute_batch("BEGIN IMMEDIATE").map_err(not_a_db)?;
        let claimed = (|| {
            let app_id: i32 = conn
                .query_row("PRAGMA application_id", [], |r| r.get(0))
                .map_err(not_a_db)?;
            let tables: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )
                .map_err(not_a_db)?;
            if app_id != APPLICATION_ID && (app_id != 0 || tables > 0) {
                return Err(foreign("it is an SQLite database of another program"));
            }
            check_version(&conn, path)?;
            check_schema(&conn, path)?;
            conn.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; {SCHEMA}"
            ))
            .map_err(sql)?;
            // A history of an older headroom gains the host's identity (version 2), in the
            // same transaction as its new version: all of it or nothing.
            add_host_columns(&conn).map_err(sql)?;
            conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}; COMMIT"))
                .map_err(sql)
        })();
        if let Err(e) = claimed {
            // Nothing was written: the transaction is dropped as it was.
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        // WAL lets readers run beside the writer. The mode is kept in the file, so only the
        // first opener switches; the switch needs the database to itself, and SQLite does
        // not always call the busy handler for it, hence the bounded retry. A filesystem
        // without shared memory answers "delete": still safe, only slower with several writers.
        let start = std::time::Instant::now();
        loop {
            let mode: String = conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(sql)?;
            if mode.eq_ignore_ascii_case("wal") {
                break;
            }
            match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if f.code == rusqlite::ErrorCode::DatabaseBusy
                        && start.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(sql(e)),
            }
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            host_columns: true,
        })
    }

    /// Makes a new history at `path`, in a directory that exists (`--db
    /// /nonexistent/h.sqlite` made `/nonexistent` as root). It is built complete under a
    /// temporary name beside `path` and linked into place only if `path` still does not
    /// exist: no process ever sees a half-made or empty history, and a history another run
    /// created meanwhile is kept as it is.
    fn create(path: &Path) -> Result<(), HistoryError> {
        let dir = directory_of(path);
        if !dir.is_dir() {
            return Err(HistoryError::NoDirectory {
                path: path.to_path_buf(),
                dir: dir.to_path_buf(),
            });
        }
        // tempfile's errors name the temporary file; the user knows only `path`.
        let create = |error: std::io::Error| HistoryError::Create {
            path: path.to_path_buf(),
            error: std::io::Error::from(error.kind()),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".headroom-history-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(create)?;
        {
            let sql = |error| HistoryError::Sqlite {
                path: tmp.path().to_path_buf(),
                error,
            };
            let conn = Connection::open(tmp.path()).map_err(sql)?;
            conn.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = \
                 {SCHEMA_VERSION}; {SCHEMA}"
            ))
            .map_err(sql)?;
            // WAL is kept in the file; a filesystem without shared memory answers "delete",
            // which is safe, only slower with several writers.
            let _mode: String = conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                .map_err(sql)?;
            // Closing checkpoints the WAL and removes the temporary name's -wal and -shm.
            conn.close().map_err(|(_, e)| sql(e))?;
        }
        match tmp.persist_noclobber(path) {
            Ok(_) => Ok(()),
            // Another run made the history first: use that one (ours is removed).
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(create(e.error)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, error: rusqlite::Error) -> HistoryError {
        HistoryError::Sqlite {
            path: self.path.clone(),
            error,
        }
    }

    /// Save one result document (its JSON text). The text is checked as a document first,
    /// so the history holds only documents headroom can read back; a document already saved
    /// (the same content) is not stored again, and its id is returned with `new: false`.
    pub fn insert(&self, document_json: &str) -> Result<Saved, HistoryError> {
        let doc = Document::parse(document_json, "the document to save")?;
        let s = crate::kinds::summarize(&doc, "the document to save")?;
        let (test, headline) = crate::kinds::listing(&doc, &s, "the document to save")?;
        // IMMEDIATE takes the write lock first (waiting in the busy handler), so the insert
        // never has to upgrade a stale read snapshot, which SQLite refuses without waiting.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(|e| self.sql(e))?;
        let text = doc.to_json_pretty();
        let existing: Option<i64> = tx
            .query_row(
                "SELECT id FROM runs WHERE document = ?1 ORDER BY id LIMIT 1",
                [&text],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        if let Some(id) = existing {
            return Ok(Saved { id, new: false });
        }
        let host = s.host.clone().unwrap_or_default();
        tx.execute(
            "INSERT INTO runs (created, host, kind, target, test, headline, document,
                               machine_id, model, serial)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                s.created,
                s.hostname,
                s.kind.as_str(),
                s.target,
                test,
                headline,
                text,
                host.machine_id,
                host.model,
                host.serial
            ],
        )
        .map_err(|e| self.sql(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(Saved { id, new: true })
    }

    /// Every run, oldest first. A damaged row (a document that is not JSON text: a disk
    /// error, an edit by hand) does not hide the others: it is listed with what is wrong in
    /// [`RunRow::damaged`].
    pub fn list(&self) -> Result<Vec<RunRow>, HistoryError> {
        self.list_where(Filter::default())
    }

    /// The runs `filter` selects, oldest first (see [`Store::list`]).
    pub fn list_where(&self, filter: Filter<'_>) -> Result<Vec<RunRow>, HistoryError> {
        // The identity columns, or in a history of an older headroom opened only to read
        // (nothing may be written to add them), the same from each run's document.
        let column = |name: &str, json_path: &str| {
            if self.host_columns {
                name.to_string()
            } else {
                format!("CASE WHEN {VALID} THEN json_extract(document, '{json_path}') END")
            }
        };
        let [machine_id, model, serial] = HOST_COLUMNS.map(|(c, p)| column(c, p));
        // --host: the hostname in any case, the machine-id's beginning (4 or more hex
        // digits, compared with substr: no pattern character of NAME means anything), the
        // serial in any case.
        let (condition, args): (String, Vec<String>) = match filter.host {
            None => ("1".into(), Vec::new()),
            Some(name) => {
                let prefix = name.to_ascii_lowercase();
                let hex = prefix.len() >= MACHINE_ID_PREFIX_MIN
                    && prefix.bytes().all(|b| b.is_ascii_hexdigit());
                (
                    format!(
                        "(lower(host) = lower(?1) OR lower({serial}) = lower(?1)
                          OR (?2 != '' AND substr({machine_id}, 1, length(?2)) = ?2))"
                    ),
                    vec![name.to_string(), if hex { prefix } else { String::new() }],
                )
            }
        };
        // --kind and --since (RFC 3339 in UTC, as documents write their time: compared as
        // text).
        let (mut condition, mut args) = (condition, args);
        for (column, value) in [("kind", filter.kind), ("created", filter.since)] {
            if let Some(v) = value {
                let op = if column == "kind" { "=" } else { ">=" };
                condition = format!("({condition}) AND {column} {op} ?{}", args.len() + 1);
                args.push(v.to_string());
            }
        }
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT id, created, host, kind, target, test, headline,
                        CASE WHEN {VALID} THEN
                            coalesce(json_extract(document, '$.interrupted'), 0) = 1
                        ELSE 0 END,
                        {DAMAGE},
                        {machine_id}, {model}, {serial},
                        CASE WHEN {VALID} THEN coalesce(json_extract(document, '$.host.kernel'),
                                                        json_extract(document, '$.system.kernel'))
                        END
                 FROM runs WHERE {condition} ORDER BY id"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    created: lenient_text(r.get_ref(1)?),
                    host: lenient_text(r.get_ref(2)?),
                    machine_id: lenient_text(r.get_ref(9)?),
                    model: lenient_text(r.get_ref(10)?),
                    serial: lenient_text(r.get_ref(11)?),
                    kernel: lenient_text(r.get_ref(12)?),
                    kind: lenient_text(r.get_ref(3)?).unwrap_or_default(),
                    target: lenient_text(r.get_ref(4)?),
                    test: lenient_text(r.get_ref(5)?).unwrap_or_default(),
                    headline: lenient_text(r.get_ref(6)?).unwrap_or_default(),
                    interrupted: r.get(7)?,
                    damaged: r.get(8)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The document saved as run `id`.
    pub fn get(&self, id: i64) -> Result<Document, HistoryError> {
        let row: Option<(Option<String>, Option<String>)> = self
            .conn
            .query_row(
                &format!(
                    "SELECT {DAMAGE}, CASE WHEN {VALID} THEN document END \
                     FROM runs WHERE id = ?1"
                ),
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let damaged = |what| HistoryError::Damaged {
            path: self.path.clone(),
            id,
            what,
        };
        match row {
            None => Err(HistoryError::NoSuchRun {
                path: self.path.clone(),
                id,
            }),
            Some((Some(what), _)) => Err(damaged(what)),
            Some((None, Some(text))) => {
                Document::parse(&text, &format!("run {id} of the history")).map_err(|e| match e {
                    // Text SQLite takes for JSON and serde does not (a number out of range).
                    crate::document::DocumentError::NotJson { detail, .. } => {
                        damaged(format!("its document is not valid JSON ({detail})"))
                    }
                    e => e.into(),
                })
            }
            // Not damaged but no text: cannot happen (DAMAGE is NULL only where VALID holds).
            Some((None, None)) => Err(damaged("its document cannot be read".into())),
        }
    }
}

/// Whether a row's document is JSON text (SQL, for [`Store::list`] and [`Store::get`]).
const VALID: &str = "typeof(document) = 'text' AND json_valid(document)";

/// What is wrong with a row's document, NULL when nothing is (SQL): not text, or not JSON
/// (with where SQLite's parser stopped, json_error_position, SQLite 3.42).
const DAMAGE: &str = "CASE
     WHEN typeof(document) != 'text' THEN
         'its document is stored as ' || typeof(document) || ', not as JSON text'
     WHEN NOT json_valid(document) AND json_error_position(document) > length(document) THEN
         'its document is not valid JSON (it is cut short after '
             || length(document) || ' characters)'
     WHEN NOT json_valid(document) THEN
         'its document is not valid JSON (it breaks at character '
             || json_error_position(document) || ' of ' || length(document) || ')'
     END";

/// A column of a row as text, whatever SQLite holds there (a damaged row may have a number
/// or bytes where text belongs): listing it beats failing the whole listing.
fn lenient_text(v: rusqlite::types::ValueRef<'_>) -> Option<String> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A measured `bench disk` document (tests/fixtures/results/rpi5-gen3.json: one dd
    /// write test) with its target and its one run's MB/s changed.
    fn doc(mb: f64) -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/results/rpi5-gen3.json"
        );
        let mut body: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        body["target"]["given"] = "/mnt/t".into();
        body["tests"][0]["spec"]["label"] = "dd 1M".into();
        body["tests"][0]["runs"][0]["mb_per_s"] = mb.into();
        crate::document::wrap(
            crate::document::DocumentKind::Disk,
            "0.1.0",
            model::system::Host::default(),
            &body,
        )
        .unwrap()
        .to_json_pretty()
    }

    #[test]
    fn insert_list_get() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("history.sqlite");
        let s = Store::open(&p).unwrap();
        let a = s.insert(&doc(394.0)).unwrap();
        // One document, made once: two would differ in `created` across a second boundary.
        let second = doc(732.0);
        let b = s.insert(&second).unwrap();
        assert!(a.new && b.new);
        let b = b.id;
        assert!(b > a.id);
        let l = s.list().unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].headline, "dd 1M write: 732.0 MB/s");
        assert_eq!(l[1].target.as_deref(), Some("/mnt/t"));
        assert_eq!(s.get(b).unwrap().to_json_pretty(), doc_roundtrip(&second));
        let e = s.get(99).unwrap_err().to_string();
        assert!(e.contains("no run 99"), "{e}");
        drop(s);
        // Reopening keeps what was saved.
        assert_eq!(Store::open(&p).unwrap().list().unwrap().len(), 2);
    }

    /// [`doc`] made on `host`.
    fn doc_on(host: model::system::Host, mb: f64) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&doc(mb)).unwrap();
        v["host"] = serde_json::to_value(host).unwrap();
        v.to_string()
    }

    fn host(name: &str, machine_id: Option<&str>, serial: Option<&str>) -> model::system::Host {
        model::system::Host {
            hostname: Some(name.into()),
            machine_id: machine_id.map(String::from),
            model: Some("Raspberry Pi 5 Model B Rev 1.0".into()),
            serial: serial.map(String::from),
            ..Default::default()
        }
    }

    const PI_A: &str = "5be0d5c1a77f4e0c9d3b2a61f08e4c27";
    const PI_B: &str = "0f0e0d0c0b0a09080706050403020100";

    /// A history made before the host's identity had columns (the schema
    /// of 2026-11-27) is listed with each run's identity read from its document, and is not
    /// written when only read; opened to save, it gains the columns in place, filled from its
    /// documents, every row kept.
    #[test]
    fn an_older_history_gains_the_host_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.sqlite");
        let old_schema = "CREATE TABLE IF NOT EXISTS runs (
             id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT, host TEXT,
             kind TEXT NOT NULL, target TEXT, test TEXT NOT NULL, headline TEXT NOT NULL,
             document TEXT NOT NULL);";
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; {old_schema}"
        ))
        .unwrap();
        for (i, d) in [
            doc_on(host("raspberrypi", Some(PI_A), Some("6a7f1c2e")), 1.0),
            doc_on(host("raspberrypi", Some(PI_B), None), 2.0),
            doc(3.0),
            "{\"schema_version\": 2,".to_string(),
        ]
        .iter()
        .enumerate()
        {
            c.execute(
                "INSERT INTO runs (created, host, kind, test, headline, document)
                 VALUES ('2026-11-27T10:00:00Z', 'raspberrypi', 'disk', 'dd 1M', ?1, ?2)",
                params![format!("run {i}"), d],
            )
            .unwrap();
        }
        drop(c);
        let before = std::fs::read(&p).unwrap();
        let read = Store::open_existing(&p).unwrap().unwrap();
        assert!(!read.host_columns);
        let rows = read.list().unwrap();
        let ids = |rows: &[RunRow]| -> Vec<Option<String>> {
            rows.iter().map(|r| r.machine_id.clone()).collect()
        };
        assert_eq!(
            ids(&rows),
            [Some(PI_A.to_string()), Some(PI_B.to_string()), None, None]
        );
        assert_eq!(rows[0].serial.as_deref(), Some("6a7f1c2e"));
        assert!(rows[3].damaged.is_some());
        let picked = read
            .list_where(Filter {
                host: Some("0f0e0d"),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(picked.iter().map(|r| r.id).collect::<Vec<_>>(), [2]);
        drop(read);
        assert_eq!(std::fs::read(&p).unwrap(), before, "reading wrote");
        // Opened to save: the columns are added and filled, the rows all kept.
        let s = Store::open(&p).unwrap();
        assert!(has_host_columns(&s.conn).unwrap());
        let stored: Vec<Option<String>> = s
            .conn
            .prepare("SELECT machine_id FROM runs ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            stored,
            [Some(PI_A.to_string()), Some(PI_B.to_string()), None, None]
        );
        assert_eq!(ids(&s.list().unwrap()), ids(&rows));
        s.insert(&doc_on(host("raspberrypi", Some(PI_A), None), 4.0))
            .unwrap();
        assert_eq!(s.list().unwrap().len(), 5);
        drop(s);
        // Opening it again changes nothing more.
        let s = Store::open(&p).unwrap();
        assert_eq!(s.list().unwrap().len(), 5);
    }

    fn user_version(p: &Path) -> i32 {
        Connection::open(p)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    }

    /// The schema's version is kept in the file: a new history has this headroom's; a history
    /// of version 1 (made before the version was kept: 0 in the file) is brought to it when
    /// opened to save, its runs kept; a history a newer headroom made is refused with a
    /// sentence, to read and to save, and left byte for byte as it was.
    #[test]
    fn the_schema_version_upgrades_an_older_history_and_refuses_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.sqlite");
        Store::open(&new).unwrap().insert(&doc(1.0)).unwrap();
        assert_eq!(user_version(&new), SCHEMA_VERSION);

        let p = dir.path().join("v1.sqlite");
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID};
             CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT, host TEXT,
                 kind TEXT NOT NULL, target TEXT, test TEXT NOT NULL, headline TEXT NOT NULL,
                 document TEXT NOT NULL);"
        ))
        .unwrap();
        c.execute(
            "INSERT INTO runs (created, host, kind, test, headline, document)
             VALUES ('2026-11-27T10:00:00Z', 'raspberrypi', 'disk', 'dd 1M', 'x', ?1)",
            [doc_on(host("raspberrypi", Some(PI_A), None), 1.0)],
        )
        .unwrap();
        drop(c);
        assert_eq!(user_version(&p), 0);
        // Reading leaves it as it is.
        assert_eq!(
            Store::open_existing(&p)
                .unwrap()
                .unwrap()
                .list()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(user_version(&p), 0);
        let s = Store::open(&p).unwrap();
        assert_eq!(s.list().unwrap()[0].machine_id.as_deref(), Some(PI_A));
        drop(s);
        assert_eq!(user_version(&p), SCHEMA_VERSION);

        // A newer headroom's history, with a column this one does not know.
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&format!(
            "ALTER TABLE runs ADD COLUMN energy_j REAL; PRAGMA user_version = {};",
            SCHEMA_VERSION + 1
        ))
        .unwrap();
        drop(c);
        let before = std::fs::read(&p).unwrap();
        let want = format!(
            "the history {} has schema version {}, newer than this headroom knows ({}): \
             upgrade headroom to use it; it was left untouched",
            p.display(),
            SCHEMA_VERSION + 1,
            SCHEMA_VERSION
        );
        let e = Store::open(&p)
            .err()
            .expect("a newer history opened to save");
        assert_eq!(e.to_string(), want);
        let e = Store::open_existing(&p)
            .err()
            .expect("a newer history opened to read");
        assert_eq!(e.to_string(), want);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            before,
            "a newer history was written"
        );
    }

    /// `--host`: a hostname in any case, a machine-id's first 4 or more digits, a serial in
    /// any case; nothing else (fewer digits, LIKE's wildcards) matches.
    #[test]
    fn runs_are_picked_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        s.insert(&doc_on(host("raspberrypi", Some(PI_A), None), 1.0))
            .unwrap();
        s.insert(&doc_on(host("raspberrypi", Some(PI_B), None), 2.0))
            .unwrap();
        s.insert(&doc_on(host("pc", None, Some("7XK2QK3")), 3.0))
            .unwrap();
        let picked = |name: &str| -> Vec<i64> {
            s.list_where(Filter {
                host: Some(name),
                ..Default::default()
            })
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect()
        };
        assert_eq!(picked("RaspberryPi"), [1, 2]);
        assert_eq!(picked("5BE0"), [1]);
        assert_eq!(picked(PI_B), [2]);
        assert_eq!(picked("7xk2qk3"), [3]);
        assert_eq!(picked("PC"), [3]);
        for nothing in ["5be", "%", "_", "", "raspberry", "5be0%"] {
            assert!(picked(nothing).is_empty(), "{nothing:?}");
        }
        let rows = s.list().unwrap();
        assert_eq!(
            rows[0].machine().as_deref(),
            Some("Raspberry Pi 5 Model B Rev 1.0, machine-id 5be0d5c1a77f")
        );
        assert_eq!(
            rows[2].machine().as_deref(),
            Some("Raspberry Pi 5 Model B Rev 1.0, serial 7XK2QK3")
        );
    }

    fn doc_roundtrip(t: &str) -> String {
        Document::parse(t, "x").unwrap().to_json_pretty()
    }

    #[test]
    fn bad_documents_are_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        let e = s
            .insert("{\"schema_version\": 9, \"kind\": \"disk\"}")
            .unwrap_err();
        assert!(e.to_string().contains("schema version 9"), "{e}");
        assert!(s.list().unwrap().is_empty());
    }

    /// A file that claims to be a history (its application_id) but whose schema headroom
    /// never makes: `runs` as a view that counts without end (a listing of it ran for ever,
    /// growing), a trigger, a computed column. Refused when opened, to read or to save, with
    /// what is wrong, and left as it was; nothing is listed from it.
    #[test]
    fn a_history_with_a_schema_headroom_never_makes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let hostile = [
            (
                "view.sqlite",
                "CREATE VIEW runs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL \
                 SELECT i + 1 FROM n) SELECT i AS id, NULL AS created, 'h' AS host, \
                 'disk' AS kind, NULL AS target, 't' AS test, 'x' AS headline, \
                 printf('%.*c', 100000, 'x') AS document FROM n;",
                "its `runs` is a view",
            ),
            (
                "trigger.sqlite",
                "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT, \
                 host TEXT, kind TEXT NOT NULL, target TEXT, test TEXT NOT NULL, \
                 headline TEXT NOT NULL, document TEXT NOT NULL); \
                 CREATE TRIGGER grow AFTER INSERT ON runs BEGIN \
                 INSERT INTO runs (kind, test, headline, document) \
                 SELECT kind, test, headline, document FROM runs; END;",
                "it holds the trigger \"grow\"",
            ),
            (
                "computed.sqlite",
                "CREATE TABLE runs (id INTEGER PRIMARY KEY, created TEXT, host TEXT, \
                 kind TEXT NOT NULL, target TEXT, test TEXT NOT NULL, \
                 headline TEXT NOT NULL, document TEXT NOT NULL, \
                 machine_id TEXT AS (printf('%.*c', 1000000, 'x')));",
                "computed column \"machine_id\"",
            ),
        ];
        for (name, schema, why) in hostile {
            let p = dir.path().join(name);
            let c = Connection::open(&p).unwrap();
            c.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; {schema}"
            ))
            .unwrap();
            drop(c);
            let before = std::fs::read(&p).unwrap();
            for e in [Store::open_existing(&p).err(), Store::open(&p).err()] {
                let e = e.unwrap_or_else(|| panic!("{name} was opened")).to_string();
                assert!(e.contains("is not a headroom history"), "{name}: {e}");
                assert!(e.contains(why), "{name}: {e}");
            }
            assert_eq!(std::fs::read(&p).unwrap(), before, "{name} was written");
        }
    }

    /// The connection to a history is made safe for a crafted file: defensive mode on,
    /// functions in the schema limited to innocuous ones, values bounded.
    #[test]
    fn a_history_connection_is_defensive() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        assert!(s
            .conn
            .db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE)
            .unwrap());
        // SAFETY: a negative value only reads the limit.
        let limit = unsafe {
            rusqlite::ffi::sqlite3_limit(s.conn.handle(), rusqlite::ffi::SQLITE_LIMIT_LENGTH, -1)
        };
        assert_eq!(limit, MAX_VALUE_BYTES);
        let mut trusted: std::os::raw::c_int = 1;
        // SAFETY: -1 only reads the setting into `trusted`.
        unsafe {
            rusqlite::ffi::sqlite3_db_config(
                s.conn.handle(),
                rusqlite::ffi::SQLITE_DBCONFIG_TRUSTED_SCHEMA,
                -1 as std::os::raw::c_int,
                &mut trusted as *mut std::os::raw::c_int,
            );
        }
        assert_eq!(trusted, 0, "trusted_schema is on");
    }

    #[test]
    fn a_foreign_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "my notes, not a database\n").unwrap();
        let e = Store::open(&text).err().unwrap().to_string();
        assert!(
            e.contains("is not a headroom history (it is not an SQLite database)"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&text).unwrap(),
            "my notes, not a database\n"
        );

        let other = dir.path().join("other.sqlite");
        let c = Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        drop(c);
        let before = std::fs::read(&other).unwrap();
        let e = Store::open(&other).err().unwrap().to_string();
        assert!(e.contains("SQLite database of another program"), "{e}");
        assert_eq!(std::fs::read(&other).unwrap(), before);

        // A damaged history: the header survives, the rest is garbage.
        let damaged = dir.path().join("damaged.sqlite");
        let mut bytes = SQLITE_MAGIC.to_vec();
        bytes.extend(std::iter::repeat_n(0xa5u8, 4000));
        std::fs::write(&damaged, &bytes).unwrap();
        let e = Store::open(&damaged).err().unwrap().to_string();
        assert!(e.contains("is not a headroom history"), "{e}");
        assert_eq!(std::fs::read(&damaged).unwrap(), bytes);
    }

    /// A history is created only in a directory that exists; the default
    /// one's directory is made, 0700.
    #[test]
    fn only_the_default_directory_is_made_and_it_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/dir/h.sqlite");
        let e = Store::open(&p).err().unwrap().to_string();
        assert!(
            e.contains(&format!(
                "the directory {} does not exist",
                dir.path().join("no/such/dir").display()
            )),
            "{e}"
        );
        assert!(!dir.path().join("no").exists());
        create_default_dir(&p).unwrap();
        for d in ["no", "no/such", "no/such/dir"] {
            let mode = std::fs::metadata(dir.path().join(d)).unwrap().permissions();
            assert_eq!(mode.mode() & 0o777, 0o700, "{d}");
        }
        assert!(Store::open(&p).is_ok());
    }

    /// A row whose document is not JSON text is listed with what is wrong;
    /// the others as usual; getting it says it is damaged.
    #[test]
    fn a_damaged_row_is_listed_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        for mb in [1.0, 2.0, 3.0] {
            s.insert(&doc(mb)).unwrap();
        }
        s.conn
            .execute_batch(
                "UPDATE runs SET document = '{\"schema_version\": 2,' WHERE id = 2;
                 UPDATE runs SET document = x'00ff' WHERE id = 3;",
            )
            .unwrap();
        let rows = s.list().unwrap();
        let damaged: Vec<_> = rows.iter().map(|r| r.damaged.as_deref()).collect();
        assert_eq!(
            damaged,
            [
                None,
                Some("its document is not valid JSON (it is cut short after 21 characters)"),
                Some("its document is stored as blob, not as JSON text"),
            ]
        );
        assert_eq!(rows[0].headline, "dd 1M write: 1.0 MB/s");
        assert!(s.get(1).is_ok());
        let e = s.get(2).unwrap_err().to_string();
        assert!(e.starts_with("run 2 in the history "), "{e}");
        assert!(
            e.contains("is damaged: its document is not valid JSON"),
            "{e}"
        );
    }

    #[test]
    fn reading_never_creates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/dir/h.sqlite");
        assert!(Store::open_existing(&p).unwrap().is_none());
        assert!(!dir.path().join("no").exists(), "nothing was created");
    }

    #[test]
    fn an_empty_file_is_not_made_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("empty.txt");
        std::fs::write(&p, "").unwrap();
        for e in [
            Store::open(&p).err().unwrap().to_string(),
            Store::open_existing(&p).err().unwrap().to_string(),
        ] {
            assert_eq!(
                e,
                format!(
                    "{} is not a headroom history (it is an empty file, not an SQLite \
                     database); it was left untouched: choose another file with --db",
                    p.display()
                )
            );
        }
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
    }

    #[test]
    fn a_new_history_is_whole_when_it_appears() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.sqlite");
        Store::open(&p).unwrap();
        // Only the history is left: no temporary file beside it.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
            .collect();
        assert_eq!(names, ["h.sqlite"]);
        assert!(Store::open_existing(&p)
            .unwrap()
            .unwrap()
            .list()
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_same_document_is_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        let d = doc(394.0);
        let first = s.insert(&d).unwrap();
        assert_eq!(
            s.insert(&d).unwrap(),
            Saved {
                id: first.id,
                new: false
            }
        );
        // The same document with other whitespace is the same document.
        let v: serde_json::Value = serde_json::from_str(&d).unwrap();
        assert!(!s.insert(&v.to_string()).unwrap().new);
        assert_eq!(s.list().unwrap().len(), 1);
        assert!(s.insert(&doc(395.0)).unwrap().new);
    }

    /// `history --kind KIND --since WHEN` on an SQLite history, as on a lab's database.
    #[test]
    fn runs_are_picked_by_kind_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        s.insert(&doc(1.0)).unwrap();
        let count = |kind: Option<&str>, since: Option<&str>| {
            s.list_where(Filter {
                host: None,
                kind,
                since,
            })
            .unwrap()
            .len()
        };
        assert_eq!(count(Some("disk"), None), 1);
        assert_eq!(count(Some("latency"), None), 0);
        assert_eq!(count(Some("disk"), Some("2000-01-01T00:00:00Z")), 1);
        assert_eq!(count(None, Some("2999-01-01T00:00:00Z")), 0);
        // The kernel from the document's host, else from its system context.
        assert_eq!(
            s.list().unwrap()[0].kernel.as_deref(),
            Some("6.6.51+rpt-rpi-2712")
        );
    }

    #[test]
    fn interrupted_runs_are_listed_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("h.sqlite")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&doc(100.0)).unwrap();
        v["interrupted"] = serde_json::Value::Bool(true);
        s.insert(&v.to_string()).unwrap();
        s.insert(&doc(200.0)).unwrap();
        let flags: Vec<bool> = s.list().unwrap().iter().map(|r| r.interrupted).collect();
        assert_eq!(flags, [true, false]);
    }

    #[test]
    fn run_ids_read_the_same_with_or_without_hash() {
        assert_eq!(parse_run_id("2"), Some(2));
        assert_eq!(parse_run_id("#2"), Some(2));
        for bad in [
            "",
            "#",
            "##2",
            "-2",
            "0",
            "+2",
            "2a",
            " 2",
            "99999999999999999999",
        ] {
            assert_eq!(parse_run_id(bad), None, "{bad:?}");
        }
    }

    /// A history on a read-only filesystem (SQLite error 14 when its -shm file cannot be
    /// made) can be listed. Needs a tmpfs mount: as root, or skipped with a note.
    #[test]
    fn a_history_on_a_read_only_filesystem_can_be_listed() {
        testsupport::mount::on_tmpfs(|mnt| {
            let p = mnt.join("h.sqlite");
            let s = Store::open(&p).unwrap();
            s.insert(&doc(394.0)).unwrap();
            drop(s);
            assert!(
                testsupport::mount::remount_read_only(mnt),
                "remount read-only"
            );
            let s = Store::open_existing(&p).unwrap().unwrap();
            let rows = s.list().unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].headline, "dd 1M write: 394.0 MB/s");
            assert!(s.get(rows[0].id).is_ok());
        });
    }

    #[test]
    fn default_path_follows_xdg() {
        // Only reads the environment; the test does not change it (tests share it).
        if let Some(p) = default_path() {
            assert!(p.ends_with("headroom/history.sqlite"), "{}", p.display());
        }
    }

    /// Several processes write at once: this test binary runs itself as the writers.
    #[test]
    fn concurrent_writer_processes_do_not_corrupt_it() {
        if let Ok(db) = std::env::var("HEADROOM_HISTORY_TEST_WRITER") {
            let s = Store::open(Path::new(&db)).unwrap();
            // Each writer's documents differ from the others' (the same one is stored once).
            let pid = f64::from(std::process::id());
            for i in 0..25 {
                assert!(s.insert(&doc(pid * 100.0 + f64::from(i))).unwrap().new);
            }
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("h.sqlite");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "history::tests::concurrent_writer_processes_do_not_corrupt_it",
                        "--test-threads=1",
                    ])
                    .env("HEADROOM_HISTORY_TEST_WRITER", &db)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a writer failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let s = Store::open(&db).unwrap();
        let rows = s.list().unwrap();
        assert_eq!(rows.len(), 100, "4 writers x 25 runs");
        let ok: String = s
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}
