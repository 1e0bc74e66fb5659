//! CPU and kernel context: what a latency (or any CPU-bound) number depends on.
//!
//! Kernel version and preemption model, the isolation options of the kernel command line,
//! CPUs online, cpufreq governors and frequencies, SMT, load average, and which device
//! interrupts land on which CPU. Every fact is read under a [`SysRoot`]; a fact that cannot
//! be read is `None` (absent), and an attribute that exists but could not be read is also
//! listed in `SystemContext::unreadable` with the reason, never an error.

use crate::sysfs::read_attr;
use model::root::SysRoot;

// The /proc text formats are parsed once, in model; the samplers of counters read them too.
use model::procfs::{parse_interrupts, parse_loadavg};
use model::units::parse_cpu_list;

use model::system::{
    compatible_list, host_text, machine_id, Cmdline, CpuFreq, DevFreq, Host, Kernel, Preemption,
    SystemContext,
};

/// The kernel's release (`uname -r`, /proc/sys/kernel/osrelease: Documentation/admin-guide/
/// sysctl/kernel.rst), `None` when it cannot be read.
pub fn kernel_release(root: &SysRoot) -> Option<String> {
    read_attr(&root.path(OSRELEASE)).ok().flatten()
}

/// The host name (/proc/sys/kernel/hostname), `None` when it cannot be read.
pub fn hostname(root: &SysRoot) -> Option<String> {
    read_attr(&root.path("/proc/sys/kernel/hostname"))
        .ok()
        .flatten()
}

/// The machine for a document's envelope (`model::system::Host`): name, kernel release,
/// machine-id, the firmware's model, board, `compatible` list and serial; a fact that cannot
/// be read (absent, or root-only like DMI's `product_serial`) stays `None`.
pub fn host(root: &SysRoot) -> Host {
    let dmi =
        |attr: &str| small_file(&root.path(format!("{DMI}/{attr}"))).and_then(|b| host_text(&b));
    // "Vendor Product", each where the firmware filled it in.
    let pair = |vendor: &str, name: &str| {
        let parts: Vec<String> = [dmi(vendor), dmi(name)]
            .into_iter()
            .flatten()
            .filter(|s| !is_placeholder(s))
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    };
    // The flattened device tree's root node: /proc/device-tree is a link to it (an absolute
    // one, which would leave a `--root` tree), so the sysfs path is read first.
    let dt = |property: &str| {
        ["/sys/firmware/devicetree/base", "/proc/device-tree"]
            .iter()
            .find_map(|d| small_file(&root.path(format!("{d}/{property}"))))
    };
    Host {
        hostname: hostname(root).and_then(|h| host_text(h.as_bytes())),
        kernel: kernel_release(root),
        machine_id: MACHINE_ID
            .iter()
            .find_map(|p| small_file(&root.path(p)).and_then(|b| machine_id(&b))),
        model: dt("model")
            .and_then(|b| host_text(&b))
            .or_else(|| pair("sys_vendor", "product_name")),
        board: pair("board_vendor", "board_name"),
        compatible: dt("compatible")
            .map(|b| compatible_list(&b))
            .unwrap_or_default(),
        serial: dt("serial-number")
            .and_then(|b| host_text(&b))
            .or_else(|| dmi("product_serial").filter(|s| !is_placeholder(s))),
    }
}

/// Where the machine-id is (machine-id(5)): systemd's, then D-Bus' older copy.
const MACHINE_ID: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];
/// DMI's identification strings (drivers/firmware/dmi-id.c; Documentation/ABI/testing/
/// sysfs-class-dmi... `/sys/class/dmi/id` links to /sys/devices/virtual/dmi/id).
const DMI: &str = "/sys/class/dmi/id";
/// What firmware writers leave in a DMI string they did not fill in (dmidecode's list of
/// "bad" strings in dmioem/dmidecode.c is longer; these are the ones seen on boards and VMs).
fn is_placeholder(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "to be filled by o.e.m."
            | "default string"
            | "system product name"
            | "not specified"
            | "none"
            | "0"
            | "o.e.m."
            | "system serial number"
            | "123456789"
    )
}

/// The first bytes of a small regular file (at most 4 KiB: a machine-id, a DMI string, a
/// device-tree property); `None` when it is absent, unreadable or not a regular file (a FIFO
/// planted in a `--root` tree would block a plain read).
fn small_file(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = crate::sysfs::open_read(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(4096).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// What uname(2) says of the machine (`uname -s -n -r -v -m`), as tools that record it
/// (rt-tests' JSON `sysinfo`, iperf3's `system_info`) take it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uname {
    /// `Linux`.
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    /// `#1 SMP PREEMPT_DYNAMIC ...`: the kernel's build, not /proc/version's whole line.
    pub version: String,
    /// `x86_64`, `aarch64`, `armv7l`.
    pub machine: String,
}

/// uname(2); `None` when it fails.
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain bytes; uname fills it (NUL-terminated fields) or fails.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname to write.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some(Uname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    })
}

const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// The devfreq class: one directory (a link to the device's) per scaled device.
const DEVFREQ: &str = "/sys/class/devfreq";

/// A devfreq `available_frequencies` line: frequencies in Hz separated by spaces
/// (drivers/devfreq/devfreq.c, available_frequencies_show); what is not a number is left
/// out.
pub fn parse_frequencies(text: &str) -> Vec<u64> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// `uname -a`'s first five fields as iperf3's get_system_info joins them (sysname, nodename,
/// release, version, machine: uname(2) of this host), `None` when uname fails.
pub fn uname_line() -> Option<String> {
    let u = uname()?;
    Some([u.sysname, u.nodename, u.release, u.version, u.machine].join(" "))
}

/// Read everything under `root`. Never fails: what is missing is `None`.
pub fn read_context(root: &SysRoot) -> SystemContext {
    let mut unreadable = Vec::new();
    let mut attr = |rel: &str| -> Option<String> {
        match read_attr(&root.path(rel)) {
            Ok(v) => v,
            Err(e) => {
                unreadable.push(e.to_string());
                None
            }
        }
    };

    let release = attr(OSRELEASE);
    let version = attr("/proc/version");
    let realtime = attr("/sys/kernel/realtime");
    // debugfs needs root; a plain user gets EACCES, which is a normal absence here.
    let dyn_mode = read_attr(&root.path("/sys/kernel/debug/sched/preempt"))
        .ok()
        .flatten();
    let preemption = preemption_model(realtime.as_deref(), dyn_mode.as_deref(), version.as_deref());
    let cmdline = attr("/proc/cmdline").map(|raw| parse_cmdline(&raw));
    let cpus_online = attr("/sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s));
    let smt_active = attr("/sys/devices/system/cpu/smt/active").and_then(|s| match s.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    });
    let load_average = attr("/proc/loadavg").and_then(|s| parse_loadavg(&s));

    let mut cpufreq = Vec::new();
    for &cpu in cpus_online.as_deref().unwrap_or(&[]) {
        let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
        if !root.path(&base).is_dir() {
            continue;
        }
        let khz = |v: Option<String>| v.and_then(|s| s.parse::<u64>().ok());
        cpufreq.push(CpuFreq {
            cpu,
            governor: attr(&format!("{base}/scaling_governor")),
            cur_khz: khz(attr(&format!("{base}/scaling_cur_freq"))),
            min_khz: khz(attr(&format!("{base}/scaling_min_freq"))),
            max_khz: khz(attr(&format!("{base}/scaling_max_freq"))),
        });
    }

    // /sys/class/devfreq/NAME (Documentation/ABI/testing/sysfs-class-devfreq), by name.
    let mut devfreq = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(root.path(DEVFREQ))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let base = format!("{DEVFREQ}/{name}");
        if !root.path(&base).is_dir() {
            continue;
        }
        let hz = |v: Option<String>| v.and_then(|s| s.parse::<u64>().ok());
        devfreq.push(DevFreq {
            governor: attr(&format!("{base}/governor")),
            cur_hz: hz(attr(&format!("{base}/cur_freq"))),
            min_hz: hz(attr(&format!("{base}/min_freq"))),
            max_hz: hz(attr(&format!("{base}/max_freq"))),
            available_hz: attr(&format!("{base}/available_frequencies"))
                .map(|s| parse_frequencies(&s))
                .unwrap_or_default(),
            name,
        });
    }

    let irqs = attr("/proc/interrupts").map(|text| {
        let mut lines = parse_interrupts(&text);
        for line in &mut lines {
            line.effective_affinity =
                attr(&format!("/proc/irq/{}/effective_affinity_list", line.irq))
                    .and_then(|s| parse_cpu_list(&s));
        }
        lines
    });

    SystemContext {
        kernel: Kernel {
            release,
            version,
            preemption,
        },
        cmdline,
        cpus_online,
        cpufreq,
        devfreq,
        smt_active,
        load_average,
        irqs,
        unreadable,
    }
}

/// Decide the preemption model. `/sys/kernel/realtime` exists only on PREEMPT_RT kernels
/// (the RT patch set, and mainline since 6.12); `/sys/kernel/debug/sched/preempt` lists the
/// dynamic modes with the active one in parentheses (`none voluntary (full) lazy`);
/// otherwise the build flags that `/proc/version` prints after `#1 SMP`.
pub fn preemption_model(
    realtime: Option<&str>,
    dynamic_modes: Option<&str>,
    version: Option<&str>,
) -> Preemption {
    if realtime == Some("1") {
        return Preemption::Rt;
    }
    let words: Vec<&str> = version
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    let has = |w: &str| words.contains(&w);
    // Older RT kernels print `PREEMPT RT` as two words.
    if has("PREEMPT_RT") || words.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        return Preemption::Rt;
    }
    if let Some(modes) = dynamic_modes {
        let active = modes
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')));
        return Preemption::Dynamic {
            mode: active.map(str::to_string),
        };
    }
    if version.is_none() {
        return Preemption::Unknown;
    }
    if has("PREEMPT_DYNAMIC") {
        Preemption::Dynamic { mode: None }
    } else if has("PREEMPT_LAZY") {
        Preemption::Lazy
    } else if has("PREEMPT") {
        Preemption::Full
    } else {
        Preemption::NoneOrVoluntary
    }
}

/// Parse `/proc/cmdline`. Only the kernel's own part counts: words after ` -- ` go to init.
pub fn parse_cmdline(raw: &str) -> Cmdline {
    let raw = raw.trim().to_string();
    let kernel_part = raw.split(" -- ").next().unwrap_or("");
    let mut out = Cmdline {
        raw: raw.clone(),
        isolcpus: None,
        isolcpus_flags: Vec::new(),
        nohz_full: None,
        rcu_nocbs: None,
    };
    for word in kernel_part.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        match key {
            "isolcpus" => {
                // `isolcpus=nohz,domain,2-3`: leading non-numeric items are flags.
                let (flags, list): (Vec<&str>, Vec<&str>) = value
                    .split(',')
                    .partition(|p| !p.starts_with(|c: char| c.is_ascii_digit()));
                out.isolcpus_flags = flags.into_iter().map(str::to_string).collect();
                out.isolcpus = parse_cpu_list(&list.join(","));
            }
            "nohz_full" => out.nohz_full = parse_cpu_list(value),
            "rcu_nocbs" => out.rcu_nocbs = parse_cpu_list(value),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> SysRoot {
        SysRoot::new(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/system")
                .join(name),
        )
    }

    #[test]
    fn preemption_words() {
        let vm = "Linux version 6.18.44-fc-v657 (builder@sandboxing) (gcc (GCC) 15.3.0) #1 SMP PREEMPT_DYNAMIC @0";
        assert_eq!(
            preemption_model(None, None, Some(vm)),
            Preemption::Dynamic { mode: None }
        );
        assert_eq!(
            preemption_model(None, Some("none voluntary (full) lazy"), Some(vm)),
            Preemption::Dynamic {
                mode: Some("full".into())
            }
        );
        assert_eq!(preemption_model(Some("1"), None, Some(vm)), Preemption::Rt);
        let rt = "Linux version 5.10.160-rt89 (gcc 10.3) #1 SMP PREEMPT RT Fri Jun 7 2024";
        assert_eq!(preemption_model(None, None, Some(rt)), Preemption::Rt);
        let server = "Linux version 5.15.0-91-generic (buildd@lcy02) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023";
        assert_eq!(
            preemption_model(None, None, Some(server)),
            Preemption::NoneOrVoluntary
        );
        let desk = "Linux version 4.19.232 (gcc 6.3.1) #1 SMP PREEMPT Wed Aug 9 2023";
        assert_eq!(preemption_model(None, None, Some(desk)), Preemption::Full);
        assert_eq!(preemption_model(None, None, None), Preemption::Unknown);
    }

    #[test]
    fn cmdline_isolation() {
        let c = parse_cmdline(
            "console=ttyS2 isolcpus=nohz,domain,2-3 nohz_full=2-3 rcu_nocbs=2,3 -- init isolcpus=0",
        );
        assert_eq!(c.isolcpus, Some(vec![2, 3]));
        assert_eq!(c.isolcpus_flags, vec!["nohz", "domain"]);
        assert_eq!(c.nohz_full, Some(vec![2, 3]));
        assert_eq!(c.rcu_nocbs, Some(vec![2, 3]));
        let none = parse_cmdline("quiet -- --isolcpus=1");
        assert_eq!(none.isolcpus, None);
    }

    /// The devfreq devices of an RK3588 (tests/fixtures/system/rk3588-devfreq, made from the
    /// kernel's sysfs-class-devfreq ABI): by name, in Hz, the DDR controller told apart.
    #[test]
    fn devfreq_devices_of_an_rk3588() {
        let ctx = read_context(&fixture("rk3588-devfreq"));
        let names: Vec<&str> = ctx.devfreq.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dmc", "fb000000.gpu", "fdab0000.npu"]);
        let dmc = &ctx.devfreq[0];
        assert_eq!(dmc.governor.as_deref(), Some("dmc_ondemand"));
        assert_eq!(
            (dmc.min_hz, dmc.max_hz, dmc.cur_hz),
            (Some(528_000_000), Some(2_112_000_000), Some(1_068_000_000))
        );
        assert_eq!(
            dmc.available_hz,
            [528_000_000, 1_068_000_000, 1_560_000_000, 2_112_000_000]
        );
        assert!(dmc.is_memory() && dmc.scales());
        let gpu = &ctx.devfreq[1];
        assert!(!gpu.is_memory() && gpu.scales());
        assert!(!ctx.devfreq[2].scales(), "the NPU is held at `performance`");
        // Only the memory controller counts as memory that scales.
        assert_eq!(ctx.scaling_memory(), ["dmc (dmc_ondemand)"]);
        // Every CPU is on `performance`: nothing of cpufreq scales.
        assert!(ctx.scaling_cpus(None).is_empty());
        // Machines without devfreq (this VM) list none.
        assert!(read_context(&fixture("firecracker-vm-6.18"))
            .devfreq
            .is_empty());
        assert_eq!(
            parse_frequencies("300000000 400000000 x\n"),
            [300_000_000, 400_000_000]
        );
    }

    #[test]
    fn this_vm_captured() {
        let ctx = read_context(&fixture("firecracker-vm-6.18"));
        assert_eq!(ctx.kernel.release.as_deref(), Some("6.18.44-fc-v657"));
        assert_eq!(ctx.kernel.preemption, Preemption::Dynamic { mode: None });
        assert!(!ctx.kernel.preemption.is_realtime());
        assert_eq!(ctx.cpus_online, Some(vec![0, 1]));
        assert!(ctx.cpufreq.is_empty(), "this VM has no cpufreq");
        assert_eq!(ctx.smt_active, Some(false));
        let cmd = ctx.cmdline.as_ref().unwrap();
        assert_eq!(cmd.isolcpus, None);
        assert_eq!(cmd.nohz_full, None);
        let irqs = ctx.irqs.as_ref().unwrap();
        // 24..=43 without 27: 19 device lines, none of LOC/RES/... .
        assert_eq!(irqs.len(), 19);
        let disk = irqs.iter().find(|l| l.irq == 36).unwrap();
        assert_eq!(disk.name, "virtio1-req.0");
        assert_eq!(disk.chip, "PCI-MSIX-0000:00:02.0 1-edge");
        assert_eq!(disk.effective_affinity, Some(vec![1]));
        assert!(ctx.irqs_on_cpu(1).iter().any(|l| l.irq == 36));
        assert!(!ctx.irqs_on_cpu(0).iter().any(|l| l.irq == 36));
        assert!(ctx.unreadable.is_empty());
    }

    #[test]
    fn rt_board_handmade() {
        let ctx = read_context(&fixture("rt-board-handmade"));
        assert_eq!(ctx.kernel.preemption, Preemption::Rt);
        assert_eq!(ctx.cpus_online, Some(vec![0, 1, 2, 3]));
        assert_eq!(ctx.cpufreq.len(), 4);
        let c0 = &ctx.cpufreq[0];
        assert_eq!(c0.governor.as_deref(), Some("schedutil"));
        assert_eq!((c0.min_khz, c0.max_khz), (Some(408_000), Some(1_992_000)));
        assert!(c0.scales());
        assert!(
            !ctx.cpufreq[2].scales(),
            "performance governor holds the clock"
        );
        assert_eq!(ctx.smt_active, None, "no smt directory: absent, not false");
        let cmd = ctx.cmdline.as_ref().unwrap();
        assert_eq!(cmd.isolcpus, Some(vec![2, 3]));
        // IRQ 45 has no effective_affinity file: counts decide.
        assert_eq!(
            ctx.irqs_on_cpu(3).iter().map(|l| l.irq).collect::<Vec<_>>(),
            vec![45]
        );
        assert_eq!(ctx.load_average.unwrap().one, 1.70);
    }

    #[test]
    fn empty_root_is_all_absent() {
        let ctx = read_context(&SysRoot::new("/nonexistent-headroom-root"));
        assert_eq!(ctx.kernel.release, None);
        assert_eq!(ctx.kernel.preemption, Preemption::Unknown);
        assert_eq!(ctx.cpus_online, None);
        assert!(ctx.cpufreq.is_empty());
        assert_eq!(ctx.irqs, None);
        assert!(ctx.unreadable.is_empty());
    }
}
