//! Operating-system helpers: who the server runs as, ownership, copying a
//! cluster directory, random passwords.

use std::ffi::{CStr, CString};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use super::Error;

/// The OS account the server runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerOwner {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// True when we are root and must switch to this account for the
    /// server's processes (PostgreSQL refuses to run as root).
    pub switch: bool,
}

impl ServerOwner {
    /// As root: the account `root_user` (normally `postgres`); otherwise
    /// the current account.
    pub fn resolve(root_user: &str) -> Result<Self, Error> {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if euid == 0 {
            let (uid, gid) = lookup_user(root_user)?.ok_or_else(|| Error::OsUserMissing {
                user: root_user.to_string(),
            })?;
            return Ok(ServerOwner {
                name: root_user.to_string(),
                uid,
                gid,
                switch: true,
            });
        }
        // SAFETY: getegid has no preconditions.
        let egid = unsafe { libc::getegid() };
        Ok(ServerOwner {
            name: user_name(euid).unwrap_or_else(|| euid.to_string()),
            uid: euid,
            gid: egid,
            switch: false,
        })
    }

    /// Makes `cmd` run as this account (no-op unless switching from root).
    /// Whether commands run as another OS user (we run as root).
    pub fn is_switched(&self) -> bool {
        self.switch
    }

    pub fn apply(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        if self.switch {
            cmd.uid(self.uid).gid(self.gid);
            cmd.env("USER", &self.name).env("LOGNAME", &self.name);
        }
    }

    /// Gives `path` and everything below it to this account.
    pub fn chown_tree(&self, path: &Path) -> Result<(), Error> {
        if !self.switch {
            return Ok(());
        }
        self.chown(path)?;
        let meta = fs::symlink_metadata(path)
            .map_err(|e| Error::io(format!("inspecting {}", path.display()), e))?;
        if meta.is_dir() {
            let entries = fs::read_dir(path)
                .map_err(|e| Error::io(format!("listing {}", path.display()), e))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| Error::io(format!("listing {}", path.display()), e))?;
                self.chown_tree(&entry.path())?;
            }
        }
        Ok(())
    }

    /// Gives `path` (only) to this account (no-op unless switching from root).
    pub fn chown(&self, path: &Path) -> Result<(), Error> {
        if !self.switch {
            return Ok(());
        }
        std::os::unix::fs::lchown(path, Some(self.uid), Some(self.gid))
            .map_err(|e| Error::io(format!("changing the owner of {}", path.display()), e))
    }
}

/// Looks up `(uid, gid)` of a user name; `Ok(None)` if there is no such user.
fn lookup_user(name: &str) -> Result<Option<(u32, u32)>, Error> {
    let cname = CString::new(name).map_err(|_| Error::InvalidOption {
        option: "server OS user",
        reason: "contains a NUL byte".to_string(),
    })?;
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers refer to live, correctly sized buffers.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 {
        return Err(Error::io(
            format!("looking up OS user {name}"),
            io::Error::from_raw_os_error(rc),
        ));
    }
    if result.is_null() {
        return Ok(None);
    }
    Ok(Some((pwd.pw_uid, pwd.pw_gid)))
}

/// The login name of `uid`, if it has one.
fn user_name(uid: u32) -> Option<String> {
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers refer to live, correctly sized buffers.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) };
    name.to_str().ok().map(str::to_string)
}

/// A password: `Debug` shows `"********"`, never the text.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"********\"")
    }
}

impl Secret {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Copies directory `from` to the new directory `to`, keeping permission bits.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    let mode = fs::metadata(from)
        .map_err(|e| Error::io(format!("inspecting {}", from.display()), e))?
        .permissions()
        .mode();
    fs::DirBuilder::new()
        .mode(mode & 0o7777)
        .create(to)
        .map_err(|e| Error::io(format!("creating {}", to.display()), e))?;
    let entries =
        fs::read_dir(from).map_err(|e| Error::io(format!("listing {}", from.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", from.display()), e))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| Error::io(format!("inspecting {}", src.display()), e))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&src)
                .map_err(|e| Error::io(format!("reading link {}", src.display()), e))?;
            std::os::unix::fs::symlink(target, &dst)
                .map_err(|e| Error::io(format!("creating link {}", dst.display()), e))?;
        } else {
            fs::copy(&src, &dst).map_err(|e| {
                Error::io(format!("copying {} to {}", src.display(), dst.display()), e)
            })?;
        }
    }
    Ok(())
}

/// Writes a new file with the given mode (umask does not widen it).
pub(crate) fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), Error> {
    use std::io::Write;
    let context = || format!("writing {}", path.display());
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Error::io(context(), e))?;
    file.write_all(contents)
        .map_err(|e| Error::io(context(), e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(context(), e))
}

/// Makes `dir` reachable by its owner only (mode 0700): a throwaway
/// instance's directory holds its socket, its password file and its log.
pub(crate) fn make_private(dir: &Path) -> Result<(), Error> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("changing the mode of {}", dir.display()), e))
}

/// A libpq password file (mode 0600, owned by the current user) whose one
/// line gives `password` to `user` on every host, port and database.
pub(crate) fn write_passfile(path: &Path, user: &str, password: &Secret) -> Result<(), Error> {
    let field = |text: &str| text.replace('\\', "\\\\").replace(':', "\\:");
    let line = format!("*:*:*:{}:{}\n", field(user), field(password.as_str()));
    write_file(path, line.as_bytes(), 0o600)
}

/// A random password of 32 hexadecimal digits from the kernel's generator.
pub(crate) fn random_password() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `bytes`.
        let n = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io("reading random bytes", err));
        }
        filled += n as usize;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_show_in_debug() {
        let text = format!("{:?}", Secret("hunter2".to_string()));
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn passwords_differ_and_are_hex() {
        let a = random_password().unwrap();
        let b = random_password().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn password_files_escape_colons_and_backslashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        write_passfile(&path, "a:b", &Secret("p\\q:r".to_string())).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "*:*:*:a\\:b:p\\\\q\\:r\n"
        );
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn copy_tree_keeps_modes_and_contents() {
        let src = tempfile::tempdir().unwrap();
        fs::create_dir(src.path().join("sub")).unwrap();
        write_file(&src.path().join("sub/key"), b"secret", 0o600).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let to = dst.path().join("copy");
        copy_tree(src.path(), &to).unwrap();
        let meta = fs::metadata(to.join("sub/key")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(to.join("sub/key")).unwrap(), b"secret");
    }
}
