//! Loopback ports and `bench net` servers for the tests of `bench net`.

use crate::cmd::headroom_process;
use crate::process::{spawn_piped, wait_until};
use std::process::{Child, Stdio};
use std::time::Duration;

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
    let listening = wait_until(Duration::from_secs(10), || {
        let t = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default()
            + &std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        t.lines().any(|l| l.contains(&hex) && l.contains(" 0A "))
    });
    assert!(listening, "port {port} never listened");
}

/// A headroom server for one test on `port` of loopback (`bench net -s -1 -p PORT --no-save`
/// and `extra`), once it listens; its stdout and stderr piped (read them when it has ended,
/// with [`crate::process::output_within`] or `wait_with_output`).
pub fn one_off_server(port: u16, extra: &[&str]) -> Child {
    let port_s = port.to_string();
    let server = spawn_piped(
        headroom_process()
            .args(["bench", "net", "-s", "-1", "-p", &port_s, "--no-save"])
            .args(extra)
            .stdin(Stdio::null()),
    );
    wait_listening(port);
    server
}
