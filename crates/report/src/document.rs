//! The result document: one versioned JSON format for every command.
//!
//! A document is an object whose first fields are the [`Envelope`] (`schema_version`,
//! `kind`, `tool`, `created`, `host`) and whose other fields are the command's own body
//! (an audit's `pci`, a disk run's `tests`, ...). The body stays an untyped JSON map here:
//! readers take what they need through [`crate::views`]. The format is described in
//! docs/result-document.md and docs/result-document.schema.json.

use model::system::Host;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// The schema version this headroom writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 2;

/// The name in `tool.name` of every document headroom writes.
pub const TOOL_NAME: &str = "headroom";

/// The envelope's keys: a body field of the same name is replaced by the envelope's.
const ENVELOPE_KEYS: [&str; 5] = ["schema_version", "kind", "tool", "created", "host"];

/// The largest document headroom reads, in bytes (64 MiB). Its own documents are far
/// smaller: an audit takes 1 to 3 kB per PCI function (the captured trees: a few MB for
/// 2,000), a disk run of every profile tens of kB. Reading one takes about ten times its size
/// in memory (the parsed tree, then the typed views: 663 MB for a 61 MiB document of 70,000
/// disk tests), so a file past this bound is refused with a sentence instead of exhausting a
/// board's memory.
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// What a document is: the envelope's `kind`. Every kind headroom writes, under the name its
/// documents carry; a document of another kind is refused when it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DocumentKind {
    #[serde(rename = "audit")]
    Audit,
    #[serde(rename = "path")]
    Path,
    #[serde(rename = "ceiling")]
    Ceiling,
    #[serde(rename = "disk")]
    Disk,
    #[serde(rename = "latency")]
    Latency,
    #[serde(rename = "net")]
    Net,
    #[serde(rename = "mmio")]
    Mmio,
    #[serde(rename = "count")]
    Count,
    /// `count --list`.
    #[serde(rename = "pmu_list")]
    PmuList,
    #[serde(rename = "survey")]
    Survey,
    /// `survey --dry-run`.
    #[serde(rename = "survey-plan")]
    SurveyPlan,
    /// `report --json`.
    #[serde(rename = "report")]
    Report,
    #[serde(rename = "compare")]
    Compare,
    /// `history --json`.
    #[serde(rename = "history")]
    History,
    #[serde(rename = "watch")]
    Watch,
    #[serde(rename = "video")]
    Video,
}

impl DocumentKind {
    pub const ALL: [DocumentKind; 16] = [
        DocumentKind::Audit,
        DocumentKind::Path,
        DocumentKind::Ceiling,
        DocumentKind::Disk,
        DocumentKind::Latency,
        DocumentKind::Net,
        DocumentKind::Mmio,
        DocumentKind::Count,
        DocumentKind::PmuList,
        DocumentKind::Survey,
        DocumentKind::SurveyPlan,
        DocumentKind::Report,
        DocumentKind::Compare,
        DocumentKind::History,
        DocumentKind::Watch,
        DocumentKind::Video,
    ];

    /// The name documents carry in `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Audit => "audit",
            DocumentKind::Path => "path",
            DocumentKind::Ceiling => "ceiling",
            DocumentKind::Disk => "disk",
            DocumentKind::Latency => "latency",
            DocumentKind::Net => "net",
            DocumentKind::Mmio => "mmio",
            DocumentKind::Count => "count",
            DocumentKind::PmuList => "pmu_list",
            DocumentKind::Survey => "survey",
            DocumentKind::SurveyPlan => "survey-plan",
            DocumentKind::Report => "report",
            DocumentKind::Compare => "compare",
            DocumentKind::History => "history",
            DocumentKind::Watch => "watch",
            DocumentKind::Video => "video",
        }
    }
}

impl std::fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `kind` headroom does not write; the message lists the ones it does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its kind `{0}` is none headroom writes: {list}", list = DocumentKind::ALL.map(DocumentKind::as_str).join(", "))]
pub struct UnknownKind(pub String);

impl std::str::FromStr for DocumentKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DocumentKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_string()))
    }
}

/// Which program wrote a document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// The fields every document starts with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema_version: u32,
    /// What the body is: `audit`, `path`, `ceiling`, `disk`, `latency`, ...
    pub kind: DocumentKind,
    /// Absent only in documents written before the envelope existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Tool>,
    /// When the run ended, RFC 3339 in UTC (`2026-11-21T23:30:00Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

impl Envelope {
    /// The envelope of a document made now by headroom `tool_version` on `host` (probe reads
    /// it: report reads no /proc or /sys).
    pub fn now(kind: DocumentKind, tool_version: &str, host: Host) -> Envelope {
        let created = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            });
        Envelope {
            schema_version: SCHEMA_VERSION,
            kind,
            tool: Some(Tool {
                name: TOOL_NAME.to_string(),
                version: tool_version.to_string(),
            }),
            created,
            host: Some(host),
        }
    }
}

/// A result document: the envelope and the command's body.
#[derive(Clone, Debug)]
pub struct Document {
    pub envelope: Envelope,
    /// The command's own fields, without the envelope's.
    pub body: Map<String, Value>,
    /// The JSON text the document was read from ([`Document::parse`]), for
    /// [`Document::view`]'s line and column; `None` for a document made or read from a value.
    text: Option<String>,
}

/// Two documents are equal when their envelopes and bodies are, however they were read.
impl PartialEq for Document {
    fn eq(&self, other: &Document) -> bool {
        self.envelope == other.envelope && self.body == other.body
    }
}

/// Why a document could not be read or made; each message is one sentence naming the file.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("cannot read {origin}: {source}")]
    Io {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{origin} ends in the middle of its JSON (line {line}, column {column}): the file is \
         truncated; use a complete result file or run the test again"
    )]
    Truncated {
        origin: String,
        line: usize,
        column: usize,
    },
    #[error("{origin} is not JSON ({detail}): give a file written by `headroom ... --json`")]
    NotJson { origin: String, detail: String },
    #[error(
        "{origin} is not a headroom result document ({what}): give a file written by \
         `headroom ... --json`"
    )]
    Foreign { origin: String, what: String },
    #[error(
        "{origin} has schema version {found}, newer than the {SCHEMA_VERSION} this headroom \
         {ours} reads: upgrade headroom to read it"
    )]
    Newer {
        origin: String,
        found: u64,
        ours: &'static str,
    },
    #[error(
        "{origin} is {} MiB, above the {} MiB a headroom document can be (its own are a few \
         MB at most, and reading one takes about ten times its size in memory): give a \
         result file written by `headroom ... --json`",
        bytes >> 20,
        MAX_DOCUMENT_BYTES >> 20
    )]
    TooLarge { origin: String, bytes: u64 },
    #[error("{origin} is {what}, not a file: give a result file written by `headroom ... --json`")]
    NotAFile { origin: String, what: &'static str },
    #[error(
        "{origin} says it is of kind `{kind}`, but it lacks `{missing}`, which every {kind} \
         document has (it has {has}): give the document as headroom wrote it"
    )]
    KindMismatch {
        origin: String,
        kind: DocumentKind,
        missing: &'static str,
        has: String,
    },
    #[error("the body of a {kind} document must be a JSON object, not {what}")]
    BodyNotObject {
        kind: DocumentKind,
        what: &'static str,
    },
    #[error("{origin}: the `{kind}` document does not have the expected fields ({detail})")]
    Shape {
        origin: String,
        kind: DocumentKind,
        detail: String,
    },
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Document {
    /// Wrap a command's body (any struct serialising to a JSON object) in `envelope`.
    /// Body fields named like an envelope field (an older `schema_version` or `kind`) are
    /// dropped: the envelope's win.
    pub fn new<T: Serialize>(envelope: Envelope, body: &T) -> Result<Document, DocumentError> {
        let value = serde_json::to_value(body).map_err(|e| DocumentError::Shape {
            origin: "the command's result".into(),
            kind: envelope.kind,
            detail: e.to_string(),
        })?;
        let Value::Object(mut body) = value else {
            return Err(DocumentError::BodyNotObject {
                kind: envelope.kind,
                what: json_type(&value),
            });
        };
        for k in ENVELOPE_KEYS {
            body.shift_remove(k);
        }
        Ok(Document {
            envelope,
            body,
            text: None,
        })
    }

    /// The document as one JSON value: envelope fields first, then the body's in order.
    pub fn to_value(&self) -> Value {
        let mut out = match serde_json::to_value(&self.envelope) {
            Ok(Value::Object(m)) => m,
            // An Envelope is a struct of plain fields: it always serialises to an object.
            _ => Map::new(),
        };
        for (k, v) in &self.body {
            out.insert(k.clone(), v.clone());
        }
        Value::Object(out)
    }

    /// Pretty JSON text with a final newline, as `--json` prints and `--save` writes it, with
    /// the characters a terminal acts on escaped in JSON's syntax ([`crate::outside::json`]).
    pub fn to_json_pretty(&self) -> String {
        let s = serde_json::to_string_pretty(&self.to_value()).unwrap_or_default();
        let mut s = crate::outside::json(&s).into_owned();
        s.push('\n');
        s
    }

    /// Read a document from JSON text; `origin` names it in errors (a file name, `run 12`).
    pub fn parse(text: &str, origin: &str) -> Result<Document, DocumentError> {
        if text.len() as u64 > MAX_DOCUMENT_BYTES {
            return Err(DocumentError::TooLarge {
                origin: origin.to_string(),
                bytes: text.len() as u64,
            });
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            if e.is_eof() {
                DocumentError::Truncated {
                    origin: origin.to_string(),
                    line: e.line(),
                    column: e.column(),
                }
            } else {
                DocumentError::NotJson {
                    origin: origin.to_string(),
                    detail: e.to_string(),
                }
            }
        })?;
        let mut doc = Document::from_value(value, origin)?;
        doc.text = Some(text.to_string());
        Ok(doc)
    }

    /// Read a document from a file.
    pub fn read(path: &Path) -> Result<Document, DocumentError> {
        Document::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Check the envelope of a parsed JSON value and split it from the body.
    pub fn from_value(value: Value, origin: &str) -> Result<Document, DocumentError> {
        let foreign = |what: String| DocumentError::Foreign {
            origin: origin.to_string(),
            what,
        };
        let Value::Object(mut map) = value else {
            return Err(foreign(format!("it holds {}", json_type(&value))));
        };
        if let Some(name) = map
            .get("tool")
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
        {
            if name != TOOL_NAME {
                return Err(foreign(format!("it was written by `{name}`")));
            }
        }
        let version = match map.get("schema_version") {
            None => return Err(foreign("it has no `schema_version`".into())),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| foreign(format!("its `schema_version` is {v}")))?,
        };
        if version > u64::from(SCHEMA_VERSION) {
            return Err(DocumentError::Newer {
                origin: origin.to_string(),
                found: version,
                ours: env!("CARGO_PKG_VERSION"),
            });
        }
        if version == 0 {
            return Err(foreign("its `schema_version` is 0".into()));
        }
        // A kind headroom does not write is refused here, by name, before the rest of the
        // envelope is read.
        if let Some(Value::String(kind)) = map.get("kind") {
            kind.parse::<DocumentKind>()
                .map_err(|e| foreign(e.to_string()))?;
        }
        let mut env_map = Map::new();
        for k in ENVELOPE_KEYS {
            if let Some(v) = map.shift_remove(k) {
                env_map.insert(k.to_string(), v);
            }
        }
        let envelope: Envelope = serde_json::from_value(Value::Object(env_map))
            .map_err(|e| foreign(format!("its envelope is malformed: {e}")))?;
        Ok(Document {
            envelope,
            body: map,
            text: None,
        })
    }

    /// Write the document to `path` atomically (temporary file, then rename): call it
    /// after each test of a run, so an interrupted run keeps what it measured.
    pub fn write(&self, path: &Path) -> Result<(), crate::atomic::WriteError> {
        crate::atomic::write_atomic(path, self.to_json_pretty().as_bytes())
    }

    pub fn kind(&self) -> DocumentKind {
        self.envelope.kind
    }

    /// Read the body through a typed view; `origin` names the document in errors.
    /// A field that is missing or of another type is named with its line and column
    /// (``missing field `runs` at line 12 column 3``): in the text the document was read
    /// from, or, for a document made from a value (a survey's part), in the document as
    /// headroom prints it ([`Document::to_json_pretty`]).
    ///
    /// Read from the text by serde_json alone, so each view type is compiled once, for one
    /// deserializer (reading through serde_path_to_error and `&Value` cost the
    /// x86_64 board binary 195 kB more). The envelope's fields are in that text too: no
    /// view reads a field named like one (`schema_version`, `kind`, `tool`, `created`,
    /// `host`) at its top level.
    pub fn view<T: serde::de::DeserializeOwned>(&self, origin: &str) -> Result<T, DocumentError> {
        let printed;
        let text = match &self.text {
            Some(t) => t.as_str(),
            None => {
                printed = self.to_json_pretty();
                printed.as_str()
            }
        };
        serde_json::from_str(text).map_err(|e| DocumentError::Shape {
            origin: origin.to_string(),
            kind: self.envelope.kind,
            detail: e.to_string(),
        })
    }
}

/// The text of the document file `path`, for [`Document::parse`]: refused with a sentence
/// when it is not a regular file (a FIFO would block the read forever, a device never end)
/// or is larger than [`MAX_DOCUMENT_BYTES`]. The file is opened without blocking (O_NONBLOCK,
/// which a regular file ignores), so a FIFO put in its place is refused, not waited on.
pub fn read_text(path: &Path) -> Result<String, DocumentError> {
    use crate::input::InputError;
    let origin = path.display().to_string();
    crate::input::read_text(path, MAX_DOCUMENT_BYTES).map_err(|e| match e {
        InputError::Io(source) => DocumentError::Io { origin, source },
        InputError::NotAFile(what) => DocumentError::NotAFile { origin, what },
        InputError::TooLarge(bytes) => DocumentError::TooLarge { origin, bytes },
    })
}

/// Wrap a command's body in a fresh envelope (made now, on `host`) and return the document:
/// what every command's `--json` prints and `--save` stores.
pub fn wrap<T: Serialize>(
    kind: DocumentKind,
    tool_version: &str,
    host: Host,
    body: &T,
) -> Result<Document, DocumentError> {
    Document::new(Envelope::now(kind, tool_version, host), body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn wrap_puts_the_envelope_first_and_replaces_old_envelope_fields() {
        let body = json!({"schema_version": 1, "kind": "disk", "tests": [1, 2], "notes": []});
        let doc = wrap(DocumentKind::Disk, "9.9.9", Host::default(), &body).unwrap();
        let v = doc.to_value();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "schema_version",
                "kind",
                "tool",
                "created",
                "host",
                "tests",
                "notes"
            ]
        );
        assert_eq!(v["tool"]["version"], "9.9.9");
        let created = v["created"].as_str().unwrap();
        assert!(
            time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339)
                .is_ok(),
            "{created}"
        );
        assert!(created.ends_with('Z'), "UTC: {created}");
    }

    #[test]
    fn round_trip_gives_the_same_document() {
        let doc = wrap(
            DocumentKind::Path,
            "0.1.0",
            Host::default(),
            &json!({"path": {"links": []}}),
        )
        .unwrap();
        let text = doc.to_json_pretty();
        let back = Document::parse(&text, "x.json").unwrap();
        assert_eq!(back, doc);
        assert_eq!(back.to_json_pretty(), text);
    }

    #[test]
    fn write_then_read_gives_the_same_document() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.json");
        let doc = wrap(
            DocumentKind::Disk,
            "0.1.0",
            Host::default(),
            &json!({"tests": []}),
        )
        .unwrap();
        doc.write(&p).unwrap();
        assert_eq!(Document::read(&p).unwrap(), doc);
    }

    #[test]
    fn truncated_json_says_truncated() {
        let text = wrap(
            DocumentKind::Path,
            "0.1.0",
            Host::default(),
            &json!({"a": [1, 2, 3]}),
        )
        .unwrap()
        .to_json_pretty();
        let cut = &text[..text.len() / 2];
        let e = Document::parse(cut, "run.json").unwrap_err().to_string();
        assert!(
            e.starts_with("run.json ends in the middle of its JSON"),
            "{e}"
        );
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn a_document_from_before_the_envelope_still_reads() {
        // What `bench disk` printed before it emitted through `wrap`: no tool, created, host.
        let doc = Document::parse(
            r#"{"schema_version": 1, "kind": "disk", "tests": []}"#,
            "old",
        )
        .unwrap();
        assert_eq!(doc.kind(), DocumentKind::Disk);
        assert_eq!(doc.envelope.tool, None);
        assert!(doc.body.contains_key("tests"));
    }

    #[test]
    fn a_newer_schema_says_upgrade() {
        let e = Document::parse(r#"{"schema_version": 3, "kind": "disk"}"#, "new.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("new.json has schema version 3, newer than the 2"),
            "{e}"
        );
        assert!(e.contains("upgrade headroom"), "{e}");
    }

    #[test]
    fn foreign_documents_are_named() {
        let fio = r#"{"fio version": "fio-3.33", "jobs": []}"#;
        let e = Document::parse(fio, "fio.json").unwrap_err().to_string();
        assert!(
            e.contains("fio.json is not a headroom result document (it has no `schema_version`)"),
            "{e}"
        );
        let other =
            r#"{"schema_version": 1, "kind": "x", "tool": {"name": "other", "version": "1"}}"#;
        let e = Document::parse(other, "o.json").unwrap_err().to_string();
        assert!(e.contains("written by `other`"), "{e}");
        let e = Document::parse("[1]", "a.json").unwrap_err().to_string();
        assert!(e.contains("it holds an array"), "{e}");
        let e = Document::parse("hello", "h.txt").unwrap_err().to_string();
        assert!(e.starts_with("h.txt is not JSON"), "{e}");
    }

    #[test]
    fn text_past_the_size_bound_is_refused_before_it_is_parsed() {
        let text = " ".repeat(MAX_DOCUMENT_BYTES as usize + 1);
        let e = Document::parse(&text, "big.json").unwrap_err().to_string();
        assert!(
            e.starts_with("big.json is 64 MiB, above the 64 MiB a headroom document can be"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a path we own, with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo).unwrap_err().to_string();
        assert!(e.ends_with("f is a FIFO (a named pipe), not a file: give a result file written by `headroom ... --json`"), "{e}");
        let e = read_text(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a file"), "{e}");
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused() {
        let e = wrap(DocumentKind::Disk, "0", Host::default(), &[1, 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be a JSON object, not an array"), "{e}");
    }

    #[test]
    fn every_kind_is_written_and_read_under_the_name_documents_carry() {
        let names: Vec<String> = DocumentKind::ALL
            .iter()
            .map(|k| {
                serde_json::to_value(k)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "audit",
                "path",
                "ceiling",
                "disk",
                "latency",
                "net",
                "mmio",
                "count",
                "pmu_list",
                "survey",
                "survey-plan",
                "report",
                "compare",
                "history",
                "watch",
                "video"
            ]
        );
        for (k, name) in DocumentKind::ALL.iter().zip(&names) {
            assert_eq!(k.as_str(), name);
            assert_eq!(name.parse::<DocumentKind>().unwrap(), *k);
            assert_eq!(
                serde_json::from_value::<DocumentKind>(name.as_str().into()).unwrap(),
                *k
            );
        }
        assert_eq!(
            "Disk".parse::<DocumentKind>().unwrap_err().to_string(),
            "its kind `Disk` is none headroom writes: audit, path, ceiling, disk, latency, net, \
             mmio, count, pmu_list, survey, survey-plan, report, compare, history, watch, video"
        );
    }
}
