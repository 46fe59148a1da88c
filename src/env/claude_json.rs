//! `~/.claude.json`: Claude Code's per-machine state file, read for the
//! identity a transcript does not record (the device id of
//! `metadata.user_id`).
//!
//! Only reads and returns values; which default applies when the file has
//! none is the caller's choice (`assemble::records::PLACEHOLDER_DEVICE_ID`).

/// The device id Claude Code uses on this machine: `userID` of
/// `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), if any.
pub fn local_device_id() -> Option<String> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR") {
        candidates.push(std::path::PathBuf::from(dir).join(".claude.json"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(std::path::PathBuf::from(home).join(".claude.json"));
    }
    candidates.into_iter().find_map(|p| {
        let text = std::fs::read_to_string(p).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v.get("userID")?.as_str().map(str::to_string)
    })
}
