//! Cache breakpoints on messages (SPEC.md stage 4, `addCacheBreakpoints`).
//!
//! 2.1.88 and 2.1.328 put exactly one `cache_control` in the message list:
//! on the last block of the last message (every request of the 28 captured
//! scenarios; the `system` message of 2.1.328's first request gets it when
//! it is last). 2.0.77 marks the last two messages so (the profile's
//! `layout.message_breakpoints`; `tests/fixtures/cc-2.0.77`). A block the
//! API refuses to mark — thinking, redacted thinking, empty text — is
//! skipped for the block before it; a system turn of no blocks, for the
//! message before it.

use super::normalize::with_member;
use crate::json::Json;
use bumpalo::Bump;

fn can_carry(b: &Json<'_>) -> bool {
    match b.get_str("type") {
        Some("thinking") | Some("redacted_thinking") => false,
        Some("text") => b.get_str("text").is_some_and(|t| !t.is_empty()),
        _ => true,
    }
}

/// Put `cache_control: value` on the last markable block of each of the
/// last `count` messages; returns whether the last message got one.
pub fn add_cache_breakpoints<'a>(bump: &'a Bump, messages: &mut [&'a Json<'a>], value: Json<'a>, count: usize) -> bool {
    add_cache_breakpoints_skipping(bump, messages, value, count, false)
}

/// [`add_cache_breakpoints`]; with `skip_system` (2.1.198) the last `count`
/// messages that are not `role: "system"` are the ones marked.
pub fn add_cache_breakpoints_skipping<'a>(
    bump: &'a Bump,
    messages: &mut [&'a Json<'a>],
    value: Json<'a>,
    count: usize,
    skip_system: bool,
) -> bool {
    let mut last_marked = false;
    let n = marked_end(messages);
    for k in targets(messages, count, skip_system) {
        let marked = mark(bump, &mut messages[k], value);
        last_marked = k + 1 == n && marked;
    }
    last_marked
}

/// The messages [`add_cache_breakpoints_skipping`] marks, ascending: found
/// from the end, so it costs what it marks, not the conversation.
pub(crate) fn targets(messages: &[&Json<'_>], count: usize, skip_system: bool) -> Vec<usize> {
    let skipped = |m: &Json<'_>| hollow(m) || (skip_system && m.get_str("role") == Some("system"));
    let mut targets: Vec<usize> =
        (0..marked_end(messages)).rev().filter(|&i| !skipped(messages[i])).take(count).collect();
    targets.reverse();
    targets
}

/// A system turn of no blocks (one that only carries members, 2.1.332) is
/// not counted: the message before it is marked.
fn hollow(m: &Json<'_>) -> bool {
    m.get_str("role") == Some("system") && matches!(m.get("content"), Some(Json::Arr(b)) if b.is_empty())
}

/// One past the last message that is not hollow.
fn marked_end(messages: &[&Json<'_>]) -> usize {
    messages.iter().rposition(|m| !hollow(m)).map_or(0, |i| i + 1)
}

/// Mark the last markable block of message `m`.
pub(crate) fn mark<'a>(bump: &'a Bump, last: &mut &'a Json<'a>, value: Json<'a>) -> bool {
    let Some(Json::Arr(blocks)) = last.get("content") else { return false };
    let Some(i) = blocks.iter().rposition(can_carry) else { return false };
    let Some(block) = with_member(bump, &blocks[i], "cache_control", value) else { return false };
    let mut new_blocks = blocks.to_vec();
    new_blocks[i] = block;
    let Some(m) = with_member(bump, last, "content", Json::Arr(bump.alloc_slice_copy(&new_blocks))) else {
        return false;
    };
    *last = bump.alloc(m);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;

    #[test]
    fn last_markable_block_of_last_message() {
        let bump = Bump::new();
        let m: &Json = bump.alloc(
            LineParser::new()
                .parse(&bump, br#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":"x"},{"type":"text","text":""}]}"#)
                .unwrap(),
        );
        let cc = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("ephemeral"))]));
        let mut msgs = vec![m];
        assert!(add_cache_breakpoints(&bump, &mut msgs, cc, 1));
        assert_eq!(
            msgs[0].to_compact_string(),
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":"x","cache_control":{"type":"ephemeral"}},{"type":"text","text":""}]}"#
        );
        // Two breakpoints (2.0.77): the last two messages each get one.
        let a: &Json = bump.alloc(
            LineParser::new().parse(&bump, br#"{"role":"assistant","content":[{"type":"text","text":"b"}]}"#).unwrap(),
        );
        let mut two = vec![m, a, m];
        assert!(add_cache_breakpoints(&bump, &mut two, cc, 2));
        let marked: Vec<bool> = two.iter().map(|x| x.to_compact_string().contains("cache_control")).collect();
        assert_eq!(marked, [false, true, true]);
        let mut none: Vec<&Json> = vec![];
        assert!(!add_cache_breakpoints(&bump, &mut none, cc, 1));
        // An empty system turn last (2.1.332 `--effort` on a resume): the
        // message before it is marked.
        let hollow: &Json = bump.alloc(
            LineParser::new()
                .parse(&bump, br#"{"role":"system","content":[],"output_config":{"effort":"high"}}"#)
                .unwrap(),
        );
        let mut tail = vec![a, m, hollow];
        assert!(add_cache_breakpoints(&bump, &mut tail, cc, 1));
        let marked: Vec<bool> = tail.iter().map(|x| x.to_compact_string().contains("cache_control")).collect();
        assert_eq!(marked, [false, true, false]);
        // 2.1.198: a trailing system turn is passed over.
        let sys: &Json = bump.alloc(
            LineParser::new().parse(&bump, br#"{"role":"system","content":[{"type":"text","text":"s"}]}"#).unwrap(),
        );
        let mut with_sys = vec![a, m, sys];
        assert!(!add_cache_breakpoints_skipping(&bump, &mut with_sys, cc, 1, true));
        let marked: Vec<bool> = with_sys.iter().map(|x| x.to_compact_string().contains("cache_control")).collect();
        assert_eq!(marked, [false, true, false]);
        let mut with_sys = vec![a, m, sys];
        assert!(add_cache_breakpoints_skipping(&bump, &mut with_sys, cc, 1, false));
    }
}
