//! The root qdisc of an interface, for the shapers that set a link's ceiling below its speed
//! (a `tbf` on a test link, as in the shaped-link tests of `bench net`), and the interface's
//! GSO segment limit: both only in rtnetlink, read through iproute2's JSON output.
//!
//! The qdisc tree is only visible through rtnetlink; `tc -j qdisc show dev IF` (iproute2)
//! prints it as JSON, which is what this module reads. For `tbf`, iproute2 prints `rate` in
//! bytes per second and `overhead`/`mpu` in bytes when set (tc/q_tbf.c, tbf_print_opt).

use model::net::Shaper;
use serde_json::Value;

/// The shaper at the root of `iface` from `tc -j qdisc show dev IFACE`'s output, if the root
/// qdisc is a tbf.
pub fn parse_tc_json(text: &str) -> Option<Shaper> {
    let v: Value = serde_json::from_str(text).ok()?;
    let root = v
        .as_array()?
        .iter()
        .find(|q| q.get("root").and_then(Value::as_bool) == Some(true))?;
    if root.get("kind").and_then(Value::as_str) != Some("tbf") {
        return None;
    }
    let o = root.get("options")?;
    let num = |k: &str| o.get(k).and_then(Value::as_f64);
    Some(Shaper {
        rate_bps: num("rate")? * 8.0,
        overhead: num("overhead").unwrap_or(0.0) as u32,
        mpu: num("mpu").unwrap_or(0.0) as u32,
    })
}

/// Ask iproute2 for the root qdisc of `iface`. `Err` says why it could not be known (no `tc`
/// on the board: busybox systems often lack it).
pub fn root_shaper(iface: &str) -> Result<Option<Shaper>, String> {
    let out = std::process::Command::new("tc")
        .args(["-j", "qdisc", "show", "dev", iface])
        .output()
        .map_err(|e| format!("cannot run `tc` (iproute2) to see the qdisc of {iface}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`tc qdisc show dev {iface}` failed: {}",
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
        // `tc -j qdisc show dev h6va` after `tc qdisc add dev h6va root tbf rate 100mbit
        // burst 64kb latency 50ms overhead 24` (iproute2 6.1, Debian 12).
        let text = r#"[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":12500000,"burst":65550,"lat":49998,"overhead":24}}]"#;
        let s = parse_tc_json(text).unwrap();
        assert_eq!((s.rate_bps, s.overhead, s.mpu), (100e6, 24, 0));
        // loopback's `noqueue` and a non-root tbf are not shapers of the link.
        assert_eq!(
            parse_tc_json(
                r#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#
            ),
            None
        );
        assert_eq!(
            parse_tc_json(r#"[{"kind":"tbf","parent":"1:","options":{"rate":1}}]"#),
            None
        );
        assert_eq!(parse_tc_json("garbage"), None);
    }

    #[test]
    fn gso_limit() {
        // `ip -j -d link show dev va` after `ip link set dev va gso_max_segs 1` (trimmed).
        let text = r#"[{"ifindex":2,"ifname":"va","mtu":1500,"gso_max_size":65536,"gso_max_segs":1,"gro_max_size":65536}]"#;
        assert_eq!(parse_gso_max_segs(text), Some(1));
        assert_eq!(parse_gso_max_segs("[]"), None);
    }
}
