//! The real Claude Code CLI driven through a scripted scenario by
//! `ctxasm mock-server --script` (via `scripts/capture`), then rebuilt by
//! ctxasm from the transcript it wrote: every request byte-equal to what the
//! server recorded.
//!
//! The CLI is `$CTXASM_CLAUDE`, else `target/claude-code/node_modules/.bin/claude`
//! (`.ci/run` installs `@anthropic-ai/claude-code@2.1.88` there with npm),
//! else `claude` on PATH. The test is `#[ignore]`d (`cargo test` lists it as
//! ignored); `.ci/run` installs the CLI and runs it with `--ignored`, where a
//! missing CLI fails it.
//! Loopback only: the CLI's base URL is the mock server's 127.0.0.1 port and
//! nonessential traffic is disabled.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CTXASM_CLAUDE") {
        return Some(PathBuf::from(p));
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/claude-code/node_modules/.bin/claude");
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("claude")).find(|p| p.is_file())
}

/// The `bash-tool` scenario of the captured corpora: the model asks for
/// `ls -la`, the CLI runs it and sends the result back, the model answers.
const SCENARIOS: &str = r##"
T = lambda s: {"type": "text", "text": s}
TU = lambda name, inp: {"type": "tool_use", "name": name, "input": inp}
DONE = {"when": {"last_is_tool_result": True}, "reply": {"blocks": [T("All done.")]}}
SCENARIOS = [
    {"name": "bash-tool", "files": {"CLAUDE.md": "# Rules\nPrefer small commits.\n"},
     "rules": [{"when": {"last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [T("Let me look."), TU("Bash", {"command": "ls -la", "description": "List files"})]}}, DONE],
     "steps": [{"prompt": "what files are here?", "args": ["--allowedTools", "Bash"]}]},
]
"##;

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
#[ignore = "needs the Claude Code CLI: npm install --prefix target/claude-code @anthropic-ai/claude-code@2.1.88 (.ci/run does)"]
fn real_cli_through_mock_server_script_is_rebuilt_byte_equal() {
    let claude = find_claude()
        .expect("no Claude Code CLI (npm install --prefix target/claude-code @anthropic-ai/claude-code@2.1.88)");
    assert!(
        Command::new("python3").arg("--version").output().is_ok(),
        "python3 is not installed (scripts/capture needs it)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let scen = tmp.path().join("scenarios.py");
    std::fs::write(&scen, SCENARIOS).unwrap();
    let out_dir = tmp.path().join("out");
    let ctxasm = env!("CARGO_BIN_EXE_ctxasm");
    run(Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/capture"))
        .arg(&claude)
        .arg(&scen)
        .arg(&out_dir)
        .arg("bash-tool")
        .arg("--ctxasm")
        .arg(ctxasm)
        .arg("--root")
        .arg(tmp.path().join("root")));
    let dir = out_dir.join("bash-tool");
    let log = std::fs::read_to_string(dir.join("cli.log")).unwrap();
    assert!(log.contains("All done."), "the CLI printed the scripted answer: {log}");
    // What the server recorded: two requests, the second carrying the tool result.
    let wire = std::fs::read_to_string(dir.join("wire.jsonl")).unwrap();
    let reqs: Vec<Value> = wire.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let messages: Vec<&Value> =
        reqs.iter().filter(|r| r["path"].as_str().is_some_and(|p| p.starts_with("/v1/messages"))).collect();
    assert_eq!(messages.len(), 2, "{wire}");
    for r in &messages {
        assert_eq!(r["method"], "POST");
        assert!(r["headers"].get("x-api-key").is_none(), "the key is never recorded");
        let raw = base64_decode(r["raw_b64"].as_str().unwrap());
        assert_eq!(serde_json::from_slice::<Value>(&raw).unwrap(), r["body"]);
    }
    let last = messages[1]["body"]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(last.contains("tool_result") && last.contains("CLAUDE.md"), "ls -la output sent back: {last}");
    // ctxasm rebuilds both requests from the transcript, byte for byte, with
    // a profile extracted from the capture itself.
    let profile = tmp.path().join("profile.json");
    run(Command::new(ctxasm)
        .args(["profile", "extract"])
        .arg(dir.join("wire.jsonl"))
        .arg("--env")
        .arg(dir.join("env"))
        .arg("-o")
        .arg(&profile));
    let out = run(Command::new(ctxasm)
        .args(["verify", "--mode", "pipeline", "--device-id", "wire", "--json", "--profile"])
        .arg(&profile)
        .arg("--env")
        .arg(dir.join("env"))
        .arg("--wire")
        .arg(dir.join("wire.jsonl"))
        .arg(dir.join("transcripts")));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["wire_compared"], 2, "{v}");
    assert_eq!(v["wire_byte_equal"], 2, "{v}");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// `ctxasm profile capture --cli` on the installed CLI makes a profile on
/// this machine (probes against the built-in mock server) under which
/// every probe is byte-equal, `--profile auto` finds it in the cache, and
/// it rebuilds the independent captures of that release
/// (`tests/fixtures/cc-2.1.88`, 14 scenarios) byte for byte.
#[test]
#[ignore = "needs the Claude Code CLI: npm install --prefix target/claude-code @anthropic-ai/claude-code@2.1.88 (.ci/run does)"]
fn profile_capture_of_the_installed_cli_rebuilds_its_captures() {
    let claude = find_claude()
        .expect("no Claude Code CLI (npm install --prefix target/claude-code @anthropic-ai/claude-code@2.1.88)");
    let cache = tempfile::tempdir().unwrap();
    let ctxasm = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ctxasm"));
        c.env("CTXASM_CACHE_DIR", cache.path());
        c
    };
    let probes = "hello,bash-tool,model-haiku,model-opus,custom-system-prompt,append-system-prompt";
    let out = ctxasm().args(["profile", "capture", "--cli"]).arg(&claude).args(["--probes", probes]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Vec<&str>> = table.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, probes.split(',').collect::<Vec<_>>(), "{table}");
    for r in &rows {
        // requests, compared, byte-equal, unmatched
        assert!(r[1] != "0" && r[1] == r[2] && r[2] == r[3] && r[4] == "0", "{table}");
    }
    let list = run(ctxasm().args(["profile", "list", "--json"]));
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    let version = listed["version"].as_str().unwrap().to_string();
    for dir in crate::common::scenarios(&format!("tests/fixtures/cc-{version}")) {
        let out = ctxasm()
            .args(["verify", "--mode", "pipeline", "--device-id", "wire", "--wire"])
            .arg(dir.join("wire.jsonl"))
            .arg("--env")
            .arg(dir.join("env"))
            .arg(dir.join("transcripts"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}: {text}", dir.display());
        assert!(!text.contains("approximated"), "{text}");
    }
}
