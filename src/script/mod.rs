//! Transaction scripts: files and builtins, parsed into commands.

pub mod vars;
