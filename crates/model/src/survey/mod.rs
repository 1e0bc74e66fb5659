//! The survey's plan: which parts run, on what, for how long, and how a time budget is
//! shared between them.
//!
//! A survey is the board report of the seed documents made in one command: the audit, each
//! storage device benchmarked, wake-up latency idle and under load, network throughput. Each
//! part has a fixed cost (starting, laying out a test file) and a time that can shrink (the
//! runtime of each disk test, the duration of a latency run). [`fit`] shares a budget between
//! them: default times when they fit, else every shrinkable time scaled by the same factor
//! down to its floor, else parts left out from the least important up, each with its reason.
//!
//! Estimates are only estimates (a board under emulation took 81 s for a 60 s plan): as the
//! survey runs, [`refit`] fits the parts still to run into what is left of the budget the
//! same way, each estimate corrected by what the parts of its kind took beyond theirs
//! ([`Overruns`]).

pub mod plan;

use serde::{Deserialize, Serialize};

/// What a part measures; also the words of `--include`/`--exclude`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    Audit,
    Disk,
    Latency,
    Net,
}

impl PartKind {
    pub const ALL: [PartKind; 4] = [
        PartKind::Audit,
        PartKind::Disk,
        PartKind::Latency,
        PartKind::Net,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PartKind::Audit => "audit",
            PartKind::Disk => "disk",
            PartKind::Latency => "latency",
            PartKind::Net => "net",
        }
    }

    pub fn parse(s: &str) -> Option<PartKind> {
        PartKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// One part of a survey as planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedPart {
    /// Unique within a survey, stable between surveys of one machine (compare lines parts up
    /// by it): `audit`, `disk nvme0n1`, `latency idle`, `latency stress`, `net HOST`.
    pub id: String,
    pub kind: PartKind,
    /// What it runs, in words: `SEQ1M Q8T1, RND4K Q32T1 read and write, SEQ1M Q1T1 ... in a
    /// 256 MiB file on / (ext4)`.
    pub what: String,
    /// The command line of the part (`headroom bench disk / --profile survey ...`).
    pub command: Vec<String>,
    /// Seconds it costs whatever its runtime (start, test-file layout).
    pub fixed_s: f64,
    /// How many times the shrinkable time is spent (tests of a disk part, directions of a
    /// network part).
    pub units: u32,
    /// Shrinkable time per unit: the default, then what [`fit`] gave it.
    pub unit_s: f64,
    /// The shortest unit time that still measures something.
    pub min_unit_s: f64,
    /// Bytes written to a filesystem (0 for read-only parts).
    pub writes_bytes: u64,
    /// Lower runs first to be left out when the budget is short.
    pub priority: u32,
    /// Whether it runs; when not, `reason` says why.
    pub run: bool,
    pub reason: Option<String>,
}

impl PlannedPart {
    /// The part's estimated time in seconds.
    pub fn seconds(&self) -> f64 {
        self.fixed_s + f64::from(self.units) * self.unit_s
    }

    /// The least time the part can take.
    pub fn min_seconds(&self) -> f64 {
        self.fixed_s + f64::from(self.units) * self.min_unit_s
    }
}

/// The plan of a survey: its parts and the budget they were fitted into.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub budget_s: f64,
    /// The factor applied to every shrinkable time (1 when the defaults fit).
    pub scale: f64,
    pub parts: Vec<PlannedPart>,
}

impl Plan {
    /// Estimated seconds of the parts that run.
    pub fn seconds(&self) -> f64 {
        self.parts
            .iter()
            .filter(|p| p.run)
            .map(|p| p.seconds())
            .sum()
    }

    /// Bytes the parts that run write.
    pub fn writes_bytes(&self) -> u64 {
        self.parts
            .iter()
            .filter(|p| p.run)
            .map(|p| p.writes_bytes)
            .sum()
    }
}

/// Seconds at the end of every budget that no part is planned into: the survey stops a part
/// still running this long before the budget's end, for it to keep what it measured and
/// remove its test file, and for the survey to write its document. A part planned into them
/// would be stopped before the end of the time it was given.
pub const WRAP_UP_S: f64 = 1.0;

/// Fit `parts` into `budget_s` seconds, less [`WRAP_UP_S`]. Parts already marked not to run
/// stay so. Unit times are scaled by one common factor (at most 1) and never below their
/// floor; when even the floors do not fit, the part with the lowest priority is left out
/// (with the reason) and the rest fitted again. Deterministic: ties in priority leave out the
/// later part first.
pub fn fit(budget_s: f64, parts: Vec<PlannedPart>) -> Plan {
    let budget = budget_s.max(0.0);
    let mut plan = fit_with(budget - WRAP_UP_S, parts, |_, p| {
        format!(
            "left out: the budget of {} leaves no room for it (it needs at least {})",
            format_seconds(budget),
            format_seconds(p.min_seconds())
        )
    });
    plan.budget_s = budget;
    plan
}

/// What the parts that ran took beyond their estimates (less, when faster), by kind: the
/// parts of a kind still to run are expected to take as much more (a board where starting
/// a benchmark, laying out its file and each test's set-up are slow is slow for every disk).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overruns {
    /// (kind, sum of the seconds beyond the estimates, parts).
    by_kind: Vec<(PartKind, f64, u32)>,
}

impl Overruns {
    /// A part of `kind` estimated at `estimated_s` took `took_s`.
    pub fn record(&mut self, kind: PartKind, estimated_s: f64, took_s: f64) {
        let extra = took_s - estimated_s;
        match self.by_kind.iter_mut().find(|(k, _, _)| *k == kind) {
            Some((_, sum, n)) => {
                *sum += extra;
                *n += 1;
            }
            None => self.by_kind.push((kind, extra, 1)),
        }
    }

    /// Seconds the parts of `kind` took beyond their estimates, on average (0 before any
    /// ran).
    pub fn extra_s(&self, kind: PartKind) -> f64 {
        self.by_kind
            .iter()
            .find(|(k, _, _)| *k == kind)
            .map_or(0.0, |(_, sum, n)| sum / f64::from(*n))
    }
}

/// Where a survey stands before its next part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spent {
    /// The whole budget.
    pub budget_s: f64,
    /// Seconds the survey has taken so far.
    pub took_s: f64,
    /// Seconds the parts run so far were estimated at when they started.
    pub estimated_s: f64,
}

/// The parts still to run (`rest`: the times the plan gave them, which are the most they
/// get, the ones left out up front marked so) fitted into what is left of the budget as
/// [`fit`] fits them up front, each part's fixed time corrected by what the earlier parts of
/// its kind took beyond their estimates. A part that no longer fits is left out with a
/// reason that says how the time went.
pub fn refit(spent: &Spent, mut rest: Vec<PlannedPart>, overruns: &Overruns) -> Plan {
    let left = (spent.budget_s - spent.took_s).max(0.0);
    for p in rest.iter_mut().filter(|p| p.run) {
        p.fixed_s = (p.fixed_s + overruns.extra_s(p.kind)).max(0.0);
    }
    let over = spent.took_s - spent.estimated_s;
    let before = if over > 0.5 {
        format!(
            "the parts before it took {}, {} more than estimated",
            format_seconds(spent.took_s),
            format_seconds(over)
        )
    } else {
        format!("the parts before it took {}", format_seconds(spent.took_s))
    };
    fit_with(left - WRAP_UP_S, rest, |_, p| {
        format!(
            "left out as the survey ran: {before}, and the {} left of the {} budget leave no \
             room for it (it needs at least {})",
            format_seconds(left),
            format_seconds(spent.budget_s),
            format_seconds(p.min_seconds())
        )
    })
}

/// [`fit`], with `why(budget, part)` the reason a part is left out.
fn fit_with(
    budget_s: f64,
    mut parts: Vec<PlannedPart>,
    why: impl Fn(f64, &PlannedPart) -> String,
) -> Plan {
    let budget = budget_s.max(0.0);
    let running = |parts: &[PlannedPart]| -> Vec<usize> {
        (0..parts.len()).filter(|&i| parts[i].run).collect()
    };
    // Leave out the least important part (the later one of equal priority) while even the
    // floors of the running parts exceed the budget.
    loop {
        let run = running(&parts);
        let floors: f64 = run.iter().map(|&i| parts[i].min_seconds()).sum();
        let least = run
            .iter()
            .copied()
            .min_by_key(|&i| (parts[i].priority, std::cmp::Reverse(i)));
        match least {
            Some(out) if floors > budget + 1e-9 => {
                let p = &mut parts[out];
                p.run = false;
                p.reason = Some(why(budget, p));
            }
            _ => break,
        }
    }
    let run = running(&parts);
    let fixed: f64 = run.iter().map(|&i| parts[i].fixed_s).sum();
    let shrinkable: f64 = run
        .iter()
        .map(|&i| f64::from(parts[i].units) * parts[i].unit_s)
        .sum();
    let scale = if fixed + shrinkable <= budget || shrinkable <= 0.0 {
        1.0
    } else {
        scale_for(budget, &parts, &run)
    };
    for &i in &run {
        let p = &mut parts[i];
        p.unit_s = (p.unit_s * scale).max(p.min_unit_s);
    }
    Plan {
        budget_s: budget,
        scale,
        parts,
    }
}

/// The common factor such that every unit time, scaled and held at its floor, fills the
/// budget: bisection on the factor (the total is monotonic in it).
fn scale_for(budget: f64, parts: &[PlannedPart], running: &[usize]) -> f64 {
    let total = |s: f64| -> f64 {
        running
            .iter()
            .map(|&i| {
                let p = &parts[i];
                p.fixed_s + f64::from(p.units) * (p.unit_s * s).max(p.min_unit_s)
            })
            .sum()
    };
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if total(mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Seconds as a person reads them: `45 s`, `3 min 20 s`, `1 h 5 min`.
pub fn format_seconds(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=99 => format!("{s} s"),
        100..=3599 if s % 60 == 0 => format!("{} min", s / 60),
        100..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ if (s % 3600) / 60 == 0 => format!("{} h", s / 3600),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: &str, fixed: f64, units: u32, unit: f64, min: f64, prio: u32) -> PlannedPart {
        PlannedPart {
            id: id.into(),
            kind: PartKind::Disk,
            what: String::new(),
            command: Vec::new(),
            fixed_s: fixed,
            units,
            unit_s: unit,
            min_unit_s: min,
            writes_bytes: 0,
            priority: prio,
            run: true,
            reason: None,
        }
    }

    /// A disk part (1 s, then 6 units of 5 s at least 1 s; priority 9) and a latency part
    /// (2 units of 10 s at least `lat_min` s; priority 5) fitted into `budget` s.
    fn disk_and_latency(budget: f64, lat_min: f64) -> Plan {
        fit(
            budget,
            vec![
                part("disk", 1.0, 6, 5.0, 1.0, 9),
                part("lat", 0.0, 2, 10.0, lat_min, 5),
            ],
        )
    }

    #[test]
    fn defaults_kept_when_they_fit() {
        let plan = fit(100.0, vec![part("a", 1.0, 6, 5.0, 1.0, 9)]);
        assert_eq!(plan.scale, 1.0);
        assert_eq!(plan.parts[0].unit_s, 5.0);
        assert_eq!(plan.seconds(), 31.0);
    }

    #[test]
    fn times_scale_down_to_fill_the_budget() {
        // 1 + 6 x 5 = 31 s and 2 x 10 = 20 s do not fit in 30 s; floors (7 + 4 = 11 s) do.
        // The parts fill it but for the survey's wrap-up.
        let plan = disk_and_latency(30.0, 2.0);
        assert!(plan.scale < 1.0);
        assert_eq!(plan.budget_s, 30.0);
        assert!(
            (plan.seconds() - (30.0 - WRAP_UP_S)).abs() < 0.01,
            "{}",
            plan.seconds()
        );
        assert!(plan.parts.iter().all(|p| p.run));
    }

    #[test]
    fn floors_hold_and_the_least_important_part_is_left_out() {
        let plan = disk_and_latency(10.0, 5.0);
        assert!(plan.parts[0].run);
        assert!(!plan.parts[1].run);
        let why = plan.parts[1].reason.as_deref().unwrap_or_default();
        assert!(
            why.contains("budget of 10 s") && why.contains("10 s"),
            "{why}"
        );
        assert!(plan.seconds() <= 10.0);
        assert!(plan.parts[0].unit_s >= 1.0);
    }

    #[test]
    fn parts_already_out_stay_out_and_an_empty_budget_runs_nothing_long() {
        let mut p = part("x", 1.0, 1, 1.0, 1.0, 1);
        p.run = false;
        p.reason = Some("excluded".into());
        let plan = fit(0.0, vec![p, part("y", 1.0, 1, 1.0, 1.0, 1)]);
        assert!(plan.parts.iter().all(|p| !p.run));
        assert_eq!(plan.parts[0].reason.as_deref(), Some("excluded"));
        assert_eq!(plan.seconds(), 0.0);
    }

    #[test]
    fn overruns_are_learned_by_kind() {
        let mut o = Overruns::default();
        assert_eq!(o.extra_s(PartKind::Disk), 0.0);
        o.record(PartKind::Disk, 6.4, 9.4);
        o.record(PartKind::Disk, 6.4, 11.4);
        o.record(PartKind::Audit, 2.0, 0.5);
        assert_eq!(o.extra_s(PartKind::Disk), 4.0);
        assert_eq!(o.extra_s(PartKind::Audit), -1.5);
        assert_eq!(o.extra_s(PartKind::Latency), 0.0);
    }

    /// The aarch64 board of the lab: `survey --budget 60s
    /// --quick` planned 60 s and took 81.3 s (the audit 5.5 s for 2, each disk part 3 s or
    /// more beyond its estimate). The same board simulated through the plan functions: the
    /// later parts are fitted into what is left as the survey runs, the disks after the first
    /// estimated with its overrun, and the whole ends within the budget but for the last
    /// kind's first overrun, which nothing could foresee.
    #[test]
    fn a_slow_board_keeps_to_its_budget_as_the_rest_is_fitted_into_what_is_left() {
        let kind_part = |id: &str, kind, fixed, units, unit, min, prio| PlannedPart {
            kind,
            ..part(id, fixed, units, unit, min, prio)
        };
        let defaults = vec![
            kind_part("audit", PartKind::Audit, 2.0, 0, 0.0, 0.0, 100),
            kind_part("disk nvme0n1", PartKind::Disk, 1.67, 6, 2.0, 1.0, 80),
            kind_part("disk sda", PartKind::Disk, 1.0, 3, 2.0, 1.0, 30),
            kind_part("disk sdb", PartKind::Disk, 1.0, 3, 2.0, 1.0, 30),
            kind_part("disk sdc", PartKind::Disk, 1.0, 3, 2.0, 1.0, 30),
            kind_part("disk sdd", PartKind::Disk, 1.0, 3, 2.0, 1.0, 30),
            kind_part("latency idle", PartKind::Latency, 1.0, 1, 10.0, 3.0, 60),
            kind_part("latency stress", PartKind::Latency, 1.0, 1, 10.0, 3.0, 50),
        ];
        // What this board adds to every part of a kind, seconds.
        let slow = |k: PartKind| match k {
            PartKind::Audit => 3.5,
            PartKind::Disk => 3.0,
            _ => 0.5,
        };
        let budget = 60.0;
        let plan = fit(budget, defaults.clone());
        assert!(plan.seconds() <= budget + 1e-9);
        let (mut took, mut estimated) = (0.0, 0.0);
        let mut overruns = Overruns::default();
        let mut given = Vec::new();
        for i in 0..defaults.len() {
            let rest = plan.parts[i..].to_vec();
            let spent = Spent {
                budget_s: budget,
                took_s: took,
                estimated_s: estimated,
            };
            let now = refit(&spent, rest, &overruns);
            // What was left of the budget was never planned past.
            assert!(now.seconds() <= budget - took + 1e-9, "{now:#?}");
            let p = &now.parts[0];
            if !p.run {
                let why = p.reason.as_deref().unwrap_or_default();
                assert!(why.starts_with("left out as the survey ran: the parts before it took"));
                assert!(why.contains("more than estimated"), "{why}");
                given.push((p.id.clone(), None));
                continue;
            }
            let t = p.seconds() + slow(p.kind);
            overruns.record(p.kind, p.seconds(), t);
            took += t;
            estimated += p.seconds();
            given.push((p.id.clone(), Some(p.unit_s)));
        }
        // Up front the plan would have taken 60 s + the board's 3.5 + 5 x 3 + 2 x 0.5 s.
        assert!(
            took <= budget + slow(PartKind::Latency) + 1e-9,
            "{took} s: {given:?}"
        );
        // The disks after the first ran shorter tests than planned (their estimates grew by
        // what the first took beyond its own); the least important parts were left out.
        assert!(
            given[2].1.is_some_and(|u| u < plan.parts[2].unit_s),
            "{given:?}"
        );
        assert!(given.iter().any(|(_, u)| u.is_none()), "{given:?}");
        // The first disk, which ran before anything of its kind was known, as planned but
        // for the audit's overrun, which made room by shrinking every unit a little.
        assert!(
            given[1].1.is_some_and(|u| u <= plan.parts[1].unit_s),
            "{given:?}"
        );
    }

    #[test]
    fn seconds_read_as_a_person_writes_them() {
        assert_eq!(format_seconds(45.2), "45 s");
        assert_eq!(format_seconds(200.0), "3 min 20 s");
        assert_eq!(format_seconds(600.0), "10 min");
        assert_eq!(format_seconds(3900.0), "1 h 5 min");
        assert_eq!(format_seconds(3600.0), "1 h");
    }
}
