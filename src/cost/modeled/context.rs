//! What each request carried, by part, in tokens: the `/context` view
//! Claude Code users know (tools, system prompt, messages, tool calls, tool
//! results, images), from the blocks a request sends and their pinned
//! token counts. Summed over a corpus's requests it says where the input
//! tokens, and so most of the bill, go.

use super::blocks::ChainIn;
use crate::cost::sim::{BlockKind, Place, Role};
use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// One request's input tokens by part (or a sum of requests').
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextTokens {
    /// Tool definitions.
    pub tools: u64,
    /// The system prompt.
    pub system: u64,
    /// Tools and system prompt of a session whose transcript does not hold
    /// them (the unseen prefix, sized from the recorded usage).
    pub unseen_prompt: u64,
    /// Text the user side sent: prompts, reminders, memory files, context.
    pub user_text: u64,
    /// Claude's text and thinking sent back.
    pub assistant_text: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub images: u64,
}

impl ContextTokens {
    /// The parts as (name, tokens), in the order shown.
    pub fn parts(&self) -> [(&'static str, u64); 8] {
        [
            ("tools", self.tools),
            ("system prompt", self.system),
            ("tools + system prompt (not in the transcript)", self.unseen_prompt),
            ("user text", self.user_text),
            ("Claude's text", self.assistant_text),
            ("tool calls", self.tool_calls),
            ("tool results", self.tool_results),
            ("images", self.images),
        ]
    }

    /// The parts with tokens, largest first.
    pub fn shares(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = self.parts().into_iter().filter(|p| p.1 > 0).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    pub fn total(&self) -> u64 {
        self.parts().iter().map(|p| p.1).sum()
    }

    fn add(&mut self, place: Place, kind: BlockKind, tokens: u64) {
        let slot = match (place, kind) {
            (Place::Tool, _) | (_, BlockKind::Tool) => &mut self.tools,
            (Place::System, _) | (_, BlockKind::System) => &mut self.system,
            (_, BlockKind::ToolUse) => &mut self.tool_calls,
            (_, BlockKind::ToolResult) => &mut self.tool_results,
            (_, BlockKind::Image) => &mut self.images,
            (Place::Message { role: Role::Assistant, .. }, BlockKind::Text) => &mut self.assistant_text,
            (Place::Message { .. }, BlockKind::Text) => &mut self.user_text,
        };
        *slot += tokens;
    }
}

impl AddAssign for ContextTokens {
    fn add_assign(&mut self, o: ContextTokens) {
        self.tools += o.tools;
        self.system += o.system;
        self.unseen_prompt += o.unseen_prompt;
        self.user_text += o.user_text;
        self.assistant_text += o.assistant_text;
        self.tool_calls += o.tool_calls;
        self.tool_results += o.tool_results;
        self.images += o.images;
    }
}

/// Each request of `chain` by part: its blocks are the first `keep` of
/// the request before plus the added ones, so the parts are kept as running
/// sums per position and each request costs what it adds.
pub(super) fn per_request(chain: &ChainIn) -> Vec<ContextTokens> {
    let mut sums: Vec<ContextTokens> = Vec::new();
    chain
        .reqs
        .iter()
        .map(|r| {
            sums.truncate(r.step.keep);
            for i in r.step.added.clone() {
                let mut next = sums.last().copied().unwrap_or_default();
                match chain.arena.get(i) {
                    Some(b) if chain.unseen_part(i).is_some() => next.unseen_prompt += u64::from(b.tokens),
                    Some(b) => next.add(b.place, b.kind, u64::from(b.tokens)),
                    None => {}
                }
                sums.push(next);
            }
            sums.last().copied().unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::blocks::ReqIn;
    use crate::cost::modeled::test_util::{assistant, block, user};
    use crate::cost::sim::{ChainStep, SimBlock};
    use std::sync::Arc;

    fn of(hash: u128, tokens: u32, kind: BlockKind, place: Place) -> SimBlock {
        SimBlock { kind, ..block(hash, tokens, None, place) }
    }

    /// A worked example: tools 500, system 300, a prompt of 40; then the
    /// request after keeps all three and adds Claude's text (20), a tool
    /// call (30) and its result (1,000); a third keeps only the first two
    /// (a compaction) and adds a summary of 100.
    #[test]
    fn each_request_counts_its_own_blocks_by_part() {
        let arena = vec![
            of(1, 500, BlockKind::Tool, Place::Tool),
            of(2, 300, BlockKind::System, Place::System),
            of(3, 40, BlockKind::Text, user(true)),
            of(4, 20, BlockKind::Text, assistant(true)),
            of(5, 30, BlockKind::ToolUse, assistant(false)),
            of(6, 1000, BlockKind::ToolResult, user(true)),
            of(7, 100, BlockKind::Text, user(true)),
        ];
        let req = |keep, added| ReqIn {
            id: crate::cost::modeled::blocks::ReqId::Index(0),
            at_ms: 0,
            ready_ms: 0,
            model: Arc::from("m"),
            recorded: None,
            usage_key: None,
            step: ChainStep { keep, added, breakpoints: smallvec::smallvec![] },
            len: 0,
            thinking: 0,
        };
        let chain = ChainIn { arena, reqs: vec![req(0, 0..3), req(3, 3..6), req(2, 6..7)], ..ChainIn::default() };
        let got = per_request(&chain);
        let t = |tools, system, user_text, assistant_text, tool_calls, tool_results| ContextTokens {
            tools,
            system,
            user_text,
            assistant_text,
            tool_calls,
            tool_results,
            ..ContextTokens::default()
        };
        assert_eq!(got, [t(500, 300, 40, 0, 0, 0), t(500, 300, 40, 20, 30, 1000), t(500, 300, 100, 0, 0, 0)]);
        assert_eq!(got[1].total(), 1890);
        // A session without its prompt in the transcript: the unseen
        // prefix's two blocks (here the first two) are their own part.
        let unseen = ChainIn { unseen: Some(0), ..chain };
        let got = per_request(&unseen);
        assert_eq!(got[0], ContextTokens { unseen_prompt: 800, user_text: 40, ..ContextTokens::default() });
        assert_eq!(got[0].shares(), [("tools + system prompt (not in the transcript)", 800), ("user text", 40)]);
    }
}
