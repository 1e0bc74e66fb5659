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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_not_told_to_run_as_root() {
        let user = "choose a directory you can write to, or run as root";
        assert_eq!(refusal(false, user), user);
        let root = refusal(true, user);
        assert!(!root.contains("run as root") && root.contains("refused even to root"));
    }
}
