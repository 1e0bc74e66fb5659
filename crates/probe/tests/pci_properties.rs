//! Property tests: whatever bytes or text come in (a corrupt dump, a device that stops
//! answering mid-read), the decoder and the dump parser return, without panicking, with
//! output bounded by the size of the input.

use probe::pci::config::{MAX_CAPABILITIES, MAX_EXTENDED_CAPABILITIES};
use probe::pci::dump::parse_lspci_dump;
use probe::pci::regs::PCI_CFG_SPACE_EXP_SIZE;
use proptest::prelude::*;

/// Bytes that look like config space often enough to reach the capability walks: random,
/// but with the Capabilities List status bit set in half of the cases.
fn config_bytes() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(any::<u8>(), 0..4200), any::<bool>()).prop_map(|(mut b, caps)| {
        if caps && b.len() > 6 {
            b[6] |= 0x10;
        }
        b
    })
}

/// Text built from lines that look like a dump, lines that almost do, and noise.
fn dump_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "([0-9a-f]{4,6}:)?[0-9a-fA-F]{2}:[0-9a-f]{2}\\.[0-9a-f]( [ -~]{0,30})?",
        "[0-9a-f]{2,9}: ([0-9a-f]{2} ){0,16}[0-9a-fz ]{0,4}",
        "\t[ -~]{0,40}",
        "",
        "[ -~]{0,60}",
        "\\PC{0,20}",
    ];
    prop::collection::vec(line, 0..120).prop_map(|lines| lines.join("\n"))
}

/// `lspci -xxx`-style text for one function.
fn format_dump(address: &str, bytes: &[u8]) -> String {
    let mut s = format!("{address} Non-Volatile memory controller: Test\n");
    for (i, row) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        s.push_str(&format!("{:02x}: {}\n", i * 16, hex.join(" ")));
    }
    s.push('\n');
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoder_never_panics_and_stays_bounded(bytes in config_bytes()) {
        let c = probe::pci::config::decode(&bytes);
        prop_assert_eq!(c.length, bytes.len().min(PCI_CFG_SPACE_EXP_SIZE));
        prop_assert!(c.capabilities.len() <= MAX_CAPABILITIES);
        prop_assert!(c.extended_capabilities.len() <= MAX_EXTENDED_CAPABILITIES);
        // One warning per problem, and each walk stops at its first problem.
        prop_assert!(c.warnings.len() <= 12, "{:?}", c.warnings);
        for w in &c.warnings {
            prop_assert!(!w.is_empty() && !w.contains('\n'));
        }
        if let Some(e) = &c.express {
            prop_assert!(c.capabilities.iter().any(|k| k.offset == e.offset));
            if let Some(l) = &e.link {
                prop_assert!(l.width < 64 && l.max_width < 64);
            }
        }
    }

}

proptest! {
    // Generating the text is the slow part (regex strategies): fewer cases.
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn dump_parser_never_panics_and_stays_bounded(text in dump_text()) {
        let d = parse_lspci_dump(&text);
        let lines = text.lines().count();
        prop_assert!(d.functions.len() <= lines);
        prop_assert!(d.warnings.len() <= 2 * lines);
        for f in &d.functions {
            prop_assert!(!f.config.is_empty() && f.config.len() <= PCI_CFG_SPACE_EXP_SIZE);
        }
        for w in &d.warnings {
            prop_assert!(w.line >= 1 && w.line <= lines);
        }
    }

    #[test]
    fn a_formatted_dump_reads_back_byte_for_byte(
        rows in prop::sample::select(vec![4usize, 16, 256]),
        seed in prop::collection::vec(any::<u8>(), 4096),
        domain in prop::option::of(0u32..0x10000),
        bus in any::<u8>(), device in 0u8..32, function in 0u8..8,
    ) {
        let bytes = &seed[..rows * 16];
        let address = match domain {
            Some(d) => format!("{d:04x}:{bus:02x}:{device:02x}.{function}"),
            None => format!("{bus:02x}:{device:02x}.{function}"),
        };
        let d = parse_lspci_dump(&format_dump(&address, bytes));
        prop_assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        prop_assert_eq!(d.functions.len(), 1);
        prop_assert_eq!(&d.functions[0].config[..], bytes);
        prop_assert_eq!(d.functions[0].address.domain, domain.unwrap_or(0));
        prop_assert_eq!(d.functions[0].address.device, device);
        // And whatever the bytes, decoding them does not panic.
        let _ = probe::pci::config::decode(&d.functions[0].config);
    }
}
