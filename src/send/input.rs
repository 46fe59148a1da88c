//! The requests to send: a batch file (one `{"custom_id","params"}` line per
//! request, as `ctxasm assemble` writes it) or a dedup directory (expanded
//! with [`crate::write::expand`] into an unlinked temporary file first).
//!
//! The file is memory-mapped and each request's body is a zero-copy slice
//! of the map: `params` exactly as written, never re-serialized. A bad line
//! (not JSON, no `custom_id`, `params` not an object or without a `model`)
//! or a duplicate `custom_id` is an [`InputError`] naming the file and the
//! 1-based line; that line is skipped and the others are kept.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

/// One request of the input.
#[derive(Debug, Clone)]
pub struct Request {
    pub custom_id: String,
    /// 1-based line in the (expanded) input.
    pub line: usize,
    /// The `params` bytes, exactly as in the file: the request body.
    pub body: Bytes,
    pub model: String,
    /// `params.stream` is `true`: the reply is an SSE stream.
    pub stream: bool,
}

impl Request {
    /// Input tokens estimated before sending: body bytes / 4, rounded up
    /// (facts §5: no public tokenizer for current models; chars/4 is the
    /// usual proxy). The rate limiter corrects it from the reply's usage.
    pub fn estimated_input_tokens(&self) -> u64 {
        (self.body.len() as u64).div_ceil(4)
    }
}

/// A line of the input that gives no request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (or `DIR (expanded)` for a dedup directory).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The requests of one input and the errors of its bad lines.
#[derive(Debug, Default)]
pub struct Input {
    /// How the input is named in messages.
    pub shown: String,
    pub requests: Vec<Request>,
    pub errors: Vec<InputError>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    custom_id: Cow<'a, str>,
    #[serde(borrow)]
    params: &'a RawValue,
}

#[derive(Deserialize)]
struct ParamsHead<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    stream: Option<serde_json::Value>,
}

/// Read a batch file or a dedup directory. An error here means the input
/// cannot be read at all (a missing file, an unreadable dedup directory);
/// bad lines are in [`Input::errors`].
pub fn read_input(path: &Path) -> io::Result<Input> {
    let meta = std::fs::metadata(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    if meta.is_dir() {
        let data = expand_to_map(path)?;
        Ok(parse(data, &format!("{} (expanded)", path.display())))
    } else {
        let data = map_file(path)?;
        if looks_like_transcript(&data) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a Claude Code transcript, not requests to send: `ctxasm assemble {} -o requests.jsonl` \
                     makes them",
                    path.display(),
                    path.display()
                ),
            ));
        }
        Ok(parse(data, &path.display().to_string()))
    }
}

/// The first non-blank line is a transcript entry (an object with a
/// `sessionId`, `parentUuid` or transcript `type`, and no `custom_id`):
/// the user gave `send` a session, not `assemble`'s output.
fn looks_like_transcript(data: &[u8]) -> bool {
    let Some(line) = data.split(|&b| b == b'\n').find(|l| !l.iter().all(|b| b.is_ascii_whitespace())) else {
        return false;
    };
    let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    let entry_type = o.get("type").and_then(|t| t.as_str()).is_some_and(|t| {
        matches!(t, "user" | "assistant" | "system" | "summary" | "attachment" | "progress" | "file-history-snapshot")
    });
    !o.contains_key("custom_id") && (o.contains_key("sessionId") || o.contains_key("parentUuid") || entry_type)
}

fn map_file(path: &Path) -> io::Result<Bytes> {
    let file = std::fs::File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    map_open(&file).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn map_open(file: &std::fs::File) -> io::Result<Bytes> {
    if file.metadata()?.len() == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: the map is read-only; like `ctxasm stats` (README, "Files
    // being written"), the input must not be truncated while it is read.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Bytes::from_owner(map))
}

/// Expand a dedup directory into an unlinked temporary file and map it, so
/// a large expansion lives in the page cache, not on the heap.
fn expand_to_map(dir: &Path) -> io::Result<Bytes> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let tmp = std::env::temp_dir().join(format!(".ctxasm-send-{}-{nanos}.jsonl", std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&tmp)?;
    let _ = std::fs::remove_file(&tmp);
    {
        let mut w = io::BufWriter::with_capacity(1 << 20, &file);
        crate::write::expand(dir, &mut w)?;
        w.flush()?;
    }
    map_open(&file)
}

/// Split `data` into lines and parse each (blank lines are skipped).
pub fn parse(data: Bytes, shown: &str) -> Input {
    let mut input = Input { shown: shown.to_string(), ..Input::default() };
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut start = 0usize;
    let mut line_no = 0usize;
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        line_no += 1;
        let mut line = &data[start..end];
        start = end + 1;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let err = |message: String| InputError { file: shown.to_string(), line: line_no, message };
        match parse_line(&data, line) {
            Ok(req) => {
                if let Some(&first) = first_line.get(&req.custom_id) {
                    input.errors.push(err(format!(
                        "duplicate custom_id {:?} (first at line {first}); this line is skipped",
                        req.custom_id
                    )));
                    continue;
                }
                first_line.insert(req.custom_id.clone(), line_no);
                input.requests.push(Request { line: line_no, ..req });
            }
            Err(message) => input.errors.push(err(message)),
        }
    }
    input
}

fn parse_line(data: &Bytes, line: &[u8]) -> Result<Request, String> {
    let parsed: Line<'_> = serde_json::from_slice(line).map_err(|e| {
        if e.is_eof() && !line.ends_with(b"}") {
            format!("truncated line: {e}")
        } else {
            format!("not a batch line {{\"custom_id\",\"params\"}}: {e}")
        }
    })?;
    if parsed.custom_id.is_empty() {
        return Err("empty custom_id".into());
    }
    let raw = parsed.params.get();
    if !raw.starts_with('{') {
        return Err("params is not a JSON object".into());
    }
    let head: ParamsHead<'_> = serde_json::from_str(raw).map_err(|e| format!("params: {e}"))?;
    let model = match head.model {
        Some(m) if !m.is_empty() => m.into_owned(),
        _ => return Err("params has no model".into()),
    };
    let stream = match head.stream {
        None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => false,
        Some(serde_json::Value::Bool(true)) => true,
        Some(other) => return Err(format!("params.stream must be a boolean, got {other}")),
    };
    Ok(Request {
        custom_id: parsed.custom_id.into_owned(),
        line: 0,
        body: data.slice_ref(raw.as_bytes()),
        model,
        stream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str) -> Input {
        parse(Bytes::from(text.to_string()), "in.jsonl")
    }

    #[test]
    fn params_bytes_are_kept_exactly() {
        let text = "{\"custom_id\":\"a\",\"params\":{\"model\":\"m\",  \"x\":1.50,\"stream\":true}}\n";
        let i = input(text);
        assert!(i.errors.is_empty());
        assert_eq!(&i.requests[0].body[..], br#"{"model":"m",  "x":1.50,"stream":true}"#);
        assert!(i.requests[0].stream);
        assert_eq!(i.requests[0].model, "m");
        assert_eq!(i.requests[0].line, 1);
    }

    #[test]
    fn bad_lines_name_the_line_and_the_rest_goes_on() {
        let text = concat!(
            "{\"custom_id\":\"a\",\"params\":{\"model\":\"m\"}}\n",
            "not json\n",
            "\n",
            "{\"custom_id\":\"b\",\"params\":[1]}\n",
            "{\"custom_id\":\"c\",\"params\":{\"max_tokens\":1}}\n",
            "{\"custom_id\":\"a\",\"params\":{\"model\":\"m2\"}}\n",
            "{\"custom_id\":\"d\",\"params\":{\"model\":\"m\",\"stream\":\"yes\"}}\n",
            "{\"custom_id\":\"e\",\"params\":{\"model\":\"m\"}}\r\n",
            "{\"custom_id\":\"f\",\"params\":{\"mod",
        );
        let i = input(text);
        let ids: Vec<_> = i.requests.iter().map(|r| (r.custom_id.as_str(), r.line)).collect();
        assert_eq!(ids, [("a", 1), ("e", 8)]);
        let lines: Vec<_> = i.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 4, 5, 6, 7, 9]);
        assert!(i.errors[3].to_string().starts_with("in.jsonl:6: duplicate custom_id \"a\" (first at line 1)"));
        assert!(i.errors[5].message.contains("truncated"), "{}", i.errors[5]);
        assert_eq!(i.requests[0].model, "m", "the first of two duplicates is kept");
    }

    #[test]
    fn a_transcript_is_named_as_one_not_as_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("s.jsonl");
        std::fs::write(&t, "\n{\"type\":\"summary\",\"summary\":\"x\",\"leafUuid\":\"u\"}\n{\"type\":\"user\"}\n")
            .unwrap();
        let e = read_input(&t).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let shown = t.display();
        assert_eq!(
            e.to_string(),
            format!(
                "{shown}: a Claude Code transcript, not requests to send: `ctxasm assemble {shown} -o requests.jsonl` makes them"
            )
        );
        // A batch file whose first line is bad is still read line by line.
        std::fs::write(&t, "{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\",\"params\":{\"model\":\"m\"}}\n").unwrap();
        let i = read_input(&t).unwrap();
        assert_eq!((i.requests.len(), i.errors.len()), (1, 1));
    }

    #[test]
    fn estimate_is_bytes_over_four() {
        let i = input("{\"custom_id\":\"a\",\"params\":{\"model\":\"abcdefg\"}}");
        assert_eq!(i.requests[0].body.len(), 19);
        assert_eq!(i.requests[0].estimated_input_tokens(), 5);
    }
}
