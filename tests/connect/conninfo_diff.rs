//! How connection options are read and combined, against the real pgbench:
//! both programs run with the same command line and environment (every
//! inherited `PG*` variable removed, `HOME` an empty directory) against
//! one throwaway server that logs its connections, and what the server saw
//! (`connection authorized: ...` lines, with the application name) and what
//! the programs printed must agree.

use crate::common;

use crate::conninfo_support::*;

/// Environment variables for one run.
type Env<'a> = Vec<(&'a str, &'a str)>;

/// An empty `application_name`, from wherever it comes, hides the fallback
/// name and libpq then sends none at all.
#[test]
fn an_empty_application_name_sends_none() {
    let db = database("appname");
    let dir = tempfile::tempdir().expect("temp dir");
    let services = dir.path().join("services.conf");
    let srv = server();
    std::fs::write(
        &services,
        format!(
            "[empty]\nhost={}\nport={}\napplication_name=\n",
            srv.socket_dir().display(),
            srv.port()
        ),
    )
    .expect("write service file");
    let services = services.to_string_lossy().into_owned();
    let conninfo = socket_conninfo(&db);
    let uri = format!(
        "postgresql://{}@:{}/{db}?host={}&application_name=",
        srv.superuser(),
        srv.port(),
        srv.socket_dir().display()
    );
    let with_empty = format!("{conninfo} application_name=''");
    let named = format!("{conninfo} application_name=bench1");
    let service = format!("service=empty user={} dbname={db}", srv.superuser());
    let cases: [(&str, Env, &str); 6] = [
        (&with_empty, vec![], ""),
        (&conninfo, vec![("PGAPPNAME", "")], ""),
        (&uri, vec![], ""),
        (&service, vec![("PGSERVICEFILE", &services)], ""),
        (&with_empty, vec![("PGAPPNAME", "fromenv")], ""),
        (&named, vec![], " application_name=bench1"),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, env, want) in cases {
        let args = ["-n", "-t", "1", "-f", &script.path, target];
        let seen = |program: Program| {
            let (out, lines) = authorized(&db, || run(program, &args, &env));
            assert_eq!(out.status.code(), Some(0), "{program:?} {target} {env:?}");
            lines
        };
        let ours = seen(Program::Pgbolt);
        assert_eq!(ours, seen(Program::Pgbench), "{target} {env:?}");
        assert!(!ours.is_empty(), "{target} {env:?}");
        for line in &ours {
            assert!(line.ends_with(&format!("database={db}{want}")), "{line}");
        }
    }
}

/// libpq sends `replication` as written; a value the server reads as false
/// asks for an ordinary session, which pgbolt accepts.
#[test]
fn replication_off_is_an_ordinary_session() {
    let db = database("replication_off");
    let conninfo = socket_conninfo(&db);
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for value in ["0", "off", "false", "No", "f"] {
        let target = format!("{conninfo} replication={value}");
        let args = ["-n", "-t", "1", "-f", &script.path, &target];
        let seen = |program: Program| {
            let (out, lines) = authorized(&db, || run(program, &args, &[]));
            assert_eq!(out.status.code(), Some(0), "{program:?} {target}");
            assert_eq!(messages(&out, program), "", "{program:?} {target}");
            lines.len()
        };
        assert_eq!(seen(Program::Pgbolt), seen(Program::Pgbench), "{target}");
    }
}

/// `--debug`'s `pghost: H pgport: P` line names the entry of the host list
/// that the set-up connection reached, as written (libpq's `PQhost` and
/// `PQport`), not the first one; the hosts tried before it leave no
/// message. The whole standard error is compared, with each run of
/// `receiving` lines made one (pgbench prints one per poll of the socket).
#[test]
fn debug_names_the_host_that_was_reached() {
    let db = database("debug_hosts");
    let srv = server();
    let (dir, port) = (srv.socket_dir().display().to_string(), srv.port());
    let missing = format!("{dir}/missing");
    let user = format!("user={} dbname={db}", srv.superuser());
    let targets = [
        format!("host={missing},{dir} port={port} {user}"),
        format!("host={missing},127.0.0.1 port={port},0{port} {user}"),
        format!("hostaddr=,127.0.0.1 host={missing},localhost port=1,{port} {user}"),
        format!(
            "postgresql://{}@%2Fnowhere:1,127.0.0.1:{port}/{db}",
            srv.superuser()
        ),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for target in &targets {
        let args = ["--debug", "-n", "-t", "1", "-f", &script.path, target];
        let shown = |program: Program| {
            let out = run(program, &args, &[]);
            assert_eq!(out.status.code(), Some(0), "{program:?} {target}");
            let mut lines: Vec<String> =
                messages(&out, program).lines().map(str::to_owned).collect();
            lines.dedup_by(|a, b| a == b && a.ends_with(" receiving"));
            lines
        };
        let ours = shown(Program::Pgbolt);
        assert_eq!(ours, shown(Program::Pgbench), "{target}");
        let pghost = ours.iter().find(|l| l.starts_with("PROG: pghost: "));
        let pghost = pghost.expect("a pghost line");
        assert!(
            !pghost.contains("missing") && !pghost.contains("nowhere"),
            "{pghost}"
        );
    }
}

/// `client_encoding=auto` follows the program's locale, which for pgbench
/// (and pgbolt) is always "C", whatever the environment says: SQL_ASCII.
#[test]
fn client_encoding_auto_is_what_pgbench_gets() {
    let db = database("encoding_auto");
    let conninfo = socket_conninfo(&db);
    let script = common::script_file(
        "enc.sql",
        "SHOW client_encoding \\gset\n\\shell echo encoding :client_encoding\n",
    );
    let with_auto = format!("{conninfo} client_encoding=auto");
    let cases: [(&str, Env); 4] = [
        (&with_auto, vec![("LC_ALL", "C.UTF-8")]),
        (&with_auto, vec![("LANG", "C.UTF-8"), ("LC_ALL", "")]),
        (&conninfo, vec![("PGCLIENTENCODING", "auto")]),
        (&conninfo, vec![("PGCLIENTENCODING", "LATIN1")]),
    ];
    for (target, env) in cases {
        let args = ["-n", "-t", "1", "-f", &script.path, target];
        let shown = |program: Program| {
            let out = run(program, &args, &env);
            assert_eq!(out.status.code(), Some(0), "{program:?} {target} {env:?}");
            let text = common::stdout(&out);
            let found = text.lines().find(|l| l.starts_with("encoding "));
            found.expect("the encoding line").to_owned()
        };
        let ours = shown(Program::Pgbolt);
        assert_eq!(ours, shown(Program::Pgbench), "{target} {env:?}");
        assert!(
            ours.ends_with("SQL_ASCII") || ours.ends_with("LATIN1"),
            "{ours}"
        );
    }
}

/// The TCP socket options are read as a TCP connection opens, in libpq's
/// order: a Unix socket never looks at them, keepalives off skips the
/// others, and a bad value fails that attempt only (with the attempt's
/// `connection to server ... failed:` prefix), so the next host is tried.
#[test]
fn tcp_options_are_read_as_a_tcp_connection_opens() {
    let db = database("tcp_options");
    let srv = server();
    let (dir, port) = (srv.socket_dir().display().to_string(), srv.port());
    let user = format!("user={} dbname={db}", srv.superuser());
    let tcp = format!("host=127.0.0.1 port={port} {user}");
    let socket = socket_conninfo(&db);
    let cases = [
        (format!("{socket} keepalives=x keepalives_idle=x"), 0),
        (format!("{socket} tcp_user_timeout=x keepalives_count=x"), 0),
        (
            format!("{tcp} keepalives=0 keepalives_idle=x tcp_user_timeout=x"),
            0,
        ),
        (format!("{tcp} keepalives=-1 tcp_user_timeout=-5"), 0),
        (format!("{tcp} keepalives=x"), 1),
        (format!("{tcp} keepalives=''"), 1),
        (format!("{tcp} keepalives_idle=x keepalives_interval=y"), 1),
        (format!("{tcp} keepalives=1 tcp_user_timeout=x"), 1),
        (format!("{tcp} keepalives_idle=0"), 1),
        (
            format!("host=127.0.0.1,{dir} port={port} {user} keepalives=x"),
            0,
        ),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, status) in &cases {
        let args = ["-n", "-t", "1", "-f", &script.path, target];
        let ended = |program: Program| {
            let out = run(program, &args, &[]);
            assert_eq!(out.status.code(), Some(*status), "{program:?} {target}");
            messages(&out, program)
        };
        let ours = ended(Program::Pgbolt);
        assert_eq!(ours, ended(Program::Pgbench), "{target}");
        if *status == 1 {
            let first = ours.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("PROG: error: connection to server at \"127.0.0.1\""),
                "{first}"
            );
        }
    }
}

/// `target_session_attrs` against a real primary and its hot standby, with
/// the host list in both orders: the same server is chosen (the script
/// says which), `--debug` prints the same lines (each run of `receiving`
/// lines made one), and a refusal reads the same. Then
/// `load_balance_hosts=random` spreads connections over both.
#[test]
fn target_session_attrs_choose_the_same_server() {
    let primary = pgbolt::tempdb::TempDb::builder()
        .start()
        .expect("primary starts");
    let standby = Standby::of(&primary);
    let p = (primary.socket_dir().display().to_string(), primary.port());
    let s = (standby.socket_dir().display().to_string(), standby.port);
    let script = common::script_file(
        "which.sql",
        "SELECT pg_is_in_recovery() AS standby \\gset\n\\shell echo standby :standby\n",
    );
    let attrs = [
        "any",
        "read-write",
        "read-only",
        "primary",
        "standby",
        "prefer-standby",
    ];
    let orders = [(&p, &s), (&s, &p), (&p, &p), (&s, &s)];
    let mut outcomes = std::collections::BTreeSet::new();
    for attr in attrs {
        for ((first_dir, first), (second_dir, second)) in orders {
            let target = format!(
                "host={first_dir},{second_dir} port={first},{second} user={} dbname=postgres \
                 target_session_attrs={attr}",
                primary.superuser()
            );
            let args = ["--debug", "-n", "-t", "1", "-f", &script.path, &target];
            let seen = |program: Program| {
                let out = run(program, &args, &[]);
                let chosen = common::line(&common::stdout(&out), "standby ").map(str::to_owned);
                let mut shown: Vec<String> =
                    messages(&out, program).lines().map(str::to_owned).collect();
                shown.dedup_by(|a, b| a == b && a.ends_with(" receiving"));
                (out.status.code(), chosen, shown)
            };
            let ours = seen(Program::Pgbolt);
            assert_eq!(ours, seen(Program::Pgbench), "{target}");
            outcomes.insert((ours.0, ours.1));
        }
    }
    // Both servers were chosen somewhere, and some lists had none to offer.
    let standby_t = (Some(0), Some("standby t".to_owned()));
    let standby_f = (Some(0), Some("standby f".to_owned()));
    assert!(outcomes.contains(&standby_t) && outcomes.contains(&standby_f));
    assert!(outcomes.contains(&(Some(1), None)), "{outcomes:?}");

    // load_balance_hosts=random (libpq 16): with a new connection per
    // transaction, both servers get some of 30, from both programs.
    let target = format!(
        "host={},{} port={},{} user={} dbname=postgres load_balance_hosts=random",
        p.0,
        s.0,
        p.1,
        s.1,
        primary.superuser()
    );
    let args = ["-C", "-n", "-t", "30", "-f", &script.path, &target];
    for program in [Program::Pgbench, Program::Pgbolt] {
        let out = run(program, &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let text = common::stdout(&out);
        let count = |which: &str| text.lines().filter(|l| *l == which).count();
        let (on_standby, on_primary) = (count("standby t"), count("standby f"));
        assert_eq!(on_standby + on_primary, 30, "{text}");
        assert!(
            on_standby > 0 && on_primary > 0,
            "{on_standby} {on_primary}"
        );
    }
    drop(standby);
}

/// `connect_timeout` against a server that never answers: the attempt is
/// given up with libpq's words and the next host of the list is tried.
#[test]
fn connect_timeout_gives_up_on_a_silent_host() {
    let db = database("silent_host");
    let hole = Blackhole::new();
    let srv = server();
    let dir = srv.socket_dir().display().to_string();
    let user = format!("user={} dbname={db}", srv.superuser());
    let cases = [
        (
            format!(
                "host=127.0.0.1,{dir} port={},{} {user} connect_timeout=1",
                hole.port,
                srv.port()
            ),
            0,
        ),
        (format!("host=127.0.0.1 port={} {user}", hole.port), 1),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, status) in &cases {
        let args = ["--debug", "-n", "-t", "1", "-f", &script.path, target];
        let env = [("PGCONNECT_TIMEOUT", "2")];
        let ended = |program: Program| {
            let out = run(program, &args, &env);
            assert_eq!(out.status.code(), Some(*status), "{program:?} {target}");
            let text = messages(&out, program);
            match common::line(&text, "PROG: pghost: ") {
                Some(line) => line.to_owned(),
                None => text,
            }
        };
        // Both wait out the same timeout: run them side by side.
        let (ours, theirs) = std::thread::scope(|scope| {
            let theirs = scope.spawn(|| ended(Program::Pgbench));
            let ours = ended(Program::Pgbolt);
            (ours, theirs.join().expect("pgbench runs"))
        });
        assert_eq!(ours, theirs, "{target}");
        let want = if *status == 0 {
            dir.as_str()
        } else {
            "timeout expired"
        };
        assert!(ours.contains(want), "{ours}");
    }
}

/// `hostaddr` takes what the system resolver takes as a numeric address
/// (`127.1`, `0x7f.0.0.1`, `2130706433`), refuses the rest in its words
/// when that host's turn comes (the next host is tried), and names the
/// server by the address as written.
#[test]
fn hostaddr_is_read_and_named_as_written() {
    let db = database("hostaddr_forms");
    let srv = server();
    let user = format!("user={} dbname={db}", srv.superuser());
    let port = srv.port();
    let cases = [
        (format!("hostaddr=127.1 port={port} {user}"), 0),
        (format!("hostaddr=0x7f.0.0.1 port={port} {user}"), 0),
        (
            format!("hostaddr=2130706433 host=localhost port={port} {user}"),
            0,
        ),
        (format!("hostaddr=0x7f.1 port=1 {user}"), 1),
        (format!("hostaddr='127.0.0.1 ' port={port} {user}"), 1),
        (format!("hostaddr=[::1] port={port} {user}"), 1),
        // A bad one is read when its host's turn comes, and skips it.
        (
            format!("host=a,b hostaddr=bogus,127.0.0.1 port={port} {user}"),
            0,
        ),
        (
            format!("host=a,b hostaddr=127.0.0.1,bogus port={port} {user}"),
            0,
        ),
        (format!("hostaddr=x,0x7f.1,y port=1,1,{port} {user}"), 1),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, status) in &cases {
        let args = ["--debug", "-n", "-t", "1", "-f", &script.path, target];
        let ended = |program: Program| {
            let out = run(program, &args, &[]);
            assert_eq!(out.status.code(), Some(*status), "{program:?} {target}");
            let text = messages(&out, program);
            match common::line(&text, "PROG: pghost: ") {
                Some(line) => line.to_owned(),
                None => text,
            }
        };
        let ours = ended(Program::Pgbolt);
        assert_eq!(ours, ended(Program::Pgbench), "{target}");
    }
}

/// A `connect_timeout` that is not an integer is read as libpq reads it:
/// once the first attempt is under way, after any that failed at once, so
/// the error names that attempt; when every host fails at once it is never
/// read.
#[test]
fn a_bad_connect_timeout_fails_the_first_attempt_under_way() {
    let db = database("bad_timeout");
    let srv = server();
    let (dir, port) = (srv.socket_dir().display().to_string(), srv.port());
    let user = format!("user={} dbname={db}", srv.superuser());
    let socket = socket_conninfo(&db);
    // (connection string, environment, whether the value gets read)
    let cases: [(String, Env, bool); 6] = [
        (format!("{socket} connect_timeout=x"), vec![], true),
        (socket.clone(), vec![("PGCONNECT_TIMEOUT", "1.5")], true),
        (
            format!("host=127.0.0.1 port={port} {user} connect_timeout=''"),
            vec![],
            true,
        ),
        (
            format!("hostaddr=127.1 port={port} {user} connect_timeout=2s"),
            vec![],
            true,
        ),
        (
            format!("host={dir}/missing,{dir} port={port} {user} connect_timeout=x"),
            vec![],
            true,
        ),
        (
            format!("host={dir}/missing port={port} {user} connect_timeout=x"),
            vec![],
            false,
        ),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, env, read) in &cases {
        let args = ["-n", "-t", "1", "-f", &script.path, target];
        let ended = |program: Program| {
            let out = run(program, &args, env);
            assert_eq!(out.status.code(), Some(1), "{program:?} {target}");
            messages(&out, program)
        };
        let ours = ended(Program::Pgbolt);
        assert_eq!(ours, ended(Program::Pgbench), "{target} {env:?}");
        let named = ours.contains("for connection option \"connect_timeout\"");
        assert_eq!(named, *read, "{ours}");
    }
}

/// A host's port is read when that host's turn comes, as libpq reads it:
/// out of range, the host is skipped (`invalid port number`); not an
/// integer, the connection ends there; a host never reached is never read.
#[test]
fn ports_are_read_as_each_hosts_turn_comes() {
    let db = database("port_turns");
    let srv = server();
    let (dir, port) = (srv.socket_dir().display().to_string(), srv.port());
    let user = format!("user={} dbname={db}", srv.superuser());
    let cases = [
        (format!("host={dir},{dir} port=99999,{port} {user}"), 0),
        (format!("host={dir},{dir} port={port},abc {user}"), 0),
        (format!("host=127.0.0.1,{dir} port=0,{port} {user}"), 0),
        (format!("host={dir},{dir} port=abc,{port} {user}"), 1),
        (
            format!("host={dir}/missing,{dir} port={port},abc {user}"),
            1,
        ),
        (
            format!("host={dir}/missing,{dir} port={port},99999 {user}"),
            1,
        ),
        (format!("host={dir},{dir} port=-1,65536 {user}"), 1),
    ];
    let script = common::script_file("one.sql", "SELECT 1;\n");
    for (target, status) in &cases {
        let args = ["-n", "-t", "1", "-f", &script.path, target];
        let ended = |program: Program| {
            let out = run(program, &args, &[]);
            assert_eq!(out.status.code(), Some(*status), "{program:?} {target}");
            messages(&out, program)
        };
        let ours = ended(Program::Pgbolt);
        assert_eq!(ours, ended(Program::Pgbench), "{target}");
    }
}

/// Regression: a failed TCP attempt named the port as a number (`port
/// 1`) where libpq names it as written (`port 00001`).
#[test]
fn a_failed_attempt_names_the_port_as_written() {
    for port in ["00001", "1"] {
        let args = ["-n", "-t", "1", "-h", "127.0.0.1", "-p", port, "postgres"];
        let ours = run(Program::Pgbolt, &args, &[]);
        let theirs = run(Program::Pgbench, &args, &[]);
        assert_eq!(
            messages(&ours, Program::Pgbolt),
            messages(&theirs, Program::Pgbench),
            "-p {port}"
        );
        assert!(
            messages(&ours, Program::Pgbolt).contains(&format!("port {port} failed")),
            "-p {port}"
        );
    }
}
