//! A Claude Code release from npm in a cache directory
//! (`<dir>/node_modules/.bin/claude`), and the runnable binary of an
//! install: older releases ship `cli.js` (run by node), newer ones a native
//! binary in a platform package whose execute bit npm may not set.

use super::ProbeError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a release could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("`{version}` is not a release number (like 2.1.88)")]
    BadVersion { version: String },
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error("{}: the install holds no runnable `claude` (looked at node_modules/.bin/claude and the platform packages)", .0.display())]
    NoBinary(PathBuf),
}

/// Install `@anthropic-ai/claude-code@<version>` into `dir` (kept: a second
/// call finds it there) and return its binary.
pub fn install(version: &str, dir: &Path) -> Result<PathBuf, InstallError> {
    if crate::profile::Version::parse(version).is_none_or(|v| v.to_string() != version) {
        return Err(InstallError::BadVersion { version: version.to_string() });
    }
    if let Ok(bin) = find_binary(dir) {
        return Ok(bin);
    }
    std::fs::create_dir_all(dir).map_err(|source| ProbeError::Io { path: dir.to_path_buf(), source })?;
    let package = format!("@anthropic-ai/claude-code@{version}");
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(dir)
        .arg(&package)
        .output()
        .map_err(|source| ProbeError::Tool { tool: "npm".into(), source })?;
    if !out.status.success() {
        let detail = String::from_utf8_lossy(&out.stderr).trim().lines().take(6).collect::<Vec<_>>().join(" | ");
        return Err(ProbeError::Command { command: format!("npm install {package}"), detail }.into());
    }
    find_binary(dir)
}

/// The runnable `claude` of an install in `dir`.
pub fn find_binary(dir: &Path) -> Result<PathBuf, InstallError> {
    let bin = dir.join("node_modules/.bin/claude");
    if runs(&bin) {
        return Ok(bin);
    }
    // A native binary in a platform package (`@anthropic-ai/claude-code-*`
    // or the main package's own `bin/`).
    let scope = dir.join("node_modules/@anthropic-ai");
    for entry in walkdir::WalkDir::new(&scope).max_depth(4).into_iter().filter_map(Result::ok) {
        let p = entry.path();
        if p.file_name().is_some_and(|n| n == "claude") && entry.file_type().is_file() && is_elf_or_macho(p) {
            set_executable(p);
            if runs(p) {
                return Ok(p.to_path_buf());
            }
        }
    }
    Err(InstallError::NoBinary(dir.to_path_buf()))
}

fn runs(bin: &Path) -> bool {
    bin.exists() && Command::new(bin).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn is_elf_or_macho(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && (magic == *b"\x7fELF" || magic == [0xcf, 0xfa, 0xed, 0xfe] || magic == [0xca, 0xfe, 0xba, 0xbe])
}

#[cfg(unix)]
fn set_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(p) {
        let mut perm = meta.permissions();
        perm.set_mode(perm.mode() | 0o755);
        let _ = std::fs::set_permissions(p, perm);
    }
}

#[cfg(not(unix))]
fn set_executable(_: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_version_is_refused_before_npm_runs() {
        let dir = tempfile::tempdir().unwrap();
        for v in ["latest", "2.1", "2.1.88; rm -rf /", "02.1.88"] {
            let e = install(v, dir.path()).unwrap_err();
            assert!(matches!(e, InstallError::BadVersion { .. }), "{v}: {e}");
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn an_empty_install_has_no_binary() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_binary(dir.path()).unwrap_err();
        assert!(e.to_string().contains("holds no runnable `claude`"), "{e}");
    }
}
