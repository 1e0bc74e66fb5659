//! `headroom bench video [/dev/videoN]`: a V4L2 capture with mmap buffers, as `v4l2-ctl
//! --stream-mmap` runs it, judged against the bandwidth the format needs and what a USB camera
//! reserved; `--list-formats` lists what the device offers.
//!
//! This file turns the flags into model's configuration, has probe find the device and its
//! USB side, and hands the open device to `bench::video`.

use crate::driver::{Benchmark, Ended, Outcome, Run, Stopped};
use crate::output::{GlobalArgs, KeepArgs};
use bench::video::{CaptureRun, Device, Progress};
use clap::Args;
use model::root::SysRoot;
use model::video::{UsbStreaming, VideoConfig, VideoFlags, VideoNode};
use report::document::DocumentKind;
use report::kinds::video::{findings, VideoDocument};
use report::kinds::KindDocument as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;

#[derive(Args, Debug, Clone)]
#[command(after_help = "\
Without a device, the first video capture device (/dev/videoN in number order) is used. Flags \
left out keep what the driver has set. Rates are MB/s (10^6 B/s); frame intervals come from \
the driver's timestamps, drops from gaps in its sequence numbers.\n\
Examples:\n  headroom bench video --list-formats\n  \
headroom bench video /dev/video0 --format YUYV --size 640x480 --fps 30 --frames 300\n  \
headroom bench video --format MJPG --size 1920x1080 --duration 10s --json")]
pub struct VideoArgs {
    /// The V4L2 capture node, /dev/videoN [default: the first capture device].
    pub device: Option<String>,

    /// Pixel format, as v4l2-ctl names it: YUYV, MJPG, NV12, GREY...
    #[arg(long, value_name = "FOURCC")]
    pub format: Option<String>,

    /// Frame size, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,

    /// Frame rate: 30, 7.5, 30000/1001.
    #[arg(long, value_name = "FPS")]
    pub fps: Option<String>,

    /// Stop after N frames (v4l2-ctl's --stream-count).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub frames: Option<String>,

    /// Stop after this long: 5s, 500ms, 1m [default: 5s].
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,

    /// List the formats, sizes and frame rates the device offers (v4l2-ctl
    /// --list-formats-ext) and capture nothing.
    #[arg(long)]
    pub list_formats: bool,

    #[command(flatten)]
    pub keep: crate::output::KeepArgs,
}

pub fn run_video(global: &GlobalArgs, a: &VideoArgs) -> anyhow::Result<ExitCode> {
    if a.list_formats {
        return list_formats(global, a);
    }
    crate::driver::drive(global, a)
}

/// The device the command names, or the first that captures; opened and checked.
fn open_device(root: &SysRoot, given: Option<&str>) -> anyhow::Result<(VideoNode, Device)> {
    if let Some(g) = given {
        let path = Path::new(g);
        let device = Device::open(path).map_err(anyhow::Error::new)?;
        let caps = device.capture_caps().map_err(anyhow::Error::new)?;
        let mut node = probe::video::node_of(root, path).unwrap_or_else(|| VideoNode {
            name: g.to_string(),
            dev: g.to_string(),
            ..VideoNode::default()
        });
        node.dev = g.to_string();
        node.caps = Some(caps);
        return Ok((node, device));
    }
    let nodes = probe::video::nodes(root).map_err(anyhow::Error::msg)?;
    if nodes.is_empty() {
        anyhow::bail!(
            "no video capture device: {} is empty (no camera is plugged in, or its driver is \
             not loaded: uvcvideo for USB cameras); give a device node if it is elsewhere",
            probe::video::CLASS_DIR
        );
    }
    let mut tried = Vec::new();
    for mut node in nodes {
        match Device::open(Path::new(&node.dev)).and_then(|d| Ok((d.capture_caps()?, d))) {
            Ok((caps, device)) => {
                node.caps = Some(caps);
                return Ok((node, device));
            }
            Err(e) => tried.push(e.to_string()),
        }
    }
    anyhow::bail!(
        "no video capture device among the nodes of {}: {}",
        probe::video::CLASS_DIR,
        tried.join("; ")
    )
}

/// `--list-formats`: the device's formats, as text or as a document (`--json`).
fn list_formats(global: &GlobalArgs, a: &VideoArgs) -> anyhow::Result<ExitCode> {
    let config = VideoConfig::from_flags(&flags(a)).map_err(crate::console::usage)?;
    let root = SysRoot::system();
    let (mut node, device) = open_device(&root, a.device.as_deref())?;
    node.formats = device.formats().map_err(anyhow::Error::new)?;
    let doc = VideoDocument {
        device: node,
        parameters: config,
        negotiated: None,
        capture: None,
        need: None,
        usb: None,
        path: None,
        findings: Vec::new(),
        notes: Vec::new(),
        interrupted: false,
    };
    show(global, &doc)?;
    Ok(ExitCode::SUCCESS)
}

fn flags(a: &VideoArgs) -> VideoFlags<'_> {
    VideoFlags {
        format: a.format.as_deref(),
        size: a.size.as_deref(),
        fps: a.fps.as_deref(),
        frames: a.frames.as_deref(),
        duration: a.duration.as_deref(),
    }
}

/// The document as text or JSON on stdout.
fn show(global: &GlobalArgs, doc: &VideoDocument) -> anyhow::Result<()> {
    if global.json {
        return crate::output::print_result(DocumentKind::Video, doc);
    }
    let text = doc.text(&report::kinds::Text {
        style: report::terminal::Style::new(global.use_color()),
        ..Default::default()
    });
    // Through the one terminal writer (the card and format names shown escaped); a closed
    // stdout (`| head`) still lets the run end as it should.
    if let Err(e) = crate::out!("{text}") {
        if !e.is::<crate::console::StdoutClosed>() {
            return Err(e);
        }
    }
    Ok(())
}

/// What the flags ask for: the configuration and the open device.
pub struct VideoPlan {
    config: VideoConfig,
    node: VideoNode,
    device: Device,
}

impl Benchmark for VideoArgs {
    type Document = VideoDocument;
    type Kept = VideoDocument;
    type Setup = VideoPlan;
    const KIND: DocumentKind = DocumentKind::Video;

    fn kept(doc: &VideoDocument) -> &VideoDocument {
        doc
    }

    fn keep(&self) -> KeepArgs {
        self.keep.clone()
    }

    fn plan(&self, _global: &GlobalArgs) -> anyhow::Result<VideoPlan> {
        let config = VideoConfig::from_flags(&flags(self)).map_err(crate::console::usage)?;
        let root = SysRoot::system();
        let (node, device) = open_device(&root, self.device.as_deref())?;
        Ok(VideoPlan {
            config,
            node,
            device,
        })
    }

    fn run(&self, plan: VideoPlan, run: &Run<'_>) -> anyhow::Result<Outcome<VideoDocument>> {
        let VideoPlan {
            config,
            mut node,
            device,
        } = plan;
        let root = SysRoot::system();
        // A UVC driver selects the alternate setting that reserves bandwidth only while it
        // streams: the USB side is read once, at the first frame.
        let usb: OnceLock<Option<UsbStreaming>> = OnceLock::new();
        let progress = |p: &Progress| {
            if p.frames > 0 {
                usb.get_or_init(|| probe::video::usb_streaming(&root, &node));
            }
            let fps = p.fps.map(|f| format!(", {f:.2} fps")).unwrap_or_default();
            run.progress(format_args!(
                "capturing {}: {} frames{fps}, {} dropped",
                node.dev, p.frames, p.dropped
            ));
        };
        let capture = CaptureRun {
            device: &device,
            config: config.clone(),
        };
        let measured = match run.engine(capture, progress) {
            Ok(m) => m,
            Err(bench::video::VideoError::Interrupted) => {
                run.progress_done();
                return Ok(Outcome::Nothing(Stopped::Interrupted(
                    "nothing was measured: it came before the first frame".into(),
                )));
            }
            Err(e) => {
                run.progress_done();
                return Err(anyhow::Error::new(e));
            }
        };
        run.progress_done();
        // The formats it offers, without their sizes and rates: what the findings' advice
        // needs (a compressed one), not a listing in every capture's document.
        node.formats = device
            .formats()
            .unwrap_or_default()
            .into_iter()
            .map(|f| model::video::FormatDesc {
                sizes: Vec::new(),
                ..f
            })
            .collect();
        drop(device);
        let usb = usb.into_inner().flatten();
        let n = &measured.negotiated;
        let c = &measured.capture;
        let found = findings::judge(&node.dev, n, c, usb.as_ref(), &node.formats);
        let path =
            probe::path::resolve(&root, Path::new(&node.dev), &probe::pci::audit_sysfs(&root)).ok();
        let doc = VideoDocument {
            need: findings::need(n, Some(c)),
            negotiated: Some(measured.negotiated.clone()),
            capture: Some(measured.capture.clone()),
            interrupted: measured.capture.interrupted,
            device: node,
            parameters: config,
            usb,
            path,
            findings: found,
            notes: measured.notes,
        };
        let captured = doc.capture.as_ref().map_or(0, |c| c.frames);
        Ok(Outcome::Ended(Ended {
            measured: captured > 0,
            stopped: doc
                .interrupted
                .then(|| Stopped::Interrupted(doc.stopped_with(captured > 0))),
            failed: captured == 0,
            doc,
        }))
    }

    fn print(&self, ended: &Ended<VideoDocument>, run: &Run<'_>) -> anyhow::Result<()> {
        show(run.global, &ended.doc)
    }
}
