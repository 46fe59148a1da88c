//! What the server writes: message objects, `usage`, the SSE event
//! sequence of mock_anthropic.py, and error envelopes (facts §3.3).

use super::script::Reply;
use crate::cost::sim::SimResult;
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// Id generator: `msg_01<run><n>`, `req_01<run><n>`, `toolu_01<run><n><j>`
/// as mock_anthropic.py writes them; `run` (12 hex digits) differs per
/// server, so ids are unique across runs as real ones are.
#[derive(Debug, Clone)]
pub struct Ids {
    run: String,
}

impl Ids {
    pub fn new(run: u64) -> Self {
        Ids { run: format!("{:012x}", run & 0xffff_ffff_ffff) }
    }

    pub fn message(&self, n: u64) -> String {
        format!("msg_01{}{n:05}", self.run)
    }

    pub fn request(&self, n: u64) -> String {
        format!("req_01{}{n:05}", self.run)
    }

    pub fn tool_use(&self, n: u64, j: usize) -> String {
        format!("toolu_01{}{n:04}{j:02}", self.run)
    }

    pub fn batch(&self, n: u64) -> String {
        format!("msgbatch_01{}{n:05}", self.run)
    }
}

/// `error.type` of an HTTP status (facts §3.3; other 4xx are
/// `invalid_request_error`, other 5xx `api_error`).
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        409 => "conflict_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

/// The message of an injected error status.
pub fn fault_message(status: u16) -> &'static str {
    match status {
        529 => "Overloaded",
        500 => "Internal server error",
        504 => "Request timed out",
        429 => "Rate limited (injected fault)",
        _ => "Injected fault",
    }
}

/// `{"type":"error","error":{"type","message"},"request_id"}` (facts §3.3).
pub fn error_envelope(kind: &str, message: &str, request_id: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id})
}

/// The error body of a rule's non-200 reply: its `error` as an envelope
/// (an inner `{type, message}` is wrapped), `request_id` added; default
/// `overloaded_error` as in mock_anthropic.py.
pub fn rule_error(reply: &Reply, request_id: &str) -> Value {
    let mut v = match &reply.error {
        Some(e) if e.get("error").is_some() => e.clone(),
        Some(e) => json!({"type": "error", "error": e}),
        None => json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    };
    if let Some(o) = v.as_object_mut() {
        o.entry("request_id").or_insert_with(|| Value::from(request_id));
    }
    v
}

/// `usage` of a reply (key order of the real API): the simulator's split,
/// `output`, then the rule's overrides (mock_anthropic.py `usage.update`).
pub fn usage(sim: &SimResult, output: u64, overrides: &Map<String, Value>) -> Map<String, Value> {
    let mut u = Map::new();
    u.insert("input_tokens".into(), sim.input.into());
    u.insert("cache_creation_input_tokens".into(), sim.cache_creation().into());
    u.insert("cache_read_input_tokens".into(), sim.cache_read.into());
    u.insert(
        "cache_creation".into(),
        json!({"ephemeral_5m_input_tokens": sim.cache_write_5m, "ephemeral_1h_input_tokens": sim.cache_write_1h}),
    );
    u.insert("output_tokens".into(), output.into());
    for (k, v) in overrides {
        u.insert(k.clone(), v.clone());
    }
    u
}

/// The content blocks of a rule's reply, tool_use ids generated where
/// missing (request `n`, block `j`).
pub fn realize_blocks(reply: &Reply, ids: &Ids, n: u64) -> Vec<Map<String, Value>> {
    reply
        .blocks
        .iter()
        .enumerate()
        .map(|(j, b)| {
            let mut b = b.clone();
            if b.get("type").and_then(Value::as_str) == Some("tool_use") && !b.contains_key("id") {
                b.insert("id".into(), Value::from(ids.tool_use(n, j)));
            }
            b
        })
        .collect()
}

/// The stop reason: the rule's, else `tool_use` when a block is one, else `end_turn`.
pub fn stop_reason(reply: &Reply, blocks: &[Map<String, Value>]) -> String {
    match reply.stop_reason.as_deref() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ if blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")) => "tool_use".into(),
        _ => "end_turn".into(),
    }
}

/// A message object (`content` and `stop_reason` as given).
pub fn message(id: &str, model: &Value, content: Vec<Value>, stop: Option<&str>, usage: &Map<String, Value>) -> Value {
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop, "stop_sequence": null, "usage": usage
    })
}

fn sse(event: &str, data: &Value) -> Bytes {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    // Writing a Value to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The SSE events of a streamed reply, exactly the sequence
/// mock_anthropic.py writes: message_start (the message with empty content
/// and null stop_reason), per block content_block_start / delta(s) / stop
/// (text: text_delta; thinking: thinking_delta then signature_delta, default
/// signature `sig`; tool_use: input_json_delta with the input as Python's
/// `json.dumps` writes it), message_delta (stop_reason, output_tokens),
/// message_stop. JSON is written compact.
pub fn sse_events(start: &Value, blocks: &[Map<String, Value>], stop: &str, output_tokens: &Value) -> Vec<Bytes> {
    let mut out = vec![sse("message_start", &json!({"type": "message_start", "message": start}))];
    let s = |b: &Map<String, Value>, k: &str, default: &str| -> Value {
        Value::from(b.get(k).and_then(Value::as_str).unwrap_or(default))
    };
    for (j, b) in blocks.iter().enumerate() {
        let delta =
            |d: Value| sse("content_block_delta", &json!({"type": "content_block_delta", "index": j, "delta": d}));
        let start = |cb: Value| {
            sse("content_block_start", &json!({"type": "content_block_start", "index": j, "content_block": cb}))
        };
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                out.push(start(json!({"type": "text", "text": ""})));
                out.push(delta(json!({"type": "text_delta", "text": s(b, "text", "")})));
            }
            Some("thinking") => {
                out.push(start(json!({"type": "thinking", "thinking": "", "signature": ""})));
                out.push(delta(json!({"type": "thinking_delta", "thinking": s(b, "thinking", "")})));
                out.push(delta(json!({"type": "signature_delta", "signature": s(b, "signature", "sig")})));
            }
            Some("tool_use") => {
                out.push(start(
                    json!({"type": "tool_use", "id": s(b, "id", ""), "name": s(b, "name", ""), "input": {}}),
                ));
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                out.push(delta(json!({"type": "input_json_delta", "partial_json": super::pyjson::dumps(&input)})));
            }
            _ => {}
        }
        out.push(sse("content_block_stop", &json!({"type": "content_block_stop", "index": j})));
    }
    out.push(sse(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
    ));
    out.push(sse("message_stop", &json!({"type": "message_stop"})));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types() {
        assert_eq!(error_type(529), "overloaded_error");
        assert_eq!(error_type(503), "api_error");
        assert_eq!(error_type(418), "invalid_request_error");
    }
}
