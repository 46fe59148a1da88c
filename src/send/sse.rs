//! Streaming replies (`"stream": true`): the server-sent events are read to
//! the end and the final message is rebuilt from them — `message_start`
//! (the message and its input usage), `content_block_start/delta/stop`
//! (text, thinking and signature, tool input JSON, citations),
//! `message_delta` (stop reason and the output usage, merged into the
//! usage of `message_start`), `message_stop`. An `event: error` inside the
//! 200 stream (facts §3.3, "Errors during a stream") ends it as a failure
//! with that error's type; a stream that stops before `message_stop` is an
//! incomplete reply (retried like a cut connection).

use serde_json::{Map, Value};

/// One event: its `event:` name and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Incremental SSE parser (lines end with LF, CRLF or CR).
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    last_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feed bytes; complete events are appended to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        for &b in chunk {
            if self.last_cr {
                self.last_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.last_cr = true;
                    self.end_line(out);
                }
                _ => self.line.push(b),
            }
        }
    }

    /// End of input: a last event without its blank line is still given.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            self.end_line(out);
        }
        self.end_line(out);
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if self.line.is_empty() {
            if self.has_data || !self.event.is_empty() {
                out.push(SseEvent { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
            }
            self.has_data = false;
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// The rebuilt message (its `usage` is the final usage).
    Message(Value),
    /// An `event: error`: its envelope `{"type":"error","error":{…}}`.
    Error(Value),
    /// The stream broke off or could not be read.
    Incomplete(String),
}

/// Rebuilds the message from the events.
#[derive(Debug, Default)]
pub struct MessageBuilder {
    message: Option<Map<String, Value>>,
    partial_json: Vec<String>,
    end: Option<StreamEnd>,
}

impl MessageBuilder {
    /// Apply one event; once the stream has ended (stop or error), later
    /// events are ignored.
    pub fn apply(&mut self, ev: &SseEvent) {
        if self.end.is_some() || ev.event == "ping" {
            return;
        }
        let data: Value = match serde_json::from_str(&ev.data) {
            Ok(v) => v,
            Err(e) => {
                self.end = Some(StreamEnd::Incomplete(format!("event {:?}: data is not JSON: {e}", ev.event)));
                return;
            }
        };
        let kind = if ev.event.is_empty() { data.get("type").and_then(Value::as_str).unwrap_or("") } else { &ev.event };
        if let Err(e) = self.apply_data(kind, &data) {
            self.end = Some(StreamEnd::Incomplete(format!("event {kind:?}: {e}")));
        }
    }

    fn apply_data(&mut self, kind: &str, data: &Value) -> Result<(), String> {
        match kind {
            "message_start" => {
                let m = data.get("message").and_then(Value::as_object).ok_or("no message object")?;
                let mut m = m.clone();
                if !m.get("content").is_some_and(Value::is_array) {
                    m.insert("content".into(), Value::Array(Vec::new()));
                }
                self.message = Some(m);
            }
            "content_block_start" => {
                let i = index(data)?;
                let block = data.get("content_block").cloned().ok_or("no content_block")?;
                let content = self.content()?;
                if content.len() <= i {
                    content.resize(i + 1, Value::Null);
                }
                content[i] = block;
                if self.partial_json.len() <= i {
                    self.partial_json.resize(i + 1, String::new());
                }
                self.partial_json[i].clear();
            }
            "content_block_delta" => self.apply_delta(data)?,
            "content_block_stop" => {
                let i = index(data)?;
                let json = self.partial_json.get_mut(i).map(std::mem::take).unwrap_or_default();
                if !json.is_empty() {
                    let input: Value =
                        serde_json::from_str(&json).map_err(|e| format!("tool input of block {i} is not JSON: {e}"))?;
                    let block = self.content()?.get_mut(i).and_then(Value::as_object_mut).ok_or("stop before start")?;
                    block.insert("input".into(), input);
                }
            }
            "message_delta" => {
                let m = self.message.as_mut().ok_or("message_delta before message_start")?;
                if let Some(delta) = data.get("delta").and_then(Value::as_object) {
                    for (k, v) in delta {
                        m.insert(k.clone(), v.clone());
                    }
                }
                if let Some(usage) = data.get("usage").and_then(Value::as_object) {
                    let entry = m.entry("usage").or_insert_with(|| Value::Object(Map::new()));
                    if !entry.is_object() {
                        *entry = Value::Object(Map::new());
                    }
                    if let Value::Object(u) = entry {
                        for (k, v) in usage.iter().filter(|(_, v)| !v.is_null()) {
                            u.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "message_stop" => {
                let m = self.message.take().ok_or("message_stop before message_start")?;
                self.end = Some(StreamEnd::Message(Value::Object(m)));
            }
            "error" => {
                let mut env = data.clone();
                if env.get("error").is_none() {
                    env = serde_json::json!({"type": "error", "error": data});
                }
                self.end = Some(StreamEnd::Error(env));
            }
            _ => {}
        }
        Ok(())
    }

    /// A `content_block_delta`: text, thinking, signature, citations or a
    /// tool's partial JSON appended to its block.
    fn apply_delta(&mut self, data: &Value) -> Result<(), String> {
        let i = index(data)?;
        let delta = data.get("delta").and_then(Value::as_object).ok_or("no delta")?;
        let dtype = delta.get("type").and_then(Value::as_str).unwrap_or("");
        if dtype == "input_json_delta" {
            let part = delta.get("partial_json").and_then(Value::as_str).unwrap_or("");
            self.partial_json.get_mut(i).ok_or("delta before its block")?.push_str(part);
            return Ok(());
        }
        let block = self.content()?.get_mut(i).and_then(Value::as_object_mut).ok_or("delta before its block")?;
        let append = |block: &mut Map<String, Value>, key: &str| {
            let add = delta.get(key).and_then(Value::as_str).unwrap_or("");
            match block.get_mut(key) {
                Some(Value::String(s)) => s.push_str(add),
                _ => {
                    block.insert(key.into(), Value::String(add.into()));
                }
            }
        };
        match dtype {
            "text_delta" => append(block, "text"),
            "thinking_delta" => append(block, "thinking"),
            "signature_delta" => {
                block.insert("signature".into(), delta.get("signature").cloned().unwrap_or(Value::Null));
            }
            "citations_delta" => {
                let c = delta.get("citation").cloned().unwrap_or(Value::Null);
                match block.get_mut("citations") {
                    Some(Value::Array(a)) => a.push(c),
                    _ => {
                        block.insert("citations".into(), Value::Array(vec![c]));
                    }
                }
            }
            // A delta kind this version does not know: its fields
            // (other than `type`) are set on the block.
            _ => {
                for (k, v) in delta.iter().filter(|(k, _)| *k != "type") {
                    block.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(())
    }

    fn content(&mut self) -> Result<&mut Vec<Value>, String> {
        let m = self.message.as_mut().ok_or("content before message_start")?;
        match m.get_mut("content") {
            Some(Value::Array(a)) => Ok(a),
            _ => Err("message has no content array".into()),
        }
    }

    /// The stream has ended (stop or error or a bad event).
    pub fn ended(&self) -> bool {
        self.end.is_some()
    }

    /// The outcome once the input is exhausted.
    pub fn finish(self) -> StreamEnd {
        self.end.unwrap_or_else(|| StreamEnd::Incomplete("the stream ended before message_stop".into()))
    }
}

fn index(data: &Value) -> Result<usize, String> {
    data.get("index")
        .and_then(Value::as_u64)
        .map(|i| i as usize)
        .filter(|&i| i < 10_000)
        .ok_or_else(|| "no index".into())
}

/// Parse a whole SSE body (tests, and replies read at once).
pub fn rebuild(body: &[u8]) -> StreamEnd {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    parser.feed(body, &mut events);
    parser.finish(&mut events);
    let mut b = MessageBuilder::default();
    for ev in &events {
        b.apply(ev);
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\
\n\
event: ping\n\
data: {\"type\": \"ping\"}\n\
\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\
\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\
\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\
\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":1}\n\
\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Read\",\"input\":{}}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\
\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"b\\\"}\"}}\n\
\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":2}\n\
\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\
\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\
\n";

    #[test]
    fn rebuilds_message_and_usage() {
        let StreamEnd::Message(m) = rebuild(STREAM.as_bytes()) else { panic!("not a message") };
        assert_eq!(m["id"], "msg_1");
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(m["content"][0], serde_json::json!({"type":"thinking","thinking":"hmm","signature":"sig"}));
        assert_eq!(m["content"][1], serde_json::json!({"type":"text","text":"Hello"}));
        assert_eq!(m["content"][2]["input"], serde_json::json!({"path":"ab"}));
        assert_eq!(
            m["usage"],
            serde_json::json!({"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":42})
        );
    }

    #[test]
    fn any_chunking_and_crlf_give_the_same_message() {
        let whole = rebuild(STREAM.as_bytes());
        let crlf = STREAM.replace('\n', "\r\n");
        for text in [STREAM.to_string(), crlf] {
            for size in [1, 2, 7, 64] {
                let mut p = SseParser::default();
                let mut evs = Vec::new();
                for c in text.as_bytes().chunks(size) {
                    p.feed(c, &mut evs);
                }
                p.finish(&mut evs);
                let mut b = MessageBuilder::default();
                evs.iter().for_each(|e| b.apply(e));
                assert_eq!(b.finish(), whole, "chunk {size}");
            }
        }
    }

    #[test]
    fn error_event_and_cut_stream() {
        let cut = &STREAM[..STREAM.find("event: message_delta").unwrap()];
        let mut with_error = cut.to_string();
        with_error.push_str(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        match rebuild(with_error.as_bytes()) {
            StreamEnd::Error(e) => assert_eq!(e["error"]["type"], "overloaded_error"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(rebuild(cut.as_bytes()), StreamEnd::Incomplete(_)));
        assert!(matches!(rebuild(b"event: message_start\ndata: {oops\n\n"), StreamEnd::Incomplete(_)));
    }
}
