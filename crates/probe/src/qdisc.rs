//! The root qdisc of each interface, for the shapers that set a link's ceiling below its
//! speed (a `tbf` on a test link, as in the shaped-link tests of `bench net`), and an
//! interface's GSO segment limit: both only in rtnetlink (neither is in sysfs).
//!
//! Read from the kernel's route netlink socket directly (rtnetlink(7), netlink(7)), as
//! iproute2's `tc qdisc show` and `ip -d link show` do: a board with busybox has no `tc`,
//! and these are two fixed requests, so no netlink crate is pulled into the board binary.
//! A dump of the qdiscs (RTM_GETQDISC) gives each one's interface index, parent and kind;
//! a tbf's options carry its `struct tc_tbf_qopt` (include/uapi/linux/pkt_sched.h) whose
//! rate is in bytes per second, with TCA_TBF_RATE64 beside it when the rate does not fit
//! 32 bits, as iproute2 reads them (tc/q_tbf.c, tbf_print_opt). One link's attributes
//! (RTM_GETLINK) carry IFLA_GSO_MAX_SEGS (include/uapi/linux/if_link.h).
//!
//! Bounded: one request each, a 2 s receive timeout, at most [`MAX_REPLY_BYTES`] of replies;
//! every length the kernel sends is checked before it is used.

use model::net::Shaper;
use std::collections::BTreeMap;

// include/uapi/linux/netlink.h
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_HDRLEN: usize = 16;
// include/uapi/linux/rtnetlink.h
const RTM_GETLINK: u16 = 18;
const RTM_NEWLINK: u16 = 16;
const RTM_GETQDISC: u16 = 38;
const RTM_NEWQDISC: u16 = 36;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
/// `struct tcmsg`: family, 3 bytes of padding, ifindex, handle, parent, info.
const TCMSG_LEN: usize = 20;
/// `struct ifinfomsg`: family, padding, type, index, flags, change.
const IFINFOMSG_LEN: usize = 16;
/// `TC_H_ROOT` (include/uapi/linux/pkt_sched.h): the parent of a root qdisc.
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
// include/uapi/linux/pkt_sched.h, TBF section
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
/// `struct tc_tbf_qopt`: two 12-byte `tc_ratespec`s, then limit, buffer, mtu.
const TBF_QOPT_LEN: usize = 36;
// include/uapi/linux/if_link.h
const IFLA_GSO_MAX_SEGS: u16 = 40;

/// The most reply bytes read for one request: a qdisc message is under 1 KiB, so this holds
/// thousands of interfaces.
pub const MAX_REPLY_BYTES: usize = 16 << 20;

/// The shaper at the root of each interface of this network namespace, by interface name:
/// the interfaces whose root qdisc is a tbf. `Err` says why they could not be known, in one
/// sentence.
pub fn root_shapers() -> Result<BTreeMap<String, Shaper>, String> {
    let unknown = "so a tbf shaper on an interface would not be seen";
    let replies = request(RTM_GETQDISC, NLM_F_DUMP, &[0u8; TCMSG_LEN]).map_err(|e| {
        format!("cannot read the interfaces' qdiscs from the kernel (rtnetlink: {e}), {unknown}")
    })?;
    let mut shapers = BTreeMap::new();
    for (ifindex, shaper) in replies.iter().filter_map(parse_qdisc) {
        if let Some(name) = interface_name(ifindex) {
            shapers.insert(name, shaper);
        }
    }
    Ok(shapers)
}

/// The most segments the stack hands the device in one GSO packet (IFLA_GSO_MAX_SEGS);
/// `None` when the kernel does not tell (no such interface, an older kernel).
pub fn gso_max_segs(iface: &str) -> Option<u64> {
    let name = std::ffi::CString::new(iface).ok()?;
    // SAFETY: a NUL-terminated name; 0 when there is no such interface.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return None;
    }
    let mut ifinfo = [0u8; IFINFOMSG_LEN];
    ifinfo[4..8].copy_from_slice(&(index as i32).to_ne_bytes());
    let replies = request(RTM_GETLINK, 0, &ifinfo).ok()?;
    replies.iter().find_map(parse_gso_max_segs)
}

/// One rtnetlink message's payload with its type: what [`request`] returns per message.
#[derive(Debug)]
pub struct Message {
    pub kind: u16,
    pub payload: Vec<u8>,
}

/// Send one request of `kind` with `flags` and `body` on a route netlink socket and collect
/// the replies until the dump's end (or the one reply of a plain request).
fn request(kind: u16, flags: u16, body: &[u8]) -> Result<Vec<Message>, String> {
    // SAFETY: plain socket(2); the descriptor is owned below.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: fd is a new descriptor nobody else owns.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let timeout = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    // SAFETY: a timeval of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const timeout).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let seq: u32 = 1;
    let len = NLMSG_HDRLEN + body.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    // SAFETY: the kernel's address (pid 0): sockaddr_nl zeroed but for its family.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: msg and kernel live across the call, with the lengths given.
    let sent = unsafe {
        libc::sendto(
            fd,
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&raw const kernel).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0usize;
    loop {
        // SAFETY: buf is writable for its length; the socket is open (sock owns it).
        let n = unsafe {
            libc::recv(
                std::os::fd::AsRawFd::as_raw_fd(&sock),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
                "no answer within 2 s".to_string()
            } else {
                e.to_string()
            });
        }
        if n == 0 {
            return Err("the socket closed before the end of the answer".into());
        }
        total += n as usize;
        if total > MAX_REPLY_BYTES {
            return Err(format!("the answer exceeds {MAX_REPLY_BYTES} bytes"));
        }
        match split(&buf[..n as usize], seq, &mut out)? {
            Split::Done => return Ok(out),
            Split::More if flags & NLM_F_DUMP == 0 && !out.is_empty() => return Ok(out),
            Split::More => {}
        }
    }
}

enum Split {
    Done,
    More,
}

/// The messages of one datagram, appended to `out` (those of another sequence are skipped).
fn split(mut data: &[u8], seq: u32, out: &mut Vec<Message>) -> Result<Split, String> {
    while data.len() >= NLMSG_HDRLEN {
        let len = u32_at(data, 0) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let their_seq = u32_at(data, 8);
        if len < NLMSG_HDRLEN || len > data.len() {
            return Err(format!("a malformed message (length {len})"));
        }
        if their_seq == seq {
            match kind {
                NLMSG_DONE => return Ok(Split::Done),
                NLMSG_ERROR => {
                    let errno = data
                        .get(NLMSG_HDRLEN..NLMSG_HDRLEN + 4)
                        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    if errno != 0 {
                        return Err(std::io::Error::from_raw_os_error(-errno).to_string());
                    }
                    // An acknowledgement: the end of a plain request.
                    return Ok(Split::Done);
                }
                _ => out.push(Message {
                    kind,
                    payload: data[NLMSG_HDRLEN..len].to_vec(),
                }),
            }
        }
        let step = align4(len).min(data.len());
        data = &data[step..];
    }
    Ok(Split::More)
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The attributes (`struct rtattr`: length, type, value, padded to 4 bytes) of `data`, as
/// (type without its nested/byte-order flags, value); a malformed one ends the list.
fn attributes(mut data: &[u8]) -> Vec<(u16, &[u8])> {
    let mut attrs = Vec::new();
    while data.len() >= 4 {
        let len = u16::from_ne_bytes([data[0], data[1]]) as usize;
        let kind = u16::from_ne_bytes([data[2], data[3]]) & 0x3FFF;
        if len < 4 || len > data.len() {
            break;
        }
        attrs.push((kind, &data[4..len]));
        data = &data[align4(len).min(data.len())..];
    }
    attrs
}

/// A root tbf qdisc's interface index and rate from one RTM_NEWQDISC message; `None` for any
/// other qdisc.
pub fn parse_qdisc(m: &Message) -> Option<(u32, Shaper)> {
    if m.kind != RTM_NEWQDISC || m.payload.len() < TCMSG_LEN {
        return None;
    }
    let ifindex = u32_at(&m.payload, 4);
    let parent = u32_at(&m.payload, 12);
    if parent != TC_H_ROOT {
        return None;
    }
    let attrs = attributes(&m.payload[TCMSG_LEN..]);
    let kind = attrs.iter().find(|(t, _)| *t == TCA_KIND)?.1;
    if kind.split(|&b| b == 0).next()? != b"tbf" {
        return None;
    }
    let options = attributes(attrs.iter().find(|(t, _)| *t == TCA_OPTIONS)?.1);
    let qopt = options.iter().find(|(t, _)| *t == TCA_TBF_PARMS)?.1;
    if qopt.len() < TBF_QOPT_LEN {
        return None;
    }
    // struct tc_ratespec: cell_log u8, linklayer u8, overhead u16, cell_align i16, mpu u16,
    // rate u32 (bytes per second).
    let overhead = u16::from_ne_bytes([qopt[2], qopt[3]]);
    let mpu = u16::from_ne_bytes([qopt[6], qopt[7]]);
    let rate32 = u32_at(qopt, 8);
    let rate = options
        .iter()
        .find(|(t, v)| *t == TCA_TBF_RATE64 && v.len() >= 8)
        .map_or(u64::from(rate32), |(_, v)| {
            u64::from_ne_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]])
        });
    Some((
        ifindex,
        Shaper {
            rate_bps: rate as f64 * 8.0,
            overhead: u32::from(overhead),
            mpu: u32::from(mpu),
        },
    ))
}

/// IFLA_GSO_MAX_SEGS of one RTM_NEWLINK message.
pub fn parse_gso_max_segs(m: &Message) -> Option<u64> {
    if m.kind != RTM_NEWLINK || m.payload.len() < IFINFOMSG_LEN {
        return None;
    }
    attributes(&m.payload[IFINFOMSG_LEN..])
        .iter()
        .find(|(t, v)| *t == IFLA_GSO_MAX_SEGS && v.len() >= 4)
        .map(|(_, v)| u64::from(u32_at(v, 0)))
}

fn interface_name(index: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf holds IF_NAMESIZE bytes, as if_indextoname(3) requires.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into buf.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(value);
        a.resize(align4(a.len()), 0);
        a
    }

    /// The RTM_NEWQDISC of `tc qdisc add dev va root tbf rate 100mbit burst 64kb latency
    /// 50ms overhead 24` as the kernel lays it out (tcmsg, TCA_KIND "tbf", TCA_OPTIONS with
    /// TCA_TBF_PARMS), on interface 7.
    fn tbf_message(parent: u32, rate64: Option<u64>) -> Message {
        let mut qopt = vec![0u8; TBF_QOPT_LEN];
        qopt[2..4].copy_from_slice(&24u16.to_ne_bytes());
        qopt[8..12].copy_from_slice(&12_500_000u32.to_ne_bytes());
        let mut options = attr(TCA_TBF_PARMS, &qopt);
        if let Some(r) = rate64 {
            options.extend(attr(TCA_TBF_RATE64, &r.to_ne_bytes()));
        }
        let mut payload = vec![0u8; TCMSG_LEN];
        payload[4..8].copy_from_slice(&7u32.to_ne_bytes());
        payload[12..16].copy_from_slice(&parent.to_ne_bytes());
        payload.extend(attr(TCA_KIND, b"tbf\0"));
        payload.extend(attr(TCA_OPTIONS | 0x8000, &options));
        Message {
            kind: RTM_NEWQDISC,
            payload,
        }
    }

    #[test]
    fn tbf_of_the_shaped_link() {
        let (index, s) = parse_qdisc(&tbf_message(TC_H_ROOT, None)).unwrap();
        assert_eq!((index, s.rate_bps, s.overhead, s.mpu), (7, 100e6, 24, 0));
        // Above 4 GB/s the rate is in TCA_TBF_RATE64 (40 Gbit/s here).
        let (_, fast) = parse_qdisc(&tbf_message(TC_H_ROOT, Some(5_000_000_000))).unwrap();
        assert_eq!(fast.rate_bps, 40e9);
        // A tbf below another qdisc is not the link's shaper.
        assert!(parse_qdisc(&tbf_message(0x0001_0000, None)).is_none());
    }

    #[test]
    fn truncated_or_hostile_messages_are_none_never_a_panic() {
        let whole = tbf_message(TC_H_ROOT, None);
        for cut in 0..whole.payload.len() {
            let m = Message {
                kind: RTM_NEWQDISC,
                payload: whole.payload[..cut].to_vec(),
            };
            let _ = parse_qdisc(&m);
        }
        // An attribute claiming more bytes than there are ends the list.
        let mut lying = vec![0u8; TCMSG_LEN];
        lying[12..16].copy_from_slice(&TC_H_ROOT.to_ne_bytes());
        lying.extend_from_slice(&[0xFF, 0xFF, 1, 0, b't', b'b', b'f', 0]);
        let m = Message {
            kind: RTM_NEWQDISC,
            payload: lying,
        };
        assert!(parse_qdisc(&m).is_none());
        // A datagram whose message length is impossible is an error, not a loop.
        let mut out = Vec::new();
        let mut bad = vec![0u8; 20];
        bad[0..4].copy_from_slice(&4u32.to_ne_bytes());
        assert!(split(&bad, 1, &mut out).is_err());
        bad[0..4].copy_from_slice(&4096u32.to_ne_bytes());
        assert!(split(&bad, 1, &mut out).is_err());
    }

    #[test]
    fn gso_limit() {
        let mut payload = vec![0u8; IFINFOMSG_LEN];
        payload.extend(attr(3, b"va\0"));
        payload.extend(attr(IFLA_GSO_MAX_SEGS, &1u32.to_ne_bytes()));
        let m = Message {
            kind: RTM_NEWLINK,
            payload,
        };
        assert_eq!(parse_gso_max_segs(&m), Some(1));
        let none = Message {
            kind: RTM_NEWLINK,
            payload: vec![0u8; IFINFOMSG_LEN],
        };
        assert_eq!(parse_gso_max_segs(&none), None);
    }

    /// This machine's own kernel: the dump ends, and loopback's GSO limit is read (65535 on
    /// Linux since 2.6; any value proves the request was answered).
    #[test]
    fn the_kernel_answers_both_requests() {
        assert!(root_shapers().is_ok());
        assert!(gso_max_segs("lo").is_some());
        assert_eq!(gso_max_segs("no-such-interface"), None);
    }
}
