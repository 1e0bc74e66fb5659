//! perf's event syntax (`perf stat -e`), parsed and resolved against the PMUs of sysfs.
//!
//! Accepted, as tools/perf/Documentation/perf-list.txt describes them:
//! - `PMU/EVENT,term=V,term/` and `PMU/term=V,.../` (a term of `format/`, an alias of
//!   `events/`, or one of `config`, `config1`, `config2`, `config3`, `name`);
//! - `SYSTEM:TRACEPOINT` (tracefs `events/SYSTEM/TRACEPOINT/id`);
//! - perf's built-in names of the software and generic hardware events (`task-clock`, `cs`,
//!   `cycles`, ...), and an alias of the `cpu` PMU (`cpu-cycles`) as perf looks it up;
//! - groups `{a,b}` and the modifiers `:u` (user only), `:k` (kernel only), `:h`
//!   (hypervisor only), after an event or a group.
//!
//! Errors say what perf says (`Cannot find PMU `foo'. Missing kernel support?`, `unknown
//! term 'bar' for pmu 'software'`, `value too big for format (lane), maximum is 255`), with
//! the text that was typed.

use crate::pmu::{
    self, Pmu, TermValue, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT,
};
use crate::SysRoot;

/// An event ready for perf_event_open.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The name to print: what was typed (perf prints `pcie_bdf_200/Rx_PCIe_TLP_Data_Payload/`
    /// as typed), or `name=`.
    pub name: String,
    /// The PMU's name (`software`, `tracepoint`, `dwc_rootport_3018`, ...).
    pub pmu: String,
    pub type_id: u32,
    /// `config`, `config1`, `config2`, `config3`.
    pub config: [u64; 4],
    /// Multiply the count by this (sysfs `.scale`, 1e-6 for perf's msec of the clocks,
    /// 16 for the 16-byte units of the vendor PCIe PMU).
    pub scale: f64,
    /// The unit after scaling (`msec`, `MiB`, `B`), `None` for a plain count.
    pub unit: Option<String>,
    /// Only these CPUs can count it (the PMU's `cpumask`: uncore PMUs count the whole
    /// device from one CPU, system-wide only).
    pub cpumask: Option<Vec<u32>>,
    pub exclude: Exclude,
    /// Index of its group among the events (`None` when not grouped); the first event of a
    /// group is its leader.
    pub group: Option<usize>,
    /// Something the user should know about this event (e.g. a unit conversion).
    pub note: Option<String>,
}

impl Event {
    /// perf's first name of a software or generic hardware event (`cs` is
    /// `context-switches`, `cpu-cycles` is `cycles`), by its type and id, whatever it was
    /// typed as: what perf derives its metrics from (stat-shadow.c matches the type and id).
    pub fn generic_name(&self) -> Option<&'static str> {
        let (hardware, id) = match self.type_id {
            PERF_TYPE_SOFTWARE if self.pmu == "software" => (false, self.config[0]),
            PERF_TYPE_HARDWARE => (true, self.config[0]),
            // A generic name the core PMU's own alias resolved (`cycles` as `cpu/cycles/`),
            // which perf 6.1 counts as the generic event.
            _ if self.pmu == "cpu" => {
                let typed = self.name.split(':').next().unwrap_or("");
                (true, HARDWARE.iter().find(|(n, _)| *n == typed)?.1)
            }
            _ => return None,
        };
        match (hardware, id) {
            // perf prints these two by their short names (cpu-cycles, branch-instructions).
            (true, 0) => Some("cycles"),
            (true, 4) => Some("branches"),
            // Otherwise the tables list perf's long name before its alias.
            (true, id) => HARDWARE.iter().find(|(_, i)| *i == id).map(|(n, _)| *n),
            (false, id) => SOFTWARE.iter().find(|(_, i)| *i == id).map(|(n, _)| *n),
        }
    }
}

/// perf_event_attr's exclude bits, every one set deliberately: all zero counts everything,
/// which is also the only setting uncore PMUs accept (PERF_PMU_CAP_NO_EXCLUDE: any set bit,
/// exclude_guest included, is EINVAL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exclude {
    pub user: bool,
    pub kernel: bool,
    pub hv: bool,
    pub idle: bool,
    pub host: bool,
    pub guest: bool,
}

impl Exclude {
    pub fn any(&self) -> bool {
        self.user || self.kernel || self.hv || self.idle || self.host || self.guest
    }
}

/// Why an `-e` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The text is not an event of this machine (a usage error).
    #[error("event syntax error: '{text}': {reason}")]
    Syntax { text: String, reason: String },
    /// The event exists but this user may not read what resolves it (tracefs is root's
    /// alone on most distributions): not the user's typing, so not a usage error.
    #[error(
        "{text}: no permission to read {}: {error}; run as root, or make tracefs readable \
         (`mount -o remount,mode=755 {}`, as perf advises)",
        .path.display(),
        .mount.display()
    )]
    Permission {
        text: String,
        path: std::path::PathBuf,
        /// The tracefs mount point the file is under.
        mount: std::path::PathBuf,
        error: String,
    },
    /// More events than headroom counts in one run (see [`MAX_EVENTS`]).
    #[error(
        "more than {MAX_EVENTS} events given: headroom counts at most {MAX_EVENTS} in one run, \
         since a PMU has a few counters (4 to 31 on today's CPUs) and more events only take \
         turns on them, each count extrapolated from a sliver of the run; give fewer (a repeated \
         event counts the same thing again)"
    )]
    TooMany,
}

impl EventError {
    /// Whether the user typed something wrong (exit 2), rather than lacking a permission.
    pub fn is_usage(&self) -> bool {
        !matches!(self, EventError::Permission { .. })
    }
}

/// The most events one run opens. perf sets no bound, and 10,000 copies of `cs` (or 100,000
/// commas' worth) open as many descriptors per CPU to count one thing; a PMU has 4 to 31
/// counters (x86 cores 4-8 general-purpose and 3 fixed, Arm PMUv3 up to 31), so 256 events
/// already share each counter between dozens of them.
pub const MAX_EVENTS: usize = 256;

fn err(text: &str, reason: impl Into<String>) -> EventError {
    EventError::Syntax {
        text: shown(text),
        reason: reason.into(),
    }
}

/// The typed text as an error quotes it: whole up to 120 characters, else its start and its
/// length (a 100,000-character list is not echoed back).
fn shown(text: &str) -> String {
    let n = text.chars().count();
    if n <= 120 {
        return text.to_string();
    }
    let start: String = text.chars().take(60).collect();
    format!("{start}... ({n} characters)")
}

/// perf's built-in software event names (tools/perf/util/parse-events.c event_symbols_sw,
/// ids of enum perf_sw_ids in include/uapi/linux/perf_event.h).
const SOFTWARE: [(&str, u64); 14] = [
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("cgroup-switches", 11),
];

/// perf's generic hardware event names (event_symbols_hw; enum perf_hw_id).
const HARDWARE: [(&str, u64); 14] = [
    ("cpu-cycles", 0),
    ("cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// perf's built-in names as `perf list` prints them, aliases joined (`context-switches OR
/// cs`): the software events, then the generic hardware ones.
pub fn builtin_names() -> (Vec<String>, Vec<String>) {
    fn joined(table: &[(&str, u64)]) -> Vec<String> {
        let mut out: Vec<(u64, String)> = Vec::new();
        for &(name, id) in table {
            match out.iter_mut().find(|(i, _)| *i == id) {
                Some((_, names)) => names.push_str(&format!(" OR {name}")),
                None => out.push((id, name.to_string())),
            }
        }
        let mut names: Vec<String> = out.into_iter().map(|(_, n)| n).collect();
        names.sort();
        names
    }
    (joined(&SOFTWARE), joined(&HARDWARE))
}

/// Terms every PMU accepts besides its own `format/` (perf's config terms).
const CONFIG_TERMS: [&str; 5] = ["config", "config1", "config2", "config3", "name"];

/// Split an `-e` value into events with their group index: commas separate events except
/// inside `PMU/.../` and `{...}` (which is a group). An empty event (`cs,,cs`, a leading or
/// trailing comma, `{}`) is refused as perf refuses it; more than [`MAX_EVENTS`] events stop
/// the split (the rest is not even looked at).
pub fn split(
    arg: &str,
    next_group: &mut usize,
) -> Result<Vec<(String, Option<usize>)>, EventError> {
    let mut out: Vec<(String, Option<usize>)> = Vec::new();
    let mut cur = String::new();
    let mut in_slashes = false;
    let mut group: Option<(usize, usize)> = None; // (group index, first event's position)
                                                  // Whether an event or a group ended since the last comma (or the start).
    let mut item = false;
    let mut chars = arg.chars().peekable();
    let flush = |cur: &mut String,
                 out: &mut Vec<(String, Option<usize>)>,
                 g: Option<usize>|
     -> Result<bool, EventError> {
        let t = cur.trim().to_string();
        cur.clear();
        if t.is_empty() {
            return Ok(false);
        }
        if out.len() >= MAX_EVENTS {
            return Err(EventError::TooMany);
        }
        out.push((t, g));
        Ok(true)
    };
    let empty = || {
        err(
            arg,
            "parser error: an empty event (two commas in a row, or a comma at an end)",
        )
    };
    while let Some(c) = chars.next() {
        match c {
            '/' => {
                in_slashes = !in_slashes;
                cur.push(c);
            }
            '{' if !in_slashes => {
                if group.is_some() {
                    return Err(err(arg, "a group cannot contain a group"));
                }
                flush(&mut cur, &mut out, None)?;
                group = Some((*next_group, out.len()));
                *next_group += 1;
                item = false;
            }
            '}' if !in_slashes => {
                let Some((g, first)) = group.take() else {
                    return Err(err(arg, "`}` without `{`"));
                };
                if !flush(&mut cur, &mut out, Some(g))? {
                    return Err(if out.len() == first {
                        err(arg, "parser error: `{}` holds no event")
                    } else {
                        empty()
                    });
                }
                item = true;
                // A modifier after the group applies to each of its events.
                let mut modifier = String::new();
                if chars.peek() == Some(&':') {
                    while let Some(&m) = chars.peek() {
                        if m == ',' {
                            break;
                        }
                        modifier.push(m);
                        chars.next();
                    }
                }
                for e in &mut out[first..] {
                    e.0.push_str(&modifier);
                }
            }
            ',' if !in_slashes => {
                let flushed = flush(&mut cur, &mut out, group.map(|g| g.0))?;
                if !flushed && !item {
                    return Err(empty());
                }
                item = false;
            }
            _ => cur.push(c),
        }
    }
    if in_slashes {
        return Err(err(arg, "unterminated PMU/.../: the event ends with `/`"));
    }
    if group.is_some() {
        return Err(err(arg, "`{` without `}`"));
    }
    let last = flush(&mut cur, &mut out, None)?;
    if out.is_empty() {
        return Err(err(arg, "no event given"));
    }
    if !last && !item {
        return Err(empty());
    }
    Ok(out)
}

/// Apply modifiers (`u`, `k`, `h`; several may be combined, as in perf: `uk` = both).
fn modifiers(text: &str, m: &str) -> Result<Exclude, EventError> {
    if m.is_empty() {
        return Ok(Exclude::default());
    }
    let (mut u, mut k, mut h) = (false, false, false);
    for c in m.chars() {
        match c {
            'u' => u = true,
            'k' => k = true,
            'h' => h = true,
            other => {
                return Err(err(
                    text,
                    format!("unknown modifier '{other}' (headroom knows u, k and h)"),
                ))
            }
        }
    }
    Ok(Exclude {
        user: !u,
        kernel: !k,
        hv: !h,
        ..Exclude::default()
    })
}

/// The PMUs of a root, read once and looked up by name.
pub struct Pmus {
    pub root: SysRoot,
    pub list: Vec<Pmu>,
}

impl Pmus {
    pub fn read(root: &SysRoot) -> Result<Pmus, crate::Error> {
        Ok(Pmus {
            root: root.clone(),
            list: pmu::discover(root)?,
        })
    }

    pub fn get(&self, name: &str) -> Option<&Pmu> {
        self.list.iter().find(|p| p.name == name)
    }

    fn type_of(&self, name: &str, fallback: u32) -> u32 {
        self.get(name).map_or(fallback, |p| p.type_id)
    }
}

/// Resolve one event as typed (no group braces) against the PMUs.
pub fn resolve(text: &str, group: Option<usize>, pmus: &Pmus) -> Result<Event, EventError> {
    if let Some(open) = text.find('/') {
        return resolve_pmu_event(text, open, group, pmus);
    }
    let named = |n: &str| SOFTWARE.iter().chain(HARDWARE.iter()).any(|(s, _)| *s == n);
    // `cs:u` is a modified name; `block:block_rq_issue[:u]` a tracepoint.
    let (body, m): (String, &str) = match text.split_once(':') {
        Some((a, b)) if named(a) => (a.to_string(), b),
        Some((a, b)) => match b.split_once(':') {
            Some((tp, m)) => (format!("{a}:{tp}"), m),
            None => (text.to_string(), ""),
        },
        None => (text.to_string(), ""),
    };
    let body = body.as_str();
    let exclude = modifiers(text, m)?;
    let base = Event {
        name: text.to_string(),
        pmu: String::new(),
        type_id: 0,
        config: [0; 4],
        scale: 1.0,
        unit: None,
        cpumask: None,
        exclude,
        group,
        note: None,
    };
    if let Some(&(_, id)) = SOFTWARE.iter().find(|(n, _)| *n == body) {
        let clock = id <= 1;
        return Ok(Event {
            pmu: "software".into(),
            type_id: pmus.type_of("software", PERF_TYPE_SOFTWARE),
            config: [id, 0, 0, 0],
            // The clocks count nanoseconds; perf prints them in msec.
            scale: if clock { 1e-6 } else { 1.0 },
            unit: clock.then(|| "msec".to_string()),
            ..base
        });
    }
    // A core PMU's own alias wins over the generic id (perf reads `cpu/events/` first).
    if let Some(cpu) = pmus.get("cpu").filter(|p| p.events.contains_key(body)) {
        let typed = format!("cpu/{body}/");
        let mut e = resolve_pmu_event(&typed, 3, group, pmus)?;
        e.name = text.to_string();
        e.exclude = exclude;
        e.type_id = cpu.type_id;
        return Ok(e);
    }
    if let Some(&(_, id)) = HARDWARE.iter().find(|(n, _)| *n == body) {
        return Ok(Event {
            pmu: "cpu".into(),
            type_id: PERF_TYPE_HARDWARE,
            config: [id, 0, 0, 0],
            ..base
        });
    }
    if let Some((system, tp)) = body.split_once(':') {
        if system.is_empty() || tp.is_empty() {
            return Err(err(
                text,
                "a tracepoint is SYSTEM:NAME, e.g. block:block_rq_issue",
            ));
        }
        let id = pmu::tracepoint_id(&pmus.root, system, tp)
            .map_err(|e| match e {
                crate::Error::Read { path, source }
                    if source.kind() == std::io::ErrorKind::PermissionDenied =>
                {
                    // The tracefs mount: the directory that holds `events/`.
                    let mount = path
                        .ancestors()
                        .find(|a| a.file_name().is_some_and(|n| n == "events"))
                        .and_then(|events| events.parent())
                        .unwrap_or(&path)
                        .to_path_buf();
                    EventError::Permission {
                        text: shown(text),
                        path,
                        mount,
                        error: source.to_string(),
                    }
                }
                other => err(text, other.to_string()),
            })?
            .ok_or_else(|| {
                err(
                    text,
                    "unknown tracepoint (tracefs has no events/SYSTEM/NAME/id: a wrong name, \
                     or tracefs not mounted at /sys/kernel/tracing)",
                )
            })?;
        return Ok(Event {
            pmu: "tracepoint".into(),
            type_id: pmus.type_of("tracepoint", PERF_TYPE_TRACEPOINT),
            config: [id, 0, 0, 0],
            ..base
        });
    }
    Err(err(
        text,
        "parser error: not a known event name, PMU/EVENT/ or SYSTEM:TRACEPOINT \
         (`headroom count --list` lists them)",
    ))
}

fn resolve_pmu_event(
    text: &str,
    open: usize,
    group: Option<usize>,
    pmus: &Pmus,
) -> Result<Event, EventError> {
    let name = &text[..open];
    let rest = &text[open + 1..];
    let Some(close) = rest.rfind('/') else {
        return Err(err(text, "unterminated PMU/.../: the event ends with `/`"));
    };
    let body = &rest[..close];
    let m = rest[close + 1..].trim_start_matches(':');
    let exclude = modifiers(text, m)?;
    let Some(pmu) = pmus.get(name) else {
        return Err(err(
            text,
            format!(
                "Cannot find PMU `{name}'. Missing kernel support? (`headroom count --list` \
                 lists the PMUs of this machine)"
            ),
        ));
    };
    let mut config = [0u64; 4];
    let mut display = None;
    let mut scale = None;
    let mut unit = None;
    let mut alias_name = None;
    // Terms given on the command line, after those of an alias (the user's win).
    let mut user_terms: Vec<(String, Option<String>)> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    for raw in body.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (k, v) = match raw.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (raw, None),
        };
        if v.is_none() {
            if let Some(alias) = pmu.events.get(k) {
                if let Some(first) = &alias_name {
                    return Err(err(
                        text,
                        format!("two events in one: '{k}' after '{first}'"),
                    ));
                }
                alias_name = Some(k.to_string());
                for t in &alias.terms {
                    match &t.value {
                        TermValue::Number(n) => set_term(text, pmu, &t.name, *n, &mut config)?,
                        TermValue::Required => required.push(t.name.clone()),
                    }
                }
                scale = alias.scale;
                unit = alias.unit.clone();
                continue;
            }
        }
        user_terms.push((k.to_string(), v));
    }
    for (k, v) in &user_terms {
        if k == "name" {
            display = v.clone();
            continue;
        }
        let value = match v {
            None => 1,
            Some(s) => pmu::parse_number(s).ok_or_else(|| {
                err(
                    text,
                    format!("'{s}' is not a number for term '{k}' (decimal or 0x hex)"),
                )
            })?,
        };
        set_term(text, pmu, k, value, &mut config)?;
        required.retain(|r| r != k);
    }
    if let Some(r) = required.first() {
        return Err(err(text, format!("Required parameter '{r}' not specified")));
    }
    // hisi_pcie_pmu counts for a target only: hisi_pcie_pmu_valid_filter() refuses an event
    // with neither a port bitmap nor a requester ID (config2 bits 0-31).
    if pmu.name.starts_with("hisi_pcie") && config[2] & 0xffff_ffff == 0 {
        return Err(err(
            text,
            "hisi_pcie PMUs count for a target: add port=0xN (a bitmap of root ports) or \
             bdf=0xBBDF (one function), e.g. rx_mrd_flux,port=0x1",
        ));
    }
    let mut note = None;
    // The vendor PCIe PMU of seed 002 (pcie_bdf_<bdf>) counts TLP payload in 16-byte units;
    // mainline's dwc_pcie_pmu multiplies by 16 itself and reports bytes.
    let payload = alias_name
        .as_deref()
        .is_some_and(|a| a.to_ascii_lowercase().ends_with("_tlp_data_payload"));
    if payload && scale.is_none() {
        if pmu.name.starts_with("pcie_bdf_") {
            scale = Some(16.0);
            note =
                Some("this vendor PMU counts 16-byte units: headroom multiplied by 16".to_string());
        } else if pmu.name.starts_with("dwc_rootport_") {
            note = Some(
                "dwc_pcie_pmu reports bytes (the driver multiplies the 16-byte units by 16)"
                    .to_string(),
            );
        }
        unit = Some("B".to_string());
    }
    Ok(Event {
        name: display.unwrap_or_else(|| text.to_string()),
        pmu: pmu.name.clone(),
        type_id: pmu.type_id,
        config,
        scale: scale.unwrap_or(1.0),
        unit,
        cpumask: pmu.cpumask.clone(),
        exclude,
        group,
        note,
    })
}

fn set_term(
    text: &str,
    pmu: &Pmu,
    k: &str,
    value: u64,
    config: &mut [u64; 4],
) -> Result<(), EventError> {
    if let Some(i) = ["config", "config1", "config2", "config3"]
        .iter()
        .position(|c| *c == k)
    {
        config[i] = value;
        return Ok(());
    }
    let Some(f) = pmu.formats.get(k) else {
        let mut valid: Vec<&str> = pmu.formats.keys().map(String::as_str).collect();
        valid.extend(CONFIG_TERMS);
        return Err(err(
            text,
            format!(
                "unknown term '{k}' for pmu '{}' (valid terms: {})",
                pmu.name,
                valid.join(",")
            ),
        ));
    };
    f.encode(value, config).ok_or_else(|| {
        err(
            text,
            format!(
                "value too big for format ({k}), maximum is {}",
                f.max_value()
            ),
        )
    })
}

/// Parse every `-e` value and resolve each event.
pub fn parse_all(args: &[String], pmus: &Pmus) -> Result<Vec<Event>, EventError> {
    let mut next_group = 0;
    let mut out: Vec<Event> = Vec::new();
    let mut listed: Vec<Vec<(String, Option<usize>)>> = Vec::new();
    let mut total = 0;
    // Every -e split (and counted against the bound) before any is resolved.
    for a in args {
        let events = split(a, &mut next_group)?;
        total += events.len();
        if total > MAX_EVENTS {
            return Err(EventError::TooMany);
        }
        listed.push(events);
    }
    for events in listed {
        for (text, group) in events {
            let e = resolve(&text, group, pmus)?;
            // dwc_pcie_pmu has one counter per event type (dwc_pcie_pmu_event_add():
            // -ENOSPC when it is in use): two of a type in one group are never scheduled
            // together, so the group would never count. Apart, the kernel multiplexes them.
            let dwc_type = |e: &Event| (e.config[0] >> 16) & 0xf;
            if e.pmu.starts_with("dwc_rootport_") && e.group.is_some() {
                if let Some(other) = out
                    .iter()
                    .find(|o| o.pmu == e.pmu && o.group == e.group && dwc_type(o) == dwc_type(&e))
                {
                    return Err(err(
                        &text,
                        format!(
                            "{} has one counter per event type: '{}' and '{}' cannot be in one \
                             group; give them as separate events and they are multiplexed",
                            e.pmu, other.name, e.name
                        ),
                    ));
                }
            }
            out.push(e);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pmus(fixture: &str) -> Pmus {
        let root = testsupport::fixtures::own_root(fixture);
        Pmus::read(&root).unwrap()
    }

    fn one(text: &str, p: &Pmus) -> Result<Event, EventError> {
        parse_all(&[text.to_string()], p).map(|mut v| v.remove(0))
    }

    #[test]
    fn dwc_rootport_payload_is_eventid_0x21_type_0() {
        let p = pmus("pmu-dwc-rootport");
        let e = one("dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/", &p).unwrap();
        assert_eq!((e.type_id, e.config[0]), (12, 0x21));
        assert_eq!(e.cpumask, Some(vec![0]));
        assert_eq!((e.scale, e.unit.as_deref()), (1.0, Some("B")));
        // Lane events need lane=, which goes to config bits 20-27.
        let l = one("dwc_rootport_3018/rx_memory_read,lane=3/", &p).unwrap();
        assert_eq!(l.config[0], 0x70c | (1 << 16) | (3 << 20));
        let e = one("dwc_rootport_3018/rx_memory_read/", &p).unwrap_err();
        assert!(
            e.to_string()
                .contains("Required parameter 'lane' not specified"),
            "{e}"
        );
        let e = one("dwc_rootport_3018/rx_memory_read,lane=256/", &p).unwrap_err();
        assert!(
            e.to_string()
                .contains("value too big for format (lane), maximum is 255"),
            "{e}"
        );
        // The vendor PMU of seed 002 counts 16-byte units.
        let v = one("pcie_bdf_200/Rx_PCIe_TLP_Data_Payload/", &p).unwrap();
        assert_eq!((v.config[0], v.scale), (1, 16.0));
        assert!(v.note.unwrap().contains("16-byte units"));
        // One time-based counter: Rx and Tx in a group can never count; apart they multiplex.
        let g = parse_all(
            &["{dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/,dwc_rootport_3018/Tx_PCIe_TLP_Data_Payload/}".to_string()],
            &p,
        )
        .unwrap_err();
        assert!(g.to_string().contains("one counter per event type"), "{g}");
        let apart = parse_all(
            &["dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/,dwc_rootport_3018/Tx_PCIe_TLP_Data_Payload/".to_string()],
            &p,
        )
        .unwrap();
        assert_eq!(apart.len(), 2);
    }

    #[test]
    fn hisi_pcie_port_goes_to_config2() {
        let p = pmus("pmu-hisi-pcie");
        let e = one("hisi_pcie0_core1/rx_mrd_flux,port=0x1/", &p).unwrap();
        assert_eq!(e.config, [0x804, 0, 0x1, 0]);
        let b = one(
            "hisi_pcie0_core1/rx_mwr_flux,bdf=0x7c08,thr_len=0x4,thr_mode=1/",
            &p,
        )
        .unwrap();
        assert_eq!(b.config, [0x104, 0x4 | (1 << 4), 0x7c08 << 16, 0]);
        let e = one("hisi_pcie0_core1/rx_mrd_flux/", &p).unwrap_err();
        assert!(e.to_string().contains("add port=0xN"), "{e}");
        let e = one("hisi_pcie0_core1/rx_mrd_flux,lane=1/", &p).unwrap_err();
        assert!(
            e.to_string().contains(
                "unknown term 'lane' for pmu 'hisi_pcie0_core1' (valid terms: bdf,event,"
            ),
            "{e}"
        );
    }

    #[test]
    fn uncore_iio_free_running_scale_and_unit() {
        let p = pmus("pmu-uncore-iio");
        let e = one("uncore_iio_free_running_1/bw_in_port3/", &p).unwrap();
        assert_eq!((e.type_id, e.config[0]), (41, 0xff | (0x23 << 8)));
        assert_eq!(
            (e.scale, e.unit.as_deref()),
            (3.814697265625e-6, Some("MiB"))
        );
    }

    #[test]
    fn core_software_tracepoint_and_groups() {
        let p = pmus("pmu-core");
        let v = parse_all(
            &[
                "{task-clock,cs}:u".to_string(),
                "cpu/event=0x3c,cmask=2,inv/,block:block_rq_issue,cpu-cycles".to_string(),
            ],
            &p,
        )
        .unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(
            (v[0].type_id, v[0].config[0], v[0].unit.as_deref()),
            (1, 1, Some("msec"))
        );
        assert_eq!(
            (v[0].group, v[1].group, v[2].group),
            (Some(0), Some(0), None)
        );
        assert!(
            v[1].exclude.kernel && !v[1].exclude.user,
            ":u counts user only"
        );
        assert_eq!(v[2].config[0], 0x3c | (2 << 24) | (1 << 23));
        assert_eq!((v[3].type_id, v[3].config[0]), (2, 1234));
        assert_eq!(
            (v[4].type_id, v[4].config[0]),
            (4, 0x3c),
            "the cpu PMU's alias"
        );
        assert!(!v[2].exclude.any(), "no modifier: every exclude bit is 0");
    }

    #[test]
    fn generic_names_are_perfs_whatever_was_typed() {
        let p = pmus("pmu-core");
        let g = |t: &str| one(t, &p).unwrap().generic_name();
        assert_eq!(g("cs"), Some("context-switches"));
        assert_eq!(g("task-clock:u"), Some("task-clock"));
        assert_eq!(g("faults"), Some("page-faults"));
        // The cpu PMU's own alias still is perf's generic event.
        assert_eq!(g("cpu-cycles"), Some("cycles"));
        assert_eq!(g("branch-misses"), Some("branch-misses"));
        assert_eq!(g("branch-instructions"), Some("branches"));
        assert_eq!(g("block:block_rq_issue"), None);
        assert_eq!(g("cpu/event=0x3c/"), None);
    }

    #[test]
    fn bad_input_in_perfs_words() {
        let p = pmus("pmu-core");
        let e = |t: &str| one(t, &p).unwrap_err().to_string();
        assert!(e("foo/bar/").contains(
            "event syntax error: 'foo/bar/': Cannot find PMU `foo'. Missing kernel support?"
        ));
        assert!(e("software/bar/").contains("unknown term 'bar' for pmu 'software'"));
        assert!(e("block:nosuch").contains("unknown tracepoint"));
        assert!(e("foo").contains("parser error"));
        assert!(e("cs:z").contains("unknown modifier 'z'"));
        assert!(e("cpu/event=0x3c").contains("unterminated"));
        assert!(e("{cs,task-clock").contains("`{` without `}`"));
        assert!(e("cpu/event=0x100/").contains("value too big for format (event), maximum is 255"));
        // perf's parser errors on empty events; a group followed by a comma is not one.
        for empty in ["cs,,cs", "cs,", ",cs", "{cs,}", "{}"] {
            assert!(e(empty).contains("parser error"), "{empty}: {}", e(empty));
        }
        assert_eq!(
            parse_all(&["{cs,task-clock}:u,cs".to_string()], &p)
                .unwrap()
                .len(),
            3
        );
        let many = vec!["cs"; MAX_EVENTS + 1].join(",");
        assert_eq!(
            parse_all(&[many], &p).unwrap_err(),
            EventError::TooMany,
            "counted before any is resolved"
        );
    }
}
