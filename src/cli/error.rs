//! Errors of the command line, worded as pgbench words them.
//!
//! pgbench prints three kinds of lines: getopt's own complaints (no level,
//! always followed by a hint), `error:` lines, and `detail:` / `hint:` lines
//! that complete some errors. [`CliError::lines`] gives the lines of an
//! error in that form so that `main` only adds the program name.

use std::fmt;

use crate::script::ScriptError;

/// The level of one printed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A complaint of the option parser itself (`pgbolt: invalid option -- 'x'`).
    Plain,
    Error,
    Detail,
    Hint,
}

impl Level {
    /// The text printed between the program name and the message.
    pub fn label(self) -> &'static str {
        match self {
            Level::Plain => "",
            Level::Error => "error: ",
            Level::Detail => "detail: ",
            Level::Hint => "hint: ",
        }
    }
}

/// Everything that can be wrong with a command line.
#[derive(Debug, Clone, PartialEq)]
pub enum CliError {
    // Option syntax (getopt_long's complaints).
    UnrecognizedOption(String),
    InvalidShortOption(char),
    MissingShortValue(char),
    MissingLongValue(&'static str),
    LongTakesNoValue(&'static str),
    AmbiguousOption {
        given: String,
        candidates: Vec<&'static str>,
    },
    TooManyArguments(String),

    // Values of single options.
    InvalidValue {
        option: &'static str,
        value: String,
    },
    OutOfRange {
        option: &'static str,
        min: i32,
        max: i32,
    },
    TooManyOpenFiles {
        needed: u64,
        limit: u64,
    },
    InvalidRate(String),
    InvalidLatencyLimit(String),
    InvalidSamplingRate(String),
    InvalidMaxTries(String),
    InvalidQueryMode(String),
    InvalidPartitionMethod(String),
    InvalidVariableDefinition(String),
    InvalidVariableName(String),
    NoInitSteps,
    UnrecognizedInitStep(char),
    InvalidWeight(String),
    WeightOutOfRange(i64),
    UnknownBuiltin(String),
    AmbiguousBuiltin {
        name: String,
        matches: usize,
    },
    TooManyScripts,
    InvalidRandomSeed {
        value: String,
        from_environment: bool,
    },

    // Combinations.
    TotalWeightZero,
    BenchmarkOptionInInitMode,
    InitOptionInBenchmarkMode,
    PartitionMethodWithoutPartitions,
    TransactionsAndDuration,
    SamplingWithoutLog,
    SamplingWithAggregation,
    AggregationWithoutLog,
    LogPrefixWithoutLog,
    AggregationLongerThanDuration {
        interval: u32,
        duration: u32,
    },
    DurationNotMultipleOfAggregation {
        duration: u32,
        interval: u32,
    },
    ProgressTimestampWithoutProgress,
    UnlimitedTriesWithoutBound,

    // pgbolt extensions.
    InvalidIoMethod(String),
    InvalidBusyPoll(String),
    InvalidTempInstanceSetting(String),
    RequiresTempInstance(&'static str),
    TempInstanceWithServer(&'static str),
    TempInstanceOwnsSetting(String),
    /// An option that makes no sense when comparing results.
    OptionWithCompare(String),
    /// A comparison option without `--compare`.
    RequiresCompare(String),
    /// `--compare` takes exactly two result files.
    CompareFileCount(usize),
    InvalidThreshold(String),
    InvalidCompareMetric(String),
    InvalidCompareFormat(String),
    InvalidGenerator(String),
    InvalidStartAt(String),
    InvalidMetricsListen(String),
    /// `--metrics-linger` without `--metrics-listen`.
    LingerWithoutListen,
    InvalidMetricsPush(String),
    /// `--generators=N` without `JOB_COMPLETION_INDEX` (or with a bad one).
    MissingGeneratorIndex {
        count: u32,
        found: Option<String>,
    },
    /// Fewer clients than generators.
    FewerClientsThanGenerators {
        clients: u32,
        generators: u32,
    },
    /// `--generator` and `--generators` disagree.
    GeneratorsDisagree,
    /// An option that makes no sense when merging results.
    OptionWithMerge(String),
    /// `--allow-partial` without `--merge`.
    RequiresMerge(&'static str),
    InvalidMaxInputSize(String),
    /// `--max-input-size` in a mode that reads no result file.
    MaxInputSizeWithoutInput,
    /// `--merge` without result files.
    NoResultsToMerge,
    /// `--render` with an option that only a benchmark uses.
    RenderWithOption(String),
    /// `--render` with a positional argument (a database name elsewhere).
    RenderWithArgument(String),
    /// `--render` without `--html`.
    RenderWithoutHtml,
    /// `--html=-`.
    HtmlToStdout,
    /// A bad value of a study option, with the reason.
    InvalidStudyValue {
        option: &'static str,
        value: String,
        reason: String,
    },
    /// A study option without `--sweep`.
    RequiresSweep(&'static str),
    /// An option the sweep sets itself, given with it.
    SweptOption(&'static str, &'static str),
    /// An option a sweep cannot honour yet.
    UnsupportedWithSweep(&'static str),
    /// `--warmup` with an option it cannot be combined with yet.
    UnsupportedWithWarmup(&'static str),
    /// `--pool-size` outside the number of threads .. the number of clients.
    PoolSizeOutOfRange {
        pool: u32,
        threads: u32,
        clients: u32,
    },
    /// `--pool-size` with an option an application-side pool cannot honour.
    PoolSizeWith(&'static str),
    /// A bad `--target`, shown with its passwords replaced.
    InvalidTarget {
        value: String,
        reason: String,
    },
    /// An option the targets cannot honour yet.
    UnsupportedWithTargets(&'static str),
    UnsupportedWithReconnect(&'static str),
    CommittedQueryWithoutReconnect,
    /// An option that only means something with targets.
    RequiresTargets(&'static str),
    /// `-C` with `--connect-dimension`, which sets it per target.
    ConnectDimensionWithConnect,
}

impl CliError {
    /// Whether pgbench follows this error with `Try "... --help"`.
    fn wants_hint(&self) -> bool {
        matches!(
            self,
            CliError::UnrecognizedOption(_)
                | CliError::InvalidShortOption(_)
                | CliError::MissingShortValue(_)
                | CliError::MissingLongValue(_)
                | CliError::LongTakesNoValue(_)
                | CliError::AmbiguousOption { .. }
                | CliError::TooManyArguments(_)
                | CliError::InvalidIoMethod(_)
                | CliError::InvalidBusyPoll(_)
                | CliError::InvalidTempInstanceSetting(_)
                | CliError::RequiresTempInstance(_)
                | CliError::TempInstanceWithServer(_)
                | CliError::TempInstanceOwnsSetting(_)
                | CliError::OptionWithCompare(_)
                | CliError::RequiresCompare(_)
                | CliError::CompareFileCount(_)
                | CliError::InvalidThreshold(_)
                | CliError::InvalidCompareMetric(_)
                | CliError::InvalidCompareFormat(_)
                | CliError::InvalidGenerator(_)
                | CliError::InvalidStartAt(_)
                | CliError::InvalidMetricsListen(_)
                | CliError::LingerWithoutListen
                | CliError::InvalidMetricsPush(_)
                | CliError::MissingGeneratorIndex { .. }
                | CliError::FewerClientsThanGenerators { .. }
                | CliError::GeneratorsDisagree
                | CliError::OptionWithMerge(_)
                | CliError::RequiresMerge(_)
                | CliError::InvalidMaxInputSize(_)
                | CliError::MaxInputSizeWithoutInput
                | CliError::NoResultsToMerge
                | CliError::InvalidStudyValue { .. }
                | CliError::RequiresSweep(_)
                | CliError::SweptOption(..)
                | CliError::PoolSizeOutOfRange { .. }
                | CliError::PoolSizeWith(_)
                | CliError::InvalidTarget { .. }
                | CliError::RequiresTargets(_)
                | CliError::ConnectDimensionWithConnect
        )
    }

    fn is_getopt_complaint(&self) -> bool {
        matches!(
            self,
            CliError::UnrecognizedOption(_)
                | CliError::InvalidShortOption(_)
                | CliError::MissingShortValue(_)
                | CliError::MissingLongValue(_)
                | CliError::LongTakesNoValue(_)
                | CliError::AmbiguousOption { .. }
        )
    }

    /// The lines to print for this error, without the program name.
    /// `program` is used inside the hint.
    pub fn lines(&self, program: &str) -> Vec<(Level, String)> {
        let first = if self.is_getopt_complaint() {
            Level::Plain
        } else {
            Level::Error
        };
        let mut lines = vec![(first, self.to_string())];
        match self {
            CliError::UnrecognizedInitStep(_) => lines.push((
                Level::Detail,
                "Allowed step characters are: \"dtgGvpf\".".to_string(),
            )),
            CliError::InvalidRandomSeed {
                from_environment, ..
            } => {
                lines.push((
                    Level::Detail,
                    "Expecting an unsigned integer, \"time\" or \"rand\".".to_string(),
                ));
                let source = if *from_environment {
                    "PGBENCH_RANDOM_SEED environment variable"
                } else {
                    "--random-seed option"
                };
                lines.push((
                    Level::Error,
                    format!("error while setting random seed from {source}"),
                ));
            }
            CliError::TooManyOpenFiles { .. } => lines.push((
                Level::Hint,
                "Reduce number of clients, or use limit/ulimit to increase the system limit."
                    .to_string(),
            )),
            _ => {}
        }
        if self.wants_hint() {
            lines.push((
                Level::Hint,
                format!("Try \"{program} --help\" for more information."),
            ));
        }
        lines
    }
}

impl fmt::Display for CliError {
    /// pgbench's wording of each error, one arm per variant.
    ///
    /// One piece on purpose: this is the table that maps every variant to
    /// its message, in the groups of the enum (option syntax, values of
    /// single options, combinations, pgbolt's extensions), and the one
    /// exhaustive `match` makes the compiler refuse a new variant without
    /// a message. Split into one function per group, each group's `match`
    /// would need a catch-all arm, and a variant left out would fail at
    /// run time, in front of the user, instead of at build time.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::UnrecognizedOption(given) => write!(f, "unrecognized option '{given}'"),
            CliError::InvalidShortOption(c) => write!(f, "invalid option -- '{c}'"),
            CliError::MissingShortValue(c) => write!(f, "option requires an argument -- '{c}'"),
            CliError::MissingLongValue(long) => {
                write!(f, "option '--{long}' requires an argument")
            }
            CliError::LongTakesNoValue(long) => {
                write!(f, "option '--{long}' doesn't allow an argument")
            }
            CliError::AmbiguousOption { given, candidates } => {
                write!(f, "option '{given}' is ambiguous; possibilities:")?;
                for c in candidates {
                    write!(f, " '--{c}'")?;
                }
                Ok(())
            }
            CliError::TooManyArguments(first) => write!(
                f,
                "too many command-line arguments (first is \"{}\")",
                pgwire::conninfo::redact(first)
            ),
            CliError::InvalidValue { option, value } => {
                write!(f, "invalid value \"{value}\" for option {option}")
            }
            CliError::OutOfRange { option, min, max } => {
                write!(f, "{option} must be in range {min}..{max}")
            }
            CliError::TooManyOpenFiles { needed, limit } => write!(
                f,
                "need at least {needed} open files, but system limit is {limit}"
            ),
            CliError::InvalidRate(v) => write!(f, "invalid rate limit: \"{v}\""),
            CliError::InvalidLatencyLimit(v) => write!(f, "invalid latency limit: \"{v}\""),
            CliError::InvalidSamplingRate(v) => write!(f, "invalid sampling rate: \"{v}\""),
            CliError::InvalidMaxTries(v) => {
                write!(f, "invalid number of maximum tries: \"{v}\"")
            }
            CliError::InvalidQueryMode(v) => write!(f, "invalid query mode (-M): \"{v}\""),
            CliError::InvalidPartitionMethod(v) => write!(
                f,
                "invalid partition method, expecting \"range\" or \"hash\", got: \"{v}\""
            ),
            CliError::InvalidVariableDefinition(v) => {
                write!(f, "invalid variable definition: \"{v}\"")
            }
            CliError::InvalidVariableName(v) => {
                write!(f, "option: invalid variable name: \"{v}\"")
            }
            CliError::NoInitSteps => write!(f, "no initialization steps specified"),
            CliError::UnrecognizedInitStep(c) => {
                write!(f, "unrecognized initialization step \"{c}\"")
            }
            CliError::InvalidWeight(spec) => write!(f, "invalid weight specification: {spec}"),
            CliError::WeightOutOfRange(w) => write!(
                f,
                "weight specification out of range (0 .. {}): {w}",
                i32::MAX
            ),
            CliError::UnknownBuiltin(name) => write!(
                f,
                "{}",
                ScriptError::UnknownBuiltin { name: name.clone() }
            ),
            CliError::AmbiguousBuiltin { name, matches } => write!(
                f,
                "{}",
                ScriptError::AmbiguousBuiltin {
                    name: name.clone(),
                    matches: *matches
                }
            ),
            CliError::TooManyScripts => write!(f, "at most 128 SQL scripts are allowed"),
            CliError::InvalidRandomSeed { value, .. } => {
                write!(f, "unrecognized random seed option \"{value}\"")
            }
            CliError::TotalWeightZero => write!(f, "total script weight must not be zero"),
            CliError::BenchmarkOptionInInitMode => write!(
                f,
                "some of the specified options cannot be used in initialization (-i) mode"
            ),
            CliError::InitOptionInBenchmarkMode => write!(
                f,
                "some of the specified options cannot be used in benchmarking mode"
            ),
            CliError::PartitionMethodWithoutPartitions => write!(
                f,
                "--partition-method requires greater than zero --partitions"
            ),
            CliError::TransactionsAndDuration => write!(
                f,
                "specify either a number of transactions (-t) or a duration (-T), not both"
            ),
            CliError::SamplingWithoutLog => write!(
                f,
                "log sampling (--sampling-rate) is allowed only when logging transactions (-l)"
            ),
            CliError::SamplingWithAggregation => write!(
                f,
                "log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time"
            ),
            CliError::AggregationWithoutLog => write!(
                f,
                "log aggregation is allowed only when actually logging transactions"
            ),
            CliError::LogPrefixWithoutLog => write!(
                f,
                "log file prefix (--log-prefix) is allowed only when logging transactions (-l)"
            ),
            CliError::AggregationLongerThanDuration { interval, duration } => write!(
                f,
                "number of seconds for aggregation ({interval}) must not be higher than test duration ({duration})"
            ),
            CliError::DurationNotMultipleOfAggregation { duration, interval } => write!(
                f,
                "duration ({duration}) must be a multiple of aggregation interval ({interval})"
            ),
            CliError::ProgressTimestampWithoutProgress => {
                write!(f, "--progress-timestamp is allowed only under --progress")
            }
            CliError::UnlimitedTriesWithoutBound => write!(
                f,
                "an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)"
            ),
            CliError::InvalidIoMethod(v) => write!(
                f,
                "invalid I/O method (--io): \"{v}\", expecting \"auto\", \"epoll\" or \"uring\""
            ),
            CliError::InvalidBusyPoll(v) => write!(
                f,
                "invalid busy-poll mode (--busy-poll): \"{v}\", expecting \"auto\", \"on\" or \"off\""
            ),
            CliError::InvalidTempInstanceSetting(v) => write!(
                f,
                "invalid setting (--temp-instance-setting): \"{v}\", expecting NAME=VALUE"
            ),
            CliError::TempInstanceOwnsSetting(name) => write!(
                f,
                "--temp-instance-setting cannot set {name}: the throwaway instance decides where it listens and where its files are"
            ),
            CliError::OptionWithCompare(option) => write!(
                f,
                "{option} cannot be used with --compare, which only reads two result files"
            ),
            CliError::RequiresCompare(option) => {
                write!(f, "{option} can only be used with --compare")
            }
            CliError::CompareFileCount(n) => write!(
                f,
                "--compare needs two result files, a baseline and a candidate ({n} given)"
            ),
            CliError::InvalidThreshold(value) => write!(
                f,
                "invalid value \"{value}\" for option --threshold: expected a percentage from 0 to 1000, such as 3%"
            ),
            CliError::InvalidCompareMetric(value) => write!(
                f,
                "invalid value \"{value}\" for option --compare-metric: expected a list of tps, p50, p90, p99, p99.9"
            ),
            CliError::InvalidGenerator(value) => write!(
                f,
                "invalid value \"{value}\" for option --generator: expected I/N, the generator's index I from 0 to N-1 and the number of generators N"
            ),
            CliError::InvalidStartAt(value) => write!(
                f,
                "invalid value \"{value}\" for option --start-at: expected a time such as 2026-11-27T14:00:00Z (RFC 3339) or Unix seconds"
            ),
            CliError::MissingGeneratorIndex { count, found } => match found {
                None => write!(
                    f,
                    "--generators={count} needs this generator's index: JOB_COMPLETION_INDEX is not set (a Kubernetes Indexed Job sets it; elsewhere use --generator=I/{count})"
                ),
                Some(v) => write!(
                    f,
                    "--generators={count}: JOB_COMPLETION_INDEX is \"{v}\", not an index from 0 to {}",
                    count - 1
                ),
            },
            CliError::FewerClientsThanGenerators {
                clients,
                generators,
            } => write!(
                f,
                "{clients} clients cannot be shared by {generators} generators: give -c/--client at least the number of generators"
            ),
            CliError::GeneratorsDisagree => write!(
                f,
                "--generator=I/N and --generators=M name different numbers of generators"
            ),
            CliError::OptionWithMerge(option) => write!(
                f,
                "{option} cannot be used with --merge, which only reads result files"
            ),
            CliError::RequiresMerge(option) => write!(f, "{option} can only be used with --merge"),
            CliError::NoResultsToMerge => write!(f, "--merge needs the result files to merge"),
            CliError::InvalidMaxInputSize(value) => write!(
                f,
                "invalid value \"{value}\" for option --max-input-size: expected a size of at least 1 byte, such as 2GB or 500MB"
            ),
            CliError::MaxInputSizeWithoutInput => write!(
                f,
                "--max-input-size can only be used with --render, --compare or --merge"
            ),
            CliError::InvalidCompareFormat(value) => write!(
                f,
                "invalid value \"{value}\" for option --compare-format: expected text or markdown"
            ),
            CliError::RenderWithOption(option) => write!(
                f,
                "{option} cannot be used with --render: --render only renders a saved result as HTML (--html=FILE), it connects to nothing and runs nothing"
            ),
            CliError::RenderWithArgument(arg) => write!(
                f,
                "--render takes no database name or other argument (got \"{}\"): it renders a saved result without connecting",
                pgwire::conninfo::redact(arg)
            ),
            CliError::RenderWithoutHtml => write!(
                f,
                "--render needs --html=FILE, the HTML report to write"
            ),
            CliError::HtmlToStdout => write!(
                f,
                "--html needs a file name (standard output is --html=/dev/stdout)"
            ),
            CliError::InvalidStudyValue {
                option,
                value,
                reason,
            } => write!(f, "invalid value \"{value}\" for option {option}: {reason}"),
            CliError::RequiresSweep(option) => {
                write!(f, "{option} can only be used with --sweep")
            }
            CliError::SweptOption(option, dimension) => write!(
                f,
                "{option} cannot be used with --sweep={dimension}:..., which sets it for each step"
            ),
            CliError::InvalidMetricsListen(value) => write!(
                f,
                "invalid value \"{value}\" for option --metrics-listen: expected ADDR:PORT, such as 127.0.0.1:9187 or [::]:9187"
            ),
            CliError::LingerWithoutListen => {
                write!(f, "--metrics-linger requires --metrics-listen")
            }
            CliError::InvalidMetricsPush(value) => write!(
                f,
                "invalid value \"{value}\" for option --metrics-push: expected http://HOST[:PORT]/PATH, such as http://prometheus:9090/api/v1/write (https is not supported yet)"
            ),
            CliError::UnsupportedWithWarmup(option) => {
                write!(f, "--warmup with {option} is not supported yet")
            }
            CliError::UnsupportedWithSweep(option) => {
                write!(f, "{option} with --sweep is not supported yet")
            }
            CliError::PoolSizeOutOfRange {
                pool,
                threads,
                clients,
            } => write!(
                f,
                "--pool-size={pool} must be at least the number of threads ({threads}) and at most the number of clients ({clients}): each thread shares its own connections among its own clients"
            ),
            CliError::PoolSizeWith(option) => {
                write!(f, "--pool-size with {option} is not supported yet")
            }
            CliError::InvalidTarget { value, reason } => {
                write!(f, "invalid value \"{value}\" for option --target: {reason}")
            }
            CliError::CommittedQueryWithoutReconnect => {
                write!(f, "--committed-query can only be used with --reconnect")
            }
            CliError::UnsupportedWithReconnect(option) => {
                write!(f, "--reconnect with {option} is not supported yet")
            }
            CliError::UnsupportedWithTargets(option) => {
                write!(f, "{option} with --target or --temp-pgbouncer is not supported yet")
            }
            CliError::RequiresTargets(option) => {
                write!(f, "{option} can only be used with --target or --temp-pgbouncer")
            }
            CliError::ConnectDimensionWithConnect => write!(
                f,
                "-C/--connect cannot be used with --connect-dimension, which runs each target both with and without it"
            ),
            CliError::RequiresTempInstance(option) => {
                write!(f, "{option} can only be used with --temp-instance")
            }
            CliError::TempInstanceWithServer(option) => write!(
                f,
                "--temp-instance cannot be used with {option}: the throwaway instance decides where to connect, as which user, to which database"
            ),
        }
    }
}

impl std::error::Error for CliError {}
