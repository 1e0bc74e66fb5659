//! A scratch tmpfs for the tests that need a filesystem of their own (read-only, small).

use std::path::Path;
use std::process::Command;

/// `mount ARGS MNT`; whether it succeeded.
fn mount(args: &[&str], mnt: &Path) -> bool {
    Command::new("mount")
        .args(args)
        .arg(mnt)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `test` with the mount point of a fresh 8 MiB tmpfs (only its owner may write it), unmounted afterwards, also when
/// `test` fails; skipped with a note where no tmpfs can be mounted (it needs root).
pub fn on_tmpfs(test: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    let mnt = dir.path();
    // mode=0700: a tmpfs's root is 1777 by default, a directory every user can write.
    if !mount(&["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs"], mnt) {
        crate::skip::skip("cannot mount a tmpfs here (needs root)");
        return;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(mnt)));
    let _ = Command::new("umount").arg(mnt).status();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Makes the tmpfs at `mnt` read-only; whether that worked.
pub fn remount_read_only(mnt: &Path) -> bool {
    mount(&["-o", "remount,ro"], mnt)
}
