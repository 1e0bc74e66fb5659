//! What a capture means: the format against the bandwidth the USB camera reserved (and the
//! bulk alternative, and the link), frames dropped, a delivered rate below the driver's,
//! frame intervals that jitter.

use model::ceiling::usb::{transfer_ceiling, TransferType, UsbSpeed};
use model::units::MB;
use model::video::{
    format_need, Capture, FormatDesc, FormatNeed, Negotiated, PeriodicEndpoint, UsbStreaming,
};
use model::{Finding, Severity};

/// A p99 frame interval this far above the nominal one is jitter: at 1.5 times the interval a
/// display refreshed at the camera's rate shows some frame twice.
pub const JITTER_RATIO: f64 = 1.5;
/// A delivered rate this far below the driver's is a shortfall (the peers' 1 % agreement).
pub const RATE_SHORTFALL: f64 = 0.01;

/// The bandwidth the negotiated format needs at the driver's rate, or at the delivered one
/// when the driver has no rate control.
pub fn need(n: &Negotiated, c: Option<&Capture>) -> Option<FormatNeed> {
    super::nominal_fps(n, c).map(|fps| format_need(n, fps))
}

/// The words for an endpoint's kind: what the USB specifications call it.
fn endpoint_words(ep: &PeriodicEndpoint) -> &'static str {
    match ep.speed {
        UsbSpeed::High if (ep.max_packet_size >> 11) & 3 > 0 => {
            "high-bandwidth isochronous endpoint"
        }
        UsbSpeed::Low | UsbSpeed::Full | UsbSpeed::High => "isochronous endpoint",
        _ => "SuperSpeed isochronous endpoint",
    }
}

/// One line on what a USB camera's streaming interface reserves.
pub fn usb_line(u: &UsbStreaming) -> String {
    let speed = u
        .speed_mbps
        .map(|s| format!(" at {s} Mb/s"))
        .unwrap_or_default();
    let mut s = format!(
        "USB {}{speed}, streaming interface {} alternate setting {}",
        u.device, u.interface, u.alt_setting
    );
    match (&u.endpoint, &u.reserved) {
        (Some(ep), Some(r)) => s.push_str(&format!(
            ": {} reserves {:.3} MB/s ({})",
            endpoint_words(ep),
            r.bytes_per_second / MB,
            r.basis
        )),
        _ if u.bulk => s.push_str(": bulk transfers, nothing reserved"),
        _ => s.push_str(": no isochronous endpoint selected (none reserved)"),
    }
    if let Some((alt, r)) = &u.largest {
        if Some(r) != u.reserved.as_ref() {
            s.push_str(&format!(
                "; the most any setting reserves is {:.3} MB/s (alternate setting {alt})",
                r.bytes_per_second / MB
            ));
        }
    }
    s
}

/// What to do when a format does not fit: a compressed format the device offers, a faster
/// port, a smaller format.
fn advice(formats: &[FormatDesc], u: &UsbStreaming) -> String {
    let mut ways = Vec::new();
    if let Some(f) = formats.iter().find(|f| f.compressed) {
        ways.push(format!("use {} (compressed)", f.fourcc));
    }
    if u.speed_mbps.is_some_and(|s| s <= 480.0) {
        ways.push("a USB 3 port (with a USB 3 camera)".to_string());
    }
    ways.push("a smaller size or a lower frame rate".to_string());
    let last = ways.pop().unwrap_or_default();
    if ways.is_empty() {
        format!("Use {last}.")
    } else {
        format!("{}, or {last}.", capitalise(&ways.join(", ")))
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The findings of a capture of `n` from `subject` (`/dev/video0`): its need against the
/// USB camera's reservation and link, then the frames.
pub fn judge(
    subject: &str,
    n: &Negotiated,
    c: &Capture,
    usb: Option<&UsbStreaming>,
    formats: &[FormatDesc],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let fps = super::nominal_fps(n, Some(c));
    let label = match fps {
        Some(f) => format!("{} {} at {f:.0} fps", n.fourcc, n.size),
        None => format!("{} {}", n.fourcc, n.size),
    };
    let need = need(n, Some(c)).and_then(|x| x.bytes_per_second);
    if let (Some(u), Some(need)) = (usb, need) {
        out.extend(fit(subject, &label, need, u, formats));
    }
    out.extend(frames(subject, c, fps));
    out
}

/// Whether `need` B/s fits what the camera's streaming interface can reserve, and its link.
fn fit(
    subject: &str,
    label: &str,
    need: f64,
    u: &UsbStreaming,
    formats: &[FormatDesc],
) -> Option<Finding> {
    let speed = u.speed_mbps.and_then(|s| UsbSpeed::from_sysfs(s, 1));
    if let Some((_, most)) = &u.largest {
        let ep = u.endpoint.as_ref();
        if need > most.bytes_per_second {
            let words = ep.map_or("isochronous endpoint", endpoint_words);
            return Some(
                Finding::new(
                    Severity::Error,
                    subject,
                    format!(
                        "{label} needs {:.1} MB/s; this camera's {words} carries at most {:.1} \
                         MB/s",
                        need / MB,
                        most.bytes_per_second / MB
                    ),
                )
                .with_advice(advice(formats, u)),
            );
        }
        if let Some(r) = u.reserved.as_ref().filter(|r| need > r.bytes_per_second) {
            return Some(Finding::new(
                Severity::Warning,
                subject,
                format!(
                    "{label} needs {:.1} MB/s, but the alternate setting the driver chose \
                     (setting {}) reserves {:.1} MB/s: frames will be cut short or dropped",
                    need / MB,
                    u.alt_setting,
                    r.bytes_per_second / MB
                ),
            ));
        }
    }
    if u.bulk {
        let ceiling =
            speed.and_then(|s| transfer_ceiling(s, TransferType::Bulk).bytes_per_second)?;
        if need > ceiling {
            return Some(
                Finding::new(
                    Severity::Error,
                    subject,
                    format!(
                        "{label} needs {:.1} MB/s; bulk transfers at {} carry at most {:.1} MB/s",
                        need / MB,
                        speed.map_or("this speed", UsbSpeed::label),
                        ceiling / MB
                    ),
                )
                .with_advice(advice(formats, u)),
            );
        }
    }
    None
}

/// Frames dropped, a rate below the driver's, intervals that jitter.
fn frames(subject: &str, c: &Capture, fps: Option<f64>) -> Vec<Finding> {
    let mut out = Vec::new();
    if c.dropped > 0 {
        let total = c.frames + c.dropped;
        out.push(
            Finding::new(
                Severity::Warning,
                subject,
                format!(
                    "frames drop: {} of {total} frames missing from the sequence numbers \
                     ({:.1} %)",
                    c.dropped,
                    c.dropped as f64 / total as f64 * 100.0
                ),
            )
            .with_advice(
                "A frame is dropped when no buffer is queued as it arrives (the capture is \
                 late: more buffers, less load) or when the device loses it on its bus.",
            ),
        );
    }
    if c.error_frames > 0 {
        out.push(Finding::new(
            Severity::Warning,
            subject,
            format!(
                "{} of {} frames were marked in error by the driver (corrupt or cut short)",
                c.error_frames, c.frames
            ),
        ));
    }
    if let (Some(want), Some(got)) = (fps, c.fps) {
        if c.dropped == 0 && got < want * (1.0 - RATE_SHORTFALL) {
            out.push(Finding::new(
                Severity::Warning,
                subject,
                format!("the device delivers {got:.2} fps, below the {want:.2} fps its driver set"),
            ));
        }
        let nominal_us = 1e6 / want;
        let i = &c.intervals;
        if i.count > 0 && i.p99_us > nominal_us * JITTER_RATIO {
            out.push(Finding::new(
                Severity::Warning,
                subject,
                format!(
                    "the frame interval jitters: p99 {:.1} ms and max {:.1} ms against {:.1} ms \
                     at {want:.2} fps (the driver's timestamps)",
                    i.p99_us / 1000.0,
                    i.max_us / 1000.0,
                    nominal_us / 1000.0
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use model::video::{reserved_bandwidth, FourCc, Fps, FrameSize, Intervals, TimestampClock};

    fn yuyv_1080p30() -> Negotiated {
        Negotiated {
            fourcc: FourCc::parse("YUYV").unwrap(),
            size: FrameSize {
                width: 1920,
                height: 1080,
            },
            bytesperline: 3840,
            sizeimage: 3840 * 1080,
            compressed: false,
            fps: Some(Fps { num: 30, den: 1 }),
            buffers: 4,
        }
    }

    fn capture(frames: u64, dropped: u64, fps: f64, p99_us: f64) -> Capture {
        Capture {
            frames,
            error_frames: 0,
            dropped,
            first_sequence: Some(0),
            last_sequence: Some((frames + dropped - 1) as u32),
            bytes: frames * 4_147_200,
            fps: Some(fps),
            bytes_per_second: Some(4_147_200.0 * fps),
            intervals: Intervals {
                count: frames - 1,
                min_us: 33_000.0,
                p50_us: 33_333.0,
                p99_us,
                max_us: p99_us,
                mean_us: 33_333.0,
            },
            clock: TimestampClock::Monotonic,
            elapsed_s: 1.0,
            cpu_user_s: 0.0,
            cpu_system_s: 0.0,
            interrupted: false,
        }
    }

    fn hs_camera(maxp: u16) -> UsbStreaming {
        let ep = PeriodicEndpoint {
            speed: UsbSpeed::High,
            transfer: TransferType::Isochronous,
            max_packet_size: maxp,
            interval: 1,
            max_burst: None,
            companion_attributes: None,
            bytes_per_interval: None,
        };
        let r = reserved_bandwidth(&ep).unwrap();
        UsbStreaming {
            device: "1-1".into(),
            speed_mbps: Some(480.0),
            interface: 1,
            alt_setting: 7,
            endpoint: Some(ep),
            reserved: Some(r.clone()),
            largest: Some((7, r)),
            bulk: false,
        }
    }

    #[test]
    fn uncompressed_1080p30_cannot_fit_a_usb2_camera() {
        let mjpg = FormatDesc {
            fourcc: FourCc::parse("MJPG").unwrap(),
            description: "Motion-JPEG".into(),
            compressed: true,
            emulated: false,
            sizes: Vec::new(),
        };
        let f = judge(
            "/dev/video0",
            &yuyv_1080p30(),
            &capture(30, 0, 30.0, 33_400.0),
            Some(&hs_camera(0x1400)),
            &[mjpg],
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(
            f[0].message,
            "YUYV 1920x1080 at 30 fps needs 124.4 MB/s; this camera's high-bandwidth \
             isochronous endpoint carries at most 24.6 MB/s"
        );
        assert_eq!(
            f[0].advice.as_deref(),
            Some(
                "Use MJPG (compressed), a USB 3 port (with a USB 3 camera), or a smaller size \
                 or a lower frame rate."
            )
        );
    }

    #[test]
    fn drops_a_short_rate_and_jitter_are_findings() {
        let n = yuyv_1080p30();
        let f = judge(
            "/dev/video0",
            &n,
            &capture(90, 10, 27.0, 66_000.0),
            None,
            &[],
        );
        let m: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert!(
            m[0].starts_with("frames drop: 10 of 100 frames missing"),
            "{m:?}"
        );
        assert!(m
            .iter()
            .any(|m| m.starts_with("the frame interval jitters: p99 66.0 ms")));
        // The rate shortfall is said by the drops already.
        assert_eq!(f.len(), 2, "{m:?}");
        let f = judge(
            "/dev/video0",
            &n,
            &capture(90, 0, 29.0, 34_000.0),
            None,
            &[],
        );
        assert_eq!(
            f[0].message,
            "the device delivers 29.00 fps, below the 30.00 fps its driver set"
        );
        assert!(judge(
            "/dev/video0",
            &n,
            &capture(90, 0, 29.9, 34_000.0),
            None,
            &[]
        )
        .is_empty());
    }

    #[test]
    fn a_setting_below_the_need_is_a_warning() {
        // 640x480 YUYV at 30 fps: 18.4 MB/s, inside 24.6 MB/s, but the driver chose a
        // setting of 1 x 944 B per microframe (7.6 MB/s).
        let mut n = yuyv_1080p30();
        n.size = FrameSize {
            width: 640,
            height: 480,
        };
        n.bytesperline = 1280;
        n.sizeimage = 1280 * 480;
        let mut u = hs_camera(0x1400);
        let small = PeriodicEndpoint {
            max_packet_size: 944,
            ..u.endpoint.unwrap()
        };
        u.reserved = Some(reserved_bandwidth(&small).unwrap());
        u.endpoint = Some(small);
        u.alt_setting = 2;
        let f = judge(
            "/dev/video0",
            &n,
            &capture(30, 0, 30.0, 33_400.0),
            Some(&u),
            &[],
        );
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("(setting 2) reserves 7.6 MB/s"),
            "{}",
            f[0].message
        );
        assert!(usb_line(&u).contains("the most any setting reserves is 24.576 MB/s"));
    }
}
