//! The directory a system's files are read under: `/` on a live system, a fixture tree in
//! tests and with `--root`. One type for probe (sysfs, procfs discovery) and counters (the
//! samplers): this module only joins paths; reading them is theirs
//! (`probe::sysfs::read_attr`, `counters::ReadUnder`).

use std::path::{Path, PathBuf};

/// A view of the filesystem rooted at a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl SysRoot {
    pub fn new(root: impl Into<PathBuf>) -> SysRoot {
        SysRoot { root: root.into() }
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
}
