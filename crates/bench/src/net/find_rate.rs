//! `--find-rate`: the highest UDP rate a path carries with loss under a threshold, searched
//! the way it is done by hand with iperf: offer a rate, look at the loss, go up while it
//! holds, then bisect between the last rate that held and the first that did not.
//!
//! The search is a pure function over a trial function (hyperfine's mock executor is the
//! model): the real one runs a UDP test, the tests' one simulates a path. The answer is the
//! rate the best trial *received*, never an offered rate: a sender shaped on its own
//! interface offers 1 Gbit/s, the qdisc holds it to 200 Mbit/s, and nothing is lost.

/// One trial: what was offered and what arrived, bits per second (all streams), and the
/// datagrams lost, percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trial {
    pub offered_bps: f64,
    pub received_bps: f64,
    pub loss_percent: f64,
    /// The path's ceiling in bits per second of UDP payload, when the trial learnt it (the
    /// interface is known once a test has connected): the search goes up to it and not
    /// past it. Without one it doubles the rate.
    pub ceiling_bps: Option<f64>,
}

/// What the search starts from and where it stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// The first rate offered, bits per second (all streams).
    pub start_bps: f64,
    /// Loss allowed, percent.
    pub threshold_percent: f64,
    /// The most trials run.
    pub max_trials: usize,
    /// The bisection ends when the bracket is narrower than this share of its top (0.01:
    /// 1 %).
    pub precision: f64,
}

/// The lowest rate a search offers, bits per second.
pub const MIN_RATE_BPS: f64 = 1000.0;
/// The highest rate a search without a known ceiling offers: 400 Gbit/s, the fastest
/// Ethernet.
pub const MAX_RATE_BPS: f64 = 400e9;

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// Every trial in the order run.
    pub trials: Vec<Trial>,
    /// The index in `trials` of the trial with loss under the threshold that received the
    /// most; `None` when every trial lost too much (or none ran).
    pub best: Option<usize>,
}

impl Found {
    /// The answer: what the best trial received, bits per second.
    pub fn rate_bps(&self) -> Option<f64> {
        self.best.map(|i| self.trials[i].received_bps)
    }
}

impl Plan {
    /// The plan of `bench net --find-rate`: from `start_bps` with `threshold_percent` of
    /// loss allowed, at most 14 trials (14 x `-t` seconds, bounded), the
    /// bisection down to 1 % of its bracket.
    pub fn new(start_bps: f64, threshold_percent: f64) -> Plan {
        Plan {
            start_bps,
            threshold_percent,
            max_trials: 14,
            precision: 0.01,
        }
    }

    /// The search for a UDP `test` of `streams` streams whose `-b` is `bitrate_bps`: from -b
    /// per stream, or 1 Gbit/s per stream when -b was left at iperf3's 1 Mbit/s default (far
    /// below any link worth searching), in all streams together.
    pub fn for_test(bitrate_bps: Option<u64>, streams: u32, threshold_percent: f64) -> Plan {
        let per_stream = bitrate_bps
            .filter(|&b| b != model::net::args::DEFAULT_UDP_RATE)
            .unwrap_or(1_000_000_000) as f64;
        Plan::new(per_stream * f64::from(streams.max(1)), threshold_percent)
    }

    fn holds(&self, t: &Trial) -> bool {
        t.loss_percent <= self.threshold_percent && t.received_bps > 0.0
    }
}

/// The `-b` of each of `streams` streams for a trial that offers `offered_bps` in all (at
/// least 1 kbit/s).
pub fn stream_rate(offered_bps: f64, streams: u32) -> u64 {
    (offered_bps / f64::from(streams.max(1))).max(1000.0) as u64
}

/// Search with `trial`, which runs one test at the offered rate (bits per second, all
/// streams) and returns what happened, `Ok(None)` when the run was stopped (Ctrl-C: the
/// search ends with what it has), or an error that ends the search.
pub fn find_rate<E>(
    plan: &Plan,
    mut trial: impl FnMut(f64) -> Result<Option<Trial>, E>,
) -> Result<Found, E> {
    let mut trials: Vec<Trial> = Vec::new();
    let mut ceiling = None;
    // The highest rate that held and the lowest that did not.
    let mut good: Option<f64> = None;
    let mut bad: Option<f64> = None;
    let mut offer = plan.start_bps.clamp(MIN_RATE_BPS, MAX_RATE_BPS);
    while trials.len() < plan.max_trials {
        let Some(t) = trial(offer)? else { break };
        trials.push(t);
        ceiling = t.ceiling_bps.filter(|c| *c >= MIN_RATE_BPS).or(ceiling);
        let top: f64 = ceiling.unwrap_or(MAX_RATE_BPS);
        if plan.holds(&t) {
            good = Some(good.map_or(offer, |g: f64| g.max(offer)));
        } else {
            bad = Some(bad.map_or(offer, |b: f64| b.min(offer)));
        }
        offer = match (good, bad) {
            // Upward: to the ceiling when known, else by doubling.
            (Some(g), None) => {
                if g >= top {
                    break;
                }
                match ceiling {
                    Some(c) => c,
                    None => (g * 2.0).min(top),
                }
            }
            // Bisect between the last rate that held (or nothing) and the first that did not.
            (g, Some(b)) => {
                let lo = g.unwrap_or(0.0);
                if (b - lo) / b < plan.precision || b <= MIN_RATE_BPS {
                    break;
                }
                ((lo + b) / 2.0).max(MIN_RATE_BPS)
            }
            (None, None) => break,
        };
    }
    let best = trials
        .iter()
        .enumerate()
        .filter(|(_, t)| plan.holds(t))
        .max_by(|a, b| a.1.received_bps.total_cmp(&b.1.received_bps))
        .map(|(i, _)| i);
    Ok(Found { trials, best })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path that carries `capacity` bits per second: what is offered above it is lost,
    /// or, with `shaped_here`, held back by the sender's own qdisc (nothing lost, nothing
    /// more received).
    fn path(
        capacity: f64,
        shaped_here: bool,
        ceiling_bps: Option<f64>,
    ) -> impl FnMut(f64) -> Result<Option<Trial>, ()> {
        move |offered| {
            let received = offered.min(capacity);
            let loss = if shaped_here || offered <= capacity {
                0.0
            } else {
                (offered - capacity) / offered * 100.0
            };
            Ok(Some(Trial {
                offered_bps: offered,
                received_bps: received,
                loss_percent: loss,
                ceiling_bps,
            }))
        }
    }

    fn plan(start: f64) -> Plan {
        Plan {
            start_bps: start,
            threshold_percent: 0.1,
            max_trials: 14,
            precision: 0.01,
        }
    }

    fn offered(f: &Found) -> Vec<f64> {
        f.trials.iter().map(|t| t.offered_bps / 1e6).collect()
    }

    #[test]
    fn a_start_that_holds_is_searched_upward() {
        // -b 100M on loopback held, and the search stopped there.
        let f = find_rate(&plan(100e6), path(20e9, false, None)).unwrap();
        assert_eq!(
            offered(&f)[..9],
            [100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 12800.0, 25600.0]
        );
        // Then between 12.8 and 25.6 Gbit/s, to 1 %.
        let rate = f.rate_bps().unwrap();
        assert!(rate <= 20e9 && rate > 20e9 * 0.99, "{rate}");
        assert_eq!(f.trials.len(), 14, "the bound on trials holds");
    }

    #[test]
    fn up_to_a_known_ceiling_then_bisect() {
        // A 200 Mbit/s path with its ceiling known (190 Mbit/s of UDP payload): one step
        // to the ceiling, which holds, and the search ends there.
        let f = find_rate(&plan(100e6), path(200e6, false, Some(190e6))).unwrap();
        assert_eq!(offered(&f), [100.0, 190.0]);
        assert_eq!(f.rate_bps(), Some(190e6));
        // A path below its ceiling: up to the ceiling, then halves towards the last good.
        let f = find_rate(&plan(100e6), path(150e6, false, Some(190e6))).unwrap();
        assert_eq!(offered(&f)[..4], [100.0, 190.0, 145.0, 167.5]);
        let rate = f.rate_bps().unwrap();
        assert!(rate <= 150e6 && rate > 150e6 * 0.99, "{rate}");
    }

    #[test]
    fn a_start_that_loses_is_bisected_down() {
        let f = find_rate(&plan(1e9), path(50e6, false, None)).unwrap();
        assert_eq!(offered(&f)[..5], [1000.0, 500.0, 250.0, 125.0, 62.5]);
        let rate = f.rate_bps().unwrap();
        assert!(rate <= 50e6 && rate > 50e6 * 0.98, "{rate}");
        // Every trial under 0.1 % loss carried what it offered; the answer is one of them.
        let best = f.trials[f.best.unwrap()];
        assert!(best.loss_percent <= 0.1);
    }

    #[test]
    fn the_answer_is_what_arrived_not_what_was_offered() {
        // Shaped to 200 Mbit/s on the sender's own interface, 1 Gbit/s
        // offered loses nothing (the qdisc holds it back) and 194.76 Mbit/s arrive.
        let f = find_rate(&plan(1e9), path(194.76e6, true, None)).unwrap();
        assert_eq!(f.rate_bps(), Some(194.76e6));
        assert!(f.trials.iter().all(|t| t.received_bps <= 194.76e6));
    }

    #[test]
    fn nothing_holds_and_interruption() {
        let lossy = |o: f64| {
            Ok::<_, ()>(Some(Trial {
                offered_bps: o,
                received_bps: o * 0.9,
                loss_percent: 10.0,
                ceiling_bps: None,
            }))
        };
        let f = find_rate(&plan(1e6), lossy).unwrap();
        assert_eq!(f.rate_bps(), None);
        assert!(f.trials.len() <= 14 && f.trials.last().unwrap().offered_bps >= MIN_RATE_BPS);
        // Stopped after the second trial: the first's answer is kept.
        let mut n = 0;
        let f = find_rate(&plan(10e6), |o| {
            n += 1;
            Ok::<_, ()>((n < 3).then_some(Trial {
                offered_bps: o,
                received_bps: o,
                loss_percent: 0.0,
                ceiling_bps: None,
            }))
        })
        .unwrap();
        assert_eq!(offered(&f), [10.0, 20.0]);
        assert_eq!(f.rate_bps(), Some(20e6));
        // An error ends the search.
        assert_eq!(
            find_rate(&plan(10e6), |_| Err::<Option<Trial>, _>("x")),
            Err("x")
        );
    }

    #[test]
    fn the_search_starts_from_b_or_a_gigabit_per_stream() {
        let p = Plan::for_test(Some(model::net::args::DEFAULT_UDP_RATE), 2, 1.0);
        assert_eq!(p.start_bps, 2e9);
        assert_eq!(Plan::for_test(Some(300_000_000), 2, 1.0).start_bps, 6e8);
        assert_eq!(Plan::for_test(None, 1, 1.0).start_bps, 1e9);
        assert_eq!(stream_rate(6e8, 2), 300_000_000);
        assert_eq!(stream_rate(10.0, 4), 1000);
    }
}
