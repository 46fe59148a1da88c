//! One HTTP attempt: `POST {endpoint}/v1/messages` with the request's body
//! bytes as they are in the input, and the reply read to the end — a JSON
//! message, or an SSE stream rebuilt into one ([`super::sse`]).
//!
//! Headers: `x-api-key` (marked sensitive: never printed, logged, written
//! to the journal or put in an error), `anthropic-version: 2023-06-01`,
//! `content-type: application/json`, and `anthropic-beta` from `--beta`
//! (the batch format carries no betas: `assemble` drops `betas` from the
//! params since they are a header).

use super::sse::{MessageBuilder, SseParser, StreamEnd};
use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use std::time::Duration;

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach the API.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL, e.g. `https://api.anthropic.com`.
    pub endpoint: String,
    /// `None` only for a client that will never send (dry runs).
    pub api_key: Option<String>,
    /// `anthropic-beta`, a comma list.
    pub beta: Option<String>,
    /// Per attempt, connect to last byte.
    pub timeout: Duration,
    /// Connections kept open.
    pub pool: usize,
}

/// The result of one attempt.
#[derive(Debug)]
pub enum Attempt {
    /// A 2xx reply with a whole message.
    Success { status: u16, message: Value, headers: HeaderMap },
    /// An error status, or an `event: error` in a 200 stream (its status is
    /// then the error type's, [`super::retry::status_of_error_type`]).
    Status { status: u16, headers: HeaderMap, error: Value },
    /// No usable reply: connection error, cut or unreadable reply, timeout.
    Transport { timeout: bool, message: String },
}

/// Sends attempts; cheap to share (`reqwest::Client` is a pool handle).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    headers: HeaderMap,
    timeout: Duration,
}

/// A configuration that cannot give a client.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

impl Client {
    pub fn new(cfg: &ClientConfig) -> Result<Client, ClientError> {
        let base = cfg.endpoint.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError(format!("--endpoint must be an http:// or https:// URL, got {base:?}")));
        }
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &cfg.api_key {
            // The error never shows the key.
            let mut v = HeaderValue::from_str(key.trim())
                .map_err(|_| ClientError("ANTHROPIC_API_KEY holds characters a header cannot carry".into()))?;
            v.set_sensitive(true);
            headers.insert("x-api-key", v);
        }
        if let Some(beta) = cfg.beta.as_deref().filter(|b| !b.trim().is_empty()) {
            let v = HeaderValue::from_str(beta.trim())
                .map_err(|_| ClientError(format!("--beta {beta:?} is not a valid header value")))?;
            headers.insert("anthropic-beta", v);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5).min(cfg.timeout))
            .pool_max_idle_per_host(cfg.pool.max(1))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ClientError(format!("cannot build the HTTP client: {}", chain(&e))))?;
        Ok(Client { http, base, headers, timeout: cfg.timeout })
    }

    /// `{endpoint}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request to `path` with the API headers.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path)).headers(self.headers.clone()).timeout(self.timeout)
    }

    /// One attempt of one Messages request.
    pub async fn send_message(&self, body: Bytes) -> Attempt {
        let resp = match self.request(reqwest::Method::POST, "/v1/messages").body(body).send().await {
            Ok(r) => r,
            Err(e) => return transport(&e),
        };
        read_reply(resp).await
    }
}

/// Read a reply to the end.
pub async fn read_reply(resp: reqwest::Response) -> Attempt {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let is_sse = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
    if (200..300).contains(&status) && is_sse {
        return read_stream(status, headers, resp).await;
    }
    let body = match resp.bytes().await {
        Ok(b) => b,
        Err(e) => return transport(&e),
    };
    if (200..300).contains(&status) {
        return match serde_json::from_slice::<Value>(&body) {
            Ok(message) if message.is_object() => Attempt::Success { status, message, headers },
            _ => Attempt::Transport {
                timeout: false,
                message: format!("HTTP {status} reply is not a JSON message: {}", snippet(&body)),
            },
        };
    }
    Attempt::Status { status, headers, error: error_body(status, &body) }
}

async fn read_stream(status: u16, headers: HeaderMap, resp: reqwest::Response) -> Attempt {
    let mut parser = SseParser::default();
    let mut builder = MessageBuilder::default();
    let mut events = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => parser.feed(&c, &mut events),
            Err(e) => return transport(&e),
        }
        for ev in events.drain(..) {
            builder.apply(&ev);
        }
        if builder.ended() {
            break;
        }
    }
    if !builder.ended() {
        parser.finish(&mut events);
        for ev in events.drain(..) {
            builder.apply(&ev);
        }
    }
    match builder.finish() {
        StreamEnd::Message(message) => Attempt::Success { status, message, headers },
        StreamEnd::Error(error) => {
            let kind = error.pointer("/error/type").and_then(Value::as_str).unwrap_or("");
            Attempt::Status { status: super::retry::status_of_error_type(kind), headers, error }
        }
        StreamEnd::Incomplete(message) => Attempt::Transport { timeout: false, message },
    }
}

/// The error envelope of an error reply, or one in the same shape for a
/// body that is not one (a proxy's HTML page, facts §3.3 on 413).
pub fn error_body(status: u16, body: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) if v.get("error").is_some_and(Value::is_object) => v,
        _ => super::journal::error_envelope("http_error", &format!("HTTP {status}: {}", snippet(body))),
    }
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn transport(e: &reqwest::Error) -> Attempt {
    Attempt::Transport { timeout: e.is_timeout(), message: chain(e) }
}

/// An error and its causes on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies() {
        let e = error_body(400, br#"{"type":"error","error":{"type":"invalid_request_error","message":"x"}}"#);
        assert_eq!(e["error"]["type"], "invalid_request_error");
        let e = error_body(413, b"<html>\n<body>Request Entity Too Large</body></html>");
        assert_eq!(e["error"]["type"], "http_error");
        assert_eq!(e["error"]["message"], "HTTP 413: <html> <body>Request Entity Too Large</body></html>");
    }

    #[test]
    fn key_is_sensitive_and_bad_config_is_refused() {
        let cfg = ClientConfig {
            endpoint: "http://127.0.0.1:9/".into(),
            api_key: Some("sk-secret".into()),
            beta: Some("a,b".into()),
            timeout: Duration::from_secs(1),
            pool: 1,
        };
        let c = Client::new(&cfg).unwrap();
        assert_eq!(c.url("/v1/messages"), "http://127.0.0.1:9/v1/messages");
        assert!(c.headers.get("x-api-key").unwrap().is_sensitive());
        assert!(!format!("{c:?}").contains("sk-secret"));
        let bad = ClientConfig { api_key: Some("sk\nx".into()), ..cfg.clone() };
        let err = Client::new(&bad).unwrap_err().to_string();
        assert!(!err.contains("sk"), "{err}");
        assert!(Client::new(&ClientConfig { endpoint: "ftp://x".into(), ..cfg }).is_err());
    }
}
