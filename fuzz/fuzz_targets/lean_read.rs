//! Any bytes as a transcript file: the lean read of `cost --recorded-only`
//! (the skim, and the tape for the lines it is not sure of) reports what
//! the full read reports, line for line: diagnostics, counts, the tree's
//! links, the first session id and every usage line.
#![no_main]

use bumpalo::Bump;
use ctxasm::input::scan::{UsageLine, scan_bytes};
use ctxasm::input::{ReadOptions, parse_bytes};
use ctxasm::model::tree::Link;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (b1, b2) = (Bump::new(), Bump::new());
    let opts = ReadOptions::default();
    let full = parse_bytes(&b1, data, "fuzz.jsonl", &opts);
    let lean = scan_bytes(&b2, data, "fuzz.jsonl", &opts);
    assert_eq!(lean.diagnostics, full.diagnostics);
    assert_eq!((lean.lines, lean.bad_lines, lean.bytes), (full.lines, full.bad_lines, full.bytes));
    assert_eq!(lean.links, Link::of_entries(&full.entries));
    assert_eq!(lean.session_id, full.entries.iter().find_map(|e| e.env.shared.session_id));
    let usage: Vec<UsageLine<'_>> = full.entries.iter().filter_map(UsageLine::of_entry).collect();
    assert_eq!(lean.usage, usage);
});
