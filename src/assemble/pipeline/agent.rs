//! The agents a release warms up ([`crate::profile::AgentProfile`], 2.0.x):
//! their system side rendered once per session ([`agent_plans`], in
//! [`super::setup`]), which sidechain transcripts are theirs
//! ([`assign_warmups`]), and the request of a warmup the transcript holds
//! no reply to ([`unanswered`]).
//!
//! *Why.* A 2.0.x CLI process sends one "Warmup" request per built-in agent
//! (Bash, Explore, Plan in 2.0.77), each with its own prompt, tools and
//! model, and writes each as a sidechain transcript that names no agent
//! type; a process that ends early writes the prompt but not the reply
//! (`hello`). The transcript does not say which agent a warmup was: the
//! session's warmup sidechains (first prompt the agent's `warmup` text, no
//! tool call naming them), in the order their prompts were written, get the
//! profile's agents in the capture's order, an agent whose model the
//! sidechain's reply names first. The set of requests is the client's; which
//! of two same-model agents' file is which is not known (verify pairs
//! them by their bytes).

use super::chain::ChainCtx;
use super::contexts::SystemContext;
use super::plan::{Plan, content_key};
use super::system_blocks::system_blocks;
use super::system_prompt::{PromptChoice, effective_system_prompt};
use crate::corpus::Session;
use crate::env::SessionEnv;
use crate::json::Json;
use crate::model::entry::Entry;
use crate::profile::Profile;
use bumpalo::Bump;
use serde_json::Value;

/// One warmed-up agent's system side for a session.
#[derive(Debug, Clone)]
pub struct AgentPlan {
    /// The prompt of its sidechain ([`crate::profile::AgentProfile::warmup`]).
    pub warmup: String,
    pub model: String,
    pub blocks: Vec<Value>,
    pub tools: Value,
    pub betas: Vec<String>,
    /// The Agent tool's type this defines ([`crate::profile::AgentProfile::subagent_type`]).
    pub subagent_type: Option<String>,
    /// Its own body params, in wire order.
    pub params: Option<Vec<(String, Value)>>,
}

/// Every agent of `profile` rendered for `env` (the gitStatus section as
/// the main prompt gets it).
/// `model` is the session's: the tools name it (Bash's `Co-Authored-By`
/// line is the main model's in every agent's list, 2.0.77 `--model haiku`).
pub(crate) fn agent_plans(profile: &Profile, env: &SessionEnv, sys_ctx: &SystemContext, model: &str) -> Vec<AgentPlan> {
    let main_name = profile.model(model).map_or(model, |m| m.name.as_str());
    profile
        .agents
        .iter()
        .map(|a| {
            let prompt = profile.dynamic_vars(env, &a.model).render(&a.prompt);
            let choice = PromptChoice { agent: Some(prompt), ..PromptChoice::default() };
            let none = SystemContext::default();
            let ctx = if a.git_status { sys_ctx } else { &none };
            let sections = effective_system_prompt(profile, env, &a.model, &choice, ctx);
            AgentPlan {
                warmup: a.warmup.clone(),
                model: a.model.clone(),
                blocks: system_blocks("", &a.prefix, &sections, profile).iter().map(|b| b.to_json()).collect(),
                tools: Value::Array(crate::profile::render_tool_list(
                    &a.tools,
                    env.date.as_deref(),
                    &super::contexts::skills_tool_lines(env),
                    main_name,
                )),
                betas: a.betas.clone(),
                subagent_type: a.subagent_type.clone(),
                params: a.params.as_ref().map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            }
        })
        .collect()
}

/// An agent's system side in the arena, built once per session.
pub(crate) struct AgentStatics<'a> {
    pub(crate) nodes: Vec<&'a Json<'a>>,
    pub(crate) keys: Vec<Option<u128>>,
    pub(crate) tools: &'a Json<'a>,
    pub(crate) tools_key: Option<u128>,
    pub(crate) model: &'a str,
    pub(crate) betas: Vec<&'a str>,
    /// Its own params ([`AgentPlan::params`]).
    pub(crate) params: Option<Vec<(&'a str, Json<'a>)>>,
    /// It defines a subagent type (not a warmup).
    pub(crate) subagent: bool,
}

impl<'a> AgentStatics<'a> {
    pub(crate) fn new(bump: &'a Bump, a: &AgentPlan) -> Self {
        let alloc = |v: &Value| &*bump.alloc(Json::from_serde(bump, v));
        let nodes: Vec<&'a Json<'a>> = a.blocks.iter().map(alloc).collect();
        let tools = alloc(&a.tools);
        AgentStatics {
            keys: nodes.iter().map(|n| Some(content_key(n))).collect(),
            nodes,
            tools_key: Some(content_key(tools)),
            tools,
            model: bump.alloc_str(&a.model),
            betas: a.betas.iter().map(|b| &*bump.alloc_str(b)).collect(),
            params: a
                .params
                .as_ref()
                .map(|ps| ps.iter().map(|(k, v)| (&*bump.alloc_str(k), Json::from_serde(bump, v))).collect()),
            subagent: a.subagent_type.is_some(),
        }
    }
}

/// The first prompt of a chain: its first user line's text, and that
/// line's timestamp.
pub(crate) fn first_prompt<'a>(entries: &[Entry<'a>]) -> Option<(&'a str, &'a str)> {
    let e = entries.iter().find(|e| e.as_user().is_some())?;
    let u = e.as_user()?;
    let text = match u.content {
        crate::model::content::Content::Text(t) => Some(t),
        _ => u.content.blocks().iter().find_map(|b| match b.kind {
            crate::model::content::BlockKind::Text { text } => Some(text),
            _ => None,
        }),
    }?;
    Some((text, e.env.timestamp.unwrap_or("")))
}

/// Which agent of `plan` each warmup sidechain of `session` is, by agent id
/// (see the module docs). `named` tells whether a tool call of the main
/// chain names an agent id (a Task subagent, not a warmup).
pub(crate) fn assign_warmups<'a>(
    session: &Session<'a, '_>,
    plan: &Plan,
    named: impl Fn(&str) -> bool,
) -> Vec<(&'a str, usize)> {
    // Subagent-type definitions are chosen by the tool call, not here.
    let warm: Vec<usize> = (0..plan.agents.len()).filter(|&i| plan.agents[i].subagent_type.is_none()).collect();
    if warm.is_empty() {
        return Vec::new();
    }
    let mut chains: Vec<(&'a str, &'a str, Option<&'a str>)> = Vec::new();
    for f in &session.subagents {
        let entries = &f.parsed.entries;
        let Some(id) = entries.iter().find_map(|e| e.env.shared.agent_id) else { continue };
        let Some((text, at)) = first_prompt(entries) else { continue };
        if named(id) || !warm.iter().any(|&i| plan.agents[i].warmup == text) {
            continue;
        }
        let model = entries.iter().find_map(|e| e.as_assistant().and_then(|a| a.model));
        chains.push((id, at, model));
    }
    chains.sort_by_key(|&(id, at, _)| (at, id));
    // Each CLI process warms every agent up once: the chains in rounds of
    // as many agents, in the order they were written.
    let mut out = Vec::new();
    for round in chains.chunks(warm.len()) {
        let mut used = vec![false; plan.agents.len()];
        // Chains whose reply names a model first, then the others.
        for pass in [true, false] {
            for &(id, _, model) in round.iter().filter(|c| c.2.is_some() == pass) {
                let free = |i: &usize| !used[*i];
                let pick = warm
                    .iter()
                    .copied()
                    .filter(free)
                    .find(|&i| model.is_none_or(|m| plan.agents[i].model == m))
                    .or_else(|| warm.iter().copied().find(free));
                if let Some(i) = pick {
                    used[i] = true;
                    out.push((id, i));
                }
            }
        }
    }
    out
}

/// A warmup chain the transcript holds no reply to: its last user line,
/// and the conversation sent with it (every user line of the chain).
pub(crate) fn unanswered(cx: &ChainCtx<'_, '_>) -> Option<(usize, Vec<usize>)> {
    cx.agent?;
    let users: Vec<usize> = cx
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_conversation() && e.as_user().is_some())
        .map(|(i, _)| i)
        .collect();
    Some((*users.last()?, users))
}
