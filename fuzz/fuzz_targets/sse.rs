//! Any bytes as a streamed reply, fed in arbitrary chunks: the SSE parser
//! and the message rebuilder must never panic, and the chunking must not
//! change the events (the first byte picks the chunk size).
#![no_main]

use ctxasm::send::sse::{MessageBuilder, SseParser, rebuild};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else { return };
    let step = usize::from(step % 17) + 1;
    let whole = {
        let mut p = SseParser::default();
        let mut ev = Vec::new();
        p.feed(body, &mut ev);
        p.finish(&mut ev);
        ev
    };
    let mut p = SseParser::default();
    let mut chunked = Vec::new();
    for c in body.chunks(step) {
        p.feed(c, &mut chunked);
    }
    p.finish(&mut chunked);
    assert_eq!(whole, chunked, "chunking changed the events");
    let mut b = MessageBuilder::default();
    for ev in &chunked {
        b.apply(ev);
        if b.ended() {
            break;
        }
    }
    let _ = b.finish();
    let _ = rebuild(body);
});
