//! Preparing the pipeline for one session: profile + environment + what-if
//! overrides → the [`Layout`] and [`Extras`] the message stages use.
//!
//! - The environment is the `--env` snapshot when given, else what the
//!   transcript says (`cwd`, `gitBranch`; [`SessionEnv::from_transcript`]
//!   documents the defaults). The date is always the UTC date of the
//!   session's first timestamp.
//! - Memory files come from the snapshot (or `--claude-md-root`); a
//!   transcript does not hold them, so without either there is no claudeMd.
//! - Layout `cc-2.1.328`: the session's recorded system prompt and tools
//!   (`api-request-shape`), edited by the overrides; a session without
//!   shapes falls back to the profile's rendered prompt.
//! - Layout `seed`: system blocks rendered from the profile
//!   (`system_prompt`, `system_blocks`), the user context prepended, the
//!   skills listing per CLI process, the todo reminder, conditional rules
//!   after the `Read` that brings them in.
//! - A profile without prompt text (the built-in `seed` / `cc-2.1.328`)
//!   still assembles: the system is the CLI prefix plus any custom/append
//!   text, and the tools are the session's tool names with an empty object
//!   schema ([`ProfilePrep::note`] says so, once per run).

use super::contexts::{contexts, render_user_context, skills_listing};
use super::driver::PipelinePrep;
use super::pipeline::{BillingText, Extras, Layout, ShapeEdits, SystemSource};
use super::system_blocks::system_blocks;
use super::system_prompt::{PromptChoice, cli_prefix, effective_system_prompt};
use crate::corpus::Session;
use crate::diag::DiagKind;
use crate::env::SessionEnv;
use crate::env::memory::{self, Memory, MemoryRoots};
use crate::model::content::BlockKind;
use crate::model::entry::{Entry, EntryKind};
use crate::profile::{self, Profile, SuffixText};
use serde_json::{Value, json};
use std::path::PathBuf;

/// What-if changes (`assemble --mode pipeline` flags).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Replaces the default system prompt (`--system-prompt-file`).
    pub system_prompt: Option<String>,
    /// Appended last (`--append-system-prompt`).
    pub append_system_prompt: Option<String>,
    /// Model of every request (`--model`).
    pub model: Option<String>,
    /// Memory files are read from this directory as the session's cwd
    /// (`--claude-md-root`).
    pub claude_md_root: Option<PathBuf>,
    /// The tool list (`--tools FILE`: a JSON array).
    pub tools: Option<Vec<Value>>,
    /// `5m` or `1h` on every cache breakpoint (`--cache-ttl`).
    pub cache_ttl: Option<String>,
    /// `output_config.effort` (`--effort`).
    pub effort: Option<String>,
}

/// The pipeline's setup: a profile, an optional environment snapshot and
/// the overrides.
#[derive(Debug, Clone)]
pub struct ProfilePrep {
    pub profile: Profile,
    pub env: Option<SessionEnv>,
    pub overrides: Overrides,
}

impl ProfilePrep {
    /// Load `profile` (a built-in name or a file) and `env_dir` (a snapshot in
    /// the captures' `env/` layout).
    pub fn load(profile: &str, env_dir: Option<&std::path::Path>, overrides: Overrides) -> Result<Self, String> {
        let profile = Profile::load(profile).map_err(|e| e.to_string())?;
        let env = match env_dir {
            Some(d) => Some(SessionEnv::from_dir(d).map_err(|e| e.to_string())?),
            None => None,
        };
        if let Some(t) = &overrides.cache_ttl
            && t != "5m"
            && t != "1h"
        {
            return Err(format!("--cache-ttl must be 5m or 1h, got {t:?}"));
        }
        Ok(ProfilePrep { profile, env, overrides })
    }
}

impl ProfilePrep {
    /// A note for the user when the profile cannot give the client's text.
    pub fn note(&self) -> Option<String> {
        (!self.profile.has_prompt_text()).then(|| {
            format!(
                "profile {:?} has no prompt text: sessions without a recorded shape get the CLI prefix as system prompt{}; extract a profile from a capture (ctxasm profile extract) for the real text",
                self.profile.name,
                if self.overrides.tools.is_none() { " and tools named after their tool calls with empty schemas" } else { "" }
            )
        })
    }
}

/// The first value of `f` over the session's conversation entries.
fn first_of<'a, T>(session: &Session<'a, '_>, f: impl Fn(&Entry<'a>) -> Option<T>) -> Option<T> {
    session.main.iter().chain(session.subagents.iter()).flat_map(|p| p.parsed.entries.iter()).find_map(f)
}

impl PipelinePrep for ProfilePrep {
    fn prepare(&self, session: &Session<'_, '_>) -> Result<(Layout, Extras), String> {
        let p = &self.profile;
        let o = &self.overrides;
        let mut extras = Extras::default();
        let date = first_of(session, |e| e.env.timestamp.filter(|t| t.len() >= 10).map(|t| t[..10].to_string()));
        let mut env = match &self.env {
            Some(env) => env.clone(),
            None => {
                let cwd = first_of(session, |e| e.env.cwd).unwrap_or("/");
                let branch = first_of(session, |e| e.env.git_branch.filter(|b| !b.is_empty()));
                SessionEnv::from_transcript(cwd, branch, date.as_deref())
            }
        };
        env.date = date.or(env.date);
        let model = o
            .model
            .clone()
            .or_else(|| first_of(session, |e| e.as_assistant().and_then(|a| a.model).map(str::to_string)))
            .unwrap_or_default();
        let entrypoint = first_of(session, |e| e.raw.get_str("entrypoint")).unwrap_or("cli");
        let non_interactive = entrypoint != "cli";
        let has_shapes = session
            .files()
            .any(|f| f.parsed.entries.iter().any(|e| matches!(e.kind, EntryKind::ApiRequestShape { .. })));

        // Params, betas, breakpoint value.
        let mut params: Vec<(String, Value)> = p.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if let Some(effort) = &o.effort {
            match params.iter_mut().find(|(k, _)| k == "output_config") {
                Some((_, v)) => v["effort"] = json!(effort),
                None => params.push(("output_config".into(), json!({ "effort": effort }))),
            }
        }
        let mut cache_control = json!({"type": "ephemeral"});
        if let Some(ttl) = &o.cache_ttl {
            cache_control["ttl"] = json!(ttl);
        }
        let mut layout = Layout {
            params,
            betas: p.betas.clone(),
            billing_extra: p.billing.cch.clone().unwrap_or_default(),
            billing_text: match p.billing.suffix_text {
                SuffixText::FirstText => BillingText::FirstBlock,
                SuffixText::FirstNonReminder => BillingText::FirstNonReminder,
            },
            model: o.model.clone(),
            cache_control,
            ..Layout::cc_2_1_328()
        };
        let choice = PromptChoice {
            custom: o.system_prompt.clone(),
            append: o.append_system_prompt.clone(),
            ..PromptChoice::default()
        };
        let tools: Option<Vec<Value>> =
            o.tools.clone().or_else(|| (!p.tools.is_empty()).then(|| p.render_tools(env.date.as_deref())));
        let memory = self.memory(&env, &mut extras);

        if p.layout == profile::Layout::Cc2_1_328 && has_shapes {
            // The session's own prompt and tools, edited.
            let prefix_changes = choice.append.is_some() || choice.custom.is_some();
            layout.system = SystemSource::SessionShape(ShapeEdits {
                prefix: prefix_changes.then(|| cli_prefix(p, non_interactive, choice.append.is_some()).to_string()),
                prompt: choice.custom.clone(),
                append: choice.append.clone(),
                tools: o.tools.clone().map(Value::Array),
            });
            return Ok((layout, extras));
        }
        // No recorded shape: the prompt is rendered from the profile.
        layout.system_message_params.clear();
        layout.attachments_into_tool_result = p.layout == profile::Layout::Seed;
        let claude_md = memory.as_ref().and_then(Memory::render_claude_md);
        let (user_ctx, sys_ctx) = contexts(p, &env, claude_md);
        let sections = if p.has_prompt_text() {
            effective_system_prompt(p, &env, &model, &choice, &sys_ctx)
        } else {
            choice.custom.iter().chain(choice.append.iter()).cloned().collect()
        };
        let prefix = cli_prefix(p, non_interactive, choice.append.is_some());
        let blocks = system_blocks("", prefix, &sections, p);
        let tools = tools.unwrap_or_else(|| session_tools(session));
        layout.system = SystemSource::Rendered {
            blocks: blocks.iter().map(|b| b.to_json()).collect(),
            tools: Some(Value::Array(tools)),
        };
        if p.layout == profile::Layout::Seed {
            // The context pieces: the wire texts end with the "\n" the merge
            // of consecutive user messages appends (normalize rule 4).
            let unmerge = |t: String| t.strip_suffix('\n').map(str::to_string).unwrap_or(t);
            let uc = render_user_context(p, &user_ctx);
            extras.user_context = (!uc.is_empty()).then(|| unmerge(uc));
            extras.per_process = skills_listing(p, &env).map(unmerge);
            extras.todo_reminder = p.reminders.todo.clone().map(|t| (t, p.reminders.todo_every));
            if let Some(m) = &memory {
                rule_reminders(session, m, &mut extras);
            }
        }
        Ok((layout, extras))
    }
}

impl ProfilePrep {
    /// The session's memory files, when a snapshot of them exists.
    fn memory(&self, env: &SessionEnv, extras: &mut Extras) -> Option<Memory> {
        let project_dir = self.overrides.claude_md_root.clone().or_else(|| env.project_dir.clone());
        if project_dir.is_none() && env.home_claude_dir.is_none() {
            return None;
        }
        let mut roots = MemoryRoots::new(&env.cwd, &env.home);
        roots.project_dir = project_dir;
        roots.home_claude_dir = env.home_claude_dir.clone();
        let m = memory::load(&roots);
        for w in &m.warnings {
            extras.warnings.push((DiagKind::MemoryRefused, format!("{}: {}", w.path, w.message)));
        }
        Some(m)
    }
}

/// Conditional rules brought in by `Read` results: each rule once, after the
/// first result of a matching file (2.1.88 memory-files capture).
fn rule_reminders(session: &Session<'_, '_>, m: &Memory, extras: &mut Extras) {
    if m.conditional.is_empty() {
        return;
    }
    let mut sent: Vec<String> = Vec::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            let Some(u) = e.as_user() else { continue };
            let Some(path) = u.tool_use_result.and_then(|r| r.get("file")).and_then(|f| f.get_str("filePath")) else {
                continue;
            };
            let Some(uuid) = e.env.uuid else { continue };
            for rule in m.rules_for(path) {
                if sent.contains(&rule.path) {
                    continue;
                }
                sent.push(rule.path.clone());
                extras.after_read.entry(uuid.to_string()).or_default().push(Memory::render_rule_reminder(rule));
            }
        }
    }
}

/// Tool definitions for a session when the profile has none: each tool name
/// the session calls, with an empty object schema (valid for the API, not
/// what the client sent).
fn session_tools(session: &Session<'_, '_>) -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            let Some(a) = e.as_assistant() else { continue };
            for b in a.content.blocks() {
                if let BlockKind::ToolUse { name, .. } = b.kind
                    && !names.contains(&name)
                {
                    names.push(name);
                }
            }
        }
    }
    names.into_iter().map(|n| json!({"name": n, "description": "", "input_schema": {"type": "object"}})).collect()
}
