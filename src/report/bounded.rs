//! Reading a result file with a limit on its size.
//!
//! `--render`, `--compare` and `--merge` read files the user names, which
//! may be anything: `/dev/zero`, a huge log, a sparse file of terabytes.
//! Read without a limit, such a file grows the process until the machine
//! kills it. So a file is read up to a limit (1 GiB,
//! [`crate::config::DEFAULT_MAX_INPUT_SIZE`]; `--max-input-size` raises or
//! lowers it): a regular file whose size
//! passes it is refused before a byte is read, anything else (a pipe, a
//! device) is read in chunks and refused as soon as it passes the limit.
//! A result file is text (JSON, or a page that embeds it), which never
//! holds a NUL byte, so the first NUL refuses the file too: `/dev/zero` is
//! refused after its first chunk, with memory that never grew.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// How much is read at a time.
const CHUNK: usize = 64 * 1024;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// Larger than the limit (its size when the file system says it).
    TooLarge {
        size: Option<u64>,
        limit: u64,
    },
    /// A NUL byte at this offset: not a text file.
    NotText {
        offset: u64,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => f.write_str(&crate::oserror::os_message(e)),
            ReadError::TooLarge { size, limit } => {
                match size {
                    Some(size) => write!(f, "it is {size} bytes, ")?,
                    None => f.write_str("it goes on ")?,
                }
                write!(
                    f,
                    "more than the limit of {limit} bytes (--max-input-size raises it)"
                )
            }
            ReadError::NotText { offset } => write!(
                f,
                "it is not a result file (a NUL byte at offset {offset}; results are text)"
            ),
        }
    }
}

/// The text of `path` (see [`read`]), which must be UTF-8.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read(path, limit)?).map_err(|_| {
        ReadError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

/// The contents of `path`, at most `limit` bytes, without a NUL byte.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = File::open(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if meta.is_file() && meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    let expected = if meta.is_file() { meta.len() } else { 0 };
    read_from(file, limit, expected)
}

/// Reads `source` to its end in chunks, refusing more than `limit` bytes
/// or a NUL byte; `expected` is how much to make room for at once.
fn read_from(mut source: impl Read, limit: u64, expected: u64) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::with_capacity(usize::try_from(expected.min(limit)).unwrap_or(0));
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match source.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        let got = &chunk[..n];
        if let Some(at) = got.iter().position(|&b| b == 0) {
            return Err(ReadError::NotText {
                offset: out.len() as u64 + at as u64,
            });
        }
        if out.len() as u64 + n as u64 > limit {
            return Err(ReadError::TooLarge { size: None, limit });
        }
        out.extend_from_slice(got);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "{\"kind\": \"run\"}").unwrap();
        assert_eq!(read(&path, 15).unwrap(), b"{\"kind\": \"run\"}");
        let err = read(&path, 14).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is 15 bytes, more than the limit of 14 bytes (--max-input-size raises it)"
        );
    }

    #[test]
    fn a_stream_stops_at_the_limit_or_at_a_nul_byte() {
        let long = io::repeat(b' ').take(1 << 20);
        assert!(matches!(
            read_from(long, 1000, 0),
            Err(ReadError::TooLarge { size: None, .. })
        ));
        let zeros = io::repeat(0);
        assert!(matches!(
            read_from(b"{}".chain(zeros), 1 << 30, 0),
            Err(ReadError::NotText { offset: 2 })
        ));
        assert!(matches!(
            read(
                Path::new("/dev/zero"),
                crate::config::DEFAULT_MAX_INPUT_SIZE
            ),
            Err(ReadError::NotText { offset: 0 })
        ));
    }

    #[test]
    fn a_sparse_file_past_the_limit_is_refused_by_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.json");
        let file = File::create(&path).unwrap();
        file.set_len(2 << 30).unwrap();
        assert!(matches!(
            read(&path, crate::config::DEFAULT_MAX_INPUT_SIZE),
            Err(ReadError::TooLarge { size: Some(n), .. }) if n == 2 << 30
        ));
    }
}
