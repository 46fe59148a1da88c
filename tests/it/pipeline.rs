//! The context-assembly pipeline against the real wire captures: every
//! request rebuilt from the conversation (records ignored) must equal the
//! bytes the CLI sent.

use crate::common::{captured, first_diff, scenarios};
use ctxasm::assemble::pipeline::{Extras, Plan, SystemSource, assemble_pipeline};
use ctxasm::assemble::pipeline::{Overrides, Setup};
use ctxasm::assemble::records::RecordOptions;
use ctxasm::assemble::{Assembler, Mode};
use ctxasm::corpus::{RunOptions, for_each_session_of};
use ctxasm::env::SessionEnv;
use ctxasm::input::discover::discover;
use ctxasm::write::body::{SegmentCache, write_body};
use serde_json::Value;
use std::path::Path;

#[test]
fn cc_2_1_328_pipeline_is_byte_equal_to_the_wire() {
    let total = assert_pipeline_byte_equal("tests/fixtures/cc-2.1.328", |dir| Setup {
        profile: ctxasm::profile::Profile::load("cc-2.1.328").unwrap(),
        env: Some(SessionEnv::from_dir(&dir.join("env")).unwrap()),
        overrides: Overrides::default(),
    });
    assert_eq!(total, 29);
}

/// Assemble every scenario under `fix` in pipeline mode with the prep
/// `prep_of` gives for it, assert every request equals the wire bytes;
/// returns how many were compared.
fn assert_pipeline_byte_equal(fix: &str, prep_of: impl Fn(&Path) -> Setup) -> usize {
    let mut total = 0;
    let mut failures = Vec::new();
    for dir in scenarios(fix) {
        let (device, raws) = captured(&dir);
        let a = Assembler {
            mode: Mode::Pipeline,
            records: RecordOptions { device_id: device, ..RecordOptions::default() },
            chooser: None,
            pipeline: Some(prep_of(&dir)),
        };
        let ours = assemble_all(&dir, &a);
        if ours.len() != raws.len() {
            failures.push(format!("{dir:?}: {} requests, wire has {}", ours.len(), raws.len()));
            continue;
        }
        for (n, (a, b)) in ours.iter().zip(&raws).enumerate() {
            total += 1;
            if a != b {
                failures.push(format!("{dir:?} request {n}: {}", first_diff(a, b)));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
    total
}

/// The message side of the 2.1.88 captures, with the profile-rendered
/// pieces (skills listing, user context, rule reminders) taken from the
/// wire: checks projection, reordering, merging and breakpoints alone.
#[test]
fn cc_2_1_88_messages_with_pieces_from_the_wire() {
    let mut failures = Vec::new();
    let mut total = 0;
    for dir in scenarios("tests/fixtures/cc-2.1.88") {
        let wire: Vec<Value> = std::fs::read_to_string(dir.join("wire.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["body"].clone())
            .filter(|b| b.get("messages").is_some())
            .collect();
        let first = &wire[0]["messages"][0]["content"];
        let strip = |v: &Value| {
            let s = v.as_str().unwrap();
            s.strip_suffix("\n").unwrap_or_else(|| panic!("{dir:?}: {s}")).to_string()
        };
        let mut extras = Extras {
            per_process: Some(strip(&first[0]["text"])),
            user_context: Some(strip(&first[1]["text"])),
            ..Extras::default()
        };
        if dir.ends_with("long-session") {
            let c = wire[5]["messages"][10]["content"][0]["content"].as_str().unwrap();
            let at = c.find("\n\n<system-reminder>").unwrap();
            extras.todo_reminder = Some((c[at + 2..].to_string(), 10));
        }
        if dir.ends_with("memory-files") {
            let c = wire[1]["messages"][2]["content"][0]["content"].as_str().unwrap();
            let at = c.find("\n\n<system-reminder>\nContents of").unwrap();
            extras.after_read.insert("6600291d-4e9d-4866-bd27-3c040ca16154".into(), vec![c[at + 2..].to_string()]);
        }
        let layout = Plan {
            attachments_into_tool_result: true,
            system_message_params: vec![],
            system: SystemSource::Rendered { blocks: vec![], tools: None },
            ..Plan::cc_2_1_328()
        };
        let disc = discover(&[dir.join("transcripts")]);
        let results = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |bump, s| {
            let out = assemble_pipeline(bump, s, &layout, &extras, &RecordOptions::default());
            out.requests
                .iter()
                .map(|r| {
                    Value::Array(
                        r.body.messages.iter().map(|m| serde_json::from_str(&m.to_compact_string()).unwrap()).collect(),
                    )
                })
                .collect::<Vec<Value>>()
        });
        let ours: Vec<Value> = results.into_iter().flat_map(Result::unwrap).collect();
        assert_eq!(ours.len(), wire.len(), "{dir:?}");
        for (n, (a, w)) in ours.iter().zip(&wire).enumerate() {
            total += 1;
            if *a != w["messages"] {
                let (a, b) = (a.as_array().unwrap(), w["messages"].as_array().unwrap());
                let k = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                failures.push(format!(
                    "{dir:?} request {n}, message {k} ({} vs {} messages):\n ours {}\n wire {}",
                    a.len(),
                    b.len(),
                    a.get(k).map_or(String::new(), |m| m.to_string()),
                    b.get(k).map_or(String::new(), |m| m.to_string())
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
    assert_eq!(total, 29);
}

/// The assembled requests of `dir`'s transcripts, serialized.
fn assemble_all(dir: &Path, a: &ctxasm::assemble::Assembler) -> Vec<Vec<u8>> {
    let disc = discover(&[dir.join("transcripts")]);
    let results = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |bump, s| {
        let out = ctxasm::assemble::assemble_session(bump, s, a);
        assert!(out.diagnostics.is_empty(), "{dir:?}: {:?}", out.diagnostics);
        let mut cache = SegmentCache::default();
        out.requests
            .iter()
            .map(|r| {
                let mut b = Vec::new();
                write_body(&mut b, &r.body, &mut cache);
                b
            })
            .collect::<Vec<_>>()
    });
    results.into_iter().flat_map(Result::unwrap).collect()
}

/// What-if flags a scenario's CLI arguments correspond to.
fn overrides_of(dir: &Path) -> Overrides {
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("scenario.json")).unwrap()).unwrap();
    let mut o = Overrides::default();
    for step in sc["steps"].as_array().unwrap() {
        let args: Vec<&str> =
            step["args"].as_array().map_or(vec![], |a| a.iter().map(|v| v.as_str().unwrap()).collect());
        for w in args.windows(2) {
            match w[0] {
                "--system-prompt" => o.system_prompt = Some(w[1].to_string()),
                "--append-system-prompt" => o.append_system_prompt = Some(w[1].to_string()),
                _ => {}
            }
        }
    }
    o
}

#[test]
fn cc_2_1_88_pipeline_with_a_profile_extracted_from_hello_is_byte_equal() {
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let hello_env = SessionEnv::from_dir(&fix.join("hello/env")).unwrap();
    let profile = ctxasm::assemble::extract::extract(&fix.join("hello/wire.jsonl"), Some(&hello_env)).unwrap();
    let total = assert_pipeline_byte_equal("tests/fixtures/cc-2.1.88", |dir| Setup {
        profile: profile.clone(),
        env: Some(SessionEnv::from_dir(&dir.join("env")).unwrap()),
        overrides: overrides_of(dir),
    });
    assert_eq!(total, 29);
}

/// The 2.1.88 WebSearch description names the current month: the extracted
/// profile holds it as `{{month_year}}`, renders the capture's month back,
/// and another session's month when the date changes (a capture made on
/// 2026-12-01 verified byte-equal with the profile of this November one).
#[test]
fn extracted_tools_follow_the_session_month() {
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let hello_env = SessionEnv::from_dir(&fix.join("hello/env")).unwrap();
    let profile = ctxasm::assemble::extract::extract(&fix.join("hello/wire.jsonl"), Some(&hello_env)).unwrap();
    let line = std::fs::read_to_string(fix.join("hello/wire.jsonl")).unwrap();
    let wire: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let captured = wire["body"]["tools"].as_array().unwrap();
    let templated: Vec<usize> =
        (0..profile.tools.len()).filter(|&i| profile.tools[i].to_string().contains("{{month_year}}")).collect();
    assert_eq!(templated.len(), 1, "one tool (WebSearch) names the month");
    assert_eq!(profile.tools[templated[0]]["name"], "WebSearch");
    let date = wire["body"]["messages"][0].to_string();
    let day = date.split("Today's date is ").nth(1).map(|s| &s[..10]).unwrap();
    assert_eq!(&profile.render_tools(Some(day)), captured);
    let december = profile.render_tools(Some("2026-12-01"));
    let text = december[templated[0]]["description"].as_str().unwrap();
    assert!(text.contains("The current month is December 2026."), "{text}");
}

/// Parsed bodies of `dir`'s sessions assembled by `a`.
fn bodies(dir: &Path, a: &Assembler) -> Vec<Value> {
    assemble_all(dir, a).iter().map(|b| serde_json::from_slice(b).unwrap()).collect()
}

fn seed_assembler(profile: &ctxasm::profile::Profile, env: &Path, overrides: Overrides) -> Assembler {
    Assembler {
        mode: Mode::Pipeline,
        records: RecordOptions::default(),
        chooser: None,
        pipeline: Some(Setup { profile: profile.clone(), env: Some(SessionEnv::from_dir(env).unwrap()), overrides }),
    }
}

/// What-if `--append-system-prompt X` on an interactive session (the 2.1.88
/// hello transcript with `entrypoint: cli`): the request differs from the
/// original in exactly the system block that ends the prompt, which gains
/// `\n\nX` before the appended gitStatus section.
#[test]
fn what_if_append_system_prompt_changes_exactly_that_block() {
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let hello_env = SessionEnv::from_dir(&fix.join("hello/env")).unwrap();
    let profile = ctxasm::assemble::extract::extract(&fix.join("hello/wire.jsonl"), Some(&hello_env)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let src = fix.join("hello/transcripts/-home-dev-projects-hello/336e397f-d147-4ef4-9bd5-78a994ebedcf.jsonl");
    let text = std::fs::read_to_string(src).unwrap().replace("\"entrypoint\":\"sdk-cli\"", "\"entrypoint\":\"cli\"");
    std::fs::create_dir_all(tmp.path().join("transcripts")).unwrap();
    std::fs::write(tmp.path().join("transcripts/s.jsonl"), text).unwrap();
    let env = fix.join("hello/env");
    let base = bodies(tmp.path(), &seed_assembler(&profile, &env, Overrides::default()));
    let append = Overrides { append_system_prompt: Some("Always answer in French.".into()), ..Overrides::default() };
    let changed = bodies(tmp.path(), &seed_assembler(&profile, &env, append));
    assert_eq!((base.len(), changed.len()), (1, 1));
    let (b, c) = (&base[0], &changed[0]);
    for key in ["model", "messages", "tools", "metadata", "max_tokens", "thinking", "output_config", "stream"] {
        assert_eq!(b[key], c[key], "{key}");
    }
    let (bs, cs) = (b["system"].as_array().unwrap(), c["system"].as_array().unwrap());
    assert_eq!(bs.len(), cs.len());
    let differing: Vec<usize> = (0..bs.len()).filter(|&i| bs[i] != cs[i]).collect();
    assert_eq!(differing, vec![bs.len() - 1]);
    let (bt, ct) = (bs[bs.len() - 1]["text"].as_str().unwrap(), cs[bs.len() - 1]["text"].as_str().unwrap());
    let at = bt.find("\n\ngitStatus: ").unwrap();
    assert_eq!(ct, format!("{}\n\nAlways answer in French.{}", &bt[..at], &bt[at..]));
    // The interactive prefix is kept (an sdk session would switch to the
    // "running within the Claude Agent SDK" prefix, as the capture shows).
    assert_eq!(cs[1]["text"], "You are Claude Code, Anthropic's official CLI for Claude.");

    // And on the captured sdk session it reproduces the append capture's
    // system prompt: prefix + dynamic block, like the real CLI.
    let append_dir = fix.join("append-system-prompt");
    let wire: Value =
        serde_json::from_str(std::fs::read_to_string(append_dir.join("wire.jsonl")).unwrap().lines().next().unwrap())
            .unwrap();
    let o = Overrides { append_system_prompt: Some("Always answer in French.".into()), ..Overrides::default() };
    let got = bodies(&append_dir, &seed_assembler(&profile, &append_dir.join("env"), o));
    assert_eq!(got[0]["system"], wire["body"]["system"]);
}

/// The other what-if flags change what they name and nothing else.
#[test]
fn what_if_model_effort_ttl_and_tools() {
    let dir = Path::new("tests/fixtures/cc-2.1.328/bash-tool");
    let prep = |o: Overrides| Assembler {
        mode: Mode::Pipeline,
        records: RecordOptions::default(),
        chooser: None,
        pipeline: Some(Setup {
            profile: ctxasm::profile::Profile::load("cc-2.1.328").unwrap(),
            env: None,
            overrides: o,
        }),
    };
    let base = bodies(dir, &prep(Overrides::default()));
    let tools = vec![serde_json::json!({"name": "Bash", "description": "run", "input_schema": {"type": "object"}})];
    let o = Overrides {
        model: Some("claude-haiku-4-5-20251001".into()),
        effort: Some("low".into()),
        cache_ttl: Some("1h".into()),
        tools: Some(tools.clone()),
        ..Overrides::default()
    };
    let changed = bodies(dir, &prep(o));
    assert_eq!(base.len(), 2);
    for (b, c) in base.iter().zip(&changed) {
        assert_eq!(c["model"], "claude-haiku-4-5-20251001");
        assert_eq!(c["output_config"], serde_json::json!({"effort": "low"}));
        assert_eq!(c["tools"], Value::Array(tools.clone()));
        // Every cache_control gets the TTL, the system turn carries the
        // new effort; the text is unchanged.
        let strip = |v: &Value| {
            v.to_string().replace(r#","ttl":"1h""#, "").replace(r#""effort":"low""#, r#""effort":"medium""#)
        };
        assert_eq!(strip(&c["messages"]), b["messages"].to_string());
        assert_eq!(strip(&c["system"]), b["system"].to_string());
        assert_eq!(c["system"].to_string().matches(r#""ttl":"1h""#).count(), 2);
        assert_eq!(c["messages"].to_string().matches(r#""ttl":"1h""#).count(), 1);
        for key in ["metadata", "max_tokens", "thinking", "context_management", "stream"] {
            assert_eq!(b[key], c[key], "{key}");
        }
    }
}

/// The command line: `profile extract`, then `verify --mode pipeline` with
/// the extracted profile and a scenario's environment; bad flags fail with
/// a message naming the problem.
#[test]
fn cli_profile_extract_and_verify_pipeline() {
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("p.json");
    let out = crate::common::bin()
        .args(["profile", "extract"])
        .arg(fix.join("hello/wire.jsonl"))
        .arg("--env")
        .arg(fix.join("hello/env"))
        .arg("-o")
        .arg(&profile)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: Value = serde_json::from_slice(&std::fs::read(&profile).unwrap()).unwrap();
    assert_eq!((p["layout"].as_str(), p["tools"].as_array().map(Vec::len)), (Some("seed"), Some(22)));
    let dir = fix.join("memory-files");
    let out = crate::common::bin()
        .args(["verify", "--mode", "pipeline", "--device-id", "wire", "--profile"])
        .arg(&profile)
        .arg("--env")
        .arg(dir.join("env"))
        .arg("--wire")
        .arg(dir.join("wire.jsonl"))
        .arg(dir.join("transcripts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("wire compared            2   byte-equal 2   JSON-equal 2"), "{stdout}");
    // Errors name what is wrong.
    let bad = |args: &[&str], want: &str| {
        let out = crate::common::bin().args(args).arg(dir.join("transcripts")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    };
    bad(&["assemble", "--mode", "pipeline", "--profile", "nope"], "nope");
    bad(&["assemble", "--mode", "pipeline", "--cache-ttl", "2h"], "--cache-ttl must be 5m or 1h");
    bad(&["assemble", "--mode", "records", "--append-system-prompt", "x"], "apply to --mode pipeline or auto");
    bad(&["assemble", "--mode", "pipeline", "--env", "/nonexistent/env"], "/nonexistent/env");
}

/// A memory include that leaves the snapshot's roots (a transcript and its
/// environment are untrusted input) is refused with a `memory_refused`
/// diagnostic naming it; the rest of the memory is still sent.
#[test]
fn memory_include_outside_the_roots_is_refused_with_a_diagnostic() {
    let fix = Path::new("tests/fixtures/cc-2.1.88");
    let hello_env = SessionEnv::from_dir(&fix.join("hello/env")).unwrap();
    let profile = ctxasm::assemble::extract::extract(&fix.join("hello/wire.jsonl"), Some(&hello_env)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let env = tmp.path().join("env");
    std::fs::create_dir_all(env.join("project")).unwrap();
    std::fs::copy(fix.join("hello/env/env.json"), env.join("env.json")).unwrap();
    std::fs::write(env.join("project/CLAUDE.md"), "Be brief.\nSee @/etc/passwd and @../../outside.md\n").unwrap();
    let a = seed_assembler(&profile, &env, Overrides::default());
    let disc = discover(&[fix.join("hello/transcripts")]);
    let results = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |bump, s| {
        let out = ctxasm::assemble::assemble_session(bump, s, &a);
        let diags: Vec<(ctxasm::diag::DiagKind, String)> =
            out.diagnostics.iter().map(|d| (d.kind, d.message.clone())).collect();
        let first = out.requests[0].body.messages.first().expect("a message").to_compact_string();
        (diags, first)
    });
    let (diags, first) = results.into_iter().next().unwrap().unwrap();
    assert_eq!(diags.len(), 2, "{diags:?}");
    assert!(diags.iter().all(|(k, _)| *k == ctxasm::diag::DiagKind::MemoryRefused), "{diags:?}");
    assert!(diags.iter().any(|(_, m)| m.contains("/etc/passwd")), "{diags:?}");
    assert!(first.contains("Contents of /home/dev/projects/hello/CLAUDE.md (project instructions"), "{first}");
    assert!(first.contains("Be brief."), "{first}");
    assert!(!first.contains("root:"), "{first}");
}

/// Found by the `pipeline` fuzz target: a 2.1.88 compaction agent's file
/// that holds the compaction twice (here a retry: the instruction sent
/// again on the same history) gave both requests the id `<sid>_compact_0`,
/// and the Message Batches API refuses a batch that repeats an id. The
/// second is `<sid>_compact_0_dup1`; the other ids are unchanged.
#[test]
fn a_compaction_sent_twice_gives_unique_custom_ids() {
    use ctxasm::write::{AssembleOptions, Turns, write_batch};
    let from = Path::new("tests/fixtures/shapes/cc-2.1.88/compact-resume/transcripts");
    let sid = "fc702348-4adb-45c2-8771-3c93b92ae3f1";
    let rel = format!("-tmp-ctxasm-capture3-2-1-88-projects-compact-resume/{sid}");
    let agent = format!("{rel}/subagents/agent-acompact-16b28b86e463c34a.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(&rel).join("subagents")).unwrap();
    std::fs::copy(from.join(format!("{rel}.jsonl")), tmp.path().join(format!("{rel}.jsonl"))).unwrap();
    // The retry: the instruction and its answer again (new uuids, a new
    // message id) on the same history (lines 3 and 4 of the agent's file).
    let text = std::fs::read_to_string(from.join(&agent)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    let retry = [lines[2], lines[3]]
        .map(|l| l.replace("90d87cae-fee7-4bf7-8969-59fa8bb23e0b", "90d87cae-fee7-4bf7-8969-00000000eeee"))
        .map(|l| l.replace("a9472786-50e9-4870-b277-44f79660e9de", "a9472786-50e9-4870-b277-00000000eeee"))
        .map(|l| l.replace("01283ed56a2de600003", "01283ed56a2de600eee"));
    std::fs::write(tmp.path().join(&agent), format!("{text}{}\n{}\n", retry[0], retry[1])).unwrap();
    let opts = AssembleOptions {
        assembler: Assembler { mode: Mode::Pipeline, pipeline: Some(Setup::default()), ..Assembler::default() },
        turns: Turns::All,
    };
    let ids = |root: &Path| -> Vec<String> {
        let mut out = Vec::new();
        write_batch(&discover(&[root.to_path_buf()]), &RunOptions::default(), &opts, &mut out).unwrap();
        let lines = out.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        lines.map(|l| serde_json::from_slice::<Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string()).collect()
    };
    let once = ids(from);
    let twice = ids(tmp.path());
    assert!(once.contains(&format!("{sid}_compact_0")), "{once:?}");
    assert_eq!(twice.len(), once.len() + 1, "{once:?} vs {twice:?}");
    let unique: std::collections::BTreeSet<&String> = twice.iter().collect();
    assert_eq!(unique.len(), twice.len(), "{twice:?}");
    assert!(once.iter().all(|id| twice.contains(id)), "{once:?} vs {twice:?}");
    assert!(twice.contains(&format!("{sid}_compact_0_dup1")), "{twice:?}");
}
