//! Several connections at once: a pool that opens extra connections only
//! when a step has independent work for them, runs a list of independent
//! statements over them, and loads account ranges side by side while one
//! progress stream reports the combined count.
//!
//! Errors are reported as pgbench would report them running the same list
//! one statement at a time: the failure of the earliest statement in list
//! order wins, whatever finished first.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use pgwire::conninfo::Config;

use super::progress::Progress;
use super::rows::RowSource;
use super::run::say;
use super::session::Session;
use super::InitError;

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

    /// `n` connections (at most `jobs`), the main one first, opening the
    /// missing ones.
    fn sessions(&mut self, n: usize) -> Result<Vec<&mut Session>, InitError> {
        let n = n.clamp(1, self.jobs);
        while self.extra.len() + 1 < n {
            let session = Session::connect(self.config)?;
            self.extra.push(session);
        }
        let mut sessions = vec![&mut self.main];
        sessions.extend(self.extra.iter_mut().take(n - 1));
        Ok(sessions)
    }
}

fn first_error(errors: Vec<Option<InitError>>) -> Result<(), InitError> {
    match errors.into_iter().flatten().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs independent statements, each once, over as many connections as
/// useful. After a failure no further statement starts.
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
    let errors: Mutex<Vec<Option<InitError>>> =
        Mutex::new((0..statements.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for session in sessions.iter_mut() {
            let (next, failed, errors) = (&next, &failed, &errors);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= statements.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                if let Err(e) = session.execute(&statements[i]) {
                    failed.store(true, Ordering::Relaxed);
                    if let Ok(mut errors) = errors.lock() {
                        errors[i] = Some(e);
                    }
                }
            });
        }
    });
    for session in sessions.iter_mut() {
        for notice in session.take_notices() {
            say(out, &notice);
        }
    }
    match errors.into_inner() {
        Ok(errors) => first_error(errors),
        Err(poisoned) => first_error(poisoned.into_inner()),
    }
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
    first_error(results.into_iter().map(Result::err).collect())
}
