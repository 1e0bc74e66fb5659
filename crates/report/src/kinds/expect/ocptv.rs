//! OCP Test & Validation JSON lines of the checks (`audit --expect --format ocptv`), schema 2.0
//! of opencomputeproject/ocp-diag-core.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The run's facts for its OCPTV output.
pub struct OcptvRun<'a> {
    pub version: &'a str,
    pub command_line: &'a str,
    pub manifest: &'a str,
    pub hostname: &'a str,
    /// RFC 3339 timestamps of each artifact (all the same: the checks are judged at once).
    pub timestamp: &'a str,
}

/// The checks as OCP Test & Validation output, schema 2.0 (JSON lines: schemaVersion,
/// testRunStart with the DUT and its devices, one step per manifest entry with a diagnosis
/// per check, testRunEnd with PASS or FAIL).
pub fn ocptv(checks: &[Check], run: &OcptvRun) -> String {
    use serde_json::json;
    let mut lines = Vec::new();
    let mut seq = 0u64;
    let mut emit = |mut v: serde_json::Value, lines: &mut Vec<String>| {
        v["sequenceNumber"] = json!(seq);
        v["timestamp"] = json!(run.timestamp);
        seq += 1;
        lines.push(crate::outside::json(&v.to_string()).into_owned());
    };
    emit(
        json!({"schemaVersion": {"major": 2, "minor": 0}}),
        &mut lines,
    );
    let mut hardware: Vec<(String, String)> = Vec::new();
    for c in checks {
        if !hardware.iter().any(|(d, _)| d == &c.device) {
            hardware.push((c.device.clone(), c.description.clone()));
        }
    }
    let hardware_id = |device: &str| {
        hardware
            .iter()
            .position(|(d, _)| d == device)
            .unwrap_or_default()
            .to_string()
    };
    let infos: Vec<serde_json::Value> = hardware
        .iter()
        .enumerate()
        .map(|(i, (device, description))| {
            let name = if description.is_empty() {
                device.clone()
            } else {
                description.clone()
            };
            json!({"hardwareInfoId": i.to_string(), "name": name, "location": device})
        })
        .collect();
    emit(
        json!({"testRunArtifact": {"testRunStart": {
            "name": "headroom audit --expect",
            "version": run.version,
            "commandLine": run.command_line,
            "parameters": {"manifest": run.manifest},
            "dutInfo": {"dutInfoId": run.hostname, "name": run.hostname, "hardwareInfos": infos},
        }}}),
        &mut lines,
    );
    let mut step = 0usize;
    let mut i = 0;
    while i < checks.len() {
        let (section, entry) = (checks[i].section, checks[i].entry);
        let id = step.to_string();
        emit(
            json!({"testStepArtifact": {"testStepId": id,
                "testStepStart": {"name": format!("{section} entry {entry}")}}}),
            &mut lines,
        );
        while i < checks.len() && checks[i].section == section && checks[i].entry == entry {
            let c = &checks[i];
            let kind = if c.pass { "PASS" } else { "FAIL" };
            let verdict = format!(
                "{}-{}",
                c.check.replace(' ', "-").to_lowercase(),
                kind.to_lowercase()
            );
            emit(
                json!({"testStepArtifact": {"testStepId": id, "diagnosis": {
                    "verdict": verdict,
                    "type": kind,
                    "message": c.line(),
                    "hardwareInfoId": hardware_id(&c.device),
                }}}),
                &mut lines,
            );
            i += 1;
        }
        emit(
            json!({"testStepArtifact": {"testStepId": id, "testStepEnd": {"status": "COMPLETE"}}}),
            &mut lines,
        );
        step += 1;
    }
    let result = if checks.iter().all(|c| c.pass) {
        "PASS"
    } else {
        "FAIL"
    };
    emit(
        json!({"testRunArtifact": {"testRunEnd": {"status": "COMPLETE", "result": result}}}),
        &mut lines,
    );
    lines.join("\n") + "\n"
}
