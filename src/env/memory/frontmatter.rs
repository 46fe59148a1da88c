//! YAML frontmatter of the environment's Markdown files (memory files, rules,
//! `SKILL.md`): Claude Code's `FRONTMATTER_REGEX` split, the `paths:` globs of
//! `parseFrontmatterPaths`, and plain `key: value` fields.
//!
//! The one frontmatter parser of ctxasm: memory loading and
//! [`crate::env::skills`] both call it. Pure functions over text; no I/O.

use super::paths::js_space;

/// Claude Code's `parseFrontmatterPaths`: the content after the frontmatter
/// and the normalised `paths:` globs (a trailing `/**` dropped; none when
/// empty or all `**`).
pub(super) fn parse_frontmatter_paths(raw: &str) -> (&str, Vec<String>) {
    let Some((yaml, content)) = split_frontmatter(raw) else { return (raw, Vec::new()) };
    let globs: Vec<String> = frontmatter_paths(yaml)
        .into_iter()
        .flat_map(|v| split_paths(&v))
        .map(|p| p.strip_suffix("/**").map(str::to_owned).unwrap_or(p))
        .filter(|p| !p.is_empty())
        .collect();
    if globs.iter().all(|g| g == "**") {
        return (content, Vec::new());
    }
    (content, globs)
}

/// `FRONTMATTER_REGEX = /^---\s*\n([\s\S]*?)---\s*\n?/`: the YAML text and
/// the content after the match (all whitespace after the closing `---` is
/// part of the match).
pub(in crate::env) fn split_frontmatter(raw: &str) -> Option<(&str, &str)> {
    let s = raw.strip_prefix("---")?;
    let ws = s.len() - s.trim_start_matches(js_space).len();
    let body = &s[s[..ws].rfind('\n')? + 1..];
    let close = body.find("---")?;
    Some((&body[..close], body[close + 3..].trim_start_matches(js_space)))
}

/// The `key: value` lines of a frontmatter's YAML, in order: split at the
/// first `:`, the key trimmed, the value a [`yaml_scalar`]. Lines without a
/// `:` are skipped; nested maps and block scalars are not understood (a
/// `SKILL.md` uses neither for the fields read).
pub(in crate::env) fn fields(yaml: &str) -> Vec<(String, String)> {
    yaml.lines().filter_map(|line| line.split_once(':')).map(|(k, v)| (k.trim().to_owned(), yaml_scalar(v))).collect()
}

/// The `paths` value of the YAML frontmatter as a list of strings (a scalar
/// gives one string). Only the forms Claude Code documents are understood:
/// `paths: a, b`, `paths: "a"`, `paths: [a, b]` and a block list.
fn frontmatter_paths(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let Some(i) = lines.iter().position(|l| l.starts_with("paths:")) else { return Vec::new() };
    let value = lines[i]["paths:".len()..].trim();
    if !value.is_empty() && !value.starts_with('#') {
        if let Some(inner) = value.strip_prefix('[') {
            let inner = inner.rsplit_once(']').map_or(inner, |(a, _)| a);
            return split_outside(inner, ',').iter().map(|s| yaml_scalar(s)).filter(|s| !s.is_empty()).collect();
        }
        return vec![yaml_scalar(value)];
    }
    let mut items = Vec::new();
    for l in &lines[i + 1..] {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        match t.strip_prefix('-') {
            Some(item) if item.is_empty() || item.starts_with([' ', '\t']) => items.push(yaml_scalar(item.trim())),
            _ => break,
        }
    }
    items
}

/// A YAML scalar: quoted (`"…"` with escapes, `'…'`) or plain (a ` #`
/// comment cut).
fn yaml_scalar(s: &str) -> String {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix('"').and_then(|r| r.rfind('"').map(|i| &r[..i])) {
        let mut out = String::new();
        let mut it = inner.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => {}
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    if let Some(inner) = s.strip_prefix('\'').and_then(|r| r.rfind('\'').map(|i| &r[..i])) {
        return inner.replace("''", "'");
    }
    let cut = s.find(" #").map_or(s, |i| &s[..i]);
    cut.trim().to_owned()
}

/// Split on `sep` outside `{…}` and quotes.
fn split_outside(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts
}

/// Claude Code's `splitPathInFrontmatter`: split on commas outside braces,
/// trim, drop empty parts, expand braces.
fn split_paths(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).flat_map(expand_braces).collect()
}

/// `^([^{]*)\{([^}]+)\}(.*)$` expanded recursively (alternatives trimmed).
fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_owned()] };
    let Some(close) = p[open..].find('}').map(|i| open + i) else { return vec![p.to_owned()] };
    if close == open + 1 {
        return vec![p.to_owned()];
    }
    let (prefix, alts, suffix) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    alts.split(',').flat_map(|a| expand_braces(&format!("{prefix}{}{suffix}", a.trim()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_yaml_scalars() {
        let (yaml, body) = split_frontmatter("---\ndescription: \"D\" \nwhen_to_use: w # c\nno colon\n---\nb").unwrap();
        assert_eq!(body, "b");
        assert_eq!(fields(yaml), [("description".into(), "D".into()), ("when_to_use".into(), "w".into())]);
    }

    #[test]
    fn frontmatter_forms() {
        assert_eq!(parse_frontmatter_paths("no frontmatter\n"), ("no frontmatter\n", vec![]));
        assert_eq!(
            parse_frontmatter_paths("---\npaths: a/**, {b,c}/x\n---\nbody"),
            ("body", vec!["a".to_owned(), "b/x".to_owned(), "c/x".to_owned()])
        );
        assert_eq!(parse_frontmatter_paths("---\npaths: \"src/**\" # c\n---\n\n  body\n").1, vec!["src"]);
        assert_eq!(
            parse_frontmatter_paths("---\npaths: src/** # c\n---\n\n  body\n"),
            ("body\n", vec!["src".to_owned()])
        );
        assert_eq!(parse_frontmatter_paths("---\npaths: '**'\n---\nx").1, Vec::<String>::new());
        assert_eq!(parse_frontmatter_paths("---\npaths:\n- a\n- b, c\nother: 1\n---\nx").1, vec!["a", "b", "c"]);
        // Not frontmatter: no newline after the opening dashes.
        assert_eq!(parse_frontmatter_paths("--- x\n---\nbody").0, "--- x\n---\nbody");
    }
}
