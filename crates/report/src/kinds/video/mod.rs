//! Kind `video` (`bench video`): a V4L2 capture's delivered frame rate, frame intervals from
//! the driver's timestamps, dropped frames, bytes per second and CPU, judged against the
//! bandwidth the format needs and the isochronous bandwidth a USB camera reserved; and the
//! formats a device offers (`--list-formats`).

/// Its judgement: the findings of a capture, as pure functions of its facts.
pub mod findings;
/// Its terminal text.
pub mod text;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::summary::{CeilingRow, Part, Place, Summary, TestRow};
use crate::table::{dash, Table};
use model::units::MB;
use model::video::{
    Capture, FormatNeed, IntervalDesc, Negotiated, SizeDesc, UsbStreaming, VideoConfig, VideoNode,
};
use model::Finding;
use serde::{Deserialize, Serialize};

/// What `headroom bench video --json` writes (the envelope aside), read back by report,
/// compare and history.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VideoDocument {
    /// The node captured from, with what QUERYCAP said (and its formats for
    /// `--list-formats`).
    pub device: VideoNode,
    /// What was asked.
    pub parameters: VideoConfig,
    /// What the driver settled on.
    #[serde(default)]
    pub negotiated: Option<Negotiated>,
    #[serde(default)]
    pub capture: Option<Capture>,
    /// The bandwidth the negotiated format needs at the frame rate it was delivered at.
    #[serde(default)]
    pub need: Option<FormatNeed>,
    /// A USB camera's streaming interface, read while streaming.
    #[serde(default)]
    pub usb: Option<UsbStreaming>,
    #[serde(default)]
    pub path: Option<model::path::TargetPath>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub interrupted: bool,
}

impl super::KindDocument for VideoDocument {
    const KIND: DocumentKind = DocumentKind::Video;

    /// The capture's table and findings, from the document's summary.
    fn text(&self, how: &super::Text<'_>) -> String {
        super::text_of_summary(self, how, text::render)
    }
}

/// The rate a capture is judged at: what the driver says it streams, else what was
/// delivered.
pub fn nominal_fps(n: &Negotiated, c: Option<&Capture>) -> Option<f64> {
    n.fps.map(|f| f.value()).or(c.and_then(|c| c.fps))
}

impl VideoDocument {
    /// The format captured, as one label: `YUYV 640x480`.
    pub fn format_label(&self) -> Option<String> {
        self.negotiated
            .as_ref()
            .map(|n| format!("{} {}", n.fourcc, n.size))
    }

    /// What a stop left of the run, after "interrupted by SIGINT (Ctrl-C): ".
    pub fn stopped_with(&self, measured: bool) -> String {
        if measured {
            "the frames above are those captured before it".to_string()
        } else {
            "nothing was measured: it came before the first frame".to_string()
        }
    }

    /// Lines on what was captured from and how.
    pub fn describe(&self) -> Vec<String> {
        let d = &self.device;
        let mut out = Vec::new();
        let mut head = d.dev.clone();
        if let Some(c) = &d.caps {
            head.push_str(&format!(": {} (driver {} {}", c.card, c.driver, c.version));
            if !c.bus_info.is_empty() {
                head.push_str(&format!(", {}", c.bus_info));
            }
            head.push(')');
        } else if let Some(t) = &d.title {
            head.push_str(&format!(": {t}"));
        }
        if let Some(b) = &d.bus {
            head.push_str(&format!(" on {b}"));
        }
        out.push(head);
        if let Some(n) = &self.negotiated {
            let rate = n
                .fps
                .map(|f| format!(" at {f} fps"))
                .unwrap_or_else(|| " (no frame rate control)".into());
            out.push(format!(
                "format {} {}{rate}, {} B per line, {} B per frame{}; {} mmap buffers",
                n.fourcc,
                n.size,
                n.bytesperline,
                n.sizeimage,
                if n.compressed {
                    " at most (compressed)"
                } else {
                    ""
                },
                n.buffers
            ));
        }
        if let Some(need) = &self.need {
            match need.bytes_per_second {
                Some(b) => out.push(format!("needs {:.1} MB/s: {}", b / MB, need.basis)),
                None => out.push(need.basis.clone()),
            }
        }
        if let Some(u) = &self.usb {
            out.push(findings::usb_line(u));
        }
        out
    }

    /// The capture's figures, one row each.
    pub fn table(&self) -> Table {
        let mut rows = Vec::new();
        if let Some(c) = &self.capture {
            let f1 = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.2}"));
            let ms = |us: f64| format!("{:.3}", us / 1000.0);
            let nominal = self
                .negotiated
                .as_ref()
                .and_then(|n| n.fps)
                .map(|f| format!("{:.2}", f.value()));
            rows.push(vec![
                "frames captured".into(),
                c.frames.to_string(),
                format!(
                    "sequence {}..{}",
                    seq(c.first_sequence),
                    seq(c.last_sequence)
                ),
            ]);
            rows.push(vec![
                "delivered (fps)".into(),
                f1(c.fps),
                nominal.map_or_else(String::new, |n| format!("driver set {n}")),
            ]);
            rows.push(vec![
                "frames dropped".into(),
                c.dropped.to_string(),
                "gaps in the sequence numbers".into(),
            ]);
            if c.error_frames > 0 {
                rows.push(vec![
                    "frames marked in error".into(),
                    c.error_frames.to_string(),
                    "V4L2_BUF_FLAG_ERROR".into(),
                ]);
            }
            let clock = match c.clock {
                model::video::TimestampClock::Monotonic => "driver timestamps (monotonic)",
                model::video::TimestampClock::Copy => "driver timestamps (copied)",
                model::video::TimestampClock::Dequeue => "dequeue times (driver gives none)",
            };
            let i = &c.intervals;
            if i.count > 0 {
                rows.push(vec!["interval p50 (ms)".into(), ms(i.p50_us), clock.into()]);
                rows.push(vec!["interval p99 (ms)".into(), ms(i.p99_us), clock.into()]);
                rows.push(vec!["interval max (ms)".into(), ms(i.max_us), clock.into()]);
            }
            rows.push(vec![
                "payload (MB/s)".into(),
                c.bytes_per_second
                    .map_or_else(dash, |b| format!("{:.2}", b / MB)),
                format!("{} B in all (bytesused)", c.bytes),
            ]);
            rows.push(vec![
                "CPU (% of one CPU)".into(),
                c.cpu_percent().map_or_else(dash, |p| format!("{p:.1}")),
                format!("user {:.3} s, system {:.3} s", c.cpu_user_s, c.cpu_system_s),
            ]);
        }
        Table::new(&[("Measure", false), ("Value", true), ("How", false)], rows)
    }

    /// `--list-formats`: one row per format, size and frame rates, as v4l2-ctl
    /// `--list-formats-ext` lists them.
    pub fn formats_table(&self) -> Table {
        let mut rows = Vec::new();
        for f in &self.device.formats {
            let mut kind = Vec::new();
            if f.compressed {
                kind.push("compressed");
            }
            if f.emulated {
                kind.push("emulated");
            }
            let name = format!("{} ({})", f.fourcc, f.description);
            if f.sizes.is_empty() {
                rows.push(vec![name.clone(), dash(), dash(), kind.join(", ")]);
            }
            for s in &f.sizes {
                let (size, rates) = match s {
                    SizeDesc::Discrete { size, intervals } => (
                        size.to_string(),
                        intervals
                            .iter()
                            .map(interval_words)
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    SizeDesc::Stepwise { min, max, step } => {
                        (format!("{min} to {max} step {step}"), String::new())
                    }
                };
                rows.push(vec![name.clone(), size, rates, kind.join(", ")]);
            }
        }
        Table::new(
            &[
                ("Format", false),
                ("Size", false),
                ("Frame rates (fps)", false),
                ("Kind", false),
            ],
            rows,
        )
    }
}

fn seq(s: Option<u32>) -> String {
    s.map_or_else(dash, |v| v.to_string())
}

/// A frame interval as the rate it gives: `30.000`, `7.500`, or a range.
fn interval_words(i: &IntervalDesc) -> String {
    let fps = |num: u32, den: u32| {
        if num == 0 {
            dash()
        } else {
            format!("{:.3}", f64::from(den) / f64::from(num))
        }
    };
    match i {
        IntervalDesc::Discrete { num, den } => fps(*num, *den),
        IntervalDesc::Stepwise { min, max, .. } => {
            format!("{} to {}", fps(max.0, max.1), fps(min.0, min.1))
        }
    }
}

/// `bench video` as every report reads it.
pub struct VideoKind;

/// A capture's own figures for a lab: the rate delivered, the frames dropped, the interval's
/// p99 and max, under the format captured.
fn cases(doc: &Document, origin: &str) -> Result<Vec<Case>, DocumentError> {
    let v = <VideoDocument as super::KindDocument>::read(doc, origin)?;
    let (Some(c), Some(label)) = (&v.capture, v.format_label()) else {
        return Ok(Vec::new());
    };
    let label = label.replace(' ', "_");
    let path =
        |what: &str| crate::export::cases::path(DocumentKind::Video.as_str(), &[&label, what]);
    let mut out = Vec::new();
    if let Some(fps) = c.fps {
        out.push(Case::figure(path("fps"), fps, "fps"));
    }
    out.push(Case::figure(path("dropped"), c.dropped as f64, "frames"));
    if c.intervals.count > 0 {
        out.push(Case::figure(path("interval-p99"), c.intervals.p99_us, "us"));
        out.push(Case::figure(path("interval-max"), c.intervals.max_us, "us"));
    }
    Ok(out)
}

impl super::Kind for VideoKind {
    fn kind(&self) -> DocumentKind {
        <VideoDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["device", "parameters"]
    }

    fn own_cases(
        &self,
        doc: &Document,
        _s: &Summary,
        origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        cases(doc, origin)
    }

    fn summarize(
        &self,
        doc: &Document,
        origin: &str,
        s: &mut Summary,
        _facts: &mut super::RunFacts,
    ) -> Result<(), DocumentError> {
        let v = <VideoDocument as super::KindDocument>::read(doc, origin)?;
        s.target = Some(v.device.dev.clone());
        if let (Some(c), Some(label)) = (&v.capture, v.format_label()) {
            let mut row = TestRow::single(
                format!("{label} capture"),
                "read".into(),
                None,
                c.bytes_per_second.unwrap_or(0.0) / MB,
            );
            row.ceiling = v.usb.as_ref().and_then(|u| {
                let r = u.reserved.as_ref()?;
                Some(Ok(CeilingRow {
                    mb_s: r.bytes_per_second / MB,
                    bottleneck: format!("isochronous reservation of USB {}", u.device),
                }))
            });
            s.tests.push(row);
        }
        let mut lines = v.describe();
        lines.extend(
            v.device
                .unreadable
                .iter()
                .map(|w| format!("device not readable: {w}")),
        );
        if v.capture.is_some() {
            s.parts.push(Part {
                place: Place::Measured,
                title: "Capture".to_string(),
                lines,
                table: v.table(),
            });
        } else {
            s.parts.push(Part {
                place: Place::Listing,
                title: "Formats offered".to_string(),
                lines,
                table: v.formats_table(),
            });
        }
        Ok(())
    }
}
