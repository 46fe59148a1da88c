//! Any bytes as a transcript file: line splitting, the arena parser, typing,
//! the tree and message grouping must never panic.
#![no_main]

use bumpalo::Bump;
use ctxasm::input::{ReadOptions, parse_bytes};
use ctxasm::model::messages::assistant_messages;
use ctxasm::model::tree::{Tree, compact_boundaries};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bump = Bump::new();
    let mut parsed = parse_bytes(&bump, data, "fuzz.jsonl", &ReadOptions::default());
    let tree = Tree::build(&parsed.entries, "fuzz.jsonl", &|u| u.len() == 3, &mut parsed.diagnostics);
    let branch = tree.active_branch();
    let _ = compact_boundaries(&parsed.entries, &branch);
    let _ = assistant_messages(&parsed.entries);
    assert!(parsed.bad_lines <= parsed.lines);
});
