//! The iperf3 control-message parsers on arbitrary input (stable-Rust twin of
//! fuzz/fuzz_targets/net_control.rs): never a panic, and what is accepted is within limits.

#![allow(clippy::unwrap_used)]

use bench::net::proto::{self, Params, Results};
use proptest::prelude::*;

proptest! {
    #[test]
    fn any_bytes_parse_without_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        proto::parse_any(&data);
        if let Ok(p) = Params::parse(&data) {
            prop_assert!(p.parallel >= 1 && p.parallel <= proto::MAX_STREAMS);
            prop_assert!(p.time <= proto::MAX_TIME);
        }
    }

    #[test]
    fn json_shaped_params_parse_without_panic(
        parallel in proptest::num::f64::ANY,
        time in proptest::num::f64::ANY,
        len in proptest::num::f64::ANY,
        udp in any::<bool>(),
    ) {
        let text = format!(
            r#"{{"{}":true,"parallel":{},"time":{},"len":{}}}"#,
            if udp { "udp" } else { "tcp" },
            serde_json::to_string(&parallel).unwrap(),
            serde_json::to_string(&time).unwrap(),
            serde_json::to_string(&len).unwrap(),
        );
        if let Ok(p) = Params::parse(text.as_bytes()) {
            prop_assert!(p.parallel >= 1 && p.parallel <= proto::MAX_STREAMS);
            prop_assert!(p.len.is_none_or(|l| l <= model::net::args::MAX_BLOCKSIZE));
        }
        let _ = Results::parse(text.as_bytes());
    }
}
