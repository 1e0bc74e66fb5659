//! `headroom bench video` as a user runs it where no camera is: the machine without video
//! devices, a node that is not a V4L2 device, flags that cannot be captured. The capture
//! itself runs in the board lab (vivid), where a kernel with V4L2 devices is.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use testsupport::cmd::{fails_saying, headroom};

/// On a machine without video devices (this VM: no V4L2 driver loaded), the command says so
/// in one sentence, naming where it looked and what to load, and exits 1; `--list-formats`
/// too.
#[test]
fn no_video_device_is_one_sentence() {
    let listed = std::fs::read_dir("/sys/class/video4linux")
        .map(|d| d.count())
        .unwrap_or(0);
    if listed > 0 {
        testsupport::skip::skip("this machine has video devices");
        return;
    }
    for args in [
        &["bench", "video"][..],
        &["bench", "video", "--list-formats"],
        &[
            "bench", "video", "--format", "YUYV", "--frames", "10", "--json",
        ],
    ] {
        let err = fails_saying(
            headroom().args(args),
            1,
            "no video capture device: /sys/class/video4linux is empty (no camera is plugged \
             in, or its driver is not loaded: uvcvideo for USB cameras)",
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_node_that_is_not_v4l2_is_named() {
    let err = fails_saying(
        headroom().args(["bench", "video", "/dev/null"]),
        1,
        "/dev/null: not a V4L2 device (VIDIOC_QUERYCAP: Inappropriate ioctl for device)",
    );
    assert!(!err.contains("os error"), "{err}");
    fails_saying(
        headroom().args(["bench", "video", "/dev/no-such-video"]),
        1,
        "/dev/no-such-video: cannot open: No such file or directory",
    );
}

/// Bad values are refused before any device is opened: usage errors, exit 2.
#[test]
fn bad_flags_are_usage_errors() {
    for (args, says) in [
        (
            &["--format", "TOOLONG"][..],
            "--format \"TOOLONG\": give a pixel format",
        ),
        (&["--size", "640"], "--size \"640\": give WIDTHxHEIGHT"),
        (
            &["--fps", "0"],
            "--fps \"0\": give frames per second above 0",
        ),
        (
            &["--frames", "1"],
            "--frames \"1\": give a count of frames from 2",
        ),
        (
            &["--duration", "3h"],
            "--duration 3h: give a time above 0 and at most 1h",
        ),
    ] {
        let mut cmd = headroom();
        cmd.args(["bench", "video", "/dev/null"]).args(args);
        fails_saying(&mut cmd, 2, says);
    }
}
