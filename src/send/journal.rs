//! The results journal: an append-only JSONL file, one line per FINISHED
//! request:
//!
//! ```text
//! {"custom_id":…,"status":200,"attempts":1,"latency_ms":812,"usage":{…},"response":{…}}
//! {"custom_id":…,"status":400,"attempts":1,"latency_ms":35,"usage":null,"error":{"type":"error","error":{…}}}
//! ```
//!
//! `status` is the HTTP status of the final attempt (200 on success; 0 when
//! there was no usable HTTP response: a connection error, a timeout, an
//! unreadable reply). `error` is the API's error envelope (facts §3.3), or
//! one ctxasm writes in the same shape.
//!
//! **Final and retryable lines.** A line is *final* — its request is done
//! and never sent again — when the API answered it (an HTTP status with a
//! body: 200, 400, a 529 after `--max-attempts`, …). A line with
//! `"retry_later":"no_reply"` (the attempts got no usable reply: refused or
//! cut connection, timeout) or `"retry_later":"rate_limited"` (the server
//! asked to wait longer than `--max-retry-wait`) records why the request did
//! not finish in that run; the next run sends it again and appends its new
//! line. A line written before `retry_later` existed with `status` 0 and an
//! error of type `connection_error` or `timeout` is read as `no_reply`.
//! So a `custom_id` has at most one final line, possibly after retryable
//! ones: the last line of a `custom_id` is its outcome.
//!
//! **Crash safety.** One writer (a dedicated thread, [`spawn`]) appends
//! whole lines, written and `fsync`ed in small groups (every
//! [`GROUP_LINES`] lines or [`GROUP_INTERVAL`], whichever comes first). [`open`] reads an existing
//! journal before anything is sent: every `custom_id` in it is done, and a
//! torn last line (a `kill -9` during a write leaves a line without its
//! newline) is cut off by truncating the file to the end of the last
//! complete line. So a crash loses at most the requests in flight or not
//! yet synced — they are sent again on the next run — and a line is never
//! written twice: the writer also refuses a `custom_id` already in the file.

use serde::Deserialize;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Lines written per group before a flush and fsync.
pub const GROUP_LINES: usize = 16;
/// Longest time a finished line waits for its fsync.
pub const GROUP_INTERVAL: Duration = Duration::from_millis(100);

/// How a request finished.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The message (non-streaming: the reply body; streaming: rebuilt from
    /// the events).
    Response(serde_json::Value),
    /// An error envelope `{"type":"error","error":{"type","message"},…}`.
    Error(serde_json::Value),
}

/// Why a line is not final: the request is sent again by the next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryLater {
    /// No usable reply (connection refused or cut, timeout, unreadable
    /// reply): a transport failure, not an answer of the API.
    NoReply,
    /// The server asked for a wait longer than `--max-retry-wait`.
    RateLimited,
}

impl RetryLater {
    /// The value of the line's `retry_later` key.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryLater::NoReply => "no_reply",
            RetryLater::RateLimited => "rate_limited",
        }
    }
}

/// One journal line.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub custom_id: String,
    pub status: u16,
    pub attempts: u32,
    pub latency_ms: u64,
    pub usage: Option<serde_json::Value>,
    pub outcome: Outcome,
    /// `Some` when the line is not final (see the module doc).
    pub retry_later: Option<RetryLater>,
}

impl Record {
    /// The line, with its newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"custom_id\":");
        crate::json::writer::write_str(&mut out, &self.custom_id);
        let _ = write!(
            out,
            ",\"status\":{},\"attempts\":{},\"latency_ms\":{},",
            self.status, self.attempts, self.latency_ms
        );
        if let Some(r) = self.retry_later {
            let _ = write!(out, "\"retry_later\":\"{}\",", r.as_str());
        }
        out.extend_from_slice(b"\"usage\":");
        match &self.usage {
            Some(u) => write_value(&mut out, u),
            None => out.extend_from_slice(b"null"),
        }
        let (key, value) = match &self.outcome {
            Outcome::Response(v) => (&b",\"response\":"[..], v),
            Outcome::Error(v) => (&b",\"error\":"[..], v),
        };
        out.extend_from_slice(key);
        write_value(&mut out, value);
        out.extend_from_slice(b"}\n");
        out
    }

    pub fn is_ok(&self) -> bool {
        self.status == 200 && matches!(self.outcome, Outcome::Response(_))
    }

    /// The request is done: the next run does not send it again.
    pub fn is_final(&self) -> bool {
        self.retry_later.is_none()
    }
}

fn write_value(out: &mut Vec<u8>, v: &serde_json::Value) {
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// An error envelope in the API's shape (facts §3.3).
pub fn error_envelope(kind: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("journal {path}:{line}: {message}; it was not written by ctxasm send: move it away or fix that line")]
    Corrupt { path: String, line: usize, message: String },
}

/// What an existing journal holds.
#[derive(Debug, Default, Clone)]
pub struct Resume {
    /// `custom_id` → status of its final line (requests not sent again).
    pub done: HashMap<String, u16>,
    /// `custom_id`s whose lines are all retryable (`retry_later`, or a
    /// legacy no-reply line): sent again, with the status of the last one.
    pub retry: HashMap<String, u16>,
    /// Complete lines read.
    pub lines: usize,
    /// Bytes of a torn last line cut off (0 when the file ended cleanly).
    pub torn_bytes: u64,
    /// Lines whose `custom_id` already had a final line (1-based line, id):
    /// only a file put together by hand has any; the first final line counts.
    pub duplicates: Vec<(usize, String)>,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    custom_id: Cow<'a, str>,
    status: u16,
    #[serde(borrow, default)]
    retry_later: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    error: Option<HeadError<'a>>,
}

#[derive(Deserialize)]
struct HeadError<'a> {
    #[serde(borrow, default)]
    error: Option<HeadErrorInner<'a>>,
}

#[derive(Deserialize)]
struct HeadErrorInner<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Cow<'a, str>>,
}

impl Head<'_> {
    /// A final line (module doc): not `retry_later`, and not a no-reply
    /// line of status 0 written before `retry_later` existed.
    fn is_final(&self) -> bool {
        if self.retry_later.is_some() {
            return false;
        }
        let kind = self.error.as_ref().and_then(|e| e.error.as_ref()).and_then(|e| e.kind.as_deref());
        !(self.status == 0 && matches!(kind, Some("connection_error" | "timeout")))
    }
}

/// Open (or create) the journal for appending: read what is done and cut a
/// torn last line.
pub fn open(path: &Path) -> Result<(File, Resume), JournalError> {
    let shown = path.display().to_string();
    let io_err = |source: io::Error| JournalError::Io { path: shown.clone(), source };
    let mut file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io_err)?;
    let (resume, keep) = scan_reader(io::BufReader::with_capacity(1 << 20, &file), &shown)?;
    let len = file.metadata().map_err(io_err)?.len();
    if keep < len {
        file.set_len(keep).map_err(io_err)?;
        file.sync_all().map_err(io_err)?;
    }
    file.seek(SeekFrom::End(0)).map_err(io_err)?;
    Ok((file, resume))
}

/// Read journal bytes: the resume set and the length to keep (up to the
/// last newline).
pub fn scan(data: &[u8], shown: &str) -> Result<(Resume, usize), JournalError> {
    let (resume, keep) = scan_reader(data, shown)?;
    Ok((resume, keep as usize))
}

/// [`scan`] line by line from a reader (memory: the longest line).
fn scan_reader(mut r: impl io::BufRead, shown: &str) -> Result<(Resume, u64), JournalError> {
    let mut resume = Resume::default();
    let mut line = Vec::new();
    let mut keep = 0u64;
    let mut no = 0usize;
    loop {
        line.clear();
        let n =
            r.read_until(b'\n', &mut line).map_err(|source| JournalError::Io { path: shown.to_string(), source })?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            // A torn last line: cut off.
            resume.torn_bytes = n as u64;
            break;
        }
        keep += n as u64;
        no += 1;
        let text = &line[..n - 1];
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let head: Head<'_> = serde_json::from_slice(text).map_err(|e| JournalError::Corrupt {
            path: shown.to_string(),
            line: no,
            message: format!("not a journal line: {e}"),
        })?;
        resume.lines += 1;
        let is_final = head.is_final();
        if resume.done.contains_key(head.custom_id.as_ref()) {
            resume.duplicates.push((no, head.custom_id.into_owned()));
        } else if is_final {
            resume.retry.remove(head.custom_id.as_ref());
            resume.done.insert(head.custom_id.into_owned(), head.status);
        } else {
            resume.retry.insert(head.custom_id.into_owned(), head.status);
        }
    }
    Ok((resume, keep))
}

/// The single writer: appends whole lines, syncs them in groups, refuses a
/// line for a `custom_id` that already has a final line.
pub struct Writer {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    pending: usize,
    ids: HashSet<String>,
}

impl Writer {
    /// `done`: the ids with a final line in the file ([`Resume::done`]).
    pub fn new(file: File, path: &Path, done: impl IntoIterator<Item = String>) -> Writer {
        Writer {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(64 << 10),
            pending: 0,
            ids: done.into_iter().collect(),
        }
    }

    /// Queue a line; `Ok(false)` when its `custom_id` already has a final
    /// line (refused: a final line is never duplicated, nor followed).
    pub fn push(&mut self, rec: &Record) -> io::Result<bool> {
        if self.ids.contains(&rec.custom_id) {
            return Ok(false);
        }
        if rec.is_final() {
            self.ids.insert(rec.custom_id.clone());
        }
        self.buf.extend_from_slice(&rec.to_line());
        self.pending += 1;
        if self.pending >= GROUP_LINES {
            self.sync()?;
        }
        Ok(true)
    }

    /// Lines queued and not yet synced.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Write the queued lines in one `write_all` and fsync them.
    pub fn sync(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = self.file.write_all(&self.buf).and_then(|()| self.file.sync_data());
        self.buf.clear();
        self.pending = 0;
        r.map_err(|e| io::Error::new(e.kind(), format!("journal {}: {e}", self.path.display())))
    }
}

/// What the writer thread did.
#[derive(Debug, Default, Clone)]
pub struct WriterReport {
    pub written: u64,
    /// Records refused because their `custom_id` was already written.
    pub refused: Vec<String>,
}

/// The records waiting for the writer.
#[derive(Default)]
struct Queue {
    items: Vec<Record>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    failed: AtomicBool,
    durable: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue a record; the writer is woken once a group is full (else its
    /// [`GROUP_INTERVAL`] timer takes the records): a record costs no
    /// thread wake-up of its own.
    fn send(&self, rec: Record) -> bool {
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        let mut q = self.lock();
        if q.closed {
            return false;
        }
        q.items.push(rec);
        if q.items.len() >= GROUP_LINES {
            self.wake.notify_one();
        }
        true
    }
}

/// The running writer: send [`Record`]s (from any task, through
/// [`JournalHandle::sender`]), then [`JournalHandle::finish`].
pub struct JournalHandle {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<io::Result<WriterReport>>>,
}

/// A handle to queue records for the writer.
#[derive(Clone)]
pub struct JournalSender {
    shared: Arc<Shared>,
}

impl JournalSender {
    /// Queue a record; `false` when the writer has stopped (an I/O error,
    /// or [`JournalHandle::finish`]).
    pub fn send(&self, rec: Record) -> bool {
        self.shared.send(rec)
    }

    /// The writer hit an I/O error.
    pub fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }
}

impl JournalHandle {
    /// Queue a record; `false` when the writer has stopped (an I/O error).
    pub fn send(&self, rec: Record) -> bool {
        self.shared.send(rec)
    }

    /// Another handle to queue records.
    pub fn sender(&self) -> Option<JournalSender> {
        Some(JournalSender { shared: self.shared.clone() })
    }

    /// The writer hit an I/O error.
    pub fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }

    /// Lines written and synced so far.
    pub fn durable(&self) -> u64 {
        self.shared.durable.load(Ordering::Relaxed)
    }

    /// Write and sync what is queued, stop the thread, and report. Records
    /// sent afterwards are refused.
    pub fn finish(mut self) -> io::Result<WriterReport> {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("journal writer thread panicked")),
            None => Ok(WriterReport::default()),
        }
    }
}

/// Start the writer thread: it takes the queued records when a group is
/// full or every [`GROUP_INTERVAL`], writes them and fsyncs them.
pub fn spawn(mut writer: Writer) -> io::Result<JournalHandle> {
    let shared = Arc::new(Shared::default());
    let sh = shared.clone();
    let thread = std::thread::Builder::new().name("ctxasm-journal".into()).spawn(move || {
        let mut report = WriterReport::default();
        let mut run = || -> io::Result<()> {
            loop {
                let (batch, closed) = {
                    let mut q = sh.lock();
                    if q.items.len() < GROUP_LINES && !q.closed {
                        q = sh.wake.wait_timeout(q, GROUP_INTERVAL).unwrap_or_else(PoisonError::into_inner).0;
                    }
                    (std::mem::take(&mut q.items), q.closed)
                };
                for rec in batch {
                    if writer.push(&rec)? {
                        report.written += 1;
                    } else {
                        report.refused.push(rec.custom_id);
                    }
                }
                writer.sync()?;
                sh.durable.store(report.written, Ordering::Relaxed);
                if closed && sh.lock().items.is_empty() {
                    return Ok(());
                }
            }
        };
        let r = run();
        if r.is_err() {
            sh.failed.store(true, Ordering::Relaxed);
        }
        r.map(|()| report)
    })?;
    Ok(JournalHandle { shared, thread: Some(thread) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, status: u16) -> Record {
        let outcome = if status == 200 {
            Outcome::Response(serde_json::json!({"id": "msg", "content": []}))
        } else {
            Outcome::Error(error_envelope("invalid_request_error", "bad"))
        };
        Record { custom_id: id.into(), status, attempts: 1, latency_ms: 3, usage: None, outcome, retry_later: None }
    }

    fn no_reply(id: &str) -> Record {
        Record {
            status: 0,
            outcome: Outcome::Error(error_envelope("connection_error", "connection refused")),
            retry_later: Some(RetryLater::NoReply),
            ..rec(id, 0)
        }
    }

    #[test]
    fn no_reply_and_rate_limited_lines_are_not_final() {
        let mut rl = rec("r", 429);
        rl.retry_later = Some(RetryLater::RateLimited);
        let line = String::from_utf8(rl.to_line()).unwrap();
        assert!(line.contains(",\"latency_ms\":3,\"retry_later\":\"rate_limited\",\"usage\":null,"), "{line}");
        let mut data = no_reply("a").to_line();
        data.extend(rl.to_line());
        // A line of an older ctxasm: status 0, connection_error, no retry_later.
        data.extend_from_slice(
            b"{\"custom_id\":\"old\",\"status\":0,\"attempts\":5,\"latency_ms\":1,\"usage\":null,\"error\":{\"type\":\"error\",\"error\":{\"type\":\"connection_error\",\"message\":\"x\"}}}\n",
        );
        // A batch's expired request (status 0, type expired) is final.
        data.extend_from_slice(
            b"{\"custom_id\":\"exp\",\"status\":0,\"attempts\":1,\"latency_ms\":0,\"usage\":null,\"error\":{\"type\":\"error\",\"error\":{\"type\":\"expired\",\"message\":\"x\"}}}\n",
        );
        data.extend(rec("z", 400).to_line());
        let (resume, _) = scan(&data, "j").unwrap();
        assert_eq!(resume.done.keys().map(String::as_str).collect::<HashSet<_>>(), HashSet::from(["exp", "z"]));
        assert_eq!(resume.retry.get("a"), Some(&0));
        assert_eq!(resume.retry.get("r"), Some(&429));
        assert_eq!(resume.retry.get("old"), Some(&0));
        // A retried request's final line after its no-reply line: done, not a duplicate.
        let mut again = data.clone();
        again.extend(rec("a", 200).to_line());
        let (resume, _) = scan(&again, "j").unwrap();
        assert_eq!(resume.done.get("a"), Some(&200));
        assert!(!resume.retry.contains_key("a"));
        assert!(resume.duplicates.is_empty());
    }

    #[test]
    fn writer_takes_a_final_line_after_retryable_ones_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let (file, _) = open(&path).unwrap();
        let handle = spawn(Writer::new(file, &path, [])).unwrap();
        for r in [no_reply("a"), no_reply("a"), rec("a", 200), no_reply("a"), rec("a", 200)] {
            assert!(handle.send(r));
        }
        let report = handle.finish().unwrap();
        assert_eq!(report.written, 3);
        assert_eq!(report.refused, ["a", "a"]);
    }

    #[test]
    fn line_format() {
        let mut r = rec("a\"b", 200);
        r.usage = Some(serde_json::json!({"input_tokens": 3, "output_tokens": 1}));
        assert_eq!(
            String::from_utf8(r.to_line()).unwrap(),
            "{\"custom_id\":\"a\\\"b\",\"status\":200,\"attempts\":1,\"latency_ms\":3,\"usage\":{\"input_tokens\":3,\"output_tokens\":1},\"response\":{\"id\":\"msg\",\"content\":[]}}\n"
        );
        assert_eq!(
            String::from_utf8(rec("x", 400).to_line()).unwrap(),
            "{\"custom_id\":\"x\",\"status\":400,\"attempts\":1,\"latency_ms\":3,\"usage\":null,\"error\":{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}}\n"
        );
    }

    #[test]
    fn torn_line_is_truncated_and_resume_set_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut data = rec("a", 200).to_line();
        data.extend(rec("b", 400).to_line());
        let full = data.len();
        let torn = rec("c", 200).to_line();
        data.extend_from_slice(&torn[..torn.len() / 2]);
        std::fs::write(&path, &data).unwrap();
        let (file, resume) = open(&path).unwrap();
        drop(file);
        assert_eq!(resume.lines, 2);
        assert_eq!(resume.torn_bytes, (torn.len() / 2) as u64);
        assert_eq!(resume.done.get("a"), Some(&200));
        assert_eq!(resume.done.get("b"), Some(&400));
        assert!(!resume.done.contains_key("c"));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full as u64);
    }

    #[test]
    fn corrupt_complete_line_is_an_error_naming_it() {
        let mut data = rec("a", 200).to_line();
        data.extend_from_slice(b"garbage\n");
        let err = scan(&data, "j.jsonl").unwrap_err();
        assert!(err.to_string().starts_with("journal j.jsonl:2: not a journal line"), "{err}");
    }

    #[test]
    fn writer_refuses_duplicates_and_appends_after_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        std::fs::write(&path, rec("a", 200).to_line()).unwrap();
        let (file, resume) = open(&path).unwrap();
        let handle = spawn(Writer::new(file, &path, resume.done.into_keys())).unwrap();
        for id in ["a", "b", "c", "b"] {
            assert!(handle.send(rec(id, 200)));
        }
        let report = handle.finish().unwrap();
        assert_eq!(report.written, 2);
        assert_eq!(report.refused, ["a", "b"]);
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["custom_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn duplicates_in_an_existing_file_are_reported() {
        let mut data = rec("a", 500).to_line();
        data.extend(rec("a", 200).to_line());
        let (resume, keep) = scan(&data, "j").unwrap();
        assert_eq!(keep, data.len());
        assert_eq!(resume.duplicates, [(2, "a".to_string())]);
        assert_eq!(resume.done["a"], 500);
    }

    #[test]
    fn writer_syncs_in_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let (file, _) = open(&path).unwrap();
        let mut w = Writer::new(file, &path, []);
        for i in 0..GROUP_LINES - 1 {
            w.push(&rec(&i.to_string(), 200)).unwrap();
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "nothing written before a group is full");
        w.push(&rec("last", 200)).unwrap();
        assert_eq!(w.pending(), 0);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), GROUP_LINES);
    }
}
