//! `-D name=value` definitions (read by the command line, `cli::gather`).
//!
//! A definition sets a variable in every client before the run. pgbolt
//! then adds the automatic variables [`AUTOMATIC_VARIABLES`], each only if
//! no `-D` defined it, so `-D scale=5` wins over the scale of the database.

/// Variables every client gets unless `-D` defines them: its number, the
/// scale, the seed of the hash functions and the random seed.
pub const AUTOMATIC_VARIABLES: [&str; 4] = ["client_id", "scale", "default_seed", "random_seed"];
