//! Markdown: top-level blocks (an approximation of marked's block lexer) and
//! Claude Code's `stripHtmlComments` over them.
//!
//! Pure text processing; no I/O. [`super::includes`] scans the same blocks.

use super::paths::{js_space, js_trim};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockKind {
    /// Paragraph, list, quote or other inline-bearing lines.
    Text,
    /// An ATX heading line (a text run of its own).
    Heading,
    /// Fenced or indented code.
    Code,
    /// An HTML block that is not a comment.
    Html,
    /// An HTML block starting with `<!--`: its raw text runs to the end of
    /// the line holding `-->` (or to the end of the text when there is none)
    /// and the newlines after it.
    Comment,
    Blank,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) kind: BlockKind,
}

/// The end of the line starting at `pos` (after its `\n`).
fn line_end(s: &str, pos: usize) -> usize {
    s[pos..].find('\n').map_or(s.len(), |i| pos + i + 1)
}

/// Indentation in columns (tab stops of 4) and in bytes.
fn indent_of(line: &str) -> (usize, usize) {
    let mut cols = 0;
    for (i, b) in line.bytes().enumerate() {
        match b {
            b' ' => cols += 1,
            b'\t' => cols += 4 - cols % 4,
            _ => return (cols, i),
        }
    }
    (cols, line.len())
}

fn is_blank(line: &str) -> bool {
    line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn fence_open(rest: &str) -> Option<(u8, usize)> {
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&c| c == ch).count();
    if n < 3 || (ch == b'`' && rest[n..].contains('`')) {
        return None;
    }
    Some((ch, n))
}

fn fence_closes(rest: &str, ch: u8, n: usize) -> bool {
    rest.len() >= n
        && rest.bytes().take(n).all(|c| c == ch)
        && rest[n..].trim_end_matches([' ', '\r', '\n']).bytes().all(|c| c == b'`' || c == b'~')
}

/// The end of a fenced block opened on the line ending at `from`: after its
/// closing fence line, or the end of the text.
fn fence_end(src: &str, from: usize, ch: u8, n: usize, max_indent: usize) -> usize {
    let mut pos = from;
    while pos < src.len() {
        let le = line_end(src, pos);
        let (ind, ib) = indent_of(&src[pos..le]);
        if ind <= max_indent && fence_closes(&src[pos + ib..le], ch, n) {
            return le;
        }
        pos = le;
    }
    src.len()
}

/// The text of a block-quote line after its `>` markers.
fn strip_quote(mut s: &str) -> &str {
    loop {
        let t = s.trim_start_matches(' ');
        match t.strip_prefix('>') {
            Some(r) => s = r.strip_prefix(' ').unwrap_or(r),
            None => return s,
        }
    }
}

/// Width of a list marker and the spaces after it (the item's content
/// indent), when `rest` starts a list item.
fn list_marker(rest: &str) -> Option<usize> {
    let b = rest.as_bytes();
    let m = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let d = b.iter().take_while(|c| c.is_ascii_digit()).count();
            if d > 9 || !matches!(b.get(d), Some(b'.' | b')')) {
                return None;
            }
            d + 1
        }
        _ => return None,
    };
    let after = &rest[m..];
    let body = after.trim_end_matches(['\n', '\r']);
    if body.is_empty() {
        return Some(m + 1);
    }
    let sp = body.bytes().take_while(|&c| c == b' ' || c == b'\t').count();
    match sp {
        0 => None,
        1..=4 if sp < body.len() => Some(m + sp),
        _ => Some(m + 1),
    }
}

fn is_atx_heading(rest: &str) -> bool {
    let n = rest.bytes().take_while(|&c| c == b'#').count();
    (1..=6).contains(&n) && rest[n..].bytes().next().is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
}

fn is_hr(rest: &str) -> bool {
    let t: Vec<u8> = rest.bytes().filter(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r')).collect();
    t.len() >= 3 && matches!(t[0], b'-' | b'*' | b'_') && t.iter().all(|&c| c == t[0])
}

const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "meta",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "search",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn find_ci(s: &str, needle: &str) -> Option<usize> {
    let n = needle.len();
    (0..s.len().saturating_sub(n - 1)).find(|&i| s.as_bytes()[i..i + n].eq_ignore_ascii_case(needle.as_bytes()))
}

/// After the line holding byte `at`, and the newlines that follow it.
fn past_line_and_newlines(src: &str, at: usize) -> usize {
    let mut e = src[at..].find('\n').map_or(src.len(), |i| at + i);
    while src.as_bytes().get(e) == Some(&b'\n') {
        e += 1;
    }
    e
}

/// The start of the first blank line at or after `from` (or the end).
fn until_blank_line(src: &str, from: usize) -> usize {
    let mut pos = from;
    while pos < src.len() {
        let le = line_end(src, pos);
        if is_blank(&src[pos..le]) {
            return pos;
        }
        pos = le;
    }
    src.len()
}

/// An HTML block starting at `lt` (a `<` at most 3 columns into the line
/// ending at `le`): its end and kind. `prev_para`: the line continues a
/// paragraph, which only comments and HTML types 1 and 6 can interrupt.
fn html_block(src: &str, lt: usize, le: usize, prev_para: bool) -> Option<(usize, BlockKind)> {
    let s = &src[lt..];
    if s.starts_with("<!--") {
        let after = lt + 4;
        let close = if src[after..].starts_with('>') {
            Some(after + 1)
        } else if src[after..].starts_with("->") {
            Some(after + 2)
        } else {
            src[after..].find("-->").map(|i| after + i + 3)
        };
        return Some(match close {
            Some(c) => (past_line_and_newlines(src, c), BlockKind::Comment),
            None => (src.len(), BlockKind::Comment),
        });
    }
    for tag in ["script", "pre", "style", "textarea"] {
        if starts_with_ci(&s[1..], tag)
            && s[1 + tag.len()..].bytes().next().is_some_and(|c| c == b'>' || js_space(c as char))
        {
            let end =
                find_ci(&src[lt..], &format!("</{tag}>")).map_or(src.len(), |i| past_line_and_newlines(src, lt + i));
            return Some((end, BlockKind::Html));
        }
    }
    let line = src[lt..le].trim_end_matches(['\n', '\r', ' ', '\t']);
    // Type 6: a known block tag.
    let name_start = if s.starts_with("</") { 2 } else { 1 };
    let name_len = s[name_start..].bytes().take_while(|c| c.is_ascii_alphanumeric()).count();
    let name = s[name_start..name_start + name_len].to_ascii_lowercase();
    let next = &line[(name_start + name_len).min(line.len())..];
    if BLOCK_TAGS.contains(&name.as_str())
        && (next.is_empty() || next.starts_with([' ', '>']) || next.starts_with("/>"))
    {
        return Some((until_blank_line(src, le), BlockKind::Html));
    }
    if prev_para {
        return None;
    }
    let marker = |open: &str, close: &str| {
        s.starts_with(open).then(|| src[lt..].find(close).map_or(src.len(), |i| past_line_and_newlines(src, lt + i)))
    };
    if let Some(end) = marker("<![CDATA[", "]]>").or_else(|| marker("<?", "?>")) {
        return Some((end, BlockKind::Html));
    }
    if s.starts_with("<!") && s.as_bytes().get(2).is_some_and(u8::is_ascii_uppercase) {
        return Some((marker("<!", ">").unwrap_or(src.len()), BlockKind::Html));
    }
    // Type 7: a complete open or closing tag alone on its line.
    let tag_name_ok = name_len > 0
        && s.as_bytes()[name_start].is_ascii_alphabetic()
        && !["script", "pre", "style", "textarea"].contains(&name.as_str());
    let whole_tag = line.ends_with('>') && !line[1..line.len() - 1].contains(['<', '>']);
    if tag_name_ok && whole_tag {
        return Some((until_blank_line(src, le), BlockKind::Html));
    }
    None
}

/// The end of a fenced block inside a block quote opened on the line ending
/// at `from`: after its closing fence line, the last quoted line, or the end.
fn quoted_fence_end(src: &str, from: usize, ch: u8, n: usize) -> usize {
    let mut end = from;
    while end < src.len() {
        let e2 = line_end(src, end);
        let (i2, b2) = indent_of(&src[end..e2]);
        let r2 = &src[end + b2..e2];
        if i2 > 3 || !r2.starts_with('>') {
            break;
        }
        end = e2;
        if fence_closes(strip_quote(r2), ch, n) {
            break;
        }
    }
    end
}

/// The end of an indented code block whose first line ends at `from`: after
/// its last line indented by 4 or more (blank lines between them included).
fn indented_code_end(src: &str, from: usize) -> usize {
    let mut end = from;
    let mut scan = from;
    while scan < src.len() {
        let e2 = line_end(src, scan);
        let l2 = &src[scan..e2];
        if is_blank(l2) {
            scan = e2;
        } else if indent_of(l2).0 >= 4 {
            scan = e2;
            end = e2;
        } else {
            break;
        }
    }
    end
}

/// Split `src` (line ends normalised) into top-level blocks.
pub(super) fn scan_blocks(src: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut push = |start: usize, end: usize, kind: BlockKind| {
        if end > start {
            out.push(Block { start, end, kind });
        }
    };
    let mut pos = 0;
    let mut prev_para = false;
    let mut prev_blank = true;
    let mut list_indent: Option<usize> = None;
    while pos < src.len() {
        let le = line_end(src, pos);
        let line = &src[pos..le];
        if is_blank(line) {
            push(pos, le, BlockKind::Blank);
            pos = le;
            prev_para = false;
            prev_blank = true;
            continue;
        }
        let (ind, ib) = indent_of(line);
        let rest = &line[ib..];
        // Inside a list item, lines indented to its content belong to it.
        let mut base = 0;
        if let Some(ci) = list_indent {
            if ind >= ci {
                base = ci;
            } else if !(ind <= 3 && list_marker(rest).is_some()) && prev_blank {
                list_indent = None;
            }
        }
        let nested = base > 0;
        let rel = ind - base;
        prev_blank = false;

        if rel <= 3 {
            if let Some((ch, n)) = fence_open(rest) {
                let end = fence_end(src, le, ch, n, base + 3);
                push(pos, end, BlockKind::Code);
                pos = end;
                prev_para = false;
                if !nested {
                    list_indent = None;
                }
                continue;
            }
            if rest.starts_with('>')
                && let Some((ch, n)) = fence_open(strip_quote(rest))
            {
                let end = quoted_fence_end(src, le, ch, n);
                push(pos, end, BlockKind::Code);
                pos = end;
                prev_para = false;
                continue;
            }
        }
        if !nested && list_indent.is_none() && ind >= 4 && !prev_para {
            let end = indented_code_end(src, le);
            push(pos, end, BlockKind::Code);
            pos = end;
            continue;
        }
        if !nested
            && ind <= 3
            && rest.starts_with('<')
            && let Some((end, kind)) = html_block(src, pos + ib, le, prev_para)
        {
            push(pos, end, kind);
            pos = end;
            prev_para = false;
            list_indent = None;
            continue;
        }
        if !nested && ind <= 3 {
            if is_atx_heading(rest) {
                push(pos, le, BlockKind::Heading);
                pos = le;
                prev_para = false;
                list_indent = None;
                continue;
            }
            if is_hr(rest) {
                push(pos, le, BlockKind::Text);
                pos = le;
                prev_para = false;
                list_indent = None;
                continue;
            }
            if let Some(w) = list_marker(rest) {
                list_indent = Some(ind + w);
            }
        }
        push(pos, le, BlockKind::Text);
        pos = le;
        prev_para = true;
    }
    out
}

/// Remove every `<!--…-->` span (the `-->` searched after the `<!--`).
fn remove_comment_spans(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("<!--") {
        match rest[i + 4..].find("-->") {
            Some(j) => {
                out.push_str(&rest[..i]);
                rest = &rest[i + 4 + j + 3..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// A comment block as Claude Code treats it: when its raw text starts with
/// `<!--` and holds `-->`, the text left once the comments are removed;
/// else None (kept as is).
pub(super) fn comment_residue(raw: &str) -> Option<String> {
    let t = raw.trim_start_matches(js_space);
    (t.starts_with("<!--") && t.contains("-->")).then(|| remove_comment_spans(raw))
}

/// Claude Code's `stripHtmlComments`: the blocks' text, comment blocks
/// replaced by their residue (dropped when blank).
pub(super) fn strip_comments(src: &str, blocks: &[Block]) -> String {
    let mut out = String::with_capacity(src.len());
    for b in blocks {
        let raw = &src[b.start..b.end];
        match (b.kind, comment_residue(raw)) {
            (BlockKind::Comment, Some(residue)) => {
                if !js_trim(&residue).is_empty() {
                    out.push_str(&residue);
                }
            }
            _ => out.push_str(raw),
        }
    }
    out
}
