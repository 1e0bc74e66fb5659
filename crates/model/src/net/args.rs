//! The values of iperf3's flags as `headroom bench net` reads them from a pasted command line
//! (iperf3 3.x, src/iperf_api.c and src/units.c), each refusal one sentence naming the flag.

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
}
