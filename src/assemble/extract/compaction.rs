//! The compaction instruction of a release ([`Compaction`]), from a
//! capture that compacted: the request sent just before the first one that
//! carries the compact summary ends on a plain string user message, and
//! that string is the instruction (2.1.88, 2.1.328 and 2.1.332
//! compact-resume captures and the `compact` probe; 2.1.3xx writes it in
//! no transcript, so replay takes it from here).
//!
//! Before 2.1.88 (1.0.128 – 2.1.50 `compact` probes) the compaction is a
//! request of its own ([`OwnCompaction`]): another system prompt, a tool
//! or two, its own params, the instruction as one text block; the warmups
//! and side calls sent before the next turn are skipped to find it.

use super::capture::message_lists;
use crate::profile::{Compaction, OwnCompaction};
use serde_json::Value;

/// The instruction, when the capture holds a compaction: the transcripts
/// (`held`) write a compact summary (`isCompactSummary`) and a captured
/// request carries it.
pub(super) fn learn(lines: &[Value], held: &[String]) -> Option<Compaction> {
    let summary = held.iter().flat_map(|t| t.lines()).find_map(summary_text)?;
    let head: String = summary.chars().take(200).collect();
    let bodies: Vec<&Value> =
        lines.iter().filter_map(|v| v.get("body")).filter(|b| b.get("messages").is_some()).collect();
    let lists: Vec<&Vec<Value>> = message_lists(lines).collect();
    let after = lists.iter().position(|ms| ms.iter().any(|m| message_texts(m).any(|t| t.starts_with(&head))))?;
    let at = (0..after).rev().find(|&i| instruction_of(lists[i]).is_some())?;
    let (instruction, block) = instruction_of(lists[at])?;
    let mut c = Compaction { instruction: instruction.to_string(), ..Compaction::default() };
    let (Some(first), Some(body), true) = (bodies.first(), bodies.get(at), at > 0) else { return Some(c) };
    let names = |b: &Value| -> Vec<String> {
        let tools = b.get("tools").and_then(Value::as_array).into_iter().flatten();
        tools.filter_map(|t| t.get("name")?.as_str().map(str::to_string)).collect()
    };
    if block || names(first) != names(body) {
        c.own = Some(own_request(body, names(body)));
    } else {
        // What its system side leaves out of the first request's (2.1.150).
        c.drops = super::detect::drops_between(first, body).unwrap_or_default();
        c.params = changed_params(first, body);
    }
    Some(c)
}

/// A compaction's instruction: its messages end on an answer and a user
/// message of one string (2.1.88 on) or of one text block (before), which
/// says whether it was a block.
fn instruction_of(messages: &[Value]) -> Option<(&str, bool)> {
    let [.., answer, last] = messages else { return None };
    if answer.get("role")? != "assistant" || last.get("role")? != "user" {
        return None;
    }
    match last.get("content")? {
        Value::String(s) => Some((s.as_str(), false)),
        Value::Array(b) if b.len() == 1 && b[0].get("type")? == "text" => Some((b[0].get("text")?.as_str()?, true)),
        _ => None,
    }
}

/// The members of a request body that are its content, not params.
const CONTENT: [&str; 6] = ["model", "messages", "system", "tools", "metadata", "stream"];

/// The system texts after the billing header and the CLI prefix, the tool
/// names and the params of a compaction request of its own.
fn own_request(body: &Value, tools: Vec<String>) -> OwnCompaction {
    let blocks = body.get("system").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let texts = blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str));
    let system = texts.filter(|t| !t.starts_with("x-anthropic-billing-header:")).skip(1).map(str::to_string).collect();
    let params = body.as_object().into_iter().flatten().filter(|(k, _)| !CONTENT.contains(&k.as_str()));
    OwnCompaction { system, tools, params: params.map(|(k, v)| (k.clone(), v.clone())).collect() }
}

/// The params `body` sends with another value than `first` (both send
/// them; the request's content is not a param).
fn changed_params(first: &Value, body: &Value) -> serde_json::Map<String, Value> {
    let (Some(a), Some(b)) = (first.as_object(), body.as_object()) else { return serde_json::Map::new() };
    b.iter()
        .filter(|(k, v)| !CONTENT.contains(&k.as_str()) && a.get(*k).is_some_and(|x| x != *v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The text of a transcript line that is the compact summary.
fn summary_text(line: &str) -> Option<String> {
    if !line.contains("isCompactSummary") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    if v.get("isCompactSummary") != Some(&Value::Bool(true)) {
        return None;
    }
    message_texts(v.get("message")?).next().map(str::to_string)
}

/// The texts of a message: a string content, or its text blocks.
fn message_texts(m: &Value) -> impl Iterator<Item = &str> {
    let content = m.get("content");
    let string = content.and_then(Value::as_str);
    let blocks = content.and_then(Value::as_array).into_iter().flatten().filter_map(|b| b.get("text")?.as_str());
    string.into_iter().chain(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(messages: Value) -> Value {
        json!({"path": "/v1/messages", "body": {"messages": messages}})
    }

    #[test]
    fn the_string_before_the_first_request_with_the_summary() {
        let summary = "This session is being continued. Summary: hi.";
        let held = vec![format!(
            "{}\n",
            json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": summary}})
        )];
        let lines = vec![
            req(json!([{"role": "user", "content": "first"}])),
            req(json!([{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"},
                       {"role": "user", "content": "Summarize now."}])),
            req(
                json!([{"role": "user", "content": [{"type": "text", "text": summary}, {"type": "text", "text": "next"}]}]),
            ),
        ];
        assert_eq!(
            learn(&lines, &held),
            Some(Compaction { instruction: "Summarize now.".into(), ..Compaction::default() })
        );
        // No summary written, or none sent: nothing learned.
        assert_eq!(learn(&lines, &[]), None);
        assert_eq!(learn(&lines[..2], &held), None);
        // The request before ends on blocks, not a string: not an instruction.
        let blocks = vec![lines[0].clone(), lines[2].clone()];
        assert_eq!(learn(&blocks, &held), None);
    }
}
