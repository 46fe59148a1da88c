//! Stage: the request of one turn — the billing header block first in
//! `system` (when the profile sends one), then the turn's system blocks; the model (the what-if model,
//! else the turn's assistant line's); `metadata`
//! ([`crate::assemble::wire::metadata`]); the plan's params and betas; the
//! custom id ([`crate::assemble::wire::custom_id`]).
//!
//! *Invariants.* Keys are in the client's order (`model, messages`, the
//! layout's params before system, `system, tools, metadata`, params,
//! `stream`), which [`crate::write`] serializes.

use super::chain::ChainCtx;
use super::normalize;
use super::system::SystemParts;
use crate::assemble::wire::{self, custom_id, id_session_part};
use crate::assemble::{Body, Messages, Request};
use crate::json::Json;
use crate::model::entry::EntryKind;
use bumpalo::Bump;
use std::borrow::Cow;

/// The plan's params, those the layout takes from records replaced by the
/// value of the newest `api-request` record before entry `first` (left out
/// when it has none). A chain without records sends the plan's value on
/// the first request of each CLI process only (2.1.288 `safeguards`).
fn turn_params<'a>(cx: &ChainCtx<'a, '_>, first: usize, process: Option<usize>) -> Vec<(&'a str, Json<'a>)> {
    let params = cx.statics.params_of(process);
    let from_records = &cx.plan.params_from_records;
    if from_records.is_empty() {
        return params.to_vec();
    }
    let end = first.min(cx.entries.len());
    let record = cx.records_before.get(end).and_then(|&k| match cx.entries.get((k as usize).checked_sub(1)?)?.kind {
        EntryKind::ApiRequest(r) => Some(r.params),
        _ => None,
    });
    let process_start = cx.process_starts.iter().rev().find(|&&i| i < first).copied().unwrap_or(0);
    let count = |i: usize| cx.assistants_before.get(i).copied().unwrap_or(0);
    let first_of_process = process_start > end || count(end) == count(process_start);
    params
        .iter()
        .filter_map(|&(k, v)| match (from_records.iter().any(|p| p == k), record) {
            (false, _) => Some((k, v)),
            (true, Some(r)) => r.and_then(|r| r.get(k)).map(|rv| (k, *rv)),
            (true, None) => first_of_process.then_some((k, v)),
        })
        .collect()
}

/// A request's lists in the arena: the chain's requests borrow one copy
/// while they stay the same (a session of n turns holds them once, not n
/// times).
#[derive(Clone, Copy, Default)]
pub(crate) struct Lists<'a> {
    lead_params: &'a [(&'a str, Json<'a>)],
    system: &'a [&'a Json<'a>],
    system_keys: &'a [Option<u128>],
    params: &'a [(&'a str, Json<'a>)],
    betas: &'a [&'a str],
}

/// `last` when `v` equals it, else `v` copied into the arena. System
/// blocks are compared as nodes (the chain's requests share them).
fn same_or_copy<'a, T: Copy + SameAs>(bump: &'a Bump, v: &[T], last: &'a [T]) -> &'a [T] {
    if v.len() == last.len() && v.iter().zip(last).all(|(a, b)| a.same_as(b)) { last } else { bump.alloc_slice_copy(v) }
}

/// Equality for [`same_or_copy`].
trait SameAs {
    fn same_as(&self, other: &Self) -> bool;
}

impl SameAs for &Json<'_> {
    fn same_as(&self, other: &Self) -> bool {
        std::ptr::eq(*self, *other)
    }
}

impl SameAs for (&str, Json<'_>) {
    fn same_as(&self, other: &Self) -> bool {
        self == other
    }
}

impl SameAs for Option<u128> {
    fn same_as(&self, other: &Self) -> bool {
        self == other
    }
}

impl SameAs for &str {
    fn same_as(&self, other: &Self) -> bool {
        self == other
    }
}

/// Which request of its chain a request is: the custom id says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RequestId {
    /// The `n`-th assistant turn: `<session>[_<agent>]_<n>`.
    Turn(usize),
    /// The session's `k`-th compaction: `<session>_compact_<k>`.
    Compaction(usize),
}

/// The request `id`, whose first entry is `first`, sent by CLI process
/// `process` (its params: [`super::plan::Statics::params_of`]).
pub(crate) fn build_request<'a>(
    cx: &ChainCtx<'a, '_>,
    id: RequestId,
    first: usize,
    process: Option<usize>,
    messages: Messages<'a>,
    system: SystemParts<'_, 'a>,
    header: Option<&str>,
) -> Request<'a> {
    let bump = cx.bump;
    let e = &cx.entries[first];
    let mut blocks: Vec<&'a Json<'a>> = Vec::with_capacity(system.nodes.len() + 1);
    let mut system_keys = Vec::with_capacity(system.keys.len() + 1);
    if let Some(header) = header {
        let block = match cx.last_header.get() {
            Some((text, block)) if text == header => block,
            _ => {
                let text = bump.alloc_str(header);
                let block: &'a Json<'a> = bump.alloc(normalize::text_block(bump, text));
                cx.last_header.set(Some((text, block)));
                block
            }
        };
        blocks.push(block);
        system_keys.push(None);
    }
    blocks.extend_from_slice(system.nodes);
    system_keys.extend_from_slice(system.keys);
    let agent = cx.agent.and_then(|i| cx.statics.agents.get(i));
    let model = match &cx.plan.model {
        Some(m) => Json::Str(bump.alloc_str(m)),
        // A warmup without a written reply: its agent's model.
        None => e.as_assistant().and_then(|a| a.model).or(agent.map(|a| a.model)).map_or(Json::Null, Json::Str),
    };
    // A warmup is sent under the session id its prompt was written with (a
    // 2.0.x resumed process: its own, before the resume switches the reply
    // to the resumed session's).
    let prompt_sid = || cx.entries.iter().find(|e| e.as_user().is_some()).and_then(|e| e.env.shared.session_id);
    let session_id = agent.and_then(|_| prompt_sid()).or(e.env.shared.session_id).unwrap_or("");
    let (lead_params, params) = match (id, &cx.plan.compaction_own) {
        // A compaction of its own sends only its params (before 2.1.88).
        (RequestId::Compaction(_), Some(own)) => own
            .iter()
            .map(|(k, v)| (&*bump.alloc_str(k), Json::from_serde(bump, v)))
            .partition(|(k, _)| cx.plan.params_before_system.iter().any(|p| p == k)),
        _ => {
            // A subagent type's definition sends its own params (2.1.88),
            // those the layout puts before the system prompt there too
            // (1.0.128's `temperature`).
            let (lead, mut params) = match agent.and_then(|a| a.params.as_ref()) {
                Some(own) => {
                    let lead = |k: &&str| cx.plan.params_before_system.iter().any(|p| p == k);
                    let (l, p): (Vec<_>, Vec<_>) = own.iter().partition(|(k, _)| lead(k));
                    (Some(l.into_iter().collect()), p.into_iter().collect())
                }
                None => (None, turn_params(cx, first, process)),
            };
            if matches!(id, RequestId::Compaction(_)) {
                for (k, v) in params.iter_mut() {
                    if let Some(c) = cx.plan.compaction_params.get(*k) {
                        *v = Json::from_serde(bump, c);
                    }
                }
            }
            (lead.unwrap_or_else(|| cx.statics.lead_params.clone()), params)
        }
    };
    let betas = agent.map_or(&cx.statics.betas[..], |a| &a.betas[..]);
    let last = cx.last_lists.get();
    let lists = Lists {
        lead_params: same_or_copy(bump, &lead_params, last.lead_params),
        system: same_or_copy(bump, &blocks, last.system),
        system_keys: same_or_copy(bump, &system_keys, last.system_keys),
        params: same_or_copy(bump, &params, last.params),
        betas: same_or_copy(bump, betas, last.betas),
    };
    cx.last_lists.set(lists);
    let body = Body {
        model,
        messages,
        shared: 0,
        lead_params: Cow::Borrowed(lists.lead_params),
        system: Cow::Borrowed(lists.system),
        system_keys: Cow::Borrowed(lists.system_keys),
        tools: system.tools,
        tools_key: system.tools_key,
        metadata: match cx.last_metadata.get() {
            Some((sid, m)) if sid == session_id => m,
            _ => {
                let m = wire::metadata(bump, cx.identity, session_id, cx.plan.metadata);
                cx.last_metadata.set(Some((session_id, m)));
                m
            }
        },
        params: Cow::Borrowed(lists.params),
        stream: true,
        betas: Cow::Borrowed(lists.betas),
        cch_seed: header.and(cx.plan.cch_seed),
    };
    Request {
        custom_id: match id {
            RequestId::Turn(n) => custom_id(&id_session_part(cx.file.file, session_id), cx.agent_id, n),
            RequestId::Compaction(k) => custom_id(&id_session_part(cx.file.file, session_id), Some("compact"), k),
        },
        session_id,
        agent_id: cx.agent_id,
        index: match id {
            RequestId::Turn(n) | RequestId::Compaction(n) => n,
        },
        file: cx.display,
        line: e.line,
        timestamp: e.env.timestamp,
        body,
    }
}
