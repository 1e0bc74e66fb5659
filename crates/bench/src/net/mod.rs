//! `net`: TCP and UDP throughput between two hosts, speaking iperf3's protocol so either end
//! may be a stock iperf3 (3.12 checked). The engine measures and returns a
//! [`model::net::NetMeasurement`]; it never judges a number.
//!
//! - [`proto`]: the control protocol (cookie, state bytes, JSON messages).
//! - [`stream`]: the data streams (one thread each), the pacer, UDP accounting, TCP_INFO.
//! - [`session`]: sampling intervals, stopping, results for and from the peer.
//! - [`client`] and [`server`]: the two ends' state machines.

pub mod client;
pub mod proto;
pub mod server;
pub mod session;
pub mod stream;

use std::net::IpAddr;
use std::time::Duration;

pub use client::{run_client, ClientConfig};
pub use server::{Server, ServerConfig};

/// iperf3's port (iperf.h: PORT 5201).
pub const DEFAULT_PORT: u16 = 5201;
/// iperf3's TCP block (DEFAULT_TCP_BLKSIZE, 128 KiB).
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// iperf3's UDP rate without -b (iperf.h: UDP_RATE, 1 Mbit/s).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// iperf3's UDP datagram when the control connection's MSS is unknown (DEFAULT_UDP_BLKSIZE).
pub const DEFAULT_UDP_LEN: u32 = 1460;

/// How long a peer may stay silent during set-up or the result exchange.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Address family asked for (`-4`, `-6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Any,
    V4,
    V6,
}

impl Family {
    pub fn allows(self, ip: &IpAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => ip.is_ipv4(),
            Family::V6 => ip.is_ipv6(),
        }
    }
}

/// Why a test could not run or finish; each is one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Peer(String),
    #[error("the control connection to {peer}: {source}")]
    Control {
        peer: String,
        #[source]
        source: proto::ProtoError,
    },
}

/// Interface name owning `ip` (getifaddrs(3)), e.g. `lo` for 127.0.0.1.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family tells its real type.
        let addr = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(a.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if addr == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: head came from getifaddrs.
    unsafe { libc::freeifaddrs(head) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_lo() {
        assert_eq!(
            interface_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(interface_of("192.0.2.77".parse().unwrap()), None);
    }
}
