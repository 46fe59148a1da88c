//! A long 2.1.328 session with records: the captured `long-session` (one
//! Bash step per turn) carried on with its own turn pattern. Used by
//! `tests/it/linear_records.rs` and `benches/assemble.rs` (`#[path]`); the
//! same sessions as `scripts/bench-compare`'s `long_records_session`.
//!
//! Each generated turn: the assistant's reply to the last request (a text
//! line and a `tool_use` line of one message id), the `tool_result`, and an
//! `api-request` that keeps every message of the last one and appends
//! those two by their SHA-256 (sorted keys, no spaces: the transcript's
//! hash, computed here independently of ctxasm), with its breakpoint on its
//! last message. The first request, the shape and the blobs are the
//! capture's own.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The captured session the generated ones extend.
pub fn template() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cc-2.1.328/long-session/transcripts/-home-dev-projects-long-session")
        .join("bb3794f2-f0ef-4056-944f-7c6515c703d6.jsonl")
}

/// The transcript's hash of a message (no `cache_control` in these).
pub fn message_sha256(m: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&o[k]))).collect::<Map<_, _>>())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&sorted(m)).expect("json");
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Write a session of `turns` recorded requests into `dir`; its path.
pub fn long_records_session(dir: &Path, turns: usize) -> PathBuf {
    let template = template();
    let old_sid = "bb3794f2-f0ef-4056-944f-7c6515c703d6";
    let sid = format!("00000000-0000-4000-9000-{turns:012}");
    let text = std::fs::read_to_string(&template).expect("template");
    let lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).expect("template line")).collect();
    let kind = |v: &Value| v["type"].as_str().unwrap_or("").to_string();
    let first_request = parsed.iter().position(|d| kind(d) == "api-request").expect("a request");
    let assistants: Vec<&Value> = parsed.iter().filter(|d| kind(d) == "assistant").collect();
    let (text_line, tool_line, last_line) = (assistants[0], assistants[1], assistants[assistants.len() - 1]);
    let user_line =
        parsed.iter().find(|d| kind(d) == "user" && d["message"]["content"].is_array()).expect("a tool result");
    let request_line = parsed[first_request + 1..].iter().find(|d| kind(d) == "api-request").expect("a second");
    let mut out = String::new();
    for l in &lines[..=first_request] {
        out.push_str(&l.replace(old_sid, &sid));
        out.push('\n');
    }
    let stamp = |ms: usize| {
        // 2026-11-30T19:29:26Z plus `ms`, within the day.
        let s = 19 * 3600 + 29 * 60 + 26 + ms / 1000;
        format!("2026-11-30T{:02}:{:02}:{:02}.{:03}Z", s / 3600 % 24, s / 60 % 60, s % 60, ms % 1000)
    };
    let mut line = |v: Value| {
        out.push_str(&serde_json::to_string(&v).expect("json"));
        out.push('\n');
    };
    let with = |base: &Value, fields: Value| {
        let mut v = base.clone();
        for (k, x) in fields.as_object().expect("fields") {
            v[k] = x.clone();
        }
        v["sessionId"] = json!(sid);
        v
    };
    let mut parent = text_line["parentUuid"].clone();
    let mut base = parsed[first_request]["id"].clone();
    for k in 0..turns.saturating_sub(1) {
        let t = 50 * k;
        let id = |c: char| format!("00000000-0000-4000-{c}000-{k:012}");
        let (msg_id, tool_id) = (format!("msg_gen{k:016}"), format!("toolu_gen{k:016}"));
        let text = json!({"type": "text", "text": format!("Step {k}.")});
        let tool = json!({"type": "tool_use", "id": tool_id, "name": "Bash",
            "input": {"command": format!("echo step {}; head -{} data.csv | tail -3", k + 1, 10 * (k + 1)),
                      "description": format!("Step {k}")}});
        let mut usage = text_line["message"]["usage"].clone();
        usage["input_tokens"] = json!(12473 + 93 * k);
        for (uuid, block, tmpl, n) in [(id('a'), &text, text_line, 0), (id('b'), &tool, tool_line, 1)] {
            let mut message = tmpl["message"].clone();
            message["id"] = json!(msg_id);
            message["content"] = json!([block]);
            message["usage"] = usage.clone();
            line(with(
                tmpl,
                json!({"parentUuid": parent, "uuid": uuid, "timestamp": stamp(t + n),
                       "requestId": format!("req_gen{k:016}"), "requestRef": base, "message": message}),
            ));
            parent = json!(uuid);
        }
        let stdout = format!(
            "step {}\n{}",
            k + 1,
            (10 * k + 6..10 * k + 9).map(|j| format!("{j},{}", j * j)).collect::<Vec<_>>().join("\n")
        );
        let result = json!([{"tool_use_id": tool_id, "type": "tool_result", "content": stdout, "is_error": false}]);
        let mut tool_result = user_line["toolUseResult"].clone();
        tool_result["stdout"] = json!(stdout);
        line(with(
            user_line,
            json!({"parentUuid": parent, "uuid": id('c'), "timestamp": stamp(t + 20),
                   "message": {"role": "user", "content": result}, "toolUseResult": tool_result,
                   "sourceToolAssistantUUID": parent}),
        ));
        parent = json!(id('c'));
        let tail = [
            message_sha256(&json!({"role": "assistant", "content": [text, tool]})),
            message_sha256(&json!({"role": "user", "content": result})),
        ];
        let keep = 2 + 2 * k;
        let mut cache = request_line["cacheControl"].as_array().expect("cacheControl").clone();
        if let Some(last) = cache.last_mut() {
            last["path"] = json!(["messages", keep + 1, "content", 0]);
        }
        let digest: String = Sha256::digest(id('d').as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        line(with(
            request_line,
            json!({"id": id('d'), "timestamp": stamp(t + 30), "base": base, "keep": keep, "tail": tail,
                   "cacheControl": cache, "requestDigest": digest}),
        ));
        base = json!(id('d'));
    }
    let mut message = last_line["message"].clone();
    message["id"] = json!(format!("msg_gen{turns:016}"));
    line(with(
        last_line,
        json!({"parentUuid": parent, "uuid": format!("00000000-0000-4000-e000-{turns:012}"),
               "timestamp": stamp(50 * turns), "requestRef": base, "requestId": format!("req_gen{turns:016}"),
               "message": message}),
    ));
    std::fs::create_dir_all(dir).expect("session dir");
    let path = dir.join(format!("{sid}.jsonl"));
    std::fs::write(&path, out).expect("session file");
    path
}
