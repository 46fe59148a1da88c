//! HTTP serving (hyper 1, HTTP/1.1) and the flow of one request.
//!
//! A request is read whole; it gets its number `n` (ids), its arrival in
//! the stats, and its draw (faults, latency; see [`super::spec`]). Then the
//! reply is decided without waiting (validation → rate limits → injected
//! status → script rule → usage from the cache simulator), the request is
//! recorded, the reply waits its latency and is sent (cut short by a `drop`
//! fault).
//!
//! **Bounds** ([`ServerLimits`]), so that clients that misbehave cannot take
//! the server down: at most `max_connections` connections are served at
//! once (the next ones wait in the listen backlog, holding no descriptor of
//! ours); a request head must arrive within `header_timeout` of the server
//! waiting for it (else the connection is closed) and fit in
//! `max_header_bytes` (else 431); a path longer than `max_path_bytes` is
//! answered 414 before anything is kept of it; a body must arrive within
//! `body_timeout` (else 408). What is kept per request is bounded too:
//! `arrivals` holds at most [`MAX_ARRIVALS`] entries, each path cut to
//! [`ARRIVAL_PATH_BYTES`]; the per-body counts of the fault draw hold at
//! most [`MAX_SEEN_BODIES`] bodies (a body first seen after that draws as
//! if never seen before).

use super::batches::{self, Batches, Lookup};
use super::clock::Clock;
use super::ratelimit::{Limited, Limits};
use super::record::{self, RecordSender, Recorder};
use super::reply::{self, Ids};
use super::request::{Endpoint, body_from_request, check_body};
use super::script::{Facts, Reply, Script};
use super::spec::{self, Draw, Fault, Faults, Latency};
use super::{MockConfig, MockError, MockStats};
use crate::cost::sim::{CacheSim, Estimator, SimRequest, blocks_of};
use crate::json::Json;
use bumpalo::Bump;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited as LimitedBody, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustc_hash::FxHashMap;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

type RBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// Largest Messages / count_tokens body (facts §3.3: 32 MB, else 413).
const MAX_BODY: usize = 32 << 20;
/// Largest batch create body (facts §4: 256 MB).
const MAX_BATCH_BODY: usize = 256 << 20;
/// `MockStats::arrivals` keeps at most this many entries (the first ones).
pub const MAX_ARRIVALS: usize = 1_000_000;
/// A path in `MockStats::arrivals` is cut to this many bytes.
pub const ARRIVAL_PATH_BYTES: usize = 256;
/// Distinct request bodies whose arrivals are counted for the fault draw.
pub const MAX_SEEN_BODIES: usize = 1 << 20;

/// Bounds on what clients can make the server hold (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Longest wait for a request head (then the connection is closed).
    pub header_timeout: Duration,
    /// Longest wait for a request body once its head is read (then 408).
    pub body_timeout: Duration,
    /// Largest request head, start line included (then 431; a path too long
    /// for this is a 431, not a 414).
    pub max_header_bytes: usize,
    /// Longest request path with its query (then 414).
    pub max_path_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_header_bytes: 128 << 10,
            max_path_bytes: 8 << 10,
        }
    }
}

/// How long shutdown waits for in-flight requests beyond `slow_ms`.
const GRACE: Duration = Duration::from_secs(10);
/// Pause between the part of a dropped reply and the cut, so the part is
/// on the wire before the connection closes.
const DROP_PAUSE: Duration = Duration::from_millis(20);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running mock server.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: watch::Sender<bool>,
    accept: JoinHandle<()>,
    recorder: Option<Recorder>,
}

#[derive(Debug)]
struct State {
    addr: SocketAddr,
    clock: Clock,
    ids: Ids,
    counter: AtomicU64,
    seed: u64,
    faults: Faults,
    latency: Latency,
    slow: Duration,
    output_tokens: u64,
    /// Times each raw body (by xxh3-64) arrived.
    seen: Mutex<FxHashMap<u64, u64>>,
    script: Script,
    sim: Mutex<CacheSim>,
    estimator: Estimator,
    limits: Option<Mutex<Limits>>,
    batches: Batches,
    stats: Mutex<MockStats>,
    record: Option<RecordSender>,
    bounds: ServerLimits,
    /// Connections being served.
    open: AtomicU64,
}

impl State {
    fn new(cfg: MockConfig, addr: SocketAddr, record: Option<RecordSender>, bounds: ServerLimits) -> State {
        let clock = Clock::new();
        // Ids differ per server run (as mock_anthropic.py's os.urandom run
        // tag); they play no part in the fault draw.
        let run = xxhash_rust::xxh3::xxh3_64(
            &[
                clock.now_ms().to_le_bytes(),
                u64::from(std::process::id()).to_le_bytes(),
                u64::from(addr.port()).to_le_bytes(),
            ]
            .concat(),
        );
        State {
            addr,
            clock,
            ids: Ids::new(run),
            counter: AtomicU64::new(0),
            seed: cfg.seed,
            faults: cfg.faults,
            latency: cfg.latency,
            slow: Duration::from_millis(cfg.slow_ms),
            output_tokens: u64::from(cfg.output_tokens),
            seen: Mutex::new(FxHashMap::default()),
            script: Script::new(cfg.script),
            sim: Mutex::new(CacheSim::default()),
            estimator: Estimator::default(),
            limits: Limits::new(cfg.rpm, cfg.itpm, cfg.otpm).map(Mutex::new),
            batches: Batches::new(cfg.batch_delay),
            stats: Mutex::new(MockStats::default()),
            record,
            bounds,
            open: AtomicU64::new(0),
        }
    }
}

/// For fuzzing: serve `raw` as everything one client connection sends (an
/// in-memory stream, then end of input) to a mock with the default
/// configuration, kept per thread; what the server wrote back. The HTTP
/// parsing (hyper), the routing, the body checks and the replies run as
/// for a socket. Never panics, whatever the bytes.
#[doc(hidden)]
pub fn serve_raw(raw: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    thread_local! {
        static RT: Option<(tokio::runtime::Runtime, Arc<State>)> = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .map(|rt| {
                let st = State::new(MockConfig::default(), SocketAddr::from(([127, 0, 0, 1], 0)), None, ServerLimits::default());
                (rt, Arc::new(st))
            });
    }
    RT.with(|rt| {
        let Some((rt, st)) = rt else { return Vec::new() };
        rt.block_on(async {
            let (mut client, server) = tokio::io::duplex(64 << 10);
            let (_tx, stop) = watch::channel(false);
            let serve = tokio::spawn(serve_connection(server, st.clone(), stop));
            let (mut rd, mut wr) = tokio::io::split(&mut client);
            let write = async {
                let _ = wr.write_all(raw).await;
                let _ = wr.shutdown().await;
            };
            let mut out = Vec::new();
            let read = rd.read_to_end(&mut out);
            let _ = tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(write, read) }).await;
            serve.abort();
            out
        })
    })
}

impl MockServer {
    /// Bind `cfg.addr`, open the record, and serve in background tasks (call
    /// inside a tokio runtime), with the default [`ServerLimits`].
    pub async fn start(cfg: MockConfig) -> Result<MockServer, MockError> {
        Self::start_with(cfg, ServerLimits::default()).await
    }

    /// [`MockServer::start`] with these bounds.
    pub async fn start_with(cfg: MockConfig, bounds: ServerLimits) -> Result<MockServer, MockError> {
        let listener =
            TcpListener::bind(cfg.addr).await.map_err(|source| MockError::Bind { addr: cfg.addr, source })?;
        let addr = listener.local_addr().map_err(|source| MockError::Bind { addr: cfg.addr, source })?;
        let recorder = match &cfg.record {
            Some(path) => Some(Recorder::open(path).await?),
            None => None,
        };
        let state = Arc::new(State::new(cfg, addr, recorder.as_ref().map(Recorder::sender), bounds));
        let (tx, rx) = watch::channel(false);
        let accept = tokio::spawn(accept_loop(listener, state.clone(), rx));
        Ok(MockServer { addr, state, shutdown: tx, accept, recorder })
    }

    /// The address it listens on (the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of the stats.
    pub fn stats(&self) -> MockStats {
        lock(&self.state.stats).clone()
    }

    /// Stop accepting, let in-flight requests finish (at most `slow_ms` +
    /// 10 s, then they are cut), flush and fsync the record; the final stats.
    pub async fn shutdown(self) -> Result<MockStats, MockError> {
        let _ = self.shutdown.send(true);
        self.accept.await.map_err(|e| MockError::Task(format!("accept loop: {e}")))?;
        if let Some(r) = self.recorder {
            r.close().await?;
        }
        Ok(lock(&self.state.stats).clone())
    }
}

async fn accept_loop(listener: TcpListener, st: Arc<State>, mut stop: watch::Receiver<bool>) {
    let mut conns = JoinSet::new();
    let conn_stop = stop.clone();
    let slots = Arc::new(Semaphore::new(st.bounds.max_connections.max(1)));
    loop {
        // A slot first: past the bound, connections wait in the backlog.
        let slot = tokio::select! {
            _ = stopped(&mut stop) => break,
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
        };
        tokio::select! {
            _ = stopped(&mut stop) => break,
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let open = st.open.fetch_add(1, Ordering::Relaxed) + 1;
                    {
                        let mut s = lock(&st.stats);
                        s.peak_connections = s.peak_connections.max(open);
                    }
                    let (st, stop) = (st.clone(), conn_stop.clone());
                    conns.spawn(async move {
                        serve_connection(stream, st.clone(), stop).await;
                        st.open.fetch_sub(1, Ordering::Relaxed);
                        drop(slot);
                    });
                }
                // Out of file descriptors and the like: wait, keep serving.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    let grace = tokio::time::sleep(GRACE + st.slow);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            r = conns.join_next() => if r.is_none() { break },
            _ = &mut grace => {
                conns.abort_all();
                while conns.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// `path` cut to at most [`ARRIVAL_PATH_BYTES`] (on a char boundary).
fn cut_path(path: &str) -> &str {
    if path.len() <= ARRIVAL_PATH_BYTES {
        return path;
    }
    let mut end = ARRIVAL_PATH_BYTES;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}

/// Resolves once shutdown is asked for (or the server handle is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn serve_connection<S>(stream: S, st: Arc<State>, mut stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let st_bounds = st.bounds;
    let svc = hyper::service::service_fn(move |req| {
        let st = st.clone();
        async move { Ok::<_, Infallible>(handle(st, req).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(st_bounds.header_timeout)
        .max_header_size(st_bounds.max_header_bytes);
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stopped(&mut stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Messages,
    CountTokens,
    BatchCreate,
    BatchGet(String),
    BatchResults(String),
    BatchCancel(String),
    WrongMethod,
    NotFound,
}

fn route(method: &Method, path: &str) -> Route {
    let (want, r) = match path {
        "/v1/messages" => (Method::POST, Route::Messages),
        "/v1/messages/count_tokens" => (Method::POST, Route::CountTokens),
        "/v1/messages/batches" => (Method::POST, Route::BatchCreate),
        _ => match path.strip_prefix("/v1/messages/batches/").map(|r| r.split('/').collect::<Vec<_>>()).as_deref() {
            Some([id]) if !id.is_empty() => (Method::GET, Route::BatchGet(id.to_string())),
            Some([id, "results"]) => (Method::GET, Route::BatchResults(id.to_string())),
            Some([id, "cancel"]) => (Method::POST, Route::BatchCancel(id.to_string())),
            _ => return Route::NotFound,
        },
    };
    if *method == want { r } else { Route::WrongMethod }
}

#[derive(Debug)]
enum Payload {
    Json(Vec<u8>),
    Jsonl(Vec<u8>),
    Sse(Vec<Bytes>),
}

/// The reply decided for a request.
#[derive(Debug)]
struct Plan {
    status: u16,
    payload: Payload,
    headers: Vec<(String, String)>,
    delay: Duration,
    drop: bool,
    reply_rule: Option<usize>,
    rate_limited: bool,
}

impl Plan {
    fn json(status: u16, v: &Value) -> Plan {
        Plan {
            status,
            payload: Payload::Json(serde_json::to_vec(v).unwrap_or_default()),
            headers: Vec::new(),
            delay: Duration::ZERO,
            drop: false,
            reply_rule: None,
            rate_limited: false,
        }
    }

    /// An error reply of `status` with its facts §3.3 type.
    fn error(status: u16, message: &str, rid: &str) -> Plan {
        Plan::json(status, &reply::error_envelope(reply::error_type(status), message, rid))
    }

    /// An injected status fault.
    fn fault(status: u16, rid: &str) -> Plan {
        let mut p = Plan::error(status, reply::fault_message(status), rid);
        match status {
            // facts §3.2: a 529 was observed with `x-should-retry: true`.
            529 => p.headers.push(("x-should-retry".into(), "true".into())),
            // facts §3.2: the API always sends retry-after with a 429.
            429 => p.headers.push(("retry-after".into(), "1".into())),
            _ => {}
        }
        p
    }

    fn rate_limited(l: &Limited, rid: &str) -> Plan {
        let mut p = Plan::error(429, &l.message(), rid);
        p.headers.push(("retry-after".into(), l.retry_after.to_string()));
        p.rate_limited = true;
        p
    }
}

/// The prompt-cache scope of a request: a hash of its API key (facts §1.7:
/// caches are never shared across organizations); the key is not kept.
fn scope_of(headers: &HeaderMap) -> u64 {
    headers
        .get("x-api-key")
        .or_else(|| headers.get("authorization"))
        .map_or(0, |v| xxhash_rust::xxh3::xxh3_64(v.as_bytes()))
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<RBody> {
    let n = st.counter.fetch_add(1, Ordering::Relaxed);
    let rid = st.ids.request(n);
    let method = req.method().clone();
    let path_len = req.uri().path_and_query().map_or(req.uri().path().len(), |p| p.as_str().len());
    if path_len > st.bounds.max_path_bytes {
        // Nothing is kept of it (not even in the stats' arrivals).
        lock(&st.stats).requests += 1;
        let msg = format!("The request path is longer than {} bytes", st.bounds.max_path_bytes);
        return respond(&st, Plan::error(414, &msg, &rid), &rid);
    }
    let path = req.uri().path_and_query().map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let route = route(&method, req.uri().path());
    {
        let mut s = lock(&st.stats);
        s.requests += 1;
        let at = st.clock.elapsed_ms();
        if s.arrivals.len() < MAX_ARRIVALS {
            s.arrivals.push((at, cut_path(&path).to_string()));
        }
    }
    let (parts, body) = req.into_parts();
    let limit = if route == Route::BatchCreate { MAX_BATCH_BODY } else { MAX_BODY };
    let collected = tokio::time::timeout(st.bounds.body_timeout, LimitedBody::new(body, limit).collect()).await;
    let raw = match collected {
        Ok(Ok(c)) => c.to_bytes(),
        Err(_) => {
            let msg = format!("The request body did not arrive within {} s", st.bounds.body_timeout.as_secs_f64());
            return respond(&st, Plan::error(408, &msg, &rid), &rid);
        }
        Ok(Err(e)) => {
            let plan = if e.downcast_ref::<LengthLimitError>().is_some() {
                Plan::error(413, &format!("Request body is larger than the limit of {limit} bytes"), &rid)
            } else {
                Plan::error(400, &format!("Could not read the request body: {e}"), &rid)
            };
            if let Some(rec) = &st.record {
                rec.send(record::line(method.as_str(), &path, &parts.headers, &[], None, None)).await;
            }
            return respond(&st, plan, &rid);
        }
    };
    let parsed: Result<Value, String> = if raw.is_empty() {
        Err("the request body is empty".into())
    } else {
        serde_json::from_slice(&raw).map_err(|e| format!("the request body is not valid JSON: {e}"))
    };
    let hash = xxhash_rust::xxh3::xxh3_64(&raw);
    let seen = {
        let mut m = lock(&st.seen);
        let full = m.len() >= MAX_SEEN_BODIES;
        match m.get_mut(&hash) {
            Some(c) => {
                *c += 1;
                *c - 1
            }
            None => {
                if !full {
                    m.insert(hash, 1);
                }
                0
            }
        }
    };
    let draw = spec::draw(st.seed, hash, seen, &st.faults, &st.latency);
    let plan = decide(&st, &route, &parts.headers, parsed.as_ref(), &draw, n, &rid);
    if let Some(rec) = &st.record {
        rec.send(record::line(method.as_str(), &path, &parts.headers, &raw, parsed.as_ref().ok(), plan.reply_rule))
            .await;
    }
    if !plan.delay.is_zero() {
        tokio::time::sleep(plan.delay).await;
    }
    respond(&st, plan, &rid)
}

fn decide(
    st: &State,
    route: &Route,
    headers: &HeaderMap,
    body: Result<&Value, &String>,
    draw: &Draw,
    n: u64,
    rid: &str,
) -> Plan {
    let status_fault = match draw.fault {
        Some(Fault::Status(s)) => Some(s),
        _ => None,
    };
    let mut plan = match (route, status_fault) {
        (Route::NotFound, _) => return Plan::error(404, "Not found", rid),
        (Route::WrongMethod, _) => return Plan::error(405, "Method not allowed for this path", rid),
        (Route::Messages, _) => messages(st, headers, body, status_fault, n, rid),
        (_, Some(s)) => Plan::fault(s, rid),
        (Route::CountTokens, None) => count_tokens(st, body, rid),
        (Route::BatchCreate, None) => batch_create(st, headers, body, n, rid),
        (Route::BatchGet(id), None) => match st.batches.get(id, st.addr) {
            Lookup::Found(v) => Plan::json(200, &v),
            _ => Plan::error(404, &format!("No batch with id {id}"), rid),
        },
        (Route::BatchCancel(id), None) => match st.batches.cancel(id, &st.clock, st.addr) {
            Lookup::Found(v) => Plan::json(200, &v),
            _ => Plan::error(404, &format!("No batch with id {id}"), rid),
        },
        (Route::BatchResults(id), None) => match st.batches.results(id) {
            Lookup::Found(lines) => Plan { payload: Payload::Jsonl(lines), ..Plan::json(200, &Value::Null) },
            Lookup::NotFound => Plan::error(404, &format!("No batch with id {id}"), rid),
            Lookup::NotEnded(status) => Plan::error(
                400,
                &format!(
                    "Batch {id} has not ended (processing_status {status}); results are available once it has ended"
                ),
                rid,
            ),
        },
    };
    plan.delay += draw.latency;
    match draw.fault {
        Some(Fault::Slow) => plan.delay += st.slow,
        Some(Fault::Drop) => plan.drop = true,
        _ => {}
    }
    plan
}

/// A checked Messages body and its prompt blocks, or the 400 to send.
fn prompt_of(st: &State, body: Result<&Value, &String>, endpoint: Endpoint, rid: &str) -> Result<Prompt, Plan> {
    let v = body.map_err(|e| Plan::error(400, e, rid))?;
    check_body(v, endpoint).map_err(|e| Plan::error(400, &e, rid))?;
    let bump = Bump::new();
    let j = bump.alloc(Json::from_serde(&bump, v));
    let b = body_from_request(&bump, j);
    let blocks = blocks_of(&b, &st.estimator.tokens_fn());
    // facts §1.2: more than 4 breakpoints is a 400 with this message.
    let bps = blocks.iter().filter(|b| b.ttl.is_some()).count();
    if bps > 4 && endpoint != Endpoint::CountTokens {
        let msg = format!("A maximum of 4 blocks with cache_control may be provided. Found {bps}.");
        return Err(Plan::error(400, &msg, rid));
    }
    let tokens = blocks.iter().map(|b| u64::from(b.tokens)).sum();
    Ok(Prompt { blocks, tokens })
}

struct Prompt {
    blocks: Vec<crate::cost::sim::SimBlock>,
    tokens: u64,
}

/// A successful reply's message (non-streaming shape) and its parts.
struct Answer {
    message: Value,
    blocks: Vec<serde_json::Map<String, Value>>,
    stop: String,
    usage: serde_json::Map<String, Value>,
    output: u64,
    counted_input: u64,
}

/// The message answering `v` with `reply`, usage from the simulator (time
/// = the server clock, scope = the API key).
fn answer(st: &State, v: &Value, prompt: Prompt, reply: &Reply, scope: u64, n: u64) -> Answer {
    let model = v.get("model").cloned().unwrap_or(Value::Null);
    let req = SimRequest {
        at_ms: st.clock.now_ms(),
        model: model.as_str().unwrap_or("").to_string(),
        scope,
        // Another thinking config invalidates the messages cache (facts §1.5).
        thinking: v.get("thinking").map_or(0, |t| xxhash_rust::xxh3::xxh3_64(t.to_string().as_bytes())),
        blocks: prompt.blocks,
        ready_ms: 0,
    };
    let sim = lock(&st.sim).step(&req);
    // facts §1.4 "Pre-warming": max_tokens 0 answers empty content with
    // stop_reason max_tokens and bills no output.
    let prewarm = v.get("max_tokens").and_then(Value::as_u64) == Some(0);
    let mut usage = reply::usage(&sim, st.output_tokens, &reply.usage);
    let (blocks, stop) = if prewarm {
        usage.insert("output_tokens".into(), 0.into());
        (Vec::new(), "max_tokens".to_string())
    } else {
        let blocks = reply::realize_blocks(reply, &st.ids, n);
        let stop = reply::stop_reason(reply, &blocks);
        (blocks, stop)
    };
    let num = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let output = num("output_tokens");
    let counted_input = num("input_tokens") + num("cache_creation_input_tokens");
    let content = blocks.iter().cloned().map(Value::Object).collect();
    let message = reply::message(&st.ids.message(n), &model, content, Some(&stop), &usage);
    Answer { message, blocks, stop, usage, output, counted_input }
}

fn messages(
    st: &State,
    headers: &HeaderMap,
    body: Result<&Value, &String>,
    status_fault: Option<u16>,
    n: u64,
    rid: &str,
) -> Plan {
    let prompt = match prompt_of(st, body, Endpoint::Messages, rid) {
        Ok(p) => p,
        Err(plan) => return plan,
    };
    let Ok(v) = body else { return Plan::error(400, "the request body is not valid JSON", rid) };
    let estimate = prompt.tokens;
    if let Some(l) = &st.limits
        && let Err(limited) = lock(l).admit(Instant::now(), estimate)
    {
        return Plan::rate_limited(&limited, rid);
    }
    let refund = || {
        if let Some(l) = &st.limits {
            lock(l).correct_input(Instant::now(), estimate, 0);
        }
    };
    if let Some(s) = status_fault {
        refund();
        return Plan::fault(s, rid);
    }
    let default = Reply::default();
    let (rule, reply) = match st.script.choose(&Facts::of(v)) {
        Some((i, r)) => (Some(i), &r.reply),
        None => (None, &default),
    };
    let headers_of = |reply: &Reply| reply.headers.clone();
    if reply.status != 200 {
        refund();
        let mut plan = Plan::json(reply.status, &reply::rule_error(reply, rid));
        plan.headers = headers_of(reply);
        plan.reply_rule = rule;
        return plan;
    }
    let a = answer(st, v, prompt, reply, scope_of(headers), n);
    if let Some(l) = &st.limits {
        let mut l = lock(l);
        let now = Instant::now();
        l.correct_input(now, estimate, a.counted_input);
        l.debit_output(now, a.output);
    }
    let mut plan = if v.get("stream").and_then(Value::as_bool) == Some(true) {
        let mut start = a.message;
        if let Some(o) = start.as_object_mut() {
            o.insert("content".into(), json!([]));
            o.insert("stop_reason".into(), Value::Null);
        }
        let output = a.usage.get("output_tokens").cloned().unwrap_or(Value::from(0));
        let events = reply::sse_events(&start, &a.blocks, &a.stop, &output);
        Plan { payload: Payload::Sse(events), ..Plan::json(200, &Value::Null) }
    } else {
        Plan::json(200, &a.message)
    };
    plan.headers = headers_of(reply);
    plan.reply_rule = rule;
    plan
}

/// `{"input_tokens": N}`: the prompt's blocks by the same estimator as
/// usage, no cache (facts §5), at least 1.
fn count_tokens(st: &State, body: Result<&Value, &String>, rid: &str) -> Plan {
    match prompt_of(st, body, Endpoint::CountTokens, rid) {
        Ok(p) => Plan::json(200, &json!({"input_tokens": p.tokens.max(1)})),
        Err(plan) => plan,
    }
}

fn batch_create(st: &State, headers: &HeaderMap, body: Result<&Value, &String>, n: u64, rid: &str) -> Plan {
    let requests = match batches::parse_create(body.ok()) {
        Ok(r) => r,
        Err(e) => return Plan::error(e.status, &e.message, rid),
    };
    let scope = scope_of(headers);
    let default = Reply::default();
    let mut results = Vec::with_capacity(requests.len());
    for (i, (custom_id, params)) in requests.into_iter().enumerate() {
        let sub_rid = format!("{rid}_{i}");
        let result = match prompt_of(st, Ok(params), Endpoint::Batch, &sub_rid) {
            Err(plan) => errored(&plan),
            Ok(prompt) => {
                let reply = st.script.choose(&Facts::of(params)).map_or(&default, |(_, r)| &r.reply);
                if reply.status != 200 {
                    json!({"type": "errored", "error": reply::rule_error(reply, &sub_rid)})
                } else {
                    let m = st.counter.fetch_add(1, Ordering::Relaxed);
                    json!({"type": "succeeded", "message": answer(st, params, prompt, reply, scope, m).message})
                }
            }
        };
        results.push((custom_id.to_string(), result));
    }
    let obj = st.batches.create(st.ids.batch(n), results, &st.clock, st.addr);
    Plan::json(200, &obj)
}

/// A batch result of type `errored` from an error plan.
fn errored(plan: &Plan) -> Value {
    let error = match &plan.payload {
        Payload::Json(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    json!({"type": "errored", "error": error})
}

fn full(b: Vec<u8>) -> RBody {
    Full::new(Bytes::from(b)).map_err(|never: Infallible| match never {}).boxed_unsync()
}

/// `frames`, then a pause, then an error: hyper closes the connection
/// without finishing the body.
fn cut(frames: Vec<Bytes>) -> RBody {
    use futures_util::StreamExt;
    let head = futures_util::stream::iter(frames.into_iter().map(|b| Ok(Frame::data(b))));
    let tail = futures_util::stream::once(async {
        tokio::time::sleep(DROP_PAUSE).await;
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "drop fault"))
    });
    StreamBody::new(head.chain(tail)).boxed_unsync()
}

fn add_header(h: &mut HeaderMap, k: &str, v: &str) {
    if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
        h.insert(k, v);
    }
}

/// A whole body (cut in half by a drop, with the full content-length).
fn bytes_body(h: &mut HeaderMap, mut b: Vec<u8>, ctype: &str, drop: bool) -> RBody {
    add_header(h, CONTENT_TYPE.as_str(), ctype);
    if drop {
        add_header(h, CONTENT_LENGTH.as_str(), &b.len().to_string());
        b.truncate(b.len() / 2);
        cut(vec![Bytes::from(b)])
    } else {
        full(b)
    }
}

fn respond(st: &State, plan: Plan, rid: &str) -> Response<RBody> {
    let mut h = HeaderMap::new();
    add_header(&mut h, "request-id", rid);
    if let Some(l) = &st.limits {
        for (k, v) in lock(l).headers(Instant::now(), &st.clock) {
            add_header(&mut h, k, &v);
        }
    }
    let body = match plan.payload {
        Payload::Json(b) => bytes_body(&mut h, b, "application/json", plan.drop),
        Payload::Jsonl(b) => bytes_body(&mut h, b, "application/x-jsonl", plan.drop),
        Payload::Sse(mut events) => {
            add_header(&mut h, CONTENT_TYPE.as_str(), "text/event-stream; charset=utf-8");
            add_header(&mut h, "cache-control", "no-cache");
            if plan.drop {
                events.truncate((events.len() / 2).max(1));
                cut(events)
            } else {
                StreamBody::new(futures_util::stream::iter(events.into_iter().map(|b| Ok(Frame::data(b)))))
                    .boxed_unsync()
            }
        }
    };
    for (k, v) in &plan.headers {
        add_header(&mut h, k, v);
    }
    {
        let mut s = lock(&st.stats);
        *s.by_status.entry(plan.status).or_insert(0) += 1;
        s.dropped += u64::from(plan.drop);
        s.rate_limited += u64::from(plan.rate_limited);
    }
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(plan.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *resp.headers_mut() = h;
    resp
}
