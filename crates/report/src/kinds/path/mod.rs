//! `headroom path`: its document (the chain of hardware a target crosses, each link with its
//! ceiling, the bottleneck) and what a report shows of a path, its own or a bench's.

/// Its terminal text.
pub mod text;

use crate::document::{Document, DocumentError, DocumentKind};
use crate::export::cases::Case;
use crate::summary::{put, CeilingRow, Summary};
use crate::words::hop_line;
use model::path::{Hop, TargetPath};
use model::units::MB;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `headroom path --json` writes (the envelope aside).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathDocument {
    /// The root sysfs and procfs were read under (`/`, or a captured tree).
    pub root: PathBuf,
    pub path: TargetPath,
}

/// The path's hops, links, bottleneck and ceiling for every renderer: `headroom path`'s and
/// the one a benchmark carries beside its numbers.
pub(crate) fn summarize(s: &mut Summary, p: TargetPath) {
    let c = &p.chain;
    s.target = s.target.take().or(Some(c.target.clone()));
    s.hops = c.hops.iter().map(hop_line).collect();
    s.chain_stopped = c.stopped.clone();
    // The filesystem the target is on changes what a number means (tmpfs does no
    // block I/O): compared like a parameter.
    if let Some(fs) = c.hops.iter().find(|h| matches!(h, Hop::Filesystem { .. })) {
        put(
            s,
            "filesystem",
            hop_line(fs).trim_start_matches("filesystem: ").to_string(),
        );
    }
    if s.ceiling.is_none() {
        if let Some(b) = p.bottleneck_link() {
            s.ceiling = b.ceiling_to_cpu_bps().map(|c| CeilingRow {
                mb_s: c / MB,
                bottleneck: format!("{} {}", b.name, b.state),
            });
        }
    }
    s.bottleneck_from_cpu = p
        .bottleneck_from_cpu
        .or_else(|| TargetPath::find_bottleneck_from_cpu(&p.links))
        .filter(|i| Some(*i) != p.bottleneck);
    s.links = p.links;
    s.bottleneck = p.bottleneck;
    s.no_ceiling_reason = p.no_bottleneck_reason;
}

/// `headroom path` as every report reads it: its facts are the path's, which every kind's
/// summary shows.
pub struct PathKind;

impl super::Kind for PathKind {
    fn kind(&self) -> DocumentKind {
        <PathDocument as super::KindDocument>::KIND
    }

    fn fields(&self) -> &'static [&'static str] {
        &["path"]
    }

    /// A path that has no link with a ceiling (virtio, tmpfs) says why,
    /// as a skip: the figure a lab tracks could not be had.
    fn own_cases(
        &self,
        _doc: &Document,
        s: &Summary,
        _origin: &str,
    ) -> Result<Vec<Case>, DocumentError> {
        let mut out = Vec::new();
        if s.ceiling.is_none() {
            out.push(Case::skip(
                vec!["path".into(), "ceiling".into()],
                s.no_ceiling_reason
                    .clone()
                    .unwrap_or_else(|| "no link on this path has a ceiling".into()),
            ));
        }
        Ok(out)
    }
}

impl super::KindDocument for PathDocument {
    const KIND: DocumentKind = DocumentKind::Path;

    fn text(&self, how: &super::Text<'_>) -> String {
        text::render(
            &self.path,
            how.pci_names.unwrap_or(&|_| String::new()),
            &how.style,
        )
    }
}
