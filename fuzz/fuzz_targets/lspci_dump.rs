//! Any text parses without a panic; every function found decodes without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use probe::pci::config::ConfigSpace;
use probe::pci::dump::parse_lspci_dump;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let dump = parse_lspci_dump(&text);
    for f in &dump.functions {
        assert!(f.config.len() <= 4096);
        let _ = ConfigSpace::decode(&f.config);
    }
});
