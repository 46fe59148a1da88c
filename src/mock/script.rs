//! Scripted replies: the rule list of `shared/capture/mock_anthropic.py`.
//!
//! A rule is `{"when": {…}, "once": bool, "reply": {…}}`; the first rule
//! whose `when` holds for a request is used (a `once` rule at most once).
//! `when` keys (all optional, all must hold): `last_user_contains`,
//! `last_is_tool_result`, `system_contains`, `has_tool`. `reply`: `blocks`
//! (text, thinking, tool_use — a tool_use without `id` gets a generated
//! one), `stop_reason`, `status`, `error`, `usage` (overrides usage keys),
//! `headers`. No rule matching = one text block "OK.".

use super::MockError;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Mutex;

/// When a rule applies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct When {
    /// A substring of the text of the last user message.
    pub last_user_contains: Option<String>,
    /// Whether the last user message holds a tool_result block.
    pub last_is_tool_result: Option<bool>,
    /// A substring of the system text (blocks joined by `\n`).
    pub system_contains: Option<String>,
    /// A tool name present in `tools`.
    pub has_tool: Option<String>,
}

/// What a rule answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Content blocks as given (each checked: text, thinking or tool_use).
    pub blocks: Vec<Map<String, Value>>,
    pub stop_reason: Option<String>,
    /// HTTP status; not 200 = an error reply with [`Reply::error`].
    pub status: u16,
    /// The error body of a non-200 reply (an envelope, or `{type, message}`);
    /// default: 529-style `overloaded_error`.
    pub error: Option<Value>,
    /// Keys that replace the computed `usage` values.
    pub usage: Map<String, Value>,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
}

impl Default for Reply {
    /// The reply when no rule matches: one text block "OK.".
    fn default() -> Self {
        let mut text = Map::new();
        text.insert("type".into(), Value::from("text"));
        text.insert("text".into(), Value::from("OK."));
        Reply {
            blocks: vec![text],
            stop_reason: None,
            status: 200,
            error: None,
            usage: Map::new(),
            headers: Vec::new(),
        }
    }
}

/// One rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub when: When,
    pub once: bool,
    pub reply: Reply,
}

/// Read a rule list: a JSON array of rules, or an object with a `rules`
/// array (a capture's `scenario.json`). Errors name the file and the
/// position (line and column, or the rule and key).
pub fn load_script(path: &Path) -> Result<Vec<Rule>, MockError> {
    let err = |message: String| MockError::Script { path: path.to_path_buf(), message };
    let text = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| err(format!("invalid JSON: {e}")))?;
    parse_rules(&v).map_err(err)
}

/// The rules of a parsed rule list (see [`load_script`]).
pub fn parse_rules(v: &Value) -> Result<Vec<Rule>, String> {
    let list = match v {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("rules") {
            Some(Value::Array(items)) => items,
            _ => return Err("expected a JSON array of rules (or an object with a `rules` array)".into()),
        },
        _ => return Err("expected a JSON array of rules".into()),
    };
    list.iter().enumerate().map(|(i, r)| parse_rule(r).map_err(|e| format!("rule {i}: {e}"))).collect()
}

fn parse_rule(v: &Value) -> Result<Rule, String> {
    let o = v.as_object().ok_or("not an object")?;
    for k in o.keys() {
        if !matches!(k.as_str(), "when" | "once" | "reply") {
            return Err(format!("unknown key `{k}` (when, once, reply)"));
        }
    }
    let once = match o.get("once") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`once` must be true or false".into()),
    };
    let when = match o.get("when") {
        None | Some(Value::Null) => When::default(),
        Some(Value::Object(w)) => parse_when(w)?,
        Some(_) => return Err("`when` must be an object".into()),
    };
    let reply = match o.get("reply") {
        Some(Value::Object(r)) => parse_reply(r)?,
        Some(_) => return Err("`reply` must be an object".into()),
        None => return Err("missing `reply`".into()),
    };
    Ok(Rule { when, once, reply })
}

fn parse_when(w: &Map<String, Value>) -> Result<When, String> {
    let mut out = When::default();
    for (k, v) in w {
        let s = || v.as_str().map(str::to_string).ok_or_else(|| format!("when.{k} must be a string"));
        match k.as_str() {
            "last_user_contains" => out.last_user_contains = Some(s()?),
            "system_contains" => out.system_contains = Some(s()?),
            "has_tool" => out.has_tool = Some(s()?),
            "last_is_tool_result" => {
                out.last_is_tool_result = Some(v.as_bool().ok_or("when.last_is_tool_result must be true or false")?)
            }
            _ => {
                return Err(format!(
                    "unknown key when.{k} (last_user_contains, last_is_tool_result, system_contains, has_tool)"
                ));
            }
        }
    }
    Ok(out)
}

fn parse_reply(r: &Map<String, Value>) -> Result<Reply, String> {
    let mut out = Reply { blocks: Vec::new(), ..Reply::default() };
    for k in r.keys() {
        if !matches!(k.as_str(), "blocks" | "stop_reason" | "status" | "error" | "usage" | "headers") {
            return Err(format!("unknown key reply.{k} (blocks, stop_reason, status, error, usage, headers)"));
        }
    }
    if let Some(s) = r.get("status") {
        out.status = s
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| (200..=599).contains(s))
            .ok_or("reply.status must be an HTTP status 200–599")?;
    }
    match r.get("blocks") {
        Some(Value::Array(blocks)) => {
            for (j, b) in blocks.iter().enumerate() {
                out.blocks.push(parse_block(b).map_err(|e| format!("reply.blocks[{j}]: {e}"))?);
            }
        }
        Some(_) => return Err("reply.blocks must be an array".into()),
        None if out.status == 200 => return Err("reply.blocks is missing (needed unless status is not 200)".into()),
        None => {}
    }
    match r.get("stop_reason") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => out.stop_reason = Some(s.clone()),
        Some(_) => return Err("reply.stop_reason must be a string".into()),
    }
    match r.get("error") {
        None | Some(Value::Null) => {}
        Some(e @ Value::Object(_)) => out.error = Some(e.clone()),
        Some(_) => return Err("reply.error must be an object".into()),
    }
    match r.get("usage") {
        None | Some(Value::Null) => {}
        Some(Value::Object(u)) => out.usage = u.clone(),
        Some(_) => return Err("reply.usage must be an object".into()),
    }
    match r.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            for (k, v) in h {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return Err(format!("reply.headers.{k} must be a string")),
                };
                if http_header_ok(k, &v) {
                    out.headers.push((k.clone(), v));
                } else {
                    return Err(format!("reply.headers.{k} is not a valid HTTP header"));
                }
            }
        }
        Some(_) => return Err("reply.headers must be an object".into()),
    }
    Ok(out)
}

fn http_header_ok(name: &str, value: &str) -> bool {
    hyper::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
        && hyper::header::HeaderValue::from_str(value).is_ok()
}

fn parse_block(b: &Value) -> Result<Map<String, Value>, String> {
    let o = b.as_object().ok_or("not an object")?;
    let str_field = |k: &str, required: bool| match o.get(k) {
        Some(Value::String(_)) => Ok(()),
        None if !required => Ok(()),
        None => Err(format!("missing `{k}`")),
        Some(_) => Err(format!("`{k}` must be a string")),
    };
    match o.get("type").and_then(Value::as_str) {
        Some("text") => str_field("text", true)?,
        Some("thinking") => {
            str_field("thinking", false)?;
            str_field("signature", false)?;
        }
        Some("tool_use") => {
            str_field("name", true)?;
            str_field("id", false)?;
            if o.get("input").is_some_and(|i| !i.is_object()) {
                return Err("`input` must be an object".into());
            }
        }
        Some(t) => return Err(format!("unknown block type `{t}` (text, thinking, tool_use)")),
        None => return Err("missing `type`".into()),
    }
    Ok(o.clone())
}

/// What the `when` keys look at in a request, computed once per request
/// the way mock_anthropic.py computes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub last_user_text: String,
    pub last_is_tool_result: bool,
    pub system_text: String,
    pub tools: Vec<String>,
}

/// `text_of` of mock_anthropic.py: a string as is; of a block list, the
/// text blocks and tool results' contents joined by `\n`.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut out: Vec<String> = Vec::new();
            for b in blocks.iter().filter(|b| b.is_object()) {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => out.push(b.get("text").and_then(Value::as_str).unwrap_or("").to_string()),
                    Some("tool_result") => match b.get("content") {
                        c @ Some(Value::Array(_)) => out.push(text_of(c)),
                        c => out.push(super::pyjson::py_str(c)),
                    },
                    _ => {}
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}

impl Facts {
    /// The facts of a request body (a JSON object).
    pub fn of(body: &Value) -> Facts {
        let msgs = body.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let last = msgs.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        let content = last.and_then(|m| m.get("content"));
        let last_is_tool_result = content.and_then(Value::as_array).is_some_and(|blocks| {
            blocks.iter().any(|b| b.is_object() && b.get("type").and_then(Value::as_str) == Some("tool_result"))
        });
        let system_text = match body.get("system") {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.is_object())
                .map(|b| b.get("text").and_then(Value::as_str).unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n"),
            None => String::new(),
            s => super::pyjson::py_str(s),
        };
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string)).collect())
            .unwrap_or_default();
        Facts { last_user_text: text_of(content), last_is_tool_result, system_text, tools }
    }
}

impl When {
    pub fn matches(&self, f: &Facts) -> bool {
        self.last_user_contains.as_ref().is_none_or(|s| f.last_user_text.contains(s.as_str()))
            && self.last_is_tool_result.is_none_or(|b| b == f.last_is_tool_result)
            && self.system_contains.as_ref().is_none_or(|s| f.system_text.contains(s.as_str()))
            && self.has_tool.as_ref().is_none_or(|t| f.tools.iter().any(|x| x == t))
    }
}

/// The rules and which `once` rules were used.
#[derive(Debug, Default)]
pub struct Script {
    rules: Vec<Rule>,
    used: Mutex<Vec<bool>>,
}

impl Script {
    pub fn new(rules: Vec<Rule>) -> Self {
        let used = Mutex::new(vec![false; rules.len()]);
        Script { rules, used }
    }

    /// The first rule that matches `facts` (marking a `once` rule used), or
    /// `None` for the default reply.
    pub fn choose(&self, facts: &Facts) -> Option<(usize, &Rule)> {
        let mut used = self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, r) in self.rules.iter().enumerate() {
            if r.once && used.get(i).copied().unwrap_or(false) {
                continue;
            }
            if r.when.matches(facts) {
                if r.once
                    && let Some(u) = used.get_mut(i)
                {
                    *u = true;
                }
                return Some((i, r));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn facts_like_the_python() {
        let body = json!({
            "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "tools": [{"name": "Bash"}, {"name": "Read"}],
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "out"},
                    {"type": "tool_result", "tool_use_id": "u", "content": [{"type": "text", "text": "in list"}]},
                    {"type": "text", "text": "more"}]}
            ]
        });
        let f = Facts::of(&body);
        assert_eq!(f.last_user_text, "out\nin list\nmore");
        assert!(f.last_is_tool_result);
        assert_eq!(f.system_text, "a\nb");
        assert_eq!(f.tools, ["Bash", "Read"]);
        assert_eq!(Facts::of(&json!({"system": "plain", "messages": []})).system_text, "plain");
    }

    #[test]
    fn once_rules_are_used_once() {
        let rules = parse_rules(&json!([
            {"when": {"last_is_tool_result": false}, "once": true, "reply": {"blocks": [{"type": "text", "text": "A"}]}},
            {"reply": {"blocks": [{"type": "text", "text": "B"}]}}
        ]))
        .unwrap();
        let s = Script::new(rules);
        let f = Facts::default();
        assert_eq!(s.choose(&f).map(|(i, _)| i), Some(0));
        assert_eq!(s.choose(&f).map(|(i, _)| i), Some(1));
        assert_eq!(s.choose(&f).map(|(i, _)| i), Some(1));
    }

    #[test]
    fn bad_rules_say_where() {
        let e = |v: Value| parse_rules(&v).unwrap_err();
        assert_eq!(
            e(json!([{"reply": {"blocks": []}}, {"when": {"foo": 1}, "reply": {}}])).split(':').next(),
            Some("rule 1")
        );
        assert!(e(json!([{"when": {"foo": 1}, "reply": {}}])).contains("unknown key when.foo"));
        assert!(e(json!([{"reply": {"blocks": [{"type": "tool_use"}]}}])).contains("reply.blocks[0]: missing `name`"));
        assert!(e(json!([{"reply": {}}])).contains("reply.blocks is missing"));
        assert!(parse_rules(&json!([{"reply": {"status": 529}}])).is_ok());
    }
}
