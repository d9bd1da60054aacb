//! Opening reports in a real headless Chromium: the DOM after loading,
//! every console message, every network request the browser attempted,
//! and a screenshot.
//!
//! Network requests are caught by pointing the browser at a proxy of our
//! own (a listening socket that records the first line of each
//! connection), loopback included, so any request the page makes shows
//! up, whatever the Content-Security-Policy says. The browser's own
//! background services (Google's time, update and account hosts) reach
//! the proxy too, whatever the flags, and are set aside by host name.
//! Console messages (errors, and Content-Security-Policy refusals) are
//! read from the browser's log on standard error.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// What the browser did with a page.
pub struct Browsed {
    /// The DOM after loading (`--dump-dom`).
    pub dom: String,
    /// Console messages, one per line of the browser's log.
    pub console: Vec<String>,
    /// First lines of the requests the page made through the proxy.
    pub requests: Vec<String>,
    /// The screenshot, decoded: width, height and RGBA pixels.
    pub screenshot: (usize, usize, Vec<[u8; 4]>),
}

/// Hosts the browser talks to on its own, whatever the page holds.
const BROWSER_OWN: &[&str] = &[
    "google.com",
    "googleapis.com",
    "gvt1.com",
    "gstatic.com",
    "googleusercontent.com",
    "dns.google",
    "chromium.org",
];

fn is_browser_own(first_line: &str) -> bool {
    let target = first_line.split_whitespace().nth(1).unwrap_or("");
    let host = target
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    BROWSER_OWN
        .iter()
        .any(|own| host == *own || host.ends_with(&format!(".{own}")))
}

/// Fails the test, with what to do, when Chromium is not installed.
pub fn require_chromium() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the HTML report tests open reports in headless Chromium; install it with `make deps` (scripts/install-deps.sh, Debian package `chromium`)"
    );
}

/// A proxy of our own that records the first line of every connection
/// made to it, until it is finished.
struct ProxyTrap {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl ProxyTrap {
    fn start() -> ProxyTrap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy listens");
        let port = listener.local_addr().expect("proxy address").port();
        listener.set_nonblocking(true).expect("non-blocking");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_by_thread, stop_for_thread) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stop_for_thread.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let _ = conn.set_nonblocking(false);
                        let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
                        let mut buf = [0u8; 512];
                        let n = conn.read(&mut buf).unwrap_or(0);
                        let text = String::from_utf8_lossy(&buf[..n]);
                        let first = text.lines().next().unwrap_or("(nothing)").to_owned();
                        seen_by_thread.lock().expect("lock").push(first);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        ProxyTrap {
            port,
            seen,
            stop,
            thread,
        }
    }

    /// The requests the page made (the browser's own set aside).
    fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("proxy thread");
        let seen = self.seen.lock().expect("lock");
        seen.iter()
            .filter(|l| !is_browser_own(l))
            .cloned()
            .collect()
    }
}

/// Opens `page` in headless Chromium, 1000 px wide.
pub fn browse(page: &Path) -> Browsed {
    browse_at(page, 1000)
}

/// What a small script measured in a page laid out 1280 px wide.
pub struct Measured {
    pub browsed: Browsed,
    /// `document.scrollingElement.scrollWidth`.
    pub scroll_width: f64,
    /// Pairs of text labels of one chart whose boxes overlap.
    pub overlaps: Vec<String>,
}

/// The measuring script: the page's scroll width, and every pair of
/// `<text>` elements of one `<svg>` whose bounding boxes overlap (by more
/// than half a pixel), written into an attribute of the body that
/// `--dump-dom` shows.
const MEASURE: &str = r#"<script>(() => {
  const out = {scrollWidth: document.scrollingElement.scrollWidth, overlaps: []};
  document.querySelectorAll('svg').forEach((svg, n) => {
    const boxes = [...svg.querySelectorAll('text')]
      .map(t => [t.getBoundingClientRect(), t.textContent])
      .filter(([r]) => r.width > 0 && r.height > 0);
    for (let a = 0; a < boxes.length; a++) {
      for (let b = a + 1; b < boxes.length; b++) {
        const [p, s] = boxes[a], [q, u] = boxes[b];
        if (p.left < q.right - 0.5 && q.left < p.right - 0.5 &&
            p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5) {
          out.overlaps.push('chart ' + n + ': "' + s + '" and "' + u + '"');
        }
      }
    }
  });
  document.body.setAttribute('data-measured', JSON.stringify(out));
})();</script>"#;

/// Opens a copy of `page` with [`MEASURE`] at the end of its body (its
/// Content-Security-Policy let through inline scripts, nothing more),
/// 1280 px wide, and reads what the script measured.
pub fn measure(page: &Path) -> Measured {
    let html = std::fs::read_to_string(page).expect("page");
    let csp = "default-src 'none'; style-src 'unsafe-inline';";
    assert!(html.contains(csp), "no Content-Security-Policy in the page");
    let html = html
        .replacen(
            csp,
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';",
            1,
        )
        .replacen("</body>", &format!("{MEASURE}</body>"), 1);
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("measured.html");
    std::fs::write(&copy, html).expect("copy");
    let browsed = browse_at(&copy, 1280);
    let start = browsed
        .dom
        .find("data-measured=\"")
        .expect("the measuring script ran")
        + "data-measured=\"".len();
    let end = browsed.dom[start..].find('"').expect("attribute ends") + start;
    let text = browsed.dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let value: serde_json::Value = serde_json::from_str(&text).expect("measures");
    Measured {
        scroll_width: value["scrollWidth"].as_f64().expect("scroll width"),
        overlaps: value["overlaps"]
            .as_array()
            .expect("overlaps")
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        browsed,
    }
}

/// Opens `page` in headless Chromium, `width` px wide.
pub fn browse_at(page: &Path, width: u32) -> Browsed {
    require_chromium();
    let trap = ProxyTrap::start();
    let profile = tempfile::tempdir().expect("profile dir");
    let shot_dir = tempfile::tempdir().expect("screenshot dir");
    let shot = shot_dir.path().join("shot.png");
    let url = format!(
        "file://{}",
        page.canonicalize().expect("page exists").display()
    );
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--window-size={width},2400"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{}", trap.port))
        .arg("--proxy-bypass-list=<-loopback>")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs");
    let requests = trap.finish();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "chromium failed ({:?}):\n{log}",
        out.status
    );
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    Browsed {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
        requests,
        screenshot: decode_png(&png),
    }
}

impl Browsed {
    /// The page loaded cleanly: no request, no console message, and a
    /// screenshot that is not blank.
    pub fn assert_clean(&self, what: &str) {
        assert!(
            self.requests.is_empty(),
            "{what}: network requests attempted: {:?}",
            self.requests
        );
        assert!(
            self.console.is_empty(),
            "{what}: console messages: {:?}",
            self.console
        );
        assert!(self.dom.contains("</html>"), "{what}: no DOM");
        let (w, h, pixels) = &self.screenshot;
        assert!(*w >= 900 && *h >= 1000, "{what}: screenshot {w}x{h}");
        let background = pixels[0];
        let drawn = pixels.iter().filter(|p| **p != background).count();
        assert!(
            drawn * 50 > pixels.len(),
            "{what}: screenshot nearly blank ({drawn} of {} pixels drawn)",
            pixels.len()
        );
        let colours: std::collections::HashSet<_> = pixels.iter().step_by(7).collect();
        assert!(colours.len() > 20, "{what}: {} colours", colours.len());
    }

    /// The HTML of the header's value whose `data-header` is `name`.
    pub fn header(&self, name: &str) -> Option<String> {
        let marker = format!("data-header=\"{name}\">");
        let start = self.dom.find(&marker)? + marker.len();
        let end = self.dom[start..].find("</dd>")?;
        Some(self.dom[start..start + end].to_owned())
    }

    /// The text of the element whose `data-figure` is `name`.
    pub fn figure(&self, name: &str) -> Option<String> {
        let marker = format!("data-figure=\"{name}\">");
        let start = self.dom.find(&marker)? + marker.len();
        let end = self.dom[start..].find('<')?;
        Some(self.dom[start..start + end].to_owned())
    }
}

/// Prints `page` to PDF with headless Chromium; returns the PDF.
pub fn print_to_pdf(page: &Path) -> Vec<u8> {
    require_chromium();
    let profile = tempfile::tempdir().expect("profile dir");
    let out_dir = tempfile::tempdir().expect("pdf dir");
    let pdf = out_dir.path().join("page.pdf");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-pdf-header-footer",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!(
            "file://{}",
            page.canonicalize().expect("page exists").display()
        ))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium --print-to-pdf failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&pdf).expect("PDF written")
}

/// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes).
pub fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<[u8; 4]>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let mut pos = 8;
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut data = Vec::new();
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        let body = &bytes[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                assert_eq!(body[8], 8, "bit depth");
                assert_eq!(body[12], 0, "interlaced");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .expect("inflate");
    let stride = width * channels;
    let mut out = Vec::with_capacity(width * height);
    let mut prev = vec![0u8; stride];
    let mut line = vec![0u8; stride];
    for y in 0..height {
        let row = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let filter = row[0];
        for x in 0..stride {
            let a = if x >= channels { line[x - channels] } else { 0 };
            let b = prev[x];
            let c = if x >= channels { prev[x - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                other => panic!("filter {other}"),
            };
            line[x] = row[1 + x].wrapping_add(predicted);
        }
        for px in line.chunks(channels) {
            out.push([px[0], px[1], px[2], if channels == 4 { px[3] } else { 255 }]);
        }
        std::mem::swap(&mut prev, &mut line);
    }
    (width, height, out)
}
