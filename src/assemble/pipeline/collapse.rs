//! Stage: the wire form of each message ([`crate::assemble::wire::collapse`]:
//! a user or system message of one plain text block is sent with a string
//! content).
//!
//! *Why here.* It runs after the cache breakpoint is placed (a block with
//! `cache_control` is not plain), and once per shared node: every message
//! but the last (which carries the breakpoint and changes every turn) is
//! looked up by address in the chain's map of those already collapsed
//! ([`super::finish::FinishState`]).

use crate::assemble::wire::collapse;
use crate::json::Json;
use bumpalo::Bump;
use rustc_hash::FxHashMap;

/// The wire forms of `messages`, reusing those of nodes seen before; with
/// `user_blocks` (1.0.x) a user message keeps its block.
pub(crate) fn collapse_messages<'a>(
    bump: &'a Bump,
    messages: Vec<&'a Json<'a>>,
    collapsed: &mut FxHashMap<*const Json<'a>, &'a Json<'a>>,
    user_blocks: bool,
) -> Vec<&'a Json<'a>> {
    let last = messages.len().saturating_sub(1);
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
        let out = collapse_messages(&bump, vec![m, m], &mut seen, false);
        assert_eq!(writer::to_vec(out[0]), br#"{"role":"user","content":"hi"}"#);
        assert_eq!(writer::to_vec(out[1]), br#"{"role":"user","content":"hi"}"#);
        assert_eq!(seen.len(), 1);
        let again = collapse_messages(&bump, vec![m, m], &mut seen, false);
        assert!(std::ptr::eq(again[0], out[0]));
        // 1.0.x: the user message keeps its block.
        let kept = collapse_messages(&bump, vec![m], &mut FxHashMap::default(), true);
        assert!(std::ptr::eq(kept[0], m));
    }
}
