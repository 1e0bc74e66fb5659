//! What `bench mmio` maps, and how: a PCI BAR (its sysfs `resourceN[_wc]` file, or the older
//! `/proc/bus/pci` file with the PCIIOC ioctls when there is none) or any file, checked before
//! anything is mapped (read-only unless asked; stores refused while a driver is bound or on the
//! MSI-X table's BAR) and every refusal of the kernel explained in one sentence.
//!
//! The facts checked (driver, enable, MSI-X BARs, lockdown) are probe's
//! (`probe::pci::bar::function_facts`); this module only opens and maps.

use super::{check_window, Mapping};
use model::inventory::pci::bar::{BarAddress, FunctionFacts};
use model::mmio::{AccessOp, Region};
use model::root::SysRoot;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The target as the user named it.
#[derive(Debug)]
pub enum MmioTarget {
    /// BAR `addr`, through `file` when a sysfs resource file was named.
    Bar {
        addr: BarAddress,
        file: Option<PathBuf>,
    },
    File(PathBuf),
}

/// A refusal before anything ran: one sentence, and whether it is a usage error (exit 2)
/// rather than a failure (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Refused(String),
}

impl TargetError {
    pub fn is_usage(&self) -> bool {
        matches!(self, TargetError::Usage(_))
    }
}

fn refuse(message: impl Into<String>) -> TargetError {
    TargetError::Refused(message.into())
}

fn usage(message: impl Into<String>) -> TargetError {
    TargetError::Usage(message.into())
}

impl MmioTarget {
    /// `DDDD:BB:DD.F:N`, `BB:DD.F:N`, a sysfs `.../DDDD:BB:DD.F/resourceN[_wc]` path, or a file.
    pub fn parse(s: &str) -> Result<MmioTarget, TargetError> {
        if !Path::new(s).exists() && !s.contains('/') && s.contains('.') && s.contains(':') {
            // Shaped like DDDD:BB:DD.F:N: a mistake in it is a usage error, not a missing file.
            return match s.parse::<BarAddress>() {
                Ok(addr) => Ok(MmioTarget::Bar { addr, file: None }),
                Err(e) => Err(usage(e)),
            };
        }
        // .../devices/0000:01:00.0/resource2[_wc] (the bus path or the devices path).
        let p = PathBuf::from(s);
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let dir = p
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        if let (Some(name), Some(dir)) = (name, dir) {
            let n = name
                .strip_prefix("resource")
                .map(|r| r.trim_end_matches("_wc"));
            if let (Some(Ok(bar)), Ok(function)) = (n.map(str::parse::<u8>), dir.parse()) {
                if bar <= 5 {
                    return Ok(MmioTarget::Bar {
                        addr: BarAddress { function, bar },
                        file: Some(p),
                    });
                }
            }
        }
        Ok(MmioTarget::File(p))
    }

    /// The operations to run on this target (`given` as the user wrote it): those asked, else
    /// loads, or stores then loads with `--write`. Stores need `write` naming exactly this
    /// target, so a typo cannot write another device; refused before anything is mapped.
    pub fn operations(
        &self,
        given: &str,
        write: Option<&str>,
        asked: &[AccessOp],
    ) -> Result<Vec<AccessOp>, TargetError> {
        let ops = match (asked.is_empty(), write.is_some()) {
            (true, true) => vec![AccessOp::Store, AccessOp::Load],
            (true, false) => vec![AccessOp::Load],
            (false, _) => asked.to_vec(),
        };
        if ops.contains(&AccessOp::Store) && write.is_none() {
            return Err(usage(format!(
                "--op store writes to {given}: it needs --write {} (the exact target, so a typo \
                 cannot write another device); nothing was mapped",
                match self {
                    MmioTarget::Bar { addr, .. } => addr.to_string(),
                    MmioTarget::File(_) => given.to_string(),
                }
            )));
        }
        if let Some(w) = write.filter(|w| !self.is_named_by(given, w)) {
            return Err(usage(format!(
                "--write {w} does not name the target {given}: give the exact target (for a \
                 BAR, DDDD:BB:DD.F:N) to allow stores"
            )));
        }
        Ok(ops)
    }

    /// Whether `--write w` names exactly this target (`given` as the user wrote it).
    pub fn is_named_by(&self, given: &str, w: &str) -> bool {
        match self {
            MmioTarget::Bar { addr, .. } => w.parse::<BarAddress>().is_ok_and(|x| &x == addr),
            MmioTarget::File(p) => {
                w == given
                    || match (std::fs::canonicalize(p), std::fs::canonicalize(w)) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => false,
                    }
            }
        }
    }
}

/// What kind of region was mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    Bar,
    File,
    /// A character device such as /dev/mem.
    Device,
}

impl RegionKind {
    /// The document's word for it.
    pub fn label(self) -> &'static str {
        match self {
            RegionKind::Bar => "bar",
            RegionKind::File => "file",
            RegionKind::Device => "device",
        }
    }
}

/// A mapped region and where the asked window starts in it.
pub struct Opened {
    pub map: Mapping,
    /// What was mapped, as the document records it.
    pub region: Region,
    /// The window's offset in `map` (the mapping starts on the page holding `--offset`).
    pub window_in_map: u64,
}

/// How a BAR is to be mapped.
#[derive(Clone, Debug, Default)]
pub struct BarRequest {
    /// The sysfs resource file named, if one was.
    pub file: Option<PathBuf>,
    /// `--wc`: the write-combining mapping.
    pub wc: bool,
    pub writable: bool,
    /// `--allow-bound`: loads from a function with a driver bound.
    pub allow_bound: bool,
    pub offset: u64,
    /// Bytes of the window [default: the rest of the BAR from `offset`].
    pub size: Option<u64>,
}

/// The kernel's page size (`sysconf(_SC_PAGESIZE)`: 4 KiB on x86_64, 4, 16 or 64 KiB on
/// arm64 kernels): mmap offsets are multiples of it.
pub fn page_size() -> u64 {
    // SAFETY: a plain getter.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// The mapping that covers `offset..offset + size` of a region of `len` bytes with pages of
/// `page` bytes: its start (the page holding `offset`) and length (whole pages, never past
/// the region's last page).
pub fn page_span(offset: u64, size: u64, len: u64, page: u64) -> (u64, u64) {
    let start = offset & !(page - 1);
    let wanted = (offset - start + size).div_ceil(page) * page;
    (start, wanted.min(len.div_ceil(page) * page - start))
}

/// Why the kernel said EPERM to a BAR mapping, with the lockdown mode when readable.
fn lockdown_sentence(lockdown: Option<&str>) -> String {
    match lockdown {
        Some(m) if m != "none" => format!(
            "the kernel is locked down in `{m}` mode (/sys/kernel/security/lockdown), which \
             forbids user-space access to PCI BARs (kernel_lockdown(7)); BAR access needs a \
             kernel without lockdown (Secure Boot off, no lockdown= on the command line, not \
             built with LOCK_DOWN_KERNEL_FORCE_*)"
        ),
        Some(_) => "the kernel refused with EPERM although lockdown is `none`: check for an \
                    LSM policy (SELinux, AppArmor) denying the mapping"
            .to_string(),
        None => "the kernel refused with EPERM: kernel lockdown forbids user-space BAR access \
                 (kernel_lockdown(7)); its mode could not be read because \
                 /sys/kernel/security/lockdown is missing (mount securityfs to see it: mount \
                 -t securityfs securityfs /sys/kernel/security)"
            .to_string(),
    }
}

fn is_root() -> bool {
    // SAFETY: a plain getter.
    unsafe { libc::geteuid() == 0 }
}

/// The sentence for an error opening or mapping a BAR (by root when `root`).
fn explain(
    what: &str,
    e: &std::io::Error,
    addr: &BarAddress,
    facts: &FunctionFacts,
    root: bool,
) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) if !root => format!(
            "{what}: mapping a BAR needs root (the resource files are root's): run headroom \
             with sudo"
        ),
        Some(libc::EPERM) => format!(
            "{what} was refused: {}",
            lockdown_sentence(facts.lockdown.as_deref())
        ),
        Some(libc::EINVAL) => match &facts.driver {
            Some(d) => format!(
                "{what} was refused (EINVAL): driver {d} claimed BAR {} and the kernel's strict \
                 iomem checks (CONFIG_IO_STRICT_DEVMEM) forbid mapping claimed regions; boot \
                 with iomem=relaxed or unbind the driver",
                addr.bar
            ),
            None => format!(
                "{what} was refused (EINVAL): the window is outside BAR {} or the architecture \
                 cannot map it from user space",
                addr.bar
            ),
        },
        _ => format!("{what}: {e}"),
    }
}

/// `/proc/bus/pci/BB/DD.F` (domain 0) or `/proc/bus/pci/DDDD:BB/DD.F`.
fn proc_file(root: &SysRoot, addr: &BarAddress) -> PathBuf {
    let f = addr.function;
    let bus = if f.domain == 0 {
        format!("{:02x}", f.bus)
    } else {
        format!("{:04x}:{:02x}", f.domain, f.bus)
    };
    root.path(format!(
        "/proc/bus/pci/{bus}/{:02x}.{:x}",
        f.device, f.function
    ))
}

/// ioctls of /proc/bus/pci files (include/uapi/linux/pci.h: PCIIOC_BASE = 'P'<<24|'C'<<16|'I'<<8).
const PCIIOC_BASE: libc::c_ulong =
    (b'P' as libc::c_ulong) << 24 | (b'C' as libc::c_ulong) << 16 | (b'I' as libc::c_ulong) << 8;
const PCIIOC_MMAP_IS_MEM: libc::c_ulong = PCIIOC_BASE | 0x02;
const PCIIOC_WRITE_COMBINE: libc::c_ulong = PCIIOC_BASE | 0x04;

/// Check and map BAR `addr` (named `given`, whose facts probe read under `root`), pages of
/// `page` bytes.
pub fn open_bar(
    given: &str,
    root: &SysRoot,
    addr: BarAddress,
    facts: Option<&FunctionFacts>,
    req: &BarRequest,
    page: u64,
) -> Result<Opened, TargetError> {
    let f = addr.function;
    let facts = facts.ok_or_else(|| {
        refuse(format!(
            "there is no PCI function {f} (no /sys/bus/pci/devices/{f}); `lspci -D` lists them"
        ))
    })?;
    let res = facts
        .bars
        .get(addr.bar as usize)
        .copied()
        .filter(|r| r.size() > 0)
        .ok_or_else(|| {
            refuse(format!(
                "BAR {} of {f} is not implemented (size 0 in /sys/bus/pci/devices/{f}/resource); \
                 `lspci -v -s {f}` lists its regions",
                addr.bar
            ))
        })?;
    if res.is_io() {
        return Err(refuse(format!(
            "BAR {} of {f} is an I/O-port BAR: ports are reached with in/out instructions, not \
             mapped into memory; pick a memory BAR (`lspci -v -s {f}`)",
            addr.bar
        )));
    }
    if facts.enabled == Some(false) {
        return Err(refuse(format!(
            "{f} is disabled (sysfs enable = 0): its BARs do not decode and loads would return \
             all ones or fault; enable it first: echo 1 > /sys/bus/pci/devices/{f}/enable"
        )));
    }
    let writable = req.writable;
    if writable {
        let mut why = Vec::new();
        if let Some(d) = &facts.driver {
            why.push(format!(
                "{f} is bound to driver {d}, whose state a store could corrupt (unbind it \
                 first: echo {f} > /sys/bus/pci/drivers/{d}/unbind)"
            ));
        }
        if facts.msix_table_bar == Some(addr.bar) || facts.msix_pba_bar == Some(addr.bar) {
            why.push(format!(
                "BAR {} holds the function's MSI-X table or PBA (MSI-X capability in config \
                 space): a store there can re-target or mask its interrupts",
                addr.bar
            ));
        }
        if !why.is_empty() {
            return Err(refuse(format!(
                "stores to {addr} are refused: {}; loads alone need no --write",
                why.join("; and ")
            )));
        }
    } else if let (Some(d), false) = (&facts.driver, req.allow_bound) {
        // A sweep reads every register of the BAR under the driver's feet.
        return Err(refuse(format!(
            "{f} is bound to driver {d}, and loads from BAR {} read its registers: a read can \
             change the device (virtio's ISR status clears when read, and the driver loses the \
             interrupt it signalled; a FIFO or a clear-on-read counter loses data); give \
             --allow-bound to load anyway, with --offset and --size for a window whose \
             registers you know, or unbind the driver first: echo {f} > \
             /sys/bus/pci/drivers/{d}/unbind",
            addr.bar
        )));
    }
    let offset = req.offset;
    let bar_bytes = res.size();
    let size = req.size.unwrap_or(bar_bytes.saturating_sub(offset));
    if let Err(e) = check_window(
        usize::try_from(bar_bytes).unwrap_or(usize::MAX),
        offset,
        size,
        1,
    ) {
        return Err(usage(format!("{addr} ({bar_bytes} bytes): {e}")));
    }
    let dir = root.path(format!("/sys/bus/pci/devices/{f}"));
    let wc_file = dir.join(format!("resource{}_wc", addr.bar));
    let wc_available = wc_file.exists();
    let wants_wc = req.wc
        || req
            .file
            .as_ref()
            .is_some_and(|p| p.to_string_lossy().ends_with("_wc"));
    if wants_wc && !wc_available {
        return Err(refuse(format!(
            "BAR {} of {f} has no write-combining mapping ({} is missing: the kernel offers \
             one only for prefetchable BARs); map it without --wc",
            addr.bar,
            wc_file.display()
        )));
    }
    let sys_file = req.file.clone().unwrap_or_else(|| {
        if wants_wc {
            wc_file.clone()
        } else {
            dir.join(format!("resource{}", addr.bar))
        }
    });
    let mut opts = OpenOptions::new();
    opts.read(true).write(writable);
    if writable {
        opts.custom_flags(libc::O_SYNC);
    }
    let (map_start, map_len) = page_span(offset, size, bar_bytes, page);
    let root_user = is_root();
    let (file_used, map) = if sys_file.exists() {
        let fh = opts.open(&sys_file).map_err(|e| {
            refuse(explain(
                &format!("opening {}", sys_file.display()),
                &e,
                &addr,
                facts,
                root_user,
            ))
        })?;
        let m = Mapping::of_file(&fh, map_start, map_len as usize, writable).map_err(|e| {
            refuse(explain(
                &format!("mapping {}", sys_file.display()),
                &e,
                &addr,
                facts,
                root_user,
            ))
        })?;
        (sys_file, m)
    } else {
        // No resourceN file (some kernels do not create them): the older /proc/bus/pci
        // interface, which maps by the BAR's bus address, so the BAR itself must start on a
        // page (a 4 KiB BAR on a 16 or 64 KiB-page arm64 kernel may not).
        let pf = proc_file(root, &addr);
        let missing = format!(
            "{} does not exist, so {} was tried",
            sys_file.display(),
            pf.display()
        );
        if res.start % page != 0 {
            return Err(refuse(format!(
                "{missing}; it maps by bus address, and BAR {} of {f} starts at {:#x}, not on \
                 a page of this kernel ({page} bytes): only a kernel with resource files \
                 (sysfs resourceN) can map it",
                addr.bar, res.start
            )));
        }
        let fh = opts.open(&pf).map_err(|e| {
            refuse(explain(
                &format!("{missing}; opening it"),
                &e,
                &addr,
                facts,
                root_user,
            ))
        })?;
        let ioctl = |req: libc::c_ulong, arg: libc::c_ulong| -> std::io::Result<()> {
            // SAFETY: the /proc/bus/pci ioctls take an integer argument.
            let r = unsafe { libc::ioctl(fh.as_raw_fd(), req as _, arg) };
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        ioctl(PCIIOC_MMAP_IS_MEM, 0).map_err(|e| {
            refuse(explain(
                &format!("{missing}; selecting memory space on it (PCIIOC_MMAP_IS_MEM)"),
                &e,
                &addr,
                facts,
                root_user,
            ))
        })?;
        if wants_wc {
            ioctl(PCIIOC_WRITE_COMBINE, 1).map_err(|e| {
                refuse(explain("PCIIOC_WRITE_COMBINE", &e, &addr, facts, root_user))
            })?;
        }
        let m = Mapping::of_file(&fh, res.start + map_start, map_len as usize, writable).map_err(
            |e| {
                refuse(explain(
                    &format!("{missing}; mapping it"),
                    &e,
                    &addr,
                    facts,
                    root_user,
                ))
            },
        )?;
        (pf, m)
    };
    Ok(Opened {
        map,
        window_in_map: offset - map_start,
        region: Region {
            given: given.to_string(),
            kind: RegionKind::Bar.label().into(),
            file: file_used.display().to_string(),
            bar: Some(addr.to_string()),
            bar_bytes: Some(bar_bytes),
            bar_start: Some(res.start),
            prefetchable: Some(res.prefetchable()),
            is_64bit: Some(res.is_64bit()),
            write_combining: wants_wc,
            write_combining_available: Some(wc_available),
            window_offset: offset,
            window_bytes: size,
            writable,
            driver: facts.driver.clone(),
        },
    })
}

/// Check and map `offset..offset + size` of file `p` (named `given`), pages of `page` bytes.
///
/// The checks are made on the opened file itself (fstat), never on its name, so nothing can
/// be swapped in between. Stores go only into a regular file of the user running headroom
/// with no other name, opened without following a symbolic link (O_NOFOLLOW), or into a
/// character device (/dev/mem: only root makes device nodes): in a directory others can write
/// (/tmp, /dev/shm), a link or a file planted under the name would make root write over
/// another file with test patterns.
pub fn open_file(
    given: &str,
    p: &Path,
    writable: bool,
    offset: u64,
    size: Option<u64>,
    page: u64,
) -> Result<Opened, TargetError> {
    use std::os::unix::fs::MetadataExt;
    let mut opts = OpenOptions::new();
    opts.read(true).write(writable);
    // O_NONBLOCK: a FIFO is refused below instead of blocking the open (a regular file and
    // the mapping ignore the flag).
    let nofollow = if writable { libc::O_NOFOLLOW } else { 0 };
    opts.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | nofollow);
    let fh = opts
        .open(p)
        .map_err(|e| match (e.kind(), e.raw_os_error()) {
            (std::io::ErrorKind::NotFound, _) => refuse(format!(
                "{given} does not exist: give DDDD:BB:DD.F:BAR, a sysfs resourceN file or an \
             existing file"
            )),
            (_, Some(libc::EISDIR)) => usage(format!(
                "{given} is a directory: give DDDD:BB:DD.F:BAR, a sysfs resourceN file or a file"
            )),
            (_, Some(libc::ELOOP)) if writable => refuse(format!(
                "stores to {given} are refused: {}; nothing was mapped",
                model::privilege::SYMLINK_REFUSED
            )),
            _ => refuse(format!("opening {given}: {e}")),
        })?;
    let meta = fh.metadata().map_err(|e| refuse(format!("{given}: {e}")))?;
    let device = meta.file_type().is_char_device();
    if meta.is_dir() {
        return Err(usage(format!(
            "{given} is a directory: give DDDD:BB:DD.F:BAR, a sysfs resourceN file or a file"
        )));
    }
    if !device && !meta.is_file() {
        return Err(usage(format!(
            "{given} is neither a regular file nor a character device: there is nothing to map"
        )));
    }
    if writable && !device {
        // SAFETY: geteuid(2) has no arguments and cannot fail.
        let euid = unsafe { libc::geteuid() };
        if let Some(why) =
            model::privilege::why_not_overwritable(true, meta.uid(), meta.nlink(), euid)
        {
            return Err(refuse(format!(
                "stores to {given} are refused: {why}; nothing was mapped"
            )));
        }
    }
    let len = if device {
        let Some(s) = size else {
            return Err(usage(format!(
                "{given} is a character device with no size: give --offset and --size of the \
                 region to map"
            )));
        };
        offset + s
    } else {
        meta.len()
    };
    if len == 0 {
        return Err(usage(format!("{given} is empty: there is nothing to map")));
    }
    let size = size.unwrap_or(len.saturating_sub(offset));
    if let Err(e) = check_window(usize::try_from(len).unwrap_or(usize::MAX), offset, size, 1) {
        return Err(usage(format!("{given} ({len} bytes): {e}")));
    }
    let map_start = offset & !(page - 1);
    let map_len = offset - map_start + size;
    let map = Mapping::of_file(&fh, map_start, map_len as usize, writable)
        .map_err(|e| refuse(format!("mapping {given}: {e}")))?;
    Ok(Opened {
        map,
        window_in_map: offset - map_start,
        region: Region {
            given: given.to_string(),
            kind: if device {
                RegionKind::Device
            } else {
                RegionKind::File
            }
            .label()
            .into(),
            file: p.display().to_string(),
            bar: None,
            bar_bytes: None,
            bar_start: None,
            prefetchable: None,
            is_64bit: None,
            write_combining: false,
            write_combining_available: None,
            window_offset: offset,
            window_bytes: size,
            writable,
            driver: None,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use model::inventory::pci::bar::Resource;

    #[test]
    fn stores_need_write_naming_the_exact_target() {
        let bar = MmioTarget::parse("0000:01:00.0:2").unwrap();
        let given = "0000:01:00.0:2";
        assert_eq!(bar.operations(given, None, &[]).unwrap(), [AccessOp::Load]);
        assert_eq!(
            bar.operations(given, Some("01:00.0:2"), &[]).unwrap(),
            [AccessOp::Store, AccessOp::Load]
        );
        let e = bar.operations(given, None, &[AccessOp::Store]).unwrap_err();
        assert!(e.is_usage());
        assert!(
            e.to_string().contains("needs --write 0000:01:00.0:2"),
            "{e}"
        );
        let e = bar
            .operations(given, Some("0000:01:00.0:0"), &[AccessOp::Store])
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--write 0000:01:00.0:0 does not name the target"));
    }

    const MEM_BAR: &str = "0x00000000f0000000 0x00000000f00fffff 0x0000000000040200";
    const IO_BAR: &str = "0x000000000000c000 0x000000000000c03f 0x0000000000040101";
    const NO_BAR: &str = "0x0000000000000000 0x0000000000000000 0x0000000000000000";

    /// A function's facts as probe reads them: its `resource` lines, `enable`, a driver.
    fn facts(resource: &[&str], enabled: bool, driver: Option<&str>) -> FunctionFacts {
        FunctionFacts {
            bars: resource
                .iter()
                .map(|l| Resource::parse_line(l).unwrap())
                .collect(),
            driver: driver.map(String::from),
            enabled: Some(enabled),
            msix_table_bar: None,
            msix_pba_bar: None,
            lockdown: Some("integrity".into()),
        }
    }

    /// The refusal of BAR `bar` of 0000:01:00.0 under an empty root (no sysfs files).
    fn refusal(f: &FunctionFacts, bar: u8, req: &BarRequest, page: u64) -> String {
        let d = tempfile::tempdir().unwrap();
        let addr: BarAddress = format!("0000:01:00.0:{bar}").parse().unwrap();
        match open_bar("bar", &SysRoot::new(d.path()), addr, Some(f), req, page) {
            Err(r) => r.to_string(),
            Ok(_) => panic!("mapped"),
        }
    }

    fn loads() -> BarRequest {
        BarRequest::default()
    }

    fn stores() -> BarRequest {
        BarRequest {
            writable: true,
            ..BarRequest::default()
        }
    }

    #[test]
    fn every_refusal_before_the_mapping_is_one_sentence_with_the_way_out() {
        let m = refusal(&facts(&[MEM_BAR, IO_BAR], true, None), 1, &loads(), 4096);
        assert!(
            m.contains("BAR 1 of 0000:01:00.0 is an I/O-port BAR"),
            "{m}"
        );
        let m = refusal(&facts(&[MEM_BAR], false, None), 0, &loads(), 4096);
        assert!(m.contains("is disabled (sysfs enable = 0)"), "{m}");
        assert!(
            m.contains("echo 1 > /sys/bus/pci/devices/0000:01:00.0/enable"),
            "{m}"
        );
        let m = refusal(&facts(&[MEM_BAR, NO_BAR], true, None), 1, &loads(), 4096);
        assert!(
            m.contains("BAR 1 of 0000:01:00.0 is not implemented"),
            "{m}"
        );
        let m = refusal(&facts(&[MEM_BAR], true, Some("nvme")), 0, &stores(), 4096);
        assert!(m.contains("bound to driver nvme"), "{m}");
        assert!(
            m.contains("echo 0000:01:00.0 > /sys/bus/pci/drivers/nvme/unbind"),
            "{m}"
        );
        let d = tempfile::tempdir().unwrap();
        let addr: BarAddress = "0000:01:00.0:0".parse().unwrap();
        let m = open_bar("bar", &SysRoot::new(d.path()), addr, None, &loads(), 4096)
            .err()
            .unwrap()
            .to_string();
        assert!(
            m.starts_with("there is no PCI function 0000:01:00.0"),
            "{m}"
        );
    }

    /// Loads from a function with a driver bound are refused before any
    /// mapping unless --allow-bound, with why; with it they go on (to the missing resource
    /// file of this tree, here).
    #[test]
    fn loads_from_a_bound_function_need_allow_bound() {
        let bound = facts(&[MEM_BAR], true, Some("virtio-pci"));
        let m = refusal(&bound, 0, &loads(), 4096);
        assert!(
            m.starts_with("0000:01:00.0 is bound to driver virtio-pci, and loads from BAR 0"),
            "{m}"
        );
        assert!(m.contains("virtio's ISR status clears when read"), "{m}");
        assert!(m.contains("give --allow-bound to load anyway"), "{m}");
        assert!(
            m.contains("echo 0000:01:00.0 > /sys/bus/pci/drivers/virtio-pci/unbind"),
            "{m}"
        );
        let allowed = BarRequest {
            allow_bound: true,
            ..BarRequest::default()
        };
        let m = refusal(&bound, 0, &allowed, 4096);
        assert!(!m.contains("--allow-bound"), "{m}");
        // Without a driver, loads need no flag.
        let m = refusal(&facts(&[MEM_BAR], true, None), 0, &loads(), 4096);
        assert!(!m.contains("--allow-bound"), "{m}");
    }

    #[test]
    fn kernel_refusals_are_explained() {
        let f = facts(&[MEM_BAR], true, Some("nvme"));
        let addr: BarAddress = "0000:01:00.0:0".parse().unwrap();
        let einval = std::io::Error::from_raw_os_error(libc::EINVAL);
        let m = explain("mapping resource0", &einval, &addr, &f, true);
        assert!(
            m.contains("driver nvme claimed BAR 0") && m.contains("iomem=relaxed"),
            "{m}"
        );
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        let m = explain("mapping resource0", &eperm, &addr, &f, true);
        assert!(m.contains("locked down in `integrity` mode"), "{m}");
        let m = explain("mapping resource0", &eperm, &addr, &f, false);
        assert!(
            m.ends_with("needs root (the resource files are root's): run headroom with sudo"),
            "{m}"
        );
    }

    /// The mapping starts on a page of the running kernel, not on a 4 KiB page: an
    /// offset of 0x5010 on a 16 KiB-page arm64 kernel maps from 0x4000 (from 0x5000 the
    /// kernel refuses with EINVAL, explained as a window outside the BAR).
    #[test]
    fn a_window_is_mapped_from_the_kernels_page() {
        let mib = 1 << 20;
        assert_eq!(page_span(0x5010, 0x100, mib, 4096), (0x5000, 0x1000));
        assert_eq!(page_span(0x5010, 0x100, mib, 16384), (0x4000, 0x4000));
        assert_eq!(page_span(0x5010, 0x100, mib, 65536), (0, 0x10000));
        // A window across a page boundary covers both pages.
        assert_eq!(page_span(0x3ff0, 0x20, mib, 16384), (0, 0x8000));
        // A 4 KiB BAR on a 64 KiB-page kernel is one whole page, never past it.
        assert_eq!(page_span(0, 4096, 4096, 65536), (0, 65536));
        assert_eq!(page_span(0x800, 0x800, 4096, 4096), (0, 4096));
        let p = page_size();
        assert!(p.is_power_of_two() && p >= 4096, "{p}");
    }

    /// The /proc/bus/pci interface maps by bus address: a BAR that does not start on a page
    /// of this kernel (a 4 KiB BAR on a 64 KiB-page kernel) is refused with why, before any
    /// open; on 4 KiB pages the same BAR goes on to the (here missing) file.
    #[test]
    fn a_bar_off_the_kernels_page_is_explained() {
        let small = "0x00000000f0001000 0x00000000f0001fff 0x0000000000040200";
        let f = facts(&[small], true, None);
        let m = refusal(&f, 0, &loads(), 65536);
        assert!(
            m.contains("BAR 0 of 0000:01:00.0 starts at 0xf0001000, not on a page of this kernel (65536 bytes)"),
            "{m}"
        );
        let m = refusal(&f, 0, &loads(), 4096);
        assert!(m.contains("; opening it: "), "{m}");
        assert!(!m.contains("not on a page"), "{m}");
    }

    #[test]
    fn targets_are_told_apart() {
        assert!(matches!(
            MmioTarget::parse("01:00.0:2"),
            Ok(MmioTarget::Bar { file: None, .. })
        ));
        match MmioTarget::parse("/sys/bus/pci/devices/0000:01:00.0/resource2_wc") {
            Ok(MmioTarget::Bar {
                addr,
                file: Some(_),
            }) => assert_eq!(addr.to_string(), "0000:01:00.0:2"),
            _ => panic!("a resourceN_wc path is that BAR"),
        }
        assert!(matches!(
            MmioTarget::parse("./bar.bin"),
            Ok(MmioTarget::File(_))
        ));
        let e = MmioTarget::parse("01:00.0:9").unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("0 to 5"), "{e}");
    }
}
