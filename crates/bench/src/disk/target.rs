//! The target of a disk benchmark: a file headroom creates (or an existing one it may read, or
//! overwrite when told), or a raw block device. Preparation and the safety rules of docs/ARCHITECTURE.md:
//!
//! - a file headroom creates is filled with incompressible data before anything reads it, and
//!   removed when the [`Target`] is dropped: at the end, on error and on Ctrl-C (the runner
//!   stops on the flag, the stack unwinds normally);
//! - an existing file is never written without `--overwrite` (reading it is harmless), and one
//!   with holes is not read as is, since reads of a hole never reach the disk;
//! - free space is checked before the file is created;
//! - a block device is opened read-only unless `--destructive`, and writing is refused while
//!   it or any of its partitions is mounted, used as swap, held by dm/md or backs a loop
//!   device (the caller passes
//!   those holds, found by `probe::block::holds`); it is then opened with `O_EXCL`, which the kernel
//!   refuses for a device in use (block/bdev.c `bd_prepare_to_claim`).

use super::{DiskError, Region};
use model::blockdev::{DeviceNumber, Hold};
use model::disk::{Pattern, TargetInfo, TargetKind, TestSpec};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The first step: what the path names, before anything is created or opened for writing.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub given: PathBuf,
    /// The file or device that will be used (`DIR/headroom-disk.PID.tmp` for a directory).
    pub file: PathBuf,
    pub kind: TargetKind,
    /// `major:minor` of the block device under it: the filesystem's device (`st_dev`) for a
    /// file, the device itself (`st_rdev`) for a device node.
    pub dev: (u32, u32),
    /// The inode of an existing file (0 otherwise): with `dev`, what the file opened for
    /// writing must still be, and how a loop device backed by it is found.
    pub ino: u64,
}

/// Flags that decide what may be done to the target.
#[derive(Clone, Debug, Default)]
pub struct TargetOptions {
    /// Bytes the tests cover (the file's size; at most the device's size).
    pub size: u64,
    pub direct: bool,
    /// Some test writes.
    pub writes: bool,
    /// `--overwrite`: an existing file may be written.
    pub overwrite: bool,
    /// `--destructive`: a block device may be written.
    pub destructive: bool,
}

/// The name of the file headroom creates inside a directory target:
/// `headroom-disk.PID.START.RANDOM.tmp`, with the process's start time (field 22 of
/// /proc/PID/stat, clock ticks since boot) beside its pid, so a later run can tell a file
/// whose process is gone (killed with SIGKILL, which no handler sees) from one a running
/// headroom uses, even after the pid was reused (see [`remove_stale_files`]); and eight
/// random hex digits, so no other user can predict the name and plant something there first
/// in a directory others can write (the file is created with O_EXCL besides).
pub fn temp_name() -> String {
    let pid = std::process::id();
    let mut random = [0u8; 4];
    // SAFETY: getrandom(2) writes at most `random.len()` bytes into the buffer.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != random.len() as isize {
        // No getrandom (a kernel before 3.17): the clock's nanoseconds, still not the pid.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        random = nanos.to_le_bytes();
    }
    let random = u32::from_le_bytes(random);
    match process_start_time(pid) {
        Some(start) => format!("{TEMP_PREFIX}{pid}.{start}.{random:08x}{TEMP_SUFFIX}"),
        None => format!("{TEMP_PREFIX}{pid}.{random:08x}{TEMP_SUFFIX}"),
    }
}

const TEMP_PREFIX: &str = "headroom-disk.";
const TEMP_SUFFIX: &str = ".tmp";

/// Start time of process `pid` in clock ticks since boot: field 22 of /proc/PID/stat (proc(5));
/// the fields are counted after the command name's closing parenthesis, which may itself hold
/// spaces and parentheses. `None` when the process does not exist.
fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // After the comm: field 3 (state) is the first; starttime is field 22.
    after_comm.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// `(pid, start time)` of a test file name made by [`temp_name`]
/// (`headroom-disk.PID.START.RANDOM.tmp`), or by an earlier headroom
/// (`headroom-disk.PID.START.tmp`, `headroom-disk.PID.tmp`: no start time). A name whose
/// random part is not eight hex digits is not ours.
fn parse_temp_name(name: &str) -> Option<(u32, Option<u64>)> {
    let mid = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    let random = |r: &str| r.len() == 8 && r.bytes().all(|b| b.is_ascii_hexdigit());
    let parts: Vec<&str> = mid.split('.').collect();
    match parts[..] {
        [pid] => Some((pid.parse().ok()?, None)),
        [pid, start] => Some((pid.parse().ok()?, Some(start.parse().ok()?))),
        [pid, start, r] if random(r) => Some((pid.parse().ok()?, Some(start.parse().ok()?))),
        _ => None,
    }
}

/// Whether the process that made a test file is gone: no process with its pid, or one that
/// started at another time (the pid was reused). A name without a start time is stale only
/// when its pid is gone: never remove a live process's file.
fn owner_is_gone(pid: u32, start: Option<u64>) -> bool {
    match (process_start_time(pid), start) {
        (None, _) => true,
        (Some(now), Some(then)) => now != then,
        (Some(_), None) => false,
    }
}

/// When the system booted, in seconds since the epoch: `btime` of /proc/stat (proc(5)).
fn boot_time() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Why a test file whose process is gone is not removed; `None` when it may be: a regular
/// file of the user running headroom, made after the process its name records started in
/// this boot (its start time `start`, in clock ticks since boot, `ticks` a second). Root
/// removes only its own files: a file of another user's named like ours may be anything.
fn keep_reason(meta: &std::fs::Metadata, start: Option<u64>, ticks: u64) -> Option<String> {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !meta.is_file() {
        return Some("it is not a regular file".into());
    }
    if meta.uid() != euid {
        return Some(format!(
            "it belongs to user {}, not to user {euid} running this headroom",
            meta.uid()
        ));
    }
    let Some(start) = start else {
        return Some(
            "its name records no start time (an older headroom made it), so it cannot be \
             matched with its process"
                .into(),
        );
    };
    // When the recorded process started, in seconds since the epoch, against when the file
    // was made (its birth time where the filesystem keeps one, else its last change): a
    // process cannot have made a file before it started. btime is whole seconds, the start
    // whole ticks: a second or two of slack.
    let started = boot_time().map(|b| b + start / ticks.max(1));
    let made = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(meta.ctime().max(0) as u64, |d| d.as_secs());
    match started {
        Some(s) if made + 2 >= s => None,
        Some(_) => Some(
            "it was made before the process its name records started (in an earlier boot, \
             or named by someone else)"
                .into(),
        ),
        None => Some("the boot time (btime in /proc/stat) could not be read".into()),
    }
}

/// Remove the test files that runs killed without a chance to clean up left in `dir`: files
/// named by [`temp_name`] whose process is gone, which the user running headroom owns and
/// which were made after their process started ([`keep_reason`]); say what was removed, one
/// sentence each. Those that look stale but fail a check are named and left alone. Nothing
/// else in `dir` is touched.
pub fn remove_stale_files(dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return said;
    };
    // SAFETY: sysconf(3) reads a constant of the system.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    // Bounded by the directory's entries.
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = parse_temp_name(&name) else {
            continue;
        };
        if pid == std::process::id() || !owner_is_gone(pid, start) {
            continue;
        }
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        let path = e.path();
        if let Some(why) = keep_reason(&meta, start, ticks) {
            said.push(format!(
                "{} is named like the test file of an earlier run (process {pid}, gone), but \
                 {why}: it was left alone; remove it yourself if no run uses it",
                path.display()
            ));
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => said.push(format!(
                "removed {} ({} MiB), the test file of an earlier run (process {pid}) that \
                 was killed before it could remove it",
                path.display(),
                meta.len() >> 20
            )),
            Err(err) => said.push(format!(
                "warning: {} is the test file of an earlier run (process {pid}, gone) and \
                 could not be removed: {err}",
                path.display()
            )),
        }
    }
    said
}

/// What `given` is. Nothing is created or written.
pub fn inspect(given: &Path) -> Result<Inspection, DiskError> {
    let show = given.display();
    match std::fs::metadata(given) {
        Ok(m) if m.file_type().is_block_device() => Ok(Inspection {
            given: given.into(),
            file: given.into(),
            kind: TargetKind::BlockDevice,
            dev: dev_pair(m.rdev()),
            ino: 0,
        }),
        Ok(m) if m.is_dir() => Ok(Inspection {
            given: given.into(),
            file: given.join(temp_name()),
            kind: TargetKind::NewFile,
            dev: dev_pair(m.dev()),
            ino: 0,
        }),
        Ok(m) if m.is_file() => Ok(Inspection {
            given: given.into(),
            file: given.into(),
            kind: TargetKind::ExistingFile,
            dev: dev_pair(m.dev()),
            ino: m.ino(),
        }),
        Ok(_) => Err(DiskError::Target(format!(
            "{show} is neither a regular file, a directory nor a block device"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = given
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let m = std::fs::metadata(parent).map_err(|e| {
                DiskError::Target(if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "{show}: its directory {0} does not exist; create it (mkdir -p {0}) \
                         or name a directory or file on the filesystem to test",
                        parent.display()
                    )
                } else {
                    format!(
                        "{show}: its directory {} cannot be used: {e}",
                        parent.display()
                    )
                })
            })?;
            if !m.is_dir() {
                return Err(DiskError::Target(format!(
                    "{show}: {} is not a directory",
                    parent.display()
                )));
            }
            Ok(Inspection {
                given: given.into(),
                file: given.into(),
                kind: TargetKind::NewFile,
                dev: dev_pair(m.dev()),
                ino: 0,
            })
        }
        Err(e) => Err(DiskError::Target(format!("{show}: {e}"))),
    }
}

fn dev_pair(dev: u64) -> (u32, u32) {
    model::blockdev::split_dev(dev)
}

/// A prepared target: open, filled, checked. Dropping it removes a file headroom created.
#[derive(Debug)]
pub struct Target {
    info: TargetInfo,
    file: File,
    _created: RemoveOnDrop,
    notes: Vec<String>,
}

/// Removes the file headroom created as soon as it goes out of scope, on every path out of
/// `prepare` and `run` (success, error, Ctrl-C). While it lives, the file is also listed in
/// [`CREATED`], for a panic: the board binaries (`dist` profile) abort on a panic, where no
/// drop runs, and the panic hook removes what is listed ([`remove_created_files`]).
#[derive(Debug, Default)]
struct RemoveOnDrop(Option<PathBuf>);

/// Test files headroom created and has not removed yet.
static CREATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

impl RemoveOnDrop {
    fn hold(&mut self, path: PathBuf) {
        created().push(path.clone());
        self.0 = Some(path);
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            // Best effort: the file may already be gone; nothing more can be done in a drop.
            let _ = std::fs::remove_file(&p);
            created().retain(|x| *x != p);
        }
    }
}

/// The list of created files. A poisoned list is still a list.
fn created() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    CREATED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every test file headroom created and still has: for the panic hook (a panic in
/// the `dist` profile aborts without running drops). Safe to call at any time: a file is
/// listed only while its test owns it, and removing it under open descriptors leaves their
/// I/O working.
pub fn remove_created_files() {
    // Never wait in a panic hook: the panicking thread may hold the list itself.
    let mut list = match CREATED.try_lock() {
        Ok(l) => l,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    remove_all(&mut list);
}

fn remove_all(list: &mut Vec<PathBuf>) {
    for p in list.drain(..) {
        let _ = std::fs::remove_file(p);
    }
}

/// Progress of the fill: bytes written so far of the total.
pub type FillProgress<'a> = &'a dyn Fn(u64, u64);

/// Open (and for a new or overwritten file, create and fill) the target.
pub fn prepare(
    insp: Inspection,
    device: Option<DeviceNumber>,
    device_note: Option<String>,
    holds: &[Hold],
    opts: &TargetOptions,
    stop: &AtomicBool,
    fill_progress: Option<FillProgress>,
) -> Result<Target, DiskError> {
    let show = insp.file.display().to_string();
    let mut notes = Vec::new();
    let mut created = RemoveOnDrop::default();
    let direct_flag = if opts.direct { libc::O_DIRECT } else { 0 };
    let (file, size, fill) = match insp.kind {
        TargetKind::BlockDevice => {
            if opts.writes && !opts.destructive {
                return Err(DiskError::Target(format!(
                    "{show} is a block device: writing to it destroys its data, so write tests \
                     need --destructive (read tests run without it)"
                )));
            }
            if opts.writes && !holds.is_empty() {
                let list: Vec<String> = holds.iter().map(|h| h.to_string()).collect();
                return Err(DiskError::Target(format!(
                    "refusing to write to {show}: {}; unmount it, swapoff, stop the dm/md \
                     device or detach the loop device (losetup -d) first",
                    list.join(", ")
                )));
            }
            let mut f = OpenOptions::new()
                .read(true)
                .write(opts.writes)
                .custom_flags(direct_flag | if opts.writes { libc::O_EXCL } else { 0 })
                .open(&insp.file)
                .map_err(|e| open_error(&show, &e, opts.direct))?;
            let dev_size = f
                .seek(SeekFrom::End(0))
                .map_err(|e| DiskError::Target(format!("{show}: cannot find its size: {e}")))?;
            if dev_size < opts.size {
                notes.push(format!(
                    "{show} holds {dev_size} bytes, less than --size: the whole device is tested"
                ));
            }
            (f, opts.size.min(dev_size), false)
        }
        TargetKind::ExistingFile if !opts.overwrite => {
            if opts.writes {
                return Err(DiskError::Target(format!(
                    "{show} exists: headroom never overwrites a file without --overwrite (or \
                     give a directory, and headroom creates and removes its own file)"
                )));
            }
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(direct_flag)
                .open(&insp.file)
                .map_err(|e| open_error(&show, &e, opts.direct))?;
            let m = f
                .metadata()
                .map_err(|e| DiskError::Target(format!("{show}: {e}")))?;
            if m.blocks() * 512 < m.len() {
                return Err(DiskError::Target(format!(
                    "{show} has holes (sparse): reads of a hole never reach the disk; pass \
                     --overwrite to fill it first"
                )));
            }
            let whole = if m.len() < opts.size {
                format!(
                    ": all of its {}, less than --size {}",
                    model::units::format_bytes_binary(m.len()),
                    model::units::format_bytes_binary(opts.size)
                )
            } else {
                String::new()
            };
            notes.push(format!(
                "{show} existed and was read as is (not filled){whole}"
            ));
            (f, opts.size.min(m.len()), false)
        }
        TargetKind::ExistingFile | TargetKind::NewFile => {
            let existing = insp.kind == TargetKind::ExistingFile;
            // --overwrite writes the file the user named, never what a link there points to:
            // in a directory others can write, anyone can plant or swap the link (root would
            // then fill /etc/shadow with test data). O_NOFOLLOW closes the window between
            // this look and the open.
            if existing {
                if let Ok(to) = std::fs::read_link(&insp.file) {
                    return Err(DiskError::Target(format!(
                        "{show} is a symbolic link (to {}): --overwrite writes only a file \
                         named as itself; give the file the link points to",
                        to.display()
                    )));
                }
            }
            check_free_space(&insp.file, opts.size, existing)?;
            let mut o = OpenOptions::new();
            o.read(true)
                .write(true)
                .custom_flags(direct_flag | if existing { libc::O_NOFOLLOW } else { 0 });
            if existing {
                o.create(false);
            } else {
                o.create_new(true).mode(0o600);
            }
            let f = o
                .open(&insp.file)
                .map_err(|e| open_error(&show, &e, opts.direct))?;
            if !existing {
                created.hold(insp.file.clone());
            } else {
                // The file opened must be the one inspected (whose loop devices the caller
                // looked for), and one headroom may write over.
                let m = f
                    .metadata()
                    .map_err(|e| DiskError::Target(format!("{show}: {e}")))?;
                if dev_pair(m.dev()) != insp.dev || m.ino() != insp.ino {
                    return Err(DiskError::Target(format!(
                        "{show} was replaced by another file after it was inspected (someone \
                         else is changing it): nothing was written; run again"
                    )));
                }
                // SAFETY: geteuid(2) has no arguments and cannot fail.
                let euid = unsafe { libc::geteuid() };
                if let Some(why) =
                    model::privilege::why_not_overwritable(m.is_file(), m.uid(), m.nlink(), euid)
                {
                    return Err(DiskError::Target(format!(
                        "--overwrite refuses {show}: {why}"
                    )));
                }
                if !holds.is_empty() {
                    let list: Vec<String> = holds.iter().map(|h| h.to_string()).collect();
                    return Err(DiskError::Target(format!(
                        "refusing to overwrite {show}: {}; unmount what uses the loop device \
                         and detach it (losetup -d) first, or give another file",
                        list.join("; ")
                    )));
                }
            }
            // An existing file already as large as the test and without holes has real blocks
            // under every offset: refilling it would only wear the disk and warm its caches.
            let full = existing
                && f.metadata()
                    .is_ok_and(|m| m.len() >= opts.size && m.blocks() * 512 >= m.len());
            if full {
                notes.push(format!(
                    "{show} existed and was used without refilling it (--overwrite: write tests \
                     overwrite its data)"
                ));
            }
            (f, opts.size, !full)
        }
    };
    let (mem_align, offset_align) = dio_alignment(&file, insp.kind == TargetKind::BlockDevice);
    if opts.direct && offset_align == 0 {
        return Err(DiskError::Target(format!(
            "the filesystem of {show} does not support direct I/O (O_DIRECT); use --direct 0"
        )));
    }
    let align = u64::from(offset_align.max(512));
    let size = size / align * align;
    // A device node's own filesystem (devtmpfs) says nothing about the device.
    let memory_fs = if insp.kind == TargetKind::BlockDevice {
        None
    } else {
        memory_filesystem(&file)
    };
    let no_block_io = memory_fs.map(|fs| {
        format!(
            "{fs} keeps its files in memory and does no block I/O: the rates are memory \
             copies, and the kernel's block counts (/proc/self/io, /proc/diskstats) have \
             nothing to cross-check"
        )
    });
    if let Some(n) = &no_block_io {
        notes.push(n.clone());
    }
    let mut target = Target {
        info: TargetInfo {
            given: insp.given,
            file: insp.file,
            kind: insp.kind,
            size_bytes: size,
            direct: opts.direct,
            dio_mem_align: mem_align,
            dio_offset_align: offset_align,
            device,
            device_note,
            no_block_io,
            queue: None,
        },
        file,
        _created: created,
        notes,
    };
    if size == 0 {
        return Err(DiskError::Target(match insp.kind {
            TargetKind::BlockDevice => format!(
                "{show} is empty (0 bytes; a loop device without a backing file?): nothing to \
                 test"
            ),
            TargetKind::ExistingFile => format!(
                "{show} holds less than one {align}-byte block: nothing to test; give a larger \
                 file (or --overwrite with --size to fill it)"
            ),
            TargetKind::NewFile => {
                format!("--size {}: less than one {align}-byte block", opts.size)
            }
        }));
    }
    if fill {
        target.fill(size, stop, fill_progress)?;
    }
    Ok(target)
}

fn open_error(show: &str, e: &std::io::Error, direct: bool) -> DiskError {
    let hint = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            // SAFETY: geteuid cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            format!(
                ": permission denied; {}",
                model::privilege::refusal(
                    root,
                    "choose a directory you can write to, or run as root"
                )
            )
        }
        Some(libc::EROFS) => ": the filesystem is read-only".to_string(),
        Some(libc::EEXIST) => ": a file of that name appeared meanwhile; run again".to_string(),
        Some(libc::ELOOP) => {
            ": it became a symbolic link after it was inspected (someone else is changing it); \
             --overwrite writes only a file named as itself"
                .to_string()
        }
        Some(libc::EBUSY) => ": the device is in use (mounted or held)".to_string(),
        Some(libc::EINVAL) if direct => {
            ": the filesystem refuses direct I/O (O_DIRECT); use --direct 0".to_string()
        }
        _ => String::new(),
    };
    DiskError::Target(format!("cannot open {show}: {e}{hint}"))
}

fn check_free_space(file: &Path, size: u64, existing: bool) -> Result<(), DiskError> {
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some((avail, _)) = statvfs_avail(dir) else {
        return Ok(());
    };
    let have = if existing {
        std::fs::metadata(file).map(|m| m.len()).unwrap_or(0)
    } else {
        0
    };
    let need = size.saturating_sub(have);
    if need > avail {
        return Err(DiskError::Target(format!(
            "only {} MiB free on the filesystem of {}, the test file needs {} MiB: free some \
             space or lower --size",
            avail >> 20,
            dir.display(),
            need.div_ceil(1 << 20)
        )));
    }
    Ok(())
}

/// Bytes available to this user and the fragment size, from statvfs(3).
fn statvfs_avail(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: plain data, overwritten by statvfs.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some((st.f_bavail as u64 * frsize, frsize))
}

/// `(memory alignment, offset alignment)` for direct I/O on `file`: STATX_DIOALIGN where the
/// kernel reports it (6.1+; 0 = direct I/O unsupported), else the logical block size for a
/// device (BLKSSZGET) and 512 for a file, with memory aligned to a page anyway.
fn dio_alignment(file: &File, is_device: bool) -> (u32, u32) {
    // SAFETY: plain data, overwritten by statx.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd, an empty NUL-terminated path with AT_EMPTY_PATH, a valid out pointer.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc == 0 && stx.stx_mask & libc::STATX_DIOALIGN != 0 {
        return (stx.stx_dio_mem_align, stx.stx_dio_offset_align);
    }
    if is_device {
        let mut lbs: libc::c_int = 0;
        // SAFETY: BLKSSZGET writes one int to a valid pointer.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::BLKSSZGET, &mut lbs) } == 0 && lbs > 0 {
            return (lbs as u32, lbs as u32);
        }
    }
    (512, 512)
}

/// The name of the in-memory filesystem `file` is on (tmpfs, ramfs), from fstatfs(2)'s f_type
/// (the magic numbers of include/uapi/linux/magic.h); `None` for any other filesystem.
fn memory_filesystem(file: &File) -> Option<&'static str> {
    // SAFETY: plain data, overwritten by fstatfs.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and a valid out pointer.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    // include/uapi/linux/magic.h: TMPFS_MAGIC 0x01021994, RAMFS_MAGIC 0x858458f6 (the libc
    // crate lacks the latter). f_type's C type differs (glibc's signed __fsword_t, musl's
    // unsigned long, 32 bits on armv7): compared as u64, where both magics fit.
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as u64 {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}

/// Drop the page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, as seed 004 does before
/// each dd). Needs root; the error is a note for the report.
pub fn drop_page_cache() -> Result<(), String> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        format!(
            "the page cache could not be dropped before each run ({e}; needs root): buffered \
             reads may come from memory"
        )
    })
}

impl Target {
    pub fn info(&self) -> &TargetInfo {
        &self.info
    }

    /// Record the request queue of the target's disk (read by the caller: bench reads no sysfs).
    pub fn set_queue(&mut self, queue: Option<model::inventory::block::QueueSettings>) {
        self.info.queue = queue;
    }

    pub fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    pub fn block_device(&self) -> Option<&DeviceNumber> {
        self.info.device.as_ref()
    }

    /// Memory alignment for I/O buffers (at least a page).
    pub fn mem_align(&self) -> usize {
        (self.info.dio_mem_align as usize)
            .max(4096)
            .next_power_of_two()
    }

    pub fn fsync(&self) -> Result<(), DiskError> {
        self.file
            .sync_all()
            .map_err(|e| DiskError::os(&format!("fsync of {}", self.info.file.display()), &e))
    }

    /// Each job's region for `spec`: sequential jobs split the target into equal parts (as
    /// CrystalDiskMark's threads do), random jobs each cover all of it.
    pub fn job_regions(&self, spec: &TestSpec) -> Result<Vec<Region>, DiskError> {
        let bs = spec.block_size;
        if self.info.direct
            && self.info.dio_offset_align > 0
            && bs % u64::from(self.info.dio_offset_align) != 0
        {
            return Err(DiskError::BadParameter(format!(
                "--bs {bs}: not a multiple of the direct I/O alignment of {} ({} bytes, from \
                 STATX_DIOALIGN); use a multiple of it or --direct 0",
                self.info.file.display(),
                self.info.dio_offset_align
            )));
        }
        let jobs = u64::from(spec.jobs.max(1));
        let size = self.info.size_bytes;
        let per_job = match spec.workload.pattern {
            Pattern::Sequential => size / jobs / bs * bs,
            Pattern::Random => size / bs * bs,
        };
        if per_job < bs {
            let advice = match self.info.kind {
                // The test covers at most the file as it is: --size cannot make it larger.
                TargetKind::ExistingFile => format!(
                    "{} holds only {size} bytes; use a smaller --bs, fewer --jobs or a larger \
                     file (with --overwrite, --size sets the size it is filled to)",
                    self.info.file.display()
                ),
                TargetKind::BlockDevice => format!(
                    "the device holds only {size} bytes; use a smaller --bs or fewer --jobs"
                ),
                TargetKind::NewFile => "raise --size".to_string(),
            };
            return Err(DiskError::BadParameter(format!(
                "{}: {size} bytes of target cannot hold one {bs}-byte block per job; {advice}",
                spec.label
            )));
        }
        Ok((0..jobs)
            .map(|j| Region {
                start: match spec.workload.pattern {
                    Pattern::Sequential => j * per_job,
                    Pattern::Random => 0,
                },
                len: per_job,
            })
            .collect())
    }

    /// Write `size` bytes of incompressible data, then fsync, so reads hit real blocks.
    fn fill(
        &mut self,
        size: u64,
        stop: &AtomicBool,
        progress: Option<FillProgress>,
    ) -> Result<(), DiskError> {
        const CHUNK: u64 = 1 << 20;
        let align = self.mem_align();
        let buf = super::IoBuffers::new(
            1,
            CHUNK as usize,
            align,
            model::disk::Buffers::HugePages,
            super::buffers::Content::Random(0x5EED),
        )?;
        let mut rng = super::Rng::new(size);
        let show = self.info.file.display().to_string();
        self.file
            .set_len(0)
            .map_err(|e| DiskError::os(&format!("cannot truncate {show}"), &e))?;
        let mut done = 0u64;
        // Bounded by size / CHUNK iterations.
        while done < size {
            if stop.load(Ordering::Relaxed) {
                return Err(DiskError::Interrupted);
            }
            let len = (size - done).min(CHUNK) as usize;
            buf.scramble_slot(0, &mut rng);
            // SAFETY: slot 0 holds CHUNK >= len bytes and no I/O is in flight on it.
            let n = unsafe {
                libc::pwrite(
                    self.file.as_raw_fd(),
                    buf.slot_ptr(0).cast_const().cast(),
                    len,
                    done as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                if e.raw_os_error() == Some(libc::ENOSPC) {
                    return Err(DiskError::Target(format!(
                        "the filesystem of {show} filled up while the test file was written \
                         ({} of {} MiB): free some space or lower --size",
                        done >> 20,
                        size.div_ceil(1 << 20)
                    )));
                }
                return Err(DiskError::os(&format!("writing the test file {show}"), &e));
            }
            if n == 0 {
                return Err(DiskError::Io(format!(
                    "writing the test file {show}: no progress"
                )));
            }
            done += n as u64;
            if let Some(p) = progress {
                p(done, size);
            }
        }
        self.file.sync_all().map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOSPC) {
                DiskError::Target(format!("the filesystem of {show} is full: lower --size"))
            } else {
                DiskError::os(&format!("fsync of {show}"), &e)
            }
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::disk::Workload;

    fn opts(size: u64, writes: bool) -> TargetOptions {
        TargetOptions {
            size,
            direct: false,
            writes,
            ..Default::default()
        }
    }

    /// `prepare` as a user's path reaches it, with nothing stopping it.
    fn prepare_at(path: &Path, o: &TargetOptions) -> Result<Target, DiskError> {
        let stop = AtomicBool::new(false);
        prepare(inspect(path).unwrap(), None, None, &[], o, &stop, None)
    }

    #[test]
    fn test_file_names_carry_pid_and_start_time() {
        // proc(5): a comm with spaces and parentheses; starttime is field 22.
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 \
                    987654 1000 50";
        assert_eq!(parse_start_time(stat), Some(987_654));
        assert_eq!(
            parse_temp_name("headroom-disk.4242.987654.tmp"),
            Some((4242, Some(987_654)))
        );
        assert_eq!(
            parse_temp_name("headroom-disk.4242.987654.0a1b2c3d.tmp"),
            Some((4242, Some(987_654)))
        );
        assert_eq!(
            parse_temp_name("headroom-disk.4242.tmp"),
            Some((4242, None))
        );
        assert_eq!(parse_temp_name("headroom-disk.4242.987654.zz.tmp"), None);
        assert_eq!(parse_temp_name("headroom-disk.x.tmp"), None);
        assert_eq!(parse_temp_name("other.4242.tmp"), None);
        let own = temp_name();
        let (pid, start) = parse_temp_name(&own).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(!owner_is_gone(pid, start), "this process is alive");
        // The same pid with another start time is a reused pid: the file's owner is gone.
        assert!(owner_is_gone(pid, start.map(|s| s + 1)));
    }

    #[test]
    fn new_file_is_filled_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let insp = inspect(dir.path()).unwrap();
        assert_eq!(insp.kind, TargetKind::NewFile);
        let file = insp.file.clone();
        let stop = AtomicBool::new(false);
        let t = prepare(insp, None, None, &[], &opts(3 << 20, true), &stop, None).unwrap();
        let data = std::fs::read(&file).unwrap();
        assert_eq!(data.len(), 3 << 20);
        assert!(data.iter().filter(|b| **b == 0).count() < data.len() / 100);
        drop(t);
        assert!(!file.exists());
    }

    #[test]
    fn a_created_file_is_listed_for_the_panic_hook_while_its_test_owns_it() {
        let dir = tempfile::tempdir().unwrap();
        let insp = inspect(dir.path()).unwrap();
        let file = insp.file.clone();
        let listed = || created().contains(&file);
        let stop = AtomicBool::new(false);
        let t = prepare(insp, None, None, &[], &opts(1 << 20, true), &stop, None).unwrap();
        assert!(listed(), "a file headroom created is listed");
        // What the panic hook does with the list (here on a copy: other tests run beside).
        let mut copy = vec![file.clone()];
        remove_all(&mut copy);
        assert!(copy.is_empty() && !file.exists());
        drop(t);
        assert!(!listed(), "dropped, it is no longer listed");

        // A file the user had is never listed: nothing may remove it.
        let keep = dir.path().join("keep");
        std::fs::write(&keep, vec![7u8; 1 << 20]).unwrap();
        let t = prepare_at(&keep, &opts(1 << 20, false)).unwrap();
        assert!(!created().contains(&keep));
        drop(t);
        assert!(keep.exists());
    }

    #[test]
    fn overwrite_never_writes_through_a_symbolic_link() {
        // A link planted where the user's test file was expected: root must not fill its
        // target, and the target keeps its bytes.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let link = dir.path().join("test.bin");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let insp = inspect(&link).unwrap();
        assert_eq!(insp.kind, TargetKind::ExistingFile);
        let opts = TargetOptions {
            size: 1 << 20,
            writes: true,
            overwrite: true,
            ..TargetOptions::default()
        };
        let stop = AtomicBool::new(false);
        let e = prepare(insp, None, None, &[], &opts, &stop, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a symbolic link (to "), "{e}");
        assert!(e.contains("give the file the link points to"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    }

    #[test]
    fn existing_file_is_not_written_without_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("keep");
        std::fs::write(&p, vec![7u8; 8192]).unwrap();
        let e = prepare_at(&p, &opts(8192, true)).unwrap_err().to_string();
        assert!(
            e.contains("never overwrites a file without --overwrite"),
            "{e}"
        );
        // Reading it as is is allowed; it is left in place.
        let t = prepare_at(&p, &opts(1 << 20, false)).unwrap();
        assert_eq!(t.info().size_bytes, 8192);
        drop(t);
        assert_eq!(std::fs::read(&p).unwrap(), vec![7u8; 8192]);
    }

    #[test]
    fn free_space_is_checked_first() {
        let dir = tempfile::tempdir().unwrap();
        let e = prepare_at(dir.path(), &opts(1 << 62, true))
            .unwrap_err()
            .to_string();
        assert!(e.contains("MiB free on the filesystem of"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn sequential_jobs_split_the_target_random_jobs_share_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = prepare_at(dir.path(), &opts(4 << 20, true)).unwrap();
        let seq = TestSpec::new("s", Workload::READ, 1 << 20, 1, 3);
        let r = t.job_regions(&seq).unwrap();
        assert_eq!(
            r.iter().map(|r| r.start).collect::<Vec<_>>(),
            [0, 1 << 20, 2 << 20]
        );
        let rnd = TestSpec::new("r", Workload::RANDREAD, 4096, 1, 2);
        assert!(t
            .job_regions(&rnd)
            .unwrap()
            .iter()
            .all(|r| r.start == 0 && r.len == 4 << 20));
        let big = TestSpec::new("b", Workload::READ, 8 << 20, 1, 1);
        assert!(t
            .job_regions(&big)
            .unwrap_err()
            .to_string()
            .contains("raise --size"));
    }
}
