//! `headroom ceiling`: the tables a user compares with the seeds, the JSON document, and the
//! sentences for wrong arguments.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

fn headroom(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("headroom")
        .expect("the headroom binary is built")
        .args(args)
        .assert()
}

fn stdout(args: &[&str]) -> String {
    let out = headroom(args).success().get_output().stdout.clone();
    String::from_utf8(out).expect("stdout is UTF-8")
}

/// The numbers at the end of the first line starting with `label` in the table after `caption`.
fn row(text: &str, caption: &str, label: &str) -> Vec<f64> {
    let table = &text[text
        .find(caption)
        .unwrap_or_else(|| panic!("{caption} in\n{text}"))..];
    let line = table
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("{label} in\n{table}"));
    line[label.len()..]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Each measured value (MB/s) prints as the seed's figure, within half a unit of its last digit.
fn assert_seed(values: &[f64], seed_mb: &[(f64, f64)]) {
    assert_eq!(values.len(), seed_mb.len(), "{values:?}");
    for (v, (figure, half_unit)) in values.iter().zip(seed_mb) {
        assert!(
            (v - figure).abs() <= *half_unit,
            "{v} MB/s vs the seed's {figure}"
        );
    }
}

#[test]
fn pcie_table_reproduces_the_rockchip_guide() {
    let out = stdout(&[
        "ceiling", "pcie", "--gen", "3", "--lanes", "1,2,4,8", "--mps", "128,256",
    ]);
    // Units in every header, the assumption set named.
    assert!(out.contains("x1 MB/s  x2 MB/s  x4 MB/s  x8 MB/s"), "{out}");
    let seed = "assumptions: the Rockchip PCIe guide's 28 B assumption set (section 2.2), 28 B \
                per TLP = header 16 + ECRC 4 + LCRC 4 + sequence 2 + framing 2";
    assert!(out.contains(seed), "{out}");
    assert!(out.contains("assumptions: default (no ECRC"), "{out}");
    // Guide 2.1: 984.6 MB/s, 1.969, 3.938, 7.877 GB/s.
    assert_seed(
        &row(&out, seed, "raw (after 128b/130b)"),
        &[(984.6, 0.05), (1969.0, 0.5), (3938.0, 0.5), (7877.0, 0.5)],
    );
    // Guide 2.2: 887.5 MB/s, 1.775, 3.550 GB/s at 256 B (x8: see the slip below).
    let mps256 = row(&out, seed, "TLP write, MPS 256 (256/284 B)");
    assert_seed(&mps256[..3], &[(887.5, 0.05), (1775.0, 0.5), (3550.0, 0.5)]);
    assert_eq!(mps256[3], 7100.3); // the guide's 7.1002 GB/s is a slip for 7.1003
    let mps128 = row(&out, seed, "TLP write, MPS 128 (128/156 B)");
    assert_seed(&mps128[1..3], &[(1616.0, 0.5), (3232.0, 0.5)]);
    assert_eq!((mps128[0], mps128[3]), (807.9, 6463.1)); // guide: 807.8 and 6.464 (slips)
    assert!(out.contains("rounding slips in the guide"), "{out}");
    // The sharper default carries 24 B per TLP.
    let default = row(
        &out,
        "assumptions: default",
        "TLP write, MPS 256 (256/280 B)",
    );
    assert_eq!(default[0], 900.2);
}

#[test]
fn pcie_raw_table_per_generation() {
    let out = stdout(&["ceiling", "pcie"]);
    let caption = "PCIe raw ceiling per direction";
    // Each row: the rate in GT/s, then x1, x2, x4, x8.
    assert_eq!(
        row(&out, caption, "Gen 1"),
        [2.5, 250.0, 500.0, 1000.0, 2000.0]
    );
    assert_eq!(
        row(&out, caption, "Gen 2"),
        [5.0, 500.0, 1000.0, 2000.0, 4000.0]
    );
    // Guide: 15.754 GB/s for Gen 4 x8.
    assert_eq!(row(&out, caption, "Gen 4")[4], 15753.8);
}

#[test]
fn pcie_in_mib() {
    let out = stdout(&[
        "ceiling", "pcie", "--gen", "2", "--lanes", "1", "--unit", "MiB",
    ]);
    assert!(out.contains("x1 MiB/s"), "{out}");
    assert!(out.contains("MiB/s = 2^20 B/s"), "{out}");
    // 500 MB/s = 476.8 MiB/s.
    assert_eq!(row(&out, "PCIe raw ceiling", "Gen 2"), [5.0, 476.8]); // 5 GT/s, x1
}

#[test]
fn pcie_json_document() {
    let out = stdout(&[
        "--json", "ceiling", "pcie", "--gen", "3", "--lanes", "1,8", "--mps", "256",
    ]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["kind"], "ceiling");
    assert_eq!(doc["link"], "pcie");
    assert_eq!(doc["rate_unit"], "B/s");
    let ceilings = doc["ceilings"].as_array().unwrap();
    assert_eq!(ceilings.len(), 4); // 2 sets x 2 widths
    let seed_x1 = &ceilings[0];
    assert_eq!(seed_x1["params"]["set"], "rockchip");
    assert_eq!(seed_x1["link"]["width"], 1);
    let tlp = seed_x1["tlp_write_bytes_per_sec"].as_f64().unwrap();
    assert!((tlp - 887.5e6).abs() < 0.05e6, "{tlp}");
    for c in ceilings {
        let f = |k: &str| c[k].as_f64().unwrap();
        assert!(f("effective_write_bytes_per_sec") <= f("tlp_write_bytes_per_sec"));
        assert!(f("tlp_write_bytes_per_sec") <= f("raw_bytes_per_sec"));
    }
}

#[test]
fn wrong_pcie_arguments_name_the_allowed_values() {
    headroom(&["ceiling", "pcie", "--gen", "9"])
        .code(2)
        .stderr(contains(
            "PCIe generation 9 does not exist; use 1, 2, 3, 4, 5, 6 or 7",
        ));
    headroom(&["ceiling", "pcie", "--lanes", "3"])
        .code(2)
        .stderr(contains(
            "x3 is not a PCIe link width; use x1, x2, x4, x8, x12, x16 or x32",
        ));
    headroom(&["ceiling", "pcie", "--mps", "100"])
        .code(2)
        .stderr(contains(
            "MPS 100 is not a Max_Payload_Size; use 128, 256, 512, 1024, 2048 or 4096",
        ));
    headroom(&["ceiling", "pcie", "--rcb", "32"])
        .code(2)
        .stderr(contains("use 64 or 128"));
    headroom(&["ceiling", "pcie", "--unit", "GB"])
        .code(2)
        .stderr(contains("MB, MiB"));
}

#[test]
fn usb_table_and_the_guide_units() {
    let out = stdout(&["ceiling", "usb"]);
    assert!(out.contains("bulk MB/s"), "{out}");
    // USB 2.0 bulk 53.25 MB/s (10^6), interrupt/isochronous 24.58 MB/s = 23.44 MiB/s.
    let hs = row(&out, "USB ceilings", "USB 2.0 high speed");
    assert_eq!(&hs[1..], [60.0, 15.87, 24.58, 53.25, 24.58]);
    let guide = "Rockchip USB guide, table 1-2";
    let bulk = row(&out, guide, "USB 2.0 high speed       bulk");
    assert_eq!(bulk, [53.25, 53.25, 50.78]);
    assert!(
        out.contains("53.25     53.25     50.78  10^6 (MB)"),
        "{out}"
    );
    assert!(
        out.contains("23.44     24.58     23.44  2^20 (MiB)"),
        "{out}"
    );
    assert!(
        out.contains("375.04     393.2     375.0  2^20: exact 375.00"),
        "{out}"
    );

    let json: Value = serde_json::from_str(&stdout(&["--json", "ceiling", "usb"])).unwrap();
    assert_eq!(json["kind"], "ceiling");
    let units: Vec<&Value> = json["guide_table_1_2"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["mega"])
        .collect();
    assert_eq!(
        units,
        [
            &Value::from("2^20"),
            &Value::from("10^6"),
            &Value::from("2^20"),
            &Value::from("2^20"),
            &Value::Null,
            &Value::Null
        ]
    );
}

#[test]
fn usb_one_speed_in_mib() {
    let out = stdout(&[
        "ceiling",
        "usb",
        "--speed",
        "480",
        "--transfer",
        "bulk",
        "--unit",
        "MiB",
    ]);
    // 480 Mb/s signalling, raw 57.22 MiB/s, bulk 50.78 MiB/s.
    assert_eq!(
        row(&out, "USB ceilings", "USB 2.0 high speed"),
        [480.0, 57.22, 50.78]
    );
    headroom(&["ceiling", "usb", "--speed", "33"])
        .code(2)
        .stderr(contains("`33` is not a USB speed; use low, full, high"));
}

#[test]
fn ethernet_goodput() {
    let out = stdout(&[
        "ceiling", "eth", "--rate", "1G", "--mtu", "1500", "--proto", "tcp",
    ]);
    assert!(out.contains("goodput MB/s"), "{out}");
    // iperf3's familiar 941.5 Mbit/s: TCP with timestamps over IPv4.
    let ts = row(&out, "Ethernet goodput", "1G    TCP, timestamps / IPv4");
    assert_eq!(ts, [1448.0, 1.0, 1538.0, 117.7, 941.5]);
    // iperf2's 1470 B datagram: 1470 of 1536 wire bytes = 957.0 Mbit/s.
    let udp = stdout(&[
        "ceiling", "eth", "--proto", "udp", "--ip", "4", "--len", "1470",
    ]);
    assert_eq!(
        row(&udp, "Ethernet", "1G    UDP / IPv4"),
        [1470.0, 1.0, 1536.0, 119.6, 957.0]
    );
    assert!(
        udp.contains("UDP datagrams of 1470 B payload (--len)."),
        "{udp}"
    );
    headroom(&["ceiling", "eth", "--ip", "6", "--mtu", "1000"])
        .code(2)
        .stderr(contains("MTU 1000 is below the 1280 bytes"));
    headroom(&["ceiling", "eth", "--rate", "3G"])
        .code(2)
        .stderr(contains("`3G` is not an Ethernet rate; use 10M, 100M, 1G"));
}

/// The rate as sysfs `speed` (1000) and ethtool (1000Mb/s) print it, and
/// the 200 and 400 Gb/s MAC rates of IEEE 802.3bs.
#[test]
fn ethernet_rates_as_sysfs_prints_them_and_up_to_400g() {
    let tcp = "TCP, timestamps / IPv4";
    for given in ["1000", "1000M", "1000Mb/s", "1g"] {
        let out = stdout(&["ceiling", "eth", "--rate", given, "--proto", "tcp"]);
        assert_eq!(
            row(&out, "Ethernet goodput", &format!("1G    {tcp}")),
            [1448.0, 1.0, 1538.0, 117.7, 941.5],
            "--rate {given}"
        );
    }
    let out = stdout(&["ceiling", "eth", "--rate", "200G,400000", "--proto", "tcp"]);
    // 1448 of every 1538 bytes on the wire at 200 and 400 Gb/s.
    assert_eq!(
        row(&out, "Ethernet goodput", &format!("200G  {tcp}")),
        [1448.0, 1.0, 1538.0, 23537.1, 188296.5]
    );
    assert_eq!(
        row(&out, "Ethernet goodput", &format!("400G  {tcp}")),
        [1448.0, 1.0, 1538.0, 47074.1, 376593.0]
    );
    headroom(&["ceiling", "eth", "--rate", "3000"])
        .code(2)
        .stderr(contains("`3000` is not an Ethernet rate"));
}

#[test]
fn sata_and_mmc() {
    let out = stdout(&["ceiling", "sata"]);
    assert_eq!(row(&out, "SATA", "SATA 6 Gb/s"), [600.0, 594.2]);
    headroom(&["ceiling", "sata", "--rate", "12"])
        .code(2)
        .stderr(contains("SATA has no 12 Gb/s link; use 1.5, 3 or 6"));
    let mmc = stdout(&["ceiling", "mmc"]);
    assert!(mmc.contains("bus MB/s"), "{mmc}");
    let hs400 = row(&mmc, "eMMC", "eMMC HS400");
    assert_eq!(&hs400[hs400.len() - 2..], [400.0, 373.7]);
    let sdr104 = row(&mmc, "eMMC", "SD UHS-I SDR104");
    assert_eq!(&sdr104[sdr104.len() - 2..], [104.0, 102.2]);
    let doc: Value = serde_json::from_str(&stdout(&["--json", "ceiling", "mmc"])).unwrap();
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["modes"][2]["bus_bytes_per_sec"], 200e6);
}

#[test]
fn ethernet_udp_datagrams_fill_the_mtu() {
    // Without --len the datagram fills the MTU: 9000 - 20 - 8 = 8972 B over IPv4, one
    // 9038 B frame on the wire (not 1470 B whatever the MTU).
    let out = stdout(&["ceiling", "eth", "--mtu", "9000", "--proto", "udp"]);
    assert_eq!(
        row(&out, "Ethernet", "1G    UDP / IPv4"),
        [8972.0, 1.0, 9038.0, 124.1, 992.7]
    );
    assert_eq!(row(&out, "Ethernet", "1G    UDP / IPv6")[0], 8952.0);
    assert!(out.contains("UDP datagrams fill the MTU 9000"), "{out}");
    let std_mtu = stdout(&["ceiling", "eth", "--proto", "udp", "--ip", "4"]);
    assert_eq!(row(&std_mtu, "Ethernet", "1G    UDP / IPv4")[0], 1472.0);
    headroom(&["ceiling", "eth", "--len", "1000"])
        .code(2)
        .stderr(contains(
            "--len sets the UDP datagram payload: add --proto udp",
        ));
}

#[test]
fn ethernet_json_names_bits_and_bytes() {
    let out = stdout(&["--json", "ceiling", "eth", "--rate", "1G", "--ip", "4"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    // A rate in bits/s is never next to "B/s": every rate field names its unit.
    assert!(doc.get("rate_unit").is_none(), "{out}");
    assert!(!out.contains("bps"), "{out}");
    let c = &doc["ceilings"][0];
    assert_eq!(c["params"]["rate_bits_per_sec"], 1e9);
    assert_eq!(c["raw_bytes_per_sec"], 125e6);
    let goodput = c["goodput_bytes_per_sec"].as_f64().unwrap();
    // 941.5 Mbit/s of TCP with timestamps... the first row is TCP without: 949.3 Mbit/s.
    assert_eq!(format!("{:.1}", goodput * 8.0 / 1e6), "949.3");
}

#[test]
fn output_names_the_documents_not_our_notes() {
    // "seed" is a word of headroom's own notes; users read the name of the
    // document (the Rockchip PCIe guide).
    let tree = testsupport::fixtures::own("sysfs/sd-nvme-downgraded-sata");
    let tree = tree.to_str().unwrap();
    let runs: [&[&str]; 8] = [
        &["ceiling", "pcie", "--gen", "3", "--lanes", "1"],
        &["--json", "ceiling", "pcie", "--gen", "3", "--lanes", "1"],
        &["ceiling", "pcie", "--help"],
        &["ceiling", "--help"],
        &["ceiling", "usb"],
        &["ceiling", "pcie", "--assumptions", "seed", "--gen", "3"],
        &["audit", "--root", tree],
        &["--json", "audit", "--root", tree],
    ];
    for args in runs {
        let out = assert_cmd::Command::cargo_bin("headroom")
            .unwrap()
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        for text in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(text).to_lowercase();
            assert!(!text.contains("seed"), "{args:?}: {text}");
        }
    }
}
