//! Reading sysfs and procfs attributes under a root directory.
//!
//! The one place that turns "read this attribute" into a value or a clear reason why not.
//! A missing attribute is normal (old kernel, no such hardware) and reads as `Ok(None)`;
//! an attribute that exists but cannot be read (EACCES without root, EINVAL for the `speed`
//! of a down link) is a `ReadError` naming the file, which callers report and step past.
//!
//! Under a tree read in place of `/` (`--root`), files are read and directories listed
//! through [`open_read`] and [`read_dir`] (and [`metadata`] where what a file is matters),
//! which resolve the path inside the tree as a chroot would: whatever links a capture holds,
//! no content or name outside it is read. (Plain existence checks, `is_dir()`, still follow
//! links; they learn one bit.)

use model::root::{walked_names, SysRoot, MAX_LINK_HOPS};
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
            io::ErrorKind::IsADirectory => {
                ReadErrorKind::Other("is a directory where an attribute file was expected".into())
            }
            _ => ReadErrorKind::Other(err.to_string()),
        };
        ReadError {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// Read a whole attribute file as bytes (resolved as [`open_read`] does). Missing file:
/// `Ok(None)`.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, ReadError> {
    use std::io::Read;
    let read = open_read(path).and_then(|mut f| {
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map(|_| bytes)
    });
    match read {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::from_io(path, &e)),
    }
}

/// Open `path` to read it. A path of a tree read in place of `/` (`--root`, a fixture:
/// [`model::root::tree_of`]) is resolved inside that tree, as for a process chrooted there:
/// `..` stops at the tree's root and a link's absolute target starts from it, so a capture
/// whose `etc/hostname` links to `/etc/shadow` reads the tree's own `etc/shadow` (if any),
/// never the host's. The kernel does it (openat2(2) with RESOLVE_IN_ROOT, Linux 5.6); an
/// older kernel gets the same resolution done here ([`resolve_in_tree`]), then the file is
/// opened without following a link. A path of the live system is opened as it is.
pub fn open_read(path: &Path) -> io::Result<std::fs::File> {
    let Some(tree) = model::root::tree_of(path) else {
        return std::fs::File::open(path);
    };
    let rel = path.strip_prefix(&tree).unwrap_or(path);
    // O_NONBLOCK: a FIFO planted in the tree is opened without waiting for a writer (a
    // read then finds it empty); regular files and sysfs attributes ignore the flag.
    let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK;
    match openat2_in_root(&tree, rel, flags) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) => {
            // No openat2 (before Linux 5.6, or a seccomp filter that does not know it).
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(
                    libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK,
                )
                .open(resolve_in_tree(&tree, rel)?)
        }
        r => r,
    }
}

/// `path` resolved inside the tree it was made under (no link left in it), or `None` for a
/// path of the live system, which is used as it is.
fn resolved_in_its_tree(path: &Path) -> io::Result<Option<PathBuf>> {
    model::root::tree_of(path)
        .map(|tree| resolve_in_tree(&tree, path.strip_prefix(&tree).unwrap_or(path)))
        .transpose()
}

/// The entries of directory `path`, resolved as [`open_read`] resolves a file.
pub fn read_dir(path: &Path) -> io::Result<std::fs::ReadDir> {
    match resolved_in_its_tree(path)? {
        Some(inside) => std::fs::read_dir(inside),
        None => std::fs::read_dir(path),
    }
}

/// What `path` is (links followed), resolved as [`open_read`] resolves a file.
pub fn metadata(path: &Path) -> io::Result<std::fs::Metadata> {
    match resolved_in_its_tree(path)? {
        Some(inside) => std::fs::symlink_metadata(inside),
        None => std::fs::metadata(path),
    }
}

/// openat2(2)'s `struct open_how` (include/uapi/linux/openat2.h).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `rel` opened with `flags` under directory `root`, the kernel resolving every component
/// inside it (RESOLVE_IN_ROOT) and refusing /proc's magic links (RESOLVE_NO_MAGICLINKS).
fn openat2_in_root(root: &Path, rel: &Path, flags: libc::c_int) -> io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let name = std::ffi::CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2(2) reads `how` (its size passed with it) and the NUL-terminated name;
    // both outlive the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as libc::c_int) })
}

/// `rel` resolved inside directory `root` as RESOLVE_IN_ROOT resolves it: each component in
/// turn, every symbolic link followed, `..` never above `root`, an absolute link target
/// taken from `root`. The result names no link any more (a missing component is NotFound).
/// Where the kernel cannot do it itself; the tree's owner could still swap a component
/// between this and the open that follows, which openat2 leaves no room for.
pub fn resolve_in_tree(root: &Path, rel: &Path) -> io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    let mut todo: VecDeque<OsString> = walked_names(rel).into();
    let mut done: Vec<OsString> = Vec::new();
    let mut hops = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            done.pop();
            continue;
        }
        let on_disk = done
            .iter()
            .fold(root.to_path_buf(), |p, c| p.join(c))
            .join(&name);
        if std::fs::symlink_metadata(&on_disk)?
            .file_type()
            .is_symlink()
        {
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            let target = std::fs::read_link(&on_disk)?;
            if target.is_absolute() {
                done.clear();
            }
            for c in walked_names(&target).into_iter().rev() {
                todo.push_front(c);
            }
            continue;
        }
        done.push(name);
    }
    Ok(done.iter().fold(root.to_path_buf(), |p, c| p.join(c)))
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
/// `nvme`). Missing link: `Ok(None)`. Recorded links (see [`read_link_target`]) count too.
pub fn link_name(path: &Path) -> Result<Option<String>, ReadError> {
    match read_link_target(path)? {
        Some(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        None if path.symlink_metadata().is_ok() => Err(ReadError {
            path: path.to_path_buf(),
            kind: ReadErrorKind::Other("is not a symbolic link".to_string()),
        }),
        None => Ok(None),
    }
}

/// [`read_attr`] for a scan that goes on past a bad attribute: an unreadable one becomes
/// one sentence in `warnings` and reads as `None`.
pub fn read_attr_noting(path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    read_attr(path).unwrap_or_else(|e| {
        warnings.push(e.to_string());
        None
    })
}

/// [`read_parsed`] for a scan that goes on past a bad attribute (see [`read_attr_noting`]).
pub fn read_parsed_noting<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Option<T>,
    warnings: &mut Vec<String>,
) -> Option<T> {
    read_parsed(path, parse).unwrap_or_else(|e| {
        warnings.push(e.to_string());
        None
    })
}

/// Longest text a recorded link may hold; sysfs paths are far shorter than a page.
const RECORDED_LINK_MAX: u64 = 4096;

/// Where a link points: the target of a symlink, or of a *recorded link*. Missing path or a
/// path that is not a link: `Ok(None)`.
///
/// A recorded link is a regular file whose whole content is a relative path starting with
/// `../` (no newline inside): what sysfs dumps hold where the copy could not keep symlinks
/// (the captured fixture trees are stored that way). No sysfs attribute value starts with
/// `../`, so on a live system this only ever sees real symlinks.
pub fn read_link_target(path: &Path) -> Result<Option<PathBuf>, ReadError> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::from_io(path, &e)),
    };
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path)
            .map(Some)
            .map_err(|e| ReadError::from_io(path, &e));
    }
    if !meta.is_file() || meta.len() > RECORDED_LINK_MAX || meta.len() < 3 {
        return Ok(None);
    }
    let Some(bytes) = read_bytes(path)? else {
        return Ok(None);
    };
    Ok(parse_recorded_link(&String::from_utf8_lossy(&bytes)))
}

/// The target held by a recorded link's text, if the text is one.
fn parse_recorded_link(text: &str) -> Option<PathBuf> {
    let t = text.strip_suffix('\n').unwrap_or(text);
    (t.starts_with("../") && !t.contains('\n') && !t.contains('\0')).then(|| PathBuf::from(t))
}

/// What probe reads through a [`SysRoot`] beyond joining paths (which is `model::root`'s):
/// links resolved as the kernel would, attributes behind links, directory listings.
pub trait SysfsExt {
    /// Whether this root looks like a Linux system root (has `sys/`).
    fn has_sysfs(&self) -> bool;
    /// `rel` (an absolute path like `/sys/block/sda`) with every symlink and recorded link
    /// resolved, as an absolute path *within the root* (`/sys/devices/.../block/sda`).
    fn canonical(&self, rel: impl AsRef<Path>) -> Result<PathBuf, ReadError>;
    /// The on-disk path of attribute `rel` whose directory part may go through links.
    fn attr(&self, rel: impl AsRef<Path>) -> PathBuf;
    /// The names in directory `rel` under the root, sorted.
    fn list(&self, rel: impl AsRef<Path>) -> Result<Vec<String>, ReadError>;
}

impl SysfsExt for SysRoot {
    fn has_sysfs(&self) -> bool {
        self.path("/sys").is_dir()
    }

    /// `rel` (an absolute path like `/sys/block/sda`) with every symlink and recorded link
    /// resolved, as an absolute path *within the root* (`/sys/devices/.../block/sda`).
    /// `..` never climbs above the root and absolute link targets are taken as relative to
    /// the root, so a fixture tree resolves exactly as the live system would.
    fn canonical(&self, rel: impl AsRef<Path>) -> Result<PathBuf, ReadError> {
        use std::collections::VecDeque;
        use std::ffi::OsString;

        let rel = rel.as_ref();
        let mut todo: VecDeque<OsString> = walked_names(rel).into();
        let mut done: Vec<OsString> = Vec::new();
        let mut hops = 0;
        while let Some(name) = todo.pop_front() {
            if name == ".." {
                done.pop();
                continue;
            }
            done.push(name);
            let on_disk = done
                .iter()
                .fold(self.root().to_path_buf(), |p, c| p.join(c));
            if on_disk.symlink_metadata().is_err() {
                let why = if hops > 0 {
                    format!(
                        "does not exist (reached from {} through a dangling link)",
                        self.path(rel).display()
                    )
                } else {
                    "does not exist".to_string()
                };
                return Err(ReadError {
                    path: on_disk,
                    kind: ReadErrorKind::Other(why),
                });
            }
            if let Some(target) = read_link_target(&on_disk)? {
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(ReadError {
                        path: self.path(rel),
                        kind: ReadErrorKind::Other(format!(
                            "more than {MAX_LINK_HOPS} links (a link loop?)"
                        )),
                    });
                }
                done.pop();
                if target.is_absolute() {
                    done.clear();
                }
                for c in walked_names(&target).into_iter().rev() {
                    todo.push_front(c);
                }
            }
        }
        Ok(done.iter().fold(PathBuf::from("/"), |p, c| p.join(c)))
    }

    /// The on-disk path of attribute `rel` whose directory part may go through links
    /// (`/sys/block/sda/device/model`): the directory is resolved with [`Self::canonical`].
    /// When it cannot be, the plain path is returned, so that reading it reports "missing".
    fn attr(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        match (rel.parent(), rel.file_name()) {
            (Some(dir), Some(file)) => match self.canonical(dir) {
                Ok(d) => self.path(d).join(file),
                Err(_) => self.path(rel),
            },
            _ => self.path(rel),
        }
    }

    /// The names in directory `rel` under the root, sorted. A missing directory is empty;
    /// one that cannot be listed is an error naming it.
    fn list(&self, rel: impl AsRef<Path>) -> Result<Vec<String>, ReadError> {
        let dir = self.path(rel);
        let entries = match read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ReadError::from_io(&dir, &e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| ReadError::from_io(&dir, &e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
}

/// The value of `KEY=value` in a uevent file.
pub fn uevent_value(path: &Path, key: &str) -> Option<String> {
    let text = read_attr(path).ok().flatten()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a tree, links resolve as in a chroot there, by the kernel (openat2) and by the
    /// fallback for kernels without it alike: an absolute target starts at the tree's root,
    /// `..` stops there, a relative link inside the tree is followed.
    #[test]
    fn reads_under_a_tree_stay_inside_it() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "host's secret").unwrap();
        let d = tempfile::tempdir().unwrap();
        let root = SysRoot::new(d.path().join("tree"));
        let t = root.root().to_path_buf();
        std::fs::create_dir_all(t.join("etc")).unwrap();
        std::fs::create_dir_all(t.join("sys/class")).unwrap();
        std::fs::create_dir_all(t.join("sys/devices/x")).unwrap();
        std::fs::write(t.join("etc/own"), "the tree's own").unwrap();
        std::fs::write(t.join("sys/devices/x/attr"), "attr value").unwrap();
        symlink(&secret, t.join("etc/absolute")).unwrap();
        symlink(
            format!("../../../../../../..{}", secret.display()),
            t.join("etc/climb"),
        )
        .unwrap();
        symlink("/etc/own", t.join("etc/inside")).unwrap();
        symlink("../devices/x", t.join("sys/class/x")).unwrap();
        let via_kernel = |rel: &str| read_attr(&root.path(rel)).unwrap();
        let via_fallback = |rel: &str| {
            resolve_in_tree(&t, Path::new(rel))
                .ok()
                .and_then(|p| std::fs::read_to_string(p).ok())
        };
        // The secret's path inside the tree does not exist: nothing is read.
        assert_eq!(via_kernel("/etc/absolute"), None);
        assert_eq!(via_kernel("/etc/climb"), None);
        assert_eq!(via_fallback("etc/absolute"), None);
        assert_eq!(via_fallback("etc/climb"), None);
        assert_eq!(via_kernel("/etc/inside").as_deref(), Some("the tree's own"));
        assert_eq!(
            via_fallback("etc/inside").as_deref(),
            Some("the tree's own")
        );
        assert_eq!(
            via_kernel("/sys/class/x/attr").as_deref(),
            Some("attr value")
        );
        assert_eq!(
            via_fallback("sys/class/x/attr").as_deref(),
            Some("attr value")
        );
        assert_eq!(root.list("/sys/class/x").unwrap(), ["attr"]);
        // The live system's paths are read as they are.
        assert_eq!(
            read_attr(&secret).unwrap().as_deref(),
            Some("host's secret")
        );
    }

    #[test]
    fn hex_values() {
        assert_eq!(parse_hex_u32("0x8086\n"), Some(0x8086));
        assert_eq!(parse_hex_u32("010802"), Some(0x010802));
        assert_eq!(parse_hex_u32("zz"), None);
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

    #[test]
    fn recorded_links_are_recognised_and_attributes_are_not() {
        assert_eq!(
            parse_recorded_link("../../../devices/pci0000:00/0000:00:1d.7/usb5/5-1"),
            Some(PathBuf::from(
                "../../../devices/pci0000:00/0000:00:1d.7/usb5/5-1"
            ))
        );
        assert_eq!(
            parse_recorded_link("../../loop0\n"),
            Some(PathBuf::from("../../loop0"))
        );
        assert_eq!(parse_recorded_link("480\n"), None);
        assert_eq!(parse_recorded_link(" 2.00\n"), None);
    }

    #[test]
    fn canonical_follows_real_and_recorded_links_within_the_root() {
        let dir = std::env::temp_dir().join(format!("headroom-canon-{}", std::process::id()));
        let dev = dir.join("sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::create_dir_all(dir.join("sys/block")).unwrap();
        std::fs::create_dir_all(dir.join("sys/class/block")).unwrap();
        std::os::unix::fs::symlink(
            "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
            dir.join("sys/block/vda"),
        )
        .unwrap();
        std::fs::write(dir.join("sys/class/block/vda"), "../../block/vda").unwrap();
        std::os::unix::fs::symlink("loop-b", dir.join("sys/loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", dir.join("sys/loop-b")).unwrap();
        let root = SysRoot::new(&dir);
        let want = PathBuf::from("/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda");
        assert_eq!(root.canonical("/sys/block/vda").unwrap(), want);
        assert_eq!(root.canonical("/sys/class/block/vda").unwrap(), want);
        assert_eq!(root.canonical("/sys/../../sys/block/vda").unwrap(), want);
        let err = root.canonical("/sys/loop-a").unwrap_err();
        assert!(err.to_string().contains("loop"), "{err}");
        assert!(root.canonical("/sys/block/nope").is_err());
        assert_eq!(
            link_name(&dir.join("sys/class/block/vda"))
                .unwrap()
                .as_deref(),
            Some("vda")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
