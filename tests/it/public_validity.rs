//! Every request the pipeline assembles from real transcripts of older
//! releases (no records, no capture) must be valid for the Messages API.
//!
//! Two checks of each request: `assemble::validate` (no `invalid_request`
//! diagnostic), and an independent check written here on the batch output
//! as plain JSON, from the API rules (../shared/docs/anthropic-api-facts.md):
//! a user message first, user and assistant alternating (system turns
//! aside), every tool_use answered by a tool_result in the next user
//! message and every tool_result answering one, unique tool_use ids, at
//! most 4 cache_control, at most 100 media blocks, no empty text, every
//! tool called defined in `tools`.
//! Runs on the bundled `corpora/sample` always and on
//! `../shared/corpora/public` when present (it says loudly when not).

use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::records::RecordOptions;
use ctxasm::assemble::{Assembler, Mode};
use ctxasm::corpus::RunOptions;
use ctxasm::diag::DiagKind;
use ctxasm::input::discover::discover;
use ctxasm::write::{AssembleOptions, AssembleSummary, Turns, write_batch};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

fn assemble(root: &Path) -> (AssembleSummary, Vec<u8>) {
    let opts = AssembleOptions {
        assembler: Assembler {
            mode: Mode::Pipeline,
            records: RecordOptions::default(),
            chooser: None,
            pipeline: Some(Setup {
                profile: ctxasm::profile::Profile::load("seed").unwrap(),
                env: None,
                overrides: Overrides::default(),
            }),
        },
        turns: Turns::All,
    };
    let mut out = Vec::new();
    let summary = write_batch(&discover(&[root.to_path_buf()]), &RunOptions::default(), &opts, &mut out).unwrap();
    (summary, out)
}

fn blocks(m: &Value) -> Vec<&Value> {
    match &m["content"] {
        Value::Array(b) => b.iter().collect(),
        _ => Vec::new(),
    }
}

/// The API rules broken by one request body (independent of `validate`).
fn broken_rules(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let tools: HashSet<&str> =
        body["tools"].as_array().map_or(HashSet::new(), |t| t.iter().filter_map(|t| t["name"].as_str()).collect());
    let msgs: Vec<&Value> = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] != "system").collect();
    if msgs.first().is_none_or(|m| m["role"] != "user") {
        out.push("first message is not user".to_string());
    }
    let mut ids = HashSet::new();
    let (mut breakpoints, mut media) = (0, 0);
    breakpoints += body["system"].as_array().unwrap().iter().filter(|b| b.get("cache_control").is_some()).count();
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 && msgs[i - 1]["role"] == m["role"] {
            out.push(format!("message {i}: two {} messages in a row", m["role"]));
        }
        if m["content"] == "" {
            out.push(format!("message {i}: empty content"));
        }
        for b in blocks(m) {
            breakpoints += usize::from(b.get("cache_control").is_some());
            let media_of = |v: &Value| matches!(v["type"].as_str(), Some("image") | Some("document"));
            media += usize::from(media_of(b));
            if let Some(Value::Array(inner)) = b.get("content") {
                media += inner.iter().filter(|x| media_of(x)).count();
            }
            if b["type"] == "text" && b["text"].as_str().is_none_or(str::is_empty) {
                out.push(format!("message {i}: empty text block"));
            }
            if b["type"] == "tool_use" {
                let id = b["id"].as_str().unwrap_or("");
                if !ids.insert(id.to_string()) {
                    out.push(format!("message {i}: duplicate tool_use id {id}"));
                }
                if !tools.contains(b["name"].as_str().unwrap_or("")) {
                    out.push(format!("message {i}: tool {} is not defined", b["name"]));
                }
            }
        }
        let calls: Vec<&str> =
            blocks(m).iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect();
        let next_results: Vec<&str> = msgs
            .get(i + 1)
            .map(|n| {
                blocks(n)
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        if m["role"] == "assistant" && i + 1 < msgs.len() {
            for c in &calls {
                if !next_results.contains(c) {
                    out.push(format!("message {i}: tool_use {c} unanswered"));
                }
            }
        }
        if m["role"] == "user" {
            let prev_calls: Vec<&str> = if i == 0 {
                Vec::new()
            } else {
                blocks(msgs[i - 1])
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .filter_map(|b| b["id"].as_str())
                    .collect()
            };
            for b in blocks(m).iter().filter(|b| b["type"] == "tool_result") {
                let id = b["tool_use_id"].as_str().unwrap_or("");
                if !prev_calls.contains(&id) {
                    out.push(format!("message {i}: tool_result {id} answers no tool_use"));
                }
            }
        }
    }
    if breakpoints > 4 {
        out.push(format!("{breakpoints} cache_control"));
    }
    if media > 100 {
        out.push(format!("{media} media blocks"));
    }
    out
}

/// Assemble `root`, check every request both ways; returns the summary.
fn check_corpus(root: &Path) -> AssembleSummary {
    let (summary, out) = assemble(root);
    let invalid: Vec<_> = summary.diagnostics.iter().filter(|d| d.kind == DiagKind::InvalidRequest).collect();
    assert!(invalid.is_empty(), "{root:?}: {} invalid requests: {invalid:#?}", invalid.len());
    let mut n = 0;
    let mut failures = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).unwrap();
        n += 1;
        // Unique custom ids (Message Batches rule; `send` refuses a second
        // one): excerpts and copies that carry one session id included.
        let id = v["custom_id"].as_str().unwrap().to_string();
        assert!(id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{id}");
        assert!(ids.insert(id.clone()), "{root:?}: custom_id {id} twice");
        let broken = broken_rules(&v["params"]);
        if !broken.is_empty() {
            failures.push(format!("{}: {broken:?}", v["custom_id"]));
        }
    }
    assert!(failures.is_empty(), "{root:?}: {} requests break API rules:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(n, summary.requests_written);
    let p = &summary.pipeline;
    eprintln!(
        "{}: {} sessions, {} requests, all valid; repaired {} (synthetic tool results {}, dropped tool results {}, user message put first {}, media stripped {}), thinking-only messages dropped {}, blank assistant messages dropped {}, attachments rendered by ctxasm {}",
        root.display(),
        summary.sessions,
        n,
        p.requests_repaired,
        p.pairing.synthetic_results,
        p.pairing.dropped_results,
        p.leading_user_inserted,
        p.media_stripped,
        p.thinking_only_dropped,
        p.empty_assistant_dropped,
        p.approximated_attachments
    );
    summary
}

#[test]
fn every_request_of_the_bundled_sample_is_valid() {
    let s = check_corpus(Path::new("corpora/sample"));
    // The sample's shape, so a change in projection or repair is seen.
    assert_eq!((s.sessions, s.requests_written), (21, 228));
    assert_eq!((s.pipeline.requests_repaired, s.pipeline.leading_user_inserted), (8, 8));
    assert_eq!(s.pipeline.approximated_attachments, 4);
}

#[test]
#[ignore = "needs ../shared/corpora/public beside the checkout (CI has it)"]
fn every_request_of_the_public_corpus_is_valid() {
    let root = Path::new("../shared/corpora/public");
    assert!(root.is_dir(), "{} is not here", root.display());
    let s = check_corpus(root);
    assert!(s.requests_written >= 1200, "{}", s.requests_written);
}

/// The independent checker catches what it must (so a pass means something).
#[test]
fn the_independent_checker_rejects_broken_requests() {
    let body = |msgs: &str| -> Value {
        serde_json::from_str(&format!(r#"{{"system":[],"tools":[{{"name":"Bash"}}],"messages":{msgs}}}"#)).unwrap()
    };
    assert!(broken_rules(&body(r#"[{"role":"user","content":"hi"}]"#)).is_empty());
    for (msgs, want) in [
        (r#"[{"role":"assistant","content":"x"}]"#, "first message is not user"),
        (r#"[{"role":"user","content":"a"},{"role":"user","content":"b"}]"#, "two \"user\" messages"),
        (r#"[{"role":"user","content":""}]"#, "empty content"),
        (
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":"b"}]"#,
            "tool_use t1 unanswered",
        ),
        (
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]"#,
            "answers no tool_use",
        ),
        (
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]"#,
            "is not defined",
        ),
    ] {
        let broken = broken_rules(&body(msgs));
        assert!(broken.iter().any(|b| b.contains(want)), "{msgs}: {broken:?}");
    }
}
