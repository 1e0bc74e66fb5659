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

/// The audit lists video nodes with their card, driver and bus; `path /dev/videoN` ends at a
/// UVC camera's USB chain, and names vivid's platform device (tests/fixtures/sysfs/uvc-camera).
#[test]
fn audit_and_path_show_video_devices() {
    let root = testsupport::fixtures::own("sysfs/uvc-camera");
    let root = root.to_str().unwrap();
    let out = testsupport::cmd::stdout_of(headroom().args(["audit", "--root", root]));
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Video devices:\n  /dev/video0  Logitech StreamCam [uvcvideo] on usb 1-4\n"),
        "{text}"
    );
    assert!(
        text.contains("  /dev/video2  vivid-000-vid-cap [vivid] on platform\n"),
        "{text}"
    );
    let doc = testsupport::cmd::json_of(headroom().args(["audit", "--json", "--root", root]));
    assert_eq!(doc["video"][1]["name"], "video1");
    let path = String::from_utf8(testsupport::cmd::stdout_of(headroom().args([
        "path",
        "--root",
        root,
        "/dev/video0",
    ])))
    .unwrap();
    let hops: Vec<&str> = path.lines().skip(1).take(5).map(str::trim).collect();
    assert!(
        hops[0].starts_with("video video0 Logitech StreamCam [uvcvideo]"),
        "{path}"
    );
    assert!(hops[1].starts_with("USB 1-4 480M"), "{path}");
    assert_eq!(hops[4], "CPU", "{path}");
    let vivid = String::from_utf8(testsupport::cmd::stdout_of(headroom().args([
        "path",
        "--root",
        root,
        "/dev/video2",
    ])))
    .unwrap();
    assert!(
        vivid.contains("  platform vivid.0 [vivid]\n  CPU\n"),
        "{vivid}"
    );
}

/// A capture in a lab's formats: its rate, drops and interval as figures, its findings as
/// failed cases (a vivid capture from the board lab, tests/fixtures/results).
#[test]
fn a_capture_reads_as_lab_cases() {
    let file = testsupport::fixtures::own("results/video-vivid-yuyv.json");
    let out = testsupport::cmd::stdout_of(headroom().args([
        "report",
        "--format",
        "lava",
        file.to_str().unwrap(),
    ]));
    let text = String::from_utf8(out).unwrap();
    for line in [
        "lava-test-case headroom.video.YUYV_640x480.fps --result pass --measurement 23.071103 --units fps",
        "lava-test-case headroom.video.YUYV_640x480.dropped --result pass --measurement 4 --units frames",
        "lava-test-case headroom.video.finding.dev_video0.frames-drop --result fail",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
}
