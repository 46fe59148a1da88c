//! Extract a [`Profile`] from a capture: the first `/v1/messages` request of
//! a `wire.jsonl`, or the first recorded request (`api-request-shape` +
//! `api-request`) of a 2.1.3xx transcript.
//!
//! The session's own values are replaced by template variables: the auto
//! memory path (`{{home}}/.claude/projects/{{project_slug}}/memory/`), the
//! working directory and home, the environment lines (`- Label: value` lines
//! whose value is the session's git flag, platform, shell or OS version),
//! the model line (marketing name and id) and the knowledge cutoff, the
//! gitStatus paragraphs (branch, main branch, git user, status, recent
//! commits) and the date of the user-context reminder. The values come from
//! the session's [`SessionEnv`], or without one are read back from the text
//! (`Primary working directory:`, the memory path, `Platform:`, …).
//!
//! A profile extracted from a `wire.jsonl` is rendered back with the same
//! environment and model and compared with the capture before it is
//! returned, so an extraction that would not reproduce its own capture (for
//! instance one run with `--system-prompt`) is an error. Checked on
//! `tests/fixtures/cc-2.1.88/hello` (every other 2.1.88 request is then
//! rebuilt from it, `tests/system_side.rs`) and `tests/fixtures/cc-2.1.328/hello`.

use super::pipeline::contexts::{self, UserContext};
use super::pipeline::system_blocks::{self, system_blocks};
use super::pipeline::system_prompt::{PromptChoice, cli_prefix, effective_system_prompt};
use super::wire::{BILLING_SALT, billing_suffix};
use crate::env::{GitFacts, SessionEnv};
use crate::profile::{
    Billing, CliPrefixes, DYNAMIC_VARS, GIT_VARS, GitStatusTemplate, MetadataForm, ModelInfo, Profile, ProfileError,
    PromptTemplate, SkillsTemplate, SuffixText, SystemCache, UserContextTemplate, template,
};
use serde_json::{Map, Value};
use std::path::Path;

/// What one captured request tells.
struct Capture {
    version: String,
    entrypoint: String,
    /// The billing header text, when the capture has it (wire).
    header: Option<String>,
    /// The capture sends a billing header block (a transcript's shape never
    /// holds it: assumed).
    header_block: bool,
    /// The form of its `metadata.user_id`.
    metadata: MetadataForm,
    /// System blocks after the billing header (with their cache control).
    system: Vec<Value>,
    tools: Vec<Value>,
    params: Map<String, Value>,
    betas: Vec<String>,
    model: String,
    /// Texts of the first user message's blocks (wire only).
    first_texts: Vec<String>,
    /// Every text worth scanning for model names.
    texts: Vec<String>,
    /// Model identities recorded in a transcript.
    models: Vec<ModelInfo>,
}

/// Session facts used to turn text into templates; any may be unknown.
#[derive(Default)]
struct Facts {
    cwd: Option<String>,
    home: Option<String>,
    slug: Option<String>,
    is_git: Option<bool>,
    platform: Option<String>,
    shell: Option<String>,
    os_version: Option<String>,
    date: Option<String>,
    git: Option<GitFacts>,
}

impl Facts {
    fn from_env(env: &SessionEnv) -> Facts {
        Facts {
            cwd: Some(env.cwd.clone()),
            home: Some(env.home.clone()),
            slug: Some(env.project_slug()),
            is_git: Some(env.is_git),
            platform: Some(env.platform.clone()),
            shell: Some(env.shell.clone().unwrap_or_else(|| "unknown".into())),
            os_version: Some(env.os_version.clone()),
            date: env.date.clone(),
            git: env.git.clone(),
        }
    }

    /// A [`SessionEnv`] when enough is known to render the templates back.
    fn to_env(&self) -> Option<SessionEnv> {
        let cwd = self.cwd.clone()?;
        let env = SessionEnv {
            home: self.home.clone()?,
            platform: self.platform.clone().unwrap_or_default(),
            os_version: self.os_version.clone().unwrap_or_default(),
            shell: self.shell.clone().filter(|s| s != "unknown"),
            is_git: self.is_git.unwrap_or(false),
            git: self.git.clone(),
            date: self.date.clone(),
            cwd,
            ..SessionEnv::default()
        };
        (self.slug.as_deref().is_none_or(|s| s == env.project_slug())).then_some(env)
    }
}

fn err(path: &Path, message: impl Into<String>) -> ProfileError {
    ProfileError::Extract { path: path.into(), message: message.into() }
}

/// Extract a profile from `path` (a `wire.jsonl`, or a transcript with
/// recorded requests) with the session's environment when known (see the
/// module docs).
pub fn extract(path: &Path, env: Option<&SessionEnv>) -> Result<Profile, ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.into(), source })?;
    let mut lines: Vec<Value> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines.push(serde_json::from_str(line).map_err(|source| ProfileError::Json { path: path.into(), source })?);
    }
    let wire = lines.iter().find(|v| {
        v.get("body").and_then(|b| b.get("messages")).is_some()
            && v.get("path")
                .and_then(Value::as_str)
                .is_none_or(|p| p.starts_with("/v1/messages") && !p.contains("count"))
    });
    let cap = match wire {
        Some(req) => from_wire(path, req)?,
        None => from_transcript(path, &lines)?,
    };
    let held = if wire.is_some() { transcripts_beside(path) } else { vec![text] };
    let mut profile = build(path, cap, env, &held)?;
    // Breakpoints on more than the last message (2.0.77: the last two) show
    // only in a request of several messages: count them over the capture.
    let marked = |m: &Value| {
        m.get("content").and_then(Value::as_array).is_some_and(|c| c.iter().any(|b| b.get("cache_control").is_some()))
    };
    let most = lines
        .iter()
        .filter_map(|v| v.pointer("/body/messages").and_then(Value::as_array))
        .map(|ms| ms.iter().filter(|m| marked(m)).count())
        .max()
        .unwrap_or(1);
    if wire.is_some() && most > profile.layout.message_breakpoints {
        profile.layout.message_breakpoints = most;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    Ok(profile)
}

/// One profile from several captures of one release (each with its own
/// environment): the first capture's, with what the others show that it
/// cannot (`hello` has no CLAUDE.md, so no claudeMd reminder; a request of
/// one message shows no second breakpoint): their layout choices, user
/// context, gitStatus and skills templates and models.
pub fn extract_merged(captures: &[(&Path, Option<&SessionEnv>)]) -> Result<Profile, ProfileError> {
    let Some(((first, env), rest)) = captures.split_first() else {
        return Err(err(Path::new("-"), "no capture given"));
    };
    let mut merged = extract(first, *env)?;
    for (path, env) in rest {
        let other = extract(path, *env)?;
        if other.version != merged.version {
            return Err(err(
                path,
                format!(
                    "is a capture of {}, the first of {}: one profile is one release",
                    other.version, merged.version
                ),
            ));
        }
        merge(&mut merged, other);
    }
    Ok(merged)
}

/// Add to `into` what `other`, a capture of the same release, shows.
fn merge(into: &mut Profile, other: Profile) {
    let (l, o) = (&mut into.layout, &other.layout);
    let before = l.clone();
    l.system_context_in_prompt |= o.system_context_in_prompt;
    l.user_context_message |= o.user_context_message;
    l.message_breakpoints = l.message_breakpoints.max(o.message_breakpoints);
    if *l != before {
        l.name = format!("cc-{}", into.version);
    }
    into.user_context = into.user_context.take().or(other.user_context);
    into.git_status = into.git_status.take().or(other.git_status);
    into.skills = into.skills.take().or(other.skills);
    for m in other.models {
        if !into.models.iter().any(|x| x.id == m.id) {
            into.models.push(m);
        }
    }
    if let Some(p) = other.extracted_from {
        let joined = into.extracted_from.take().map_or(p.clone(), |a| format!("{a}, {p}"));
        into.extracted_from = Some(joined);
    }
}

/// The transcripts written beside a capture (`<dir>/transcripts/**.jsonl`,
/// the captures' layout), as text: what they hold is not something the
/// client prepended.
fn transcripts_beside(wire: &Path) -> Vec<String> {
    let Some(dir) = wire.parent().map(|d| d.join("transcripts")) else { return Vec::new() };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl")
                && let Ok(t) = std::fs::read_to_string(&p)
            {
                out.push(t);
            }
        }
    }
    out
}

/// Up to 60 characters of each value from just before where they first
/// differ (strings), or each value cut to 160 characters.
fn around_difference(want: &Value, got: &Value) -> (String, String) {
    match (want.as_str(), got.as_str()) {
        (Some(w), Some(g)) => {
            let at = w.chars().zip(g.chars()).take_while(|(a, b)| a == b).count().saturating_sub(20);
            let cut = |s: &str| s.chars().skip(at).take(60).collect::<String>();
            (cut(w), cut(g))
        }
        _ => (crate::diag::clip(&want.to_string(), 160), crate::diag::clip(&got.to_string(), 160)),
    }
}

/// Whether `text` is written in one of the transcripts (JSON-escaped, as
/// a transcript line holds it).
fn held_by(held: &[String], text: &str) -> bool {
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let inner = escaped.trim_start_matches('"').trim_end_matches('"');
    !inner.is_empty() && held.iter().any(|t| t.contains(inner))
}

fn from_wire(path: &Path, req: &Value) -> Result<Capture, ProfileError> {
    let body = &req["body"];
    let system = body.get("system").and_then(Value::as_array).ok_or_else(|| err(path, "request without system"))?;
    let text_of = |b: &Value| b.get("text").and_then(Value::as_str).unwrap_or("").to_string();
    let (header, rest) = match system.first() {
        Some(b) if text_of(b).starts_with("x-anthropic-billing-header:") => (Some(text_of(b)), &system[1..]),
        _ => (None, &system[..]),
    };
    let header_text = header.clone().unwrap_or_default();
    let field = |name: &str| {
        header_text.split(';').find_map(|p| p.trim().strip_prefix(name).map(str::to_string)).unwrap_or_default()
    };
    let cc_version = field("x-anthropic-billing-header: cc_version=");
    let version = cc_version.rsplit_once('.').map_or(cc_version.clone(), |(v, _)| v.to_string());
    let ua_version = req
        .get("headers")
        .and_then(|h| header_value(h, "user-agent"))
        .and_then(|ua| ua.strip_prefix("claude-cli/").and_then(|v| v.split(' ').next()).map(str::to_string));
    let version = if version.is_empty() { ua_version.unwrap_or_default() } else { version };
    let mut first_texts = Vec::new();
    let mut texts: Vec<String> = system.iter().map(text_of).collect();
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, m) in messages.iter().take(2).enumerate() {
        let blocks: Vec<String> = match m.get("content") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a.iter().filter(|b| b["type"] == "text").map(text_of).collect(),
            _ => Vec::new(),
        };
        if i == 0 {
            first_texts = blocks.clone();
        }
        texts.extend(blocks);
    }
    let skip = ["model", "messages", "system", "tools", "metadata", "stream", "betas"];
    let legacy = body.pointer("/metadata/user_id").and_then(Value::as_str).is_some_and(|u| u.starts_with("user_"));
    Ok(Capture {
        version,
        entrypoint: field("cc_entrypoint="),
        header_block: header.is_some(),
        metadata: if legacy { MetadataForm::LegacyUserId } else { MetadataForm::JsonUserId },
        header,
        system: rest.to_vec(),
        tools: body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        params: body
            .as_object()
            .map(|o| {
                o.iter().filter(|(k, _)| !skip.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
            })
            .unwrap_or_default(),
        betas: req
            .get("headers")
            .and_then(|h| header_value(h, "anthropic-beta"))
            .map(|b| b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default(),
        model: body.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        first_texts,
        texts,
        models: Vec::new(),
    })
}

fn header_value<'a>(headers: &'a Value, name: &str) -> Option<&'a str> {
    headers.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.as_str())
}

fn from_transcript(path: &Path, lines: &[Value]) -> Result<Capture, ProfileError> {
    let shape_entry = lines
        .iter()
        .find(|e| e["type"] == "api-request-shape")
        .ok_or_else(|| err(path, "neither a /v1/messages request nor an api-request-shape entry"))?;
    let hash = shape_entry.get("shapeHash").and_then(Value::as_str).unwrap_or("");
    let request = lines
        .iter()
        .find(|e| e["type"] == "api-request" && e.get("shapeHash").and_then(Value::as_str) == Some(hash))
        .ok_or_else(|| err(path, format!("no api-request uses shape {hash}")))?;
    let shape = &shape_entry["shape"];
    let mut system = shape.get("system").and_then(Value::as_array).cloned().unwrap_or_default();
    // Cache control is recorded apart: ["system", i] paths index the shape's blocks.
    for cc in request.get("cacheControl").and_then(Value::as_array).into_iter().flatten() {
        let p = cc.get("path").and_then(Value::as_array);
        if let Some([Value::String(s), i]) = p.map(Vec::as_slice) {
            let slot = i.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| system.get_mut(i));
            if let (true, Some(Value::Object(block))) = (s == "system", slot) {
                block.insert("cache_control".into(), cc["value"].clone());
            }
        }
    }
    let params = request.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
    let models = lines
        .iter()
        .filter(|e| e["type"] == "attachment" && e["attachment"]["type"] == "model")
        .filter_map(|e| {
            let id = &e["attachment"]["identity"];
            Some(ModelInfo {
                id: id.get("modelId")?.as_str()?.to_string(),
                name: id.get("marketingName")?.as_str()?.to_string(),
                knowledge_cutoff: id.get("knowledgeCutoff").and_then(Value::as_str).map(str::to_string),
            })
        })
        .collect();
    Ok(Capture {
        version: request
            .get("version")
            .or_else(|| shape_entry.get("version"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        entrypoint: lines.iter().find_map(|e| e.get("entrypoint").and_then(Value::as_str)).unwrap_or("cli").to_string(),
        header: None,
        header_block: true,
        metadata: MetadataForm::JsonUserId,
        texts: system.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).map(str::to_string).collect(),
        system,
        tools: shape.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        betas: params
            .get("betas")
            .and_then(Value::as_array)
            .map(|b| b.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        model: params.get("model").and_then(Value::as_str).unwrap_or("").to_string(),
        params: params.into_iter().filter(|(k, _)| k != "model" && k != "betas").collect(),
        first_texts: Vec::new(),
        models,
    })
}

/// Split a text into sections at `\n\n# ` (joining them with `\n\n` gives
/// the text back).
fn split_sections(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.get(1..).and_then(|r| r.find("\n\n# ")).map(|i| i + 1) {
        out.push(rest[..i].to_string());
        rest = &rest[i + 2..];
    }
    out.push(rest.to_string());
    out
}

/// `Name: 'claude-…'` pairs, `model named N. The exact model ID is I.` and
/// `knowledge cutoff is C.` found in the texts.
fn scan_models(texts: &[String], model: &str, into: &mut Vec<ModelInfo>) {
    fn add(into: &mut Vec<ModelInfo>, id: &str, name: &str) {
        if !into.iter().any(|m| m.id == id) && !id.is_empty() && !name.is_empty() {
            into.push(ModelInfo { id: id.into(), name: name.into(), knowledge_cutoff: None });
        }
    }
    for t in texts {
        for line in t.lines() {
            // `…, Sonnet 4.6: 'claude-sonnet-4-6', …`
            for part in line.split(", ") {
                if let Some((name, id)) = part.rsplit_once(": '") {
                    let id = id.split('\'').next().unwrap_or("");
                    let name = name.rsplit("— ").next().unwrap_or(name).rsplit(" - ").next().unwrap_or(name);
                    let name = name.rsplit_once(". ").map_or(name, |(_, n)| n).trim();
                    if id.starts_with("claude-") && name.split(' ').count() <= 3 {
                        add(into, id, name);
                    }
                }
            }
            if let Some((_, rest)) = line.split_once("model named ")
                && let Some((name, id)) = rest.split_once(". The exact model ID is ")
            {
                add(into, id.trim_end_matches('.'), name);
            }
            if let Some((_, c)) = line.split_once("knowledge cutoff is ")
                && let Some(m) = into.iter_mut().find(|m| m.id == model)
            {
                m.knowledge_cutoff = Some(c.trim_end_matches('.').to_string());
            }
        }
    }
}

/// Read the session facts back from the texts (no env given).
fn infer_facts(texts: &[String]) -> Facts {
    let mut f = Facts::default();
    let value = |label: &str| {
        texts.iter().flat_map(|t| t.lines()).find_map(|l| l.split_once(label).map(|(_, v)| v.trim().to_string()))
    };
    f.cwd = value("Primary working directory: ");
    f.is_git = value("Is a git repository: ").map(|v| v == "true");
    f.platform = value(" - Platform: ");
    f.shell = value(" - Shell: ");
    f.os_version = value(" - OS Version: ");
    for t in texts {
        if let Some(i) = t.find("/.claude/projects/") {
            let start = t[..i].rfind(|c: char| c == '`' || c.is_whitespace()).map_or(0, |s| s + 1);
            f.home = Some(t[start..i].to_string());
            let after = &t[i + "/.claude/projects/".len()..];
            f.slug = after.split('/').next().map(str::to_string);
            break;
        }
    }
    f.date = texts.iter().find_map(|t| {
        let i = t.find("Today's date is ")?;
        Some(t[i + 16..].get(..10)?.to_string())
    });
    if let Some(g) = texts.iter().find_map(|t| t.rsplit_once("gitStatus: ").map(|(_, g)| g.to_string())) {
        let mut facts = GitFacts::default();
        for p in g.split("\n\n") {
            if let Some(v) = p.strip_prefix("Current branch: ") {
                facts.branch = v.into();
            } else if p.starts_with("Main branch") {
                facts.main_branch = p.rsplit_once(": ").map_or("", |(_, v)| v).into();
            } else if let Some(v) = p.strip_prefix("Status:\n") {
                facts.status_short = if v == "(clean)" { String::new() } else { v.into() };
            } else if let Some(v) = p.strip_prefix("Recent commits:\n") {
                facts.log_oneline = v.into();
            } else if let Some(v) = p.strip_prefix("Git user: ") {
                facts.user_name = Some(v.into());
            }
        }
        f.git = Some(facts);
    }
    f
}

/// Turn the session's values in `text` into template variables.
fn templatize(text: &str, f: &Facts, model: &str, models: &[ModelInfo]) -> String {
    let mut t = text.to_string();
    if let (Some(home), Some(slug)) = (&f.home, &f.slug)
        && !home.is_empty()
        && !slug.is_empty()
    {
        t = t.replace(&format!("{home}/.claude/projects/{slug}"), "{{home}}/.claude/projects/{{project_slug}}");
    }
    let mut paths: Vec<(&str, &str)> = [(f.cwd.as_deref(), "{{cwd}}"), (f.home.as_deref(), "{{home}}")]
        .into_iter()
        .filter_map(|(v, n)| v.filter(|v| v.len() > 1).map(|v| (v, n)))
        .collect();
    paths.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    for (v, n) in paths {
        t = t.replace(v, n);
    }
    let is_git = f.is_git.map(|g| if g { "true" } else { "false" });
    let env_values: [(Option<&str>, &str); 4] = [
        (is_git, "{{is_git}}"),
        (f.platform.as_deref(), "{{platform}}"),
        (f.shell.as_deref(), "{{shell}}"),
        (f.os_version.as_deref(), "{{os_version}}"),
    ];
    let model_name = models.iter().find(|m| m.id == model).map(|m| m.name.as_str());
    let cutoff = models.iter().find(|m| m.id == model).and_then(|m| m.knowledge_cutoff.as_deref());
    let mut model_line_done = false;
    let lines: Vec<String> = t
        .split('\n')
        .map(|line| {
            let mut line = line.to_string();
            if line.trim_start().starts_with("- ") {
                for (v, name) in env_values {
                    if let Some(v) = v.filter(|v| !v.is_empty())
                        && let Some(head) = line.strip_suffix(&format!(": {v}"))
                    {
                        line = format!("{head}: {name}");
                        break;
                    }
                }
            }
            if !model_line_done && !model.is_empty() && line.contains(model) && !line.contains(&format!("'{model}'")) {
                model_line_done = true;
                line = line.replace(model, "{{model_id}}");
                if let Some(n) = model_name {
                    line = line.replacen(n, "{{model_name}}", 1);
                }
            }
            if let Some(c) = cutoff
                && line.contains("knowledge cutoff is ")
            {
                line = line.replace(&format!("knowledge cutoff is {c}"), "knowledge cutoff is {{knowledge_cutoff}}");
            }
            line
        })
        .collect();
    lines.join("\n")
}

/// The gitStatus value as a template.
/// `main_branch`: the session's, as the snapshot knows it; a captured main
/// branch that is not it (2.0.77 shows none without a remote) stays
/// literal, a release's own rule.
fn git_template(value: &str, main_branch: Option<&str>) -> GitStatusTemplate {
    let paras: Vec<String> = value
        .split("\n\n")
        .map(|p| {
            if p.starts_with("Current branch: ") {
                "Current branch: {{branch}}".to_string()
            } else if p.starts_with("Main branch")
                && let Some((head, shown)) = p.rsplit_once(": ")
                && main_branch.is_none_or(|m| m == shown)
            {
                format!("{head}: {{{{main_branch}}}}")
            } else if p.starts_with("Git user: ") {
                "Git user: {{git_user}}".to_string()
            } else if p.starts_with("Status:\n") {
                "Status:\n{{status}}".to_string()
            } else if p.starts_with("Recent commits:\n") {
                "Recent commits:\n{{recent_commits}}".to_string()
            } else {
                p.to_string()
            }
        })
        .collect();
    GitStatusTemplate {
        text: paras.join("\n\n"),
        clean: "(clean)".into(),
        max_status_chars: 2000,
        truncated_note: "\n... (truncated because it exceeds 2k characters. If you need more information, run \"git status\" using BashTool)".into(),
    }
}

/// A prompt text without its last `gitStatus: ` section, and that section's
/// template.
fn split_git_status(dynamic: String, main_branch: Option<&str>) -> (String, Option<GitStatusTemplate>) {
    match dynamic.rfind("\n\ngitStatus: ") {
        Some(g) => {
            let value = &dynamic[g + "\n\ngitStatus: ".len()..];
            let value = value.split("\ncacheBreaker: ").next().unwrap_or(value);
            let git = git_template(value, main_branch);
            (dynamic[..g].to_string(), Some(git))
        }
        None => (dynamic, None),
    }
}

/// The user-context reminder among the first message's texts, and the date
/// it shows: with a `# currentDate` section (2.1.88), or of a `# claudeMd`
/// section alone (2.0.x), which is cut where the session's rendered memory
/// files end (so it needs the capture's environment).
fn user_context_template(
    texts: &[String],
    f: &Facts,
    env: Option<&SessionEnv>,
) -> Option<(UserContextTemplate, String)> {
    if let Some(found) = dated_user_context(texts, f) {
        return Some(found);
    }
    let t = texts.iter().find(|t| t.starts_with("<system-reminder>") && t.contains("\n# claudeMd\n"))?;
    let env = env?;
    let project_dir = env.project_dir.clone();
    let mut roots = crate::env::memory::MemoryRoots::new(&env.cwd, &env.home);
    roots.project_dir = project_dir;
    roots.home_claude_dir = env.home_claude_dir.clone();
    let claude_md = crate::env::memory::load(&roots).render_claude_md()?;
    let section = format!("# claudeMd\n{claude_md}");
    let at = t.find(&section)?;
    let tpl = UserContextTemplate {
        head: t[..at].to_string(),
        claude_md: "# claudeMd\n{{claude_md}}".into(),
        current_date: String::new(),
        tail: t[at + section.len()..].to_string(),
    };
    Some((tpl, f.date.clone().unwrap_or_default()))
}

/// The 2.1.88 form: the reminder with a `# currentDate` section.
fn dated_user_context(texts: &[String], f: &Facts) -> Option<(UserContextTemplate, String)> {
    let t = texts.iter().find(|t| t.starts_with("<system-reminder>") && t.contains("\n# currentDate\n"))?;
    let first = t.find("\n# ")?;
    let head = &t[..=first];
    let date_at = t.find("\n# currentDate\n")? + 1;
    let line_end = t[date_at + "# currentDate\n".len()..].find('\n').map(|e| e + date_at + "# currentDate\n".len())?;
    let section = &t[date_at..line_end];
    let date = f.date.clone().or_else(|| {
        section.char_indices().find_map(|(i, _)| {
            let s = section.get(i..i + 10)?;
            let b = s.as_bytes();
            let ok = b.iter().enumerate().all(|(j, c)| if j == 4 || j == 7 { *c == b'-' } else { c.is_ascii_digit() });
            ok.then(|| s.to_string())
        })
    })?;
    let tpl = UserContextTemplate {
        head: head.to_string(),
        claude_md: "# claudeMd\n{{claude_md}}".into(),
        current_date: section.replace(&date, "{{date}}"),
        tail: t[line_end..].to_string(),
    };
    Some((tpl, date))
}

/// The skills-listing reminder among the first message's texts, without the
/// skills found on disk for this session.
fn skills_template(texts: &[String], env: Option<&SessionEnv>) -> Option<SkillsTemplate> {
    let t = texts.iter().find(|t| {
        t.starts_with("<system-reminder>")
            && t.lines().nth(1).is_some_and(|l| l.contains("skills"))
            && t.contains("\n- ")
    })?;
    let first = t.find("\n- ")? + 1;
    let end = t.rfind("\n</system-reminder>")?;
    let mut body = t.get(first..end)?.to_string();
    let mut tpl = SkillsTemplate {
        head: t[..first].to_string(),
        builtin: String::new(),
        line: "- {{name}}: {{description}}".into(),
        description_max: 250,
        ellipsis: "…".into(),
        tail: t[end..].to_string(),
    };
    // The longest cut description tells the limit.
    if let Some(n) = body
        .split("\n- ")
        .filter_map(|l| l.split_once(": ").map(|(_, d)| d))
        .filter(|d| d.ends_with('…'))
        .map(|d| d.chars().count())
        .max()
    {
        tpl.description_max = n;
    }
    if let Some(env) = env {
        let mut on_disk = Vec::new();
        if let Some(h) = &env.home_claude_dir {
            on_disk.extend(crate::env::skills::skills_in(h));
        }
        if let Some(p) = &env.project_dir {
            on_disk.extend(crate::env::skills::skills_in(&p.join(".claude")));
        }
        for s in on_disk.iter().rev() {
            let line = contexts::skill_line(&tpl, s);
            if body == line {
                body.clear();
            } else if let Some(b) = body.strip_suffix(&format!("\n{line}")) {
                body = b.to_string();
            }
        }
    }
    tpl.builtin = body;
    Some(tpl)
}

fn build(path: &Path, cap: Capture, env: Option<&SessionEnv>, held: &[String]) -> Result<Profile, ProfileError> {
    let text = |b: &Value| b.get("text").and_then(Value::as_str).unwrap_or("").to_string();
    let is_global = |b: &Value| b["cache_control"]["scope"] == "global";
    // The layout of the built-in profile whose block split the capture
    // shows: a block of global cache scope is the static/dynamic boundary.
    let boundary = cap.system.iter().any(is_global);
    let layout = Profile::load(if boundary { "seed" } else { "cc-2.1.328" })?.layout;
    let seed = Profile::load("seed")?;
    let mut cli = seed.cli_prefix.clone();
    let prefix = cap.system.first().map(text).unwrap_or_default();
    if ![&cli.default, &cli.sdk, &cli.sdk_with_append].contains(&&prefix) {
        cli = CliPrefixes { sdk: prefix.clone(), ..cli };
    }
    let facts = match env {
        Some(e) => Facts::from_env(e),
        None => infer_facts(&cap.texts),
    };
    let mut models = cap.models.clone();
    scan_models(&cap.texts, &cap.model, &mut models);
    for t in &cap.texts {
        if let Some(name) = template::mentions_any(t, DYNAMIC_VARS).or_else(|| template::mentions_any(t, GIT_VARS)) {
            return Err(err(path, format!("the captured text already contains {name}: cannot template it")));
        }
    }
    let main_branch = facts.git.as_ref().map(|g| g.main_branch.as_str());
    let (static_text, dynamic_text, git_status) = match boundary {
        true => {
            let i = cap.system.iter().position(is_global).unwrap_or(0);
            let (dynamic, git) = split_git_status(cap.system.get(i + 1).map(text).unwrap_or_default(), main_branch);
            (text(&cap.system[i]), dynamic, git)
        }
        false => {
            let rest: Vec<String> = cap.system.iter().skip(1).map(text).collect();
            let (dynamic, git) = split_git_status(rest.join("\n\n"), main_branch);
            (String::new(), dynamic, git)
        }
    };
    // The capture's own choices where they differ from the built-in
    // layout's: gitStatus as the prompt's last section (2.0.x), the user
    // context as a prepended reminder.
    let mut layout = layout;
    let builtin_layout = layout.clone();
    layout.system_context_in_prompt |= git_status.is_some();
    let user_context = user_context_template(&cap.first_texts, &facts, env);
    // Prepended by the client, not an attachment the transcript holds.
    let prepended = |_: &(UserContextTemplate, String)| {
        cap.first_texts.iter().any(|t| {
            t.starts_with("<system-reminder>")
                && (t.contains("\n# claudeMd\n") || t.contains("\n# currentDate\n"))
                && !held_by(held, t)
        })
    };
    layout.user_context_message |= user_context.as_ref().is_some_and(prepended);
    if layout != builtin_layout {
        layout.name = format!("cc-{}", cap.version);
    }
    let static_sections = if static_text.is_empty() { Vec::new() } else { split_sections(&static_text) };
    let dynamic_sections = split_sections(&templatize(&dynamic_text, &facts, &cap.model, &models));
    if prefix == seed.cli_prefix.sdk_with_append {
        return Err(err(path, "the capture was run with --append-system-prompt: extract from one without it"));
    }
    let header = cap.header.clone().unwrap_or_default();
    let suffix_of = |s: SuffixText| billing_suffix(BILLING_SALT, s.pick(&refs(&cap.first_texts)), &cap.version);
    let default_suffix = if boundary { SuffixText::FirstText } else { SuffixText::FirstNonReminder };
    let suffix_text = [default_suffix, SuffixText::FirstText, SuffixText::FirstNonReminder]
        .into_iter()
        .find(|s| !header.is_empty() && header.contains(&format!("cc_version={}.{};", cap.version, suffix_of(*s))))
        .unwrap_or(default_suffix);
    let cch = header
        .split_once(&format!("cc_entrypoint={};", cap.entrypoint))
        .map(|(_, rest)| rest.to_string())
        .filter(|r| !r.is_empty());
    let profile = Profile {
        name: format!("cc-{}", cap.version),
        layout,
        version: cap.version.clone(),
        entrypoint: cap.entrypoint.clone(),
        extracted_from: Some(path.display().to_string()),
        notes: format!(
            "Extracted from {} (model {}). Holds the release's prompt text and tools: do not commit.",
            path.display(),
            cap.model
        ),
        billing: Billing { salt: BILLING_SALT.into(), cch, suffix_text, header_block: cap.header_block },
        cli_prefix: cli,
        prompt: PromptTemplate { static_sections, dynamic_sections },
        git_status,
        user_context: user_context.as_ref().map(|(t, _)| t.clone()),
        skills: skills_template(&cap.first_texts, env),
        tools: month_templates(&cap.tools, facts.date.as_deref().or(user_context.as_ref().map(|(_, d)| d.as_str()))),
        params: cap.params.clone(),
        betas: cap.betas.clone(),
        models,
        system_cache: SystemCache::default(),
        proactive_agent_header: crate::profile::DEFAULT_PROACTIVE_AGENT_HEADER.into(),
        reminders: seed.reminders.clone(),
        metadata: cap.metadata,
    };
    check_round_trip(path, &profile, &cap, &facts, env, user_context.map(|(_, d)| d))?;
    Ok(profile)
}

/// The tools with "The current month is <Month YYYY>" of the capture's
/// `date` as `{{month_year}}` (see [`super::TOOL_VARS`]).
fn month_templates(tools: &[Value], date: Option<&str>) -> Vec<Value> {
    let Some(my) = date.and_then(crate::time::month_year) else { return tools.to_vec() };
    let from = format!("The current month is {my}");
    tools
        .iter()
        .map(|t| {
            let text = t.to_string();
            if !text.contains(&from) {
                return t.clone();
            }
            serde_json::from_str(&text.replace(&from, "The current month is {{month_year}}"))
                .unwrap_or_else(|_| t.clone())
        })
        .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Render the profile back for the capture's own session and compare.
fn check_round_trip(
    path: &Path,
    p: &Profile,
    cap: &Capture,
    facts: &Facts,
    env: Option<&SessionEnv>,
    date: Option<String>,
) -> Result<(), ProfileError> {
    let Some(env) = env.cloned().or_else(|| facts.to_env()) else { return Ok(()) };
    let (_, sys_ctx) = contexts::contexts(p, &env, None);
    let sections = effective_system_prompt(p, &env, &cap.model, &PromptChoice::default(), &sys_ctx);
    let prefix = cli_prefix(p, true, false);
    let got = system_blocks::to_json(&system_blocks("", prefix, &sections, p));
    let want = Value::Array(cap.system.clone());
    if got != want {
        let mut at = String::from("$");
        let diff = crate::json::diff::first_difference(&want, &got, &mut at);
        let detail = diff.map_or(String::new(), |(p, w, g)| {
            let (w, g) = around_difference(&w, &g);
            format!(": at {p} the capture has {w:?} where it renders {g:?}")
        });
        return Err(err(
            path,
            format!(
                "the extracted profile does not render back to the captured system prompt{detail} \
                 (was the capture run with --system-prompt or --append-system-prompt, or with another env?)"
            ),
        ));
    }
    if let Some(h) = &cap.header {
        let text = p.billing.suffix_text.pick(&refs(&cap.first_texts));
        if &system_blocks::billing_header(p, text) != h {
            return Err(err(path, format!("the billing header `{h}` is not reproduced")));
        }
    }
    let u = cap.first_texts.iter().find(|t| t.contains("\n# currentDate\n") && !t.contains("\n# claudeMd\n"));
    if let (Some(u), Some(date)) = (u, date) {
        let ctx = UserContext { claude_md: None, current_date: date };
        if &contexts::render_user_context(p, &ctx) != u {
            return Err(err(path, "the user-context reminder is not reproduced"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_and_join_back() {
        for t in ["\nA\n\n# B\nb\n\n\n\n# C", "x", "", "# A\n\n# B"] {
            assert_eq!(split_sections(t).join("\n\n"), t, "{t:?}");
        }
        assert_eq!(split_sections("a\n\n# B\n\n\n\n# C"), ["a", "# B\n\n", "# C"]);
    }

    #[test]
    fn model_table_from_text() {
        let texts = vec![
            " - You are powered by the model named Sonnet 4.6. The exact model ID is claude-sonnet-4-6.\n - Assistant knowledge cutoff is August 2025.\n - The most recent Claude model family is Claude 4.5/4.6. Model IDs — Opus 4.6: 'claude-opus-4-6', Sonnet 4.6: 'claude-sonnet-4-6', Haiku 4.5: 'claude-haiku-4-5-20251001'. When building".to_string(),
        ];
        let mut m = Vec::new();
        scan_models(&texts, "claude-sonnet-4-6", &mut m);
        let got: Vec<(&str, &str, Option<&str>)> =
            m.iter().map(|m| (m.id.as_str(), m.name.as_str(), m.knowledge_cutoff.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("claude-sonnet-4-6", "Sonnet 4.6", Some("August 2025")),
                ("claude-opus-4-6", "Opus 4.6", None),
                ("claude-haiku-4-5-20251001", "Haiku 4.5", None)
            ]
        );
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("wire.jsonl");
        let e = extract(&p, None).unwrap_err();
        assert!(matches!(e, ProfileError::Io { .. }) && e.to_string().contains("wire.jsonl"), "{e}");
        std::fs::write(&p, "{not json\n").unwrap();
        let e = extract(&p, None).unwrap_err();
        assert!(matches!(e, ProfileError::Json { .. }) && e.to_string().contains("wire.jsonl"), "{e}");
        std::fs::write(&p, "{\"type\":\"user\"}\n").unwrap();
        let e = extract(&p, None).unwrap_err();
        assert!(matches!(e, ProfileError::Extract { .. }) && e.to_string().contains("wire.jsonl"), "{e}");
    }
}
