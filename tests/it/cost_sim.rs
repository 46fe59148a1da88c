//! The prompt-cache simulator (`ctxasm::cost::sim`) over the requests of the
//! 2.1.328 captures, replayed from their records, with the default estimator
//! (4 bytes per token). The expected numbers were checked by hand with an
//! independent script over `wire.jsonl` (compact JSON of each block without
//! `cache_control`, ⌈bytes / 4⌉).

use crate::common::scenarios;
use ctxasm::assemble::{Assembler, assemble_session};
use ctxasm::corpus::{RunOptions, for_each_session_of};
use ctxasm::cost::sim::{CacheSim, Estimator, PinReport, SimRequest, SimResult, blocks_of, exact_from_usage};
use ctxasm::input::discover::discover;
use ctxasm::time::parse_timestamp_ms;
use serde_json::Value;
use std::path::Path;

const FIX: &str = "tests/fixtures/cc-2.1.328";

/// The requests of a scenario (one chain each), in order: (custom_id, request).
fn requests(dir: &Path) -> Vec<(String, SimRequest)> {
    let est = Estimator::default();
    let disc = discover(&[dir.join("transcripts")]);
    let a = Assembler::default();
    let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |bump, s| {
        let out = assemble_session(bump, s, &a);
        assert!(out.diagnostics.is_empty(), "{dir:?}: {:?}", out.diagnostics);
        out.requests
            .iter()
            .map(|r| {
                let req = SimRequest {
                    at_ms: parse_timestamp_ms(r.timestamp.unwrap()).unwrap(),
                    model: r.body.model.as_str().unwrap().to_string(),
                    scope: 0,
                    thinking: 0,
                    blocks: blocks_of(&r.body, &est.tokens_fn()),
                    ready_ms: 0,
                };
                (r.custom_id.clone(), req)
            })
            .collect::<Vec<_>>()
    });
    out.into_iter().flat_map(Result::unwrap).collect()
}

fn total(r: &SimRequest) -> u64 {
    r.blocks.iter().map(|b| u64::from(b.tokens)).sum()
}

fn breakpoints(r: &SimResult) -> Vec<(usize, Option<usize>, u64)> {
    r.per_breakpoint.iter().map(|o| (o.block, o.hit, o.written)).collect()
}

/// long-session: 12 tools, 3 system blocks (breakpoints on the 2nd and 3rd),
/// then a user message of 3 blocks and a `system` message; each later turn
/// adds an assistant text + tool_use and a tool_result, which carries the
/// message breakpoint.
#[test]
fn long_session_hand_checked_at_4_bytes_per_token() {
    let reqs = requests(&Path::new(FIX).join("long-session"));
    assert_eq!(reqs.len(), 6);
    let tokens: Vec<u32> = reqs[0].1.blocks.iter().map(|b| b.tokens).collect();
    assert_eq!(
        tokens,
        [
            1318, 977, 242, 494, 481, 606, 1231, 453, 363, 1429, 51, 160, // tools
            25, 22, 1789, // system: billing header, identity line, prompt
            154, 154, 13,   // user message
            2350, // system message (string content from request 1 on)
        ]
    );
    let totals: Vec<u64> = reqs.iter().map(|(_, r)| total(r)).collect();
    assert_eq!(totals, [12312, 12389, 12468, 12547, 12626, 12705]);
    let mut sim = CacheSim::default();
    for (n, (id, r)) in reqs.iter().enumerate() {
        let res = sim.step(r);
        assert_eq!(res.flags, Default::default(), "{id}");
        if n == 0 {
            // Nothing cached yet: everything through the last breakpoint
            // (the last block) is written at 5m; tools + identity line =
            // 7,852, the prompt 1,789, the messages 2,671.
            assert_eq!((res.cache_read, res.cache_write_5m, res.cache_write_1h, res.input), (0, 12312, 0, 0));
            assert_eq!(breakpoints(&res), [(13, None, 7852), (14, None, 1789), (18, None, 2671)]);
            continue;
        }
        // The last breakpoint's lookback finds the previous request's last
        // breakpoint 3 blocks back: all of it is read, the new tail written.
        let prev_last = 18 + 3 * (n - 1);
        assert_eq!(res.cache_read, totals[n - 1], "{id}");
        assert_eq!(res.cache_write_5m, totals[n] - totals[n - 1], "{id}");
        assert_eq!(res.input, 0, "{id}");
        assert_eq!(
            breakpoints(&res),
            [(13, Some(13), 0), (14, Some(14), 0), (prev_last + 3, Some(prev_last), totals[n] - totals[n - 1])]
        );
    }
    assert_eq!(sim.totals().cache_read, 12312 + 12389 + 12468 + 12547 + 12626);
    assert_eq!(sim.totals().cache_write_5m, 12705);
    // Three entries per request: the two system breakpoints are refreshed,
    // not written again.
    assert_eq!(sim.entries(), 3 + 5);
}

/// Every scenario, each in its own cache: the first request writes
/// everything through its last breakpoint (the last block of the last
/// message, so no plain input); each later request reads exactly the whole
/// previous prompt and writes what was added.
#[test]
fn every_capture_writes_first_then_reads_the_previous_prompt() {
    let mut seen = 0;
    for dir in scenarios(FIX) {
        let reqs = requests(&dir);
        let mut sim = CacheSim::default();
        for (n, (id, r)) in reqs.iter().enumerate() {
            seen += 1;
            let res = sim.step(r);
            let last = r.blocks.len() - 1;
            assert_eq!(res.flags, Default::default(), "{id}");
            assert_eq!(res.per_breakpoint.iter().map(|o| o.block).collect::<Vec<_>>(), [13, 14, last], "{id}");
            assert_eq!((res.cache_write_1h, res.input), (0, 0), "{id}");
            if n == 0 {
                assert_eq!((res.cache_read, res.cache_write_5m), (0, total(r)), "{id}");
            } else {
                let prev = &reqs[n - 1].1;
                assert_eq!(res.cache_read, total(prev), "{id}");
                assert_eq!(res.cache_write_5m, total(r) - total(prev), "{id}");
                assert_eq!(res.per_breakpoint[2].hit, Some(prev.blocks.len() - 1), "{id}");
            }
        }
    }
    assert_eq!(seen, 29);
}

/// image-read's tool result holds a 4×4 PNG: it counts ⌈4·4/750⌉ = 1 token
/// by the image formula, and the rest of the block (82 bytes, the image
/// written as `null`) by bytes: ⌈82/4 + 1⌉ = 22.
#[test]
fn image_in_a_tool_result_counts_by_the_formula() {
    let reqs = requests(&Path::new(FIX).join("image-read"));
    let tail: Vec<u32> = reqs[1].1.blocks[19..].iter().map(|b| b.tokens).collect();
    assert_eq!(tail, [33, 22]);
}

/// All 14 scenarios through one cache in time order (they were captured
/// within 25 s, same organization). Nothing is shared across sessions: the
/// first system block, the billing header, hashes each session's first
/// prompt, so the prefix differs from block 12 on, before the first
/// breakpoint (13). With that block made equal, every later opus session
/// whose identity line (system block 2) matches reads tools + system
/// through block 13 — except append-system-prompt (a different identity
/// line) and model-sonnet (another model: caches are per model).
#[test]
fn sessions_share_the_tools_and_system_prefix_only_with_an_equal_billing_header() {
    let mut all: Vec<(String, String, SimRequest)> = Vec::new();
    for dir in scenarios(FIX) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        all.extend(requests(&dir).into_iter().map(|(id, r)| (name.clone(), id, r)));
    }
    all.sort_by_key(|(_, _, r)| r.at_ms);
    let first_reads = |same_header: bool| {
        let mut sim = CacheSim::default();
        let mut out = Vec::new();
        for (name, id, r) in &all {
            let mut r = r.clone();
            if same_header {
                r.blocks[12].hash = 0;
            }
            let res = sim.step(&r);
            if id.ends_with("_0") {
                out.push((name.clone(), res.cache_read));
            }
        }
        out
    };
    assert!(first_reads(false).iter().all(|(_, read)| *read == 0));
    let shared = first_reads(true);
    let names: Vec<&str> = shared.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "hello",
            "bash-tool",
            "parallel-tools",
            "thinking",
            "tool-error",
            "permission-denied",
            "image-read",
            "resume-multi-prompt",
            "memory-files",
            "custom-system-prompt",
            "append-system-prompt",
            "model-sonnet",
            "skill",
            "long-session"
        ]
    );
    for (name, read) in shared {
        let want = match name.as_str() {
            "hello" | "append-system-prompt" | "model-sonnet" => 0,
            _ => 7852,
        };
        assert_eq!(read, want, "{name}");
    }
}

/// The prompt size each request of `dir`'s main chain recorded: input +
/// cache creation + cache read of its response, one per `message.id`.
fn recorded_totals(dir: &Path) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    let mut last_id = String::new();
    for f in std::fs::read_dir(dir.join("transcripts")).unwrap() {
        for f in std::fs::read_dir(f.unwrap().path()).unwrap() {
            for line in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                if v["type"] != "assistant" || v["message"]["id"].as_str() == Some(&last_id) {
                    continue;
                }
                last_id = v["message"]["id"].as_str().unwrap().to_string();
                let u = &v["message"]["usage"];
                let n = |k: &str| u[k].as_u64().unwrap();
                out.push(Some(n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens")));
            }
        }
    }
    out
}

/// long-session's recorded usage (from the capture's mock server, all
/// uncached input) pins every block: each request's blocks add up to its
/// recorded total, and the simulator then writes 12,473 first and reads
/// each previous total.
#[test]
fn recorded_usage_pins_long_session() {
    let dir = Path::new(FIX).join("long-session");
    let totals = recorded_totals(&dir);
    let want = [12473, 12559, 12653, 12746, 12840, 12935];
    assert_eq!(totals, want.map(Some));
    let mut reqs: Vec<SimRequest> = requests(&dir).into_iter().map(|(_, r)| r).collect();
    let report = exact_from_usage(&mut reqs, &totals);
    assert_eq!(report, PinReport { pinned: 19 + 5 * 3, estimated: 0, requests_with_usage: 6, inconsistent: 0 });
    assert_eq!(reqs.iter().map(total).collect::<Vec<_>>(), want);
    let mut sim = CacheSim::default();
    for (n, r) in reqs.iter().enumerate() {
        let res = sim.step(r);
        let read = if n == 0 { 0 } else { want[n - 1] };
        assert_eq!((res.cache_read, res.cache_write_5m, res.input), (read, want[n] - read, 0));
    }
}
