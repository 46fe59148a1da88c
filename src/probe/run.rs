//! One probe: a fresh home and project (a git repository with one
//! commit), the mock server with the probe's rules recording to
//! `wire.jsonl`, each step as one `claude -p` process, then the transcripts
//! the CLI wrote and the environment it saw, in the capture layout.

use super::{Probe, ProbeError};
use crate::mock::{MockConfig, MockServer};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// What one probe produced.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    pub name: String,
    /// `<out>/<probe>`.
    pub dir: PathBuf,
    /// Requests the mock server recorded (every path).
    pub requests: u64,
    /// Steps whose CLI exited non-zero or was killed, as `cli.log` says.
    pub failed_steps: Vec<String>,
}

impl ProbeRun {
    /// Whether the CLI answered every step without the model: its
    /// transcripts hold lines but no assistant line (1.0.128 answers
    /// `/greet` of the skill probe "Unknown slash command"). Such a release
    /// does not have what the probe asks for.
    pub fn answered_without_model(&self) -> bool {
        let mut lines = 0usize;
        let mut stack = vec![self.dir.join("transcripts")];
        while let Some(d) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&d) else { continue };
            for e in read.flatten() {
                let path = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(t) if t.is_file() && path.extension().is_some_and(|x| x == "jsonl") => {
                        let Ok(text) = std::fs::read_to_string(&path) else { return false };
                        for line in text.lines().filter(|l| !l.trim().is_empty()) {
                            lines += 1;
                            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                            if v["type"] == "assistant" {
                                return false;
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        lines > 0
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ProbeError + '_ {
    move |source| ProbeError::Io { path: path.to_path_buf(), source }
}

/// Run `probe` with the CLI `cli`; scratch homes and projects go under
/// `root`, the capture to `<out>/<probe.name>` (replaced). `path` is the
/// `PATH` the CLI gets (node, git).
pub async fn run_probe(
    cli: &Path,
    probe: &Probe,
    root: &Path,
    out: &Path,
    path: &OsStr,
) -> Result<ProbeRun, ProbeError> {
    let home = root.join("homes").join(&probe.name);
    let proj = root.join("projects").join(&probe.name);
    let dir = out.join(&probe.name);
    for d in [&home, &proj, &dir] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(io(d))?;
        }
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    for (rel, text) in &probe.files {
        let p = match rel.strip_prefix("~/") {
            Some(r) => home.join(r),
            None => proj.join(rel),
        };
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&p, text).map_err(io(&p))?;
    }
    git(&proj, &["init", "-q", "-b", "main"])?;
    git(&proj, &["add", "-A"])?;
    git(&proj, &["commit", "-qm", "initial commit", "--allow-empty"])?;
    let mcp_args = mcp_config(probe, &root.join("work").join(&probe.name), &dir.join("env"))?;
    snapshot_env(cli, probe, &mcp_args, &home, &proj, &dir.join("env"), path)?;
    let rules_text = probe.rules.to_string().replace("PROJ/", &format!("{}/", proj.display()));
    let rules_value: serde_json::Value = serde_json::from_str(&rules_text)
        .map_err(|e| ProbeError::Rules { probe: probe.name.clone(), message: e.to_string() })?;
    let script = crate::mock::script::parse_rules(&rules_value)
        .map_err(|message| ProbeError::Rules { probe: probe.name.clone(), message })?;
    let cfg = MockConfig {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        record: Some(dir.join("wire.jsonl")),
        script,
        ..MockConfig::default()
    };
    let server = MockServer::start(cfg).await?;
    let base = format!("http://{}", server.addr());
    let steps = run_steps(cli, probe, &mcp_args, &home, &proj, &dir.join("cli.log"), &base, path).await;
    let stats = server.shutdown().await?;
    let failed_steps = steps?;
    copy_tree(&home.join(".claude/projects"), &dir.join("transcripts"))?;
    // The scenario as the corpora's captures describe theirs.
    let steps: Vec<serde_json::Value> = probe
        .steps
        .iter()
        .map(|st| serde_json::json!({"prompt": st.prompt, "args": st.args, "continue": st.continue_session}))
        .collect();
    let files: Vec<&String> = probe.files.keys().collect();
    let mut scenario = serde_json::json!({"name": probe.name, "rules": probe.rules, "steps": steps, "files": files});
    if !probe.mcp.is_empty() {
        scenario["mcp"] = serde_json::Value::Object(probe.mcp.clone());
    }
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string_pretty(&scenario).unwrap_or_default()).map_err(io(&path))?;
    Ok(ProbeRun { name: probe.name.clone(), dir, requests: stats.requests, failed_steps })
}

#[allow(clippy::too_many_arguments)]
async fn run_steps(
    cli: &Path,
    probe: &Probe,
    mcp_args: &[String],
    home: &Path,
    proj: &Path,
    log_path: &Path,
    base: &str,
    path: &OsStr,
) -> Result<Vec<String>, ProbeError> {
    let mut log = String::new();
    let mut failed = Vec::new();
    for (i, step) in probe.steps.iter().enumerate() {
        let mut args: Vec<&str> = vec!["-p"];
        args.extend(step.args.iter().map(String::as_str));
        args.extend(mcp_args.iter().map(String::as_str));
        if step.continue_session {
            args.push("--continue");
        }
        args.extend(["--", step.prompt.as_str()]);
        log.push_str(&format!("$ claude {}\n", args.join(" ")));
        let mut cmd = tokio::process::Command::new(cli);
        cmd.args(&args)
            .current_dir(proj)
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .envs(CLI_ENV)
            .env("ANTHROPIC_BASE_URL", base)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let run = tokio::time::timeout(Duration::from_secs(step.timeout), cmd.output()).await;
        let status = match run {
            Ok(Ok(o)) => {
                log.push_str(&String::from_utf8_lossy(&o.stdout));
                log.push_str(&String::from_utf8_lossy(&o.stderr));
                o.status.code().map_or("killed by a signal".to_string(), |c| format!("rc={c}"))
            }
            Ok(Err(source)) => return Err(ProbeError::Tool { tool: cli.display().to_string(), source }),
            Err(_) => format!("killed after {} s", step.timeout),
        };
        log.push_str(&format!("[{status}]\n"));
        if status != "rc=0" {
            failed.push(format!("step {} ({}): {status}", i + 1, step.prompt));
        }
    }
    std::fs::write(log_path, log).map_err(io(log_path))?;
    Ok(failed)
}

/// What the CLI gets besides PATH, HOME and the base URL: offline, no
/// telemetry, no updater, a key the mock accepts.
const CLI_ENV: [(&str, &str); 7] = [
    ("IS_SANDBOX", "1"),
    ("TERM", "dumb"),
    ("ANTHROPIC_API_KEY", "sk-ant-probe-0000"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
];

fn git(proj: &Path, args: &[&str]) -> Result<(), ProbeError> {
    let out = std::process::Command::new("git")
        .args(["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(proj)
        .output()
        .map_err(|source| ProbeError::Tool { tool: "git".into(), source })?;
    if !out.status.success() {
        let detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ProbeError::Command { command: format!("git {}", args.join(" ")), detail });
    }
    Ok(())
}

fn git_out(proj: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git").args(args).current_dir(proj).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `env/`: the project and `~/.claude` as the CLI saw them at start, and
/// `env.json` (the keys `scripts/capture` writes).
#[allow(clippy::too_many_arguments)]
fn snapshot_env(
    cli: &Path,
    probe: &Probe,
    mcp_args: &[String],
    home: &Path,
    proj: &Path,
    env: &Path,
    path: &OsStr,
) -> Result<(), ProbeError> {
    copy_tree(proj, &env.join("project"))?;
    if home.join(".claude").is_dir() {
        copy_tree(&home.join(".claude"), &env.join("home/.claude"))?;
    }
    let version = std::process::Command::new(cli)
        .arg("--version")
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .output()
        .map_err(|source| ProbeError::Tool { tool: cli.display().to_string(), source })?;
    let argv: Vec<Vec<&str>> = probe
        .steps
        .iter()
        .map(|s| {
            let mut a = vec!["-p"];
            a.extend(s.args.iter().map(String::as_str));
            a.extend(mcp_args.iter().map(String::as_str));
            if s.continue_session {
                a.push("--continue");
            }
            a
        })
        .collect();
    let os = std::process::Command::new("uname").args(["-s", "-r"]).output().ok();
    let doc = serde_json::json!({
        "cwd": proj.display().to_string(),
        "home": home.display().to_string(),
        "is_git": true,
        "branch": git_out(proj, &["branch", "--show-current"]),
        "status_short": git_out(proj, &["status", "--short"]),
        "log_oneline": git_out(proj, &["log", "--oneline", "-n", "5"]),
        "user_name": "Dev",
        "user_email": "dev@example.com",
        "platform": std::env::consts::OS,
        "os_version": os.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default(),
        "cli_version": String::from_utf8_lossy(&version.stdout).trim(),
        "argv": argv,
    });
    let file = env.join("env.json");
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    std::fs::write(&file, text).map_err(io(&file))
}

/// The probe's MCP servers: their `--mcp-config` file written under
/// `work`, their answers to a client's handshake in `env/mcp.json` (as
/// `scripts/capture` writes it); the arguments every step gets (none
/// without servers).
fn mcp_config(probe: &Probe, work: &Path, env: &Path) -> Result<Vec<String>, ProbeError> {
    if probe.mcp.is_empty() {
        return Ok(Vec::new());
    }
    let exe = std::env::current_exe().map_err(|source| ProbeError::Tool { tool: "ctxasm".into(), source })?;
    let mut servers = serde_json::Map::new();
    let mut answers = serde_json::Map::new();
    for (name, cfg) in &probe.mcp {
        let mut cfg = cfg.clone();
        if cfg["command"] == "@ctxasm" {
            cfg["command"] = exe.display().to_string().into();
        }
        answers.insert(name.clone(), handshake(&cfg)?);
        servers.insert(name.clone(), cfg);
    }
    if work.exists() {
        std::fs::remove_dir_all(work).map_err(io(work))?;
    }
    for d in [work, env] {
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    let file = work.join("mcp.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({"mcpServers": servers})).unwrap_or_default();
    std::fs::write(&file, text).map_err(io(&file))?;
    let kept = env.join("mcp.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({"servers": answers})).unwrap_or_default();
    std::fs::write(&kept, text).map_err(io(&kept))?;
    Ok(vec!["--mcp-config".into(), file.display().to_string()])
}

/// What a stdio MCP server tells a client: `{"instructions", "tools"}`
/// from its `initialize` and `tools/list` answers.
fn handshake(cfg: &serde_json::Value) -> Result<serde_json::Value, ProbeError> {
    use std::io::Write;
    let command = cfg["command"].as_str().unwrap_or_default();
    let args: Vec<&str> = cfg["args"].as_array().into_iter().flatten().filter_map(|a| a.as_str()).collect();
    let tool = || command.to_string();
    let mut child = std::process::Command::new(command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|source| ProbeError::Tool { tool: tool(), source })?;
    let msgs = [
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "ctxasm-probe", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ];
    let input: String = msgs.iter().map(|m| format!("{m}\n")).collect();
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).map_err(|source| ProbeError::Tool { tool: tool(), source })?;
    }
    let out = child.wait_with_output().map_err(|source| ProbeError::Tool { tool: tool(), source })?;
    let mut result = [serde_json::Value::Null, serde_json::Value::Null];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(a) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if let Some(i) = a["id"].as_u64().filter(|i| *i < 2) {
            result[i as usize] = a["result"].clone();
        }
    }
    let tools = result[1].get("tools").cloned().unwrap_or_else(|| serde_json::json!([]));
    Ok(serde_json::json!({"instructions": result[0].get("instructions").cloned(), "tools": tools}))
}

/// Copy the files under `from` to `to`, without `.git`; a missing `from`
/// copies nothing.
fn copy_tree(from: &Path, to: &Path) -> Result<(), ProbeError> {
    if !from.exists() {
        return Ok(());
    }
    let walk = walkdir::WalkDir::new(from).into_iter().filter_entry(|e| e.file_name() != ".git");
    for entry in walk {
        let entry = entry.map_err(|e| ProbeError::Io { path: from.to_path_buf(), source: e.into() })?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io(&dest))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).map_err(io(&dest))?;
        }
    }
    Ok(())
}
