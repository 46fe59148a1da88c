//! Diagnostics: every defect found in the input, with file, line and kind.
//!
//! Bad input never stops a run: each problem becomes a [`Diagnostic`], the
//! rest of the file and the other files are still read.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What went wrong. The `as_str` names are the stable `kind` strings of the
/// JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiagKind {
    /// A path given on the command line does not exist.
    NotFound,
    /// The file could not be opened or read.
    Io,
    /// The file has no non-blank line.
    EmptyFile,
    /// A line is not valid UTF-8.
    InvalidUtf8,
    /// A line is not valid JSON.
    InvalidJson,
    /// The last line of a file without a final newline does not parse: it was
    /// being written (or was cut) when the file was read.
    TruncatedLine,
    /// A line longer than the configured maximum; skipped.
    LineTooLong,
    /// Valid JSON that is not an object.
    NotAnObject,
    /// A number no 64-bit type holds; the line is kept and the number read
    /// as JavaScript's `JSON.parse` reads it: an integer beyond 64 bits as
    /// the nearest double (a field that needs an integer, such as a token
    /// count, then treats it as absent), a number beyond the range of a
    /// double (`1e400`) as `null` (absent). The message names the field.
    NumberOutOfRange,
    /// An object without a string `type`.
    MissingType,
    /// A `type` this version of ctxasm does not know; the entry is kept as
    /// `Unknown` with its raw line.
    UnknownType,
    /// A `uuid` already used by an earlier line of the same file.
    DuplicateUuid,
    /// A `parentUuid` that names no entry of the session.
    MissingParent,
    /// `parentUuid` links that loop.
    ParentCycle,
    /// A recorded request that cannot be rebuilt exactly (a tail hash that
    /// matches no message, a missing base or shape, a bad cacheControl path).
    RecordMismatch,
    /// A recorded piece with a field missing or of the wrong type (an
    /// `api-request` whose `params` is not an object or whose `model` is not
    /// a string, a shape whose `system` is not an array, a blob that is not
    /// a message): the request is not rebuilt, never written as recorded.
    InvalidRecord,
    /// An assembled request that breaks a Messages API rule
    /// (`assemble::validate`).
    InvalidRequest,
    /// A memory file include refused (outside the allowed roots, too deep,
    /// a cycle, not a text file): transcripts are untrusted input.
    MemoryRefused,
    /// The session was built with another release's profile (or the
    /// built-in layout): no profile of its own release is cached.
    ApproximatedProfile,
    /// A request the session sent that ctxasm cannot rebuild (records
    /// mode: a compaction no record holds, with no profile that knows the
    /// instruction; a request that keeps a message lost with an earlier
    /// request, named with the line that lost it).
    NotRebuilt,
    /// The session calls MCP tools its environment snapshot or profile
    /// cannot render (no `env/mcp.json`, or a profile without an MCP
    /// style): built with the tools named after the calls.
    ApproximatedMcp,
    /// A bug in ctxasm caught at a file boundary (a panic); the run goes on.
    Internal,
}

impl DiagKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagKind::NotFound => "not_found",
            DiagKind::Io => "io_error",
            DiagKind::EmptyFile => "empty_file",
            DiagKind::InvalidUtf8 => "invalid_utf8",
            DiagKind::InvalidJson => "invalid_json",
            DiagKind::TruncatedLine => "truncated_line",
            DiagKind::LineTooLong => "line_too_long",
            DiagKind::NotAnObject => "not_an_object",
            DiagKind::NumberOutOfRange => "number_out_of_range",
            DiagKind::MissingType => "missing_type",
            DiagKind::UnknownType => "unknown_type",
            DiagKind::DuplicateUuid => "duplicate_uuid",
            DiagKind::MissingParent => "missing_parent",
            DiagKind::ParentCycle => "parent_cycle",
            DiagKind::RecordMismatch => "record_mismatch",
            DiagKind::InvalidRecord => "invalid_record",
            DiagKind::InvalidRequest => "invalid_request",
            DiagKind::MemoryRefused => "memory_refused",
            DiagKind::ApproximatedProfile => "approximated_profile",
            DiagKind::NotRebuilt => "not_rebuilt",
            DiagKind::ApproximatedMcp => "approximated_mcp",
            DiagKind::Internal => "internal_error",
        }
    }

    /// True for kinds that make a line unusable (counted in `bad_lines`).
    pub fn is_bad_line(self) -> bool {
        matches!(
            self,
            DiagKind::InvalidUtf8
                | DiagKind::InvalidJson
                | DiagKind::TruncatedLine
                | DiagKind::LineTooLong
                | DiagKind::NotAnObject
                | DiagKind::MissingType
        )
    }
}

impl fmt::Display for DiagKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DiagKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl DiagKind {
    /// Every kind, in declaration order (a kind added to the enum is added
    /// here, or a report naming it cannot be read back).
    pub const ALL: [DiagKind; 22] = [
        DiagKind::NotFound,
        DiagKind::Io,
        DiagKind::EmptyFile,
        DiagKind::InvalidUtf8,
        DiagKind::InvalidJson,
        DiagKind::TruncatedLine,
        DiagKind::LineTooLong,
        DiagKind::NotAnObject,
        DiagKind::NumberOutOfRange,
        DiagKind::MissingType,
        DiagKind::UnknownType,
        DiagKind::DuplicateUuid,
        DiagKind::MissingParent,
        DiagKind::ParentCycle,
        DiagKind::RecordMismatch,
        DiagKind::InvalidRecord,
        DiagKind::InvalidRequest,
        DiagKind::MemoryRefused,
        DiagKind::ApproximatedProfile,
        DiagKind::NotRebuilt,
        DiagKind::ApproximatedMcp,
        DiagKind::Internal,
    ];

    /// The kind named `name` (its [`as_str`](Self::as_str)).
    pub fn from_name(name: &str) -> Option<DiagKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Read back from its `kind` string (a report written by another run).
impl<'de> Deserialize<'de> for DiagKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        DiagKind::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown diagnostic kind {name:?}")))
    }
}

/// One problem in the input. `line` is 1-based; 0 means the whole file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub kind: DiagKind,
    pub message: String,
}

impl Diagnostic {
    pub fn new(file: impl Into<String>, line: u32, kind: DiagKind, message: impl Into<String>) -> Self {
        Self { file: file.into(), line, kind, message: message.into() }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}: {}", self.file, self.line, self.kind, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.kind, self.message)
        }
    }
}

/// Cut long texts (e.g. simd-json messages quoting input) for a diagnostic.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_json_name_file_line_and_kind() {
        let d = Diagnostic::new("a/b.jsonl", 7, DiagKind::InvalidJson, "expected ','");
        assert_eq!(d.to_string(), "a/b.jsonl:7: invalid_json: expected ','");
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"file":"a/b.jsonl","line":7,"kind":"invalid_json","message":"expected ','"}"#
        );
        let e = Diagnostic::new("e.jsonl", 0, DiagKind::EmptyFile, "no lines");
        assert_eq!(e.to_string(), "e.jsonl: empty_file: no lines");
        let back: Diagnostic = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        for k in DiagKind::ALL {
            assert_eq!(DiagKind::from_name(k.as_str()), Some(k));
        }
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 5), "abc");
    }
}
