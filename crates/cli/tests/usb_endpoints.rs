//! The bandwidth USB interrupt and isochronous endpoints reserve: in the audit's USB tree (text
//! and JSON) of a real camera's descriptors, and from `headroom ceiling usb` given an
//! endpoint's fields as lsusb -v prints them.

use serde_json::Value;
use testsupport::cmd::*;

fn camera_tree() -> std::path::PathBuf {
    testsupport::fixtures::own("sysfs/uvc-c270")
}

/// The Logitech C270's streaming interface in alternate setting 11 declares wMaxPacketSize
/// 0x13fc (3 transactions of 1020 B) at bInterval 1: 3 x 1020 B every 125 us = 24.48 MB/s,
/// what lsusb -v's "3x 1020 bytes" works out to at high speed.
#[test]
fn the_audit_shows_what_a_cameras_current_alternate_setting_reserves() {
    let text = String::from_utf8(stdout_of(
        headroom().arg("audit").arg("--root").arg(camera_tree()),
    ))
    .unwrap();
    assert!(
        text.contains(
            "1-3:1.1 Video alt 11: isochronous IN 0x81 3 x 1020 B per 125 us = 24.48 MB/s reserved"
        ),
        "{text}"
    );
    // The status interrupt endpoint: 16 B every 2^(8-1) microframes = 16 ms.
    assert!(
        text.contains("interrupt IN 0x87 16 B per 16 ms = 1.0 kB/s reserved, 62.5 transfers/s"),
        "{text}"
    );
    // The idle audio streaming interface reserves nothing, and says what it would.
    assert!(
        text.contains(
            "1-3:1.3 Audio alt 0: nothing reserved (alt 4 would reserve 196.0 kB/s isochronous)"
        ),
        "{text}"
    );

    let doc = json_of(
        headroom()
            .arg("audit")
            .arg("--json")
            .arg("--root")
            .arg(camera_tree()),
    );
    let cam = doc["usb"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "1-3")
        .unwrap();
    let vs = cam["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "1-3:1.1")
        .unwrap();
    let ep = &vs["endpoints"][0];
    assert_eq!(ep["transfer"], "isochronous");
    assert_eq!(ep["max_packet"], 1020);
    assert_eq!(ep["additional_transactions"], 2);
    assert_eq!(ep["reserved"]["bytes_per_sec"], 24_480_000.0);
    // Alternate settings 0 to 10 are there too, each with what it would reserve.
    let others = vs["other_alt_settings"].as_array().unwrap();
    assert_eq!(others.len(), 11);
    let alt1: &Value = others.iter().find(|a| a["alt_setting"] == 1).unwrap();
    // 0x00c0: one 192 B transaction per microframe = 1.536 MB/s.
    assert_eq!(
        alt1["endpoints"][0]["reserved"]["bytes_per_sec"],
        1_536_000.0
    );
}

/// `ceiling usb` given wMaxPacketSize as lsusb prints it, and SuperSpeed burst and Mult.
#[test]
fn ceiling_usb_computes_one_endpoints_reservation() {
    let text = String::from_utf8(stdout_of(headroom().args([
        "ceiling",
        "usb",
        "--speed",
        "high",
        "--transfer",
        "isochronous",
        "--max-packet",
        "0x13fc",
    ])))
    .unwrap();
    assert!(
        text.contains("USB 2.0 high speed: 24.48 (3 x 1020 B"),
        "{text}"
    );

    // USB 3.2 9.6.7: 16 packets a burst, 3 bursts per 125 us, 1024 B each = 393.216 MB/s.
    let doc = json_of(headroom().args([
        "ceiling",
        "usb",
        "--json",
        "--speed",
        "gen1",
        "--transfer",
        "isochronous",
        "--max-packet",
        "1024",
        "--burst",
        "16",
        "--mult",
        "3",
    ]));
    let at = &doc["endpoint"]["speeds"][0];
    assert_eq!(at["speed"], "gen1");
    assert_eq!(at["reserved"]["bytes_per_sec"], 393_216_000.0);
    assert_eq!(at["reserved"]["packets_per_interval"], 48);

    // A full-speed keyboard: 8 B every 10 frames.
    let doc = json_of(headroom().args([
        "ceiling",
        "usb",
        "--json",
        "--speed",
        "full",
        "--transfer",
        "interrupt",
        "--max-packet",
        "8",
        "--interval",
        "10",
    ]));
    assert_eq!(
        doc["endpoint"]["speeds"][0]["reserved"]["bytes_per_sec"],
        800.0
    );
}

#[test]
fn an_endpoint_that_cannot_be_is_one_sentence() {
    fails_saying(
        headroom().args([
            "ceiling",
            "usb",
            "--transfer",
            "bulk",
            "--max-packet",
            "512",
        ]),
        2,
        "bulk and control endpoints reserve none",
    );
    fails_saying(
        headroom().args(["ceiling", "usb", "--max-packet", "512"]),
        2,
        "--max-packet describes one endpoint",
    );
    fails_saying(
        headroom().args([
            "ceiling",
            "usb",
            "--transfer",
            "isochronous",
            "--max-packet",
            "0x1c00",
        ]),
        2,
        "is not a wMaxPacketSize",
    );
    fails_saying(
        headroom().args([
            "ceiling",
            "usb",
            "--transfer",
            "isochronous",
            "--max-packet",
            "1024",
            "--burst",
            "17",
        ]),
        2,
        "use 1 to 16",
    );
}
