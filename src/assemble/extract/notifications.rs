//! Detector: how a background-task notification is sent
//! (`reminders.task_notification`, [`crate::assemble::pipeline::notifications`]).
//! A capture shows it when a transcript beside it holds a user line of
//! `origin.kind: "task-notification"` and a captured request sends that
//! line's raw text inside a longer text (2.1.328 `background-bash`: a
//! `<system-reminder>` around it). A capture that sends the raw text as
//! it is (2.1.88), or has no notification, teaches nothing.

use super::capture::message_lists;
use crate::assemble::pipeline::notifications::template_of;
use serde_json::Value;

/// The raw texts of the task-notification user lines in `held`.
fn raw_notifications(held: &[String]) -> Vec<String> {
    held.iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.contains("\"task-notification\""))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.pointer("/origin/kind").and_then(Value::as_str) == Some("task-notification"))
        .filter_map(|v| v.pointer("/message/content").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The notification template of a capture's `lines` with the transcripts
/// `held` beside it (see the module docs).
pub(super) fn task_notification(lines: &[Value], held: &[String]) -> Option<String> {
    let raws = raw_notifications(held);
    if raws.is_empty() {
        return None;
    }
    let texts = message_lists(lines).flatten().filter(|m| m["role"] == "user").flat_map(|m| match &m["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(bs) => bs.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    });
    for t in texts {
        if let Some(found) = raws.iter().find_map(|r| template_of(t, r)) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_template_is_learned_from_a_wrapped_notification() {
        let raw = "<task-notification>\\n<status>completed</status>\\n</task-notification>";
        let line = format!(
            r#"{{"type":"user","origin":{{"kind":"task-notification"}},"message":{{"role":"user","content":"{raw}"}}}}"#
        );
        let raw = raw.replace("\\n", "\n");
        let sent = format!("<system-reminder>\nNOTE\n{raw}\n</system-reminder>");
        let lines = vec![json!({"body": {"messages": [{"role": "user", "content": sent}]}})];
        assert_eq!(
            task_notification(&lines, std::slice::from_ref(&line)).as_deref(),
            Some("<system-reminder>\nNOTE\n{notification}\n</system-reminder>")
        );
        let plain = vec![json!({"body": {"messages": [{"role": "user", "content": raw}]}})];
        assert_eq!(task_notification(&plain, &[line]), None);
    }
}
