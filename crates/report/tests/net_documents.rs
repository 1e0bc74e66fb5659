#![allow(clippy::unwrap_used)]
//! `net` documents (tests/fixtures/results/net-*.json, written by `headroom bench net` on a
//! tbf-shaped veth pair): Markdown, HTML and compare read what the bench wrote.

use report::compare::compare;
use report::{Document, Summary};

use crate::common;
use common::{fixture_value, summary};

#[test]
fn shaped_tcp_run_in_markdown_and_html() {
    let s = summary("net-shaped-tcp.json");
    assert_eq!(s.kind, report::document::DocumentKind::Net);
    // The one direction's own ceiling, which every test of the run shares.
    let c = s.common_ceiling().unwrap();
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

/// A shaped run's document with the counters `bench net` samples beside its engine: the
/// interface device's interrupt rate and its root port's PMU bytes (numbers of a NIC behind
/// a dwc_rootport PMU: Rx 3.2 % above the received payload, headers and descriptors).
fn with_counters(received: u64, rx_bytes: f64, irq_per_s: f64) -> Summary {
    use report::kinds::count::{error_percent, BesideCounters, IrqRate, PmuBytes};
    let mut v = fixture_value("net-shaped-tcp.json");
    let counters = BesideCounters {
        links: None,
        interrupts: vec![IrqRate {
            device: "eth0 0000:31:00.0".into(),
            irqs: vec![37, 38, 39],
            names: vec!["eth0-TxRx-0".into(), "eth0-TxRx-1".into()],
            count: (irq_per_s * 5.0) as u64,
            per_second: irq_per_s,
            seconds: 5.0,
        }],
        pmu: Some(PmuBytes {
            pmu: "dwc_rootport_3018".into(),
            root_port: "0000:30:03.0".into(),
            rx_event: Some("dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/".into()),
            rx_bytes: Some(rx_bytes),
            tx_event: Some("dwc_rootport_3018/Tx_PCIe_TLP_Data_Payload/".into()),
            tx_bytes: Some(1_000_000.0),
            app_read_bytes: received,
            app_write_bytes: 0,
            read_error_percent: error_percent(rx_bytes, received),
            write_error_percent: None,
            reason: None,
        }),
        notes: vec!["a note of the counters".into()],
    };
    v["counters"] = serde_json::to_value(&counters).unwrap();
    let doc = Document::parse(&v.to_string(), "net-counters").unwrap();
    report::kinds::summarize(&doc, "net-counters").unwrap()
}

#[test]
fn a_runs_counters_show_in_report_and_compare() {
    let s = with_counters(58_000_000, 59_856_000.0, 4100.0);
    let row = |name: &str| {
        s.counters
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", s.counters))
            .clone()
    };
    assert_eq!(row("interrupts of eth0 0000:31:00.0").value, Some(4100.0));
    assert_eq!(
        row("dwc_rootport_3018 Rx payload").value,
        Some(59_856_000.0)
    );
    let ratio = row("dwc_rootport_3018 Rx payload / application bytes");
    assert!((ratio.value.unwrap() - 103.2).abs() < 1e-9, "{ratio:?}");
    // Nothing was sent: no Tx ratio (a Tx count of ACKs is not set against 0 bytes).
    assert!(!s.counters.iter().any(|c| c.name.contains("Tx payload /")));
    let md = report::markdown::render(std::slice::from_ref(&s));
    assert!(md.contains("### Counters"), "{md}");
    assert!(md.contains("a note of the counters"), "{md}");
    assert!(
        md.contains("| interrupts of eth0 0000:31:00.0 | 4100.00 | /s |"),
        "{md}"
    );
    assert!(
        md.contains("| dwc_rootport_3018 Rx payload / application bytes | 103.20 | % |"),
        "{md}"
    );
    let html = report::html::render(std::slice::from_ref(&s)).unwrap();
    assert!(
        html.contains("Counters") && html.contains("103.20"),
        "{html}"
    );
    // compare lines the counters up beside the rates.
    let other = with_counters(58_000_000, 60_900_000.0, 8200.0);
    let md = compare(&[s, other]).unwrap().to_markdown();
    assert!(md.contains("interrupts of eth0 0000:31:00.0 (/s)"), "{md}");
    assert!(
        md.contains("dwc_rootport_3018 Rx payload / application bytes (%)"),
        "{md}"
    );
}
