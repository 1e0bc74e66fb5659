//! The errors of a latency run. What a run is asked to do (cyclictest's `-t -a -p -i -d -D -l
//! -h -m`), checked against the machine before anything starts, is `model::latency::Config`.

use model::latency::ConfigError;
#[cfg(test)]
use model::latency::{Config, Limits};

#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("could not start measuring thread {thread}: {reason}")]
    Thread { thread: usize, reason: String },
}

/// The configuration the unit tests start from: 200 loops, no duration.
#[cfg(test)]
pub(crate) fn test_config() -> Config {
    Config {
        limits: Limits {
            duration: None,
            loops: Some(200),
        },
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use super::test_config as cfg;
    use super::*;
    use model::latency::Affinity;
    use std::time::Duration;

    #[test]
    fn intervals_follow_cyclictest() {
        let c = Config::default();
        let v: Vec<u128> = (0..4).map(|i| c.interval_of(i).as_micros()).collect();
        assert_eq!(v, vec![1000, 1500, 2000, 2500]); // seeds/001: I:1000 ... I:2500
        let p = Config {
            affinity: Affinity::Pinned(vec![2, 3]),
            ..Config::default()
        };
        assert_eq!(
            (p.cpu_of(0), p.cpu_of(1), p.cpu_of(2)),
            (Some(2), Some(3), Some(2))
        );
    }

    #[test]
    fn bad_configs_get_a_sentence() {
        let avail = [0, 1];
        let bad = |c: Config| c.validate(&avail).unwrap_err().0;
        assert!(bad(Config {
            interval: Duration::ZERO,
            ..cfg()
        })
        .contains("interval"));
        assert!(bad(Config {
            priority: 100,
            ..cfg()
        })
        .contains("priority 100"));
        assert!(bad(Config {
            threads: 9,
            ..cfg()
        })
        .contains("between 1 and 8"));
        let e = bad(Config {
            affinity: Affinity::Pinned(vec![7]),
            ..cfg()
        });
        assert!(
            e.contains("CPU 7 does not exist") && e.contains("available: 0-1"),
            "{e}"
        );
        assert!(cfg().validate(&avail).is_ok());
    }
}
