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
use crate::profile::{Profile, template};
use std::path::Path;

/// `getUserContext()`: memoized once per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserContext {
    /// The `# claudeMd` value (the memory files, rendered by
    /// `crate::memory`), if any.
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
    let current_date = env.date.clone().unwrap_or_else(today_utc);
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
/// then `# currentDate`). Empty when the profile has no template.
pub fn render_user_context(profile: &Profile, ctx: &UserContext) -> String {
    let Some(t) = &profile.user_context else { return String::new() };
    let vars: [template::Var<'_>; 2] = [("claude_md", ctx.claude_md.as_deref()), ("date", Some(&ctx.current_date))];
    let mut sections = Vec::with_capacity(2);
    if ctx.claude_md.is_some() {
        sections.push(template::render(&t.claude_md, &vars));
    }
    sections.push(template::render(&t.current_date, &vars));
    format!("{}{}{}", t.head, sections.join("\n"), t.tail)
}

/// A skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its directory name (the `/name` command).
    pub name: String,
    /// `description` of the frontmatter (+ ` - ` + `when_to_use`), else the
    /// first line of the body.
    pub description: String,
}

/// Skills of `<dir>/skills/<name>/SKILL.md`, by directory name; skills with
/// `disable-model-invocation: true` are not listed.
pub fn skills_in(dir: &Path) -> Vec<Skill> {
    let Ok(rd) = std::fs::read_dir(dir.join("skills")) else { return Vec::new() };
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| {
            let text = std::fs::read_to_string(d.join("SKILL.md")).ok()?;
            let name = d.file_name()?.to_string_lossy().into_owned();
            skill_from_markdown(name, &text)
        })
        .collect()
}

/// Parse a SKILL.md (simple `key: value` YAML frontmatter).
fn skill_from_markdown(name: String, text: &str) -> Option<Skill> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut front: Vec<(String, String)> = Vec::new();
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n"))
        && let Some(end) = rest.find("\n---")
    {
        for line in rest[..end].lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim();
                let v = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                    .unwrap_or(v);
                front.push((k.trim().to_string(), v.to_string()));
            }
        }
        body = rest[end + 4..].split_once('\n').map_or("", |(_, b)| b);
    }
    let get = |k: &str| front.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty());
    if get("disable-model-invocation") == Some("true") {
        return None;
    }
    let mut description = match get("description") {
        Some(d) => d.to_string(),
        None => body.lines().map(|l| l.trim_start_matches('#').trim()).find(|l| !l.is_empty())?.to_string(),
    };
    if let Some(w) = get("when_to_use") {
        description = format!("{description} - {w}");
    }
    Some(Skill { name, description })
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

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    date_from_days(i64::try_from(secs / 86_400).unwrap_or(0))
}

/// Civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn date_from_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date_from_days(0), "1970-01-01");
        assert_eq!(date_from_days(20_513), "2026-03-01");
        assert_eq!(date_from_days(11_016), "2000-02-29");
        assert_eq!(today_utc().len(), 10);
    }

    #[test]
    fn system_context_section() {
        assert_eq!(SystemContext::default().section(), None);
        let c = SystemContext { git_status: Some("x\ny".into()), cache_breaker: Some("[CB]".into()) };
        assert_eq!(c.section().unwrap(), "gitStatus: x\ny\ncacheBreaker: [CB]");
    }

    #[test]
    fn skill_frontmatter() {
        let s =
            skill_from_markdown("greet".into(), "---\nname: greet\ndescription: Greets people warmly.\n---\n# Greet\n")
                .unwrap();
        assert_eq!(s, Skill { name: "greet".into(), description: "Greets people warmly.".into() });
        let s = skill_from_markdown("x".into(), "---\ndescription: \"D\"\nwhen_to_use: W\n---\nbody").unwrap();
        assert_eq!(s.description, "D - W");
        assert_eq!(skill_from_markdown("x".into(), "# Title\n\ntext").unwrap().description, "Title");
        assert!(skill_from_markdown("x".into(), "---\ndisable-model-invocation: true\n---\nz").is_none());
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
