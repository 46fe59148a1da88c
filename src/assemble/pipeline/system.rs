//! Stage: the system blocks and tools of a turn.
//!
//! *What it does.* [`select_system`] gives the blocks rendered once for the
//! session when the plan has them ([`SystemSource::Rendered`]); otherwise
//! the newest `api-request-shape` written before the turn (any shape of the
//! session when the chain wrote none before it: a subagent file may not
//! write its own), edited by the what-if [`ShapeEdits`], each block given
//! the breakpoint's `cache_control`. Blocks and tools are built once per
//! shape and carry segment keys, so `write` serializes them once.
//!
//! *Why.* 2.1.3xx records the system prompt and tools of every request in
//! its shapes; older releases record none, so they are rendered from the
//! profile and the environment ([`super::setup`]).
//!
//! *Invariants.* A turn with no system prompt at all is not emitted: the
//! caller reports the returned diagnostic.

use super::chain::{ChainCtx, ChainState};
use super::normalize;
use super::plan::{ShapeEdits, Statics, SystemSource, content_key};
use crate::corpus::Session;
use crate::diag::{DiagKind, Diagnostic};
use crate::json::Json;
use crate::model::entry::EntryKind;
use bumpalo::Bump;

/// A shape's system blocks (edited, each with the breakpoint's cache
/// control), their segment keys, its tools and their key.
pub(crate) struct ShapeSystem<'a> {
    /// The shape it was built from (by address).
    shape: *const Json<'a>,
    nodes: Vec<&'a Json<'a>>,
    keys: Vec<Option<u128>>,
    tools: Option<&'a Json<'a>>,
    tools_key: Option<u128>,
}

/// The system side of one request, borrowed from the plan or the shape.
pub(crate) struct SystemParts<'r, 'a> {
    pub(crate) nodes: &'r [&'a Json<'a>],
    pub(crate) keys: &'r [Option<u128>],
    pub(crate) tools: Option<&'a Json<'a>>,
    pub(crate) tools_key: Option<u128>,
}

/// The system blocks and tools of the turn whose first entry is `first`.
pub(crate) fn select_system<'r, 'a>(
    cx: &'r ChainCtx<'a, '_>,
    st: &'r mut ChainState<'a>,
    first: usize,
    compaction: bool,
) -> Result<SystemParts<'r, 'a>, Diagnostic> {
    let statics: &'r Statics<'a> = cx.statics;
    if let Some(a) = cx.agent.and_then(|i| statics.agents.get(i)) {
        return Ok(SystemParts { nodes: &a.nodes, keys: &a.keys, tools: Some(a.tools), tools_key: a.tools_key });
    }
    if cx.agent_id.is_none()
        && let Some(Some((nodes, keys))) =
            statics.process_systems.get(super::processes::process_of(&cx.prompts_before, first))
    {
        return Ok(SystemParts { nodes, keys, tools: statics.tools, tools_key: statics.tools_key });
    }
    if let Some((nodes, keys)) = &statics.system {
        // A resumed process (every one after the file's first) may render
        // the prompt without some texts (2.1.198's 1M-context label).
        // A compaction request may too (2.1.150's).
        let resumed = cx.process_starts.iter().filter(|&&i| i < first).count() > 1;
        let (system, tools) = if compaction {
            (&statics.compaction_system, statics.compaction_tools)
        } else if resumed {
            (&statics.resumed_system, statics.resumed_tools)
        } else {
            (&None, None)
        };
        let (nodes, keys) = system.as_ref().map_or((nodes, keys), |(n, k)| (n, k));
        let (tools, tools_key) = match tools {
            Some((t, k)) => (Some(t), Some(k)),
            None => (statics.tools, statics.tools_key),
        };
        return Ok(SystemParts { nodes, keys, tools, tools_key });
    }
    while st.shape_line < first {
        if let EntryKind::ApiRequestShape { shape: Some(s), .. } = cx.entries[st.shape_line].kind {
            st.shape = Some(s);
        }
        st.shape_line += 1;
    }
    let Some(s) = st.shape.or_else(|| session_shape(cx.session)) else {
        return Err(Diagnostic::new(
            cx.display,
            cx.entries[first].line,
            DiagKind::InvalidRequest,
            "no system prompt for this turn: the session has no api-request-shape; pass --profile with an extracted profile",
        ));
    };
    if st.shape_system.as_ref().is_some_and(|c| !std::ptr::eq(c.shape, s)) {
        st.shape_system = None;
    }
    let c: &'r ShapeSystem<'a> =
        st.shape_system.get_or_insert_with(|| shape_system(cx.bump, s, &cx.plan.system, statics));
    Ok(SystemParts { nodes: &c.nodes, keys: &c.keys, tools: c.tools, tools_key: c.tools_key })
}

/// The [`ShapeSystem`] of shape `s`.
fn shape_system<'a>(bump: &'a Bump, s: &'a Json<'a>, source: &SystemSource, statics: &Statics<'a>) -> ShapeSystem<'a> {
    let cc = statics.cache_control;
    let mut blocks: Vec<Json<'a>> = s.get("system").and_then(Json::as_array).unwrap_or(&[]).to_vec();
    if let SystemSource::SessionShape(edits) = source
        && !edits.is_empty()
    {
        edit_shape(bump, &mut blocks, edits);
    }
    let nodes: Vec<&'a Json<'a>> = blocks
        .iter()
        .map(|b| &*bump.alloc(normalize::with_member(bump, b, "cache_control", cc).unwrap_or(*b)))
        .collect();
    let keys = nodes.iter().map(|n| Some(content_key(n))).collect();
    let (tools, tools_key) = match statics.tools {
        Some(t) => (Some(t), statics.tools_key),
        None => (s.get("tools"), s.get("tools").map(content_key)),
    };
    ShapeSystem { shape: s as *const Json<'a>, nodes, keys, tools, tools_key }
}

/// Apply what-if edits to a shape's system blocks.
fn edit_shape<'a>(bump: &'a Bump, blocks: &mut Vec<Json<'a>>, edits: &ShapeEdits) {
    let text = |t: &str| normalize::text_block(bump, bump.alloc_str(t));
    if let Some(p) = &edits.prefix {
        match blocks.first_mut() {
            Some(b) => *b = text(p),
            None => blocks.push(text(p)),
        }
    }
    if let Some(p) = &edits.prompt {
        blocks.truncate(1);
        blocks.push(text(p));
    }
    if let Some(a) = &edits.append
        && let Some(last) = blocks.last_mut()
    {
        let joined = format!("{}\n\n{a}", last.get_str("text").unwrap_or(""));
        *last = normalize::with_member(bump, last, "text", Json::Str(bump.alloc_str(&joined))).unwrap_or(*last);
    }
}

/// Any shape of the session.
fn session_shape<'a>(session: &Session<'a, '_>) -> Option<&'a Json<'a>> {
    session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| match e.kind {
        EntryKind::ApiRequestShape { shape: Some(s), .. } => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::writer;

    fn blocks<'a>(bump: &'a Bump, texts: &[&'a str]) -> Vec<Json<'a>> {
        texts.iter().map(|t| normalize::text_block(bump, t)).collect()
    }

    #[test]
    fn what_if_edits_of_a_shape() {
        let bump = Bump::new();
        let mut b = blocks(&bump, &["prefix", "prompt", "more"]);
        let edits = ShapeEdits {
            prefix: Some("P".into()),
            prompt: Some("custom".into()),
            append: Some("French.".into()),
            tools: None,
        };
        edit_shape(&bump, &mut b, &edits);
        let got: Vec<Vec<u8>> = b.iter().map(writer::to_vec).collect();
        assert_eq!(
            got,
            [br#"{"type":"text","text":"P"}"#.to_vec(), br#"{"type":"text","text":"custom\n\nFrench."}"#.to_vec()]
        );
        let mut empty = Vec::new();
        edit_shape(&bump, &mut empty, &ShapeEdits { prefix: Some("P".into()), ..ShapeEdits::default() });
        assert_eq!(empty.len(), 1);
    }
}
