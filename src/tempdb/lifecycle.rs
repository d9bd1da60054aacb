//! The process-wide registry of live instances and every way they get
//! cleaned up: `Drop`, process exit (`atexit`), SIGINT/SIGTERM/SIGHUP, and
//! a watchdog process for deaths nothing inside the process can see.
//!
//! Each registry entry is a temporary directory, the postmaster's pid once it
//! runs, and the pipe to its watchdog. Whoever removes an entry from the
//! registry owns its clean-up, so `Drop`, the exit hook and the signal thread
//! never clean the same instance twice.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, Instant};

use super::Error;

/// How long a postmaster gets to exit after SIGQUIT before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The watchdog: a tiny shell process that outlives us if we die. It reads
/// `pid N` (the postmaster to stop; `pid N KILL` for a pooler, which has
/// nothing to save and whose versions disagree on what SIGQUIT means) and `done` (clean-up already happened,
/// exit quietly) from a pipe whose only writer is this process. End of file
/// means this process died without cleaning up, so it stops the server and
/// removes the directory (its first argument). The server is gone when its
/// `postmaster.pid` is (the postmaster removes it last); `kill -0` alone
/// would wait on a zombie nobody reaps.
const WATCHDOG_SCRIPT: &str = r#"pid=0
sig=QUIT
while read -r cmd arg how; do
  case "$cmd" in
    pid) pid=$arg; sig=${how:-QUIT} ;;
    done) exit 0 ;;
  esac
done
if [ "$pid" -gt 0 ]; then
  kill -"$sig" "$pid" 2>/dev/null
  n=0
  while [ -e "$1/data/postmaster.pid" ] && kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do
    sleep 0.1
    n=$((n+1))
  done
  [ "$n" -lt 100 ] || kill -KILL "$pid" 2>/dev/null
fi
rm -rf -- "$1"
"#;

struct Watchdog {
    stdin: ChildStdin,
    child: Child,
}

struct Live {
    id: u64,
    pid: i32,
    /// The signal that stops `pid`: SIGQUIT for a postmaster (immediate
    /// shutdown), SIGKILL for a pooler.
    stop_signal: i32,
    root: PathBuf,
    watchdog: Option<Watchdog>,
}

static REGISTRY: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static AT_EXIT: Once = Once::new();
/// The process that registered the exit hook: a forked child that calls
/// `exit` inherits the hook but must not stop its parent's servers.
static HOOK_OWNER: AtomicI32 = AtomicI32::new(0);

fn registry() -> MutexGuard<'static, Vec<Live>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Puts directory `root` under the registry's care (removed at the latest
/// when the process ends) and returns its ticket.
pub(crate) fn register(root: PathBuf) -> u64 {
    AT_EXIT.call_once(|| {
        HOOK_OWNER.store(std::process::id() as i32, Ordering::SeqCst);
        // SAFETY: `cleanup_at_exit` is an `extern "C" fn()` that never unwinds.
        unsafe { libc::atexit(cleanup_at_exit) };
    });
    let watchdog = spawn_watchdog(&root);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    registry().push(Live {
        id,
        pid: 0,
        stop_signal: libc::SIGQUIT,
        root,
        watchdog,
    });
    id
}

/// Without `/bin/sh` there is no watchdog; the other clean-up paths remain.
fn spawn_watchdog(root: &Path) -> Option<Watchdog> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(WATCHDOG_SCRIPT)
        .arg("pgbolt-tempdb-watchdog")
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let stdin = child.stdin.take()?;
    Some(Watchdog { stdin, child })
}

/// Records the postmaster of entry `id`. Returns false if the entry is gone
/// (a signal cleaned everything up meanwhile): the caller must stop `pid`.
pub(crate) fn set_pid(id: u64, pid: i32) -> bool {
    set_process(id, pid, libc::SIGQUIT)
}

/// Records a pooler of entry `id`, stopped with SIGKILL: a throwaway
/// pooler holds nothing worth a clean shutdown, and SIGKILL means the same
/// to every version (PgBouncer 1.18 ignores SIGQUIT, which 1.23 made its
/// immediate shutdown). Returns false as [`set_pid`] does.
pub(crate) fn set_pooler_pid(id: u64, pid: i32) -> bool {
    set_process(id, pid, libc::SIGKILL)
}

fn set_process(id: u64, pid: i32, stop_signal: i32) -> bool {
    let mut reg = registry();
    let Some(live) = reg.iter_mut().find(|l| l.id == id) else {
        return false;
    };
    live.pid = pid;
    live.stop_signal = stop_signal;
    if let Some(w) = &mut live.watchdog {
        let how = if stop_signal == libc::SIGKILL {
            " KILL"
        } else {
            ""
        };
        let _ = writeln!(w.stdin, "pid {pid}{how}");
    }
    true
}

/// Stops and removes entry `id` now (the `Drop` path).
pub(crate) fn release(id: u64) {
    let taken = {
        let mut reg = registry();
        reg.iter()
            .position(|l| l.id == id)
            .map(|i| reg.swap_remove(i))
    };
    if let Some(live) = taken {
        cleanup(live);
    }
}

/// Leaves entry `id` running and on disk, and dismisses its watchdog.
pub(crate) fn forget(id: u64) {
    let taken = {
        let mut reg = registry();
        reg.iter()
            .position(|l| l.id == id)
            .map(|i| reg.swap_remove(i))
    };
    if let Some(live) = taken {
        dismiss(live.watchdog);
    }
}

/// Stops every registered server and removes every registered directory.
pub(crate) fn cleanup_all() {
    let all = std::mem::take(&mut *registry());
    for live in all {
        cleanup(live);
    }
}

extern "C" fn cleanup_at_exit() {
    if HOOK_OWNER.load(Ordering::SeqCst) != std::process::id() as i32 {
        return;
    }
    // A signal's clean-up is under way on the signal thread: the main
    // thread saw its effects (the server gone) and is exiting with its own
    // status. Let the clean-up finish and die of the signal instead, as
    // the user asked.
    let sig = SIGNALLED.load(Ordering::SeqCst);
    if sig != 0 {
        let start = Instant::now();
        while !SIGNAL_CLEANED.load(Ordering::SeqCst) && start.elapsed() < 3 * STOP_TIMEOUT {
            std::thread::sleep(Duration::from_millis(5));
        }
        die_of(sig);
    }
    // A panic must not unwind into libc; `cleanup` reports nothing and
    // ignores failures, so catching is belt and braces.
    let _ = std::panic::catch_unwind(cleanup_all);
}

fn cleanup(live: Live) {
    if live.pid > 0 {
        stop_process(live.pid, live.stop_signal);
    }
    let _ = std::fs::remove_dir_all(&live.root);
    dismiss(live.watchdog);
}

fn dismiss(watchdog: Option<Watchdog>) {
    if let Some(mut w) = watchdog {
        let _ = writeln!(w.stdin, "done");
        drop(w.stdin);
        let _ = w.child.wait();
    }
}

/// Immediate shutdown: SIGQUIT, wait, SIGKILL if it hangs. Reaps the process.
pub(crate) fn stop_postmaster(pid: i32) {
    stop_process(pid, libc::SIGQUIT);
}

/// Sends `signal`, waits, SIGKILL if it hangs. Reaps the process.
fn stop_process(pid: i32, signal: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, signal) };
    if wait_exit(pid, STOP_TIMEOUT) {
        return;
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_exit(pid, STOP_TIMEOUT);
}

/// Waits for `pid` to end, reaping it if it is our child.
fn wait_exit(pid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if has_exited(pid) {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// True once `pid` has ended (reaping it if it is our child).
pub(crate) fn has_exited(pid: i32) -> bool {
    exit_status(pid).is_some()
}

/// The raw wait status once `pid` has ended; `Some(0)` for a process that is
/// gone but was not our child to reap.
pub(crate) fn exit_status(pid: i32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc == pid {
        return Some(status);
    }
    if rc < 0 {
        // Not our child (or already reaped): alive as long as kill(0) works.
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        return (!alive).then_some(0);
    }
    None
}

static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
static CLEANING: AtomicBool = AtomicBool::new(false);
/// The signal whose clean-up the signal thread has started (0: none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);
/// Set once that clean-up is over.
static SIGNAL_CLEANED: AtomicBool = AtomicBool::new(false);
static SIGNALS: Once = Once::new();

/// Makes SIGINT, SIGTERM and SIGHUP stop and remove every live instance
/// before the process dies of that signal.
///
/// The handler itself only writes the signal number to a pipe (`write` is
/// async-signal-safe); a dedicated thread reads it, does the clean-up with
/// ordinary code, restores the default action and re-raises the signal, so
/// the exit status is what a shell expects (130 for Ctrl-C, 143 for
/// SIGTERM). A second signal during the clean-up exits at once. Meanwhile
/// standard error is silenced, and a thread that exits with a status of its
/// own first waits for the clean-up and dies of the signal too.
/// A signal the process was started with ignored (a background job of a
/// script ignores SIGINT) stays ignored. Calling this more than once is
/// harmless.
pub fn install_signal_cleanup() -> Result<(), Error> {
    let mut result = Ok(());
    SIGNALS.call_once(|| result = install_signal_thread());
    result
}

fn install_signal_thread() -> Result<(), Error> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::io(
            "creating the signal pipe",
            std::io::Error::last_os_error(),
        ));
    }
    let [read_fd, write_fd] = fds;
    SIGNAL_PIPE.store(write_fd, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("pgbolt-tempdb-signals".to_string())
        .spawn(move || signal_thread(read_fd))
        .map_err(|e| Error::io("starting the signal thread", e))?;
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        if crate::sigstop::is_ignored(sig) {
            continue;
        }
        crate::sigstop::set_handler(sig, on_signal)
            .map_err(|e| Error::io("installing a signal handler", e))?;
    }
    Ok(())
}

extern "C" fn on_signal(sig: libc::c_int) {
    if CLEANING.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
    let byte = sig as u8;
    // SAFETY: errno access and write(2) are async-signal-safe; the buffer is
    // one live byte.
    unsafe {
        let errno = *libc::__errno_location();
        libc::write(
            SIGNAL_PIPE.load(Ordering::SeqCst),
            (&byte as *const u8).cast(),
            1,
        );
        *libc::__errno_location() = errno;
    }
}

fn signal_thread(read_fd: i32) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a live buffer.
        let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
    let sig = libc::c_int::from(byte);
    SIGNALLED.store(sig, Ordering::SeqCst);
    silence_stderr();
    cleanup_all();
    SIGNAL_CLEANED.store(true, Ordering::SeqCst);
    die_of(sig);
}

/// Points standard error at `/dev/null`. Once a signal has been taken, the
/// servers vanish under the code still running on other threads, which
/// would report the connections and start-ups that fail as a result: the
/// user asked to stop, and those messages would only mislead.
fn silence_stderr() {
    // SAFETY: open and dup2 on a constant path and our own descriptors.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 2);
            libc::close(null);
        }
    }
}

/// Ends the process as signal `sig` would, so the exit status is what a
/// shell expects (130 for Ctrl-C, 143 for SIGTERM); `_exit` is the
/// fallback.
fn die_of(sig: libc::c_int) -> ! {
    // SAFETY: restoring the default action, unblocking and re-raising the
    // signal in this thread; _exit is async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig)
    }
}
