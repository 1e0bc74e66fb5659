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
    #[error("cannot create the directory {} for the history: {source}", path.display())]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the history {} failed: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("there is no run {id} in the history {}: `headroom history` lists them", path.display())]
    NoSuchRun { path: PathBuf, id: i64 },
    #[error("{0}")]
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

impl Store {
    /// Open (or create) the history at `path`, creating its directory.
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
        let sql = |source| HistoryError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let foreign = |why: &str| HistoryError::Foreign {
            path: path.to_path_buf(),
            why: why.to_string(),
        };
        // Look at the bytes before SQLite does: opening a non-database would fail only at
        // the first statement, with "file is not a database".
        match std::fs::File::open(path) {
            Ok(mut f) => {
                use std::io::Read;
                let mut head = [0u8; 16];
                let n = f.read(&mut head).unwrap_or(0);
                if n > 0 && (n < 16 || &head != SQLITE_MAGIC) {
                    return Err(foreign("it is not an SQLite database"));
                }
            }
            Err(_) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| HistoryError::Dir {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
            }
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let not_a_db = |e: rusqlite::Error| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                foreign("it is damaged or not an SQLite database")
            }
            e => sql(e),
        };
        // Check and claim the file in one write transaction: another process creating the
        // history at the same moment either finished (its id and table are there) or has
        // not begun; BEGIN IMMEDIATE waits for it up to the busy timeout.
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
                "PRAGMA application_id = {APPLICATION_ID};
                 CREATE TABLE IF NOT EXISTS runs (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     created TEXT,
                     host TEXT,
                     kind TEXT NOT NULL,
                     target TEXT,
                     test TEXT NOT NULL,
                     headline TEXT NOT NULL,
                     document TEXT NOT NULL
                 );
                 COMMIT;"
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

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> HistoryError {
        HistoryError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Save one result document (its JSON text); returns its id. The text is checked as a
    /// document first, so the history holds only documents headroom can read back.
    pub fn insert(&self, document_json: &str) -> Result<i64, HistoryError> {
        let doc = Document::parse(document_json, "the document to save")?;
        let s = Summary::of(&doc, "the document to save")?;
        // IMMEDIATE takes the write lock first (waiting in the busy handler), so the insert
        // never has to upgrade a stale read snapshot, which SQLite refuses without waiting.
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(|e| self.sql(e))?;
        tx.execute(
            "INSERT INTO runs (created, host, kind, target, test, headline, document)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                s.created,
                s.hostname,
                s.kind,
                s.target,
                s.test_label(),
                s.headline(),
                doc.to_json_pretty()
            ],
        )
        .map_err(|e| self.sql(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(id)
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>, HistoryError> {
        let mut st = self
            .conn
            .prepare("SELECT id, created, host, kind, target, test, headline FROM runs ORDER BY id")
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

    fn doc(mb: f64) -> String {
        crate::document::wrap(
            "disk",
            "0.1.0",
            &serde_json::json!({
                "target": {"given": "/mnt/t"},
                "tests": [{"spec": {"label": "dd 1M", "workload": {"read_percent": 0}},
                           "runs": [{"mb_per_s": mb}], "best_run": 0}]
            }),
        )
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
        assert!(b > a);
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
            for i in 0..25 {
                s.insert(&doc(f64::from(i))).unwrap();
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
