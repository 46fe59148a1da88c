//! Any bytes as what a client sends the mock server on one connection: the
//! HTTP parsing, routing, body checks and replies must never panic, and
//! whatever was answered is HTTP/1.x (a 1.0 request is answered in 1.0).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let out = ctxasm::mock::server::serve_raw(data);
    assert!(
        out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
        "{:?}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
});
