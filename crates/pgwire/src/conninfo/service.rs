//! Connection service files (`pg_service.conf`).
//!
//! The service named by `service` (or `PGSERVICE`) is looked up first in
//! the user's file (`servicefile`, else `PGSERVICEFILE`, else
//! `~/.pg_service.conf` if it exists) and then in `pg_service.conf` under
//! `PGSYSCONFDIR` (or the built-in directory); the first file with the
//! section wins. Its `key=value` lines fill options that are still unset.
//! The format is libpq's, not a general INI dialect: no spaces around `=`,
//! keys must be connection keywords, and `service` may not be nested.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::parse::is_c_space;
use super::{ConnOptions, Env, Error};

/// libpq reads service files with a 1024-byte line buffer.
const LINE_LIMIT: usize = 1023;

/// Fills unset options from the service entry, if a service is named.
pub(crate) fn apply(options: &mut ConnOptions, env: &Env) -> Result<(), Error> {
    let service = match options.get("service").or_else(|| env.var("PGSERVICE")) {
        Some(service) => service.to_owned(),
        None => return Ok(()),
    };
    let user_file = match options
        .get("servicefile")
        .or_else(|| env.var("PGSERVICEFILE"))
    {
        Some(file) => Some(PathBuf::from(file)),
        None => env
            .home_dir()
            .map(|home| home.join(".pg_service.conf"))
            .filter(|p| fs::metadata(p).is_ok()),
    };
    if let Some(file) = user_file {
        if apply_file(&file, &service, options)? {
            return Ok(());
        }
    }
    let system_file = env.sysconfdir().join("pg_service.conf");
    if fs::metadata(&system_file).is_ok() && apply_file(&system_file, &service, options)? {
        return Ok(());
    }
    Err(Error::ServiceNotFound { service })
}

fn trim_c_space(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_ascii() && is_c_space(c as u8))
}

/// Applies the section `[service]` of `path`; returns whether it was there.
///
/// A directory opens but reads as nothing, as with libpq's `fopen` and
/// `fgets`: the service is then looked for in the next file.
fn apply_file(path: &Path, service: &str, options: &mut ConnOptions) -> Result<bool, Error> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => Vec::new(),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
            return Err(Error::ServiceFileNotFound {
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            return Err(Error::ServiceFileRead {
                path: path.to_path_buf(),
                source: e,
            })
        }
    };
    let mut in_section = false;
    for (index, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let line_number = index + 1;
        if raw.len() >= LINE_LIMIT {
            return Err(Error::ServiceFileLineTooLong {
                path: path.to_path_buf(),
                line: line_number,
            });
        }
        let text = String::from_utf8_lossy(raw);
        let line = trim_c_space(&text);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            if in_section {
                return Ok(true);
            }
            in_section = name
                .strip_prefix(service)
                .is_some_and(|rest| rest.starts_with(']'));
            continue;
        }
        if !in_section {
            continue;
        }
        let syntax_error = || Error::ServiceFileSyntax {
            path: path.to_path_buf(),
            line: line_number,
        };
        let (key, value) = line.split_once('=').ok_or_else(syntax_error)?;
        if key == "service" {
            return Err(Error::ServiceFileNested {
                path: path.to_path_buf(),
                line: line_number,
            });
        }
        if !options.set_if_absent(key, value) {
            return Err(syntax_error());
        }
    }
    Ok(in_section)
}
