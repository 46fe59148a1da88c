//! Tool pairing: make every `tool_use` answered and every `tool_result`
//! answer something, so a rebuilt message list is valid for the API
//! (SPEC.md stage 4, `ensureToolResultPairing`).
//!
//! Rules, applied in order over user / assistant messages (`system` turns
//! are passed through):
//! - a `tool_result` in a user message that answers no `tool_use` of the
//!   assistant message just before (or answers one twice) is dropped;
//! - a `tool_use` left unanswered gets a synthetic result, `is_error: true`
//!   with [`SYNTHETIC_RESULT`], placed before the user message's other
//!   blocks (tool results come first); when no user message follows the
//!   assistant message, a user message of synthetic results is inserted;
//! - a user message left with no content is removed.
//!
//! The synthetic text is ctxasm's, not taken from a capture (none of the
//! captures has an orphan tool call); profiles may replace it.

use crate::json::Json;
use bumpalo::Bump;

/// Text of a synthetic result for an unanswered tool call.
pub const SYNTHETIC_RESULT: &str = "[Tool result missing from the transcript]";

/// What [`ensure_tool_result_pairing`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PairingRepairs {
    pub synthetic_results: usize,
    pub dropped_results: usize,
    pub inserted_messages: usize,
    pub removed_messages: usize,
}

impl PairingRepairs {
    pub fn any(&self) -> bool {
        *self != PairingRepairs::default()
    }
}

/// Distinct tool_use ids of a message, in order (a repeated id is one call
/// to answer; the duplicate itself is reported by `validate`).
fn tool_use_ids<'a>(m: &Json<'a>) -> Vec<&'a str> {
    let mut ids: Vec<&'a str> = Vec::new();
    for id in m
        .get("content")
        .and_then(Json::as_array)
        .unwrap_or(&[])
        .iter()
        .filter(|b| b.get_str("type") == Some("tool_use"))
        .filter_map(|b| b.get_str("id"))
    {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

fn synthetic<'a>(bump: &'a Bump, id: &'a str) -> Json<'a> {
    Json::Obj(bump.alloc_slice_copy(&[
        ("type", Json::Str("tool_result")),
        ("tool_use_id", Json::Str(id)),
        ("content", Json::Str(SYNTHETIC_RESULT)),
        ("is_error", Json::Bool(true)),
    ]))
}

fn with_content<'a>(bump: &'a Bump, m: &Json<'a>, blocks: Vec<Json<'a>>) -> &'a Json<'a> {
    let content = Json::Arr(bump.alloc_slice_copy(&blocks));
    let members: Vec<(&'a str, Json<'a>)> = match m.as_object() {
        Some(ms) => ms.iter().map(|&(k, v)| if k == "content" { (k, content) } else { (k, v) }).collect(),
        None => vec![("role", Json::Str("user")), ("content", content)],
    };
    bump.alloc(Json::Obj(bump.alloc_slice_copy(&members)))
}

/// Where pairing can resume: after an assistant message, with the calls of
/// that message still to be answered, and the repairs made before.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairState<'a> {
    /// Tool calls of the last assistant message, not yet answered.
    pending: Vec<&'a str>,
    pub(crate) repairs: PairingRepairs,
}

/// Repair the tool pairing of `messages` (see the module docs).
pub fn ensure_tool_result_pairing<'a>(
    bump: &'a Bump,
    messages: &[&'a Json<'a>],
) -> (Vec<&'a Json<'a>>, PairingRepairs) {
    let (out, end, _) = pairing_from(bump, messages, PairState::default(), &[]);
    (out, end.repairs)
}

/// [`ensure_tool_result_pairing`] of `messages` from `state` on (what the
/// messages before them left): the messages out, the repairs of the whole
/// list (`state`'s included), and for each index of `at` (ascending, in
/// `messages`) the output length and the state before that message.
pub(crate) fn pairing_from<'a>(
    bump: &'a Bump,
    messages: &[&'a Json<'a>],
    state: PairState<'a>,
    at: &[usize],
) -> (Vec<&'a Json<'a>>, PairState<'a>, Vec<(usize, PairState<'a>)>) {
    let mut out: Vec<&'a Json<'a>> = Vec::with_capacity(messages.len() + 1);
    let PairState { mut pending, repairs: mut r } = state;
    let mut snapshots = Vec::with_capacity(at.len());
    let mut next_at = at.iter().copied().peekable();
    let flush = |pending: &mut Vec<&'a str>, out: &mut Vec<&'a Json<'a>>, r: &mut PairingRepairs| {
        if pending.is_empty() {
            return;
        }
        let blocks: Vec<Json<'a>> = pending.iter().map(|id| synthetic(bump, id)).collect();
        r.synthetic_results += blocks.len();
        r.inserted_messages += 1;
        out.push(with_content(bump, &Json::Null, blocks));
        pending.clear();
    };
    for (i, &m) in messages.iter().enumerate() {
        while next_at.peek() == Some(&i) {
            next_at.next();
            snapshots.push((out.len(), PairState { pending: pending.clone(), repairs: r }));
        }
        match m.get_str("role") {
            Some("assistant") => {
                flush(&mut pending, &mut out, &mut r);
                pending = tool_use_ids(m);
                out.push(m);
            }
            Some("user") => {
                let original: Vec<Json<'a>> = match m.get("content") {
                    Some(Json::Arr(b)) => b.to_vec(),
                    Some(Json::Str(s)) => {
                        vec![Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(s))]))]
                    }
                    _ => Vec::new(),
                };
                let mut answered: Vec<&'a str> = Vec::new();
                let mut kept: Vec<Json<'a>> = Vec::with_capacity(original.len());
                for b in &original {
                    if b.get_str("type") == Some("tool_result") {
                        let id = b.get_str("tool_use_id").unwrap_or("");
                        if pending.contains(&id) && !answered.contains(&id) {
                            answered.push(id);
                        } else {
                            r.dropped_results += 1;
                            continue;
                        }
                    }
                    kept.push(*b);
                }
                let missing: Vec<Json<'a>> =
                    pending.iter().filter(|id| !answered.contains(id)).map(|id| synthetic(bump, id)).collect();
                pending.clear();
                r.synthetic_results += missing.len();
                let changed = !missing.is_empty() || kept.len() != original.len();
                if !changed {
                    out.push(m);
                    continue;
                }
                let blocks: Vec<Json<'a>> = missing.into_iter().chain(kept).collect();
                if blocks.is_empty() {
                    r.removed_messages += 1;
                    continue;
                }
                out.push(with_content(bump, m, blocks));
            }
            _ => out.push(m),
        }
    }
    for _ in next_at.filter(|&i| i >= messages.len()) {
        snapshots.push((out.len(), PairState { pending: pending.clone(), repairs: r }));
    }
    let end_pending = pending.clone();
    flush(&mut pending, &mut out, &mut r);
    (out, PairState { pending: end_pending, repairs: r }, snapshots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::Body;
    use crate::assemble::validate::{Rule, validate};
    use crate::json::LineParser;
    use crate::json::writer;
    use proptest::prelude::*;

    fn msgs<'a>(bump: &'a Bump, text: &str) -> Vec<&'a Json<'a>> {
        let v: &'a Json<'a> = bump.alloc(LineParser::new().parse(bump, text.as_bytes()).unwrap());
        v.as_array().unwrap().iter().collect()
    }

    fn render(m: &[&Json<'_>]) -> String {
        let items: Vec<String> = m.iter().map(|v| String::from_utf8(writer::to_vec(v)).unwrap()).collect();
        format!("[{}]", items.join(","))
    }

    #[test]
    fn valid_lists_are_left_alone() {
        let bump = Bump::new();
        let m = msgs(
            &bump,
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]"#,
        );
        let (out, r) = ensure_tool_result_pairing(&bump, &m);
        assert!(!r.any());
        assert!(out.iter().zip(&m).all(|(a, b)| std::ptr::eq(*a, *b)));
    }

    #[test]
    fn orphans_are_answered_and_strays_dropped() {
        let bump = Bump::new();
        // An interrupted turn: t1 unanswered, a stray result for x, then a
        // trailing tool call with nothing after it.
        let m = msgs(
            &bump,
            r#"[{"role":"user","content":"go"},
               {"role":"assistant","content":[{"type":"tool_use","id":"t0","name":"n","input":{}},{"type":"tool_use","id":"t1","name":"n","input":{}}]},
               {"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"ok"},{"type":"tool_result","tool_use_id":"x","content":"?"},{"type":"text","text":"and?"}]},
               {"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"n","input":{}}]}]"#,
        );
        let (out, r) = ensure_tool_result_pairing(&bump, &m);
        assert_eq!(
            r,
            PairingRepairs { synthetic_results: 2, dropped_results: 1, inserted_messages: 1, removed_messages: 0 }
        );
        assert_eq!(
            render(&out),
            concat!(
                r#"[{"role":"user","content":"go"},"#,
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"t0","name":"n","input":{}},{"type":"tool_use","id":"t1","name":"n","input":{}}]},"#,
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[Tool result missing from the transcript]","is_error":true},{"type":"tool_result","tool_use_id":"t0","content":"ok"},{"type":"text","text":"and?"}]},"#,
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"n","input":{}}]},"#,
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"[Tool result missing from the transcript]","is_error":true}]}]"#
            )
        );
    }

    #[test]
    fn a_user_message_of_only_stray_results_is_removed() {
        let bump = Bump::new();
        let m = msgs(
            &bump,
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"gone","content":"r"}]}]"#,
        );
        let (out, r) = ensure_tool_result_pairing(&bump, &m);
        assert_eq!((out.len(), r.removed_messages, r.dropped_results), (2, 1, 1));
    }

    /// A random conversation: messages of random roles whose tool calls and
    /// results use ids from a small set (orphans, strays, duplicates,
    /// interleavings, truncations all occur).
    fn conversation() -> impl Strategy<Value = String> {
        let block = prop_oneof![
            Just(r#"{"type":"text","text":"x"}"#.to_string()),
            (0u8..4).prop_map(|i| format!(r#"{{"type":"tool_use","id":"t{i}","name":"n","input":{{}}}}"#)),
            (0u8..4).prop_map(|i| format!(r#"{{"type":"tool_result","tool_use_id":"t{i}","content":"r"}}"#)),
        ];
        let message =
            (prop_oneof![Just("user"), Just("assistant"), Just("system")], proptest::collection::vec(block, 1..4))
                .prop_map(|(role, blocks)| {
                    // The API never sees tool_use from a user or results from an
                    // assistant; keep each role's own kinds.
                    let keep: Vec<String> = blocks
                        .into_iter()
                        .filter(|b| match role {
                            "user" => !b.contains("tool_use\""),
                            "assistant" => !b.contains("tool_result"),
                            _ => b.contains("\"text\""),
                        })
                        .collect();
                    let keep = if keep.is_empty() { vec![r#"{"type":"text","text":"x"}"#.to_string()] } else { keep };
                    format!(r#"{{"role":"{role}","content":[{}]}}"#, keep.join(","))
                });
        proptest::collection::vec(message, 0..12).prop_map(|m| format!("[{}]", m.join(",")))
    }

    proptest! {
        /// After repair no pairing rule is broken, and a second repair
        /// changes nothing.
        #[test]
        fn repaired_lists_pair_every_tool_call(text in conversation()) {
            let bump = Bump::new();
            let m = msgs(&bump, &text);
            let (out, _) = ensure_tool_result_pairing(&bump, &m);
            let broken: Vec<Rule> = validate(&Body::from_messages(out.clone()))
                .into_iter()
                .map(|v| v.rule)
                .filter(|r| matches!(r, Rule::ToolUseUnanswered | Rule::ToolResultWithoutToolUse))
                .collect();
            prop_assert!(broken.is_empty(), "{:?} in {}", broken, render(&out));
            let (again, r2) = ensure_tool_result_pairing(&bump, &out);
            prop_assert!(!r2.any(), "{:?}", r2);
            prop_assert_eq!(render(&again), render(&out));
        }
    }
}
