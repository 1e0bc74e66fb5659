//! How a refusal by the kernel is worded: advice to run as root is for those who are not.
//!
//! EPERM and EACCES also reach root: an immutable or append-only file (chattr(1)), a Linux
//! Security Module (SELinux, AppArmor, Landlock), a container's device cgroup or seccomp
//! filter, or kernel lockdown
//! (Documentation/admin-guide/LSM/, kernel_lockdown(7)) refuse what no file mode grants. A
//! message that says "or run as root" to root sends the user in a circle.

/// The words after "permission denied" for a process that is root (`is_root`) or not:
/// `unprivileged` (what a user can do, e.g. "choose a directory you can write to, or run as
/// root") when not root, and what refuses root otherwise.
pub fn refusal(is_root: bool, unprivileged: &str) -> String {
    if is_root {
        "refused even to root: an immutable or append-only file (lsattr shows i or a), a \
         security module (SELinux, AppArmor), a container's device or seccomp policy, or \
         kernel lockdown forbids it here"
            .to_string()
    } else {
        unprivileged.to_string()
    }
}

/// Why an existing file must not be written in place by a user who runs headroom (`euid`),
/// `None` when it may: a regular file of that user with no other name. In a directory others
/// can write (/tmp, /dev/shm), anything else may have been put there to make root write
/// another file: someone else's file, or a second name (hard link) of a file elsewhere.
/// `is_file`, `owner` and `links` are the opened file's own (fstat), never the name's, and
/// the open itself must not follow a symbolic link (O_NOFOLLOW).
pub fn why_not_overwritable(is_file: bool, owner: u32, links: u64, euid: u32) -> Option<String> {
    if !is_file {
        Some("it is not a regular file".into())
    } else if owner != euid {
        Some(format!(
            "it belongs to user {owner}, and headroom writes only into its own user's files \
             (another user may have put it there); remove it or choose another name"
        ))
    } else if links > 1 {
        Some(format!(
            "it has {links} names (hard links), and writing it would change the others; \
             remove it or choose another name"
        ))
    } else {
        None
    }
}

/// The sentence for a write that met a symbolic link where O_NOFOLLOW refused it (ELOOP).
pub const SYMLINK_REFUSED: &str = "it is a symbolic link, which headroom does not follow when \
     it writes (another user could point it at any file); give the path of the file itself";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_own_regular_files_with_one_name_are_overwritten() {
        assert_eq!(why_not_overwritable(true, 0, 1, 0), None);
        assert_eq!(why_not_overwritable(true, 1000, 1, 1000), None);
        let m = why_not_overwritable(true, 65534, 1, 0).unwrap();
        assert!(m.starts_with("it belongs to user 65534"), "{m}");
        let m = why_not_overwritable(true, 0, 2, 0).unwrap();
        assert!(m.starts_with("it has 2 names (hard links)"), "{m}");
        let m = why_not_overwritable(false, 0, 1, 0).unwrap();
        assert_eq!(m, "it is not a regular file");
    }

    #[test]
    fn root_is_not_told_to_run_as_root() {
        let user = "choose a directory you can write to, or run as root";
        assert_eq!(refusal(false, user), user);
        let root = refusal(true, user);
        assert!(!root.contains("run as root") && root.contains("refused even to root"));
    }
}
