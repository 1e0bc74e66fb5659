//! The values of iperf3's flags as `headroom bench net` reads them from a pasted command line
//! (iperf3 3.x, src/iperf_api.c and src/units.c), each refusal one sentence naming the flag,
//! and the test they ask for ([`config_of`]).

use super::{Direction, NetConfig, Protocol};

/// iperf3's UDP rate without -b (iperf.h: UDP_RATE, 1 Mbit/s).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// Limits of iperf3 3.12 (iperf.h: MAX_BLOCKSIZE 1 MiB, MAX_UDP_BLOCKSIZE 65507, MAX_MSS
/// 9 KiB).
pub const MAX_BLOCKSIZE: u32 = 1 << 20;
pub const MAX_UDP_BLOCKSIZE: u32 = 65_507;
pub const MAX_MSS: u32 = 9 * 1024;

/// iperf3's flags that shape a test, as given (`bench net`'s command line).
#[derive(Clone, Debug, Default)]
pub struct NetFlags {
    /// `-u`.
    pub udp: bool,
    /// `-b RATE`, bits per second with K/M/G/T (base 1000).
    pub bitrate: Option<String>,
    /// `-l BYTES` (base 1024).
    pub length: Option<String>,
    /// `-w BYTES` (base 1024).
    pub window: Option<String>,
    /// `-M BYTES`.
    pub mss: Option<u32>,
    pub udp_counters_64bit: bool,
    /// `-i SECONDS`; 0: no interval reports.
    pub interval: f64,
    pub find_rate: bool,
    /// `--loss-threshold PERCENT`.
    pub loss_threshold: f64,
    /// `-f UNIT`, accepted for pasted lines.
    pub format: Option<String>,
    /// `-t SECONDS`.
    pub time: Option<u32>,
    /// `-O SECONDS`.
    pub omit: u32,
    /// `-P N`.
    pub parallel: u32,
    /// `-R`.
    pub reverse: bool,
    pub bidir: bool,
    /// `-Z`.
    pub zerocopy: bool,
}

/// `-t SECONDS`: a test length of 1 s to a day, iperf3's limit.
pub fn positive_seconds(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=86_400).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!(
            "{n} seconds is not a test length: give 1 to 86400 (iperf3's limit)"
        )),
        Err(_) => Err("not a number of seconds: give a whole number, e.g. -t 10".into()),
    }
}

/// iperf3's numbers with a K/M/G/T suffix (units.c): `base` 1000 for rates, 1024 for sizes.
pub fn iperf_number(flag: &str, s: &str, base: f64) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], base),
        Some('m' | 'M') => (&t[..t.len() - 1], base * base),
        Some('g' | 'G') => (&t[..t.len() - 1], base * base * base),
        Some('t' | 'T') => (&t[..t.len() - 1], base * base * base * base),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("{flag} {s}: not a number: give digits with an optional K, M, G or T, e.g. {flag} 100M, {flag} 128K")
    })?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("{flag} {s}: must not be negative"));
    }
    Ok((v * mult) as u64)
}

/// The engine configuration iperf3's flags ask for, and notes on what headroom chose; a value
/// that cannot run is one sentence naming the flag.
pub fn config_of(a: &NetFlags) -> Result<(NetConfig, Vec<String>), String> {
    let mut notes = Vec::new();
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let bitrate_bps = match &a.bitrate {
        Some(b) => {
            let v = iperf_number("-b", b, 1000.0)?;
            if v == 0 {
                notes.push("-b 0: unlimited rate, as iperf3".to_string());
                None
            } else {
                Some(v)
            }
        }
        None if a.udp => Some(DEFAULT_UDP_RATE),
        None => None,
    };
    let len = match &a.length {
        Some(l) => {
            let v = iperf_number("-l", l, 1024.0)?;
            let (min, max) = if a.udp {
                (
                    if a.udp_counters_64bit { 16 } else { 12 },
                    u64::from(MAX_UDP_BLOCKSIZE),
                )
            } else {
                (1, u64::from(MAX_BLOCKSIZE))
            };
            if v < min || v > max {
                return Err(format!("-l {l}: give {min} to {max} bytes"));
            }
            v as u32
        }
        None => 0,
    };
    let window = match &a.window {
        Some(w) => {
            let v = iperf_number("-w", w, 1024.0)?;
            if v == 0 || v > 512 * 1024 * 1024 {
                return Err(format!("-w {w}: give 1 byte to 512M (iperf3's limit)"));
            }
            Some(v as u32)
        }
        None => None,
    };
    if let Some(m) = a.mss {
        if !(88..=MAX_MSS).contains(&m) {
            return Err(format!("-M {m}: give 88 to {} bytes", MAX_MSS));
        }
    }
    if a.interval != 0.0 && !(0.1..=60.0).contains(&a.interval) {
        return Err(format!(
            "-i {}: give 0.1 to 60 seconds, or 0 for no interval reports",
            a.interval
        ));
    }
    if a.find_rate && !a.udp {
        return Err("--find-rate steps a UDP rate: add -u".to_string());
    }
    if !(a.loss_threshold > 0.0 && a.loss_threshold < 100.0) {
        return Err(format!(
            "--loss-threshold {}: give a percentage above 0 and below 100",
            a.loss_threshold
        ));
    }
    if let Some(f) = &a.format {
        notes.push(format!(
            "-f {f}: headroom prints rates in Mbit/s (10^6 bit/s) and keeps bytes/s in --json"
        ));
    }
    let duration_s = match (a.time, a.find_rate) {
        (Some(t), _) => t,
        (None, true) => 3,
        (None, false) => 10,
    };
    Ok((
        NetConfig {
            protocol,
            direction: if a.bidir {
                Direction::Bidir
            } else if a.reverse {
                Direction::Reverse
            } else {
                Direction::Forward
            },
            duration_s,
            omit_s: a.omit,
            streams: a.parallel,
            len,
            bitrate_bps,
            window,
            mss: a.mss,
            zerocopy: a.zerocopy,
            udp_counters_64bit: a.udp_counters_64bit,
        },
        notes,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    #[test]
    fn iperf3s_numbers() {
        assert_eq!(iperf_number("-b", "100M", 1000.0), Ok(100_000_000));
        assert_eq!(iperf_number("-l", "128K", 1024.0), Ok(131_072));
        assert_eq!(iperf_number("-w", "4m", 1024.0), Ok(4 << 20));
        assert_eq!(iperf_number("-b", "1.5G", 1000.0), Ok(1_500_000_000));
        assert_eq!(iperf_number("-l", "1448", 1024.0), Ok(1448));
        let e = iperf_number("-b", "fast", 1000.0).unwrap_err();
        assert_eq!(
            e,
            "-b fast: not a number: give digits with an optional K, M, G or T, e.g. -b 100M, -b 128K"
        );
        assert!(iperf_number("-b", "-5M", 1000.0)
            .unwrap_err()
            .contains("negative"));
        assert!(iperf_number("-b", "NaN", 1000.0).is_err());
    }

    #[test]
    fn test_lengths() {
        assert_eq!(positive_seconds(" 10"), Ok(10));
        assert_eq!(positive_seconds("86400"), Ok(86_400));
        assert!(positive_seconds("0")
            .unwrap_err()
            .contains("not a test length"));
        assert!(positive_seconds("-1").unwrap_err().contains("1 to 86400"));
        assert!(positive_seconds("10s")
            .unwrap_err()
            .contains("not a number of seconds"));
    }

    fn flags(udp: bool) -> NetFlags {
        NetFlags {
            udp,
            interval: 1.0,
            loss_threshold: 0.1,
            parallel: 1,
            ..Default::default()
        }
    }

    #[test]
    fn flags_become_a_test_or_one_sentence() {
        // UDP without -b: iperf3's 1 Mbit/s (1024 x 1024 bit/s); -b 0 is unlimited.
        let (t, notes) = config_of(&flags(true)).unwrap();
        assert_eq!((t.bitrate_bps, t.duration_s), (Some(1_048_576), 10));
        assert!(notes.is_empty());
        let (t, notes) = config_of(&NetFlags {
            bitrate: Some("0".into()),
            ..flags(true)
        })
        .unwrap();
        assert_eq!(t.bitrate_bps, None);
        assert!(notes[0].contains("unlimited"));
        let err = |f: NetFlags| config_of(&f).unwrap_err();
        assert_eq!(
            err(NetFlags {
                length: Some("4".into()),
                ..flags(true)
            }),
            "-l 4: give 12 to 65507 bytes"
        );
        assert_eq!(
            err(NetFlags {
                window: Some("1G".into()),
                ..flags(false)
            }),
            "-w 1G: give 1 byte to 512M (iperf3's limit)"
        );
        assert_eq!(
            err(NetFlags {
                mss: Some(10),
                ..flags(false)
            }),
            "-M 10: give 88 to 9216 bytes"
        );
        assert_eq!(
            err(NetFlags {
                find_rate: true,
                ..flags(false)
            }),
            "--find-rate steps a UDP rate: add -u"
        );
        assert!(err(NetFlags {
            loss_threshold: 100.0,
            ..flags(true)
        })
        .starts_with("--loss-threshold 100: give a percentage"));
    }
}
