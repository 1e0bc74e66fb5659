//! Metrics for Prometheus, checked by the real readers: `promtool check metrics` (Debian's
//! `prometheus` package) on the Prometheus text of every document kind, the OpenMetrics
//! reference parser (PyPI `prometheus_client.openmetrics.parser`) on the OpenMetrics text,
//! and a Prometheus server scraping node_exporter's textfile collector over headroom's
//! `--textfile-dir` output.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testsupport::cmd::*;
use testsupport::fixtures::own;

/// `promtool check metrics` on `text`: `Ok` or its complaint.
fn promtool(text: &str) -> Result<(), String> {
    let out = fed(
        Command::new("promtool").args(["check", "metrics"]),
        text.as_bytes(),
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr))
    }
}

/// The OpenMetrics reference parser on `text`: the number of samples, or its error.
fn openmetrics_parse(python: &Path, text: &str) -> Result<usize, String> {
    const PARSE: &str = "import sys\n\
from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
print(sum(len(f.samples) for f in text_string_to_metric_families(sys.stdin.read())))\n";
    let out = fed(Command::new(python).args(["-c", PARSE]), text.as_bytes());
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn has_promtool() -> bool {
    testsupport::skip::unless(
        testsupport::process::on_path("promtool"),
        "promtool (Debian's prometheus package) is not installed",
    )
}

/// The Python that .ci/run prepares in target/py-checks (`HEADROOM_PY_CHECKS` overrides it).
fn py_checks() -> Option<PathBuf> {
    let p = std::env::var_os("HEADROOM_PY_CHECKS")
        .map(PathBuf::from)
        .unwrap_or_else(|| testsupport::fixtures::repo_root().join("target/py-checks/bin/python"));
    testsupport::skip::unless(
        p.exists(),
        &format!("{} (a venv with prometheus-client) is missing", p.display()),
    )
    .then_some(p)
}

fn stdout(cmd: &mut assert_cmd::Command) -> String {
    String::from_utf8(stdout_of(cmd)).unwrap()
}

/// The family names of a text's samples (`headroom_x_total{...} 1` -> `headroom_x_total`).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

#[test]
fn every_document_kind_passes_promtool_and_the_openmetrics_parser() {
    if !has_promtool() {
        return;
    }
    let Some(python) = py_checks() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = own("results");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    inputs.sort();
    // The kinds no fixture holds: compare, history and a report of several documents.
    let compare = dir.path().join("compare.json");
    let text = stdout(
        headroom()
            .args(["compare", "--json"])
            .arg(results.join("disk-peak.json"))
            .arg(results.join("disk-null-dd.json")),
    );
    std::fs::write(&compare, text).unwrap();
    let history = dir.path().join("history.json");
    let text = stdout(
        headroom()
            .args(["history", "--json", "--db"])
            .arg(dir.path().join("empty.sqlite")),
    );
    std::fs::write(&history, text).unwrap();
    let several = dir.path().join("report.json");
    let text = stdout(
        headroom()
            .args(["report", "--json"])
            .arg(results.join("net-loopback-tcp.json"))
            .arg(results.join("latency-2-threads.json")),
    );
    std::fs::write(&several, text).unwrap();
    inputs.extend([compare, history, several]);

    let mut kinds = BTreeSet::new();
    for input in &inputs {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(input).unwrap()).unwrap();
        let kind = doc["kind"].as_str().unwrap().to_string();
        let prom = stdout(
            headroom()
                .args(["report", "--format", "prometheus"])
                .arg(input),
        );
        promtool(&prom).unwrap_or_else(|e| panic!("{}: promtool: {e}\n{prom}", input.display()));
        let om = stdout(
            headroom()
                .args(["report", "--format", "openmetrics"])
                .arg(input),
        );
        assert!(om.ends_with("# EOF\n"), "{}", input.display());
        let n = openmetrics_parse(&python, &om)
            .unwrap_or_else(|e| panic!("{}: {e}\n{om}", input.display()));
        assert!(n > 0, "{}: no sample", input.display());
        // Each kind's own figures are there.
        let names = sample_names(&prom);
        let must: &[&str] = match kind.as_str() {
            "disk" | "net" | "mmio" | "video" => &["headroom_throughput_bytes_per_second"],
            "latency" => &["headroom_wakeup_latency_seconds", "headroom_wakeups_total"],
            "count" => &["headroom_event_value"],
            "audit" if input.to_string_lossy().contains("nvme") => &[
                "headroom_pcie_link_speed_transfers_per_second",
                "headroom_pcie_link_downgraded",
            ],
            "audit" => &["headroom_usb_device_speed_bytes_per_second"],
            "report" => &[
                "headroom_throughput_bytes_per_second",
                "headroom_wakeup_latency_seconds",
            ],
            _ => &["headroom_run_timestamp_seconds"],
        };
        for m in must {
            assert!(names.contains(*m), "{}: no {m} in\n{prom}", input.display());
        }
        kinds.insert(kind);
    }
    let every = [
        "audit",
        "ceiling",
        "compare",
        "count",
        "disk",
        "history",
        "latency",
        "mmio",
        "net",
        "path",
        "pmu_list",
        "report",
        "survey",
        "survey-plan",
        "video",
        "watch",
    ];
    assert_eq!(kinds, every.iter().map(|k| k.to_string()).collect());
}

/// A copy of sd-nvme-downgraded-sata whose NVMe has AER errors counted and a driver whose
/// name is hostile (a quote, a brace, a newline and a fake sample line).
fn hostile_tree(dir: &Path) -> PathBuf {
    let copy = dir.join("tree");
    let ok = Command::new("cp")
        .arg("-a")
        .arg(own("sysfs/sd-nvme-downgraded-sata"))
        .arg(&copy)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let f = copy.join("sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0");
    std::fs::write(
        f.join("aer_dev_correctable"),
        "RxErr 3\nBadTLP 2\nBadDLLP 0\nTOTAL_ERR_COR 5\n",
    )
    .unwrap();
    std::fs::write(
        f.join("aer_dev_nonfatal"),
        "DLP 0\nCmpltTO 1\nTOTAL_ERR_NONFATAL 1\n",
    )
    .unwrap();
    std::fs::write(f.join("aer_dev_fatal"), "DLP 0\nTOTAL_ERR_FATAL 0\n").unwrap();
    copy
}

fn with_hostile_driver(tree: &Path) -> &'static str {
    const NAME: &str = "ev\"il}\nheadroom_fake 1";
    let drivers = tree.join("sys/bus/pci/drivers");
    std::fs::create_dir_all(drivers.join(NAME)).unwrap();
    let link = tree.join("sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0/driver");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(format!("../../../../bus/pci/drivers/{NAME}"), &link).unwrap();
    NAME
}

#[test]
fn the_audit_names_the_downgraded_link_and_every_aer_counter() {
    let dir = tempfile::tempdir().unwrap();
    let tree = hostile_tree(dir.path());
    let prom = stdout(
        headroom()
            .args(["audit", "--format", "prometheus", "--root"])
            .arg(&tree),
    );
    let device = "Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3/980PRO";
    let ids = format!(
        "address=\"0000:01:00.0\",upstream=\"0000:00:1c.0\",device=\"{device}\",driver=\"nvme\""
    );
    for line in [
        format!("headroom_pcie_link_downgraded{{{ids}}} 1.0"),
        format!("headroom_pcie_link_speed_transfers_per_second{{{ids},state=\"current\"}} 8000000000.0"),
        format!("headroom_pcie_link_speed_transfers_per_second{{{ids},state=\"capable\"}} 16000000000.0"),
        format!("headroom_pcie_link_width_lanes{{{ids},state=\"current\"}} 1.0"),
        format!("headroom_pcie_link_width_lanes{{{ids},state=\"capable\"}} 4.0"),
    ] {
        assert!(prom.lines().any(|l| l == line), "no {line} in\n{prom}");
    }
    let aer = |severity: &str, error: &str, n: u64| {
        format!(
            "headroom_pcie_aer_errors_total{{address=\"0000:01:00.0\",device=\"{device}\",\
             driver=\"nvme\",severity=\"{severity}\",error=\"{error}\"}} {n}"
        )
    };
    for line in [
        aer("correctable", "RxErr", 3),
        aer("correctable", "BadTLP", 2),
        aer("correctable", "BadDLLP", 0),
        aer("nonfatal", "CmpltTO", 1),
        aer("fatal", "DLP", 0),
    ] {
        assert!(prom.lines().any(|l| l == line), "no {line} in\n{prom}");
    }
    // The TOTAL_ERR_* lines are sums, left to PromQL.
    assert!(!prom.contains("TOTAL_ERR"), "{prom}");
    // The current ceiling (8 GT/s x1) against the capable one (16 GT/s x4), writes: the
    // audit's own figures.
    let audit: serde_json::Value =
        json_of(headroom().args(["audit", "--json", "--root"]).arg(&tree));
    let ceiling = &audit["pci"]["links"][0]["ceiling"];
    let current = ceiling["current"]["effective_write_bytes_per_sec"]
        .as_f64()
        .unwrap();
    let line = prom
        .lines()
        .find(|l| {
            l.starts_with("headroom_pcie_link_ceiling_bytes_per_second{")
                && l.contains("state=\"current\",direction=\"write\"")
        })
        .unwrap();
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((value - current).abs() < 1.0, "{line} against {current}");
    if has_promtool() {
        promtool(&prom).unwrap();
    }

    // A hostile driver name stays one label value: escaped by the encoder, no sample
    // injected.
    let name = with_hostile_driver(&tree);
    assert!(name.contains('\n'));
    for format in ["prometheus", "openmetrics"] {
        let text = stdout(
            headroom()
                .args(["audit", "--format", format, "--root"])
                .arg(&tree),
        );
        assert!(
            text.contains(r#"driver="ev\"il}\nheadroom_fake 1""#),
            "{text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("headroom_fake")),
            "{text}"
        );
        if format == "prometheus" && has_promtool() {
            promtool(&text).unwrap();
        }
        if format == "openmetrics" {
            if let Some(python) = py_checks() {
                openmetrics_parse(&python, &text).unwrap();
            }
        }
    }
}

/// A driver whose name sets the terminal's title (ESC ] 0 ; ... BEL) and holds a C1 CSI:
/// what a hostile sysfs or a document may carry into a label value.
const TITLE_DRIVER: &str = "ev\x1b]0;TITLE\x07il\u{9b}2J";

#[test]
fn a_control_character_in_a_label_is_escaped_in_the_formats_own_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let tree = hostile_tree(dir.path());
    let drivers = tree.join("sys/bus/pci/drivers");
    std::fs::create_dir_all(drivers.join(TITLE_DRIVER)).unwrap();
    let link = tree.join("sys/devices/pci0000:00/0000:00:1c.0/0000:01:00.0/driver");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(format!("../../../../bus/pci/drivers/{TITLE_DRIVER}"), &link)
        .unwrap();
    let json = dir.path().join("audit.json");
    let text = stdout(headroom().args(["audit", "--json", "--root"]).arg(&tree));
    // The JSON on stdout is JSON (a C1 control as `\u009b`), and the name reads back whole.
    let doc: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("audit --json is not JSON: {e}"));
    assert!(text.contains(r"\u001b]0;TITLE\u0007il\u009b2J"));
    let drivers: Vec<&str> = doc["pci"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["driver"].as_str())
        .collect();
    assert!(drivers.contains(&TITLE_DRIVER), "{drivers:?}");
    std::fs::write(&json, &text).unwrap();
    for args in [
        vec!["audit", "--root", tree.to_str().unwrap(), "--format"],
        vec!["report", json.to_str().unwrap(), "--format"],
    ] {
        for format in ["prometheus", "openmetrics"] {
            let text = stdout(headroom().args(&args).arg(format));
            let raw: Vec<char> = text
                .chars()
                .filter(|c| c.is_control() && *c != '\n')
                .collect();
            assert!(raw.is_empty(), "{args:?} {format}: raw {raw:?} in\n{text}");
            // The value holds the characters as visible text; its backslashes are the format's
            // own escape (`\\`), not `\x1b`, which neither format has.
            assert!(
                text.contains(r#"driver="ev\\x1b]0;TITLE\\x07il\\u{9b}2J""#),
                "{args:?} {format}:\n{text}"
            );
            if format == "prometheus" && has_promtool() {
                promtool(&text).unwrap_or_else(|e| panic!("{args:?}: promtool: {e}\n{text}"));
            }
            if format == "openmetrics" {
                if let Some(python) = py_checks() {
                    openmetrics_parse(&python, &text).unwrap();
                }
            }
        }
    }
}

#[test]
fn textfile_dir_writes_one_complete_file_per_kind() {
    let dir = tempfile::tempdir().unwrap();
    let tree = own("sysfs/sd-nvme-downgraded-sata");
    let out = dir.path().join("textfiles");
    std::fs::create_dir(&out).unwrap();
    let o = output_ok(
        headroom()
            .args(["audit", "--root"])
            .arg(&tree)
            .arg("--textfile-dir")
            .arg(&out),
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    output_ok(
        headroom()
            .args([
                "bench",
                "mem",
                "--size",
                "16M",
                "--width",
                "64",
                "--duration",
                "50ms",
            ])
            .args(["--no-save", "--textfile-dir"])
            .arg(&out),
    );
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // No temporary file left beside them.
    assert_eq!(files, ["headroom-mmio.prom", "headroom.prom"]);
    let audit = std::fs::read_to_string(out.join("headroom.prom")).unwrap();
    assert!(audit.contains("headroom_pcie_link_downgraded{"), "{audit}");
    let mem = std::fs::read_to_string(out.join("headroom-mmio.prom")).unwrap();
    assert!(
        mem.contains("headroom_throughput_bytes_per_second{kind=\"mmio\""),
        "{mem}"
    );
    // Readable by node_exporter's own user, not only root.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(out.join("headroom.prom"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o}");
    if has_promtool() {
        promtool(&audit).unwrap();
        promtool(&mem).unwrap();
    }
    // A directory that is not there is refused before any work.
    let mut cmd = headroom();
    cmd.args(["audit", "--textfile-dir", "no-such-dir"]);
    fails_saying(&mut cmd, 2, "--textfile-dir no-such-dir: no such directory");
    let mut cmd = headroom();
    cmd.args([
        "bench",
        "mem",
        "--size",
        "16M",
        "--textfile-dir",
        "no-such-dir",
    ]);
    fails_saying(&mut cmd, 2, "--textfile-dir no-such-dir: no such directory");
}

/// A child process killed and reaped when dropped, also when the test fails.
struct Service {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Service {
    fn start(name: &'static str, cmd: &mut Command, log: PathBuf) -> Service {
        let f = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Service { name, child, log }
    }

    fn log(&self) -> String {
        format!(
            "{} log:\n{}",
            self.name,
            std::fs::read_to_string(&self.log).unwrap_or_default()
        )
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `path` from 127.0.0.1:`port` (HTTP/1.0, the server closes): the body, or `None` when
/// nothing answers yet.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_string())
}

/// `query` as a URL query value (PromQL uses spaces, `=`, `{`, quotes).
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus' answer to an instant query: the result vector.
fn query(port: u16, promql: &str) -> Vec<serde_json::Value> {
    let body =
        http_get(port, &format!("/api/v1/query?query={}", encode(promql))).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

#[test]
fn prometheus_scrapes_the_textfile_through_node_exporter() {
    let tools = ["prometheus", "prometheus-node-exporter"];
    if !testsupport::skip::unless(
        tools.iter().all(|t| testsupport::process::on_path(t)),
        "prometheus and prometheus-node-exporter (Debian) are not installed",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = hostile_tree(dir.path());
    let textfiles = dir.path().join("textfiles");
    std::fs::create_dir(&textfiles).unwrap();
    output_ok(
        headroom()
            .args(["audit", "--root"])
            .arg(&tree)
            .arg("--textfile-dir")
            .arg(&textfiles),
    );

    let exporter_port = testsupport::net::free_port();
    let _exporter = Service::start(
        "node_exporter",
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{exporter_port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                textfiles.display()
            )),
        dir.path().join("node_exporter.log"),
    );
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .unwrap();
    let prometheus_port = testsupport::net::free_port();
    let prometheus = Service::start(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}")),
        dir.path().join("prometheus.log"),
    );
    // Bounded: Prometheus starts, scrapes every second; 90 s is far more than it needs.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut downgraded = Vec::new();
    while Instant::now() < deadline {
        downgraded = query(prometheus_port, "headroom_pcie_link_downgraded == 1");
        if !downgraded.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        downgraded.len(),
        1,
        "Prometheus never returned the downgraded link: {downgraded:?}\n{}\n{}",
        prometheus.log(),
        _exporter.log()
    );
    let metric = &downgraded[0]["metric"];
    assert_eq!(metric["address"], "0000:01:00.0");
    assert_eq!(metric["upstream"], "0000:00:1c.0");
    assert_eq!(metric["driver"], "nvme");
    assert_eq!(metric["job"], "node");

    let aer = query(prometheus_port, "headroom_pcie_aer_errors_total > 0");
    let mut seen: Vec<(String, String, String, String)> = aer
        .iter()
        .map(|r| {
            let m = &r["metric"];
            (
                m["address"].as_str().unwrap().to_string(),
                m["severity"].as_str().unwrap().to_string(),
                m["error"].as_str().unwrap().to_string(),
                r["value"][1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    let want =
        |s: &str, e: &str, n: &str| ("0000:01:00.0".to_string(), s.into(), e.into(), n.into());
    assert_eq!(
        seen,
        [
            want("correctable", "BadTLP", "2"),
            want("correctable", "RxErr", "3"),
            want("nonfatal", "CmpltTO", "1"),
        ]
    );
    // The sum by severity, as an alert would ask.
    let sum = query(
        prometheus_port,
        "sum by (address) (headroom_pcie_aer_errors_total)",
    );
    assert_eq!(sum.len(), 1);
    assert_eq!(sum[0]["value"][1], "6");
}

/// While `headroom watch --textfile-dir` runs, a Prometheus server scraping node_exporter's
/// textfile collector sees the AER errors the kernel counts, by function, severity and name,
/// under node_exporter's pcidevice labels.
#[test]
fn prometheus_sees_the_errors_a_running_watch_counts() {
    let tools = ["prometheus", "prometheus-node-exporter"];
    if !testsupport::skip::unless(
        tools.iter().all(|t| testsupport::process::on_path(t)),
        "prometheus and prometheus-node-exporter (Debian) are not installed",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("root");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(own("sysfs/qemu-q35-lab"))
        .arg(&tree)
        .status()
        .unwrap();
    assert!(copied.success());
    let textfiles = dir.path().join("textfiles");
    std::fs::create_dir(&textfiles).unwrap();
    let mut watch = testsupport::cmd::headroom_process();
    watch
        .args([
            "watch",
            "--interval",
            "200ms",
            "--for",
            "5m",
            "--no-save",
            "--root",
        ])
        .arg(&tree)
        .arg("--textfile-dir")
        .arg(&textfiles);
    let watch = Service::start("headroom watch", &mut watch, dir.path().join("watch.log"));
    let exporter_port = testsupport::net::free_port();
    let exporter = Service::start(
        "node_exporter",
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{exporter_port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                textfiles.display()
            )),
        dir.path().join("node_exporter.log"),
    );
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .unwrap();
    let prometheus_port = testsupport::net::free_port();
    let prometheus = Service::start(
        "prometheus",
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}")),
        dir.path().join("prometheus.log"),
    );
    // The root port 0000:00:12.0 counts errors while the watch runs.
    let port = tree.join("sys/devices/pci0000:00/0000:00:12.0");
    std::fs::write(
        port.join("aer_dev_correctable"),
        "RxErr 12\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\n\
         HeaderOF 0\nTOTAL_ERR_COR 13\n",
    )
    .unwrap();
    let nonfatal = std::fs::read_to_string(port.join("aer_dev_nonfatal"))
        .unwrap()
        .replace("CmpltTO 0", "CmpltTO 2")
        .replace("TOTAL_ERR_NONFATAL 0", "TOTAL_ERR_NONFATAL 2");
    std::fs::write(port.join("aer_dev_nonfatal"), nonfatal).unwrap();
    // Bounded: Prometheus starts, scrapes every second; 90 s is far more than it needs.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        seen = query(prometheus_port, "headroom_pcidevice_aer_errors_total > 0")
            .iter()
            .map(|r| {
                let m = &r["metric"];
                let label = |k: &str| m[k].as_str().unwrap_or_default().to_string();
                (
                    format!(
                        "{}:{}:{}.{}",
                        label("segment"),
                        label("bus"),
                        label("device"),
                        label("function")
                    ),
                    label("severity"),
                    label("error"),
                    r["value"][1].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        if seen.len() == 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    seen.sort();
    let want =
        |s: &str, e: &str, n: &str| ("0000:00:12.0".to_string(), s.into(), e.into(), n.into());
    assert_eq!(
        seen,
        [
            want("correctable", "BadTLP", "1"),
            want("correctable", "RxErr", "12"),
            want("nonfatal", "CmpltTO", "2"),
        ],
        "{}\n{}\n{}",
        prometheus.log(),
        exporter.log(),
        watch.log()
    );
    let width = query(
        prometheus_port,
        "headroom_pcidevice_current_link_width{bus=\"05\",device=\"00\",function=\"0\"}",
    );
    assert_eq!(width.len(), 1, "{width:?}");
    assert_eq!(width[0]["value"][1], "1");
    drop(watch);
}
