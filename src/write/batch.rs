//! The batch format: one `{"custom_id","params"}` line per request, a
//! session's lines streamed to the writer while it is the next one written,
//! spilled to an unnamed file past [`Spill::AT`] bytes otherwise.

use super::*;

/// Where a session's batch lines go once they pass [`Spill::at`] bytes:
/// an unnamed temporary file in [`Spill::dir`], until the writer copies
/// them out in order. The batch format of every turn of a session is
/// O(turns²) bytes (1.7 GB for one session of 4,000 short turns), which a
/// worker must not hold in memory while it waits for the writer.
/// A session the writer takes next hands its lines over at once instead,
/// every [`Spill::send_at`] bytes ([`Early`]): a long session written alone
/// streams, with no file between.
#[derive(Debug, Clone)]
pub struct Spill {
    pub dir: std::path::PathBuf,
    pub at: usize,
    pub send_at: usize,
}

impl Spill {
    /// Bytes of a session's batch lines held in memory before they go to a
    /// file: sessions under it (nearly all) are written from memory, as
    /// before.
    pub const AT: usize = 32 << 20;
    /// Bytes handed to the writer at a time by the session it takes next.
    pub const SEND_AT: usize = 2 << 20;

    /// Spill into `dir` past [`Spill::AT`] bytes.
    pub fn to(dir: std::path::PathBuf) -> Self {
        Spill { dir, at: Self::AT, send_at: Self::SEND_AT }
    }
}

/// A session's batch lines that went to a file ([`Spill`]).
pub(super) struct Spilled {
    file: std::fs::File,
    bytes: u64,
}

/// The lines before `last` (where the last request's line starts) to the
/// writer at once, while the session is the next it takes and nothing of it
/// went to a file ([`Early`]); kept otherwise. The last line stays, moved
/// to the front of a buffer of at least `room` bytes, for the next request
/// to copy its messages from (`spans` moves with it).
fn hand_over(so: &mut SessionOut, spans: &mut MessageSpans, last: usize, early: &Early<'_, SessionOut>, room: usize) {
    if last == 0 || so.spilled.is_some() || so.failed.is_some() || !early.is_next() {
        return;
    }
    let mut rest = early.buffer(room.max(so.lines.len() - last));
    rest.extend_from_slice(&so.lines[last..]);
    so.lines.truncate(last);
    let head = std::mem::replace(&mut so.lines, rest);
    spans.cut(last);
    // The session is the writer's next until it is done: taken (or dropped
    // when the run is stopping on a write error).
    let _ = early.send(Piece::Bytes(head));
}

/// Move `so.lines` to its session's spill file (made on first use). A
/// failure is kept in `so.failed` (the writer returns it: the run stops
/// rather than write the session without those lines) and the lines are
/// dropped, so memory stays bounded.
fn spill_lines(so: &mut SessionOut, spill: &Spill) {
    if so.failed.is_none() {
        let result = match &mut so.spilled {
            Some(s) => s.file.write_all(&so.lines).map(|()| s),
            None => tempfile::tempfile_in(&spill.dir)
                .and_then(|mut file| file.write_all(&so.lines).map(|()| file))
                .map(|file| so.spilled.insert(Spilled { file, bytes: 0 })),
        };
        match result {
            Ok(s) => s.bytes += so.lines.len() as u64,
            Err(e) => {
                let msg =
                    format!("cannot hold a session's batch output in a temporary file in {}: {e}", spill.dir.display());
                so.failed = Some(io::Error::new(e.kind(), msg));
            }
        }
    }
    so.lines.clear();
}

/// Write the batch format of every selected request to `out`; a session
/// whose output passes [`Spill::AT`] bytes waits for the writer in a file
/// in the system's temporary directory.
pub fn write_batch(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    out: &mut dyn Write,
) -> io::Result<AssembleSummary> {
    write_batch_spilling(disc, run, opts, out, &Spill::to(std::env::temp_dir()))
}

/// [`write_batch`], a session's output past `spill.at` bytes held in a file
/// in `spill.dir` until it is written.
pub fn write_batch_spilling(
    disc: &Discovery,
    run: &RunOptions<'_>,
    opts: &AssembleOptions,
    out: &mut dyn Write,
    spill: &Spill,
) -> io::Result<AssembleSummary> {
    let mut written = 0u64;
    let mut summary = run_chunks(
        disc,
        run,
        |part| {
            let mut s = match part {
                Part::Early(bytes) => {
                    written += bytes.len() as u64;
                    return out.write_all(bytes);
                }
                Part::Partial(s) | Part::Done(s) => s,
            };
            if let Some(e) = s.failed.take() {
                return Err(e);
            }
            if let Some(Spilled { mut file, bytes }) = s.spilled.take() {
                use std::io::{Seek, SeekFrom};
                file.seek(SeekFrom::Start(0))?;
                let copied = io::copy(&mut io::BufReader::with_capacity(1 << 20, file), out)?;
                if copied != bytes {
                    let msg = format!("a session's batch output read back {copied} of the {bytes} bytes written");
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, msg));
                }
                written += copied;
            }
            written += s.lines.len() as u64;
            out.write_all(&s.lines)
        },
        |bump, session, early| {
            let (requests, mut so) = replay(bump, session, opts);
            let mut bytes = 0u64;
            CACHE.with(|c| {
                let mut cache = c.borrow_mut();
                let mut spans = MessageSpans::default();
                for req in select(&requests, opts.turns) {
                    let before = so.lines.len();
                    batch_line(&mut so.lines, req, &mut cache, &mut spans);
                    bytes += (so.lines.len() - before) as u64;
                    so.written += 1;
                    // The last line stays (it is copied): handed over once
                    // it is at most a quarter of the buffer, so a session of
                    // long requests copies a quarter more, not twice.
                    let kept = so.lines.len() - before;
                    if so.lines.len() >= spill.send_at && kept.saturating_mul(4) <= so.lines.len() {
                        let room = spill.send_at.min(Spill::SEND_AT).max(2 * kept);
                        hand_over(&mut so, &mut spans, before, early, room);
                    }
                    if so.lines.len() >= spill.at {
                        spill_lines(&mut so, spill);
                        spans.cut(usize::MAX);
                    }
                }
            });
            if so.spilled.is_some() && !so.lines.is_empty() {
                spill_lines(&mut so, spill);
            }
            so.batch_bytes = bytes;
            // It may wait for the writer: keep only its bytes, not the
            // growth slack of the buffer.
            so.lines.shrink_to_fit();
            so
        },
    )?;
    out.flush()?;
    summary.bytes_written = written;
    Ok(summary)
}
