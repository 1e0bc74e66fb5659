//! A survey document (kind `survey`): the plan, each part's own result document, and what
//! the seed documents write by hand at their end: a one-paragraph summary and the findings
//! ranked by what they cost (MB/s lost against a ceiling or against the capable link, µs of
//! wake-up latency added by load), each with its evidence and the action.
//!
//! The parts are ordinary documents (`audit`, `disk`, `latency`, ...): this module reads them
//! through [`Summary`] like every other renderer, so a part reads the same in a survey as on
//! its own.

pub mod text;
pub use text::{html, html_intro, markdown, markdown_intro, plan_text};
pub mod findings;

use crate::compare::{compare, CompareError, Comparison};
use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::export::openmetrics::Metrics;
use crate::kinds::audit::AuditDocument;
use crate::summary::Summary;
use crate::table::mb;
use crate::words::plural;
use findings::{as_sentence, audit_links, compare_links, disk_action, self_generated_load};
use model::survey::{format_seconds, PartKind, Plan, PlannedPart};
use model::units::MB;
use model::Severity;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Seconds to a tenth, as the document keeps them.
pub fn round_tenth(s: f64) -> f64 {
    (s * 10.0).round() / 10.0
}

// ---- the plan (kind `survey-plan`: `survey --dry-run --json`) ----

/// Arguments as a shell line a user can paste: words with spaces or quotes in single quotes.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@%+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a report shows of a survey plan: the budget and what the plan takes of it, and every
/// part with its time, what it does and the command it runs (or why it does not run), as
/// `survey --dry-run` prints them.
pub(crate) fn summarize_plan(
    doc: &Document,
    origin: &str,
    s: &mut Summary,
) -> Result<(), DocumentError> {
    let plan: Plan = doc.view(origin)?;
    let run = plan.parts.iter().filter(|p| p.run).count();
    s.context.push((
        "plan".to_string(),
        format!(
            "{} to run, about {} of a {} budget, writing {} MiB",
            plural(run, "part", "parts"),
            format_seconds(plan.seconds()),
            format_seconds(plan.budget_s),
            plan.writes_bytes() >> 20
        ),
    ));
    if plan.scale < 1.0 {
        s.context.push((
            "times".to_string(),
            format!(
                "shortened to {:.0} % of their defaults to fit the budget",
                plan.scale * 100.0
            ),
        ));
    }
    let mut n = 0;
    let rows = plan
        .parts
        .iter()
        .map(|p| {
            let (number, time, command) = if p.run {
                n += 1;
                (
                    n.to_string(),
                    format_seconds(p.seconds()),
                    format!("headroom {}", shell_line(&p.command)),
                )
            } else {
                ("-".to_string(), crate::table::dash(), crate::table::dash())
            };
            let what = match (p.run, &p.reason) {
                (true, Some(r)) => format!("{}; {r}", p.what),
                (true, None) => p.what.clone(),
                (false, r) => r.clone().unwrap_or_else(|| "not run".to_string()),
            };
            vec![number, p.id.clone(), time, what, command]
        })
        .collect();
    s.list(crate::summary::counted_table(
        "Plan",
        ("part", "parts"),
        "",
        &[
            ("#", true),
            ("Part", false),
            ("Time", true),
            ("What", false),
            ("Command", false),
        ],
        rows,
    ));
    Ok(())
}

/// A survey plan as board labs take it ([`crate::export::cases`]): one skip case per part, as LAVA
/// shows a test that has not run yet, named by the part's id (`survey-plan.disk_nvme0n1`, the
/// name the survey's own result gives the part's cases), with what it will do and for how
/// long, or why it will not run.
pub(crate) fn plan_cases(
    doc: &Document,
    origin: &str,
) -> Result<Vec<crate::export::cases::Case>, DocumentError> {
    let plan: Plan = doc.view(origin)?;
    Ok(plan
        .parts
        .iter()
        .map(|p| {
            let why = if p.run {
                let what = if p.what.is_empty() {
                    "planned"
                } else {
                    &p.what
                };
                format!(
                    "planned, not run yet: {what} (about {}; `headroom {}`)",
                    format_seconds(p.seconds()),
                    shell_line(&p.command)
                )
            } else {
                format!(
                    "will not run: {}",
                    p.reason.as_deref().unwrap_or("left out of the plan")
                )
            };
            crate::export::cases::Case::skip(
                crate::export::cases::path(DocumentKind::SurveyPlan.as_str(), &[&p.id]),
                why,
            )
        })
        .collect())
}

/// How a part ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartStatus {
    /// It ran to its end; `document` holds its result.
    Ran,
    /// It ran but was stopped (Ctrl-C, or the end of the survey's budget): `document`, when
    /// present, holds what it measured; `reason` says which.
    Interrupted,
    /// It started and failed: `reason` says why.
    Failed,
    /// It was not started: `reason` says why (excluded, no room in the budget, nothing to
    /// test, the survey was stopped before it).
    NotRun,
}

impl PartStatus {
    pub fn word(self) -> &'static str {
        match self {
            PartStatus::Ran => "ran",
            PartStatus::Interrupted => "interrupted",
            PartStatus::Failed => "failed",
            PartStatus::NotRun => "not run",
        }
    }
}

/// One part of a survey as it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartResult {
    /// The planned part's id (`disk nvme0n1`).
    pub id: String,
    pub kind: PartKind,
    pub status: PartStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall-clock seconds it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Seconds the plan printed before the survey gave it (its estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_s: Option<f64>,
    /// Seconds it was given when it started: the rest of the survey is fitted into what is
    /// left of the budget as it runs, so a part after others that overran is given less
    /// (its estimate includes what the parts of its kind took beyond theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_s: Option<f64>,
    /// Seconds from the stop the survey sent at its budget's end to the part's exit: what
    /// the part took to keep its partial result and clean up (with `--split`, the wake-ups
    /// matched and explained; on an emulated board several seconds), the one time a survey
    /// runs past its budget, said so rather than hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping_s: Option<f64>,
    /// What the part printed on stderr (warnings, notes), kept for the bug report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
    /// The part's own result document, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<serde_json::Value>,
}

/// How a part's process ended, as the survey saw it.
pub struct PartEnd<'a> {
    pub stdout: &'a str,
    pub stderr: &'a str,
    /// Its exit code, 128 + the signal when a signal ended it; `None`: unreadable.
    pub code: Option<i32>,
    /// Seconds it ran.
    pub took_s: f64,
    /// The survey was stopped (Ctrl-C, SIGTERM) while it ran.
    pub stopped_by_user: bool,
    /// The survey stopped it at the budget's end, and the seconds it then took to exit.
    pub out_of_budget: Option<f64>,
    pub budget_s: f64,
    /// The part's time limit, after which it is stopped as failed.
    pub limit_s: f64,
    /// It was still there this many seconds after SIGKILL (stuck in the kernel) and was left
    /// behind: its pid and the seconds.
    pub unkillable: Option<(u32, f64)>,
    /// Its output was still open this many seconds after it ended: a process it started
    /// holds it, and what came after is not in the result.
    pub pipes_held: Option<f64>,
}

impl PartResult {
    /// A part that did not run, and why.
    pub fn not_run(part: &PlannedPart, reason: String) -> PartResult {
        PartResult {
            planned_s: part.run.then(|| round_tenth(part.seconds())),
            given_s: None,
            status: PartStatus::NotRun,
            reason: Some(reason),
            ..PartResult::started(part)
        }
    }

    /// A part as it starts: given its estimate, failed until it ends well.
    pub fn started(part: &PlannedPart) -> PartResult {
        PartResult {
            id: part.id.clone(),
            kind: part.kind,
            status: PartStatus::Failed,
            reason: None,
            seconds: None,
            planned_s: None,
            given_s: Some(round_tenth(part.seconds())),
            stopping_s: None,
            messages: Vec::new(),
            document: None,
        }
    }

    /// What a part that ran left (its stderr lines, its document) and how it ended: ran,
    /// interrupted by the user or the budget (what it measured kept), or failed and why
    /// (its last error line).
    pub fn of_run(part: &PlannedPart, end: PartEnd) -> PartResult {
        let mut result = PartResult::started(part);
        result.seconds = Some(round_tenth(end.took_s));
        result.stopping_s = end.out_of_budget.map(round_tenth);
        result.messages = end
            .stderr
            .lines()
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty() && !l.contains('\r'))
            .collect();
        if let Some(s) = end.pipes_held {
            result.messages.push(format!(
                "its output was still open {} after it ended (a process it started holds it): \
                 what it wrote until then is kept",
                format_seconds(s)
            ));
        }
        if !end.stdout.trim().is_empty() {
            match Document::parse(end.stdout, &part.id) {
                Ok(d) => result.document = Some(d.to_value()),
                Err(e) => result
                    .messages
                    .push(format!("its output is not a document: {e}")),
            }
        }
        // Failed (as every part starts) and left behind.
        if let Some((pid, s)) = end.unkillable {
            result.reason = Some(format!(
                "did not end {} after SIGKILL: it is stuck in the kernel (look in `dmesg` for a \
                 soft lockup or a hung task); left behind as pid {pid}",
                format_seconds(s)
            ));
            return result;
        }
        let last_error = || {
            result
                .messages
                .iter()
                .rev()
                .find(|l| l.contains("error"))
                .or(result.messages.last())
                .map(|l| l.trim_start_matches("headroom: ").to_string())
        };
        let (status, reason) = match end.code {
            Some(0) => (PartStatus::Ran, None),
            Some(130) | Some(143) if end.stopped_by_user => (
                PartStatus::Interrupted,
                Some("interrupted: the survey was stopped".to_string()),
            ),
            Some(130) | Some(143) if end.out_of_budget.is_some() => (
                PartStatus::Interrupted,
                Some(format!(
                    "stopped at the end of the {} budget, {} into the {} it was given (it took \
                     {} to stop){}",
                    format_seconds(end.budget_s),
                    format_seconds(end.took_s),
                    format_seconds(part.seconds()),
                    format_seconds(result.stopping_s.unwrap_or(0.0)),
                    if result.document.is_some() {
                        ": what it measured until then is kept"
                    } else {
                        ", before it had measured anything"
                    }
                )),
            ),
            Some(130) | Some(143) | Some(137) => (
                PartStatus::Failed,
                Some(format!(
                    "stopped after {} (the part's time limit)",
                    format_seconds(end.limit_s)
                )),
            ),
            Some(c) => (
                PartStatus::Failed,
                Some(match last_error() {
                    Some(e) => format!("failed (exit {c}): {e}"),
                    None => format!("failed (exit {c})"),
                }),
            ),
            None => (
                PartStatus::Failed,
                Some("its exit status could not be read".to_string()),
            ),
        };
        result.status = status;
        result.reason = reason;
        result
    }
}

/// The body of a survey document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SurveyDocument {
    pub plan: Plan,
    pub parts: Vec<PartResult>,
    /// True when the survey was stopped before its end (Ctrl-C, SIGTERM).
    #[serde(default)]
    pub interrupted: bool,
    /// Wall-clock seconds the parts took, from the first one's start to the last one's end:
    /// what the budget (`plan.budget_s`) bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Made from the parts when the document is written; readers recompute them.
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub conclusions: Vec<Conclusion>,
}

/// One ranked finding of a survey.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conclusion {
    /// What it is about: `nvme0n1`, `0000:01:00.0`, `wake-up latency`.
    pub subject: String,
    /// What it costs in its own unit (`5671 MB/s (88 %)`, `+412 us`); empty when unknown.
    pub cost: String,
    /// The share of the ceiling (or of the latency) lost, 0..1: the rank. `None` when the
    /// cost could not be measured (ranked after every measured one).
    pub lost: Option<f64>,
    /// Which test or link shows it.
    pub evidence: String,
    pub action: Option<String>,
}

/// A part's document and the summary every renderer reads, for the parts that have one.
pub struct PartDoc<'a> {
    pub part: &'a PartResult,
    pub document: Document,
    pub summary: Summary,
}

impl SurveyDocument {
    /// Read a survey document's body; `origin` names it in errors.
    pub fn of(doc: &Document, origin: &str) -> Result<SurveyDocument, DocumentError> {
        doc.view(origin)
    }

    /// The parts that carry a document, each read as a document of its own. A part whose
    /// document cannot be read is left out with the reason in the returned messages.
    pub fn part_docs(&self, origin: &str) -> (Vec<PartDoc<'_>>, Vec<String>) {
        let mut docs = Vec::new();
        let mut problems = Vec::new();
        for part in &self.parts {
            let Some(value) = &part.document else {
                continue;
            };
            let name = format!("{origin}: {}", part.id);
            let read = Document::from_value(value.clone(), &name)
                .and_then(|d| crate::kinds::summarize(&d, &part.id).map(|s| (d, s)));
            match read {
                Ok((document, summary)) => docs.push(PartDoc {
                    part,
                    document,
                    summary,
                }),
                Err(e) => problems.push(e.to_string()),
            }
        }
        (docs, problems)
    }

    /// How the parts ended, counted in the words of the parts table's Status column, in
    /// its order: `4 ran, 1 interrupted, 1 not run` (what the history listing and the parts
    /// table's heading both say, so the two never disagree).
    pub fn part_counts(&self) -> String {
        [
            PartStatus::Ran,
            PartStatus::Interrupted,
            PartStatus::Failed,
            PartStatus::NotRun,
        ]
        .into_iter()
        .filter_map(|status| {
            let n = self.parts.iter().filter(|p| p.status == status).count();
            (n > 0).then(|| format!("{n} {}", status.word()))
        })
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// What a history listing shows of a survey, as (test, result): `survey (5 parts: 3 ran,
    /// 1 interrupted, 1 not run)` and `7 conclusions` (what it has; its own findings are its
    /// parts').
    pub fn listing(&self, origin: &str) -> (String, String) {
        let (_, conclusions) = self.judge(origin);
        (
            format!(
                "survey ({}: {})",
                plural(self.parts.len(), "part", "parts"),
                self.part_counts()
            ),
            plural(conclusions.len(), "conclusion", "conclusions"),
        )
    }

    /// The body with its summary and conclusions made from the parts so far, and every part
    /// of the plan not reached yet listed as not run (`interrupted`: the survey was stopped).
    pub fn finished(&self, interrupted: bool) -> SurveyDocument {
        let mut b = self.clone();
        b.interrupted = interrupted;
        // Parts the survey did not reach yet (an interrupted or partial document).
        for p in &self.plan.parts {
            if !b.parts.iter().any(|r| r.id == p.id) {
                b.parts.push(PartResult {
                    id: p.id.clone(),
                    kind: p.kind,
                    status: PartStatus::NotRun,
                    reason: Some(if interrupted {
                        "not run: the survey was stopped before it".to_string()
                    } else {
                        "not run yet".to_string()
                    }),
                    seconds: None,
                    planned_s: p.run.then(|| round_tenth(p.seconds())),
                    given_s: None,
                    stopping_s: None,
                    messages: Vec::new(),
                    document: None,
                });
            }
        }
        let (summary, conclusions) = b.judge("survey");
        b.summary = summary;
        b.conclusions = conclusions;
        b
    }

    /// Summary paragraph and ranked conclusions, made from the documents of the parts that
    /// ran to their end. A part stopped early (Ctrl-C, the budget's end) measured for less
    /// time than planned, or not at all (a network test stopped at its start reads 0
    /// Mbit/s): its figures stay in its own section and are never a conclusion's number.
    pub fn judge(&self, origin: &str) -> (String, Vec<Conclusion>) {
        let (mut docs, _) = self.part_docs(origin);
        docs.retain(|d| d.part.status != PartStatus::Interrupted);
        let mut sentences = Vec::new();
        let mut ranked = Vec::new();
        let mut unranked = Vec::new();
        let mut used_messages: Vec<String> = Vec::new();

        for d in docs.iter().filter(|d| d.part.kind == PartKind::Audit) {
            for link in audit_links(&d.document) {
                let text = format!(
                    "{} runs at {} of {}: {:.0} % of its bandwidth lost to the link",
                    link.device, link.now, link.capable, link.loss_percent
                );
                sentences.push(text.clone());
                let advice = d
                    .summary
                    .findings
                    .iter()
                    .find(|f| f.subject == link.address)
                    .and_then(|f| {
                        used_messages.push(f.message.clone());
                        f.advice.clone()
                    });
                ranked.push(Conclusion {
                    subject: link.address.clone(),
                    cost: format!(
                        "{} MB/s ({:.0} %)",
                        mb(link.loss_bps / MB),
                        link.loss_percent
                    ),
                    lost: Some(link.loss_percent / 100.0),
                    evidence: format!("audit: {text}"),
                    action: advice.or_else(|| {
                        Some(
                            "check the slot, cable or riser and the firmware's link speed \
                             setting"
                                .to_string(),
                        )
                    }),
                });
            }
        }

        for d in docs.iter().filter(|d| d.part.kind == PartKind::Disk) {
            let s = &d.summary;
            let device = d.part.id.trim_start_matches("disk ").to_string();
            let best = s
                .tests
                .iter()
                .max_by(|a, b| a.measured_mb_s.total_cmp(&b.measured_mb_s));
            let Some(best) = best else {
                continue;
            };
            let advice = s
                .findings
                .iter()
                .find(|f| f.severity == Severity::Warning && f.advice.is_some())
                .and_then(|f| {
                    used_messages.push(f.message.clone());
                    f.advice.clone()
                });
            match (&s.ceiling, best.efficiency) {
                // Above the ceiling: no efficiency to quote; the part's finding says what
                // headroom believes carried it past the link (report::efficiency).
                (Some(c), Some(eff)) if c.mb_s > 0.0 && eff > 1.0 => {
                    sentences.push(format!(
                        "storage on {device} gives {} MB/s ({}), above the ceiling set by {} ({} MB/s): \
                         that ceiling does not bound it, so there is no efficiency to quote",
                        mb(best.measured_mb_s),
                        best.name,
                        c.bottleneck,
                        mb(c.mb_s)
                    ));
                }
                (Some(c), Some(eff)) if c.mb_s > 0.0 => {
                    sentences.push(format!(
                        "storage on {device} reaches {:.0} % of the ceiling set by {} ({} of {} \
                         MB/s, {})",
                        eff * 100.0,
                        c.bottleneck,
                        mb(best.measured_mb_s),
                        mb(c.mb_s),
                        best.name
                    ));
                    let lost = (1.0 - eff).max(0.0);
                    ranked.push(Conclusion {
                        subject: device.clone(),
                        cost: format!(
                            "{} MB/s ({:.0} %)",
                            mb((c.mb_s - best.measured_mb_s).max(0.0)),
                            lost * 100.0
                        ),
                        lost: Some(lost),
                        evidence: format!(
                            "{}: {} {} MB/s of the {} ceiling {} MB/s",
                            d.part.id,
                            best.name,
                            mb(best.measured_mb_s),
                            c.bottleneck,
                            mb(c.mb_s)
                        ),
                        action: advice.or_else(|| Some(disk_action(s, eff))),
                    });
                }
                _ => {
                    let why = s
                        .no_ceiling_reason
                        .clone()
                        .unwrap_or_else(|| "its path has no known ceiling".to_string());
                    sentences.push(format!(
                        "storage on {device} gives {} MB/s ({}), with no ceiling to judge it \
                         against ({why})",
                        mb(best.measured_mb_s),
                        best.name
                    ));
                    unranked.push(Conclusion {
                        subject: device.clone(),
                        cost: String::new(),
                        lost: None,
                        evidence: format!(
                            "{}: {} {} MB/s; no ceiling: {why}",
                            d.part.id,
                            best.name,
                            mb(best.measured_mb_s)
                        ),
                        action: advice.or_else(|| {
                            Some(
                                "none from here: with no ceiling to judge it against, keep this \
                                 run and compare later ones with it (`headroom compare`)"
                                    .to_string(),
                            )
                        }),
                    });
                }
            }
        }

        // Wake-up latency idle against under load. The statistic is the largest wake-up of
        // each run; the run's own spread is the range of its threads' maxima (one thread per
        // measured CPU): a difference within it is what two threads of the same run differ
        // by, not an effect of the load.
        let maxima = |id: &str| -> Option<(f64, Option<f64>)> {
            let d = docs.iter().find(|d| d.part.id == id)?;
            let per_thread: Vec<f64> = d
                .summary
                .threads
                .iter()
                .filter(|t| t.name != "all")
                .map(|t| t.max_us as f64)
                .collect();
            let max = per_thread.iter().copied().fold(f64::NAN, f64::max);
            let min = per_thread.iter().copied().fold(f64::NAN, f64::min);
            (!max.is_nan()).then(|| (max, (per_thread.len() > 1).then_some(max - min)))
        };
        match (maxima("latency idle"), maxima("latency stress")) {
            (Some((idle, idle_spread)), Some((load, load_spread))) => {
                let spread = idle_spread.zip(load_spread).map(|(a, b)| a.max(b));
                let mut sentence = format!(
                    "wake-up latency peaks at {idle:.0} us idle and {load:.0} us under load"
                );
                if let Some(own) = self_generated_load(&docs) {
                    sentence.push_str(&format!(" ({own})"));
                }
                match spread {
                    Some(sp) if load - idle > sp => {
                        let advice = docs
                            .iter()
                            .filter(|d| d.part.kind == PartKind::Latency)
                            .flat_map(|d| d.summary.findings.iter())
                            .find(|f| f.severity >= Severity::Warning && f.advice.is_some())
                            .and_then(|f| {
                                used_messages.push(f.message.clone());
                                f.advice.clone()
                            });
                        ranked.push(Conclusion {
                            subject: "wake-up latency".to_string(),
                            cost: format!(
                                "+{:.0} us ({:.0} %)",
                                load - idle,
                                (load - idle) / load * 100.0
                            ),
                            lost: Some((load - idle) / load),
                            evidence: format!(
                                "latency idle: max {idle:.0} us; latency stress: max {load:.0} \
                                 us; statistic: the largest wake-up of each run, a difference \
                                 only beyond the {sp:.0} us its threads' maxima spread within a \
                                 run"
                            ),
                            action: advice.or_else(|| {
                                Some(
                                    "keep the load off the measured CPUs (isolcpus=, \
                                     irqaffinity=) or use a PREEMPT_RT kernel"
                                        .to_string(),
                                )
                            }),
                        });
                    }
                    Some(sp) => sentence.push_str(&format!(
                        ", a difference within the {sp:.0} us the threads' maxima spread \
                         within a run: no effect of the load these runs can tell"
                    )),
                    None => sentence.push_str(
                        ", one thread each: no spread within a run to tell an effect of the \
                         load from noise",
                    ),
                }
                sentences.push(sentence);
            }
            (Some((m, _)), None) | (None, Some((m, _))) => {
                sentences.push(format!("wake-up latency peaks at {m:.0} us"));
            }
            (None, None) => {}
        }

        // Network parts: the receiver's rate of each flow, against the link's ceiling when
        // the path has one (loopback and virtual links have none, and say why).
        for d in docs.iter().filter(|d| d.part.kind == PartKind::Net) {
            for t in &d.summary.tests {
                let mbit = t.measured_mb_s * 8.0;
                // The ceiling's basis is a description with punctuation of its own (a
                // shaper's "...; it shapes what this host sends"): in parentheses.
                let judged = match (t.ceiling_in(&d.summary), t.efficiency) {
                    (Some(c), Some(eff)) if eff > 1.0 => format!(
                        ", above the ceiling ({}), which does not bound it (no efficiency to \
                         quote)",
                        c.bottleneck
                    ),
                    (Some(c), Some(eff)) => {
                        format!(", {:.0} % of the ceiling ({})", eff * 100.0, c.bottleneck)
                    }
                    _ => String::new(),
                };
                sentences.push(format!(
                    "network part {}, {}: {mbit:.1} Mbit/s{judged}",
                    d.part.id, t.name
                ));
            }
        }

        // Every other warning or error of the parts, once, after the measured ones.
        for d in &docs {
            for f in &d.summary.findings {
                let serious = f.severity >= Severity::Warning;
                if !serious || used_messages.contains(&f.message) {
                    continue;
                }
                used_messages.push(f.message.clone());
                unranked.push(Conclusion {
                    subject: if f.subject.is_empty() {
                        d.part.id.clone()
                    } else {
                        f.subject.clone()
                    },
                    cost: String::new(),
                    lost: None,
                    evidence: format!("{}: {}", d.part.id, f.message),
                    action: Some(f.advice.clone().unwrap_or_else(|| {
                        format!(
                            "see the {} part's section below for what was measured",
                            d.part.id
                        )
                    })),
                });
            }
        }

        ranked.sort_by(|a, b| b.lost.unwrap_or(0.0).total_cmp(&a.lost.unwrap_or(0.0)));
        ranked.extend(unranked);

        // Parts that started and stopped short, apart from those never started (left out, no
        // --net, no room): only the first fell short of what the plan gave them.
        for (started, verb) in [(true, "did not run to the end"), (false, "did not run")] {
            let parts: Vec<&PartResult> = self
                .parts
                .iter()
                .filter(|p| p.status != PartStatus::Ran)
                .filter(|p| (p.status != PartStatus::NotRun) == started)
                .collect();
            if parts.is_empty() {
                continue;
            }
            let list = parts
                .iter()
                .map(|p| format!("{} ({})", p.id, p.status.word()))
                .collect::<Vec<_>>()
                .join(", ");
            sentences.push(format!(
                "{} of {} {verb}: {list}",
                parts.len(),
                plural(self.parts.len(), "part", "parts")
            ));
        }
        if self
            .parts
            .iter()
            .any(|p| p.status == PartStatus::Interrupted && p.document.is_some())
        {
            sentences.push(
                "what the interrupted parts measured before their stop is in their sections, \
                 and judged nowhere here: a part stopped early measured less than it was \
                 planned to"
                    .to_string(),
            );
        }
        // Each fact a sentence of its own: joined with "; " they ran together with the
        // semicolons inside them (a shaper's ceiling "...; it shapes what this host sends").
        let summary = if sentences.is_empty() {
            "Nothing was measured.".to_string()
        } else {
            sentences
                .iter()
                .map(|s| as_sentence(s))
                .collect::<Vec<_>>()
                .join(" ")
        };
        (summary, ranked)
    }
}

/// The machine a survey was made on, as its envelope names it.
fn host_of(doc: &Document) -> String {
    doc.envelope
        .host
        .as_ref()
        .and_then(model::system::Host::describe)
        .unwrap_or_else(|| "this machine".to_string())
}

/// Two or more surveys lined up part by part: each part present in every survey is compared
/// as its kind is (`compare`), and a part missing from some is named. The Markdown, and the
/// comparisons of the parts (what `compare --fail-above` gates).
pub fn compare_surveys(
    surveys: &[(String, SurveyDocument)],
) -> Result<(String, Vec<Comparison>), CompareError> {
    let mut compared = Vec::new();
    let mut o = String::new();
    let Some((_, first)) = surveys.first() else {
        return Ok((o, compared));
    };
    let _ = writeln!(
        o,
        "# Surveys compared: {}\n",
        surveys
            .iter()
            .map(|(n, _)| crate::outside::markdown(n))
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    let all: Vec<(String, Vec<PartDoc<'_>>)> = surveys
        .iter()
        .map(|(n, b)| (n.clone(), b.part_docs(n).0))
        .collect();
    let mut ids: Vec<&str> = first.parts.iter().map(|p| p.id.as_str()).collect();
    for (_, b) in surveys.iter().skip(1) {
        for p in &b.parts {
            if !ids.contains(&p.id.as_str()) {
                ids.push(&p.id);
            }
        }
    }
    for id in ids {
        let found: Vec<Option<&PartDoc<'_>>> = all
            .iter()
            .map(|(_, docs)| docs.iter().find(|d| d.part.id == id))
            .collect();
        if found.iter().all(Option::is_some) {
            let mut summaries: Vec<Summary> = Vec::new();
            for ((name, _), d) in all.iter().zip(&found) {
                if let Some(d) = d {
                    let mut s = d.summary.clone();
                    s.origin = format!("{name}: {id}");
                    summaries.push(s);
                }
            }
            let audits: Vec<&Document> = found.iter().flatten().map(|d| &d.document).collect();
            if found
                .iter()
                .flatten()
                .all(|d| d.part.kind == PartKind::Audit)
            {
                let _ = writeln!(o, "## {}\n", crate::outside::markdown(id));
                o.push_str(&compare_links(&all, &audits));
                o.push('\n');
                continue;
            }
            match compare(&summaries) {
                Ok(c) => {
                    o.push_str(&c.to_markdown());
                    compared.push(c);
                }
                Err(e) => {
                    let _ = writeln!(
                        o,
                        "## {}\n\nNot compared: {}",
                        crate::outside::markdown(id),
                        crate::outside::markdown(&e.to_string())
                    );
                }
            }
            o.push('\n');
        } else {
            let missing: Vec<&str> = all
                .iter()
                .zip(&found)
                .filter(|(_, d)| d.is_none())
                .map(|((n, _), _)| n.as_str())
                .collect();
            let _ = writeln!(
                o,
                "## {}\n\nNot compared: no result in {}.\n",
                crate::outside::markdown(id),
                crate::outside::markdown(&missing.join(", "))
            );
        }
    }
    while o.ends_with("\n\n") {
        o.pop();
    }
    Ok((o, compared))
}

/// `headroom survey` as every report reads it: its parts, each as its own kind shows it.
pub struct SurveyKind;

impl super::Kind for SurveyKind {
    fn kind(&self) -> DocumentKind {
        <SurveyDocument as super::KindDocument>::KIND
    }

    /// A survey counts its parts and conclusions.
    fn listing(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<(String, String), DocumentError> {
        Ok(SurveyDocument::of(doc, origin)?.listing(origin))
    }

    fn fields(&self) -> &'static [&'static str] {
        &["plan", "parts"]
    }

    /// Its own intro (summary, conclusions) and its parts' sections.
    fn render(&self, doc: &Document, origin: &str) -> Result<super::Rendered, DocumentError> {
        let body = SurveyDocument::of(doc, origin)?;
        let (parts, _) = body.part_docs(origin);
        Ok(super::Rendered {
            markdown: markdown(doc, &body, origin),
            html_intro: html_intro(doc, &body, origin),
            summaries: parts.into_iter().map(|p| p.summary).collect(),
        })
    }

    /// Its parts' cases, each prefixed by the part's id.
    fn cases(&self, doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
        let body = SurveyDocument::of(doc, origin)?;
        let (parts, _) = body.part_docs(origin);
        let mut out = Vec::new();
        for p in parts {
            let kind = super::of(p.document.kind());
            let cases = kind.cases_of(&p.document, &p.summary, origin)?;
            out.extend(crate::export::cases::prefixed(&p.part.id, cases));
        }
        Ok(out)
    }

    /// Its parts' metrics, each with a `part` label.
    fn metrics(&self, m: &mut Metrics, doc: &Document, origin: &str) -> Result<(), DocumentError> {
        let body = SurveyDocument::of(doc, origin)?;
        let (parts, _) = body.part_docs(origin);
        for p in parts {
            let kind = super::of(p.document.kind());
            m.with_label("part", &p.part.id, |m| {
                kind.metrics_of(m, &p.document, &p.summary, origin)
            })?;
        }
        Ok(())
    }
}

/// `survey --dry-run` as every report reads it.
pub struct SurveyPlanKind;

impl super::Kind for SurveyPlanKind {
    fn kind(&self) -> DocumentKind {
        DocumentKind::SurveyPlan
    }

    fn fields(&self) -> &'static [&'static str] {
        &["parts"]
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        summarize_plan(doc, origin, s)
    }

    /// One per planned part.
    fn own_cases(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        plan_cases(doc, origin)
    }
}

impl super::KindDocument for SurveyDocument {
    const KIND: DocumentKind = DocumentKind::Survey;

    fn text(&self, how: &super::Text<'_>) -> String {
        text::text(self, how)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion
    use super::*;

    fn disk_part() -> PlannedPart {
        PlannedPart {
            id: "disk sda".into(),
            kind: PartKind::Disk,
            what: "SEQ1M Q8T1".into(),
            command: vec!["bench".into(), "disk".into()],
            fixed_s: 2.0,
            units: 4,
            unit_s: 5.0,
            min_unit_s: 1.0,
            writes_bytes: 0,
            priority: 1,
            run: true,
            reason: None,
        }
    }

    fn end(code: Option<i32>, stderr: &str) -> PartEnd<'_> {
        PartEnd {
            stdout: "",
            stderr,
            code,
            took_s: 12.34,
            stopped_by_user: false,
            out_of_budget: None,
            budget_s: 600.0,
            limit_s: 186.0,
            unkillable: None,
            pipes_held: None,
        }
    }

    #[test]
    fn how_a_part_ended() {
        let part = disk_part();
        let r = PartResult::of_run(&part, end(Some(0), "note: x\n\n[1/2] disk\r[2/2] net\n"));
        assert_eq!((r.status, r.reason), (PartStatus::Ran, None));
        assert_eq!((r.seconds, r.given_s), (Some(12.3), Some(22.0)));
        assert_eq!(r.messages, ["note: x"]);
        let r = PartResult::of_run(
            &part,
            end(Some(1), "headroom: error: cannot open /dev/sda\nnote: y"),
        );
        assert_eq!(r.status, PartStatus::Failed);
        assert_eq!(
            r.reason.as_deref(),
            Some("failed (exit 1): error: cannot open /dev/sda")
        );
        let budget = PartEnd {
            out_of_budget: Some(0.26),
            ..end(Some(130), "")
        };
        let r = PartResult::of_run(&part, budget);
        assert_eq!(
            (r.status, r.stopping_s),
            (PartStatus::Interrupted, Some(0.3))
        );
        assert!(r
            .reason
            .unwrap()
            .ends_with(", before it had measured anything"));
        let r = PartResult::of_run(&part, end(Some(137), ""));
        assert!(r.reason.unwrap().contains("(the part's time limit)"));
        let garbage = PartEnd {
            stdout: "not json",
            ..end(None, "")
        };
        let r = PartResult::of_run(&part, garbage);
        assert!(r.messages[0].starts_with("its output is not a document"));
        assert_eq!(
            r.reason.as_deref(),
            Some("its exit status could not be read")
        );
        let stuck = PartEnd {
            unkillable: Some((468, 10.0)),
            ..end(None, "headroom: note: z")
        };
        let r = PartResult::of_run(&part, stuck);
        assert_eq!(r.status, PartStatus::Failed);
        assert_eq!(
            r.reason.as_deref(),
            Some(
                "did not end 10 s after SIGKILL: it is stuck in the kernel (look in `dmesg` for \
                 a soft lockup or a hung task); left behind as pid 468"
            )
        );
        let held = PartEnd {
            pipes_held: Some(5.0),
            ..end(Some(0), "")
        };
        let r = PartResult::of_run(&part, held);
        assert_eq!(r.status, PartStatus::Ran);
        assert_eq!(
            r.messages,
            [
                "its output was still open 5 s after it ended (a process it started holds it): \
              what it wrote until then is kept"
            ]
        );
        let r = PartResult::not_run(&part, "no disk".into());
        assert_eq!(
            (r.status, r.planned_s, r.given_s),
            (PartStatus::NotRun, Some(22.0), None)
        );
    }
}
