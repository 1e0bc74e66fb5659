//! V4L2 streaming capture with mmap buffers, what `v4l2-ctl --stream-mmap --stream-count N`
//! does: set the format and frame rate (S_FMT, S_PARM), ask for buffers (REQBUFS), map them
//! (QUERYBUF, mmap), queue them, STREAMON, then dequeue and requeue each frame until the
//! frame count or the time is reached, waiting with poll so that a device that never delivers
//! is an error after [`model::video::FRAME_TIMEOUT`], never a hang. STREAMOFF, the unmapping
//! and the freeing of the buffers run on every way out (the end, an error, the stop flag).
//!
//! Per frame it keeps the driver's timestamp, sequence number and `bytesused`; out come the
//! frames, the frame-interval distribution from the driver's timestamps, the frames dropped
//! (gaps in the sequence numbers), the bytes and the CPU time. Also `--list-formats`: every
//! format, size and frame interval the device offers (`v4l2-ctl --list-formats-ext`).
//!
//! The kernel's uAPI is reached through `libc::ioctl` with the structures of [`uapi`]: the
//! V4L2 crates either generate their bindings with bindgen at build time (a libclang on every
//! machine that builds the static board binaries) or bring more than this capture needs.

pub mod uapi;

use crate::{Bench, Phase, Phased, Stop};
use model::video::{
    sequence_gap, Capture, DeviceCaps, FormatDesc, FourCc, FrameSize, IntervalDesc, Intervals,
    Limit, Negotiated, SizeDesc, TimestampClock, VideoConfig, FRAME_TIMEOUT,
};
use serde::Serialize;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use uapi::*;

/// Why a device could not be captured from: one sentence each.
#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    #[error("{path}: cannot open: {}{hint}", words(os), path = path.display())]
    Open {
        path: PathBuf,
        os: std::io::Error,
        hint: &'static str,
    },
    #[error(
        "{path}: not a V4L2 device (VIDIOC_QUERYCAP: {})",
        words(os),
        path = path.display()
    )]
    NotV4l2 { path: PathBuf, os: std::io::Error },
    #[error(
        "{path}: {card} ({driver}) is not a video capture device that streams (it offers: \
         {offers}); give a capture node, e.g. the one `headroom audit` lists",
        path = path.display()
    )]
    NotCapture {
        path: PathBuf,
        card: String,
        driver: String,
        offers: String,
    },
    #[error("{path}: {what} failed: {}{hint}", words(os), path = path.display())]
    Ioctl {
        path: PathBuf,
        what: &'static str,
        os: std::io::Error,
        hint: &'static str,
    },
    #[error(
        "{path}: the device does not offer {asked}: the driver chose {got} (see \
         `headroom bench video --list-formats`)",
        path = path.display()
    )]
    FormatRefused {
        path: PathBuf,
        asked: String,
        got: String,
    },
    #[error(
        "{path}: no frame arrived in {} s after STREAMON: the device streams nothing (a \
         camera without a sensor signal, an input with no source)",
        timeout.as_secs(), path = path.display()
    )]
    NoFrames { path: PathBuf, timeout: Duration },
    #[error("{path}: the driver gave {count} buffer(s); streaming needs at least 2", path = path.display())]
    TooFewBuffers { path: PathBuf, count: u32 },
    #[error("interrupted before the first frame")]
    Interrupted,
}

/// The system's words for `e` without Rust's " (os error N)".
fn words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Why an ioctl failed, in the words a user can act on.
fn hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EBUSY) => {
            ": the device is busy, another program (a browser, a video call, v4l2-ctl) is \
             streaming from it; close it and try again"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            ": permission denied; run as root or as a member of the device's group (video)"
        }
        Some(libc::ENOSPC) => {
            ": the bus has not the bandwidth this format needs (uvcvideo: no alternate setting \
             reserves enough); choose a smaller size, a lower rate or a compressed format"
        }
        _ => "",
    }
}

/// An open V4L2 device node.
pub struct Device {
    fd: OwnedFd,
    path: PathBuf,
}

impl Device {
    /// Open `path` read-write and non-blocking (what streaming needs; nothing is written to
    /// the device but its format and frame rate, as any capture program sets them).
    pub fn open(path: &Path) -> Result<Device, VideoError> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
            .open(path)
            .map_err(|os| VideoError::Open {
                path: path.to_path_buf(),
                hint: hint(&os),
                os,
            })?;
        Ok(Device {
            fd: OwnedFd::from(f),
            path: path.to_path_buf(),
        })
    }

    /// What the audit shows of a node: QUERYCAP and, for a capture device, its formats;
    /// opened read-only (nothing is set, nothing streams).
    pub fn query(path: &Path) -> Result<(DeviceCaps, Vec<FormatDesc>), VideoError> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
            .open(path)
            .map_err(|os| VideoError::Open {
                path: path.to_path_buf(),
                hint: hint(&os),
                os,
            })?;
        let d = Device {
            fd: OwnedFd::from(f),
            path: path.to_path_buf(),
        };
        let caps = d.caps()?;
        let formats = if caps.captures() {
            d.formats()?
        } else {
            Vec::new()
        };
        Ok((caps, formats))
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn ioctl<T>(&self, what: &'static str, request: u32, arg: &mut T) -> Result<(), VideoError> {
        ioctl(self.raw(), request, arg).map_err(|os| VideoError::Ioctl {
            path: self.path.clone(),
            what,
            hint: hint(&os),
            os,
        })
    }

    /// VIDIOC_QUERYCAP: what the device is.
    pub fn caps(&self) -> Result<DeviceCaps, VideoError> {
        let mut c: v4l2_capability = zeroed();
        ioctl(self.raw(), VIDIOC_QUERYCAP, &mut c).map_err(|os| VideoError::NotV4l2 {
            path: self.path.clone(),
            os,
        })?;
        let v = c.version;
        Ok(DeviceCaps {
            driver: c_string(&c.driver),
            card: c_string(&c.card),
            bus_info: c_string(&c.bus_info),
            version: format!("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff),
            device_caps: if c.capabilities & CAP_DEVICE_CAPS != 0 {
                c.device_caps
            } else {
                c.capabilities
            },
        })
    }

    /// The device's capabilities, refused unless it captures video by streaming.
    pub fn capture_caps(&self) -> Result<DeviceCaps, VideoError> {
        let caps = self.caps()?;
        if !caps.captures() {
            return Err(VideoError::NotCapture {
                path: self.path.clone(),
                card: caps.card.clone(),
                driver: caps.driver.clone(),
                offers: caps.capability_names().join(", "),
            });
        }
        Ok(caps)
    }

    /// Every capture format, with its sizes and frame intervals (`v4l2-ctl
    /// --list-formats-ext`); each enumeration is bounded.
    pub fn formats(&self) -> Result<Vec<FormatDesc>, VideoError> {
        let mut out = Vec::new();
        let mut budget = MAX_ENTRIES;
        for index in 0..MAX_ENUM {
            let mut d: v4l2_fmtdesc = zeroed();
            d.index = index;
            d.type_ = BUF_TYPE_VIDEO_CAPTURE;
            if ioctl(self.raw(), VIDIOC_ENUM_FMT, &mut d).is_err() {
                break;
            }
            out.push(FormatDesc {
                fourcc: FourCc::from_u32(d.pixelformat),
                description: c_string(&d.description),
                compressed: d.flags & FMT_FLAG_COMPRESSED != 0,
                emulated: d.flags & FMT_FLAG_EMULATED != 0,
                sizes: self.sizes(d.pixelformat, &mut budget),
            });
        }
        Ok(out)
    }

    fn sizes(&self, pixelformat: u32, budget: &mut usize) -> Vec<SizeDesc> {
        let mut out = Vec::new();
        for index in 0..MAX_ENUM {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let mut s: v4l2_frmsizeenum = zeroed();
            s.index = index;
            s.pixel_format = pixelformat;
            if ioctl(self.raw(), VIDIOC_ENUM_FRAMESIZES, &mut s).is_err() {
                break;
            }
            if s.type_ == FRMSIZE_TYPE_DISCRETE {
                // SAFETY: the driver filled the discrete member, as type_ says.
                let [width, height] = unsafe { s.u.discrete };
                let size = FrameSize { width, height };
                out.push(SizeDesc::Discrete {
                    size,
                    intervals: self.intervals(pixelformat, size, budget),
                });
            } else {
                // SAFETY: continuous and stepwise sizes fill the stepwise member.
                let w = unsafe { s.u.stepwise };
                out.push(SizeDesc::Stepwise {
                    min: FrameSize {
                        width: w.min_width,
                        height: w.min_height,
                    },
                    max: FrameSize {
                        width: w.max_width,
                        height: w.max_height,
                    },
                    step: FrameSize {
                        width: w.step_width,
                        height: w.step_height,
                    },
                });
                break;
            }
        }
        out
    }

    fn intervals(
        &self,
        pixelformat: u32,
        size: FrameSize,
        budget: &mut usize,
    ) -> Vec<IntervalDesc> {
        let mut out = Vec::new();
        for index in 0..MAX_ENUM {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let mut i: v4l2_frmivalenum = zeroed();
            i.index = index;
            i.pixel_format = pixelformat;
            i.width = size.width;
            i.height = size.height;
            if ioctl(self.raw(), VIDIOC_ENUM_FRAMEINTERVALS, &mut i).is_err() {
                break;
            }
            if i.type_ == FRMIVAL_TYPE_DISCRETE {
                // SAFETY: the driver filled the discrete member, as type_ says.
                let f = unsafe { i.u.discrete };
                out.push(IntervalDesc::Discrete {
                    num: f.numerator,
                    den: f.denominator,
                });
            } else {
                // SAFETY: continuous and stepwise intervals fill the stepwise member.
                let [min, max, step] = unsafe { i.u.stepwise };
                let p = |f: v4l2_fract| (f.numerator, f.denominator);
                out.push(IntervalDesc::Stepwise {
                    min: p(min),
                    max: p(max),
                    step: p(step),
                });
                break;
            }
        }
        out
    }

    /// S_FMT and S_PARM as `config` asks (what it leaves unset stays as the driver has it),
    /// then what the driver settled on.
    fn negotiate(
        &self,
        config: &VideoConfig,
        notes: &mut Vec<String>,
    ) -> Result<Negotiated, VideoError> {
        let mut f: v4l2_format = zeroed();
        f.type_ = BUF_TYPE_VIDEO_CAPTURE;
        self.ioctl("VIDIOC_G_FMT", VIDIOC_G_FMT, &mut f)?;
        if config.format.is_some() || config.size.is_some() {
            // SAFETY: a capture format's union member is `pix`.
            let pix = unsafe { &mut f.fmt.pix };
            if let Some(c) = config.format {
                pix.pixelformat = c.to_u32();
            }
            if let Some(s) = config.size {
                pix.width = s.width;
                pix.height = s.height;
            }
            pix.field = FIELD_ANY;
            // The driver's minimum for the new format: G_FMT's bytesperline is the last
            // format's, and a driver keeps a larger one asked of it as padding (vivid does).
            pix.bytesperline = 0;
            pix.sizeimage = 0;
            self.ioctl("VIDIOC_S_FMT", VIDIOC_S_FMT, &mut f)?;
        }
        // SAFETY: as above.
        let pix = unsafe { f.fmt.pix };
        let fourcc = FourCc::from_u32(pix.pixelformat);
        if let Some(asked) = config.format.filter(|a| *a != fourcc) {
            return Err(VideoError::FormatRefused {
                path: self.path.clone(),
                asked: asked.to_string(),
                got: fourcc.to_string(),
            });
        }
        let size = FrameSize {
            width: pix.width,
            height: pix.height,
        };
        if let Some(asked) = config.size.filter(|a| *a != size) {
            notes.push(format!(
                "asked {asked}, the driver chose {size} (the nearest size it offers)"
            ));
        }
        let compressed = self
            .formats()?
            .iter()
            .find(|d| d.fourcc == fourcc)
            .is_some_and(|d| d.compressed);
        let mut p: v4l2_streamparm = zeroed();
        p.type_ = BUF_TYPE_VIDEO_CAPTURE;
        let mut fps = None;
        if self.ioctl("VIDIOC_G_PARM", VIDIOC_G_PARM, &mut p).is_ok() {
            // SAFETY: a capture stream's union member is `capture`.
            let has_rate = unsafe { p.parm.capture.capability } & CAP_TIMEPERFRAME != 0;
            match (config.fps, has_rate) {
                (Some(want), true) => {
                    p.parm.capture.timeperframe = v4l2_fract {
                        numerator: want.den,
                        denominator: want.num,
                    };
                    self.ioctl("VIDIOC_S_PARM", VIDIOC_S_PARM, &mut p)?;
                }
                (Some(want), false) => notes.push(format!(
                    "asked {want} fps, but the driver has no frame rate control: it runs at \
                     its own rate"
                )),
                _ => {}
            }
            // SAFETY: as above.
            let tpf = unsafe { p.parm.capture.timeperframe };
            if has_rate && tpf.numerator > 0 && tpf.denominator > 0 {
                fps = Some(model::video::Fps {
                    num: tpf.denominator,
                    den: tpf.numerator,
                });
            }
        } else if let Some(want) = config.fps {
            notes.push(format!(
                "asked {want} fps, but the driver answers no VIDIOC_G_PARM: it runs at its own \
                 rate"
            ));
        }
        if let (Some(want), Some(got)) = (config.fps, fps) {
            if (want.value() - got.value()).abs() > want.value() * 1e-3 {
                notes.push(format!(
                    "asked {want} fps, the driver chose {got} fps (the nearest it offers)"
                ));
            }
        }
        Ok(Negotiated {
            fourcc,
            size,
            bytesperline: pix.bytesperline,
            sizeimage: pix.sizeimage,
            compressed,
            fps,
            buffers: config.buffers,
        })
    }
}

/// The most entries one enumeration reads (formats, sizes of a format, intervals of a size).
const MAX_ENUM: u32 = 256;
/// The most sizes and intervals a listing reads in all: a driver answering every index would
/// otherwise make 256 x 256 x 256 entries (vivid's ~40 formats, 6 sizes and up to 12
/// intervals each are about 2,000).
const MAX_ENTRIES: usize = 16_384;
/// One poll's wait: the stop flag is read at least this often.
const POLL_SLICE_MS: i32 = 200;
/// The longest frame interval the histogram holds; longer ones count at this value.
const MAX_INTERVAL_NS: u64 = 60_000_000_000;

/// One mapped buffer, unmapped on drop.
struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned and nothing else holds them.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// The buffers of a stream: on drop, STREAMOFF (which also takes every buffer back from the
/// driver), then the mappings, then REQBUFS 0 to free them.
struct Stream<'d> {
    device: &'d Device,
    maps: Vec<Mapped>,
    on: bool,
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        let mut t = BUF_TYPE_VIDEO_CAPTURE as i32;
        if self.on {
            let _ = ioctl(self.device.raw(), VIDIOC_STREAMOFF, &mut t);
        }
        self.maps.clear();
        let mut r = v4l2_requestbuffers {
            count: 0,
            type_: BUF_TYPE_VIDEO_CAPTURE,
            memory: MEMORY_MMAP,
            ..Default::default()
        };
        let _ = ioctl(self.device.raw(), VIDIOC_REQBUFS, &mut r);
    }
}

impl<'d> Stream<'d> {
    fn start(device: &'d Device, count: u32) -> Result<Stream<'d>, VideoError> {
        let mut r = v4l2_requestbuffers {
            count,
            type_: BUF_TYPE_VIDEO_CAPTURE,
            memory: MEMORY_MMAP,
            ..Default::default()
        };
        device.ioctl("VIDIOC_REQBUFS", VIDIOC_REQBUFS, &mut r)?;
        let mut s = Stream {
            device,
            maps: Vec::new(),
            on: false,
        };
        if r.count < 2 {
            return Err(VideoError::TooFewBuffers {
                path: device.path.clone(),
                count: r.count,
            });
        }
        for index in 0..r.count {
            let mut b = buffer(index);
            device.ioctl("VIDIOC_QUERYBUF", VIDIOC_QUERYBUF, &mut b)?;
            // SAFETY: an MMAP buffer's member is `offset`.
            let offset = unsafe { b.m.offset };
            let len = b.length as usize;
            // SAFETY: a shared read-only mapping of the device's buffer at the offset and
            // length the driver gave for it; unmapped by `Mapped`'s drop.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    device.raw(),
                    offset as libc::off_t,
                )
            };
            if ptr == libc::MAP_FAILED {
                let os = std::io::Error::last_os_error();
                return Err(VideoError::Ioctl {
                    path: device.path.clone(),
                    what: "mmap of a buffer",
                    hint: hint(&os),
                    os,
                });
            }
            s.maps.push(Mapped { ptr, len });
            device.ioctl("VIDIOC_QBUF", VIDIOC_QBUF, &mut b)?;
        }
        let mut t = BUF_TYPE_VIDEO_CAPTURE as i32;
        device.ioctl("VIDIOC_STREAMON", VIDIOC_STREAMON, &mut t)?;
        s.on = true;
        Ok(s)
    }
}

fn buffer(index: u32) -> v4l2_buffer {
    let mut b: v4l2_buffer = zeroed();
    b.index = index;
    b.type_ = BUF_TYPE_VIDEO_CAPTURE;
    b.memory = MEMORY_MMAP;
    b
}

/// A progress report: frames so far and the rate over the driver's timestamps.
pub struct Progress {
    pub phase: Phase,
    pub started: Instant,
    pub frames: u64,
    pub fps: Option<f64>,
    pub dropped: u64,
}

impl Phased for Progress {
    fn phase(&self) -> Phase {
        self.phase
    }
    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// What a capture measured: the format the driver settled on, and the capture.
#[derive(Debug, Serialize)]
pub struct VideoMeasured {
    pub negotiated: Negotiated,
    pub capture: Capture,
    /// What differed from what was asked (a size, a rate the driver rounded).
    pub notes: Vec<String>,
}

/// One capture in the run shape of every engine ([`crate::Bench`]).
pub struct CaptureRun<'d> {
    pub device: &'d Device,
    pub config: VideoConfig,
}

/// The frame-by-frame tally.
struct Tally {
    frames: u64,
    errors: u64,
    dropped: u64,
    bytes: u64,
    first: Option<(u64, u32)>,
    last: Option<(u64, u32)>,
    clock: Option<TimestampClock>,
    hist: hdrhistogram::Histogram<u64>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            frames: 0,
            errors: 0,
            dropped: 0,
            bytes: 0,
            first: None,
            last: None,
            clock: None,
            // 3 significant digits from 1 us to a minute: fixed size, whatever the length of
            // the capture.
            #[allow(clippy::unwrap_used)] // constant, valid bounds
            hist: hdrhistogram::Histogram::new_with_bounds(1000, MAX_INTERVAL_NS, 3).unwrap(),
        }
    }

    /// One dequeued buffer, its time in ns on its clock.
    fn frame(&mut self, b: &v4l2_buffer, now_ns: u64) {
        let clock = match b.flags & BUF_FLAG_TIMESTAMP_MASK {
            BUF_FLAG_TIMESTAMP_MONOTONIC => TimestampClock::Monotonic,
            BUF_FLAG_TIMESTAMP_COPY => TimestampClock::Copy,
            _ => TimestampClock::Dequeue,
        };
        let clock = *self.clock.get_or_insert(clock);
        let t = match clock {
            TimestampClock::Dequeue => now_ns,
            _ => (b.timestamp.tv_sec.max(0) as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(b.timestamp.tv_usec.max(0) as u64 * 1000),
        };
        if let Some((prev_t, prev_seq)) = self.last {
            self.dropped += sequence_gap(prev_seq, b.sequence);
            let dt = t.saturating_sub(prev_t).clamp(1000, MAX_INTERVAL_NS);
            let _ = self.hist.record(dt);
        }
        self.first.get_or_insert((t, b.sequence));
        self.last = Some((t, b.sequence));
        self.frames += 1;
        self.bytes += u64::from(b.bytesused);
        if b.flags & BUF_FLAG_ERROR != 0 {
            self.errors += 1;
        }
    }

    fn span_s(&self) -> Option<f64> {
        match (self.first, self.last) {
            (Some((a, _)), Some((b, _))) if b > a => Some((b - a) as f64 / 1e9),
            _ => None,
        }
    }

    fn fps(&self) -> Option<f64> {
        self.span_s().map(|s| (self.frames - 1) as f64 / s)
    }

    fn capture(&self, elapsed_s: f64, cpu: (f64, f64), interrupted: bool) -> Capture {
        let h = &self.hist;
        let us = |ns: u64| ns as f64 / 1000.0;
        let intervals = if h.is_empty() {
            Intervals::default()
        } else {
            Intervals {
                count: h.len(),
                min_us: us(h.min()),
                p50_us: us(h.value_at_quantile(0.5)),
                p99_us: us(h.value_at_quantile(0.99)),
                max_us: us(h.max()),
                mean_us: h.mean() / 1000.0,
            }
        };
        let fps = self.fps();
        Capture {
            frames: self.frames,
            error_frames: self.errors,
            dropped: self.dropped,
            first_sequence: self.first.map(|f| f.1),
            last_sequence: self.last.map(|l| l.1),
            bytes: self.bytes,
            fps,
            bytes_per_second: fps.map(|f| self.bytes as f64 / self.frames as f64 * f),
            intervals,
            clock: self.clock.unwrap_or(TimestampClock::Dequeue),
            elapsed_s,
            cpu_user_s: cpu.0,
            cpu_system_s: cpu.1,
            interrupted,
        }
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec.max(0) as u64) * 1_000_000_000 + ts.tv_nsec.max(0) as u64
}

impl Bench for CaptureRun<'_> {
    const KIND: &'static str = "video";
    type Progress<'p> = Progress;
    type Measurement = VideoMeasured;
    type Error = VideoError;

    fn run<F>(self, stop: &Stop, progress: F) -> Result<VideoMeasured, VideoError>
    where
        F: for<'p> Fn(&Progress) + Sync,
    {
        let dev = self.device;
        let started = Instant::now();
        let report = |phase, t: &Tally| {
            progress(&Progress {
                phase,
                started,
                frames: t.frames,
                fps: t.fps(),
                dropped: t.dropped,
            })
        };
        let mut tally = Tally::new();
        report(Phase::Setup, &tally);
        let mut notes = Vec::new();
        let negotiated = dev.negotiate(&self.config, &mut notes)?;
        let stream = Stream::start(dev, self.config.buffers)?;
        let cpu0 = crate::disk::kernel_count::process_cpu();
        let on = Instant::now();
        // The last frame's time (STREAMON's before the first): a device that delivers none
        // for FRAME_TIMEOUT ends the capture, however poll and DQBUF answer meanwhile.
        let mut last_frame = Instant::now();
        let mut last_report = on;
        let interrupted = loop {
            if stop.load(Ordering::Relaxed) {
                break true;
            }
            let done = match self.config.limit {
                Limit::Frames(n) => tally.frames >= n,
                Limit::Duration(d) => on.elapsed() >= d,
            };
            if done {
                break false;
            }
            let mut pfd = libc::pollfd {
                fd: dev.raw(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, POLL_SLICE_MS) };
            if last_frame.elapsed() >= FRAME_TIMEOUT {
                return Err(VideoError::NoFrames {
                    path: dev.path.clone(),
                    timeout: FRAME_TIMEOUT,
                });
            }
            if n <= 0 {
                continue;
            }
            if pfd.revents & libc::POLLIN == 0 {
                // POLLERR without data (the queue was emptied, the device went away): wait
                // out the slice instead of asking DQBUF again at once.
                std::thread::sleep(Duration::from_millis(POLL_SLICE_MS as u64));
                continue;
            }
            let mut b = buffer(0);
            match ioctl(dev.raw(), VIDIOC_DQBUF, &mut b) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
                Err(os) => {
                    return Err(VideoError::Ioctl {
                        path: dev.path.clone(),
                        what: "VIDIOC_DQBUF",
                        hint: hint(&os),
                        os,
                    })
                }
            }
            last_frame = Instant::now();
            tally.frame(&b, monotonic_ns());
            dev.ioctl("VIDIOC_QBUF", VIDIOC_QBUF, &mut b)?;
            if tally.frames == 1 || last_report.elapsed() >= Duration::from_millis(250) {
                last_report = Instant::now();
                report(Phase::Run, &tally);
            }
        };
        let elapsed_s = on.elapsed().as_secs_f64();
        let cpu1 = crate::disk::kernel_count::process_cpu();
        drop(stream);
        if tally.frames == 0 && interrupted {
            return Err(VideoError::Interrupted);
        }
        Ok(VideoMeasured {
            negotiated,
            capture: tally.capture(elapsed_s, (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1), interrupted),
            notes,
        })
    }

    fn interrupted(m: &VideoMeasured) -> bool {
        m.capture.interrupted
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn frame(seq: u32, t_us: i64, bytes: u32) -> v4l2_buffer {
        let mut b = buffer(0);
        b.sequence = seq;
        b.timestamp = timeval64 {
            tv_sec: t_us / 1_000_000,
            tv_usec: t_us % 1_000_000,
        };
        b.flags = BUF_FLAG_TIMESTAMP_MONOTONIC;
        b.bytesused = bytes;
        b
    }

    #[test]
    fn a_tally_counts_drops_intervals_and_rate_from_the_drivers_timestamps() {
        let mut t = Tally::new();
        // 30 fps (33 333 us), frame 3 missing: its interval is twice as long.
        for (seq, at) in [(0, 0), (1, 33_333), (2, 66_667), (4, 133_333), (5, 166_667)] {
            t.frame(&frame(seq, 1_000_000 + at, 614_400), 0);
        }
        let c = t.capture(0.2, (0.01, 0.01), false);
        assert_eq!(c.frames, 5);
        assert_eq!(c.dropped, 1);
        assert_eq!(c.clock, TimestampClock::Monotonic);
        assert_eq!(c.intervals.count, 4);
        assert!(
            (c.intervals.max_us - 66_666.0).abs() < 100.0,
            "{:?}",
            c.intervals
        );
        assert!(
            (c.intervals.p50_us - 33_333.0).abs() < 50.0,
            "{:?}",
            c.intervals
        );
        // 4 intervals over 166 667 us: 24 fps delivered (a frame dropped of 30).
        assert!((c.fps.unwrap() - 24.0).abs() < 0.01);
        assert!((c.bytes_per_second.unwrap() / (614_400.0 * 24.0) - 1.0).abs() < 1e-4);
        assert_eq!(c.cpu_percent(), Some(10.0));
    }

    #[test]
    fn a_missing_device_is_one_sentence() {
        let e = Device::open(Path::new("/nonexistent/video9"))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/video9: cannot open"),
            "{e}"
        );
        // A file that is not a V4L2 node answers QUERYCAP with ENOTTY.
        let d = Device::open(Path::new("/dev/null")).unwrap();
        let e = d.caps().unwrap_err().to_string();
        assert!(e.contains("not a V4L2 device"), "{e}");
    }
}
