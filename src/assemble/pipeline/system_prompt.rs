//! The effective system prompt (seeds/001, "第 2 层" and "第 3 层";
//! seeds/002 priority chain): which base prompt wins, where the appended
//! prompt and the system context go, and the CLI prefix.
//!
//! Priority (one base wins, not a merge): override > coordinator > agent
//! (appended to the default sections under a header in proactive mode) >
//! custom `--system-prompt` > the profile's default sections. The
//! `--append-system-prompt` text comes last, except with an override. Then
//! `appendSystemContext` adds the system context (`gitStatus: …`) as one
//! more section — except when a custom prompt is given, for which Claude
//! Code does not fetch the system context at all. Checked on the 2.1.88
//! captures: `append-system-prompt` (the appended text sits right before
//! the `gitStatus:` section), `custom-system-prompt` (no gitStatus), and on
//! 2.1.328 (`append-system-prompt`: appended after the main prompt).

use super::contexts::SystemContext;
use crate::env::SessionEnv;
use crate::profile::Profile;

/// The marker between static and dynamic sections
/// (`SYSTEM_PROMPT_DYNAMIC_BOUNDARY`); never sent.
pub const DYNAMIC_BOUNDARY: &str = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__";

/// The inputs of `buildEffectiveSystemPrompt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptChoice {
    /// `overrideSystemPrompt` (loop mode): replaces everything.
    pub override_prompt: Option<String>,
    /// The coordinator prompt (coordinator mode).
    pub coordinator: Option<String>,
    /// The main-thread agent definition's prompt.
    pub agent: Option<String>,
    /// Proactive mode: the agent prompt is appended to the default sections
    /// instead of replacing them.
    pub proactive: bool,
    /// `--system-prompt`.
    pub custom: Option<String>,
    /// `--append-system-prompt`.
    pub append: Option<String>,
}

impl PromptChoice {
    /// The choice given by CLI arguments (`--system-prompt X`,
    /// `--append-system-prompt X`, also in `--flag=X` form); other
    /// arguments are ignored.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> PromptChoice {
        let mut choice = PromptChoice::default();
        let mut it = args.iter().map(AsRef::as_ref);
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (a, None),
            };
            let slot = match flag {
                "--system-prompt" => &mut choice.custom,
                "--append-system-prompt" => &mut choice.append,
                _ => continue,
            };
            if let Some(v) = inline.or_else(|| it.next()) {
                *slot = Some(v.to_string());
            }
        }
        choice
    }
}

/// The profile's default sections for `env` and `model_id`: static
/// sections, the [`DYNAMIC_BOUNDARY`] marker and the rendered dynamic
/// sections (layout `seed`); all sections rendered, no marker (layout
/// `cc-2.1.328`, whose main prompt has no boundary).
pub fn default_sections(profile: &Profile, env: &SessionEnv, model_id: &str) -> Vec<String> {
    let vars = profile.dynamic_vars(env, model_id);
    let mut out = Vec::with_capacity(profile.prompt.static_sections.len() + profile.prompt.dynamic_sections.len() + 1);
    if profile.layout.dynamic_boundary {
        out.extend(profile.prompt.static_sections.iter().cloned());
        // A session with MCP servers may lose the boundary (2.1.88), its
        // static sections then sent with the dynamic ones (`super::mcp`).
        if super::mcp::keeps_boundary(profile, env) {
            out.push(DYNAMIC_BOUNDARY.to_string());
        }
    } else {
        out.extend(profile.prompt.static_sections.iter().map(|s| vars.render(s)));
    }
    let dynamic_start = out.len();
    out.extend(profile.prompt.dynamic_sections.iter().map(|s| vars.render(s)));
    super::mcp::insert_instructions(&mut out, dynamic_start, profile, env);
    out
}

/// The system prompt sections (before the billing header and CLI prefix),
/// with the marker between static and dynamic sections when the default
/// prompt is used. The system context is appended as its own section only
/// for layout `seed` (2.1.328 sends it as an attachment) and never with a
/// custom prompt. Empty sections are left out.
pub fn effective_system_prompt(
    profile: &Profile,
    env: &SessionEnv,
    model_id: &str,
    choice: &PromptChoice,
    sys_ctx: &SystemContext,
) -> Vec<String> {
    let append = choice.append.iter().cloned();
    let mut out: Vec<String> = if let Some(o) = &choice.override_prompt {
        vec![o.clone()]
    } else if let Some(c) = &choice.coordinator {
        std::iter::once(c.clone()).chain(append).collect()
    } else if let Some(a) = &choice.agent {
        if choice.proactive {
            let mut v = default_sections(profile, env, model_id);
            v.push(format!("{}{a}", profile.proactive_agent_header));
            v.extend(append);
            v
        } else {
            std::iter::once(a.clone()).chain(append).collect()
        }
    } else if let Some(c) = &choice.custom {
        std::iter::once(c.clone()).chain(append).collect()
    } else {
        let mut v = default_sections(profile, env, model_id);
        v.extend(append);
        v
    };
    if profile.layout.system_context_in_prompt && choice.custom.is_none() {
        match (sys_ctx.section(), &profile.layout.append_context_joiner, &choice.append) {
            // The appended text and the context as one section, joined the
            // release's way.
            (Some(ctx), Some(j), Some(a)) if out.last() == Some(a) => {
                if let Some(last) = out.last_mut() {
                    *last = format!("{a}{j}{ctx}");
                }
            }
            (ctx, _, _) => out.extend(ctx),
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `getCLISyspromptPrefix`: `sdk_with_append` for a non-interactive session
/// with an appended prompt, `sdk` for any other non-interactive one, else
/// `default` (all three seen in the captures).
pub fn cli_prefix(profile: &Profile, non_interactive: bool, has_append: bool) -> &str {
    cli_prefix_of(profile, non_interactive, has_append, false)
}

/// [`cli_prefix`], with a custom system prompt given (`sdk_with_custom`
/// when the profile has one, 1.0.128).
pub fn cli_prefix_of(profile: &Profile, non_interactive: bool, has_append: bool, has_custom: bool) -> &str {
    if let (true, true, Some(p)) = (non_interactive, has_custom, &profile.cli_prefix.sdk_with_custom) {
        return p;
    }
    match (non_interactive, has_append) {
        (true, true) => &profile.cli_prefix.sdk_with_append,
        (true, false) => &profile.cli_prefix.sdk,
        (false, _) => &profile.cli_prefix.default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        let mut p = Profile::load("seed").unwrap();
        p.prompt.static_sections = vec!["S1".into(), "S2".into()];
        p.prompt.dynamic_sections = vec!["cwd {{cwd}}".into(), "model {{model_name}} ({{model_id}})".into()];
        p
    }

    fn env() -> SessionEnv {
        SessionEnv::from_transcript("/w", Some("main"), Some("2026-01-01"))
    }

    #[test]
    fn priority_chain() {
        let p = profile();
        let ctx = SystemContext { git_status: Some("G".into()), cache_breaker: None };
        let m = "claude-sonnet-4-6";
        let run = |c: PromptChoice| effective_system_prompt(&p, &env(), m, &c, &ctx);
        let marker = DYNAMIC_BOUNDARY.to_string();
        assert_eq!(
            run(PromptChoice::default()),
            ["S1", "S2", &marker, "cwd /w", "model Sonnet 4.6 (claude-sonnet-4-6)", "gitStatus: G"]
        );
        let append = Some("A".to_string());
        assert_eq!(
            run(PromptChoice { append: append.clone(), ..Default::default() }),
            ["S1", "S2", &marker, "cwd /w", "model Sonnet 4.6 (claude-sonnet-4-6)", "A", "gitStatus: G"]
        );
        // Custom: no system context.
        assert_eq!(
            run(PromptChoice { custom: Some("C".into()), append: append.clone(), ..Default::default() }),
            ["C", "A"]
        );
        // Agent replaces the default; proactive appends to it.
        assert_eq!(run(PromptChoice { agent: Some("AG".into()), ..Default::default() }), ["AG", "gitStatus: G"]);
        let pro = run(PromptChoice { agent: Some("AG".into()), proactive: true, ..Default::default() });
        assert_eq!(pro[5], "\n# Custom Agent Instructions\nAG");
        // Agent beats custom, coordinator beats agent, override beats all and drops append.
        let all = PromptChoice {
            override_prompt: None,
            coordinator: Some("CO".into()),
            agent: Some("AG".into()),
            proactive: false,
            custom: None,
            append: append.clone(),
        };
        assert_eq!(run(all.clone()), ["CO", "A", "gitStatus: G"]);
        assert_eq!(run(PromptChoice { override_prompt: Some("O".into()), ..all }), ["O", "gitStatus: G"]);
        assert_eq!(
            run(PromptChoice { agent: Some("AG".into()), custom: Some("C".into()), ..Default::default() }),
            ["AG"]
        );
    }

    #[test]
    fn prefixes_and_args() {
        let p = profile();
        assert!(cli_prefix(&p, true, false).contains("Agent SDK"));
        assert!(cli_prefix(&p, true, true).contains("running within the Claude Agent SDK"));
        assert_eq!(cli_prefix(&p, false, true), "You are Claude Code, Anthropic's official CLI for Claude.");
        let c = PromptChoice::from_args(&["-p", "--append-system-prompt", "Always answer in French.", "--model", "x"]);
        assert_eq!(c.append.as_deref(), Some("Always answer in French."));
        let c = PromptChoice::from_args(&["--system-prompt=terse"]);
        assert_eq!(c.custom.as_deref(), Some("terse"));
    }
}
