//! The read buffer and in-place framing of backend messages.
//!
//! Every backend message is a one-byte tag followed by a 4-byte big-endian
//! length that counts itself but not the tag. [`ReadBuf`] keeps the bytes
//! read from the socket in one reusable `Vec` with a start and an end index;
//! [`ReadBuf::next_frame`] looks at the 5-byte header, and when the whole
//! frame is present hands out the tag and a borrowed body. Nothing is copied
//! or allocated per message: consumed bytes are skipped by moving `start`, and
//! the unread tail is moved to the front only when the free space at the end
//! runs short. The buffer starts at one page, which holds the answer of
//! most statements, so that a thousand connections cost a few megabytes. It
//! doubles while a frame larger than its capacity is arriving, and, up to
//! [`READ_AHEAD`], after a read that filled all its free space (a stream of
//! rows: fewer, larger reads); past [`RELEASE_ABOVE`] only for the time
//! such a frame is in it.
//!
//! A server can send anything, so a header is checked before it is trusted: a
//! length under 4 or over [`MAX_FRAME`] is an error, never a panic or a huge
//! allocation.

use crate::error::Error;

/// The largest backend message accepted (1 GiB, PostgreSQL's own limit on a
/// field value plus headroom for the row around it).
pub const MAX_FRAME: usize = 1 << 30;

/// The size a read buffer starts with.
const INITIAL_CAPACITY: usize = 4 * 1024;

/// The free space kept for the next read.
const MIN_FREE: usize = INITIAL_CAPACITY / 2;

/// The size up to which a buffer whose reads keep filling it grows.
const READ_AHEAD: usize = 64 * 1024;

/// A buffer grown past this for one large frame goes back to
/// [`READ_AHEAD`] once the frame is consumed; a smaller one keeps its size,
/// so that a script fetching such frames every transaction does not
/// allocate for each.
const RELEASE_ABOVE: usize = 1024 * 1024;

/// A whole backend message: its tag and its body (the bytes after the
/// length), borrowed from the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub tag: u8,
    pub body: &'a [u8],
}

/// Bytes read from a socket and not yet framed.
#[derive(Debug)]
pub struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The last read filled all the free space: more was probably waiting.
    filled_up: bool,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf::new()
    }
}

impl ReadBuf {
    pub fn new() -> Self {
        ReadBuf {
            buf: vec![0; INITIAL_CAPACITY],
            start: 0,
            end: 0,
            filled_up: false,
        }
    }

    /// Number of bytes read but not yet consumed.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The unconsumed bytes.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Drops `n` unconsumed bytes from the front.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// The free space after the data: at least [`MIN_FREE`], got by moving
    /// the unread tail to the front, or else by doubling the buffer; after a
    /// read that filled it, doubled up to [`READ_AHEAD`]. Growth follows the
    /// bytes that actually arrived, never a length the server merely
    /// announced.
    pub fn spare(&mut self) -> &mut [u8] {
        let read_ahead = std::mem::take(&mut self.filled_up) && self.buf.len() < READ_AHEAD;
        if read_ahead || self.buf.len() - self.end < MIN_FREE {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if read_ahead || self.buf.len() - self.end < MIN_FREE {
                let grown = (self.buf.len() * 2).max(self.end + MIN_FREE);
                self.buf.resize(grown, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Records that `n` bytes were written into [`ReadBuf::spare`].
    pub fn filled(&mut self, n: usize) {
        self.filled_up = n > 0 && n >= self.buf.len() - self.end;
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Only a frame larger than [`READ_AHEAD`] grows the buffer past it.
    /// Once a frame that grew it past [`RELEASE_ABOVE`] is consumed and what
    /// is left fits, the buffer goes back to [`READ_AHEAD`]: a 100 MB value
    /// fetched once would otherwise keep 128 MB per connection for the rest
    /// of the run.
    fn release_large(&mut self) {
        if self.buf.len() > RELEASE_ABOVE && self.len() <= READ_AHEAD / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.buf.truncate(READ_AHEAD);
            self.buf.shrink_to_fit();
        }
    }

    /// The next whole frame, if one is buffered. The frame is consumed: the
    /// following call returns the one after it.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, Error> {
        self.release_large();
        let Some((tag, len)) = frame_header(self.data())? else {
            return Ok(None);
        };
        if self.len() < len + 1 {
            return Ok(None);
        }
        let body_start = self.start + 5;
        let body_end = self.start + 1 + len;
        self.start = body_end;
        if self.start == self.end {
            // Reset lazily: the body still lives at its old place, and the
            // next `spare` or `next_frame` call sees an empty buffer.
            self.start = 0;
            self.end = 0;
        }
        Ok(Some(Frame {
            tag,
            body: &self.buf[body_start..body_end],
        }))
    }
}

/// Checks the 5-byte header at the front of `data`: the tag and the length
/// (counting itself), or `None` when fewer than 5 bytes are present.
pub fn frame_header(data: &[u8]) -> Result<Option<(u8, usize)>, Error> {
    let Some(header) = data.get(..5) else {
        return Ok(None);
    };
    let tag = header[0];
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if len < 4 {
        return Err(Error::protocol(format!(
            "invalid length {len} in message of type \"{}\"",
            tag.escape_ascii()
        )));
    }
    if len > MAX_FRAME {
        return Err(Error::protocol(format!(
            "message of type \"{}\" is too large ({len} bytes)",
            tag.escape_ascii()
        )));
    }
    Ok(Some((tag, len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn feed(rb: &mut ReadBuf, bytes: &[u8]) {
        let spare = rb.spare();
        spare[..bytes.len()].copy_from_slice(bytes);
        rb.filled(bytes.len());
    }

    fn drain(rb: &mut ReadBuf) -> Result<Vec<(u8, Vec<u8>)>, Error> {
        let mut out = Vec::new();
        while let Some(f) = rb.next_frame()? {
            out.push((f.tag, f.body.to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn whole_frames_come_out_in_order() {
        let mut bytes = frame(b'C', b"SELECT 1\0");
        bytes.extend(frame(b'Z', b"I"));
        let mut rb = ReadBuf::new();
        feed(&mut rb, &bytes);
        let got = drain(&mut rb).unwrap();
        assert_eq!(
            got,
            vec![(b'C', b"SELECT 1\0".to_vec()), (b'Z', b"I".to_vec())]
        );
        assert!(rb.is_empty());
    }

    #[test]
    fn a_frame_split_at_every_byte_is_reassembled() {
        let mut bytes = frame(b'D', b"\0\x01\0\0\0\x03abc");
        bytes.extend(frame(b'Z', b"T"));
        for cut in 0..bytes.len() {
            let mut rb = ReadBuf::new();
            feed(&mut rb, &bytes[..cut]);
            let mut got = drain(&mut rb).unwrap();
            feed(&mut rb, &bytes[cut..]);
            got.extend(drain(&mut rb).unwrap());
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[1], (b'Z', b"T".to_vec()));
        }
    }

    #[test]
    fn a_truncated_frame_waits_for_more() {
        let bytes = frame(b'E', b"SERROR\0\0");
        let mut rb = ReadBuf::new();
        feed(&mut rb, &bytes[..bytes.len() - 1]);
        assert_eq!(rb.next_frame().unwrap(), None);
        assert_eq!(rb.len(), bytes.len() - 1);
    }

    #[test]
    fn bad_lengths_are_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"Z\0\0\0\x03", "invalid length 3"),
            (b"Z\0\0\0\0", "invalid length 0"),
            (b"D\xff\xff\xff\xff", "too large"),
            (b"\x00\x40\x00\x00\x01", "too large"),
        ];
        for (bytes, want) in cases {
            let mut rb = ReadBuf::new();
            feed(&mut rb, bytes);
            let err = rb.next_frame().unwrap_err().to_string();
            assert!(err.contains(want), "{bytes:?}: {err}");
        }
    }

    #[test]
    fn reads_that_fill_the_buffer_grow_it_up_to_the_read_ahead() {
        let row = frame(b'D', &[b'r'; 95]);
        let mut rb = ReadBuf::new();
        let mut sizes = Vec::new();
        let mut rows = 0;
        for _ in 0..10 {
            let spare = rb.spare();
            sizes.push(spare.len());
            let mut n = 0;
            while n + row.len() <= spare.len() {
                spare[n..n + row.len()].copy_from_slice(&row);
                n += row.len();
            }
            let rest = spare.len() - n;
            spare[n..].copy_from_slice(&row[..rest]);
            let n = spare.len();
            rb.filled(n);
            rows += drain(&mut rb).unwrap().len();
            rb.consume(rb.len());
        }
        assert!(rows > 0);
        assert_eq!(sizes[0], INITIAL_CAPACITY);
        assert!(sizes.windows(2).all(|w| w[1] >= w[0]), "{sizes:?}");
        assert_eq!(*sizes.last().unwrap(), READ_AHEAD);

        // A read that leaves room does not grow it.
        let mut rb = ReadBuf::new();
        let before = rb.spare().len();
        feed(&mut rb, &row);
        drain(&mut rb).unwrap();
        assert_eq!(rb.spare().len(), before);
    }

    #[test]
    fn frames_larger_than_the_buffer_grow_it() {
        let body = vec![b'x'; 3 * INITIAL_CAPACITY];
        let bytes = frame(b'd', &body);
        let mut rb = ReadBuf::new();
        let mut offset = 0;
        let mut got = Vec::new();
        while offset < bytes.len() {
            let spare = rb.spare();
            let n = spare.len().min(bytes.len() - offset).min(1000);
            spare[..n].copy_from_slice(&bytes[offset..offset + n]);
            rb.filled(n);
            offset += n;
            got.extend(drain(&mut rb).unwrap());
        }
        assert_eq!(got, vec![(b'd', body)]);
    }

    /// Feeds a result whose row is `row_len` bytes, reading as much as
    /// the buffer takes each time, and returns the buffer afterwards.
    fn after_a_row_of(row_len: usize) -> ReadBuf {
        let body = vec![b'x'; row_len];
        let mut bytes = frame(b'D', &body);
        bytes.extend(frame(b'C', b"SELECT 1\0"));
        bytes.extend(frame(b'Z', b"I"));
        let mut rb = ReadBuf::new();
        let mut offset = 0;
        let mut got = Vec::new();
        while offset < bytes.len() {
            let spare = rb.spare();
            let n = spare.len().min(bytes.len() - offset);
            spare[..n].copy_from_slice(&bytes[offset..offset + n]);
            rb.filled(n);
            offset += n;
            while let Some(f) = rb.next_frame().unwrap() {
                got.push((f.tag, f.body.len()));
            }
        }
        assert_eq!(got, vec![(b'D', row_len), (b'C', 9), (b'Z', 1)]);
        rb
    }

    #[test]
    fn only_a_very_large_frame_gives_its_memory_back_once_consumed() {
        let rb = after_a_row_of(2 * RELEASE_ABOVE);
        assert_eq!(rb.buf.len(), READ_AHEAD);
        assert!(rb.buf.capacity() <= READ_AHEAD);
        let rb = after_a_row_of(4 * READ_AHEAD);
        assert!(rb.buf.len() > 4 * READ_AHEAD, "kept for the next one");
    }

    #[test]
    fn the_tail_moves_to_the_front_instead_of_growing() {
        let mut rb = ReadBuf::new();
        let capacity = rb.buf.len();
        let one = frame(b'D', &[7u8; 100]);
        for _ in 0..10_000 {
            feed(&mut rb, &one[..50]);
            assert!(rb.next_frame().unwrap().is_none());
            feed(&mut rb, &one[50..]);
            assert!(rb.next_frame().unwrap().is_some());
        }
        assert_eq!(rb.buf.len(), capacity);
    }
}
