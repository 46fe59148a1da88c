//! Records-free 2.1.3xx (issue 12): the captured transcripts of 2.1.328 and
//! 2.1.332 with their `api-request*` lines removed (as a release that
//! writes none, or a user who strips them, leaves them) rebuild every
//! conversation request byte-equal in pipeline mode, with a profile from
//! the release's `hello` + `bash-tool` captures and each scenario's
//! `--env`. What makes it work: the system messages carry the layout's
//! params (`output_config`), and the session's `prompt_snapshot`
//! attachments give the prompt its own flags and model made
//! (`--system-prompt`, `--append-system-prompt`, `--model sonnet`), and
//! each CLI process's `--effort` (the `--env` snapshot's argv).
//! Also: 2.1.332, the newest release, byte-equal in records mode and in
//! pipeline mode with its records. The stripped copies are made in a
//! tempdir at test time; none is committed.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The 2.1.328 scenarios and their conversation requests (wire.jsonl).
const CC_2_1_328: [(&str, u64); 14] = [
    ("append-system-prompt", 1),
    ("bash-tool", 2),
    ("custom-system-prompt", 1),
    ("hello", 1),
    ("image-read", 2),
    ("long-session", 6),
    ("memory-files", 2),
    ("model-sonnet", 1),
    ("parallel-tools", 2),
    ("permission-denied", 2),
    ("resume-multi-prompt", 4),
    ("skill", 1),
    ("thinking", 2),
    ("tool-error", 2),
];

/// The 2.1.332 fixtures and their conversation requests.
/// `resume-effort-change` (scripts/scenarios/records_free.py): three
/// processes, the second resumed with `--effort high`, the third with
/// `--model sonnet --effort low` — `output_config` goes on a system turn
/// only when the effort changed (an empty system turn when no attachment
/// makes one), and each request's own says its process's effort.
const CC_2_1_332: [(&str, u64); 4] = [("hello", 1), ("bash-tool", 2), ("memory-files", 2), ("resume-effort-change", 3)];

fn fixture(release: &str, scenario: &str) -> PathBuf {
    Path::new("tests/fixtures").join(release).join(scenario)
}

/// A copy of `src` (a transcripts folder) under `dst` without the lines
/// that hold `"api-request` (`sed '/"api-request/d'`); returns how many
/// lines were removed.
fn strip_records(src: &Path, dst: &Path) -> usize {
    std::fs::create_dir_all(dst).unwrap();
    let mut removed = 0;
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() {
            removed += strip_records(&p, &to);
        } else {
            let text = std::fs::read_to_string(&p).unwrap();
            let kept: Vec<&str> = text.lines().filter(|l| !l.contains("\"api-request")).collect();
            removed += text.lines().count() - kept.len();
            std::fs::write(&to, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        }
    }
    removed
}

/// A profile from the release's `hello` and `bash-tool` captures, in `dir`.
fn merged_profile(release: &str, dir: &Path) -> String {
    let (h, b) = (fixture(release, "hello"), fixture(release, "bash-tool"));
    let out = dir.join(format!("{release}.json"));
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    let o = crate::common::ctxasm(&[
        "profile",
        "extract",
        &s(h.join("wire.jsonl")),
        &s(b.join("wire.jsonl")),
        "--env",
        &s(h.join("env")),
        "--env",
        &s(b.join("env")),
        "-o",
        &s(out.clone()),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    s(out)
}

/// `verify --json` of `transcripts` against the scenario's capture: exit
/// code, [requests, compared, byte-equal, unmatched, side calls].
fn verify(release: &str, scenario: &str, transcripts: &Path, extra: &[&str]) -> (Option<i32>, [u64; 5], Value) {
    let dir = fixture(release, scenario);
    let wire = dir.join("wire.jsonl");
    let t = transcripts.to_string_lossy();
    let w = wire.to_string_lossy();
    let mut args = vec!["verify", &t, "--wire", &w, "--device-id", "wire", "--json"];
    args.extend_from_slice(extra);
    let out = crate::common::ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let counts = ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")));
    (out.status.code(), counts, v)
}

/// Every scenario of `release`, records stripped, pipeline mode: all
/// byte-equal, exit 0; and records mode on the same copies finds nothing
/// to replay (the records really are gone).
fn records_free_release(release: &str, scenarios: &[(&str, u64)]) {
    let tmp = tempfile::tempdir().unwrap();
    let profile = merged_profile(release, tmp.path());
    for &(scenario, n) in scenarios {
        let stripped = tmp.path().join(scenario);
        let removed = strip_records(&fixture(release, scenario).join("transcripts"), &stripped);
        // One api-request per request, plus its shape(s) and blobs.
        assert!(removed > n as usize, "{release}/{scenario}: {removed} record lines removed");
        let env = fixture(release, scenario).join("env");
        let env = env.to_string_lossy();
        let (code, counts, v) =
            verify(release, scenario, &stripped, &["--mode", "pipeline", "--profile", &profile, "--env", &env]);
        assert_eq!((code, counts), (Some(0), [n, n, n, 0, 0]), "{release}/{scenario} records-free: {v}");
        let (code, counts, v) = verify(release, scenario, &stripped, &["--mode", "records"]);
        assert_eq!((code, counts), (Some(1), [n, 0, 0, n, 0]), "{release}/{scenario} records mode, stripped: {v}");
    }
}

#[test]
fn issue_12_records_free_2_1_328_is_byte_equal() {
    records_free_release("cc-2.1.328", &CC_2_1_328);
}

#[test]
fn issue_12_records_free_2_1_328_needs_no_env() {
    // Everything session-specific is in the transcript: the attachments'
    // rendered text and the prompt snapshot (the environment section and
    // gitStatus are attachments in 2.1.3xx; no scenario sets `--effort`).
    let tmp = tempfile::tempdir().unwrap();
    let profile = merged_profile("cc-2.1.328", tmp.path());
    for (scenario, n) in CC_2_1_328 {
        let stripped = tmp.path().join(scenario);
        strip_records(&fixture("cc-2.1.328", scenario).join("transcripts"), &stripped);
        let (code, counts, v) =
            verify("cc-2.1.328", scenario, &stripped, &["--mode", "pipeline", "--profile", &profile]);
        assert_eq!((code, counts), (Some(0), [n, n, n, 0, 0]), "{scenario} records-free, no --env: {v}");
    }
}

#[test]
fn issue_12_records_free_2_1_332_is_byte_equal() {
    records_free_release("cc-2.1.332", &CC_2_1_332);
}

#[test]
fn issue_12_2_1_332_is_byte_equal_in_records_mode() {
    for (scenario, n) in CC_2_1_332 {
        let t = fixture("cc-2.1.332", scenario).join("transcripts");
        let (code, counts, v) = verify("cc-2.1.332", scenario, &t, &["--mode", "records"]);
        assert_eq!((code, counts), (Some(0), [n, n, n, 0, 0]), "{scenario}: {v}");
    }
}

#[test]
fn issue_12_2_1_332_is_byte_equal_in_pipeline_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let profile = merged_profile("cc-2.1.332", tmp.path());
    for (scenario, n) in CC_2_1_332 {
        let dir = fixture("cc-2.1.332", scenario);
        let env = dir.join("env");
        let env = env.to_string_lossy();
        let args = ["--mode", "pipeline", "--profile", &profile, "--env", &env];
        let (code, counts, v) = verify("cc-2.1.332", scenario, &dir.join("transcripts"), &args);
        assert_eq!((code, counts), (Some(0), [n, n, n, 0, 0]), "{scenario}: {v}");
    }
}

#[test]
fn issue_12_a_resumed_effort_needs_the_argv() {
    // No transcript line says a process ran with `--effort`: without the
    // `--env` snapshot's argv only the first request (default effort) is
    // byte-equal, records or not.
    let tmp = tempfile::tempdir().unwrap();
    let profile = merged_profile("cc-2.1.332", tmp.path());
    let stripped = tmp.path().join("s");
    strip_records(&fixture("cc-2.1.332", "resume-effort-change").join("transcripts"), &stripped);
    let (code, counts, v) =
        verify("cc-2.1.332", "resume-effort-change", &stripped, &["--mode", "pipeline", "--profile", &profile]);
    assert_eq!((code, counts), (Some(1), [3, 3, 1, 0, 0]), "{v}");
}
