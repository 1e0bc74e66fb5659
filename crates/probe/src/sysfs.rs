//! Reading sysfs and procfs attributes under a root directory.
//!
//! The one place that turns "read this attribute" into a value or a clear reason why not.
//! A missing attribute is normal (old kernel, no such hardware) and reads as `Ok(None)`;
//! an attribute that exists but cannot be read (EACCES without root, EINVAL for the `speed`
//! of a down link) is a `ReadError` naming the file, which callers report and step past.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why an attribute that exists could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub path: PathBuf,
    pub kind: ReadErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// Needs root (EACCES / EPERM).
    PermissionDenied,
    /// The kernel refused the read (EINVAL, e.g. `speed` of a link that is down).
    Invalid,
    /// The file vanished between listing and reading (hot unplug).
    Vanished,
    /// Any other I/O error, with the OS's own words.
    Other(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &self.kind {
            ReadErrorKind::PermissionDenied => {
                write!(f, "{p}: permission denied (run as root to read it)")
            }
            ReadErrorKind::Invalid => write!(f, "{p}: the kernel reports no value (EINVAL)"),
            ReadErrorKind::Vanished => write!(f, "{p}: disappeared while being read (unplugged?)"),
            ReadErrorKind::Other(msg) => write!(f, "{p}: {msg}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    pub fn from_io(path: &Path, err: &io::Error) -> Self {
        let kind = match err.kind() {
            io::ErrorKind::PermissionDenied => ReadErrorKind::PermissionDenied,
            io::ErrorKind::NotFound => ReadErrorKind::Vanished,
            io::ErrorKind::InvalidInput => ReadErrorKind::Invalid,
            _ if err.raw_os_error() == Some(22) => ReadErrorKind::Invalid,
            _ => ReadErrorKind::Other(err.to_string()),
        };
        ReadError {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// A view of the filesystem rooted at `root` (`/` on a live system, a fixture tree in tests).
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
}

impl SysRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SysRoot { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` (an absolute path like `/sys/bus/pci/devices`) placed under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.root.join(rel)
    }

    /// Whether this root looks like a Linux system root (has `sys/`).
    pub fn has_sysfs(&self) -> bool {
        self.path("/sys").is_dir()
    }
}

/// Read a whole attribute file as bytes. Missing file: `Ok(None)`.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, ReadError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::from_io(path, &e)),
    }
}

/// Read a text attribute, trimmed of surrounding whitespace (sysfs values end in a newline;
/// some, like USB `version`, start with a space). Missing file: `Ok(None)`. An empty value
/// (how the fixtures store an EINVAL attribute) reads as `Ok(None)` too.
pub fn read_attr(path: &Path) -> Result<Option<String>, ReadError> {
    Ok(read_bytes(path)?.and_then(|b| {
        let s = String::from_utf8_lossy(&b).trim().to_string();
        (!s.is_empty()).then_some(s)
    }))
}

/// Read an attribute and parse it with `parse`; an unparsable value is an `Other` error
/// quoting the value.
pub fn read_parsed<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, ReadError> {
    match read_attr(path)? {
        None => Ok(None),
        Some(s) => match parse(&s) {
            Some(v) => Ok(Some(v)),
            None => Err(ReadError {
                path: path.to_path_buf(),
                kind: ReadErrorKind::Other(format!("unexpected value {s:?}")),
            }),
        },
    }
}

/// Parse a hexadecimal sysfs value like `0x8086` or `8086`.
pub fn parse_hex_u32(s: &str) -> Option<u32> {
    let s = s.trim();
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u32::from_str_radix(digits, 16).ok()
}

/// The final component of a symlink's target (`driver` -> `../../bus/pci/drivers/nvme` gives
/// `nvme`). Missing link: `Ok(None)`.
pub fn link_name(path: &Path) -> Result<Option<String>, ReadError> {
    match std::fs::read_link(path) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::from_io(path, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_values() {
        assert_eq!(parse_hex_u32("0x8086\n"), Some(0x8086));
        assert_eq!(parse_hex_u32("010802"), Some(0x010802));
        assert_eq!(parse_hex_u32("zz"), None);
    }

    #[test]
    fn root_joins_absolute_paths() {
        let r = SysRoot::new("/tmp/fx");
        assert_eq!(r.path("/sys/block"), PathBuf::from("/tmp/fx/sys/block"));
    }

    #[test]
    fn missing_is_none_and_empty_is_none() {
        let dir = std::env::temp_dir().join(format!("headroom-sysfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("empty"), "\n").unwrap();
        std::fs::write(dir.join("v"), " 2.00\n").unwrap();
        assert_eq!(read_attr(&dir.join("nope")).unwrap(), None);
        assert_eq!(read_attr(&dir.join("empty")).unwrap(), None);
        assert_eq!(read_attr(&dir.join("v")).unwrap().as_deref(), Some("2.00"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
