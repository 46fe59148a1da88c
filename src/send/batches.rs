//! `ctxasm batch submit|status|results`: the same requests through the
//! Message Batches API (facts §4).
//!
//! - **submit** splits the input into batches of at most 100,000 requests
//!   and 256 MB of JSON body (`POST /v1/messages/batches` takes one JSON
//!   body `{"requests":[{custom_id, params}, …]}`, not a file upload);
//!   `stream` is not allowed inside a batch, so a `"stream"` key is removed
//!   from `params` (the params are re-serialized only then, keys in their
//!   order); a `custom_id` must match `^[a-zA-Z0-9_-]{1,64}$`. Each batch
//!   id is printed and appended to the state file. A submission that got no
//!   reply (connection error, timeout) is not retried — the batch may exist
//!   — and stops the run; error statuses are retried per [`super::retry`].
//! - **status** prints `processing_status` and `request_counts`; `--wait`
//!   polls until every batch has ended, backing off ×1.5 per poll up to a
//!   minute.
//! - **results** downloads each ended batch's JSONL results and writes them
//!   in the journal format of `send --results` (same writer: resume, no
//!   duplicate): `succeeded` → status 200, `response` = the message, `usage`
//!   its usage; `errored` → the HTTP status of the error's type (facts
//!   §3.3, e.g. `invalid_request_error` → 400) and `error` = its envelope;
//!   `canceled` and `expired` → status 0 and an error envelope of that type.
//!   `attempts` is 1 and `latency_ms` 0 (a batch does not say).

use super::client::{Attempt, Client, chain, error_body, read_reply};
use super::input::{Input, InputError, Request};
use super::journal::{JournalSender, Outcome, Record, error_envelope};
use super::retry::{Decision, Failure, decide_capped, is_spend_cap, status_of_error_type};
use futures_util::StreamExt;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Per batch: at most this many requests (facts §4)…
pub const MAX_REQUESTS: usize = 100_000;
/// …and at most this many bytes of body (256 MB).
pub const MAX_BYTES: usize = 256_000_000;

/// How to split the input (the API's limits unless a test says otherwise).
#[derive(Debug, Clone, Copy)]
pub struct Split {
    pub requests: usize,
    pub bytes: usize,
}

impl Default for Split {
    fn default() -> Self {
        Split { requests: MAX_REQUESTS, bytes: MAX_BYTES }
    }
}

/// A batch call that failed.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{what}: HTTP {status}: {message}")]
    Http { what: String, status: u16, message: String },
    #[error("{what}: no reply: {message}")]
    Transport { what: String, message: String },
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Invalid(String),
}

/// One batch ready to submit.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub body: Vec<u8>,
    pub requests: usize,
    /// 1-based input lines of its first and last request.
    pub lines: (usize, usize),
}

/// `custom_id` as the Batches API accepts it.
pub fn valid_custom_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The params of `req` for a batch: without `stream`.
pub fn batch_params(req: &Request) -> Result<Vec<u8>, String> {
    let body = &req.body[..];
    if memchr::memmem::find(body, b"\"stream\"").is_none() {
        return Ok(body.to_vec());
    }
    let mut v: serde_json::Map<String, Value> = serde_json::from_slice(body).map_err(|e| format!("params: {e}"))?;
    v.remove("stream");
    serde_json::to_vec(&v).map_err(|e| format!("params: {e}"))
}

/// Split the requests into batch bodies; a request that cannot go in a
/// batch (bad `custom_id`, larger than a whole batch) is an error naming
/// its line.
pub fn split(input: &Input, limits: Split) -> (Vec<Chunk>, Vec<InputError>) {
    const HEAD: &[u8] = b"{\"requests\":[";
    let mut chunks = Vec::new();
    let mut errors = Vec::new();
    let mut cur: Option<Chunk> = None;
    for req in &input.requests {
        let err = |message: String| InputError { file: input.shown.clone(), line: req.line, message };
        if !valid_custom_id(&req.custom_id) {
            errors
                .push(err(format!("custom_id {:?} is not valid in a batch (^[a-zA-Z0-9_-]{{1,64}}$)", req.custom_id)));
            continue;
        }
        let params = match batch_params(req) {
            Ok(p) => p,
            Err(e) => {
                errors.push(err(e));
                continue;
            }
        };
        let mut item = Vec::with_capacity(params.len() + req.custom_id.len() + 32);
        item.extend_from_slice(b"{\"custom_id\":");
        crate::json::writer::write_str(&mut item, &req.custom_id);
        item.extend_from_slice(b",\"params\":");
        item.extend_from_slice(&params);
        item.push(b'}');
        if HEAD.len() + item.len() + 2 > limits.bytes {
            errors.push(err(format!(
                "request of {} bytes is larger than a batch ({} bytes)",
                item.len(),
                limits.bytes
            )));
            continue;
        }
        if let Some(c) = &cur
            && (c.requests >= limits.requests || c.body.len() + 1 + item.len() + 2 > limits.bytes)
            && let Some(done) = cur.take()
        {
            chunks.push(done);
        }
        let c = cur.get_or_insert_with(|| Chunk { body: HEAD.to_vec(), requests: 0, lines: (req.line, req.line) });
        if c.requests > 0 {
            c.body.push(b',');
        }
        c.body.extend_from_slice(&item);
        c.requests += 1;
        c.lines.1 = req.line;
    }
    chunks.extend(cur);
    for c in &mut chunks {
        c.body.extend_from_slice(b"]}");
    }
    (chunks, errors)
}

/// What `submit` created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub id: String,
    pub requests: usize,
}

/// Submit each chunk (retrying error statuses per the SDK policy), calling
/// `on_batch` with each new batch before the next is sent.
pub async fn submit(
    client: &Client,
    chunks: Vec<Chunk>,
    max_attempts: u32,
    on_batch: &mut dyn FnMut(&Submitted) -> Result<(), BatchError>,
) -> Result<Vec<Submitted>, BatchError> {
    let mut out = Vec::new();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let what = format!("batch {} (input lines {}–{})", i + 1, chunk.lines.0, chunk.lines.1);
        let body = bytes::Bytes::from(chunk.body);
        let mut attempt = 0;
        let reply = loop {
            attempt += 1;
            let sent = client.request(reqwest::Method::POST, "/v1/messages/batches").body(body.clone()).send().await;
            let result = match sent {
                Ok(r) => read_reply(r).await,
                Err(e) => Attempt::Transport { timeout: e.is_timeout(), message: chain(&e) },
            };
            match result {
                Attempt::Success { message, .. } => break message,
                // The batch may have been created: never sent twice.
                Attempt::Transport { message, .. } => return Err(BatchError::Transport { what, message }),
                Attempt::Status { status, headers, error } => {
                    let f = Failure::Status { status, headers: &headers, spend_cap: is_spend_cap(&error) };
                    let cap = super::retry::DEFAULT_MAX_RETRY_WAIT;
                    match decide_capped(&f, attempt, max_attempts, cap, super::dispatch::jitter(), SystemTime::now()) {
                        Decision::Retry(wait) => tokio::time::sleep(wait).await,
                        Decision::Final => return Err(http_error(what, status, &error)),
                        Decision::Defer(asked) => {
                            let mut e = http_error(what, status, &error);
                            if let BatchError::Http { message, .. } = &mut e {
                                message.push_str(&format!(
                                    " (the server asks to wait {} s, more than {} s: not waited for)",
                                    asked.as_secs(),
                                    cap.as_secs()
                                ));
                            }
                            return Err(e);
                        }
                    }
                }
            }
        };
        let Some(id) = reply.get("id").and_then(Value::as_str) else {
            return Err(BatchError::Invalid(format!("{what}: the reply has no batch id: {reply}")));
        };
        let s = Submitted { id: id.to_string(), requests: chunk.requests };
        on_batch(&s)?;
        out.push(s);
    }
    Ok(out)
}

fn http_error(what: String, status: u16, error: &Value) -> BatchError {
    let message =
        error.pointer("/error/message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string);
    BatchError::Http { what, status, message }
}

/// Append a submitted batch to the state file (one JSON line per batch).
pub fn append_state(path: &Path, s: &Submitted, input: &str, endpoint: &str) -> Result<(), BatchError> {
    let line = serde_json::json!({
        "id": s.id,
        "requests": s.requests,
        "submitted_at": crate::time::format_system_time(SystemTime::now()),
        "input": input,
        "endpoint": endpoint,
    });
    let io = |e: std::io::Error| BatchError::Io(format!("state file {}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
    f.write_all(format!("{line}\n").as_bytes()).map_err(io)?;
    f.sync_data().map_err(io)
}

/// What a state file holds: its batch ids (in order, each once) and the
/// endpoints they were submitted to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateFile {
    pub ids: Vec<String>,
    /// The distinct `endpoint` values, without a trailing `/`, in order.
    pub endpoints: Vec<String>,
    /// Lines without an `endpoint`.
    pub unnamed: usize,
}

/// The batch ids of a state file, in order (each once).
pub fn read_state(path: &Path) -> Result<Vec<String>, BatchError> {
    read_state_file(path).map(|s| s.ids)
}

/// Read a state file written by `batch submit --state`.
pub fn read_state_file(path: &Path) -> Result<StateFile, BatchError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| BatchError::Io(format!("state file {}: {e}", path.display())))?;
    let mut state = StateFile::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str::<Value>(line).ok();
        let id = v
            .as_ref()
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
            .ok_or_else(|| BatchError::Invalid(format!("state file {}:{}: no batch id", path.display(), i + 1)))?;
        match v.as_ref().and_then(|v| v.get("endpoint")).and_then(Value::as_str) {
            Some(e) => {
                let e = e.trim().trim_end_matches('/').to_string();
                if !state.endpoints.contains(&e) {
                    state.endpoints.push(e);
                }
            }
            None => state.unnamed += 1,
        }
        if !state.ids.contains(&id) {
            state.ids.push(id);
        }
    }
    if state.ids.is_empty() {
        return Err(BatchError::Invalid(format!("state file {} names no batch", path.display())));
    }
    Ok(state)
}

/// The endpoint to ask about the batches of a state file: the one they
/// were submitted to (a batch id means nothing elsewhere, and the key must
/// not go to another server). `explicit` (`--endpoint`) must name the same
/// one; a state file naming several, or none, needs no guess either:
/// those are errors naming what was found.
pub fn state_endpoint(state: &StateFile, path: &Path, explicit: Option<&str>) -> Result<String, BatchError> {
    let shown = path.display();
    let explicit = explicit.map(|e| e.trim().trim_end_matches('/'));
    match (state.endpoints.as_slice(), explicit) {
        ([one], _) if state.unnamed > 0 => Err(BatchError::Invalid(format!(
            "state file {shown}: {} batches name no endpoint and the others {one}: give each endpoint a state file of its own",
            state.unnamed
        ))),
        ([one], None) => Ok(one.clone()),
        ([one], Some(e)) if e == one => Ok(one.clone()),
        ([one], Some(e)) => Err(BatchError::Invalid(format!(
            "--endpoint {e} is not the endpoint the batches of state file {shown} were submitted to ({one}); \
             drop --endpoint to use the state's"
        ))),
        ([], Some(e)) => Ok(e.to_string()),
        ([], None) => Err(BatchError::Invalid(format!(
            "state file {shown} does not say which endpoint its batches were submitted to: give --endpoint"
        ))),
        (many, _) => Err(BatchError::Invalid(format!(
            "state file {shown} holds batches of several endpoints ({}): give each a state file of its own",
            many.join(", ")
        ))),
    }
}

fn batch_path(id: &str) -> Result<String, BatchError> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(BatchError::Invalid(format!("{id:?} is not a batch id")));
    }
    Ok(format!("/v1/messages/batches/{id}"))
}

async fn get_json(client: &Client, path: &str, what: &str) -> Result<Value, BatchError> {
    let resp = client
        .request(reqwest::Method::GET, path)
        .send()
        .await
        .map_err(|e| BatchError::Transport { what: what.to_string(), message: chain(&e) })?;
    match read_reply(resp).await {
        Attempt::Success { message, .. } => Ok(message),
        Attempt::Status { status, error, .. } => Err(http_error(what.to_string(), status, &error)),
        Attempt::Transport { message, .. } => Err(BatchError::Transport { what: what.to_string(), message }),
    }
}

/// `GET /v1/messages/batches/{id}`.
pub async fn status(client: &Client, id: &str) -> Result<Value, BatchError> {
    get_json(client, &batch_path(id)?, &format!("batch {id}")).await
}

/// One status line: id, processing_status, request_counts.
pub fn status_line(batch: &Value) -> String {
    let s = |k: &str| batch.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let mut line = format!("{} {}", s("id"), s("processing_status"));
    for k in ["processing", "succeeded", "errored", "canceled", "expired"] {
        let n = batch.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64).unwrap_or(0);
        line.push_str(&format!(" {k}={n}"));
    }
    line
}

/// The batch has ended (results are available).
pub fn ended(batch: &Value) -> bool {
    batch.get("processing_status").and_then(Value::as_str) == Some("ended")
}

/// Poll until every batch has ended, calling `on_poll` with each status;
/// waits `first`, then ×1.5 per round, at most 60 s.
pub async fn wait(
    client: &Client,
    ids: &[String],
    first: Duration,
    on_poll: &mut dyn FnMut(&Value),
) -> Result<Vec<Value>, BatchError> {
    let mut delay = first;
    loop {
        let mut all = Vec::new();
        for id in ids {
            let b = status(client, id).await?;
            on_poll(&b);
            all.push(b);
        }
        if all.iter().all(ended) {
            return Ok(all);
        }
        tokio::time::sleep(delay).await;
        delay = delay.mul_f64(1.5).min(Duration::from_secs(60));
    }
}

/// A result line of the Batches API as a journal record.
pub fn result_record(line: &Value) -> Result<Record, String> {
    let custom_id = line.get("custom_id").and_then(Value::as_str).ok_or("no custom_id")?.to_string();
    let result = line.get("result").ok_or("no result")?;
    let kind = result.get("type").and_then(Value::as_str).ok_or("no result.type")?;
    let rec = |status, usage, outcome| Record {
        custom_id: custom_id.clone(),
        status,
        attempts: 1,
        latency_ms: 0,
        usage,
        outcome,
        // A batch's results are its final answers (expired and canceled too).
        retry_later: None,
    };
    Ok(match kind {
        "succeeded" => {
            let message = result.get("message").cloned().ok_or("succeeded without a message")?;
            rec(200, message.get("usage").cloned(), Outcome::Response(message))
        }
        "errored" => {
            let e = result.get("error").cloned().unwrap_or(Value::Null);
            let envelope = if e.get("error").is_some_and(Value::is_object) {
                e
            } else {
                serde_json::json!({"type": "error", "error": e})
            };
            let t = envelope.pointer("/error/type").and_then(Value::as_str).unwrap_or("");
            rec(status_of_error_type(t), None, Outcome::Error(envelope))
        }
        other => rec(0, None, Outcome::Error(error_envelope(other, &format!("the batch request was {other}")))),
    })
}

/// Counts of the result types written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResultCounts {
    pub succeeded: u64,
    pub failed: u64,
    pub bad_lines: u64,
    /// One line per bad result line (`results of batch …: line N: …`), in
    /// order, for the caller to show.
    pub warnings: Vec<String>,
}

/// Download an ended batch's results into the journal.
pub async fn results(client: &Client, id: &str, journal: &JournalSender) -> Result<ResultCounts, BatchError> {
    let batch = status(client, id).await?;
    if !ended(&batch) {
        return Err(BatchError::Invalid(format!(
            "batch {id} has not ended ({}); wait with `ctxasm batch status --wait`",
            status_line(&batch)
        )));
    }
    let path = format!("{}/results", batch_path(id)?);
    let what = format!("results of batch {id}");
    let resp = client
        .request(reqwest::Method::GET, &path)
        .send()
        .await
        .map_err(|e| BatchError::Transport { what: what.clone(), message: chain(&e) })?;
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        let body = resp.bytes().await.unwrap_or_default();
        return Err(http_error(what, status, &error_body(status, &body)));
    }
    let mut counts = ResultCounts::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut stream = resp.bytes_stream();
    let mut line_no = 0usize;
    let mut take_line = |line: &[u8], counts: &mut ResultCounts| -> Result<(), BatchError> {
        line_no += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        match serde_json::from_slice::<Value>(line).map_err(|e| e.to_string()).and_then(|v| result_record(&v)) {
            Ok(rec) => {
                if rec.is_ok() {
                    counts.succeeded += 1;
                } else {
                    counts.failed += 1;
                }
                if !journal.send(rec) {
                    return Err(BatchError::Io("the journal writer stopped (an I/O error)".into()));
                }
            }
            Err(e) => {
                counts.bad_lines += 1;
                counts.warnings.push(format!("{what}: line {line_no}: {e}"));
            }
        }
        Ok(())
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BatchError::Transport { what: what.clone(), message: chain(&e) })?;
        buf.extend_from_slice(&chunk);
        while let Some(i) = memchr::memchr(b'\n', &buf) {
            let line: Vec<u8> = buf.drain(..=i).collect();
            take_line(&line[..line.len() - 1], &mut counts)?;
        }
    }
    if !buf.is_empty() {
        take_line(&buf, &mut counts)?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(n: usize, extra: &str) -> Input {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!(
                "{{\"custom_id\":\"r{i}\",\"params\":{{\"model\":\"m\",\"max_tokens\":1{extra}}}}}\n"
            ));
        }
        super::super::input::parse(bytes::Bytes::from(text), "in.jsonl")
    }

    #[test]
    fn splits_by_count_and_bytes() {
        let inp = input(10, "");
        let (chunks, errors) = split(&inp, Split { requests: 4, bytes: 1 << 20 });
        assert!(errors.is_empty());
        assert_eq!(chunks.iter().map(|c| c.requests).collect::<Vec<_>>(), [4, 4, 2]);
        assert_eq!(chunks[1].lines, (5, 8));
        for c in &chunks {
            let v: Value = serde_json::from_slice(&c.body).unwrap();
            assert_eq!(v["requests"].as_array().unwrap().len(), c.requests);
        }
        let item = br#"{"custom_id":"r0","params":{"model":"m","max_tokens":1}}"#.len();
        let (chunks, _) = split(&inp, Split { requests: 100, bytes: 13 + 3 * item + 2 + 2 });
        assert_eq!(chunks.iter().map(|c| c.requests).collect::<Vec<_>>(), [3, 3, 3, 1]);
        assert!(chunks.iter().all(|c| c.body.len() <= 13 + 3 * item + 4));
        let (chunks, errors) = split(&inp, Split { requests: 100, bytes: 20 });
        assert!(chunks.is_empty());
        assert_eq!(errors.len(), 10);
    }

    #[test]
    fn stream_is_removed_and_ids_checked() {
        let inp = input(1, ",\"stream\":true,\"z\":1");
        let p = batch_params(&inp.requests[0]).unwrap();
        assert_eq!(p, br#"{"model":"m","max_tokens":1,"z":1}"#);
        let text = "{\"custom_id\":\"has space\",\"params\":{\"model\":\"m\"}}\n";
        let inp = super::super::input::parse(bytes::Bytes::from(text), "in.jsonl");
        let (chunks, errors) = split(&inp, Split::default());
        assert!(chunks.is_empty());
        assert!(errors[0].to_string().starts_with("in.jsonl:1: custom_id \"has space\""));
        assert!(valid_custom_id(&"a".repeat(64)));
        assert!(!valid_custom_id(&"a".repeat(65)));
        assert!(!valid_custom_id(""));
    }

    #[test]
    fn result_lines_become_journal_records() {
        let ok: Value = serde_json::json!({"custom_id":"a","result":{"type":"succeeded","message":{"id":"m","usage":{"input_tokens":3}}}});
        let r = result_record(&ok).unwrap();
        assert_eq!((r.status, r.attempts), (200, 1));
        assert_eq!(r.usage, Some(serde_json::json!({"input_tokens":3})));
        let err: Value = serde_json::json!({"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"x"}}}});
        let r = result_record(&err).unwrap();
        assert_eq!(r.status, 400);
        assert!(matches!(&r.outcome, Outcome::Error(e) if e["error"]["message"] == "x"));
        let inner: Value = serde_json::json!({"custom_id":"b","result":{"type":"errored","error":{"type":"overloaded_error","message":"x"}}});
        assert_eq!(result_record(&inner).unwrap().status, 529);
        let exp: Value = serde_json::json!({"custom_id":"c","result":{"type":"expired"}});
        let r = result_record(&exp).unwrap();
        assert_eq!(r.status, 0);
        assert!(matches!(&r.outcome, Outcome::Error(e) if e["error"]["type"] == "expired"));
        assert!(result_record(&serde_json::json!({"result":{}})).is_err());
    }

    #[test]
    fn state_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.jsonl");
        for id in ["msgbatch_1", "msgbatch_2", "msgbatch_1"] {
            append_state(&p, &Submitted { id: id.into(), requests: 3 }, "in", "http://x").unwrap();
        }
        assert_eq!(read_state(&p).unwrap(), ["msgbatch_1", "msgbatch_2"]);
        assert!(batch_path("../x").is_err());
        let st = read_state_file(&p).unwrap();
        assert_eq!(st.endpoints, ["http://x"]);
        assert_eq!(state_endpoint(&st, &p, None).unwrap(), "http://x");
        assert_eq!(state_endpoint(&st, &p, Some("http://x/")).unwrap(), "http://x");
        let err = state_endpoint(&st, &p, Some("https://api.anthropic.com")).unwrap_err().to_string();
        assert!(err.contains("https://api.anthropic.com") && err.contains("(http://x)"), "{err}");
        append_state(&p, &Submitted { id: "msgbatch_3".into(), requests: 1 }, "in", "http://y").unwrap();
        let err = state_endpoint(&read_state_file(&p).unwrap(), &p, None).unwrap_err().to_string();
        assert!(err.contains("http://x, http://y"), "{err}");
        std::fs::write(&p, "{\"id\":\"msgbatch_9\"}\n").unwrap();
        let st = read_state_file(&p).unwrap();
        assert!(state_endpoint(&st, &p, None).is_err());
        assert_eq!(state_endpoint(&st, &p, Some("http://z")).unwrap(), "http://z");
    }
}
