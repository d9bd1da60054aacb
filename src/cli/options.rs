//! The option table: one definition per option, with its names, whether it
//! takes a value, which mode it belongs to, its help lines and the function
//! that records it.
//!
//! The table is in the order of pgbench 18's `long_options` array (then
//! `--continue-on-error` from PostgreSQL 19, then pgbolt's extensions),
//! because getopt lists the candidates of an ambiguous abbreviation in
//! that order. Help output has its own order, given by each help line's
//! section and rank.
//!
//! pgbolt's extensions are long options only, and they never change the
//! meaning of a pgbench 18 command line: an abbreviation that names exactly
//! one pgbench 18 option keeps naming it even when it is also a prefix of
//! a newer option or an extension (`--no-` is still `--no-vacuum`, not
//! ambiguous with `--no-preflight`; `--con` is still `--connect`, as in
//! pgbench 18, although pgbench 19's `--continue-on-error` makes it
//! ambiguous there). See [`super::getopt`].

use super::gather as g;
use super::getopt::{RecordFlag, RecordOptional, RecordValue};

/// Which mode an option belongs to; pgbench refuses benchmarking options
/// with `-i` and initialization options without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Common,
    Init,
    Benchmark,
}

/// Where an option comes from. Abbreviations are resolved tier by tier in
/// this order, so an option of a later tier never makes an abbreviation of
/// an earlier one ambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// pgbench 18.
    Pgbench,
    /// Added to pgbench after 18 (`--continue-on-error`, PostgreSQL 19):
    /// `--con` keeps meaning `--connect`, as in pgbench 18.
    PgbenchNext,
    /// pgbolt's extensions.
    Pgbolt,
}

/// A section of the help output, in output order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Init,
    Select,
    Benchmarking,
    Common,
    Extensions,
    Sweep,
    Compare,
    Fleet,
    Pool,
}

impl Section {
    pub const ALL: [Section; 9] = [
        Section::Init,
        Section::Select,
        Section::Benchmarking,
        Section::Common,
        Section::Extensions,
        Section::Sweep,
        Section::Pool,
        Section::Compare,
        Section::Fleet,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Section::Init => "Initialization options:",
            Section::Select => "Options to select what to run:",
            Section::Benchmarking => "Benchmarking options:",
            Section::Common => "Common options:",
            Section::Extensions => "pgbolt options (not in pgbench):",
            Section::Fleet => "Several load generators (pgbolt):",
            Section::Sweep => "Sweeps (a series of runs, one per value):",
            Section::Pool => "Targets and poolers (the same runs against each target):",
            Section::Compare => {
                "Comparing two results (pgbolt --compare BASELINE.json CANDIDATE.json):"
            }
        }
    }
}

/// One line (or a few, separated by `\n`) of help for an option.
#[derive(Debug, Clone, Copy)]
pub struct HelpLine {
    pub section: Section,
    /// Position within the section.
    pub rank: u8,
    pub text: &'static str,
}

/// What an option does when it is seen.
#[derive(Clone, Copy)]
pub enum Action {
    /// An option without a value.
    Flag(RecordFlag),
    /// An option with a required value.
    Value(RecordValue),
    /// A long option whose value is optional, attached with `=`.
    OptionalValue(RecordOptional),
    /// `-?`/`--help` and `-V`/`--version`: recognised only as the very first
    /// argument, as pgbench does; elsewhere they are unknown options.
    FirstArgument,
}

/// The definition of one command-line option.
#[derive(Clone, Copy)]
pub struct OptionDef {
    pub short: Option<char>,
    pub long: &'static str,
    /// Name of the value in help (`NUM`); empty for flags.
    pub value_name: &'static str,
    pub class: Class,
    pub origin: Origin,
    pub action: Action,
    pub help: &'static [HelpLine],
}

impl OptionDef {
    /// Whether getopt matches this option (everything but help/version).
    pub fn is_getopt(&self) -> bool {
        !matches!(self.action, Action::FirstArgument)
    }
}

const fn line(section: Section, rank: u8, text: &'static str) -> HelpLine {
    HelpLine {
        section,
        rank,
        text,
    }
}

macro_rules! opt {
    ($short:expr, $long:expr, $value:expr, $class:ident, $origin:ident, $action:expr, [$($help:expr),+ $(,)?]) => {
        OptionDef {
            short: $short,
            long: $long,
            value_name: $value,
            class: Class::$class,
            origin: Origin::$origin,
            action: $action,
            help: &[$($help),+],
        }
    };
}

use Action::{FirstArgument, Flag, OptionalValue, Value};
use Section::{
    Benchmarking as B, Common as C, Compare as K, Extensions as X, Fleet as F, Init as I,
    Pool as P, Select as S, Sweep as W,
};

/// Every option pgbolt knows.
pub static OPTIONS: &[OptionDef] = &[
    opt!(Some('b'), "builtin", "NAME[@W]", Benchmark, Pgbench, Value(g::builtin),
        [line(S, 1, "run builtin script NAME with weight W (default: 1)\n(\"-b list\" lists the builtin scripts)")]),
    opt!(Some('c'), "client", "NUM", Benchmark, Pgbench, Value(g::clients),
        [line(B, 1, "number of concurrent clients (default: 1)")]),
    opt!(Some('C'), "connect", "", Benchmark, Pgbench, Flag(g::connect),
        [line(B, 2, "open a new connection for every transaction")]),
    opt!(Some('d'), "dbname", "DBNAME", Common, Pgbench, Value(g::dbname),
        [line(C, 2, "database to connect to")]),
    opt!(Some('D'), "define", "VARNAME=VALUE", Benchmark, Pgbench, Value(g::define),
        [line(B, 3, "set a variable for the scripts")]),
    opt!(Some('f'), "file", "FILENAME[@W]", Benchmark, Pgbench, Value(g::file),
        [line(S, 2, "run the script in FILENAME with weight W (default: 1)")]),
    opt!(Some('F'), "fillfactor", "NUM", Init, Pgbench, Value(g::fillfactor),
        [line(I, 3, "fill factor of the tables, 10 to 100 (default: 100)")]),
    opt!(Some('h'), "host", "HOSTNAME", Common, Pgbench, Value(g::host),
        [line(C, 3, "server host name or socket directory")]),
    opt!(Some('i'), "initialize", "", Common, Pgbench, Flag(g::initialize),
        [line(I, 1, "initialization mode: create and fill the tables")]),
    opt!(Some('I'), "init-steps", "[dtgGvpf]+ (default \"dtgvp\")", Init, Pgbench, Value(g::init_steps),
        [line(I, 2, "initialization steps to run, in this order:\n\
                     d: drop existing pgbench tables\n\
                     t: create the tables of the standard scenario\n\
                     g: generate data in the client\n\
                     G: generate data in the server\n\
                     v: vacuum the standard tables\n\
                     p: create primary keys\n\
                     f: create foreign keys")]),
    opt!(Some('j'), "jobs", "NUM", Benchmark, Pgbench, Value(g::jobs),
        [line(B, 4, "number of worker threads (default: 1)")]),
    opt!(Some('l'), "log", "", Benchmark, Pgbench, Flag(g::log),
        [line(B, 5, "log every transaction to a file")]),
    opt!(Some('L'), "latency-limit", "NUM", Benchmark, Pgbench, Value(g::latency_limit),
        [line(B, 6, "transactions slower than NUM ms count as late")]),
    opt!(Some('n'), "no-vacuum", "", Common, Pgbench, Flag(g::no_vacuum),
        [line(I, 4, "skip the vacuum step"), line(B, 8, "do not vacuum before the run")]),
    opt!(Some('p'), "port", "PORT", Common, Pgbench, Value(g::port),
        [line(C, 4, "server port")]),
    opt!(Some('P'), "progress", "NUM", Benchmark, Pgbench, Value(g::progress),
        [line(B, 9, "print a progress report every NUM seconds")]),
    opt!(Some('M'), "protocol", "simple|extended|prepared", Benchmark, Pgbench, Value(g::protocol),
        [line(B, 7, "how queries are sent to the server (default: simple)")]),
    opt!(Some('q'), "quiet", "", Init, Pgbench, Flag(g::quiet),
        [line(I, 5, "report progress every 5 seconds only")]),
    opt!(Some('r'), "report-per-command", "", Benchmark, Pgbench, Flag(g::report_per_command),
        [line(B, 10, "report latency, failures and retries of each command")]),
    opt!(Some('R'), "rate", "NUM", Benchmark, Pgbench, Value(g::rate),
        [line(B, 11, "target rate in transactions per second")]),
    opt!(Some('s'), "scale", "NUM", Common, Pgbench, Value(g::scale),
        [line(I, 6, "scale factor, the number of branches (default: 1)"),
         line(B, 12, "scale factor to print in the report")]),
    opt!(Some('S'), "select-only", "", Benchmark, Pgbench, Flag(g::select_only),
        [line(S, 4, "read-only transactions (builtin \"select-only\")")]),
    opt!(Some('N'), "skip-some-updates", "", Benchmark, Pgbench, Flag(g::skip_some_updates),
        [line(S, 3, "leave tellers and branches alone\n(builtin \"simple-update\")")]),
    opt!(Some('T'), "time", "NUM", Benchmark, Pgbench, Value(g::time),
        [line(B, 14, "run for NUM seconds")]),
    opt!(Some('t'), "transactions", "NUM", Benchmark, Pgbench, Value(g::transactions),
        [line(B, 13, "transactions run by each client (default: 10)")]),
    opt!(Some('U'), "username", "USERNAME", Common, Pgbench, Value(g::username),
        [line(C, 5, "user name to connect as")]),
    opt!(Some('v'), "vacuum-all", "", Benchmark, Pgbench, Flag(g::vacuum_all),
        [line(B, 15, "also vacuum pgbench_accounts before the run")]),
    opt!(None, "unlogged-tables", "", Init, Pgbench, Flag(g::unlogged_tables),
        [line(I, 12, "create the tables as unlogged")]),
    opt!(None, "tablespace", "TABLESPACE", Init, Pgbench, Value(g::tablespace),
        [line(I, 11, "put the tables in this tablespace")]),
    opt!(None, "index-tablespace", "TABLESPACE", Init, Pgbench, Value(g::index_tablespace),
        [line(I, 8, "put the indexes in this tablespace")]),
    opt!(None, "sampling-rate", "NUM", Benchmark, Pgbench, Value(g::sampling_rate),
        [line(B, 24, "fraction of transactions to log (0.01 logs 1%)")]),
    opt!(None, "aggregate-interval", "NUM", Benchmark, Pgbench, Value(g::aggregate_interval),
        [line(B, 16, "log one aggregated line every NUM seconds")]),
    opt!(None, "progress-timestamp", "", Benchmark, Pgbench, Flag(g::progress_timestamp),
        [line(B, 22, "progress reports show Unix timestamps")]),
    opt!(None, "log-prefix", "PREFIX", Benchmark, Pgbench, Value(g::log_prefix),
        [line(B, 20, "name prefix of the log files (default: \"pgbench_log\")")]),
    opt!(None, "foreign-keys", "", Init, Pgbench, Flag(g::foreign_keys),
        [line(I, 7, "add foreign keys between the tables")]),
    opt!(None, "random-seed", "SEED", Benchmark, Pgbench, Value(g::random_seed),
        [line(B, 23, "seed of the random generators: \"time\", \"rand\"\nor an integer (default: time)")]),
    opt!(None, "show-script", "NAME", Common, Pgbench, Value(g::show_script),
        [line(B, 25, "print the builtin script NAME and exit")]),
    opt!(None, "partitions", "NUM", Init, Pgbench, Value(g::partitions),
        [line(I, 10, "split pgbench_accounts into NUM partitions\n(default: 0)")]),
    opt!(None, "partition-method", "(range|hash)", Init, Pgbench, Value(g::partition_method),
        [line(I, 9, "how to partition pgbench_accounts (default: range)")]),
    opt!(None, "failures-detailed", "", Benchmark, Pgbench, Flag(g::failures_detailed),
        [line(B, 19, "break failures down by kind")]),
    opt!(None, "max-tries", "NUM", Benchmark, Pgbench, Value(g::max_tries),
        [line(B, 21, "try each transaction at most NUM times, 0 for no\nlimit (default: 1)")]),
    opt!(None, "verbose-errors", "", Benchmark, Pgbench, Flag(g::verbose_errors),
        [line(B, 26, "print the message of every error")]),
    opt!(None, "exit-on-abort", "", Benchmark, Pgbench, Flag(g::exit_on_abort),
        [line(B, 18, "stop the whole run as soon as one client aborts")]),
    opt!(None, "debug", "", Common, Pgbench, Flag(g::debug),
        [line(C, 1, "print debugging output")]),
    opt!(None, "continue-on-error", "", Benchmark, PgbenchNext, Flag(g::continue_on_error),
        [line(B, 17, "keep a client running after an SQL error")]),
    opt!(Some('V'), "version", "", Common, Pgbench, FirstArgument,
        [line(C, 6, "print the version and exit")]),
    opt!(Some('?'), "help", "", Common, Pgbench, FirstArgument,
        [line(C, 7, "print this help and exit")]),
    opt!(None, "json", "FILE", Benchmark, Pgbolt, Value(g::json),
        [line(X, 2, "also write the results to FILE as JSON\n(- for standard output)")]),
    opt!(None, "pgbench-output", "", Benchmark, Pgbolt, Flag(g::pgbench_output),
        [line(X, 4, "print exactly what pgbench prints, nothing more")]),
    opt!(None, "init-jobs", "NUM", Init, Pgbolt, Value(g::init_jobs),
        [line(X, 8, "connections used at once by -i\n(default: CPUs, at most 8)")]),
    opt!(None, "no-preflight", "", Common, Pgbolt, Flag(g::no_preflight),
        [line(X, 3, "skip the checks made before connecting")]),
    opt!(None, "temp-instance", "", Common, Pgbolt, Flag(g::temp_instance),
        [line(X, 5, "run against a throwaway PostgreSQL instance")]),
    opt!(None, "temp-instance-setting", "NAME=VALUE", Common, Pgbolt, Value(g::temp_instance_setting),
        [line(X, 7, "server setting of the throwaway instance (repeatable)")]),
    opt!(None, "temp-instance-keep", "", Common, Pgbolt, Flag(g::temp_instance_keep),
        [line(X, 6, "keep the throwaway instance's directory afterwards")]),
    opt!(None, "io", "auto|epoll|uring", Common, Pgbolt, Value(g::io),
        [line(X, 1, "I/O driver of the worker threads (default: auto)")]),
    opt!(None, "busy-poll", "auto|on|off", Common, Pgbolt, Value(g::busy_poll),
        [line(X, 9, "spin instead of sleeping while waiting for the\nserver (default: auto)")]),
    opt!(None, "no-monitor", "", Benchmark, Pgbolt, Flag(g::no_monitor),
        [line(X, 12, "no monitor connection, no server view in the\ndiagnosis")]),
    opt!(None, "monitor-interval", "MS", Benchmark, Pgbolt, Value(g::monitor_interval),
        [line(X, 13, "sample the server's activity every MS ms\n(default: 100)")]),
    opt!(None, "pool-size", "NUM", Benchmark, Pgbolt, Value(g::pool_size),
        [line(X, 14, "share NUM connections among the clients, each\ntaking one for a transaction (an application's pool)"),
         line(P, 3, "with --temp-pgbouncer: the throwaway PgBouncer's\nserver connections instead (default: CPUs x 2)")]),
    opt!(None, "html", "FILE", Benchmark, Pgbolt, Value(g::html),
        [line(X, 10, "also write the report to FILE as one HTML page")]),
    opt!(None, "render", "RESULT", Common, Pgbolt, Value(g::render),
        [line(X, 11, "render a saved JSON result (with --html=FILE),\nconnecting to nothing")]),
    opt!(None, "max-input-size", "SIZE", Common, Pgbolt, Value(g::max_input_size),
        [line(X, 15, "largest result file --render, --compare or\n--merge reads (default: 1GB; kB, MB, GB, TB)")]),
    opt!(None, "sweep", "DIM:VALUES", Benchmark, Pgbolt, Value(g::sweep),
        [line(W, 1, "run once per value of clients, threads or rate:\na list (clients:1,2,4), a range (clients:1..64*2,\nrate:100..500+100) or clients:auto")]),
    opt!(None, "warmup", "SEC", Benchmark, Pgbolt, Value(g::warmup),
        [line(W, 2, "run SEC seconds first, not measured (before each\nstep of a sweep)")]),
    opt!(None, "repeat", "NUM", Benchmark, Pgbolt, Value(g::repeat),
        [line(W, 3, "measure each step NUM times, in alternating order")]),
    opt!(None, "repeat-order", "alternate|shuffle", Benchmark, Pgbolt, Value(g::repeat_order),
        [line(W, 4, "order of each pass over the values: alternating\ndirection (default) or shuffled with the seed")]),
    opt!(None, "sweep-reset", "vacuum|checkpoint", Benchmark, Pgbolt, Value(g::sweep_reset),
        [line(W, 5, "between steps: pgbench's vacuum (default), or\nthe vacuum then a CHECKPOINT")]),
    opt!(None, "slo", "pNN<LIMIT", Benchmark, Pgbolt, Value(g::slo),
        [line(W, 6, "latency objective of each step, such as p99<10ms\n(repeatable; auto stops when one fails)")]),
    opt!(None, "compare", "", Common, Pgbolt, Flag(g::compare),
        [line(K, 1, "compare two result files written by --json, runs\nor sweeps (step by step); no connection is made\n(--json=FILE writes the comparison)")]),
    opt!(None, "threshold", "PCT", Common, Pgbolt, Value(g::threshold),
        [line(K, 2, "smallest change that counts (default: 3%)")]),
    opt!(None, "compare-metric", "LIST", Common, Pgbolt, Value(g::compare_metric),
        [line(K, 3, "metrics the verdict rests on, among tps, p50, p90,\np99, p99.9 (default: tps,p99)")]),
    opt!(None, "compare-format", "text|markdown", Common, Pgbolt, Value(g::compare_format),
        [line(K, 4, "how the comparison is printed (default: text)")]),
    opt!(None, "fail-on-regression", "", Common, Pgbolt, Flag(g::fail_on_regression),
        [line(K, 5, "exit with status 3 when the verdict is a regression")]),
    opt!(None, "generator", "I/N", Benchmark, Pgbolt, Value(g::generator),
        [line(F, 1, "run generator I (from 0) of N's share of the\nbenchmark")]),
    opt!(None, "generators", "N", Benchmark, Pgbolt, Value(g::generators),
        [line(F, 2, "one of N generators, the index read from\nJOB_COMPLETION_INDEX (Kubernetes Indexed Job)")]),
    opt!(None, "start-at", "TIME", Benchmark, Pgbolt, Value(g::start_at),
        [line(F, 3, "connect, then start at this wall-clock time\n(RFC 3339 or Unix seconds)")]),
    opt!(None, "run-id", "ID", Benchmark, Pgbolt, Value(g::run_id),
        [line(F, 4, "name the run its generators belong to\n(default: from the command line and --start-at)")]),
    opt!(None, "metrics-listen", "ADDR:PORT", Benchmark, Pgbolt, Value(g::metrics_listen),
        [line(X, 16, "serve live metrics to Prometheus at ADDR:PORT\n(see docs/metrics.md)")]),
    opt!(None, "metrics-linger", "SECS", Benchmark, Pgbolt, Value(g::metrics_linger),
        [line(X, 17, "after the run, keep the metrics endpoint open until\none more scrape, at most SECS (default: 15)")]),
    opt!(None, "metrics-push", "URL", Benchmark, Pgbolt, Value(g::metrics_push),
        [line(X, 18, "send live metrics by Prometheus remote write to\nURL (http://HOST:PORT/PATH) every second")]),
    opt!(None, "merge", "", Common, Pgbolt, Flag(g::merge),
        [line(F, 5, "merge the result files of a run's generators; no\nconnection is made")]),
    opt!(None, "allow-partial", "", Common, Pgbolt, Flag(g::allow_partial),
        [line(F, 6, "with --merge, merge even when generators are\nmissing")]),
    opt!(None, "allow-different-scripts", "", Common, Pgbolt, Flag(g::allow_different_scripts),
        [line(K, 6, "compare results of different scripts anyway")]),
    opt!(None, "target", "NAME=CONNINFO", Benchmark, Pgbolt, Value(g::target),
        [line(P, 1, "run the benchmark (each step of a sweep) once per\ntarget, interleaved, and compare them (repeatable)")]),
    opt!(None, "temp-pgbouncer", "MODE", Benchmark, Pgbolt, OptionalValue(g::temp_pgbouncer),
        [line(P, 2, "with --temp-instance, also a throwaway PgBouncer\n(session, transaction (default) or statement\npooling): targets direct and pgbouncer")]),
    opt!(None, "reconnect", "MAX_WAIT", Benchmark, Pgbolt, OptionalValue(g::reconnect),
        [line(X, 16, "a client whose connection is lost (or whose server\nturned read-only) reconnects through the host list\nand goes on; it aborts after MAX_WAIT seconds\nwithout one (default: 60); the outage is reported")]),
    opt!(None, "committed-query", "SQL", Benchmark, Pgbolt, Value(g::committed_query),
        [line(X, 17, "with --reconnect, a query that returns the number\nof committed transactions, run before and after\nthe run (default: pgbench_history rows for the\nTPC-B-like builtin)")]),
    opt!(None, "connect-dimension", "", Benchmark, Pgbolt, Flag(g::connect_dimension),
        [line(P, 4, "run each target twice, with its connections kept\nand with one per transaction (-C), as NAME and\nNAME-C")]),
];

/// The option with this short name, if getopt knows it.
pub fn by_short(c: char) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.short == Some(c) && o.is_getopt())
}
