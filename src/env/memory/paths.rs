//! Logical path helpers (POSIX, lexical) and JavaScript's whitespace, as
//! Claude Code's path and string code sees them.
//!
//! Pure string functions: nothing here touches the disk.

/// Lexically normalised absolute path (`.`, `..`, `//` and a trailing `/`
/// removed); a relative path is taken from `/`.
pub(super) fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() { "/".to_owned() } else { format!("/{}", parts.join("/")) }
}

pub(super) fn join(dir: &str, rel: &str) -> String {
    normalize(&format!("{dir}/{rel}"))
}

/// `p` is `dir` or below it (both normalised).
pub(super) fn is_within(p: &str, dir: &str) -> bool {
    dir == "/" || p == dir || (p.starts_with(dir) && p.as_bytes().get(dir.len()) == Some(&b'/'))
}

pub(super) fn dirname(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}

/// `target` relative to `base` when it is below it (`""` when equal).
pub(super) fn relative(base: &str, target: &str) -> Option<String> {
    is_within(target, base).then(|| target[base.len().min(target.len())..].trim_start_matches('/').to_owned())
}

/// Node's `path.extname`: from the last `.` of the base name, `""` when the
/// name has no dot or only a leading one.
pub(super) fn extname(p: &str) -> &str {
    let base = &p[p.rfind('/').map_or(0, |i| i + 1)..];
    match base.rfind('.') {
        Some(i) if i > 0 && base != ".." => &base[i..],
        _ => "",
    }
}

/// JavaScript's `\s` / `trim` whitespace.
pub(super) fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

pub(super) fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}
