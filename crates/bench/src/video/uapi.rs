//! The few structures and ioctls of the kernel's V4L2 uAPI (`include/uapi/linux/videodev2.h`)
//! that an mmap streaming capture and a format listing need, laid out as the header lays them
//! out for userspace; the ioctl numbers are made from the structures' sizes as `_IOWR` makes
//! them, and the test `layouts_match_the_uapi_header` pins each size per word size.
//!
//! `v4l2_buffer` carries a `struct timeval`: the layout here is the 64-bit time one (what
//! 64-bit kernels and, since Linux 5.6, 32-bit kernels take for a 64-bit `time_t`, as musl's
//! since 1.2), so a 32-bit board never hits the y2038 variant.

#![allow(non_camel_case_types)] // the header's names, so the fields can be checked against it

use std::os::fd::RawFd;

pub const BUF_TYPE_VIDEO_CAPTURE: u32 = 1;
pub const MEMORY_MMAP: u32 = 1;
pub const FIELD_ANY: u32 = 0;
pub const FMT_FLAG_COMPRESSED: u32 = 0x0001;
pub const FMT_FLAG_EMULATED: u32 = 0x0002;
pub const CAP_TIMEPERFRAME: u32 = 0x1000;
pub const CAP_DEVICE_CAPS: u32 = 0x8000_0000;
pub const BUF_FLAG_ERROR: u32 = 0x0040;
pub const BUF_FLAG_TIMESTAMP_MASK: u32 = 0xe000;
pub const BUF_FLAG_TIMESTAMP_MONOTONIC: u32 = 0x2000;
pub const BUF_FLAG_TIMESTAMP_COPY: u32 = 0x4000;
pub const FRMSIZE_TYPE_DISCRETE: u32 = 1;
pub const FRMIVAL_TYPE_DISCRETE: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_capability {
    pub driver: [u8; 16],
    pub card: [u8; 32],
    pub bus_info: [u8; 32],
    pub version: u32,
    pub capabilities: u32,
    pub device_caps: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_pix_format {
    pub width: u32,
    pub height: u32,
    pub pixelformat: u32,
    pub field: u32,
    pub bytesperline: u32,
    pub sizeimage: u32,
    pub colorspace: u32,
    pub priv_: u32,
    pub flags: u32,
    pub ycbcr_enc: u32,
    pub quantization: u32,
    pub xfer_func: u32,
}

/// The header's union of every buffer type's format; `v4l2_window` holds pointers, so the
/// union is pointer-aligned.
#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_format_fmt {
    pub pix: v4l2_pix_format,
    pub raw_data: [u8; 200],
    _align: *mut libc::c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_format {
    pub type_: u32,
    pub fmt: v4l2_format_fmt,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct v4l2_fract {
    pub numerator: u32,
    pub denominator: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_captureparm {
    pub capability: u32,
    pub capturemode: u32,
    pub timeperframe: v4l2_fract,
    pub extendedmode: u32,
    pub readbuffers: u32,
    pub reserved: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_streamparm_parm {
    pub capture: v4l2_captureparm,
    pub raw_data: [u8; 200],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_streamparm {
    pub type_: u32,
    pub parm: v4l2_streamparm_parm,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct v4l2_requestbuffers {
    pub count: u32,
    pub type_: u32,
    pub memory: u32,
    pub capabilities: u32,
    pub flags: u8,
    pub reserved: [u8; 3],
}

/// `struct timeval` with a 64-bit `time_t` (the kernel's `__kernel_v4l2_timeval`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct timeval64 {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct v4l2_timecode {
    pub type_: u32,
    pub flags: u32,
    pub frames: u8,
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub userbits: [u8; 4],
}

/// The header's `m` union: `offset` for MMAP, or a pointer-sized user pointer.
#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_buffer_m {
    pub offset: u32,
    pub userptr: libc::c_ulong,
    pub fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_buffer {
    pub index: u32,
    pub type_: u32,
    pub bytesused: u32,
    pub flags: u32,
    pub field: u32,
    pub timestamp: timeval64,
    pub timecode: v4l2_timecode,
    pub sequence: u32,
    pub memory: u32,
    pub m: v4l2_buffer_m,
    pub length: u32,
    pub reserved2: u32,
    pub request_fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_fmtdesc {
    pub index: u32,
    pub type_: u32,
    pub flags: u32,
    pub description: [u8; 32],
    pub pixelformat: u32,
    pub mbus_code: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct v4l2_frmsize_stepwise {
    pub min_width: u32,
    pub max_width: u32,
    pub step_width: u32,
    pub min_height: u32,
    pub max_height: u32,
    pub step_height: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_frmsize_union {
    pub discrete: [u32; 2],
    pub stepwise: v4l2_frmsize_stepwise,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmsizeenum {
    pub index: u32,
    pub pixel_format: u32,
    pub type_: u32,
    pub u: v4l2_frmsize_union,
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_frmival_union {
    pub discrete: v4l2_fract,
    pub stepwise: [v4l2_fract; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmivalenum {
    pub index: u32,
    pub pixel_format: u32,
    pub width: u32,
    pub height: u32,
    pub type_: u32,
    pub u: v4l2_frmival_union,
    pub reserved: [u32; 2],
}

// The sizes videodev2.h gives, on every target this builds for (a wrong size would be a
// different ioctl to the kernel): checked when compiling, so a 32-bit board binary that would
// ask the wrong VIDIOC_DQBUF does not build.
const _: () = {
    use std::mem::size_of;
    let wide = size_of::<usize>() == 8;
    assert!(size_of::<v4l2_buffer>() == if wide { 88 } else { 80 });
    assert!(size_of::<v4l2_format>() == if wide { 208 } else { 204 });
    assert!(size_of::<v4l2_streamparm>() == 204);
    assert!(size_of::<v4l2_capability>() == 104);
    assert!(size_of::<v4l2_requestbuffers>() == 20);
    assert!(size_of::<v4l2_fmtdesc>() == 64);
    assert!(size_of::<v4l2_frmsizeenum>() == 44);
    assert!(size_of::<v4l2_frmivalenum>() == 52);
    assert!(std::mem::offset_of!(v4l2_buffer, m) == 64);
    assert!(std::mem::offset_of!(v4l2_buffer, sequence) == 56);
};

/// `_IOC(dir, 'V', nr, size)` of the asm-generic ioctl encoding (x86, arm, arm64).
const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((b'V' as u32) << 8) | nr
}
const W: u32 = 1;
const R: u32 = 2;
const fn iowr<T>(nr: u32) -> u32 {
    ioc(R | W, nr, std::mem::size_of::<T>())
}

pub const VIDIOC_QUERYCAP: u32 = ioc(R, 0, std::mem::size_of::<v4l2_capability>());
pub const VIDIOC_ENUM_FMT: u32 = iowr::<v4l2_fmtdesc>(2);
pub const VIDIOC_G_FMT: u32 = iowr::<v4l2_format>(4);
pub const VIDIOC_S_FMT: u32 = iowr::<v4l2_format>(5);
pub const VIDIOC_REQBUFS: u32 = iowr::<v4l2_requestbuffers>(8);
pub const VIDIOC_QUERYBUF: u32 = iowr::<v4l2_buffer>(9);
pub const VIDIOC_QBUF: u32 = iowr::<v4l2_buffer>(15);
pub const VIDIOC_DQBUF: u32 = iowr::<v4l2_buffer>(17);
pub const VIDIOC_STREAMON: u32 = ioc(W, 18, std::mem::size_of::<i32>());
pub const VIDIOC_STREAMOFF: u32 = ioc(W, 19, std::mem::size_of::<i32>());
pub const VIDIOC_G_PARM: u32 = iowr::<v4l2_streamparm>(21);
pub const VIDIOC_S_PARM: u32 = iowr::<v4l2_streamparm>(22);
pub const VIDIOC_ENUM_FRAMESIZES: u32 = iowr::<v4l2_frmsizeenum>(74);
pub const VIDIOC_ENUM_FRAMEINTERVALS: u32 = iowr::<v4l2_frmivalenum>(75);

/// A zeroed value of a uAPI structure (every one of them is plain data the kernel fills).
pub fn zeroed<T: Copy>() -> T {
    // SAFETY: only used with the #[repr(C)] structures above, made of integers, arrays of
    // integers and unions of those (and one raw pointer member for alignment): all-zero is a
    // valid value of each, and the header documents zero as the value of every reserved field.
    unsafe { std::mem::zeroed() }
}

/// `ioctl(fd, request, arg)`, retried on EINTR.
pub fn ioctl<T>(fd: RawFd, request: u32, arg: &mut T) -> std::io::Result<()> {
    loop {
        // SAFETY: `arg` is a live, exclusively borrowed structure of the size `request`
        // encodes (the requests above are made from these types' sizes).
        let r = unsafe { libc::ioctl(fd, request as _, arg as *mut T) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A NUL-terminated string of a uAPI structure, lossily decoded.
pub fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The sizes `videodev2.h` gives each structure (checked with the header by `sizeof`
    /// on x86_64 and on armhf with a 64-bit time_t), and so the ioctl numbers: a wrong size
    /// would be a different ioctl to the kernel, answered ENOTTY.
    #[test]
    fn layouts_match_the_uapi_header() {
        assert_eq!(size_of::<v4l2_capability>(), 104);
        assert_eq!(size_of::<v4l2_pix_format>(), 48);
        assert_eq!(size_of::<v4l2_streamparm>(), 204);
        assert_eq!(size_of::<v4l2_requestbuffers>(), 20);
        assert_eq!(size_of::<v4l2_fmtdesc>(), 64);
        assert_eq!(size_of::<v4l2_frmsizeenum>(), 44);
        assert_eq!(size_of::<v4l2_frmivalenum>(), 52);
        assert_eq!(size_of::<v4l2_timecode>(), 16);
        if cfg!(target_pointer_width = "64") {
            assert_eq!(size_of::<v4l2_format>(), 208);
            assert_eq!(size_of::<v4l2_buffer>(), 88);
            assert_eq!(std::mem::offset_of!(v4l2_buffer, m), 64);
            // The header's own request numbers on 64-bit (as strace prints them).
            assert_eq!(VIDIOC_QUERYBUF, 0xc058_5609);
            assert_eq!(VIDIOC_DQBUF, 0xc058_5611);
            assert_eq!(VIDIOC_S_FMT, 0xc0d0_5605);
        } else {
            assert_eq!(size_of::<v4l2_format>(), 204);
            assert_eq!(size_of::<v4l2_buffer>(), 80);
            assert_eq!(std::mem::offset_of!(v4l2_buffer, m), 64);
            assert_eq!(VIDIOC_S_FMT, 0xc0cc_5605);
        }
        assert_eq!(std::mem::offset_of!(v4l2_buffer, timestamp), 24);
        assert_eq!(std::mem::offset_of!(v4l2_buffer, sequence), 56);
        assert_eq!(VIDIOC_QUERYCAP, 0x8068_5600);
        assert_eq!(VIDIOC_STREAMON, 0x4004_5612);
        assert_eq!(VIDIOC_REQBUFS, 0xc014_5608);
        assert_eq!(VIDIOC_S_PARM, 0xc0cc_5616);
        assert_eq!(VIDIOC_ENUM_FRAMESIZES, 0xc02c_564a);
        assert_eq!(VIDIOC_ENUM_FRAMEINTERVALS, 0xc034_564b);
    }
}
