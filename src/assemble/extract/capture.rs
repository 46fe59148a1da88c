//! Reading a capture: the first Messages request of a `wire.jsonl`, or the
//! first recorded request of a 2.1.3xx transcript, as a [`Capture`]; and
//! the transcripts written beside a capture, to tell what they hold.

use super::err;
use crate::profile::{MetadataForm, ModelInfo, ProfileError};
use serde_json::{Map, Value};
use std::path::Path;

/// What one captured request tells.
pub(super) struct Capture {
    pub(super) version: String,
    pub(super) entrypoint: String,
    /// The billing header text, when the capture has it (wire).
    pub(super) header: Option<String>,
    /// The capture sends a billing header block (a transcript's shape never
    /// holds it: assumed).
    pub(super) header_block: bool,
    /// The form of its `metadata.user_id`.
    pub(super) metadata: MetadataForm,
    /// System blocks after the billing header (with their cache control).
    pub(super) system: Vec<Value>,
    pub(super) tools: Vec<Value>,
    pub(super) params: Map<String, Value>,
    /// Params the body sends between `messages` and `system` (1.0.x).
    pub(super) lead_params: Vec<String>,
    pub(super) betas: Vec<String>,
    pub(super) model: String,
    /// Texts of the first user message's blocks (wire only).
    pub(super) first_texts: Vec<String>,
    /// Every text worth scanning for model names.
    pub(super) texts: Vec<String>,
    /// Model identities recorded in a transcript.
    pub(super) models: Vec<ModelInfo>,
}

pub(super) fn from_wire(path: &Path, req: &Value) -> Result<Capture, ProfileError> {
    let body = &req["body"];
    let system = body.get("system").and_then(Value::as_array).ok_or_else(|| err(path, "request without system"))?;
    let text_of = |b: &Value| b.get("text").and_then(Value::as_str).unwrap_or("").to_string();
    let (header, rest) = match system.first() {
        Some(b) if text_of(b).starts_with("x-anthropic-billing-header:") => (Some(text_of(b)), &system[1..]),
        _ => (None, &system[..]),
    };
    let header_text = header.clone().unwrap_or_default();
    let field = |name: &str| {
        header_text.split(';').find_map(|p| p.trim().strip_prefix(name).map(str::to_string)).unwrap_or_default()
    };
    let cc_version = field("x-anthropic-billing-header: cc_version=");
    let version = cc_version.rsplit_once('.').map_or(cc_version.clone(), |(v, _)| v.to_string());
    let ua_version = req
        .get("headers")
        .and_then(|h| header_value(h, "user-agent"))
        .and_then(|ua| ua.strip_prefix("claude-cli/").and_then(|v| v.split(' ').next()).map(str::to_string));
    let version = if version.is_empty() { ua_version.unwrap_or_default() } else { version };
    let mut first_texts = Vec::new();
    let mut texts: Vec<String> = system.iter().map(text_of).collect();
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, m) in messages.iter().take(2).enumerate() {
        let blocks: Vec<String> = match m.get("content") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a.iter().filter(|b| b["type"] == "text").map(text_of).collect(),
            _ => Vec::new(),
        };
        if i == 0 {
            first_texts = blocks.clone();
        }
        texts.extend(blocks);
    }
    let skip = ["model", "messages", "system", "tools", "metadata", "stream", "betas"];
    let keys: Vec<&String> = body.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    let at = |k: &str| keys.iter().position(|x| *x == k);
    let lead_params = match (at("messages"), at("system")) {
        (Some(m), Some(s)) if m < s => {
            keys[m + 1..s].iter().filter(|k| !skip.contains(&k.as_str())).map(|k| (*k).clone()).collect()
        }
        _ => Vec::new(),
    };
    let legacy = body.pointer("/metadata/user_id").and_then(Value::as_str).is_some_and(|u| u.starts_with("user_"));
    Ok(Capture {
        version,
        entrypoint: field("cc_entrypoint="),
        header_block: header.is_some(),
        metadata: if legacy { MetadataForm::LegacyUserId } else { MetadataForm::JsonUserId },
        header,
        system: rest.to_vec(),
        tools: body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        params: body
            .as_object()
            .map(|o| {
                o.iter().filter(|(k, _)| !skip.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
            })
            .unwrap_or_default(),
        lead_params,
        betas: request_betas(req),
        model: body.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        first_texts,
        texts,
        models: Vec::new(),
    })
}

/// The message list of each captured request (every line with a body).
pub(super) fn message_lists(lines: &[Value]) -> impl Iterator<Item = &Vec<Value>> {
    lines.iter().filter_map(|v| v.pointer("/body/messages").and_then(Value::as_array))
}

/// Every content block of every captured message.
pub(super) fn content_blocks(lines: &[Value]) -> impl Iterator<Item = &Value> {
    message_lists(lines).flatten().filter_map(|m| m.get("content").and_then(Value::as_array)).flatten()
}

/// A captured request's `anthropic-beta` values, in order.
pub(super) fn request_betas(req: &Value) -> Vec<String> {
    req.get("headers")
        .and_then(|h| header_value(h, "anthropic-beta"))
        .map(|b| b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default()
}

/// Every tool with `from` replaced by `to` in its JSON text (a tool without
/// `from` is cloned as it is): how the tool templates are made.
pub(super) fn replace_in_tools(tools: &[Value], from: &str, to: &str) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let text = t.to_string();
            match text.contains(from) {
                true => serde_json::from_str(&text.replace(from, to)).unwrap_or_else(|_| t.clone()),
                false => t.clone(),
            }
        })
        .collect()
}

pub(super) fn header_value<'a>(headers: &'a Value, name: &str) -> Option<&'a str> {
    headers.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.as_str())
}

pub(super) fn from_transcript(path: &Path, lines: &[Value]) -> Result<Capture, ProfileError> {
    let shape_entry = lines
        .iter()
        .find(|e| e["type"] == "api-request-shape")
        .ok_or_else(|| err(path, "neither a /v1/messages request nor an api-request-shape entry"))?;
    let hash = shape_entry.get("shapeHash").and_then(Value::as_str).unwrap_or("");
    let request = lines
        .iter()
        .find(|e| e["type"] == "api-request" && e.get("shapeHash").and_then(Value::as_str) == Some(hash))
        .ok_or_else(|| err(path, format!("no api-request uses shape {hash}")))?;
    let shape = &shape_entry["shape"];
    let mut system = shape.get("system").and_then(Value::as_array).cloned().unwrap_or_default();
    // Cache control is recorded apart: ["system", i] paths index the shape's blocks.
    for cc in request.get("cacheControl").and_then(Value::as_array).into_iter().flatten() {
        let p = cc.get("path").and_then(Value::as_array);
        if let Some([Value::String(s), i]) = p.map(Vec::as_slice) {
            let slot = i.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| system.get_mut(i));
            if let (true, Some(Value::Object(block))) = (s == "system", slot) {
                block.insert("cache_control".into(), cc["value"].clone());
            }
        }
    }
    let params = request.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
    let models = lines
        .iter()
        .filter(|e| e["type"] == "attachment" && e["attachment"]["type"] == "model")
        .filter_map(|e| {
            let id = &e["attachment"]["identity"];
            Some(ModelInfo {
                id: id.get("modelId")?.as_str()?.to_string(),
                name: id.get("marketingName")?.as_str()?.to_string(),
                knowledge_cutoff: id.get("knowledgeCutoff").and_then(Value::as_str).map(str::to_string),
            })
        })
        .collect();
    Ok(Capture {
        version: request
            .get("version")
            .or_else(|| shape_entry.get("version"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        entrypoint: lines.iter().find_map(|e| e.get("entrypoint").and_then(Value::as_str)).unwrap_or("cli").to_string(),
        header: None,
        header_block: true,
        metadata: MetadataForm::JsonUserId,
        texts: system.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).map(str::to_string).collect(),
        system,
        tools: shape.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        betas: params
            .get("betas")
            .and_then(Value::as_array)
            .map(|b| b.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        model: params.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        params: params.into_iter().filter(|(k, _)| k != "model" && k != "betas").collect(),
        lead_params: Vec::new(),
        first_texts: Vec::new(),
        models,
    })
}

/// The transcripts written beside a capture (`<dir>/transcripts/**.jsonl`,
/// the captures' layout), as text: what they hold is not something the
/// client prepended.
pub(super) fn transcripts_beside(wire: &Path) -> Vec<String> {
    transcript_paths_beside(wire).iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}

/// The `.jsonl` files under the `transcripts/` directory beside `wire`.
pub(super) fn transcript_paths_beside(wire: &Path) -> Vec<std::path::PathBuf> {
    let Some(dir) = wire.parent().map(|d| d.join("transcripts")) else { return Vec::new() };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out
}

/// Whether the capture merges consecutive user messages without the `\n`
/// later releases append: a request (with tools) sends a transcript's
/// string prompt as it is, followed by another block of the same message
/// (a string prompt is one block, so the next was merged into it), and no
/// request sends one with the `\n` appended.
pub(super) fn merges_without_newline(lines: &[Value], held: &[String]) -> bool {
    let mut prompts: Vec<String> = Vec::new();
    for line in held.iter().flat_map(|t| t.lines()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["type"] == "user"
            && let Some(s) = v.pointer("/message/content").and_then(Value::as_str)
        {
            prompts.push(s.to_string());
        }
    }
    let (mut without, mut with) = (false, false);
    let requests =
        lines.iter().filter(|v| v.pointer("/body/tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty()));
    for ms in requests.filter_map(|v| v.pointer("/body/messages").and_then(Value::as_array)) {
        for c in ms.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_array()) {
            for b in c.iter().take(c.len().saturating_sub(1)) {
                let Some(t) = b.get("text").and_then(Value::as_str) else { continue };
                without |= prompts.iter().any(|p| p == t);
                with |= t.strip_suffix('\n').is_some_and(|s| prompts.iter().any(|p| p == s));
            }
        }
    }
    without && !with
}

/// Whether `text` is written in one of the transcripts (JSON-escaped, as
/// a transcript line holds it).
pub(super) fn held_by(held: &[String], text: &str) -> bool {
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let inner = escaped.trim_start_matches('"').trim_end_matches('"');
    !inner.is_empty() && held.iter().any(|t| t.contains(inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request whose first message is the transcript's string prompt
    /// followed by the skill's text (2.0.77 `skill`), or the same with the
    /// `\n` later releases append.
    fn lines(first: &str) -> Vec<Value> {
        vec![serde_json::json!({"body": {"tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": [
            {"type": "text", "text": first}, {"type": "text", "text": "Base directory for this skill: /p"}
        ]}]}})]
    }

    #[test]
    fn merges_without_newline_as_the_capture_shows() {
        let held = vec![
            r#"{"type":"user","message":{"role":"user","content":"<command-name>greet</command-name>"}}"#.to_string(),
        ];
        assert!(merges_without_newline(&lines("<command-name>greet</command-name>"), &held));
        assert!(!merges_without_newline(&lines("<command-name>greet</command-name>\n"), &held));
        assert!(!merges_without_newline(&lines("not held"), &held));
    }
}
