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

    /// Resolve `rel` (absolute within the root, e.g. `/sys/bus/pci/devices/0000:00:02.0`) to
    /// the path it designates within the root, following symlinks and *link files* at every
    /// component, with absolute targets taken relative to the root, and `..` never leaving
    /// the root. Returns the logical path (absolute, within the root); `self.path()` of it is
    /// the file on disk.
    ///
    /// Link files: captured trees that went through a copy that drops symlinks keep each link
    /// as a small regular file whose content is the target (`../../../devices/pci0000:00/...`).
    /// A sysfs attribute value never starts with `../`, so such a file is unambiguous.
    pub fn resolve(&self, rel: impl AsRef<Path>) -> Result<PathBuf, ReadError> {
        // The kernel's own bound on nested links (MAXSYMLINKS = 40).
        const MAX_LINKS: usize = 40;
        let rel = rel.as_ref();
        let mut pending: Vec<std::ffi::OsString> = rel
            .components()
            .rev()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_os_string()),
                std::path::Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        let mut logical = PathBuf::from("/");
        let mut links = 0;
        while let Some(comp) = pending.pop() {
            if comp == ".." {
                logical.pop();
                continue;
            }
            let candidate = logical.join(&comp);
            match self.link_target(&candidate)? {
                Some(target) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(ReadError {
                            path: self.path(rel),
                            kind: ReadErrorKind::Other(
                                "too many levels of links (a link loop)".into(),
                            ),
                        });
                    }
                    if target.is_absolute() {
                        logical = PathBuf::from("/");
                    }
                    for c in target.components().rev() {
                        match c {
                            std::path::Component::Normal(n) => pending.push(n.to_os_string()),
                            std::path::Component::ParentDir => pending.push("..".into()),
                            _ => {}
                        }
                    }
                }
                None => logical = candidate,
            }
        }
        Ok(logical)
    }

    /// The target of `rel` (within the root) if it is a symlink or a link file.
    pub fn link_target(&self, rel: &Path) -> Result<Option<PathBuf>, ReadError> {
        let disk = self.path(rel);
        let meta = match std::fs::symlink_metadata(&disk) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ReadError::from_io(&disk, &e)),
        };
        if meta.file_type().is_symlink() {
            return std::fs::read_link(&disk)
                .map(Some)
                .map_err(|e| ReadError::from_io(&disk, &e));
        }
        if meta.is_file() && meta.len() < 4096 && self.root != Path::new("/") {
            if let Ok(text) = std::fs::read_to_string(&disk) {
                let t = text.trim_end_matches('\n');
                if t.starts_with("../") && !t.contains('\n') {
                    return Ok(Some(PathBuf::from(t)));
                }
            }
        }
        Ok(None)
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

/// The final component of a link's target (`driver` -> `../../bus/pci/drivers/nvme` gives
/// `nvme`), for a symlink or a link file (see [`SysRoot::resolve`]). `rel` is within the root.
/// Missing link: `Ok(None)`.
pub fn link_name(root: &SysRoot, rel: &Path) -> Result<Option<String>, ReadError> {
    Ok(root
        .link_target(rel)?
        .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_symlinks_and_link_files_within_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = SysRoot::new(dir.path());
        let dev = dir.path().join("sys/devices/pci0000:00/0000:00:02.0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("vendor"), "0x1af4\n").unwrap();
        std::fs::create_dir_all(dir.path().join("sys/bus/pci/devices")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys/bus/pci/drivers/virtio-pci")).unwrap();
        // A link file (what a symlink-dropping copy leaves) and a real symlink.
        std::fs::write(
            dir.path().join("sys/bus/pci/devices/0000:00:02.0"),
            "../../../devices/pci0000:00/0000:00:02.0\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("../../../bus/pci/drivers/virtio-pci", dev.join("driver"))
            .unwrap();
        let got = r
            .resolve("/sys/bus/pci/devices/0000:00:02.0/vendor")
            .unwrap();
        assert_eq!(
            got,
            PathBuf::from("/sys/devices/pci0000:00/0000:00:02.0/vendor")
        );
        assert_eq!(read_attr(&r.path(&got)).unwrap().as_deref(), Some("0x1af4"));
        let drv = link_name(&r, Path::new("/sys/devices/pci0000:00/0000:00:02.0/driver"));
        assert_eq!(drv.unwrap().as_deref(), Some("virtio-pci"));
        // `..` cannot climb out of the root; an absolute target is re-rooted.
        std::os::unix::fs::symlink("/../../../etc", dev.join("escape")).unwrap();
        let esc = r
            .resolve("/sys/devices/pci0000:00/0000:00:02.0/escape")
            .unwrap();
        assert_eq!(esc, PathBuf::from("/etc"));
    }

    #[test]
    fn link_loops_are_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let r = SysRoot::new(dir.path());
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let e = r.resolve("/a/x").unwrap_err();
        assert!(e.to_string().contains("link loop"), "{e}");
    }

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

/// Serde helpers: PCI/USB ids as the hex strings lspci and sysfs print (`"8086"`, class
/// `"010802"`), not as decimal numbers nobody recognises.
pub mod hex_id {
    use serde::Serializer;

    pub fn u16_opt<S: Serializer>(v: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(&format_args!("{v:04x}")),
            None => s.serialize_none(),
        }
    }

    pub fn u16<S: Serializer>(v: &u16, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{v:04x}"))
    }

    pub fn class_opt<S: Serializer>(v: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(&format_args!("{v:06x}")),
            None => s.serialize_none(),
        }
    }

    pub fn class<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{v:06x}"))
    }

    pub fn u8_opt<S: Serializer>(v: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(&format_args!("{v:02x}")),
            None => s.serialize_none(),
        }
    }
}
