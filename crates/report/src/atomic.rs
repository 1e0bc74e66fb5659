//! Writing a file so that a reader never sees half of it: a temporary file in the same
//! directory (so the rename stays on one filesystem), flushed to disk, then renamed over the
//! target. rename(2) is atomic: an interrupted run leaves the previous complete file or the
//! new complete file, never a truncated one. Benchmarks call this after each test, so a
//! Ctrl-C keeps what was measured so far (hyperfine's habit).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a file could not be written; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Replace `path` with `bytes` atomically (temporary file in the same directory, fsync,
/// rename). On error the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| {
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path names no file",
            ))
        })?
        .to_string_lossy()
        .into_owned();
    // The pid keeps two processes writing the same target from sharing a temporary file.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable only once the directory is synced; a failure here
        // (some filesystems refuse fsync on a directory) does not undo the write.
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only run.json remains");
    }

    #[test]
    fn a_missing_directory_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/dir/run.json");
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.starts_with("cannot write "), "{e}");
        assert!(e.contains("no/such/dir/run.json"), "{e}");
    }
}
