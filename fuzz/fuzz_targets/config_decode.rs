//! Any bytes decode without a panic, with bounded lists.
#![no_main]

use libfuzzer_sys::fuzz_target;
use probe::pci::config::{ConfigSpace, MAX_CAPABILITIES, MAX_EXTENDED_CAPABILITIES};

fuzz_target!(|data: &[u8]| {
    let c = ConfigSpace::decode(data);
    assert!(c.capabilities.len() <= MAX_CAPABILITIES);
    assert!(c.extended_capabilities.len() <= MAX_EXTENDED_CAPABILITIES);
});
