//! Tool names a release sends under another name than its transcript
//! holds ([`Profile::tool_aliases`](crate::profile::Profile::tool_aliases)):
//! the transcript writes a `tool_use` as the model made it, the next
//! request sends it with the name the release now gives that tool (2.1.88
//! and 2.1.3xx: a `Task` call is sent as `Agent`). Learned from a capture
//! where one call id has one name in a transcript and another on the wire;
//! a name seen sent under two names is not learned.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// `{written: sent}` over the calls of the capture's `lines` (wire) and
/// the transcripts `held` beside it.
pub(super) fn learn(lines: &[Value], held: &[String]) -> BTreeMap<String, String> {
    let mut written: HashMap<String, String> = HashMap::new();
    for line in held.iter().flat_map(|t| t.lines()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v.get("type").and_then(Value::as_str) == Some("assistant") {
            for (id, name) in calls(v.pointer("/message/content")) {
                written.insert(id.to_string(), name.to_string());
            }
        }
    }
    let mut seen: BTreeMap<String, Option<String>> = BTreeMap::new();
    let messages = lines.iter().filter_map(|v| v.pointer("/body/messages").and_then(Value::as_array)).flatten();
    for m in messages.filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant")) {
        for (id, sent) in calls(m.get("content")) {
            let Some(w) = written.get(id).filter(|w| *w != sent) else { continue };
            let entry = seen.entry(w.clone()).or_insert_with(|| Some(sent.to_string()));
            if entry.as_deref() != Some(sent) {
                *entry = None;
            }
        }
    }
    seen.into_iter().filter_map(|(w, s)| Some((w, s?))).collect()
}

/// The `(id, name)` of the `tool_use` blocks of a content array.
fn calls(content: Option<&Value>) -> impl Iterator<Item = (&str, &str)> {
    content.and_then(Value::as_array).into_iter().flatten().filter_map(|b| {
        (b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .then(|| Some((b.get("id")?.as_str()?, b.get("name")?.as_str()?)))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(name: &str, id: &str) -> Value {
        json!({"body": {"messages": [{"role": "user", "content": "x"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": {}}]}]}})
    }
    fn transcript(name: &str, id: &str) -> String {
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": id, "name": name, "input": {}}]}})
            .to_string()
    }

    #[test]
    fn a_call_sent_under_another_name_is_an_alias() {
        let got = learn(&[wire("Agent", "t1")], &[transcript("Task", "t1")]);
        assert_eq!(got, BTreeMap::from([("Task".to_string(), "Agent".to_string())]));
    }

    #[test]
    fn same_names_other_ids_and_conflicts_teach_nothing() {
        assert!(learn(&[wire("Task", "t1")], &[transcript("Task", "t1")]).is_empty());
        assert!(learn(&[wire("Agent", "t2")], &[transcript("Task", "t1")]).is_empty());
        let held = [transcript("Task", "t1") + "\n" + &transcript("Task", "t2")];
        assert!(learn(&[wire("Agent", "t1"), wire("Other", "t2")], &held).is_empty());
    }
}
