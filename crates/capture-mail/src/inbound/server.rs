//! The SMTP listener and one session per connection (see the module docs of `inbound`).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest command line, CRLF included (RFC 5321 says 512; extensions and UTF-8 addresses need
/// more, and a little slack costs nothing).
const MAX_COMMAND_LINE: usize = 2048;
/// Longest path inside `<…>` (RFC 5321: 256).
const MAX_PATH: usize = 256;
/// Message data is read in pieces of at most this many bytes (lines may be longer).
const DATA_PIECE: usize = 64 * 1024;
/// 5xx replies a session may collect before it is closed (address harvesting, garbage).
const MAX_ERRORS: u32 = 20;
/// Rate-limited `MAIL` commands a session may repeat before it is closed.
const MAX_RATE_LIMITED: u32 = 3;

/// The server's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundConfig {
    /// The name in the greeting and `EHLO` reply.
    pub hostname: String,
    /// Largest message taken, in bytes (advertised as `SIZE`).
    pub max_message_bytes: usize,
    /// Most recipients of one message.
    pub max_recipients: usize,
    /// Messages per minute from one client address (IPv6: per /64); 0 = unlimited.
    pub per_ip_rate: u32,
    /// Most connections at once; more are told `421` and closed.
    pub max_connections: usize,
    /// Most connections at once from one client address (IPv6: per /64), so one client cannot
    /// hold every slot by idling.
    pub max_connections_per_ip: usize,
    /// Deadline for each command (and for each read of message data).
    pub idle_timeout: Duration,
    /// Deadline for a whole message, from `354` to the final dot.
    pub data_timeout: Duration,
}

impl Default for InboundConfig {
    /// 10 MiB messages, 20 recipients, 30 messages a minute per client, 100 connections (10 per
    /// client), 60 s per command, 5 min per message.
    fn default() -> Self {
        InboundConfig {
            hostname: "localhost".into(),
            max_message_bytes: 10 * 1024 * 1024,
            max_recipients: 20,
            per_ip_rate: 30,
            max_connections: 100,
            max_connections_per_ip: 10,
            idle_timeout: Duration::from_secs(60),
            data_timeout: Duration::from_secs(300),
        }
    }
}

/// Who sent a message to whom, as the SMTP session said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The client's address.
    pub peer: SocketAddr,
    /// The name the client gave in `EHLO`/`HELO`.
    pub helo: String,
    /// The reverse path (`MAIL FROM`); empty for the null sender `<>`.
    pub mail_from: String,
    /// The accepted recipients (`RCPT TO`), each once, in order.
    pub rcpt_to: Vec<String>,
    /// The client asked for `SMTPUTF8`.
    pub smtputf8: bool,
}

/// A failure of the sink (the store); the client is told to try again later (451).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// Where accepted mail goes: decides which recipients exist and stores what arrives.
pub trait InboundSink: Send + Sync + 'static {
    /// Whether `recipient` is a mailbox here (`false` → `550 5.1.1`; an error → `451`).
    fn accept<'a>(&'a self, recipient: &'a str) -> BoxFuture<'a, Result<bool, SinkError>>;
    /// Store a message: the envelope and the bytes exactly as received after dot-unstuffing
    /// (the CRLF before the final dot ends the last line). An error → `451`, the client retries.
    fn deliver<'a>(&'a self, envelope: &'a Envelope, message: Vec<u8>) -> BoxFuture<'a, Result<(), SinkError>>;
}

/// A bound SMTP listener; [`InboundServer::run`] serves it until cancelled.
pub struct InboundServer {
    listener: TcpListener,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    config: InboundConfig,
    sink: Arc<dyn InboundSink>,
    limiter: RateLimiter,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
}

/// One client's open connection, counted while it lives.
struct IpSlot {
    shared: Arc<Shared>,
    key: IpAddr,
}

impl IpSlot {
    fn take(shared: &Arc<Shared>, ip: IpAddr) -> Option<IpSlot> {
        let key = RateLimiter::key(ip);
        let mut counts = shared.per_ip.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(key).or_insert(0);
        if *n >= shared.config.max_connections_per_ip.max(1) {
            return None;
        }
        *n += 1;
        Some(IpSlot { shared: shared.clone(), key })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut counts = self.shared.per_ip.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

impl InboundServer {
    /// Bind `addr` (port 0 picks a free port; see [`InboundServer::local_addr`]).
    pub async fn bind(
        addr: impl ToSocketAddrs,
        config: InboundConfig,
        sink: Arc<dyn InboundSink>,
    ) -> io::Result<InboundServer> {
        InboundServer::from_listener(TcpListener::bind(addr).await?, config, sink)
    }

    /// Serve an already bound listener.
    pub fn from_listener(
        listener: TcpListener,
        config: InboundConfig,
        sink: Arc<dyn InboundSink>,
    ) -> io::Result<InboundServer> {
        let addr = listener.local_addr()?;
        let limiter = RateLimiter::new(config.per_ip_rate);
        let per_ip = Mutex::new(HashMap::new());
        Ok(InboundServer { listener, addr, shared: Arc::new(Shared { config, sink, limiter, per_ip }) })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Accept and serve connections until `cancel` fires; then stop accepting, tell idle
    /// sessions `421` and return once every session has ended.
    pub async fn run(self, cancel: CancellationToken) {
        let tracker = TaskTracker::new();
        let slots = Arc::new(Semaphore::new(self.shared.config.max_connections.max(1)));
        loop {
            let accepted = tokio::select! {
                _ = cancel.cancelled() => break,
                r = self.listener.accept() => r,
            };
            let (stream, peer) = match accepted {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "inbound SMTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            // Replies are small and pipelined clients read several in a row: without this,
            // Nagle's algorithm and the client's delayed ACK hold the second for ~40 ms.
            let _ = stream.set_nodelay(true);
            let shared = self.shared.clone();
            let cancel = cancel.clone();
            match (slots.clone().try_acquire_owned(), IpSlot::take(&shared, peer.ip())) {
                (Ok(permit), Some(ip_slot)) => {
                    tracker.spawn(async move {
                        let _held = (permit, ip_slot);
                        Session::new(shared, stream, peer, cancel).serve().await;
                    });
                }
                (Err(_), _) => {
                    tracker.spawn(refuse(stream, "421 4.3.2 Too many connections, try again later"));
                }
                (Ok(_), None) => {
                    tracker.spawn(refuse(stream, "421 4.7.0 Too many connections from your address, try again later"));
                }
            }
        }
        tracker.close();
        tracker.wait().await;
    }
}

async fn refuse(mut stream: TcpStream, reply: &'static str) {
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.write_all(format!("{reply}\r\n").as_bytes())).await;
}

/// Messages per minute per client: a token bucket per address (IPv6 per /64).
struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimiter {
    fn new(per_minute: u32) -> Self {
        RateLimiter { per_minute, buckets: Mutex::new(HashMap::new()) }
    }

    fn key(ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
            },
            v4 => v4,
        }
    }

    /// Take a token (`consume`) or only look whether one is there.
    fn check(&self, ip: IpAddr, consume: bool) -> bool {
        if self.per_minute == 0 {
            return true;
        }
        let cap = f64::from(self.per_minute);
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > 10_000 {
            // Forget clients whose bucket has refilled: they are back where a new one starts.
            buckets.retain(|_, (tokens, at)| *tokens + now.duration_since(*at).as_secs_f64() * cap / 60.0 < cap);
        }
        let (tokens, at) = buckets.entry(Self::key(ip)).or_insert((cap, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * cap / 60.0).min(cap);
        *at = now;
        if *tokens < 1.0 {
            return false;
        }
        if consume {
            *tokens -= 1.0;
        }
        true
    }
}

enum Piece {
    /// A whole line, its `\n` included.
    Line,
    /// As many bytes as allowed, no `\n` yet.
    Partial,
    /// The client closed the connection.
    Eof,
}

/// Append bytes up to and including the next `\n`, or at most `max` bytes in all. `eager`
/// returns whatever one read brought (a `Partial`), so a deadline per call is a deadline per
/// network read.
async fn read_piece(
    reader: &mut BufReader<OwnedReadHalf>,
    max: usize,
    eager: bool,
    out: &mut Vec<u8>,
) -> io::Result<Piece> {
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(Piece::Eof);
        }
        let room = max.saturating_sub(out.len());
        let (take, line) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) if i < room => (i + 1, true),
            _ => (buf.len().min(room), false),
        };
        out.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if line {
            return Ok(Piece::Line);
        }
        if eager || out.len() >= max {
            return Ok(Piece::Partial);
        }
    }
}

/// What reading the client brought.
enum Input {
    Line(Vec<u8>),
    TooLong,
    Closed,
    TimedOut,
    Cancelled,
}

struct Transaction {
    from: String,
    rcpts: Vec<String>,
    utf8: bool,
}

enum Flow {
    Continue,
    Close,
}

struct Session {
    shared: Arc<Shared>,
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    peer: SocketAddr,
    cancel: CancellationToken,
    helo: Option<String>,
    tx: Option<Transaction>,
    errors: u32,
    rate_limited: u32,
}

impl Session {
    fn new(shared: Arc<Shared>, stream: TcpStream, peer: SocketAddr, cancel: CancellationToken) -> Session {
        let (r, w) = stream.into_split();
        Session {
            shared,
            reader: BufReader::with_capacity(16 * 1024, r),
            writer: w,
            peer,
            cancel,
            helo: None,
            tx: None,
            errors: 0,
            rate_limited: 0,
        }
    }

    fn config(&self) -> &InboundConfig {
        &self.shared.config
    }

    async fn serve(mut self) {
        tracing::debug!(peer = %self.peer, "inbound SMTP session");
        if !self.shared.limiter.check(self.peer.ip(), false) {
            let _ = self.reply("421 4.7.0 Too many messages from your address, try again later").await;
            return;
        }
        let greeting = format!("220 {} ESMTP Capture inbound", self.config().hostname);
        if self.reply(&greeting).await.is_err() {
            return;
        }
        loop {
            let flow = match self.read_command().await {
                Input::Line(line) => self.command(&line).await,
                Input::TooLong => self.error("500 5.5.2 Line too long").await,
                Input::Closed => Ok(Flow::Close),
                Input::TimedOut => {
                    let _ = self.reply(&format!("421 4.4.2 {} Timeout, closing", self.config().hostname)).await;
                    Ok(Flow::Close)
                }
                Input::Cancelled => {
                    let _ = self.reply("421 4.3.2 Service shutting down, try again later").await;
                    Ok(Flow::Close)
                }
            };
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Close) | Err(_) => break,
            }
        }
        let _ = self.writer.shutdown().await;
    }

    /// Write one reply (lines joined by CRLF), within the idle deadline.
    async fn reply(&mut self, text: &str) -> io::Result<()> {
        let bytes = format!("{text}\r\n");
        match tokio::time::timeout(self.config().idle_timeout, self.writer.write_all(bytes.as_bytes())).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "client does not read")),
        }
    }

    /// A 5xx reply that counts toward the session's error budget.
    async fn error(&mut self, text: &str) -> io::Result<Flow> {
        self.errors += 1;
        if self.errors >= MAX_ERRORS {
            self.reply("421 4.7.0 Too many errors, closing").await?;
            return Ok(Flow::Close);
        }
        self.reply(text).await?;
        Ok(Flow::Continue)
    }

    async fn ok(&mut self, text: &str) -> io::Result<Flow> {
        self.reply(text).await?;
        Ok(Flow::Continue)
    }

    async fn read_command(&mut self) -> Input {
        let idle = self.config().idle_timeout;
        let mut line = Vec::new();
        let (reader, cancel) = (&mut self.reader, &self.cancel);
        let read = async {
            match read_piece(reader, MAX_COMMAND_LINE, false, &mut line).await? {
                Piece::Line => Ok(Some(true)),
                Piece::Eof => Ok(None),
                Piece::Partial => {
                    // Drop the rest of the over-long line, but not forever.
                    for _ in 0..32 {
                        let mut rest = Vec::new();
                        match read_piece(reader, MAX_COMMAND_LINE, false, &mut rest).await? {
                            Piece::Line => return Ok(Some(false)),
                            Piece::Eof => return Ok(None),
                            Piece::Partial => {}
                        }
                    }
                    Ok::<_, io::Error>(None)
                }
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => Input::Cancelled,
            r = tokio::time::timeout(idle, read) => match r {
                Err(_) => Input::TimedOut,
                Ok(Err(_)) | Ok(Ok(None)) => Input::Closed,
                Ok(Ok(Some(false))) => Input::TooLong,
                Ok(Ok(Some(true))) => Input::Line(line),
            },
        }
    }

    async fn command(&mut self, raw: &[u8]) -> io::Result<Flow> {
        let Ok(line) = std::str::from_utf8(raw) else {
            return self.error("500 5.5.2 Syntax error (not UTF-8)").await;
        };
        let line = line.trim_end_matches(['\r', '\n']);
        let (verb, arg) = match line.split_once(' ') {
            Some((v, a)) => (v, a.trim()),
            None => (line, ""),
        };
        match verb.to_ascii_uppercase().as_str() {
            "EHLO" | "HELO" if arg.is_empty() || arg.contains(' ') => {
                self.error("501 5.5.4 Syntax: EHLO hostname").await
            }
            "EHLO" => {
                self.helo = Some(arg.to_string());
                self.tx = None;
                let c = self.config();
                let text = format!(
                    "250-{} Hello {arg}\r\n250-SIZE {}\r\n250-8BITMIME\r\n250-PIPELINING\r\n250-SMTPUTF8\r\n250 ENHANCEDSTATUSCODES",
                    c.hostname, c.max_message_bytes
                );
                self.ok(&text).await
            }
            "HELO" => {
                self.helo = Some(arg.to_string());
                self.tx = None;
                let text = format!("250 {}", self.config().hostname);
                self.ok(&text).await
            }
            "MAIL" => self.mail(arg).await,
            "RCPT" => self.rcpt(arg).await,
            "DATA" if !arg.is_empty() => self.error("501 5.5.4 Syntax: DATA").await,
            "DATA" => self.data().await,
            "RSET" => {
                self.tx = None;
                self.ok("250 2.0.0 OK").await
            }
            "NOOP" => self.ok("250 2.0.0 OK").await,
            "VRFY" => self.ok("252 2.5.0 Cannot VRFY user, but will accept message and attempt delivery").await,
            "HELP" => self.ok("214 2.0.0 See RFC 5321").await,
            "QUIT" => {
                self.reply("221 2.0.0 Bye").await?;
                Ok(Flow::Close)
            }
            // Someone pointed a web client at the SMTP port (or a page tries cross-protocol tricks).
            "GET" | "POST" | "HEAD" | "PUT" | "CONNECT" | "OPTIONS" => {
                self.reply("421 4.7.0 This is an SMTP server").await?;
                Ok(Flow::Close)
            }
            "EXPN" | "AUTH" | "STARTTLS" | "BDAT" | "ETRN" | "TURN" | "ATRN" | "SEND" | "SOML" | "SAML" => {
                self.error("502 5.5.1 Command not implemented").await
            }
            _ => self.error("500 5.5.2 Command not recognized").await,
        }
    }

    async fn mail(&mut self, arg: &str) -> io::Result<Flow> {
        if self.helo.is_none() {
            return self.error("503 5.5.1 Send EHLO or HELO first").await;
        }
        if self.tx.is_some() {
            return self.error("503 5.5.1 Nested MAIL command").await;
        }
        let Some((from, params)) = parse_path(arg, "FROM:") else {
            return self.error("501 5.5.4 Syntax: MAIL FROM:<address>").await;
        };
        if from.len() > MAX_PATH || (!from.is_empty() && !from.contains('@')) {
            return self.error("501 5.1.7 Bad sender address syntax").await;
        }
        let mut utf8 = false;
        for p in params.split_whitespace() {
            let (key, value) = p.split_once('=').unwrap_or((p, ""));
            match key.to_ascii_uppercase().as_str() {
                "SIZE" => match value.parse::<u64>() {
                    Ok(n) if n > self.config().max_message_bytes as u64 => {
                        let text =
                            format!("552 5.3.4 Message too big (limit {} bytes)", self.config().max_message_bytes);
                        return self.error(&text).await;
                    }
                    Ok(_) => {}
                    Err(_) => return self.error("501 5.5.4 Bad SIZE parameter").await,
                },
                "BODY" if matches!(value.to_ascii_uppercase().as_str(), "7BIT" | "8BITMIME") => {}
                "SMTPUTF8" if value.is_empty() => utf8 = true,
                _ => return self.error("555 5.5.4 Unsupported MAIL parameter").await,
            }
        }
        if !self.shared.limiter.check(self.peer.ip(), true) {
            self.rate_limited += 1;
            if self.rate_limited > MAX_RATE_LIMITED {
                self.reply("421 4.7.0 Too many messages from your address, closing").await?;
                return Ok(Flow::Close);
            }
            return self.ok("450 4.7.1 Too many messages from your address, try again later").await;
        }
        self.tx = Some(Transaction { from, rcpts: Vec::new(), utf8 });
        self.ok("250 2.1.0 OK").await
    }

    async fn rcpt(&mut self, arg: &str) -> io::Result<Flow> {
        let Some(count) = self.tx.as_ref().map(|t| t.rcpts.len()) else {
            return self.error("503 5.5.1 Need MAIL before RCPT").await;
        };
        let Some((to, params)) = parse_path(arg, "TO:") else {
            return self.error("501 5.5.4 Syntax: RCPT TO:<address>").await;
        };
        if !params.trim().is_empty() {
            return self.error("555 5.5.4 Unsupported RCPT parameter").await;
        }
        if to.is_empty() || to.len() > MAX_PATH {
            return self.error("501 5.1.3 Bad recipient address syntax").await;
        }
        if count >= self.config().max_recipients {
            // 452, not 552: the client should send the rest in another transaction (RFC 5321 4.5.3.1.10).
            return self.ok("452 4.5.3 Too many recipients").await;
        }
        match self.shared.sink.accept(&to).await {
            Ok(true) => {
                if let Some(tx) = self.tx.as_mut().filter(|t| !t.rcpts.iter().any(|r| r.eq_ignore_ascii_case(&to))) {
                    tx.rcpts.push(to);
                }
                self.ok("250 2.1.5 OK").await
            }
            Ok(false) => self.error("550 5.1.1 No such mailbox").await,
            Err(e) => {
                tracing::warn!(error = %e, "inbound SMTP recipient check failed");
                self.ok("451 4.3.0 Temporary failure, try again later").await
            }
        }
    }

    async fn data(&mut self) -> io::Result<Flow> {
        match &self.tx {
            None => return self.error("503 5.5.1 Need MAIL before DATA").await,
            Some(tx) if tx.rcpts.is_empty() => return self.error("554 5.5.1 No valid recipients").await,
            Some(_) => {}
        }
        self.reply("354 End data with <CR><LF>.<CR><LF>").await?;
        let result = self.read_data().await;
        let Some(tx) = self.tx.take() else { return Ok(Flow::Close) };
        match result {
            Data::Message(message) => {
                let envelope = Envelope {
                    peer: self.peer,
                    helo: self.helo.clone().unwrap_or_default(),
                    mail_from: tx.from,
                    rcpt_to: tx.rcpts,
                    smtputf8: tx.utf8,
                };
                match self.shared.sink.deliver(&envelope, message).await {
                    Ok(()) => self.ok("250 2.0.0 OK: message accepted").await,
                    Err(e) => {
                        tracing::warn!(error = %e, "inbound SMTP delivery to the sink failed");
                        self.ok("451 4.3.0 Temporary failure, try again later").await
                    }
                }
            }
            Data::TooBig { keep_open } => {
                let text = format!("552 5.3.4 Message too big (limit {} bytes)", self.config().max_message_bytes);
                if keep_open {
                    self.error(&text).await
                } else {
                    self.reply(&text).await?;
                    Ok(Flow::Close)
                }
            }
            Data::Closed => Ok(Flow::Close),
            Data::TimedOut => {
                let _ = self.reply(&format!("421 4.4.2 {} Timeout, closing", self.config().hostname)).await;
                Ok(Flow::Close)
            }
            Data::Cancelled => {
                let _ = self.reply("421 4.3.2 Service shutting down, try again later").await;
                Ok(Flow::Close)
            }
        }
    }

    /// Read message data up to `<CRLF>.<CRLF>`, unstuffing dots, within the size bound and the
    /// deadlines. Past the bound the data is read and dropped so the reply (552) comes at the
    /// end and the connection stays usable — unless the client goes on far past it.
    async fn read_data(&mut self) -> Data {
        let max = self.config().max_message_bytes;
        let idle = self.config().idle_timeout;
        let deadline = tokio::time::Instant::now() + self.config().data_timeout;
        let give_up_after = max.saturating_mul(4).saturating_add(1 << 20);
        let mut message = Vec::new();
        let mut too_big = false;
        let mut seen = 0usize;
        // Where the next piece starts: at a line start, and after a CRLF (the start counts).
        let (mut line_start, mut after_crlf, mut last_byte) = (true, true, b'\n');
        let mut piece = Vec::with_capacity(8 * 1024);
        loop {
            piece.clear();
            let wait = idle.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let read = tokio::select! {
                _ = self.cancel.cancelled() => return Data::Cancelled,
                r = tokio::time::timeout(wait, read_piece(&mut self.reader, DATA_PIECE, true, &mut piece)) => r,
            };
            let is_line = match read {
                Err(_) => return Data::TimedOut,
                Ok(Err(_)) | Ok(Ok(Piece::Eof)) => return Data::Closed,
                Ok(Ok(Piece::Line)) => true,
                Ok(Ok(Piece::Partial)) => false,
            };
            let at_dot = line_start && after_crlf;
            if at_dot && piece == b".\r\n" {
                return if too_big { Data::TooBig { keep_open: true } } else { Data::Message(message) };
            }
            let content = if at_dot && piece.first() == Some(&b'.') { &piece[1..] } else { &piece[..] };
            seen = seen.saturating_add(content.len());
            if !too_big && message.len() + content.len() > max {
                too_big = true;
                message = Vec::new();
            }
            if too_big {
                if seen > give_up_after {
                    return Data::TooBig { keep_open: false };
                }
            } else {
                message.extend_from_slice(content);
            }
            if is_line {
                let before_lf = if piece.len() >= 2 { piece[piece.len() - 2] } else { last_byte };
                after_crlf = before_lf == b'\r';
            }
            line_start = is_line;
            last_byte = piece.last().copied().unwrap_or(last_byte);
        }
    }
}

enum Data {
    Message(Vec<u8>),
    TooBig { keep_open: bool },
    Closed,
    TimedOut,
    Cancelled,
}

/// Split `FROM:<path> params` (or `TO:`) into the address inside the brackets (source routes
/// dropped) and the parameters. `None` when it is not of that shape.
fn parse_path<'a>(arg: &'a str, keyword: &str) -> Option<(String, &'a str)> {
    let head = arg.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = arg[keyword.len()..].trim_start();
    let inner = rest.strip_prefix('<')?;
    // The closing bracket, skipping any inside a quoted local part.
    let mut quoted = false;
    let mut escaped = false;
    let mut end = None;
    for (i, c) in inner.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '>' if !quoted => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let end = end?;
    let mut path = &inner[..end];
    if path.starts_with('@') {
        // `<@relay1,@relay2:user@example.com>`: the route is obsolete; the mailbox is what counts.
        path = path.split_once(':')?.1;
    }
    if path.chars().any(|c| c.is_control() || c == ' ') && !path.starts_with('"') {
        return None;
    }
    let params = &inner[end + 1..];
    if !params.is_empty() && !params.starts_with(' ') {
        return None;
    }
    Some((path.to_string(), params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_parameters() {
        assert_eq!(parse_path("FROM:<a@b.example>", "FROM:"), Some(("a@b.example".into(), "")));
        assert_eq!(parse_path("from: <a@b.example> SIZE=10", "FROM:"), Some(("a@b.example".into(), " SIZE=10")));
        assert_eq!(parse_path("FROM:<>", "FROM:"), Some((String::new(), "")));
        assert_eq!(parse_path("TO:<@r1,@r2:u@d.example>", "TO:"), Some(("u@d.example".into(), "")));
        assert_eq!(parse_path("TO:<\"a>b\"@d.example>", "TO:"), Some(("\"a>b\"@d.example".into(), "")));
        assert_eq!(parse_path("TO:<Pöstmeister@d.example>", "TO:"), Some(("Pöstmeister@d.example".into(), "")));
        for bad in ["FROM:a@b", "FROM:<a@b", "TO:<a@b>", "FROM:<a@b>SIZE=1", "FROM:<a b@c>", "FRO", ""] {
            assert_eq!(parse_path(bad, "FROM:"), None, "{bad}");
        }
    }

    #[test]
    fn rate_buckets_hold_a_minute_of_messages_per_client() {
        let limiter = RateLimiter::new(2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(limiter.check(a, true) && limiter.check(a, true));
        assert!(!limiter.check(a, false));
        assert!(!limiter.check(a, true));
        assert!(limiter.check("192.0.2.2".parse().unwrap(), true));
        // One IPv6 /64 is one client; the v4-mapped form is the v4 client.
        let v6a: IpAddr = "2001:db8::1".parse().unwrap();
        let v6b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        assert!(limiter.check(v6a, true) && limiter.check(v6b, true));
        assert!(!limiter.check("2001:db8::3".parse().unwrap(), true));
        assert!(limiter.check("2001:db8:0:1::1".parse().unwrap(), true));
        assert!(!limiter.check("::ffff:192.0.2.1".parse().unwrap(), true));
        assert!(RateLimiter::new(0).check(a, true));
    }
}
