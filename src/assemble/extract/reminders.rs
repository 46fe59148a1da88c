//! Reminder attachments a release writes to the transcript without their
//! text (2.1.100's `todo_reminder`, 2.1.150's `task_reminder`: just an empty
//! list): what the capture shows the client sent for them.
//!
//! Such an attachment follows a tool result (its `parentUuid` is that
//! entry) and its text is joined to the result's content on the wire
//! (`layout.attachments_into_tool_result`): the captured result is the
//! transcript's, without trailing whitespace, then `"\n\n"` and the text.

use serde_json::Value;
use std::collections::BTreeMap;

/// The kinds learned here: their text does not depend on the session.
const KINDS: &[&str] = &["todo_reminder", "task_reminder"];

/// Text by attachment kind, from the transcripts beside a capture (`held`)
/// and the capture's requests (`lines`). An attachment is used only when it
/// is the one attachment after its tool result.
pub(super) fn attachment_texts(lines: &[Value], held: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for text in held {
        let entries: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        for e in &entries {
            let Some(kind) = e.pointer("/attachment/type").and_then(Value::as_str).filter(|k| KINDS.contains(k)) else {
                continue;
            };
            let empty = e.pointer("/attachment/content").and_then(Value::as_array).is_some_and(Vec::is_empty);
            if !empty || e.get("rendered").is_some() || out.contains_key(kind) {
                continue;
            }
            let Some(parent) = e.get("parentUuid").and_then(Value::as_str) else { continue };
            let siblings = entries
                .iter()
                .filter(|x| x["type"] == "attachment" && x.get("parentUuid").and_then(Value::as_str) == Some(parent));
            if siblings.count() != 1 {
                continue;
            }
            let result = entries
                .iter()
                .find(|x| x.get("uuid").and_then(Value::as_str) == Some(parent))
                .and_then(|x| x.pointer("/message/content").and_then(Value::as_array))
                .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"));
            let (Some(id), Some(content)) = (
                result.and_then(|r| r.get("tool_use_id")).and_then(Value::as_str),
                result.and_then(|r| r.get("content")).and_then(Value::as_str),
            ) else {
                continue;
            };
            let head = format!("{}\n\n", content.trim_end());
            if let Some(sent) = sent_result(lines, id).and_then(|s| s.strip_prefix(head.as_str()).map(str::to_string)) {
                out.insert(kind.to_string(), sent);
            }
        }
    }
    out
}

/// The string content of the first captured `tool_result` for `id`.
fn sent_result<'v>(lines: &'v [Value], id: &str) -> Option<&'v str> {
    super::capture::content_blocks(lines)
        .find(|b| b["type"] == "tool_result" && b.get("tool_use_id").and_then(Value::as_str) == Some(id))
        .and_then(|b| b.get("content").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_joined_after_the_result_is_the_attachments() {
        let held = vec![
            [
                r#"{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"step 5\n"}]}}"#,
                r#"{"type":"attachment","uuid":"a1","parentUuid":"u1","attachment":{"type":"task_reminder","content":[],"itemCount":0}}"#,
            ]
            .join("\n"),
        ];
        let wire = |content: &str| {
            serde_json::json!({"body": {"messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": content}]}]}})
        };
        let got = attachment_texts(&[wire("step 5\n\n<system-reminder>\nR\n</system-reminder>")], &held);
        assert_eq!(got.get("task_reminder").map(String::as_str), Some("<system-reminder>\nR\n</system-reminder>"));
        // Not joined as expected: nothing learned.
        assert!(attachment_texts(&[wire("step 5")], &held).is_empty());
        // Two attachments after one result cannot be told apart.
        let mut two = held.clone();
        two[0].push_str(
            "\n{\"type\":\"attachment\",\"uuid\":\"a2\",\"parentUuid\":\"u1\",\"attachment\":{\"type\":\"x\"}}",
        );
        assert!(attachment_texts(&[wire("step 5\n\n<system-reminder>\nR\n</system-reminder>")], &two).is_empty());
    }
}
