//! The release ladder, early 2.1.x (issue 12): for each release, one profile
//! is extracted from all its captured fixtures (`tests/fixtures/cc-<v>/`)
//! and every fixture is verified against its own wire in pipeline mode (and
//! records mode where the transcripts hold `api-request` records), with
//! exact counts. [`rung`] is the helper later releases reuse.
//!
//! What each release showed before its era fields existed: 2.1.50 sends the
//! skills listing per process without writing it (`layout.skills_per_process`
//! read from a wire whose transcripts hold no `skill_listing`), merges user
//! messages without the `"\n"` (`layout.merge_newline`), sends memory files as
//! read (`layout.memory_comments`, `layout.memory_untrimmed`) and writes no
//! `entrypoint` (the billing header's
//! `sdk-cli` comes from the snapshot's argv); 2.1.150 attests `cch` per
//! request (`billing.cch_seed`); 2.1.0 sends memory files as read too; 2.1.100
//! and 2.1.150 join a reminder attachment to the tool result before it
//! (`layout.attachments_into_tool_result`, seen in memory-files).

use serde_json::Value;
use std::path::Path;

/// `[wire_requests, wire_compared, wire_byte_equal, wire_unmatched, wire_side_calls]`.
pub type Counts = [u64; 5];

/// What one fixture must give: its scenario, the pipeline counts, the
/// records counts (`None`: the transcripts hold no records) and whether
/// verify exits 0 (every conversation request compared and equal).
pub struct Expect<'s> {
    pub scenario: &'s str,
    pub pipeline: Counts,
    pub records: Option<Counts>,
    pub clean: bool,
}

/// The five counts of a `verify --json` report.
pub fn counts(v: &Value) -> Counts {
    ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

/// `ctxasm profile extract` of every listed scenario of `release` (one
/// `--env` each) into `dir`; the profile's path.
pub fn merged_profile(release: &str, scenarios: &[&str], dir: &Path) -> String {
    let out = dir.join(format!("{release}.json"));
    let f = format!("tests/fixtures/{release}");
    let mut args: Vec<String> = vec!["profile".into(), "extract".into()];
    args.extend(scenarios.iter().map(|s| format!("{f}/{s}/wire.jsonl")));
    for s in scenarios {
        args.extend(["--env".into(), format!("{f}/{s}/env")]);
    }
    args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
    let o = crate::common::ctxasm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{release}: {}", String::from_utf8_lossy(&o.stderr));
    out.to_string_lossy().into_owned()
}

/// `verify --json` of one fixture in `mode` (`pipeline` with `profile` and
/// the fixture's env, or `records`): exit code and report.
pub fn verify(release: &str, scenario: &str, mode: &str, profile: &str) -> (Option<i32>, Value) {
    let d = format!("tests/fixtures/{release}/{scenario}");
    let (t, w, env) = (format!("{d}/transcripts"), format!("{d}/wire.jsonl"), format!("{d}/env"));
    let mut args = vec!["verify", &t, "--wire", &w, "--device-id", "wire", "--json", "--mode", mode];
    if mode == "pipeline" {
        args.extend(["--profile", profile, "--env", &env]);
    }
    let out = crate::common::ctxasm(&args);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{release}/{scenario}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

/// A checked release: its merged profile, parsed and as a file (which lives
/// as long as this value).
pub struct Rung {
    pub profile: Value,
    pub path: String,
    _dir: tempfile::TempDir,
}

/// Extract `release`'s merged profile from all `expect`ed fixtures and
/// check each; returns the profile for further assertions.
pub fn rung(release: &str, expect: &[Expect<'_>]) -> Rung {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios: Vec<&str> = expect.iter().map(|e| e.scenario).collect();
    let profile = merged_profile(release, &scenarios, tmp.path());
    for e in expect {
        let has_records = std::fs::read_dir(format!("tests/fixtures/{release}/{}/transcripts", e.scenario))
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .any(|f| std::fs::read_to_string(f.path()).is_ok_and(|t| t.contains("\"type\":\"api-request\"")));
        assert_eq!(has_records, e.records.is_some(), "{release}/{}: records in the transcripts", e.scenario);
        let modes = [("pipeline", Some(e.pipeline)), ("records", e.records)];
        for (mode, want) in modes.iter().filter_map(|(m, w)| w.map(|w| (*m, w))) {
            let (code, v) = verify(release, e.scenario, mode, &profile);
            assert_eq!(counts(&v), want, "{release}/{} {mode}: {v}", e.scenario);
            assert_eq!(code, Some(if e.clean { 0 } else { 1 }), "{release}/{} {mode}: {v}", e.scenario);
        }
    }
    Rung { profile: serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap(), path: profile, _dir: tmp }
}

#[test]
fn ladder_2_1_0() {
    // Every request byte-equal, the three Warmup agent requests of each
    // CLI process (agent-*.jsonl) included: the profile's agents.
    let r = rung(
        "cc-2.1.0",
        &[
            Expect { scenario: "hello", pipeline: [4, 4, 4, 0, 1], records: None, clean: true },
            Expect { scenario: "bash-tool", pipeline: [5, 5, 5, 0, 2], records: None, clean: true },
            Expect { scenario: "memory-files", pipeline: [5, 5, 5, 0, 1], records: None, clean: true },
        ],
    );
    let p = &r.profile;
    assert_eq!((&p["metadata"], &p["billing"]["header_block"]), (&Value::from("legacy_user_id"), &Value::Bool(false)));
    // Memory files as read: several files show it (a blank line between
    // them, the HTML comment kept), so the merged profile has it.
    assert_eq!(
        (&p["layout"]["message_breakpoints"], &p["layout"]["memory_untrimmed"], &p["layout"]["memory_comments"]),
        (&Value::from(2), &Value::Bool(true), &Value::Bool(true))
    );
    assert_eq!(p["agents"].as_array().map(Vec::len), Some(3), "the three warmed-up agents");
}

#[test]
fn ladder_2_1_50() {
    let p = &rung(
        "cc-2.1.50",
        &[
            Expect { scenario: "hello", pipeline: [1, 1, 1, 0, 0], records: None, clean: true },
            Expect { scenario: "bash-tool", pipeline: [2, 2, 2, 0, 1], records: None, clean: true },
            Expect { scenario: "memory-files", pipeline: [2, 2, 2, 0, 0], records: None, clean: true },
            // Three -p processes; each new one's prompt carries the listing
            // (process starts marked by the queue's dequeue: no last-prompt).
            Expect { scenario: "resume-multi-prompt", pipeline: [4, 4, 4, 0, 1], records: None, clean: true },
        ],
    )
    .profile;
    let l = &p["layout"];
    assert_eq!((&l["skills_per_process"], &l["merge_newline"]), (&Value::Bool(true), &Value::Bool(false)), "{l}");
    assert_eq!((&l["memory_comments"], &l["memory_untrimmed"]), (&Value::Bool(true), &Value::Bool(true)), "{l}");
    assert_eq!((&p["metadata"], &p["billing"]["cch"]), (&Value::from("legacy_user_id"), &Value::from(" cch=00000;")));
}

#[test]
fn ladder_2_1_100() {
    let p = &rung(
        "cc-2.1.100",
        &[
            Expect { scenario: "hello", pipeline: [1, 1, 1, 0, 0], records: None, clean: true },
            Expect { scenario: "bash-tool", pipeline: [2, 2, 2, 0, 0], records: None, clean: true },
            Expect { scenario: "memory-files", pipeline: [2, 2, 2, 0, 0], records: None, clean: true },
        ],
    )
    .profile;
    // The listing is a `skill_listing` attachment now; the merge has its
    // "\n"; the nested memory rule written as an attachment is joined to
    // the `Read` result it follows (memory-files).
    let l = &p["layout"];
    assert_eq!((&l["skills_per_process"], &l["merge_newline"]), (&Value::Bool(false), &Value::Bool(true)), "{l}");
    assert_eq!(
        (&l["attachments_into_tool_result"], &l["memory_comments"], &l["memory_untrimmed"]),
        (&Value::Bool(true), &Value::Bool(false), &Value::Bool(false))
    );
    assert_eq!(p["metadata"], "json_user_id");
}

#[test]
fn ladder_2_1_150() {
    // The native client attests `cch` per request: with the seed found by
    // extract, each request's own value is rebuilt (the hello request
    // alone could not tell a literal from an attested one).
    let r = rung(
        "cc-2.1.150",
        &[
            Expect { scenario: "hello", pipeline: [1, 1, 1, 0, 0], records: None, clean: true },
            Expect { scenario: "bash-tool", pipeline: [2, 2, 2, 0, 0], records: None, clean: true },
            Expect { scenario: "memory-files", pipeline: [2, 2, 2, 0, 0], records: None, clean: true },
            // `ctxasm profile capture`'s probe: `--model opus` names the
            // default model, without its 1M context window.
            Expect { scenario: "model-opus", pipeline: [1, 1, 1, 0, 0], records: None, clean: true },
        ],
    );
    let p = &r.profile;
    let variants: Vec<(&str, bool)> = p["model_variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["model"].as_str().unwrap(), v["explicit"].as_bool().unwrap_or(false)))
        .collect();
    assert_eq!(variants, [("claude-opus-4-7", true)], "the explicit choice of the default model is a variant");
    let betas = |b: &Value| b.as_array().unwrap().iter().any(|x| x == "context-1m-2025-08-07");
    assert!(betas(&p["betas"]) && !betas(&p["model_variants"][0]["betas"]));
    // The dedup format holds each request's attested billing block: expand
    // gives the batch bytes, two different cch values.
    let tmp = tempfile::tempdir().unwrap();
    let (batch, dedup, expanded) = (tmp.path().join("b.jsonl"), tmp.path().join("d"), tmp.path().join("e.jsonl"));
    let f = "tests/fixtures/cc-2.1.150/bash-tool";
    let (t, env) = (format!("{f}/transcripts"), format!("{f}/env"));
    let base = ["assemble", &t, "--mode", "pipeline", "--profile", &r.path, "--env", &env];
    let out = |extra: &[&str]| {
        let o = crate::common::ctxasm(&[&base[..], extra].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    out(&["-o", batch.to_str().unwrap()]);
    out(&["--format", "dedup", "-o", dedup.to_str().unwrap()]);
    let o = crate::common::ctxasm(&["expand", dedup.to_str().unwrap(), "-o", expanded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let batch = std::fs::read_to_string(batch).unwrap();
    assert_eq!(batch, std::fs::read_to_string(expanded).unwrap());
    let cch: std::collections::BTreeSet<&str> = batch.match_indices("cch=").map(|(i, _)| &batch[i..i + 9]).collect();
    assert_eq!(cch.len(), 2, "{cch:?}");
    assert!(!cch.contains("cch=00000"));
    assert_eq!(
        (&p["billing"]["cch_seed"], &p["billing"]["cch"]),
        (&Value::from("4d659218e32a3268"), &Value::from(" cch=00000;"))
    );
    assert_eq!(p["layout"]["attachments_into_tool_result"], true);
}
