//! Writing the files a user names (`--output`, `report --html FILE`, `survey --md FILE`,
//! `count -o FILE`), as root, possibly in a directory other users can write (/tmp).
//!
//! A whole document is written so that a reader never sees half of it: a temporary file in
//! the same directory (so the rename stays on one filesystem), flushed to disk, then renamed
//! over the target. rename(2) is atomic: an interrupted run leaves the previous complete file
//! or the new complete file, never a truncated one. Benchmarks call this after each test, so
//! a Ctrl-C keeps what was measured so far (hyperfine's habit).
//!
//! The temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW under a name with random
//! characters (the `tempfile` crate's): open(2) then neither follows a symbolic link in its
//! place nor reuses an existing file, and no other user can guess the name to plant one (a
//! name made of the pid was predictable from /proc/sys/kernel/ns_last_pid, and a
//! link planted there made root overwrite the file it pointed to). The rename replaces the
//! target's name itself: a link at the target is replaced, not followed.

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

/// The directory `path` is in (`.` for a bare name).
fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A new temporary file beside `path` (`.NAME.XXXXXX.tmp`, six random characters from
/// tempfile's `Builder`), opened O_CREAT|O_EXCL|O_NOFOLLOW (a name that exists, link or not,
/// is never opened: the next random name is tried); removed when dropped unless persisted.
/// Its mode is 0666 less the umask, as `File::create` makes an output (0644 under the usual
/// umask 022): a result file is for others to read, as before. Errors are the system's own
/// (EROFS, EACCES), for the caller's sentence.
fn temporary_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .make_in(directory_of(path), |p| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(p)
        })
}

/// Whether a file can be written at `path` the way [`write_atomic`] will: a temporary file is
/// created beside it and removed at once. For checking an output before a long run.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    temporary_beside(path).map(drop)
}

/// Replace `path` with `bytes` atomically (temporary file in the same directory, fsync,
/// rename). On error the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = temporary_beside(path).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    // On failure the temporary file is removed when the error drops it.
    tmp.persist(path).map_err(|e| err(e.error))?;
    // The rename itself is durable only once the directory is synced; a failure here (some
    // filesystems refuse fsync on a directory) does not undo the write.
    if let Ok(d) = File::open(directory_of(path)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Open `path` to write a stream into it (`count -o FILE`, written as it counts), emptied
/// first. What [`write_atomic`] guarantees by its rename is checked here instead: a
/// symbolic link is not followed (O_NOFOLLOW), and an existing file is written only when it
/// is a regular file of the user running headroom with no other name (a hard link): in a
/// directory others can write, anything else may have been planted there to make root
/// overwrite another file.
pub fn create_stream(path: &Path) -> Result<File, WriteError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |why: String| err(std::io::Error::other(why));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o666)
        // O_NONBLOCK: a FIFO in its place is refused below instead of blocking the open.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse(model::privilege::SYMLINK_REFUSED.into()),
            _ => err(e),
        })?;
    let meta = f.metadata().map_err(err)?;
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if let Some(why) =
        model::privilege::why_not_overwritable(meta.is_file(), meta.uid(), meta.nlink(), euid)
    {
        return Err(refuse(why));
    }
    f.set_len(0).map_err(err)?;
    Ok(f)
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

    /// A link at the target is replaced by the document, never followed; the file it
    /// pointed to is untouched. The result is readable by others, as `File::create` made it.
    #[test]
    fn a_link_at_the_target_is_replaced_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let p = dir.path().join("run.json");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(&p).unwrap();
        assert!(meta.is_file());
        // SAFETY: umask(2) only swaps the mask; the old one is put back at once.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        assert_eq!(meta.permissions().mode() & 0o777, 0o666 & !umask);
    }

    #[test]
    fn a_stream_refuses_links_and_other_names_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_stream(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&victim, &hard).unwrap();
        let e = create_stream(&hard).unwrap_err().to_string();
        assert!(e.contains("has 2 names (hard links)"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        // An own file is emptied and written.
        let own = dir.path().join("counts.txt");
        std::fs::write(&own, b"old counts, longer").unwrap();
        create_stream(&own).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&own).unwrap(), b"new");
    }
}
