//! Stage: the wire form of each message ([`crate::assemble::wire::collapse`]:
//! a user or system message of one plain text block is sent with a string
//! content).
//!
//! *Why here.* It runs after the cache breakpoint is placed (a block with
//! `cache_control` is not plain), and once per shared node: every message
//! but the last (which carries the breakpoint and changes every turn) is
//! looked up by address in the chain's map of those already collapsed
//! ([`super::finish::FinishState`]). A user message of the one text of a
//! line written as a string is that line's `message` node, when that is
//! exactly the wire form (`{"role":"user","content":…}`): the tree holds it
//! already ([`super::chain::ChainCtx::prompts`]).

use crate::assemble::wire::collapse;
use crate::json::Json;
use crate::model::entry::{Entry, EntryKind};
use bumpalo::Bump;
use rustc_hash::FxHashMap;

/// The wire forms of `messages`, reusing those of nodes seen before; with
/// `user_blocks` (1.0.x) a user message keeps its block.
pub(crate) fn collapse_messages<'a>(
    bump: &'a Bump,
    messages: Vec<&'a Json<'a>>,
    collapsed: &mut FxHashMap<*const Json<'a>, &'a Json<'a>>,
    prompts: &FxHashMap<usize, &'a Json<'a>>,
    user_blocks: bool,
) -> Vec<&'a Json<'a>> {
    let last = messages.len().saturating_sub(1);
    let collapse = |bump, m| written(m, prompts).unwrap_or_else(|| collapse(bump, m));
    messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            if user_blocks && m.get_str("role") == Some("user") {
                return m;
            }
            if i == last {
                collapse(bump, m)
            } else {
                *collapsed.entry(m as *const Json<'a>).or_insert_with(|| collapse(bump, m))
            }
        })
        .collect()
}

/// The `message` of each user line of `entries` whose content is a
/// string, by the address of that string: [`collapse_messages`]'s
/// `prompts`.
pub(crate) fn written_prompts<'a>(entries: &[Entry<'a>]) -> FxHashMap<usize, &'a Json<'a>> {
    entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::User(_)))
        .filter_map(|e| e.raw.get("message"))
        .filter_map(|m| Some((m.get_str("content")?.as_ptr() as usize, m)))
        .collect()
}

/// The line's `message` that is the wire form of `m` when `m` is a user
/// message of one plain text block whose text is a line's string content
/// (`prompts`, by the text's address) and that `message` is exactly what
/// [`collapse`] makes of `m`.
fn written<'a>(m: &Json<'a>, prompts: &FxHashMap<usize, &'a Json<'a>>) -> Option<&'a Json<'a>> {
    let [("role", Json::Str("user")), ("content", Json::Arr([block]))] = m.as_object()? else { return None };
    let text = match block.as_object()? {
        [("type", Json::Str("text")), ("text", Json::Str(t))]
        | [("text", Json::Str(t)), ("type", Json::Str("text"))] => *t,
        _ => return None,
    };
    let raw = prompts.get(&(text.as_ptr() as usize))?;
    match raw.as_object()? {
        [("role", Json::Str("user")), ("content", Json::Str(t))] if std::ptr::eq(*t, text) => Some(raw),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::writer;

    #[test]
    fn one_plain_block_becomes_a_string_once_per_node() {
        let bump = Bump::new();
        let block = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str("hi"))]));
        let m: &Json<'_> = bump.alloc(Json::Obj(bump.alloc_slice_copy(&[
            ("role", Json::Str("user")),
            ("content", Json::Arr(bump.alloc_slice_copy(&[block]))),
        ])));
        let mut seen = FxHashMap::default();
        let out = collapse_messages(&bump, vec![m, m], &mut seen, &FxHashMap::default(), false);
        assert_eq!(writer::to_vec(out[0]), br#"{"role":"user","content":"hi"}"#);
        assert_eq!(writer::to_vec(out[1]), br#"{"role":"user","content":"hi"}"#);
        assert_eq!(seen.len(), 1);
        let again = collapse_messages(&bump, vec![m, m], &mut seen, &FxHashMap::default(), false);
        assert!(std::ptr::eq(again[0], out[0]));
        // 1.0.x: the user message keeps its block.
        let kept = collapse_messages(&bump, vec![m], &mut FxHashMap::default(), &FxHashMap::default(), true);
        assert!(std::ptr::eq(kept[0], m));
    }

    #[test]
    fn a_prompt_written_as_a_string_is_its_lines_message() {
        let bump = Bump::new();
        let line =
            |bytes: &[u8]| -> &Json<'_> { bump.alloc(crate::json::LineParser::new().parse(&bump, bytes).unwrap()) };
        fn user<'a>(bump: &'a Bump, text: &'a str) -> &'a Json<'a> {
            let block = Json::Obj(bump.alloc_slice_copy(&[("type", Json::Str("text")), ("text", Json::Str(text))]));
            bump.alloc(Json::Obj(bump.alloc_slice_copy(&[
                ("role", Json::Str("user")),
                ("content", Json::Arr(bump.alloc_slice_copy(&[block]))),
            ])))
        }
        let raw = line(br#"{"role":"user","content":"hi"}"#);
        let other = line(br#"{"role":"user","content":"ho","isMeta":true}"#);
        let (hi, ho) = (raw.get_str("content").unwrap(), other.get_str("content").unwrap());
        let prompts: FxHashMap<usize, &Json<'_>> =
            [(hi.as_ptr() as usize, raw), (ho.as_ptr() as usize, other)].into_iter().collect();
        let last = user(&bump, "last");
        // The line's own text: its message node.
        let out = collapse_messages(&bump, vec![user(&bump, hi), last], &mut FxHashMap::default(), &prompts, false);
        assert!(std::ptr::eq(out[0], raw));
        // The same words elsewhere, or a line whose message has more than
        // the wire form: a new node, the same bytes as ever.
        let copy = bump.alloc_str("hi");
        for (m, want) in [
            (user(&bump, copy), r#"{"role":"user","content":"hi"}"#),
            (user(&bump, ho), r#"{"role":"user","content":"ho"}"#),
        ] {
            let out = collapse_messages(&bump, vec![m, last], &mut FxHashMap::default(), &prompts, false);
            assert!(!std::ptr::eq(out[0], raw) && !std::ptr::eq(out[0], other));
            assert_eq!(writer::to_vec(out[0]), want.as_bytes());
        }
    }
}
