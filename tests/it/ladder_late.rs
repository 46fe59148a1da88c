//! The release ladder, late 2.1.x (issue 12): real captures of Claude Code
//! 2.1.198, 2.1.250 and 2.1.300 (`tests/fixtures/cc-<v>/`: hello,
//! bash-tool, memory-files, model-haiku or model-sonnet), each rebuilt byte for byte in
//! pipeline mode with one profile extracted from the release's own four
//! captures; plus hello (and bash-tool) of 2.1.275 and 2.1.288, two eras
//! between them.
//!
//! What the eras show: 2.1.198 and 2.1.250 write the agent and skill
//! listings, the token count (2.1.250) and nested rules without `rendered`
//! and send them as `role: "system"` turns (the profile's `attachments`
//! templates, learned from the capture); 2.1.198 puts the breakpoint on the
//! last user or assistant message, past a trailing system turn
//! (`layout.breakpoint_skips_system`); both send Haiku 4.5 a prompt, tool
//! list and params of its own and the listings as user text (Sonnet 5 too
//! has its own prompt): the profile's `model_variants`; 2.1.300 writes `api-request` records
//! (records mode), copies `output_config` into the first system turn only
//! (`layout.system_message_params_first_only`) and sends `safeguards` (the
//! session's directories and permission rules) on a process's first request
//! only, which the pipeline takes from the turn's record
//! (`layout.params_from_records`).

use serde_json::Value;
use std::path::Path;

/// The fixtures of a release: hello, bash-tool, memory-files and the model
/// capture that shows most (2.1.198 and 2.1.250: Haiku 4.5's own prompt,
/// params and user-text listings; 2.1.300: Sonnet from its records).
fn scenarios(release: &str) -> [&'static str; 4] {
    let model = if release == "cc-2.1.300" { "model-sonnet" } else { "model-haiku" };
    ["hello", "bash-tool", "memory-files", model]
}

/// The merged profile of `release`'s fixtures, written into `dir`.
fn merged_profile(release: &str, dir: &Path) -> String {
    let root = format!("tests/fixtures/{release}");
    let out = dir.join(format!("{release}.json"));
    let wires: Vec<String> = scenarios(release).iter().map(|s| format!("{root}/{s}/wire.jsonl")).collect();
    let envs: Vec<String> = scenarios(release).iter().map(|s| format!("{root}/{s}/env")).collect();
    let mut args: Vec<&str> = vec!["profile", "extract"];
    args.extend(wires.iter().map(String::as_str));
    for e in &envs {
        args.extend(["--env", e.as_str()]);
    }
    args.extend(["-o", out.to_str().unwrap()]);
    let o = crate::common::ctxasm(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_str().unwrap().to_string()
}

/// `verify --json` of one fixture: exit code and the five wire counts.
fn verify(release: &str, scenario: &str, extra: &[&str]) -> (Option<i32>, [u64; 5], Value) {
    let dir = format!("tests/fixtures/{release}/{scenario}");
    let (t, w, env) = (format!("{dir}/transcripts"), format!("{dir}/wire.jsonl"), format!("{dir}/env"));
    let mut args = vec!["verify", t.as_str(), "--wire", w.as_str(), "--device-id", "wire", "--json"];
    if extra.first() == Some(&"--profile") {
        args.extend(["--env", env.as_str()]);
    }
    args.extend_from_slice(extra);
    let o = crate::common::ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let counts = ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")));
    (o.status.code(), counts, v)
}

/// Every fixture of `release` in pipeline mode: `want` conversation
/// requests per scenario, all byte-equal, exit 0.
fn pipeline_byte_equal(release: &str, want: [u64; 4]) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let profile = merged_profile(release, tmp.path());
    for (s, n) in scenarios(release).iter().zip(want) {
        let (code, counts, v) = verify(release, s, &["--profile", &profile, "--mode", "pipeline"]);
        assert_eq!(counts, [n, n, n, 0, 0], "{release} {s}: {}", v["mismatches"]);
        assert_eq!(code, Some(0), "{release} {s}");
    }
    serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap()
}

#[test]
fn issue_12_2_1_198_is_rebuilt_byte_equal() {
    let p = pipeline_byte_equal("cc-2.1.198", [1, 2, 2, 1]);
    assert_eq!(p["layout"]["breakpoint_skips_system"], true);
    assert_eq!(p["layout"]["user_context_message"], true);
    assert_eq!(p["layout"]["system_context_in_prompt"], true);
    let kinds: Vec<&str> = p["attachments"].as_array().unwrap().iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["agent_listing_delta", "skill_listing", "nested_memory"]);
    assert!(p["attachments"].as_array().unwrap().iter().all(|t| t["role"] == "system"));
    let variants: Vec<&str> =
        p["model_variants"].as_array().unwrap().iter().map(|v| v["model"].as_str().unwrap()).collect();
    assert_eq!(variants, ["claude-haiku-4-5-20251001"]);
    haiku_variant(&p["model_variants"][0]);
}

/// Haiku 4.5 (2.1.198, 2.1.250): its own prompt and params (`thinking`
/// enabled with a budget, no `output_config`), the listings as user text.
fn haiku_variant(v: &Value) {
    assert_eq!(v["params"]["max_tokens"], 32000);
    assert_eq!(v["params"]["thinking"]["type"], "enabled");
    assert!(v["params"].get("output_config").is_none(), "{}", v["params"]);
    assert!(!v["prompt"]["dynamic_sections"].as_array().unwrap().is_empty());
    let roles: Vec<&str> = v["attachments"].as_array().unwrap().iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert!(!roles.is_empty() && roles.iter().all(|r| *r == "user"), "{roles:?}");
}

#[test]
fn issue_12_2_1_250_is_rebuilt_byte_equal() {
    let p = pipeline_byte_equal("cc-2.1.250", [1, 2, 2, 1]);
    assert_eq!(p["layout"]["breakpoint_skips_system"], false);
    let kinds: Vec<&str> = p["attachments"].as_array().unwrap().iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["agent_listing_delta", "skill_listing", "total_tokens_reminder", "nested_memory"]);
    let nested = &p["attachments"][3];
    assert_eq!(nested["text"], "Contents of {{path}}:\n\n{{content.content}}");
    assert_eq!(p["model_variants"][0]["model"], "claude-haiku-4-5-20251001");
    haiku_variant(&p["model_variants"][0]);
}

#[test]
fn issue_12_2_1_300_is_rebuilt_byte_equal() {
    let p = pipeline_byte_equal("cc-2.1.300", [1, 2, 2, 1]);
    assert_eq!(p["layout"]["system_message_params_first_only"], true);
    assert_eq!(p["layout"]["params_from_records"], serde_json::json!(["safeguards"]));
    assert_eq!(p["attachments"], serde_json::json!([]));
}

#[test]
fn issue_12_2_1_300_records_are_byte_equal() {
    for (s, n) in scenarios("cc-2.1.300").iter().zip([1u64, 2, 2, 1]) {
        let (code, counts, v) = verify("cc-2.1.300", s, &["--mode", "records"]);
        assert_eq!(counts, [n, n, n, 0, 0], "{s}: {}", v["mismatches"]);
        assert_eq!(v["hash_matches"], v["messages_hashed"], "{s}");
        assert_eq!(code, Some(0), "{s}");
    }
}

#[test]
fn issue_12_2_1_275_rendered_without_a_role_takes_the_learned_one() {
    // 2.1.27x writes `rendered` but not `renderedRole`: the profile learns
    // from the capture which kinds are system turns (environment, model,
    // listings, token count, date) and which user text (session context).
    let tmp = tempfile::tempdir().unwrap();
    let dir = "tests/fixtures/cc-2.1.275/hello";
    let out = tmp.path().join("p.json");
    let (w, env) = (format!("{dir}/wire.jsonl"), format!("{dir}/env"));
    let o = crate::common::ctxasm(&["profile", "extract", &w, "--env", &env, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let roles: Vec<(&str, &str)> = p["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["kind"].as_str().unwrap(), t["role"].as_str().unwrap()))
        .collect();
    assert!(roles.contains(&("environment", "system")) && roles.contains(&("session_context", "user")), "{roles:?}");
    let (code, counts, v) = verify("cc-2.1.275", "hello", &["--profile", out.to_str().unwrap(), "--mode", "pipeline"]);
    assert_eq!(counts, [1, 1, 1, 0, 0], "{}", v["mismatches"]);
    assert_eq!(code, Some(0));
}

#[test]
fn issue_12_2_1_288_without_records_sends_safeguards_on_a_process_first_request() {
    // 2.1.288 writes no records, sends `output_config` on its first system
    // turn and `safeguards` (the session's directories, `{{cwd}}` /
    // `{{home}}` in the profile) on the first request of the process only.
    let tmp = tempfile::tempdir().unwrap();
    let root = "tests/fixtures/cc-2.1.288";
    let out = tmp.path().join("p.json");
    let (hw, he) = (format!("{root}/hello/wire.jsonl"), format!("{root}/hello/env"));
    let (bw, be) = (format!("{root}/bash-tool/wire.jsonl"), format!("{root}/bash-tool/env"));
    let args = ["profile", "extract", &hw, &bw, "--env", &he, "--env", &be, "-o", out.to_str().unwrap()];
    let o = crate::common::ctxasm(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(p["layout"]["params_from_records"], serde_json::json!(["safeguards"]));
    assert_eq!(p["params"]["safeguards"][0]["classifier_context"]["live_cwd"], "{{cwd}}");
    for (s, n) in [("hello", 1u64), ("bash-tool", 2)] {
        let (code, counts, v) = verify("cc-2.1.288", s, &["--profile", out.to_str().unwrap(), "--mode", "pipeline"]);
        assert_eq!(counts, [n, n, n, 0, 0], "{s}: {}", v["mismatches"]);
        assert_eq!(code, Some(0), "{s}");
    }
}

/// `ctxasm profile capture`'s `--system-prompt` probe of 2.1.250: the
/// capture teaches the tools a custom prompt gets (the Agent tool's extra
/// paragraph) and the agent listing's concurrency note, and the session is
/// rebuilt byte-equal from its environment's argv (no what-if flag).
#[test]
fn issue_12_2_1_250_custom_prompt_capture_teaches_its_tools_and_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = "tests/fixtures/cc-2.1.250";
    let from = ["hello", "bash-tool", "memory-files", "model-haiku", "custom-system-prompt"];
    let out = tmp.path().join("p.json");
    let mut args: Vec<String> = vec!["profile".into(), "extract".into()];
    args.extend(from.iter().map(|s| format!("{root}/{s}/wire.jsonl")));
    for s in from {
        args.extend(["--env".into(), format!("{root}/{s}/env")]);
    }
    args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
    let o = crate::common::ctxasm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let profile = out.to_str().unwrap();
    let (code, counts, v) = verify("cc-2.1.250", "custom-system-prompt", &["--profile", profile, "--mode", "pipeline"]);
    assert_eq!((code, counts), (Some(0), [1, 1, 1, 0, 0]), "{}", v["mismatches"]);
    let p: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(p["custom_prompt_tools"].as_array().map(Vec::len), p["tools"].as_array().map(Vec::len));
    let notes: Vec<&Value> =
        p["attachments"].as_array().unwrap().iter().filter(|t| t["kind"] == "agent_listing_delta").collect();
    let shown: Vec<&Value> = notes.iter().map(|t| &t["when"]["showConcurrencyNote"]).collect();
    assert_eq!(shown, [&Value::Bool(false), &Value::Bool(true)]);
    // The plain sessions keep the plain tools.
    for (s, n) in [("hello", 1), ("bash-tool", 2)] {
        let (code, counts, v) = verify("cc-2.1.250", s, &["--profile", profile, "--mode", "pipeline"]);
        assert_eq!((code, counts), (Some(0), [n, n, n, 0, 0]), "{s}: {}", v["mismatches"]);
    }
}
