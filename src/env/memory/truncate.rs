//! MEMORY.md truncation: Claude Code's `truncateEntrypointContent` (200
//! lines, 25,000 UTF-16 units) and the `formatFileSize` of its warning.
//!
//! Pure text processing; no I/O.

use super::paths::js_trim;
use super::{MAX_ENTRYPOINT_LINES, MAX_ENTRYPOINT_UNITS};

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` of at most `units` UTF-16 code units.
fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut u = 0;
    for (i, ch) in s.char_indices() {
        u += ch.len_utf16();
        if u > units {
            return &s[..i];
        }
    }
    s
}

/// Claude Code's `formatFileSize` (`toFixed(1)` rounds half up on these
/// exact binary fractions).
fn format_file_size(bytes: usize) -> String {
    let fmt = |tenths: usize, unit: &str| {
        if tenths.is_multiple_of(10) {
            format!("{}{unit}", tenths / 10)
        } else {
            format!("{}.{}{unit}", tenths / 10, tenths % 10)
        }
    };
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    if bytes < 1024 * 1024 {
        return fmt((bytes * 20 + 1024) / 2048, "KB");
    }
    if bytes < 1024 * 1024 * 1024 {
        return fmt((bytes * 20 + (1 << 20)) / (2 << 20), "MB");
    }
    fmt((bytes * 20 + (1 << 30)) / (2 << 30), "GB")
}

/// Claude Code's `truncateEntrypointContent`: trimmed; over 200 lines or
/// 25,000 UTF-16 units, cut (at the last newline within the limit) and
/// followed by a warning.
pub(super) fn truncate_entrypoint(raw: &str) -> String {
    let trimmed = js_trim(raw);
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let line_count = lines.len();
    let units = utf16_len(trimmed);
    let by_lines = line_count > MAX_ENTRYPOINT_LINES;
    let by_size = units > MAX_ENTRYPOINT_UNITS;
    if !by_lines && !by_size {
        return trimmed.to_owned();
    }
    let mut truncated = if by_lines { lines[..MAX_ENTRYPOINT_LINES].join("\n") } else { trimmed.to_owned() };
    if utf16_len(&truncated) > MAX_ENTRYPOINT_UNITS {
        // lastIndexOf('\n', limit): the last newline starting at a unit index <= limit.
        let mut u = 0;
        let mut cut = None;
        for (i, ch) in truncated.char_indices() {
            if u > MAX_ENTRYPOINT_UNITS {
                break;
            }
            if ch == '\n' {
                cut = Some(i);
            }
            u += ch.len_utf16();
        }
        let end = match cut {
            Some(i) if i > 0 => i,
            _ => utf16_prefix(&truncated, MAX_ENTRYPOINT_UNITS).len(),
        };
        truncated.truncate(end);
    }
    let reason = match (by_lines, by_size) {
        (false, _) => format!(
            "{} (limit: {}) — index entries are too long",
            format_file_size(units),
            format_file_size(MAX_ENTRYPOINT_UNITS)
        ),
        (true, false) => format!("{line_count} lines (limit: {MAX_ENTRYPOINT_LINES})"),
        (true, true) => format!("{line_count} lines and {}", format_file_size(units)),
    };
    format!(
        "{truncated}\n\n> WARNING: MEMORY.md is {reason}. Only part of it was loaded. Keep index entries to one line \
         under ~200 chars; move detail into topic files."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sizes_format_like_claude_code() {
        assert_eq!(format_file_size(1023), "1023 bytes");
        assert_eq!(format_file_size(1024), "1KB");
        assert_eq!(format_file_size(25_000), "24.4KB");
        // 25.25 KB: toFixed(1) rounds the tie up.
        assert_eq!(format_file_size(25_856), "25.3KB");
        assert_eq!(format_file_size(3 << 20), "3MB");
    }
}
