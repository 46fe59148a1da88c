//! Skills on disk: `<dir>/skills/<name>/SKILL.md` of the session's
//! `~/.claude` and of its project's `.claude`, read into [`Skill`] values.
//!
//! Only reads and parses (the frontmatter with the one parser of
//! `env::memory::frontmatter`); the skills-listing reminder built from
//! them is rendered by `assemble::contexts`.

use super::memory::MAX_MEMORY_FILE_BYTES;
use super::memory::frontmatter::{fields, split_frontmatter};
use std::io::Read;
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
///
/// A snapshot is untrusted input: `dir` must not itself be a symlink, a
/// SKILL.md whose canonical path leaves `dir` (a link to `/etc/passwd`) or
/// that is not a regular file is skipped, and at most
/// [`MAX_MEMORY_FILE_BYTES`] of one is read.
pub fn skills_in(dir: &Path) -> Vec<Skill> {
    if std::fs::symlink_metadata(dir).map_or(true, |m| m.file_type().is_symlink()) {
        return Vec::new();
    }
    let Ok(root) = std::fs::canonicalize(dir) else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(dir.join("skills")) else { return Vec::new() };
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| {
            let text = read_confined(&d.join("SKILL.md"), &root)?;
            let name = d.file_name()?.to_string_lossy().into_owned();
            skill_from_markdown(name, &text)
        })
        .collect()
}

/// The text of `path` when its canonical path lies below `root` and it is a
/// regular file, cut at [`MAX_MEMORY_FILE_BYTES`].
fn read_confined(path: &Path, root: &Path) -> Option<String> {
    let canon = std::fs::canonicalize(path).ok()?;
    if !canon.starts_with(root) || !std::fs::metadata(&canon).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&canon).ok()?.take(MAX_MEMORY_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
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

    /// A skill linked out of the snapshot is not read (issue 14).
    #[test]
    fn a_skill_linked_outside_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, outside) = (tmp.path().join("claude"), tmp.path().join("outside"));
        std::fs::create_dir_all(dir.join("skills/ok")).unwrap();
        std::fs::create_dir_all(dir.join("skills/evil")).unwrap();
        std::fs::create_dir_all(outside.join("s")).unwrap();
        std::fs::write(dir.join("skills/ok/SKILL.md"), "# Fine\n").unwrap();
        std::fs::write(outside.join("secret"), "root:x:0:0\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), dir.join("skills/evil/SKILL.md")).unwrap();
        std::fs::write(outside.join("s/SKILL.md"), "# Linked dir\n").unwrap();
        std::os::unix::fs::symlink(outside.join("s"), dir.join("skills/linked")).unwrap();
        let names: Vec<String> = skills_in(&dir).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["ok"]);
        // A `dir` that is itself a link is not read at all.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(skills_in(&link).is_empty());
    }

    /// The frontmatter is split as memory files split it (Claude Code's
    /// `FRONTMATTER_REGEX`): spaces after the opening dashes, an empty block.
    #[test]
    fn skill_frontmatter_is_split_like_memory_files() {
        assert_eq!(skill_from_markdown("x".into(), "---  \ndescription: d\n---\nb").unwrap().description, "d");
        assert_eq!(skill_from_markdown("x".into(), "---\n---\n# T\n").unwrap().description, "T");
    }
}
