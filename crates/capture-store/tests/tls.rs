//! PostgreSQL over TLS, as managed PostgreSQL services require: the store connects with
//! `sslmode=require` and with `sslmode=verify-full` against a CA file, and refuses a server
//! whose certificate its CA did not sign.
//!
//! The test starts a throwaway PostgreSQL cluster of its own (initdb from the installed
//! server, a random port, `ssl = on`, TCP connections accepted only over TLS) with a CA and a
//! server certificate it makes with `openssl`, so it does not depend on how the machine's
//! server is configured. Without the PostgreSQL server binaries it is skipped, except under
//! `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capture_store::Store;

/// The bin folder of the newest installed PostgreSQL server.
fn pg_bindir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file() && p.join("postgres").is_file())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok())
    });
    dirs.pop()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// Run a command, as the `postgres` user when we are root (the server refuses to run as root).
fn as_pg(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.stdin(Stdio::null()).output().expect("run command");
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn openssl(dir: &Path, args: &[&str]) {
    run(Command::new("openssl").current_dir(dir).args(args));
}

/// A CA (`<name>.crt`, `<name>.key`) in `dir`.
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=capture test {name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    ca: PathBuf,
    other_ca: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start_tls_server(bin: &Path) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    make_ca(d, "ca");
    make_ca(d, "other");
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(d.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ],
    );
    if is_root() {
        run(Command::new("chown").arg("-R").arg("postgres").arg(d));
    }
    run(Command::new("chmod").arg("0600").arg(d.join("server.key")));
    run(Command::new("chmod").arg("0755").arg(d));
    let data = d.join("data");
    run(as_pg(&bin.join("initdb")).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "-D"]).arg(&data));
    let port = free_port();
    let conf = format!(
        "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{sock}'\nssl = on\n\
         ssl_cert_file = '{d}/server.crt'\nssl_key_file = '{d}/server.key'\nfsync = off\n",
        sock = d.display(),
        d = d.display()
    );
    let mut pgconf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
    pgconf.push_str(&conf);
    std::fs::write(data.join("postgresql.conf"), pgconf).unwrap();
    // TCP only over TLS: a plain connection is refused.
    std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n").unwrap();
    if is_root() {
        run(Command::new("chown").arg("-R").arg("postgres").arg(d));
    }
    let child =
        as_pg(&bin.join("postgres")).arg("-D").arg(&data).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the test PostgreSQL server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    Server { child, port, ca: d.join("ca.crt"), other_ca: d.join("other.crt"), _dir: dir }
}

async fn uses_tls(store: &Store) -> bool {
    store.connection_uses_tls().await.expect("read pg_stat_ssl")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_with_require_and_verify_full() {
    let Some(bin) = pg_bindir() else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "the PostgreSQL server binaries are missing");
        eprintln!("skipped: no PostgreSQL server binaries under /usr/lib/postgresql");
        return;
    };
    let server = tokio::task::spawn_blocking(move || start_tls_server(&bin)).await.unwrap();
    let base = format!("postgres://postgres@127.0.0.1:{}/postgres", server.port);

    // What every managed PostgreSQL asks for: encryption, without checking the certificate.
    let store = Store::connect(&format!("{base}?sslmode=require"), 2).await.expect("sslmode=require");
    assert!(uses_tls(&store).await, "the session is encrypted");
    store.ping().await.unwrap();
    store.close().await;

    // Full verification against the CA file: the certificate names 127.0.0.1.
    let verified = format!("{base}?sslmode=verify-full&sslrootcert={}", server.ca.display());
    let store = Store::connect(&verified, 2).await.expect("sslmode=verify-full with the right CA");
    assert!(uses_tls(&store).await);
    assert_eq!(store.applied_migrations().await.unwrap(), store.known_migrations());
    store.close().await;

    // A CA that did not sign the server's certificate: refused.
    let wrong = format!("{base}?sslmode=verify-full&sslrootcert={}", server.other_ca.display());
    let err = Store::connect(&wrong, 2).await.expect_err("a certificate from another CA must be refused");
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");

    // The server takes TCP connections only over TLS, so TLS is really in use above.
    let plain = format!("{base}?sslmode=disable");
    assert!(Store::connect(&plain, 2).await.is_err(), "plain connections are refused by this server");
    drop(server);
}
