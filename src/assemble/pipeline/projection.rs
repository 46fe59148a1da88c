//! History projection: which transcript entries a request was built from.
//!
//! A request is sent for every assistant API message (the lines sharing one
//! `message.id`); it carries the conversation *before* that message. The
//! conversation is the chain of `parentUuid` links from the message's first
//! line back to the root, cut at the last compact boundary (SPEC.md stage 3:
//! "only messages after the last compact boundary are sent"; the boundary
//! itself is not sent, the summary after it is).
//!
//! Parallel tool calls break the chain into a fan: Claude Code writes each
//! `tool_use` block of one message as its own line, each line the parent of
//! the next, and each `tool_result` line hangs off the `tool_use` line it
//! answers. The chain to the next assistant message passes through only one
//! of those results (`parallel-tools` in the 2.1.328 captures: 1 of 3), so
//! projection adds the other results — user lines holding a `tool_result`
//! whose parent is an assistant line of the chain — and the message's other
//! lines when the chain skips one (the answer hanging off an earlier call's
//! result), in file order. Duplicated lines (a uuid written again) are not
//! added twice.

use crate::model::entry::{Entry, EntryKind};
use crate::model::messages::assistant_messages;
use crate::model::tree::Tree;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// One request of a chain: the assistant message it produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Entry index of the message's first line.
    pub first: usize,
}

/// Index of a file's entries by uuid and by parent.
///
/// The uuid index is the file's [`Tree`]'s where the caller has it (a
/// second map of every uuid was 0.8 MB at 16,000 lines), and the children
/// are one list in parent order ([`Links::children`]), not a map of
/// vectors (1.8 MB at 16,000 lines).
pub struct Links<'a, 't> {
    index: Index<'a, 't>,
    /// The children of the first line of each uuid (entry index `j`):
    /// `child_list[child_start[j]..child_start[j + 1]]`, in file order.
    child_start: Vec<u32>,
    child_list: Vec<u32>,
    /// The children of a parent uuid that is no line of the file.
    orphans: HashMap<&'a str, Vec<u32>>,
}

enum Index<'a, 't> {
    Own(HashMap<&'a str, u32>),
    Tree(&'t Tree<'a>),
}

impl<'a, 't> Links<'a, 't> {
    /// The links of `entries`, with an index of their own.
    pub fn new(entries: &[Entry<'a>]) -> Self {
        let mut own: HashMap<&'a str, u32> = HashMap::with_capacity_and_hasher(entries.len(), Default::default());
        for (i, e) in entries.iter().enumerate() {
            if let Some(u) = e.env.uuid {
                // The first line of a uuid wins (a duplicate is reported by
                // the tree and ignored here).
                own.entry(u).or_insert(i as u32);
            }
        }
        Self::with_index(entries, Index::Own(own))
    }

    /// The links of `entries` (the lines `tree` was built from), with the
    /// tree's index.
    pub fn of_tree(entries: &[Entry<'a>], tree: &'t Tree<'a>) -> Self {
        Self::with_index(entries, Index::Tree(tree))
    }

    fn with_index(entries: &[Entry<'a>], index: Index<'a, 't>) -> Self {
        let mut links = Links { index, child_start: Vec::new(), child_list: Vec::new(), orphans: HashMap::default() };
        // The parent of each line (its first line), counted, then placed.
        let parents: Vec<u32> = entries
            .iter()
            .map(|e| match e.env.parent_uuid {
                Some(p) => links.index_of(p).map_or(ORPHAN, |j| j as u32),
                None => NO_PARENT,
            })
            .collect();
        let mut start = vec![0u32; entries.len() + 1];
        for &p in &parents {
            if (p as usize) < entries.len() {
                start[p as usize + 1] += 1;
            }
        }
        for j in 0..entries.len() {
            start[j + 1] += start[j];
        }
        let mut list = vec![0u32; start[entries.len()] as usize];
        let mut next = start.clone();
        for (i, &p) in parents.iter().enumerate() {
            if (p as usize) < entries.len() {
                list[next[p as usize] as usize] = i as u32;
                next[p as usize] += 1;
            } else if p == ORPHAN
                && let Some(u) = entries[i].env.parent_uuid
            {
                links.orphans.entry(u).or_default().push(i as u32);
            }
        }
        links.child_start = start;
        links.child_list = list;
        links
    }
}

/// [`Links::with_index`]: a line without a parent, and one whose parent is
/// no line of the file.
const NO_PARENT: u32 = u32::MAX;
const ORPHAN: u32 = u32::MAX - 1;

impl Links<'_, '_> {
    /// The entry index of the first line with `uuid`.
    pub fn index_of(&self, uuid: &str) -> Option<usize> {
        match &self.index {
            Index::Own(own) => own.get(uuid).map(|&i| i as usize),
            Index::Tree(tree) => tree.node_of(uuid).map(|n| tree.nodes[n as usize].entry as usize),
        }
    }

    /// Whether entry `i` is the first line with its uuid (or has none).
    fn is_first(&self, entries: &[Entry<'_>], i: usize) -> bool {
        entries[i].env.uuid.is_none_or(|u| self.index_of(u) == Some(i))
    }

    /// The lines whose `parentUuid` is `uuid`, in file order.
    fn children(&self, uuid: &str) -> &[u32] {
        match self.index_of(uuid) {
            Some(j) => {
                let (a, b) = (self.child_start[j] as usize, self.child_start[j + 1] as usize);
                &self.child_list[a..b]
            }
            None => self.orphans.get(uuid).map_or(&[], Vec::as_slice),
        }
    }
}

/// The turns of a chain: every assistant message that came from the API (not
/// `isApiErrorMessage`, not the `<synthetic>` model), in file order.
pub fn turns(entries: &[Entry<'_>]) -> Vec<Turn> {
    assistant_messages(entries)
        .into_iter()
        .filter(|g| {
            g.entries.iter().all(|&i| {
                entries[i as usize]
                    .as_assistant()
                    .is_some_and(|a| !a.is_api_error_message && a.model != Some("<synthetic>"))
            })
        })
        .map(|g| Turn { first: g.entries[0] as usize })
        .collect()
}

/// Entry indices (file order) of the conversation sent before `turn`.
pub fn project(entries: &[Entry<'_>], links: &Links<'_, '_>, turn: &Turn) -> Vec<usize> {
    walk(entries, links, entries[turn.first].env.parent_uuid, turn.first)
}

/// The projection of a chain's last turn, kept so the next turn's can
/// extend it instead of walking the whole conversation again.
#[derive(Debug, Default)]
pub(crate) struct PathMemo {
    /// Entry indices of the last projection ([`project`]'s result).
    pub(crate) path: Vec<usize>,
    /// Per entry of the file: in `path`.
    member: Vec<bool>,
    /// Where the last walk started (the parent of the turn's first line).
    start: Option<usize>,
    /// The last turn's first line (entries before it only).
    limit: usize,
    /// `path` holds a projection.
    valid: bool,
}

impl PathMemo {
    /// Forget the last projection (a compaction or a given turn was built
    /// in between).
    pub(crate) fn clear(&mut self) {
        self.valid = false;
    }
}

/// [`project`] `turn` into `memo.path`; returns how many leading entries of
/// the path are the last projection's. The path is extended, not walked
/// again, when the new turn's conversation is the last one plus entries
/// written after it: its walk reaches the last walk's start through new
/// entries only (no compact boundary, no resume filler), and no entry
/// written since hangs off an assistant line of the last path. Anything
/// else is projected from scratch (0).
pub(crate) fn project_into(entries: &[Entry<'_>], links: &Links<'_, '_>, turn: &Turn, memo: &mut PathMemo) -> usize {
    if memo.valid
        && let Some(added) = extension(entries, links, turn, memo)
    {
        let kept = memo.path.len();
        for &i in &added {
            memo.member[i] = true;
        }
        memo.path.extend(added);
        memo.start = entries[turn.first].env.parent_uuid.and_then(|p| links.index_of(p));
        memo.limit = turn.first;
        return kept;
    }
    memo.path = project(entries, links, turn);
    memo.member.clear();
    memo.member.resize(entries.len(), false);
    for &i in &memo.path {
        memo.member[i] = true;
    }
    memo.start = entries[turn.first].env.parent_uuid.and_then(|p| links.index_of(p));
    memo.limit = turn.first;
    memo.valid = true;
    0
}

/// The entries `turn` adds to the memo's path, sorted, when its projection
/// is that path plus them (see [`project_into`]).
fn extension(entries: &[Entry<'_>], links: &Links<'_, '_>, turn: &Turn, memo: &PathMemo) -> Option<Vec<usize>> {
    let (old, limit) = (memo.limit, turn.first);
    if limit < old || memo.member.len() != entries.len() {
        return None;
    }
    let start = memo.start?;
    // The walk: new entries only, up to the last walk's start.
    let mut walked: Vec<usize> = Vec::new();
    let mut cur = entries[limit].env.parent_uuid;
    loop {
        let i = links.index_of(cur?)?;
        if i == start {
            break;
        }
        if i < old || i >= limit || memo.member[i] || walked.len() > limit - old {
            return None;
        }
        if entries[i].is_compact_boundary() || super::normalize::is_resume_filler(&entries[i]) {
            return None;
        }
        walked.push(i);
        cur = entries[i].env.parent_uuid;
    }
    // A line written since that hangs off an assistant line of the last
    // path would join it (a late tool result): not an extension.
    for c in old..limit {
        if let Some(p) = entries[c].env.parent_uuid.and_then(|p| links.index_of(p))
            && p < memo.member.len()
            && memo.member[p]
            && matches!(entries[p].kind, EntryKind::Assistant(_))
        {
            return None;
        }
    }
    // The off-chain parts of the walked assistant lines, as `walk` adds them.
    let mut seen: HashSet<usize> = walked.iter().copied().collect();
    let mut extra: Vec<usize> = Vec::new();
    let mut todo: Vec<usize> =
        walked.iter().copied().filter(|&i| matches!(entries[i].kind, EntryKind::Assistant(_))).collect();
    while let Some(i) = todo.pop() {
        let Some(u) = entries[i].env.uuid else { continue };
        let id = entries[i].as_assistant().and_then(|a| a.message_id);
        for c in links.children(u).iter().map(|&c| c as usize) {
            if c >= limit || seen.contains(&c) || !links.is_first(entries, c) {
                continue;
            }
            let fragment = id.is_some() && entries[c].as_assistant().and_then(|a| a.message_id) == id;
            if fragment || holds_tool_result(&entries[c]) {
                if c < old || memo.member[c] {
                    return None;
                }
                seen.insert(c);
                extra.push(c);
                if fragment {
                    todo.push(c);
                }
            }
        }
    }
    walked.extend(extra);
    walked.sort_unstable();
    Some(walked)
}

/// Entry indices (file order) of the conversation up to and including
/// entry `leaf` (a compaction's history: the boundary's pre-compaction
/// leaf).
pub fn history_to(entries: &[Entry<'_>], links: &Links<'_, '_>, leaf: usize) -> Vec<usize> {
    walk(entries, links, entries[leaf].env.uuid, leaf + 1)
}

/// The `parentUuid` path from `start` back to the root or the last compact
/// boundary, entries before `limit` only, with the off-chain parts.
fn walk(entries: &[Entry<'_>], links: &Links<'_, '_>, start: Option<&str>, limit: usize) -> Vec<usize> {
    let mut chain: Vec<usize> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::default();
    let mut cur = start;
    while let Some(p) = cur {
        let Some(i) = links.index_of(p) else { break };
        if i >= limit || !seen.insert(i) {
            break; // a parent written later, or a cycle: the tree reports it
        }
        if entries[i].is_compact_boundary() {
            break;
        }
        chain.push(i);
        cur = entries[i].env.parent_uuid;
    }
    // Off-chain parts of the chain's assistant messages: their other lines
    // (same message.id: parallel calls whose line the chain skips) and the
    // tool results hanging off any of their lines. A line whose uuid was
    // written before (a duplicate) is not a part: the first is kept.
    let mut extra: Vec<usize> = Vec::new();
    let mut todo: Vec<usize> =
        chain.iter().copied().filter(|&i| matches!(entries[i].kind, EntryKind::Assistant(_))).collect();
    while let Some(i) = todo.pop() {
        let Some(u) = entries[i].env.uuid else { continue };
        let id = entries[i].as_assistant().and_then(|a| a.message_id);
        for c in links.children(u).iter().map(|&c| c as usize) {
            if c >= limit || seen.contains(&c) || !links.is_first(entries, c) {
                continue;
            }
            let fragment = id.is_some() && entries[c].as_assistant().and_then(|a| a.message_id) == id;
            if fragment || holds_tool_result(&entries[c]) {
                seen.insert(c);
                extra.push(c);
                if fragment {
                    todo.push(c);
                }
            }
        }
    }
    chain.extend(extra);
    chain.sort_unstable();
    after_fillers(entries, links, &mut chain, &seen, limit);
    chain
}

/// A resumed CLI process that found its transcript ending on a user line
/// writes the `<synthetic>` filler as that line's child, though the leaf it
/// loaded was a local command's output written after it (a sibling off the
/// chain): it sends that output after the filler (2.1.198 `compact` probe:
/// "Not enough messages to compact." joined to the next prompt).
fn after_fillers(
    entries: &[Entry<'_>],
    links: &Links<'_, '_>,
    chain: &mut Vec<usize>,
    seen: &HashSet<usize>,
    limit: usize,
) {
    let mut k = 0;
    while k < chain.len() {
        let f = chain[k];
        k += 1;
        if !super::normalize::is_resume_filler(&entries[f]) {
            continue;
        }
        let Some(p) = entries[f].env.parent_uuid else { continue };
        let outputs = links.children(p).iter().map(|&c| c as usize).filter(|&c| {
            c < f
                && c < limit
                && !seen.contains(&c)
                && matches!(&entries[c].kind, EntryKind::System(s) if s.subtype == Some("local_command"))
        });
        let outputs: Vec<usize> = outputs.collect();
        let n = outputs.len();
        chain.splice(k..k, outputs);
        k += n;
    }
}

fn holds_tool_result(e: &Entry<'_>) -> bool {
    e.as_user().is_some_and(|u| {
        u.content.blocks().iter().any(|b| matches!(b.kind, crate::model::content::BlockKind::ToolResult { .. }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};
    use bumpalo::Bump;

    fn fixture(rel: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel);
        let f = walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .find(|e| e.path().extension().is_some_and(|x| x == "jsonl") && !e.path().ends_with("wire.jsonl"))
            .unwrap();
        std::fs::read(f.path()).unwrap()
    }

    #[test]
    fn parallel_tool_results_are_all_projected() {
        let bump = Bump::new();
        let bytes = fixture("cc-2.1.328/parallel-tools/transcripts");
        let parsed = parse_bytes(&bump, &bytes, "t.jsonl", &ReadOptions::default());
        let entries = &parsed.entries;
        let t = turns(entries);
        assert_eq!(t.len(), 2);
        let links = Links::new(entries);
        let lines = |v: Vec<usize>| v.iter().map(|&i| entries[i].line).collect::<Vec<_>>();
        // Turn 1: the prompt and its attachments (lines 3-13).
        assert_eq!(lines(project(entries, &links, &t[0])), vec![3, 4, 5, 6, 7, 8, 10, 11, 12, 13]);
        // Turn 2: adds the 3 tool_use lines and all 3 results (24 and 25 are
        // off the chain), and the second prompt snapshot.
        assert_eq!(
            lines(project(entries, &links, &t[1])),
            vec![3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 21, 22, 23, 24, 25, 26, 27]
        );
    }

    /// A line's children are the lines naming its uuid their parent, in
    /// file order (a duplicate uuid's lines too: the walks skip them); a
    /// parent no line has keeps its children by name; both indexes agree.
    #[test]
    fn children_by_parent_whatever_the_index() {
        let bump = Bump::new();
        let lines = concat!(
            r#"{"type":"user","uuid":"a","message":{"role":"user","content":"q"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m","content":[]}}"#,
            "\n",
            r#"{"type":"user","uuid":"c","parentUuid":"gone","message":{"role":"user","content":"r"}}"#,
            "\n",
            r#"{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":"dup"}}"#,
            "\n",
            r#"{"type":"user","uuid":"d","parentUuid":"gone","message":{"role":"user","content":"s"}}"#,
            "\n",
            r#"{"type":"user","uuid":"e","parentUuid":"b","message":{"role":"user","content":"t"}}"#,
            "\n",
        );
        let parsed = parse_bytes(&bump, lines.as_bytes(), "t.jsonl", &ReadOptions::default());
        let e = &parsed.entries;
        let mut diags = Vec::new();
        let tree = Tree::build(e, "t.jsonl", &|_| false, &mut diags);
        for links in [Links::new(e), Links::of_tree(e, &tree)] {
            assert_eq!(links.children("a"), [1, 3]);
            assert_eq!(links.children("b"), [5]);
            assert_eq!(links.children("gone"), [2, 4]);
            assert!(links.children("e").is_empty() && links.children("nowhere").is_empty());
            assert_eq!((links.index_of("b"), links.index_of("gone")), (Some(1), None));
            assert!(links.is_first(e, 1) && !links.is_first(e, 3));
        }
    }
}
