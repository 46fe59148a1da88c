//! Glob matching of conditional rules: the `ignore` package's `.gitignore`
//! semantics Claude Code applies to a rule's `paths:`.
//!
//! Pure matching over relative paths; no I/O.

use globset::{GlobBuilder, GlobMatcher};

struct IgnoreRule {
    negated: bool,
    dir_only: bool,
    glob: GlobMatcher,
}

fn compile_ignore(patterns: &[String]) -> Vec<IgnoreRule> {
    let mut rules = Vec::new();
    for p in patterns {
        let mut p = p.trim_end_matches(' ');
        if p.is_empty() || p.starts_with('#') {
            continue;
        }
        let negated = p.starts_with('!');
        if negated {
            p = &p[1..];
        }
        let p = p.strip_prefix('\\').filter(|r| r.starts_with(['#', '!'])).unwrap_or(p);
        let dir_only = p.ends_with('/');
        let p = p.trim_end_matches('/');
        let anchored = p.contains('/');
        let p = p.trim_start_matches('/');
        if p.is_empty() {
            continue;
        }
        let glob = if anchored { p.to_owned() } else { format!("**/{p}") };
        let built =
            GlobBuilder::new(&glob).literal_separator(true).case_insensitive(true).backslash_escape(true).build();
        if let Ok(g) = built {
            rules.push(IgnoreRule { negated, dir_only, glob: g.compile_matcher() });
        }
    }
    rules
}

/// `ignore().add(patterns).ignores(rel)`: a path is ignored when one of its
/// parent directories is, else when the last matching pattern is not a
/// negation.
pub(super) fn ignore_matches(patterns: &[String], rel: &str) -> bool {
    let rules = compile_ignore(patterns);
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let test = |path: &str, is_dir: bool| {
        let mut ignored = false;
        for r in &rules {
            if (!r.dir_only || is_dir) && r.glob.is_match(path) {
                ignored = !r.negated;
            }
        }
        ignored
    };
    for k in 1..parts.len() {
        if test(&parts[..k].join("/"), true) {
            return true;
        }
    }
    !parts.is_empty() && test(&parts.join("/"), rel.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_glob_semantics() {
        let m = |pats: &[&str], rel: &str| ignore_matches(&pats.iter().map(|p| p.to_string()).collect::<Vec<_>>(), rel);
        assert!(m(&["src/api"], "src/api/x.py"));
        assert!(m(&["src/api"], "src/api"));
        assert!(!m(&["src/api"], "src/apix/y.py"));
        assert!(!m(&["src/api"], "a/src/api/x.py"));
        assert!(m(&["api"], "a/src/api/x.py"));
        assert!(m(&["*.py"], "a/b/c.py"));
        assert!(!m(&["/*.py"], "a/c.py"));
        assert!(m(&["build/"], "build/x"));
        assert!(!m(&["build/"], "build"));
        assert!(m(&["*.md", "!README.md"], "a.md"));
        assert!(!m(&["*.md", "!README.md"], "README.md"));
        assert!(m(&["docs/**/*.md"], "docs/a.md"));
        assert!(m(&["docs/**/*.md"], "docs/x/y/a.md"));
        assert!(m(&["src/*.{ts,tsx}"], "src/a.tsx"));
    }
}
