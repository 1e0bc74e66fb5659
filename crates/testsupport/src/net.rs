//! Loopback ports and `bench net` servers for the tests of `bench net`.

use crate::cmd::headroom_process;
use crate::process::{spawn_piped, wait_until};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("an ephemeral port on 127.0.0.1")
        .port()
}

/// Whether something listens on `port` in the network namespace whose /proc/net is `net`:
/// the listener shows in its tcp6 or tcp table in state 0A (LISTEN), found without a probing
/// connection, which a one-test server (`bench net -s -1`) would take for its test.
fn listens(net: &Path, port: u16) -> bool {
    let hex = format!(":{port:04X} ");
    let t = std::fs::read_to_string(net.join("tcp6")).unwrap_or_default()
        + &std::fs::read_to_string(net.join("tcp")).unwrap_or_default();
    t.lines().any(|l| l.contains(&hex) && l.contains(" 0A "))
}

/// How many TCP connections to `port` of this network namespace are established (state 01
/// of /proc/net/tcp and tcp6, counted at the listening end): a `bench net` test that runs
/// has two, its control connection and a data stream.
pub fn established_to(port: u16) -> usize {
    let hex = format!(":{port:04X} ");
    let t = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default()
        + &std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    t.lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&hex) && f[3] == "01"
        })
        .count()
}

/// Wait (up to 10 s) until something listens on `port` of this network namespace.
pub fn wait_listening(port: u16) {
    let listening = wait_until(Duration::from_secs(10), || {
        listens(Path::new("/proc/net"), port)
    });
    assert!(listening, "port {port} never listened");
}

/// Wait (up to 30 s) until the headroom server `pid`, started through `ip netns exec NS`,
/// listens on `port` in its namespace: once the process runs headroom (`ip` has entered the
/// namespace and exec'd it), its /proc/PID/net is that namespace's.
pub fn wait_listening_in_namespace_of(pid: u32, port: u16) {
    let headroom = assert_cmd::cargo::cargo_bin("headroom");
    let proc = Path::new("/proc").join(pid.to_string());
    let listening = wait_until(Duration::from_secs(30), || {
        std::fs::read_link(proc.join("exe")).is_ok_and(|e| e == headroom)
            && listens(&proc.join("net"), port)
    });
    assert!(listening, "the server {pid} never listened on port {port}");
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
