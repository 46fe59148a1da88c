//! Preparing the pipeline for one session: profile + environment + what-if
//! overrides → the [`Plan`] and [`Extras`] the stages use. Every choice
//! that differs between releases is a field of the profile's
//! [`crate::profile::Layout`]; this module reads those fields, never a
//! release name.
//!
//! - The environment is the `--env` snapshot when given, else what the
//!   transcript says (`cwd`, `gitBranch`; [`SessionEnv::from_transcript`]
//!   documents the defaults). The date is always the UTC date of the
//!   session's first timestamp.
//! - Memory files come from the snapshot (or `--claude-md-root`); a
//!   transcript does not hold them, so without either there is no claudeMd.
//! - `layout.system_from_shape` (2.1.3xx) and a session with shapes: the
//!   session's recorded system prompt and tools (`api-request-shape`),
//!   edited by the overrides.
//! - Otherwise the system blocks are rendered: with
//!   `layout.system_from_snapshot` and a session that writes
//!   `prompt_snapshot`s (2.1.3xx with its records stripped), from the
//!   session's own prompt sections and CLI prefix ([`super::snapshot`]);
//!   else from the profile (`system_prompt`, `system_blocks`). The
//!   layout's `system_message_params` go on every system turn either way.
//!   The layout's fields add what
//!   the transcript does not hold: the user context prepended
//!   (`user_context_message`), the skills listing per CLI process
//!   (`skills_per_process`), the todo reminder (`todo_reminder`),
//!   conditional rules after the `Read` that brings them in
//!   (`rules_after_read`).
//! - A profile without prompt text (the built-in `seed` / `cc-2.1.328`)
//!   still assembles: the system is the CLI prefix plus any custom/append
//!   text, and the tools are the session's tool names with an empty object
//!   schema ([`Setup::note`] says so, once per run).

use super::contexts::{SystemContext, UserContext, contexts, render_user_context, skills_listing};
use super::plan::{Extras, Plan, ShapeEdits, SystemSource};
use super::snapshot::{PromptSnapshot, session_snapshot};
use super::system_blocks::system_blocks;
use super::system_prompt::{PromptChoice, cli_prefix, cli_prefix_of, effective_system_prompt};
use crate::corpus::Session;
use crate::diag::DiagKind;
use crate::env::SessionEnv;
use crate::env::memory::{self, Memory};
use crate::model::content::BlockKind;
use crate::model::entry::Entry;
use crate::profile::Profile;
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

/// Why a setup could not be made. Every variant names what was given.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The profile could not be loaded.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// The environment snapshot could not be read.
    #[error(transparent)]
    Env(#[from] crate::env::EnvError),
    /// `--cache-ttl` is neither `5m` nor `1h`.
    #[error("--cache-ttl must be 5m or 1h, got {0:?}")]
    CacheTtl(String),
}

/// The pipeline's setup: a profile, an optional environment snapshot and
/// the overrides.
#[derive(Debug, Clone)]
pub struct Setup {
    pub profile: Profile,
    pub env: Option<SessionEnv>,
    pub overrides: Overrides,
}

impl Default for Setup {
    /// The built-in `cc-2.1.328` profile, no snapshot, no override.
    fn default() -> Self {
        Setup { profile: Profile::builtin_cc_2_1_328().clone(), env: None, overrides: Overrides::default() }
    }
}

/// The session facts the setup reads from the transcript.
struct SessionFacts {
    env: SessionEnv,
    model: String,
    /// The model was chosen with `--model` (the environment's argv).
    explicit_model: bool,
    non_interactive: bool,
    has_shapes: bool,
}

impl Setup {
    /// Load `profile` (a built-in name or a file) and `env_dir` (a snapshot in
    /// the captures' `env/` layout).
    pub fn load(profile: &str, env_dir: Option<&std::path::Path>, overrides: Overrides) -> Result<Self, SetupError> {
        let profile = Profile::load(profile)?;
        let env = match env_dir {
            Some(d) => Some(SessionEnv::from_dir(d)?),
            None => None,
        };
        if let Some(t) = &overrides.cache_ttl
            && t != "5m"
            && t != "1h"
        {
            return Err(SetupError::CacheTtl(t.clone()));
        }
        Ok(Setup { profile, env, overrides })
    }

    /// A note for the user when the profile cannot give the client's text.
    pub fn note(&self) -> Option<String> {
        (!self.profile.has_prompt_text()).then(|| {
            format!(
                "profile {:?} has no prompt text: sessions without a recorded shape or prompt snapshot get the CLI prefix as system prompt{}; extract a profile from a capture (ctxasm profile extract) for the real text",
                self.profile.name,
                if self.overrides.tools.is_none() { " and tools named after their tool calls with empty schemas" } else { "" }
            )
        })
    }

    /// The plan and extras of `session`.
    pub fn prepare(&self, session: &Session<'_, '_>) -> (Plan, Extras) {
        let facts = self.facts(session);
        let mut extras = Extras::default();
        // The profile as the session's model gets it (one copy per session
        // when that model has a variant).
        let variant = self.profile.for_session_model(&facts.model, facts.explicit_model);
        let mut plan = self.base_plan(&variant, &facts.model);
        plan.attachment_templates.splice(0..0, super::mcp::attachment_template(&variant, &facts.env));
        render_param_vars(&mut plan.params, &facts.env);
        if self.overrides.effort.is_none() {
            plan.process_params = process_params(&plan, &facts.env.argv);
        }
        let mut choice = PromptChoice {
            custom: self.overrides.system_prompt.clone(),
            append: self.overrides.append_system_prompt.clone(),
            ..PromptChoice::default()
        };
        let memory = self.memory(&facts.env, &mut extras);
        extras.attachment_texts = self.profile.reminders.attachment_texts.clone();
        extras.task_notification = super::notifications::session_template(session)
            .or_else(|| self.profile.reminders.task_notification.clone());
        if first_of(session, |e| e.raw.get_str("entrypoint")).is_none() && facts.env.print_mode() == Some(true) {
            extras.entrypoint = Some("sdk-cli".into());
        }
        if self.profile.layout.system_from_shape && facts.has_shapes {
            plan.system = SystemSource::SessionShape(self.shape_edits(&choice, facts.non_interactive));
            return (plan, extras);
        }
        // No recorded shape: the prompt is rendered from the profile; the
        // system messages carry the layout's params all the same (2.1.288
        // and records-free 2.1.328 send `output_config` without records).
        let trim = self.profile.memory_style().trim;
        let claude_md = memory.as_ref().and_then(|m| m.render_claude_md_as(trim));
        let (user_ctx, sys_ctx) = contexts(&self.profile, &facts.env, claude_md);
        let snapshot = self.profile.layout.system_from_snapshot.then(|| session_snapshot(session)).flatten();
        if snapshot.is_none() {
            // Neither a shape nor a snapshot holds the session's prompt: a
            // what-if wins, else what its CLI was given, when the
            // environment's argv says.
            let from_argv = |flag: &str| facts.env.flag(flag).map(str::to_string);
            choice.custom = choice.custom.or_else(|| from_argv("--system-prompt"));
            choice.append = choice.append.or_else(|| from_argv("--append-system-prompt"));
        }
        plan.system = self.rendered_system(&variant, session, &facts, &choice, &sys_ctx, snapshot.as_ref());
        if snapshot.is_none()
            && let Some(why) = super::mcp::approximation(session, &self.profile, &facts.env)
        {
            extras.warnings.push((DiagKind::ApproximatedMcp, why));
        }
        (plan.resumed_system, plan.resumed_tools) = dropped(&plan.system, &self.profile.layout.resumed_drops);
        if let Some(c) = &self.profile.compaction {
            (plan.compaction_system, plan.compaction_tools) = match &c.own {
                Some(own) => own_compaction(&plan.system, own),
                None => dropped(&plan.system, &c.drops),
            };
        }
        plan.process_systems = self.process_systems(&variant, session, &facts, &choice, &sys_ctx);
        if facts.non_interactive {
            let resumed =
                |a: &Vec<String>| a.iter().any(|x| x == "--continue" || x == "--resume" || x == "-r" || x == "-c");
            plan.resumed_processes = facts.env.argv.iter().map(resumed).collect();
        }
        // The agents keep their own prompts whatever the main one is.
        if self.profile.has_prompt_text() {
            plan.agents = super::agent::agent_plans(&self.profile, &facts.env, &sys_ctx, &facts.model);
        }
        self.extra_pieces(session, &facts, &user_ctx, memory.as_ref(), &mut extras);
        (plan, extras)
    }

    /// The model of `session`'s main chain: its first reply's; a process
    /// that wrote no reply of its own (2.0.x `--continue` running only
    /// `/compact` writes its warmups under an id with an empty main file)
    /// has the model of a subagent that is not a warmup (a warmup's is its
    /// agent's), else the release's default (the profile's first model,
    /// its capture's), else a warmup's.
    fn session_model<'a>(&self, session: &Session<'a, '_>) -> Option<String> {
        let reply = |e: &Entry<'a>| e.as_assistant().and_then(|a| a.model).filter(|m| *m != "<synthetic>");
        let of = |f: &crate::corpus::ParsedFile<'a, '_>| f.parsed.entries.iter().find_map(reply);
        let warmup = |f: &&crate::corpus::ParsedFile<'a, '_>| {
            super::agent::first_prompt(&f.parsed.entries).is_some_and(|(text, _)| {
                self.profile.agents.iter().any(|a| a.subagent_type.is_none() && a.warmup == text)
            })
        };
        let model =
            session.main.iter().find_map(of).or_else(|| session.subagents.iter().filter(|f| !warmup(f)).find_map(of));
        model
            .map(str::to_string)
            .or_else(|| self.profile.models.first().map(|m| m.id.clone()))
            .or_else(|| session.subagents.iter().find_map(of).map(str::to_string))
    }

    /// The environment, model and kind of `session`.
    fn facts(&self, session: &Session<'_, '_>) -> SessionFacts {
        let date = first_of(session, |e| e.env.timestamp.filter(|t| t.len() >= 10).map(|t| t[..10].to_string()));
        let mut env = match &self.env {
            Some(env) => env.clone(),
            None => {
                let cwd = first_of(session, |e| e.env.shared.cwd).unwrap_or("/");
                let branch = first_of(session, |e| e.env.shared.git_branch.filter(|b| !b.is_empty()));
                SessionEnv::from_transcript(cwd, branch, date.as_deref())
            }
        };
        env.date = date.or(env.date);
        let model = self.overrides.model.clone().or_else(|| self.session_model(session)).unwrap_or_default();
        let entrypoint = first_of(session, |e| e.raw.get_str("entrypoint"));
        let has_shapes = session.has_shapes();
        // As the transcript's entrypoint says (2.1.x writes `sdk-cli` for
        // `-p`), else as the snapshot's argv does (1.0.x/2.0.x write none).
        let non_interactive = match entrypoint {
            Some(e) => e != "cli",
            None => env.print_mode().unwrap_or(false),
        };
        let explicit_model = env.flag("--model").is_some();
        SessionFacts { env, model, explicit_model, non_interactive, has_shapes }
    }

    /// The plan of `profile` (the profile as `model` gets it: its variant's
    /// prompt, params and attachment renderings) with the model's own params
    /// and the overrides' params, model and TTL.
    fn base_plan(&self, profile: &Profile, model: &str) -> Plan {
        let o = &self.overrides;
        let mut plan = Plan::of_profile(profile);
        plan.params = profile.params_for(model);
        if let Some(effort) = &o.effort {
            match plan.params.iter_mut().find(|(k, _)| k == "output_config") {
                Some((_, v)) => v["effort"] = json!(effort),
                None => plan.params.push(("output_config".into(), json!({ "effort": effort }))),
            }
        }
        if let Some(ttl) = &o.cache_ttl {
            plan.cache_control["ttl"] = json!(ttl);
        }
        plan.model.clone_from(&o.model);
        plan
    }

    /// The what-if edits of a session's recorded shapes.
    fn shape_edits(&self, choice: &PromptChoice, non_interactive: bool) -> ShapeEdits {
        let prefix_changes = choice.append.is_some() || choice.custom.is_some();
        ShapeEdits {
            prefix: prefix_changes
                .then(|| cli_prefix(&self.profile, non_interactive, choice.append.is_some()).to_string()),
            prompt: choice.custom.clone(),
            append: choice.append.clone(),
            tools: self.overrides.tools.clone().map(Value::Array),
        }
    }

    /// System blocks and tools rendered from the profile, or from the
    /// session's prompt snapshot when it has one (its sections and prefix
    /// first; its tools where the profile has none).
    fn rendered_system(
        &self,
        p: &Profile,
        session: &Session<'_, '_>,
        facts: &SessionFacts,
        choice: &PromptChoice,
        sys_ctx: &SystemContext,
        snapshot: Option<&PromptSnapshot>,
    ) -> SystemSource {
        let env = &facts.env;
        let sections = match snapshot {
            Some(s) => snapshot_sections(s, choice),
            None if p.has_prompt_text() => effective_system_prompt(p, env, &facts.model, choice, sys_ctx),
            None => choice.custom.iter().chain(choice.append.iter()).cloned().collect(),
        };
        // A what-if prompt change picks the profile's prefix for it, as for
        // a recorded shape (`shape_edits`); else the session's own.
        let unchanged = choice.custom.is_none() && choice.append.is_none();
        let own_prefix = snapshot.and_then(|s| s.cli_prefix.as_deref()).filter(|_| unchanged);
        let prefix = own_prefix.unwrap_or_else(|| {
            cli_prefix_of(p, facts.non_interactive, choice.append.is_some(), choice.custom.is_some())
        });
        let blocks = system_blocks("", prefix, &sections, p);
        let tools = self
            .overrides
            .tools
            .clone()
            .or_else(|| {
                let model_name = p.model(&facts.model).map_or(facts.model.as_str(), |m| m.name.as_str());
                let skills = super::contexts::skills_tool_lines(env);
                // A custom prompt's tools also when a snapshot holds the
                // prompt and the argv says it was custom (2.1.275).
                let custom = choice.custom.is_some() || env.flag("--system-prompt").is_some();
                let list = match (&p.custom_prompt_tools, custom) {
                    (Some(t), true) => t,
                    _ => &p.tools,
                };
                (!list.is_empty()).then(|| {
                    let tools = crate::profile::render_tool_list(list, env.date.as_deref(), &skills, model_name);
                    super::mcp::with_tools(tools, p, env, session)
                })
            })
            .or_else(|| snapshot.and_then(|s| s.tools.clone()))
            .unwrap_or_else(|| session_tools(session));
        SystemSource::Rendered {
            blocks: blocks.iter().map(|b| b.to_json()).collect(),
            tools: Some(Value::Array(tools)),
        }
    }

    /// The system blocks of each later `-p` process whose arguments render
    /// them otherwise (`processes.rs`).
    fn process_systems(
        &self,
        p: &Profile,
        session: &Session<'_, '_>,
        facts: &SessionFacts,
        choice: &PromptChoice,
        sys_ctx: &SystemContext,
    ) -> Vec<Option<Vec<Value>>> {
        let env = &facts.env;
        if !facts.non_interactive || !self.profile.has_prompt_text() || self.profile.allowed_tools.is_none() {
            return Vec::new();
        }
        let first = env.allowed_tools();
        let mut out: Vec<Option<Vec<Value>>> = (0..env.argv.len())
            .map(|k| {
                let env_k = super::processes::env_of(env, k);
                (env_k.allowed_tools() != first).then(|| {
                    let f = SessionFacts { env: env_k, model: facts.model.clone(), ..*facts };
                    match self.rendered_system(p, session, &f, choice, sys_ctx, None) {
                        SystemSource::Rendered { blocks, .. } => blocks,
                        SystemSource::SessionShape(_) => Vec::new(),
                    }
                })
            })
            .collect();
        if out.iter().all(Option::is_none) {
            out.clear();
        }
        out
    }

    /// The pieces the layout adds that the transcript does not hold.
    fn extra_pieces(
        &self,
        session: &Session<'_, '_>,
        facts: &SessionFacts,
        user_ctx: &UserContext,
        memory: Option<&Memory>,
        extras: &mut Extras,
    ) {
        let p = &self.profile;
        let l = &p.layout;
        // The wire texts end with the "\n" the merge of consecutive user
        // messages appends (normalize rule 4).
        // Without that "\n" they are sent as rendered.
        let newline = l.merges_with_newline();
        let unmerge = |t: String| t.strip_suffix('\n').filter(|_| newline).map(str::to_string).unwrap_or(t);
        if l.user_context_message {
            let uc = render_user_context(p, user_ctx);
            extras.user_context = (!uc.is_empty()).then(|| unmerge(uc));
        }
        if l.skills_per_process {
            extras.per_process = skills_listing(p, &facts.env).map(unmerge);
        }
        if l.todo_reminder {
            extras.todo_reminder = p.reminders.todo.clone().map(|t| (t, p.reminders.todo_every));
        }
        if l.rules_after_read
            && let Some(m) = memory
        {
            rule_reminders(session, m, extras);
        }
    }
}

/// Per CLI process (`argv`: each process's arguments, the `--env`
/// snapshot's), the params its `--effort X` sets: `output_config.effort`,
/// when the release sends an `output_config` (2.1.332 captures: the
/// requests of a resumed process with `--effort high` say `high`).
fn process_params(plan: &Plan, argv: &[Vec<String>]) -> Vec<Vec<(String, Value)>> {
    let Some((_, config)) = plan.params.iter().find(|(k, _)| k == "output_config") else { return Vec::new() };
    let effort_of = |args: &[String]| -> Option<String> {
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--effort" {
                return it.next().cloned();
            }
            if let Some(v) = a.strip_prefix("--effort=") {
                return Some(v.to_string());
            }
        }
        None
    };
    if !argv.iter().any(|a| effort_of(a).is_some()) {
        return Vec::new();
    }
    argv.iter()
        .map(|args| {
            let mut c = config.clone();
            match effort_of(args) {
                Some(e) if c.is_object() => {
                    c["effort"] = json!(e);
                    vec![("output_config".to_string(), c)]
                }
                _ => Vec::new(),
            }
        })
        .collect()
}

/// The prompt sections of a session's snapshot under the what-if choice:
/// a custom prompt replaces them, an appended text is their last section.
fn snapshot_sections(snapshot: &PromptSnapshot, choice: &PromptChoice) -> Vec<String> {
    let base = match &choice.custom {
        Some(c) => vec![c.clone()],
        None => snapshot.sections.clone(),
    };
    base.into_iter().chain(choice.append.iter().cloned()).collect()
}

/// The system blocks and tools of a compaction sent as its own request:
/// the rendered CLI prefix block, then its texts marked as that block is;
/// the rendered tools it names.
fn own_compaction(system: &SystemSource, own: &crate::profile::OwnCompaction) -> (Option<Vec<Value>>, Option<Value>) {
    let SystemSource::Rendered { blocks, tools } = system else { return (None, None) };
    let Some(prefix) = blocks.first() else { return (None, None) };
    let mut out = vec![prefix.clone()];
    for text in &own.system {
        let mut b = prefix.clone();
        b["text"] = Value::from(text.as_str());
        out.push(b);
    }
    let named = |n: &String| tools.as_ref()?.as_array()?.iter().find(|t| t["name"] == n.as_str()).cloned();
    let tools: Vec<Value> = own.tools.iter().filter_map(named).collect();
    (Some(out), Some(Value::Array(tools)))
}

/// The rendered blocks and tools without `drops` (a resumed process's, a
/// compaction's), each `None` when it does not change.
fn dropped(system: &SystemSource, drops: &[String]) -> (Option<Vec<Value>>, Option<Value>) {
    let blocks = resumed_blocks(system, drops);
    let tools = match system {
        SystemSource::Rendered { tools: Some(t), .. } if !drops.is_empty() => {
            // Every occurrence: Bash's Co-Authored-By line names the model.
            let text = drops.iter().fold(t.to_string(), |s, d| s.replace(d.as_str(), ""));
            serde_json::from_str::<Value>(&text).ok().filter(|r| r != t)
        }
        _ => None,
    };
    (blocks, tools)
}

/// The rendered blocks without the layout's `resumed_drops` (each at its
/// first place after the one before, over the blocks in order); `None`
/// when nothing is dropped.
fn resumed_blocks(system: &SystemSource, drops: &[String]) -> Option<Vec<Value>> {
    let SystemSource::Rendered { blocks, .. } = system else { return None };
    if drops.is_empty() {
        return None;
    }
    let mut out = blocks.clone();
    let mut next = drops.iter().peekable();
    for b in out.iter_mut() {
        let Some(text) = b.get("text").and_then(Value::as_str) else { continue };
        let mut text = text.to_string();
        let mut from = 0;
        while let Some(d) = next.peek() {
            let Some(at) = text.get(from..).and_then(|t| t.find(d.as_str())) else { break };
            text.replace_range(from + at..from + at + d.len(), "");
            from += at;
            next.next();
        }
        b["text"] = Value::String(text);
    }
    (out != *blocks).then_some(out)
}

/// The params' [`crate::profile::PARAM_VARS`] with the session's values.
fn render_param_vars(params: &mut [(String, Value)], env: &SessionEnv) {
    for (_, v) in params.iter_mut() {
        let text = v.to_string();
        if !text.contains("{{cwd}}") && !text.contains("{{home}}") {
            continue;
        }
        let esc = |s: &str| serde_json::to_string(s).unwrap_or_default().trim_matches('"').to_string();
        let text = text.replace("{{cwd}}", &esc(&env.cwd)).replace("{{home}}", &esc(&env.home));
        if let Ok(rendered) = serde_json::from_str(&text) {
            *v = rendered;
        }
    }
}

/// The first value of `f` over the session's conversation entries.
fn first_of<'a, T>(session: &Session<'a, '_>, f: impl Fn(&Entry<'a>) -> Option<T>) -> Option<T> {
    session.main.iter().chain(session.subagents.iter()).flat_map(|p| p.parsed.entries.iter()).find_map(f)
}

impl Setup {
    /// The session's memory files, when a snapshot of them exists.
    fn memory(&self, env: &SessionEnv, extras: &mut Extras) -> Option<Memory> {
        let project_dir = self.overrides.claude_md_root.clone().or_else(|| env.project_dir.clone());
        if project_dir.is_none() && env.home_claude_dir.is_none() {
            return None;
        }
        let style = self.profile.memory_style();
        let mut roots = env.memory_roots();
        roots.project_dir = project_dir;
        roots.keep_comments = !style.strip_comments;
        roots.no_rules = !style.rules;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::extract::extract;
    use crate::corpus::{RunOptions, for_each_session_of};
    use crate::input::discover::discover;
    use std::path::Path;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    /// The plan and extras `setup` prepares for the session of `scenario`.
    fn prepared(setup: &Setup, scenario: &str) -> (Plan, Extras) {
        let disc = discover(&[Path::new(FIX).join(scenario).join("transcripts")]);
        let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| setup.prepare(s));
        out.into_iter().next().unwrap().unwrap()
    }

    fn seed_setup(scenario: &str) -> Setup {
        let hello = Path::new(FIX).join("cc-2.1.88/hello");
        let env = SessionEnv::from_dir(&hello.join("env")).unwrap();
        let profile = extract(&hello.join("wire.jsonl"), Some(&env)).unwrap();
        let env = SessionEnv::from_dir(&Path::new(FIX).join(scenario).join("env")).unwrap();
        Setup { profile, env: Some(env), overrides: Overrides::default() }
    }

    #[test]
    fn resumed_blocks_drop_each_text_once_in_order() {
        let system = SystemSource::Rendered {
            blocks: vec![
                json!({"type": "text", "text": "a"}),
                json!({"type": "text", "text": "Opus (1M context) id[1m] [1m]"}),
            ],
            tools: None,
        };
        let drops = [" (1M context)".to_string(), "[1m]".to_string()];
        let got = resumed_blocks(&system, &drops).unwrap();
        assert_eq!(got[1]["text"], "Opus id [1m]");
        assert_eq!(resumed_blocks(&system, &[]), None);
    }

    #[test]
    fn recorded_shapes_are_used_when_the_layout_says_so() {
        let (plan, extras) = prepared(&Setup::default(), "cc-2.1.328/hello");
        assert!(matches!(plan.system, SystemSource::SessionShape(ref e) if e.is_empty()));
        assert_eq!(plan.system_message_params, ["output_config"]);
        assert!(extras.user_context.is_none() && extras.per_process.is_none() && extras.todo_reminder.is_none());
    }

    #[test]
    fn a_session_without_shapes_gets_the_profile_rendered() {
        // The built-in profile has no prompt text: the CLI prefix and the
        // session's tool names with empty schemas (Setup::note says so).
        let setup = Setup::default();
        assert!(setup.note().is_some_and(|n| n.contains("no prompt text")));
        let (plan, extras) = prepared(&setup, "cc-2.1.88/bash-tool");
        let SystemSource::Rendered { blocks, tools } = &plan.system else { panic!("{:?}", plan.system) };
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        assert_eq!(blocks[0]["text"], setup.profile.cli_prefix.sdk);
        assert_eq!(
            tools.as_ref().unwrap(),
            &json!([{"name": "Bash", "description": "", "input_schema": {"type": "object"}}])
        );
        // The layout's system-message params stay (2.1.328 records-free).
        assert_eq!(plan.system_message_params, ["output_config"]);
        assert!(extras.user_context.is_none() && extras.per_process.is_none());
    }

    #[test]
    fn a_session_without_shapes_uses_its_prompt_snapshot() {
        // 2.1.328 custom-system-prompt without its records, the built-in
        // profile (no prompt text, no tools): the session's snapshot gives
        // the prompt `--system-prompt` made, the prefix and the tools.
        let src = Path::new(FIX).join("cc-2.1.328/custom-system-prompt/transcripts");
        let dir = tempfile::tempdir().unwrap();
        for f in discover(&[src]).files {
            let text = std::fs::read_to_string(&f.path).unwrap();
            let kept: String =
                text.lines().filter(|l| !l.contains("\"api-request")).map(|l| format!("{l}\n")).collect();
            std::fs::write(dir.path().join(f.path.file_name().unwrap()), kept).unwrap();
        }
        let disc = discover(&[dir.path().to_path_buf()]);
        let setup = Setup::default();
        let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| setup.prepare(s));
        let (plan, _) = out.into_iter().next().unwrap().unwrap();
        let SystemSource::Rendered { blocks, tools } = &plan.system else { panic!("{:?}", plan.system) };
        let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        assert_eq!(texts, [setup.profile.cli_prefix.sdk.as_str(), "You are a terse reviewer."]);
        assert_eq!(tools.as_ref().and_then(Value::as_array).map(Vec::len), Some(11));
        // A what-if append is the last section, with the profile's prefix for it.
        let overrides = Overrides { append_system_prompt: Some("Answer in French.".into()), ..Overrides::default() };
        let setup = Setup { overrides, ..Setup::default() };
        let out = for_each_session_of(&disc, &disc.groups, &RunOptions::default(), |_, s| setup.prepare(s));
        let (plan, _) = out.into_iter().next().unwrap().unwrap();
        let SystemSource::Rendered { blocks, .. } = &plan.system else { panic!("{:?}", plan.system) };
        assert_eq!(blocks[0]["text"], setup.profile.cli_prefix.sdk_with_append);
        assert_eq!(blocks[1]["text"], "You are a terse reviewer.\n\nAnswer in French.");
    }

    #[test]
    fn the_seed_layout_adds_the_pieces_the_transcript_does_not_hold() {
        let setup = seed_setup("cc-2.1.88/long-session");
        assert!(setup.note().is_none());
        let (plan, extras) = prepared(&setup, "cc-2.1.88/long-session");
        let SystemSource::Rendered { blocks, tools } = &plan.system else { panic!("{:?}", plan.system) };
        // prefix, static (global scope), dynamic: the billing header is the body stage's.
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[1]["cache_control"], json!({"type": "ephemeral", "scope": "global"}));
        assert_eq!(tools.as_ref().and_then(Value::as_array).map(Vec::len), Some(22));
        assert!(extras.user_context.as_deref().is_some_and(|t| t.contains("# currentDate")));
        assert!(extras.per_process.as_deref().is_some_and(|t| t.contains("skills")));
        assert_eq!(extras.todo_reminder.as_ref().map(|(_, every)| *every), Some(10));
        assert!(plan.attachments_into_tool_result);
        assert_eq!(plan.billing_text, crate::profile::SuffixText::FirstText);
        assert_eq!(plan.billing_extra, " cch=00000;");
    }

    #[test]
    fn overrides_reach_the_plan() {
        let overrides = Overrides {
            model: Some("claude-haiku-4-5".into()),
            effort: Some("low".into()),
            cache_ttl: Some("1h".into()),
            append_system_prompt: Some("Answer in French.".into()),
            ..Overrides::default()
        };
        let setup = Setup { overrides, ..Setup::default() };
        let (plan, _) = prepared(&setup, "cc-2.1.328/hello");
        assert_eq!(plan.model.as_deref(), Some("claude-haiku-4-5"));
        assert_eq!(plan.cache_control, json!({"type": "ephemeral", "ttl": "1h"}));
        let effort = plan.params.iter().find(|(k, _)| k == "output_config").map(|(_, v)| v.clone());
        assert_eq!(effort, Some(json!({"effort": "low"})));
        let SystemSource::SessionShape(edits) = &plan.system else { panic!("{:?}", plan.system) };
        assert_eq!(edits.append.as_deref(), Some("Answer in French."));
        assert_eq!(edits.prefix.as_deref(), Some(setup.profile.cli_prefix.sdk_with_append.as_str()));
    }

    #[test]
    fn each_process_effort_comes_from_its_argv() {
        let plan = Plan::cc_2_1_328();
        let argv = |v: &[&[&str]]| v.iter().map(|a| a.iter().map(|x| x.to_string()).collect()).collect::<Vec<_>>();
        assert!(process_params(&plan, &argv(&[&["-p"], &["-p", "--resume", "x"]])).is_empty());
        let got = process_params(&plan, &argv(&[&["-p"], &["-p", "--effort", "high"], &["--effort=low"]]));
        let efforts: Vec<Option<Value>> = got.iter().map(|p| p.first().map(|(_, v)| v["effort"].clone())).collect();
        assert_eq!(efforts, [None, Some(json!("high")), Some(json!("low"))]);
        assert_eq!(got[1][0].0, "output_config");
        // A release that sends no output_config: nothing to set.
        let mut old = Plan::cc_2_1_328();
        old.params.retain(|(k, _)| k != "output_config");
        assert!(process_params(&old, &argv(&[&["--effort", "high"]])).is_empty());
    }

    #[test]
    fn load_errors_are_typed() {
        let bad_ttl = Overrides { cache_ttl: Some("2h".into()), ..Overrides::default() };
        let err = Setup::load("cc-2.1.328", None, bad_ttl).unwrap_err();
        assert!(matches!(err, SetupError::CacheTtl(ref t) if t == "2h"), "{err}");
        assert_eq!(err.to_string(), "--cache-ttl must be 5m or 1h, got \"2h\"");
        assert!(matches!(Setup::load("no-such", None, Overrides::default()), Err(SetupError::Profile(_))));
        let missing = Path::new(FIX).join("no-such-env");
        assert!(matches!(Setup::load("seed", Some(&missing), Overrides::default()), Err(SetupError::Env(_))));
    }
}
