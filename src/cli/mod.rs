//! The command line.

/// Runs pgbolt with the process arguments and returns the exit code.
pub fn main() -> i32 {
    0
}
