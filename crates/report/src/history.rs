//! The history: every saved run in one SQLite database (embedded, bundled SQLite).
//!
//! Several runs may save at once (two benches on one board, a lab's parallel jobs): the
//! database runs in WAL mode (readers never block the writer) with a busy timeout, so a
//! writer waits for another's transaction instead of failing. A file that is not ours (not
//! SQLite, or SQLite of another program) is refused with a sentence and never written.

use crate::document::Document;
use crate::summary::Summary;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of a headroom history ("hdrm"): how a foreign SQLite file is told
/// from ours (https://www.sqlite.org/pragma.html#pragma_application_id).
const APPLICATION_ID: i32 = 0x6864_726d;

/// How long a writer waits for another's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The table of runs (also created in an older history that lacks it).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS runs (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     created TEXT,
     host TEXT,
     kind TEXT NOT NULL,
     target TEXT,
     test TEXT NOT NULL,
     headline TEXT NOT NULL,
     document TEXT NOT NULL
 );";

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
    #[error(transparent)]
    Document(#[from] crate::document::DocumentError),
}

/// One line of `headroom history`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub created: Option<String>,
    pub host: Option<String>,
    pub kind: String,
    pub target: Option<String>,
    pub test: String,
    pub headline: String,
    /// The run was stopped (Ctrl-C, SIGTERM) before it finished: its document says
    /// `"interrupted": true` and holds what was measured until then.
    pub interrupted: bool,
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
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
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => {
            return Err(HistoryError::Read {
                path: path.to_path_buf(),
                error,
            })
        }
    };
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(foreign("it is a directory"));
    }
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

impl Store {
    /// Open an existing history to read it; `Ok(None)` when there is none at `path`. Reading
    /// never creates a file or directory, and works on a read-only filesystem.
    pub fn open_existing(path: &Path) -> Result<Option<Store>, HistoryError> {
        if !check_header(path)? {
            return Ok(None);
        }
        let sql = |error| HistoryError::Sqlite {
            path: path.to_path_buf(),
            error,
        };
        let read_only = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, read_only).map_err(sql)?;
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
                Self::check_ours(&conn, path)?;
                conn
            }
            Err(e) => return Err(e),
        };
        Ok(Some(Store {
            conn,
            path: path.to_path_buf(),
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

    /// Open the history at `path` to save runs in it, creating it (and its directory) when
    /// there is none.
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
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
            conn.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} COMMIT;"
            ))
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
        })
    }

    /// Makes a new history at `path` (and its directory). It is built complete under a
    /// temporary name beside `path` and linked into place only if `path` still does not
    /// exist: no process ever sees a half-made or empty history, and a history another run
    /// created meanwhile is kept as it is.
    fn create(path: &Path) -> Result<(), HistoryError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|error| HistoryError::Dir {
            path: dir.to_path_buf(),
            error,
        })?;
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
                "PRAGMA application_id = {APPLICATION_ID}; {SCHEMA}"
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
        let s = Summary::of(&doc, "the document to save")?;
        // What the listing shows: a survey counts its parts and conclusions.
        let (test, headline) = if doc.kind() == "survey" {
            crate::survey::SurveyBody::of(&doc, "the document to save")?.listing("survey")
        } else {
            (s.test_label(), s.headline())
        };
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
        tx.execute(
            "INSERT INTO runs (created, host, kind, target, test, headline, document)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![s.created, s.hostname, s.kind, s.target, test, headline, text],
        )
        .map_err(|e| self.sql(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(Saved { id, new: true })
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>, HistoryError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, created, host, kind, target, test, headline,
                        coalesce(json_extract(document, '$.interrupted'), 0) = 1
                 FROM runs ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    created: r.get(1)?,
                    host: r.get(2)?,
                    kind: r.get(3)?,
                    target: r.get(4)?,
                    test: r.get(5)?,
                    headline: r.get(6)?,
                    interrupted: r.get(7)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The document saved as run `id`.
    pub fn get(&self, id: i64) -> Result<Document, HistoryError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        let text = text.ok_or(HistoryError::NoSuchRun {
            path: self.path.clone(),
            id,
        })?;
        Ok(Document::parse(&text, &format!("run {id} of the history"))?)
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
        crate::document::wrap("disk", "0.1.0", &body)
            .unwrap()
            .to_json_pretty()
    }

    #[test]
    fn insert_list_get() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/history.sqlite");
        let s = Store::open(&p).unwrap();
        let a = s.insert(&doc(394.0)).unwrap();
        let b = s.insert(&doc(732.0)).unwrap();
        assert!(a.new && b.new);
        let b = b.id;
        assert!(b > a.id);
        let l = s.list().unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].headline, "dd 1M write: 732.0 MB/s");
        assert_eq!(l[1].target.as_deref(), Some("/mnt/t"));
        assert_eq!(
            s.get(b).unwrap().to_json_pretty(),
            doc_roundtrip(&doc(732.0))
        );
        let e = s.get(99).unwrap_err().to_string();
        assert!(e.contains("no run 99"), "{e}");
        drop(s);
        // Reopening keeps what was saved.
        assert_eq!(Store::open(&p).unwrap().list().unwrap().len(), 2);
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
