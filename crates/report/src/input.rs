//! Opening the files a user names as input: result documents (`report`, `compare`, `history
//! add`), the history (`--db`), `audit --expect`'s manifest and `--lspci`'s dump, `report
//! --md`'s look at its value, `bench net`'s RSA keys and authorized users file. One routine,
//! so that no input is left out of what every input must refuse:
//!
//! - opened without blocking (O_NONBLOCK, which a regular file ignores), so a FIFO in its
//!   place is refused at once instead of waiting for a writer for ever;
//! - only a regular file is read, judged on the opened file itself (fstat): a FIFO, a
//!   socket, a device (`/dev/zero` never ends) or a directory is refused, each by name;
//! - never more than the caller's bound, even from a file that grows while it is read.
//!
//! Each caller words the refusal for its input ([`InputError::describe`] is the plain one).

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The system refused the open or the read (missing file, permission).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It is not a regular file: what it is instead ("a FIFO (a named pipe)", "a device").
    #[error("it is {0}, not a file")]
    NotAFile(&'static str),
    /// It holds more than the bound: its size in bytes (at least the bound and one).
    #[error("it is larger than the bound")]
    TooLarge(u64),
}

impl InputError {
    /// The plain sentence for input `path`, which should be `what` ("the manifest (TOML)"),
    /// at most `max` bytes.
    pub fn describe(&self, path: &Path, what: &str, max: u64) -> String {
        let p = path.display();
        match self {
            InputError::Io(e) => format!("cannot read {p}: {e}"),
            InputError::NotAFile(kind) => format!("{p} is {kind}, not a file: give {what}"),
            InputError::TooLarge(_) => format!(
                "{p} is larger than {}, more than {what} can be",
                bound_text(max)
            ),
        }
    }
}

/// `max` bytes as a person reads it (`64 MiB`, `1 MiB`, `4096 bytes`).
fn bound_text(max: u64) -> String {
    if max >= 1 << 20 && max % (1 << 20) == 0 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    }
}

/// What a file of type `t` is, when it is not a regular file.
fn not_a_file(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (a named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Open input `path` to read it: a regular file, or the refusal.
pub fn open(path: &Path) -> Result<(File, std::fs::Metadata), InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if let Some(kind) = not_a_file(meta.file_type()) {
        return Err(InputError::NotAFile(kind));
    }
    Ok((f, meta))
}

/// The bytes of input `path`, at most `max` of them.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    let (f, meta) = open(path)?;
    if meta.len() > max {
        return Err(InputError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    // The file may grow while it is read: never more than the bound and one byte.
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(InputError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The text of input `path` (UTF-8), at most `max` bytes.
pub fn read_text(path: &Path, max: u64) -> Result<String, InputError> {
    String::from_utf8(read(path, max)?).map_err(|_| {
        InputError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_regular_files_within_the_bound_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("in.txt");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read(&f, 10).unwrap(), b"0123456789");
        assert!(matches!(read(&f, 9), Err(InputError::TooLarge(10))));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo, 10).unwrap_err();
        assert_eq!(
            e.describe(&fifo, "the manifest (TOML)", 1 << 20),
            format!(
                "{} is a FIFO (a named pipe), not a file: give the manifest (TOML)",
                fifo.display()
            )
        );
        assert!(matches!(
            read(Path::new("/dev/zero"), 10),
            Err(InputError::NotAFile("a device"))
        ));
        assert!(matches!(
            read(dir.path(), 10),
            Err(InputError::NotAFile("a directory"))
        ));
        let e = read(&f, 4).unwrap_err().describe(&f, "a key", 1 << 20);
        assert!(
            e.ends_with("is larger than 1 MiB, more than a key can be"),
            "{e}"
        );
    }
}
