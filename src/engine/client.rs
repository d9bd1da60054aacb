//! One client: its connection, variables, random state and where it is in
//! its script. The transitions live in [`super::machine`].

use pgwire::{Connecting, Connection};

use crate::expr::vars::Variables;
use crate::expr::EvalStack;
use crate::random::PrngState;

use super::reconnect::Watch;
use super::shell::ShellJob;

/// Where a client is; pgbench's `CSTATE_*` with the skipping of inactive
/// `\if` branches replaced by precomputed jumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    // Choosing and starting a transaction.
    /// Choose the next script by weight.
    ChooseScript,
    /// Draw the next scheduled start under `-R` (skipping late ones under `-L`).
    PrepareThrottle,
    /// Wait until the scheduled start.
    Throttle,
    /// Open a connection (`-C`), then start.
    Connect,
    /// `--pool-size`: wait for a pooled connection, then start.
    PoolWait,
    /// Record the start and go to the first command.
    StartTx,

    // Running commands.
    /// Send an SQL command or run a meta command.
    StartCommand,
    /// Read the results of an SQL command or of a whole pipeline.
    WaitResult,
    /// `\sleep`.
    Sleep,
    /// `\shell` or `\setshell` runs.
    WaitShell,
    /// Account the command and move to the next one.
    EndCommand,

    // After an SQL error that may be retried or tolerated.
    /// Roll back if in a transaction block, then retry or fail.
    Error,
    WaitRollback,
    Retry,
    Failure,

    // `--reconnect`, after a lost connection or a read-only refusal.
    /// Account the failed transaction and close the connection.
    Lost,
    /// Open a new connection (with backoff), then choose the next script.
    Reconnect,

    // Ending.
    /// Account the transaction; next one or done.
    EndTx,
    Finished,
    Aborted,
}

impl State {
    pub fn is_done(self) -> bool {
        matches!(self, State::Finished | State::Aborted)
    }

    /// States a socket or child event can move on.
    pub fn waits_for_io(self) -> bool {
        matches!(
            self,
            State::WaitResult
                | State::WaitRollback
                | State::Connect
                | State::WaitShell
                | State::Reconnect
        )
    }

    /// States a timer moves on.
    pub fn waits_for_time(self) -> bool {
        matches!(
            self,
            State::Throttle | State::Sleep | State::Connect | State::Reconnect
        )
    }
}

/// Why the current transaction is failing (pgbench's `EStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorStatus {
    None,
    Serialization,
    Deadlock,
    OtherSql,
}

impl ErrorStatus {
    pub fn from_sqlstate(code: Option<&str>) -> ErrorStatus {
        match code {
            Some("40001") => ErrorStatus::Serialization,
            Some("40P01") => ErrorStatus::Deadlock,
            _ => ErrorStatus::OtherSql,
        }
    }

    pub fn can_retry(self) -> bool {
        matches!(self, ErrorStatus::Serialization | ErrorStatus::Deadlock)
    }
}

/// The results of the SQL command (or pipeline) being read.
#[derive(Debug, Default)]
pub struct Response {
    /// ReadyForQuery messages still to come.
    pub syncs_left: u32,
    /// Results completed so far (pgbench's query number).
    pub results: u32,
    /// ReadyForQuery messages so far (while a pipeline's statements are
    /// prepared, which statement a message belongs to).
    pub syncs_seen: u32,
    /// Inside a pipeline: its synchronisation points (`\syncpipeline`)
    /// answered since the last query result. libpq hands out no end of
    /// results after a sync, so pgbench counts them into the query number
    /// of the result that follows them.
    pub syncs_since_result: u32,
    /// Rows of the result being read.
    pub rows: u64,
    /// Rows of the last completed result.
    pub last_rows: u64,
    /// The first error: its status, the query number and libpq's text.
    pub error: Option<(ErrorStatus, u32, String)>,
    /// That error's SQLSTATE.
    pub sqlstate: [u8; 5],
    /// The connection was gone before the results were read.
    pub abort: Option<String>,
    /// A COPY started: the client aborts, its line already printed (as
    /// pgbench prints it, before ending the COPY).
    pub copy_met: bool,
    /// A COPY FROM STDIN (CopyInResponse, or CopyBothResponse) waits for
    /// the CopyDone this client owes it.
    pub copy_in: bool,
    /// A COPY started and has not completed: an error now is the COPY's.
    pub copy_open: bool,
    /// The recorded error is the COPY's, which libpq's `PQendcopy` shows
    /// as a notice.
    pub copy_error: bool,
    /// For `\gset`/`\aset`: the slot of each column of the current result
    /// (`None`: no script uses that name, so it is not stored).
    pub columns: Vec<Option<usize>>,
    /// The last row's values (NULL is stored as an empty string, as
    /// pgbench's `PQgetvalue` gives).
    pub values: Vec<Vec<u8>>,
    /// Scratch for building `prefix` + column name.
    pub name_buf: String,
    /// The first column of the current result whose `prefix` + name is not
    /// a valid variable name (storing the result fails on it, as in pgbench).
    pub bad_name: Option<String>,
    /// A result that could not be stored: its query number and the name.
    pub store_failed: Option<(u32, String)>,
    /// `-M prepared`: the command's Parse went out with it and is not
    /// answered yet.
    pub parse_pending: bool,
    /// That Parse failed (see `sql::finish_results`).
    pub parse_failed: bool,
    /// The server had already closed the connection when the command was
    /// sent (its backend ended while the client was idle).
    pub closed_before_send: bool,
    /// Part of a statement has been sent and the rest is still to go (or
    /// was lost as the server closed its end). A connection that ends
    /// with no message read after that close failed the send (see
    /// `sql::read_results`).
    pub send_cut: bool,
    /// Messages read with a pipeline's last ReadyForQuery, to be shown
    /// after the line that aborts the client (see `sql::read_while_idle`).
    pub after_abort: String,
}

impl Response {
    pub fn reset(&mut self, syncs: u32) {
        self.syncs_left = syncs;
        self.results = 0;
        self.syncs_seen = 0;
        self.syncs_since_result = 0;
        self.rows = 0;
        self.last_rows = 0;
        self.error = None;
        self.abort = None;
        self.copy_met = false;
        self.copy_in = false;
        self.copy_open = false;
        self.copy_error = false;
        self.bad_name = None;
        self.store_failed = None;
        self.parse_pending = false;
        self.parse_failed = false;
        self.closed_before_send = false;
        self.send_cut = false;
        self.after_abort.clear();
    }
}

/// One benchmark client.
pub struct Client {
    /// The client number over the whole run (`client_id`).
    pub id: u32,
    pub state: State,
    pub conn: Option<Connection>,
    /// `--pool-size`: the pooled connection `conn` is (see [`super::app_pool`]).
    pub slot: Option<usize>,
    /// `--pool-size`: when the client asked for a connection (µs).
    pub asked: i64,
    /// The socket is registered for writability too (a write was partial).
    pub writing: bool,
    /// The poller saw the server close its end. The close may have come
    /// with the last bytes (a FATAL error, then end of file), and an
    /// edge-triggered poller will not report it again: read to the end
    /// instead of stopping after a short read.
    pub peer_closed: bool,
    pub connecting: Option<Connecting>,
    /// When the current connection attempt started (µs), once the
    /// thread's pacer gave it a slot.
    pub connect_start: i64,
    pub vars: Variables,
    /// `random*()` state (pgbench's `cs_func_rs`) and its copy at the start
    /// of the transaction, restored for a retry.
    pub random: PrngState,
    pub random_at_start: PrngState,
    pub stack: EvalStack,
    pub script: usize,
    pub command: usize,
    /// The command to run after the current one, when it is not the next.
    pub jump: Option<usize>,
    /// The next command is an `\elif` reached from a false condition: it
    /// is evaluated rather than ending the block.
    pub elif_pending: bool,
    /// Transactions ended (committed, failed or skipped).
    pub count: u64,
    pub tries: u32,
    pub status: ErrorStatus,
    pub scheduled: i64,
    pub begun: i64,
    pub command_begun: i64,
    pub sleep_until: i64,
    /// Per script, per command: prepared on this connection (`-M prepared`).
    pub prepared: Vec<Vec<bool>>,
    /// Syncs sent in the open pipeline; `None` outside a pipeline.
    pub pipeline: Option<u32>,
    /// The SQL commands sent in the open pipeline (their indexes in the
    /// script), in order: the n-th result answers the n-th of them.
    pub pipeline_sent: Vec<usize>,
    /// The SQL commands prepared (`-M prepared`) as the open pipeline
    /// started, in order: their Parse results come before all others.
    pub pipeline_prepared: Vec<usize>,
    pub response: Response,
    /// Reused buffer for SQL text with variables substituted.
    pub sql: Vec<u8>,
    pub shell: Option<ShellJob>,
    /// The SQLSTATE of the error that fails the transaction.
    pub sqlstate: [u8; 5],
    /// `--reconnect`: the outage timeline.
    pub watch: Option<Watch>,
}

impl Client {
    pub fn new(
        id: u32,
        vars: Variables,
        random: PrngState,
        commands_per_script: &[usize],
    ) -> Client {
        Client {
            id,
            state: State::ChooseScript,
            conn: None,
            slot: None,
            asked: 0,
            writing: false,
            peer_closed: false,
            connecting: None,
            connect_start: 0,
            vars,
            random,
            random_at_start: random,
            stack: EvalStack::new(),
            script: 0,
            command: 0,
            jump: None,
            elif_pending: false,
            count: 0,
            tries: 1,
            status: ErrorStatus::None,
            scheduled: 0,
            begun: 0,
            command_begun: 0,
            sleep_until: 0,
            prepared: commands_per_script
                .iter()
                .map(|&n| vec![false; n])
                .collect(),
            pipeline: None,
            pipeline_sent: Vec::new(),
            pipeline_prepared: Vec::new(),
            response: Response::default(),
            sql: Vec::with_capacity(1024),
            shell: None,
            sqlstate: [b'0'; 5],
            watch: None,
        }
    }

    /// Forgets what was prepared on the previous connection.
    pub fn reset_session(&mut self) {
        for script in &mut self.prepared {
            script.iter_mut().for_each(|p| *p = false);
        }
        self.pipeline = None;
    }
}
