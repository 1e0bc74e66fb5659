//! `bench video`: what a V4L2 capture is asked (pixel format, frame size, frame rate, how long),
//! checked here; the bandwidth a format needs; the isochronous or interrupt bandwidth a USB
//! endpoint reserves; and what one capture measured.
//!
//! Sources:
//! - [v4l2]: the kernel's V4L2 uAPI, `include/uapi/linux/videodev2.h` and
//!   Documentation/userspace-api/media/v4l (pixel formats, `bytesperline`, `sizeimage`,
//!   `V4L2_FMT_FLAG_COMPRESSED`, buffer timestamps and sequence numbers).
//! - [usb2]: Universal Serial Bus Specification, Revision 2.0: section 5.6.4 (isochronous
//!   bandwidth), 5.9 (high-bandwidth endpoints), 9.6.6 (endpoint descriptor: wMaxPacketSize
//!   bits 10..0 the packet size, bits 12..11 the additional transactions per microframe;
//!   bInterval, 2^(bInterval-1) (micro)frames for isochronous endpoints).
//! - [usb32]: Universal Serial Bus 3.2 Specification: section 9.6.6 (bInterval at SuperSpeed),
//!   9.6.7 (SuperSpeed endpoint companion: bMaxBurst, Mult in bmAttributes bits 1..0,
//!   wBytesPerInterval, the bytes the endpoint moves per service interval).

use crate::ceiling::usb::{TransferType, UsbSpeed};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A V4L2 pixel format code: four ASCII characters, the first in the low byte ([v4l2]
/// `v4l2_fourcc`), as `YUYV`, `MJPG`, `Y10 ` (padded with spaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FourCc(pub [u8; 4]);

impl FourCc {
    pub fn from_u32(v: u32) -> FourCc {
        FourCc(v.to_le_bytes())
    }

    pub fn to_u32(self) -> u32 {
        u32::from_le_bytes(self.0)
    }

    /// `--format` as v4l2-ctl users write it: 1 to 4 printable ASCII characters (`YUYV`,
    /// `MJPG`, `GREY`, `Y10`), padded with spaces to four.
    pub fn parse(s: &str) -> Result<FourCc, String> {
        let b = s.as_bytes();
        if b.is_empty() || b.len() > 4 || !b.iter().all(|c| c.is_ascii_graphic()) {
            return Err(format!(
                "--format {s:?}: give a pixel format as 1 to 4 letters or digits, e.g. YUYV or \
                 MJPG (`headroom bench video --list-formats` lists the device's)"
            ));
        }
        let mut out = [b' '; 4];
        out[..b.len()].copy_from_slice(b);
        Ok(FourCc(out))
    }

    /// Whether the code is the big-endian variant of another (bit 31, [v4l2]
    /// `v4l2_fourcc_be`).
    pub fn is_big_endian(self) -> bool {
        self.to_u32() & (1 << 31) != 0
    }
}

impl std::fmt::Display for FourCc {
    /// The four characters with trailing spaces trimmed; a byte that is not printable ASCII
    /// (a driver's garbage, the big-endian bit) as `\xNN`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut b = self.0;
        b[3] &= 0x7f;
        let mut s = String::new();
        for c in b {
            if c.is_ascii_graphic() || c == b' ' {
                s.push(char::from(c));
            } else {
                s.push_str(&format!("\\x{c:02x}"));
            }
        }
        let s = s.trim_end();
        if self.is_big_endian() {
            write!(f, "{s}-BE")
        } else {
            f.write_str(s)
        }
    }
}

impl Serialize for FourCc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.to_u32())
    }
}

impl<'de> Deserialize<'de> for FourCc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FourCc, D::Error> {
        u32::deserialize(d).map(FourCc::from_u32)
    }
}

/// Width by height in pixels (`--size 640x480`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameSize {
    pub width: u32,
    pub height: u32,
}

/// The largest side V4L2 drivers accept (vivid's limit, MAX_WIDTH/MAX_HEIGHT 16384 in its
/// vivid-core.h); a bound against typos.
const MAX_SIDE: u32 = 16_384;

impl FrameSize {
    pub fn parse(s: &str) -> Result<FrameSize, String> {
        let bad = || {
            format!("--size {s:?}: give WIDTHxHEIGHT in pixels, each 1 to {MAX_SIDE}, e.g. 640x480")
        };
        let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let side = |v: &str| {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_SIDE).contains(n))
        };
        match (side(w), side(h)) {
            (Some(width), Some(height)) => Ok(FrameSize { width, height }),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for FrameSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// A frame rate as a fraction, frames per `den` seconds (`30`, `30000/1001`, `7.5`): V4L2
/// asks for its inverse, the time per frame ([v4l2] `v4l2_captureparm.timeperframe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fps {
    pub num: u32,
    pub den: u32,
}

/// The fastest frame rate accepted, a bound against typos (a high-speed sensor's rate).
const MAX_FPS: f64 = 10_000.0;

impl Fps {
    pub fn parse(s: &str) -> Result<Fps, String> {
        let bad = || {
            format!(
                "--fps {s:?}: give frames per second above 0 and at most {MAX_FPS}, e.g. 30, 7.5 \
                 or 30000/1001"
            )
        };
        let fps = if let Some((n, d)) = s.split_once('/') {
            match (n.trim().parse::<u32>(), d.trim().parse::<u32>()) {
                (Ok(num), Ok(den)) if num > 0 && den > 0 => Fps { num, den },
                _ => return Err(bad()),
            }
        } else {
            let v: f64 = s.trim().parse().map_err(|_| bad())?;
            if !v.is_finite() || v <= 0.0 {
                return Err(bad());
            }
            // Three decimals are what any camera's rate needs (7.5, 59.94).
            let num = (v * 1000.0).round();
            if num < 1.0 || num > f64::from(u32::MAX) {
                return Err(bad());
            }
            let (num, den) = (num as u32, 1000u32);
            let (mut a, mut b) = (num, den);
            while b != 0 {
                (a, b) = (b, a % b);
            }
            Fps {
                num: num / a,
                den: den / a,
            }
        };
        if fps.value() > MAX_FPS {
            return Err(bad());
        }
        Ok(fps)
    }

    pub fn value(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }
}

impl std::fmt::Display for Fps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{:.3}", self.value())
        }
    }
}

/// When a capture ends: after N frames (v4l2-ctl's `--stream-count`) or after a time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Frames(u64),
    Duration(Duration),
}

/// The most frames one capture takes: a day at 1000 fps would be more than any test needs.
pub const MAX_FRAMES: u64 = 10_000_000;
/// The longest capture.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// A capture without `--frames` or `--duration` runs this long.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(5);
/// Buffers asked of the driver (v4l2-ctl's default `--stream-mmap` count is 4).
pub const DEFAULT_BUFFERS: u32 = 4;
/// How long a capture waits for one frame before it says the device delivers none.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(5);

/// What `bench video` asks of the device: unset fields keep the driver's current value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VideoConfig {
    pub format: Option<FourCc>,
    pub size: Option<FrameSize>,
    pub fps: Option<Fps>,
    pub limit: Limit,
    pub buffers: u32,
}

/// `bench video`'s flags as given.
#[derive(Clone, Debug, Default)]
pub struct VideoFlags<'a> {
    pub format: Option<&'a str>,
    pub size: Option<&'a str>,
    pub fps: Option<&'a str>,
    pub frames: Option<&'a str>,
    pub duration: Option<&'a str>,
}

impl VideoConfig {
    /// The flags checked: each bad value is one sentence naming its flag.
    pub fn from_flags(f: &VideoFlags<'_>) -> Result<VideoConfig, String> {
        let limit = match (f.frames, f.duration) {
            (Some(_), Some(_)) => {
                return Err(
                    "give --frames or --duration, not both: the capture ends at the \
                            first"
                        .into(),
                )
            }
            (Some(n), None) => {
                let n = n
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (2..=MAX_FRAMES).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "--frames {n:?}: give a count of frames from 2 (one interval) to \
                             {MAX_FRAMES}"
                        )
                    })?;
                Limit::Frames(n)
            }
            (None, Some(d)) => {
                let t = crate::units::parse_duration(d)
                    .map_err(|why| format!("--duration {d}: {why}"))?;
                if t.is_zero() || t > MAX_DURATION {
                    return Err(format!(
                        "--duration {d}: give a time above 0 and at most 1h"
                    ));
                }
                Limit::Duration(t)
            }
            (None, None) => Limit::Duration(DEFAULT_DURATION),
        };
        Ok(VideoConfig {
            format: f.format.map(FourCc::parse).transpose()?,
            size: f.size.map(FrameSize::parse).transpose()?,
            fps: f.fps.map(Fps::parse).transpose()?,
            limit,
            buffers: DEFAULT_BUFFERS,
        })
    }
}

/// What VIDIOC_QUERYCAP says of a device ([v4l2] `v4l2_capability`), strings as the driver
/// gave them (escape before showing).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCaps {
    pub driver: String,
    pub card: String,
    pub bus_info: String,
    /// The driver's version, `major.minor.patch`.
    pub version: String,
    /// The device node's capabilities (`device_caps`, or `capabilities` from a driver too old
    /// to set it), `V4L2_CAP_*` bits.
    pub device_caps: u32,
}

/// [v4l2] `V4L2_CAP_VIDEO_CAPTURE`, `V4L2_CAP_VIDEO_CAPTURE_MPLANE`, `V4L2_CAP_STREAMING`.
pub const CAP_VIDEO_CAPTURE: u32 = 0x0000_0001;
pub const CAP_VIDEO_CAPTURE_MPLANE: u32 = 0x0000_1000;
pub const CAP_STREAMING: u32 = 0x0400_0000;

impl DeviceCaps {
    /// A single-planar capture device that streams: what `bench video` captures from.
    pub fn captures(&self) -> bool {
        self.device_caps & CAP_VIDEO_CAPTURE != 0 && self.device_caps & CAP_STREAMING != 0
    }

    /// The capabilities by name, as v4l2-ctl `--info` lists them.
    pub fn capability_names(&self) -> Vec<&'static str> {
        const NAMES: &[(u32, &str)] = &[
            (0x0000_0001, "Video Capture"),
            (0x0000_0002, "Video Output"),
            (0x0000_0004, "Video Overlay"),
            (0x0000_0010, "VBI Capture"),
            (0x0000_0020, "VBI Output"),
            (0x0000_1000, "Video Capture Multiplanar"),
            (0x0000_2000, "Video Output Multiplanar"),
            (0x0000_4000, "Video Memory-to-Memory Multiplanar"),
            (0x0000_8000, "Video Memory-to-Memory"),
            (0x0001_0000, "Tuner"),
            (0x0002_0000, "Audio"),
            (0x0004_0000, "Radio"),
            (0x0010_0000, "SDR Capture"),
            (0x0080_0000, "Metadata Capture"),
            (0x0100_0000, "Read/Write"),
            (0x0400_0000, "Streaming"),
            (0x1000_0000, "Touch Device"),
        ];
        NAMES
            .iter()
            .filter(|(bit, _)| self.device_caps & bit != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// One pixel format a device offers, with its sizes and frame rates (what `v4l2-ctl
/// --list-formats-ext` prints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FormatDesc {
    pub fourcc: FourCc,
    pub description: String,
    /// [v4l2] `V4L2_FMT_FLAG_COMPRESSED`: frames vary in size, the need is what is measured.
    pub compressed: bool,
    /// [v4l2] `V4L2_FMT_FLAG_EMULATED`: made by libv4l in software, not the device.
    pub emulated: bool,
    pub sizes: Vec<SizeDesc>,
}

/// A frame size a format offers (`VIDIOC_ENUM_FRAMESIZES`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SizeDesc {
    Discrete {
        size: FrameSize,
        intervals: Vec<IntervalDesc>,
    },
    /// Any size from `min` to `max` in steps (`continuous` when both steps are 1).
    Stepwise {
        min: FrameSize,
        max: FrameSize,
        step: FrameSize,
    },
}

/// A frame interval a size offers (`VIDIOC_ENUM_FRAMEINTERVALS`), as time per frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IntervalDesc {
    Discrete {
        num: u32,
        den: u32,
    },
    Stepwise {
        min: (u32, u32),
        max: (u32, u32),
        step: (u32, u32),
    },
}

/// What the driver settled on after S_FMT and S_PARM: the format that was captured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Negotiated {
    pub fourcc: FourCc,
    pub size: FrameSize,
    pub bytesperline: u32,
    pub sizeimage: u32,
    pub compressed: bool,
    /// The time per frame the driver reports (`timeperframe`), as a rate; None when it has no
    /// frame rate control (`V4L2_CAP_TIMEPERFRAME` unset).
    pub fps: Option<Fps>,
    pub buffers: u32,
}

/// The bandwidth a format needs at a frame rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FormatNeed {
    /// Bytes per second; None for a compressed format (its frames vary in size).
    pub bytes_per_second: Option<f64>,
    /// How it was derived, one sentence.
    pub basis: String,
}

/// The bandwidth `n` needs at `fps` frames per second: an uncompressed frame is the driver's
/// `sizeimage` (bytesperline x height for one plane, more for planar formats: [v4l2]
/// "Image Formats"), every frame the same; a compressed format's frames vary, so its need is
/// unknown until measured.
pub fn format_need(n: &Negotiated, fps: f64) -> FormatNeed {
    if n.compressed {
        return FormatNeed {
            bytes_per_second: None,
            basis: format!(
                "{} is compressed: its frames vary in size, so the bandwidth it needs is what \
                 was measured",
                n.fourcc
            ),
        };
    }
    let per_line = u64::from(n.bytesperline) * u64::from(n.size.height);
    let frame = u64::from(n.sizeimage).max(per_line);
    let how = if u64::from(n.sizeimage) > per_line {
        format!("sizeimage {frame} B")
    } else {
        format!("{} B per line x {} lines", n.bytesperline, n.size.height)
    };
    FormatNeed {
        bytes_per_second: Some(frame as f64 * fps),
        basis: format!("{} {} frames of {how} at {fps:.3} fps", n.fourcc, n.size),
    }
}

/// One isochronous or interrupt endpoint, as its descriptors give it ([usb2] 9.6.6,
/// [usb32] 9.6.7): the numbers only, so any reader of descriptors can fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodicEndpoint {
    /// The speed the device runs at.
    pub speed: UsbSpeed,
    pub transfer: TransferType,
    /// wMaxPacketSize as in the descriptor: bits 10..0 the packet size, bits 12..11 the
    /// additional transactions per microframe (high speed).
    pub max_packet_size: u16,
    pub interval: u8,
    /// SuperSpeed companion: bMaxBurst (0 to 15: 1 to 16 packets per burst).
    pub max_burst: Option<u8>,
    /// SuperSpeed companion: bmAttributes (Mult in bits 1..0 for an isochronous endpoint).
    pub companion_attributes: Option<u8>,
    /// SuperSpeed companion: wBytesPerInterval.
    pub bytes_per_interval: Option<u16>,
}

/// The bandwidth an endpoint reserves: bytes per service interval and per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reserved {
    pub bytes_per_interval: u32,
    pub interval_us: f64,
    pub bytes_per_second: f64,
    /// How it was derived, one sentence citing the specification.
    pub basis: String,
}

/// The bandwidth `ep` reserves on its bus, or why it has none (a bulk or control endpoint, a
/// value the specification does not allow).
pub fn reserved_bandwidth(ep: &PeriodicEndpoint) -> Result<Reserved, String> {
    let periodic = matches!(
        ep.transfer,
        TransferType::Isochronous | TransferType::Interrupt
    );
    if !periodic {
        return Err(format!(
            "a {} endpoint reserves no bandwidth: it gets what periodic transfers leave",
            ep.transfer.label()
        ));
    }
    let iso = ep.transfer == TransferType::Isochronous;
    let packet = u32::from(ep.max_packet_size & 0x7ff);
    let b_interval = u32::from(ep.interval);
    // 2^(bInterval-1) frames or microframes ([usb2] 9.6.6, [usb32] 9.6.6), bInterval 1..16.
    let exponent = |unit_us: f64, what: &str| -> Result<f64, String> {
        if !(1..=16).contains(&b_interval) {
            return Err(format!(
                "bInterval {b_interval} is outside 1..16 for {what} ([usb2] 9.6.6)"
            ));
        }
        Ok(unit_us * f64::from(1u32 << (b_interval - 1)))
    };
    let (bytes, interval_us, basis) = match ep.speed {
        UsbSpeed::Low | UsbSpeed::Full => {
            let interval_us = if iso {
                exponent(1000.0, "a full-speed isochronous endpoint")?
            } else {
                // Interrupt: bInterval frames of 1 ms, 1..255 ([usb2] 9.6.6).
                if b_interval == 0 {
                    return Err("bInterval 0 is not allowed for an interrupt endpoint".into());
                }
                1000.0 * f64::from(b_interval)
            };
            (
                packet,
                interval_us,
                format!(
                    "{packet} B every {} ([usb2] 5.6.4, 9.6.6)",
                    interval_words(interval_us)
                ),
            )
        }
        UsbSpeed::High => {
            let extra = u32::from((ep.max_packet_size >> 11) & 3);
            if extra == 3 {
                return Err(format!(
                    "wMaxPacketSize {:#06x} asks 4 transactions per microframe, which [usb2] \
                     9.6.6 reserves",
                    ep.max_packet_size
                ));
            }
            let interval_us = exponent(125.0, "a high-speed periodic endpoint")?;
            let n = extra + 1;
            (
                packet * n,
                interval_us,
                format!(
                    "{n} x {packet} B (wMaxPacketSize {:#06x}) every {} ([usb2] 5.9, 9.6.6)",
                    ep.max_packet_size,
                    interval_words(interval_us)
                ),
            )
        }
        _ => {
            let interval_us = exponent(125.0, "a SuperSpeed periodic endpoint")?;
            let burst = u32::from(ep.max_burst.unwrap_or(0)).min(15) + 1;
            let mult = if iso {
                u32::from(ep.companion_attributes.unwrap_or(0) & 3).min(2) + 1
            } else {
                1
            };
            let most = packet * burst * mult;
            // The companion's wBytesPerInterval is what the endpoint moves per interval and
            // what the host controller reserves; the packets x burst x Mult bound above it.
            let (bytes, how) = match ep.bytes_per_interval.map(u32::from) {
                Some(b) if b > 0 && b <= most => (
                    b,
                    format!(
                        "wBytesPerInterval {b} B (at most {burst} burst x {mult} Mult x {packet} \
                         B)"
                    ),
                ),
                _ => (most, format!("{burst} burst x {mult} Mult x {packet} B")),
            };
            (
                bytes,
                interval_us,
                format!(
                    "{how} every {} ([usb32] 9.6.6, 9.6.7)",
                    interval_words(interval_us)
                ),
            )
        }
    };
    Ok(Reserved {
        bytes_per_interval: bytes,
        interval_us,
        bytes_per_second: f64::from(bytes) / (interval_us * 1e-6),
        basis,
    })
}

fn interval_words(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", us / 1000.0)
    } else {
        format!("{us} us")
    }
}

/// A V4L2 device node as sysfs describes it (`/sys/class/video4linux/NAME`), with what
/// VIDIOC_QUERYCAP and the format enumeration said when the node could be opened. Strings are
/// the kernel's and the driver's: escape before showing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VideoNode {
    /// `video0`.
    pub name: String,
    /// `/dev/video0`.
    pub dev: String,
    /// The sysfs `name`: the card, as the driver names it.
    pub title: Option<String>,
    pub index: Option<u32>,
    /// The canonical sysfs directory of the device the node belongs to (a USB interface, a
    /// platform device, a PCI function).
    pub device: Option<String>,
    pub driver: Option<String>,
    /// The bus of that device: `usb`, `platform`, `pci`.
    pub bus: Option<String>,
    /// The USB device (`1-1`) when the bus is USB.
    pub usb_device: Option<String>,
    #[serde(default)]
    pub caps: Option<DeviceCaps>,
    #[serde(default)]
    pub formats: Vec<FormatDesc>,
    /// Why QUERYCAP or the formats could not be read (permission, a busy node).
    #[serde(default)]
    pub unreadable: Option<String>,
}

/// What the video streaming interface of a USB camera (USB Video Class: interface class 0x0e,
/// subclass 0x02) reserves on its bus, read from the device's descriptors and the interface's
/// current alternate setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsbStreaming {
    /// The USB device, `1-1`.
    pub device: String,
    /// Its signalling rate, Mb/s, as sysfs `speed`.
    pub speed_mbps: Option<f64>,
    /// The streaming interface's number.
    pub interface: u8,
    /// The alternate setting the driver had selected when read (0: none reserved; a UVC
    /// driver selects one only while streaming).
    pub alt_setting: u8,
    /// The isochronous endpoint of that setting and what it reserves.
    pub endpoint: Option<PeriodicEndpoint>,
    pub reserved: Option<Reserved>,
    /// The alternate setting that reserves the most, and that.
    pub largest: Option<(u8, Reserved)>,
    /// The interface moves video by bulk transfers (a bulk endpoint, no reservation): it
    /// shares what periodic transfers leave.
    pub bulk: bool,
}

/// Which clock the driver's buffer timestamps come from ([v4l2]
/// `V4L2_BUF_FLAG_TIMESTAMP_MASK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampClock {
    /// CLOCK_MONOTONIC, taken by the driver when the frame was captured.
    Monotonic,
    /// Copied from an output buffer (memory-to-memory devices).
    Copy,
    /// The driver does not say: the capture took its own monotonic time at dequeue.
    Dequeue,
}

/// A distribution of frame intervals, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    pub count: u64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// What one capture measured, no judgement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    /// Frames dequeued (those the driver marked in error included).
    pub frames: u64,
    /// Frames the driver marked `V4L2_BUF_FLAG_ERROR` (corrupt or partial).
    #[serde(default)]
    pub error_frames: u64,
    /// Frames missing between the first and the last, from gaps in the sequence numbers.
    pub dropped: u64,
    pub first_sequence: Option<u32>,
    pub last_sequence: Option<u32>,
    /// Payload bytes of every frame (`bytesused`).
    pub bytes: u64,
    /// Frames per second over the driver's timestamps, first to last.
    pub fps: Option<f64>,
    /// The payload's rate over the same span, B/s.
    pub bytes_per_second: Option<f64>,
    pub intervals: Intervals,
    pub clock: TimestampClock,
    /// From STREAMON to the last frame, seconds.
    pub elapsed_s: f64,
    /// CPU time of the process while streaming, seconds.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// The capture ended before its limit (a signal).
    pub interrupted: bool,
}

impl Capture {
    /// CPU time per second of capture, percent of one CPU.
    pub fn cpu_percent(&self) -> Option<f64> {
        (self.elapsed_s > 0.0)
            .then(|| (self.cpu_user_s + self.cpu_system_s) / self.elapsed_s * 100.0)
    }
}

/// Frames missing between sequence numbers `prev` and `next` of consecutive dequeued buffers
/// (32-bit sequence numbers wrap: [v4l2] `v4l2_buffer.sequence`); a repeated or backward
/// number (a driver restarting its count) is no gap.
pub fn sequence_gap(prev: u32, next: u32) -> u64 {
    let step = next.wrapping_sub(prev);
    if step == 0 || step > u32::MAX / 2 {
        0
    } else {
        u64::from(step - 1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn negotiated(fourcc: &str, w: u32, h: u32, bpl: u32, compressed: bool) -> Negotiated {
        Negotiated {
            fourcc: FourCc::parse(fourcc).unwrap(),
            size: FrameSize {
                width: w,
                height: h,
            },
            bytesperline: bpl,
            sizeimage: bpl * h,
            compressed,
            fps: None,
            buffers: 4,
        }
    }

    #[test]
    fn yuyv_1080p30_needs_124_4_mb_per_s() {
        // YUYV is 2 bytes per pixel: 1920 x 2 = 3840 B per line, x 1080 lines x 30 fps.
        let need = format_need(&negotiated("YUYV", 1920, 1080, 3840, false), 30.0);
        assert_eq!(need.bytes_per_second, Some(124_416_000.0));
        assert!(
            need.basis.contains("3840 B per line x 1080 lines"),
            "{}",
            need.basis
        );
    }

    #[test]
    fn a_compressed_format_needs_what_is_measured() {
        let need = format_need(&negotiated("MJPG", 1920, 1080, 0, true), 30.0);
        assert_eq!(need.bytes_per_second, None);
        assert!(need.basis.contains("MJPG is compressed"));
    }

    #[test]
    fn planar_formats_count_sizeimage() {
        // NV12 at 640x480: 640 B per luma line, and half as much chroma below it.
        let mut n = negotiated("NV12", 640, 480, 640, false);
        n.sizeimage = 640 * 480 * 3 / 2;
        let need = format_need(&n, 10.0);
        assert_eq!(need.bytes_per_second, Some(4_608_000.0));
    }

    fn hs(maxp: u16, interval: u8) -> PeriodicEndpoint {
        PeriodicEndpoint {
            speed: UsbSpeed::High,
            transfer: TransferType::Isochronous,
            max_packet_size: maxp,
            interval,
            max_burst: None,
            companion_attributes: None,
            bytes_per_interval: None,
        }
    }

    #[test]
    fn high_bandwidth_isochronous_is_3_x_1024_b_per_microframe() {
        // [usb2] 5.9 / 9.6.6: wMaxPacketSize 0x1400 = 1024 B with 2 additional transactions,
        // bInterval 1: 3 x 1024 B every 125 us = 24.576 MB/s, the most a USB 2.0 isochronous
        // endpoint reserves.
        let r = reserved_bandwidth(&hs(0x1400, 1)).unwrap();
        assert_eq!(r.bytes_per_interval, 3072);
        assert_eq!(r.interval_us, 125.0);
        assert!((r.bytes_per_second - 24_576_000.0).abs() < 1e-6);
        assert!(r
            .basis
            .contains("3 x 1024 B (wMaxPacketSize 0x1400) every 125 us"));
        // A UVC camera's smaller alternate setting: 1 x 944 B every microframe, and the
        // same packet every 4th microframe (bInterval 3).
        let small = reserved_bandwidth(&hs(944, 1)).unwrap();
        assert!((small.bytes_per_second - 7_552_000.0).abs() < 1e-6);
        let sparse = reserved_bandwidth(&hs(944, 3)).unwrap();
        assert_eq!(sparse.interval_us, 500.0);
        // Bits 12..11 = 3 are reserved.
        assert!(reserved_bandwidth(&hs(0x1c00, 1)).is_err());
        assert!(reserved_bandwidth(&hs(0x1400, 0)).is_err());
    }

    #[test]
    fn superspeed_isochronous_is_burst_x_mult_x_1024_b() {
        // [usb32] 9.6.7: bMaxBurst 15 (16 packets), Mult 2 (3 bursts), 1024 B every 125 us:
        // 48 KiB per interval, 393.216 MB/s.
        let ep = PeriodicEndpoint {
            speed: UsbSpeed::Gen1,
            transfer: TransferType::Isochronous,
            max_packet_size: 1024,
            interval: 1,
            max_burst: Some(15),
            companion_attributes: Some(2),
            bytes_per_interval: None,
        };
        let r = reserved_bandwidth(&ep).unwrap();
        assert_eq!(r.bytes_per_interval, 49_152);
        assert!((r.bytes_per_second - 393_216_000.0).abs() < 1e-3);
        // wBytesPerInterval below the bound is what is reserved.
        let r = reserved_bandwidth(&PeriodicEndpoint {
            bytes_per_interval: Some(24_576),
            ..ep
        })
        .unwrap();
        assert_eq!(r.bytes_per_interval, 24_576);
        assert!(r.basis.contains("wBytesPerInterval 24576 B"));
    }

    #[test]
    fn full_speed_and_bulk() {
        let fs = PeriodicEndpoint {
            speed: UsbSpeed::Full,
            ..hs(1023, 1)
        };
        let r = reserved_bandwidth(&fs).unwrap();
        assert!((r.bytes_per_second - 1_023_000.0).abs() < 1e-6);
        let bulk = PeriodicEndpoint {
            transfer: TransferType::Bulk,
            ..hs(512, 0)
        };
        assert!(reserved_bandwidth(&bulk).unwrap_err().contains("bulk"));
    }

    #[test]
    fn flags_are_checked_one_sentence_each() {
        let ok = VideoConfig::from_flags(&VideoFlags {
            format: Some("YUYV"),
            size: Some("640x480"),
            fps: Some("30000/1001"),
            frames: Some("60"),
            duration: None,
        })
        .unwrap();
        assert_eq!(ok.format.unwrap().to_u32(), 0x5659_5559);
        assert_eq!(ok.size.unwrap().to_string(), "640x480");
        assert_eq!(ok.limit, Limit::Frames(60));
        assert_eq!(Fps::parse("7.5").unwrap(), Fps { num: 15, den: 2 });
        assert_eq!(FourCc::parse("Y10").unwrap().0, *b"Y10 ");
        for (flags, says) in [
            (
                VideoFlags {
                    format: Some("YUYV2"),
                    ..Default::default()
                },
                "--format",
            ),
            (
                VideoFlags {
                    size: Some("640*480"),
                    ..Default::default()
                },
                "--size",
            ),
            (
                VideoFlags {
                    size: Some("0x480"),
                    ..Default::default()
                },
                "--size",
            ),
            (
                VideoFlags {
                    fps: Some("0"),
                    ..Default::default()
                },
                "--fps",
            ),
            (
                VideoFlags {
                    fps: Some("1e9"),
                    ..Default::default()
                },
                "--fps",
            ),
            (
                VideoFlags {
                    frames: Some("1"),
                    ..Default::default()
                },
                "--frames",
            ),
            (
                VideoFlags {
                    duration: Some("2h"),
                    ..Default::default()
                },
                "--duration",
            ),
            (
                VideoFlags {
                    frames: Some("10"),
                    duration: Some("1s"),
                    ..Default::default()
                },
                "not both",
            ),
        ] {
            let e = VideoConfig::from_flags(&flags).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let d = VideoConfig::from_flags(&VideoFlags::default()).unwrap();
        assert_eq!(d.limit, Limit::Duration(DEFAULT_DURATION));
    }

    #[test]
    fn fourcc_shows_escaped() {
        assert_eq!(FourCc(*b"YUYV").to_string(), "YUYV");
        assert_eq!(FourCc(*b"Y10 ").to_string(), "Y10");
        assert_eq!(FourCc([b'A', 0x1b, b'[', b'm']).to_string(), "A\\x1b[m");
        assert_eq!(
            FourCc::from_u32(0x5659_5559 | (1 << 31)).to_string(),
            "YUYV-BE"
        );
    }

    #[test]
    fn sequence_gaps_count_missing_frames() {
        assert_eq!(sequence_gap(4, 5), 0);
        assert_eq!(sequence_gap(4, 7), 2);
        assert_eq!(sequence_gap(u32::MAX, 0), 0);
        assert_eq!(sequence_gap(u32::MAX - 1, 1), 2);
    }
}
