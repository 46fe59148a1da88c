//! The model on real transcripts: active branches, compact boundaries,
//! assistant fragments and subagent links.
//!
//! Expected branches were computed independently with a short Python walk
//! (json.loads each line; uuid -> first entry; leaf = the `leafUuid` of the
//! newest `last-prompt` found in the file, else the newest non-sidechain,
//! non-progress leaf by (timestamp, line); follow `parentUuid`, or
//! `logicalParentUuid` when there is no parent; print the line numbers).

use bumpalo::Bump;
use ctxasm::input::discover::{FileKind, discover};
use ctxasm::input::{ReadOptions, read_file};
use ctxasm::model::content::{BlockKind, Content};
use ctxasm::model::messages::assistant_messages;
use ctxasm::model::tree::{Tree, compact_boundaries};
use std::path::{Path, PathBuf};

const S: &str = "corpora/sample";

fn branch_lines(rel: &str) -> (Vec<u32>, Vec<usize>) {
    let path = Path::new(S).join(rel);
    let bump = Bump::new();
    let mut p = read_file(&bump, &path, rel, &ReadOptions::default());
    let tree = Tree::build(&p.entries, rel, &|_| false, &mut p.diagnostics);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let branch = tree.active_branch();
    let lines = branch.iter().map(|&i| p.entries[i as usize].line).collect();
    (lines, compact_boundaries(&p.entries, &branch))
}

#[test]
fn resumed_session_keeps_every_prompt_on_the_active_branch() {
    // Claude Code 2.1.328, three `-p` runs, the last two with --resume.
    let (lines, bounds) =
        branch_lines("-home-dev-projects-resume-multi-prompt/54d2a754-5127-496c-a8db-abc858d64ff3.jsonl");
    assert_eq!(lines, [3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 21, 22, 23, 25, 32, 34, 40, 42]);
    assert!(bounds.is_empty());
}

#[test]
fn manual_compact_is_crossed_through_the_logical_parent() {
    // Claude Code 2.0.76 with a manual /compact (fasthooks sample).
    let (lines, bounds) = branch_lines("-fasthooks/sample_main_transcript.jsonl");
    assert_eq!(
        lines,
        [
            2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24, 25, 27, 28, 29, 30, 31, 32, 33,
            35, 36, 37, 38, 40, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 59, 60, 61, 62, 63
        ]
    );
    assert_eq!(bounds, [48]);
}

#[test]
fn parallel_tool_calls_are_one_message_of_three_lines() {
    let rel = "-home-dev-projects-parallel-tools/bc4a5825-e230-4da5-b082-11127d358a34.jsonl";
    let (lines, _) = branch_lines(rel);
    // The branch takes one fragment chain; the two sibling tool_results
    // (lines 24, 25) hang off the earlier fragments.
    assert_eq!(lines, [3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 21, 22, 23, 26, 27, 29]);
    let bump = Bump::new();
    let p = read_file(&bump, &Path::new(S).join(rel), rel, &ReadOptions::default());
    let msgs = assistant_messages(&p.entries);
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].id, Some("msg_0150d3e3f9404c00000"));
    let frag_lines: Vec<u32> = msgs[0].entries.iter().map(|&i| p.entries[i as usize].line).collect();
    assert_eq!(frag_lines, [21, 22, 23]);
    let tools: Vec<&str> = msgs[0]
        .entries
        .iter()
        .flat_map(|&i| p.entries[i as usize].as_assistant().unwrap().content.blocks())
        .map(|b| match b.kind {
            BlockKind::ToolUse { name, .. } => name,
            _ => "?",
        })
        .collect();
    assert_eq!(tools, ["Read", "Read", "Bash"]);
    // The first prompt is a plain string.
    assert_eq!(p.entries[2].as_user().unwrap().content, Content::Text("compare a.txt and b.txt"));
}

#[test]
fn subagents_of_both_layouts_are_linked_to_their_session() {
    let disc = discover(&[PathBuf::from(S)]);
    let name = |i: usize| disc.files[i].path.file_name().unwrap().to_string_lossy().into_owned();
    let group_of = |main: &str| disc.groups.iter().find(|g| g.main.is_some_and(|m| name(m) == main)).unwrap();
    // 2.1.x: <sid>/subagents/agent-<id>.jsonl with .meta.json.
    let g = group_of("ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl");
    assert_eq!(g.subagents.len(), 6);
    assert!(g.subagents.iter().all(|&i| matches!(&disc.files[i].kind, FileKind::Subagent { meta: Some(_), .. })));
    // 2.0.x: agent-<id>.jsonl beside the session, linked by their sessionId
    // (`grep -o '"sessionId":"[^"]*"'` on each file: 4 name 7acd37a8, 2 each
    // name the two empty session files).
    for (main, n) in [
        ("7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl", 4),
        ("2c5941bd-b9de-41d6-9414-221d175776f7.jsonl", 2),
        ("b23cbd1d-a39d-4f31-98fd-98f8ff69b816.jsonl", 2),
    ] {
        assert_eq!(group_of(main).subagents.len(), n, "{main}");
    }
    assert_eq!(disc.groups.iter().filter(|g| g.main.is_none()).count(), 0);
}
