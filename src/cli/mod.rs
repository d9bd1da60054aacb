//! The command line: pgbench 18's options, parsed and checked the way
//! pgbench parses and checks them, into a typed [`Config`].
//!
//! Parsing has two steps and no side effects. First every option is read
//! in command-line order ([`getopt`] emulates glibc's `getopt_long` over
//! `lexopt`) and checks its own value the moment it is met, as pgbench
//! does, so that the first bad option is the one reported. Then
//! [`validate`] applies the checks that involve several options, in
//! pgbench's order, and builds the [`Config`]. Errors carry pgbench's
//! wording (with pgbolt's name) and exit status 1.
//!
//! Each option is defined once, in [`options::OPTIONS`]: names, value,
//! mode, help lines and the function that records it. Help output is
//! generated from that table.
//!
//! `-?`/`--help` and `-V`/`--version` are recognised only as the first
//! argument, like in pgbench.
//!
//! It builds a `crate::config::Config` and uses only what the settings name
//! (scripts, init steps, random seeds) and the program's name: it runs no
//! mode, writes no file and opens no connection (`crate::app` does).

mod environment;
pub mod error;
mod gather;
mod getopt;
pub mod help;
pub mod options;
mod validate;
mod values;

#[cfg(test)]
mod tests;

use std::ffi::OsString;

use crate::config::{Config, Mode, SeedNote};
pub use environment::Environment;
pub use error::{CliError, Level};

/// Parses a command line (without the program name) into a configuration.
pub fn parse<I>(args: I, env: &Environment) -> Result<Config, CliError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    parse_noting_seeds(args, env).map_err(|failure| failure.error)
}

/// A command line pgbolt refuses, with the random seeds met before the
/// error: pgbench has printed their lines by the time it fails.
#[derive(Debug)]
pub struct ParseFailure {
    pub error: CliError,
    pub seeds: Vec<SeedNote>,
}

/// [`parse`], keeping the seeds met before an error.
pub fn parse_noting_seeds<I>(args: I, env: &Environment) -> Result<Config, ParseFailure>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(first) = args.first() {
        if first == "--help" || first == "-?" {
            return Ok(Config::for_mode(Mode::Help));
        }
        if first == "--version" || first == "-V" {
            return Ok(Config::for_mode(Mode::Version));
        }
    }
    let mut gathered = gather::Gathered::new(env).map_err(|error| ParseFailure {
        error,
        seeds: Vec::new(),
    })?;
    let mut getopt = getopt::Getopt::new(args);
    loop {
        let event = match getopt.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(error) => return Err(gathered.failure(error)),
        };
        let def = match event {
            getopt::Event::Positional(value) => {
                gathered
                    .positionals
                    .push(value.to_string_lossy().into_owned());
                continue;
            }
            getopt::Event::Flag(def, record) => {
                record(&mut gathered);
                def
            }
            getopt::Event::Value(def, record, value) => {
                if let Err(error) = record(&mut gathered, &value) {
                    return Err(gathered.failure(error));
                }
                def
            }
            getopt::Event::Optional(def, record, value) => {
                if let Err(error) = record(&mut gathered, value.as_deref()) {
                    return Err(gathered.failure(error));
                }
                def
            }
        };
        gathered.given.push((def.short, def.long));
        if let Some(mode) = gathered.early_exit.take() {
            let mut config = Config::for_mode(mode);
            config.seeds = gathered.seeds;
            return Ok(config);
        }
        match def.class {
            options::Class::Benchmark => gathered.benchmarking_option = true,
            options::Class::Init => gathered.initialization_option = true,
            options::Class::Common => {}
        }
    }
    let seeds = gathered.seeds.clone();
    validate::finish(gathered).map_err(|error| ParseFailure { error, seeds })
}
