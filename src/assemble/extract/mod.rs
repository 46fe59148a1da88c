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
//! rebuilt from it, `tests/it/system_side.rs`) and `tests/fixtures/cc-2.1.328/hello`.
//!
//! [`capture`] reads a capture, [`templates`] turns its text into templates,
//! [`detect`] reads the layout choices its later requests show, [`models`]
//! and [`agents`] what changes with the model and the warmed-up agents;
//! this module builds, merges and checks the profile.

use super::pipeline::contexts::{self, UserContext};
use super::pipeline::system_blocks::{self, system_blocks};
use super::pipeline::system_prompt::{PromptChoice, cli_prefix, effective_system_prompt};
use super::wire::{self, BILLING_SALT, billing_suffix};
use crate::env::SessionEnv;
use crate::profile::{
    Billing, CliPrefixes, DYNAMIC_VARS, GIT_VARS, GitStatusTemplate, Layout, Profile, ProfileError, PromptTemplate,
    SuffixText, SystemCache, template,
};
use serde_json::{Map, Value};
use std::path::Path;

mod agents;
mod aliases;
mod attachments;
mod capture;
mod compaction;
mod detect;
mod mcp;
mod models;
mod notifications;
mod reminders;
mod subagent;
mod templates;

pub use subagent::learn_subagent;

use capture::*;
use detect::*;
use templates::*;

fn err(path: &Path, message: impl Into<String>) -> ProfileError {
    ProfileError::Extract { path: path.into(), message: message.into() }
}

/// Extract a profile from `path` (a `wire.jsonl`, or a transcript with
/// recorded requests) with the session's environment when known (see the
/// module docs).
pub fn extract(path: &Path, env: Option<&SessionEnv>) -> Result<Profile, ProfileError> {
    extract_with_model(path, env).map(|(p, _)| p)
}

/// [`extract`], and the model the capture ran with.
fn extract_with_model(path: &Path, env: Option<&SessionEnv>) -> Result<(Profile, String), ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.into(), source })?;
    let mut lines: Vec<Value> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines.push(serde_json::from_str(line).map_err(|source| ProfileError::Json { path: path.into(), source })?);
    }
    let wire = lines.iter().find(|v| is_messages_request(v));
    let cap = match wire {
        Some(req) => from_wire(path, req)?,
        None => from_transcript(path, &lines)?,
    };
    let held = if wire.is_some() { transcripts_beside(path) } else { vec![text] };
    let model = cap.model.clone();
    let mut profile = build(path, cap, env, &held)?;
    if let Some(main) = wire {
        let texts: Vec<String> = main
            .pointer("/body/system")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string))
            .collect();
        let facts = capture_facts(env, &texts);
        profile.agents = agents::warmup_agents(&lines, main, &held, &facts, &mut profile.models);
        // Every agent's Bash tool names the session's model, not its own.
        let main_name = profile.model(&model).map(|m| m.name.clone());
        for a in &mut profile.agents {
            a.tools = skills_templates(&month_templates(&a.tools, facts.date.as_deref()), env);
            if let Some(name) = &main_name {
                a.tools = models::templated(&a.tools, name);
            }
        }
    }
    // Breakpoints on more than the last message (2.0.77: the last two) show
    // only in a request of several messages: count them over the capture.
    let marked = |m: &Value| {
        m.get("content").and_then(Value::as_array).is_some_and(|c| c.iter().any(|b| b.get("cache_control").is_some()))
    };
    let most = message_lists(&lines).map(|ms| ms.iter().filter(|m| marked(m)).count()).max().unwrap_or(1);
    if wire.is_some() && most > profile.layout.message_breakpoints {
        profile.layout.message_breakpoints = most;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    if wire.is_some() {
        let before = profile.layout.clone();
        if let Some(params) = system_message_members(&lines) {
            profile.layout.system_message_params = params;
        }
        // Transcripts that write the session's prompt (records-free replay).
        profile.layout.system_from_snapshot |= held.iter().any(|t| t.contains(r#""type":"prompt_snapshot""#));
        if profile.layout != before {
            profile.layout.name = format!("cc-{}", profile.version);
        }
        profile.attachments = attachments::learn(&lines, &held);
        profile.compaction = compaction::learn(&lines, &held);
        let instruction = profile.compaction.as_ref().map(|c| c.instruction.as_str());
        system_turns_layout(&mut profile.layout, &lines, &profile.version, instruction);
    }
    // Consecutive user messages merged without the "\n" (2.1.0's skill
    // command and its body) show where a transcript holds the first text.
    if wire.is_some() && merges_plain(&lines, &held) {
        profile.layout.merge_newline = false;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    // A reminder joined to a string tool result (2.1.100's nested memory
    // and todo reminder) shows in a later request of a capture.
    if wire.is_some() && !profile.layout.attachments_into_tool_result && joins_tool_results(&lines, &held) {
        profile.layout.attachments_into_tool_result = true;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    if wire.is_some() {
        profile.reminders.attachment_texts = reminders::attachment_texts(&lines, &held);
        profile.tool_aliases = aliases::learn(&lines, &held);
        profile.reminders.task_notification = notifications::task_notification(&lines, &held);
    }
    // A `cch` that changes per request is the native client's attestation
    // (2.1.150): the seed that reproduces every captured one is kept, and
    // the header is rendered with the placeholder it is computed over.
    if let Some(seed) = wire::find_cch_seed(&attested_samples(&lines)) {
        profile.billing.cch_seed = Some(format!("{seed:016x}"));
        profile.billing.cch = Some(" cch=00000;".into());
    }
    // A user message of one plain text block sent as an array (not the
    // string later releases send) in a request with tools (not a side call).
    let lone_block = |m: &Value| {
        m["role"] == "user"
            && m.get("content").and_then(Value::as_array).is_some_and(|c| {
                c.len() == 1 && c[0]["type"] == "text" && c[0].as_object().is_some_and(|o| o.len() == 2)
            })
    };
    let kept = lines
        .iter()
        .filter(|v| v.pointer("/body/tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty()))
        .filter_map(|v| v.pointer("/body/messages").and_then(Value::as_array))
        .any(|ms| ms.iter().any(lone_block));
    if wire.is_some() && kept {
        profile.layout.user_text_as_blocks = true;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    if wire.is_some() && merges_without_newline(&lines, &held) {
        profile.layout.merge_without_newline = true;
        profile.layout.name = format!("cc-{}", profile.version);
    }
    Ok((profile, model))
}

/// One profile from several captures of one release (each with its own
/// environment): the first capture's, with what the others show that it
/// cannot (`hello` has no CLAUDE.md, so no claudeMd reminder; a request of
/// one message shows no second breakpoint): their layout choices, user
/// context, gitStatus and skills templates and models.
pub fn extract_merged(captures: &[(&Path, Option<&SessionEnv>)]) -> Result<Profile, ProfileError> {
    // A capture run with --system-prompt or --append-system-prompt (its
    // env's argv says) shows only how the prompt changes: applied last.
    let choice = |env: &Option<&SessionEnv>| {
        env.and_then(|e| e.argv.first()).map(|a| PromptChoice::from_args(a)).unwrap_or_default()
    };
    // A capture run with MCP servers (its env's mcp.json says) shows only
    // how they are sent: learned last (`mcp`).
    let (with_mcp, others): (Vec<_>, Vec<_>) = captures.iter().partition(|(_, e)| e.is_some_and(|e| !e.mcp.is_empty()));
    let (variants, plain): (Vec<_>, Vec<_>) =
        others.into_iter().partition(|(_, e)| choice(e).custom.is_some() || choice(e).append.is_some());
    let Some(((first, env), rest)) = plain.split_first() else {
        return Err(err(
            captures.first().map_or(Path::new("-"), |c| c.0),
            "no capture given without --system-prompt or --append-system-prompt",
        ));
    };
    let (mut merged, first_model) = extract_with_model(first, *env)?;
    let with_skills = |e: &Option<&SessionEnv>| e.is_some_and(|e| !contexts::session_skills(e).is_empty());
    let mut merged_skills = with_skills(env);
    for (path, env) in rest {
        let (mut other, model) = extract_with_model(path, *env)?;
        if with_skills(env) && !merged_skills {
            skills_note(&mut merged, &mut other);
            merged_skills = true;
        }
        if other.version != merged.version {
            return Err(err(
                path,
                format!(
                    "is a capture of {}, the first of {}: one profile is one release",
                    other.version, merged.version
                ),
            ));
        }
        // The first capture's model chosen with `--model` (2.1.150: no 1M
        // context window, which the default has): a variant when it differs.
        let explicit = env.is_some_and(|e| e.flag("--model").is_some());
        if model == first_model && explicit {
            let differs = other.prompt != merged.prompt || other.tools != merged.tools || other.betas != merged.betas;
            if differs {
                add_variant(&mut merged, other, model, true);
                continue;
            }
        }
        if model != first_model {
            // Another model's capture: its params and the model name in the
            // tools as data when that is all that differs, else a variant
            // of its own (another prompt).
            if models::absorb_model(&mut merged, &first_model, &other, &model) {
                merge(&mut merged, other);
                continue;
            }
            let differs = other.prompt != merged.prompt || other.tools != merged.tools || other.params != merged.params;
            if differs {
                add_variant(&mut merged, other, model, false);
                continue;
            }
        }
        merge(&mut merged, other);
    }
    for (path, env) in variants {
        prompt_variant(&mut merged, path, &choice(&env), env)?;
    }
    for (path, env) in with_mcp {
        if let Some(env) = env {
            mcp::learn(&mut merged, path, env)?;
        }
    }
    Ok(merged)
}

/// A captured Messages request (not a token count): the line a profile
/// is extracted from is the first of these.
fn is_messages_request(v: &Value) -> bool {
    v.get("body").and_then(|b| b.get("messages")).is_some()
        && v.get("path").and_then(Value::as_str).is_none_or(|p| p.starts_with("/v1/messages") && !p.contains("count"))
}

/// The model table with the other capture's models added, and a knowledge
/// cutoff only the other's prompt states (the capture run with that model).
fn merge_models(into: &mut Vec<crate::profile::ModelInfo>, other: Vec<crate::profile::ModelInfo>) {
    for m in other {
        match into.iter_mut().find(|x| x.id == m.id) {
            Some(x) if x.knowledge_cutoff.is_none() => x.knowledge_cutoff = m.knowledge_cutoff,
            Some(_) => {}
            None => into.push(m),
        }
    }
}

/// A capture run with another model whose prompt, tools or params differ:
/// that model's prompt, tools and params where they differ, and the
/// attachment renderings the profile does not have.
fn add_variant(into: &mut Profile, other: Profile, model: String, explicit: bool) {
    if into.model_variants.iter().any(|v| v.model == model && v.explicit == explicit) {
        return;
    }
    let attachments = other.attachments.into_iter().filter(|t| !into.attachments.contains(t)).collect();
    merge_models(&mut into.models, other.models);
    let tools = (other.tools != into.tools).then_some(other.tools);
    let params = (other.params != into.params).then_some(other.params);
    let betas = (other.betas != into.betas).then_some(other.betas);
    let v = crate::profile::ModelVariant { model, prompt: other.prompt, attachments, tools, params, explicit, betas };
    into.model_variants.push(v);
    if let Some(p) = other.extracted_from {
        let joined = into.extracted_from.take().map_or(p.clone(), |a| format!("{a}, {p}"));
        into.extracted_from = Some(joined);
    }
}

/// The text a capture with skills (`other`) has in its prompt where one
/// without (`into`) has none: `into` gets it as `{{skills_note}}`, and
/// `other`'s prompt is `into`'s (so the merge keeps one).
fn skills_note(into: &mut Profile, other: &mut Profile) {
    let a = into.prompt.dynamic_sections.join("\n\n");
    let b = other.prompt.dynamic_sections.join("\n\n");
    let pre = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let pre = (0..=pre).rev().find(|&i| a.is_char_boundary(i) && b.is_char_boundary(i)).unwrap_or(0);
    let rest = (a.len() - pre).min(b.len() - pre);
    let suf = a.bytes().rev().zip(b.bytes().rev()).take(rest).take_while(|(x, y)| x == y).count();
    if a.len() != pre + suf || b.len() <= a.len() {
        return;
    }
    let Some(note) = b.get(pre..b.len() - suf) else { return };
    let text = format!("{}{{{{skills_note}}}}{}", &a[..pre], &a[pre..]);
    into.skills_note = Some(note.to_string());
    into.prompt.dynamic_sections = split_sections(&text);
    other.prompt = into.prompt.clone();
}

/// What a capture run with a custom or appended system prompt shows: its
/// CLI prefix (1.0.128: a custom prompt's is the one later releases give an
/// appended prompt) and what joins the appended text to the gitStatus
/// section after it (1.0.128, 2.0.77: `\n`).
fn prompt_variant(
    into: &mut Profile,
    path: &Path,
    choice: &PromptChoice,
    env: Option<&SessionEnv>,
) -> Result<(), ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.into(), source })?;
    let lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
    let req = lines.iter().find(|v| is_messages_request(v)).ok_or_else(|| err(path, "no /v1/messages request"))?;
    let cap = from_wire(path, req)?;
    if cap.version != into.version {
        return Err(err(
            path,
            format!("is a capture of {}, not {}: one profile is one release", cap.version, into.version),
        ));
    }
    let block = |i: usize| cap.system.get(i).and_then(|b| b.get("text")).and_then(Value::as_str).unwrap_or("");
    let prefix = block(0).to_string();
    if choice.custom.is_some() {
        into.cli_prefix.sdk_with_custom = (prefix != into.cli_prefix.sdk).then_some(prefix);
        // The tools a custom prompt gets, templated as the profile's are
        // (2.1.250: the Agent tool gains a paragraph), when they differ.
        let mut tools = skills_templates(&any_month_templates(&cap.tools), env);
        if let Some(name) = into.model(&cap.model).map(|m| m.name.clone()) {
            tools = models::templated(&tools, &name);
        }
        if tools != into.tools && tools.len() == into.tools.len() {
            into.custom_prompt_tools = Some(tools);
        }
    } else if let Some(a) = &choice.append {
        into.cli_prefix.sdk_with_append = prefix;
        let prompt: Vec<&str> = (1..cap.system.len()).map(block).collect();
        let prompt = prompt.join("\n\n");
        let joiner =
            prompt.rsplit_once(a.as_str()).and_then(|(_, after)| after.split_once("gitStatus: ")).map(|(j, _)| j);
        if let Some(j) = joiner.filter(|j| *j != "\n\n" && j.chars().all(|c| c == '\n')) {
            into.layout.append_context_joiner = Some(j.to_string());
            into.layout.name = format!("cc-{}", into.version);
        }
    }
    // Other cases of the attachment kinds the profile renders that it shows
    // (2.1.250: the agent listing's concurrency note, sent under
    // `--system-prompt`); kinds the release writes rendered stay so.
    for t in attachments::learn(&lines, &transcripts_beside(path)) {
        let known_kind = into.attachments.iter().any(|x| x.kind == t.kind);
        if known_kind && !into.attachments.iter().any(|x| x.kind == t.kind && x.when == t.when) {
            into.attachments.push(t);
        }
    }
    if let Some(p) = into.extracted_from.take() {
        into.extracted_from = Some(format!("{p}, {}", path.display()));
    }
    Ok(())
}

/// The tools with "The current month is <Month YYYY>" as `{{month_year}}`,
/// whatever the month (a capture whose date is not known).
fn any_month_templates(tools: &[Value]) -> Vec<Value> {
    const AT: &str = "The current month is ";
    let month = tools.iter().find_map(|t| {
        let text = t.to_string();
        let at = text.find(AT)? + AT.len();
        let month = &text[at..at + text[at..].find('.')?];
        (month.ends_with(|c: char| c.is_ascii_digit()) && month.len() <= 20).then(|| month.to_string())
    });
    match month {
        Some(m) => replace_in_tools(tools, &format!("{AT}{m}"), "The current month is {{month_year}}"),
        None => tools.to_vec(),
    }
}

/// Add to `into` what `other`, a capture of the same release, shows.
fn merge(into: &mut Profile, other: Profile) {
    for (w, s) in &other.tool_aliases {
        into.tool_aliases.entry(w.clone()).or_insert_with(|| s.clone());
    }
    if into.compaction.is_none() {
        into.compaction.clone_from(&other.compaction);
    }
    let (l, o) = (&mut into.layout, &other.layout);
    let before = l.clone();
    l.system_context_in_prompt |= o.system_context_in_prompt;
    l.user_context_message |= o.user_context_message;
    l.skills_per_process |= o.skills_per_process;
    l.merge_newline &= o.merge_newline;
    l.memory_comments |= o.memory_comments;
    l.memory_untrimmed |= o.memory_untrimmed;
    l.attachments_into_tool_result |= o.attachments_into_tool_result;
    l.message_breakpoints = l.message_breakpoints.max(o.message_breakpoints);
    l.system_from_snapshot |= o.system_from_snapshot;
    if l.system_message_params.is_empty() {
        l.system_message_params.clone_from(&o.system_message_params);
    }
    l.breakpoint_skips_system |= o.breakpoint_skips_system;
    l.system_message_params_first_only |= o.system_message_params_first_only;
    if l.resumed_drops.is_empty() {
        l.resumed_drops.clone_from(&o.resumed_drops);
    }
    for p in &o.params_from_records {
        if !l.params_from_records.contains(p) {
            l.params_from_records.push(p.clone());
        }
    }
    l.user_text_as_blocks |= o.user_text_as_blocks;
    l.merge_without_newline |= o.merge_without_newline;
    if *l != before {
        l.name = format!("cc-{}", into.version);
    }
    // The undated reminder's tail is cut after the claudeMd text as the
    // capture renders it: a capture that showed the files verbatim has the
    // tail that goes with them.
    if o.memory_untrimmed && !before.memory_untrimmed && other.user_context.is_some() {
        into.user_context = other.user_context.clone();
    }
    // Only a capture with memory files (comments: with a comment in them)
    // shows how they are rendered: what one shows differs from the default.
    into.memory.trim &= other.memory.trim;
    into.memory.strip_comments &= other.memory.strip_comments;
    into.memory.rules &= other.memory.rules;
    into.user_context = into.user_context.take().or(other.user_context);
    // A capture run with --allowedTools shows where the line goes; its
    // prompt renders the others' too (the line empty).
    if into.allowed_tools.is_none() && other.allowed_tools.is_some() {
        into.prompt = other.prompt;
        into.allowed_tools = other.allowed_tools;
    }
    into.git_status = into.git_status.take().or(other.git_status);
    into.skills = into.skills.take().or(other.skills);
    // A capture with skills shows where the Skill tool lists them.
    let skills_var = |t: &[Value]| t.iter().any(|x| x.to_string().contains("{{skills}}"));
    if skills_var(&other.tools) && !skills_var(&into.tools) && other.tools.len() == into.tools.len() {
        into.tools = other.tools;
    }
    for a in other.agents {
        let same = |b: &&mut crate::profile::AgentProfile| {
            (&b.warmup, &b.model, &b.prefix, &b.prompt) == (&a.warmup, &a.model, &a.prefix, &a.prompt)
        };
        match into.agents.iter_mut().find(same) {
            Some(b) if skills_var(&a.tools) && !skills_var(&b.tools) => b.tools = a.tools,
            Some(_) => {}
            None => into.agents.push(a),
        }
    }
    if into.reminders.task_notification.is_none() {
        into.reminders.task_notification = other.reminders.task_notification;
    }
    for (kind, text) in other.reminders.attachment_texts {
        into.reminders.attachment_texts.entry(kind).or_insert(text);
    }
    for t in other.attachments {
        if !into.attachments.iter().any(|x| x.kind == t.kind && x.when == t.when) {
            into.attachments.push(t);
        }
    }
    merge_models(&mut into.models, other.models);
    if let Some(p) = other.extracted_from {
        let joined = into.extracted_from.take().map_or(p.clone(), |a| format!("{a}, {p}"));
        into.extracted_from = Some(joined);
    }
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

/// The static text, the dynamic text without its gitStatus section, and
/// that section's template.
fn prompt_parts(cap: &Capture, facts: &Facts, boundary: bool) -> (String, String, Option<GitStatusTemplate>) {
    let text = |b: &Value| b.get("text").and_then(Value::as_str).unwrap_or("").to_string();
    let main_branch = facts.git.as_ref().map(|g| g.main_branch.as_str());
    if boundary {
        let i = cap.system.iter().position(|b| b["cache_control"]["scope"] == "global").unwrap_or(0);
        let (dynamic, git) = split_git_status(cap.system.get(i + 1).map(text).unwrap_or_default(), main_branch);
        (text(&cap.system[i]), dynamic, git)
    } else {
        let rest: Vec<String> = cap.system.iter().skip(1).map(text).collect();
        let (dynamic, git) = split_git_status(rest.join("\n\n"), main_branch);
        (String::new(), dynamic, git)
    }
}

/// The built-in `layout` with the capture's own choices where they differ:
/// gitStatus as the prompt's last section (2.0.x), the user context and the
/// skills listing as prepended reminders (ones the transcripts beside it do
/// not hold: 2.1.50 sends the listing per process without writing it, 2.1.100
/// writes it as a `skill_listing` attachment). A changed layout is named
/// after the release.
fn captured_layout(
    mut layout: Layout,
    cap: &Capture,
    git_in_prompt: bool,
    user_context: Option<&crate::profile::UserContextTemplate>,
    held: &[String],
) -> Layout {
    let fixed = user_context.map(|u| &u.fixed_sections).filter(|f| !f.is_empty());
    let builtin = layout.clone();
    layout.system_context_in_prompt |= git_in_prompt;
    layout.params_before_system.clone_from(&cap.lead_params);
    let prepended = cap.first_texts.iter().any(|t| {
        t.starts_with("<system-reminder>")
            && (t.contains("\n# claudeMd\n")
                || t.contains("\n# currentDate\n")
                || fixed.is_some_and(|f| f.iter().any(|s| t.contains(s.as_str()))))
            && !held_by(held, t)
    });
    layout.user_context_message |= user_context.is_some() && prepended;
    let skills = skills_template(&cap.first_texts, None).is_some();
    let listed = held.iter().any(|t| t.contains("\"type\":\"skill_listing\""));
    layout.skills_per_process |= skills && !listed;
    // The per-process listing is a message of its own merged before the
    // prompt: it ends with the merge's "\n" after `</system-reminder>`
    // (2.1.88), or the release joins the messages as they are (2.1.50).
    // (Attachments of one message, 2.1.328's, are blocks with no merge.)
    let n = cap.first_texts.len();
    let bare = cap.first_texts.iter().take(n.saturating_sub(1)).any(|t| {
        t.starts_with("<system-reminder>")
            && t.lines().nth(1).is_some_and(|l| l.contains("skills"))
            && t.ends_with("</system-reminder>")
    });
    layout.merge_newline &= !(skills && !listed && bare);
    if layout != builtin {
        layout.name = format!("cc-{}", cap.version);
    }
    layout
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
    let facts = capture_facts(env, &cap.texts);
    let mut models = cap.models.clone();
    scan_models(&cap.texts, &cap.model, &mut models);
    for t in &cap.texts {
        if let Some(name) = template::mentions_any(t, DYNAMIC_VARS).or_else(|| template::mentions_any(t, GIT_VARS)) {
            return Err(err(path, format!("the captured text already contains {name}: cannot template it")));
        }
    }
    let (static_text, dynamic_text, git_status) = prompt_parts(&cap, &facts, boundary);
    let form = memory_form(&cap.first_texts, env);
    let user_context = user_context_template(&cap.first_texts, &facts, env);
    let mut layout = captured_layout(layout, &cap, git_status.is_some(), user_context.as_ref().map(|(t, _)| t), held);
    if form != (false, false) {
        (layout.memory_comments, layout.memory_untrimmed) = form;
        layout.name = format!("cc-{}", cap.version);
    }
    let static_sections = if static_text.is_empty() { Vec::new() } else { split_sections(&static_text) };
    let (dynamic_text, allowed_tools) =
        split_allowed_tools(templatize(&dynamic_text, &facts, &cap.model, &models), env);
    let dynamic_sections = split_sections(&dynamic_text);
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
        billing: Billing {
            salt: BILLING_SALT.into(),
            cch,
            suffix_text,
            header_block: cap.header_block,
            cch_seed: None,
            subagent: None,
        },
        cli_prefix: cli,
        prompt: PromptTemplate { static_sections, dynamic_sections },
        git_status,
        user_context: user_context.as_ref().map(|(t, _)| t.clone()),
        skills: skills_template(&cap.first_texts, env),
        tools: skills_templates(
            &month_templates(&cap.tools, facts.date.as_deref().or(user_context.as_ref().map(|(_, d)| d.as_str()))),
            env,
        ),
        params: param_templates(&cap.params, &facts),
        betas: cap.betas.clone(),
        models,
        system_cache: SystemCache::default(),
        proactive_agent_header: crate::profile::DEFAULT_PROACTIVE_AGENT_HEADER.into(),
        reminders: seed.reminders.clone(),
        metadata: cap.metadata,
        model_params: Map::new(),
        attachments: Vec::new(),
        model_variants: Vec::new(),
        allowed_tools,
        agents: Vec::new(),
        memory: env.and_then(|e| captured_claude_md(&cap.first_texts, e)).map(|(_, _, s)| s).unwrap_or_default(),
        skills_note: None,
        custom_prompt_tools: None,
        compaction: None,
        mcp: None,
        tool_aliases: Default::default(),
    };
    check_round_trip(path, &profile, &cap, &facts, env, user_context.map(|(_, d)| d))?;
    Ok(profile)
}

/// The params with the session's working directory and home as
/// `{{cwd}}` / `{{home}}` (2.1.28x `safeguards` names both; see
/// [`crate::profile::PARAM_VARS`]).
fn param_templates(params: &serde_json::Map<String, Value>, facts: &Facts) -> serde_json::Map<String, Value> {
    let mut paths: Vec<(&str, &str)> = [(facts.cwd.as_deref(), "{{cwd}}"), (facts.home.as_deref(), "{{home}}")]
        .into_iter()
        .filter_map(|(v, n)| v.filter(|v| v.len() > 1).map(|v| (v, n)))
        .collect();
    paths.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    params
        .iter()
        .map(|(k, v)| {
            let mut text = v.to_string();
            if text.contains("{{") {
                return (k.clone(), v.clone());
            }
            for (from, to) in &paths {
                let from = serde_json::to_string(from).unwrap_or_default();
                text = text.replace(from.trim_matches('"'), to);
            }
            (k.clone(), serde_json::from_str(&text).unwrap_or_else(|_| v.clone()))
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
    let Some(mut env) = env.cloned().or_else(|| facts.to_env()) else { return Ok(()) };
    if env.date.is_none() {
        env.date.clone_from(&facts.date);
    }
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

    /// A copy of a fixture's capture in a tempdir, each request's body
    /// edited by `edit`, with `transcript` (if any) as the transcripts
    /// beside it.
    fn edited_capture(fixture: &str, edit: impl Fn(&mut Value), transcript: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture).join("wire.jsonl");
        let mut out = String::new();
        for line in std::fs::read_to_string(src).unwrap().lines() {
            let mut v: Value = serde_json::from_str(line).unwrap();
            edit(&mut v["body"]);
            out.push_str(&serde_json::to_string(&v).unwrap());
            out.push('\n');
        }
        std::fs::write(dir.path().join("wire.jsonl"), out).unwrap();
        if let Some(t) = transcript {
            std::fs::create_dir_all(dir.path().join("transcripts/p")).unwrap();
            std::fs::write(dir.path().join("transcripts/p/s.jsonl"), t).unwrap();
        }
        dir
    }

    fn env_of(fixture: &str) -> SessionEnv {
        SessionEnv::from_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture).join("env"))
            .unwrap()
    }

    #[test]
    fn system_message_members_are_the_captures() {
        // 2.1.332 sends `output_config` on its system turns: the built-in
        // layout. A capture whose system turns carry none says so.
        let env = env_of("cc-2.1.332/hello");
        let same = edited_capture("cc-2.1.332/hello", |_| {}, None);
        let p = extract(&same.path().join("wire.jsonl"), Some(&env)).unwrap();
        // (Without the transcripts beside it, the capture's user-context
        // reminder is held by none: prepended, so the layout is renamed.)
        let builtin = Profile::load("cc-2.1.328").unwrap().layout;
        assert_eq!(p.layout.system_message_params, builtin.system_message_params);
        assert!(p.layout.system_from_snapshot);
        let strip = |b: &mut Value| {
            for m in b["messages"].as_array_mut().into_iter().flatten() {
                if let Some(o) = m.as_object_mut().filter(|o| o["role"] == "system") {
                    o.remove("output_config");
                }
            }
        };
        let none = edited_capture("cc-2.1.332/hello", strip, None);
        let p = extract(&none.path().join("wire.jsonl"), Some(&env)).unwrap();
        assert!(p.layout.system_message_params.is_empty(), "{:?}", p.layout);
        assert_eq!(p.layout.name, "cc-2.1.332");
        let members = |m: Value| system_message_members(&[serde_json::json!({"body": {"messages": m}})]);
        assert_eq!(members(serde_json::json!([{"role": "user", "content": "x"}])), None);
        let two = serde_json::json!([{"role": "system", "content": "a", "b": 1}, {"role": "system", "content": "c", "d": 2, "b": 3}]);
        assert_eq!(members(two), Some(vec!["b".to_string(), "d".to_string()]));
    }

    #[test]
    fn prompt_snapshots_beside_the_capture_are_a_layout_choice() {
        // 2.1.88 writes no prompt_snapshot: the seed layout. The same capture
        // beside a transcript that writes one uses it.
        let env = env_of("cc-2.1.88/hello");
        let plain = edited_capture("cc-2.1.88/hello", |_| {}, Some("{\"type\":\"user\"}\n"));
        let p = extract(&plain.path().join("wire.jsonl"), Some(&env)).unwrap();
        assert!(!p.layout.system_from_snapshot && p.layout.name == "seed", "{:?}", p.layout);
        let snap = r#"{"type":"attachment","attachment":{"type":"prompt_snapshot","systemPrompt":["x"]}}"#;
        let with = edited_capture("cc-2.1.88/hello", |_| {}, Some(snap));
        let p = extract(&with.path().join("wire.jsonl"), Some(&env)).unwrap();
        assert!(p.layout.system_from_snapshot && p.layout.name == "cc-2.1.88", "{:?}", p.layout);
    }

    #[test]
    fn plain_merges_are_told_by_a_held_prompt() {
        // 2.1.0's skill capture: the command message, then the skill body.
        let wire = |first: &str| {
            serde_json::json!({"body": {"messages": [{"role": "user", "content": [
                {"type": "text", "text": first}, {"type": "text", "text": "Base directory…"}]}]}})
        };
        let held = vec![r#"{"message":{"role":"user","content":"<command-name>greet</command-name>"}}"#.to_string()];
        assert!(merges_plain(&[wire("<command-name>greet</command-name>")], &held));
        assert!(!merges_plain(&[wire("<command-name>greet</command-name>\n")], &held));
        assert!(!merges_plain(&[wire("<command-name>other</command-name>")], &held));
        let both = [wire("<command-name>greet</command-name>"), wire("<command-name>greet</command-name>\n")];
        assert!(!merges_plain(&both, &held));
    }

    #[test]
    fn a_resumed_process_drops_the_1m_label() {
        // 2.1.198 resume-multi-prompt, shortened: the fresh process names
        // the model with the 1M-context label, the resumed one without.
        let line = |m: &str| {
            format!(
                "model named Opus 4.8{m}. The exact model ID is claude-opus-4-8{}.",
                if m.is_empty() { "" } else { "[1m]" }
            )
        };
        let body = |m: &str| serde_json::json!({"system": [{"text": "x"}, {"text": line(m)}], "tools": [{"d": format!("By Opus 4.8{m}")}]});
        let (first, later) = (body(" (1M context)"), body(""));
        let mut l = Layout::default();
        resumed_drops(&mut l, &first, &[&first, &later]);
        assert_eq!(l.resumed_drops, [" (1M context)", "[1m]"]);
        // Tools that differ otherwise: not a resumed process's.
        let mut other = later.clone();
        other["tools"][0]["d"] = "something else".into();
        let mut l = Layout::default();
        resumed_drops(&mut l, &first, &[&other]);
        assert!(l.resumed_drops.is_empty());
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
