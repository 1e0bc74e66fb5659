#![allow(clippy::unwrap_used)]
//! The HTML report in a real headless Chromium: it loads with no console error and no
//! network request, and its plots are drawn. Skipped with a note when chromium is missing,
//! unless CI=true.

use report::Summary;
use serde_json::json;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;
use common::summary as from_fixture;
// The rest of what the tests share: fixture paths and values, survey parts.
use common::*;

fn chromium() -> Option<PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        });
        if found.is_some() {
            return found;
        }
    }
    assert!(
        !ci,
        "chromium is not installed and CI=true: `apt-get install chromium`"
    );
    testsupport::skip::skip("chromium is not installed");
    None
}

/// A disk document with `n` tests against a 440 MB/s ceiling: the measured document of
/// rpi5-gen3.json with its one test repeated at other block sizes, directions and rates
/// (its envelope is replaced by `wrap`'s).
fn disk_doc(n: usize) -> Summary {
    let mut body: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("rpi5-gen3.json")).unwrap()).unwrap();
    let one = body["tests"][0].clone();
    let tests: Vec<_> = (0..n)
        .map(|i| {
            let mb = 100.0 + (i * 37 % 300) as f64;
            let mut t = one.clone();
            t["spec"]["label"] = format!("dd {}K", 4 << (i % 8)).into();
            t["spec"]["block_size"] = (4096 << (i % 8)).into();
            t["spec"]["workload"]["read_percent"] = if i % 2 == 0 { 100 } else { 0 }.into();
            let run = t["runs"][0].clone();
            t["runs"] = json!([run, run]);
            t["runs"][0]["mb_per_s"] = mb.into();
            t["runs"][1]["mb_per_s"] = (mb * 0.97).into();
            t["mean_mb_per_s"] = (mb * 0.985).into();
            t["best_run"] = 0.into();
            t["efficiency"] = serde_json::Value::Null;
            t
        })
        .collect();
    body["tests"] = tests.into();
    body.as_object_mut().unwrap().remove("path");
    body["ceiling"] = json!({"read_bytes_per_sec": 434.0e6, "write_bytes_per_sec": 440.0e6, "full_duplex": true, "bottleneck": "PCIe 5 GT/s x1"});
    let doc = report::document::wrap(
        report::document::DocumentKind::Disk,
        "0.1.0",
        model::system::Host::default(),
        &body,
    )
    .unwrap();
    report::kinds::summarize(&doc, &format!("{n}-tests.json")).unwrap()
}

struct Loaded {
    stderr: String,
    png: Vec<u8>,
    dom: String,
    requests: Vec<String>,
}

/// Run chromium on `html` with every request sent to a local proxy that counts them.
fn load(chromium: &Path, html: &Path, height: u32, dir: &Path) -> Loaded {
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = proxy.local_addr().unwrap().port();
    proxy.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicUsize::new(0));
    let s = stop.clone();
    // Each request is read (for the failure message) and refused by closing the connection.
    let counter = std::thread::spawn(move || {
        let mut seen = Vec::new();
        while s.load(Ordering::Relaxed) == 0 {
            match proxy.accept() {
                Ok((mut conn, _)) => {
                    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
                    let mut buf = [0u8; 512];
                    let n = conn.read(&mut buf).unwrap_or(0);
                    let text = String::from_utf8_lossy(&buf[..n]);
                    seen.push(text.lines().next().unwrap_or("").to_string());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        seen
    });
    let url = format!("file://{}", html.display());
    let run = |extra: &[String]| {
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            // Every request (loopback too) goes to the counting proxy; names resolve nowhere.
            &format!("--proxy-server=http://127.0.0.1:{port}"),
            "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            &format!("--window-size=1000,{height}"),
        ])
        .args(extra)
        .arg(&url)
        .current_dir(dir)
        // Files, not pipes: chromium's log could fill a pipe nobody reads while it runs.
        .stdout(Stdio::from(std::fs::File::create(dir.join("out")).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(dir.join("err")).unwrap()));
        let mut child = cmd.spawn().unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium hangs on {url}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = std::fs::read_to_string(dir.join("out")).unwrap();
        let err = std::fs::read_to_string(dir.join("err")).unwrap();
        (out, err)
    };
    let shot = dir.join("shot.png");
    let (_, err1) = run(&[format!("--screenshot={}", shot.display())]);
    let (dom, err2) = run(&["--dump-dom".to_string()]);
    stop.store(1, Ordering::Relaxed);
    let requests = counter.join().unwrap();
    Loaded {
        stderr: err1 + &err2,
        png: std::fs::read(&shot).unwrap_or_default(),
        dom,
        requests,
    }
}

/// Distinct colours and the number of pixels of `rgb` or near it (a thin line's
/// anti-aliased edge blends it with white).
fn colours(png_bytes: &[u8], rgb: [u8; 3]) -> (usize, usize) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3, "an RGB screenshot");
    let mut seen = std::collections::HashSet::new();
    let mut exact = 0;
    for px in buf[..info.buffer_size()].chunks(step) {
        seen.insert([px[0], px[1], px[2]]);
        let distance: u32 = (0..3).map(|i| u32::from(px[i].abs_diff(rgb[i]))).sum();
        if distance <= 60 {
            exact += 1;
        }
    }
    (seen.len(), exact)
}

#[test]
fn the_html_report_renders_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let cases: Vec<(&str, Vec<Summary>, usize, u32)> = vec![
        ("one test", vec![disk_doc(1)], 2, 2200),
        // Eight block sizes: the per-block-size plot too, below a throughput table and a
        // latency table of a hundred rows each (CPU, IOPS and cross-check columns too).
        ("a hundred tests", vec![disk_doc(100)], 3, 13000),
        (
            "the Raspberry Pi pair",
            vec![
                from_fixture("rpi5-gen2.json"),
                from_fixture("rpi5-gen3.json"),
            ],
            4,
            4000,
        ),
        (
            "latency",
            vec![from_fixture("latency-2-threads.json")],
            1,
            2200,
        ),
    ];
    let bar = report::html::BAR;
    for (what, summaries, plots, height) in cases {
        let dir = tempfile::tempdir().unwrap();
        let html = report::html::render(&summaries).unwrap();
        // Nothing that could reach out: no script, no link, no source, no CSS url().
        for bad in ["<script", "src=", "href=", "url(", "@import", "<link"] {
            assert!(!html.contains(bad), "{what}: the HTML contains {bad}");
        }
        let file = dir.path().join("report.html");
        if let Some(keep) = std::env::var_os("HEADROOM_KEEP_HTML") {
            std::fs::write(Path::new(&keep).join(format!("{what}.html")), &html).unwrap();
        }
        report::write_atomic(&file, html.as_bytes()).unwrap();
        let l = load(&chromium, &file, height, dir.path());
        assert!(l.requests.is_empty(), "{what}: requests: {:?}", l.requests);
        let console: Vec<&str> = l.stderr.lines().filter(|x| x.contains("CONSOLE")).collect();
        assert!(console.is_empty(), "{what}: console messages: {console:?}");
        assert_eq!(
            l.dom.matches("<svg").count(),
            plots,
            "{what}: plots in the DOM"
        );
        assert!(l.dom.contains("headroom report"), "{what}");
        let (distinct, bar_pixels) = colours(&l.png, [bar.0, bar.1, bar.2]);
        assert!(
            distinct > 20,
            "{what}: the screenshot is nearly blank ({distinct} colours)"
        );
        assert!(
            bar_pixels > 100,
            "{what}: the plots' colour covers only {bar_pixels} pixels"
        );
    }
}

/// A test-only probe appended to a report (the report itself has no script): after layout,
/// it writes what runs off the page or off a plot into `<pre id="probe">`, which
/// `--dump-dom` shows: tables wider than the window, SVG texts outside their plot's box.
const PROBE: &str = r#"<script>
const out = [];
const w = document.documentElement.clientWidth;
if (document.documentElement.scrollWidth > w) out.push("page scrolls sideways: " + document.documentElement.scrollWidth + " > " + w);
document.querySelectorAll("table").forEach((t, i) => {
  const r = t.getBoundingClientRect();
  if (r.right > w) out.push("table " + i + " (" + (t.querySelector("th") || t).textContent.slice(0, 30) + ") ends at " + Math.round(r.right) + " > " + w);
});
document.querySelectorAll("svg").forEach((svg, i) => {
  const s = svg.getBoundingClientRect();
  svg.querySelectorAll("text").forEach((t) => {
    const r = t.getBoundingClientRect();
    if (r.left < s.left - 1 || r.right > s.right + 1 || r.top < s.top - 1 || r.bottom > s.bottom + 1) out.push("svg " + i + ": '" + t.textContent.trim() + "' outside the plot");
  });
});
const pre = document.createElement("pre");
pre.id = "probe";
pre.textContent = "PROBE[" + out.join("; ") + "]";
document.body.appendChild(pre);
</script>"#;

/// The probe's findings in a page's DOM: empty when everything fits.
fn probe_result(dom: &str) -> &str {
    // The last one: the script's own source holds the marker too.
    let start = dom
        .rfind("PROBE[")
        .map(|i| i + 6)
        .unwrap_or_else(|| panic!("no probe: {dom}"));
    let end = dom[start..].find(']').map(|e| start + e).unwrap();
    &dom[start..end]
}

#[test]
fn tables_fit_the_page_and_labels_stay_in_their_plots() {
    // The Block table ran off the page (Mounts off-screen), net plots'
    // legends sat on the bars and the ceiling label ran past the plot, max_hw_sectors_kb
    // read 2147483647 where the terminal says "no limit", a 1 MiB device read "0.0 GiB", and
    // the latency histogram ended at its limit without its overflow count.
    let Some(chromium) = chromium() else { return };
    let mut audit = fixture_value("audit-nvme-downgraded.json");
    audit["block"]["devices"][0]["queue"]["max_hw_sectors_kb"] = 2_147_483_647u64.into();
    audit["block"]["devices"][0]["mounts"] = json!([{"mount_point": "/media/a rather long mount point/of a usb stick", "fs_type": "vfat"}]);
    let audit = report::document::wrap(
        report::document::DocumentKind::Audit,
        "0.1.0",
        model::system::Host::default(),
        &audit,
    )
    .unwrap();
    let mut latency = fixture_value("latency-2-threads.json");
    // `bench latency -h 200`: the wake-ups at or above 200 us counted as overflow.
    testsupport::latency::cut_histograms(&mut latency, 200);
    let latency = report::document::wrap(
        report::document::DocumentKind::Latency,
        "0.1.0",
        model::system::Host::default(),
        &latency,
    )
    .unwrap();
    let summaries = vec![
        report::kinds::summarize(&audit, "audit.json").unwrap(),
        from_fixture("net-shaped-tcp.json"),
        report::kinds::summarize(&latency, "latency-h200.json").unwrap(),
        from_fixture("disk-peak.json"),
    ];
    let html = report::html::render(&summaries).unwrap();
    assert!(!html.contains("<script"), "the report has no script");
    // What the terminal says, the table says.
    assert!(
        html.contains("<td class=\"n\">no limit</td>"),
        "max_hw_sectors_kb"
    );
    assert!(!html.contains("2147483647"));
    assert!(html.contains("<td class=\"n\">1.0 MiB</td>") && !html.contains(">0.0<"));
    // Each plot's legend is HTML under it; the ceiling's full basis is there, its value on
    // the line inside the plot.
    assert!(html.contains("<figcaption class=\"legend\">"));
    assert!(html.contains("ceiling: tbf qdisc on va: rate 100.00 Mbit/s"));
    assert!(
        html.contains("\nceiling 11.8 MB/s\n</text>"),
        "the label on the line"
    );
    // The overflow is counted: in the axis, the legend and beside its points.
    assert!(html.contains("58 wake-ups above the histogram limit of 200 us"));
    assert!(html.contains("thread 1 (max 548 us; 39 wake-ups above 200 us)"));
    assert!(html.contains("\nabove 200 us\n</text>"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    report::write_atomic(
        &file,
        html.replace("</body>", &format!("{PROBE}</body>"))
            .as_bytes(),
    )
    .unwrap();
    if let Some(keep) = std::env::var_os("HEADROOM_KEEP_HTML") {
        std::fs::write(Path::new(&keep).join("fits.html"), &html).unwrap();
    }
    let l = load(&chromium, &file, 6000, dir.path());
    assert!(l.requests.is_empty(), "requests: {:?}", l.requests);
    assert_eq!(probe_result(&l.dom), "", "runs off the page or a plot");
    // The probe sees the overflow it looks for: a page with a too-wide table is caught.
    let wide = dir.path().join("wide.html");
    std::fs::write(
        &wide,
        format!(
            "<!DOCTYPE html><html><body><table><tr><td>{}</td></tr></table>{PROBE}</body></html>",
            "x".repeat(400)
        ),
    )
    .unwrap();
    let l = load(&chromium, &wide, 400, dir.path());
    assert!(probe_result(&l.dom).contains("ends at"), "{}", l.dom);
}

#[test]
fn a_survey_renders_in_chromium() {
    use model::survey::{fit, PartKind};
    use report::kinds::survey::SurveyDocument;
    let Some(chromium) = chromium() else { return };
    let parts = [
        ("audit", PartKind::Audit, "audit-nvme-downgraded.json"),
        ("disk nvme0n1", PartKind::Disk, "rpi5-gen2.json"),
        ("latency idle", PartKind::Latency, "latency-2-threads.json"),
    ];
    let plan = fit(
        600.0,
        parts
            .iter()
            .map(|(id, kind, _)| planned(id, *kind))
            .collect(),
    );
    let body = SurveyDocument {
        plan,
        parts: parts
            .iter()
            .map(|(id, kind, file)| ran(id, *kind, fixture_value(file)))
            .collect(),
        interrupted: false,
        seconds: None,
        summary: String::new(),
        conclusions: Vec::new(),
    };
    let doc = report::document::wrap(
        report::document::DocumentKind::Survey,
        "0.1.0",
        model::system::Host::default(),
        &body,
    )
    .unwrap();
    let intro = report::kinds::survey::html_intro(&doc, &body, "survey.json");
    let (docs, problems) = body.part_docs("survey.json");
    assert!(problems.is_empty(), "{problems:?}");
    let summaries: Vec<Summary> = docs.into_iter().map(|d| d.summary).collect();
    let html = report::html::render_with_intro(&intro, &summaries).unwrap();
    for bad in ["<script", "src=", "href=", "url(", "@import", "<link"] {
        assert!(!html.contains(bad), "the survey HTML contains {bad}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("survey.html");
    report::write_atomic(&file, html.as_bytes()).unwrap();
    let l = load(&chromium, &file, 5000, dir.path());
    assert!(l.requests.is_empty(), "requests: {:?}", l.requests);
    let console: Vec<&str> = l.stderr.lines().filter(|x| x.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    // The survey's summary and ranked conclusions come first, then each part's section
    // with the plots it has on its own (two for the dd run, one for latency).
    assert!(l.dom.contains("Survey of") && l.dom.contains("Conclusions, by what they cost"));
    assert!(
        l.dom.contains("88 % of its bandwidth lost to the link"),
        "{}",
        l.dom
    );
    assert_eq!(l.dom.matches("<svg").count(), 3, "plots in the DOM");
    let bar = report::html::BAR;
    let (distinct, bar_pixels) = colours(&l.png, [bar.0, bar.1, bar.2]);
    assert!(
        distinct > 20 && bar_pixels > 100,
        "{distinct} colours, {bar_pixels} bar pixels"
    );
}
