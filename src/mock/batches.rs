//! Message Batches (facts §4): validation of a create request, the batch
//! objects and their lifecycle, results as JSONL.
//!
//! Every request of a batch is answered when the batch is created (the
//! server computes its result at once); the batch shows `in_progress` for
//! the configured delay, then `ended`. A cancel before the end ends it at
//! once with every request `canceled` (the cancel reply itself shows
//! `canceling`).

use super::clock::{Clock, rfc3339};
use super::request::{Endpoint, check_body};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// At most this many requests per batch (facts §4; more is a 413).
pub const MAX_REQUESTS: usize = 100_000;
/// Results stay this long; `expires_at` is creation + 24 h (facts §4).
const EXPIRES_AFTER: Duration = Duration::from_secs(24 * 3600);

/// A create request refused: HTTP status and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub message: String,
}

fn refused(message: String) -> Refused {
    Refused { status: 400, message }
}

/// `custom_id` matches `^[a-zA-Z0-9_-]{1,64}$` (facts §4).
pub fn custom_id_ok(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// The requests of a create body `{"requests": [{custom_id, params}, …]}`,
/// checked (facts §4): custom_id pattern and uniqueness, params a valid
/// Messages body without `stream`, `max_tokens` ≥ 1, ≤ 100,000 requests.
pub fn parse_create(body: Option<&Value>) -> Result<Vec<(&str, &Value)>, Refused> {
    let Some(body) = body.and_then(Value::as_object) else {
        return Err(refused("The request body is not a JSON object".into()));
    };
    let requests = match body.get("requests") {
        Some(Value::Array(r)) => r,
        None => return Err(refused("requests: Field required".into())),
        Some(_) => return Err(refused("requests: Input should be a valid list".into())),
    };
    if requests.is_empty() {
        return Err(refused("requests: List should have at least 1 item".into()));
    }
    if requests.len() > MAX_REQUESTS {
        return Err(Refused {
            status: 413,
            message: format!("requests: a batch holds at most {MAX_REQUESTS} requests, got {}", requests.len()),
        });
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(requests.len());
    let mut out = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let Some(r) = r.as_object() else {
            return Err(refused(format!("requests.{i}: Input should be a valid dictionary")));
        };
        let id = match r.get("custom_id") {
            Some(Value::String(s)) => s.as_str(),
            None => return Err(refused(format!("requests.{i}.custom_id: Field required"))),
            Some(_) => return Err(refused(format!("requests.{i}.custom_id: Input should be a valid string"))),
        };
        if !custom_id_ok(id) {
            return Err(refused(format!(
                "requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$' (got {id:?})"
            )));
        }
        if let Some(j) = seen.insert(id, i) {
            return Err(refused(format!(
                "requests.{i}.custom_id: {id:?} is already used by requests.{j}; custom_id must be unique within a batch"
            )));
        }
        let params = r.get("params").ok_or_else(|| refused(format!("requests.{i}.params: Field required")))?;
        check_body(params, Endpoint::Batch).map_err(|e| refused(format!("requests.{i}.params.{e}")))?;
        out.push((id, params));
    }
    Ok(out)
}

#[derive(Debug)]
struct Batch {
    created: Instant,
    created_ms: u64,
    ends: Instant,
    cancel: Option<(Instant, u64)>,
    /// (custom_id, result object) in request order.
    results: Vec<(String, Value)>,
    succeeded: u64,
    errored: u64,
}

impl Batch {
    fn ended_at(&self) -> Instant {
        match self.cancel {
            Some((c, _)) => c.min(self.ends),
            None => self.ends,
        }
    }

    fn ended(&self, now: Instant) -> bool {
        now >= self.ended_at()
    }

    fn canceled_before_end(&self) -> bool {
        self.cancel.is_some_and(|(c, _)| c < self.ends)
    }
}

/// Every batch of the server.
#[derive(Debug)]
pub struct Batches {
    delay: Duration,
    map: Mutex<HashMap<String, Batch>>,
}

/// What a batch lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup<T> {
    Found(T),
    NotFound,
    /// Results asked for before the batch ended (its processing status).
    NotEnded(&'static str),
}

impl Batches {
    pub fn new(delay: Duration) -> Self {
        Batches { delay, map: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Batch>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Store a new batch with its results (`succeeded` / `errored` result
    /// objects, in request order); its object.
    pub fn create(&self, id: String, results: Vec<(String, Value)>, clock: &Clock, addr: SocketAddr) -> Value {
        let now = Instant::now();
        let count = |t: &str| results.iter().filter(|(_, r)| r.get("type").and_then(Value::as_str) == Some(t)).count();
        let batch = Batch {
            created: now,
            created_ms: clock.ms_at(now),
            ends: now + self.delay,
            cancel: None,
            succeeded: count("succeeded") as u64,
            errored: count("errored") as u64,
            results,
        };
        let obj = object(&id, &batch, now, addr, false);
        self.lock().insert(id, batch);
        obj
    }

    /// The batch object of `id`.
    pub fn get(&self, id: &str, addr: SocketAddr) -> Lookup<Value> {
        let now = Instant::now();
        match self.lock().get(id) {
            Some(b) => Lookup::Found(object(id, b, now, addr, false)),
            None => Lookup::NotFound,
        }
    }

    /// Cancel `id` (no effect on an ended batch); its object.
    pub fn cancel(&self, id: &str, clock: &Clock, addr: SocketAddr) -> Lookup<Value> {
        let now = Instant::now();
        let mut map = self.lock();
        let Some(b) = map.get_mut(id) else { return Lookup::NotFound };
        if b.ended(now) {
            return Lookup::Found(object(id, b, now, addr, false));
        }
        if b.cancel.is_none() {
            b.cancel = Some((now, clock.ms_at(now)));
        }
        Lookup::Found(object(id, b, now, addr, true))
    }

    /// The results JSONL of an ended batch.
    pub fn results(&self, id: &str) -> Lookup<Vec<u8>> {
        let now = Instant::now();
        let map = self.lock();
        let Some(b) = map.get(id) else { return Lookup::NotFound };
        if !b.ended(now) {
            return Lookup::NotEnded(if b.cancel.is_some() { "canceling" } else { "in_progress" });
        }
        let canceled = json!({"type": "canceled"});
        let mut out = Vec::new();
        for (custom_id, result) in &b.results {
            let result = if b.canceled_before_end() { &canceled } else { result };
            // Writing a Value to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, &json!({"custom_id": custom_id, "result": result}));
            out.push(b'\n');
        }
        Lookup::Found(out)
    }
}

/// A batch object (facts §4 fields), as of `now`.
fn object(id: &str, b: &Batch, now: Instant, addr: SocketAddr, canceling: bool) -> Value {
    let n = b.results.len() as u64;
    let ended = !canceling && b.ended(now);
    let status = if ended {
        "ended"
    } else if canceling || b.cancel.is_some() {
        "canceling"
    } else {
        "in_progress"
    };
    let (processing, succeeded, errored, canceled) = match (ended, b.canceled_before_end()) {
        (false, _) => (n, 0, 0, 0),
        (true, true) => (0, 0, 0, n),
        (true, false) => (0, b.succeeded, b.errored, 0),
    };
    let expires_ms = b.created_ms + EXPIRES_AFTER.as_millis() as u64;
    let ended_at = ended.then(|| {
        let at = b.ended_at();
        rfc3339(b.created_ms + at.saturating_duration_since(b.created).as_millis() as u64, true)
    });
    json!({
        "id": id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": processing, "succeeded": succeeded, "errored": errored,
            "canceled": canceled, "expired": 0
        },
        "ended_at": ended_at,
        "created_at": rfc3339(b.created_ms, true),
        "expires_at": rfc3339(expires_ms, true),
        "archived_at": null,
        "cancel_initiated_at": b.cancel.map(|(_, ms)| rfc3339(ms, true)),
        "results_url": ended.then(|| format!("http://{addr}/v1/messages/batches/{id}/results")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str) -> Value {
        json!({"custom_id": id, "params": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}})
    }

    #[test]
    fn create_checks() {
        assert_eq!(parse_create(Some(&json!({"requests": [req("a-1"), req("b_2")]}))).unwrap().len(), 2);
        let e = |v: Value| parse_create(Some(&v)).unwrap_err();
        assert!(
            e(json!({"requests": [req("a"), req("bad id")]}))
                .message
                .starts_with("requests.1.custom_id: String should match")
        );
        assert!(e(json!({"requests": [req(&"x".repeat(65))]})).message.contains("pattern"));
        assert!(e(json!({"requests": [req("a"), req("a")]})).message.contains("already used by requests.0"));
        let mut s = req("s");
        s["params"]["stream"] = json!(true);
        assert!(e(json!({"requests": [s]})).message.starts_with("requests.0.params.stream:"));
        assert_eq!(e(json!({"requests": []})).status, 400);
        let many: Vec<Value> = (0..=MAX_REQUESTS).map(|i| json!({"custom_id": format!("r{i}")})).collect();
        assert_eq!(e(json!({"requests": many})).status, 413);
        assert!(custom_id_ok(&"a".repeat(64)));
    }
}
