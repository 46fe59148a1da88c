//! Request bodies: checks the mock makes, and the crate's [`Body`] of a
//! request for the prompt-cache simulator.

use crate::assemble::Body;
use crate::json::Json;
use bumpalo::Bump;
use serde_json::Value;
use std::borrow::Cow;

/// The [`Body`] of a Messages request (a JSON object parsed into `bump`):
/// `model`, `messages`, `system` (a string system is one text block),
/// `tools`, `metadata`, `stream`, and every other member as a param in
/// document order (so a top-level `cache_control` is seen by
/// [`crate::cost::sim::blocks_of`]).
pub fn body_from_request<'a>(bump: &'a Bump, req: &Json<'a>) -> Body<'a> {
    let messages = match req.get("messages") {
        Some(Json::Arr(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    let system: Vec<&'a Json<'a>> = match req.get("system") {
        Some(Json::Arr(items)) => items.iter().collect(),
        Some(Json::Str(s)) => {
            let members = bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(s))]);
            vec![&*bump.alloc(Json::Obj(members))]
        }
        _ => Vec::new(),
    };
    let params = match req {
        Json::Obj(members) => members
            .iter()
            .filter(|(k, _)| !matches!(*k, "model" | "messages" | "system" | "tools" | "metadata" | "stream"))
            .map(|(k, v)| (*k, *v))
            .collect(),
        _ => Vec::new(),
    };
    Body {
        model: req.get("model").copied().unwrap_or(Json::Null),
        messages: messages.into(),
        shared: 0,
        lead_params: Cow::Borrowed(&[]),
        system_keys: vec![None; system.len()].into(),
        system: system.into(),
        tools: req.get("tools"),
        tools_key: None,
        metadata: req.get("metadata").copied().unwrap_or(Json::Null),
        params: params.into(),
        stream: req.get_bool("stream").unwrap_or(false),
        betas: Cow::Borrowed(&[]),
        cch_seed: None,
    }
}

/// Which endpoint a body is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/messages` (`max_tokens` required, ≥ 0; 0 only without stream).
    Messages,
    /// `POST /v1/messages/count_tokens` (facts §5: no `max_tokens`).
    CountTokens,
    /// A batch request's `params` (facts §4: `max_tokens` ≥ 1, no stream).
    Batch,
}

/// The first problem of a request body, worded like the API's
/// `invalid_request_error` messages (`field: problem`).
pub fn check_body(v: &Value, endpoint: Endpoint) -> Result<(), String> {
    let o = v.as_object().ok_or("The request body is not a JSON object")?;
    match o.get("model") {
        Some(Value::String(_)) => {}
        None => return Err("model: Field required".into()),
        Some(_) => return Err("model: Input should be a valid string".into()),
    }
    match o.get("messages") {
        Some(Value::Array(msgs)) => {
            for (i, m) in msgs.iter().enumerate() {
                let Some(m) = m.as_object() else {
                    return Err(format!("messages.{i}: Input should be a valid dictionary"));
                };
                if !m.get("role").is_some_and(Value::is_string) {
                    return Err(format!("messages.{i}.role: Field required"));
                }
                if !m.get("content").is_some_and(|c| c.is_string() || c.is_array()) {
                    return Err(format!("messages.{i}.content: Input should be a valid string or list"));
                }
            }
        }
        None => return Err("messages: Field required".into()),
        Some(_) => return Err("messages: Input should be a valid list".into()),
    }
    let stream = o.get("stream").and_then(Value::as_bool).unwrap_or(false);
    match endpoint {
        Endpoint::CountTokens => {}
        Endpoint::Messages | Endpoint::Batch => {
            let min = if endpoint == Endpoint::Batch { 1 } else { 0 };
            match o.get("max_tokens") {
                None => return Err("max_tokens: Field required".into()),
                Some(t) => match t.as_u64() {
                    Some(n) if n >= min => {
                        // facts §1.4 "Pre-warming": max_tokens 0 is rejected with stream.
                        if n == 0 && stream {
                            return Err("max_tokens: 0 is not allowed with stream: true".into());
                        }
                    }
                    _ => return Err(format!("max_tokens: Input should be an integer greater than or equal to {min}")),
                },
            }
        }
    }
    // facts §4: not allowed inside a batch.
    if endpoint == Endpoint::Batch && stream {
        return Err("stream: streaming is not supported in batch requests".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::sim::{Estimator, blocks_of};
    use serde_json::json;

    #[test]
    fn body_and_blocks() {
        let v = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "system": "be brief",
            "tools": [{"name": "Bash", "input_schema": {}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
            "cache_control": {"type": "ephemeral"},
            "stream": true
        });
        let bump = Bump::new();
        let j = bump.alloc(Json::from_serde(&bump, &v));
        let body = body_from_request(&bump, j);
        assert_eq!(body.model.as_str(), Some("claude-sonnet-4-5"));
        assert!(body.stream);
        assert_eq!(body.system.len(), 1);
        assert_eq!(body.params.iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["max_tokens", "cache_control"]);
        let est = Estimator::default();
        let blocks = blocks_of(&body, &est.tokens_fn());
        assert_eq!(blocks.len(), 3);
        assert!(blocks[2].ttl.is_some());
    }

    #[test]
    fn checks() {
        let ok = json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]});
        assert_eq!(check_body(&ok, Endpoint::Messages), Ok(()));
        assert_eq!(
            check_body(&json!({"model": "m", "messages": []}), Endpoint::Messages).unwrap_err(),
            "max_tokens: Field required"
        );
        assert_eq!(check_body(&json!({"model": "m", "messages": []}), Endpoint::CountTokens), Ok(()));
        let zero = json!({"model": "m", "max_tokens": 0, "messages": []});
        assert_eq!(check_body(&zero, Endpoint::Messages), Ok(()));
        assert!(check_body(&zero, Endpoint::Batch).is_err());
        let stream = json!({"model": "m", "max_tokens": 5, "stream": true, "messages": []});
        assert!(check_body(&stream, Endpoint::Batch).unwrap_err().starts_with("stream:"));
        assert_eq!(check_body(&json!([1]), Endpoint::Messages).unwrap_err(), "The request body is not a JSON object");
    }
}
