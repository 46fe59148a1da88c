//! The built-in agents a release sends requests for without a tool call
//! naming them: 2.0.x starts each CLI process by sending one "Warmup"
//! request per built-in agent (Bash, Explore, Plan in 2.0.77), each with its
//! own system prompt, tools and model, and writes each as a sidechain
//! transcript (`agent-*.jsonl`) that names no agent type. A profile learns
//! them from a capture's Warmup requests ([`crate::assemble::extract`]).
//!
//! A release before records (2.1.88) also builds a Task subagent's request
//! from the agent type's definition — its own prompt, tools and params —
//! which the `subagent` probe shows ([`AgentProfile::subagent_type`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One agent a release warms up (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentProfile {
    /// The user text of its request, as its sidechain transcript holds it
    /// (`Warmup`): a sidechain whose first prompt is this and that no tool
    /// call names is one of these agents.
    pub warmup: String,
    /// Its model (`claude-haiku-4-5-20251001` for 2.0.77's Explore).
    pub model: String,
    /// Its first system block (`You are Claude Code, …`, not the session's
    /// CLI prefix).
    pub prefix: String,
    /// Its prompt, a template of the dynamic variables
    /// ([`super::DYNAMIC_VARS`]), without the gitStatus section…
    pub prompt: String,
    /// …which is appended when the session has one (as to the main prompt).
    #[serde(default)]
    pub git_status: bool,
    /// Its tools, verbatim.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// Its `anthropic-beta` values.
    #[serde(default)]
    pub betas: Vec<String>,
    /// The Agent tool's `subagent_type` this is the definition of (a
    /// subagent a tool call names, not a warmup: 2.1.88 `general-purpose`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    /// Its own body params in wire order, when they are not the main
    /// chain's (2.1.88's general-purpose agent: `max_tokens`,
    /// `temperature: 1`, `output_config`; no `thinking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Map<String, Value>>,
}
