//! `@include` paths: found in Markdown text runs outside code and HTML, and
//! expanded to logical paths (Claude Code's `extractIncludePathsFromTokens`
//! and `expandPath`).
//!
//! Only finds paths; whether they are followed (depth, the cwd boundary) is
//! [`super::loader`]'s decision, and reading them is [`super::fs`]'s.

use super::markdown::{Block, BlockKind, comment_residue};
use super::paths::{join, js_space, js_trim, normalize};

/// The include paths of a file (absolute, normalised, first occurrence
/// order): `@…` in text runs outside code and HTML (in a comment block, in
/// its residue).
pub(super) fn extract_includes(src: &str, blocks: &[Block], base_dir: &str, home: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |text: &str| {
        for p in scan_at_paths(text) {
            let abs = expand_path(&p, base_dir, home);
            if !found.contains(&abs) {
                found.push(abs);
            }
        }
    };
    let mut para = String::new();
    for b in blocks {
        let raw = &src[b.start..b.end];
        if b.kind == BlockKind::Text {
            para.push_str(raw);
            continue;
        }
        for seg in inline_segments(&std::mem::take(&mut para)) {
            add(&seg);
        }
        match b.kind {
            BlockKind::Heading => {
                for seg in inline_segments(raw) {
                    add(&seg);
                }
            }
            BlockKind::Comment => {
                if let Some(residue) = comment_residue(raw)
                    && !js_trim(&residue).is_empty()
                {
                    add(&residue);
                }
            }
            _ => {}
        }
    }
    for seg in inline_segments(&para) {
        add(&seg);
    }
    found
}

/// Split a paragraph into the text runs marked would give (approximately):
/// code spans, escapes (`\@`), inline HTML and comments end a run and are
/// dropped; a link `[text](dest)` gives its text as runs of its own.
fn inline_segments(s: &str) -> Vec<String> {
    let c: Vec<char> = s.chars().collect();
    let mut segs = Vec::new();
    inline_segments_into(&c, &mut segs);
    segs
}

fn inline_segments_into(c: &[char], segs: &mut Vec<String>) {
    let mut cur = String::new();
    let flush = |cur: &mut String, segs: &mut Vec<String>| {
        if !cur.is_empty() {
            segs.push(std::mem::take(cur));
        }
    };
    let starts = |i: usize, pat: &str| pat.chars().enumerate().all(|(k, p)| c.get(i + k) == Some(&p));
    let find = |from: usize, pat: &str| (from..c.len()).find(|&i| starts(i, pat));
    // Where the last `-->` starts: a `<!--` after it cannot close (keeps the
    // scan linear on text full of unclosed comments).
    let last_close = (0..c.len()).rev().find(|&i| starts(i, "-->"));
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' && c.get(i + 1).is_some_and(char::is_ascii_punctuation) {
            flush(&mut cur, segs);
            i += 2;
            continue;
        }
        if ch == '`' {
            let n = c[i..].iter().take_while(|&&x| x == '`').count();
            let mut j = i + n;
            let mut close = None;
            while j < c.len() {
                if c[j] == '`' {
                    let m = c[j..].iter().take_while(|&&x| x == '`').count();
                    if m == n {
                        close = Some(j);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            match close {
                Some(j) => {
                    flush(&mut cur, segs);
                    i = j + n;
                }
                None => {
                    cur.extend(&c[i..i + n]);
                    i += n;
                }
            }
            continue;
        }
        if starts(i, "<!--")
            && last_close.is_some_and(|l| l >= i + 4)
            && let Some(j) = find(i + 4, "-->")
        {
            flush(&mut cur, segs);
            i = j + 3;
            continue;
        }
        if ch == '<'
            && c.get(i + 1).is_some_and(|&x| x.is_ascii_alphabetic() || x == '/')
            && let Some(j) = (i + 1..c.len()).take_while(|&j| c[j] != '\n' && c[j] != '<').find(|&j| c[j] == '>')
        {
            flush(&mut cur, segs);
            i = j + 1;
            continue;
        }
        if ch == '['
            && let Some((text_end, link_end)) = parse_link(c, i)
        {
            flush(&mut cur, segs);
            inline_segments_into(&c[i + 1..text_end], segs);
            i = link_end;
            continue;
        }
        cur.push(ch);
        i += 1;
    }
    flush(&mut cur, segs);
}

/// Longest link text or destination looked for, in characters (keeps the
/// scan linear on text full of unclosed `[`).
const MAX_LINK_PART: usize = 4096;

/// `[text](dest)` at `i`: the index of `]` and the index after `)`.
fn parse_link(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut depth = 0;
    let mut j = i;
    let text_end = loop {
        if j > i + MAX_LINK_PART {
            return None;
        }
        match c.get(j)? {
            '\\' => j += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            _ => {}
        }
        j += 1;
    };
    if c.get(text_end + 1) != Some(&'(') {
        return None;
    }
    let mut depth = 0;
    let mut k = text_end + 1;
    loop {
        if k > text_end + MAX_LINK_PART {
            return None;
        }
        match c.get(k)? {
            '\\' => k += 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((text_end, k + 1));
                }
            }
            '\n' if c.get(k + 1) == Some(&'\n') => return None,
            _ => {}
        }
        k += 1;
    }
}

/// `/(?:^|\s)@((?:[^\s\\]|\\ )+)/g` over one text run, each match with its
/// `#fragment` cut, `\ ` unescaped and Claude Code's path check
/// (`./`, `~/`, `/x`, or a first character in `[A-Za-z0-9._-]`). An `@`
/// right after an emphasis opener (`**@x**`) counts as at the start of a run
/// (marked puts the emphasis text in a run of its own) and the closer is cut.
fn scan_at_paths(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] != '@' {
            i += 1;
            continue;
        }
        let mut closer: Option<(char, usize)> = None;
        let at_start = if i == 0 || js_space(c[i - 1]) {
            true
        } else if matches!(c[i - 1], '*' | '_') {
            let d = c[i - 1];
            let run_start = (0..i).rev().take_while(|&k| c[k] == d).last().unwrap_or(i - 1);
            let opens = run_start == 0 || js_space(c[run_start - 1]);
            if opens {
                closer = Some((d, i - run_start));
            }
            opens
        } else {
            false
        };
        if !at_start {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut cap = String::new();
        while j < c.len() {
            if c[j] == '\\' {
                if c.get(j + 1) == Some(&' ') {
                    cap.push_str("\\ ");
                    j += 2;
                    continue;
                }
                break;
            }
            if js_space(c[j]) {
                break;
            }
            cap.push(c[j]);
            j += 1;
        }
        i = j.max(i + 1);
        if let Some((d, n)) = closer {
            // The emphasis text ends at the closing run.
            if let Some(k) = cap.find(&d.to_string().repeat(n)) {
                cap.truncate(k);
            }
        }
        let mut p = cap.as_str();
        if let Some(h) = p.find('#') {
            p = &p[..h];
        }
        if p.is_empty() {
            continue;
        }
        let p = p.replace("\\ ", " ");
        let valid = p.starts_with("./")
            || p.starts_with("~/")
            || (p.starts_with('/') && p != "/")
            || p.chars().next().is_some_and(|f| f.is_ascii_alphanumeric() || matches!(f, '.' | '_' | '-'));
        if valid {
            out.push(p);
        }
    }
    out
}

/// Claude Code's `expandPath(path, base)` on logical paths.
fn expand_path(p: &str, base_dir: &str, home: &str) -> String {
    let p = js_trim(p);
    if p == "~" {
        return normalize(home);
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return join(home, rest);
    }
    if p.starts_with('/') {
        return normalize(p);
    }
    join(base_dir, p)
}
