//! Whatever a peer sends on iperf3's control connection parses without a panic: as a state
//! byte, as a length-framed message, as parameters and as results.
#![no_main]

use bench::net::proto;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    proto::parse_any(data);
    if let Ok(p) = proto::Params::parse(data) {
        // What was accepted stays within iperf3's limits.
        assert!(p.parallel >= 1 && p.parallel <= proto::MAX_STREAMS);
        assert!(p.time <= proto::MAX_TIME);
    }
});
