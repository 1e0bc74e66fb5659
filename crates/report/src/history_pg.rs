//! A lab's history in PostgreSQL (`--db postgresql://...`), beside the embedded SQLite one
//! ([`crate::history`]), and [`History`], either of them behind one set of methods.
//!
//! Every run has one id everywhere, its [`run_id`]: the SHA-256 of its document as headroom
//! writes it. Saving the same document twice (a push retried after a lost acknowledgement, a
//! file imported again) stores it once. A board saves each run in its local SQLite history
//! first, which is also its spool: [`LabStore::push`] sends the runs the lab's database lacks.
//!
//! Connection strings follow libpq's conventions
//! (https://www.postgresql.org/docs/15/libpq-connect.html): the URL form, the `PGHOST`,
//! `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, `PGSSLMODE`, `PGSSLROOTCERT`,
//! `PGCONNECT_TIMEOUT` variables, the password file (`PGPASSFILE`, else `~/.pgpass`) and the
//! service file (`PGSERVICE` or `?service=`, `PGSERVICEFILE` or `~/.pg_service.conf`, then
//! `PGSYSCONFDIR/pg_service.conf`). A password is never part of a message: the database is
//! named by its URL without it ([`ConnInfo::name`]).

use crate::document::Document;
use crate::history::{Filter, HistoryError, RunRow, Saved, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The URL schemes libpq takes for a connection string.
const URL_SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// The parameters a connection string may give, by libpq's names.
const KNOWN_PARAMS: [&str; 12] = [
    "host",
    "port",
    "user",
    "dbname",
    "password",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "passfile",
    "service",
    "application_name",
    "options",
];

/// Whether `--db` names a PostgreSQL database rather than an SQLite file: libpq's URL
/// (`postgresql://` or `postgres://`), or its key=value form (`host=db.lab dbname=headroom`),
/// told from a file name by its first word, a parameter libpq knows followed by `=`.
pub fn is_url(db: &str) -> bool {
    URL_SCHEMES.iter().any(|s| db.starts_with(s)) || is_keywords(db)
}

/// Whether `db` begins as libpq's key=value connection string does.
fn is_keywords(db: &str) -> bool {
    let t = db.trim_start();
    let key_len = t
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    KNOWN_PARAMS.contains(&&t[..key_len]) && t[key_len..].trim_start().starts_with('=')
}

/// One parameter of a key=value connection string: its key, its value (unquoted), and where
/// its value's text lies in the string (for [`redact_url`]).
struct Keyword {
    key: String,
    value: String,
    span: std::ops::Range<usize>,
}

/// libpq's key=value connection string (https://www.postgresql.org/docs/15/libpq-connect.html,
/// 34.1.1.1): `key = value` pairs separated by blanks, a value in single quotes when it holds
/// blanks, `\'` and `\\` escaping inside. `Err` says what is wrong, never the value.
fn keywords(text: &str) -> Result<Vec<Keyword>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_blanks = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_blanks(&mut i);
        if i >= b.len() {
            return Ok(out);
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = text[start..i].to_string();
        skip_blanks(&mut i);
        if i >= b.len() || b[i] != b'=' {
            return Err(format!("{key:?} is not followed by = and a value"));
        }
        i += 1;
        skip_blanks(&mut i);
        let mut value = Vec::new();
        let from = i;
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(format!("the value of {key} has no closing quote")),
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        value.push(b[i + 1]);
                        i += 2;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                value.push(b[i]);
                i += 1;
            }
        }
        let value =
            String::from_utf8(value).map_err(|_| format!("the value of {key} is not UTF-8"))?;
        out.push(Keyword {
            key,
            value,
            span: from..i,
        });
    }
}

/// A run's id in every history: the SHA-256 of its document as headroom writes it (64 hex
/// digits), the same on the board, in its spool and in the lab's database.
pub fn run_id(doc: &Document) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(doc.to_json_pretty().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The version of the lab database's schema this headroom makes and reads; each entry of
/// [`MIGRATIONS`] brings a database one version further.
pub const SCHEMA_VERSION: i32 = 1;

/// The statements that bring the database from version N to N + 1 (`MIGRATIONS[N]`). The
/// host's identity and the key results are columns a lab's query filters on; the document is
/// kept whole beside them.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // used by the client only
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = ["
    CREATE TABLE runs (
        id bigserial PRIMARY KEY,
        run_id text NOT NULL UNIQUE,
        created timestamptz,
        saved timestamptz NOT NULL DEFAULT now(),
        kind text NOT NULL,
        hostname text,
        machine_id text,
        model text,
        serial text,
        kernel text,
        target text,
        test text NOT NULL,
        headline text NOT NULL,
        mb_s double precision,
        max_us bigint,
        interrupted boolean NOT NULL DEFAULT false,
        document text NOT NULL
    );
    CREATE INDEX runs_host_kind_created ON runs (lower(hostname), kind, created);
    CREATE INDEX runs_machine_id ON runs (machine_id);
    CREATE INDEX runs_kernel ON runs (kernel);
"];

/// The key of the advisory lock that lets one client at a time bring the schema up to date
/// ("hdrm", as the SQLite history's application_id).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // used by the client only
const MIGRATION_LOCK: i64 = 0x6864_726d;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "{db}: {what}; give --db (or HEADROOM_DB) as postgresql://USER@HOST:PORT/DATABASE \
         (libpq's URL form) or as \"host=HOST dbname=DATABASE user=USER\" (its key=value form)"
    )]
    BadUrl { db: String, what: String },
    #[error("the PostgreSQL service {service:?} is in none of {files}: define it there or name the database with a postgresql:// URL")]
    NoService { service: String, files: String },
    #[error("cannot read the PostgreSQL service file {}: {error}", path.display())]
    ServiceFile {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "this headroom was built without PostgreSQL (a board binary, to stay under its size \
         limit): keep the runs in the local history and bring their documents to a host, \
         where `headroom history import DIR --db {db}` saves them"
    )]
    NotBuilt { db: String },
    #[error("cannot connect to the history {db}: {error}")]
    Unreachable { db: String, error: String },
    #[error("the history {db} failed: {error}")]
    Query { db: String, error: String },
    #[error(
        "the user {user:?} may not save runs in the history {db} ({error}): ask the database's \
         owner to grant INSERT on `runs` and USAGE on `runs_id_seq` (or CREATE on its schema \
         for a new history), or give --db a user who may"
    )]
    NoWriteRight {
        db: String,
        user: String,
        error: String,
    },
    #[error(
        "the history {db} has schema version {found}, newer than this headroom knows \
         ({SCHEMA_VERSION}): upgrade headroom to use it; it was left untouched"
    )]
    Newer { db: String, found: i32 },
    #[error(
        "{db} is not a headroom history ({why}); it was left untouched: give --db another \
         database"
    )]
    Foreign { db: String, why: String },
    #[error("there is no run {id} in the history {db}: `headroom history --db ...` lists them")]
    NoSuchRun { db: String, id: i64 },
    #[error(transparent)]
    Document(#[from] crate::document::DocumentError),
    #[error(transparent)]
    Local(#[from] HistoryError),
}

/// A PostgreSQL database's connection parameters, resolved as libpq resolves them: the
/// URL's, then the service file's, then the environment's, then the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnInfo {
    /// A host name or address, or a directory holding the server's Unix socket.
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    pub password: Option<String>,
    /// libpq's `sslmode`: disable, allow, prefer (the default), require, verify-ca,
    /// verify-full.
    pub sslmode: String,
    /// The CA certificates a verify-ca or verify-full connection trusts: `sslrootcert`, else
    /// `~/.postgresql/root.crt` where it exists, else the system's store.
    pub sslrootcert: Option<PathBuf>,
    /// Seconds to wait for the server (libpq waits for ever; headroom bounds every wait).
    pub connect_timeout: u64,
}

/// How long a connection waits for the server when the URL does not say.
const CONNECT_TIMEOUT_S: u64 = 10;

/// The parameters libpq reads from the environment when the URL and the service do not
/// give them (https://www.postgresql.org/docs/15/libpq-envars.html).
const ENV_PARAMS: [(&str, &str); 9] = [
    ("host", "PGHOST"),
    ("port", "PGPORT"),
    ("user", "PGUSER"),
    ("dbname", "PGDATABASE"),
    ("password", "PGPASSWORD"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("passfile", "PGPASSFILE"),
];

/// Decodes `%XX` escapes (RFC 3986); `None` for a broken escape or text that is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The parameters a connection string gives, by libpq's names: a
/// `postgresql://[user[:password]@][host][:port][/dbname][?key=value&...]` URL, or the
/// key=value form.
fn parse_url(url: &str) -> Result<BTreeMap<String, String>, LabError> {
    if is_keywords(url) {
        let bad = |what: String| LabError::BadUrl {
            db: redact_url(url),
            what,
        };
        let mut params = BTreeMap::new();
        for k in keywords(url).map_err(bad)? {
            if !KNOWN_PARAMS.contains(&k.key.as_str()) {
                return Err(bad(format!(
                    "headroom does not know the parameter {:?} (it takes {})",
                    k.key,
                    KNOWN_PARAMS.join(", ")
                )));
            }
            if k.key == "host" && k.value.contains(',') {
                return Err(bad(
                    "it names several hosts; headroom connects to one: name the primary".into(),
                ));
            }
            if !k.value.is_empty() {
                params.insert(k.key, k.value);
            }
        }
        return Ok(params);
    }
    let scheme = URL_SCHEMES
        .iter()
        .find(|s| url.starts_with(*s))
        .ok_or_else(|| LabError::BadUrl {
            db: redact_url(url),
            what: "it does not start with postgresql://".into(),
        })?;
    let bad = |what: &str| LabError::BadUrl {
        db: redact_url(url),
        what: what.to_string(),
    };
    let rest = &url[scheme.len()..];
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, dbname) = main.split_once('/').unwrap_or((main, ""));
    let mut params = BTreeMap::new();
    let mut set = |key: &str, value: &str| -> Result<(), LabError> {
        let v = percent_decode(value)
            .ok_or_else(|| bad(&format!("its {key} has a broken %-escape")))?;
        if !v.is_empty() {
            params.insert(key.to_string(), v);
        }
        Ok(())
    };
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if let Some(u) = userinfo {
        let (user, password) = u.split_once(':').unwrap_or((u, ""));
        set("user", user)?;
        set("password", password)?;
    }
    if hostport.contains(',') {
        return Err(bad(
            "it names several hosts; headroom connects to one: name the primary",
        ));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("its IPv6 address has no closing ]"))?;
        (h, after.strip_prefix(':').unwrap_or(""))
    } else {
        hostport.split_once(':').unwrap_or((hostport, ""))
    };
    set("host", host)?;
    set("port", port)?;
    set("dbname", dbname)?;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(k).ok_or_else(|| bad("a parameter has a broken %-escape"))?;
        if !KNOWN_PARAMS.contains(&key.as_str()) {
            return Err(bad(&format!(
                "headroom does not know the parameter {key:?} (it takes {})",
                KNOWN_PARAMS.join(", ")
            )));
        }
        set(&key, v)?;
    }
    Ok(params)
}

/// `url` with its password, in the authority or as `?password=` (or `password=` of the
/// key=value form), replaced by `***`: the only form of a connection string any message
/// shows.
pub fn redact_url(url: &str) -> String {
    if is_keywords(url) {
        return match keywords(url) {
            Ok(words) => {
                let mut out = url.to_string();
                for k in words.iter().rev().filter(|k| k.key == "password") {
                    out.replace_range(k.span.clone(), "***");
                }
                out
            }
            // Not readable as parameters: nothing of it is shown past the first that may be
            // a password.
            Err(_) => match url.find("password") {
                Some(at) => format!("{}password=***", &url[..at]),
                None => url.to_string(),
            },
        };
    }
    let Some(scheme) = URL_SCHEMES.iter().find(|s| url.starts_with(*s)) else {
        return url.to_string();
    };
    let rest = &url[scheme.len()..];
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match main.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (main, None),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let mut out = format!("{scheme}{authority}");
    if let Some(p) = path {
        out.push('/');
        out.push_str(p);
    }
    if let Some(q) = query {
        let q: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("password", _)) => "password=***".to_string(),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&q.join("&"));
    }
    out
}

/// The user headroom runs as (libpq's default user name).
fn os_user() -> Option<String> {
    // SAFETY: getpwuid(3) returns a pointer into static storage or NULL; the name is copied
    // out at once, before any other call could reuse that storage.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*pw).pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The parameters of service `name` in pg_service.conf's INI form: `[name]` then
/// `key=value` lines, `#` comments. The user's file first, then the system's.
fn service_params(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, LabError> {
    let mut files = Vec::new();
    match env("PGSERVICEFILE") {
        Some(f) => files.push(PathBuf::from(f)),
        None => files.extend(home().map(|h| h.join(".pg_service.conf"))),
    }
    let sysconf = env("PGSYSCONFDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/postgresql-common"));
    files.push(sysconf.join("pg_service.conf"));
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                return Err(LabError::ServiceFile {
                    path: file.clone(),
                    error,
                })
            }
        };
        if let Some(params) = service_in(&text, name) {
            return Ok(params);
        }
    }
    Err(LabError::NoService {
        service: name.to_string(),
        files: files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" and "),
    })
}

/// Service `name`'s parameters in the text of a service file; `None` when it has no such
/// section.
fn service_in(text: &str, name: &str) -> Option<BTreeMap<String, String>> {
    let mut found = None;
    let mut current: Option<&str> = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(section.trim());
            if current == Some(name) {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if current == Some(name) {
            if let Some((k, v)) = line.split_once('=') {
                found
                    .get_or_insert_with(BTreeMap::new)
                    .insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    found
}

/// The password for a connection from a password file's text
/// (`hostname:port:database:username:password` lines, `*` matching anything, `\` escaping
/// `:` and `\`; https://www.postgresql.org/docs/15/libpq-pgpass.html). A host that is a
/// socket directory matches `localhost`, as in libpq.
fn password_in(text: &str, host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let host = if host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    let port = port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() != 5 {
            continue;
        }
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if matches(&fields[0], host)
            && matches(&fields[1], &port)
            && matches(&fields[2], dbname)
            && matches(&fields[3], user)
        {
            return fields.pop();
        }
    }
    None
}

/// The password file's password, when the file is the user's own and private: libpq
/// ignores a password file that others can read (mode above 0600).
fn passfile_password(file: &Path, info: &ConnInfo) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    password_in(&text, &info.host, info.port, &info.dbname, &info.user)
}

impl ConnInfo {
    /// The connection parameters of `url` as libpq resolves them, reading the environment
    /// through `env` (`std::env::var` in use; a map in tests).
    pub fn resolve(url: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<ConnInfo, LabError> {
        let given = parse_url(url)?;
        let service = match given.get("service").cloned().or_else(|| env("PGSERVICE")) {
            Some(name) => service_params(&name, env)?,
            None => BTreeMap::new(),
        };
        let param = |key: &str| -> Option<String> {
            given
                .get(key)
                .or_else(|| service.get(key))
                .cloned()
                .or_else(|| {
                    ENV_PARAMS
                        .iter()
                        .find(|(k, _)| *k == key)
                        .and_then(|(_, var)| env(var))
                })
                .filter(|v| !v.is_empty())
        };
        let bad = |what: String| LabError::BadUrl {
            db: redact_url(url),
            what,
        };
        let host = param("host").unwrap_or_else(|| {
            // Debian's libpq looks for the server's socket in /var/run/postgresql.
            if Path::new("/var/run/postgresql").is_dir() {
                "/var/run/postgresql".into()
            } else {
                "localhost".into()
            }
        });
        let port = match param("port") {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad(format!("its port {p:?} is not a port number")))?,
            None => 5432,
        };
        let user = param("user")
            .or_else(os_user)
            .ok_or_else(|| bad("it names no user, and this process's user has no name".into()))?;
        let dbname = param("dbname").unwrap_or_else(|| user.clone());
        let sslmode = param("sslmode").unwrap_or_else(|| "prefer".into());
        const MODES: [&str; 6] = [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ];
        if !MODES.contains(&sslmode.as_str()) {
            return Err(bad(format!(
                "its sslmode {sslmode:?} is none of {}",
                MODES.join(", ")
            )));
        }
        let connect_timeout = match param("connect_timeout") {
            Some(t) => t.parse::<u64>().ok().filter(|&t| t > 0).ok_or_else(|| {
                bad(format!(
                    "its connect_timeout {t:?} is not a number of seconds"
                ))
            })?,
            None => CONNECT_TIMEOUT_S,
        };
        let sslrootcert = param("sslrootcert").map(PathBuf::from).or_else(|| {
            home()
                .map(|h| h.join(".postgresql/root.crt"))
                .filter(|p| p.is_file())
        });
        let mut info = ConnInfo {
            host,
            port,
            user,
            dbname,
            password: param("password"),
            sslmode,
            sslrootcert,
            connect_timeout,
        };
        if info.password.is_none() {
            let file = param("passfile")
                .map(PathBuf::from)
                .or_else(|| home().map(|h| h.join(".pgpass")));
            info.password = file.and_then(|f| passfile_password(&f, &info));
        }
        Ok(info)
    }

    /// The database as every message names it: its URL without the password.
    pub fn name(&self) -> String {
        let host = if self.host.starts_with('/') {
            // A socket directory is a `host` parameter in libpq's URL form.
            return format!(
                "postgresql://{}@/{}?host={}&port={}",
                self.user, self.dbname, self.host, self.port
            );
        } else if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!(
            "postgresql://{}@{host}:{}/{}",
            self.user, self.port, self.dbname
        )
    }
}

/// The time `--since` names, as RFC 3339 in UTC: a duration back from now (`30m`, `12h`,
/// `7d`, `2w`) or a date (`2026-12-01`) or time (`2026-12-01T08:00:00Z`).
pub fn since(text: &str, now: time::OffsetDateTime) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    let t = text.trim();
    let unit = t.chars().last()?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => 0,
    };
    let at = if seconds > 0 && t[..t.len() - 1].bytes().all(|b| b.is_ascii_digit()) {
        let n: i64 = t[..t.len() - 1].parse().ok()?;
        now.checked_sub(time::Duration::seconds(n.checked_mul(seconds)?))?
    } else if let Ok(at) = time::OffsetDateTime::parse(t, &Rfc3339) {
        at
    } else {
        let date = time::Date::parse(
            t,
            &time::macros::format_description!("[year]-[month]-[day]"),
        )
        .ok()?;
        date.midnight().assume_utc()
    };
    at.to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .ok()?
        .format(&Rfc3339)
        .ok()
}

/// [`since`] from the current time.
pub fn since_now(text: &str) -> Option<String> {
    since(text, time::OffsetDateTime::now_utc())
}

/// How deep `history import DIR` looks for documents under DIR.
const IMPORT_DEPTH: usize = 8;

/// The documents `history import` takes from `path`: the file itself, or every `*.json`
/// file under a directory (LAVA's artifacts, a copy of a board's results), in name order,
/// at most [`IMPORT_DEPTH`] directories down; links are not followed into directories.
pub fn documents_in(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let kind = e.file_type()?;
            let p = e.path();
            if kind.is_dir() && depth < IMPORT_DEPTH {
                walk(&p, depth + 1, out)?;
            } else if kind.is_file() && p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
        Ok(())
    }
    if std::fs::symlink_metadata(path)?.is_dir() {
        let mut out = Vec::new();
        walk(path, 0, &mut out)?;
        Ok(out)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

/// The key values a lab filters runs on, from a document: what the `runs` table's columns
/// beside the document hold.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // used by the client only
struct Columns {
    run_id: String,
    created: Option<String>,
    kind: String,
    hostname: Option<String>,
    machine_id: Option<String>,
    model: Option<String>,
    serial: Option<String>,
    kernel: Option<String>,
    target: Option<String>,
    test: String,
    headline: String,
    mb_s: Option<f64>,
    max_us: Option<i64>,
    interrupted: bool,
    document: String,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // used by the client only
impl Columns {
    fn of(doc: &Document, origin: &str) -> Result<Columns, crate::document::DocumentError> {
        let s = crate::kinds::summarize(doc, origin)?;
        let (test, headline) = crate::kinds::listing(doc, &s, origin)?;
        let host = s.host.clone().unwrap_or_default();
        let kernel = host.kernel.clone().or_else(|| {
            s.context
                .iter()
                .find(|(k, _)| k == "kernel")
                .map(|(_, v)| v.clone())
        });
        let document = doc.to_json_pretty();
        let interrupted = serde_json::from_str::<serde_json::Value>(&document)
            .ok()
            .and_then(|v| v.get("interrupted")?.as_bool())
            .unwrap_or(false);
        // Only a well-formed RFC 3339 time goes into the timestamp column.
        let created = s.created.clone().filter(|c| {
            time::OffsetDateTime::parse(c, &time::format_description::well_known::Rfc3339).is_ok()
        });
        Ok(Columns {
            run_id: run_id(doc),
            created,
            kind: s.kind.as_str().to_string(),
            hostname: s.hostname.clone(),
            machine_id: host.machine_id,
            model: host.model,
            serial: host.serial,
            kernel,
            target: s.target.clone(),
            test,
            headline,
            mb_s: s.tests.first().map(|t| t.measured_mb_s),
            max_us: s
                .threads
                .iter()
                .map(|t| t.max_us)
                .max()
                .and_then(|m| i64::try_from(m).ok()),
            interrupted,
            document,
        })
    }
}

/// The board a run comes from, as `compare --group` tells boards apart: its machine-id, else
/// its serial, else its hostname.
fn board_key(r: &RunRow) -> Option<String> {
    r.machine_id
        .clone()
        .or_else(|| r.serial.clone())
        .or_else(|| r.host.clone())
}

/// The board as `compare --group` names it: the hostname, and the machine-id's first 12
/// digits where there is one (boards of a lab often share a hostname).
fn board_label(r: &RunRow) -> String {
    let host = r.host.clone().unwrap_or_else(|| "-".into());
    match &r.machine_id {
        Some(id) => format!("{host} ({})", id.get(..12).unwrap_or(id)),
        None => host,
    }
}

/// For `compare --group kernel A B`: each board's newest run on kernel `a` and its newest
/// run on kernel `b` (of the same kind and test), as (board, run on a, run on b), in the
/// boards' order. Boards without a run on both are left out; damaged runs are not used.
pub fn kernel_pairs(rows: &[RunRow], a: &str, b: &str) -> Vec<(String, i64, i64)> {
    let mut newest: BTreeMap<(String, String, String, bool), &RunRow> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.damaged.is_none()) {
        let on_b = match r.kernel.as_deref() {
            Some(k) if k == a => false,
            Some(k) if k == b => true,
            _ => continue,
        };
        let Some(board) = board_key(r) else { continue };
        let key = (board, r.kind.clone(), r.test.clone(), on_b);
        let newer = |old: &&RunRow| (&r.created, r.id) > (&old.created, old.id);
        if newest.get(&key).is_none_or(newer) {
            newest.insert(key, r);
        }
    }
    newest
        .iter()
        .filter(|((_, _, _, on_b), _)| !on_b)
        .filter_map(|((board, kind, test, _), ra)| {
            let rb = newest.get(&(board.clone(), kind.clone(), test.clone(), true))?;
            Some((board_label(ra), ra.id, rb.id))
        })
        .collect()
}

/// One measured result of one board, on kernel A and on kernel B.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BoardChange {
    pub board: String,
    pub metric: String,
    pub unit: &'static str,
    pub base: String,
    pub value: String,
    /// Percent from kernel A's value to kernel B's.
    pub percent: Option<f64>,
    /// Worse on kernel B by more than both runs' own spread (or without repetitions to
    /// know a spread).
    pub regression: bool,
    /// Worse on kernel B, but within the runs' spread.
    pub within_spread: bool,
}

/// Every measured result of each board's pair of runs (see [`kernel_pairs`]), regressions
/// first, the largest first.
pub fn kernel_changes(boards: &[(String, crate::compare::Comparison)]) -> Vec<BoardChange> {
    let mut out = Vec::new();
    for (board, c) in boards {
        for row in c
            .rows
            .iter()
            .filter(|r| r.kind == crate::compare::RowKind::Measured)
        {
            let d = row.delta(1);
            let worse = d.is_some_and(|d| d.regression);
            let beyond = d.is_some_and(|d| d.significant != Some(false));
            out.push(BoardChange {
                board: board.clone(),
                metric: row.metric.clone(),
                unit: row.unit,
                base: row.value_text(0),
                value: row.value_text(1),
                percent: d.map(|d| d.percent),
                regression: worse && beyond,
                within_spread: worse && !beyond,
            });
        }
    }
    // Regressions first, the largest change first; then the rest by board.
    out.sort_by(|x, y| {
        y.regression.cmp(&x.regression).then_with(|| {
            if x.regression {
                let size = |c: &BoardChange| c.percent.map_or(0.0, f64::abs);
                size(y).total_cmp(&size(x))
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
    out
}

/// `compare --group kernel`'s text: one line per board and result, regressions first.
pub fn kernel_changes_markdown(a: &str, b: &str, changes: &[BoardChange]) -> String {
    use crate::outside::markdown_cell as cell;
    let mut out = format!(
        "## compare --group kernel — {} vs {}\n\n",
        crate::outside::markdown(a),
        crate::outside::markdown(b)
    );
    let regressions = changes.iter().filter(|c| c.regression).count();
    out.push_str(&format!(
        "{regressions} of {} results regressed beyond their runs' spread on {}.\n\n",
        changes.len(),
        crate::outside::markdown(b)
    ));
    out.push_str(&format!(
        "| Board | Result | {} | {} | Change | |\n|---|---|---:|---:|---:|---|\n",
        cell(a),
        cell(b)
    ));
    for c in changes {
        let verdict = if c.regression {
            "regression"
        } else if c.within_spread {
            "within spread"
        } else {
            ""
        };
        out.push_str(&format!(
            "| {} | {} ({}) | {} | {} | {} | {verdict} |\n",
            cell(&c.board),
            cell(&c.metric),
            c.unit,
            c.base,
            c.value,
            c.percent
                .map_or_else(crate::table::dash, |p| format!("{p:+.1} %")),
        ));
    }
    out
}

#[cfg(feature = "postgres")]
mod client;
#[cfg(feature = "postgres")]
pub use client::LabStore;

/// Without the `postgres` feature (the board binaries) a lab database cannot be opened;
/// saying so is all this type does.
#[cfg(not(feature = "postgres"))]
pub enum LabStore {}

#[cfg(not(feature = "postgres"))]
impl LabStore {
    pub fn connect(url: &str) -> Result<LabStore, LabError> {
        Err(LabError::NotBuilt {
            db: redact_url(url),
        })
    }
    pub fn open(url: &str) -> Result<LabStore, LabError> {
        Self::connect(url)
    }
    pub fn name(&self) -> String {
        match *self {}
    }
    pub fn insert(&mut self, _: &str) -> Result<Saved, LabError> {
        match *self {}
    }
    pub fn list_where(&mut self, _: Filter<'_>) -> Result<Vec<RunRow>, LabError> {
        match *self {}
    }
    pub fn get(&mut self, _: i64) -> Result<Document, LabError> {
        match *self {}
    }
    pub fn push(&mut self, _: &Store) -> Result<Pushed, LabError> {
        match *self {}
    }
}

/// What [`LabStore::push`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pushed {
    /// Runs the lab's database did not have, now saved there.
    pub sent: usize,
    /// Runs it already had (pushed before, or imported).
    pub already: usize,
}

/// Where runs are kept: the embedded SQLite history or a lab's PostgreSQL database.
pub enum History {
    Local(Store),
    Lab(Box<LabStore>),
}

impl History {
    /// The history as messages name it (a file, or a URL without its password).
    pub fn name(&self) -> String {
        match self {
            History::Local(s) => s.path().display().to_string(),
            History::Lab(l) => l.name(),
        }
    }

    pub fn insert(&mut self, document_json: &str) -> Result<Saved, LabError> {
        match self {
            History::Local(s) => Ok(s.insert(document_json)?),
            History::Lab(l) => l.insert(document_json),
        }
    }

    pub fn list_where(&mut self, filter: Filter<'_>) -> Result<Vec<RunRow>, LabError> {
        match self {
            History::Local(s) => Ok(s.list_where(filter)?),
            History::Lab(l) => l.list_where(filter),
        }
    }

    pub fn get(&mut self, id: i64) -> Result<Document, LabError> {
        match self {
            History::Local(s) => Ok(s.get(id)?),
            History::Lab(l) => l.get(id),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_url_gives_libpqs_parameters() {
        let i = ConnInfo::resolve(
            "postgresql://lab:s%3Acret@db.lab:6543/headroom?sslmode=require&connect_timeout=3",
            &env(&[("PGUSER", "other"), ("PGPASSWORD", "notthis")]),
        )
        .unwrap();
        assert_eq!(
            (i.host.as_str(), i.port, i.user.as_str(), i.dbname.as_str()),
            ("db.lab", 6543, "lab", "headroom")
        );
        assert_eq!(i.password.as_deref(), Some("s:cret"));
        assert_eq!(i.sslmode, "require");
        assert_eq!(i.connect_timeout, 3);
        assert_eq!(i.name(), "postgresql://lab@db.lab:6543/headroom");
    }

    #[test]
    fn libpqs_key_value_form_and_the_short_scheme_name_a_database_too() {
        let i = ConnInfo::resolve(
            "host=db.lab port = 6543 dbname='head room' user=lab password='it\\'s s3cret' \
             sslmode=require",
            &env(&[("PGUSER", "other")]),
        )
        .unwrap();
        assert_eq!(
            (i.host.as_str(), i.port, i.user.as_str(), i.dbname.as_str()),
            ("db.lab", 6543, "lab", "head room")
        );
        assert_eq!(i.password.as_deref(), Some("it's s3cret"));
        assert_eq!(i.sslmode, "require");
        assert_eq!(i.name(), "postgresql://lab@db.lab:6543/head room");
        let short = ConnInfo::resolve("postgres://lab@db.lab/headroom", &env(&[])).unwrap();
        assert_eq!((short.host.as_str(), short.port), ("db.lab", 5432));
        // What names a database, and what stays an SQLite file.
        for db in [
            "postgres://x/y",
            "postgresql:///lab",
            "dbname=lab",
            " host = /run/pg",
        ] {
            assert!(is_url(db), "{db}");
        }
        for db in [
            "history.sqlite",
            "/var/lib/h=1.sqlite",
            "hosts=x",
            "./host=x",
            "",
        ] {
            assert!(!is_url(db), "{db}");
        }
        // A broken or unknown parameter is one sentence without the password.
        for bad in [
            "host=db password=hunter2 colour=blue",
            "host=db password='hunter2",
            "host=db password=hunter2 dbname",
            "host=a,b password=hunter2",
        ] {
            let e = ConnInfo::resolve(bad, &env(&[])).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("password=***"), "{e}");
            assert!(e.contains("key=value"), "{e}");
        }
        assert_eq!(
            redact_url("host=db password = 'a b' user=x password=c"),
            "host=db password = *** user=x password=***"
        );
    }

    #[test]
    fn the_environment_fills_what_the_url_leaves_out() {
        let i = ConnInfo::resolve(
            "postgresql:///lab?host=%2Frun%2Fpg",
            &env(&[
                ("PGUSER", "board"),
                ("PGPORT", "5433"),
                ("PGPASSWORD", "pw"),
                ("PGSSLMODE", "disable"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (i.host.as_str(), i.port, i.user.as_str(), i.dbname.as_str()),
            ("/run/pg", 5433, "board", "lab")
        );
        assert_eq!(i.password.as_deref(), Some("pw"));
        assert_eq!(i.sslmode, "disable");
        assert_eq!(i.name(), "postgresql://board@/lab?host=/run/pg&port=5433");
    }

    #[test]
    fn the_password_file_matches_as_libpqs_does() {
        let text = "# lab\n\
                    other:5432:*:board:wrong\n\
                    localhost:5433:lab:board:sock\\:et\n\
                    db.lab:*:*:board:tcp\n";
        assert_eq!(
            password_in(text, "/run/pg", 5433, "lab", "board").as_deref(),
            Some("sock:et")
        );
        assert_eq!(
            password_in(text, "db.lab", 1, "x", "board").as_deref(),
            Some("tcp")
        );
        assert_eq!(password_in(text, "db.lab", 1, "x", "nobody"), None);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = file.to_string_lossy().into_owned();
        let vars = [("PGPASSFILE", f.as_str())];
        let i = ConnInfo::resolve("postgresql://board@db.lab/x", &env(&vars)).unwrap();
        assert_eq!(i.password.as_deref(), Some("tcp"));
        // A password file others can read is ignored, as libpq ignores it.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let i = ConnInfo::resolve("postgresql://board@db.lab/x", &env(&vars)).unwrap();
        assert_eq!(i.password, None);
    }

    #[test]
    fn a_service_names_a_database() {
        let text = "[other]\nhost=x\n# c\n[lab]\nhost = db.lab\nport=6000\ndbname=headroom\n";
        let p = service_in(text, "lab").unwrap();
        assert_eq!(p.get("host").map(String::as_str), Some("db.lab"));
        assert_eq!(p.get("port").map(String::as_str), Some("6000"));
        assert_eq!(service_in(text, "none"), None);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("svc.conf");
        std::fs::write(&file, text).unwrap();
        let f = file.to_string_lossy().into_owned();
        // The service's values come before the environment's, the URL's before both.
        let i = ConnInfo::resolve(
            "postgresql://u@?service=lab",
            &env(&[("PGSERVICEFILE", f.as_str()), ("PGPORT", "7000")]),
        )
        .unwrap();
        assert_eq!((i.host.as_str(), i.port), ("db.lab", 6000));
        assert_eq!(i.dbname, "headroom");
        let e = ConnInfo::resolve(
            "postgresql://u@h/db",
            &env(&[("PGSERVICE", "nosuch"), ("PGSERVICEFILE", f.as_str())]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("the PostgreSQL service \"nosuch\" is in none of"),
            "{e}"
        );
    }

    #[test]
    fn no_message_shows_the_password() {
        assert_eq!(
            redact_url("postgresql://lab:hunter2@db:5432/h?sslmode=require&password=x2"),
            "postgresql://lab:***@db:5432/h?sslmode=require&password=***"
        );
        for bad in [
            "postgresql://lab:hunter2@db:notaport/h",
            "postgresql://lab:hunter2@db/h?sslmode=sometimes",
            "postgresql://lab:hunter2@a,b/h",
            "postgresql://lab:hunter2@db/h?colour=blue",
        ] {
            let e = ConnInfo::resolve(bad, &env(&[])).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("postgresql://lab:***@"), "{e}");
        }
    }

    #[test]
    fn since_reads_durations_and_dates() {
        let now = time::macros::datetime!(2026-12-06 10:00:00 UTC);
        assert_eq!(since("7d", now).as_deref(), Some("2026-11-29T10:00:00Z"));
        assert_eq!(since("90m", now).as_deref(), Some("2026-12-06T08:30:00Z"));
        assert_eq!(
            since("2026-12-01", now).as_deref(),
            Some("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            since("2026-12-01T08:00:00+02:00", now).as_deref(),
            Some("2026-12-01T06:00:00Z")
        );
        for bad in ["", "d", "7y", "yesterday", "-7d"] {
            assert_eq!(since(bad, now), None, "{bad:?}");
        }
    }
}
