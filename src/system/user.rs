//! Users of this machine: a uid's login name from the password database, and the one
//! check a user name passes before it is trusted (the hub's audit lines, a process's owner).
//! Below the server and the backends alike, so neither imports the other for it.

/// The longest user name accepted (audit lines and the cockpit's header show it).
pub const MAX_USER_CHARS: usize = 64;

/// The login name of `uid` from the password database, if it has one.
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `passwd` is plain old data that getpwuid_r fills in; `buf` outlives every
        // pointer into it that `pwd` receives, and its length is passed along.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points at a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return name.to_str().ok().filter(|n| check_user(n).is_ok()).map(str::to_string);
    }
}

/// A user name as the audit log will carry it: one word of printable characters.
pub fn check_user(user: &str) -> Result<(), String> {
    if user.is_empty() {
        return Err("the user is empty".into());
    }
    if user.chars().count() > MAX_USER_CHARS {
        return Err(format!("the user name is longer than {MAX_USER_CHARS} characters"));
    }
    if user.chars().any(|c| crate::safe_text::is_unsafe(c) || c.is_whitespace()) {
        return Err(format!("the user {:?} holds a space or control character", crate::safe_text::printable(user)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_have_names() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        // SAFETY: getuid has no preconditions.
        let me = unsafe { libc::getuid() };
        assert!(user_name(me).is_some());
    }
}
