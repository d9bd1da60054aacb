//! OS errors worded as the C library words them.
//!
//! pgbench prints `strerror` text (`%m`): `No such file or directory`.
//! Rust's `io::Error` displays the same text followed by ` (os error 2)`,
//! which would make pgbolt's messages differ from pgbench's.

use std::io;

/// The `strerror` text of `e`, without Rust's ` (os error N)` suffix.
pub fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::os_message;
    use std::io;

    #[test]
    fn drops_the_os_error_suffix() {
        let e = io::Error::from_raw_os_error(2);
        assert_eq!(os_message(&e), "No such file or directory");
    }

    #[test]
    fn keeps_messages_without_an_os_error() {
        let e = io::Error::other("disk on fire");
        assert_eq!(os_message(&e), "disk on fire");
    }
}
