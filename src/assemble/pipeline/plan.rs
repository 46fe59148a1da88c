//! The pipeline's plan for one session: everything the stages need from the
//! profile, the environment and the what-if overrides, resolved once by
//! [`super::setup`] (a [`Plan`] and its [`Extras`]), then converted once
//! into arena values ([`Statics`]) for the chains of that session.
//!
//! A plan holds data, not behaviour: each field is read by one stage, and
//! the profile's [`crate::profile::Layout`] fields decide their values.

use super::normalize::Rules;
use crate::diag::DiagKind;
use crate::json::Json;
use crate::json::writer;
use crate::profile::{MetadataForm, Profile, SuffixText};
use bumpalo::Bump;
use std::collections::HashMap;

/// Where a request's system blocks and tools come from.
#[derive(Debug, Clone)]
pub enum SystemSource {
    /// The session's `api-request-shape` written before the turn (2.1.3xx):
    /// its blocks each get the breakpoint's `cache_control`, after the
    /// what-if edits.
    SessionShape(ShapeEdits),
    /// Blocks and tools rendered once for the session (from the profile).
    Rendered { blocks: Vec<serde_json::Value>, tools: Option<serde_json::Value> },
}

/// What-if changes to a session's recorded system prompt and tools.
#[derive(Debug, Clone, Default)]
pub struct ShapeEdits {
    /// Replaces the CLI prefix (first shape block).
    pub prefix: Option<String>,
    /// Replaces the blocks after the prefix with one block.
    pub prompt: Option<String>,
    /// Appended to the last block after `"\n\n"` (2.1.328
    /// append-system-prompt capture).
    pub append: Option<String>,
    /// Replaces the tool list.
    pub tools: Option<serde_json::Value>,
}

impl ShapeEdits {
    /// No edit at all.
    pub fn is_empty(&self) -> bool {
        self.prefix.is_none() && self.prompt.is_none() && self.append.is_none() && self.tools.is_none()
    }
}

/// What the message and body stages need, resolved for one session.
#[derive(Debug, Clone)]
pub struct Plan {
    pub system: SystemSource,
    /// Body params after `metadata`, in wire order (`max_tokens`,
    /// `thinking`, `context_management`, `output_config`).
    pub params: Vec<(String, serde_json::Value)>,
    /// `anthropic-beta` header values.
    pub betas: Vec<String>,
    /// Salt of the billing header's suffix (the profile's `billing.salt`).
    pub billing_salt: String,
    /// Appended to the billing header (2.1.88: `" cch=00000;"`).
    pub billing_extra: String,
    /// Appended after `billing_extra` on a subagent chain's requests
    /// (`billing.subagent`, 2.1.3xx: `" cc_is_subagent=true;"`).
    pub billing_subagent: String,
    /// The attestation seed of `cch` (`billing.cch_seed`, 2.1.150).
    pub cch_seed: Option<u64>,
    /// Which text feeds the billing header's suffix.
    pub billing_text: SuffixText,
    /// The billing header is the first system block (`false`: none, 2.0.x).
    pub billing_block: bool,
    /// The form of `metadata.user_id`.
    pub metadata: MetadataForm,
    /// Param names a `role: system` turn carries when their value changed
    /// since the last one sent (2.1.328: `output_config`).
    pub system_message_params: Vec<String>,
    /// Per CLI process (the `--env` snapshot's argv order), the params it set
    /// otherwise than the profile (`--effort`: `output_config`).
    pub process_params: Vec<Vec<(String, serde_json::Value)>>,
    /// System-role attachments become user text (no system turns).
    pub system_attachments_as_user: bool,
    /// System turns keep each text's reminder wrapper (an attachment role
    /// `system-reminder`).
    pub system_keeps_reminder: bool,
    /// Attachment text after a string tool result is joined to it (2.1.88).
    pub attachments_into_tool_result: bool,
    /// Merged user messages are joined with a `"\n"`
    /// ([`crate::profile::Layout::merges_with_newline`]).
    pub merge_newline: bool,
    /// The message breakpoint's `cache_control` value.
    pub cache_control: serde_json::Value,
    /// How many of the last messages get a breakpoint (2.0.77: 2).
    pub message_breakpoints: usize,
    /// Param names sent between `messages` and `system` (1.0.x:
    /// `temperature`).
    pub params_before_system: Vec<String>,
    /// User messages keep their one text block in a resumed process (1.0.x,
    /// 2.0.x)…
    pub user_text_as_blocks: bool,
    /// …which these are (by process, from the snapshot's argv).
    pub resumed_processes: Vec<bool>,
    /// Replaces the model of every request (what-if `--model`).
    pub model: Option<String>,
    /// The profile's renderings of attachments written without `rendered`.
    pub attachment_templates: Vec<crate::profile::AttachmentTemplate>,
    /// [`Profile::tool_aliases`](crate::profile::Profile::tool_aliases).
    pub tool_aliases: std::collections::BTreeMap<String, String>,
    /// Message breakpoints skip system turns (2.1.198).
    pub breakpoint_skips_system: bool,
    /// [`Plan::system_message_params`] on the first system turn only
    /// (2.1.300).
    pub system_message_params_first_only: bool,
    /// Params taken from the turn's `api-request` record (2.1.300
    /// `safeguards`).
    pub params_from_records: Vec<String>,
    /// The rendered system blocks of a resumed CLI process, when they differ
    /// (the layout's `resumed_drops`).
    pub resumed_system: Option<Vec<serde_json::Value>>,
    /// The tools of a resumed process, when they differ.
    pub resumed_tools: Option<serde_json::Value>,
    /// The system blocks and tools of a compaction request, when they
    /// differ (the profile's `compaction.drops`).
    pub compaction_system: Option<Vec<serde_json::Value>>,
    pub compaction_tools: Option<serde_json::Value>,
    /// The warmed-up agents' system sides (2.0.x), in the profile's order.
    pub agents: Vec<super::agent::AgentPlan>,
    /// The main chain's system blocks of each CLI process whose arguments
    /// render them otherwise than the first's (by process; `None`: the
    /// session's).
    pub process_systems: Vec<Option<Vec<serde_json::Value>>>,
    /// The compaction instruction (the profile's `compaction`): a boundary
    /// whose request no transcript file holds (2.1.3xx) is rebuilt with it.
    pub compaction_instruction: Option<String>,
    /// The params a compaction request sends otherwise (the profile's
    /// `compaction.params`).
    pub compaction_params: serde_json::Map<String, serde_json::Value>,
    /// The params of a compaction sent as its own request (the profile's
    /// `compaction.own`: then its history goes without reminders and its
    /// instruction as a text block).
    pub compaction_own: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Plan {
    /// The plan of `profile` with no override: the session's own system
    /// prompt and tools (`api-request-shape`), the profile's params, betas,
    /// billing rule and layout fields.
    pub fn of_profile(profile: &Profile) -> Self {
        let l = &profile.layout;
        Plan {
            system: SystemSource::SessionShape(ShapeEdits::default()),
            params: profile.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            betas: profile.betas.clone(),
            billing_salt: profile.billing.salt.clone(),
            billing_extra: profile.billing.cch.clone().unwrap_or_default(),
            billing_subagent: profile.billing.subagent.clone().unwrap_or_default(),
            billing_text: profile.billing.suffix_text,
            cch_seed: profile.billing.cch_seed.as_deref().and_then(|s| u64::from_str_radix(s, 16).ok()),
            billing_block: profile.billing.header_block,
            metadata: profile.metadata,
            system_message_params: l.system_message_params.clone(),
            process_params: Vec::new(),
            system_attachments_as_user: l.system_attachments_as_user,
            system_keeps_reminder: profile.attachments.iter().any(|t| t.role == "system-reminder"),
            attachments_into_tool_result: l.attachments_into_tool_result,
            merge_newline: l.merges_with_newline(),
            cache_control: serde_json::json!({"type": "ephemeral"}),
            message_breakpoints: l.message_breakpoints,
            params_before_system: l.params_before_system.clone(),
            user_text_as_blocks: l.user_text_as_blocks,
            resumed_processes: Vec::new(),
            model: None,
            attachment_templates: profile.attachments.clone(),
            tool_aliases: profile.tool_aliases.clone(),
            breakpoint_skips_system: l.breakpoint_skips_system,
            system_message_params_first_only: l.system_message_params_first_only,
            params_from_records: l.params_from_records.clone(),
            resumed_system: None,
            resumed_tools: None,
            compaction_system: None,
            compaction_tools: None,
            agents: Vec::new(),
            process_systems: Vec::new(),
            compaction_instruction: profile.compaction.as_ref().map(|c| c.instruction.clone()),
            compaction_params: profile.compaction.as_ref().map(|c| c.params.clone()).unwrap_or_default(),
            compaction_own: profile.compaction.as_ref().and_then(|c| c.own.as_ref()).map(|o| o.params.clone()),
        }
    }

    /// [`Plan::of_profile`] of the built-in `cc-2.1.328` profile (what the
    /// 2.1.3xx captures show).
    pub fn cc_2_1_328() -> Self {
        Plan::of_profile(Profile::builtin_cc_2_1_328())
    }
}

/// Pieces the transcript does not hold, added by the profile.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// A meta user message put first in every request (seed
    /// `prependUserContext`).
    pub user_context: Option<String>,
    /// A reminder attached to the first prompt of every CLI process (2.1.88
    /// skills listing; a process starts at the file start or after a
    /// `last-prompt` line).
    pub per_process: Option<String>,
    /// Reminders attached after a tool result, by the uuid of its entry
    /// (conditional memory rules brought in by a `Read`).
    pub after_read: HashMap<String, Vec<String>>,
    /// Problems found while preparing (memory includes refused…), reported
    /// as diagnostics of the session.
    pub warnings: Vec<(DiagKind, String)>,
    /// The todo reminder: its text and after how many assistant lines
    /// without a `TodoWrite` call (or since the last reminder) it is
    /// attached after the newest message. It stays in the requests that
    /// follow in the same process (2.1.88 keeps attachments in memory, not
    /// in the transcript; seeds: `TODO_REMINDER_CONFIG`, 10 turns; checked on
    /// long-session, where the 10th assistant line triggers it).
    pub todo_reminder: Option<(String, usize)>,
    /// The billing header's `cc_entrypoint` when the transcript writes no
    /// `entrypoint` (2.1.50 and older): `sdk-cli` for a `-p` run, as the
    /// snapshot's argv says; otherwise `cli`.
    pub entrypoint: Option<String>,
    /// The text of a reminder attachment written with an empty list, by
    /// kind (the profile's `reminders.attachment_texts`).
    pub attachment_texts: std::collections::BTreeMap<String, String>,
    /// How a background-task notification is sent: the raw text put in
    /// this template ([`super::notifications`]; the session's records, else
    /// the profile's `reminders.task_notification`; `None`: as written).
    pub task_notification: Option<String>,
}

/// Named members in order (params, or what a system turn carries).
pub(crate) type Members<'a> = Vec<(&'a str, Json<'a>)>;

/// A plan's values converted once per session into the arena.
pub(crate) struct Statics<'a> {
    /// The params after `metadata`, and those sent before `system`.
    pub(crate) params: Vec<(&'a str, Json<'a>)>,
    /// Per CLI process: its params and the members its system turns carry
    /// ([`Plan::process_params`] applied); past the list, the plan's.
    pub(crate) processes: Vec<(Members<'a>, &'a [(&'a str, Json<'a>)])>,
    /// The members the system turns carry by default.
    pub(crate) system_extra: &'a [(&'a str, Json<'a>)],
    pub(crate) lead_params: Vec<(&'a str, Json<'a>)>,
    pub(crate) cache_control: Json<'a>,
    /// Rendered system blocks (one node each for the whole session) and
    /// their segment keys (xxh3-128 of their bytes, computed once).
    pub(crate) system: Option<(Vec<&'a Json<'a>>, Vec<Option<u128>>)>,
    /// [`Plan::resumed_system`] in the arena, with its keys.
    pub(crate) resumed_system: Option<(Vec<&'a Json<'a>>, Vec<Option<u128>>)>,
    /// [`Plan::resumed_tools`] in the arena, with its key.
    pub(crate) resumed_tools: Option<(&'a Json<'a>, u128)>,
    /// [`Plan::compaction_system`] and [`Plan::compaction_tools`] likewise.
    pub(crate) compaction_system: Option<(Vec<&'a Json<'a>>, Vec<Option<u128>>)>,
    pub(crate) compaction_tools: Option<(&'a Json<'a>, u128)>,
    pub(crate) tools: Option<&'a Json<'a>>,
    pub(crate) tools_key: Option<u128>,
    pub(crate) betas: Vec<&'a str>,
    /// The normalization rules of the plan.
    pub(crate) rules: Rules<'a>,
    /// The warmed-up agents' system sides, as [`Plan::agents`].
    pub(crate) agents: Vec<super::agent::AgentStatics<'a>>,
    /// [`Plan::process_systems`] as nodes and keys.
    pub(crate) process_systems: Vec<Option<SystemNodes<'a>>>,
}

impl<'a> Statics<'a> {
    /// The params of the requests of CLI process `k` (`None`: the plan's).
    pub(crate) fn params_of(&self, k: Option<usize>) -> &[(&'a str, Json<'a>)] {
        k.and_then(|k| self.processes.get(k)).map_or(&self.params, |(p, _)| p)
    }

    /// The members the system turns of CLI process `k` carry when changed.
    pub(crate) fn system_extra_of(&self, k: usize) -> &'a [(&'a str, Json<'a>)] {
        self.processes.get(k).map_or(self.system_extra, |(_, e)| *e)
    }
}

/// System blocks as arena nodes and their segment keys.
pub(crate) type SystemNodes<'a> = (Vec<&'a Json<'a>>, Vec<Option<u128>>);

/// The segment key of a value: xxh3-128 of its bytes.
pub(crate) fn content_key(v: &Json<'_>) -> u128 {
    xxhash_rust::xxh3::xxh3_128(&writer::to_vec(v))
}

impl<'a> Statics<'a> {
    pub(crate) fn new(bump: &'a Bump, plan: &Plan) -> Self {
        let (lead, params): (Vec<(&'a str, Json<'a>)>, Vec<_>) = plan
            .params
            .iter()
            .map(|(k, v)| (&*bump.alloc_str(k), Json::from_serde(bump, v)))
            .partition(|(k, _)| plan.params_before_system.iter().any(|p| p == k));
        let system_extra = |params: &[(&'a str, Json<'a>)]| -> Vec<(&'a str, Json<'a>)> {
            params.iter().filter(|(k, _)| plan.system_message_params.iter().any(|p| p == k)).copied().collect()
        };
        let processes = plan
            .process_params
            .iter()
            .map(|set| {
                let mut own = params.clone();
                for (k, v) in set {
                    let v = Json::from_serde(bump, v);
                    match own.iter_mut().find(|(x, _)| x == k) {
                        Some(slot) => slot.1 = v,
                        None => own.push((bump.alloc_str(k), v)),
                    }
                }
                let extra: &'a [(&'a str, Json<'a>)] = bump.alloc_slice_copy(&system_extra(&own));
                (own, extra)
            })
            .collect();
        let system_extra: &'a [(&'a str, Json<'a>)] = bump.alloc_slice_copy(&system_extra(&params));
        let alloc = |v: &serde_json::Value| &*bump.alloc(Json::from_serde(bump, v));
        let (system, tools) = match &plan.system {
            SystemSource::SessionShape(edits) => (None, edits.tools.as_ref().map(alloc)),
            SystemSource::Rendered { blocks, tools } => {
                let nodes: Vec<&'a Json<'a>> = blocks.iter().map(alloc).collect();
                let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
                (Some((nodes, keys)), tools.as_ref().map(alloc))
            }
        };
        let keyed = |blocks: &Vec<serde_json::Value>| {
            let nodes: Vec<&'a Json<'a>> = blocks.iter().map(alloc).collect();
            let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
            (nodes, keys)
        };
        let keyed_tools = |t: &serde_json::Value| {
            let node = alloc(t);
            (node, content_key(node))
        };
        Statics {
            params,
            processes,
            system_extra,
            lead_params: lead,
            cache_control: Json::from_serde(bump, &plan.cache_control),
            system,
            resumed_system: plan.resumed_system.as_ref().map(keyed),
            resumed_tools: plan.resumed_tools.as_ref().map(keyed_tools),
            compaction_system: plan.compaction_system.as_ref().map(keyed),
            compaction_tools: plan.compaction_tools.as_ref().map(keyed_tools),
            tools_key: tools.map(content_key),
            tools,
            betas: plan.betas.iter().map(|b| &*bump.alloc_str(b)).collect(),
            rules: Rules {
                system_message_extra: system_extra.to_vec(),
                system_message_extra_first_only: plan.system_message_params_first_only,
                system_attachments_as_user: plan.system_attachments_as_user,
                system_keeps_reminder: plan.system_keeps_reminder,
                attachments_into_tool_result: plan.attachments_into_tool_result,
                merge_plain: !plan.merge_newline,
            },
            agents: plan.agents.iter().map(|a| super::agent::AgentStatics::new(bump, a)).collect(),
            process_systems: plan
                .process_systems
                .iter()
                .map(|p| {
                    p.as_ref().map(|blocks| {
                        let nodes: Vec<&'a Json<'a>> = blocks.iter().map(alloc).collect();
                        let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
                        (nodes, keys)
                    })
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_plan_is_the_profile_data() {
        let p = Profile::builtin_cc_2_1_328();
        let plan = Plan::cc_2_1_328();
        // One source of truth: the betas and params are the profile's.
        assert_eq!(plan.betas, p.betas);
        assert_eq!(plan.betas.len(), 8);
        let keys: Vec<&str> = plan.params.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["max_tokens", "thinking", "context_management", "output_config"]);
        assert_eq!(plan.system_message_params, ["output_config"]);
        assert_eq!(plan.billing_salt, crate::assemble::wire::BILLING_SALT);
        assert!(matches!(plan.system, SystemSource::SessionShape(ref e) if e.is_empty()));
    }

    #[test]
    fn statics_pick_the_system_message_params() {
        let bump = Bump::new();
        let s = Statics::new(&bump, &Plan::cc_2_1_328());
        let extra: Vec<&str> = s.rules.system_message_extra.iter().map(|(k, _)| *k).collect();
        assert_eq!(extra, ["output_config"]);
        assert!(s.system.is_none() && s.tools.is_none());
        assert_eq!(writer::to_vec(&s.cache_control), br#"{"type":"ephemeral"}"#);
    }
}
