//! `--record FILE`: every request appended as one JSON line, in the format
//! of the captures' `wire.jsonl`: `{"method", "path", "headers", "raw_b64",
//! "body", "reply_rule"}` (`headers` without `x-api-key` and
//! `authorization`; `body` = the parsed JSON or null; `reply_rule` = the
//! index of the script rule used, or null).
//!
//! Handlers serialize their line and send it over a bounded channel to one
//! writer task, which owns a buffered writer, flushes it at least every
//! 100 ms, and flushes and fsyncs it when closed.

use super::MockError;
use base64::Engine;
use hyper::HeaderMap;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Lines waiting for the writer before senders wait (back-pressure).
const QUEUE: usize = 4096;
const FLUSH_EVERY: Duration = Duration::from_millis(100);

enum Msg {
    Line(Vec<u8>),
    Close(oneshot::Sender<()>),
}

/// The sending side, cloned into the server state.
#[derive(Debug, Clone)]
pub struct RecordSender {
    tx: mpsc::Sender<Msg>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Msg")
    }
}

impl RecordSender {
    /// Queue one line (waits while the queue is full). A line sent after
    /// the writer stopped is lost; the writer's error is reported by
    /// [`Recorder::close`].
    pub async fn send(&self, line: Vec<u8>) {
        let _ = self.tx.send(Msg::Line(line)).await;
    }
}

/// The writer task.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    tx: mpsc::Sender<Msg>,
    task: JoinHandle<Result<u64, std::io::Error>>,
}

impl Recorder {
    /// Open `path` for appending (created if missing) and start the writer.
    pub async fn open(path: &Path) -> Result<Recorder, MockError> {
        let err = |source| MockError::Record { path: path.to_path_buf(), source };
        let file = tokio::fs::OpenOptions::new().create(true).append(true).open(path).await.map_err(err)?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(write_lines(rx, file));
        Ok(Recorder { path: path.to_path_buf(), tx, task })
    }

    pub fn sender(&self) -> RecordSender {
        RecordSender { tx: self.tx.clone() }
    }

    /// Write everything queued so far, flush, fsync, stop; the number of
    /// lines written.
    pub async fn close(self) -> Result<u64, MockError> {
        let (done_tx, done_rx) = oneshot::channel();
        let _ = self.tx.send(Msg::Close(done_tx)).await;
        let _ = done_rx.await;
        match self.task.await {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(source)) => Err(MockError::Record { path: self.path, source }),
            Err(e) => Err(MockError::Task(format!("record writer: {e}"))),
        }
    }
}

async fn write_lines(mut rx: mpsc::Receiver<Msg>, file: tokio::fs::File) -> Result<u64, std::io::Error> {
    let mut w = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = false;
    let mut lines = 0u64;
    let done = loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(Msg::Line(line)) => {
                    w.write_all(&line).await?;
                    dirty = true;
                    lines += 1;
                }
                Some(Msg::Close(done)) => break Some(done),
                None => break None,
            },
            _ = tick.tick() => if dirty {
                w.flush().await?;
                dirty = false;
            },
        }
    };
    w.flush().await?;
    w.get_ref().sync_all().await?;
    if let Some(done) = done {
        let _ = done.send(());
    }
    Ok(lines)
}

/// The record line of one request (with its trailing newline). `body` is
/// the parsed `raw`, if it parsed: its bytes are then written as they came
/// (the same JSON, without re-serializing a large body), unless they hold a
/// line break, which a JSONL line cannot.
pub fn line(
    method: &str,
    path: &str,
    headers: &HeaderMap,
    raw: &[u8],
    body: Option<&Value>,
    reply_rule: Option<usize>,
) -> Vec<u8> {
    let mut h = Map::new();
    for name in headers.keys() {
        let n = name.as_str();
        if n == "x-api-key" || n == "authorization" {
            continue;
        }
        let values: Vec<String> =
            headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect();
        h.insert(n.to_string(), Value::from(values.join(", ")));
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
    let mut out = Vec::with_capacity(raw.len() + b64.len() + 1024);
    // Writing JSON values to a Vec cannot fail.
    out.extend_from_slice(b"{\"method\":");
    let _ = serde_json::to_writer(&mut out, method);
    out.extend_from_slice(b",\"path\":");
    let _ = serde_json::to_writer(&mut out, path);
    out.extend_from_slice(b",\"headers\":");
    let _ = serde_json::to_writer(&mut out, &h);
    out.extend_from_slice(b",\"raw_b64\":\"");
    out.extend_from_slice(b64.as_bytes());
    out.extend_from_slice(b"\",\"body\":");
    match body {
        Some(_) if !raw.iter().any(|&c| c == b'\n' || c == b'\r') => out.extend_from_slice(raw.trim_ascii()),
        Some(v) => {
            let _ = serde_json::to_writer(&mut out, v);
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"reply_rule\":");
    match reply_rule {
        Some(i) => out.extend_from_slice(i.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b"}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_json_with_the_body_as_parsed() {
        let mut h = HeaderMap::new();
        h.insert("x-api-key", "secret".parse().unwrap());
        h.insert("anthropic-version", "2023-06-01".parse().unwrap());
        for raw in [&b" {\"a\": [1, 2.50]} "[..], b"{\"a\":\n1}", b"nope", b""] {
            let parsed: Option<Value> = serde_json::from_slice(raw).ok();
            let l = line("POST", "/v1/messages?beta=true", &h, raw, parsed.as_ref(), Some(2));
            assert_eq!(l.iter().filter(|&&c| c == b'\n').count(), 1);
            let v: Value = serde_json::from_slice(&l).unwrap();
            assert_eq!(v["body"], parsed.unwrap_or(Value::Null));
            assert_eq!(v["headers"], serde_json::json!({"anthropic-version": "2023-06-01"}));
            assert_eq!(v["reply_rule"], 2);
            let b64 = base64::engine::general_purpose::STANDARD.decode(v["raw_b64"].as_str().unwrap()).unwrap();
            assert_eq!(b64, raw);
        }
    }
}
