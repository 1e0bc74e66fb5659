//! The root qdisc of each interface, for the shapers that set a link's ceiling below its
//! speed (a `tbf` on a test link, as in the shaped-link tests of `bench net`), and an
//! interface's GSO segment limit: both only in rtnetlink, read through iproute2's JSON output.
//!
//! The qdisc tree is only visible through rtnetlink; `tc -j qdisc show` (iproute2) prints
//! every interface's as JSON, each qdisc naming its `dev`, which is what this module reads. For `tbf`, iproute2 prints `rate` in
//! bytes per second and `overhead`/`mpu` in bytes when set (tc/q_tbf.c, tbf_print_opt).

use model::net::Shaper;
use serde_json::Value;
use std::collections::BTreeMap;

/// The shaper at the root of each interface from `tc -j qdisc show`'s output (every
/// interface's qdiscs, each named by `dev`): the interfaces whose root qdisc is a tbf.
pub fn parse_tc_json(text: &str) -> BTreeMap<String, Shaper> {
    let Ok(Value::Array(qdiscs)) = serde_json::from_str::<Value>(text) else {
        return BTreeMap::new();
    };
    qdiscs
        .iter()
        .filter(|q| q.get("root").and_then(Value::as_bool) == Some(true))
        .filter(|q| q.get("kind").and_then(Value::as_str) == Some("tbf"))
        .filter_map(|q| {
            let dev = q.get("dev")?.as_str()?;
            let o = q.get("options")?;
            let num = |k: &str| o.get(k).and_then(Value::as_f64);
            let shaper = Shaper {
                rate_bps: num("rate")? * 8.0,
                overhead: num("overhead").unwrap_or(0.0) as u32,
                mpu: num("mpu").unwrap_or(0.0) as u32,
            };
            Some((dev.to_string(), shaper))
        })
        .collect()
}

/// Ask iproute2 for the root qdisc of every interface of this network namespace (one `tc`
/// for all: the audit lists them all). `Err` says why they could not be known, in one
/// sentence (no `tc` on the board: busybox systems often lack it, or have one without JSON).
pub fn root_shapers() -> Result<BTreeMap<String, Shaper>, String> {
    let unknown = "so a tbf shaper on an interface would not be seen";
    let out = std::process::Command::new("tc")
        .args(["-j", "qdisc", "show"])
        .output()
        .map_err(|e| {
            format!("cannot run `tc` (iproute2) to read the interfaces' qdiscs ({e}), {unknown}")
        })?;
    if !out.status.success() {
        return Err(format!(
            "`tc -j qdisc show` failed ({}), {unknown}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(parse_tc_json(&String::from_utf8_lossy(&out.stdout)))
}

/// `gso_max_segs` from `ip -j -d link show dev IFACE`'s output.
pub fn parse_gso_max_segs(text: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(text).ok()?;
    v.as_array()?.first()?.get("gso_max_segs")?.as_u64()
}

/// The most segments the stack hands the device in one GSO packet (IFLA_GSO_MAX_SEGS);
/// `None` when iproute2 cannot tell.
pub fn gso_max_segs(iface: &str) -> Option<u64> {
    let out = std::process::Command::new("ip")
        .args(["-j", "-d", "link", "show", "dev", iface])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| parse_gso_max_segs(&String::from_utf8_lossy(&out.stdout)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_of_the_shaped_link() {
        // `tc -j qdisc show` in a namespace with lo and a veth `va` after `tc qdisc add dev
        // va root tbf rate 100mbit burst 64kb latency 50ms overhead 24` (iproute2 6.1,
        // Debian 12).
        let text = r#"[{"kind":"noqueue","handle":"0:","dev":"lo","root":true,"refcnt":2,"options":{}},{"kind":"tbf","handle":"8012:","dev":"va","root":true,"refcnt":3,"options":{"rate":12500000,"burst":65550,"lat":49998,"overhead":24}}]"#;
        let all = parse_tc_json(text);
        assert_eq!(all.len(), 1, "{all:?}");
        let s = all["va"];
        assert_eq!((s.rate_bps, s.overhead, s.mpu), (100e6, 24, 0));
        // A tbf below another qdisc is not the link's shaper; garbage is none.
        let child = r#"[{"kind":"tbf","dev":"vb","parent":"1:","options":{"rate":1}}]"#;
        assert!(parse_tc_json(child).is_empty());
        assert!(parse_tc_json("garbage").is_empty());
    }

    #[test]
    fn gso_limit() {
        // `ip -j -d link show dev va` after `ip link set dev va gso_max_segs 1` (trimmed).
        let text = r#"[{"ifindex":2,"ifname":"va","mtu":1500,"gso_max_size":65536,"gso_max_segs":1,"gro_max_size":65536}]"#;
        assert_eq!(parse_gso_max_segs(text), Some(1));
        assert_eq!(parse_gso_max_segs("[]"), None);
    }
}
