//! The agents a capture warms up ([`AgentProfile`]): every captured request
//! whose prompt is the first line of a sidechain transcript beside the
//! capture (a root line: no parent) and whose system prompt is not the main
//! one's. Its prompt is templated as the main prompt is (with its own
//! model's name and cutoff), its gitStatus section cut off; its tools,
//! model and betas are kept verbatim.

use super::capture::request_betas;
use super::templates::{Facts, scan_models, split_git_status, templatize};
use crate::profile::{AgentProfile, ModelInfo};
use serde_json::Value;

/// The first user texts of the sidechain transcripts in `held` (the text of
/// each root line of a sidechain).
fn sidechain_prompts(held: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for line in held.iter().flat_map(|t| t.lines()) {
        if !line.contains("\"isSidechain\":true") || !line.contains("\"parentUuid\":null") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let text = match v.pointer("/message/content") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => a.iter().find_map(|b| b.get("text").and_then(Value::as_str)).map(str::to_string),
            _ => None,
        };
        if let Some(t) = text.filter(|t| !out.contains(t)) {
            out.push(t);
        }
    }
    out
}

/// The text of a request's last text block of its first message.
fn prompt_of(body: &Value) -> Option<&str> {
    match body.pointer("/messages/0/content")? {
        Value::String(s) => Some(s.as_str()),
        Value::Array(a) => a.iter().rev().find_map(|b| b.get("text").and_then(Value::as_str)),
        _ => None,
    }
}

const BILLING: &str = "x-anthropic-billing-header";

/// The `subagent_type` of the Agent (or Task) tool call of the main
/// transcript in `held` whose `prompt` input is `prompt`: the request is a
/// subagent's a tool call named, not a warmup.
fn subagent_type_of(held: &[String], prompt: &str) -> Option<String> {
    for line in held.iter().flat_map(|t| t.lines()).filter(|l| l.contains("subagent_type")) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let blocks = v.pointer("/message/content").and_then(Value::as_array).into_iter().flatten();
        for b in blocks.filter(|b| b["type"] == "tool_use") {
            if b.pointer("/input/prompt").and_then(Value::as_str) == Some(prompt) {
                return b.pointer("/input/subagent_type").and_then(Value::as_str).map(str::to_string);
            }
        }
    }
    None
}

/// A request's body params: every member but the request's own parts.
fn own_params(body: &Value) -> serde_json::Map<String, Value> {
    let parts = ["model", "messages", "system", "tools", "metadata", "stream"];
    body.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !parts.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether two `system` arrays are one prompt: equal but for the billing
/// header, whose suffix hashes the request's first message (a compaction
/// request sends the main prompt and differs there only; its file is a
/// sidechain too, 2.1.88 `agent-acompact-*`).
fn same_prompt(a: Option<&Value>, b: Option<&Value>) -> bool {
    let blocks = |v: Option<&Value>| -> Vec<Value> {
        let billing = |x: &Value| {
            x.get("text").and_then(Value::as_str).is_some_and(|t| t.starts_with("x-anthropic-billing-header"))
        };
        v.and_then(Value::as_array).into_iter().flatten().filter(|x| !billing(x)).cloned().collect()
    };
    a == b || blocks(a) == blocks(b)
}

/// The warmed-up agents of a capture's `lines` (`main`: the main request),
/// in wire order, one per distinct agent; their models are added to
/// `models`.
pub(super) fn warmup_agents(
    lines: &[Value],
    main: &Value,
    held: &[String],
    facts: &Facts,
    models: &mut Vec<ModelInfo>,
) -> Vec<AgentProfile> {
    let prompts = sidechain_prompts(held);
    let main_system = main.pointer("/body/system");
    let text = |b: &Value| b.get("text").and_then(Value::as_str).unwrap_or("").to_string();
    let mut out: Vec<AgentProfile> = Vec::new();
    let recorded = held.iter().any(|t| t.contains(r#""type":"api-request-shape""#));
    let billing = |b: &&Value| b.get("text").and_then(Value::as_str).is_some_and(|t| t.starts_with(BILLING));
    for req in lines {
        let body = &req["body"];
        let Some(all) = body.get("system").and_then(Value::as_array) else { continue };
        let system: Vec<&Value> = all.iter().filter(|b| !billing(b)).collect();
        let tools = body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(prompt) = prompt_of(body).filter(|p| prompts.iter().any(|s| s == p)) else { continue };
        if tools.is_empty() || same_prompt(Some(&body["system"]), main_system) || system.len() < 2 {
            continue;
        }
        let model = body.get("model").and_then(Value::as_str).unwrap_or("").to_string();
        // A Task subagent's definition (2.1.88); a release with records
        // sends it from the agent's own shapes instead.
        let subagent_type = subagent_type_of(held, prompt);
        if subagent_type.is_some() && recorded {
            continue;
        }
        let rest: Vec<String> = system.iter().skip(1).map(|b| text(b)).collect();
        let main_branch = facts.git.as_ref().map(|g| g.main_branch.as_str());
        let (rest, git) = split_git_status(rest.join("\n\n"), main_branch);
        scan_models(std::slice::from_ref(&rest), &model, models);
        let agent = AgentProfile {
            warmup: prompt.to_string(),
            prompt: templatize(&rest, facts, &model, models),
            model,
            prefix: text(system[0]),
            git_status: git.is_some(),
            tools,
            betas: request_betas(req),
            params: subagent_type.is_some().then(|| own_params(body)),
            subagent_type,
        };
        if !out.contains(&agent) {
            out.push(agent);
        }
    }
    out
}
