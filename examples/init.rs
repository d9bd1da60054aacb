//! `pgbolt -i -s N [--partitions=N] [--partition-method=M] [--init-jobs=N]
//! [DBNAME]` through the library, for
//! `bench/init.sh` while the pgbolt binary does not dispatch `-i` yet.
//! Connection options come from the `PG*` environment as with libpq.

use std::num::NonZeroUsize;
use std::process::ExitCode;

use pgbolt::init::{self, InitOptions, PartitionMethod};
use pgwire::conninfo::{from_params, resolve, Env};

fn main() -> ExitCode {
    let mut opts = InitOptions::default();
    let mut dbname = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let parsed = match arg.as_str() {
            "-i" => Ok(()),
            "-s" => args
                .next()
                .and_then(|v| v.parse().ok())
                .map(|scale| opts.scale = scale)
                .ok_or("-s needs a scale"),
            _ if arg.starts_with("--partitions=") => arg["--partitions=".len()..]
                .parse()
                .map(|n| opts.partitions = n)
                .map_err(|_| "--partitions needs a number"),
            _ if arg.starts_with("--partition-method=") => {
                PartitionMethod::parse(&arg["--partition-method=".len()..])
                    .map(|m| opts.partition_method = Some(m))
                    .ok_or("--partition-method is range or hash")
            }
            _ if arg.starts_with("--init-jobs=") => arg["--init-jobs=".len()..]
                .parse::<NonZeroUsize>()
                .map(|jobs| opts.jobs = Some(jobs))
                .map_err(|_| "--init-jobs needs a positive number"),
            _ if !arg.starts_with('-') => {
                dbname = arg;
                Ok(())
            }
            _ => Err("usage: init [-i] [-s SCALE] [--partitions=N] [--partition-method=M] [--init-jobs=N] [DBNAME]"),
        };
        if let Err(message) = parsed {
            eprintln!("init: error: {message}");
            return ExitCode::from(1);
        }
    }
    let params = [
        ("dbname", dbname.as_str()),
        ("fallback_application_name", "pgbolt"),
    ];
    let config = match from_params(params, true).and_then(|o| resolve(&o, &Env::from_process())) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("init: error: {e}");
            return ExitCode::from(1);
        }
    };
    match init::run(&opts, &config, &mut std::io::stderr()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", e.report("pgbolt"));
            ExitCode::from(1)
        }
    }
}
