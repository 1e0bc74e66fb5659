//! A lab's history in PostgreSQL, against a real server from Debian's packages that each test
//! starts as user nobody in a temporary directory (a Unix socket there, no TCP port), and
//! stops and removes at the end.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use report::history::Store;
use report::history_pg::{History, LabStore};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use testsupport::cmd::headroom;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The lab's superuser and its password (the tests' own server, gone when they end).
const ADMIN_PASSWORD: &str = "lab-Secret-7";

/// A PostgreSQL server of a test's own, stopped and removed when dropped.
struct Server {
    dir: tempfile::TempDir,
    port: u16,
    /// `listen_addresses`: none (the socket only), or loopback for TLS.
    listen: &'static str,
}

impl Server {
    /// initdb and start as nobody; `None` (skipped) without the server's binaries or root.
    fn start() -> Option<Server> {
        let server = Self::init()?;
        server.pg_ctl("start");
        Some(server)
    }

    /// initdb as nobody, not started.
    fn init() -> Option<Server> {
        if !testsupport::skip::unless(
            Path::new(PG_BIN).join("initdb").is_file(),
            "PostgreSQL 15's server (Debian's postgresql package) is not installed",
        ) {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("headroom-pg-")
            .tempdir()
            .ok()?;
        let data = dir.path().join("data");
        // SAFETY: chown(2) on a path this test made; 65534 is nobody.
        let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).ok()?;
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, ADMIN_PASSWORD).unwrap();
        std::os::unix::fs::chown(&pwfile, Some(65534), Some(65534)).unwrap();
        let mut initdb = testsupport::process::as_nobody(&Path::new(PG_BIN).join("initdb"))?;
        initdb
            .args(["-D"])
            .arg(&data)
            .args(["-U", "lab", "--auth=scram-sha-256", "--no-sync"]);
        initdb.arg(format!("--pwfile={}", pwfile.display()));
        let out = testsupport::process::output_within(
            &mut testsupport::process::spawn_piped(&mut initdb),
            Duration::from_secs(120),
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A port of its own: the socket's name has it; the directory is the test's.
        Some(Server {
            port: 5432,
            dir,
            listen: "",
        })
    }

    /// A server that takes connections on loopback only over TLS (`hostssl`), with a
    /// certificate for `localhost` that the test's own CA signed (`ca.crt` in its directory);
    /// `None` (skipped) without openssl.
    fn start_tls() -> Option<Server> {
        if !testsupport::skip::unless(testsupport::process::on_path("openssl"), "openssl") {
            return None;
        }
        let mut server = Self::init()?;
        let d = server.dir.path().to_path_buf();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&d)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=headroom test CA",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        std::fs::write(
            d.join("ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext",
        ]);
        for f in ["server.crt", "server.key"] {
            std::os::unix::fs::chown(d.join(f), Some(65534), Some(65534)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("server.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let data = d.join("data");
        let mut conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
        conf.push_str(&format!(
            "ssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\n",
            d.display()
        ));
        std::fs::write(data.join("postgresql.conf"), conf).unwrap();
        // Loopback connections only with TLS.
        let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
        let hba: String = hba
            .lines()
            .map(|l| match l.strip_prefix("host ") {
                Some(rest) => format!("hostssl {rest}\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
        server.port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        server.listen = "127.0.0.1";
        server.pg_ctl("start");
        Some(server)
    }

    fn pg_ctl(&self, action: &str) {
        let mut c =
            testsupport::process::as_nobody(&Path::new(PG_BIN).join("pg_ctl")).expect("as nobody");
        c.arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-t", "60", "-m", "fast"]);
        if action == "start" {
            c.arg("-l")
                .arg(self.dir.path().join("log"))
                .arg("-o")
                .arg(format!(
                    "-k {} -p {} -c listen_addresses='{}' -c max_connections=150 -c fsync=off",
                    self.dir.path().display(),
                    self.port,
                    self.listen
                ));
        }
        c.arg(action);
        let out = testsupport::process::output_within(
            &mut testsupport::process::spawn_piped(&mut c),
            Duration::from_secs(90),
        );
        assert!(
            out.status.success(),
            "pg_ctl {action}: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }

    /// The URL of database `db` as `user` (the password comes from elsewhere).
    fn url(&self, user: &str, db: &str) -> String {
        format!(
            "postgresql://{user}@/{db}?host={}&port={}&sslmode=disable",
            self.dir.path().display(),
            self.port
        )
    }

    /// The admin's URL with its password in it.
    fn admin_url(&self, db: &str) -> String {
        self.url(&format!("lab:{ADMIN_PASSWORD}"), db)
    }

    fn sql(&self, db: &str, sql: &str) {
        self.client(db).unwrap().batch_execute(sql).unwrap();
    }

    /// A client of the tests' own, as the admin, for what headroom never does (creating
    /// roles, counting).
    fn client(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host_path(self.dir.path())
            .port(self.port)
            .user("lab")
            .password(ADMIN_PASSWORD)
            .dbname(db)
            .connect(postgres::NoTls)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut c = match testsupport::process::as_nobody(&Path::new(PG_BIN).join("pg_ctl")) {
            Some(c) => c,
            None => return,
        };
        c.arg("-D").arg(self.dir.path().join("data")).args([
            "-w",
            "-t",
            "60",
            "-m",
            "immediate",
            "stop",
        ]);
        let _ = testsupport::process::output_within(
            &mut testsupport::process::spawn_piped(&mut c),
            Duration::from_secs(90),
        );
    }
}

fn count(c: &mut postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).unwrap().get(0)
}

/// A `bench disk` document (tests/fixtures/results/rpi5-gen3.json) of board `board` (its
/// own hostname, machine-id and serial) on `kernel`, its `run`th, measuring `mb_s`.
fn document(board: usize, kernel: &str, run: usize, mb_s: f64) -> String {
    let path = testsupport::fixtures::repo_root().join("tests/fixtures/results/rpi5-gen3.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["host"] = serde_json::json!({
        "hostname": format!("board-{board:03}"),
        "kernel": kernel,
        "machine_id": format!("{board:04x}5be0d5c1a77f{:016x}", 0),
        "model": "Radxa ROCK 3A",
        "serial": format!("SN{board:05}"),
    });
    v["created"] = format!(
        "2026-12-0{}T{:02}:{:02}:00Z",
        1 + run / 10,
        board % 24,
        run % 60
    )
    .into();
    v["tests"][0]["runs"][0]["mb_per_s"] = mb_s.into();
    serde_json::to_string_pretty(&v).unwrap()
}

/// 100 boards, each with its own host identity and local spool, save 20 runs each and push
/// after each run, all at once; the server is stopped in the middle of the pushes and
/// started again. Every one of the 2,000 runs lands once, and pushing again sends nothing.
#[test]
fn a_hundred_boards_pushing_at_once_lose_nothing_and_duplicate_nothing() {
    let Some(server) = Server::start() else {
        return;
    };
    server.sql("postgres", "CREATE DATABASE lab");
    let url = server.admin_url("lab");
    let spools = tempfile::tempdir().unwrap();
    const BOARDS: usize = 100;
    const RUNS: usize = 20;
    let deadline = Instant::now() + Duration::from_secs(600);
    let failures = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let mut boards = Vec::new();
        for b in 0..BOARDS {
            let (url, spools, failures) = (&url, spools.path(), &failures);
            boards.push(scope.spawn(move || {
                let spool = Store::open(&spools.join(format!("board-{b:03}.sqlite"))).unwrap();
                let mut pushed_all = false;
                for r in 0..RUNS {
                    let kernel = if r < RUNS / 2 { "6.1.0" } else { "6.6.0" };
                    // Every board is faster on 6.6.0, but board 42 loses nearly half its rate.
                    let mb_s = if b == 42 && r == RUNS - 1 {
                        60.0
                    } else {
                        100.0 + r as f64
                    };
                    spool.insert(&document(b, kernel, r, mb_s)).unwrap();
                    pushed_all = LabStore::open(url).and_then(|mut l| l.push(&spool)).is_ok();
                    if !pushed_all {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                // What `history push` does after the network comes back: again until it lands.
                while !pushed_all && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(200));
                    pushed_all = LabStore::open(url).and_then(|mut l| l.push(&spool)).is_ok();
                }
                assert!(pushed_all, "board {b} could not push within the limit");
            }));
        }
        // The server goes away in the middle of the pushes, and comes back.
        let mut counter = None;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(300) {
            counter = counter.or_else(|| server.client("lab").ok());
            let n = counter.as_mut().and_then(|c| {
                c.query_one("SELECT count(*) FROM runs", &[])
                    .ok()
                    .map(|r| r.get::<_, i64>(0))
            });
            if n.is_some_and(|n| n >= 500) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(counter);
        server.pg_ctl("stop");
        std::thread::sleep(Duration::from_secs(1));
        server.pg_ctl("start");
        for b in boards {
            b.join().unwrap();
        }
    });
    assert!(
        failures.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "no push met the stopped server"
    );
    let mut c = server.client("lab").unwrap();
    assert_eq!(count(&mut c, "SELECT count(*) FROM runs"), 2000);
    assert_eq!(
        count(&mut c, "SELECT count(DISTINCT run_id) FROM runs"),
        2000
    );
    assert_eq!(
        count(&mut c, "SELECT count(DISTINCT machine_id) FROM runs"),
        100
    );
    assert_eq!(
        count(&mut c, "SELECT count(*) FROM runs WHERE kernel = '6.6.0'"),
        1000
    );
    // A push retried after its acknowledgement was lost: nothing is stored twice.
    let spool = Store::open(&spools.path().join("board-007.sqlite")).unwrap();
    let again = LabStore::open(&url).unwrap().push(&spool).unwrap();
    assert_eq!((again.sent, again.already), (0, 20));
    assert_eq!(count(&mut c, "SELECT count(*) FROM runs"), 2000);

    // Each board's newest run on 6.1.0 against its newest on 6.6.0: the injected regression
    // is the first line of the table, and the only regression.
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(headroom_for(home.path()).args([
        "compare", "--group", "kernel", "6.1.0", "6.6.0", "--db", &url,
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("1 of 400 results regressed beyond their runs' spread on 6.6.0"),
        "{out}"
    );
    let first = out
        .lines()
        .find(|l| l.starts_with("| board-"))
        .unwrap_or_default();
    assert!(
        first.starts_with("| board-042 (002a5be0d5c1) | dd 100M write (MB/s) |")
            && first.contains("| 109.0 | 60.0 | -45.0 % | regression |"),
        "{out}"
    );
}

fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `headroom` with a fresh local history, the lab's password where libpq looks for it.
fn headroom_for(home: &Path) -> assert_cmd::Command {
    let mut c = headroom();
    c.env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("HEADROOM_DB")
        .env_remove("PGPASSWORD")
        .env_remove("PGSERVICE");
    c
}

/// The user's view: `history import DIR` twice (the second stores nothing), `history --host
/// --kind --since` against the lab's database, `compare HOST:latest HOST:latest`, a password
/// read from ~/.pgpass and never printed, a read-only user's one sentence, and a database of
/// a newer headroom refused untouched.
#[test]
fn a_lab_imports_lists_and_compares_runs_of_several_boards() {
    let Some(server) = Server::start() else {
        return;
    };
    server.sql("postgres", "CREATE DATABASE lab");
    let home = tempfile::tempdir().unwrap();
    let pgpass = home.path().join(".pgpass");
    std::fs::write(&pgpass, format!("localhost:*:lab:lab:{ADMIN_PASSWORD}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let docs = home.path().join("artifacts/job-1");
    std::fs::create_dir_all(&docs).unwrap();
    for (b, mb) in [(1, 300.0), (2, 280.0), (3, 310.0)] {
        for r in 0..2 {
            std::fs::write(
                docs.join(format!("board{b}-run{r}.json")),
                document(b, "6.6.0", r, mb + r as f64),
            )
            .unwrap();
        }
    }
    // A board whose hostname carries a terminal escape and HTML: it reaches no terminal raw.
    let mut hostile: Value = serde_json::from_str(&document(9, "6.6.0", 0, 1.0)).unwrap();
    hostile["host"]["hostname"] = "evil\u{1b}]0;pwned\u{7}<script>x</script>|".into();
    std::fs::write(docs.join("hostile.json"), hostile.to_string()).unwrap();
    let url = server.url("lab", "lab");
    let import = |expect: &str| {
        let (code, out, err) = run(headroom_for(home.path()).args([
            "history",
            "import",
            home.path().join("artifacts").to_str().unwrap(),
            "--db",
            &url,
        ]));
        assert_eq!(code, 0, "{out}{err}");
        assert_eq!(
            out.lines().filter(|l| l.contains(expect)).count(),
            7,
            "{out}"
        );
    };
    import(": saved as #");
    import(": already saved as #");

    let (code, out, err) = run(headroom_for(home.path()).args([
        "history",
        "--db",
        &url,
        "--host",
        "board-002",
        "--kind",
        "disk",
        "--since",
        "2026-11-30",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("board-002").count(), 2, "{out}");
    assert!(!out.contains("board-001"), "{out}");
    let (code, out, err) = run(headroom_for(home.path()).args(["history", "--db", &url]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("evil"), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    let (_, out, _) =
        run(headroom_for(home.path()).args(["history", "--db", &url, "--kind", "latency"]));
    assert!(out.contains("matches --kind or --since"), "{out}");

    let (code, out, err) = run(headroom_for(home.path()).args([
        "compare",
        "board-001:latest",
        "board-002:latest",
        "--db",
        &url,
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("301.0") && out.contains("281.0"), "{out}");

    // A read-only user: one sentence, and what it may do still works.
    server.sql(
        "lab",
        "CREATE ROLE reader LOGIN PASSWORD 'r3ader'; GRANT SELECT ON runs, headroom_schema TO reader;",
    );
    let reader = server.url("reader", "lab");
    let (code, out, err) = run(headroom_for(home.path()).env("PGPASSWORD", "r3ader").args([
        "history",
        "add",
        docs.join("board1-run0.json").to_str().unwrap(),
        "--db",
        &reader,
    ]));
    assert_eq!(code, 1, "{out}{err}");
    let err = err.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the user \"reader\" may not save runs in the history postgresql://reader@"),
        "{err}"
    );
    assert!(!err.contains("r3ader"), "{err}");
    let (code, out, _) = run(headroom_for(home.path())
        .env("PGPASSWORD", "r3ader")
        .args(["history", "--db", &reader]));
    assert_eq!(code, 0);
    assert_eq!(out.matches("board-00").count(), 6, "{out}");

    // A wrong password in the URL is never printed.
    let wrong = server.url("lab:Wr0ngHunter2", "lab");
    let (code, _, err) = run(headroom_for(home.path()).args(["history", "--db", &wrong]));
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot connect to the history postgresql://lab@/lab?host="),
        "{err}"
    );
    assert!(!err.contains("Wr0ngHunter2"), "{err}");

    // A database a newer headroom has upgraded: refused with a sentence, left untouched.
    server.sql("lab", "INSERT INTO headroom_schema (version) VALUES (99)");
    let mut h = History::Lab(Box::new(
        LabStore::connect(&server.admin_url("lab")).unwrap(),
    ));
    let e = h
        .list_where(Default::default())
        .expect_err("a newer schema was read")
        .to_string();
    assert!(
        e.contains("has schema version 99, newer than this headroom knows (1): upgrade headroom"),
        "{e}"
    );
    assert!(LabStore::open(&server.admin_url("lab")).is_err());
    let mut c = server.client("lab").unwrap();
    assert_eq!(count(&mut c, "SELECT count(*) FROM runs"), 7);
}

/// A run made while the lab's database is down is kept in the local history with a warning,
/// and `history push` sends it once the database is back; pushing again sends nothing.
#[test]
fn a_run_made_while_the_database_is_down_is_pushed_later() {
    let Some(server) = Server::start() else {
        return;
    };
    server.sql("postgres", "CREATE DATABASE lab");
    let home = tempfile::tempdir().unwrap();
    let url = server.admin_url("lab");
    let count_run = || {
        run(headroom_for(home.path()).args([
            "count",
            "--save",
            "--db",
            &url,
            "-e",
            "task-clock",
            "--",
            "true",
        ]))
    };
    let (code, _, err) = count_run();
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let listed = |url: &str| {
        let (code, out, err) = run(headroom_for(home.path()).args(["history", "--db", url]));
        assert_eq!(code, 0, "{err}");
        out.lines()
            .filter(|l| l.contains("count (1 event)"))
            .count()
    };
    assert_eq!(listed(&url), 1);

    server.pg_ctl("stop");
    let (code, _, err) = count_run();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: the run is kept as #2 in the local history")
            && err.contains("`headroom history push --db postgresql://lab:***@/lab?host="),
        "{err}"
    );
    assert!(!err.contains(ADMIN_PASSWORD), "{err}");

    server.pg_ctl("start");
    let push = || run(headroom_for(home.path()).args(["history", "push", "--db", &url]));
    let (code, out, err) = push();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("1 runs sent to postgresql://lab@/lab?host="),
        "{out}"
    );
    assert!(out.trim_end().ends_with(", 1 already there"), "{out}");
    assert_eq!(listed(&url), 2);
    let (_, out, _) = push();
    assert!(
        out.starts_with("0 runs sent") && out.contains(", 2 already there"),
        "{out}"
    );
    assert_eq!(listed(&url), 2);
}

/// TLS as libpq's sslmode asks, against a server that takes loopback connections only over
/// TLS: `require` encrypts without a root certificate, `verify-full` checks the certificate
/// against `sslrootcert` and the host's name, `disable` is turned away; each refusal is one
/// sentence naming the database without its password.
#[test]
fn tls_follows_sslmode() {
    let Some(server) = Server::start_tls() else {
        return;
    };
    let ca = server.dir.path().join("ca.crt");
    let url = |host: &str, mode: &str| {
        format!(
            "postgresql://lab:{ADMIN_PASSWORD}@{host}:{}/postgres?sslmode={mode}&sslrootcert={}",
            server.port,
            ca.display()
        )
    };
    let connects = |u: &str| LabStore::connect(u).map(|_| ()).map_err(|e| e.to_string());
    // Encrypted without checking whom it talks to, as libpq's require does.
    let plain_require = format!(
        "postgresql://lab:{ADMIN_PASSWORD}@localhost:{}/postgres?sslmode=require",
        server.port
    );
    assert_eq!(connects(&plain_require), Ok(()));
    assert_eq!(connects(&url("localhost", "verify-full")), Ok(()));
    // The certificate names localhost, not 127.0.0.1.
    let e = connects(&url("127.0.0.1", "verify-full")).unwrap_err();
    assert!(
        e.starts_with("cannot connect to the history postgresql://lab@127.0.0.1:"),
        "{e}"
    );
    assert!(e.contains("certificate"), "{e}");
    assert!(!e.contains(ADMIN_PASSWORD), "{e}");
    // Without the lab's CA the system's roots do not know it.
    let e = connects(&format!(
        "postgresql://lab:{ADMIN_PASSWORD}@localhost:{}/postgres?sslmode=verify-full&sslrootcert=system",
        server.port
    ))
    .unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    // Unencrypted is refused by the server's pg_hba.conf.
    let e = connects(&url("localhost", "disable")).unwrap_err();
    assert!(e.contains("no encryption"), "{e}");
    assert!(!e.contains(ADMIN_PASSWORD), "{e}");
}

/// libpq's key=value connection string and the `postgres://` scheme name the lab's database
/// as `postgresql://` does; a password in either form is never printed, neither in an error
/// nor in what `history --json` says of the database.
#[test]
fn libpqs_key_value_form_and_postgres_scheme_reach_the_lab() {
    let Some(server) = Server::start() else {
        return;
    };
    server.sql("postgres", "CREATE DATABASE lab");
    let home = tempfile::tempdir().unwrap();
    let doc = home.path().join("run.json");
    std::fs::write(&doc, document(5, "6.6.0", 0, 250.0)).unwrap();
    let dir = server.dir.path().display().to_string();
    let keywords = format!(
        "host={dir} port={} dbname=lab user=lab sslmode=disable",
        server.port
    );
    let (code, out, err) = run(headroom_for(home.path())
        .env("PGPASSWORD", ADMIN_PASSWORD)
        .args(["history", "add", doc.to_str().unwrap(), "--db", &keywords]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(": saved as #1"), "{out}");

    let short = format!(
        "postgres://lab@/lab?host={dir}&port={}&sslmode=disable",
        server.port
    );
    let (code, out, err) = run(headroom_for(home.path())
        .env("PGPASSWORD", ADMIN_PASSWORD)
        .args(["history", "--db", &short]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("board-005").count(), 1, "{out}");

    // `compare --kind`: a board's newest run of that kind, though a run of another kind came
    // after it.
    let path =
        testsupport::fixtures::repo_root().join("tests/fixtures/results/latency-2-threads.json");
    let mut latency: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    latency["host"] =
        serde_json::from_str::<Value>(&document(5, "6.6.0", 0, 1.0)).unwrap()["host"].clone();
    latency["created"] = "2026-12-09T00:00:00Z".into();
    std::fs::write(home.path().join("latency.json"), latency.to_string()).unwrap();
    std::fs::write(
        home.path().join("other.json"),
        document(6, "6.6.0", 0, 200.0),
    )
    .unwrap();
    let (code, out, err) = run(headroom_for(home.path())
        .env("PGPASSWORD", ADMIN_PASSWORD)
        .args([
            "history",
            "add",
            "latency.json",
            "other.json",
            "--db",
            &short,
        ])
        .current_dir(home.path()));
    assert_eq!(code, 0, "{out}{err}");
    let compare = |kind: &[&str]| {
        run(headroom_for(home.path())
            .env("PGPASSWORD", ADMIN_PASSWORD)
            .args([
                "compare",
                "board-005:latest",
                "board-006:latest",
                "--db",
                &short,
            ])
            .args(kind))
    };
    let (code, _, err) = compare(&[]);
    assert_eq!(
        code, 1,
        "the newest runs are a latency and a disk run: {err}"
    );
    let (code, out, err) = compare(&["--kind", "disk"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("250.0") && out.contains("200.0"), "{out}");
    let (code, _, err) = compare(&["--kind", "net"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("board-005:latest: the history postgresql://lab@/lab?host=")
            && err.contains("holds no run of kind net of a host named \"board-005\""),
        "{err}"
    );

    // The password given in the string itself: it works, and what names the database in the
    // output has `***` in its place.
    let with_password = format!("{keywords} password='{ADMIN_PASSWORD}'");
    let (code, out, err) =
        run(headroom_for(home.path()).args(["history", "--json", "--db", &with_password]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("password=***") && out.contains("board-005"),
        "{out}"
    );
    assert!(
        !out.contains(ADMIN_PASSWORD) && !err.contains(ADMIN_PASSWORD),
        "{out}{err}"
    );

    // A wrong password in the key=value form: one sentence naming the database without it.
    for db in [
        format!("{keywords} password=Wr0ngHunter2"),
        format!(
            "postgres://lab:Wr0ngHunter2@/lab?host={dir}&port={}",
            server.port
        ),
    ] {
        let (code, out, err) = run(headroom_for(home.path()).args(["history", "--db", &db]));
        assert_eq!(code, 1, "{out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("cannot connect to the history postgresql://lab@/lab?host="),
            "{err}"
        );
        assert!(
            !err.contains("Wr0ngHunter2") && !out.contains("Wr0ngHunter2"),
            "{err}"
        );
    }
    // An unknown parameter is named; the password beside it is not.
    let (code, _, err) = run(headroom_for(home.path()).args([
        "history",
        "--db",
        &format!("{keywords} password=Wr0ngHunter2 colour=blue"),
    ]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("\"colour\"") && err.contains("password=***"),
        "{err}"
    );
    assert!(!err.contains("Wr0ngHunter2"), "{err}");
}

/// A document one board stored, whose host strings carry terminal escapes and HTML, reaches
/// another board's reader of the lab's database (`history`, `history show`, `report` as text
/// and HTML, `compare HOST:latest`) only escaped: no escape byte on a terminal, no tag in
/// the HTML.
#[test]
fn a_hostile_document_in_the_lab_cannot_inject_into_another_boards_output() {
    let Some(server) = Server::start() else {
        return;
    };
    server.sql("postgres", "CREATE DATABASE lab");
    let home = tempfile::tempdir().unwrap();
    let url = server.admin_url("lab");
    let mut hostile: Value = serde_json::from_str(&document(9, "6.6.0", 0, 1.0)).unwrap();
    hostile["host"]["hostname"] = "evil\u{1b}]0;pwned\u{7}<script>alert(1)</script>|".into();
    hostile["host"]["model"] = "<img src=x onerror=alert(2)>\u{1b}[2J\u{1b}[31mRK3588".into();
    hostile["host"]["serial"] = "\u{9b}31mSN\r\nforged line".into();
    hostile["target"]["given"] = "/mnt/\u{1b}[8mhidden<b>x</b>".into();
    let docs = home.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("evil.json"), hostile.to_string()).unwrap();
    std::fs::write(docs.join("good.json"), document(1, "6.6.0", 0, 300.0)).unwrap();
    // The hostile board's import, as its job in the lab would make it.
    let (code, out, err) = run(headroom_for(home.path()).args([
        "history",
        "import",
        docs.to_str().unwrap(),
        "--db",
        &url,
    ]));
    assert_eq!(code, 0, "{out}{err}");

    let raw = |what: &str, text: &str| {
        for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\r'] {
            assert!(!text.contains(bad), "{what} holds {bad:?} raw: {text:?}");
        }
    };
    // The other board's engineer reads the database.
    let reader = |args: &[&str]| {
        let (code, out, err) = run(headroom_for(home.path()).args(args));
        raw(&format!("{args:?} stdout"), &out);
        raw(&format!("{args:?} stderr"), &err);
        (code, out, err)
    };
    let (code, out, _) = reader(&["history", "--db", &url]);
    assert_eq!(code, 0);
    assert!(out.contains("evil") && out.contains("board-001"), "{out}");
    let id = out
        .lines()
        .find(|l| l.contains("evil"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let (code, out, err) = reader(&["history", "show", &id, "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("RK3588"), "{out}");
    assert!(!out.contains("<script>") && !out.contains("<img"), "{out}");
    let (code, out, err) = reader(&["report", &id, "--db", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("<script>") && !out.contains("<img"), "{out}");

    let html = home.path().join("evil.html");
    let (code, _, err) = reader(&[
        "report",
        &id,
        "--db",
        &url,
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    raw("the HTML report", &page);
    assert!(page.contains("evil"), "the hostname is shown");
    for tag in ["<script>alert", "<img src=x", "<b>x</b>"] {
        assert!(!page.contains(tag), "{tag} in the HTML report");
    }
    assert!(
        page.contains("&lt;script&gt;alert(1)"),
        "escaped, not dropped"
    );

    // Side by side with a good board, by machine-id (the hostname is not a name to type).
    let (code, out, err) = reader(&[
        "compare",
        "00095be0:latest",
        "board-001:latest",
        "--db",
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("evil") && out.contains("board-001"), "{out}");
    assert!(!out.contains("<script>") && !out.contains("<img"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("forged line")),
        "a line of the document's own: {out}"
    );
}
