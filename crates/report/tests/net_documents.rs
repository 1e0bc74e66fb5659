#![allow(clippy::unwrap_used)]
//! `net` documents (tests/fixtures/results/net-*.json, written by `headroom bench net` on a
//! tbf-shaped veth pair): Markdown, HTML and compare read what the bench wrote.

use report::compare::compare;
use report::{Document, Summary};
use std::path::PathBuf;

fn summary(name: &str) -> Summary {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/results")
        .join(name);
    let doc = Document::read(&path).unwrap();
    Summary::of(&doc, name).unwrap()
}

#[test]
fn shaped_tcp_run_in_markdown_and_html() {
    let s = summary("net-shaped-tcp.json");
    assert_eq!(s.kind, "net");
    let c = s.ceiling.as_ref().unwrap();
    // 100 Mbit/s x 1448/1538 = 94.15 Mbit/s = 11.769 MB/s.
    assert!(
        (c.mb_s - 100e6 * 1448.0 / 1538.0 / 8.0 / 1e6).abs() < 1e-6,
        "{}",
        c.mb_s
    );
    assert_eq!(s.tests.len(), 1);
    let t = &s.tests[0];
    assert_eq!(t.name, "TCP client -> server");
    let e = t.efficiency.unwrap();
    assert!((0.95..=1.01).contains(&e), "{e}");
    // The rate over time: one step per interval, at most the ceiling's neighbourhood.
    assert_eq!(s.series.len(), 1);
    assert!(s.series[0].points.len() >= 4);
    let md = report::markdown::render(std::slice::from_ref(&s));
    assert!(md.contains("| TCP client -> server |"), "{md}");
    assert!(md.contains("GSO is limited"), "{md}");
    let html = report::html::render(&[s]).unwrap();
    assert!(html.contains("Rate over time") && html.contains("ceiling 11.8 MB/s"));
}

#[test]
fn a_reverse_run_through_an_egress_shaper_has_no_efficiency() {
    let s = summary("net-shaped-udp-reverse.json");
    assert_eq!(s.tests[0].name, "UDP server -> client");
    assert_eq!(s.tests[0].efficiency, None);
}

#[test]
fn two_shaped_runs_compare() {
    let c = compare(&[
        summary("net-shaped-tcp.json"),
        summary("net-shaped-tcp-2.json"),
    ])
    .unwrap();
    let md = c.to_markdown();
    assert!(md.contains("TCP client -> server (MB/s)"), "{md}");
}
