//! `verify` says clean only with proof: on captures of Claude Code 1.0.128
//! and 2.0.77 (whose `metadata.user_id` is the legacy string
//! `user_<device>_account_<uuid>_session_<uuid>`, which verify once did not
//! parse, so it compared nothing and said "clean"), every conversation
//! request is compared or named unmatched, side calls no transcript holds
//! are counted, and the exit status is 1. See: issue 12.

use serde_json::Value;

fn verify_json(release: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let dir = format!("tests/fixtures/{release}/hello");
    let transcripts = format!("{dir}/transcripts");
    let wire = format!("{dir}/wire.jsonl");
    let mut args = vec!["verify", transcripts.as_str(), "--wire", wire.as_str(), "--device-id", "wire", "--json"];
    args.extend_from_slice(extra);
    let out = crate::common::ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn counts(v: &Value) -> [u64; 5] {
    ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

#[test]
fn issue_12_a_2_0_77_capture_is_compared_not_called_clean() {
    // hello: the main request, three Warmup agent requests (their
    // transcripts are the agent-*.jsonl files), one git-history side call.
    let (code, v) = verify_json("cc-2.0.77", &["--mode", "pipeline"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(counts(&v), [4, 1, 0, 3, 1], "{v}");
    let kinds: Vec<&str> = v["mismatches"].as_array().unwrap().iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(kinds, ["wire", "wire_unmatched", "wire_unmatched", "wire_unmatched"]);
}

#[test]
fn issue_12_a_1_0_128_capture_is_compared_not_called_clean() {
    let (code, v) = verify_json("cc-1.0.128", &["--mode", "pipeline"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(counts(&v), [1, 1, 0, 0, 1], "{v}");
    assert_eq!(v["mismatches"][0]["kind"], "wire");
}

#[test]
fn nothing_compared_is_not_clean() {
    // Records mode rebuilds nothing from a 1.0.128 transcript: the one
    // conversation request is unmatched, and the text says so.
    let (code, v) = verify_json("cc-1.0.128", &["--mode", "records"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(counts(&v), [1, 0, 0, 1, 1], "{v}");
    // A capture of a session no transcript holds: every request unmatched.
    let out = crate::common::ctxasm(&[
        "verify",
        "tests/fixtures/cc-2.1.328/hello/transcripts",
        "--wire",
        "tests/fixtures/cc-1.0.128/hello/wire.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("is in no transcript read"), "{text}");
    assert!(text.contains("verify: MISMATCH"), "{text}");
}
