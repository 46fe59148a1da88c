//! Skills on disk: `<dir>/skills/<name>/SKILL.md` of the session's
//! `~/.claude` and of its project's `.claude`, read into [`Skill`] values.
//!
//! Only reads and parses (the frontmatter with the one parser of
//! `env::memory::frontmatter`); the skills-listing reminder built from
//! them is rendered by `assemble::contexts`.

use super::memory::frontmatter::{fields, split_frontmatter};
use std::path::Path;

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

/// Parse a SKILL.md: its frontmatter fields (`description`, `when_to_use`,
/// `disable-model-invocation`), else the body's first non-empty line.
pub fn skill_from_markdown(name: String, text: &str) -> Option<Skill> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = match split_frontmatter(text) {
        Some((yaml, body)) => (fields(yaml), body),
        None => (Vec::new(), text),
    };
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    /// The frontmatter is split as memory files split it (Claude Code's
    /// `FRONTMATTER_REGEX`): spaces after the opening dashes, an empty block.
    #[test]
    fn skill_frontmatter_is_split_like_memory_files() {
        assert_eq!(skill_from_markdown("x".into(), "---  \ndescription: d\n---\nb").unwrap().description, "d");
        assert_eq!(skill_from_markdown("x".into(), "---\n---\n# T\n").unwrap().description, "T");
    }
}
