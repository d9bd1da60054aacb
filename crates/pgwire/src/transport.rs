//! A non-blocking socket, plain or wrapped in TLS, with the two operations
//! the protocol needs: write everything buffered, read whatever is there.
//!
//! TLS is driven by hand: plaintext goes into `rustls::ClientConnection`,
//! records come out through `write_tls` into the socket (one vectored
//! `sendmsg` for everything pending) and go in through `read_tls`. The socket
//! is never blocking; `WouldBlock` reaches the caller, who waits for the
//! readiness it asked for.
//!
//! Reads report whether the socket was *drained* (the last `recv` returned
//! less than asked, or `EAGAIN`). After a drained read, an edge-triggered
//! poller will signal again when more data arrives, so the caller can stop
//! reading without paying for one more `recv` that returns `EAGAIN`.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

use bytes::{Buf, BytesMut};
use rustls::ClientConnection;
use socket2::Socket;

/// `send` flags: never raise SIGPIPE on a closed peer.
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;

/// The socket as `Read`/`Write`, remembering whether the last read was short.
struct SockIo<'a> {
    sock: &'a Socket,
    drained: &'a mut bool,
}

impl Read for SockIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match recv(self.sock, buf) {
                Ok(n) => {
                    *self.drained = n < buf.len();
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if e.kind() == io::ErrorKind::WouldBlock {
                        *self.drained = true;
                    }
                    return Err(e);
                }
            }
        }
    }
}

impl Write for SockIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.send_with_flags(buf, SEND_FLAGS)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.sock.send_vectored_with_flags(bufs, SEND_FLAGS)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn recv(sock: &Socket, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// What a read brought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Got {
    /// Bytes arrived; `drained` says the socket had no more at that moment.
    Data { n: usize, drained: bool },
    /// Nothing to read now.
    WouldBlock,
    /// The peer closed the connection.
    Eof,
    /// The peer ended the TLS session properly, then the connection.
    TlsEnd,
}

/// A connected non-blocking socket, optionally carrying TLS.
pub(crate) struct Stream {
    sock: Socket,
    tls: Option<Box<ClientConnection>>,
    drained: bool,
}

impl Stream {
    pub(crate) fn new(sock: Socket) -> Stream {
        Stream {
            sock,
            tls: None,
            drained: false,
        }
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    pub(crate) fn socket(&self) -> &Socket {
        &self.sock
    }

    pub(crate) fn start_tls(&mut self, tls: ClientConnection) {
        self.tls = Some(Box::new(tls));
    }

    pub(crate) fn tls(&self) -> Option<&ClientConnection> {
        self.tls.as_deref()
    }

    /// Reads exactly one byte from the plain socket (the answer to
    /// SSLRequest; reading more could swallow bytes meant for TLS).
    pub(crate) fn read_byte(&mut self) -> io::Result<Option<u8>> {
        let mut b = [0u8; 1];
        loop {
            return match recv(&self.sock, &mut b) {
                Ok(0) => Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => Ok(Some(b[0])),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) => Err(e),
            };
        }
    }

    /// Drives the TLS handshake; `Ok(None)` when done, otherwise the
    /// readiness to wait for (`true` = writable).
    pub(crate) fn handshake(&mut self) -> Result<Option<bool>, HandshakeError> {
        let Some(tls) = self.tls.as_deref_mut() else {
            return Ok(None);
        };
        let mut io = SockIo {
            sock: &self.sock,
            drained: &mut self.drained,
        };
        loop {
            while tls.wants_write() {
                match tls.write_tls(&mut io) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Some(true)),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(HandshakeError::Io(e)),
                }
            }
            if !tls.is_handshaking() {
                return Ok(None);
            }
            match tls.read_tls(&mut io) {
                Ok(0) => return Err(HandshakeError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Tell the server why, if the socket lets us.
                        let _ = tls.write_tls(&mut io);
                        return Err(HandshakeError::Tls(e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Some(false)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(HandshakeError::Io(e)),
            }
        }
    }

    /// Sends as much of `out` as the socket takes, consuming what was sent.
    /// Returns true when nothing is left pending (in `out` or inside TLS).
    pub(crate) fn write(&mut self, out: &mut BytesMut) -> io::Result<bool> {
        let mut io = SockIo {
            sock: &self.sock,
            drained: &mut self.drained,
        };
        match self.tls.as_deref_mut() {
            None => {
                while !out.is_empty() {
                    match io.write(out) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => out.advance(n),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                out.clear();
                Ok(true)
            }
            Some(tls) => loop {
                if !out.is_empty() {
                    let n = tls.writer().write(out)?;
                    out.advance(n);
                }
                if !tls.wants_write() {
                    if out.is_empty() {
                        out.clear();
                        return Ok(true);
                    }
                    continue;
                }
                match tls.write_tls(&mut io) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            },
        }
    }

    /// Reads what is available into `dst` (non-empty).
    pub(crate) fn read(&mut self, dst: &mut [u8]) -> io::Result<Got> {
        let mut io = SockIo {
            sock: &self.sock,
            drained: &mut self.drained,
        };
        let Some(tls) = self.tls.as_deref_mut() else {
            return match io.read(dst) {
                Ok(0) => Ok(Got::Eof),
                Ok(n) => Ok(Got::Data {
                    n,
                    drained: n < dst.len(),
                }),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Got::WouldBlock),
                Err(e) => Err(e),
            };
        };
        loop {
            match tls.reader().read(dst) {
                Ok(0) => return Ok(Got::TlsEnd),
                Ok(n) => {
                    return Ok(Got::Data {
                        n,
                        drained: *io.drained && n < dst.len(),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            match tls.read_tls(&mut io) {
                Ok(0) => {
                    // The reader now reports a clean or unclean end.
                    tls.process_new_packets().map_err(io::Error::other)?;
                    if let Err(e) = tls.reader().read(dst) {
                        if e.kind() == io::ErrorKind::WouldBlock {
                            return Ok(Got::Eof);
                        }
                        return Err(e);
                    }
                    return Ok(Got::Eof);
                }
                Ok(_) => {
                    tls.process_new_packets().map_err(io::Error::other)?;
                    if tls.wants_write() {
                        // Key updates and alerts; a full socket retries later.
                        let _ = tls.write_tls(&mut io);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Got::WouldBlock),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends a TLS close_notify if TLS is up; best effort.
    pub(crate) fn close_tls(&mut self) {
        if let Some(tls) = self.tls.as_deref_mut() {
            tls.send_close_notify();
            let mut io = SockIo {
                sock: &self.sock,
                drained: &mut self.drained,
            };
            let _ = tls.write_tls(&mut io);
        }
    }
}

/// A handshake failure: the socket, or TLS itself (certificates included).
#[derive(Debug)]
pub(crate) enum HandshakeError {
    Io(io::Error),
    Tls(rustls::Error),
}
