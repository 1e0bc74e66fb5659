//! The directory a system's files are read under: `/` on a live system, a fixture tree in
//! tests and with `--root`. One type for probe (sysfs, procfs discovery) and counters (the
//! samplers): this module only joins paths; reading them is theirs
//! (`probe::sysfs::read_attr`, `counters::ReadUnder`).
//!
//! A tree read in place of `/` (a capture given with `--root`, a fixture) is also
//! remembered here ([`tree_of`]), so that whoever reads a path made under it resolves the
//! path inside the tree, as a process chrooted there would: a symbolic link in the tree
//! (`etc/hostname -> /etc/shadow`) must not lead out of it to the host's files.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The roots of the trees read in place of `/` by this process: every [`SysRoot`] made but
/// the live `/`. Each distinct root once, so the list is as long as the trees named.
static TREES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The tree (a [`SysRoot`] other than `/`) that `path` was made under, the innermost when
/// trees nest; `None` for a path of the live system. Compared by components, as written:
/// paths made by [`SysRoot::path`] start with their root as it was given.
pub fn tree_of(path: &Path) -> Option<PathBuf> {
    let trees = TREES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    trees
        .iter()
        .filter(|t| path.starts_with(t))
        .max_by_key(|t| t.components().count())
        .cloned()
}

/// The most symbolic links followed while resolving one path by hand: the kernel's own limit
/// (`MAXSYMLINKS`, include/linux/namei.h), past which it answers ELOOP.
pub const MAX_LINK_HOPS: usize = 40;

/// The names a path walks through, in order, for a walk that resolves each one itself (links
/// followed by the walker): its normal components and its `..`; the root and `.` are left out.
pub fn walked_names(p: &Path) -> Vec<std::ffi::OsString> {
    use std::path::Component;
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// A view of the filesystem rooted at a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl SysRoot {
    pub fn new(root: impl Into<PathBuf>) -> SysRoot {
        let r = SysRoot { root: root.into() };
        if !r.is_live() {
            let mut trees = TREES
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !trees.contains(&r.root) {
                trees.push(r.root.clone());
            }
        }
        r
    }

    /// The running system's `/`.
    pub fn system() -> SysRoot {
        SysRoot::new("/")
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is the running system's `/` (not a fixture tree).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// `rel` (an absolute path like `/sys/bus/pci/devices` or `/proc/diskstats`) placed
    /// under the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.root.join(rel)
    }
}

impl Default for SysRoot {
    fn default() -> SysRoot {
        SysRoot::system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_names_each_step_and_keeps_parent_steps() {
        assert_eq!(
            walked_names(Path::new("/a/./b/../c/")),
            ["a", "b", "..", "c"].map(std::ffi::OsString::from)
        );
        assert!(walked_names(Path::new("/")).is_empty());
    }

    #[test]
    fn absolute_paths_land_under_the_root() {
        let r = SysRoot::new("/tmp/fx");
        assert_eq!(
            r.path("/proc/diskstats"),
            PathBuf::from("/tmp/fx/proc/diskstats")
        );
        assert_eq!(r.path("sys/bus/pci"), PathBuf::from("/tmp/fx/sys/bus/pci"));
        assert_eq!(
            SysRoot::system().path("/proc/loadavg"),
            PathBuf::from("/proc/loadavg")
        );
        assert!(SysRoot::system().is_live() && !r.is_live());
        // A relative --root (`--root .`, `--root fixtures/x`) stays relative.
        assert_eq!(SysRoot::new(".").path("/sys"), PathBuf::from("./sys"));
    }

    #[test]
    fn paths_made_under_a_tree_are_known_as_its_own() {
        let outer = SysRoot::new("/tmp/headroom-tree-a");
        let inner = SysRoot::new("/tmp/headroom-tree-a/nested");
        assert_eq!(
            tree_of(&outer.path("/etc/hostname")).as_deref(),
            Some(Path::new("/tmp/headroom-tree-a"))
        );
        assert_eq!(
            tree_of(&inner.path("/sys")).as_deref(),
            Some(Path::new("/tmp/headroom-tree-a/nested"))
        );
        // Another directory whose name only begins the same is not in the tree.
        assert_eq!(tree_of(Path::new("/tmp/headroom-tree-ab/etc")), None);
        assert_eq!(tree_of(&SysRoot::system().path("/etc/hostname")), None);
    }
}
