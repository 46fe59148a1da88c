//! The conversation tree of one transcript file.
//!
//! File order is not conversation order: entries link to their predecessor by
//! `parentUuid`; a `system/compact_boundary` starts a new root and names the
//! pre-compaction leaf in `logicalParentUuid`; a session resumed with
//! `--resume` is appended to the same file and continues from an old leaf;
//! rewinds and parallel tool results make siblings. The active branch is the
//! path from a root to the newest `last-prompt.leafUuid` (else the newest
//! leaf), crossing compact boundaries through their logical parent.

use super::entry::{Entry, EntryKind};
use crate::diag::{DiagKind, Diagnostic};
use rustc_hash::FxHashMap;

/// A conversation entry (one with a `uuid`) in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Index into the file's entries.
    pub entry: u32,
    /// Parent node (by `parentUuid`) in this file.
    pub parent: Option<u32>,
    /// Pre-compaction leaf of a compact boundary (by `logicalParentUuid`).
    pub logical_parent: Option<u32>,
    /// Whether a node names this one its parent (a list of them was 24
    /// bytes a node, and only leaves are asked for).
    pub has_children: bool,
}

/// A conversation entry as the tree sees it: where it is and how it links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link<'a> {
    /// Index into the file's entries.
    pub entry: u32,
    /// Its 1-based line.
    pub line: u32,
    pub uuid: &'a str,
    pub parent: Option<&'a str>,
    pub logical_parent: Option<&'a str>,
}

impl<'a> Link<'a> {
    /// The links of the conversation entries (those with a uuid) of
    /// `entries`, in file order.
    pub fn of_entries(entries: &[Entry<'a>]) -> Vec<Link<'a>> {
        (entries.iter().enumerate())
            .filter_map(|(i, e)| {
                Some(Link {
                    entry: i as u32,
                    line: e.line,
                    uuid: e.env.uuid?,
                    parent: e.env.parent_uuid,
                    logical_parent: e.env.shared.logical_parent_uuid,
                })
            })
            .collect()
    }
}

/// The tree of one file.
#[derive(Debug, Default)]
pub struct Tree<'a> {
    pub nodes: Vec<Node>,
    index: FxHashMap<&'a str, u32>,
    /// The leaf the active branch ends at.
    pub active_leaf: Option<u32>,
}

impl<'a> Tree<'a> {
    /// Build the tree of `entries` (the lines of `display`). `external` says
    /// whether a uuid exists outside this file (the main session of a
    /// subagent file), so such a parent is not reported missing.
    pub fn build(
        entries: &[Entry<'a>],
        display: &str,
        external: &dyn Fn(&str) -> bool,
        diags: &mut Vec<Diagnostic>,
    ) -> Tree<'a> {
        let links = Link::of_entries(entries);
        let mut tree = Tree::link(&links, display, external, diags);
        tree.active_leaf = tree.find_active_leaf(entries);
        tree
    }

    /// The tree of the conversation entries `links` (in file order), with
    /// the same diagnostics as [`Tree::build`] but no active leaf (that
    /// needs the entries): for readers that keep only the links.
    pub fn link(
        links: &[Link<'a>],
        display: &str,
        external: &dyn Fn(&str) -> bool,
        diags: &mut Vec<Diagnostic>,
    ) -> Tree<'a> {
        let mut tree = Tree { nodes: Vec::new(), index: FxHashMap::default(), active_leaf: None };
        // The link of each node.
        let mut of_node: Vec<u32> = Vec::new();
        for (li, l) in links.iter().enumerate() {
            if let Some(&first) = tree.index.get(l.uuid) {
                let first_line = links[of_node[first as usize] as usize].line;
                diags.push(Diagnostic::new(
                    display,
                    l.line,
                    DiagKind::DuplicateUuid,
                    format!("uuid {} already used on line {first_line}; the first is kept", l.uuid),
                ));
                continue;
            }
            tree.index.insert(l.uuid, tree.nodes.len() as u32);
            tree.nodes.push(Node { entry: l.entry, parent: None, logical_parent: None, has_children: false });
            of_node.push(li as u32);
        }
        for n in 0..tree.nodes.len() {
            let l = &links[of_node[n] as usize];
            if let Some(p) = l.parent {
                match tree.index.get(p) {
                    Some(&pi) => tree.nodes[n].parent = Some(pi),
                    None if external(p) => {}
                    None => diags.push(Diagnostic::new(
                        display,
                        l.line,
                        DiagKind::MissingParent,
                        format!("parentUuid {p} is not in the session"),
                    )),
                }
            }
            if let Some(lp) = l.logical_parent {
                tree.nodes[n].logical_parent = tree.index.get(lp).copied();
            }
        }
        let node_lines: Vec<u32> = of_node.iter().map(|&li| links[li as usize].line).collect();
        tree.break_cycles(&node_lines, display, diags);
        for n in 0..tree.nodes.len() {
            if let Some(p) = tree.nodes[n].parent {
                tree.nodes[p as usize].has_children = true;
            }
        }
        tree
    }

    /// Report each `parentUuid` cycle once (at its smallest line) and cut it
    /// there, so the tree is a forest and every walk ends.
    fn break_cycles(&mut self, node_lines: &[u32], display: &str, diags: &mut Vec<Diagnostic>) {
        // 0 = not seen, 1 = on the current path, 2 = done.
        let mut state = vec![0u8; self.nodes.len()];
        let mut path: Vec<u32> = Vec::new();
        for start in 0..self.nodes.len() {
            let mut cur = Some(start as u32);
            path.clear();
            while let Some(c) = cur {
                match state[c as usize] {
                    2 => break,
                    1 => {
                        // The cycle is the part of `path` from `c` on.
                        let from = path.iter().position(|&x| x == c).unwrap_or(0);
                        let members = &path[from..];
                        let line_of = |n: u32| node_lines[n as usize];
                        let cut = members.iter().copied().min_by_key(|&n| line_of(n)).unwrap_or(c);
                        let mut lines: Vec<u32> = members.iter().map(|&n| line_of(n)).collect();
                        lines.sort_unstable();
                        diags.push(Diagnostic::new(
                            display,
                            line_of(cut),
                            DiagKind::ParentCycle,
                            format!(
                                "parentUuid links loop through lines {lines:?}; the link of line {} is cut",
                                line_of(cut)
                            ),
                        ));
                        self.nodes[cut as usize].parent = None;
                        break;
                    }
                    _ => {
                        state[c as usize] = 1;
                        path.push(c);
                        cur = self.nodes[c as usize].parent;
                    }
                }
            }
            for &p in &path {
                state[p as usize] = 2;
            }
        }
    }

    fn find_active_leaf(&self, entries: &[Entry<'a>]) -> Option<u32> {
        // The newest last-prompt whose leaf is in this file.
        let from_last_prompt = entries.iter().rev().find_map(|e| match e.kind {
            EntryKind::LastPrompt { leaf_uuid: Some(l), .. } => self.index.get(l).copied(),
            _ => None,
        });
        if from_last_prompt.is_some() {
            return from_last_prompt;
        }
        // Else the newest leaf of the main chain (not a sidechain, not
        // progress); ties go to the later line.
        let leaves = || (0..self.nodes.len() as u32).filter(|&n| !self.nodes[n as usize].has_children);
        let key = |n: &u32| {
            let e = &entries[self.nodes[*n as usize].entry as usize];
            (e.env.timestamp.unwrap_or(""), e.line)
        };
        let main = |n: &u32| {
            let e = &entries[self.nodes[*n as usize].entry as usize];
            !e.env.is_sidechain && !matches!(e.kind, EntryKind::Progress { .. })
        };
        leaves().filter(main).max_by_key(key).or_else(|| leaves().max_by_key(key))
    }

    /// The node of a uuid.
    pub fn node_of(&self, uuid: &str) -> Option<u32> {
        self.index.get(uuid).copied()
    }

    /// True if `uuid` is an entry of this file.
    pub fn contains(&self, uuid: &str) -> bool {
        self.index.contains_key(uuid)
    }

    /// Roots: entries without a parent in this file.
    pub fn roots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.nodes.len() as u32).filter(|&n| self.nodes[n as usize].parent.is_none())
    }

    /// Entry indices from the first root to `leaf`, crossing compact
    /// boundaries through `logicalParentUuid`.
    pub fn branch_to(&self, leaf: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.nodes.len()];
        let mut cur = Some(leaf);
        while let Some(n) = cur {
            if std::mem::replace(&mut seen[n as usize], true) {
                break;
            }
            let node = &self.nodes[n as usize];
            out.push(node.entry);
            cur = node.parent.or(node.logical_parent);
        }
        out.reverse();
        out
    }

    /// The active branch (entry indices, oldest first); empty for a file
    /// without conversation entries.
    pub fn active_branch(&self) -> Vec<u32> {
        self.active_leaf.map(|l| self.branch_to(l)).unwrap_or_default()
    }
}

/// Positions in `branch` of compact boundaries: the API sees only what comes
/// after the last one.
pub fn compact_boundaries(entries: &[Entry<'_>], branch: &[u32]) -> Vec<usize> {
    branch.iter().enumerate().filter(|(_, e)| entries[**e as usize].is_compact_boundary()).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};
    use bumpalo::Bump;

    fn build(data: &str) -> (Vec<Diagnostic>, Vec<String>, usize) {
        let bump = Bump::new();
        let p = parse_bytes(&bump, data.as_bytes(), "t.jsonl", &ReadOptions::default());
        let mut diags = Vec::new();
        let tree = Tree::build(&p.entries, "t.jsonl", &|u| u == "ext", &mut diags);
        let branch =
            tree.active_branch().iter().map(|&i| p.entries[i as usize].env.uuid.unwrap_or("").to_string()).collect();
        (diags, branch, tree.roots().count())
    }

    fn kinds(d: &[Diagnostic]) -> Vec<(u32, DiagKind)> {
        d.iter().map(|d| (d.line, d.kind)).collect()
    }

    #[test]
    fn active_branch_follows_last_prompt_and_skips_rewound_siblings() {
        let data = r#"{"type":"user","uuid":"a","parentUuid":null,"timestamp":"1"}
{"type":"assistant","uuid":"b","parentUuid":"a","timestamp":"2"}
{"type":"user","uuid":"c1","parentUuid":"b","timestamp":"3"}
{"type":"user","uuid":"c2","parentUuid":"b","timestamp":"4"}
{"type":"last-prompt","leafUuid":"c1"}
"#;
        let (d, branch, roots) = build(data);
        assert!(d.is_empty());
        assert_eq!(branch, ["a", "b", "c1"]);
        assert_eq!(roots, 1);
        // Without a last-prompt: the newest leaf.
        let (_, branch, _) = build(&data.replace(r#"{"type":"last-prompt","leafUuid":"c1"}"#, ""));
        assert_eq!(branch, ["a", "b", "c2"]);
    }

    #[test]
    fn crosses_compact_boundaries() {
        let data = r#"{"type":"user","uuid":"a","parentUuid":null,"timestamp":"1"}
{"type":"assistant","uuid":"b","parentUuid":"a","timestamp":"2"}
{"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":null,"logicalParentUuid":"b","timestamp":"3"}
{"type":"user","uuid":"s","parentUuid":"cb","isCompactSummary":true,"timestamp":"4"}
{"type":"assistant","uuid":"z","parentUuid":"s","timestamp":"5"}
"#;
        let bump = Bump::new();
        let p = parse_bytes(&bump, data.as_bytes(), "t.jsonl", &ReadOptions::default());
        let tree = Tree::build(&p.entries, "t.jsonl", &|_| false, &mut Vec::new());
        let branch = tree.active_branch();
        assert_eq!(branch, [0, 1, 2, 3, 4]);
        assert_eq!(compact_boundaries(&p.entries, &branch), [2]);
        assert_eq!(tree.roots().count(), 2);
    }

    #[test]
    fn missing_parent_duplicate_and_cycle_are_reported() {
        let data = r#"{"type":"user","uuid":"a","parentUuid":"nowhere","timestamp":"1"}
{"type":"user","uuid":"x","parentUuid":"ext","timestamp":"1"}
{"type":"user","uuid":"a","parentUuid":null,"timestamp":"2"}
{"type":"user","uuid":"p","parentUuid":"q","timestamp":"3"}
{"type":"user","uuid":"q","parentUuid":"r","timestamp":"4"}
{"type":"user","uuid":"r","parentUuid":"p","timestamp":"5"}
{"type":"user","uuid":"self","parentUuid":"self","timestamp":"6"}
"#;
        let (d, branch, _) = build(data);
        assert_eq!(
            kinds(&d),
            vec![
                (3, DiagKind::DuplicateUuid),
                (1, DiagKind::MissingParent),
                (4, DiagKind::ParentCycle),
                (7, DiagKind::ParentCycle)
            ]
        );
        // The walk ends even though the input looped.
        assert!(!branch.is_empty());
    }
}
