//! sshd's StrictModes for the hub's token file: whoever can write the file, or any directory
//! above it (and so put another file in its place), can let themselves in; whoever can read
//! it learns who may. So the file must be its owner's alone, and every directory up to `/`
//! writable only by the file's owner or root. A world-writable directory with the sticky
//! bit (like `/tmp`) passes, since nobody else can replace a name in it, but only for a
//! file that is the hub's user's or root's.

use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Whether the opened token `file` at `path` (`meta` its metadata) may be trusted by a hub
/// running as `hub_uid`; the refusal names the file or directory and what to run.
pub fn check_file(path: &Path, file: &std::fs::File, meta: &std::fs::Metadata, hub_uid: u32) -> Result<(), String> {
    let shown = path.display();
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "token file {shown} can be changed by others (mode {mode:03o}): anyone who can write it can let themselves in; run chmod 600 {shown}"
        ));
    }
    if mode & 0o044 != 0 {
        return Err(format!(
            "token file {shown} can be read by group or others (mode {mode:03o}); run chmod 600 {shown}"
        ));
    }
    let owner = meta.uid();
    // The directories of the file that was opened, symlinks resolved: those are the ones
    // whose writers could swap it.
    let real = real_path(file, path)?;
    for dir in real.ancestors().skip(1) {
        let dir_meta = std::fs::metadata(dir)
            .map_err(|e| format!("token file {shown}: cannot look at its directory {}: {e}", dir.display()))?;
        check_dir(path, dir, dir_meta.mode() & 0o7777, dir_meta.uid(), owner, hub_uid)?;
    }
    Ok(())
}

/// One directory above the token file (owned by `file_owner`): `dir` with `mode`, owned
/// by `dir_owner`.
fn check_dir(path: &Path, dir: &Path, mode: u32, dir_owner: u32, file_owner: u32, hub_uid: u32) -> Result<(), String> {
    let (shown, dir_shown) = (path.display(), dir.display());
    if dir_owner != 0 && dir_owner != file_owner {
        return Err(format!(
            "token file {shown}: its directory {dir_shown} belongs to uid {dir_owner}, who could replace the file; it must belong to root or to the file's owner"
        ));
    }
    if mode & 0o022 == 0 {
        return Ok(());
    }
    if mode & 0o1000 == 0 {
        return Err(format!(
            "token file {shown}: its directory {dir_shown} can be written by group or others (mode {:03o}), who could replace the file; run chmod go-w {dir_shown} or move the file",
            mode & 0o777
        ));
    }
    if file_owner != hub_uid && file_owner != 0 {
        return Err(format!(
            "token file {shown} lies under the shared directory {dir_shown} but belongs to uid {file_owner}, neither the hub's user nor root"
        ));
    }
    Ok(())
}

/// Where the opened file really is: the kernel's name for the descriptor, else the path
/// resolved now.
fn real_path(file: &std::fs::File, path: &Path) -> Result<PathBuf, String> {
    let by_fd = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()));
    match by_fd {
        Ok(real) if real.is_absolute() => Ok(real),
        _ => std::fs::canonicalize(path).map_err(|e| format!("token file {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The check as the hub makes it, on a file at `path`.
    fn check(path: &Path, hub_uid: u32) -> Result<(), String> {
        let file = std::fs::File::open(path).unwrap();
        let meta = file.metadata().unwrap();
        check_file(path, &file, &meta, hub_uid)
    }

    fn me() -> u32 {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn a_file_others_can_read_or_write_is_refused_with_the_mode_to_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub-tokens");
        std::fs::write(&path, "").unwrap();
        chmod(&path, 0o600);
        assert_eq!(check(&path, me()), Ok(()));
        chmod(&path, 0o400);
        assert_eq!(check(&path, me()), Ok(()));
        for (mode, words) in [(0o640, "read by group or others (mode 640)"), (0o604, "(mode 604)")] {
            chmod(&path, mode);
            let err = check(&path, me()).unwrap_err();
            assert!(err.contains(words), "{err}");
            assert!(err.ends_with(&format!("run chmod 600 {}", path.display())), "{err}");
        }
        chmod(&path, 0o620);
        assert!(check(&path, me()).unwrap_err().contains("can be changed by others (mode 620)"));
    }

    #[test]
    fn a_directory_above_others_can_write_is_refused_unless_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("etc");
        std::fs::create_dir(&inner).unwrap();
        let path = inner.join("hub-tokens");
        std::fs::write(&path, "").unwrap();
        chmod(&path, 0o600);
        for mode in [0o770, 0o757, 0o777] {
            chmod(&inner, mode);
            let err = check(&path, me()).unwrap_err();
            assert!(err.contains(&format!("its directory {} can be written by group or others", inner.display())));
            assert!(err.contains("chmod go-w"), "{err}");
        }
        // Two levels up counts as much as the file's own directory.
        chmod(&inner, 0o700);
        chmod(dir.path(), 0o777);
        assert!(check(&path, me()).unwrap_err().contains(&dir.path().display().to_string()));
        // Sticky, like /tmp: fine for a file of the hub's user.
        chmod(dir.path(), 0o1777);
        assert_eq!(check(&path, me()), Ok(()));
        chmod(dir.path(), 0o700);
    }

    #[test]
    fn directories_of_other_users_and_shared_ones_follow_the_owners() {
        let (file, dir) = (Path::new("/srv/hub-tokens"), Path::new("/srv"));
        let rule = |mode, dir_owner, file_owner, hub| check_dir(file, dir, mode, dir_owner, file_owner, hub);
        // Root's or the file owner's, written by nobody else: fine.
        assert_eq!(rule(0o755, 0, 1000, 1000), Ok(()));
        assert_eq!(rule(0o700, 1000, 1000, 1000), Ok(()));
        // Another user's directory: they could replace the file, whatever its mode says.
        for mode in [0o755, 0o555] {
            let err = rule(mode, 65534, 1000, 1000).unwrap_err();
            assert!(err.contains("/srv belongs to uid 65534, who could replace the file"), "{err}");
        }
        // Shared and sticky: only for a file of the hub's user or root.
        assert_eq!(rule(0o1777, 0, 1000, 1000), Ok(()));
        assert_eq!(rule(0o1777, 0, 0, 1000), Ok(()));
        let err = rule(0o1777, 0, 2000, 1000).unwrap_err();
        assert!(err.contains("lies under the shared directory /srv but belongs to uid 2000"), "{err}");
        // Shared, not sticky: never.
        assert!(rule(0o775, 0, 1000, 1000).unwrap_err().contains("(mode 775)"));
        assert!(rule(0o777, 1000, 1000, 1000).unwrap_err().contains("can be written by group or others"));
    }
}
