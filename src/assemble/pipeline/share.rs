//! Stage: message nodes shared across a chain's turns.
//!
//! *What it does.* [`share_with_previous`] replaces each message equal to
//! the previous turn's message at the same place by that node, then
//! remembers this turn's messages for the next one.
//!
//! *Why.* Every turn rebuilds its messages from the same transcript blocks;
//! one node per message lets dedup output, the byte caches of `write` and
//! [`super::collapse`] see each message once per session instead of once
//! per turn.
//!
//! *Invariants.* Bytes never change: a node is only replaced by a
//! structurally equal one.

use crate::json::Json;

/// Share this turn's messages with the previous turn's equal ones.
pub(crate) fn share_with_previous<'a>(messages: &mut [&'a Json<'a>], prev_turn: &mut Vec<&'a Json<'a>>) {
    for (m, p) in messages.iter_mut().zip(prev_turn.iter()) {
        if !std::ptr::eq(*m, *p) && same(m, p) {
            *m = p;
        }
    }
    prev_turn.clear();
    prev_turn.extend_from_slice(messages);
}

/// Structural equality that is O(1) for values built from the same arena
/// slices (messages rebuilt for each turn from the same transcript blocks).
pub(crate) fn same(a: &Json<'_>, b: &Json<'_>) -> bool {
    match (a, b) {
        (Json::Arr(x), Json::Arr(y)) => {
            std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len()
                || x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (Json::Obj(x), Json::Obj(y)) => {
            std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len()
                || x.len() == y.len() && x.iter().zip(y.iter()).all(|((k, p), (l, q))| k == l && same(p, q))
        }
        (Json::Str(x), Json::Str(y)) => std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len() || x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_messages_become_the_previous_node() {
        let a1 = Json::Obj(&[("role", Json::Str("user")), ("content", Json::Str("hi"))]);
        let a2 = Json::Obj(&[("role", Json::Str("user")), ("content", Json::Str("hi"))]);
        let b = Json::Obj(&[("role", Json::Str("assistant")), ("content", Json::Str("yo"))]);
        let mut prev = vec![&a1];
        let mut now = vec![&a2, &b];
        share_with_previous(&mut now, &mut prev);
        assert!(std::ptr::eq(now[0], &a1));
        assert!(std::ptr::eq(now[1], &b));
        assert_eq!(prev.len(), 2);
        // A different message at the same place is kept.
        let c = Json::Obj(&[("role", Json::Str("user")), ("content", Json::Str("other"))]);
        let mut next = vec![&c];
        share_with_previous(&mut next, &mut prev);
        assert!(std::ptr::eq(next[0], &c));
        assert!(!same(&a1, &b) && same(&a1, &a2));
    }
}
