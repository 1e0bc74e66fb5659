//! The survey's plan policy: which parts a machine's survey has (the audit, one disk part per
//! storage device, latency idle and under stress, the network both ways), their default and
//! shortest times, their priorities when the budget is short, and the command line each part
//! runs with the times [`fit`](super::fit) gave it. Pure: the block inventory and the free
//! space come from probe, the running is cli's.

use super::{PartKind, Plan, PlannedPart};
use crate::inventory::block::{BlockDevice, BlockInventory, BlockKind, FreeSpace};
use std::path::{Path, PathBuf};

/// Default and shortest times of each part kind, seconds (per disk test, per latency run,
/// per network direction). The defaults follow the tools' own: CrystalDiskMark's 5 s per
/// test, cyclictest runs of a minute as in the Rockchip RT report's shortest runs, iperf3's
/// 10 s.
pub struct Times {
    pub disk: f64,
    pub latency: f64,
    pub net: f64,
    pub file_bytes: u64,
}

pub const NORMAL: Times = Times {
    disk: 5.0,
    latency: 60.0,
    net: 10.0,
    file_bytes: 256 << 20,
};
pub const QUICK: Times = Times {
    disk: 2.0,
    latency: 10.0,
    net: 5.0,
    file_bytes: 64 << 20,
};
const MIN_DISK_S: f64 = 1.0;
const MIN_LATENCY_S: f64 = 3.0;
const MIN_NET_S: f64 = 2.0;
/// Assumed when estimating how long laying out a test file takes: an eMMC-class write
/// speed, so the estimate errs long on faster storage.
const ASSUMED_FILL_BYTES_PER_S: f64 = 100e6;

/// Priorities: what is left out first when the budget is short has the lowest.
const PRIO_AUDIT: u32 = 100;
const PRIO_DISK: u32 = 80;
const PRIO_LATENCY_IDLE: u32 = 60;
const PRIO_LATENCY_STRESS: u32 = 50;
const PRIO_NET: u32 = 40;
const PRIO_DISK_READ_ONLY: u32 = 30;

/// What a survey is asked to cover (the command's flags and the machine's CPU count).
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    /// `--quick`: [`QUICK`]'s times instead of [`NORMAL`]'s.
    pub quick: bool,
    /// CPUs online (the stress part's cpu workers).
    pub cpus: usize,
    /// `--net HOST` and its port.
    pub net: Option<(&'a str, u16)>,
    /// `--include` and `--exclude` kinds, each with its flag, in the order given.
    pub kinds: Vec<(&'a str, PartKind)>,
}

/// The parts of this machine's survey at their default times, those that will not run
/// marked so with the reason (`--include`, `--exclude`, nothing to test); [`fit`] shapes
/// them to the budget. `space` says how much room a directory has now (`None` when it
/// cannot tell, or for a tree captured elsewhere).
pub fn parts(
    inv: &BlockInventory,
    space: &dyn Fn(&Path) -> Option<FreeSpace>,
    req: &Request,
) -> Vec<PlannedPart> {
    let t = if req.quick { &QUICK } else { &NORMAL };
    let cpus = req.cpus.max(1);
    let kinds = &req.kinds;
    let mut parts = vec![PlannedPart {
        id: "audit".to_string(),
        kind: PartKind::Audit,
        what: "every PCI Express, USB, block and network link: state against capability, \
               ceiling, findings"
            .to_string(),
        command: vec!["audit".into()],
        fixed_s: 2.0,
        units: 0,
        unit_s: 0.0,
        min_unit_s: 0.0,
        writes_bytes: 0,
        priority: PRIO_AUDIT,
        run: true,
        reason: None,
    }];
    parts.extend(storage_parts(inv, space, t));

    let lat = |id: &str, stress: Option<String>, prio: u32| {
        // --split where the kernel allows (root, tracefs): each part then says what delayed
        // its wake-ups; elsewhere bench latency says why not and measures as without it.
        let mut command: Vec<String> = [
            "bench", "latency", "-S", "-p", "99", "-i", "1000", "-q", "--split",
        ]
        .map(String::from)
        .to_vec();
        let what = match &stress {
            Some(s) => {
                command.extend(["--stress".to_string(), s.clone()]);
                format!(
                    "wake-up latency like cyclictest -S -p 99 -i 1000 under the built-in \
                     stress {s}"
                )
            }
            None => "wake-up latency like cyclictest -S -p 99 -i 1000, idle".to_string(),
        };
        // SCHED_FIFO needs root (or CAP_SYS_NICE): without it bench latency still measures,
        // and its warning and document say how the numbers were taken.
        PlannedPart {
            id: id.to_string(),
            kind: PartKind::Latency,
            what,
            command,
            fixed_s: 1.0,
            units: 1,
            unit_s: t.latency,
            min_unit_s: MIN_LATENCY_S,
            writes_bytes: 0,
            priority: prio,
            run: true,
            reason: None,
        }
    };
    parts.push(lat("latency idle", None, PRIO_LATENCY_IDLE));
    parts.push(lat(
        "latency stress",
        Some(format!("cpu={cpus},io=1,vm=1,vm-bytes=64M")),
        PRIO_LATENCY_STRESS,
    ));

    match req.net {
        Some((host, port)) => {
            for (dir, reverse) in [("send", false), ("receive", true)] {
                let mut command = vec![
                    "bench".into(),
                    "net".into(),
                    host.to_string(),
                    "-p".into(),
                    port.to_string(),
                ];
                if reverse {
                    command.push("-R".into());
                }
                parts.push(PlannedPart {
                    id: format!("net {host} {dir}"),
                    kind: PartKind::Net,
                    what: format!(
                        "TCP throughput {} {host}, like iperf3 -c {host}{}",
                        if reverse { "from" } else { "to" },
                        if reverse { " -R" } else { "" }
                    ),
                    command,
                    fixed_s: 1.0,
                    units: 1,
                    unit_s: t.net,
                    min_unit_s: MIN_NET_S,
                    writes_bytes: 0,
                    priority: PRIO_NET,
                    run: true,
                    reason: None,
                });
            }
        }
        None => parts.push(not_run(
            "net",
            PartKind::Net,
            "not run: no --net HOST given (an iperf3 or `headroom bench net --server`)".to_string(),
        )),
    }

    let included: Vec<PartKind> = kinds
        .iter()
        .filter(|(f, _)| *f == "--include")
        .map(|(_, k)| *k)
        .collect();
    for p in parts.iter_mut().filter(|p| p.run) {
        if let Some((flag, _)) = kinds
            .iter()
            .find(|(f, k)| *f == "--exclude" && *k == p.kind)
        {
            p.run = false;
            p.reason = Some(format!("not run: {flag} {}", p.kind.name()));
        } else if !included.is_empty() && !included.contains(&p.kind) {
            p.run = false;
            p.reason = Some(format!(
                "not run: not in --include {}",
                join_kinds(&included)
            ));
        }
    }
    parts
}

/// A fitted plan with the times the budget gave each part in its command line.
pub fn with_times(mut plan: Plan) -> Plan {
    for p in plan.parts.iter_mut() {
        apply_times(p);
    }
    plan
}

fn join_kinds(k: &[PartKind]) -> String {
    k.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")
}

/// Put the fitted unit time into the part's command line.
fn apply_times(p: &mut PlannedPart) {
    let secs = |s: f64| format!("{}s", (s * 10.0).round() / 10.0);
    match p.kind {
        PartKind::Disk => {
            p.command.extend(["--runtime".to_string(), secs(p.unit_s)]);
        }
        PartKind::Latency => {
            // cyclictest's -D takes whole seconds.
            p.command
                .extend(["-D".to_string(), format!("{}s", p.unit_s.round().max(1.0))]);
        }
        PartKind::Net if !p.command.is_empty() => {
            p.command
                .extend(["-t".to_string(), format!("{}", p.unit_s.round().max(1.0))]);
        }
        _ => {}
    }
    match p.kind {
        _ if p.command.is_empty() => {}
        // The survey keeps the parts in its own document: they are not saved one by one.
        PartKind::Disk | PartKind::Latency | PartKind::Net => {
            p.command
                .extend(["--json".to_string(), "--no-save".to_string()]);
        }
        PartKind::Audit => p.command.push("--json".to_string()),
    }
}

/// Why a block device is not storage hardware worth a benchmark, by its kernel name
/// (Documentation/admin-guide/devices.txt: loop 7, ram 1, zram, nbd 43, sr 11, fd 2).
fn not_storage(name: &str) -> Option<&'static str> {
    let starts = |p: &str| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
    };
    if starts("loop") {
        Some("a loop device (a file, not hardware)")
    } else if starts("ram") || starts("zram") {
        Some("a RAM disk, not storage hardware")
    } else if starts("nbd") {
        Some("a network block device")
    } else if starts("sr") || starts("fd") {
        Some("an optical or floppy drive (removable media)")
    } else {
        None
    }
}

/// One part per storage device: a test file on its writable filesystem, else reads of the
/// raw device; nothing is ever written to a raw device.
fn storage_parts(
    inv: &BlockInventory,
    space: &dyn Fn(&Path) -> Option<FreeSpace>,
    t: &Times,
) -> Vec<PlannedPart> {
    let mut parts = Vec::new();
    let disks: Vec<&BlockDevice> = inv
        .devices
        .iter()
        .filter(|d| d.kind == BlockKind::Disk)
        .collect();
    for disk in disks {
        let name = &disk.name;
        let id = format!("disk {name}");
        let size = disk.size_bytes.unwrap_or(0);
        if let Some(why) = not_storage(name) {
            // Unconfigured loop and zram devices (size 0) are not worth a line in the plan.
            if size > 0 && !name.starts_with("loop") {
                parts.push(not_run(
                    &id,
                    PartKind::Disk,
                    format!("not run: {name} is {why}"),
                ));
            }
            continue;
        }
        if size == 0 {
            parts.push(not_run(
                &id,
                PartKind::Disk,
                format!("not run: {name} has no medium (size 0)"),
            ));
            continue;
        }
        // A device-mapper or md layer is storage only through its members: surveyed when a
        // filesystem the user writes to sits on it, and not when its members are files.
        let layered = disk.layer.is_some() || name.starts_with("dm-") || name.starts_with("md");
        if layered
            && !disk.slaves.is_empty()
            && disk.slaves.iter().all(|m| not_storage(m).is_some())
        {
            parts.push(not_run(
                &id,
                PartKind::Disk,
                format!(
                    "not run: {name} is built on {}, not on storage hardware",
                    disk.slaves.join(", ")
                ),
            ));
            continue;
        }
        // Where the disk or one of its partitions is mounted, with the mount's options.
        let family: Vec<&BlockDevice> = inv
            .devices
            .iter()
            .filter(|d| d.name == *name || d.parent.as_deref() == Some(name.as_str()))
            .collect();
        let mut writable = Vec::new();
        let mut mounted = Vec::new();
        for d in &family {
            for m in &d.mounts {
                mounted.push(m.mount_point.clone());
                let rw = inv
                    .mounts
                    .iter()
                    .find(|x| x.mount_point == m.mount_point)
                    .is_some_and(|x| x.options.split(',').next() == Some("rw"));
                if rw {
                    writable.push((d.name.clone(), m.mount_point.clone(), m.fs_type.clone()));
                }
            }
        }
        // The shortest mount point first: `/` before `/home`.
        writable.sort_by_key(|(_, mp, _)| mp.as_os_str().len());
        if let Some((dev, mp, fs)) = writable.first() {
            let mut p = disk_part(&id, mp, t, false);
            p.what = format!(
                "SEQ1M Q8T1, RND4K Q32T1 and SEQ1M Q1T1, read and write, in a {} MiB test file \
                 of its own on {} ({fs} on {dev}), removed afterwards",
                t.file_bytes >> 20,
                mp.display()
            );
            if let Some(why) = space(mp).and_then(|s| no_room(mp, s, t.file_bytes)) {
                p.run = false;
                p.reason = Some(format!("not run: {why}"));
            }
            parts.push(p);
        } else if layered && mounted.is_empty() {
            parts.push(not_run(
                &id,
                PartKind::Disk,
                format!(
                    "not run: {name} is a device-mapper or md layer with nothing mounted; its \
                     member devices are surveyed"
                ),
            ));
        } else {
            let dev = PathBuf::from("/dev").join(name);
            let mut p = disk_part(&id, &dev, t, true);
            p.what = if mounted.is_empty() {
                format!(
                    "SEQ1M Q8T1, RND4K Q32T1 and SEQ1M Q1T1 reads of the first {} MiB of {} \
                     (nothing mounted: read only, nothing is written to a raw device)",
                    t.file_bytes >> 20,
                    dev.display()
                )
            } else {
                format!(
                    "SEQ1M Q8T1, RND4K Q32T1 and SEQ1M Q1T1 reads of the first {} MiB of {} \
                     (mounted read-only: read only, nothing is written)",
                    t.file_bytes >> 20,
                    dev.display()
                )
            };
            parts.push(p);
        }
    }
    parts
}

pub fn not_run(id: &str, kind: PartKind, reason: String) -> PlannedPart {
    PlannedPart {
        id: id.to_string(),
        kind,
        what: String::new(),
        command: Vec::new(),
        fixed_s: 0.0,
        units: 0,
        unit_s: 0.0,
        min_unit_s: 0.0,
        writes_bytes: 0,
        priority: 0,
        run: false,
        reason: Some(reason),
    }
}

fn disk_part(id: &str, target: &Path, t: &Times, read_only: bool) -> PlannedPart {
    let mut command: Vec<String> = vec![
        "bench".into(),
        "disk".into(),
        target.display().to_string(),
        "--profile".into(),
        "survey".into(),
        "--runs".into(),
        "1".into(),
        "--pause".into(),
        "0".into(),
        "--size".into(),
        format!("{}M", t.file_bytes >> 20),
    ];
    if read_only {
        command.extend(["--rw".to_string(), "read".to_string()]);
    }
    let fill_s = if read_only {
        0.0
    } else {
        t.file_bytes as f64 / ASSUMED_FILL_BYTES_PER_S
    };
    PlannedPart {
        id: id.to_string(),
        kind: PartKind::Disk,
        what: String::new(),
        command,
        fixed_s: 1.0 + fill_s,
        // The survey profile: three tests, each read and write (reads only on a raw device).
        units: if read_only { 3 } else { 6 },
        unit_s: t.disk,
        min_unit_s: MIN_DISK_S,
        writes_bytes: if read_only { 0 } else { t.file_bytes },
        priority: if read_only {
            PRIO_DISK_READ_ONLY
        } else {
            PRIO_DISK
        },
        run: true,
        reason: None,
    }
}

/// Why a test file of `bytes` cannot be made in `dir`, which has `space`, if it cannot.
fn no_room(dir: &Path, space: FreeSpace, bytes: u64) -> Option<String> {
    if space.read_only {
        return Some(format!("{} is read-only", dir.display()));
    }
    let free = space.available_bytes;
    // Twice the file: the filesystem keeps room for everything else on it.
    if free < bytes.saturating_mul(2) {
        return Some(format!(
            "{} has {} MiB free; the test file needs {} MiB and the same again to spare",
            dir.display(),
            free >> 20,
            bytes >> 20
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(parts: &[PlannedPart]) -> Vec<(String, bool)> {
        parts.iter().map(|p| (p.id.clone(), p.run)).collect()
    }

    #[test]
    fn a_machine_without_storage_has_audit_latency_and_the_net_both_ways() {
        let inv = BlockInventory::default();
        let req = Request {
            quick: true,
            cpus: 2,
            net: Some(("10.0.0.2", 5202)),
            kinds: vec![("--exclude", PartKind::Latency)],
        };
        let parts = parts(&inv, &|_| None, &req);
        assert_eq!(
            ids(&parts),
            [
                ("audit".to_string(), true),
                ("latency idle".to_string(), false),
                ("latency stress".to_string(), false),
                ("net 10.0.0.2 send".to_string(), true),
                ("net 10.0.0.2 receive".to_string(), true),
            ]
        );
        assert_eq!(
            parts[1].reason.as_deref(),
            Some("not run: --exclude latency")
        );
        assert!(parts[2]
            .command
            .contains(&"cpu=2,io=1,vm=1,vm-bytes=64M".to_string()));
        let plan = with_times(super::super::fit(600.0, parts));
        assert_eq!(
            plan.parts[4].command.join(" "),
            "bench net 10.0.0.2 -p 5202 -R -t 5 --json --no-save"
        );
        assert_eq!(plan.parts[0].command.join(" "), "audit --json");
    }

    #[test]
    fn a_full_or_read_only_filesystem_gets_no_test_file() {
        let dir = Path::new("/mnt");
        let room = |available_bytes, read_only| FreeSpace {
            available_bytes,
            read_only,
        };
        assert_eq!(no_room(dir, room(1 << 30, false), 256 << 20), None);
        assert_eq!(
            no_room(dir, room(300 << 20, false), 256 << 20).as_deref(),
            Some("/mnt has 300 MiB free; the test file needs 256 MiB and the same again to spare")
        );
        assert_eq!(
            no_room(dir, room(1 << 30, true), 256 << 20).as_deref(),
            Some("/mnt is read-only")
        );
    }
}
