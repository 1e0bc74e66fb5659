//! `/proc/net/dev`: bytes, packets, errors and drops per network interface.
//!
//! Format: Documentation/networking/statistics.rst ("/proc/net/dev") and proc(5): two
//! header lines, then `iface: ` and 16 numbers, 8 receive (bytes packets errs drop fifo frame
//! compressed multicast) and 8 transmit (bytes packets errs drop fifo colls carrier
//! compressed), printed by dev_seq_printf_stats() in net/core/net-procfs.c.
//!
//! The file is per network namespace: `/proc/net/dev` is that of the reading thread
//! (`/proc/net` links to `/proc/self/net`), `/proc/PID/net/dev` that of process PID. A
//! benchmark against a peer in another namespace samples each side with its PID.

use crate::{interval, Error, ReadUnder, Sampler, Stamped, SysRoot};
use std::collections::BTreeMap;
use std::time::Duration;

/// The 16 counters of one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetDevStats {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub rx_fifo: u64,
    pub rx_frame: u64,
    pub rx_compressed: u64,
    pub rx_multicast: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
    pub tx_fifo: u64,
    pub tx_colls: u64,
    pub tx_carrier: u64,
    pub tx_compressed: u64,
}

impl NetDevStats {
    fn from_fields(n: &[u64; 16]) -> NetDevStats {
        NetDevStats {
            rx_bytes: n[0],
            rx_packets: n[1],
            rx_errs: n[2],
            rx_drop: n[3],
            rx_fifo: n[4],
            rx_frame: n[5],
            rx_compressed: n[6],
            rx_multicast: n[7],
            tx_bytes: n[8],
            tx_packets: n[9],
            tx_errs: n[10],
            tx_drop: n[11],
            tx_fifo: n[12],
            tx_colls: n[13],
            tx_carrier: n[14],
            tx_compressed: n[15],
        }
    }

    fn fields(&self) -> [u64; 16] {
        [
            self.rx_bytes,
            self.rx_packets,
            self.rx_errs,
            self.rx_drop,
            self.rx_fifo,
            self.rx_frame,
            self.rx_compressed,
            self.rx_multicast,
            self.tx_bytes,
            self.tx_packets,
            self.tx_errs,
            self.tx_drop,
            self.tx_fifo,
            self.tx_colls,
            self.tx_carrier,
            self.tx_compressed,
        ]
    }

    /// `self - earlier`, counter by counter (0 where a counter went backwards, e.g. the
    /// interface was deleted and created again).
    pub fn since(&self, earlier: &NetDevStats) -> NetDevStats {
        let (a, b) = (self.fields(), earlier.fields());
        let mut d = [0u64; 16];
        for i in 0..16 {
            d[i] = a[i].saturating_sub(b[i]);
        }
        NetDevStats::from_fields(&d)
    }
}

/// Parse the text of `/proc/net/dev`, interface name to counters. Header lines (those
/// containing `|`) and malformed lines are skipped.
pub fn parse(text: &str) -> BTreeMap<String, NetDevStats> {
    text.lines()
        .filter(|l| !l.contains('|'))
        .filter_map(|l| {
            // Old kernels glued a large rx_bytes to the colon (`eth0:123`): split on it.
            let (name, rest) = l.split_once(':')?;
            let nums: Vec<u64> = rest
                .split_whitespace()
                .map(|w| w.parse().ok())
                .collect::<Option<_>>()?;
            let n: [u64; 16] = nums.try_into().ok()?;
            Some((name.trim().to_string(), NetDevStats::from_fields(&n)))
        })
        .collect()
}

/// Samples `/proc/net/dev` (this thread's namespace) or `/proc/PID/net/dev`.
#[derive(Clone, Debug, Default)]
pub struct NetDevSampler {
    pub root: SysRoot,
    /// `None`: the reading thread's network namespace.
    pub pid: Option<u32>,
    /// Keep only these interfaces (all when empty).
    pub interfaces: Vec<String>,
}

/// What the interfaces moved between two snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct NetDevDelta {
    pub elapsed: Duration,
    pub interfaces: BTreeMap<String, NetDevStats>,
}

impl NetDevDelta {
    pub fn interface(&self, name: &str) -> Option<&NetDevStats> {
        self.interfaces.get(name)
    }

    /// Received and transmitted bytes per second of `name` over the interval (`None` for an
    /// unknown interface or an empty interval).
    pub fn bytes_per_s(&self, name: &str) -> Option<(f64, f64)> {
        let s = self.elapsed.as_secs_f64();
        let i = self.interfaces.get(name)?;
        (s > 0.0).then(|| (i.rx_bytes as f64 / s, i.tx_bytes as f64 / s))
    }
}

impl NetDevSampler {
    /// Every interface of this thread's namespace.
    pub fn new(root: SysRoot) -> NetDevSampler {
        NetDevSampler {
            root,
            pid: None,
            interfaces: Vec::new(),
        }
    }

    /// One interface of this thread's namespace.
    pub fn interface(root: SysRoot, name: &str) -> NetDevSampler {
        NetDevSampler {
            interfaces: vec![name.to_string()],
            ..NetDevSampler::new(root)
        }
    }

    /// Every interface of the namespace of process `pid`.
    pub fn of_process(root: SysRoot, pid: u32) -> NetDevSampler {
        NetDevSampler {
            pid: Some(pid),
            ..NetDevSampler::new(root)
        }
    }

    fn file(&self) -> String {
        match self.pid {
            Some(p) => format!("/proc/{p}/net/dev"),
            None => "/proc/net/dev".to_string(),
        }
    }
}

impl Sampler for NetDevSampler {
    type Snapshot = Stamped<BTreeMap<String, NetDevStats>>;
    type Delta = NetDevDelta;

    fn snapshot(&self) -> Result<Self::Snapshot, Error> {
        let file = self.file();
        let text = self.root.read(&file)?;
        let mut all = parse(&text);
        if all.is_empty() && !text.trim().is_empty() {
            return Err(Error::Format {
                path: self.root.path(&file),
                what: "no `iface: 16 numbers` line".into(),
            });
        }
        if !self.interfaces.is_empty() {
            all.retain(|k, _| self.interfaces.contains(k));
        }
        Ok(Stamped::now(all))
    }

    fn delta(&self, before: &Self::Snapshot, after: &Self::Snapshot) -> NetDevDelta {
        let interfaces = after
            .value
            .iter()
            .filter_map(|(k, a)| Some((k.clone(), a.since(before.value.get(k)?))))
            .collect();
        NetDevDelta {
            elapsed: interval(before, after),
            interfaces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on this project's build VM (kernel 6.18).
    const NET_DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1186842    3312    0    0    0     0          0         0  1186842    3312    0    0    0     0       0          0
  eth0: 91826352   63425    0    2    0     0          0         0  2049211   28851    0    0    0     0       0          0
";

    #[test]
    fn interfaces() {
        let all = parse(NET_DEV);
        assert_eq!(all.len(), 2);
        assert_eq!(all["eth0"].rx_bytes, 91_826_352);
        assert_eq!(all["eth0"].rx_drop, 2);
        assert_eq!(all["eth0"].tx_packets, 28851);
        assert_eq!(all["lo"].tx_bytes, 1_186_842);
        // Old kernels: no space after the colon.
        assert_eq!(
            parse("eth1:12 1 0 0 0 0 0 0 3 1 0 0 0 0 0 0\n")["eth1"].rx_bytes,
            12
        );
        assert!(parse("eth2: 1 2 3\n").is_empty(), "16 numbers or nothing");
    }

    #[test]
    fn loopback_traffic_is_counted() {
        use std::io::{Read, Write};
        let s = NetDevSampler::interface(SysRoot::system(), "lo");
        let before = s.snapshot().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut buf = Vec::new();
            c.read_to_end(&mut buf).unwrap();
            buf.len()
        });
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(&[7u8; 1 << 20]).unwrap();
        drop(c);
        assert_eq!(t.join().unwrap(), 1 << 20);
        let after = s.snapshot().unwrap();
        let d = s.delta(&before, &after);
        let lo = d.interface("lo").unwrap();
        // Every byte crossed lo at least once (plus TCP/IP headers and other traffic).
        assert!(lo.tx_bytes >= 1 << 20, "{lo:?}");
        assert_eq!(d.interfaces.len(), 1);
    }
}
