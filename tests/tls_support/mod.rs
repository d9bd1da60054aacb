//! The certificates of `tls_diff`, made with the `openssl` command as
//! users make them: two self-signed CAs (`ca`, `other`), server
//! certificates for the host name cases, an intermediate CA `int` signed by
//! `ca` with a server certificate it signed (`via-int`, and `via-int-chain`
//! with the intermediate appended, as a server sends its chain), root files
//! with the intermediate alone and with its root, client certificates and
//! revocation lists.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{self, stderr};

/// The certificates of this test binary, in a directory the server's OS
/// user can read.
pub struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn arg(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
}

/// A key and a certificate `stem.crt` for `cn`, signed by the CA `ca`,
/// with the extensions in `ext` (none: an X.509 version 1 certificate).
fn leaf(dir: &Path, stem: &str, cn: &str, ext: Option<&str>, ca: &str) {
    let (key, csr, crt) = (
        format!("{stem}.key"),
        format!("{stem}.csr"),
        format!("{stem}.crt"),
    );
    let subject = format!("/CN={cn}");
    openssl(
        dir,
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
            &subject,
        ],
    );
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_crt,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "30",
        "-out",
        &crt,
    ];
    let ext_file = format!("{stem}.ext");
    if let Some(ext) = ext {
        std::fs::write(dir.join(&ext_file), format!("{ext}\n")).expect("write extensions");
        args.extend(["-extfile", &ext_file]);
    }
    openssl(dir, &args);
    set_mode(&dir.join(&key), 0o600);
}

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

pub fn chown_to_server(path: &Path) {
    let status = Command::new("chown")
        .args(["postgres", &path.to_string_lossy()])
        .status()
        .expect("chown runs");
    assert!(status.success());
}

pub fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        set_mode(dir.path(), 0o755);
        let d = dir.path();
        for ca in ["ca", "other"] {
            let subject = format!("/CN=pgbolt tls_diff {ca}");
            openssl(
                d,
                &[
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-keyout",
                    &format!("{ca}.key"),
                    "-out",
                    &format!("{ca}.crt"),
                    "-days",
                    "30",
                    "-subj",
                    &subject,
                ],
            );
        }
        let servers = [
            (
                "server",
                "localhost",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ),
            ("cn-ip", "127.0.0.1", "subjectAltName=DNS:localhost"),
            ("cn-dns", "localhost", "subjectAltName=IP:10.1.2.3"),
            ("ip-san", "other.example", "subjectAltName=IP:127.0.0.1"),
            (
                "wildcard",
                "x",
                "subjectAltName=DNS:*.localhost,DNS:wrong.example",
            ),
        ];
        for (stem, cn, ext) in servers {
            leaf(d, stem, cn, Some(ext), "ca");
            chown_to_server(&d.join(format!("{stem}.key")));
        }
        leaf(
            d,
            "int",
            "pgbolt tls_diff int",
            Some("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign"),
            "ca",
        );
        leaf(
            d,
            "via-int",
            "localhost",
            Some("subjectAltName=DNS:localhost,IP:127.0.0.1"),
            "int",
        );
        chown_to_server(&d.join("via-int.key"));
        let read = |name: &str| std::fs::read_to_string(d.join(name)).expect("read certificate");
        let (int, ca, via_int) = (read("int.crt"), read("ca.crt"), read("via-int.crt"));
        let write = |name: &str, text: String| std::fs::write(d.join(name), text).expect("write");
        write("via-int-chain.crt", format!("{via_int}{int}"));
        std::fs::copy(d.join("via-int.key"), d.join("via-int-chain.key")).expect("copy");
        write("int-only.crt", int.clone());
        write("int-and-ca.crt", format!("{int}{ca}"));
        leaf(d, "client-v1", "postgres", None, "ca");
        leaf(
            d,
            "client-other-ca",
            "postgres",
            Some("basicConstraints=CA:FALSE"),
            "other",
        );
        std::fs::write(d.join("garbage.pem"), "not a certificate\n").expect("write");
        set_mode(&d.join("garbage.pem"), 0o600);
        openssl(
            d,
            &[
                "pkey",
                "-in",
                "client-v1.key",
                "-outform",
                "DER",
                "-out",
                "client-v1.der",
            ],
        );
        set_mode(&d.join("client-v1.der"), 0o600);
        std::fs::create_dir(d.join("home")).expect("home dir");
        revocation_lists(d);
        std::fs::write(d.join("select.sql"), "SELECT 1;\n").expect("script");
        Certs { dir }
    })
}

/// CRLs from `openssl ca`: `good.crl` (nothing revoked), `revoked.crl`
/// (the server certificate revoked), `other.crl` (from the other CA), a
/// directory with the revoking list under its hashed name, an empty one,
/// and a home directory whose `~/.postgresql/root.crl` revokes.
fn revocation_lists(d: &Path) {
    let config = format!(
        "[ca]\ndefault_ca = here\n[here]\ndatabase = {0}/index.txt\ncrlnumber = {0}/crlnumber\n\
         default_md = sha256\ndefault_crl_days = 30\n",
        d.display()
    );
    std::fs::write(d.join("ca.cnf"), config).expect("write ca.cnf");
    std::fs::write(d.join("index.txt"), "").expect("write index");
    std::fs::write(d.join("crlnumber"), "01\n").expect("write crlnumber");
    let gencrl = |ca: &str, out: &str| {
        let (crt, key) = (format!("{ca}.crt"), format!("{ca}.key"));
        openssl(
            d,
            &[
                "ca", "-config", "ca.cnf", "-cert", &crt, "-keyfile", &key, "-gencrl", "-out", out,
            ],
        );
    };
    gencrl("ca", "good.crl");
    gencrl("other", "other.crl");
    openssl(
        d,
        &[
            "ca",
            "-config",
            "ca.cnf",
            "-cert",
            "ca.crt",
            "-keyfile",
            "ca.key",
            "-revoke",
            "server.crt",
        ],
    );
    gencrl("ca", "revoked.crl");
    let hash = Command::new("openssl")
        .args(["crl", "-in", "revoked.crl", "-noout", "-hash"])
        .current_dir(d)
        .output()
        .expect("openssl crl runs");
    let hash = common::stdout(&hash).trim().to_string();
    for sub in ["crldir", "emptydir", "crlhome/.postgresql"] {
        std::fs::create_dir_all(d.join(sub)).expect("mkdir");
    }
    std::fs::copy(d.join("revoked.crl"), d.join(format!("crldir/{hash}.r0"))).expect("copy");
    std::fs::copy(
        d.join("revoked.crl"),
        d.join("crlhome/.postgresql/root.crl"),
    )
    .expect("copy");
}
