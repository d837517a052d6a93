//! SMTP delivery over `lettre`'s connection type with a pool of our own.
//!
//! Why not `lettre`'s `AsyncSmtpTransport`: its `send` runs MAIL, RCPT and DATA as one step, so
//! a 5xx cannot be told apart between "the relay refuses our sender" (a configuration problem:
//! suppressing the recipient would be wrong, and would happen to every recipient in turn) and
//! "this recipient does not exist" (suppress it). Driving the commands ourselves tells them apart,
//! lets a refused transaction end with `RSET` and keep its connection, and puts a deadline on
//! every command (lettre's async connection only bounds the connect).

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Noop, Quit, Rcpt, Rset};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use lettre::transport::smtp::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::timeout;

use super::{Accepted, Mailer, OutgoingMail, SendError, Stage};

/// How the connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// No TLS (`smtp://host:port`): local relays and tests.
    Plain,
    /// Plain connect, then `STARTTLS`, required (`smtp://…?tls=starttls`).
    StartTls,
    /// TLS from the first byte (`smtps://`).
    Tls,
}

/// The settings `CAPTURE_SMTP_URL` describes.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpSettings {
    /// Host name or IP address.
    pub host: String,
    /// Port (default 25 plain, 587 STARTTLS, 465 implicit TLS).
    pub port: u16,
    /// Plain, STARTTLS or implicit TLS.
    pub security: Security,
    /// User name and password for `AUTH` (PLAIN or LOGIN).
    pub credentials: Option<(String, String)>,
    /// Deadline for the connect and for each command (`?timeout=`, default 30s).
    pub timeout: Duration,
    /// Most connections open at once (`?pool=`, default 4).
    pub pool_size: usize,
    /// An idle pooled connection older than this is closed rather than reused (`?idle=`, 60s).
    pub idle_timeout: Duration,
    /// The name sent with `EHLO` (`?helo=`, default this machine's host name).
    pub hello_name: Option<String>,
}

impl std::fmt::Debug for SmtpSettings {
    // The password never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.credentials.as_ref().map(|c| &c.0))
            .field("timeout", &self.timeout)
            .field("pool_size", &self.pool_size)
            .field("idle_timeout", &self.idle_timeout)
            .field("hello_name", &self.hello_name)
            .finish()
    }
}

/// A `CAPTURE_SMTP_URL` that cannot be used; the text names the problem (never the password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SMTP URL: {0}")]
pub struct UrlError(pub String);

fn parse_duration(s: &str) -> Option<Duration> {
    // humantime: `500ms`, `10s`, `2m`, `1m30s`; a unit is required and zero is refused.
    humantime::parse_duration(s).ok().filter(|d| !d.is_zero())
}

impl SmtpSettings {
    /// Parse `smtp://[user:pass@]host[:port][?tls=starttls&timeout=10s&pool=4&idle=60s&helo=name]`
    /// or `smtps://…` (implicit TLS). Credentials must travel encrypted unless the host is a
    /// loopback address.
    pub fn from_url(s: &str) -> Result<SmtpSettings, UrlError> {
        let bad = |m: &str| UrlError(m.to_string());
        let url = url::Url::parse(s.trim()).map_err(|e| UrlError(format!("not a URL ({e})")))?;
        let mut security = match url.scheme() {
            "smtp" => Security::Plain,
            "smtps" => Security::Tls,
            other => return Err(UrlError(format!("unknown scheme {other:?} (use smtp:// or smtps://)"))),
        };
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return Err(bad("unexpected path or fragment"));
        }
        let mut settings = SmtpSettings {
            host,
            port: 0,
            security,
            credentials: None,
            timeout: Duration::from_secs(30),
            pool_size: 4,
            idle_timeout: Duration::from_secs(60),
            hello_name: None,
        };
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "tls" => {
                    security = match (security, v.as_ref()) {
                        (Security::Plain, "starttls" | "required") => Security::StartTls,
                        (Security::Plain, "none") => Security::Plain,
                        (Security::Tls, "implicit" | "wrapper") => Security::Tls,
                        _ => {
                            return Err(UrlError(format!(
                                "tls={v} is not one of starttls, none (smtp://) or implicit (smtps://)"
                            )));
                        }
                    }
                }
                "timeout" => {
                    settings.timeout =
                        parse_duration(&v).ok_or_else(|| bad("timeout must look like 10s, 500ms or 2m"))?
                }
                "idle" => {
                    settings.idle_timeout = parse_duration(&v).ok_or_else(|| bad("idle must look like 60s or 2m"))?
                }
                "pool" => {
                    settings.pool_size =
                        v.parse().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| bad("pool must be 1 to 64"))?
                }
                "helo" => {
                    if !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-') || v.is_empty() {
                        return Err(bad("helo must be a host name"));
                    }
                    settings.hello_name = Some(v.into_owned());
                }
                other => return Err(UrlError(format!("unknown parameter {other:?}"))),
            }
        }
        settings.security = security;
        settings.port = url.port().unwrap_or(match security {
            Security::Plain => 25,
            Security::StartTls => 587,
            Security::Tls => 465,
        });
        if !url.username().is_empty() {
            // Percent-decoding (form decoding would also turn '+' into a space, hence the escape).
            let decode = |p: &str| {
                url::form_urlencoded::parse(format!("x={}", p.replace('+', "%2B")).as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            let user = decode(url.username());
            let pass = decode(url.password().unwrap_or(""));
            let loopback =
                settings.host == "localhost" || settings.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
            if security == Security::Plain && !loopback {
                return Err(bad(
                    "credentials would be sent unencrypted; use smtps:// or ?tls=starttls (plain smtp:// with a password is allowed to loopback only)",
                ));
            }
            settings.credentials = Some((user, pass));
        }
        Ok(settings)
    }
}

struct Idle {
    conn: AsyncSmtpConnection,
    since: Instant,
}

/// Delivers [`OutgoingMail`] over SMTP, reusing up to `pool_size` connections.
pub struct SmtpMailer {
    settings: SmtpSettings,
    tls: Option<TlsParameters>,
    hello: ClientId,
    idle: Mutex<Vec<Idle>>,
    slots: Arc<Semaphore>,
}

impl std::fmt::Debug for SmtpMailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpMailer").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// How a step failed, and whether the connection may still be used.
struct Failure {
    error: SendError,
    connection_ok: bool,
    /// The connection broke at `MAIL FROM`, before the server could have accepted anything.
    broke_before_mail: bool,
}

fn lettre_message(e: &lettre::transport::smtp::Error) -> String {
    use std::error::Error as _;
    let detail = e.source().map(|s| s.to_string()).unwrap_or_default();
    let base = if e.is_timeout() { "timed out".to_string() } else { e.to_string() };
    if detail.is_empty() || base.contains(&detail) { base } else { format!("{base}: {detail}") }
}

/// Sort an error while connecting, upgrading or signing in: the recipient is never at fault.
fn setup_error(e: lettre::transport::smtp::Error) -> SendError {
    let code = e.status().map(u16::from);
    let message = lettre_message(&e);
    if e.is_transient() || e.is_timeout() || (code.is_none() && !e.is_tls() && !e.is_client()) {
        SendError::Transient { code, message }
    } else {
        SendError::Config { message }
    }
}

fn timed_out(what: &str) -> SendError {
    SendError::Transient { code: None, message: format!("{what} timed out") }
}

impl SmtpMailer {
    /// A mailer for `CAPTURE_SMTP_URL` (see [`SmtpSettings::from_url`]). Nothing connects yet.
    pub fn from_url(url: &str) -> Result<SmtpMailer, UrlError> {
        SmtpMailer::new(SmtpSettings::from_url(url)?)
    }

    /// A mailer for `settings`.
    pub fn new(settings: SmtpSettings) -> Result<SmtpMailer, UrlError> {
        let tls = match settings.security {
            Security::Plain => None,
            _ => Some(
                TlsParameters::new(settings.host.clone())
                    .map_err(|e| UrlError(format!("TLS set-up for {} failed: {e}", settings.host)))?,
            ),
        };
        let hello = settings.hello_name.clone().map(ClientId::Domain).unwrap_or_default();
        let slots = Arc::new(Semaphore::new(settings.pool_size));
        Ok(SmtpMailer { settings, tls, hello, idle: Mutex::new(Vec::new()), slots })
    }

    /// The settings in use.
    pub fn settings(&self) -> &SmtpSettings {
        &self.settings
    }

    /// Open a connection: greeting, `EHLO`, `STARTTLS` and `AUTH` as configured.
    async fn connect(&self) -> Result<AsyncSmtpConnection, SendError> {
        let s = &self.settings;
        let wrapper_tls = if s.security == Security::Tls { self.tls.clone() } else { None };
        let connect = AsyncSmtpConnection::connect_tokio1(
            (s.host.as_str(), s.port),
            Some(s.timeout),
            &self.hello,
            wrapper_tls,
            None,
        );
        let mut conn = timeout(s.timeout * 2, connect).await.map_err(|_| timed_out("connect"))?.map_err(setup_error)?;
        if s.security == Security::StartTls {
            if !conn.server_info().supports_feature(Extension::StartTls) {
                conn.abort().await;
                return Err(SendError::Config { message: format!("{} does not offer STARTTLS", s.host) });
            }
            let tls = self.tls.clone().ok_or_else(|| SendError::Config { message: "no TLS parameters".into() })?;
            timeout(s.timeout, conn.starttls(tls, &self.hello))
                .await
                .map_err(|_| timed_out("STARTTLS"))?
                .map_err(setup_error)?;
        }
        if let Some((user, pass)) = &s.credentials {
            let creds = Credentials::new(user.clone(), pass.clone());
            timeout(s.timeout, conn.auth(&[Mechanism::Plain, Mechanism::Login], &creds))
                .await
                .map_err(|_| timed_out("AUTH"))?
                .map_err(setup_error)?;
        }
        Ok(conn)
    }

    /// A pooled connection that still answers `NOOP`, or a new one.
    async fn take(&self) -> Result<(AsyncSmtpConnection, bool), SendError> {
        loop {
            let parked = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let Some(Idle { mut conn, since }) = parked else { break };
            if since.elapsed() > self.settings.idle_timeout || conn.has_broken() {
                self.close(conn).await;
                continue;
            }
            if let Ok(Ok(_)) = timeout(self.settings.timeout, conn.command(Noop)).await {
                return Ok((conn, true));
            }
        }
        Ok((self.connect().await?, false))
    }

    fn park(&self, conn: AsyncSmtpConnection) {
        if !conn.has_broken() {
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(Idle { conn, since: Instant::now() });
        }
    }

    async fn close(&self, mut conn: AsyncSmtpConnection) {
        let _ = timeout(Duration::from_secs(2), conn.command(Quit)).await;
    }

    /// One command with its deadline; a negative reply keeps the connection usable.
    async fn step<C: std::fmt::Display>(
        &self,
        conn: &mut AsyncSmtpConnection,
        what: &str,
        command: C,
        on_5xx: impl FnOnce(u16, String) -> SendError,
    ) -> Result<Response, Failure> {
        match timeout(self.settings.timeout, conn.command(command)).await {
            Err(_) => Err(Failure { error: timed_out(what), connection_ok: false, broke_before_mail: false }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(reply_failure(e, on_5xx)),
        }
    }

    /// MAIL, RCPT, DATA and the content on `conn`.
    async fn transact(&self, conn: &mut AsyncSmtpConnection, mail: &OutgoingMail) -> Result<Response, Failure> {
        let mut params = Vec::new();
        if !mail.raw().is_ascii() {
            if !conn.server_info().supports_feature(Extension::EightBitMime) {
                let error = SendError::Config { message: "the server does not take 8-bit mail (no 8BITMIME)".into() };
                return Err(Failure { error, connection_ok: true, broke_before_mail: false });
            }
            params.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        let from = Some(mail.envelope_from().clone());
        self.step(conn, "MAIL FROM", Mail::new(from, params), |code, message| SendError::Config {
            message: format!("the server refused the sender ({code}): {message}"),
        })
        .await
        .map_err(|f| Failure { broke_before_mail: !f.connection_ok, ..f })?;
        let permanent = |stage| move |code, message| SendError::Permanent { code, stage, message };
        self.step(conn, "RCPT TO", Rcpt::new(mail.envelope_to().clone(), vec![]), permanent(Stage::Recipient)).await?;
        self.step(conn, "DATA", Data, permanent(Stage::Data)).await?;
        // Once the content is on its way a lost reply may hide an accepted message: this is the
        // one window where a retry can deliver twice (the caller records the send before retrying).
        let sent = match String::from_utf8(stuffed(mail.raw())) {
            // One write for content and final dot: lettre's `message` writes them separately,
            // and Nagle's algorithm with the server's delayed ACK then holds the dot for ~40 ms.
            Ok(data) => timeout(self.settings.timeout * 2, conn.command(data)).await,
            Err(_) => timeout(self.settings.timeout * 2, conn.message(mail.raw())).await,
        };
        match sent {
            Err(_) => Err(Failure { error: timed_out("message"), connection_ok: false, broke_before_mail: false }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(reply_failure(e, permanent(Stage::Data))),
        }
    }

    async fn send_mail(&self, mail: &OutgoingMail) -> Result<Accepted, SendError> {
        let _slot: OwnedSemaphorePermit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SendError::Config { message: "mailer closed".into() })?;
        let (mut conn, reused) = self.take().await?;
        let mut result = self.transact(&mut conn, mail).await;
        // A pooled connection the server dropped after our NOOP fails before anything was
        // accepted: one retry on a fresh connection is safe then.
        if reused && matches!(result, Err(Failure { broke_before_mail: true, .. })) {
            conn = self.connect().await?;
            result = self.transact(&mut conn, mail).await;
        }
        match result {
            Ok(r) => {
                self.park(conn);
                Ok(Accepted { message_id: mail.message_id().to_string(), response: response_text(&r) })
            }
            Err(Failure { error, connection_ok, .. }) => {
                if connection_ok && matches!(timeout(self.settings.timeout, conn.command(Rset)).await, Ok(Ok(_))) {
                    self.park(conn);
                } else {
                    conn.abort().await;
                }
                Err(error)
            }
        }
    }

    async fn check_server(&self) -> Result<(), SendError> {
        let mut conn = self.connect().await?;
        let quit = timeout(self.settings.timeout, conn.command(Quit)).await;
        match quit {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(setup_error(e)),
            Err(_) => Err(timed_out("QUIT")),
        }
    }
}

/// The message as DATA carries it: a dot doubled at the start of every line, then
/// `<CRLF>.<CRLF>` (the same transparency as lettre's client codec).
fn stuffed(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 64 + 5);
    let mut line_start = true;
    let mut after_cr = false;
    for &b in raw {
        if line_start && b == b'.' {
            out.push(b'.');
        }
        out.push(b);
        line_start = after_cr && b == b'\n';
        after_cr = b == b'\r';
    }
    out.extend_from_slice(b"\r\n.\r\n");
    out
}

fn reply_failure(e: lettre::transport::smtp::Error, on_5xx: impl FnOnce(u16, String) -> SendError) -> Failure {
    use std::error::Error as _;
    let code = e.status().map(u16::from);
    let text = e.source().map(|s| s.to_string()).unwrap_or_else(|| e.to_string());
    match code {
        Some(c) if e.is_permanent() => {
            Failure { error: on_5xx(c, text), connection_ok: true, broke_before_mail: false }
        }
        Some(c) => Failure {
            error: SendError::Transient { code: Some(c), message: text },
            connection_ok: true,
            broke_before_mail: false,
        },
        None => Failure {
            error: SendError::Transient { code: None, message: lettre_message(&e) },
            connection_ok: false,
            broke_before_mail: false,
        },
    }
}

fn response_text(r: &Response) -> String {
    let lines: Vec<&str> = r.message().collect();
    format!("{} {}", r.code(), lines.join(" "))
}

impl Mailer for SmtpMailer {
    fn send<'a>(&'a self, mail: &'a OutgoingMail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(self.send_mail(mail))
    }

    fn check(&self) -> BoxFuture<'_, Result<(), SendError>> {
        Box::pin(self.check_server())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_describe_security_port_and_credentials() {
        let s = SmtpSettings::from_url("smtp://127.0.0.1:2525").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.security, s.credentials.clone()),
            ("127.0.0.1", 2525, Security::Plain, None)
        );
        let s = SmtpSettings::from_url("smtp://mail.example.com?tls=starttls").unwrap();
        assert_eq!((s.port, s.security), (587, Security::StartTls));
        let s = SmtpSettings::from_url(
            "smtps://apikey:s%40cr%2Bet@smtp.example.com?timeout=10s&pool=2&idle=2m&helo=capture.example",
        )
        .unwrap();
        assert_eq!((s.port, s.security), (465, Security::Tls));
        assert_eq!(s.credentials, Some(("apikey".into(), "s@cr+et".into())));
        assert_eq!((s.timeout, s.pool_size, s.idle_timeout), (Duration::from_secs(10), 2, Duration::from_secs(120)));
        assert_eq!(s.hello_name.as_deref(), Some("capture.example"));
        let s = SmtpSettings::from_url("smtp://u:p@localhost:1025").unwrap();
        assert_eq!(s.credentials, Some(("u".into(), "p".into())));
        let s = SmtpSettings::from_url("smtp://[::1]:25").unwrap();
        assert_eq!(s.host, "::1");
        assert!(!format!("{s:?}").contains("secret"));
        let s = SmtpSettings::from_url("smtps://u:supersecret@smtp.example.com").unwrap();
        assert!(!format!("{s:?}").contains("supersecret"));
    }

    #[test]
    fn bad_urls_name_the_problem_and_never_the_password() {
        let cases = [
            ("http://mail.example.com", "unknown scheme \"http\""),
            ("smtp://", "no host"),
            ("not a url", "not a URL"),
            ("smtp://mail.example.com/x", "unexpected path"),
            ("smtp://mail.example.com?tls=maybe", "tls=maybe"),
            ("smtps://mail.example.com?tls=starttls", "tls=starttls"),
            ("smtp://mail.example.com?timeout=soon", "timeout must"),
            ("smtp://mail.example.com?pool=0", "pool must"),
            ("smtp://mail.example.com?retries=3", "unknown parameter \"retries\""),
            ("smtp://u:hunter2@mail.example.com", "credentials would be sent unencrypted"),
        ];
        for (url, expected) in cases {
            let e = SmtpMailer::from_url(url).unwrap_err().to_string();
            assert!(e.contains(expected), "{url}: {e}");
            assert!(!e.contains("hunter2"));
        }
    }

    #[test]
    fn dots_are_doubled_at_line_starts_only() {
        assert_eq!(stuffed(b".a\r\n.\r\nb.c\n.d\r\n..e"), b"..a\r\n..\r\nb.c\n.d\r\n...e\r\n.\r\n");
        assert_eq!(stuffed(b""), b"\r\n.\r\n");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("s"), None);
    }
}
