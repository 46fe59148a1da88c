//! `verify` says clean only with proof, and the pre-2.1 releases are
//! rebuilt byte for byte (issue 12).
//!
//! Golden tests on captures of Claude Code 1.0.128 (newest 1.0.x) and
//! 2.0.77 (newest 2.0.x), with one profile per release extracted from its
//! `hello`, `bash-tool` and `memory-files` captures: every conversation request of every
//! fixture is compared and byte-equal and verify exits 0; side calls no
//! transcript holds (the git-history and command-path haiku calls) are
//! counted, not rebuilt. And a capture whose `metadata.user_id` is the
//! legacy string (which verify once did not parse, so it compared nothing
//! and said "clean") is compared or named unmatched, never clean for free.

use serde_json::Value;

const F: &str = "tests/fixtures";

fn verify_scenario(release: &str, scenario: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let dir = format!("{F}/{release}/{scenario}");
    let transcripts = format!("{dir}/transcripts");
    let wire = format!("{dir}/wire.jsonl");
    let mut args = vec!["verify", transcripts.as_str(), "--wire", wire.as_str(), "--device-id", "wire", "--json"];
    args.extend_from_slice(extra);
    let out = crate::common::ctxasm(&args);
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

/// `verify --mode pipeline` of a fixture with `profile` and its own env.
fn verify_pipeline(release: &str, scenario: &str, profile: &str) -> (Option<i32>, Value) {
    verify_pipeline_with(release, scenario, profile, &[])
}

fn verify_pipeline_with(release: &str, scenario: &str, profile: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let env = format!("{F}/{release}/{scenario}/env");
    let mut args = vec!["--mode", "pipeline", "--profile", profile, "--env", &env];
    args.extend_from_slice(extra);
    verify_scenario(release, scenario, &args)
}

/// The what-if flags that give a fixture's session the system prompt its
/// CLI was run with (scenario.json's args; a transcript does not hold it):
/// `--system-prompt X` as a file in `dir`.
fn prompt_flags(release: &str, scenario: &str, dir: &std::path::Path) -> Vec<String> {
    let sc: Value =
        serde_json::from_slice(&std::fs::read(format!("{F}/{release}/{scenario}/scenario.json")).unwrap()).unwrap();
    let args: Vec<String> = sc["steps"][0]["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for w in args.windows(2) {
        match w[0].as_str() {
            "--append-system-prompt" => out.extend(["--append-system-prompt".to_string(), w[1].clone()]),
            "--system-prompt" => {
                let f = dir.join(format!("{release}-{scenario}-prompt.txt"));
                std::fs::write(&f, &w[1]).unwrap();
                out.extend(["--system-prompt-file".to_string(), f.to_string_lossy().into_owned()]);
            }
            _ => {}
        }
    }
    out
}

/// [wire_requests, wire_compared, wire_byte_equal, wire_unmatched, wire_side_calls].
fn counts(v: &Value) -> [u64; 5] {
    ["wire_requests", "wire_compared", "wire_byte_equal", "wire_unmatched", "wire_side_calls"]
        .map(|k| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}")))
}

/// A profile extracted from the captures of `scenarios` of `release` (one
/// --env each), written in `dir`.
fn extracted(release: &str, scenarios: &[&str], dir: &std::path::Path) -> String {
    let out = dir.join(format!("{release}-{}.json", scenarios.join("+")));
    let mut args: Vec<String> = vec!["profile".into(), "extract".into()];
    args.extend(scenarios.iter().map(|s| format!("{F}/{release}/{s}/wire.jsonl")));
    for s in scenarios {
        args.extend(["--env".into(), format!("{F}/{release}/{s}/env")]);
    }
    args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = crate::common::ctxasm(&refs);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.to_string_lossy().into_owned()
}

fn read_profile(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The captures a release's profile is extracted from (those run with a
/// custom or appended prompt show only how the prompt changes).
const PROFILE_FROM: &[&str] = &["hello", "bash-tool", "memory-files"];
/// 1.0.128's resumed session shows what its other captures cannot: a
/// `--continue` process sends the earlier prompts as blocks.
const RESUME: &str = "resume-multi-prompt";

/// Every fixture of `release`: exit 0 and exactly these counts, with one
/// profile from [`PROFILE_FROM`] and `variants`.
fn golden(release: &str, variants: &[&str], want: &[(&str, [u64; 5])]) {
    let tmp = tempfile::tempdir().unwrap();
    let from: Vec<&str> = PROFILE_FROM.iter().chain(variants).copied().collect();
    let profile = extracted(release, &from, tmp.path());
    for (scenario, counts_want) in want {
        let flags = prompt_flags(release, scenario, tmp.path());
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (code, v) = verify_pipeline_with(release, scenario, &profile, &flags);
        assert_eq!((code, counts(&v)), (Some(0), *counts_want), "{release}/{scenario}: {v}");
        assert_eq!(v["mismatches"], Value::Array(vec![]), "{release}/{scenario}");
    }
}

#[test]
fn issue_12_every_1_0_128_conversation_request_is_byte_equal() {
    // One main request per model call (none of 1.0.128's requests come
    // from a transcript's agent file); the side calls are the git-history
    // summary, the command-path extraction and the title generation.
    golden(
        "cc-1.0.128",
        &[RESUME, "append-system-prompt", "custom-system-prompt"],
        &[
            ("hello", [1, 1, 1, 0, 1]),
            ("bash-tool", [2, 2, 2, 0, 2]),
            // Three processes, the third without --allowedTools (so without
            // the prompt's allowed-tools line); the side calls of the
            // resumed processes carry session ids of their own.
            (RESUME, [4, 4, 4, 0, 7]),
            ("memory-files", [2, 2, 2, 0, 1]),
            ("append-system-prompt", [1, 1, 1, 0, 1]),
            ("custom-system-prompt", [1, 1, 1, 0, 1]),
        ],
    );
}

#[test]
fn issue_12_every_2_0_77_conversation_request_is_byte_equal() {
    // The main requests plus the three Warmup agent requests (hello's
    // agent files hold the prompt but no reply: still sent, still rebuilt).
    golden(
        "cc-2.0.77",
        &["skill", "append-system-prompt", "model-haiku"],
        &[
            ("hello", [4, 4, 4, 0, 1]),
            // `ctxasm profile capture`'s probe: every agent's Bash tool names
            // the session's model (Haiku 4.5), not the agent's own.
            ("model-haiku", [4, 4, 4, 0, 1]),
            ("bash-tool", [5, 5, 5, 0, 2]),
            ("memory-files", [5, 5, 5, 0, 1]),
            // The skill's command message merged without a newline; the
            // Skill tool of the main request and of two agents lists the
            // session's skill, the prompt has its skills line.
            ("skill", [4, 4, 4, 0, 1]),
            // One Warmup reached the wire before the process ended.
            ("append-system-prompt", [2, 2, 2, 0, 1]),
        ],
    );
}

#[test]
fn issue_12_profile_extract_detects_the_1_0_128_era() {
    let tmp = tempfile::tempdir().unwrap();
    let p = read_profile(&extracted("cc-1.0.128", PROFILE_FROM, tmp.path()));
    let l = &p["layout"];
    // `temperature` is the body's third key.
    assert_eq!(l["params_before_system"], serde_json::json!(["temperature"]), "{l}");
    assert_eq!((&l["user_context_message"], &l["message_breakpoints"]), (&Value::Bool(true), &Value::from(2)));
    assert_eq!((&p["billing"]["header_block"], &p["metadata"]), (&Value::Bool(false), &Value::from("legacy_user_id")));
    // The user context always carries # important-instruction-reminders;
    // the memory files are sent as written (bash-tool: CLAUDE.md's final
    // newline kept).
    let u = &p["user_context"];
    assert!(u["fixed_sections"][0].as_str().unwrap().starts_with("# important-instruction-reminders\n"), "{u}");
    assert_eq!(u["claude_md"], "# claudeMd\n{{claude_md}}");
    // Memory files as written: not trimmed, comments kept, no rules
    // directory (memory-files has a comment and a rule).
    assert_eq!(p["memory"], serde_json::json!({"trim": false, "strip_comments": false, "rules": false}));
    assert_eq!(u["current_date"], "");
    // --allowedTools (bash-tool's argv) is a line of the prompt.
    assert_eq!(p["allowed_tools"], "\nYou can use the following tools without requiring user approval: {{tools}}\n");
    let prompt = p["prompt"]["dynamic_sections"].as_array().unwrap();
    assert_eq!(prompt.iter().filter(|s| s.as_str().unwrap().contains("{{allowed_tools}}")).count(), 1);
    // The <env> block's values are the session's, not the capture's (a
    // session of another day gets its own date).
    let env_block = prompt.iter().filter_map(Value::as_str).find(|s| s.contains("<env>")).unwrap();
    for line in [
        "Working directory: {{cwd}}",
        "Is directory a git repo: {{is_git_yes_no}}",
        "Platform: {{platform}}",
        "OS Version: {{os_version}}",
        "Today's date: {{date}}",
    ] {
        assert!(env_block.contains(&format!("\n{line}\n")), "{line}: {env_block}");
    }
    assert!(p["git_status"]["text"].as_str().unwrap().contains("\nCurrent branch: {{branch}}\n"));
    assert!(p.get("agents").is_none(), "1.0.128 warms no agent up");
}

#[test]
fn issue_12_captures_run_with_a_custom_or_appended_prompt_teach_its_form() {
    // env.json's argv names the prompt; the capture shows the CLI prefix
    // that goes with it and how the appended text meets gitStatus.
    let tmp = tempfile::tempdir().unwrap();
    let from = ["hello", "append-system-prompt", "custom-system-prompt"];
    let p = read_profile(&extracted("cc-1.0.128", &from, tmp.path()));
    let c = &p["cli_prefix"];
    assert_eq!(c["sdk_with_append"], c["sdk"], "1.0.128: an appended prompt keeps the -p prefix");
    assert_eq!(
        c["sdk_with_custom"],
        "You are Claude Code, Anthropic's official CLI for Claude, running within the Claude Agent SDK."
    );
    assert_eq!(p["layout"]["append_context_joiner"], "\n");
    let q = read_profile(&extracted("cc-2.0.77", &["hello", "append-system-prompt"], tmp.path()));
    assert_eq!(q["cli_prefix"]["sdk_with_append"], c["sdk_with_custom"]);
    assert!(q["cli_prefix"].get("sdk_with_custom").is_none(), "2.0.77: a custom prompt keeps the -p prefix");
    assert_eq!(q["layout"]["append_context_joiner"], "\n");
    // Without a capture of its own, a profile cannot be made from them.
    let o = crate::common::ctxasm(&[
        "profile",
        "extract",
        &format!("{F}/cc-1.0.128/custom-system-prompt/wire.jsonl"),
        "--env",
        &format!("{F}/cc-1.0.128/custom-system-prompt/env"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no capture given without"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn issue_12_profile_extract_learns_the_2_0_77_warmup_agents() {
    // From hello alone: the three agents (Bash on sonnet with one tool,
    // Explore on haiku, Plan on sonnet), each prompt a template.
    let tmp = tempfile::tempdir().unwrap();
    let path = extracted("cc-2.0.77", &["hello"], tmp.path());
    let p = read_profile(&path);
    let agents = p["agents"].as_array().unwrap();
    let got: Vec<(&str, &str, usize, bool)> = agents
        .iter()
        .map(|a| {
            (
                a["model"].as_str().unwrap(),
                a["warmup"].as_str().unwrap(),
                a["tools"].as_array().unwrap().len(),
                a["git_status"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("claude-sonnet-4-5-20250929", "Warmup", 1, true),
            ("claude-haiku-4-5-20251001", "Warmup", 11, true),
            ("claude-sonnet-4-5-20250929", "Warmup", 11, true)
        ]
    );
    for a in agents {
        let t = a["prompt"].as_str().unwrap();
        assert!(t.contains("{{cwd}}") && t.contains("{{model_id}}") && !t.contains("gitStatus:"), "{t}");
    }
    let haiku = p["models"].as_array().unwrap().iter().find(|m| m["id"] == "claude-haiku-4-5-20251001").cloned();
    // With the skill capture: the Skill tool's list and the prompt's skills
    // line are variables; the merge keeps three agents.
    let q = read_profile(&extracted("cc-2.0.77", &["hello", "skill"], tmp.path()));
    assert_eq!(q["agents"].as_array().map(Vec::len), Some(3));
    assert!(q["tools"].to_string().contains("Available skills:\\n{{skills}}\\n"), "{}", q["tools"]);
    assert!(q["skills_note"].as_str().unwrap().starts_with("- /<skill-name>"));
    assert_eq!(q["layout"]["merge_without_newline"], true);
    assert_eq!(haiku.map(|m| m["knowledge_cutoff"].clone()), Some(Value::from("February 2025")));
    // hello's own profile rebuilds all four of its requests.
    let (code, v) = verify_pipeline("cc-2.0.77", "hello", &path);
    assert_eq!((code, counts(&v)), (Some(0), [4, 4, 4, 0, 1]), "{v}");
}

#[test]
fn issue_12_without_a_profile_the_captures_are_compared_not_called_clean() {
    // The built-in profile has no prompt text: every conversation request
    // is compared (or named unmatched) and differs; exit 1.
    let (code, v) = verify_scenario("cc-2.0.77", "hello", &["--mode", "pipeline"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(counts(&v), [4, 1, 0, 3, 1], "{v}");
    let kinds: Vec<&str> = v["mismatches"].as_array().unwrap().iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(kinds, ["wire", "wire_unmatched", "wire_unmatched", "wire_unmatched"]);
    let (code, v) = verify_scenario("cc-1.0.128", "hello", &["--mode", "pipeline"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(counts(&v), [1, 1, 0, 0, 1], "{v}");
    assert_eq!(v["mismatches"][0]["kind"], "wire");
}

#[test]
fn nothing_compared_is_not_clean() {
    // Records mode rebuilds nothing from a 1.0.128 transcript: the one
    // conversation request is unmatched, and the text says so.
    let (code, v) = verify_scenario("cc-1.0.128", "hello", &["--mode", "records"]);
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
    // Of that session, the request whose prompt a transcript read holds
    // ("hello") is unmatched; the git-history call is a side call.
    let out = crate::common::ctxasm(&[
        "verify",
        "tests/fixtures/cc-2.1.328/hello/transcripts",
        "--wire",
        "tests/fixtures/cc-1.0.128/hello/wire.jsonl",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((out.status.code(), counts(&v)), (Some(1), [1, 0, 0, 1, 1]), "{v}");
}

#[test]
fn issue_12_profiles_say_how_each_release_sends_billing_and_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let p = read_profile(&extracted("cc-2.0.77", &["hello"], tmp.path()));
    assert_eq!((&p["billing"]["header_block"], &p["metadata"]), (&Value::Bool(false), &Value::from("legacy_user_id")));
    let q = read_profile(&extracted("cc-2.1.88", &["hello"], tmp.path()));
    assert_eq!((&q["billing"]["header_block"], &q["metadata"]), (&Value::Bool(true), &Value::from("json_user_id")));
    assert!(q.get("agents").is_none() && q["layout"].is_string(), "2.1.88 keeps the seed layout: {}", q["layout"]);
}

#[test]
fn issue_12_2_0_77_bash_tool_shows_what_hello_cannot() {
    // The claudeMd reminder prepended without a currentDate section,
    // gitStatus as the prompt's last section with 2.0.77's empty main
    // branch, a breakpoint on each of the last two messages.
    let tmp = tempfile::tempdir().unwrap();
    let profile = extracted("cc-2.0.77", &["bash-tool"], tmp.path());
    let p = read_profile(&profile);
    let l = &p["layout"];
    assert_eq!(
        (&l["system_context_in_prompt"], &l["user_context_message"], &l["message_breakpoints"]),
        (&Value::Bool(true), &Value::Bool(true), &Value::from(2)),
        "{l}"
    );
    assert_eq!(p["user_context"]["current_date"], "");
    // CLAUDE.md as written (its final newline kept); no comment shown, so
    // none assumed kept.
    assert_eq!(p["memory"], serde_json::json!({"trim": false, "strip_comments": true, "rules": true}));
    let (code, v) = verify_pipeline("cc-2.0.77", "bash-tool", &profile);
    assert_eq!((code, counts(&v)), (Some(0), [5, 5, 5, 0, 2]), "{v}");
}

#[test]
fn issue_12_one_profile_is_one_release() {
    let f = "tests/fixtures/cc-2.0.77";
    let o = crate::common::ctxasm(&[
        "profile",
        "extract",
        &format!("{f}/hello/wire.jsonl"),
        "tests/fixtures/cc-1.0.128/hello/wire.jsonl",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("one profile is one release"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = crate::common::ctxasm(&[
        "profile",
        "extract",
        &format!("{f}/hello/wire.jsonl"),
        &format!("{f}/bash-tool/wire.jsonl"),
        "--env",
        &format!("{f}/hello/env"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one --env per capture"));
}
