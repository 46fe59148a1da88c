//! What a capture of a Task subagent (the `subagent` probe of
//! `src/probe/probes.json`: the main model calls the Agent tool with a
//! general-purpose agent) teaches the profile ([`learn_subagent`]): the
//! billing header's subagent flag (2.1.328 and 2.1.332 send
//! `cc_entrypoint=sdk-cli; cc_is_subagent=true;` on the agent's requests,
//! 2.1.88 nothing more than the main chain's header).
//!
//! The agent's requests are the captured requests whose prompt (the last
//! text of the first message) is the first line of a subagent transcript
//! beside the capture (`subagents/agent-*.jsonl`, not a compaction's
//! `agent-acompact-*`).

use super::err;
use crate::profile::{Profile, ProfileError};
use serde_json::Value;
use std::path::Path;

/// The first prompts of the subagent transcripts beside `wire` (compactions
/// left out).
fn agent_prompts(wire: &Path) -> Vec<String> {
    let is_agent = |p: &&std::path::PathBuf| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.strip_prefix("agent-").is_some_and(|id| !crate::input::discover::is_compaction_agent(id))
    };
    super::capture::transcript_paths_beside(wire)
        .iter()
        .filter(is_agent)
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| t.lines().find_map(first_prompt))
        .collect()
}

/// The prompt text of a transcript line that is a user line with no parent.
fn first_prompt(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("user") || !v.get("parentUuid").is_some_and(Value::is_null) {
        return None;
    }
    match v.pointer("/message/content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.iter().rev().find_map(|b| b.get("text").and_then(Value::as_str)).map(str::to_string),
        _ => None,
    }
}

/// The prompt of a request: the last text of its first message.
fn request_prompt(body: &Value) -> Option<&str> {
    match body.pointer("/messages/0/content")? {
        Value::String(s) => Some(s.as_str()),
        Value::Array(a) => a.iter().rev().find_map(|b| b.get("text").and_then(Value::as_str)),
        _ => None,
    }
}

/// The text of a request's first system block (the billing header).
fn header(body: &Value) -> Option<&str> {
    body.pointer("/system/0/text").and_then(Value::as_str).filter(|t| t.starts_with("x-anthropic-billing-header:"))
}

/// What a subagent header adds after `cc_entrypoint=<entrypoint>;` and the
/// main header's `cch` part (`None`: nothing).
pub(super) fn subagent_flag(header: &str, entrypoint: &str, cch: Option<&str>) -> Option<String> {
    let (_, rest) = header.split_once(&format!("cc_entrypoint={entrypoint};"))?;
    // The attested `cch` (2.1.150) differs per request: skip its value.
    let rest = match (cch, rest.strip_prefix(" cch=")) {
        (Some(_), Some(after)) => after.split_once(';').map_or("", |(_, r)| r),
        _ => rest,
    };
    Some(rest.to_string()).filter(|r| !r.is_empty())
}

/// Learn from the capture `wire` (with its transcripts beside it) what the
/// profile's subagent requests need (see the module docs). A capture
/// without a subagent request changes nothing.
pub fn learn_subagent(profile: &mut Profile, wire: &Path) -> Result<(), ProfileError> {
    let text = std::fs::read_to_string(wire).map_err(|source| ProfileError::Io { path: wire.into(), source })?;
    let prompts = agent_prompts(wire);
    if prompts.is_empty() {
        return Ok(());
    }
    let mut bodies = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|source| ProfileError::Json { path: wire.into(), source })?;
        if let Some(body) = v.get("body").filter(|b| b.get("messages").is_some()) {
            bodies.push(body.clone());
        }
    }
    let agent = |b: &&Value| request_prompt(b).is_some_and(|p| prompts.iter().any(|q| q == p));
    let Some(first) = bodies.iter().find(agent) else {
        return Err(err(wire, "no captured request is the subagent's (its transcript's first prompt)"));
    };
    if let Some(h) = header(first) {
        profile.billing.subagent = subagent_flag(h, &profile.entrypoint, profile.billing.cch.as_deref());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subagent_flag_is_what_follows_the_entrypoint_and_cch() {
        let h = "x-anthropic-billing-header: cc_version=2.1.328.ccf; cc_entrypoint=sdk-cli; cc_is_subagent=true;";
        assert_eq!(subagent_flag(h, "sdk-cli", None).as_deref(), Some(" cc_is_subagent=true;"));
        let h = "x-anthropic-billing-header: cc_version=2.1.88.516; cc_entrypoint=sdk-cli; cch=00000;";
        assert_eq!(subagent_flag(h, "sdk-cli", Some(" cch=00000;")), None);
        let h =
            "x-anthropic-billing-header: cc_version=2.1.150.516; cc_entrypoint=cli; cch=1a2b3; cc_is_subagent=true;";
        assert_eq!(subagent_flag(h, "cli", Some(" cch=00000;")).as_deref(), Some(" cc_is_subagent=true;"));
    }

    #[test]
    fn first_prompts_are_root_user_lines() {
        let l = r#"{"type":"user","parentUuid":null,"message":{"role":"user","content":"List the files here."}}"#;
        assert_eq!(first_prompt(l).as_deref(), Some("List the files here."));
        let l = r#"{"type":"user","parentUuid":"x","message":{"role":"user","content":"later"}}"#;
        assert_eq!(first_prompt(l), None);
    }
}
