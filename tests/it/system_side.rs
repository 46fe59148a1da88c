//! The system side of request assembly (environment, profile, contexts,
//! effective system prompt, system blocks) against the real captures of
//! Claude Code 2.1.88 (`tests/fixtures/cc-2.1.88/<scenario>/`) and 2.1.328.
//!
//! The profile (prompt text, tools) is never in the repository: it is
//! extracted at test time from `cc-2.1.88/hello/wire.jsonl` + its `env/`,
//! then every request of every scenario is rebuilt from it and compared
//! with the wire, byte for byte.

use crate::common::scenarios;
use ctxasm::assemble::extract::extract;
use ctxasm::assemble::pipeline::contexts::{UserContext, contexts, render_user_context, skills_listing};
use ctxasm::assemble::pipeline::system_blocks::{self, SystemBlock, billing_header, system_blocks};
use ctxasm::assemble::pipeline::system_prompt::{DYNAMIC_BOUNDARY, PromptChoice, cli_prefix, effective_system_prompt};
use ctxasm::env::{EnvError, SessionEnv};
use ctxasm::profile::{Profile, ProfileError, SuffixText};
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIX_88: &str = "tests/fixtures/cc-2.1.88";
const FIX_328: &str = "tests/fixtures/cc-2.1.328";

/// The `/v1/messages` requests of a capture: (parsed line, raw body bytes).
fn requests(dir: &Path) -> Vec<(Value, Vec<u8>)> {
    use base64::Engine;
    std::fs::read_to_string(dir.join("wire.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["path"].as_str().unwrap_or("").starts_with("/v1/messages") && v["body"].get("messages").is_some())
        .map(|v| {
            let raw = base64::engine::general_purpose::STANDARD.decode(v["raw_b64"].as_str().unwrap()).unwrap();
            (v, raw)
        })
        .collect()
}

/// The date of the transcript's first timestamp (what the caller fills in).
fn first_date(dir: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir.join("transcripts"))
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().to_path_buf())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let text = std::fs::read_to_string(files.first()?).ok()?;
    text.lines().find_map(|l| {
        let v: Value = serde_json::from_str(l).ok()?;
        Some(v.get("timestamp")?.as_str()?.get(..10)?.to_string())
    })
}

fn session_env(dir: &Path) -> SessionEnv {
    let mut env = SessionEnv::from_dir(&dir.join("env")).unwrap();
    env.date = first_date(dir);
    env
}

/// The prompt flags of the scenario's CLI steps.
fn choice(dir: &Path) -> PromptChoice {
    let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("scenario.json")).unwrap()).unwrap();
    let args: Vec<String> = s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|st| st["args"].as_array().cloned().unwrap_or_default())
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    PromptChoice::from_args(&args)
}

fn profile_88() -> Profile {
    let hello = Path::new(FIX_88).join("hello");
    extract(&hello.join("wire.jsonl"), Some(&session_env(&hello))).unwrap()
}

fn first_message_texts(body: &Value) -> Vec<String> {
    match &body["messages"][0]["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|b| b["text"].as_str().map(str::to_string)).collect(),
        _ => vec![],
    }
}

/// The `# claudeMd` value of a captured user-context reminder (the memory
/// stage is another module's job).
fn claude_md_of(reminder: &str) -> Option<String> {
    let start = reminder.find("\n# claudeMd\n")? + "\n# claudeMd\n".len();
    let end = reminder.find("\n# currentDate\n")?;
    Some(reminder[start..end].to_string())
}

/// Serialized `"system":[…]` as JSON.stringify writes it (serde_json
/// escapes the same way for these texts).
fn system_bytes(blocks: &[SystemBlock]) -> Vec<u8> {
    let mut out = b"\"system\":".to_vec();
    out.extend(serde_json::to_vec(&system_blocks::to_json(blocks)).unwrap());
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Everything the system side builds for one captured request.
fn rebuild(profile: &Profile, env: &SessionEnv, choice: &PromptChoice, body: &Value) -> (Vec<SystemBlock>, String) {
    let texts = first_message_texts(body);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let header = billing_header(profile, profile.billing.suffix_text.pick(&refs));
    let reminder = texts.iter().find(|t| t.contains("\n# currentDate\n")).cloned().unwrap_or_default();
    let (user, sys) = contexts(profile, env, claude_md_of(&reminder));
    let model = body["model"].as_str().unwrap();
    let sections = effective_system_prompt(profile, env, model, choice, &sys);
    let prefix = cli_prefix(profile, true, choice.append.is_some());
    (system_blocks(&header, prefix, &sections, profile), render_user_context(profile, &user))
}

#[test]
fn every_2_1_88_request_system_side_is_byte_exact() {
    let profile = profile_88();
    assert_eq!(profile.layout, Profile::load("seed").unwrap().layout);
    assert_eq!(profile.version, "2.1.88");
    assert_eq!(profile.billing.suffix_text, SuffixText::FirstText);
    assert_eq!(profile.billing.cch.as_deref(), Some(" cch=00000;"));
    let (mut requests_checked, mut system_equal, mut reminders, mut listings) = (0, 0, 0, 0);
    for dir in scenarios(FIX_88) {
        let env = session_env(&dir);
        let choice = choice(&dir);
        for (n, (line, raw)) in requests(&dir).iter().enumerate() {
            let body = &line["body"];
            let what = format!("{} request {n}", dir.display());
            let (blocks, user_context) = rebuild(&profile, &env, &choice, body);
            requests_checked += 1;
            // The system array: same JSON, each text byte-equal, and its
            // serialization found as is in the raw body.
            let wire = body["system"].as_array().unwrap();
            assert_eq!(blocks.len(), wire.len(), "{what}");
            for (b, w) in blocks.iter().zip(wire) {
                assert_eq!(b.text.as_bytes(), w["text"].as_str().unwrap().as_bytes(), "{what}");
            }
            assert_eq!(system_blocks::to_json(&blocks), body["system"], "{what}");
            assert!(contains(raw, &system_bytes(&blocks)), "{what}: system bytes not in the raw body");
            system_equal += 1;
            // The user-context reminder.
            let texts = first_message_texts(body);
            let captured = texts.iter().find(|t| t.contains("\n# currentDate\n")).unwrap();
            assert_eq!(&user_context, captured, "{what}");
            reminders += 1;
            // The skills listing of each session's first request.
            if n == 0 {
                assert_eq!(skills_listing(&profile, &env).as_ref(), texts.first(), "{what}");
                listings += 1;
            }
            // Tools and params (the params in wire order, right after metadata).
            // The tools name the session's month (`{{month_year}}`).
            let day = captured.split("Today's date is ").nth(1).map(|s| &s[..10]);
            assert_eq!(Value::Array(profile.render_tools(day)), body["tools"], "{what}");
            let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
            let after_metadata: Vec<&str> = keys
                .iter()
                .skip_while(|k| k.as_str() != "metadata")
                .skip(1)
                .map(|k| k.as_str())
                .filter(|k| *k != "stream")
                .collect();
            let profile_keys: Vec<&str> = profile.params.keys().map(String::as_str).collect();
            assert_eq!(after_metadata, profile_keys, "{what}");
            for (k, v) in &profile.params {
                assert_eq!(&body[k], v, "{what}: {k}");
            }
            let betas: Vec<&str> = line["headers"]["anthropic-beta"].as_str().unwrap().split(',').collect();
            assert_eq!(betas, profile.betas, "{what}");
        }
    }
    eprintln!(
        "2.1.88: {system_equal}/{requests_checked} system arrays byte-exact, {reminders} user-context reminders, \
         {listings} skills listings"
    );
    assert_eq!((requests_checked, system_equal, reminders, listings), (29, 29, 29, 14));
}

#[test]
fn extraction_without_env_infers_the_same_profile() {
    let with_env = profile_88();
    let hello = Path::new(FIX_88).join("hello");
    let without = extract(&hello.join("wire.jsonl"), None).unwrap();
    assert_eq!(without, with_env);
    // The skill scenario's listing holds the project skill `greet`: with its
    // env, extraction leaves it out of the built-in lines.
    let skill = Path::new(FIX_88).join("skill");
    let from_skill = extract(&skill.join("wire.jsonl"), Some(&session_env(&skill))).unwrap();
    assert_eq!(from_skill.skills, with_env.skills);
    assert_eq!(from_skill.prompt, with_env.prompt);
    // The profile writes and reads back.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cc-2.1.88.json");
    with_env.save(&path).unwrap();
    assert_eq!(Profile::load(path.to_str().unwrap()).unwrap(), with_env);
}

#[test]
fn the_extracted_profile_is_a_template_not_the_session() {
    let p = profile_88();
    let dynamic = p.prompt.dynamic_sections.join("\n\n");
    for var in ["{{cwd}}", "{{home}}", "{{project_slug}}", "{{is_git}}", "{{platform}}", "{{os_version}}", "{{shell}}"]
    {
        assert!(dynamic.contains(var), "{var}");
    }
    assert!(dynamic.contains("model named {{model_name}}. The exact model ID is {{model_id}}."));
    assert!(dynamic.contains("knowledge cutoff is {{knowledge_cutoff}}."));
    // The family line keeps its literal ids.
    assert!(dynamic.contains("Sonnet 4.6: 'claude-sonnet-4-6'"));
    assert!(!dynamic.contains("/home/dev") && !dynamic.contains("gitStatus:"));
    let static_text = p.prompt.static_sections.join("\n\n");
    assert!(!static_text.contains("{{") || !static_text.contains("{{cwd}}"));
    let git = p.git_status.as_ref().unwrap();
    assert!(
        git.text.contains("Current branch: {{branch}}") && git.text.contains("Recent commits:\n{{recent_commits}}")
    );
    assert_eq!(p.user_context.as_ref().unwrap().current_date, "# currentDate\nToday's date is {{date}}.");
    assert_eq!(p.skills.as_ref().unwrap().description_max, 250);
    let names: Vec<(&str, &str)> = p.models.iter().map(|m| (m.id.as_str(), m.name.as_str())).collect();
    assert!(names.contains(&("claude-sonnet-4-6", "Sonnet 4.6")) && names.contains(&("claude-opus-4-6", "Opus 4.6")));
}

#[test]
fn what_if_append_changes_only_the_prefix_and_the_dynamic_block() {
    let profile = profile_88();
    let hello = Path::new(FIX_88).join("hello");
    let env = session_env(&hello);
    let (line, _) = requests(&hello).remove(0);
    let body = &line["body"];
    let (base, _) = rebuild(&profile, &env, &PromptChoice::default(), body);
    let append = PromptChoice { append: Some("Always answer in French.".into()), ..PromptChoice::default() };
    let (with, _) = rebuild(&profile, &env, &append, body);
    assert_eq!(base.len(), 4);
    assert_eq!(with.len(), 4);
    assert_eq!(with[0], base[0]);
    assert_eq!(with[2], base[2]);
    assert_eq!(
        with[1].text,
        "You are Claude Code, Anthropic's official CLI for Claude, running within the Claude Agent SDK."
    );
    assert_ne!(with[1], base[1]);
    let at = base[3].text.rfind("\n\ngitStatus: ").unwrap();
    let expected = format!("{}\n\nAlways answer in French.{}", &base[3].text[..at], &base[3].text[at..]);
    assert_eq!(with[3].text, expected);
    // A custom prompt: three blocks, no gitStatus anywhere.
    let custom = PromptChoice { custom: Some("X".into()), ..PromptChoice::default() };
    let (c, _) = rebuild(&profile, &env, &custom, body);
    assert_eq!(c.iter().map(|b| b.text.as_str()).collect::<Vec<_>>()[1..], [base[1].text.as_str(), "X"]);
    // A model outside the table is named by its id, without a cutoff line.
    let mut other = body.clone();
    other["model"] = Value::from("claude-test-9");
    let (m, _) = rebuild(&profile, &env, &PromptChoice::default(), &other);
    assert!(m[3].text.contains("model named claude-test-9. The exact model ID is claude-test-9."));
    assert!(!m[3].text.contains("knowledge cutoff"));
    // The marker is never sent.
    assert!(base.iter().all(|b| !b.text.contains(DYNAMIC_BOUNDARY)));
}

#[test]
fn extract_a_2_1_328_capture() {
    let hello = Path::new(FIX_328).join("hello");
    let env = session_env(&hello);
    let p = extract(&hello.join("wire.jsonl"), Some(&env)).unwrap();
    assert_eq!(p.layout, Profile::load("cc-2.1.328").unwrap().layout);
    assert_eq!(p.version, "2.1.328");
    assert_eq!(p.billing.cch, None);
    assert_eq!(p.billing.suffix_text, SuffixText::FirstNonReminder);
    let (line, _) = requests(&hello).remove(0);
    let body = &line["body"];
    assert_eq!(Value::Array(p.tools.clone()), body["tools"]);
    for k in ["max_tokens", "thinking", "context_management", "output_config"] {
        assert_eq!(p.params[k], body[k], "{k}");
    }
    assert_eq!(p.params.keys().collect::<Vec<_>>(), ["max_tokens", "thinking", "context_management", "output_config"]);
    let betas: Vec<&str> = line["headers"]["anthropic-beta"].as_str().unwrap().split(',').collect();
    assert_eq!(p.betas, betas);
    assert!(p.models.iter().any(|m| m.id == "claude-opus-5-5" && m.knowledge_cutoff.as_deref() == Some("June 2026")));
    // The same from the transcript's recorded request (no billing header
    // there, no first message: everything else is equal).
    let transcript = std::fs::read_dir(hello.join("transcripts/-home-dev-projects-hello"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let t = extract(&transcript, Some(&env)).unwrap();
    assert_eq!(
        (&t.layout, &t.tools, &t.params, &t.betas, &t.prompt),
        (&p.layout, &p.tools, &p.params, &p.betas, &p.prompt)
    );
    // Every 2.1.328 request of the same model is rebuilt from it.
    let (mut same, mut total) = (0, 0);
    for dir in scenarios(FIX_328) {
        let env = session_env(&dir);
        let choice = choice(&dir);
        for (line, raw) in requests(&dir) {
            let body = &line["body"];
            total += 1;
            let (blocks, _) = rebuild(&p, &env, &choice, body);
            if system_blocks::to_json(&blocks) == body["system"] && contains(&raw, &system_bytes(&blocks)) {
                same += 1;
            } else {
                // Only the other model's prompt differs (one paragraph fewer).
                assert_eq!(dir.file_name().unwrap(), "model-sonnet", "{}", dir.display());
            }
        }
    }
    eprintln!("2.1.328: {same}/{total} system arrays byte-exact from a profile extracted from hello");
    assert_eq!((same, total), (28, 29));
}

#[test]
fn errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = SessionEnv::from_dir(dir.path()).unwrap_err();
    assert!(matches!(e, EnvError::Io { .. }));
    assert!(e.to_string().contains(&dir.path().join("env.json").display().to_string()), "{e}");
    std::fs::write(dir.path().join("env.json"), "{ not json").unwrap();
    let e = SessionEnv::from_dir(dir.path()).unwrap_err();
    assert!(matches!(e, EnvError::Json { .. }) && e.to_string().contains("env.json"), "{e}");
    let wire = dir.path().join("wire.jsonl");
    std::fs::write(&wire, "{\"path\": \"/v1/messages\", \"body\": {\"messages\": []}}\n{ bad\n").unwrap();
    let e = extract(&wire, None).unwrap_err();
    assert!(matches!(e, ProfileError::Json { .. }) && e.to_string().contains("wire.jsonl"), "{e}");
    std::fs::write(&wire, "{\"path\": \"/v1/messages\", \"body\": {\"messages\": []}}\n").unwrap();
    let e = extract(&wire, None).unwrap_err();
    assert!(matches!(e, ProfileError::Extract { .. }) && e.to_string().contains("wire.jsonl"), "{e}");
    // A capture run with --append-system-prompt is refused.
    let append = Path::new(FIX_88).join("append-system-prompt");
    let e = extract(&append.join("wire.jsonl"), Some(&session_env(&append))).unwrap_err();
    assert!(e.to_string().contains("append-system-prompt"), "{e}");
    assert!(matches!(Profile::load("nope"), Err(ProfileError::Unknown(_))));
    // The user context renders without a claudeMd section when there is none.
    let p = profile_88();
    let u = render_user_context(&p, &UserContext { claude_md: None, current_date: "2026-01-02".into() });
    assert!(u.contains("# currentDate\nToday's date is 2026-01-02.") && !u.contains("claudeMd"));
}
