//! Tree building on adversarial link structures: the fuzzer's bytes choose,
//! for each of up to 64 entries, its uuid, parent, logical parent, type and
//! timestamp from small alphabets, so duplicates, cycles, self-links,
//! dangling parents and last-prompt leaves are all common.
#![no_main]

use bumpalo::Bump;
use ctxasm::input::{ReadOptions, parse_bytes};
use ctxasm::model::tree::Tree;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut text = String::new();
    for chunk in data.chunks(4).take(64) {
        let b = |i: usize| chunk.get(i).copied().unwrap_or(0);
        let uuid = b(0) % 16;
        let parent = match b(1) % 18 {
            16 => "null".to_string(),
            17 => "\"ext\"".to_string(),
            p => format!("\"u{p}\""),
        };
        let kind = match b(2) % 5 {
            0 => "user",
            1 => "assistant",
            2 => "system",
            3 => "progress",
            _ => "last-prompt",
        };
        if kind == "last-prompt" {
            text.push_str(&format!("{{\"type\":\"last-prompt\",\"leafUuid\":\"u{uuid}\"}}\n"));
            continue;
        }
        let logical = if b(3) & 1 == 1 { format!(",\"logicalParentUuid\":\"u{}\"", b(3) % 16) } else { String::new() };
        let side = b(3) & 2 == 2;
        text.push_str(&format!(
            "{{\"type\":\"{kind}\",\"subtype\":\"compact_boundary\",\"uuid\":\"u{uuid}\",\"parentUuid\":{parent}{logical},\"isSidechain\":{side},\"timestamp\":\"{}\"}}\n",
            b(3) / 4
        ));
    }
    let bump = Bump::new();
    let mut parsed = parse_bytes(&bump, text.as_bytes(), "tree.jsonl", &ReadOptions::default());
    let tree = Tree::build(&parsed.entries, "tree.jsonl", &|u| u == "ext", &mut parsed.diagnostics);
    let branch = tree.active_branch();
    assert!(branch.len() <= tree.nodes.len());
    for n in tree.roots() {
        assert!(tree.nodes[n as usize].parent.is_none());
    }
});
