//! The connection to a lab's PostgreSQL database: TLS as `sslmode` asks, the schema brought
//! up to date, runs saved, listed and read back.

use super::{Columns, ConnInfo, LabError, Pushed, MIGRATIONS, MIGRATION_LOCK, SCHEMA_VERSION};
use crate::document::Document;
use crate::history::{Filter, RunRow, Saved, Store, MACHINE_ID_PREFIX_MIN};
use postgres::config::SslMode;
use postgres::error::SqlState;
use std::sync::Arc;
use std::time::Duration;

/// An open connection to a lab's history.
pub struct LabStore {
    client: postgres::Client,
    info: ConnInfo,
}

/// How many runs one transaction of a push saves: a lost connection loses at most these,
/// sent again by the next push.
const PUSH_BATCH: usize = 50;

/// A verifier that takes any certificate, for `sslmode=prefer` and `require`, which in libpq
/// encrypt without checking whom they talk to (unless a root certificate is given); the
/// handshake's signatures are still checked.
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS client for `info`'s sslmode: verify-ca and verify-full check the server's
/// certificate against the root certificates (sslrootcert, else the system's) and its name
/// (verify-ca too: rustls checks both); prefer and require encrypt, checking the
/// certificate only where a root certificate is given, as libpq does.
fn tls(info: &ConnInfo, name: &str) -> Result<tokio_postgres_rustls::MakeRustlsConnect, LabError> {
    // ring, not aws-lc-rs (rustls' default, which wants cmake and a C build for each board
    // target); rustls 0.23.48 deprecated ring's provider for lacking post-quantum key
    // exchange, which no PostgreSQL server offers yet.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let unreachable = |error: String| LabError::Unreachable {
        db: name.to_string(),
        error,
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| unreachable(e.to_string()))?;
    let verify = info.sslmode.starts_with("verify-") || info.sslrootcert.is_some();
    let config = if verify {
        let mut roots = rustls::RootCertStore::empty();
        match &info.sslrootcert {
            Some(file) if file.as_os_str() != "system" => {
                use rustls::pki_types::pem::PemObject;
                let certs = rustls::pki_types::CertificateDer::pem_file_iter(file)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        unreachable(format!(
                            "the root certificate file {} cannot be read ({e})",
                            file.display()
                        ))
                    })?;
                roots.add_parsable_certificates(certs);
            }
            _ => {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth()
    };
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A driver error in one line: the server's own message for a database error, else the
/// driver's words with their cause.
fn words(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let w = c.to_string();
        if !text.contains(&w) {
            text.push_str(": ");
            text.push_str(&w);
        }
        cause = c.source();
    }
    text
}

impl LabStore {
    /// Connects to the database `url` names (see [`ConnInfo::resolve`]), reading the
    /// environment as libpq does; nothing is created or changed.
    pub fn connect(url: &str) -> Result<LabStore, LabError> {
        let info = ConnInfo::resolve(url, &|k| std::env::var(k).ok())?;
        let name = info.name();
        let mut config = postgres::Config::new();
        config
            .host(&info.host)
            .port(info.port)
            .user(&info.user)
            .dbname(&info.dbname)
            .application_name("headroom")
            .connect_timeout(Duration::from_secs(info.connect_timeout))
            .keepalives(true)
            .ssl_mode(match info.sslmode.as_str() {
                "disable" => SslMode::Disable,
                "allow" | "prefer" => SslMode::Prefer,
                _ => SslMode::Require,
            });
        if let Some(p) = &info.password {
            config.password(p);
        }
        let unreachable = |e: postgres::Error| LabError::Unreachable {
            db: name.clone(),
            error: words(&e),
        };
        let client = if info.sslmode == "disable" {
            config.connect(postgres::NoTls).map_err(unreachable)?
        } else {
            config.connect(tls(&info, &name)?).map_err(unreachable)?
        };
        Ok(LabStore { client, info })
    }

    /// Connects and brings the schema up to date, creating it in an empty database; one
    /// client at a time does (an advisory lock), the others wait. A database of a newer
    /// headroom is refused, untouched.
    pub fn open(url: &str) -> Result<LabStore, LabError> {
        let mut store = Self::connect(url)?;
        if store.version()? != Some(SCHEMA_VERSION) {
            store.migrate()?;
        }
        Ok(store)
    }

    pub fn name(&self) -> String {
        self.info.name()
    }

    fn query_error(&self, e: postgres::Error) -> LabError {
        query_error(&self.info, e)
    }

    /// The schema's version; `None` for a database without headroom's tables.
    fn version(&mut self) -> Result<Option<i32>, LabError> {
        let row = self
            .client
            .query_one(
                "SELECT to_regclass('headroom_schema') IS NOT NULL,
                        to_regclass('runs') IS NOT NULL",
                &[],
            )
            .map_err(|e| self.query_error(e))?;
        let (schema, runs): (bool, bool) = (row.get(0), row.get(1));
        if !schema {
            if runs {
                return Err(LabError::Foreign {
                    db: self.name(),
                    why: "it has a table `runs` that headroom did not make".into(),
                });
            }
            return Ok(None);
        }
        let version: Option<i32> = self
            .client
            .query_one("SELECT max(version) FROM headroom_schema", &[])
            .map_err(|e| self.query_error(e))?
            .get(0);
        match version {
            Some(found) if found > SCHEMA_VERSION => Err(LabError::Newer {
                db: self.name(),
                found,
            }),
            v => Ok(v),
        }
    }

    /// Applies the migrations the database lacks, in one transaction under the lock.
    fn migrate(&mut self) -> Result<(), LabError> {
        let info = self.info.clone();
        let name = info.name();
        let fail = |e: postgres::Error| query_error(&info, e);
        let mut tx = self.client.transaction().map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(fail)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS headroom_schema (version integer NOT NULL)")
            .map_err(fail)?;
        let found: Option<i32> = tx
            .query_one("SELECT max(version) FROM headroom_schema", &[])
            .map_err(fail)?
            .get(0);
        let found = found.unwrap_or(0);
        if found > SCHEMA_VERSION {
            return Err(LabError::Newer { db: name, found });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.batch_execute(sql).map_err(fail)?;
            let version = i as i32 + 1;
            tx.execute(
                "INSERT INTO headroom_schema (version) VALUES ($1)",
                &[&version],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }

    /// Saves one document; the same document (the same [`super::run_id`]) is stored once,
    /// and its id returned with `new: false`.
    pub fn insert(&mut self, document_json: &str) -> Result<Saved, LabError> {
        let doc = Document::parse(document_json, "the document to save")?;
        let c = Columns::of(&doc, "the document to save")?;
        let info = self.info.clone();
        let fail = |e: postgres::Error| query_error(&info, e);
        let mut tx = self.client.transaction().map_err(fail)?;
        let saved = insert_in(&mut tx, &c).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(saved)
    }

    /// Sends the runs of the local history `local` that this database lacks (by run id), in
    /// transactions of [`PUSH_BATCH`]: a push cut short leaves whole runs, and the next
    /// push sends the rest. Damaged local runs are left out.
    pub fn push(&mut self, local: &Store) -> Result<Pushed, LabError> {
        let mut docs = Vec::new();
        for row in local.list()? {
            if row.damaged.is_some() {
                continue;
            }
            let doc = local.get(row.id)?;
            docs.push(Columns::of(
                &doc,
                &format!("run {} of {}", row.id, local.path().display()),
            )?);
        }
        let ids: Vec<String> = docs.iter().map(|c| c.run_id.clone()).collect();
        let have: std::collections::HashSet<String> = self
            .client
            .query("SELECT run_id FROM runs WHERE run_id = ANY($1)", &[&ids])
            .map_err(|e| self.query_error(e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let missing: Vec<&Columns> = docs.iter().filter(|c| !have.contains(&c.run_id)).collect();
        let mut pushed = Pushed {
            sent: 0,
            already: docs.len() - missing.len(),
        };
        let info = self.info.clone();
        let fail = |e: postgres::Error| query_error(&info, e);
        for batch in missing.chunks(PUSH_BATCH) {
            let mut tx = self.client.transaction().map_err(fail)?;
            let mut new = 0;
            for c in batch {
                if insert_in(&mut tx, c).map_err(fail)?.new {
                    new += 1;
                }
            }
            tx.commit().map_err(fail)?;
            pushed.sent += new;
            pushed.already += batch.len() - new;
        }
        Ok(pushed)
    }

    /// The runs `filter` selects, oldest first; none in a database headroom has not made
    /// its tables in yet.
    pub fn list_where(&mut self, filter: Filter<'_>) -> Result<Vec<RunRow>, LabError> {
        if self.version()?.is_none() {
            return Ok(Vec::new());
        }
        let host = filter.host.unwrap_or("");
        let prefix = host.to_ascii_lowercase();
        let hex =
            prefix.len() >= MACHINE_ID_PREFIX_MIN && prefix.bytes().all(|b| b.is_ascii_hexdigit());
        let prefix = if hex { prefix } else { String::new() };
        let kind = filter.kind.unwrap_or("");
        let since = filter.since.unwrap_or("");
        let rows = self
            .client
            .query(
                "SELECT id, to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                        hostname, machine_id, model, serial, kind, target, test, headline,
                        interrupted, kernel
                 FROM runs
                 WHERE ($1 = '' OR lower(hostname) = lower($1) OR lower(serial) = lower($1)
                        OR ($2 != '' AND left(machine_id, length($2)) = $2))
                   AND ($3 = '' OR kind = $3)
                   AND ($4 = '' OR created >= $4::text::timestamptz)
                 ORDER BY id",
                &[&host, &prefix, &kind, &since],
            )
            .map_err(|e| self.query_error(e))?;
        Ok(rows
            .iter()
            .map(|r| RunRow {
                id: r.get(0),
                created: r.get(1),
                host: r.get(2),
                machine_id: r.get(3),
                model: r.get(4),
                serial: r.get(5),
                kind: r.get(6),
                target: r.get(7),
                test: r.get(8),
                headline: r.get(9),
                interrupted: r.get(10),
                kernel: r.get(11),
                damaged: None,
            })
            .collect())
    }

    /// The document saved as run `id`.
    pub fn get(&mut self, id: i64) -> Result<Document, LabError> {
        let row = self
            .client
            .query_opt("SELECT document FROM runs WHERE id = $1", &[&id])
            .map_err(|e| self.query_error(e))?
            .ok_or_else(|| LabError::NoSuchRun {
                db: self.name(),
                id,
            })?;
        let text: String = row.get(0);
        Ok(Document::parse(
            &text,
            &format!("run {id} of {}", self.name()),
        )?)
    }

    /// The id of the newest run (by its time) of the host `host` names, of `kind` when
    /// given; `None` when it has none.
    pub fn latest(&mut self, host: &str, kind: Option<&str>) -> Result<Option<i64>, LabError> {
        let rows = self.list_where(Filter {
            host: Some(host),
            kind,
            since: None,
        })?;
        Ok(rows
            .iter()
            .max_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)))
            .map(|r| r.id))
    }
}

/// A failed statement in one sentence: a missing right says what to ask for.
fn query_error(info: &ConnInfo, e: postgres::Error) -> LabError {
    if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
        return LabError::NoWriteRight {
            db: info.name(),
            user: info.user.clone(),
            error: words(&e),
        };
    }
    LabError::Query {
        db: info.name(),
        error: words(&e),
    }
}

/// Inserts one run in `tx`, or finds the one with its run id.
fn insert_in(tx: &mut postgres::Transaction<'_>, c: &Columns) -> Result<Saved, postgres::Error> {
    let row = tx.query_opt(
        "INSERT INTO runs (run_id, created, kind, hostname, machine_id, model, serial, kernel,
                           target, test, headline, mb_s, max_us, interrupted, document)
         VALUES ($1, $2::text::timestamptz, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                 $14, $15)
         ON CONFLICT (run_id) DO NOTHING
         RETURNING id",
        &[
            &c.run_id,
            &c.created,
            &c.kind,
            &c.hostname,
            &c.machine_id,
            &c.model,
            &c.serial,
            &c.kernel,
            &c.target,
            &c.test,
            &c.headline,
            &c.mb_s,
            &c.max_us,
            &c.interrupted,
            &c.document,
        ],
    )?;
    if let Some(r) = row {
        return Ok(Saved {
            id: r.get(0),
            new: true,
        });
    }
    let id: i64 = tx
        .query_one("SELECT id FROM runs WHERE run_id = $1", &[&c.run_id])?
        .get(0);
    Ok(Saved { id, new: false })
}
