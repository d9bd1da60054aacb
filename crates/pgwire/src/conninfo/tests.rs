//! Resolution tests: precedence of the sources, host lists, service files
//! and the password file. Files live in temporary directories; the process
//! environment is never read.

use std::fs;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

fn env() -> Env {
    Env::empty("osuser")
        .with_socket_dirs(["/nonexistent/socketdir"])
        .with_sysconfdir("/nonexistent/sysconf")
}

fn resolve_str(conninfo: &str, env: &Env) -> Result<Config, Error> {
    resolve(&parse(conninfo)?, env)
}

fn ok(conninfo: &str, env: &Env) -> Config {
    resolve_str(conninfo, env).unwrap_or_else(|e| panic!("{conninfo:?}: {e}"))
}

fn err(conninfo: &str, env: &Env) -> String {
    match resolve_str(conninfo, env) {
        Ok(c) => panic!("{conninfo:?} resolved to {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn unix(dir: &str, port: u16) -> Host {
    Host {
        kind: HostKind::Unix(PathBuf::from(dir)),
        port,
    }
}

fn tcp(name: Option<&str>, addr: Option<IpAddr>, port: u16) -> Host {
    Host {
        kind: HostKind::Tcp {
            name: name.map(str::to_owned),
            addr,
        },
        port,
    }
}

#[test]
fn defaults_follow_libpq() {
    let c = ok("", &env());
    assert_eq!(c.hosts, vec![unix("/nonexistent/socketdir", 5432)]);
    assert_eq!(c.user, "osuser");
    assert_eq!(c.dbname, "osuser");
    assert_eq!(c.password, None);
    assert_eq!(c.passfile, None);
    assert_eq!(c.sslmode, SslMode::Prefer);
    assert_eq!(c.sslnegotiation, SslNegotiation::Postgres);
    assert_eq!(c.channel_binding, ChannelBinding::Prefer);
    assert_eq!(c.target_session_attrs, TargetSessionAttrs::Any);
    assert_eq!(c.sslcertmode, SslCertMode::Allow);
    assert_eq!(c.ssl_min_protocol_version, Some(SslProtocolVersion::Tls1_2));
    assert!(c.sslsni && c.tcp == TcpOptions::default());
    assert_eq!(c.options, None);
    assert_eq!(c.connect_timeout, None);
    assert_eq!(
        c.default_socket_dir,
        PathBuf::from("/nonexistent/socketdir")
    );
}

#[test]
fn dbname_defaults_to_the_resolved_user() {
    let e = env().with_var("PGUSER", "envuser");
    assert_eq!(ok("", &e).dbname, "envuser");
    assert_eq!(ok("user=explicit", &e).dbname, "explicit");
    let e = e.with_var("PGDATABASE", "envdb");
    assert_eq!(ok("user=explicit", &e).dbname, "envdb");
}

#[test]
fn explicit_beats_environment_beats_default() {
    let e = env()
        .with_var("PGHOST", "envhost")
        .with_var("PGPORT", "6000")
        .with_var("PGUSER", "envuser")
        .with_var("PGDATABASE", "envdb")
        .with_var("PGPASSWORD", "envpw")
        .with_var("PGAPPNAME", "envapp")
        .with_var("PGOPTIONS", "-c geqo=off")
        .with_var("PGCONNECT_TIMEOUT", "7")
        .with_var("PGSSLMODE", "disable")
        .with_var("PGTARGETSESSIONATTRS", "read-write")
        .with_var("PGCHANNELBINDING", "disable")
        .with_var("PGSSLNEGOTIATION", "postgres")
        .with_var("PGSSLROOTCERT", "/env/root.crt")
        .with_var("PGSSLCERT", "/env/c.crt")
        .with_var("PGSSLKEY", "/env/c.key")
        .with_var("PGSSLCRL", "/env/crl.pem")
        .with_var("PGSSLSNI", "0")
        .with_var("PGREQUIREAUTH", "scram-sha-256")
        .with_var("PGPASSFILE", "/env/pgpass");
    let c = ok("", &e);
    assert_eq!(c.hosts, vec![tcp(Some("envhost"), None, 6000)]);
    assert_eq!((c.user.as_str(), c.dbname.as_str()), ("envuser", "envdb"));
    assert_eq!(c.password.as_ref().map(Secret::expose), Some(&b"envpw"[..]));
    assert_eq!(c.application_name.as_deref(), Some("envapp"));
    assert_eq!(c.options.as_deref(), Some("-c geqo=off"));
    assert_eq!(c.connect_timeout, Some(Duration::from_secs(7)));
    assert_eq!(c.sslmode, SslMode::Disable);
    assert_eq!(c.target_session_attrs, TargetSessionAttrs::ReadWrite);
    assert_eq!(c.channel_binding, ChannelBinding::Disable);
    assert_eq!(c.sslrootcert, Some(PathBuf::from("/env/root.crt")));
    assert_eq!(c.sslcert, Some(PathBuf::from("/env/c.crt")));
    assert_eq!(c.sslkey, Some(PathBuf::from("/env/c.key")));
    assert_eq!(c.sslcrl, Some(PathBuf::from("/env/crl.pem")));
    assert!(!c.sslsni);
    assert_eq!(c.require_auth.as_deref(), Some("scram-sha-256"));
    assert_eq!(c.passfile, Some(PathBuf::from("/env/pgpass")));

    let c = ok(
        "host=h port=1 user=u dbname=d password=p application_name=a sslmode=require",
        &e,
    );
    assert_eq!(c.hosts, vec![tcp(Some("h"), None, 1)]);
    assert_eq!((c.user.as_str(), c.dbname.as_str()), ("u", "d"));
    assert_eq!(c.password.as_ref().map(Secret::expose), Some(&b"p"[..]));
    assert_eq!(c.application_name.as_deref(), Some("a"));
    assert_eq!(c.sslmode, SslMode::Require);
}

#[test]
fn explicit_empty_value_blocks_the_environment() {
    // libpq: an empty value counts as set, then means "use the default".
    let e = env()
        .with_var("PGHOST", "envhost")
        .with_var("PGUSER", "envuser");
    let c = ok("host='' user=''", &e);
    assert_eq!(c.hosts, vec![unix("/nonexistent/socketdir", 5432)]);
    assert_eq!(c.user, "osuser");
}

#[test]
fn pgbench_style_params_and_fallback_application_name() {
    let e = env().with_var("PGHOST", "envhost");
    let explicit = from_params(
        [
            ("host", "cli"),
            ("port", "5433"),
            ("user", "bob"),
            ("dbname", "postgresql:///real?application_name=mine"),
            ("fallback_application_name", "pgbolt"),
        ],
        true,
    )
    .expect("valid");
    let c = resolve(&explicit, &e).expect("valid");
    assert_eq!(c.hosts, vec![tcp(Some("cli"), None, 5433)]);
    assert_eq!(c.dbname, "real");
    assert_eq!(c.effective_application_name(), Some("mine"));
    let c = ok("fallback_application_name=pgbolt", &e);
    assert_eq!(c.effective_application_name(), Some("pgbolt"));
    // An empty name hides the fallback, from the string or the environment.
    let c = ok("application_name='' fallback_application_name=pgbolt", &e);
    assert_eq!(c.effective_application_name(), Some(""));
    let c = ok(
        "fallback_application_name=pgbolt",
        &e.with_var("PGAPPNAME", ""),
    );
    assert_eq!(c.effective_application_name(), Some(""));
}

#[test]
fn bad_ports_wait_for_their_hosts_turn() {
    let e = env();
    let c = ok("host=a,b port=99999,abc", &e);
    assert_eq!((c.hosts[0].port, c.hosts[1].port), (0, 0));
    let said = |text: &str| port(text).map_err(|e| e.to_string());
    assert_eq!(said("99999"), Err("invalid port number: \"99999\"".into()));
    assert_eq!(said("0"), Err("invalid port number: \"0\"".into()));
    assert_eq!(
        said("abc"),
        Err("invalid integer value \"abc\" for connection option \"port\"".into())
    );
    assert_eq!((said(""), said(" 5433 ")), (Ok(5432), Ok(5433)));
}

#[test]
fn hostaddr_takes_every_numeric_form_the_resolver_takes() {
    let e = env();
    let v4 = |s: &str| match &ok(s, &e).hosts[0].kind {
        HostKind::Tcp { addr, .. } => *addr,
        other => panic!("{other:?}"),
    };
    let local = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    for form in ["127.0.0.1", "127.1", "0x7f.1", "2130706433", "0177.0.0.1"] {
        assert_eq!(v4(&format!("hostaddr={form}")), local, "{form}");
    }
    let c = ok("hostaddr=127.1", &e);
    assert_eq!(c.host_spellings[0].hostaddr, "127.1");
    // The rest is refused in the resolver's words when the host's turn
    // comes; until then the host has no address.
    assert_eq!(v4("hostaddr=x"), None);
    let said = |text: &str| host_address(text).map_err(|e| e.to_string());
    let cases = [
        ("x", "could not parse network address \"x\": Name or service not known"),
        ("127.0.0.1 ", "could not parse network address \"127.0.0.1 \": Name or service not known"),
        ("[::1]", "could not parse network address \"[::1]\": Name or service not known"),
        ("::1%1", "could not parse network address \"::1%1\": IPv6 zone identifiers are not supported by pgbolt"),
    ];
    for (text, want) in cases {
        assert_eq!(said(text), Err(want.to_owned()), "{text:?}");
    }
}

#[test]
fn host_lists() {
    let e = env();
    let v4 = |a, b, c, d| Some(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
    let cases: Vec<(&str, Vec<Host>)> = vec![
        (
            "host=a,b port=5433",
            vec![tcp(Some("a"), None, 5433), tcp(Some("b"), None, 5433)],
        ),
        (
            "host=a,b port=1,2",
            vec![tcp(Some("a"), None, 1), tcp(Some("b"), None, 2)],
        ),
        (
            "host=a,,/sock port=1,,3",
            vec![
                tcp(Some("a"), None, 1),
                unix("/nonexistent/socketdir", 5432),
                unix("/sock", 3),
            ],
        ),
        ("host=@abstract", vec![unix("@abstract", 5432)]),
        (
            "hostaddr=127.0.0.1,::1",
            vec![
                tcp(None, v4(127, 0, 0, 1), 5432),
                tcp(None, "::1".parse().ok(), 5432),
            ],
        ),
        (
            "host=db.example hostaddr=10.0.0.1",
            vec![tcp(Some("db.example"), v4(10, 0, 0, 1), 5432)],
        ),
        (
            "host=a,b hostaddr=,10.0.0.2",
            vec![
                tcp(Some("a"), None, 5432),
                tcp(Some("b"), v4(10, 0, 0, 2), 5432),
            ],
        ),
        (
            "postgresql://%2Fvar%2Frun%2Fpostgresql:5444/db",
            vec![unix("/var/run/postgresql", 5444)],
        ),
        ("postgresql:///db?host=/dir", vec![unix("/dir", 5432)]),
        (
            "postgresql://[::1]:5433,h2/db",
            vec![tcp(Some("::1"), None, 5433), tcp(Some("h2"), None, 5432)],
        ),
        ("port=' 42 '", vec![unix("/nonexistent/socketdir", 42)]),
    ];
    for (conninfo, want) in cases {
        assert_eq!(ok(conninfo, &e).hosts, want, "{conninfo:?}");
    }
}

#[test]
fn uri_without_ports_ignores_pgport() {
    // libpq stores port "," for two hosts without ports, which blocks PGPORT.
    let e = env().with_var("PGPORT", "6000");
    let c = ok("postgresql://h1,h2/db", &e);
    assert_eq!(
        c.hosts,
        vec![tcp(Some("h1"), None, 5432), tcp(Some("h2"), None, 5432)]
    );
    let c = ok("postgresql://h1/db", &e);
    assert_eq!(c.hosts, vec![tcp(Some("h1"), None, 6000)]);
}

#[test]
fn invalid_values_are_reported_in_libpqs_words() {
    let e = env();
    let cases = [
        ("host=a,b hostaddr=1.2.3.4", "could not match 2 host names to 1 hostaddr values"),
        ("host=a hostaddr=1.2.3.4,::1", "could not match 1 host names to 2 hostaddr values"),
        ("host=a,b,c port=1,2", "could not match 2 port numbers to 3 hosts"),
        ("port=1,2", "could not match 2 port numbers to 1 hosts"),
        ("sslmode=x", "invalid sslmode value: \"x\""),
        ("sslnegotiation=x", "invalid sslnegotiation value: \"x\""),
        ("channel_binding=maybe", "invalid channel_binding value: \"maybe\""),
        ("target_session_attrs=x", "invalid target_session_attrs value: \"x\""),
        ("sslcertmode=x", "invalid sslcertmode value: \"x\""),
        ("gssencmode=x", "invalid gssencmode value: \"x\""),
        ("gssencmode=require", "gssencmode value \"require\" invalid when GSSAPI support is not compiled in"),
        ("load_balance_hosts=x", "invalid load_balance_hosts value: \"x\""),
        ("ssl_min_protocol_version=TLSv9", "invalid ssl_min_protocol_version value: \"TLSv9\""),
        ("ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2", "invalid SSL protocol version range"),
        ("require_auth=md5,!password", "negative require_auth method \"!password\" cannot be mixed with non-negative methods"),
        ("sslrootcert=system sslmode=require", "weak sslmode \"require\" may not be used with sslrootcert=system (use \"verify-full\")"),
        ("sslnegotiation=direct", "weak sslmode \"prefer\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")"),
        ("min_protocol_version=4", "invalid min_protocol_version value: \"4\""),
    ];
    for (conninfo, want) in cases {
        assert_eq!(err(conninfo, &e), want, "{conninfo:?}");
    }
}

#[test]
fn unsupported_options_are_rejected_by_name() {
    let e = env();
    let cases = [
        ("krbsrvname=postgres", "connection option \"krbsrvname\" is not supported by pgbolt: GSSAPI and Kerberos are not supported"),
        ("gsslib=gssapi", "connection option \"gsslib\" is not supported by pgbolt: GSSAPI and Kerberos are not supported"),
        ("gssdelegation=1", "gssdelegation value \"1\" is not supported by pgbolt: GSSAPI and Kerberos are not supported"),
        ("sslpassword=x", "connection option \"sslpassword\" is not supported by pgbolt: encrypted client keys are not supported"),
        ("replication=database", "connection option \"replication\" is not supported by pgbolt: replication connections are not supported"),
        ("replication=true", "connection option \"replication\" is not supported by pgbolt: replication connections are not supported"),
        ("replication=o", "connection option \"replication\" is not supported by pgbolt: replication connections are not supported"),
        ("replication=' 0'", "connection option \"replication\" is not supported by pgbolt: replication connections are not supported"),
        ("min_protocol_version=3.2", "min_protocol_version value \"3.2\" is not supported by pgbolt: only protocol version 3.0 is spoken"),
        ("oauth_issuer=https://x", "connection option \"oauth_issuer\" is not supported by pgbolt: OAuth authentication is not supported"),
    ];
    for (conninfo, want) in cases {
        assert_eq!(err(conninfo, &e), want, "{conninfo:?}");
    }
    assert_eq!(
        err("", &env().with_var("PGKRBSRVNAME", "x")),
        "connection option \"krbsrvname\" is not supported by pgbolt: GSSAPI and Kerberos are not supported"
    );
    // Settings that change nothing for a client without GSSAPI are accepted.
    ok(
        "gssencmode=prefer gssdelegation=0 krbsrvname='' sslcompression=1 replication=''",
        &e,
    );
    ok("max_protocol_version=latest min_protocol_version=3.0", &e);
    assert!(ok("load_balance_hosts=random", &e).load_balance_random);
    assert!(!ok("load_balance_hosts=disable", &e).load_balance_random);
    // `auto` is what libpq picks in the "C" locale of pgbench and pgbolt.
    let encoding = |s: &str| ok(s, &e).client_encoding;
    assert_eq!(
        encoding("client_encoding=auto").as_deref(),
        Some("SQL_ASCII")
    );
    assert_eq!(encoding("client_encoding=AUTO").as_deref(), Some("AUTO"));
    // Values the server reads as false ask for an ordinary session.
    for off in ["0", "off", "OF", "false", "f", "No", "n"] {
        ok(&format!("replication={off}"), &e);
    }
}

#[test]
fn numeric_options() {
    let e = env();
    let timeout = |s: &str| ok(s, &e).connect_timeout;
    assert_eq!(timeout("connect_timeout=1"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("connect_timeout=10"), Some(Duration::from_secs(10)));
    assert_eq!(timeout("connect_timeout=0"), None);
    assert_eq!(timeout("connect_timeout=-5"), None);
    // Not an integer: kept for the first attempt to report.
    let c = ok("connect_timeout=x", &e);
    assert_eq!(c.connect_timeout, None);
    assert_eq!(c.invalid_connect_timeout.as_deref(), Some("x"));
    assert_eq!(
        ok("connect_timeout=''", &e)
            .invalid_connect_timeout
            .as_deref(),
        Some("")
    );
    // TCP options are kept as written: libpq reads them as a TCP
    // connection opens, so a bad one is not an error here.
    let c = ok(
        "keepalives=0 keepalives_idle=soon tcp_user_timeout=1500",
        &e,
    );
    assert_eq!(c.tcp.keepalives.as_deref(), Some("0"));
    assert_eq!(c.tcp.keepalives_idle.as_deref(), Some("soon"));
    assert_eq!(c.tcp.tcp_user_timeout.as_deref(), Some("1500"));
}

#[test]
fn ssl_options() {
    let e = env();
    // sslrootcert=system raises the default sslmode to verify-full ...
    let c = ok("sslrootcert=system", &e);
    assert_eq!(c.sslmode, SslMode::VerifyFull);
    assert!(c.uses_system_root_certs());
    // ... but not one given in the environment.
    let err_text = err(
        "sslrootcert=system",
        &env().with_var("PGSSLMODE", "require"),
    );
    assert!(
        err_text.starts_with("weak sslmode \"require\""),
        "{err_text}"
    );
    // PGREQUIRESSL=1 means require, below PGSSLMODE.
    assert_eq!(
        ok("", &env().with_var("PGREQUIRESSL", "1")).sslmode,
        SslMode::Require
    );
    let both = env()
        .with_var("PGREQUIRESSL", "1")
        .with_var("PGSSLMODE", "allow");
    assert_eq!(ok("", &both).sslmode, SslMode::Allow);
    let c = ok(
        "sslnegotiation=direct sslmode=verify-ca sslsni=yes sslcertmode=require",
        &e,
    );
    assert_eq!(c.sslnegotiation, SslNegotiation::Direct);
    assert!(!c.sslsni, "only a leading '1' turns sslsni on");
    assert_eq!(c.sslcertmode, SslCertMode::Require);
    let c = ok(
        "ssl_min_protocol_version=tlsv1.3 ssl_max_protocol_version=''",
        &e,
    );
    assert_eq!(c.ssl_min_protocol_version, Some(SslProtocolVersion::Tls1_3));
    assert_eq!(c.ssl_max_protocol_version, None);
}

#[test]
fn require_auth_is_exposed_parsed() {
    let c = ok("require_auth=!md5", &env());
    let req = c.auth_requirement().expect("validated");
    assert!(!req.allows(AuthMethod::Md5) && req.allows(AuthMethod::ScramSha256));
    let c = ok("", &env());
    assert!(c
        .auth_requirement()
        .expect("none")
        .allows_no_authentication());
}

#[test]
fn environment_startup_parameters() {
    let e = env()
        .with_var("PGTZ", "UTC")
        .with_var("PGDATESTYLE", "Default")
        .with_var("PGGEQO", "off");
    let mut got = ok("", &e).environment_parameters;
    got.sort();
    assert_eq!(
        got,
        vec![("geqo", "off".to_owned()), ("timezone", "UTC".to_owned())]
    );
}

#[test]
fn default_passfile_is_in_the_home_directory() {
    let e = env().with_var("HOME", "/home/x");
    assert_eq!(ok("", &e).passfile, Some(PathBuf::from("/home/x/.pgpass")));
    assert_eq!(ok("passfile=/p", &e).passfile, Some(PathBuf::from("/p")));
}

#[test]
fn debug_of_config_and_options_hides_passwords() {
    let conninfo = "postgresql://u:topsecret@h/db?sslpassword=alsosecret";
    let shown = format!("{:?}", parse(conninfo).expect("valid"));
    assert!(
        !shown.contains("topsecret") && !shown.contains("alsosecret"),
        "{shown}"
    );
    let c = ok("password=topsecret", &env());
    let shown = format!("{c:?}");
    assert!(!shown.contains("topsecret"), "{shown}");
}

// ---- service files ----

fn write(path: &Path, text: &str) {
    fs::write(path, text).expect("write test file");
}

#[test]
fn service_fills_gaps_below_explicit_and_above_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("services");
    write(
        &file,
        "# comment\n[other]\nhost=wrong\n\n  [mydb]  \nhost=svchost\nport=5555\n  user=svcuser  \ndbname=svcdb\n[after]\nhost=wrong\n",
    );
    let e = env()
        .with_var("PGSERVICEFILE", file.to_str().expect("utf-8 path"))
        .with_var("PGUSER", "envuser")
        .with_var("PGPORT", "6000");
    let c = ok("service=mydb port=7000", &e);
    assert_eq!(c.hosts, vec![tcp(Some("svchost"), None, 7000)]);
    assert_eq!(c.user, "svcuser");
    assert_eq!(c.dbname, "svcdb");
    // PGSERVICE names the service when the options do not.
    let c = ok("", &e.clone().with_var("PGSERVICE", "mydb"));
    assert_eq!(c.hosts, vec![tcp(Some("svchost"), None, 5555)]);
    // An explicit empty value still blocks the service file.
    let c = ok("service=mydb host=''", &e);
    assert_eq!(c.hosts, vec![unix("/nonexistent/socketdir", 5555)]);
}

#[test]
fn user_service_file_wins_over_system_file() {
    let home = tempfile::tempdir().expect("tempdir");
    let sys = tempfile::tempdir().expect("tempdir");
    write(
        &home.path().join(".pg_service.conf"),
        "[a]\nhost=userfile\n",
    );
    write(
        &sys.path().join("pg_service.conf"),
        "[a]\nhost=sysfile\n[b]\nhost=sysonly\n",
    );
    let e = env()
        .with_var("HOME", home.path().to_str().expect("utf-8"))
        .with_var("PGSYSCONFDIR", sys.path().to_str().expect("utf-8"));
    assert_eq!(
        ok("service=a", &e).hosts,
        vec![tcp(Some("userfile"), None, 5432)]
    );
    assert_eq!(
        ok("service=b", &e).hosts,
        vec![tcp(Some("sysonly"), None, 5432)]
    );
    assert_eq!(
        err("service=c", &e),
        "definition of service \"c\" not found"
    );
    // The built-in system directory is used when PGSYSCONFDIR is unset.
    let e = env().with_sysconfdir(sys.path());
    assert_eq!(
        ok("service=b", &e).hosts,
        vec![tcp(Some("sysonly"), None, 5432)]
    );
}

#[test]
fn service_file_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("s.conf");
    let shown = file.display().to_string();
    let e = env().with_var("PGSERVICEFILE", &shown);
    let cases = [
        (
            "[s]\nhost\n",
            format!("syntax error in service file \"{shown}\", line 2"),
        ),
        (
            "[s]\nhost = x\n",
            format!("syntax error in service file \"{shown}\", line 2"),
        ),
        (
            "[s]\n\n# c\ncolour=blue\n",
            format!("syntax error in service file \"{shown}\", line 4"),
        ),
        (
            "[s]\nservice=t\n",
            format!(
                "nested service specifications not supported in service file \"{shown}\", line 2"
            ),
        ),
        (
            &format!("[s]\nhost={}\n", "x".repeat(1100)),
            format!("line 2 too long in service file \"{shown}\""),
        ),
    ];
    for (text, want) in cases {
        write(&file, text);
        assert_eq!(err("service=s", &e), want, "{text:?}");
    }
    // libpq's limit, checked against psql 15: 1021 characters fit, 1022 do not.
    write(&file, &format!("[s]\nhost={}\n", "x".repeat(1016)));
    assert_eq!(ok("service=s", &e).hosts.len(), 1);
    write(&file, &format!("[s]\nhost={}\n", "x".repeat(1017)));
    assert_eq!(
        err("service=s", &e),
        format!("line 2 too long in service file \"{shown}\"")
    );
    // Lines outside the wanted section are not checked.
    write(&file, "junk\n[t]\nnot a setting\n[s]\nport=1\n");
    assert_eq!(ok("service=s", &e).hosts[0].port, 1);
    let missing = env().with_var("PGSERVICEFILE", "/nonexistent/file");
    assert_eq!(
        err("service=s", &missing),
        "service file \"/nonexistent/file\" not found"
    );
}

/// A directory given as the service file opens and reads as empty for
/// libpq, so the service is looked for in the system file next.
#[test]
fn a_directory_as_service_file_holds_no_service() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sys = tempfile::tempdir().expect("tempdir");
    write(&sys.path().join("pg_service.conf"), "[s]\nport=7\n");
    let e = env()
        .with_var("PGSERVICEFILE", dir.path().to_str().expect("utf-8"))
        .with_sysconfdir(sys.path());
    assert_eq!(ok("service=s", &e).hosts[0].port, 7);
    assert_eq!(
        err("service=t", &e),
        "definition of service \"t\" not found"
    );
}

// ---- the password file ----

fn pgpass(dir: &Path, text: &str, mode: u32) -> PathBuf {
    let path = dir.join("pgpass");
    write(&path, text);
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

fn config_with_passfile(passfile: &Path, user: &str, dbname: &str) -> Config {
    let mut c = Config::new(Vec::new(), user, dbname);
    c.passfile = Some(passfile.to_path_buf());
    c.default_socket_dir = PathBuf::from("/var/run/postgresql");
    c
}

fn lookup(c: &Config, host: &Host) -> (Option<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let found = c.password_for(host, &mut warnings);
    (
        found.map(|s| String::from_utf8_lossy(s.expose()).into_owned()),
        warnings,
    )
}

#[test]
fn pgpass_matching() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pgpass(
        dir.path(),
        "# comment line\n\
         db.example:5432:app:alice:first\n\
         db.example:5432:app:alice:second\n\
         *:5433:*:alice:anyhost\n\
         localhost:5432:app:bob:local\n\
         /tmp:5432:app:bob:tmpdir\n\
         \\:\\:1:5432:*:*:v6\n\
         odd\\\\name:*:*:*:back\\\\sl\\:ash:ignored\n\
         10.0.0.1:*:*:carol:byaddr\r\n\
         *:*:*:*:fallback\n",
        0o600,
    );
    let c = |user: &str| config_with_passfile(&file, user, "app");
    let cases = [
        (c("alice"), tcp(Some("db.example"), None, 5432), "first"),
        (c("alice"), tcp(Some("other"), None, 5433), "anyhost"),
        (c("bob"), unix("/var/run/postgresql", 5432), "local"),
        (c("bob"), tcp(Some("localhost"), None, 5432), "local"),
        (c("bob"), unix("/tmp", 5432), "tmpdir"),
        (c("bob"), unix("/var/run/postgresql/", 5432), "fallback"),
        (c("x"), tcp(Some("::1"), None, 5432), "v6"),
        (c("x"), tcp(Some("odd\\name"), None, 1), "back\\sl:ash"),
        (
            c("carol"),
            tcp(None, "10.0.0.1".parse().ok(), 5432),
            "byaddr",
        ),
        (
            c("carol"),
            tcp(Some("named"), "10.0.0.1".parse().ok(), 5432),
            "fallback",
        ),
    ];
    for (config, host, want) in cases {
        assert_eq!(
            lookup(&config, &host),
            (Some(want.to_owned()), vec![]),
            "{host:?}"
        );
    }
}

#[test]
fn pgpass_no_match_and_explicit_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pgpass(dir.path(), "h:5432:db:u:pw\n#*:*:*:*:commented\n", 0o600);
    let host = tcp(Some("h"), None, 5432);
    let c = config_with_passfile(&file, "u", "other");
    assert_eq!(lookup(&c, &host), (None, vec![]));
    let mut c = config_with_passfile(&file, "u", "db");
    assert_eq!(lookup(&c, &host).0.as_deref(), Some("pw"));
    c.password = Some(Secret::new("given"));
    assert_eq!(lookup(&c, &host).0.as_deref(), Some("given"));
    let c = config_with_passfile(&dir.path().join("missing"), "u", "db");
    assert_eq!(lookup(&c, &host), (None, vec![]));
    // An empty password on the first matching line means no password (the
    // server's request then fails with "no password supplied"); later
    // lines are not consulted.
    let file = pgpass(dir.path(), "h:5432:db:u:\n*:*:*:*:later\n", 0o600);
    let c = config_with_passfile(&file, "u", "db");
    assert_eq!(lookup(&c, &host), (None, vec![]));
}

#[test]
fn pgpass_refuses_unsafe_files_with_libpqs_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = tcp(Some("h"), None, 5432);
    for mode in [0o640, 0o604, 0o660] {
        let file = pgpass(dir.path(), "*:*:*:*:pw\n", mode);
        let c = config_with_passfile(&file, "u", "db");
        let want = format!(
            "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            file.display()
        );
        assert_eq!(lookup(&c, &host), (None, vec![want]), "{mode:o}");
    }
    let file = pgpass(dir.path(), "*:*:*:*:pw\n", 0o400);
    assert_eq!(
        lookup(&config_with_passfile(&file, "u", "db"), &host)
            .0
            .as_deref(),
        Some("pw")
    );
    let c = config_with_passfile(dir.path(), "u", "db");
    let want = format!(
        "WARNING: password file \"{}\" is not a plain file",
        dir.path().display()
    );
    assert_eq!(lookup(&c, &host), (None, vec![want]));
}

#[test]
fn pgpass_through_resolution_uses_default_socket_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pgpass(dir.path(), "localhost:5432:osuser:osuser:sockpw\n", 0o600);
    let sockdir = dir.path().to_str().expect("utf-8").to_owned();
    let e = env()
        .with_socket_dirs([sockdir.as_str()])
        .with_var("PGPASSFILE", file.to_str().expect("utf-8"));
    let c = ok("", &e);
    let mut warnings = Vec::new();
    let pw = c.password_for(&c.hosts[0], &mut warnings);
    assert_eq!(pw.as_ref().map(Secret::expose), Some(&b"sockpw"[..]));
    let c = ok("host=/elsewhere", &e);
    assert_eq!(c.password_for(&c.hosts[0], &mut warnings), None);
    assert!(warnings.is_empty());
}
