//! What every kind's document may carry ([`CommonView`]: findings, notes, the target's path)
//! and the check of a document against the type that reads it ([`unread_fields`]: the
//! fields a type reads that a document does not have). Each kind's own document type is in
//! its module of [`crate::kinds`]; the round-trip tests (crates/cli/tests/roundtrip.rs)
//! assert the unread fields of freshly produced documents, so a field a producer stops
//! writing fails them.

use model::path::TargetPath;
use model::Finding;
use serde::{Deserialize, Serialize};

/// The fields view `V` reads that `doc` (a document's body) does not have, as paths
/// (`tests[].runs[].latency.p99_ns`), sorted and without repeats: where a report shows "–"
/// although the producer may have had a value under another name.
pub fn unread_fields<V: serde::de::DeserializeOwned + Serialize>(
    doc: &serde_json::Value,
) -> Result<Vec<String>, serde_json::Error> {
    use serde_json::Value;
    fn walk(view: &Value, doc: &Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
        match (view, doc) {
            (Value::Object(v), Value::Object(d)) => {
                for (k, x) in v {
                    let here = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    match d.get(k) {
                        Some(y) => walk(x, y, &here, out),
                        None => {
                            out.insert(here);
                        }
                    }
                }
            }
            (Value::Array(v), Value::Array(d)) => {
                for (x, y) in v.iter().zip(d) {
                    walk(x, y, &format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }
    let view: V = serde_json::from_value(doc.clone())?;
    let mut out = std::collections::BTreeSet::new();
    walk(&serde_json::to_value(&view)?, doc, "", &mut out);
    Ok(out.into_iter().collect())
}

/// The fields every kind may carry: findings, notes and the target's path, as the
/// producers' own model types (a field renamed there changes what is read here).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct CommonView {
    #[serde(default)]
    pub findings: Vec<Finding>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The target's path (`headroom path`'s `path` field; benches may carry the same).
    #[serde(default)]
    pub path: Option<TargetPath>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A view that names its fields, as the audit's PCI view does.
    #[derive(Deserialize, Serialize)]
    struct Named {
        #[serde(default)]
        mean_mb_per_s: Option<f64>,
        #[serde(default)]
        runs: Vec<NamedRun>,
        #[serde(default)]
        efficiency: Option<f64>,
    }

    #[derive(Deserialize, Serialize)]
    struct NamedRun {
        #[serde(default)]
        iops: Option<f64>,
    }

    #[test]
    fn a_field_renamed_by_its_producer_is_listed_as_unread() {
        let doc = serde_json::json!({
            "mean_mb_per_sec": 12.5,
            "runs": [{"iops": 3.0}, {"iops_per_s": 3.0}],
            "efficiency": null
        });
        let unread = unread_fields::<Named>(&doc).unwrap();
        // Fields the document has, null ones included, are read.
        assert_eq!(unread, ["mean_mb_per_s", "runs[].iops"]);
    }

    /// The body of `headroom bench disk` in tests/fixtures/results (a document of an earlier
    /// version: no fio clat, no governor).
    fn fixture_disk_body() -> serde_json::Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/results/rpi5-gen3.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn a_disk_document_of_an_earlier_version_reads_as_the_model_types() {
        let body = fixture_disk_body();
        let d: crate::kinds::disk::DiskDocument = serde_json::from_value(body.clone()).unwrap();
        let t = &d.tests[0];
        assert_eq!(t.test.spec.name(), "dd 100M write");
        let best = t.test.best().unwrap();
        assert_eq!(best.latency.p90_ns, 144_765_320);
        assert_eq!(best.cross_check.diskstats_error_percent, Some(7.8125e-05));
        assert_eq!(t.efficiency, Some(0.8417699325749364));
        assert_eq!(d.target.kind, model::disk::TargetKind::NewFile);
        // Added since: absent, so empty, and the only fields the document does not have
        // (the document type reads its path and findings too).
        assert_eq!((d.system.governor.as_deref(), best.clat.max_ns), (None, 0));
        assert_eq!(d.interrupted, None);
        assert_eq!(
            unread_fields::<crate::kinds::disk::DiskDocument>(&body).unwrap(),
            [
                "findings",
                "interrupted",
                "parameters.buffers",
                // The path's links before their fields named their unit, and their hop.
                "path.links[].capable_ceiling_bytes_per_sec",
                "path.links[].ceiling_bytes_per_sec",
                "path.links[].ceiling_other_direction_bytes_per_sec",
                "path.links[].hop",
                "system.governor",
                "tests[].runs[].clat",
                "tests[].runs[].cross_check.app_ios",
                "tests[].runs[].cross_check.diskstats_read_requests",
                "tests[].runs[].cross_check.diskstats_write_requests"
            ]
        );
    }

    /// The line (1-based) and column of the first line after the line `opening` that is
    /// `closing` (a comma after it or not), in `text`: where serde_json ends that object.
    fn place(text: &str, opening: &str, closing: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| *l == opening).unwrap();
        let end = at
            + lines[at..]
                .iter()
                .position(|l| l.trim_end_matches(',') == closing)
                .unwrap();
        format!("line {} column {}", end + 1, closing.len())
    }

    #[test]
    fn a_disk_document_without_a_field_it_always_had_names_it_and_where() {
        // As headroom writes it: pretty JSON, so the line and column point at the object.
        let read = |body: &serde_json::Value| {
            let text = serde_json::to_string_pretty(body).unwrap();
            let doc = crate::document::Document::parse(&text, "old.json").unwrap();
            let e = doc
                .view::<crate::kinds::disk::DiskDocument>("old.json")
                .unwrap_err()
                .to_string();
            (text, e)
        };
        let mut body = fixture_disk_body();
        body["parameters"].as_object_mut().unwrap().remove("runs");
        let (text, e) = read(&body);
        assert!(e.contains("old.json"), "{e}");
        // Where the parameters end.
        let at = place(&text, "  \"parameters\": {", "  }");
        assert!(e.contains(&format!("missing field `runs` at {at}")), "{e}");
        // Inside a test, where the test ends.
        let mut body = fixture_disk_body();
        body["tests"][0]["runs"][0]
            .as_object_mut()
            .unwrap()
            .remove("iops");
        let (text, e) = read(&body);
        let at = place(&text, "  \"tests\": [", "    }");
        assert!(
            e.contains(&format!("missing field `iops`; the test ends at {at}")),
            "{e}"
        );
        let mut body = fixture_disk_body();
        body["tests"][0]["efficiency"] = "high".into();
        let (text, e) = read(&body);
        let at = place(&text, "  \"tests\": [", "    }");
        assert!(
            e.contains("efficiency: invalid type: string \"high\", expected f64; the test ends at")
                && e.contains(&at),
            "{e}"
        );
    }

    /// A document made from a value (a survey's part) has no text: the place is in the
    /// document as headroom prints it.
    #[test]
    fn a_document_made_from_a_value_names_the_place_in_its_printed_form() {
        let mut v = fixture_disk_body();
        v["parameters"].as_object_mut().unwrap().remove("runs");
        let doc = crate::document::Document::from_value(v, "part").unwrap();
        let e = doc
            .view::<crate::kinds::disk::DiskDocument>("part")
            .unwrap_err()
            .to_string();
        let at = place(&doc.to_json_pretty(), "  \"parameters\": {", "  }");
        assert!(e.contains(&format!("missing field `runs` at {at}")), "{e}");
    }
}
