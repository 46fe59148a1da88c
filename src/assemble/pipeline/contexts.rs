//! Stage 1 contexts (SPEC.md, "The pipeline described by the seeds"): the
//! user context (`claudeMd`, `currentDate`, sent as the `prependUserContext`
//! reminder in the first user message), the system context (`gitStatus`,
//! `cacheBreaker`, appended to the system prompt by `appendSystemContext`),
//! and the skills-listing reminder that 2.1.88 puts first in the first user
//! message.
//!
//! Checked byte for byte on the 14 scenarios of `tests/fixtures/cc-2.1.88`
//! (`tests/system_side.rs`): the reminder is `messages[0].content[1]` (`[0]`
//! in the resumed requests of `resume-multi-prompt`), the skills listing
//! `messages[0].content[0]` of each first request.

use crate::env::SessionEnv;
use crate::env::skills::{Skill, skills_in};
use crate::profile::{Profile, template};

/// `getUserContext()`: memoized once per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserContext {
    /// The `# claudeMd` value (the memory files, rendered by
    /// `crate::env::memory`), if any.
    pub claude_md: Option<String>,
    /// The session date, `YYYY-MM-DD`.
    pub current_date: String,
}

/// `getSystemContext()`: memoized once per session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemContext {
    /// The `gitStatus` value (without the key), when `cwd` is a git repo.
    pub git_status: Option<String>,
    /// The debugging `cacheBreaker` value, if any.
    pub cache_breaker: Option<String>,
}

impl SystemContext {
    /// `appendSystemContext`'s extra section: the present entries as
    /// `key: value` lines joined by `\n` (seeds/001); `None` when empty.
    pub fn section(&self) -> Option<String> {
        let lines: Vec<String> = [("gitStatus", &self.git_status), ("cacheBreaker", &self.cache_breaker)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}")))
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// Both contexts of a session. `claude_md` comes from the memory stage; the
/// date is `env.date`, else today (UTC); the git status is rendered with the
/// profile's template when the session is in a git repository and the
/// profile has one.
pub fn contexts(profile: &Profile, env: &SessionEnv, claude_md: Option<String>) -> (UserContext, SystemContext) {
    let current_date = env.current_date();
    (
        UserContext { claude_md, current_date },
        SystemContext { git_status: git_status(profile, env), cache_breaker: None },
    )
}

/// The `gitStatus` value: branch, main branch, `git status --short`
/// (trimmed; the profile's `clean` text when empty; cut past
/// `max_status_chars`), the recent commits (trimmed), as the 2.1.88
/// captures show (`Status:\n(clean)`).
pub fn git_status(profile: &Profile, env: &SessionEnv) -> Option<String> {
    let t = profile.git_status.as_ref()?;
    let git = env.git.as_ref().filter(|_| env.is_git)?;
    let raw = git.status_short.trim();
    let status = if raw.is_empty() {
        t.clean.clone()
    } else if raw.encode_utf16().count() > t.max_status_chars {
        let cut: Vec<u16> = raw.encode_utf16().take(t.max_status_chars).collect();
        format!("{}{}", String::from_utf16_lossy(&cut), t.truncated_note)
    } else {
        raw.to_string()
    };
    let vars: [template::Var<'_>; 5] = [
        ("branch", Some(git.branch.trim())),
        ("main_branch", Some(git.main_branch.trim())),
        ("status", Some(&status)),
        ("recent_commits", Some(git.log_oneline.trim())),
        ("git_user", git.user_name.as_deref().map(str::trim)),
    ];
    Some(template::render(&t.text, &vars))
}

/// The `prependUserContext` reminder text (`# claudeMd` only when present,
/// then `# currentDate`, then the fixed sections: 1.0.128 sends
/// `# important-instruction-reminders` in every session). Empty when the
/// profile has no template.
pub fn render_user_context(profile: &Profile, ctx: &UserContext) -> String {
    let Some(t) = &profile.user_context else { return String::new() };
    let vars: [template::Var<'_>; 2] = [("claude_md", ctx.claude_md.as_deref()), ("date", Some(&ctx.current_date))];
    let mut sections = Vec::with_capacity(2);
    if ctx.claude_md.is_some() {
        sections.push(template::render(&t.claude_md, &vars));
    }
    // A release without a currentDate section (2.0.x) has an empty one.
    if !t.current_date.is_empty() {
        sections.push(template::render(&t.current_date, &vars));
    }
    sections.extend(t.fixed_sections.iter().cloned());
    if sections.is_empty() {
        return String::new();
    }
    format!("{}{}{}", t.head, sections.join("\n"), t.tail)
}

/// The skills-listing reminder: the profile's built-in lines, then the
/// user's skills (`~/.claude/skills`), then the project's
/// (`<project>/.claude/skills`), each `- name: description` with the
/// description cut to `description_max` characters (scenario `skill`: the
/// project skill `greet` comes after the four built-in ones). `None` when
/// the profile has no template.
pub fn skills_listing(profile: &Profile, env: &SessionEnv) -> Option<String> {
    let t = profile.skills.as_ref()?;
    let mut skills = Vec::new();
    if let Some(home) = &env.home_claude_dir {
        skills.extend(skills_in(home));
    }
    if let Some(project) = &env.project_dir {
        skills.extend(skills_in(&project.join(".claude")));
    }
    let mut lines: Vec<String> = Vec::new();
    if !t.builtin.is_empty() {
        lines.push(t.builtin.clone());
    }
    for s in &skills {
        lines.push(skill_line(t, s));
    }
    if lines.is_empty() {
        return None;
    }
    Some(format!("{}{}{}", t.head, lines.join("\n"), t.tail))
}

/// The session's skills on disk: the user's (`~/.claude/skills`), then the
/// project's (`<project>/.claude/skills`).
pub fn session_skills(env: &SessionEnv) -> Vec<Skill> {
    let mut skills = Vec::new();
    if let Some(home) = &env.home_claude_dir {
        skills.extend(skills_in(home));
    }
    if let Some(project) = &env.project_dir {
        skills.extend(skills_in(&project.join(".claude")));
    }
    skills
}

/// The `{{skills}}` tool variable: one `- name: description` line per
/// session skill, joined by `\n` (2.0.77's Skill tool).
pub fn skills_tool_lines(env: &SessionEnv) -> String {
    session_skills(env).iter().map(|s| format!("- {}: {}", s.name, s.description)).collect::<Vec<_>>().join("\n")
}

/// One skill's line of the listing.
pub fn skill_line(t: &crate::profile::SkillsTemplate, s: &Skill) -> String {
    let n = s.description.chars().count();
    let description = if n > t.description_max {
        let cut: String = s.description.chars().take(t.description_max.saturating_sub(1)).collect();
        format!("{cut}{}", t.ellipsis)
    } else {
        s.description.clone()
    };
    template::render(&t.line, &[("name", Some(&s.name)), ("description", Some(&description))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_context_section() {
        assert_eq!(SystemContext::default().section(), None);
        let c = SystemContext { git_status: Some("x\ny".into()), cache_breaker: Some("[CB]".into()) };
        assert_eq!(c.section().unwrap(), "gitStatus: x\ny\ncacheBreaker: [CB]");
    }

    #[test]
    fn skill_line_cuts_the_description() {
        let t = crate::profile::SkillsTemplate {
            head: String::new(),
            builtin: String::new(),
            line: "- {{name}}: {{description}}".into(),
            description_max: 5,
            ellipsis: "…".into(),
            tail: String::new(),
        };
        assert_eq!(skill_line(&t, &Skill { name: "n".into(), description: "abcdef".into() }), "- n: abcd…");
        assert_eq!(skill_line(&t, &Skill { name: "n".into(), description: "abcde".into() }), "- n: abcde");
    }
}
