//! Sessions: a main transcript with its subagent transcripts, read in
//! parallel, one arena per session group.
//!
//! [`for_each_session`] is the entry point later stages build on: it reads
//! every [`SessionGroup`] of a [`Discovery`] on rayon's threads, hands each
//! parsed [`Session`] to a closure, and returns the closure's results in
//! discovery order (sorted by path), whatever the thread count. A panic while
//! handling one session becomes an `internal_error` diagnostic for it; the
//! other sessions are not lost.

use crate::diag::{DiagKind, Diagnostic};
use crate::input::discover::{Discovery, SessionGroup, TranscriptFile};
use crate::input::scan::{ScannedLines, scan_file};
use crate::input::{ParsedLines, ReadOptions, read_file};
use crate::model::tree::Tree;
use bumpalo::Bump;
use rayon::prelude::*;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// One parsed transcript file with its tree.
#[derive(Debug)]
pub struct ParsedFile<'a, 'd> {
    pub file: &'d TranscriptFile,
    pub parsed: ParsedLines<'a>,
    pub tree: Tree<'a>,
}

impl<'a> ParsedFile<'a, '_> {
    /// The `sessionId` the file's entries carry (the first one seen).
    pub fn session_id(&self) -> Option<&'a str> {
        self.parsed.entries.iter().find_map(|e| e.env.shared.session_id)
    }
}

/// A session: its main file (absent for a subagent file found without its
/// session) and its subagent files.
#[derive(Debug)]
pub struct Session<'a, 'd> {
    pub main: Option<ParsedFile<'a, 'd>>,
    pub subagents: Vec<ParsedFile<'a, 'd>>,
}

impl RunOptions<'_> {
    /// Options using `threads` worker threads (`None`: all cores).
    pub fn with_threads(threads: Option<usize>) -> Self {
        let pool = threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().ok());
        Self { pool, ..Self::default() }
    }

    /// `f` on these options' threads (what it runs in parallel, such as
    /// [`discover`](crate::input::discover::discover), uses them).
    pub fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        match &self.pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
}

impl<'a, 'd> Session<'a, 'd> {
    /// Main file first, then subagents.
    pub fn files(&self) -> impl Iterator<Item = &ParsedFile<'a, 'd>> {
        self.main.iter().chain(self.subagents.iter())
    }

    /// Whether a file of the session records request shapes
    /// (`api-request-shape`, 2.1.3xx): its system prompt and tools as sent.
    pub fn has_shapes(&self) -> bool {
        use crate::model::entry::EntryKind;
        self.files().any(|f| f.parsed.entries.iter().any(|e| matches!(e.kind, EntryKind::ApiRequestShape { .. })))
    }

    /// All diagnostics of the session's files.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.files().flat_map(|f| f.parsed.diagnostics.iter())
    }
}

/// Parse one group into `bump`.
pub fn read_session<'a, 'd>(
    bump: &'a Bump,
    disc: &'d Discovery,
    group: &SessionGroup,
    opts: &ReadOptions,
) -> Session<'a, 'd> {
    let parse = |i: usize, external: &dyn Fn(&str) -> bool| {
        let file = &disc.files[i];
        let mut parsed = read_file(bump, &file.path, &file.display, opts);
        let tree = Tree::build(&parsed.entries, &file.display, external, &mut parsed.diagnostics);
        ParsedFile { file, parsed, tree }
    };
    let main = group.main.map(|i| parse(i, &|_| false));
    let subagents = group
        .subagents
        .iter()
        .map(|&i| {
            // A subagent's entries may continue from the main transcript
            // (the compaction agent does), so its uuids count as present.
            let in_main = |u: &str| main.as_ref().is_some_and(|m| m.tree.contains(u));
            parse(i, &in_main)
        })
        .collect();
    Session { main, subagents }
}

/// One transcript file read lean ([`crate::input::scan`]): what recorded
/// usage needs, with the diagnostics a full read gives (the tree's too).
#[derive(Debug)]
pub struct ScannedFile<'a, 'd> {
    /// Its index in [`Discovery::files`] (the files' path order).
    pub index: usize,
    pub file: &'d TranscriptFile,
    pub scan: ScannedLines<'a>,
}

/// A session read lean: main file (absent for a subagent file found
/// without its session) and subagent files.
#[derive(Debug)]
pub struct ScannedSession<'a, 'd> {
    pub main: Option<ScannedFile<'a, 'd>>,
    pub subagents: Vec<ScannedFile<'a, 'd>>,
}

impl<'a, 'd> ScannedSession<'a, 'd> {
    /// Main file first, then subagents.
    pub fn files(&self) -> impl Iterator<Item = &ScannedFile<'a, 'd>> {
        self.main.iter().chain(self.subagents.iter())
    }

    /// All diagnostics of the session's files.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.files().flat_map(|f| f.scan.diagnostics.iter())
    }
}

/// Scan one group into `bump`: [`read_session`]'s files and diagnostics
/// (the tree's included), read lean.
pub fn scan_session<'a, 'd>(
    bump: &'a Bump,
    disc: &'d Discovery,
    group: &SessionGroup,
    opts: &ReadOptions,
) -> ScannedSession<'a, 'd> {
    let scan = |i: usize| {
        let file = &disc.files[i];
        ScannedFile { index: i, file, scan: scan_file(bump, &file.path, &file.display, opts) }
    };
    let mut main = group.main.map(scan);
    let main_tree =
        main.as_mut().map(|m| Tree::link(&m.scan.links, &m.file.display, &|_| false, &mut m.scan.diagnostics));
    let subagents = group
        .subagents
        .iter()
        .map(|&i| {
            let mut f = scan(i);
            // As in `read_session`: the main transcript's uuids count as present.
            let in_main = |u: &str| main_tree.as_ref().is_some_and(|t| t.contains(u));
            Tree::link(&f.scan.links, &f.file.display, &in_main, &mut f.scan.diagnostics);
            f
        })
        .collect();
    ScannedSession { main, subagents }
}

/// How to run [`for_each_session`].
#[derive(Default)]
pub struct RunOptions<'p> {
    pub read: ReadOptions,
    /// Worker threads; `None` uses rayon's global pool (all cores).
    pub pool: Option<rayon::ThreadPool>,
    /// Called after each group with the bytes of its files.
    pub progress: Option<&'p (dyn Fn(u64) + Sync)>,
}

/// Read every session of `disc` in parallel and map it with `f`. Results are
/// in group order. A panic in reading or in `f` yields `Err` with an
/// `internal_error` diagnostic naming the session's first file.
pub fn for_each_session<R, F>(disc: &Discovery, opts: &RunOptions<'_>, f: F) -> Vec<Result<R, Diagnostic>>
where
    R: Send,
    F: for<'a, 'd> Fn(&Session<'a, 'd>) -> R + Sync,
{
    for_each_session_of(disc, &disc.groups, opts, |_, s| f(s))
}

/// Like [`for_each_session`] for a slice of `disc`'s groups (callers that
/// write output process the corpus in chunks to bound memory), with the
/// session's arena handed to `f` for values it builds.
pub fn for_each_session_of<R, F>(
    disc: &Discovery,
    groups: &[SessionGroup],
    opts: &RunOptions<'_>,
    f: F,
) -> Vec<Result<R, Diagnostic>>
where
    R: Send,
    F: for<'a, 'd> Fn(&'a Bump, &Session<'a, 'd>) -> R + Sync,
{
    let work = |group: &SessionGroup| map_group(disc, group, opts, &f);
    let run = || groups.par_iter().map(work).collect();
    match &opts.pool {
        Some(pool) => pool.install(run),
        None => run(),
    }
}

/// Read one group into a fresh arena and map it with `f` on the calling
/// thread; a panic becomes an `internal_error` diagnostic (the building
/// block of [`for_each_session_of`] and of ordered streaming writers).
pub fn map_group<R, F>(disc: &Discovery, group: &SessionGroup, opts: &RunOptions<'_>, f: &F) -> Result<R, Diagnostic>
where
    F: for<'a, 'd> Fn(&'a Bump, &Session<'a, 'd>) -> R,
{
    guarded(disc, group, opts, |bump| f(bump, &read_session(bump, disc, group, &opts.read)))
}

/// [`map_group`] for a session read lean ([`scan_session`]).
pub fn map_scanned_group<R, F>(
    disc: &Discovery,
    group: &SessionGroup,
    opts: &RunOptions<'_>,
    f: &F,
) -> Result<R, Diagnostic>
where
    F: for<'a, 'd> Fn(&'a Bump, &ScannedSession<'a, 'd>) -> R,
{
    guarded(disc, group, opts, |bump| f(bump, &scan_session(bump, disc, group, &opts.read)))
}

thread_local! {
    /// This thread's arena between two sessions, reset (see [`guarded`]);
    /// a streamed run's worker frees it once no session is left for it.
    static ARENA: Cell<Option<Bump>> = const { Cell::new(None) };
}

/// An arena whose one kept chunk is larger than this after its reset is
/// freed, not kept for the thread's next session.
const KEEP_ARENA_UP_TO: usize = 64 << 20;

/// Run `work` on an empty arena: a panic becomes an `internal_error`
/// diagnostic naming the group's first file; progress is told the group's
/// bytes. The arena is the thread's last one, reset: it keeps its largest
/// chunk (up to [`KEEP_ARENA_UP_TO`]), whose pages are then not faulted in
/// again for every session; nothing of `work` outlives it (`R` does not
/// borrow from it).
fn guarded<R>(
    disc: &Discovery,
    group: &SessionGroup,
    opts: &RunOptions<'_>,
    work: impl FnOnce(&Bump) -> R,
) -> Result<R, Diagnostic> {
    // `None` on first use, or when `work` runs a session on this thread
    // while one is in progress (a nested run gets an arena of its own).
    let mut bump = ARENA.take().unwrap_or_default();
    let result = catch_unwind(AssertUnwindSafe(|| work(&bump)));
    bump.reset();
    if bump.allocated_bytes() <= KEEP_ARENA_UP_TO {
        ARENA.set(Some(bump));
    }
    if let Some(progress) = opts.progress {
        progress(group.files().map(|i| disc.files[i].size).sum());
    }
    result.map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let file = group.files().next().map(|i| disc.files[i].display.clone()).unwrap_or_default();
        Diagnostic::new(file, 0, DiagKind::Internal, format!("ctxasm bug while reading this session: {what}"))
    })
}

/// Sessions the workers may be ahead of the consumer, per worker thread.
const WINDOW_PER_THREAD: usize = 16;

/// Output bytes waiting for the consumer above which workers only stay one
/// session each ahead of it (a session's all-turns batch output can be tens
/// of MB).
const PENDING_BYTES: usize = 32 << 20;

/// Map every session in parallel and hand the results to `sink` in
/// discovery order, on the calling thread, as soon as each is ready (each
/// worker sends them [`BATCH`] at a time), so consuming overlaps the
/// work. Workers stay at most [`WINDOW_PER_THREAD`] × threads sessions
/// ahead of the consumer, and one session each once [`PENDING_BYTES`] of
/// output (`size`) wait: memory is bounded by that window, not by the
/// corpus. A session that cannot be read becomes `on_error(diagnostic)`.
/// The first error of `sink` stops the workers and is returned.
pub fn stream_sessions<R, F, S>(
    disc: &Discovery,
    run: &RunOptions<'_>,
    size: impl Fn(&R) -> usize + Sync,
    on_error: impl Fn(Diagnostic) -> R + Sync,
    f: F,
    sink: S,
) -> std::io::Result<()>
where
    R: Send,
    F: for<'a, 'd> Fn(&'a Bump, &Session<'a, 'd>) -> R + Sync,
    S: FnMut(R) -> std::io::Result<()>,
{
    let work = |group: &SessionGroup, _: &Early<'_, R>| map_group(disc, group, run, &f).unwrap_or_else(&on_error);
    stream_groups(disc, run, size, work, only_done(sink), BATCH)
}

/// Results a worker of [`stream_sessions`] or [`stream_scanned_sessions`]
/// hands the consumer at once, in one message (it sends none early): the
/// consumer is woken about once per batch, not once per session, which on
/// short sessions was a tenth of the run (a wake is a system call and a
/// context switch). Sent one message per result, the consumer was still
/// woken by most of them: 6,800 context switches against 2,300 on the
/// public corpus x38.
const BATCH: usize = 8;

/// A sink of [`stream_groups`]'s parts for a caller that sends no early
/// part.
fn only_done<R>(mut sink: impl FnMut(R) -> std::io::Result<()>) -> impl FnMut(Part<'_, R>) -> std::io::Result<()> {
    move |part| match part {
        Part::Done(r) => sink(r),
        Part::Early(_) | Part::Partial(_) => Ok(()),
    }
}

/// What a worker hands the consumer of [`stream_sessions_early`].
pub enum Part<'b, R> {
    /// Bytes of the session the consumer takes next, before it is done
    /// ([`Early::send`]): they go out first, in the order sent.
    Early(&'b [u8]),
    /// Part of the session's result sent the same way.
    Partial(R),
    /// The session's result (the rest of it, after its early parts).
    Done(R),
}

/// What a worker sends through [`Early::send`].
pub enum Piece<R> {
    Bytes(Vec<u8>),
    Out(R),
}

/// What goes through the workers' channel.
enum Msg<R> {
    Early(Piece<R>),
    Done(R),
}

/// A worker's way to hand its session's output to the consumer before the
/// session is done, taken only while every session before it has been
/// consumed (then the bytes can go out at once, in order): a session whose
/// output is too large to hold (a long session's batch format) streams
/// through it instead of waiting whole.
pub struct Early<'w, R> {
    index: usize,
    send: &'w (dyn Fn(usize, Piece<R>) -> Result<(), Piece<R>> + Sync),
    next: &'w (dyn Fn(usize) -> bool + Sync),
    buffer: &'w (dyn Fn(usize) -> Vec<u8> + Sync),
}

impl<R> Early<'_, R> {
    /// Whether every session before this one has been consumed (then
    /// [`Early::send`] takes the bytes; it stays so until this session is).
    pub fn is_next(&self) -> bool {
        (self.next)(self.index)
    }

    /// An empty buffer of at least `room` bytes for the next bytes to send:
    /// one the consumer has written and given back, when there is one.
    pub fn buffer(&self, room: usize) -> Vec<u8> {
        (self.buffer)(room)
    }

    /// Hand `bytes` to the consumer when this session is the next it takes
    /// (waiting while the bytes sent before are not written yet: one part
    /// is written while the next is made, and its buffer comes back
    /// through [`Early::buffer`]); else they come back. After a failed
    /// write the run is stopping: they are dropped.
    pub fn send(&self, piece: Piece<R>) -> Result<(), Piece<R>> {
        (self.send)(self.index, piece)
    }
}

/// [`stream_sessions`], `f` given an [`Early`] to stream its session's
/// output, `sink` its parts.
pub fn stream_sessions_early<R, F, S>(
    disc: &Discovery,
    run: &RunOptions<'_>,
    size: impl Fn(&R) -> usize + Sync,
    on_error: impl Fn(Diagnostic) -> R + Sync,
    f: F,
    sink: S,
) -> std::io::Result<()>
where
    R: Send,
    F: for<'a, 'd> Fn(&'a Bump, &Session<'a, 'd>, &Early<'_, R>) -> R + Sync,
    S: FnMut(Part<'_, R>) -> std::io::Result<()>,
{
    let work = |group: &SessionGroup, early: &Early<'_, R>| {
        map_group(disc, group, run, &|bump: &Bump, session: &Session<'_, '_>| f(bump, session, early))
            .unwrap_or_else(&on_error)
    };
    // One at a time: a session streams early only once every one before
    // it has been consumed.
    stream_groups(disc, run, size, work, sink, 1)
}

/// [`stream_sessions`] for sessions read lean ([`scan_session`]).
pub fn stream_scanned_sessions<R, F, S>(
    disc: &Discovery,
    run: &RunOptions<'_>,
    size: impl Fn(&R) -> usize + Sync,
    on_error: impl Fn(Diagnostic) -> R + Sync,
    f: F,
    sink: S,
) -> std::io::Result<()>
where
    R: Send,
    F: for<'a, 'd> Fn(&'a Bump, &ScannedSession<'a, 'd>) -> R + Sync,
    S: FnMut(R) -> std::io::Result<()>,
{
    let work =
        |group: &SessionGroup, _: &Early<'_, R>| map_scanned_group(disc, group, run, &f).unwrap_or_else(&on_error);
    stream_groups(disc, run, size, work, only_done(sink), BATCH)
}

/// How many sessions the consumer of [`stream_groups`] has taken, which
/// workers wait on (`Condvar`), and how many wait: a change wakes them only
/// when some do (a wake is a system call; it was one per session).
#[derive(Default)]
struct Consumed {
    done: Mutex<usize>,
    changed: Condvar,
    waiting: AtomicUsize,
}

impl Consumed {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for a change (the count of waiters kept under the lock).
    fn wait<'g>(&self, done: MutexGuard<'g, usize>) -> MutexGuard<'g, usize> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let done = self.changed.wait(done).unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// `f` under the lock, then the waiters woken, if any.
    fn update(&self, f: impl FnOnce(&mut usize)) {
        let mut done = self.lock();
        f(&mut done);
        let wake = self.waiting.load(Ordering::Relaxed) > 0;
        drop(done);
        if wake {
            self.changed.notify_all();
        }
    }
}

/// The engine of [`stream_sessions`]: `work` on every group, results to
/// `sink` in group order; each worker sends its results `batch` at a time
/// (and what it holds before it waits on the window, and at its end).
fn stream_groups<R, S>(
    disc: &Discovery,
    run: &RunOptions<'_>,
    size: impl Fn(&R) -> usize + Sync,
    work: impl Fn(&SessionGroup, &Early<'_, R>) -> R + Sync,
    mut sink: S,
    batch: usize,
) -> std::io::Result<()>
where
    R: Send,
    S: FnMut(Part<'_, R>) -> std::io::Result<()>,
{
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    let threads = run.pool.as_ref().map_or_else(rayon::current_num_threads, |p| p.current_num_threads()).max(1);
    let window = threads * WINDOW_PER_THREAD;
    let groups = &disc.groups;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let pending_bytes = AtomicUsize::new(0);
    // Parts sent early and not yet written.
    let early_parts = AtomicUsize::new(0);
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let spare = &spare;
    let written = Consumed::default();
    let mut result: std::io::Result<()> = Ok(());
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Vec<(usize, Msg<R>)>>();
        let (next, stop, written, work, pending_bytes, size) = (&next, &stop, &written, &work, &pending_bytes, &size);
        let early_parts = &early_parts;
        scope.spawn(move || {
            let send_early = |i: usize, piece: Piece<R>| -> Result<(), Piece<R>> {
                let mut done = written.lock();
                if *done != i {
                    return Err(piece);
                }
                while early_parts.load(Ordering::Relaxed) > 0 && !stop.load(Ordering::Relaxed) {
                    done = written.wait(done);
                }
                drop(done);
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                early_parts.fetch_add(1, Ordering::Relaxed);
                // The consumer gone (it stopped): nothing more is written.
                let _ = tx.send(vec![(i, Msg::Early(piece))]);
                Ok(())
            };
            let send_early = &send_early;
            let is_next = |i: usize| *written.lock() == i;
            let is_next = &is_next;
            let buffer = |room: usize| {
                let mut b = spare.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
                b.reserve(room);
                b
            };
            let buffer = &buffer;
            let worker = |tx: mpsc::Sender<Vec<(usize, Msg<R>)>>| {
                // Finished, not sent yet (fewer than `batch`).
                let mut held: Vec<(usize, Msg<R>)> = Vec::with_capacity(batch);
                // One message for all it holds: one wakeup of the consumer,
                // not one per session.
                let flush = |held: &mut Vec<(usize, Msg<R>)>| {
                    held.is_empty() || tx.send(std::mem::replace(held, Vec::with_capacity(batch))).is_ok()
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= groups.len() || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    // Wait while too far ahead of the consumer: more than
                    // `threads` sessions ahead and either the window is full
                    // or the output waiting is over the byte budget.
                    let blocked = |done: usize| {
                        i >= done + threads
                            && (i >= done + window || pending_bytes.load(Ordering::Relaxed) > PENDING_BYTES)
                            && !stop.load(Ordering::Relaxed)
                    };
                    let mut done = written.lock();
                    if blocked(*done) && !held.is_empty() {
                        // What it holds may be what the consumer waits for.
                        drop(done);
                        if !flush(&mut held) {
                            return;
                        }
                        done = written.lock();
                    }
                    while blocked(*done) {
                        done = written.wait(done);
                    }
                    drop(done);
                    let out = work(&groups[i], &Early { index: i, send: send_early, next: is_next, buffer });
                    pending_bytes.fetch_add(size(&out), Ordering::Relaxed);
                    held.push((i, Msg::Done(out)));
                    if held.len() >= batch && !flush(&mut held) {
                        return;
                    }
                }
                flush(&mut held);
            };
            // No session is left for this worker: its thread's arena (kept
            // between sessions, see `guarded`) is freed, not held through
            // what the caller does next (the modeled cost's replay).
            let worker = |tx: mpsc::Sender<Vec<(usize, Msg<R>)>>| {
                worker(tx);
                drop(ARENA.take());
            };
            let spawn_all = || {
                rayon::scope(|s| {
                    for _ in 0..threads {
                        let tx = tx.clone();
                        s.spawn(move |_| worker(tx));
                    }
                })
            };
            match &run.pool {
                Some(pool) => pool.install(spawn_all),
                None => spawn_all(),
            }
            drop(tx);
        });
        let mut pending: std::collections::BTreeMap<usize, R> = std::collections::BTreeMap::new();
        let mut expect = 0usize;
        for (i, part) in rx.into_iter().flatten() {
            let out = match part {
                Msg::Early(piece) => {
                    // Sent only by the session taken next (`Early`), while
                    // it is: out at once.
                    debug_assert_eq!(i, expect);
                    match piece {
                        Piece::Bytes(mut bytes) => {
                            if result.is_ok() {
                                result = sink(Part::Early(&bytes));
                            }
                            // The buffer back for the worker's next bytes:
                            // memory it has touched, not fresh pages for
                            // every part.
                            bytes.clear();
                            let mut spare = spare.lock().unwrap_or_else(|e| e.into_inner());
                            if spare.is_empty() {
                                spare.push(bytes);
                            }
                        }
                        Piece::Out(out) => {
                            if result.is_ok() {
                                result = sink(Part::Partial(out));
                            }
                        }
                    }
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    // Under the lock a waiting worker checks it with: its
                    // wakeup cannot be lost between its check and its wait.
                    written.update(|_| {
                        early_parts.fetch_sub(1, Ordering::Relaxed);
                    });
                    continue;
                }
                Msg::Done(out) => out,
            };
            pending.insert(i, out);
            while let Some(out) = pending.remove(&expect) {
                expect += 1;
                pending_bytes.fetch_sub(size(&out), Ordering::Relaxed);
                if result.is_ok() {
                    result = sink(Part::Done(out));
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                written.update(|done| *done = expect);
            }
        }
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::discover::discover;

    #[test]
    fn subagent_parents_resolve_in_the_main_file_and_order_is_stable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proj");
        std::fs::create_dir_all(p.join("s1/subagents")).unwrap();
        std::fs::write(p.join("s1.jsonl"), "{\"type\":\"user\",\"uuid\":\"m1\",\"sessionId\":\"s1\"}\n").unwrap();
        std::fs::write(
            p.join("s1/subagents/agent-a1.jsonl"),
            "{\"type\":\"user\",\"uuid\":\"x\",\"parentUuid\":\"m1\",\"sessionId\":\"s1\"}\n{\"type\":\"user\",\"uuid\":\"y\",\"parentUuid\":\"zz\"}\n",
        )
        .unwrap();
        std::fs::write(p.join("s2.jsonl"), "").unwrap();
        let disc = discover(&[dir.path().to_path_buf()]);
        for threads in [1, 2, 4] {
            let opts = RunOptions::with_threads(Some(threads));
            let out = for_each_session(&disc, &opts, |s| {
                let diags: Vec<(String, u32, DiagKind)> = s
                    .diagnostics()
                    .map(|d| (d.file.rsplit('/').next().unwrap_or("").to_string(), d.line, d.kind))
                    .collect();
                (s.main.as_ref().and_then(|m| m.session_id()).map(str::to_string), s.subagents.len(), diags)
            });
            let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
            assert_eq!(
                out,
                vec![
                    (Some("s1".to_string()), 1, vec![("agent-a1.jsonl".to_string(), 2, DiagKind::MissingParent)]),
                    (None, 0, vec![("s2.jsonl".to_string(), 0, DiagKind::EmptyFile)]),
                ]
            );
        }
    }

    #[test]
    fn a_streamed_run_leaves_no_arena_on_its_threads() {
        let dir = tempfile::tempdir().unwrap();
        for s in ["a", "b", "c", "d"] {
            std::fs::write(dir.path().join(format!("{s}.jsonl")), "{\"type\":\"summary\"}\n").unwrap();
        }
        let disc = discover(&[dir.path().to_path_buf()]);
        let run = RunOptions::with_threads(Some(2));
        let kept = |pool: &rayon::ThreadPool| {
            pool.broadcast(|_| {
                let arena = ARENA.take();
                let kept = arena.is_some();
                ARENA.set(arena);
                kept
            })
        };
        let pool = run.pool.as_ref().unwrap();
        // (A thread keeps its arena between the sessions of a run; one that
        // ran a streamed run's worker does not keep it past the run.)
        let mut seen = 0;
        stream_sessions(
            &disc,
            &run,
            |_| 0,
            |_| 0,
            |_, s| s.files().count(),
            |n| {
                seen += n;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, 4);
        assert_eq!(kept(pool), vec![false, false]);
    }

    /// Results sent a batch at a time still come in order, every one once,
    /// whatever the threads; and a worker that must wait for the consumer
    /// (the output budget spent: one session ahead each) first sends what
    /// it holds, which may be what the consumer waits for (else the run
    /// would never end: it runs under a deadline). The same with an error
    /// of the sink half-way: it is returned, nothing after it consumed.
    #[test]
    fn batched_results_come_in_order_and_a_waiting_worker_sends_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let n = 5 * BATCH * 4 + 3;
        for k in 0..n {
            let text = format!("{{\"type\":\"user\",\"uuid\":\"u\",\"sessionId\":\"s{k:03}\"}}\n");
            std::fs::write(dir.path().join(format!("s{k:03}.jsonl")), text).unwrap();
        }
        let disc = discover(&[dir.path().to_path_buf()]);
        assert_eq!(disc.groups.len(), n);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for threads in [1, 2, 4] {
                let run = RunOptions::with_threads(Some(threads));
                for budget in [0, PENDING_BYTES + 1] {
                    let mut got = Vec::new();
                    stream_sessions(
                        &disc,
                        &run,
                        |_| budget,
                        |_| None,
                        |_, s| s.main.as_ref().and_then(|m| m.session_id()).map(str::to_string),
                        |id| {
                            got.push(id);
                            Ok(())
                        },
                    )
                    .unwrap();
                    let want: Vec<Option<String>> = (0..n).map(|k| Some(format!("s{k:03}"))).collect();
                    assert_eq!(got, want, "{threads} threads, budget {budget}");
                }
                let mut seen = 0;
                let stopped = stream_sessions(
                    &disc,
                    &run,
                    |_| 0,
                    |_| 0,
                    |_, _| 1,
                    |_| {
                        seen += 1;
                        if seen == 2 * BATCH + 1 { Err(std::io::Error::other("full")) } else { Ok(()) }
                    },
                );
                assert_eq!(stopped.unwrap_err().to_string(), "full");
                assert_eq!(seen, 2 * BATCH + 1);
            }
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the streamed runs did not end");
    }

    #[test]
    fn a_panic_in_one_session_does_not_lose_the_others() {
        let dir = tempfile::tempdir().unwrap();
        for s in ["a", "b", "c"] {
            std::fs::write(dir.path().join(format!("{s}.jsonl")), "{\"type\":\"summary\"}\n").unwrap();
        }
        let disc = discover(&[dir.path().to_path_buf()]);
        let out = for_each_session(&disc, &RunOptions::default(), |s| {
            let name = s.main.as_ref().map(|m| m.file.display.clone()).unwrap_or_default();
            assert!(!name.ends_with("b.jsonl"), "boom");
            name
        });
        assert_eq!(out.len(), 3);
        assert!(out[0].is_ok() && out[2].is_ok());
        let err = out[1].as_ref().err().unwrap();
        assert_eq!(err.kind, DiagKind::Internal);
        assert!(err.file.ends_with("b.jsonl"));
    }
}
