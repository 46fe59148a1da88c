//! Record replay against the real wire captures of Claude Code 2.1.328
//! (`tests/fixtures/cc-2.1.328/<scenario>/`: the transcripts the CLI wrote
//! and `wire.jsonl`, every request it sent with the exact bytes in
//! `raw_b64`; copied from `../shared/corpora/claude-code-2.1.328`).

use crate::common::{captured, first_diff, scenarios};
use ctxasm::assemble::Assembler;
use ctxasm::assemble::records::RecordOptions;
use ctxasm::corpus::RunOptions;
use ctxasm::input::discover::discover;
use ctxasm::verify::{DeviceId, read_wire, verify};
use ctxasm::write::{AssembleOptions, Turns, expand, write_batch, write_dedup};
use proptest::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIX: &str = "tests/fixtures/cc-2.1.328";

fn opts(device: &str, turns: Turns) -> AssembleOptions {
    AssembleOptions {
        assembler: Assembler {
            records: RecordOptions { device_id: device.into(), ..RecordOptions::default() },
            ..Assembler::default()
        },
        turns,
    }
}

#[test]
fn every_captured_request_is_rebuilt_byte_for_byte() {
    let mut total = 0;
    for dir in scenarios(FIX) {
        let (device, raws) = captured(&dir);
        let disc = discover(&[dir.join("transcripts")]);
        let mut out = Vec::new();
        let summary = write_batch(&disc, &RunOptions::default(), &opts(&device, Turns::All), &mut out).unwrap();
        assert!(summary.diagnostics.is_empty(), "{dir:?}: {:?}", summary.diagnostics);
        let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), raws.len(), "{dir:?}");
        for (n, (line, raw)) in lines.iter().zip(&raws).enumerate() {
            // {"custom_id":"<sid>_<n>","params":<body>}
            let v: Value = serde_json::from_slice(line).unwrap();
            let id = v["custom_id"].as_str().unwrap();
            assert!(id.ends_with(&format!("_{n}")) && id.len() <= 64, "{id}");
            let prefix = format!("{{\"custom_id\":\"{id}\",\"params\":");
            assert!(line.starts_with(prefix.as_bytes()));
            let body = &line[prefix.len()..line.len() - 1];
            assert!(body == raw.as_slice(), "{dir:?} request {n}: {}", first_diff(body, raw));
            total += 1;
        }
    }
    assert_eq!(total, 29);
}

#[test]
fn verify_is_clean_on_every_scenario() {
    for dir in scenarios(FIX) {
        let (device, raws) = captured(&dir);
        let disc = discover(&[dir.join("transcripts")]);
        let wire = read_wire(&dir.join("wire.jsonl")).unwrap();
        let r =
            verify(&disc, &RunOptions::default(), &opts(&device, Turns::All).assembler, Some(&wire), DeviceId::Given);
        assert!(r.clean(), "{dir:?}: {:?}", r.mismatches);
        assert_eq!(r.requests as usize, raws.len());
        assert_eq!(r.wire_compared as usize, raws.len());
        assert_eq!(r.wire_byte_equal, r.wire_compared);
        assert!(r.messages_hashed >= 2 * r.requests && r.hash_matches == r.messages_hashed);
    }
}

#[test]
fn a_wrong_device_id_is_a_wire_mismatch_with_its_path() {
    let dir = Path::new(FIX).join("hello");
    let disc = discover(&[dir.join("transcripts")]);
    let wire = read_wire(&dir.join("wire.jsonl")).unwrap();
    let r = verify(&disc, &RunOptions::default(), &Assembler::default(), Some(&wire), DeviceId::Given);
    assert!(!r.clean());
    assert_eq!((r.wire_compared, r.wire_byte_equal, r.wire_json_equal), (1, 0, 0));
    let m = &r.mismatches[0];
    assert_eq!(m.kind, "wire");
    assert_eq!(m.path.as_deref(), Some("$.metadata.user_id"));
}

#[test]
fn an_unmatched_tail_hash_is_a_diagnostic_not_a_guess() {
    // parallel-tools with the tool_result of the first run altered: the
    // second request's tail can no longer be matched.
    let src = Path::new(FIX).join("parallel-tools/transcripts/-home-dev-projects-parallel-tools");
    let name = "bc4a5825-e230-4da5-b082-11127d358a34.jsonl";
    let text = std::fs::read_to_string(src.join(name)).unwrap();
    let changed = text.replacen("1\\talpha\\n2\\t", "1\\tALPHA\\n2\\t", 1);
    assert_ne!(text, changed);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(name), changed).unwrap();
    let disc = discover(&[tmp.path().to_path_buf()]);
    let mut out = Vec::new();
    let s = write_batch(&disc, &RunOptions::default(), &opts("d", Turns::All), &mut out).unwrap();
    assert_eq!((s.recorded_requests, s.requests_written), (2, 1));
    assert_eq!(s.diagnostics.len(), 1);
    let d = &s.diagnostics[0];
    assert_eq!((d.line, d.kind.as_str()), (28, "record_mismatch"));
    assert!(d.message.contains("api-request 39abd18b") && d.message.contains("tail[1]"), "{}", d.message);
    let r = verify(&disc, &RunOptions::default(), &Assembler::default(), None, DeviceId::Given);
    assert_eq!((r.messages_hashed, r.hash_matches), (4, 3));
    assert!(!r.clean());
}

#[test]
fn dedup_expands_to_the_batch_format_and_is_smaller() {
    let all: Vec<PathBuf> = scenarios(FIX).iter().map(|d| d.join("transcripts")).collect();
    let disc = discover(&all);
    let o = opts("dev", Turns::All);
    let mut batch = Vec::new();
    let b = write_batch(&disc, &RunOptions::default(), &o, &mut batch).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let d = write_dedup(&disc, &RunOptions::default(), &o, &dir).unwrap();
    assert_eq!(d.batch_bytes, batch.len() as u64);
    assert_eq!(d.requests_written, b.requests_written);
    let mut expanded = Vec::new();
    assert_eq!(expand(&dir, &mut expanded).unwrap(), 29);
    assert!(expanded == batch, "expand differs: {}", first_diff(&expanded, &batch));
    // The system prompt and tools are shared by the sessions, kept messages
    // by the requests of a chain (measured: 396,382 of 1,452,056 bytes).
    assert!(d.bytes_written * 3 < d.batch_bytes, "{} vs {}", d.bytes_written, d.batch_bytes);
    // Writing into an existing output is refused.
    assert!(write_dedup(&disc, &RunOptions::default(), &o, &dir).is_err());
}

/// Found by the `record_replay` fuzz target: two files of a session with
/// one agent id (here a subagent transcript copied into a workflow run, a
/// layout discovery accepts) gave the same custom ids twice, and the
/// Message Batches API refuses a batch that repeats one. The later file's
/// requests get `_dup1`; every other id is unchanged.
#[test]
fn a_subagent_file_seen_twice_gives_unique_custom_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let from = Path::new("tests/fixtures/shapes/cc-2.1.328/subagent-bash/transcripts");
    let project = "-tmp-ctxasm-capture-2-1-328-projects-subagent-bash";
    let sid = "b9fa0b98-d543-4b82-b96a-8e13cbe8ee26";
    let agent = "agent-a5ff6edb0b52d87e8.jsonl";
    let subagents = tmp.path().join(project).join(sid).join("subagents");
    std::fs::create_dir_all(subagents.join("workflows/wf1")).unwrap();
    let main = format!("{project}/{sid}.jsonl");
    std::fs::copy(from.join(&main), tmp.path().join(&main)).unwrap();
    let agent_file = from.join(project).join(sid).join("subagents").join(agent);
    std::fs::copy(&agent_file, subagents.join(agent)).unwrap();
    std::fs::copy(&agent_file, subagents.join("workflows/wf1").join(agent)).unwrap();
    let ids = |root: &Path| -> Vec<String> {
        let mut out = Vec::new();
        let disc = discover(&[root.to_path_buf()]);
        write_batch(&disc, &RunOptions::default(), &opts("0", Turns::All), &mut out).unwrap();
        let lines = out.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        lines.map(|l| serde_json::from_slice::<Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string()).collect()
    };
    let once = ids(from);
    let twice = ids(tmp.path());
    let a = "a5ff6edb0b52d87e8";
    let copies = [format!("{sid}_{a}_0_dup1"), format!("{sid}_{a}_1_dup1")];
    assert_eq!(twice.len(), once.len() + 2, "{twice:?}");
    let unique: std::collections::BTreeSet<&String> = twice.iter().collect();
    assert_eq!(unique.len(), twice.len(), "{twice:?}");
    assert!(once.iter().all(|id| twice.contains(id)), "{once:?} vs {twice:?}");
    assert!(copies.iter().all(|id| twice.contains(id)), "{twice:?}");
}

#[test]
fn turns_select_requests_per_chain() {
    let dir = Path::new(FIX).join("long-session/transcripts");
    let disc = discover(&[dir]);
    let ids = |turns| {
        let mut out = Vec::new();
        write_batch(&disc, &RunOptions::default(), &opts("d", turns), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let sid = "bb3794f2-f0ef-4056-944f-7c6515c703d6";
    assert_eq!(ids(Turns::All).len(), 6);
    assert_eq!(ids(Turns::Last), [format!("{sid}_5")]);
    assert_eq!(ids(Turns::Index(2)), [format!("{sid}_2")]);
    assert!(ids(Turns::Index(9)).is_empty());
}

/// A synthetic session whose requests are recorded the way 2.1.328 records
/// them (shape, blobs, base/keep/tail, cacheControl on the last message).
fn synthetic_session(texts: &[String]) -> String {
    use sha2::Digest;
    let hash = |v: &Value| {
        // serde_json sorts keys without preserve_order; with it, sort here.
        fn sorted(v: &Value) -> Value {
            match v {
                Value::Object(m) => {
                    let mut keys: Vec<&String> = m.keys().filter(|k| *k != "cache_control").collect();
                    keys.sort();
                    let mut out = serde_json::Map::new();
                    for k in keys {
                        out.insert(k.clone(), sorted(&m[k]));
                    }
                    Value::Object(out)
                }
                Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
                other => other.clone(),
            }
        }
        // The strategy's characters escape the same in serde_json and
        // JSON.stringify (\n, \t, \", \\ by name; é, 😀, U+2028 raw).
        let v = serde_json::to_vec(&sorted(v)).unwrap();
        format!("{:x}", sha2::Sha256::digest(&v))
    };
    let sid = "5e551011-0000-4000-8000-000000000001";
    let shape = serde_json::json!({"system":[{"type":"text","text":"You are a test."}],"tools":[{"name":"Read","input_schema":{"type":"object"}}]});
    let shape_hash = hash(&shape);
    let mut lines = vec![
        serde_json::json!({"type":"api-request-shape","sessionId":sid,"shapeHash":shape_hash,"version":"2.1.328","shape":shape}),
    ];
    let mut prev: Option<String> = None;
    let mut count = 0usize;
    for (i, t) in texts.iter().enumerate() {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let msg = serde_json::json!({"role":role,"content":[{"type":"text","text":t}]});
        let h = hash(&msg);
        lines.push(serde_json::json!({"type":"api-request-blob","sessionId":sid,"hash":h,"message":msg}));
        if role == "user" {
            let id = format!("00000000-0000-4000-8000-{i:012}");
            let mut r = serde_json::json!({"type":"api-request","sessionId":sid,"id":id,"version":"2.1.328",
                "shapeHash":shape_hash,"params":{"model":"claude-test","max_tokens":100,"thinking":{"type":"disabled"}},
                "keep":count,"tail":[h],
                "cacheControl":[{"path":["system",0],"value":{"type":"ephemeral"}},{"path":["messages",count,"content",0],"value":{"type":"ephemeral"}}]});
            if let Some(p) = &prev {
                r["base"] = Value::String(p.clone());
                // Everything since the previous request is in the tail.
                let prev_assistant =
                    serde_json::json!({"role":"assistant","content":[{"type":"text","text":texts[i-1]}]});
                r["keep"] = Value::from(count - 1);
                r["tail"] = serde_json::json!([hash(&prev_assistant), h]);
                r["cacheControl"][1]["path"][1] = Value::from(count);
            }
            count += 1;
            prev = Some(id);
            lines.push(r);
        } else {
            count += 1;
        }
    }
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// expand(dedup(x)) == batch(x), and both hold every request.
    #[test]
    fn expand_of_dedup_is_batch(texts in proptest::collection::vec("[a-zA-Z0-9 \"\\\\\n\t<>é😀\u{2028}]{1,40}", 1..12),
                                copies in 1usize..4) {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        let session = synthetic_session(&texts);
        for c in 0..copies {
            let sid = format!("5e551011-0000-4000-8000-00000000000{c}");
            std::fs::write(proj.join(format!("{sid}.jsonl")), session.replace("5e551011-0000-4000-8000-000000000001", &sid)).unwrap();
        }
        let disc = discover(&[proj]);
        let o = opts("dev", Turns::All);
        let mut batch = Vec::new();
        let b = write_batch(&disc, &RunOptions::default(), &o, &mut batch).unwrap();
        prop_assert!(b.diagnostics.is_empty(), "{:?}", b.diagnostics);
        prop_assert_eq!(b.requests_written as usize, copies * texts.len().div_ceil(2));
        let dir = tmp.path().join("dedup");
        let d = write_dedup(&disc, &RunOptions::default(), &o, &dir).unwrap();
        prop_assert_eq!(d.batch_bytes, batch.len() as u64);
        let mut expanded = Vec::new();
        expand(&dir, &mut expanded).unwrap();
        prop_assert!(expanded == batch);
    }
}

#[test]
fn cli_verify_all_captures_at_once_and_assemble_to_a_file() {
    let mut args: Vec<String> = vec!["verify".into(), FIX.into(), "--json".into(), "--device-id".into(), "wire".into()];
    for dir in scenarios(FIX) {
        args.push("--wire".into());
        args.push(dir.join("wire.jsonl").to_string_lossy().into_owned());
    }
    let out = crate::common::bin().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"sessions":14,"pipeline_sessions":0,"requests":29,"messages_hashed":68,"hash_matches":68,
            "wire_requests":29,"wire_compared":29,"wire_byte_equal":29,"wire_json_equal":29,
            "wire_unmatched":0,"wire_side_calls":0,"approximated_profiles":0,"mismatches":[]})
    );
    // Without the device ids the comparison fails, with exit status 1.
    args.truncate(3);
    args.push("--wire".into());
    args.push(format!("{FIX}/hello/wire.jsonl"));
    let out = crate::common::bin().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("batch.jsonl");
    let out =
        crate::common::bin().args(["assemble", &format!("{FIX}/hello/transcripts"), "-o"]).arg(&file).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("  2.1.328             1         1             1       1  recorded\n"), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(
        "{\"custom_id\":\"07e16342-760f-4d1e-a0b6-18041c8458ff_0\",\"params\":{\"model\":\"claude-opus-5-5\","
    ));
}
