//! Board labs' formats, checked by their own readers: LAVA's test-case lines against the
//! grammar of LAVA's `lava-test-case` (a parser here), KCIDB I/O JSON with the PyPI
//! `kcidb-io` package's validator, `contrib/lava/headroom.yaml` parsed as YAML and its steps
//! run in a shell with stand-ins for LAVA's helper and for wget; and the host each document
//! names, in `report` and `compare`.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use testsupport::cmd::*;
use testsupport::fixtures::own;

/// A parsed line: name, result, and the measurement with its units.
type LavaCase = (String, String, Option<(f64, String)>);

/// One `lava-test-case` line, parsed by LAVA's grammar: `lava-test-case NAME --result
/// pass|fail|skip|unknown [--measurement VALUE --units UNITS]`, NAME of `[A-Za-z0-9._-]` (no
/// whitespace, none of the characters LAVA forbids in names), VALUE a decimal number, UNITS
/// without whitespace or quotes. `(name, result, measurement)` or why not.
fn lava_case(line: &str) -> Result<LavaCase, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let fail = |why: &str| Err(format!("{why}: {line:?}"));
    let (name, result) = match words.as_slice() {
        ["lava-test-case", name, "--result", result, ..] => (*name, *result),
        _ => return fail("not `lava-test-case NAME --result RESULT`"),
    };
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return fail("a name outside [A-Za-z0-9._-]{1,100}");
    }
    if !["pass", "fail", "skip", "unknown"].contains(&result) {
        return fail("a result LAVA does not know");
    }
    let measurement = match &words[4..] {
        [] => None,
        ["--measurement", value, "--units", units] => {
            let number = value
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
                && value.parse::<f64>().is_ok_and(f64::is_finite);
            if !number {
                return fail("a measurement that is not a decimal number");
            }
            if units.is_empty() || units.contains(['"', '\'', '`', '$', '\\', ';', '|']) {
                return fail("units with quotes or shell syntax");
            }
            Some((value.parse().unwrap(), units.to_string()))
        }
        _ => return fail("not `--measurement VALUE --units UNITS` after the result"),
    };
    Ok((name.to_string(), result.to_string(), measurement))
}

/// Every line of `text` parsed; the names must be unique.
fn lava_cases(text: &str) -> Vec<LavaCase> {
    let cases: Vec<_> = text
        .lines()
        .map(|l| lava_case(l).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let names: BTreeSet<&String> = cases.iter().map(|c| &c.0).collect();
    assert_eq!(names.len(), cases.len(), "names repeat in {text}");
    cases
}

/// The audits of two boards in `dir`: the Raspberry Pi 5 tree (device tree) and the PC tree
/// with DMI strings and a downgraded link.
fn two_board_audits(dir: &Path) -> Vec<PathBuf> {
    ["kernel-6.1", "sysfs/sd-nvme-downgraded-sata"]
        .iter()
        .map(|tree| {
            let file = dir.join(format!("{}.json", tree.replace('/', "-")));
            let json = stdout(
                headroom()
                    .args(["audit", "--json", "--root"])
                    .arg(own(tree)),
            );
            std::fs::write(&file, json).unwrap();
            file
        })
        .collect()
}

fn stdout(cmd: &mut assert_cmd::Command) -> String {
    String::from_utf8(stdout_of(cmd)).unwrap()
}

/// The Python that .ci/run prepares in target/py-checks (`HEADROOM_PY_CHECKS` overrides
/// it), with kcidb-io and PyYAML.
fn py_checks() -> Option<PathBuf> {
    let p = std::env::var_os("HEADROOM_PY_CHECKS")
        .map(PathBuf::from)
        .unwrap_or_else(|| testsupport::fixtures::repo_root().join("target/py-checks/bin/python"));
    let ok = Command::new(&p)
        .args(["-c", "import kcidb_io, yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    testsupport::skip::unless(
        ok,
        &format!(
            "{} (a venv with kcidb-io and PyYAML) is missing",
            p.display()
        ),
    )
    .then_some(p)
}

/// kcidb-io's validator (the newest schema it knows) on `json`: `Ok` or its complaint.
fn kcidb_validate(python: &Path, json: &str) -> Result<(), String> {
    const CHECK: &str = "import sys, json, kcidb_io\n\
schema = kcidb_io.schema.LATEST\n\
assert (schema.major, schema.minor) == (5, 3), (schema.major, schema.minor)\n\
schema.validate(json.load(sys.stdin))\n";
    let out = fed(Command::new(python).args(["-c", CHECK]), json.as_bytes());
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn results() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(own("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    files
}

#[test]
fn lava_lines_of_every_document_kind_follow_the_grammar() {
    let mut total = 0;
    for f in results() {
        let text = stdout(headroom().args(["report", "--format", "lava"]).arg(&f));
        total += lava_cases(&text).len();
    }
    assert!(total > 150, "{total} cases in all");
    // The Raspberry Pi 5's dd write at Gen 3: the document's 731.5714564786649 MB/s, and its
    // link short of what both ends can do (x1 of x4).
    let text = stdout(
        headroom()
            .args(["report", "--format", "lava"])
            .arg(own("results/rpi5-gen3.json")),
    );
    let cases = lava_cases(&text);
    let find = |name: &str| {
        cases
            .iter()
            .find(|c| c.0 == name)
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert_eq!(
        find("headroom.disk.dd_100M_write.throughput").2,
        Some((731.571456, "MB/s".to_string()))
    );
    assert_eq!(
        find("headroom.disk.link.PCIe_0000_00_00.0_to_0000_01_00.0.not-downgraded").1,
        "fail"
    );
    // Two documents: each one's names start with docN.
    let two = stdout(
        headroom()
            .args(["report", "--format", "lava"])
            .arg(own("results/rpi5-gen2.json"))
            .arg(own("results/rpi5-gen3.json")),
    );
    let cases = lava_cases(&two);
    assert!(cases.iter().any(|c| c.0.starts_with("headroom.doc1.")));
    assert!(cases.iter().any(|c| c.0.starts_with("headroom.doc2.")));
}

#[test]
fn audit_lava_names_the_downgraded_link_and_expect_checks_fail_the_run() {
    let tree = own("sysfs/sd-nvme-downgraded-sata");
    let text = stdout(
        headroom()
            .args(["audit", "--format", "lava", "--root"])
            .arg(&tree),
    );
    let cases = lava_cases(&text);
    let get = |name: &str| {
        cases
            .iter()
            .find(|c| c.0 == name)
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert_eq!(
        get("headroom.pcie.0000_01_00.0.link-not-downgraded").1,
        "fail"
    );
    assert_eq!(
        get("headroom.pcie.0000_01_00.0.link-speed").2,
        Some((8.0, "GT/s".into()))
    );
    assert_eq!(
        get("headroom.pcie.0000_01_00.0.link-width").2,
        Some((1.0, "lanes".into()))
    );
    // A manifest asking for the link both ends can do: its check fails, and so does the run.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("expect.toml");
    std::fs::write(
        &manifest,
        "[[pci]]\naddress = \"0000:01:00.0\"\nlink_speed_gts = 16\n",
    )
    .unwrap();
    let out = headroom()
        .args(["audit", "--format", "lava", "--root"])
        .arg(&tree)
        .arg("--expect")
        .arg(&manifest)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let cases = lava_cases(&text);
    let check = cases
        .iter()
        .find(|c| c.0.starts_with("headroom.expect.pci.1.0000_01_00.0.link"))
        .unwrap_or_else(|| panic!("no expect check in {text}"));
    assert_eq!(check.1, "fail");
}

#[test]
fn kcidb_of_every_document_kind_validates_with_kcidb_io() {
    let Some(python) = py_checks() else {
        return;
    };
    for f in results() {
        let json = stdout(headroom().args(["report", "--format", "kcidb"]).arg(&f));
        kcidb_validate(&python, &json).unwrap_or_else(|e| panic!("{}: {e}\n{json}", f.display()));
    }
    // Two boards' audits in one submission: each its own checkout, build and tests, the
    // Raspberry Pi's tests with its device-tree `compatible`, and no id shared.
    let dir = tempfile::tempdir().unwrap();
    let docs = two_board_audits(dir.path());
    let json = stdout(headroom().args(["report", "--format", "kcidb"]).args(&docs));
    kcidb_validate(&python, &json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["checkouts"].as_array().unwrap().len(), 2);
    let tests = v["tests"].as_array().unwrap();
    let ids: BTreeSet<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), tests.len(), "ids repeat: {json}");
    let rpi = tests
        .iter()
        .find(|t| t["environment"]["compatible"][0] == "raspberrypi,5-model-b")
        .unwrap_or_else(|| panic!("no test with the Pi's compatible: {json}"));
    assert!(rpi["id"]
        .as_str()
        .unwrap()
        .starts_with("headroom:5be0d5c1a77f4e0c9d3b2a61f08e4c27:"));
    // The PC's downgraded link: a FAIL; its speed a DONE with a number and a unit.
    let by_path = |p: &str| {
        tests
            .iter()
            .find(|t| {
                t["path"] == p && t["environment"]["misc"]["model"] == "Dell Inc. OptiPlex 7000"
            })
            .unwrap_or_else(|| panic!("no {p}: {json}"))
    };
    assert_eq!(
        by_path("headroom.pcie.0000_01_00_0.link-not-downgraded")["status"],
        "FAIL"
    );
    let speed = by_path("headroom.pcie.0000_01_00_0.link-speed");
    assert_eq!(speed["status"], "DONE");
    assert_eq!(
        speed["number"],
        serde_json::json!({"value": 8.0, "unit": "GT/s"})
    );
}

#[test]
fn the_lava_definition_parses_and_its_steps_record_grammar_lines() {
    let Some(python) = py_checks() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let headroom_bin = assert_cmd::cargo::cargo_bin("headroom");
    // Stand-ins: wget "fetches" the binary (the URL is the test's own build), and LAVA's
    // lava-test-case appends its arguments, one case per line, to a file.
    let log = d.join("cases.log");
    let scripts = [
        (
            "wget",
            format!(
                "#!/bin/sh\n[ \"$1\" = -q ] && [ \"$2\" = -O ] && [ \"$4\" = https://example.org/headroom ] || exit 9\ncp '{}' \"$3\"\n",
                headroom_bin.display()
            ),
        ),
        (
            "lava-test-case",
            format!("#!/bin/sh\necho lava-test-case \"$@\" >> '{}'\n", log.display()),
        ),
    ];
    for (name, text) in scripts {
        let p = bin.join(name);
        std::fs::write(&p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The definition as LAVA reads it (Lava-Test Test Definition 1.0), turned into the
    // script LAVA runs: its params as variables (the job's values here), then its steps.
    const SCRIPT: &str = "import sys, yaml\n\
y = yaml.safe_load(open(sys.argv[1]))\n\
m = y['metadata']\n\
assert m['format'] == 'Lava-Test Test Definition 1.0', m\n\
assert m['name'] and m['description'], m\n\
params = dict(y['params'], HEADROOM_URL='https://example.org/headroom', PARTS='audit', BUDGET='30s')\n\
assert set(params) == set(y['params']), (params, y['params'])\n\
steps = y['run']['steps']\n\
assert all(isinstance(s, str) for s in steps), steps\n\
print('set -e')\n\
for k, v in params.items(): print(k + \"='\" + v + \"'\")\n\
for s in steps: print(s)\n";
    let yaml = testsupport::fixtures::repo_root().join("contrib/lava/headroom.yaml");
    let out = Command::new(&python)
        .args(["-c", SCRIPT])
        .arg(&yaml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = d.join("run.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new("sh")
        .arg(&script)
        .current_dir(d)
        .env("PATH", path)
        .env("HOME", d)
        .env("XDG_DATA_HOME", d)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let cases = lava_cases(&text);
    let names: Vec<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names[..2], ["headroom-fetch", "headroom-survey"], "{text}");
    assert!(cases[..2].iter().all(|c| c.1 == "pass"), "{text}");
    assert!(
        names.iter().any(|n| n.starts_with("headroom.audit.")),
        "the survey's audit part recorded no case: {text}"
    );
}

#[test]
fn report_and_compare_name_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let docs = two_board_audits(dir.path());
    let text = stdout(headroom().arg("report").arg(&docs[0]));
    assert!(
        text.contains(
            "Raspberry Pi 5 Model B Rev 1.0, serial 6a7f1c2e9b3d4a10, machine-id 5be0d5c1a77f"
        ),
        "{text}"
    );
    let md = report_md(&docs[1]);
    assert!(
        md.contains("Dell Inc. OptiPlex 7000, board Dell Inc. 0C8JVT, serial 7XK2QK3"),
        "{md}"
    );
    let cmp = stdout(headroom().arg("compare").args(&docs));
    assert!(cmp.contains("The runs come from different hosts"), "{cmp}");
    assert!(
        cmp.contains("OptiPlex 7000") && cmp.contains("Raspberry Pi 5"),
        "{cmp}"
    );
    // The same host twice: no such sentence, the host among what is the same.
    let cmp = stdout(headroom().arg("compare").arg(&docs[0]).arg(&docs[0]));
    assert!(!cmp.contains("different hosts"), "{cmp}");
    assert!(cmp.contains("Raspberry Pi 5"), "{cmp}");
}

/// The LAVA cases of one document (`report --format lava FILE`), parsed by the grammar.
fn lava_of(file: &Path) -> Vec<LavaCase> {
    lava_cases(&stdout(
        headroom().args(["report", "--format", "lava"]).arg(file),
    ))
}

/// The case named `name` among `cases`.
fn case<'a>(cases: &'a [LavaCase], name: &str) -> &'a LavaCase {
    cases
        .iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("no {name} in {cases:#?}"))
}

/// The kinds that gave no case (ceiling, path, pmu_list, survey-plan) give
/// the figures a lab tracks, each with its value and unit; what could not be had is a skip.
#[test]
fn ceiling_path_pmu_list_and_plan_give_cases() {
    // `ceiling pcie`: every row's raw and effective ceilings in MB/s (10^6 B/s). 8 GT/s x1
    // with the Rockchip guide's 28 B per TLP and MPS 128: the document's 766379065.456 B/s.
    let cases = lava_of(&own("results/ceiling-pcie.json"));
    assert_eq!(cases.len(), 8 * 3, "{cases:#?}");
    assert_eq!(
        case(
            &cases,
            "headroom.ceiling.pcie.8GT-x1.rockchip.mps128.mrrs512.effective-write"
        )
        .2,
        Some((766.379065, "MB/s".into()))
    );
    assert!(cases.iter().all(|c| c.1 == "pass" && c.2.is_some()));
    // USB: a transfer type with a ceiling is a figure: high speed bulk, 53.248 MB/s (13
    // packets of 512 B per 125 us microframe).
    let cases = lava_of(&own("results/ceiling-usb.json"));
    assert_eq!(
        case(&cases, "headroom.ceiling.usb.USB_2.0_high_speed.bulk").2,
        Some((53.248, "MB/s".into()))
    );
    for (file, name, value) in [
        ("ceiling-sata", "headroom.ceiling.sata.6Gbps.raw", 600.0),
        (
            "ceiling-eth",
            "headroom.ceiling.eth.1G.tcp.ipv4.mtu1500.raw",
            125.0,
        ),
        ("ceiling-mmc", "headroom.ceiling.mmc.eMMC_HS400.bus", 400.0),
    ] {
        let cases = lava_of(&own(&format!("results/{file}.json")));
        assert_eq!(case(&cases, name).2, Some((value, "MB/s".into())), "{file}");
    }
    // A PMU list: the events each PMU names (msr: smi and tsc), a PMU that names none a
    // skip, and the events of no sysfs PMU counted by kind.
    let cases = lava_of(&own("results/pmu-list.json"));
    assert_eq!(
        case(&cases, "headroom.pmu_list.pmu.msr.events").2,
        Some((2.0, "events".into()))
    );
    assert_eq!(
        case(&cases, "headroom.pmu_list.pmu.breakpoint.events").1,
        "skip"
    );
    let software = case(&cases, "headroom.pmu_list.software-events").2.clone();
    assert!(software.is_some_and(|(n, u)| n > 5.0 && u == "events"));
    // A plan: one skip per part, run or not, named by the part.
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(own("results/survey-plan-sd-nvme.json")).unwrap(),
    )
    .unwrap();
    let parts = plan["parts"].as_array().unwrap().len();
    let cases = lava_of(&own("results/survey-plan-sd-nvme.json"));
    assert_eq!(cases.len(), parts, "{cases:#?}");
    assert!(cases.iter().all(|c| c.1 == "skip"), "{cases:#?}");
    case(&cases, "headroom.survey-plan.audit");
    case(&cases, "headroom.survey-plan.disk_dm-1");
    // A path with no link that has a ceiling (virtio): a skip for its ceiling.
    let cases = lava_of(&own("results/path-tmp.json"));
    assert_eq!(case(&cases, "headroom.path.ceiling").1, "skip");
    // A path with links: each hop's ceiling, and the path's (the bottleneck's) beside them.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("path.json");
    std::fs::write(
        &file,
        stdout(
            headroom()
                .args(["path", "--json", "--root"])
                .arg(own("sysfs/sd-nvme-downgraded-sata"))
                .arg("/data/x"),
        ),
    )
    .unwrap();
    let cases = lava_of(&file);
    let link = "headroom.path.link.PCIe_0000_00_1c.0_to_0000_01_00.0";
    let hop = case(&cases, &format!("{link}.ceiling")).2.clone().unwrap();
    assert_eq!(hop.1, "MB/s");
    assert!(hop.0 > 700.0 && hop.0 < 984.62, "{hop:?}");
    assert_eq!(case(&cases, &format!("{link}.not-downgraded")).1, "fail");
    assert_eq!(case(&cases, "headroom.path.ceiling").2, Some(hop));
}

/// The same kinds as KCIDB: kcidb-io's validator accepts them, with the figures as DONE tests
/// with a number and unit, and the plan's parts as SKIP with what they will do.
#[test]
fn kcidb_of_ceiling_pmu_list_and_plan_validates() {
    let Some(python) = py_checks() else {
        return;
    };
    let files = [
        "ceiling-pcie",
        "pmu-list",
        "survey-plan-sd-nvme",
        "path-tmp",
    ]
    .map(|f| own(&format!("results/{f}.json")));
    let json = stdout(
        headroom()
            .args(["report", "--format", "kcidb"])
            .args(&files),
    );
    kcidb_validate(&python, &json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tests = v["tests"].as_array().unwrap();
    let by_path = |p: &str| {
        tests
            .iter()
            .find(|t| t["path"] == p)
            .unwrap_or_else(|| panic!("no {p}: {json}"))
    };
    let write = by_path("headroom.ceiling.pcie.8GT-x1.rockchip.mps128.mrrs512.effective-write");
    assert_eq!(write["status"], "DONE");
    assert_eq!(write["number"]["unit"], "MB/s");
    assert!((write["number"]["value"].as_f64().unwrap() - 766.379_065_455_988_5).abs() < 1e-9);
    assert_eq!(
        by_path("headroom.pmu_list.pmu.msr.events")["number"]["value"],
        2.0
    );
    let audit = by_path("headroom.survey-plan.audit");
    assert_eq!(audit["status"], "SKIP");
    assert!(
        audit["comment"]
            .as_str()
            .unwrap()
            .starts_with("planned, not run yet: every PCI Express"),
        "{audit}"
    );
    let path = by_path("headroom.path.ceiling");
    assert_eq!(path["status"], "SKIP");
    assert!(
        path["comment"].as_str().unwrap().contains("virtio"),
        "{path}"
    );
}

/// A document with no check and no figure (a `compare` document) says so in one sentence on
/// stderr; the exit stays 0, as for an empty history.
#[test]
fn a_document_with_nothing_to_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cmp.json");
    std::fs::write(
        &file,
        stdout(
            headroom()
                .args(["compare", "--json"])
                .arg(own("results/rpi5-gen2.json"))
                .arg(own("results/rpi5-gen3.json")),
        ),
    )
    .unwrap();
    for (format, what) in [("lava", "LAVA test cases"), ("kcidb", "KCIDB tests")] {
        let out = headroom()
            .args(["report", "--format", format])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            err.trim_end(),
            format!(
                "headroom: warning: {}: this compare document has no check or measured figure: \
                 nothing to report as {what}; give the result documents it was made from instead",
                file.display()
            )
        );
    }
}

/// The Raspberry Pi 5 tree's NVMe link runs at 5 GT/s x1, what the slot
/// allows, below the SSD's own 8 GT/s x4. The audit's text marks it `(downgraded)`, and its
/// finding is info ("the best the slot allows"): LAVA says fail for the link and for that
/// finding, not pass; the check that both ends' best is reached passes (the slot is the
/// limit).
#[test]
fn a_slot_limited_link_is_not_a_lava_pass() {
    let tree = own("kernel-6.1");
    let text = stdout(
        headroom()
            .args(["audit", "--color", "never", "--root"])
            .arg(&tree),
    );
    // The host first, from the tree (its device tree and machine-id), as `report` shows it.
    assert!(
        text.starts_with(
            "Host: Raspberry Pi 5 Model B Rev 1.0, serial 6a7f1c2e9b3d4a10, machine-id \
             5be0d5c1a77f\n"
        ),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains("0001:01:00.0") && l.contains(" link "))
        .unwrap_or_else(|| panic!("no NVMe line in {text}"));
    assert!(
        line.contains("link 5 GT/s x1 (downgraded) of 8 GT/s x4"),
        "{line}"
    );
    let lava = stdout(
        headroom()
            .args(["audit", "--format", "lava", "--root"])
            .arg(&tree),
    );
    let cases = lava_cases(&lava);
    assert_eq!(
        case(&cases, "headroom.pcie.0001_01_00.0.link-not-downgraded").1,
        "fail"
    );
    assert_eq!(
        case(&cases, "headroom.pcie.0001_01_00.0.link-at-both-ends-best").1,
        "pass"
    );
    // "0001:01:00.0 (...) can do 8 GT/s x4 but the port above (...) supports only 5 GT/s x1".
    assert_eq!(
        case(
            &cases,
            "headroom.audit.finding.0001_01_00.0.can-do-but-the-port-above"
        )
        .1,
        "fail",
        "{lava}"
    );
}

/// The finding names of `lava`: `(subject, what it checks)` -> result.
fn finding_names(lava: &str) -> std::collections::BTreeMap<String, String> {
    lava_cases(lava)
        .into_iter()
        .filter_map(|(name, result, _)| {
            Some((
                name.strip_prefix("headroom.audit.finding.")?.to_string(),
                result,
            ))
        })
        .collect()
}

/// A lab tracks a check from run to run by its LAVA name: a finding is named by what it is
/// about and what it checks, not by its place in the list nor its figures, so the next run,
/// with one finding fewer and other figures, names the others as before; a link's arrow is
/// `to` in a name.
#[test]
fn lava_names_stay_the_same_when_the_findings_change() {
    let dir = tempfile::tempdir().unwrap();
    let first = own("results/audit-nvme-downgraded.json");
    let mut next: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    let findings = next["findings"].as_array_mut().unwrap();
    let gone = findings.remove(0);
    assert_eq!(gone["subject"], "0000:01:00.0");
    for f in findings.iter_mut() {
        let m = f["message"].as_str().unwrap().replace("1280", "512");
        f["message"] = m.into();
    }
    let next_file = dir.path().join("next.json");
    std::fs::write(&next_file, next.to_string()).unwrap();
    let lava = |file: &Path| stdout(headroom().args(["report", "--format", "lava"]).arg(file));
    let (before, after) = (
        finding_names(&lava(&first)),
        finding_names(&lava(&next_file)),
    );
    assert_eq!(before.len(), 4, "{before:?}");
    let expected: std::collections::BTreeMap<String, String> = ["dm-1", "dm-2", "sdc"]
        .iter()
        .map(|d| {
            (
                format!("{d}.max_sectors_kb-is-while-the-device-accepts"),
                "pass".to_string(),
            )
        })
        .collect();
    assert_eq!(after, expected);
    assert!(
        expected.iter().all(|(n, r)| before.get(n) == Some(r)),
        "{before:?}"
    );
    let survey = lava(&own("results/survey-rpi5.json"));
    let link = "headroom.disk_nvme0n1.disk.link.PCIe_0000_00_00.0_to_0000_01_00.0.not-downgraded";
    assert!(lava_cases(&survey).iter().any(|c| c.0 == link), "{survey}");
    assert!(!survey.contains("_-_"), "{survey}");
}

/// A lab's history holds runs of many hosts, two boards may share a
/// hostname. `history` lists each run's machine (model, serial, machine-id), `--host` picks
/// the runs of one host by hostname, machine-id beginning or serial, and `compare` of two
/// history ids from boards that share a hostname says they are different hosts.
#[test]
fn the_history_keeps_hosts_apart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lab.sqlite");
    let mut docs = two_board_audits(dir.path());
    // The Pi's tree has no hostname: it is named `rpi5` here, and a second Raspberry Pi gets
    // the same name with its own machine-id and serial.
    let mut pi: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&docs[0]).unwrap()).unwrap();
    pi["host"]["hostname"] = "rpi5".into();
    std::fs::write(&docs[0], pi.to_string()).unwrap();
    let mut twin = pi.clone();
    twin["host"]["machine_id"] = "0f0e0d0c0b0a09080706050403020100".into();
    twin["host"]["serial"] = "10000000c0ffee00".into();
    let twin_file = dir.path().join("twin.json");
    std::fs::write(&twin_file, twin.to_string()).unwrap();
    docs.push(twin_file);
    output_ok(
        headroom()
            .args(["history", "add", "--db"])
            .arg(&db)
            .args(&docs),
    );
    let list = |extra: &[&str]| {
        stdout(
            headroom()
                .args(["history", "--color", "never", "--db"])
                .arg(&db)
                .args(extra),
        )
    };
    let all = list(&[]);
    let header = all.lines().next().unwrap();
    assert!(
        header.contains(" host ") && header.contains(" machine "),
        "{all}"
    );
    let row = |text: &str, id: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no run {id} in {text}"))
            .to_string()
    };
    assert!(
        row(&all, "1").contains(
            "Raspberry Pi 5 Model B Rev 1.0, serial 6a7f1c2e9b3d4a10, machine-id 5be0d5c1a77f"
        ),
        "{all}"
    );
    assert!(
        row(&all, "2").contains("Dell Inc. OptiPlex 7000, serial 7XK2QK3"),
        "{all}"
    );
    assert!(row(&all, "3").contains("machine-id 0f0e0d0c0b0a"), "{all}");
    let ids = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect()
    };
    // By hostname (any case): both boards named rpi5; by a machine-id's beginning or a
    // serial (any case): one.
    assert_eq!(ids(&list(&["--host", "RPI5"])), ["1", "3"]);
    assert_eq!(ids(&list(&["--host", "5be0d5c1"])), ["1"]);
    assert_eq!(ids(&list(&["list", "--host", "0F0E"])), ["3"]);
    assert_eq!(ids(&list(&["--host", "7xk2qk3"])), ["2"]);
    // Fewer than 4 digits is no machine-id: nothing matches, and that is said.
    let none = list(&["--host", "3d1"]);
    assert!(
        none.starts_with(&format!(
            "no run in {} comes from a host named \"3d1\"",
            db.display()
        )),
        "{none}"
    );
    // The JSON listing carries the identity.
    let json: serde_json::Value = serde_json::from_str(&stdout(
        headroom().args(["history", "--json", "--db"]).arg(&db),
    ))
    .unwrap();
    assert_eq!(
        json["runs"][2]["machine_id"],
        "0f0e0d0c0b0a09080706050403020100"
    );
    // compare of two history ids: the same hostname, two machines.
    let cmp = stdout(headroom().args(["compare", "1", "3", "--db"]).arg(&db));
    assert!(cmp.contains("The runs come from different hosts"), "{cmp}");
    let cmp = stdout(headroom().args(["compare", "1", "1", "--db"]).arg(&db));
    assert!(!cmp.contains("different hosts"), "{cmp}");
    // --host belongs to the listing.
    let out = headroom()
        .args(["history", "--host", "rpi5", "show", "1", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
