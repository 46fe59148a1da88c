//! What a capture's wire shows about the layout beyond its first request:
//! its `role: "system"` turns (breakpoints, the members they carry, which
//! params are a process's own), what a resumed process leaves out, how
//! user messages are merged, reminders joined to tool results, and the
//! attested `cch` of the native client. Each detector reads the captured
//! lines (and the transcripts beside them) and returns or sets layout data.

use super::capture::{content_blocks, message_lists};
use super::held_by;
use crate::assemble::wire;
use crate::profile::Layout;
use serde_json::Value;

/// What the capture's `role: "system"` turns show: a last one without a
/// breakpoint where an earlier message has one (2.1.198), the params they
/// carry (none before 2.1.3xx) and whether a later one goes without
/// (2.1.300).
pub(super) fn system_turns_layout(layout: &mut Layout, lines: &[Value], version: &str, compaction: Option<&str>) {
    let before = layout.clone();
    let marked = |m: &Value| match &m["content"] {
        Value::Array(c) => c.iter().any(|b| b.get("cache_control").is_some()),
        _ => false,
    };
    let requests = message_lists(lines);
    let mut any_system = false;
    let mut with_params = false;
    for ms in requests {
        let last_unmarked_system = ms.last().is_some_and(|m| m["role"] == "system" && !marked(m));
        if last_unmarked_system && ms.iter().any(marked) {
            layout.breakpoint_skips_system = true;
        }
        let systems: Vec<&Value> = ms.iter().filter(|m| m["role"] == "system").collect();
        let has = |m: &Value| layout.system_message_params.iter().any(|p| m.get(p).is_some());
        any_system |= !systems.is_empty();
        with_params |= systems.iter().any(|m| has(m));
        if systems.len() > 1 && has(systems[0]) && systems.iter().skip(1).any(|m| !has(m)) {
            layout.system_message_params_first_only = true;
        }
    }
    if any_system && !with_params {
        layout.system_message_params.clear();
    }
    // A param of the first request that a later one goes without is the
    // process's, not the release's: its value is the session's record.
    let bodies: Vec<&Value> =
        lines.iter().filter_map(|v| v.get("body")).filter(|b| b.get("messages").is_some()).collect();
    if let Some((first, rest)) = bodies.split_first()
        && let Some(params) = first.as_object()
    {
        // Side calls (title, topic checks) send other tools: not compared.
        let same_tools: Vec<&&Value> = rest.iter().filter(|b| b.get("tools") == first.get("tools")).collect();
        let own =
            |k: &&String| !matches!(k.as_str(), "model" | "messages" | "system" | "tools" | "metadata" | "stream");
        for k in params.keys().filter(own) {
            if same_tools.iter().any(|b| b.get(k).is_none()) && !layout.params_from_records.contains(k) {
                layout.params_from_records.push(k.clone());
            }
        }
    }
    // A compaction request drops texts of its own (2.1.150: the 1M label
    // that its resumed process keeps): not a resumed process's.
    let compacts = |b: &&Value| {
        compaction.is_some_and(|i| {
            b.pointer("/messages").and_then(Value::as_array).and_then(|m| m.last()).is_some_and(|m| m["content"] == i)
        })
    };
    let turns: Vec<&Value> = bodies.iter().copied().filter(|b| !compacts(b)).collect();
    if let Some((first, rest)) = turns.split_first() {
        resumed_drops(layout, first, rest);
    }
    if *layout != before {
        layout.name = format!("cc-{version}");
    }
}

/// Texts a later request of the capture (a resumed process) leaves out of
/// the first request's last system block (2.1.198 resume-multi-prompt: the
/// model line's ` (1M context)` and `[1m]`): each a deletion of at most 64
/// bytes, found left to right; nothing when the texts differ otherwise.
pub(super) fn resumed_drops(layout: &mut Layout, first: &Value, rest: &[&Value]) {
    let last_text =
        |b: &Value| b.pointer("/system").and_then(Value::as_array)?.last()?.get("text")?.as_str().map(str::to_string);
    let Some(a) = last_text(first) else { return };
    let tools_len = |b: &Value| b.get("tools").and_then(Value::as_array).map(Vec::len);
    for body in rest.iter().filter(|b| tools_len(b) == tools_len(first)) {
        let Some(b) = last_text(body) else { continue };
        if b == a || !layout.resumed_drops.is_empty() {
            continue;
        }
        if let Some(drops) = drops_between(first, body) {
            layout.resumed_drops = drops;
        }
    }
}

/// The texts `body` leaves out of `first`'s last system block, each a
/// deletion of at most 64 bytes found left to right, when its tools lose
/// every occurrence of them too (Bash's Co-Authored-By line names the
/// model); `None` when the texts differ otherwise or nothing is left out.
pub(super) fn drops_between(first: &Value, body: &Value) -> Option<Vec<String>> {
    let last_text =
        |b: &Value| b.pointer("/system").and_then(Value::as_array)?.last()?.get("text")?.as_str().map(str::to_string);
    let (a, b) = (last_text(first)?, last_text(body)?);
    let mut drops = Vec::new();
    let mut a_rest = a.as_str();
    let mut b_rest = b.as_str();
    while a_rest != b_rest {
        let p = a_rest.bytes().zip(b_rest.bytes()).take_while(|(x, y)| x == y).count();
        let probe = b_rest.get(p..(p + 24).min(b_rest.len())).unwrap_or("");
        let k = (1..=64).find(|&k| a_rest.get(p + k..).is_some_and(|t| t.starts_with(probe)))?;
        drops.push(a_rest.get(p..p + k)?.to_string());
        a_rest = &a_rest[p + k..];
        b_rest = &b_rest[p..];
    }
    let mut tools = first.get("tools").map(Value::to_string).unwrap_or_default();
    for d in &drops {
        tools = tools.replace(d.as_str(), "");
    }
    (!drops.is_empty() && Some(tools) == body.get("tools").map(Value::to_string)).then_some(drops)
}

/// The members a capture's `role: "system"` messages carry besides `role`
/// and `content` (2.1.328: `output_config`, the request's own value), in
/// their order; `None` when no request has a system message.
pub(super) fn system_message_members(lines: &[Value]) -> Option<Vec<String>> {
    let mut seen = false;
    let mut out: Vec<String> = Vec::new();
    for m in message_lists(lines).flatten().filter(|m| m["role"] == "system") {
        seen = true;
        for k in m.as_object().into_iter().flat_map(|o| o.keys()) {
            if k != "role" && k != "content" && !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    seen.then_some(out)
}

/// Whether the captures show user messages merged as they are: a text
/// block followed by another in its message that a transcript holds as a
/// whole string prompt, without the merge's `"\n"`, and no block that holds
/// one with it.
pub(super) fn merges_plain(lines: &[Value], held: &[String]) -> bool {
    let prompt = |t: &str| {
        let esc = serde_json::to_string(t).unwrap_or_default();
        held.iter().any(|h| h.contains(&format!("\"role\":\"user\",\"content\":{esc}}}")))
    };
    let (mut plain, mut newline) = (false, false);
    for m in message_lists(lines).flatten().filter(|m| m["role"] == "user") {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else { continue };
        for b in blocks.iter().take(blocks.len().saturating_sub(1)) {
            let Some(t) = b.get("text").and_then(Value::as_str) else { continue };
            match t.strip_suffix('\n') {
                Some(s) if !s.is_empty() && prompt(s) => newline = true,
                _ if !t.ends_with('\n') && prompt(t) => plain = true,
                _ => {}
            }
        }
    }
    plain && !newline
}

/// Whether a captured request carries a string tool result with a
/// `<system-reminder>` after its text that no transcript beside the capture
/// holds so (the transcript has the result and the reminder apart).
pub(super) fn joins_tool_results(lines: &[Value], held: &[String]) -> bool {
    content_blocks(lines)
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b.get("content").and_then(Value::as_str))
        .any(|c| c.contains("\n\n<system-reminder>\n") && !held_by(held, c))
}

/// Each captured Messages request whose billing header has a `cch` other
/// than the placeholder: its raw body with the placeholder put back, and
/// that `cch`.
pub(super) fn attested_samples(lines: &[Value]) -> Vec<(Vec<u8>, String)> {
    use base64::Engine;
    let mut out = Vec::new();
    for v in lines {
        let header = v.pointer("/body/system/0/text").and_then(Value::as_str).unwrap_or("");
        let Some(cch) = header.strip_prefix("x-anthropic-billing-header:").and_then(|h| {
            h.split(';').find_map(|p| p.trim().strip_prefix("cch=")).filter(|c| c.len() == 5 && *c != "00000")
        }) else {
            continue;
        };
        let raw = v.get("raw_b64").and_then(Value::as_str).unwrap_or("");
        let Ok(mut raw) = base64::engine::general_purpose::STANDARD.decode(raw) else { continue };
        let Some(at) = memchr::memmem::find(&raw, format!("cch={cch};").as_bytes()) else { continue };
        raw[at..at + 9].copy_from_slice(wire::CCH_PLACEHOLDER);
        out.push((raw, cch.to_string()));
    }
    out
}
