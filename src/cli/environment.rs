//! What the command line's validation may consult besides the arguments:
//! read from the process once, so that parsing stays free of side effects
//! and tests can hand in any environment they like.

use std::ffi::OsString;

/// What validation may consult besides the arguments; captured once so that
/// parsing stays free of side effects and testable.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `PGBENCH_RANDOM_SEED`.
    pub random_seed: Option<OsString>,
    /// The hard limit on open files (`RLIMIT_NOFILE`), if known.
    pub open_files_limit: Option<u64>,
    /// `JOB_COMPLETION_INDEX` (set by a Kubernetes Indexed Job): the
    /// generator's index under `--generators=N`.
    pub job_completion_index: Option<String>,
}

impl Environment {
    /// Reads the environment of this process.
    pub fn from_process() -> Environment {
        Environment {
            random_seed: std::env::var_os("PGBENCH_RANDOM_SEED"),
            open_files_limit: open_files_hard_limit(),
            job_completion_index: std::env::var("JOB_COMPLETION_INDEX").ok(),
        }
    }
}

fn open_files_hard_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes into the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc == 0 && limit.rlim_max != libc::RLIM_INFINITY {
        Some(limit.rlim_max)
    } else {
        None
    }
}
