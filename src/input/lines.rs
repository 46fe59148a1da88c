//! Splitting a file's bytes into numbered lines with memchr.

/// One non-blank line of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'s> {
    /// 1-based position among the `\n`-separated pieces of the file.
    pub number: u32,
    /// The bytes without the `\n` and without one trailing `\r`.
    pub bytes: &'s [u8],
    /// True for the final piece of a file that does not end with `\n`:
    /// such a line may have been cut by a concurrent writer.
    pub unterminated: bool,
}

/// Iterator over the non-blank lines of `data`. Blank pieces (empty or only
/// ASCII whitespace) are skipped but still counted in line numbers.
pub struct Lines<'s> {
    data: &'s [u8],
    pos: usize,
    number: u32,
}

/// Split `data` into lines.
pub fn lines(data: &[u8]) -> Lines<'_> {
    Lines { data, pos: 0, number: 0 }
}

#[inline]
fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

impl<'s> Iterator for Lines<'s> {
    type Item = Line<'s>;

    fn next(&mut self) -> Option<Line<'s>> {
        next_line(self.data, &mut self.pos, &mut self.number)
    }
}

/// The first non-blank line of `data` at or after byte `*pos`, whose
/// `\n`-separated pieces before `*pos` were `*number`; both are moved past
/// it. [`Lines`] is this over one borrow of `data`; a reader that writes
/// into the lines it has passed takes a fresh borrow for each call.
pub fn next_line<'s>(data: &'s [u8], pos: &mut usize, number: &mut u32) -> Option<Line<'s>> {
    while *pos < data.len() {
        let rest = &data[*pos..];
        *number = number.saturating_add(1);
        let (piece, unterminated) = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                *pos += i + 1;
                (&rest[..i], false)
            }
            None => {
                *pos = data.len();
                (rest, true)
            }
        };
        let piece = piece.strip_suffix(b"\r").unwrap_or(piece);
        // Fast path: a JSONL line starts with `{`; only scan for blanks otherwise.
        if piece.first() == Some(&b'{') || !is_blank(piece) {
            return Some(Line { number: *number, bytes: piece, unterminated });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(data: &[u8]) -> Vec<(u32, &[u8], bool)> {
        lines(data).map(|l| (l.number, l.bytes, l.unterminated)).collect()
    }

    #[test]
    fn numbers_skip_blank_lines_and_strip_crlf() {
        let data = b"{\"a\":1}\r\n\n   \t\r\n{\"b\":2}\n";
        assert_eq!(collect(data), vec![(1, &b"{\"a\":1}"[..], false), (4, &b"{\"b\":2}"[..], false)]);
    }

    #[test]
    fn last_line_without_newline_is_unterminated() {
        assert_eq!(collect(b"{}\n{\"x\""), vec![(1, &b"{}"[..], false), (2, &b"{\"x\""[..], true)]);
        assert_eq!(collect(b""), vec![]);
        assert_eq!(collect(b"\n\n"), vec![]);
        assert_eq!(collect(b"x"), vec![(1, &b"x"[..], true)]);
    }
}
