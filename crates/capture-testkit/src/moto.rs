//! A local S3 server for the tests: moto's `moto_server` on a loopback port, shared by the
//! in-process suite and the multi-process one (the cluster test stores into it too).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `moto_server` program: `CAPTURE_TEST_MOTO`, else the virtualenv in the target dir (the
/// parent of `target_tmpdir`, the test crate's `CARGO_TARGET_TMPDIR`: Cargo sets that only when
/// it builds a test crate, so the test passes it here).
pub fn moto_program(target_tmpdir: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CAPTURE_TEST_MOTO").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "CAPTURE_TEST_MOTO={} does not exist", p.display());
        return Some(p);
    }
    let venv = target_tmpdir.parent()?.join("moto-venv/bin/moto_server");
    venv.is_file().then_some(venv)
}

/// The program, or `None` (and a loud notice) when it is not installed outside CI. In CI
/// (`CI=true`) a missing server fails the test: it must never pass by skipping.
/// `target_tmpdir`: see [`moto_program`].
pub fn require_moto(target_tmpdir: impl AsRef<Path>) -> Option<PathBuf> {
    if let Some(p) = moto_program(target_tmpdir.as_ref()) {
        return Some(p);
    }
    let hint = "install it with `bash tests/s3/moto-venv.sh` (scripts/test.sh does) or set CAPTURE_TEST_MOTO";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("moto_server (the local S3 server) is missing: {hint}");
    }
    // Straight to stderr: the test harness would swallow eprintln! of a passing test.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED: moto_server (the local S3 server) is missing; {hint} !!!!!!!!\n"
    );
    None
}

/// What moto (authentication off) takes for an S3 request's `Authorization`: it only looks
/// for one and checks no signature.
pub const PLACEHOLDER_AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIDTESTING/20260101/eu-west-1/s3/aws4_request, \
     SignedHeaders=host, Signature=0000";

/// A running `moto_server`, killed on drop.
pub struct Moto {
    child: Option<Child>,
    pub endpoint: String,
    http: reqwest::Client,
    log: tempfile::NamedTempFile,
}

impl Moto {
    pub async fn start(program: &Path) -> Moto {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        // A free port can be taken between our probe and the server's bind: try a few.
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let log = tempfile::NamedTempFile::new().unwrap();
            let child = Command::new(program)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log.reopen().unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
            let mut moto =
                Moto { child: Some(child), endpoint: format!("http://127.0.0.1:{port}"), http: http.clone(), log };
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if moto.http.get(&moto.endpoint).send().await.is_ok() {
                    return moto;
                }
                if let Ok(Some(status)) = moto.child.as_mut().unwrap().try_wait() {
                    let log = std::fs::read_to_string(moto.log.path()).unwrap_or_default();
                    eprintln!("moto_server exited ({status}):\n{log}");
                    break;
                }
                assert!(Instant::now() < deadline, "moto_server did not answer on {} in 60s", moto.endpoint);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        panic!("moto_server did not start");
    }

    /// Create a bucket (moto does not check signatures, so a plain PUT does).
    pub async fn create_bucket(&self, bucket: &str) {
        let r = self.http.put(format!("{}/{bucket}", self.endpoint)).send().await.unwrap();
        assert!(r.status().is_success(), "creating bucket {bucket}: {}", r.status());
    }

    /// The keys under `prefix`, through S3's own ListObjectsV2.
    pub async fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let mut url = url::Url::parse(&format!("{}/{bucket}", self.endpoint)).unwrap();
        url.query_pairs_mut().append_pair("list-type", "2").append_pair("prefix", prefix);
        let r = self.http.get(url).send().await.unwrap();
        assert!(r.status().is_success(), "listing {bucket}: {}", r.status());
        let xml = r.text().await.unwrap();
        xml.split("<Key>").skip(1).filter_map(|s| s.split_once("</Key>")).map(|(k, _)| k.to_string()).collect()
    }

    /// An object's stored headers (HEAD). Objects are private, and moto only looks for an
    /// `Authorization` header (it checks no signature), so a placeholder one stands in.
    pub async fn head(&self, bucket: &str, key: &str) -> reqwest::header::HeaderMap {
        let r = self
            .http
            .head(format!("{}/{bucket}/{key}", self.endpoint))
            .header("authorization", PLACEHOLDER_AUTH)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "HEAD {key}: {}", r.status());
        r.headers().clone()
    }

    /// An IAM user allowed `s3:*`, made through moto's IAM API while authentication is off:
    /// its (access key id, secret access key), for [`Moto::enforce_auth`].
    pub async fn iam_user_with_s3_access(&self, name: &str) -> (String, String) {
        let iam = |form: Vec<(&str, String)>| {
            self.http
                .post(format!("{}/", self.endpoint))
                .header(
                    "authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIDTESTING/20260101/us-east-1/iam/aws4_request, \
                     SignedHeaders=host, Signature=0000",
                )
                .header("content-type", "application/x-www-form-urlencoded")
                .body(url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish())
        };
        let v = || ("Version", "2010-05-08".to_string());
        let r = iam(vec![("Action", "CreateUser".into()), ("UserName", name.into()), v()]).send().await.unwrap();
        assert!(r.status().is_success(), "CreateUser: {}", r.text().await.unwrap_or_default());
        let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
        let r = iam(vec![
            ("Action", "PutUserPolicy".into()),
            ("UserName", name.into()),
            ("PolicyName", "s3".into()),
            ("PolicyDocument", policy.into()),
            v(),
        ])
        .send()
        .await
        .unwrap();
        assert!(r.status().is_success(), "PutUserPolicy: {}", r.text().await.unwrap_or_default());
        let r = iam(vec![("Action", "CreateAccessKey".into()), ("UserName", name.into()), v()]).send().await.unwrap();
        let xml = r.text().await.unwrap();
        let field = |tag: &str| {
            let open = format!("<{tag}>");
            let start = xml.find(&open).unwrap_or_else(|| panic!("no {tag} in {xml}")) + open.len();
            xml[start..start + xml[start..].find('<').unwrap()].to_string()
        };
        (field("AccessKeyId"), field("SecretAccessKey"))
    }

    /// Check every request's key pair and signature from now on (`on`), or stop checking.
    pub async fn enforce_auth(&self, on: bool) {
        let r = self
            .http
            .post(format!("{}/moto-api/reset-auth", self.endpoint))
            .header("content-type", "text/plain")
            .body(if on { "0" } else { "inf" })
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "reset-auth: {}", r.status());
    }

    /// An object's bytes (GET; authentication must be off).
    pub async fn object(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let r = self
            .http
            .get(format!("{}/{bucket}/{key}", self.endpoint))
            .header("authorization", PLACEHOLDER_AUTH)
            .send()
            .await
            .unwrap();
        r.status().is_success().then_some(())?;
        Some(r.bytes().await.unwrap().to_vec())
    }

    /// Stop the server's process (SIGSTOP) without closing its port: connections are still
    /// accepted by the kernel but nothing answers — a bucket that hangs.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Let a paused server go on (SIGCONT): what waited is answered.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("moto is running").id().to_string();
        let ok = Command::new("kill").args([sig, &pid]).status().unwrap().success();
        assert!(ok, "kill {sig} {pid}");
    }

    /// Kill the server now (to see storage go away).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}
