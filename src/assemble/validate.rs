//! API-validity check of an assembled request, from the Messages API rules.
//!
//! Rules (sources: `../shared/docs/anthropic-api-facts.md` §1.1–1.2 for cache
//! control, `../shared/docs/SPEC.md` stage 4 for media and tool pairing):
//! - the first message is a user message; apart from `system` turns (which
//!   the 2.1.3xx client sends mid-conversation), `user` and `assistant`
//!   alternate;
//! - every `tool_use` of an assistant message is answered by a `tool_result`
//!   in the next user message, and every `tool_result` answers a `tool_use`
//!   of the assistant message just before;
//! - `tool_use` ids are unique in the request;
//! - at most 4 blocks carry `cache_control` ("A maximum of 4 blocks with
//!   cache_control may be provided"); thinking blocks and empty text blocks
//!   cannot carry one; every 1h breakpoint comes before any 5m one;
//! - at most 100 media blocks (image, document), tool results included;
//! - no empty text block.

use super::Body;
use crate::json::Json;
use rustc_hash::FxHashSet as HashSet;
use std::fmt;

/// Most `cache_control` blocks per request.
pub const MAX_BREAKPOINTS: usize = 4;
/// Most media blocks per request.
pub const MAX_MEDIA: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    NoMessages,
    FirstNotUser,
    RolesDoNotAlternate,
    UnknownRole,
    ToolUseUnanswered,
    ToolResultWithoutToolUse,
    DuplicateToolUseId,
    TooManyBreakpoints,
    CacheControlNotAllowed,
    TtlOrder,
    TooManyMedia,
    EmptyText,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NoMessages => "no_messages",
            Rule::FirstNotUser => "first_not_user",
            Rule::RolesDoNotAlternate => "roles_do_not_alternate",
            Rule::UnknownRole => "unknown_role",
            Rule::ToolUseUnanswered => "tool_use_unanswered",
            Rule::ToolResultWithoutToolUse => "tool_result_without_tool_use",
            Rule::DuplicateToolUseId => "duplicate_tool_use_id",
            Rule::TooManyBreakpoints => "too_many_breakpoints",
            Rule::CacheControlNotAllowed => "cache_control_not_allowed",
            Rule::TtlOrder => "ttl_order",
            Rule::TooManyMedia => "too_many_media",
            Rule::EmptyText => "empty_text",
        }
    }
}

/// One broken rule, with the message it is in (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    pub message: Option<usize>,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message {
            Some(i) => write!(f, "{} at messages[{i}]: {}", self.rule.as_str(), self.detail),
            None => write!(f, "{}: {}", self.rule.as_str(), self.detail),
        }
    }
}

fn blocks<'a>(m: &Json<'a>) -> &'a [Json<'a>] {
    m.get("content").and_then(Json::as_array).unwrap_or(&[])
}

/// Walks every block (message content, tool_result content, system, tools)
/// for breakpoints and media.
#[derive(Default)]
struct Counts {
    breakpoints: usize,
    /// TTL of each breakpoint in prefix order (tools, system, messages).
    ttls: Vec<bool>,
    media: usize,
}

fn scan_block(b: &Json<'_>, at: Option<usize>, counts: &mut Counts, out: &mut Vec<Violation>) {
    let t = b.get_str("type").unwrap_or("");
    if let Some(cc) = b.get("cache_control") {
        counts.breakpoints += 1;
        counts.ttls.push(cc.get_str("ttl") == Some("1h"));
        let empty_text = t == "text" && b.get_str("text") == Some("");
        if matches!(t, "thinking" | "redacted_thinking") || empty_text {
            out.push(Violation {
                rule: Rule::CacheControlNotAllowed,
                message: at,
                detail: format!("a {} block cannot carry cache_control", if empty_text { "empty text" } else { t }),
            });
        }
    }
    match t {
        "image" | "document" => counts.media += 1,
        "text" if b.get_str("text") == Some("") => {
            out.push(Violation { rule: Rule::EmptyText, message: at, detail: "empty text block".into() })
        }
        "tool_result" => {
            for inner in b.get("content").and_then(Json::as_array).unwrap_or(&[]) {
                scan_block(inner, at, counts, out);
            }
        }
        _ => {}
    }
}

/// Every rule `body` breaks (empty when the API would accept it).
pub fn validate(body: &Body<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut counts = Counts::default();
    if let Some(Json::Arr(tools)) = body.tools {
        for t in *tools {
            scan_block(t, None, &mut counts, &mut out);
        }
    }
    for s in &body.system {
        scan_block(s, None, &mut counts, &mut out);
    }
    if !body.messages.iter().any(|m| matches!(m.get_str("role"), Some("user") | Some("assistant"))) {
        out.push(Violation { rule: Rule::NoMessages, message: None, detail: "no user or assistant message".into() });
    }
    let mut seen_ids: HashSet<&str> = HashSet::default();
    // The previous user/assistant message (system turns are skipped).
    let mut prev: Option<(usize, &str)> = None;
    let mut pending: Vec<&str> = Vec::new();
    for (i, m) in body.messages.iter().enumerate() {
        let role = m.get_str("role").unwrap_or("");
        if let Some(Json::Str("")) = m.get("content") {
            out.push(Violation { rule: Rule::EmptyText, message: Some(i), detail: "empty string content".into() });
        }
        for b in blocks(m) {
            scan_block(b, Some(i), &mut counts, &mut out);
        }
        match role {
            "system" => continue,
            "user" | "assistant" => {}
            other => {
                out.push(Violation { rule: Rule::UnknownRole, message: Some(i), detail: format!("role {other:?}") });
                continue;
            }
        }
        match prev {
            None if role != "user" => out.push(Violation {
                rule: Rule::FirstNotUser,
                message: Some(i),
                detail: format!("the first message is {role}"),
            }),
            Some((_, p)) if p == role => out.push(Violation {
                rule: Rule::RolesDoNotAlternate,
                message: Some(i),
                detail: format!("two {role} messages in a row"),
            }),
            _ => {}
        }
        if role == "user" {
            check_results(i, m, &mut pending, &mut out);
        } else {
            check_tool_uses(i, m, &mut pending, &mut seen_ids, &mut out);
        }
        prev = Some((i, role));
    }
    check_counts(&counts, &mut out);
    out
}

/// A user message answers exactly the previous assistant message's tool
/// calls.
fn check_results<'a>(i: usize, m: &Json<'a>, pending: &mut Vec<&'a str>, out: &mut Vec<Violation>) {
    let results: Vec<&str> = blocks(m)
        .iter()
        .filter(|b| b.get_str("type") == Some("tool_result"))
        .filter_map(|b| b.get_str("tool_use_id"))
        .collect();
    for id in pending.iter() {
        if !results.contains(id) {
            out.push(Violation {
                rule: Rule::ToolUseUnanswered,
                message: Some(i),
                detail: format!("tool_use {id} has no tool_result here"),
            });
        }
    }
    for id in &results {
        if !pending.contains(id) {
            out.push(Violation {
                rule: Rule::ToolResultWithoutToolUse,
                message: Some(i),
                detail: format!("tool_result for {id} follows no matching tool_use"),
            });
        }
    }
    pending.clear();
}

/// An assistant message's tool calls: the previous ones must have been
/// answered, and no id is used twice in a request.
fn check_tool_uses<'a>(
    i: usize,
    m: &Json<'a>,
    pending: &mut Vec<&'a str>,
    seen_ids: &mut HashSet<&'a str>,
    out: &mut Vec<Violation>,
) {
    if let Some(&id) = pending.first() {
        // Two assistant turns in a row were reported above; the earlier
        // tool_use stays unanswered.
        out.push(Violation {
            rule: Rule::ToolUseUnanswered,
            message: Some(i),
            detail: format!("tool_use {id} is followed by another assistant message"),
        });
    }
    *pending =
        blocks(m).iter().filter(|b| b.get_str("type") == Some("tool_use")).filter_map(|b| b.get_str("id")).collect();
    for id in pending.iter() {
        if !seen_ids.insert(id) {
            out.push(Violation {
                rule: Rule::DuplicateToolUseId,
                message: Some(i),
                detail: format!("tool_use id {id} is used twice"),
            });
        }
    }
}

/// The request-wide limits: breakpoints, TTL order, media.
fn check_counts(counts: &Counts, out: &mut Vec<Violation>) {
    if counts.breakpoints > MAX_BREAKPOINTS {
        out.push(Violation {
            rule: Rule::TooManyBreakpoints,
            message: None,
            detail: format!("{} blocks carry cache_control (at most {MAX_BREAKPOINTS})", counts.breakpoints),
        });
    }
    if let Some(first_5m) = counts.ttls.iter().position(|one_hour| !one_hour)
        && counts.ttls[first_5m..].iter().any(|one_hour| *one_hour)
    {
        out.push(Violation {
            rule: Rule::TtlOrder,
            message: None,
            detail: "a 1h breakpoint comes after a 5m one".into(),
        });
    }
    if counts.media > MAX_MEDIA {
        out.push(Violation {
            rule: Rule::TooManyMedia,
            message: None,
            detail: format!("{} image/document blocks (at most {MAX_MEDIA})", counts.media),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LineParser;
    use bumpalo::Bump;

    fn body<'a>(bump: &'a Bump, messages: &str) -> Body<'a> {
        let v: &'a Json<'a> = bump.alloc(LineParser::new().parse(bump, messages.as_bytes()).unwrap());
        Body::from_messages(v.as_array().unwrap().iter().collect())
    }

    fn rules(b: &Body<'_>) -> Vec<Rule> {
        validate(b).into_iter().map(|v| v.rule).collect()
    }

    #[test]
    fn a_real_turn_with_a_system_message_is_valid() {
        // Shape of the 2.1.328 parallel-tools second request.
        let bump = Bump::new();
        let b = body(
            &bump,
            r#"[{"role":"user","content":[{"type":"text","text":"compare a.txt and b.txt"}]},
                {"role":"system","content":"Environment"},
                {"role":"assistant","content":[{"type":"tool_use","id":"t0","name":"Read","input":{}},{"type":"tool_use","id":"t1","name":"Read","input":{}}]},
                {"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"b"},{"tool_use_id":"t0","type":"tool_result","content":"a","cache_control":{"type":"ephemeral"}}]}]"#,
        );
        assert_eq!(validate(&b), vec![]);
    }

    #[test]
    fn each_rule_is_caught() {
        let bump = Bump::new();
        let cases = [
            (r#"[{"role":"assistant","content":"x"}]"#, vec![Rule::FirstNotUser]),
            (r#"[]"#, vec![Rule::NoMessages]),
            (r#"[{"role":"system","content":"s"}]"#, vec![Rule::NoMessages]),
            (r#"[{"role":"user","content":"a"},{"role":"user","content":"b"}]"#, vec![Rule::RolesDoNotAlternate]),
            (r#"[{"role":"user","content":"a"},{"role":"tool","content":"b"}]"#, vec![Rule::UnknownRole]),
            (
                r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":"b"}]"#,
                vec![Rule::ToolUseUnanswered],
            ),
            (
                r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"r"}]}]"#,
                vec![Rule::ToolResultWithoutToolUse],
            ),
            (
                r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}},{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]"#,
                vec![Rule::DuplicateToolUseId],
            ),
            (r#"[{"role":"user","content":[{"type":"text","text":""}]}]"#, vec![Rule::EmptyText]),
            (
                r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"s","cache_control":{"type":"ephemeral"}}]}]"#,
                vec![Rule::CacheControlNotAllowed],
            ),
            (
                r#"[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]"#,
                vec![Rule::TtlOrder],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(rules(&body(&bump, text)), want, "{text}");
        }
        let cc = r#"{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}"#;
        let five = format!(r#"[{{"role":"user","content":[{}]}}]"#, [cc; 5].join(","));
        assert_eq!(rules(&body(&bump, &five)), vec![Rule::TooManyBreakpoints]);
        let img = r#"{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}"#;
        let many = format!(
            r#"[{{"role":"user","content":"a"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"n","input":{{}}}}]}},{{"role":"user","content":[{},{}]}}]"#,
            [img; 100].join(","),
            r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}"#
        );
        assert_eq!(rules(&body(&bump, &many)), vec![Rule::TooManyMedia]);
    }
}
