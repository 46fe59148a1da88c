//! The session's own prompt snapshot: the system prompt sections, CLI prefix
//! and tools a 2.1.3xx session writes in its `prompt_snapshot` attachments,
//! read once per session for the rendered system side ([`super::setup`]).
//!
//! *Why.* A session without `api-request*` records (stripped, or a release
//! that writes none) still says which prompt it ran with: the one its
//! `--system-prompt`, `--append-system-prompt` and `--model` made, which a
//! profile from another session's capture cannot know. It is the user's
//! own data, not text ctxasm ships.
//!
//! *What the captures show* (the 14 2.1.328 scenarios): `systemPrompt`
//! joined by `"\n\n"` is the last system block; `cliPrefix` is the block
//! after the billing header; each `tools[i].schema` is a wire tool object
//! (the wire list also holds a `defer_loading` placeholder the snapshot
//! leaves out, so the profile's tools come first). The first snapshot of a
//! process has `systemPrompt` only; the next adds the prefix and tools, so
//! each part is the first the session wrote. One per session: a resumed
//! process keeps the session's prompt and writes no new snapshot (2.1.332
//! captures resumed with `--append-system-prompt`, `--model sonnet`,
//! `--effort`: the same system blocks in every request).

use crate::corpus::Session;
use crate::json::{Json, writer};
use crate::model::entry::EntryKind;
use serde_json::Value;

/// What a session's `prompt_snapshot` attachments hold (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptSnapshot {
    /// The system prompt's sections, in order.
    pub sections: Vec<String>,
    /// The CLI prefix block's text.
    pub cli_prefix: Option<String>,
    /// The wire tool objects.
    pub tools: Option<Vec<Value>>,
}

/// The snapshot of `session`: the first `systemPrompt`, `cliPrefix` and
/// `tools` its files write; `None` when it writes no `systemPrompt`.
pub fn session_snapshot(session: &Session<'_, '_>) -> Option<PromptSnapshot> {
    let mut sections: Option<Vec<String>> = None;
    let mut cli_prefix: Option<String> = None;
    let mut tools: Option<Vec<Value>> = None;
    for e in session.files().flat_map(|f| f.parsed.entries.iter()) {
        let EntryKind::Attachment(a) = &e.kind else { continue };
        if a.attachment_type != Some("prompt_snapshot") {
            continue;
        }
        let snap = a.attachment;
        if sections.is_none() {
            sections = snap.get("systemPrompt").and_then(strings);
        }
        if cli_prefix.is_none() {
            cli_prefix = snap.get_str("cliPrefix").map(str::to_string);
        }
        if tools.is_none() {
            tools = snap.get("tools").and_then(wire_tools);
        }
        if sections.is_some() && cli_prefix.is_some() && tools.is_some() {
            break;
        }
    }
    Some(PromptSnapshot { sections: sections?, cli_prefix, tools })
}

/// Every element of an array of strings (`None` if one is not a string).
fn strings(v: &Json<'_>) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|s| s.as_str().map(str::to_string)).collect()
}

/// The wire tool objects of a snapshot's `tools` (each entry's `schema`),
/// with their bytes as written (`JSON.stringify` order and numbers).
fn wire_tools(v: &Json<'_>) -> Option<Vec<Value>> {
    v.as_array()?.iter().map(|t| serde_json::from_slice(&writer::to_vec(t.get("schema")?)).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{RunOptions, for_each_session_of};
    use crate::input::discover::discover;
    use std::path::Path;

    fn snapshot_of(lines: &str) -> Option<PromptSnapshot> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, lines).unwrap();
        let disc = discover(&[p]);
        let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| session_snapshot(s));
        out.into_iter().next().unwrap().unwrap()
    }

    #[test]
    fn each_part_is_the_first_written() {
        let lines = concat!(
            r#"{"type":"attachment","uuid":"a","parentUuid":null,"sessionId":"s","attachment":{"type":"prompt_snapshot","systemPrompt":["A","B"]}}"#,
            "\n",
            r#"{"type":"attachment","uuid":"b","parentUuid":"a","sessionId":"s","attachment":{"type":"prompt_snapshot","systemPrompt":["C"],"cliPrefix":"P","tools":[{"name":"T","description":"d","schema":{"name":"T","description":"d","input_schema":{"type":"object","z":1,"a":2}}}]}}"#,
            "\n"
        );
        let s = snapshot_of(lines).unwrap();
        assert_eq!(s.sections, ["A", "B"]);
        assert_eq!(s.cli_prefix.as_deref(), Some("P"));
        let tools = s.tools.unwrap();
        assert_eq!(
            serde_json::to_string(&tools).unwrap(),
            r#"[{"name":"T","description":"d","input_schema":{"type":"object","z":1,"a":2}}]"#
        );
    }

    #[test]
    fn no_system_prompt_no_snapshot() {
        let lines = concat!(
            r#"{"type":"attachment","uuid":"a","parentUuid":null,"sessionId":"s","attachment":{"type":"prompt_snapshot","cliPrefix":"P"}}"#,
            "\n",
            r#"{"type":"user","uuid":"u","parentUuid":"a","sessionId":"s","message":{"role":"user","content":"hi"}}"#,
            "\n"
        );
        assert_eq!(snapshot_of(lines), None);
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.88/hello/transcripts");
        let disc = discover(&[fixture]);
        let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| session_snapshot(s));
        assert_eq!(out.into_iter().next().unwrap().unwrap(), None);
    }
}
