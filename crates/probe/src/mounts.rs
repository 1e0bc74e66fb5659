//! What is mounted where: `/proc/self/mountinfo` under the root.
//!
//! Format: proc(5), "/proc/pid/mountinfo" (Documentation/filesystems/proc.rst, 3.5):
//! `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`.
//! Paths are octal-escaped by the kernel's `mangle()` (fs/proc_namespace.c): space `\040`,
//! tab `\011`, newline `\012`, backslash `\134`.

use crate::sysfs::{read_attr, ReadError};
use model::root::SysRoot;

use model::inventory::block::{FreeSpace, Mount};
use std::path::{Path, PathBuf};

/// Undo the kernel's octal escapes (`\040` -> space). An escape that is not three octal
/// digits is kept as written.
pub fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits.iter().fold(0u32, |a, d| a * 8 + u32::from(d - b'0'));
                if let Ok(b) = u8::try_from(v) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse one mountinfo line; `None` when it does not have the documented shape.
pub fn parse_line(line: &str) -> Option<Mount> {
    let mut fields = line.split(' ');
    let mount_id = fields.next()?.parse().ok()?;
    let parent_id = fields.next()?.parse().ok()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let root = PathBuf::from(unescape(fields.next()?));
    let mount_point = PathBuf::from(unescape(fields.next()?));
    let options = fields.next()?.to_string();
    // Optional fields (shared:N, master:N, ...) end at a lone "-".
    for f in fields.by_ref() {
        if f == "-" {
            break;
        }
    }
    let fs_type = unescape(fields.next()?);
    let source = unescape(fields.next()?);
    Some(Mount {
        mount_id,
        parent_id,
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        root,
        mount_point,
        options,
        fs_type,
        source,
    })
}

/// All mounts of `text`, and one warning per line that could not be parsed.
pub fn parse(text: &str, origin: &Path) -> (Vec<Mount>, Vec<String>) {
    let mut mounts = Vec::new();
    let mut warnings = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(m) => mounts.push(m),
            None => warnings.push(format!(
                "{}:{}: not a mountinfo line, skipped: {line:?}",
                origin.display(),
                n + 1
            )),
        }
    }
    (mounts, warnings)
}

/// The mount table under the root (`/proc/self/mountinfo`). Missing: empty, no warning
/// (fixture trees often have no `proc/`).
pub fn read(root: &SysRoot) -> Result<(Vec<Mount>, Vec<String>), ReadError> {
    let path = root.path("/proc/self/mountinfo");
    match read_attr(&path)? {
        None => Ok((Vec::new(), Vec::new())),
        Some(text) => Ok(parse(&text, &path)),
    }
}

/// The mount that holds `path` (an absolute path as seen by the system under the root): the
/// longest mount point that is a prefix of it, the last one mounted when several are stacked.
pub fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        .map(|(_, m)| m)
}

/// The room on the filesystem holding `dir` now (statvfs(3)); `None` when it cannot be asked.
pub fn free_space(dir: &Path) -> Option<FreeSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path; `st` is a plain C struct the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(FreeSpace {
        available_bytes: st.f_bavail as u64 * st.f_frsize as u64,
        read_only: st.f_flag & libc::ST_RDONLY != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines from the util-linux simple-lvm dump (Fedora 27) and this VM.
    const FC27: &str = "67 0 8:4 / / rw,relatime shared:1 - ext4 /dev/sda4 rw,data=ordered
84 82 8:1 / /boot/efi rw,relatime shared:32 - vfat /dev/sda1 rw,fmask=0077
88 86 259:3 / /home/test rw,relatime shared:34 - ext4 /dev/nvme0n1p3 rw,data=ordered
80 67 0:43 / /tmp rw,nosuid,nodev shared:30 - tmpfs tmpfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict";

    #[test]
    fn parses_real_lines() {
        let (m, w) = parse(FC27, Path::new("mountinfo"));
        assert!(w.is_empty());
        assert_eq!(m.len(), 5);
        assert_eq!(m[2].dev(), "259:3");
        assert_eq!(m[2].mount_point, PathBuf::from("/home/test"));
        assert_eq!(m[2].fs_type, "ext4");
        assert_eq!(m[2].source, "/dev/nvme0n1p3");
        assert_eq!(m[4].options, "rw,relatime");
    }

    #[test]
    fn decodes_octal_escapes_in_paths() {
        let line = r"90 67 8:17 / /media/my\040disk\012two\134x rw - vfat /dev/sdb1 rw";
        let m = parse_line(line).unwrap();
        assert_eq!(m.mount_point, PathBuf::from("/media/my disk\ntwo\\x"));
        assert_eq!(unescape(r"a\04"), r"a\04");
        assert_eq!(unescape(r"\777x"), r"\777x");
    }

    #[test]
    fn bad_lines_are_reported_and_skipped() {
        let (m, w) = parse(
            "garbage\n27 1 254:0 / / rw - ext4 /dev/vda rw\n",
            Path::new("mi"),
        );
        assert_eq!(m.len(), 1);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("mi:1"), "{}", w[0]);
    }

    #[test]
    fn longest_prefix_wins() {
        let (m, _) = parse(FC27, Path::new("mountinfo"));
        assert_eq!(
            mount_of(&m, Path::new("/home/test/f")).unwrap().dev(),
            "259:3"
        );
        assert_eq!(mount_of(&m, Path::new("/tmp/x")).unwrap().fs_type, "tmpfs");
        assert_eq!(mount_of(&m, Path::new("/tmpx")).unwrap().dev(), "254:0");
        assert_eq!(
            mount_of(&m, Path::new("/boot/efi/EFI")).unwrap().fs_type,
            "vfat"
        );
    }
}
