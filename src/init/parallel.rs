//! Several connections at once: a pool that opens extra connections only
//! when a step has independent work for them (and closes them when the
//! step is done, see [`Pool::release`]), runs a list of independent
//! statements over them, and loads account ranges side by side while one
//! progress stream reports the combined count.
//!
//! Errors are reported as pgbench would report them running the same list
//! one statement at a time: the failure of the earliest statement in list
//! order wins, whatever finished first.
//!
//! While one backend writes a lot of WAL (the frozen COPY of a plain
//! `pgbench_accounts`, the key build), a [`WalFlusher`] keeps that WAL
//! flushed from a connection of its own. Without it the loading backend
//! writes and syncs the WAL itself, whenever a page it must evict from its
//! small bulk-write ring, or a WAL buffer it needs, is ahead of what was
//! flushed; measured on PostgreSQL 15 that is about a sixth of its CPU
//! time, while the second core idles. The flusher commits transactions
//! that only take a transaction id (a commit with an id waits for its WAL
//! to be flushed, and so flushes everything inserted before it), so the
//! tables, their rows and their visibility are untouched; what remains
//! visible is transaction ids used and commits counted in the statistics.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use pgwire::conninfo::Config;

use super::progress::Progress;
use super::rows::RowSource;
use super::run::say;
use super::session::Session;
use super::InitError;

/// SQLSTATE class 53, insufficient resources: `too_many_connections`
/// (`max_connections`, a role's or a database's `CONNECTION LIMIT`), out of
/// memory or other resources when a backend starts.
const INSUFFICIENT_RESOURCES: &str = "53";

/// How pgbouncer begins its refusal of a client beyond `max_client_conn`
/// (`no more connections allowed (max_client_conn)`). It comes with
/// SQLSTATE 08P01, protocol violation, which pgbouncer gives to nearly
/// every error of its own, so the phrase is the only sign of "no room for
/// another connection": matching the code alone would also swallow real
/// protocol errors.
const POOLER_FULL: &str = "no more connections allowed";

/// Whether a failed extra connection means "no room for more", not
/// something wrong: the server's class 53 or pgbouncer's refusal.
fn refused_for_lack_of_room(error: &pgwire::Error) -> bool {
    error.db_error().is_some_and(|db| {
        db.code.starts_with(INSUFFICIENT_RESOURCES)
            || (db.code == "08P01" && db.message.starts_with(POOLER_FULL))
    })
}

/// How long a new connection may take to answer its first message before
/// it is taken for one a pooler holds back (see [`Pool::sessions`]); a
/// server that lets the connection in answers at once.
const ANSWER_LIMIT: Duration = Duration::from_secs(2);

pub struct Pool<'a> {
    main: Session,
    extra: Vec<Session>,
    config: &'a Config,
    jobs: usize,
}

impl<'a> Pool<'a> {
    pub fn new(main: Session, config: &'a Config, jobs: usize) -> Pool<'a> {
        Pool {
            main,
            extra: Vec::new(),
            config,
            jobs: jobs.max(1),
        }
    }

    /// How many connections may be used at once.
    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// Where the connections go.
    pub fn config(&self) -> &'a Config {
        self.config
    }

    /// The connection every serial statement runs on.
    pub fn main(&mut self) -> &mut Session {
        &mut self.main
    }

    /// Runs one statement on the main connection and prints its notices.
    pub fn main_execute(&mut self, sql: &str, out: &mut impl Write) -> Result<(), InitError> {
        let result = self.main.execute(sql);
        self.flush_notices(out);
        result
    }

    /// Prints the notices the main connection received, as libpq would.
    pub fn flush_notices(&mut self, out: &mut impl Write) {
        for notice in self.main.take_notices() {
            say(out, &notice);
        }
    }

    /// Closes the extra connections once a step is done. A connection left
    /// idle through a long step may be ended meanwhile (by
    /// `idle_session_timeout`, a pooler or a firewall dropping idle
    /// sessions), and the next statement sent on it would fail where
    /// pgbench, whose only connection is never idle for long, goes on; so
    /// each step opens the ones it needs afresh. Closing waits (briefly)
    /// for the server to end each backend, so the next step finds their
    /// slots free.
    pub fn release(&mut self) {
        for session in self.extra.drain(..) {
            session.close_and_wait(CLOSE_WAIT);
        }
    }

    /// Opens the connections missing for `n` (at most `jobs`) to be used at
    /// once.
    pub fn open(&mut self, n: usize) -> Result<(), InitError> {
        self.sessions(n).map(drop)
    }

    /// `n` connections (at most `jobs`), the main one first, opening the
    /// missing ones. When the server or the role refuses more connections
    /// (`too many connections`, or another insufficient-resources error),
    /// or a pgbouncer in between has reached its `max_client_conn`, the
    /// ones already open do the work from then on: how many there are
    /// never changes the end state, and pgbench itself needs only one. So
    /// do they when a new connection does not answer within
    /// [`ANSWER_LIMIT`]: a pooler in session mode whose server connections
    /// are all taken (by this initialization's own connections, each
    /// holding one) would keep it waiting for good.
    fn sessions(&mut self, n: usize) -> Result<Vec<&mut Session>, InitError> {
        let n = n.clamp(1, self.jobs);
        while self.extra.len() + 1 < n {
            match Session::connect(self.config) {
                Ok(mut session) => {
                    // An extra connection that fails its first round trip
                    // (a pooler's refusal sent after the startup) is left
                    // out as well: pgbench would not have opened it.
                    if !matches!(session.answers_within(ANSWER_LIMIT), Ok(true)) {
                        self.jobs = self.extra.len() + 1;
                        break;
                    }
                    self.extra.push(session);
                }
                Err(InitError::Connect(e)) if refused_for_lack_of_room(&e) => {
                    self.jobs = self.extra.len() + 1;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        let mut sessions = vec![&mut self.main];
        sessions.extend(self.extra.iter_mut().take(n - 1));
        Ok(sessions)
    }
}

/// Runs independent statements, each once, over as many connections as
/// useful. After a failure no further statement starts. The notices
/// (vacuum's warnings about tables the role may not vacuum, say) come out
/// in list order, as pgbench running the list one by one prints them, up
/// to the statement whose failure is reported.
pub fn execute_all(
    pool: &mut Pool<'_>,
    statements: &[String],
    out: &mut impl Write,
) -> Result<(), InitError> {
    if statements.is_empty() {
        return Ok(());
    }
    let mut sessions = pool.sessions(statements.len())?;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let outcomes: Mutex<Vec<Outcome>> =
        Mutex::new((0..statements.len()).map(|_| Outcome::default()).collect());
    std::thread::scope(|scope| {
        for session in sessions.iter_mut() {
            let (next, failed, outcomes) = (&next, &failed, &outcomes);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= statements.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let error = session.execute(&statements[i]).err();
                if error.is_some() {
                    failed.store(true, Ordering::Relaxed);
                }
                let notices = session.take_notices();
                let mut outcomes = outcomes
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                outcomes[i] = Outcome { notices, error };
            });
        }
    });
    let outcomes = outcomes
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for outcome in outcomes {
        for notice in &outcome.notices {
            say(out, notice);
        }
        if let Some(e) = outcome.error {
            return Err(e);
        }
    }
    Ok(())
}

/// What one statement of [`execute_all`] left: the notices it drew and
/// its error, if it failed.
#[derive(Default)]
struct Outcome {
    notices: Vec<String>,
    error: Option<InitError>,
}

/// Loads `pgbench_accounts` over `loaders` connections at once, each
/// connection sending the rows `source(i)` gives it (ascending ids of
/// whole partitions), its COPY committing on its own.
pub fn load_accounts(
    pool: &mut Pool<'_>,
    loaders: usize,
    source: impl Fn(usize, usize) -> RowSource,
    progress: &mut Progress,
    out: &mut impl Write,
) -> Result<(), InitError> {
    let mut sessions = pool.sessions(loaders)?;
    let loaders = sessions.len();
    let (tx, rx) = mpsc::channel::<i64>();
    let results: Vec<Result<(), InitError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter_mut()
            .enumerate()
            .map(|(i, session)| {
                let mut source = source(i, loaders);
                let tx = tx.clone();
                scope.spawn(move || {
                    session.copy_in("copy pgbench_accounts from stdin", |buf| {
                        let before = source.rows_done();
                        let more = source.fill(buf);
                        // The receiver outlives every loader.
                        let _ = tx.send(source.rows_done() - before);
                        more
                    })
                })
            })
            .collect();
        drop(tx);
        let mut done = 0;
        for rows in rx {
            done += rows;
            progress.advance(done, out);
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    progress.finish(out);
    for session in sessions.iter_mut() {
        for notice in session.take_notices() {
            say(out, &notice);
        }
    }
    single_copy_error(results)
}

/// The failure pgbench's one COPY of every account, in ascending `aid`
/// order, would have met: of the loaders that failed at a row, the one
/// whose row has the lowest `aid` (each loader sends its rows in ascending
/// order, so its failing row is its first bad one), with the line number
/// of that row in pgbench's COPY, where line N holds account N. Without
/// such a failure, the first loader's failure.
fn single_copy_error(results: Vec<Result<(), InitError>>) -> Result<(), InitError> {
    let mut lowest_row: Option<(i64, InitError)> = None;
    let mut first = None;
    for error in results.into_iter().filter_map(Result::err) {
        let at_row = match &error {
            InitError::CopyEnd { message } => as_single_copy(message),
            _ => None,
        };
        match at_row {
            Some((aid, message)) => {
                if lowest_row
                    .as_ref()
                    .map_or(true, |(lowest, _)| aid < *lowest)
                {
                    lowest_row = Some((aid, InitError::CopyEnd { message }));
                }
            }
            None => {
                first.get_or_insert(error);
            }
        }
    }
    match lowest_row.map(|(_, e)| e).or(first) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A loader's COPY failure whose server context names the line it failed
/// on (`COPY pgbench_accounts, line 16666: "50000\t1\t0\t"`): the
/// account id the line begins with, and the message with that id as the
/// line number.
fn as_single_copy(message: &str) -> Option<(i64, String)> {
    const CONTEXT: &str = "CONTEXT:  COPY pgbench_accounts, line ";
    let start = message.find(CONTEXT)? + CONTEXT.len();
    let digits = message[start..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    let rest = message[start + digits..].strip_prefix(": \"")?;
    let aid: i64 = rest.split_once('\t')?.0.parse().ok()?;
    let renumbered = format!("{}{aid}{}", &message[..start], &message[start + digits..]);
    Some((aid, renumbered))
}

/// How long the flusher waits between two flushes: WAL written in the
/// meantime (a few MB during a load) is far less than the loading
/// backend's ring of 16 MB of pages, so its evictions find their WAL
/// already flushed.
const FLUSH_PAUSE: Duration = Duration::from_millis(2);

/// How long a stopping flusher waits for the server to end its backend, so
/// that the next step's connections find its slot free.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// A thread that flushes the server's WAL at once and then every
/// [`FLUSH_PAUSE`] until it is dropped (see the module documentation).
pub struct WalFlusher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl WalFlusher {
    /// Starts flushing from a thread that opens its own connection, so the
    /// step does not wait for it. The flusher only speeds the work up: a
    /// connection that cannot be had or does not answer in time (see
    /// [`Pool::sessions`]), or a server that refuses its statements, ends
    /// it quietly. So that it never takes a connection
    /// slot the step needs, start it once the step's connections are open
    /// ([`Pool::open`]).
    pub fn start(config: &Config) -> Option<WalFlusher> {
        let config = config.clone();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("wal-flusher".into())
            .spawn(move || flush_until_stopped(&config, &stopped))
            .ok()?;
        Some(WalFlusher {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// The flusher's thread: connects, then flushes at once and after every
/// [`FLUSH_PAUSE`] until `stopped` is dropped (so it flushes at least once,
/// however short the step); then closes its connection and waits for the
/// server to end it, so that its slot is free for the next step.
fn flush_until_stopped(config: &Config, stopped: &mpsc::Receiver<()>) {
    let Ok(mut session) = Session::connect(config) else {
        return;
    };
    if !matches!(session.answers_within(ANSWER_LIMIT), Ok(true)) {
        return;
    }
    flush_on(&mut session, stopped);
    session.close_and_wait(CLOSE_WAIT);
}

fn flush_on(session: &mut Session, stopped: &mpsc::Receiver<()>) {
    // `local`: flush even where commits do not wait by default, and never
    // wait for a standby. Set for each transaction, not for the session:
    // behind a pooler in transaction mode a session setting would stay on
    // a server connection that other clients get next.
    let flush = if session.server_version_num() >= 130000 {
        "begin; set local synchronous_commit = local; select pg_current_xact_id(); commit"
    } else {
        "begin; set local synchronous_commit = local; select txid_current(); commit"
    };
    while session.execute(flush).is_ok()
        && stopped.recv_timeout(FLUSH_PAUSE) == Err(mpsc::RecvTimeoutError::Timeout)
    {}
}

impl Drop for WalFlusher {
    /// Stops the thread after its current flush and closes its connection.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
