//! `-D name=value` definitions.
//!
//! A definition sets a variable in every client before the run. pgbolt
//! then adds the automatic variables [`AUTOMATIC_VARIABLES`], each only if
//! no `-D` defined it, so `-D scale=5` wins over the scale of the database.

use super::error::ScriptError;
use super::sql::valid_variable_name;

/// Variables every client gets unless `-D` defines them: its number, the
/// scale, the seed of the hash functions and the random seed.
pub const AUTOMATIC_VARIABLES: [&str; 4] = ["client_id", "scale", "default_seed", "random_seed"];

/// Split a `-D` argument at its first `=` into a valid variable name and a
/// non-empty value.
pub fn parse_define(arg: &str) -> Result<(&str, &str), ScriptError> {
    match arg.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => {
            if valid_variable_name(name) {
                Ok((name, value))
            } else {
                Err(ScriptError::InvalidVariableName {
                    context: "option",
                    name: name.to_owned(),
                })
            }
        }
        _ => Err(ScriptError::InvalidDefinition {
            definition: arg.to_owned(),
        }),
    }
}
