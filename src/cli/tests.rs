//! Parsing tests at the library level: every option in every spelling,
//! asserting on the resulting [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use super::options::{Origin, OPTIONS};
use super::*;
use crate::config::*;
use crate::init::{InitStep, PartitionMethod};
use crate::random::RandomSeed;
use crate::script::QueryMode;

fn parse_ok(args: &[&str]) -> Config {
    match parse(args.iter().copied(), &Environment::default()) {
        Ok(config) => config,
        Err(err) => panic!("{args:?} was refused: {err}"),
    }
}

fn parse_err(args: &[&str]) -> CliError {
    match parse(args.iter().copied(), &Environment::default()) {
        Ok(config) => panic!("{args:?} was accepted: {config:?}"),
        Err(err) => err,
    }
}

fn bench(config: &Config) -> &Benchmark {
    match &config.mode {
        Mode::Run(benchmark) => benchmark,
        other => panic!("expected a benchmark run, got {other:?}"),
    }
}

fn init(config: &Config) -> &Init {
    match &config.mode {
        Mode::Init(init) => init,
        other => panic!("expected initialization, got {other:?}"),
    }
}

fn builtin(name: &str, weight: u32) -> ScriptSpec {
    ScriptSpec::Builtin {
        name: name.to_string(),
        weight,
    }
}

/// One option: a valid value (None for flags), the other options it needs,
/// and what it must change in the configuration.
struct Case {
    long: &'static str,
    value: Option<&'static str>,
    context: &'static [&'static str],
    effect: fn(&Config) -> bool,
}

const fn case(
    long: &'static str,
    value: Option<&'static str>,
    context: &'static [&'static str],
    effect: fn(&Config) -> bool,
) -> Case {
    Case {
        long,
        value,
        context,
        effect,
    }
}

static CASES: &[Case] = &[
    case("builtin", Some("select-only@3"), &[], |c| {
        bench(c).scripts == [builtin("select-only", 3)]
    }),
    case("client", Some("7"), &[], |c| bench(c).clients == 7),
    case("connect", None, &[], |c| bench(c).connect_per_transaction),
    case("dbname", Some("bench"), &[], |c| {
        c.connection.dbname.as_deref() == Some("bench")
    }),
    case("define", Some("x=5"), &[], |c| {
        bench(c).variables
            == [VariableDefinition {
                name: "x".into(),
                value: "5".into(),
            }]
    }),
    case("file", Some("my.sql@2"), &[], |c| {
        bench(c).scripts
            == [ScriptSpec::File {
                path: PathBuf::from("my.sql"),
                weight: 2,
            }]
    }),
    case("fillfactor", Some("50"), &["-i"], |c| {
        init(c).fillfactor == 50
    }),
    case("host", Some("/tmp/sock"), &[], |c| {
        c.connection.host.as_deref() == Some("/tmp/sock")
    }),
    case("initialize", None, &[], |c| matches!(c.mode, Mode::Init(_))),
    case("init-steps", Some("dtg"), &["-i"], |c| {
        init(c).steps
            == [
                InitStep::DropTables,
                InitStep::CreateTables,
                InitStep::ClientSideGenerate,
            ]
    }),
    case("jobs", Some("2"), &["-c", "4"], |c| bench(c).threads == 2),
    case("log", None, &[], |c| bench(c).log.is_some()),
    case("latency-limit", Some("2.5"), &[], |c| {
        bench(c).latency_limit == Some(Duration::from_micros(2500))
    }),
    case("no-vacuum", None, &[], |c| {
        bench(c).vacuum == VacuumBeforeRun::Skip
    }),
    case("port", Some("5433"), &[], |c| {
        c.connection.port.as_deref() == Some("5433")
    }),
    case("progress", Some("5"), &[], |c| bench(c).progress == Some(5)),
    case("protocol", Some("prepared"), &[], |c| {
        bench(c).query_mode == QueryMode::Prepared
    }),
    case("quiet", None, &["-i"], |c| init(c).quiet),
    case("report-per-command", None, &[], |c| {
        bench(c).report_per_command
    }),
    case("rate", Some("100.5"), &[], |c| bench(c).rate == Some(100.5)),
    case("scale", Some("3"), &[], |c| bench(c).scale == Some(3)),
    case("select-only", None, &[], |c| {
        bench(c).scripts == [builtin("select-only", 1)]
    }),
    case("skip-some-updates", None, &[], |c| {
        bench(c).scripts == [builtin("simple-update", 1)]
    }),
    case("time", Some("60"), &[], |c| {
        bench(c).length == RunLength::Duration(60)
    }),
    case("transactions", Some("20"), &[], |c| {
        bench(c).length == RunLength::Transactions(20)
    }),
    case("username", Some("bob"), &[], |c| {
        c.connection.user.as_deref() == Some("bob")
    }),
    case("vacuum-all", None, &[], |c| {
        bench(c).vacuum == VacuumBeforeRun::IncludingAccounts
    }),
    case("unlogged-tables", None, &["-i"], |c| {
        init(c).unlogged_tables
    }),
    case("tablespace", Some("ts"), &["-i"], |c| {
        init(c).tablespace.as_deref() == Some("ts")
    }),
    case("index-tablespace", Some("its"), &["-i"], |c| {
        init(c).index_tablespace.as_deref() == Some("its")
    }),
    case("sampling-rate", Some("0.5"), &["-l"], |c| {
        bench(c).log.as_ref().and_then(|l| l.sampling_rate) == Some(0.5)
    }),
    case("aggregate-interval", Some("5"), &["-l"], |c| {
        bench(c).log.as_ref().and_then(|l| l.aggregate_interval) == Some(5)
    }),
    case("progress-timestamp", None, &["-P", "1"], |c| {
        bench(c).progress_timestamp
    }),
    case("log-prefix", Some("pfx"), &["-l"], |c| {
        bench(c).log.as_ref().map(|l| l.prefix.as_os_str()) == Some("pfx".as_ref())
    }),
    case("foreign-keys", None, &["-i"], |c| {
        init(c).steps.last() == Some(&InitStep::ForeignKeys)
    }),
    case("random-seed", Some("42"), &[], |c| {
        bench(c).random_seed == Some(RandomSeed::Value(42))
    }),
    case("show-script", Some("tpcb"), &[], |c| {
        c.mode == Mode::ShowScript("tpcb".into())
    }),
    case("partitions", Some("4"), &["-i"], |c| {
        init(c).partitions == 4 && init(c).partition_method == Some(PartitionMethod::Range)
    }),
    case(
        "partition-method",
        Some("hash"),
        &["-i", "--partitions=2"],
        |c| init(c).partition_method == Some(PartitionMethod::Hash),
    ),
    case("failures-detailed", None, &[], |c| {
        bench(c).failures_detailed
    }),
    case("max-tries", Some("3"), &[], |c| {
        bench(c).max_tries == Some(3)
    }),
    case("verbose-errors", None, &[], |c| bench(c).verbose_errors),
    case("exit-on-abort", None, &[], |c| bench(c).exit_on_abort),
    case("debug", None, &[], |c| c.debug),
    case("continue-on-error", None, &[], |c| {
        bench(c).continue_on_error
    }),
    case("json", Some("out.json"), &[], |c| {
        bench(c).json == Some(PathBuf::from("out.json"))
    }),
    case("html", Some("out.html"), &[], |c| {
        bench(c).html == Some(PathBuf::from("out.html"))
    }),
    case("render", Some("r.json"), &["--html=r.html"], |c| {
        c.mode
            == Mode::Render(Render {
                result: PathBuf::from("r.json"),
                html: PathBuf::from("r.html"),
                max_input_size: crate::config::DEFAULT_MAX_INPUT_SIZE,
            })
    }),
    case("max-input-size", Some("2GB"), COMPARE, |c| {
        compare(c).max_input_size == 2 << 30
    }),
    case("pgbench-output", None, &[], |c| bench(c).pgbench_output),
    case("no-monitor", None, &[], |c| bench(c).monitor.is_none()),
    case("monitor-interval", Some("250"), &[], |c| {
        bench(c).monitor == Some(250)
    }),
    case("pool-size", Some("4"), &["-c", "8"], |c| {
        bench(c).pool_size == Some(4)
    }),
    case("init-jobs", Some("3"), &["-i"], |c| init(c).jobs == Some(3)),
    case("no-preflight", None, &[], |c| !c.preflight),
    case("temp-instance", None, &[], |c| c.temp_instance.is_some()),
    case(
        "temp-instance-setting",
        Some("fsync=off"),
        &["--temp-instance"],
        |c| {
            c.temp_instance.as_ref().map(|t| t.settings.clone())
                == Some(vec![("fsync".to_string(), "off".to_string())])
        },
    ),
    case("temp-instance-keep", None, &["--temp-instance"], |c| {
        c.temp_instance.as_ref().is_some_and(|t| t.keep)
    }),
    case("io", Some("epoll"), &[], |c| c.io == IoMethod::Epoll),
    case("busy-poll", Some("off"), &[], |c| {
        c.busy_poll == BusyPoll::Off
    }),
    case("sweep", Some("clients:1..8*2"), &[], |c| {
        study(c).sweep.values == crate::config::study::Values::List(vec![1.0, 2.0, 4.0, 8.0])
            && bench(c).clients == 8
    }),
    case("warmup", Some("3"), &[], |c| bench(c).warmup_s == 3),
    case("target", Some("pool=host=/tmp port=6432"), &[], |c| {
        bench(c).targets.len() == 1 && bench(c).targets[0].name == "pool"
    }),
    case(
        "committed-query",
        Some("select count(*) from t"),
        &["--reconnect"],
        |c| bench(c).committed_query.as_deref() == Some("select count(*) from t"),
    ),
    case("reconnect", None, &[], |c| {
        bench(c).reconnect == Some(std::time::Duration::from_secs(60))
    }),
    case("temp-pgbouncer", None, &["--temp-instance"], |c| {
        c.temp_instance.as_ref().and_then(|t| t.pgbouncer)
            == Some(crate::tempdb::PoolMode::Transaction)
    }),
    case(
        "connect-dimension",
        None,
        &["--target=pool=host=/tmp port=6432"],
        |c| bench(c).connect_dimension,
    ),
    case(
        "pool-size",
        Some("8"),
        &["--temp-instance", "--temp-pgbouncer"],
        |c| bench(c).pool_size == Some(8),
    ),
    case("repeat", Some("3"), SWEEP, |c| study(c).repeat == 3),
    case("repeat-order", Some("shuffle"), SWEEP, |c| {
        study(c).order == crate::config::study::Order::Shuffle
    }),
    case("sweep-reset", Some("checkpoint"), SWEEP, |c| {
        study(c).reset == crate::config::study::Reset::Checkpoint
    }),
    case("slo", Some("p99<10ms"), SWEEP, |c| {
        study(c).slo.len() == 1 && study(c).slo[0].limit_ms == 10.0
    }),
    case("compare", None, &["a.json", "b.json"], |c| {
        compare(c).baseline == std::path::Path::new("a.json")
            && compare(c).candidate == std::path::Path::new("b.json")
    }),
    case("threshold", Some("5%"), COMPARE, |c| {
        compare(c).options.threshold == 0.05
    }),
    case("compare-metric", Some("p50,tps"), COMPARE, |c| {
        compare(c).options.metrics == [Metric::P50, Metric::Tps]
    }),
    case("compare-format", Some("markdown"), COMPARE, |c| {
        compare(c).format == CompareFormat::Markdown
    }),
    case("fail-on-regression", None, COMPARE, |c| {
        compare(c).fail_on_regression
    }),
    case(
        "generator",
        Some("1/4"),
        &["-c", "8", "-j", "4", "-R", "100"],
        |c| {
            let b = bench(c);
            b.fleet.map(|s| (s.index, s.client_offset)) == Some((1, 2))
                && (b.clients, b.threads, b.rate) == (2, 1, Some(25.0))
        },
    ),
    case(
        "generators",
        Some("2"),
        &["--generator=1/2", "-c", "4"],
        |c| bench(c).fleet.map(|s| s.count) == Some(2),
    ),
    case("start-at", Some("2026-11-27T14:00:00Z"), &[], |c| {
        bench(c).start_at_us == Some(1_795_788_000_000_000)
    }),
    case("metrics-listen", Some("127.0.0.1:9187"), &[], |c| {
        bench(c)
            .metrics
            .as_ref()
            .map(|m| (m.listen.map(|a| a.port()), m.linger.as_secs()))
            == Some((Some(9187), 15))
    }),
    case(
        "metrics-push",
        Some("http://prometheus:9090/api/v1/write"),
        &[],
        |c| {
            bench(c)
                .metrics
                .as_ref()
                .and_then(|m| m.push.as_ref())
                .map(|p| p.path.as_str())
                == Some("/api/v1/write")
        },
    ),
    case(
        "metrics-linger",
        Some("2"),
        &["--metrics-listen=[::1]:9187"],
        |c| bench(c).metrics.as_ref().map(|m| m.linger.as_secs()) == Some(2),
    ),
    case("run-id", Some("nightly"), &[], |c| {
        bench(c).run_id.as_deref() == Some("nightly")
    }),
    case(
        "merge",
        None,
        &["a.json", "b.json"],
        |c| matches!(&c.mode, Mode::Merge(m) if m.results.len() == 2 && !m.allow_partial),
    ),
    case(
        "allow-partial",
        None,
        &["--merge", "a.json"],
        |c| matches!(&c.mode, Mode::Merge(m) if m.allow_partial),
    ),
    case("allow-different-scripts", None, COMPARE, |c| {
        compare(c).options.allow_different_scripts
    }),
];

/// The context of the options that only a sweep takes.
const SWEEP: &[&str] = &["--sweep=rate:10,20"];

fn study(c: &Config) -> &crate::config::study::Study {
    bench(c).study.as_ref().expect("a sweep")
}

/// The context of the options that only `--compare` takes.
const COMPARE: &[&str] = &["--compare", "a.json", "b.json"];

fn compare(c: &Config) -> &Compare {
    match &c.mode {
        Mode::Compare(compare) => compare,
        other => panic!("not a comparison: {other:?}"),
    }
}

/// The shortest abbreviation of `long` that names it alone, if shorter.
fn shortest_abbreviation(long: &str, origin: Origin) -> Option<String> {
    (1..long.len()).map(|n| &long[..n]).find_map(|prefix| {
        let clashes = OPTIONS
            .iter()
            .filter(|o| o.is_getopt())
            .any(|o| o.long != long && o.long.starts_with(prefix) && o.origin <= origin);
        (!clashes).then(|| prefix.to_string())
    })
}

/// Every way of writing the option with its value.
fn spellings(case: &Case) -> Vec<Vec<String>> {
    let def = OPTIONS
        .iter()
        .find(|o| o.long == case.long)
        .unwrap_or_else(|| panic!("no option --{}", case.long));
    let mut long_names = vec![case.long.to_string()];
    long_names.extend(shortest_abbreviation(case.long, def.origin));
    let mut forms: Vec<Vec<String>> = Vec::new();
    match case.value {
        Some(value) => {
            if let Some(short) = def.short {
                forms.push(vec![format!("-{short}{value}")]);
                forms.push(vec![format!("-{short}"), value.to_string()]);
            }
            for name in &long_names {
                forms.push(vec![format!("--{name}={value}")]);
                forms.push(vec![format!("--{name}"), value.to_string()]);
            }
        }
        None => {
            if let Some(short) = def.short {
                forms.push(vec![format!("-{short}")]);
            }
            for name in &long_names {
                forms.push(vec![format!("--{name}")]);
            }
        }
    }
    forms
}

#[test]
fn every_option_has_a_parsing_case() {
    for def in OPTIONS.iter().filter(|o| o.is_getopt()) {
        assert!(
            CASES.iter().any(|c| c.long == def.long),
            "--{} has no case",
            def.long
        );
    }
}

#[test]
fn every_spelling_of_every_option_has_the_same_effect() {
    for case in CASES {
        for form in spellings(case) {
            let mut args: Vec<String> = case.context.iter().map(|s| s.to_string()).collect();
            args.extend(form.iter().cloned());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let config = parse_ok(&args);
            assert!((case.effect)(&config), "{args:?} gave {config:?}");
        }
    }
}

#[test]
fn options_may_follow_the_database_name() {
    for case in CASES
        .iter()
        // --temp-instance and --render refuse a database name; --compare
        // takes result files instead.
        .filter(|c| {
            c.long != "dbname"
                && c.long != "show-script"
                && c.long != "render"
                && !c.long.starts_with("temp-instance")
                && c.long != "temp-pgbouncer"
                && c.long != "pool-size"
                && c.context != COMPARE
                && c.long != "compare"
                && c.long != "merge"
                && c.long != "allow-partial"
        })
    {
        let mut args: Vec<String> = vec!["mydb".to_string()];
        args.extend(case.context.iter().map(|s| s.to_string()));
        args.push(format!("--{}", case.long));
        args.extend(case.value.map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let config = parse_ok(&args);
        assert!((case.effect)(&config), "{args:?} gave {config:?}");
        assert_eq!(
            config.connection.dbname.as_deref(),
            Some("mydb"),
            "{args:?}"
        );
    }
}

#[test]
fn defaults_are_pgbench_defaults() {
    let config = parse_ok(&[]);
    let b = bench(&config);
    assert_eq!(b.scripts, [builtin("tpcb-like", 1)]);
    assert_eq!((b.clients, b.threads), (1, 1));
    assert_eq!(b.length, RunLength::Transactions(10));
    assert_eq!(b.query_mode, QueryMode::Simple);
    assert_eq!(b.vacuum, VacuumBeforeRun::Standard);
    assert_eq!(b.max_tries, Some(1));
    assert_eq!(b.random_seed, None);
    assert_eq!((b.rate, b.latency_limit, b.progress), (None, None, None));
    assert_eq!(b.log, None);
    assert_eq!(config.connection, Connection::default());
    assert_eq!(config.io, IoMethod::Auto);
    assert_eq!(config.busy_poll, BusyPoll::Auto);
    assert!(config.preflight && config.temp_instance.is_none());

    let config = parse_ok(&["-i"]);
    let i = init(&config);
    let letters: String = i.steps.iter().map(|s| s.letter()).collect();
    assert_eq!(letters, "dtgvp");
    assert_eq!((i.scale, i.fillfactor, i.partitions), (1, 100, 0));
    assert_eq!(i.partition_method, None);
}

#[test]
fn grouped_flags() {
    let config = parse_ok(&["-nS"]);
    assert_eq!(bench(&config).vacuum, VacuumBeforeRun::Skip);
    assert_eq!(bench(&config).scripts, [builtin("select-only", 1)]);

    let config = parse_ok(&["-Cnc5", "-rlj2"]);
    let b = bench(&config);
    assert!(b.connect_per_transaction && b.report_per_command && b.log.is_some());
    assert_eq!((b.clients, b.threads), (5, 2));

    let config = parse_ok(&["-inqs", "3"]);
    let i = init(&config);
    assert!(i.quiet && !i.steps.contains(&InitStep::Vacuum));
    assert_eq!(i.scale, 3);
}

#[test]
fn getopt_details() {
    // An attached '=' belongs to a short option's value, as in getopt.
    assert!(matches!(
        parse_err(&["-c=10"]),
        CliError::InvalidValue { value, .. } if value == "=10"
    ));
    // A value may look like an option.
    assert_eq!(
        parse_ok(&["-d", "-x"]).connection.dbname.as_deref(),
        Some("-x")
    );
    // "--" ends the options; "-" alone is an argument.
    assert_eq!(
        parse_ok(&["--", "-c"]).connection.dbname.as_deref(),
        Some("-c")
    );
    assert_eq!(parse_ok(&["-"]).connection.dbname.as_deref(), Some("-"));
    // An empty value is still a value.
    assert_eq!(parse_ok(&["-U", ""]).connection.user.as_deref(), Some(""));
}

#[test]
fn abbreviations() {
    assert_eq!(bench(&parse_ok(&["--cli=4"])).clients, 4);
    // Extensions never make a pgbench abbreviation ambiguous.
    assert_eq!(bench(&parse_ok(&["--no-"])).vacuum, VacuumBeforeRun::Skip);
    assert_eq!(bench(&parse_ok(&["--j", "2", "-c2"])).threads, 2);
    assert!(bench(&parse_ok(&["--con"])).connect_per_transaction);
    assert!(bench(&parse_ok(&["--cont"])).continue_on_error);
    // But they have abbreviations of their own.
    assert!(bench(&parse_ok(&["--js=out.json"])).json.is_some());
    assert!(!parse_ok(&["--no-p"]).preflight);
    assert_eq!(
        parse_err(&["--temp"]),
        CliError::AmbiguousOption {
            given: "--temp".into(),
            candidates: vec![
                "temp-instance",
                "temp-instance-setting",
                "temp-instance-keep",
                "temp-pgbouncer"
            ],
        }
    );
    // An exact name wins over longer names it is a prefix of.
    assert!(bench(&parse_ok(&["--log"])).log.is_some());
    assert!(parse_ok(&["--temp-instance"]).temp_instance.is_some());
}

#[test]
fn the_last_value_wins() {
    assert_eq!(bench(&parse_ok(&["-c", "2", "--client=5"])).clients, 5);
    assert_eq!(
        bench(&parse_ok(&["-M", "simple", "-Mprepared"])).query_mode,
        QueryMode::Prepared
    );
    let config = parse_ok(&["-i", "-I", "dt", "-I", "g"]);
    assert_eq!(init(&config).steps, [InitStep::ClientSideGenerate]);
    let config = parse_ok(&["-D", "a=1", "-D", "b=2", "-D", "a=3"]);
    let vars: Vec<(&str, &[u8])> = bench(&config)
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.value.as_slice()))
        .collect();
    assert_eq!(vars, [("a", &b"3"[..]), ("b", &b"2"[..])]);
}

#[test]
fn scripts_accumulate_in_order() {
    let config = parse_ok(&["-S", "-b", "tpcb@0", "-f", "a@b.sql@7", "-N"]);
    assert_eq!(
        bench(&config).scripts,
        [
            builtin("select-only", 1),
            builtin("tpcb", 0),
            ScriptSpec::File {
                path: PathBuf::from("a@b.sql"),
                weight: 7
            },
            builtin("simple-update", 1),
        ]
    );
}

#[test]
fn values_pgbench_derives() {
    // More threads than clients: reduced, not refused.
    assert_eq!(bench(&parse_ok(&["-c", "2", "-j", "8"])).threads, 2);
    // -n wins over -v.
    assert_eq!(
        bench(&parse_ok(&["-v", "-n"])).vacuum,
        VacuumBeforeRun::Skip
    );
    // --max-tries=0 is unlimited; atoi reads "x" as 0.
    assert_eq!(
        bench(&parse_ok(&["--max-tries=0", "-T", "5"])).max_tries,
        None
    );
    assert_eq!(
        bench(&parse_ok(&["--max-tries=x", "-L", "5"])).max_tries,
        None
    );
    // atof reads the leading number.
    assert_eq!(bench(&parse_ok(&["-R", "5x"])).rate, Some(5.0));
    // A rate that overflows a double is a delay of 0 between
    // transactions: no rate limit, as in pgbench.
    assert_eq!(bench(&parse_ok(&["-R", "inf"])).rate, None);
    assert_eq!(bench(&parse_ok(&["-R", "5", "-R", "1e400"])).rate, None);
    // A latency limit under a microsecond is no limit.
    assert_eq!(bench(&parse_ok(&["-L", "0.0001"])).latency_limit, None);
    // -n drops vacuum steps, --foreign-keys adds its step once.
    let config = parse_ok(&["-i", "-n", "-I", "dvtv", "--foreign-keys"]);
    let letters: String = init(&config).steps.iter().map(|s| s.letter()).collect();
    assert_eq!(letters, "dtf");
    let config = parse_ok(&["-i", "-I", "f d", "--foreign-keys"]);
    let letters: String = init(&config).steps.iter().map(|s| s.letter()).collect();
    assert_eq!(letters, "fd");
    // Partition methods are case-insensitive.
    let config = parse_ok(&["-i", "--partitions=3", "--partition-method=RANGE"]);
    assert_eq!(init(&config).partition_method, Some(PartitionMethod::Range));
    // -d takes the place of the positional database name.
    assert!(matches!(
        parse_err(&["-d", "a", "b"]),
        CliError::TooManyArguments(first) if first == "b"
    ));
}

#[test]
fn help_and_version_only_as_first_argument() {
    assert_eq!(parse_ok(&["--help", "-c", "x"]).mode, Mode::Help);
    assert_eq!(parse_ok(&["-?"]).mode, Mode::Help);
    assert_eq!(parse_ok(&["-V"]).mode, Mode::Version);
    assert_eq!(parse_ok(&["--version", "junk"]).mode, Mode::Version);
    assert_eq!(
        parse_err(&["-c1", "--help"]),
        CliError::UnrecognizedOption("--help".into())
    );
    assert_eq!(parse_err(&["-n", "-V"]), CliError::InvalidShortOption('V'));
}

#[test]
fn early_exits_stop_parsing() {
    assert_eq!(
        parse_ok(&["-b", "list", "-c", "x"]).mode,
        Mode::ListBuiltins
    );
    assert_eq!(
        parse_ok(&["--show-script", "select", "--bogus"]).mode,
        Mode::ShowScript("select".into())
    );
    assert!(matches!(
        parse_err(&["-c", "x", "-b", "list"]),
        CliError::InvalidValue { .. }
    ));
}

#[test]
fn environment() {
    let env = Environment {
        job_completion_index: None,
        random_seed: Some("7".into()),
        open_files_limit: Some(20),
    };
    let config = parse(["-c", "12"], &env).expect("valid");
    assert_eq!(bench(&config).random_seed, Some(RandomSeed::Value(7)));
    let config = parse(["--random-seed=rand"], &env).expect("valid");
    assert_eq!(bench(&config).random_seed, Some(RandomSeed::Rand));
    assert_eq!(
        parse(["-c", "18"], &env),
        Err(CliError::TooManyOpenFiles {
            needed: 21,
            limit: 20
        })
    );
    // Past pgbench's check (clients + 3), pgbolt's own descriptors count:
    // the signal pipe, and per thread two poller handles, a timer, a log.
    for (args, needed) in [
        (&["-c", "13"][..], 21),
        (&["-c", "4", "-j", "4"][..], 21),
        (&["-c", "12", "-l"][..], 21),
        (&["-c", "12", "--io=uring"][..], 21),
        (&["-c", "9", "--temp-instance"][..], 21),
    ] {
        assert_eq!(
            parse(args.iter().copied(), &env),
            Err(CliError::TooManyOpenFiles { needed, limit: 20 }),
            "{args:?}"
        );
    }
    let env = Environment {
        job_completion_index: None,
        random_seed: Some("x".into()),
        open_files_limit: None,
    };
    assert_eq!(
        parse(["--random-seed=1"], &env),
        Err(CliError::InvalidRandomSeed {
            value: "x".into(),
            from_environment: true
        })
    );
}

#[test]
fn sweep_errors() {
    let cases: &[(&[&str], CliError)] = &[
        (
            &["--warmup=2", "--start-at=+10"],
            CliError::UnsupportedWithWarmup("--start-at"),
        ),
        (&["--repeat=2"], CliError::RequiresSweep("--repeat")),
        (&["--slo=p99<1ms"], CliError::RequiresSweep("--slo")),
        (
            &["-c", "4", "--sweep=clients:1,2"],
            CliError::SweptOption("-c/--client", "clients"),
        ),
        (
            &["-j", "2", "--sweep=threads:1,2"],
            CliError::SweptOption("-j/--jobs", "threads"),
        ),
        (
            &["-R", "10", "--sweep=rate:1,2"],
            CliError::SweptOption("-R/--rate", "rate"),
        ),
        (
            &["--sweep=clients:1,2", "--pgbench-output"],
            CliError::UnsupportedWithSweep("--pgbench-output"),
        ),
        (
            &["--sweep=clients:auto", "--repeat-order=shuffle"],
            CliError::InvalidStudyValue {
                option: "--repeat-order",
                value: "shuffle".into(),
                reason: "clients:auto runs each value's repeats one after the other, as it \
                         finds the values; there is no order to choose"
                    .into(),
            },
        ),
        (
            &["--repeat=0"],
            CliError::InvalidStudyValue {
                option: "--repeat",
                value: "0".into(),
                reason: "expected a count from 1 to 100".into(),
            },
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(&parse_err(args), expected, "{args:?}");
    }
    let err = parse_err(&["--sweep=scale:1"]).to_string();
    assert!(err.contains("unknown dimension \"scale\""), "{err}");
    let err = CliError::UnsupportedWithSweep("--pgbench-output").to_string();
    assert_eq!(err, "--pgbench-output with --sweep is not supported yet");
    // -j caps a clients sweep's threads; the slo conditions accumulate.
    let c = parse_ok(&[
        "--sweep=clients:1,4",
        "-j",
        "2",
        "--slo=p50<1ms",
        "--slo=p99<2ms",
    ]);
    assert_eq!(study(&c).jobs, Some(2));
    assert_eq!(study(&c).slo.len(), 2);
}

#[test]
fn extension_errors() {
    let cases: &[(&[&str], CliError)] = &[
        (&["--io=poll"], CliError::InvalidIoMethod("poll".into())),
        (
            &["--busy-poll=yes"],
            CliError::InvalidBusyPoll("yes".into()),
        ),
        (
            &["-c", "8", "-j", "4", "--pool-size=2"],
            CliError::PoolSizeOutOfRange {
                pool: 2,
                threads: 4,
                clients: 8,
            },
        ),
        (
            &["-c", "8", "--pool-size=9"],
            CliError::PoolSizeOutOfRange {
                pool: 9,
                threads: 1,
                clients: 8,
            },
        ),
        (
            &["-C", "-c", "8", "--pool-size=2"],
            CliError::PoolSizeWith("-C/--connect"),
        ),
        (
            &["--temp-instance", "--temp-instance-setting=fsync"],
            CliError::InvalidTempInstanceSetting("fsync".into()),
        ),
        (
            &["--temp-instance-setting=fsync=off"],
            CliError::RequiresTempInstance("--temp-instance-setting"),
        ),
        (
            &["--temp-instance-keep"],
            CliError::RequiresTempInstance("--temp-instance-keep"),
        ),
        (
            &["--temp-instance", "-h", "/tmp"],
            CliError::TempInstanceWithServer("-h/--host"),
        ),
        (
            &["--temp-instance", "-p", "5432"],
            CliError::TempInstanceWithServer("-p/--port"),
        ),
        (
            &["--temp-instance", "--temp-instance-setting=Port=5433"],
            CliError::TempInstanceOwnsSetting("Port".to_string()),
        ),
        (
            &[
                "--temp-instance",
                "--temp-instance-setting=unix_socket_directories=/tmp",
            ],
            CliError::TempInstanceOwnsSetting("unix_socket_directories".to_string()),
        ),
        (
            &["--temp-instance", "-U", "bob"],
            CliError::TempInstanceWithServer("-U/--username"),
        ),
        (
            &["--temp-instance", "-d", "mydb"],
            CliError::TempInstanceWithServer("a database name (-d/--dbname or an argument)"),
        ),
        (
            &["--temp-instance", "mydb"],
            CliError::TempInstanceWithServer("a database name (-d/--dbname or an argument)"),
        ),
        (&["-i", "--json=x"], CliError::BenchmarkOptionInInitMode),
        (&["-i", "--html=x"], CliError::BenchmarkOptionInInitMode),
        (&["--html=-"], CliError::HtmlToStdout),
        (&["--render=r.json"], CliError::RenderWithoutHtml),
        (
            &["--render=r.json", "--html=r.html", "mydb"],
            CliError::RenderWithArgument("mydb".into()),
        ),
        (
            &["--html=r.html", "-c", "4", "--render=r.json"],
            CliError::RenderWithOption("-c/--client".into()),
        ),
        (
            &["--render=r.json", "--html=r.html", "--temp-instance"],
            CliError::RenderWithOption("--temp-instance".into()),
        ),
        (
            &["--render=r.json", "--html=r.html", "-i"],
            CliError::RenderWithOption("-i/--initialize".into()),
        ),
        (
            &["--json="],
            CliError::InvalidValue {
                option: "--json",
                value: String::new(),
            },
        ),
    ];
    for (args, want) in cases {
        assert_eq!(&parse_err(args), want, "{args:?}");
    }
}

#[test]
fn help_lists_every_option() {
    let text = help::usage();
    for def in OPTIONS {
        let mut names = format!("--{}", def.long);
        if let Some(short) = def.short {
            names = format!("-{short}, {names}");
        }
        assert!(
            text.contains(&format!("  {names}")),
            "{names} missing from help"
        );
    }
}

/// The reference page of the options, read by the tests below.
const OPTIONS_MD: &str = include_str!("../../docs/options.md");

/// The row of `docs/options.md` that documents `--long`.
fn options_md_row(long: &str) -> &'static str {
    OPTIONS_MD
        .lines()
        .filter(|row| row.starts_with("| `"))
        .find(|row| {
            let names = row.split(" | ").next().unwrap_or_default();
            names.contains(&format!("`--{long}`"))
                || names.contains(&format!("`--{long}="))
                || names.contains(&format!("`--{long}[="))
        })
        .unwrap_or_else(|| panic!("--{long} has no row in docs/options.md"))
}

/// The entry of `--help` that documents `--long`: its names and every
/// line of its text, in each section that lists it.
fn help_entry(long: &str) -> String {
    let text = help::usage();
    let mut entry = String::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("  -") {
            let names = line.split_whitespace().collect::<Vec<_>>();
            inside = names.iter().any(|name| {
                name.trim_end_matches(',') == format!("--{long}")
                    || name.starts_with(&format!("--{long}="))
            });
        } else if !line.starts_with("   ") {
            inside = false;
        }
        if inside {
            entry.push_str(line);
            entry.push('\n');
        }
    }
    assert!(!entry.is_empty(), "--{long} missing from help");
    entry
}

#[test]
fn every_option_has_a_row_in_docs_options_md() {
    for def in OPTIONS {
        options_md_row(def.long);
    }
}

#[test]
fn help_and_docs_options_md_state_the_same_defaults() {
    // (option, as --help says it, as docs/options.md says it)
    let cases: &[(&str, &str, &str)] = &[
        ("init-steps", "(default \"dtgvp\")", "(default `dtgvp`)"),
        ("fillfactor", "(default: 100)", "(default 100)"),
        ("scale", "(default: 1)", "(default 1)"),
        ("partition-method", "(default: range)", "(default `range`"),
        ("partitions", "(default: 0)", "(default 0"),
        ("builtin", "(default: 1)", "(default 1)"),
        ("file", "(default: 1)", "(default 1)"),
        ("client", "(default: 1)", "(default 1)"),
        ("jobs", "(default: 1)", "(default 1)"),
        ("protocol", "(default: simple)", "(default `simple`)"),
        ("transactions", "(default: 10)", "(default 10)"),
        (
            "log-prefix",
            "(default: \"pgbench_log\")",
            "(default `pgbench_log`)",
        ),
        ("max-tries", "(default: 1)", "(default 1)"),
        ("random-seed", "(default: time)", "`time` (default)"),
        ("busy-poll", "(default: auto)", "`auto` (the default)"),
        (
            "init-jobs",
            "(default: CPUs, at most 8)",
            "Default: the number of CPUs, at most 8",
        ),
        ("io", "(default: auto)", "`auto` (the default)"),
    ];
    for (long, in_help, in_docs) in cases {
        let entry = help_entry(long);
        assert!(entry.contains(in_help), "--help on --{long}: {entry}");
        let row = options_md_row(long);
        assert!(row.contains(in_docs), "docs/options.md on --{long}: {row}");
    }
}

/// `--reconnect` takes seconds, and is refused where a client's
/// connection is not its own for the whole run.
#[test]
fn reconnect_takes_seconds_and_refuses_what_it_cannot_honour() {
    let wait = |args: &[&str]| bench(&parse_ok(args)).reconnect;
    assert_eq!(
        wait(&["--reconnect=2.5"]),
        Some(std::time::Duration::from_millis(2500))
    );
    assert_eq!(wait(&[]), None);
    for (args, message) in [
        (
            &["--reconnect=0"][..],
            "invalid value \"0\" for option --reconnect: expected seconds",
        ),
        (
            &["--reconnect=soon"],
            "invalid value \"soon\" for option --reconnect: expected seconds",
        ),
        (
            &["--reconnect", "-C"],
            "--reconnect with -C/--connect is not supported yet",
        ),
        (
            &["--committed-query=select 1"],
            "--committed-query can only be used with --reconnect",
        ),
        (
            &["--reconnect", "--io=uring"],
            "--reconnect with --io=uring is not supported yet",
        ),
        (
            &["--reconnect", "--sweep=clients:1,2"],
            "--reconnect with --sweep is not supported yet",
        ),
    ] {
        let err = parse_err(args).to_string();
        assert!(err.contains(message), "{args:?}: {err}");
    }
}

#[test]
fn targets_and_poolers_refuse_what_they_cannot_honour() {
    for (args, message) in [
        (
            &["--temp-pgbouncer"][..],
            "--temp-pgbouncer can only be used with --temp-instance",
        ),
        (
            &["--temp-instance", "--temp-pgbouncer=pooled"],
            "invalid value \"pooled\" for option --temp-pgbouncer: expected session, transaction or statement",
        ),
        (
            &["--pool-size=1", "--target=a=host=/tmp"],
            "--pool-size with --target is not supported yet",
        ),
        (
            &["--temp-instance", "--target=a=host=/tmp"],
            "--temp-instance cannot be used with --target",
        ),
        (
            &["--target=a=host=/tmp", "--sweep=clients:auto"],
            "--sweep=clients:auto with --target or --temp-pgbouncer is not supported yet",
        ),
        (
            &["--connect-dimension"],
            "--connect-dimension can only be used with --target or --temp-pgbouncer",
        ),
        (
            &["--target=a=host=/tmp", "--connect-dimension", "-C"],
            "-C/--connect cannot be used with --connect-dimension",
        ),
        (
            &["--target=a=host=/tmp", "--target=a=host=/var/run"],
            "target \"a\" is named twice",
        ),
        (
            &["--target=bad name=host=/tmp password=s3cret"],
            "a target's name is 1 to 24 letters",
        ),
        (
            &["--target=bad name=postgresql://u:s3cret@h/db"],
            "a target's name is 1 to 24 letters",
        ),
    ] {
        let err = parse_err(args).to_string();
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("s3cret"), "{args:?}: {err}");
    }
    let modes = parse_ok(&["--temp-instance", "--temp-pgbouncer=session"]);
    assert_eq!(
        modes.temp_instance.and_then(|t| t.pgbouncer),
        Some(crate::tempdb::PoolMode::Session)
    );
    // The value is attached or absent: a following word is the dbname.
    assert_eq!(
        parse_err(&["--temp-instance", "--temp-pgbouncer", "session"]).to_string(),
        CliError::TempInstanceWithServer("a database name (-d/--dbname or an argument)")
            .to_string()
    );
}

#[test]
fn max_input_size_takes_sizes_and_only_where_files_are_read() {
    let limit = |value: &str| match parse_ok(&["--merge", "--max-input-size", value, "g.json"]).mode
    {
        Mode::Merge(m) => m.max_input_size,
        other => panic!("not a merge: {other:?}"),
    };
    assert_eq!(limit("1"), 1);
    assert_eq!(limit("500MB"), 500 << 20);
    assert_eq!(limit("3 GiB"), 3 << 30);
    assert_eq!(limit("2t"), 2 << 40);
    for bad in ["0", "0GB", "1.5GB", "12XB", "", "99999999999TB"] {
        assert_eq!(
            parse_err(&["--merge", "--max-input-size", bad, "g.json"]),
            CliError::InvalidMaxInputSize(bad.to_string()),
            "{bad:?}"
        );
    }
    assert_eq!(
        parse_err(&["--max-input-size=1GB", "-c", "2"]),
        CliError::MaxInputSizeWithoutInput
    );
}
