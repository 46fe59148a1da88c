//! Where command output goes: stdout or a file given with `-o`. Write
//! errors are returned (a closed pipe is sorted out by `exit`), never
//! printed here.

use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// `-` is stdout; anything else is a file created (truncated) for writing.
pub fn open(path: &Path) -> std::io::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock())));
    }
    let f =
        std::fs::File::create(path).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)))
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
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
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
