//! Any bytes as a transcript file: line splitting, the arena parser, typing,
//! the tree and message grouping must never panic, and reading the bytes a
//! chunk at a time (as a large file is) gives what reading them whole does.
#![no_main]

use bumpalo::Bump;
use ctxasm::input::{Fields, ReadOptions, parse_bytes, parse_bytes_chunked};
use ctxasm::model::messages::assistant_messages;
use ctxasm::model::tree::{Tree, compact_boundaries};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bump = Bump::new();
    for fields in [Fields::All, Fields::Requests] {
        let opts = ReadOptions { fields, ..ReadOptions::default() };
        let (whole, chunked) =
            (parse_bytes(&bump, data, "fuzz.jsonl", &opts), parse_bytes_chunked(&bump, data, "fuzz.jsonl", &opts));
        assert_eq!((&whole.entries, &whole.diagnostics), (&chunked.entries, &chunked.diagnostics));
        assert_eq!((whole.lines, whole.bad_lines, whole.bytes), (chunked.lines, chunked.bad_lines, chunked.bytes));
    }
    let mut parsed = parse_bytes(&bump, data, "fuzz.jsonl", &ReadOptions::default());
    let tree = Tree::build(&parsed.entries, "fuzz.jsonl", &|u| u.len() == 3, &mut parsed.diagnostics);
    let branch = tree.active_branch();
    let _ = compact_boundaries(&parsed.entries, &branch);
    let _ = assistant_messages(&parsed.entries);
    assert!(parsed.bad_lines <= parsed.lines);
});
