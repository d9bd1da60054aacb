//! Gathering, the first step of parsing (see the parent module), of the
//! options that pgbench does not have: result files and reports, the
//! monitor, the throwaway instance and pooler, targets and pools, I/O,
//! comparing results, fleets of generators, merging, and studies. Each
//! checks its own value as it is met, as pgbench's options do; what
//! involves several options waits for `validate`.

use std::ffi::OsStr;
use std::path::PathBuf;

use super::{positive, text, Gathered};
use crate::cli::error::CliError;
use crate::cli::values;
use crate::config::Metric;
use crate::config::{BusyPoll, CompareFormat, IoMethod};

pub fn json(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    if value.is_empty() {
        return Err(CliError::InvalidValue {
            option: "--json",
            value: String::new(),
        });
    }
    g.json = Some(PathBuf::from(value));
    Ok(())
}

pub fn html(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    if value.is_empty() {
        return Err(CliError::InvalidValue {
            option: "--html",
            value: String::new(),
        });
    }
    if value == "-" {
        return Err(CliError::HtmlToStdout);
    }
    g.html = Some(PathBuf::from(value));
    Ok(())
}

pub fn render(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    if value.is_empty() {
        return Err(CliError::InvalidValue {
            option: "--render",
            value: String::new(),
        });
    }
    g.render = Some(PathBuf::from(value));
    Ok(())
}

pub fn pgbench_output(g: &mut Gathered) {
    g.pgbench_output = true;
}

pub fn no_monitor(g: &mut Gathered) {
    g.no_monitor = true;
}

pub fn monitor_interval(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.monitor_interval =
        Some(values::option_int(&text(value), "--monitor-interval", 10, 60_000)? as u32);
    Ok(())
}

pub fn pool_size(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.pool_size = Some(values::option_int(&text(value), "--pool-size", 1, i32::MAX)? as u32);
    Ok(())
}

pub fn no_preflight(g: &mut Gathered) {
    g.no_preflight = true;
}

pub fn temp_instance(g: &mut Gathered) {
    g.temp_instance = true;
}

pub fn temp_instance_setting(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let setting = text(value);
    match setting.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            g.temp_instance_settings
                .push((name.trim().to_string(), value.to_string()));
            Ok(())
        }
        _ => Err(CliError::InvalidTempInstanceSetting(setting)),
    }
}

pub fn temp_instance_keep(g: &mut Gathered) {
    g.temp_instance_keep = true;
}

pub fn temp_pgbouncer(g: &mut Gathered, value: Option<&OsStr>) -> Result<(), CliError> {
    let mode = match value {
        None => crate::tempdb::PoolMode::Transaction,
        Some(value) => crate::tempdb::PoolMode::parse(&text(value)).ok_or_else(|| {
            study_value(
                "--temp-pgbouncer",
                value,
                "expected session, transaction or statement".into(),
            )
        })?,
    };
    g.temp_pgbouncer = Some(mode);
    Ok(())
}

/// `--reconnect[=MAX_WAIT]`, in seconds (fractions allowed).
pub fn reconnect(g: &mut Gathered, value: Option<&OsStr>) -> Result<(), CliError> {
    let wait = match value {
        None => DEFAULT_RECONNECT_WAIT,
        Some(value) => {
            let seconds = crate::cnum::atof(&text(value));
            if !(seconds > 0.0 && seconds <= 86_400.0) {
                return Err(study_value(
                    "--reconnect",
                    value,
                    "expected seconds, more than 0 and at most 86400".into(),
                ));
            }
            std::time::Duration::from_secs_f64(seconds)
        }
    };
    g.reconnect = Some(wait);
    Ok(())
}

/// `--committed-query=SQL`.
pub fn committed_query(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let sql = text(value);
    if sql.trim().is_empty() {
        return Err(study_value(
            "--committed-query",
            value,
            "expected a query that returns the number of committed transactions".into(),
        ));
    }
    g.committed_query = Some(sql);
    Ok(())
}

/// How long a client tries to reconnect by default.
const DEFAULT_RECONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

pub fn connect_dimension(g: &mut Gathered) {
    g.connect_dimension = true;
}

pub fn target(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let target = crate::config::target::parse_target(&text(value)).map_err(|reason| {
        CliError::InvalidTarget {
            value: crate::config::target::redact(&text(value)),
            reason: crate::config::target::redact(&reason),
        }
    })?;
    if g.targets.iter().any(|t| t.name == target.name) {
        return Err(CliError::InvalidTarget {
            value: crate::config::target::redact(&text(value)),
            reason: format!("target \"{}\" is named twice", target.name),
        });
    }
    g.targets.push(target);
    Ok(())
}

/// The value of an option that takes one of a few exact words.
fn one_of<T: Copy>(value: &OsStr, words: &[(&str, T)]) -> Option<T> {
    let value = value.to_str()?;
    words.iter().find(|(w, _)| *w == value).map(|&(_, t)| t)
}

pub fn io(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let words = [
        ("auto", IoMethod::Auto),
        ("epoll", IoMethod::Epoll),
        ("uring", IoMethod::Uring),
    ];
    g.io = Some(one_of(value, &words).ok_or_else(|| CliError::InvalidIoMethod(text(value)))?);
    Ok(())
}

pub fn busy_poll(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let words = [
        ("auto", BusyPoll::Auto),
        ("on", BusyPoll::On),
        ("off", BusyPoll::Off),
    ];
    g.busy_poll =
        Some(one_of(value, &words).ok_or_else(|| CliError::InvalidBusyPoll(text(value)))?);
    Ok(())
}

pub fn compare(g: &mut Gathered) {
    g.compare = true;
}

pub fn compare_format(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let words = [
        ("text", CompareFormat::Text),
        ("markdown", CompareFormat::Markdown),
    ];
    g.compare_format =
        Some(one_of(value, &words).ok_or_else(|| CliError::InvalidCompareFormat(text(value)))?);
    Ok(())
}

/// `--compare-metric=tps,p99`: a comma-separated list of metric names.
pub fn compare_metric(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let list = text(value);
    let metrics: Option<Vec<Metric>> = list
        .split(',')
        .map(|name| Metric::from_name(name.trim()))
        .collect();
    match metrics {
        Some(metrics) if !metrics.is_empty() => {
            g.compare_metrics = Some(metrics);
            Ok(())
        }
        _ => Err(CliError::InvalidCompareMetric(list)),
    }
}

/// `--max-input-size=SIZE`: bytes, or a number with a unit among `kB`,
/// `MB`, `GB` and `TB` (powers of 1024, as PostgreSQL's own settings;
/// `KiB`, `MiB`, `GiB`, `TiB` and the bare letters too), at least 1 byte.
pub fn max_input_size(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let trimmed = given.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(CliError::InvalidMaxInputSize(given)),
    };
    match number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
    {
        Some(bytes) if bytes > 0 => {
            g.max_input_size = Some(bytes);
            Ok(())
        }
        _ => Err(CliError::InvalidMaxInputSize(given)),
    }
}

/// `--threshold=3%` (the `%` may be left out): a percentage from 0 to 1000.
pub fn threshold(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let number = given.trim().strip_suffix('%').unwrap_or(given.trim());
    match number.trim().parse::<f64>() {
        Ok(p) if (0.0..=1000.0).contains(&p) => {
            g.threshold = Some(p / 100.0);
            Ok(())
        }
        _ => Err(CliError::InvalidThreshold(given)),
    }
}

pub fn fail_on_regression(g: &mut Gathered) {
    g.fail_on_regression = true;
}

pub fn allow_different_scripts(g: &mut Gathered) {
    g.allow_different_scripts = true;
}

/// `--generator=I/N`: generator I (from 0) of N.
pub fn generator(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let parsed = given
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)))
        .filter(|(i, n)| *n >= 1 && i < n);
    g.generator = Some(parsed.ok_or(CliError::InvalidGenerator(given))?);
    Ok(())
}

pub fn generators(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.generators = Some(positive(value, "--generators")?);
    Ok(())
}

pub fn start_at(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    g.start_at = Some(crate::wallclock::parse(&given).ok_or(CliError::InvalidStartAt(given))?);
    Ok(())
}

/// `--metrics-listen=ADDR:PORT`: an address and a port, such as
/// `127.0.0.1:9187` or `[::]:9187` (no host names: nothing is resolved
/// before the run).
pub fn metrics_listen(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let addr = given
        .trim()
        .parse::<std::net::SocketAddr>()
        .map_err(|_| CliError::InvalidMetricsListen(given))?;
    g.metrics_listen = Some(addr);
    Ok(())
}

pub fn metrics_linger(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let seconds = given
        .trim()
        .parse::<u32>()
        .map_err(|_| CliError::InvalidValue {
            option: "--metrics-linger",
            value: given,
        })?;
    g.metrics_linger = Some(seconds);
    Ok(())
}

/// `url` with any user and password in it masked.
fn without_userinfo(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// `--metrics-push=URL`: `http://HOST[:PORT]/PATH`.
pub fn metrics_push(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    let url = crate::config::metrics::PushUrl::parse(given.trim())
        .ok_or_else(|| CliError::InvalidMetricsPush(without_userinfo(&given)))?;
    g.metrics_push = Some(url);
    Ok(())
}

pub fn run_id(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let given = text(value);
    if given.trim().is_empty() {
        return Err(CliError::InvalidValue {
            option: "--run-id",
            value: given,
        });
    }
    g.run_id = Some(given);
    Ok(())
}

pub fn merge(g: &mut Gathered) {
    g.merge = true;
}

pub fn allow_partial(g: &mut Gathered) {
    g.allow_partial = true;
}

/// A study option's value refused for `reason`.
fn study_value(option: &'static str, value: &OsStr, reason: String) -> CliError {
    CliError::InvalidStudyValue {
        option,
        value: text(value),
        reason,
    }
}

pub fn sweep(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let sweep = crate::config::study::parse_sweep(&text(value))
        .map_err(|reason| study_value("--sweep", value, reason))?;
    g.sweep = Some(sweep);
    Ok(())
}

pub fn warmup(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let seconds = text(value)
        .parse::<u32>()
        .map_err(|_| study_value("--warmup", value, "expected whole seconds".into()))?;
    g.warmup = Some(seconds);
    Ok(())
}

pub fn repeat(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    match text(value).parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => {
            g.repeat = Some(n);
            Ok(())
        }
        _ => Err(study_value(
            "--repeat",
            value,
            "expected a count from 1 to 100".into(),
        )),
    }
}

pub fn sweep_reset(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let reset = crate::config::study::parse_reset(&text(value))
        .map_err(|reason| study_value("--sweep-reset", value, reason))?;
    g.sweep_reset = Some(reset);
    Ok(())
}

pub fn repeat_order(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let order = crate::config::study::parse_order(&text(value))
        .map_err(|reason| study_value("--repeat-order", value, reason))?;
    g.repeat_order = Some(order);
    Ok(())
}

/// `--slo` adds its conditions to those of earlier `--slo` options.
pub fn slo(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let conditions = crate::config::study::parse_slo(&text(value))
        .map_err(|reason| study_value("--slo", value, reason))?;
    g.slo.extend(conditions);
    Ok(())
}
