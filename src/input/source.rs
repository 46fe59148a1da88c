//! Getting a file's bytes safely, even while Claude Code appends to it.
//!
//! A stable file is memory-mapped with exactly the length `fstat` reported, so
//! bytes appended later are ignored and the map never reaches past what was
//! there. A file modified in the last `live_window` (Claude Code may still be
//! writing it, or may rewrite it) is read with `read()` instead: a mapped file
//! that shrinks under the reader raises SIGBUS, a read just returns fewer
//! bytes. A final line without `\n` is reported by the line splitter, and the
//! parser turns it into a `truncated_line` diagnostic if it does not parse.
//!
//! [`open_snapshot`] is for the full read, up to the size the file had
//! when opened, never mapped: a small file is read whole into the arena
//! ([`read_padded`], its values borrow the bytes), a large one a chunk at a
//! time, each line's tree copying what it keeps.
//!
//! [`with_bytes`] is for a reader that keeps nothing of the bytes once read
//! (the lean read): a stable file under [`READ_BELOW`] is read into a buffer
//! the caller reuses, which costs less than a map (its page faults, and the
//! unmap's TLB shootdown across threads) for the small files most
//! transcripts are.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Options for loading a file.
#[derive(Debug, Clone, Copy)]
pub struct SourceOptions {
    /// Files modified less than this long ago are read, not mapped.
    pub live_window: Duration,
    /// Never map; always read (useful on filesystems where mmap is slow).
    pub no_mmap: bool,
}

impl Default for SourceOptions {
    fn default() -> Self {
        Self { live_window: Duration::from_secs(10), no_mmap: false }
    }
}

/// The bytes of one file, mapped or read.
pub enum Source {
    Empty,
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Deref for Source {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Source::Empty => &[],
            Source::Mapped(m) => m,
            Source::Read(v) => v,
        }
    }
}

impl Source {
    /// True when the bytes came from a memory map.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Source::Mapped(_))
    }
}

/// A regular file opened, with its length and whether it must be read, not
/// mapped (live, or `no_mmap`).
fn open_regular(path: &Path, opts: &SourceOptions) -> io::Result<(File, u64, bool)> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    let live = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_none_or(|age| age < opts.live_window);
    Ok((file, meta.len(), opts.no_mmap || live))
}

/// The error of a transcript that is not a regular file.
fn not_regular(ft: &std::fs::FileType) -> io::Error {
    let what = super::discover::file_type_name(ft);
    io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file ({what})"))
}

/// `path` opened for reading without blocking: opening a FIFO for reading
/// blocks until a writer comes, so it is opened non-blocking and refused
/// by its type after (one lookup of the path, not a `stat` and an `open`;
/// reads of a regular file ignore the flag).
#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// Elsewhere: the type checked before opening.
#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let ft = std::fs::metadata(path)?.file_type();
    if !ft.is_file() {
        return Err(not_regular(&ft));
    }
    File::open(path)
}

/// Stable files at least this large are mapped by [`with_bytes`]; smaller
/// ones are read into the caller's buffer.
pub const READ_BELOW: u64 = 8 << 20;

/// The bytes of `path` handed to `f`, by the rules of [`load`], except that
/// a stable file under [`READ_BELOW`] is read into `buf` instead of mapped.
/// `buf` is a scratch buffer kept for the next file: it is grown (and
/// zeroed) only when a file is longer than it, and the file is read into
/// its start, with one read for the whole file (reading to the end of a
/// `Vec` grows the reads from 8 KiB, a read per doubling). What lies in it
/// past the file is the earlier files' and is not handed to `f`.
pub fn with_bytes<R>(
    path: &Path,
    opts: &SourceOptions,
    buf: &mut Vec<u8>,
    f: impl FnOnce(&[u8]) -> R,
) -> io::Result<R> {
    let (mut file, len, read) = open_regular(path, opts)?;
    if len == 0 {
        return Ok(f(&[]));
    }
    if read || len < READ_BELOW {
        let want =
            usize::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to read"))?;
        if buf.len() < want {
            buf.resize(want, 0);
        }
        // At most the size seen at open: a file that grew is cut there, one
        // that shrank gives fewer bytes.
        let n = fill(&mut file, &mut buf[..want])?;
        let out = f(&buf[..n]);
        if buf.len() as u64 > 2 * READ_BELOW {
            // A large live file: not kept for the next one.
            *buf = Vec::new();
        }
        return Ok(out);
    }
    Ok(f(&map(&file, len)?))
}

/// Open `path` and get its bytes (see the module docs for the rules).
pub fn load(path: &Path, opts: &SourceOptions) -> io::Result<Source> {
    let (file, len, read) = open_regular(path, opts)?;
    if len == 0 {
        return Ok(Source::Empty);
    }
    if read {
        return read_up_to(file, len).map(Source::Read);
    }
    map(&file, len).map(Source::Mapped)
}

/// `path` opened for reading at most the size it had when opened: a file
/// that grew is cut there, one that shrank gives fewer bytes. Never mapped
/// (the reader copies what it keeps).
pub fn open_snapshot(path: &Path, opts: &SourceOptions) -> io::Result<io::Take<File>> {
    let (file, len, _) = open_regular(path, opts)?;
    Ok(file.take(len))
}

/// What `reader` gives (at most its limit) read into `bump`, followed by
/// `pad` bytes (spaces), for a parser that works where the bytes lie: the
/// slice is `n + pad` long and `n` is the number of bytes read. Never
/// mapped (a map beside the arena would hold each byte twice).
pub fn read_padded(mut reader: io::Take<File>, bump: &bumpalo::Bump, pad: usize) -> io::Result<(&mut [u8], usize)> {
    let cap = usize::try_from(reader.limit())
        .ok()
        .and_then(|l| l.checked_add(pad))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file too large to read"))?;
    let buf = bump.alloc_slice_fill_copy(cap, b' ');
    let want = cap - pad;
    let n = fill(&mut reader, &mut buf[..want])?;
    // A file that shrank: the padding follows the bytes read.
    buf[n..].fill(b' ');
    Ok((buf, n))
}

/// Read into `buf` until it is full or the reader ends; the bytes read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Map the first `len` bytes of `file`.
fn map(file: &File, len: u64) -> io::Result<memmap2::Mmap> {
    let map_len =
        usize::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
    // SAFETY: the map is read-only and no longer than the size fstat gave. Claude
    // Code only appends to session files; files that changed within the live
    // window were read above instead of mapped.
    let map = unsafe { memmap2::MmapOptions::new().len(map_len).map(file)? };
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// Read at most `len` bytes (the size at open time); a file that shrank yields
/// fewer bytes, one that grew is cut at `len` (a consistent snapshot).
fn read_up_to(file: File, len: u64) -> io::Result<Vec<u8>> {
    let cap = usize::try_from(len).unwrap_or(usize::MAX).min(1 << 30);
    let mut buf = Vec::with_capacity(cap);
    file.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A FIFO where a transcript was (put there after discovery) is refused
    /// by its type, at once: opened without blocking, no writer needed. A
    /// directory and a missing path are errors too.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_a_transcripts_place_is_refused_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.jsonl");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let opts = SourceOptions::default();
            let got = (load(&path, &opts).err(), with_bytes(&path, &opts, &mut Vec::new(), |b| b.len()).err());
            tx.send(got.0.zip(got.1).map(|(a, b)| (a.to_string(), b.to_string()))).unwrap();
        });
        let got = rx.recv_timeout(Duration::from_secs(20)).expect("opening a FIFO blocked");
        let why = "not a regular file (a FIFO)".to_string();
        assert_eq!(got, Some((why.clone(), why)));
        let e = load(dir.path(), &SourceOptions::default()).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("not a regular file (a directory)"));
        assert_eq!(
            load(&dir.path().join("missing"), &SourceOptions::default()).err().map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn maps_stable_files_and_reads_live_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"{\"type\":\"user\"}\n").unwrap();
        let stable = SourceOptions { live_window: Duration::ZERO, no_mmap: false };
        let s = load(&p, &stable).unwrap();
        assert!(s.is_mapped());
        assert_eq!(&*s, b"{\"type\":\"user\"}\n");
        let live = SourceOptions { live_window: Duration::from_secs(3600), no_mmap: false };
        let s = load(&p, &live).unwrap();
        assert!(!s.is_mapped());
        assert_eq!(&*s, b"{\"type\":\"user\"}\n");
    }

    #[test]
    fn empty_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.jsonl");
        std::fs::File::create(&p).unwrap();
        assert!(matches!(load(&p, &SourceOptions::default()).unwrap(), Source::Empty));
        let err = load(&dir.path().join("nope.jsonl"), &SourceOptions::default()).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(load(dir.path(), &SourceOptions::default()).is_err());
    }

    /// `with_bytes` gives what `load` gives, small files read into the
    /// reused buffer (what it hands on holds no byte of an earlier, longer
    /// file; the buffer keeps the longest file's length).
    #[test]
    fn with_bytes_reads_small_files_into_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let (long, short, empty) = (dir.path().join("l.jsonl"), dir.path().join("s.jsonl"), dir.path().join("e.jsonl"));
        std::fs::write(&long, b"{\"type\":\"user\",\"x\":1}\n").unwrap();
        std::fs::write(&short, b"{}\n").unwrap();
        std::fs::File::create(&empty).unwrap();
        let stable = SourceOptions { live_window: Duration::ZERO, no_mmap: false };
        let mut buf = Vec::new();
        for p in [&long, &short, &empty] {
            let got = with_bytes(p, &stable, &mut buf, <[u8]>::to_vec).unwrap();
            assert_eq!(got, &*load(p, &stable).unwrap());
        }
        assert_eq!(buf.len(), b"{\"type\":\"user\",\"x\":1}\n".len());
        let err = with_bytes(&dir.path().join("nope.jsonl"), &stable, &mut buf, |_| ()).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(with_bytes(dir.path(), &stable, &mut buf, |_| ()).is_err());
    }

    /// `open_snapshot` gives the bytes `load` gives, at most the size at
    /// open (a file that grew after is cut there); errors are `load`'s.
    #[test]
    fn open_snapshot_reads_the_size_seen_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let (p, e) = (dir.path().join("s.jsonl"), dir.path().join("e.jsonl"));
        std::fs::write(&p, b"{\"type\":\"user\"}\n{}").unwrap();
        std::fs::File::create(&e).unwrap();
        for opts in [SourceOptions::default(), SourceOptions { live_window: Duration::ZERO, no_mmap: false }] {
            let mut got = Vec::new();
            let mut r = open_snapshot(&p, &opts).unwrap();
            std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"\n{\"grown\":1}\n").unwrap();
            r.read_to_end(&mut got).unwrap();
            assert_eq!(got, b"{\"type\":\"user\"}\n{}");
            std::fs::write(&p, b"{\"type\":\"user\"}\n{}").unwrap();
            got.clear();
            open_snapshot(&e, &opts).unwrap().read_to_end(&mut got).unwrap();
            assert!(got.is_empty());
        }
        let err = open_snapshot(&dir.path().join("nope.jsonl"), &SourceOptions::default()).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(open_snapshot(dir.path(), &SourceOptions::default()).is_err());
    }

    #[test]
    fn map_keeps_the_size_seen_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("grow.jsonl");
        std::fs::write(&p, b"{\"a\":1}\n").unwrap();
        let opts = SourceOptions { live_window: Duration::ZERO, no_mmap: false };
        let s = load(&p, &opts).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"b\":2}\n").unwrap();
        assert_eq!(&*s, b"{\"a\":1}\n");
    }
}
