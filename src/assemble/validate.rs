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
//!
//! [`check_record`], [`check_shape`] and [`check_message`] check the
//! recorded pieces record replay builds a body from (an `api-request` line,
//! an `api-request-shape`, a message found by its hash) for the fields and
//! types the body needs: a record that fails them is reported, not replayed
//! into a broken request.

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
    Validator::default().check(body, 0)
}

/// The check of a session's requests in order: each request's messages are
/// walked from where they stop being the previous request's
/// ([`Body::shared`]), so a session of n turns costs n, not n².
#[derive(Default)]
pub struct Validator<'a> {
    /// Per message walked, the walk's state before it.
    frames: Vec<Frame<'a>>,
    /// The walk's state after the last message walked.
    now: Frame<'a>,
    /// Violations of the messages walked, in order.
    violations: Vec<Violation>,
    /// TTL of each message breakpoint (1h = true), in order.
    ttls: Vec<bool>,
    /// `tool_use` ids seen, and the order they were first seen in.
    seen: HashSet<&'a str>,
    seen_order: Vec<&'a str>,
}

/// Where the walk over the messages is.
#[derive(Default, Clone)]
struct Frame<'a> {
    violations: usize,
    ttls: usize,
    breakpoints: usize,
    media: usize,
    seen: usize,
    /// User and assistant messages.
    talk: usize,
    /// The previous user/assistant message (system turns are skipped).
    prev: Option<(usize, &'a str)>,
    /// The tool calls the next user message must answer.
    pending: Vec<&'a str>,
}

impl<'a> Validator<'a> {
    /// Every rule `body` breaks; its first `shared` messages are those of
    /// the body checked just before (0 for a first or unrelated body).
    pub fn check(&mut self, body: &Body<'a>, shared: usize) -> Vec<Violation> {
        self.rewind(shared);
        for m in body.messages.iter_from(self.frames.len()) {
            self.frames.push(self.now.clone());
            self.walk(m);
        }
        let mut out = Vec::new();
        let mut counts = Counts::default();
        if let Some(Json::Arr(tools)) = body.tools {
            for t in *tools {
                scan_block(t, None, &mut counts, &mut out);
            }
        }
        for s in body.system.iter() {
            scan_block(s, None, &mut counts, &mut out);
        }
        if self.now.talk == 0 {
            out.push(Violation {
                rule: Rule::NoMessages,
                message: None,
                detail: "no user or assistant message".into(),
            });
        }
        out.extend_from_slice(&self.violations);
        counts.breakpoints += self.now.breakpoints;
        counts.ttls.extend_from_slice(&self.ttls);
        counts.media += self.now.media;
        check_counts(&counts, &mut out);
        out
    }

    /// Back to the state before message `k` (or where the walk is, when
    /// it has not walked that far).
    fn rewind(&mut self, k: usize) {
        let Some(frame) = self.frames.get(k) else { return };
        let frame = frame.clone();
        self.frames.truncate(k);
        self.violations.truncate(frame.violations);
        self.ttls.truncate(frame.ttls);
        for id in self.seen_order.drain(frame.seen..) {
            self.seen.remove(id);
        }
        self.now = frame;
    }

    /// Walk message `m`, the next one.
    fn walk(&mut self, m: &'a Json<'a>) {
        let i = self.frames.len() - 1;
        let out = &mut self.violations;
        let role = m.get_str("role").unwrap_or("");
        if let Some(Json::Str("")) = m.get("content") {
            out.push(Violation { rule: Rule::EmptyText, message: Some(i), detail: "empty string content".into() });
        }
        let mut counts = Counts::default();
        for b in blocks(m) {
            scan_block(b, Some(i), &mut counts, out);
        }
        let now = &mut self.now;
        now.breakpoints += counts.breakpoints;
        now.media += counts.media;
        self.ttls.extend_from_slice(&counts.ttls);
        now.ttls = self.ttls.len();
        match role {
            "system" => {}
            "user" | "assistant" => {
                now.talk += 1;
                match now.prev {
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
                    check_results(i, m, &mut now.pending, out);
                } else {
                    check_tool_uses(i, m, &mut now.pending, &mut self.seen, &mut self.seen_order, out);
                }
                now.prev = Some((i, role));
            }
            other => {
                out.push(Violation { rule: Rule::UnknownRole, message: Some(i), detail: format!("role {other:?}") })
            }
        }
        now.violations = out.len();
        now.seen = self.seen_order.len();
    }
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
    seen_order: &mut Vec<&'a str>,
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
        if seen_ids.insert(id) {
            seen_order.push(id);
        } else {
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

/// A field of a recorded piece that is missing or of the wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// JSON path in its line: `params.model`, `tail[2]`, `shape.system`.
    pub field: String,
    /// `is a number (5), not a string`.
    pub detail: String,
    /// The problem hides which messages the request holds (`base`, `keep`,
    /// `tail`): a later request that keeps them cannot be rebuilt either.
    pub hides_messages: bool,
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.detail)
    }
}

/// `a number (5)`, `null`, `an object`: what a value is, for a message.
fn what(v: &Json<'_>) -> String {
    let shown = || crate::diag::clip(&v.to_compact_string(), 40);
    match v {
        Json::Null => "null".into(),
        Json::Bool(_) => format!("a boolean ({})", shown()),
        Json::I64(_) | Json::U64(_) | Json::F64(_) => format!("a number ({})", shown()),
        Json::Str(_) => format!("a string ({})", shown()),
        Json::Arr(_) => "an array".into(),
        Json::Obj(_) => "an object".into(),
    }
}

/// Collects the problems of one line.
struct Fields {
    out: Vec<FieldProblem>,
}

impl Fields {
    fn bad(&mut self, field: &str, detail: String, hides_messages: bool) {
        self.out.push(FieldProblem { field: field.to_string(), detail, hides_messages });
    }

    /// `v` (at `field`) must satisfy `ok`, described as `want`; `None` is
    /// "missing" unless `optional`.
    fn check(
        &mut self,
        field: &str,
        v: Option<&Json<'_>>,
        optional: bool,
        want: &str,
        ok: fn(&Json<'_>) -> bool,
        hides_messages: bool,
    ) {
        match v {
            None if optional => {}
            None => self.bad(field, format!("is missing (must be {want})"), hides_messages),
            Some(v) if ok(v) => {}
            Some(v) => self.bad(field, format!("is {}, not {want}", what(v)), hides_messages),
        }
    }
}

fn is_str(v: &Json<'_>) -> bool {
    matches!(v, Json::Str(_))
}

fn is_obj(v: &Json<'_>) -> bool {
    matches!(v, Json::Obj(_))
}

fn is_arr(v: &Json<'_>) -> bool {
    matches!(v, Json::Arr(_))
}

/// Params the body writes itself: a recorded one would be a second member.
const BODY_OWN: &[&str] = &["messages", "system", "tools", "metadata", "stream"];

/// The problems of a recorded request (an `api-request` line, `raw`):
/// `id` a string; `base` a string (or absent / null: no base); `keep` a
/// non-negative integer (absent: all of the base's messages; 0 without a
/// base); `tail` an array of strings; `shapeHash` a string; `cacheControl`
/// an array (or absent); `params` an object with `model` a string,
/// `max_tokens` a positive integer, `betas` an array of strings (or
/// absent), `thinking`, `context_management`, `output_config` objects (or
/// absent), no member twice and none of the members the body writes itself
/// (`messages`, `system`, `tools`, `metadata`, `stream`).
pub fn check_record(raw: &Json<'_>) -> Vec<FieldProblem> {
    let mut f = Fields { out: Vec::new() };
    f.check("id", raw.get("id"), false, "a string", is_str, false);
    let base = raw.get("base").filter(|b| !b.is_null());
    f.check("base", base, true, "a string", is_str, true);
    let keep = raw.get("keep");
    f.check("keep", keep, true, "a non-negative integer", |v| v.as_u64().is_some(), true);
    if base.is_none()
        && let Some(k) = keep.and_then(Json::as_u64).filter(|k| *k > 0)
    {
        f.bad("keep", format!("is {k} but the record names no base"), true);
    }
    match raw.get("tail") {
        Some(Json::Arr(items)) => {
            for (i, item) in items.iter().enumerate() {
                f.check(&format!("tail[{i}]"), Some(item), false, "a string", is_str, true);
            }
        }
        other => f.check("tail", other, false, "an array of message hashes", is_arr, true),
    }
    f.check("shapeHash", raw.get("shapeHash"), false, "a string", is_str, false);
    f.check("cacheControl", raw.get("cacheControl"), true, "an array", is_arr, false);
    let params = raw.get("params");
    f.check("params", params, false, "an object", is_obj, false);
    if let Some(Json::Obj(members)) = params {
        let p = params.copied().unwrap_or(Json::Null);
        f.check("params.model", p.get("model"), false, "a string", is_str, false);
        let positive = |v: &Json<'_>| v.as_u64().is_some_and(|n| n > 0);
        f.check("params.max_tokens", p.get("max_tokens"), false, "a positive integer", positive, false);
        match p.get("betas") {
            Some(Json::Arr(items)) => {
                for (i, item) in items.iter().enumerate() {
                    f.check(&format!("params.betas[{i}]"), Some(item), false, "a string", is_str, false);
                }
            }
            other => f.check("params.betas", other, true, "an array of strings", is_arr, false),
        }
        for key in ["thinking", "context_management", "output_config"] {
            f.check(&format!("params.{key}"), p.get(key), true, "an object", is_obj, false);
        }
        let mut seen: HashSet<&str> = HashSet::default();
        for (k, _) in members.iter() {
            if BODY_OWN.contains(k) {
                f.bad(&format!("params.{k}"), "is written by the body itself: it would be sent twice".into(), false);
            } else if !seen.insert(k) {
                f.bad(&format!("params.{k}"), "is recorded twice".into(), false);
            }
        }
    }
    f.out
}

/// The problems of a recorded shape (`shape` of an `api-request-shape`):
/// an object whose `system` and `tools` are arrays (or absent), the system
/// blocks objects.
pub fn check_shape(shape: &Json<'_>) -> Vec<FieldProblem> {
    let mut f = Fields { out: Vec::new() };
    if !is_obj(shape) {
        f.bad("shape", format!("is {}, not an object", what(shape)), false);
        return f.out;
    }
    match shape.get("system") {
        Some(Json::Arr(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                f.check(&format!("shape.system[{i}]"), Some(b), false, "an object", is_obj, false);
            }
        }
        other => f.check("shape.system", other, true, "an array", is_arr, false),
    }
    f.check("shape.tools", shape.get("tools"), true, "an array", is_arr, false);
    f.out
}

/// Why `m` is not a message (an object with a string `role` and a string
/// or array `content`), if it is not.
pub fn check_message(m: &Json<'_>) -> Option<String> {
    if !is_obj(m) {
        return Some(format!("is {}, not a message object", what(m)));
    }
    let mut f = Fields { out: Vec::new() };
    f.check("role", m.get("role"), false, "a string", is_str, false);
    f.check("content", m.get("content"), false, "a string or an array", |v| is_str(v) || is_arr(v), false);
    let problems: Vec<String> = f.out.iter().map(ToString::to_string).collect();
    (!problems.is_empty()).then(|| problems.join(", "))
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

    #[test]
    fn a_session_checked_in_order_reports_what_each_request_checked_alone_does() {
        let bump = Bump::new();
        let parse = |t: &str| -> &Json<'_> { bump.alloc(LineParser::new().parse(&bump, t.as_bytes()).unwrap()) };
        let user = |t: &str| parse(&format!(r#"{{"role":"user","content":"{t}"}}"#));
        let call = |id: &str| {
            parse(&format!(
                r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"n","input":{{}}}}]}}"#
            ))
        };
        let answer = |id: &str| {
            parse(&format!(
                r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"r","cache_control":{{"type":"ephemeral","ttl":"1h"}}}}]}}"#
            ))
        };
        let (u0, c1, a1, c1b, u2) = (user("hi"), call("t1"), answer("t1"), call("t1"), user(""));
        let five_m =
            parse(r#"{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}"#);
        // A session's requests: growing, cut back (a branch), with a
        // violation before the cut and after it.
        let session: Vec<Vec<&Json<'_>>> = vec![
            vec![u0],
            vec![u0, c1],
            vec![u0, c1, a1],
            vec![u0, c1, a1, c1b, u2],
            vec![u0, c1, five_m],
            vec![u0, c1, five_m, c1b, a1],
            vec![u0],
            vec![],
        ];
        let mut validator = Validator::default();
        let mut last: Vec<&Json<'_>> = Vec::new();
        let mut broke = 0;
        for messages in session {
            let shared = messages.iter().zip(&last).take_while(|(a, b)| std::ptr::eq(**a, **b)).count();
            last = messages.clone();
            let b = Body::from_messages(messages);
            let want = validate(&b);
            broke += want.len();
            assert_eq!(validator.check(&b, shared), want, "{shared}");
        }
        assert_eq!(broke, 8);
    }

    fn problems(f: fn(&Json<'_>) -> Vec<FieldProblem>, text: &str) -> Vec<String> {
        let bump = Bump::new();
        let v = LineParser::new().parse(&bump, text.as_bytes()).unwrap();
        f(&v).iter().map(|p| format!("{p}{}", if p.hides_messages { " [messages]" } else { "" })).collect()
    }

    #[test]
    fn a_recorded_request_needs_its_fields_with_their_types() {
        // The 2.1.328 long-session request 1, cut to its fields.
        let good = r#"{"type":"api-request","id":"r1","shapeHash":"h","params":{"model":"claude-opus-5-5","betas":["b"],"max_tokens":128000,"thinking":{"type":"adaptive"},"context_management":{"edits":[]},"output_config":{"effort":"medium"}},"base":"r0","keep":2,"tail":["aa","bb"],"cacheControl":[],"requestDigest":"d"}"#;
        assert_eq!(problems(check_record, good), Vec::<String>::new());
        let first = r#"{"id":"r0","shapeHash":"h","params":{"model":"m","max_tokens":1},"keep":0,"tail":["aa"]}"#;
        assert_eq!(problems(check_record, first), Vec::<String>::new());
        let cases: &[(&str, &str, &[&str])] = &[
            (r#""model":"claude-opus-5-5""#, r#""model":5"#, &["params.model is a number (5), not a string"]),
            (r#""params":{"#, r#""params":null,"p":{"#, &["params is null, not an object"]),
            (r#","max_tokens":128000"#, "", &["params.max_tokens is missing (must be a positive integer)"]),
            (
                r#""max_tokens":128000"#,
                r#""max_tokens":"128000""#,
                &[r#"params.max_tokens is a string ("128000"), not a positive integer"#],
            ),
            (
                r#""max_tokens":128000"#,
                r#""max_tokens":0"#,
                &["params.max_tokens is a number (0), not a positive integer"],
            ),
            (r#""betas":["b"]"#, r#""betas":["b",7]"#, &["params.betas[1] is a number (7), not a string"]),
            (
                r#""thinking":{"type":"adaptive"}"#,
                r#""thinking":"adaptive""#,
                &[r#"params.thinking is a string ("adaptive"), not an object"#],
            ),
            (
                r#""output_config""#,
                r#""stream":false,"output_config""#,
                &["params.stream is written by the body itself: it would be sent twice"],
            ),
            (r#""output_config""#, r#""model":"x","output_config""#, &["params.model is recorded twice"]),
            (r#""id":"r1""#, r#""id":1"#, &["id is a number (1), not a string"]),
            (r#""shapeHash":"h""#, r#""shapeHash":null"#, &["shapeHash is null, not a string"]),
            (r#""cacheControl":[]"#, r#""cacheControl":{}"#, &["cacheControl is an object, not an array"]),
            (r#""keep":2"#, r#""keep":"2""#, &[r#"keep is a string ("2"), not a non-negative integer [messages]"#]),
            (r#""keep":2"#, r#""keep":-1"#, &["keep is a number (-1), not a non-negative integer [messages]"]),
            (r#""base":"r0""#, r#""base":7"#, &["base is a number (7), not a string [messages]"]),
            (r#""base":"r0""#, r#""base":null"#, &["keep is 2 but the record names no base [messages]"]),
            (
                r#""tail":["aa","bb"]"#,
                r#""tail":"aa""#,
                &[r#"tail is a string ("aa"), not an array of message hashes [messages]"#],
            ),
            (r#""tail":["aa","bb"]"#, r#""tail":["aa",null]"#, &["tail[1] is null, not a string [messages]"]),
        ];
        for (from, to, want) in cases {
            assert!(good.contains(from), "{from}");
            assert_eq!(problems(check_record, &good.replacen(from, to, 1)), *want, "{to}");
        }
    }

    #[test]
    fn a_shape_and_a_message_need_their_types() {
        assert_eq!(
            problems(check_shape, r#"{"system":[{"type":"text","text":"x"}],"tools":[]}"#),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(check_shape, r#"{"system":"x","tools":{}}"#),
            [r#"shape.system is a string ("x"), not an array"#, "shape.tools is an object, not an array"]
        );
        assert_eq!(problems(check_shape, r#"{"system":[1]}"#), ["shape.system[0] is a number (1), not an object"]);
        assert_eq!(problems(check_shape, "[]"), ["shape is an array, not an object"]);
        let bump = Bump::new();
        let msg = |t: &str| check_message(&LineParser::new().parse(&bump, t.as_bytes()).unwrap());
        assert_eq!(msg(r#"{"role":"user","content":"x"}"#), None);
        assert_eq!(msg(r#"{"role":"assistant","content":[]}"#), None);
        assert_eq!(
            msg(r#"{"role":5,"content":{}}"#).as_deref(),
            Some("role is a number (5), not a string, content is an object, not a string or an array")
        );
        assert_eq!(msg(r#"{"content":"x"}"#).as_deref(), Some("role is missing (must be a string)"));
        assert_eq!(msg("7").as_deref(), Some("is a number (7), not a message object"));
    }
}
