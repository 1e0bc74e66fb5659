//! `headroom compare A.json B.json [C.json ...]`: the same tests side by side with the
//! difference to the first run, what changed between the runs, and `--fail-above PCT` for a
//! lab's CI.

use crate::output::GlobalArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Result documents (files written by `--json`, history ids, or HOST:latest for a host's
    /// newest run); the first is the base. With --group kernel: the two kernel releases.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,

    /// `kernel`: each board's newest run on the first kernel release given against its newest
    /// run on the second, from the history (--db); regressions beyond each run's own spread
    /// are listed first.
    #[arg(long, value_name = "kernel", value_parser = ["kernel"])]
    pub group: Option<String>,

    /// Only runs of this kind (disk, latency, net, survey...): HOST:latest is that host's
    /// newest run of the kind; with --group, the runs paired.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,

    /// Exit 1 when a measured result (MB/s, IOPS, a latency) is worse than the first run's by
    /// more than PCT percent, in the direction that is worse, and by more than the runs' own
    /// spread; counters and context (interrupt rates, settings) are shown, never gated.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,

    /// The history for ids: an SQLite FILE or postgresql://USER@HOST/DB (default:
    /// HEADROOM_DB, else $XDG_DATA_HOME/headroom/history.sqlite).
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if let Some(p) = args.fail_above {
        if !(p.is_finite() && p >= 0.0) {
            anyhow::bail!("--fail-above {p}: give a percentage of 0 or more");
        }
    }
    if args.group.is_some() {
        return by_kernel(global, args);
    }
    let mut loaded = Vec::new();
    for input in &args.runs {
        let (doc, origin) = crate::history::load(input, args.db.as_deref(), args.kind.as_deref())?;
        if doc.envelope.kind == report::document::DocumentKind::Report {
            anyhow::bail!(
                "{origin} holds several documents (`report --json` of several inputs): compare \
                 the result documents themselves"
            );
        }
        loaded.push((doc, origin));
    }
    let surveys = loaded
        .iter()
        .filter(|(d, _)| d.kind() == report::document::DocumentKind::Survey)
        .count();
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
            bodies.push((
                origin.clone(),
                report::kinds::survey::SurveyDocument::of(doc, origin)?,
            ));
        }
        let (markdown, parts) = report::kinds::survey::compare_surveys(&bodies)?;
        crate::out!("{markdown}")?;
        return Ok(gate(&parts, args.fail_above));
    }
    let mut summaries = Vec::new();
    for (doc, origin) in &loaded {
        summaries.push(report::kinds::summarize(doc, origin)?);
    }
    let c = report::compare::compare(&summaries)?;
    if global.json {
        crate::output::print_result(report::document::DocumentKind::Compare, &c)?;
    } else {
        crate::out!("{}", c.to_markdown())?;
    }
    Ok(gate(std::slice::from_ref(&c), args.fail_above))
}

/// `compare --group kernel A B`: each board's newest run on A against its newest on B.
fn by_kernel(global: &GlobalArgs, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let [a, b] = args.runs.as_slice() else {
        return Err(crate::console::usage(
            "compare --group kernel takes two kernel releases (uname -r), the base first",
        ));
    };
    let mut store = crate::history::open_to_read(&crate::output::db_path(args.db.as_deref())?)?;
    let rows = store.list_where(report::history::Filter {
        kind: args.kind.as_deref(),
        ..Default::default()
    })?;
    let mut boards = Vec::new();
    for (board, id_a, id_b) in report::history_pg::kernel_pairs(&rows, a, b) {
        let (doc_a, doc_b) = (store.get(id_a)?, store.get(id_b)?);
        let pair = [
            report::kinds::summarize(&doc_a, &format!("#{id_a}"))?,
            report::kinds::summarize(&doc_b, &format!("#{id_b}"))?,
        ];
        boards.push((board, report::compare::compare(&pair)?));
    }
    if boards.is_empty() {
        anyhow::bail!(
            "no board in {} has runs on both kernel {a:?} and kernel {b:?}: `headroom history` \
             lists the runs",
            store.name()
        );
    }
    let changes = report::history_pg::kernel_changes(&boards);
    if global.json {
        crate::output::print_result(
            report::document::DocumentKind::Compare,
            &serde_json::json!({"group": "kernel", "base": a, "other": b, "changes": changes}),
        )?;
    } else {
        crate::out!(
            "{}",
            report::history_pg::kernel_changes_markdown(a, b, &changes)
        )?;
    }
    let comparisons: Vec<_> = boards.into_iter().map(|(_, c)| c).collect();
    Ok(gate(&comparisons, args.fail_above))
}

/// `--fail-above PCT`: each measured result that regressed beyond it, one line with its
/// metric and unit, and exit 1 when there is one.
fn gate(comparisons: &[report::compare::Comparison], fail_above: Option<f64>) -> ExitCode {
    let Some(pct) = fail_above else {
        return ExitCode::SUCCESS;
    };
    let worse: Vec<_> = comparisons
        .iter()
        .flat_map(|c| c.regressions_above(pct))
        .collect();
    for r in &worse {
        // Metric names come from the documents: escaped as every stderr line is.
        crate::console::info(format_args!("regression: {} (limit {pct} %)", r.sentence()));
    }
    if worse.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
