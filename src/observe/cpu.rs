//! CPU time from the operating system: the calling thread's and the
//! process's (`clock_gettime`), the whole machine's (`/proc/stat`), and a
//! local server's processes (`/proc`).

use std::collections::HashMap;

/// CPU time of the calling thread, µs (`CLOCK_THREAD_CPUTIME_ID`, the
/// figure `/proc/self/task/TID/stat` shows in clock ticks).
pub fn thread_cpu_us() -> i64 {
    clock_us(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Time the calling thread has spent runnable but waiting for a CPU, µs:
/// the second field of `/proc/thread-self/schedstat`; `None` where the
/// kernel does not keep it.
pub fn thread_run_delay_us() -> Option<i64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: i64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(ns / 1_000)
}

/// CPU time of the whole process, µs.
pub fn process_cpu_us() -> i64 {
    clock_us(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The machine's CPU time so far, clock ticks summed over its CPUs: busy
/// (everything but idle and I/O wait) and total, from `/proc/stat`'s
/// `cpu` line; `None` where there is none.
pub fn machine_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine_ticks(text.lines().next()?)
}

/// Busy and total ticks of a `/proc/stat` `cpu` line.
fn parse_machine_ticks(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest time is
    // already in user and nice).
    let ticks: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = ticks.iter().sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// The share of the machine's CPU time that was busy between two
/// [`machine_ticks`] readings.
pub fn machine_busy_share(start: (u64, u64), end: (u64, u64)) -> Option<f64> {
    let total = end.1.checked_sub(start.1)?;
    let busy = end.0.checked_sub(start.0)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

fn clock_us(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct we pass.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
}

/// What `/proc/PID/stat` says of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: i32,
    /// User plus system time, clock ticks.
    pub own_ticks: u64,
    /// User plus system time of its children that ended and were waited
    /// for, clock ticks.
    pub children_ticks: u64,
}

/// Parses a `/proc/PID/stat` line: `pid (comm) state ppid ...`, the
/// times being fields 14 to 17. The command name may hold spaces and
/// parentheses, so the fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<(String, ProcStat)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some((
        comm,
        ProcStat {
            ppid: fields.get(1)?.parse().ok()?,
            own_ticks: num(11)? + num(12)?,
            children_ticks: num(13)? + num(14)?,
        },
    ))
}

fn read_stat(pid: i32) -> Option<(String, ProcStat)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Clock ticks per second.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// A reading of a local server's CPU: its postmaster's own and waited-for
/// children's time plus every live child's time. A child that ends between
/// two readings moves from the second sum to the first, so the difference
/// of two readings is the CPU the server spent between them.
#[derive(Debug, Clone)]
pub struct ServerReading {
    children: HashMap<i32, u64>,
    postmaster_ticks: u64,
    backend_ticks: u64,
}

/// Where a local server's processes are: the postmaster, found as the
/// parent of the monitor's backend.
#[derive(Debug, Clone, Copy)]
pub struct LocalServer {
    postmaster: i32,
    backend: i32,
}

impl LocalServer {
    /// The server of `backend_pid` when it runs on this host and `/proc`
    /// shows it; else why not.
    pub fn find(backend_pid: i32) -> Result<LocalServer, String> {
        let Some((comm, stat)) = read_stat(backend_pid) else {
            return Err(format!("no process {backend_pid} in /proc"));
        };
        if !comm.starts_with("postgres") {
            return Err(format!(
                "process {backend_pid} here is not a postgres backend"
            ));
        }
        Ok(LocalServer {
            postmaster: stat.ppid,
            backend: backend_pid,
        })
    }

    /// Reads the server's CPU now; `None` when the postmaster is gone.
    pub fn read(&self) -> Option<ServerReading> {
        let (_, pm) = read_stat(self.postmaster)?;
        let mut children = HashMap::new();
        let mut backend_ticks = 0;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some((_, stat)) = read_stat(pid) {
                if stat.ppid == self.postmaster {
                    children.insert(pid, stat.own_ticks);
                    if pid == self.backend {
                        backend_ticks = stat.own_ticks;
                    }
                }
            }
        }
        Some(ServerReading {
            children,
            postmaster_ticks: pm.own_ticks + pm.children_ticks,
            backend_ticks,
        })
    }
}

/// CPU seconds between two readings: the server's, and the monitor
/// backend's share of it.
pub fn server_cpu_between(start: &ServerReading, end: &ServerReading) -> (f64, f64) {
    let hz = ticks_per_second();
    let live = |r: &ServerReading| r.children.values().sum::<u64>();
    let total =
        (end.postmaster_ticks + live(end)).saturating_sub(start.postmaster_ticks + live(start));
    let backend = end.backend_ticks.saturating_sub(start.backend_ticks);
    (total as f64 / hz, backend as f64 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_line_of_proc_stat_gives_busy_and_total_ticks() {
        let line = "cpu  100 5 50 800 20 3 2 10 0 0";
        assert_eq!(parse_machine_ticks(line), Some((170, 990)));
        assert_eq!(parse_machine_ticks("cpu0 1 2 3 4"), None);
        assert_eq!(machine_busy_share((170, 990), (260, 1090)), Some(0.9));
    }

    #[test]
    fn a_stat_line_with_parentheses_in_the_name_parses() {
        let line = "4242 (postgres: u (db)) S 100 4242 4242 0 -1 4194560 500 0 0 0 \
                    17 5 3 2 20 0 1 0 1000 100000 200 18446744073709551615";
        let (comm, stat) = parse_stat(line).expect("parses");
        assert_eq!(comm, "postgres: u (db)");
        assert_eq!(
            stat,
            ProcStat {
                ppid: 100,
                own_ticks: 22,
                children_ticks: 5
            }
        );
    }

    #[test]
    fn this_threads_cpu_grows_with_work() {
        let before = thread_cpu_us();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_us() > before, "{x}");
        assert!(thread_run_delay_us().is_some_and(|us| us >= 0));
        assert!(process_cpu_us() >= thread_cpu_us());
    }

    #[test]
    fn a_child_that_ended_moves_its_time_to_the_postmaster() {
        let start = ServerReading {
            children: HashMap::from([(1, 10), (2, 5)]),
            postmaster_ticks: 3,
            backend_ticks: 1,
        };
        let end = ServerReading {
            children: HashMap::from([(1, 30)]),
            postmaster_ticks: 3 + 7,
            backend_ticks: 2,
        };
        let (total, backend) = server_cpu_between(&start, &end);
        let hz = ticks_per_second();
        // Child 1 ran 20 ticks, child 2 two more before it ended (7 in all).
        assert!((total - 22.0 / hz).abs() < 1e-9);
        assert!((backend - 1.0 / hz).abs() < 1e-9);
    }
}
