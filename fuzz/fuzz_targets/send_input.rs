//! Any bytes as a `send` input (the batch format): the line reader must
//! never panic, every request it keeps has a non-empty custom_id and a
//! model, ids are unique, and a request's body is a slice of the input.
#![no_main]

use ctxasm::send::input::parse;
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let input = parse(bytes::Bytes::copy_from_slice(data), "fuzz.jsonl");
    let mut ids = HashSet::new();
    for r in &input.requests {
        assert!(!r.custom_id.is_empty());
        assert!(ids.insert(r.custom_id.clone()), "duplicate custom_id kept");
        assert!(r.body.len() <= data.len());
        let _ = r.estimated_input_tokens();
        let _ = ctxasm::send::batches::batch_params(r);
    }
    let _ = ctxasm::send::batches::split(&input, ctxasm::send::batches::Split { requests: 3, bytes: 4096 });
});
