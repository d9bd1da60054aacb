//! The endpoint's thread: one listening socket and a mio poller with a
//! waker, serving each scrape whole (HTTP/1.1, one request per
//! connection) before it takes the next. A scrape reads the slots the
//! worker threads hand over (see [`super::live`]); it never touches a
//! worker's loop. One scrape at a time is enough for the few scrapers of
//! a benchmark; a client that sends nothing holds the thread at most
//! [`IO_TIMEOUT`], never a worker.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use super::expose::{Exposition, Fixed};
use super::live::Live;

const LISTENER: Token = Token(0);
const WAKE: Token = Token(1);

/// The longest request head read (Prometheus sends a few hundred bytes).
const MAX_REQUEST: usize = 16 * 1024;

/// How long a scraper may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// What Prometheus's Accept header names when it wants protobuf (native
/// histograms).
const PROTOBUF: &str = "application/vnd.google.protobuf";
const PROTOBUF_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";
const TEXT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The running endpoint: its thread and how to stop it.
pub struct Server {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

/// The endpoint could not start.
#[derive(Debug)]
pub enum ListenError {
    /// The port could not be listened on.
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The pushing thread could not start.
    Thread(std::io::Error),
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::Listen { addr, source } => write!(
                f,
                "could not listen on {addr} for --metrics-listen: {}",
                crate::oserror::os_message(source)
            ),
            ListenError::Thread(source) => write!(
                f,
                "could not start the thread of --metrics-push: {}",
                crate::oserror::os_message(source)
            ),
        }
    }
}

impl std::error::Error for ListenError {}

impl Server {
    /// Listens on `addr` and starts the thread.
    pub fn start(addr: SocketAddr, live: Arc<Live>, fixed: Fixed) -> Result<Server, ListenError> {
        let failed = |source| ListenError::Listen { addr, source };
        let listener = TcpListener::bind(addr).map_err(failed)?;
        listener.set_nonblocking(true).map_err(failed)?;
        let poll = Poll::new().map_err(failed)?;
        poll.registry()
            .register(
                &mut SourceFd(&listener.as_raw_fd()),
                LISTENER,
                Interest::READABLE,
            )
            .map_err(failed)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE).map_err(failed)?);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("pgbolt-metrics".to_owned())
                .spawn(move || serve_until_stopped(poll, listener, &stop, &live, &fixed))
                .map_err(failed)?
        };
        Ok(Server {
            stop,
            waker,
            thread: Some(thread),
        })
    }

    /// Stops the thread and closes the port.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve_until_stopped(
    mut poll: Poll,
    listener: TcpListener,
    stop: &AtomicBool,
    live: &Live,
    fixed: &Fixed,
) {
    let mut events = Events::with_capacity(4);
    while !stop.load(Ordering::Acquire) {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            match listener.accept() {
                Ok((stream, _)) => serve(stream, live, fixed),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
}

/// Answers one request.
fn serve(mut stream: TcpStream, live: &Live, fixed: &Fixed) {
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(IO_TIMEOUT)).is_err()
        || stream.set_write_timeout(Some(IO_TIMEOUT)).is_err()
    {
        return;
    }
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or("").split(' ');
    let (method, path) = (request.next().unwrap_or(""), request.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let protobuf = lines.any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("accept") && value.contains(PROTOBUF)
        })
    });
    let answer = match (method, path) {
        ("GET", "/metrics") => {
            let began_finished = live.state().finished;
            match render(live, fixed, protobuf) {
                Some((kind, body)) => {
                    if respond(&mut stream, "200 OK", kind, &body) {
                        live.served(began_finished);
                    }
                    return;
                }
                None => (
                    "500 Internal Server Error",
                    "could not encode the metrics\n",
                ),
            }
        }
        ("GET", _) => ("404 Not Found", "the metrics are at /metrics\n"),
        _ => ("405 Method Not Allowed", "only GET\n"),
    };
    respond(&mut stream, answer.0, "text/plain", answer.1.as_bytes());
}

/// The request's head (request line and headers), up to the empty line.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_REQUEST {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8(head).ok()
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> bool {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).is_ok() && stream.write_all(body).is_ok()
}

/// The scrape's body and its content type.
fn render(live: &Live, fixed: &Fixed, protobuf: bool) -> Option<(&'static str, Vec<u8>)> {
    let exposition = Exposition::of(live, fixed);
    if protobuf {
        return Some((PROTOBUF_TYPE, super::protobuf::encode(&exposition)));
    }
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(exposition));
    let mut body = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut body, &registry).ok()?;
    Some((TEXT_TYPE, body.into_bytes()))
}
