//! PMU discovery: what `/sys/bus/event_source/devices/<pmu>/` says about each performance
//! monitoring unit, and how an event's terms become the `config` words of perf_event_open.
//!
//! The sysfs ABI is Documentation/ABI/testing/sysfs-bus-event_source-devices-format
//! (`format/<term>`: `config:0-7,32-35`, `config1:5`, ...), -events (`events/<name>`: terms
//! like `event=0x21,umask=0x3`, a bare term meaning 1, `term=?` for a value the user must
//! give; `<name>.scale` and `<name>.unit`), and sysfs-bus-event_source-devices (`type`,
//! `cpumask`). perf's tools/perf/util/pmu.c reads the same files.
//!
//! Discovery lives here, not in probe, because the PMU list exists to encode events: the
//! format fields read from sysfs and the perf_event_open attribute built from them are one
//! piece of knowledge, and counters may not depend on probe (the arrows of docs/ARCHITECTURE.md).

use crate::{Error, ReadUnder, SysRoot};
use model::units::parse_cpu_list;
use std::collections::BTreeMap;

/// Where the kernel lists the PMUs.
pub const EVENT_SOURCE: &str = "/sys/bus/event_source/devices";

/// `perf_type_id` of include/uapi/linux/perf_event.h for the fixed PMUs.
pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;

/// One `format/<term>` file: which bits of which config word a term fills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    /// 0 = `config`, 1 = `config1`, 2 = `config2`, 3 = `config3`.
    pub word: usize,
    /// Bit ranges, low to high as written (inclusive); a value fills them in this order,
    /// least significant bits first (perf's pmu_format_value()).
    pub ranges: Vec<(u32, u32)>,
}

impl Format {
    /// Number of value bits the ranges hold.
    pub fn bits(&self) -> u32 {
        self.ranges.iter().map(|&(lo, hi)| hi - lo + 1).sum()
    }

    /// The largest value that fits.
    pub fn max_value(&self) -> u64 {
        match self.bits() {
            b if b >= 64 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }

    /// Put `value` into `config`; `None` when it is wider than the field.
    pub fn encode(&self, value: u64, config: &mut [u64; 4]) -> Option<()> {
        if value > self.max_value() {
            return None;
        }
        let mut v = value;
        for &(lo, hi) in &self.ranges {
            let width = hi - lo + 1;
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            config[self.word] &= !(mask << lo);
            config[self.word] |= (v & mask) << lo;
            v = if width >= 64 { 0 } else { v >> width };
        }
        Some(())
    }
}

/// Parse a `format/<term>` file: `config:0-7,32-35`, `config1:5`, `config2:0-63`.
pub fn parse_format(text: &str) -> Option<Format> {
    let (word, bits) = text.trim().split_once(':')?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        "config3" => 3,
        _ => return None,
    };
    let mut ranges = Vec::new();
    for part in bits.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let b: u32 = part.trim().parse().ok()?;
                (b, b)
            }
        };
        if lo > hi || hi > 63 {
            return None;
        }
        ranges.push((lo, hi));
    }
    (!ranges.is_empty()).then_some(Format { word, ranges })
}

/// A term's value in an event alias.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TermValue {
    Number(u64),
    /// `term=?`: the user must give it (e.g. `lane=?` of the DWC lane events).
    Required,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub name: String,
    pub value: TermValue,
}

/// A number as perf writes them in sysfs and on the command line: `0x1f` or `31`.
pub fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parse an `events/<name>` file: `eventid=0x21,type=0x0`, `event=0xff,umask=0x20`,
/// `lane=?`, `edge` (a bare term means 1).
pub fn parse_event_terms(text: &str) -> Option<Vec<Term>> {
    text.trim()
        .split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let t = t.trim();
            Some(match t.split_once('=') {
                Some((k, "?")) => Term {
                    name: k.trim().to_string(),
                    value: TermValue::Required,
                },
                Some((k, v)) => Term {
                    name: k.trim().to_string(),
                    value: TermValue::Number(parse_number(v)?),
                },
                None => Term {
                    name: t.to_string(),
                    value: TermValue::Number(1),
                },
            })
        })
        .collect()
}

/// Parse a `<event>.scale` file. The kernel writes it with a `.` whatever the locale
/// (`3.814697265625e-6`); Rust's float parser never reads a locale, so `6,1e-5` is refused
/// rather than misread.
pub fn parse_scale(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// One `events/<name>` alias with its scale and unit.
#[derive(Clone, Debug, PartialEq)]
pub struct EventAlias {
    pub terms: Vec<Term>,
    /// Multiply the count by this to get `unit` (e.g. 3.814697265625e-6 for MiB).
    pub scale: Option<f64>,
    pub unit: Option<String>,
}

/// Everything sysfs says about one PMU.
#[derive(Clone, Debug, PartialEq)]
pub struct Pmu {
    pub name: String,
    /// The `type` to put in perf_event_attr.
    pub type_id: u32,
    /// `cpumask` (uncore PMUs: the CPU that counts for the whole device) or `cpus` (core
    /// PMUs of a hybrid system); `None` for a PMU that counts on any CPU.
    pub cpumask: Option<Vec<u32>>,
    pub formats: BTreeMap<String, Format>,
    pub events: BTreeMap<String, EventAlias>,
    /// Other single-value attributes that say what the PMU counts (`bus`, `bdf_min`,
    /// `bdf_max`, `identifier`).
    pub attributes: BTreeMap<String, String>,
}

/// Attributes beside `type` and `cpumask` kept for joining a PMU to its device.
const KEPT_ATTRIBUTES: [&str; 4] = ["bus", "bdf_min", "bdf_max", "identifier"];

fn read_opt(root: &SysRoot, rel: &str) -> Result<Option<String>, Error> {
    match root.read(rel) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_unsupported() => Ok(None),
        Err(e) => Err(e),
    }
}

fn list_dir(root: &SysRoot, rel: &str) -> Result<Vec<String>, Error> {
    let path = root.path(rel);
    let rd = match std::fs::read_dir(&path) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::from_io(path, e)),
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// Read one PMU. `Error::Unsupported` when it does not exist (not loaded, or gone).
pub fn read_pmu(root: &SysRoot, name: &str) -> Result<Pmu, Error> {
    let dir = format!("{EVENT_SOURCE}/{name}");
    let type_text = root.read(&format!("{dir}/type"))?;
    let type_id = type_text.trim().parse().map_err(|_| Error::Format {
        path: root.path(format!("{dir}/type")),
        what: format!("expected a number, found `{}`", type_text.trim()),
    })?;
    let mut cpumask = None;
    for f in ["cpumask", "cpus"] {
        if let Some(t) = read_opt(root, &format!("{dir}/{f}"))? {
            cpumask = parse_cpu_list(&t).filter(|c| !c.is_empty());
            break;
        }
    }
    let mut formats = BTreeMap::new();
    for f in list_dir(root, &format!("{dir}/format"))? {
        let rel = format!("{dir}/format/{f}");
        let text = root.read(&rel)?;
        let fmt = parse_format(&text).ok_or_else(|| Error::Format {
            path: root.path(&rel),
            what: format!(
                "expected `config[N]:LO-HI[,LO-HI]`, found `{}`",
                text.trim()
            ),
        })?;
        formats.insert(f, fmt);
    }
    let mut events = BTreeMap::new();
    let files = list_dir(root, &format!("{dir}/events"))?;
    for f in files
        .iter()
        .filter(|f| !f.ends_with(".scale") && !f.ends_with(".unit") && !f.ends_with(".per-pkg"))
        .filter(|f| !f.ends_with(".snapshot"))
    {
        let rel = format!("{dir}/events/{f}");
        let text = root.read(&rel)?;
        let terms = parse_event_terms(&text).ok_or_else(|| Error::Format {
            path: root.path(&rel),
            what: format!("expected `term=value,...`, found `{}`", text.trim()),
        })?;
        let scale = match read_opt(root, &format!("{rel}.scale"))? {
            Some(t) => Some(parse_scale(&t).ok_or_else(|| Error::Format {
                path: root.path(format!("{rel}.scale")),
                what: format!(
                    "expected a positive number like 6.1e-5, found `{}`",
                    t.trim()
                ),
            })?),
            None => None,
        };
        let unit = read_opt(root, &format!("{rel}.unit"))?
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        events.insert(f.clone(), EventAlias { terms, scale, unit });
    }
    let mut attributes = BTreeMap::new();
    for a in KEPT_ATTRIBUTES {
        if let Some(v) = read_opt(root, &format!("{dir}/{a}"))? {
            attributes.insert(a.to_string(), v.trim().to_string());
        }
    }
    Ok(Pmu {
        name: name.to_string(),
        type_id,
        cpumask,
        formats,
        events,
        attributes,
    })
}

/// Every PMU under `root`, by name. `Error::Unsupported` when the kernel has no perf
/// events at all (CONFIG_PERF_EVENTS off) or the fixture has no event_source directory.
pub fn discover(root: &SysRoot) -> Result<Vec<Pmu>, Error> {
    let base = root.path(EVENT_SOURCE);
    if !base.is_dir() {
        return Err(Error::Unsupported(base));
    }
    list_dir(root, EVENT_SOURCE)?
        .iter()
        .map(|n| read_pmu(root, n))
        .collect()
}

/// The tracefs `events` directories, newest mount point first (tracefs since 4.1 at
/// /sys/kernel/tracing, before under debugfs).
pub const TRACEFS_EVENTS: [&str; 2] = [
    "/sys/kernel/tracing/events",
    "/sys/kernel/debug/tracing/events",
];

/// The id of tracepoint `system:name` (its `config` for PERF_TYPE_TRACEPOINT).
pub fn tracepoint_id(root: &SysRoot, system: &str, name: &str) -> Result<Option<u64>, Error> {
    for base in TRACEFS_EVENTS {
        if let Some(t) = read_opt(root, &format!("{base}/{system}/{name}/id"))? {
            return Ok(parse_number(&t));
        }
    }
    Ok(None)
}

/// Every tracepoint tracefs lists, as perf names them (`block:block_rq_issue`), sorted: the
/// directories `events/SYSTEM/NAME/` of the first tracefs mount found. `Ok(vec![])` without
/// tracefs; an error when it cannot be read (root's alone on most distributions).
pub fn tracepoints(root: &SysRoot) -> Result<Vec<String>, Error> {
    for base in TRACEFS_EVENTS {
        let path = root.path(base);
        let systems = match std::fs::read_dir(&path) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::from_io(path, e)),
        };
        let mut out = Vec::new();
        for system in systems.filter_map(Result::ok) {
            if !system.file_type().is_ok_and(|t| t.is_dir()) {
                continue; // enable, header_page, ...
            }
            let sys = system.file_name().to_string_lossy().into_owned();
            let names =
                std::fs::read_dir(system.path()).map_err(|e| Error::from_io(system.path(), e))?;
            for n in names.filter_map(Result::ok) {
                // Only an event with an `id` can be opened (its config): most of ftrace's own
                // entries (bprint, hwlat, ...) have none, and perf list leaves them out too.
                if n.file_type().is_ok_and(|t| t.is_dir()) && n.path().join("id").exists() {
                    out.push(format!("{sys}:{}", n.file_name().to_string_lossy()));
                }
            }
        }
        out.sort();
        return Ok(out);
    }
    Ok(Vec::new())
}

/// The CPU list of `/sys/devices/system/cpu/online`.
pub fn online_cpus(root: &SysRoot) -> Result<Vec<u32>, Error> {
    let rel = "/sys/devices/system/cpu/online";
    let t = root.read(rel)?;
    parse_cpu_list(&t).ok_or_else(|| Error::Format {
        path: root.path(rel),
        what: format!("expected a CPU list like 0-3, found `{}`", t.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_range_format_spreads_the_value() {
        let f = parse_format("config:0-7,32-35\n").unwrap();
        assert_eq!(f.bits(), 12);
        assert_eq!(f.max_value(), 0xfff);
        let mut c = [0u64; 4];
        f.encode(0xabc, &mut c).unwrap();
        assert_eq!(c[0], 0xbc | (0xa << 32));
        assert_eq!(f.encode(0x1000, &mut c), None, "13 bits do not fit in 12");
        let one = parse_format("config1:5").unwrap();
        assert_eq!((one.word, one.max_value()), (1, 1));
        let full = parse_format("config2:0-63").unwrap();
        let mut c = [0u64; 4];
        full.encode(u64::MAX, &mut c).unwrap();
        assert_eq!(c[2], u64::MAX);
        assert_eq!(parse_format("config4:0-3"), None);
        assert_eq!(parse_format("config:7-3"), None);
    }

    #[test]
    fn event_terms() {
        assert_eq!(
            parse_event_terms("eventid=0x21,type=0x0,lane=?\n").unwrap(),
            vec![
                Term {
                    name: "eventid".into(),
                    value: TermValue::Number(0x21)
                },
                Term {
                    name: "type".into(),
                    value: TermValue::Number(0)
                },
                Term {
                    name: "lane".into(),
                    value: TermValue::Required
                },
            ]
        );
        assert_eq!(
            parse_event_terms("event=0x3c,edge").unwrap()[1].value,
            TermValue::Number(1)
        );
        assert_eq!(parse_event_terms("event=zz"), None);
    }

    #[test]
    fn scale_is_locale_free() {
        assert_eq!(parse_scale("3.814697265625e-6\n"), Some(3.814697265625e-6));
        assert_eq!(parse_scale("6,1e-5"), None);
        assert_eq!(parse_scale("0"), None);
    }
}
