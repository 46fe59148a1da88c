//! Issue 13, rows 3, 4, 7, 8 and 10: sessions with subagents, background
//! tasks and other models, captured from the real CLI
//! (`tests/fixtures/shapes/cc-<v>/<shape>/`, `scripts/scenarios/shapes.py`)
//! and rebuilt byte for byte with the profile `profile capture` makes from
//! the release's kept probes (`tests/fixtures/probes/cc-<v>/`).
//!
//! - `subagent-bash`: the main model calls the Agent tool, the agent runs
//!   one Bash call. 2.1.3xx marks the agent's requests in the billing
//!   header (`Billing::subagent`, learned from the `subagent` probe; in
//!   records mode from the record's `querySource`), runs the agent
//!   asynchronously and later delivers a task notification; `output_config`
//!   stays on the first system turn (the agent-listing update after the
//!   tool result has none). 2.1.88 builds the agent's requests from its
//!   type's definition (`agents[].subagent_type`, learned from the
//!   `subagent` probe: its own prompt, tools and params), with the skills
//!   listing on its first tool result.
//! - `background-bash`: a background Bash call whose completion the CLI
//!   delivers wrapped in a `<system-reminder>` (2.1.3xx; the wrapper from
//!   the session's records or `reminders.task_notification`).
//! - `haiku-bash`, `sonnet-bash`: other models' params and text (row 8).

use serde_json::Value;
use std::path::Path;

/// The profile `profile capture --from` makes of release `v`'s probes.
fn probe_profile(v: &str, dir: &Path) -> String {
    let out = dir.join(format!("{v}.json"));
    let from = format!("tests/fixtures/probes/cc-{v}");
    let o = crate::common::ctxasm(&["profile", "capture", "--from", &from, "-o", out.to_str().unwrap()]);
    assert!(out.is_file(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_str().unwrap().to_string()
}

/// `verify --json` of one shape: exit code and the five wire counts.
fn verify(v: &str, shape: &str, mode: &str, profile: &str) -> (Option<i32>, [u64; 5], Value) {
    let dir = format!("tests/fixtures/shapes/cc-{v}/{shape}");
    let (t, w, env) = (format!("{dir}/transcripts"), format!("{dir}/wire.jsonl"), format!("{dir}/env"));
    let mut args = vec!["verify", t.as_str(), "--wire", w.as_str(), "--device-id", "wire", "--json", "--mode", mode];
    if mode == "pipeline" {
        args.extend(["--profile", profile, "--env", env.as_str()]);
    }
    let o = crate::common::ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let counts = ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")));
    (o.status.code(), counts, v)
}

/// Every shape of `v` byte-equal: `want` = (shape, requests); records mode
/// too when the release writes records.
fn all_byte_equal(v: &str, want: &[(&str, u64)], records: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let profile = probe_profile(v, tmp.path());
    let modes: &[&str] = if records { &["pipeline", "records"] } else { &["pipeline"] };
    for &(shape, n) in want {
        for mode in modes {
            let (code, counts, out) = verify(v, shape, mode, &profile);
            assert_eq!(counts, [n, n, n, 0, 0], "{v} {shape} {mode}: {}", out["mismatches"]);
            assert_eq!(code, Some(0), "{v} {shape} {mode}");
        }
    }
}

#[test]
fn issue_13_agents_2_1_88() {
    // subagent-bash: the general-purpose agent's requests from its type's
    // definition (prompt, 16 tools, temperature 1, no thinking; the skills
    // listing on its first tool result), learned from the subagent probe.
    let shapes = [("subagent-bash", 4), ("background-bash", 4), ("haiku-bash", 2), ("sonnet-bash", 2)];
    all_byte_equal("2.1.88", &shapes, false);
}

#[test]
fn issue_13_agents_2_1_328() {
    let shapes = [("subagent-bash", 5), ("background-bash", 4), ("haiku-bash", 2), ("sonnet-bash", 2)];
    all_byte_equal("2.1.328", &shapes, true);
}

#[test]
fn issue_13_agents_2_1_332() {
    let shapes = [("subagent-bash", 5), ("background-bash", 4), ("haiku-bash", 2), ("sonnet-bash", 2)];
    all_byte_equal("2.1.332", &shapes, true);
}
