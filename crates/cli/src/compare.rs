//! `headroom compare A.json B.json [C.json ...]`: the same tests side by side with the
//! difference to the first run, what changed between the runs, and `--fail-above PCT` for a
//! lab's CI.

use crate::output::GlobalArgs;
use clap::Args;
use report::Summary;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Result documents (files written by `--json`, or history ids); the first is the base.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,

    /// Exit 1 when a test is worse than the first run by more than PCT percent (and by more
    /// than the runs' own spread).
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,

    /// The history database for ids (default: $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if let Some(p) = args.fail_above {
        if !(p.is_finite() && p >= 0.0) {
            anyhow::bail!("--fail-above {p}: give a percentage of 0 or more");
        }
    }
    let mut loaded = Vec::new();
    for input in &args.runs {
        let (doc, origin) = crate::history::load(input, args.db.as_deref())?;
        if doc.envelope.kind == "report" {
            anyhow::bail!(
                "{origin} holds several documents (`report --json` of several inputs): compare \
                 the result documents themselves"
            );
        }
        loaded.push((doc, origin));
    }
    let surveys = loaded.iter().filter(|(d, _)| d.kind() == "survey").count();
    if surveys > 0 {
        // Surveys line up part by part, each part compared as its own kind.
        if surveys < loaded.len() {
            anyhow::bail!(
                "a survey compares only with other surveys: give survey documents alone, or a \
                 part's document with the same kind of document"
            );
        }
        let mut bodies = Vec::new();
        for (doc, origin) in &loaded {
            bodies.push((origin.clone(), report::survey::SurveyBody::of(doc, origin)?));
        }
        crate::out!("{}", report::survey::compare_markdown(&bodies)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut summaries = Vec::new();
    for (doc, origin) in &loaded {
        summaries.push(Summary::of(doc, origin)?);
    }
    let c = report::compare::compare(&summaries)?;
    if global.json {
        crate::output::print_result("compare", &c)?;
    } else {
        crate::out!("{}", c.to_markdown())?;
    }
    if let Some(pct) = args.fail_above {
        let worse = c.regressions_above(pct);
        for (metric, origin, d) in &worse {
            eprintln!("headroom: regression: {metric} in {origin}: {d:+.1} % (limit {pct} %)");
        }
        if !worse.is_empty() {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
