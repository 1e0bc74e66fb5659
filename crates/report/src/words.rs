//! How numbers, counts, flags and hops are worded, the same in every output (the terminal,
//! Markdown, HTML, compare, findings).

use crate::table::dash;
use model::latency::Step;
use model::path::Hop;

/// A 0..1 ratio as a percentage with one decimal.
pub(crate) fn percent(ratio: f64) -> String {
    format!("{:.1} %", ratio * 100.0)
}

/// A disk latency in us with one decimal, as `bench disk` prints it.
pub(crate) fn lat_us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Seconds as a user types them: `5 s`, `0.3 s`.
pub(crate) fn seconds(s: f64) -> String {
    format!("{s} s")
}

/// A privileged step as the terminal words it: `yes`, `not requested`, `no (why)`.
pub(crate) fn step_words(st: &model::latency::Step) -> String {
    match st {
        Step::Done => "yes".to_string(),
        Step::NotRequested => "not requested".to_string(),
        Step::Refused(why) => format!("no ({why})"),
    }
}

/// A unit enum variant by the name the document gives it (`nvme`, `bulk_only`, `disk`).
pub(crate) fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|x| x.as_str().map(str::to_string))
        .unwrap_or_else(dash)
}

pub(crate) fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// `1 thread`, `2 threads`: the count with its noun in the right number. The one helper
/// for every renderer, the findings and the terminal (any unsigned count: `usize`, `u64`).
pub fn plural<N: Copy + PartialEq + From<u8> + std::fmt::Display>(
    n: N,
    one: &str,
    many: &str,
) -> String {
    format!("{n} {}", if n == N::from(1) { one } else { many })
}

/// One hop of a path chain as a line: its kind, then every field it has, in the
/// producer's order (`disk: vda, virtio, rotational`); a filesystem as `headroom path`
/// words it.
pub(crate) fn hop_line(hop: &Hop) -> String {
    use serde_json::Value;
    let Ok(Value::Object(hop)) = serde_json::to_value(hop) else {
        return "hop".to_string();
    };
    let kind = hop
        .get("hop")
        .and_then(Value::as_str)
        .unwrap_or("hop")
        .replace('_', " ");
    fn flat(key: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => out.push(key.replace('_', " ")),
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(format!("{} {n}", key.replace('_', " "))),
            Value::Array(a) => {
                for x in a {
                    flat(key, x, out);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    flat(k, x, out);
                }
            }
        }
    }
    let text = |k: &str| hop.get(k).and_then(Value::as_str);
    if let (Some(fs), Some(src), Some(at)) = (text("fs_type"), text("source"), text("mount_point"))
    {
        // As `headroom path` words it.
        let dev = text("dev").map(|d| format!(" ({d})")).unwrap_or_default();
        return format!("{kind}: {fs} on {src}{dev} mounted at {at}");
    }
    let mut parts = Vec::new();
    for (k, v) in hop.iter().filter(|(k, _)| *k != "hop") {
        flat(k, v, &mut parts);
    }
    if parts.is_empty() {
        kind
    } else {
        format!("{kind}: {}", parts.join(", "))
    }
}
