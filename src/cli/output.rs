//! Where command output goes: stdout or a file given with `-o`. Write
//! errors are returned (a closed pipe is sorted out by `exit`), never
//! printed here.

use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Where `-o` output goes: stdout, or a temporary file beside the target
/// that [`Output::finish`] renames over it. Dropped unfinished (an error, a
/// panic), the temporary file is removed: the target is whole or absent.
pub struct Output {
    inner: std::io::BufWriter<Box<dyn Write>>,
    /// (temporary file, target) for a file target.
    rename: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl Output {
    /// Where temporary files of this output go: the target's directory for
    /// a file (the same file system, not a RAM-backed `/tmp`), else the
    /// system's temporary directory.
    pub fn scratch_dir(&self) -> std::path::PathBuf {
        match &self.rename {
            Some((tmp, _)) => match tmp.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            },
            None => std::env::temp_dir(),
        }
    }

    /// Flush, sync and rename the temporary file over the target.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.inner.flush()?;
        if let Some((tmp, dest)) = self.rename.take() {
            let result =
                std::fs::File::open(&tmp).and_then(|f| f.sync_all()).and_then(|()| std::fs::rename(&tmp, &dest));
            if let Err(e) = result {
                let _ = std::fs::remove_file(&tmp);
                return Err(std::io::Error::new(e.kind(), format!("{}: {e}", dest.display())));
            }
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.rename.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// The temporary name of `path` while it is written: hidden, beside it, the
/// process id in it.
pub fn temporary_name(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// How a file target is written: a regular file (or a new one) through a
/// temporary file renamed over it; anything else that exists (a device
/// such as `/dev/null`, a FIFO, a terminal) in place, as it is: renaming
/// over it would replace the device with a file. A symbolic link is
/// followed, so the file it names is replaced, not the link.
enum Target {
    Atomic { tmp: std::path::PathBuf, dest: std::path::PathBuf },
    InPlace(std::path::PathBuf),
}

fn target(path: &Path) -> std::io::Result<Target> {
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut dest = path.to_path_buf();
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        dest = match std::fs::canonicalize(path) {
            Ok(real) => real,
            // A dangling link: the file it names is created.
            Err(_) => {
                let link = std::fs::read_link(path).map_err(named)?;
                path.parent().map_or(link.clone(), |p| p.join(link))
            }
        };
    }
    match std::fs::metadata(&dest) {
        Ok(m) if m.is_dir() => {
            Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, format!("{}: is a directory", path.display())))
        }
        Ok(m) if !m.is_file() => Ok(Target::InPlace(dest)),
        _ => Ok(Target::Atomic { tmp: temporary_name(&dest), dest }),
    }
}

/// `-` is stdout; a regular file is written to a temporary file beside it,
/// renamed over it by [`Output::finish`]; a device or FIFO is written as
/// it is.
pub fn open(path: &Path) -> std::io::Result<Output> {
    if path.as_os_str() == "-" {
        let out: Box<dyn Write> = Box::new(std::io::stdout().lock());
        return Ok(Output { inner: std::io::BufWriter::with_capacity(1 << 20, out), rename: None });
    }
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let (file, rename) = match target(path)? {
        Target::InPlace(dest) => (std::fs::OpenOptions::new().write(true).open(&dest).map_err(named)?, None),
        Target::Atomic { tmp, dest } => (std::fs::File::create(&tmp).map_err(named)?, Some((tmp, dest))),
    };
    let out: Box<dyn Write> = Box::new(file);
    Ok(Output { inner: std::io::BufWriter::with_capacity(1 << 20, out), rename })
}

/// One JSON value and a newline on stdout.
pub fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    // Buffered: stdout's own buffer is 1 KiB (a megabyte report was 800
    // writes to a pipe).
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // io::Error::from keeps the kind of a write error (a broken pipe).
    serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush())
        .context("cannot write output")
}

/// Text on stdout as it is.
pub fn text(text: &str) -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(text.as_bytes()).context("cannot write output")
}

/// Write `bytes` to `path` whole or not at all: a temporary file beside it,
/// synced, then renamed over it (a reader never sees half a file). A
/// device or FIFO is written as it is (see [`Target`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| anyhow::anyhow!("{}: {e}", parent.display()))?;
    }
    let (tmp, dest) = match target(path)? {
        Target::InPlace(dest) => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(&dest)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
        }
        Target::Atomic { tmp, dest } => (tmp, dest),
    };
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &dest)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("{}: {e}", path.display())
    })
}
