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

/// `-` is stdout; anything else is written to a temporary file beside it,
/// renamed over it by [`Output::finish`].
pub fn open(path: &Path) -> std::io::Result<Output> {
    if path.as_os_str() == "-" {
        let out: Box<dyn Write> = Box::new(std::io::stdout().lock());
        return Ok(Output { inner: std::io::BufWriter::with_capacity(1 << 20, out), rename: None });
    }
    let tmp = temporary_name(path);
    let f =
        std::fs::File::create(&tmp).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let out: Box<dyn Write> = Box::new(f);
    Ok(Output { inner: std::io::BufWriter::with_capacity(1 << 20, out), rename: Some((tmp, path.to_path_buf())) })
}

/// One JSON value and a newline on stdout.
pub fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    // io::Error::from keeps the kind of a write error (a broken pipe).
    serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .context("cannot write output")
}

/// Text on stdout as it is.
pub fn text(text: &str) -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(text.as_bytes()).context("cannot write output")
}

/// Write `bytes` to `path` whole or not at all: a temporary file beside it,
/// synced, then renamed over it (a reader never sees half a file).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = temporary_name(path);
    let write = || -> std::io::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("{}: {e}", path.display())
    })
}
