//! Loopback ports for the tests that start a `bench net` server.

use std::time::{Duration, Instant};

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("an ephemeral port on 127.0.0.1")
        .port()
}

/// Wait (up to 10 s) until something listens on `port`: the listener shows in
/// /proc/net/tcp6 or tcp in state 0A (LISTEN), found without a probing connection, which a
/// one-test server (`bench net -s -1`) would take for its test.
pub fn wait_listening(port: u16) {
    let hex = format!(":{port:04X} ");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let t = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default()
            + &std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        if t.lines().any(|l| l.contains(&hex) && l.contains(" 0A ")) {
            return;
        }
        assert!(Instant::now() < until, "port {port} never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
}
