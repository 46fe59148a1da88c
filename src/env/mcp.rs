//! The MCP servers a session's CLI was started with (`--mcp-config`), as
//! they answered it: each server's `instructions` (from `initialize`) and
//! tool definitions (from `tools/list`). A 2.1.88 transcript holds only the
//! `mcp__<server>__<tool>` names of the calls, so the tools' schemas and the
//! instructions the request carries come from the snapshot's `env/mcp.json`
//! (`{"servers": {name: {"instructions", "tools": [...]}}}`, written by
//! `scripts/capture`'s `mcp_handshake` and the `mcp` probe).

use super::EnvError;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// One MCP server of the session, in the configuration's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name in the `--mcp-config` (the `<server>` of the tool names).
    pub name: String,
    /// The instructions its `initialize` returned, if any.
    pub instructions: Option<String>,
    /// Its tool definitions as `tools/list` returned them (`name`,
    /// `description`, `inputSchema`, …), key order kept.
    pub tools: Vec<Value>,
}

#[derive(Deserialize)]
struct McpJson {
    #[serde(default)]
    servers: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct ServerJson {
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    tools: Vec<Value>,
}

/// Read `<env_dir>/mcp.json`: no file = no servers; a file that is not of
/// that shape is an error naming it.
pub fn read(env_dir: &Path) -> Result<Vec<McpServer>, EnvError> {
    let path = env_dir.join("mcp.json");
    let Some(text) = super::read_snapshot_file(&path)? else { return Ok(Vec::new()) };
    let j: McpJson = serde_json::from_str(&text).map_err(|source| EnvError::Json { path: path.clone(), source })?;
    let mut out = Vec::with_capacity(j.servers.len());
    for (name, v) in j.servers {
        let s: ServerJson =
            serde_json::from_value(v).map_err(|source| EnvError::Json { path: path.clone(), source })?;
        out.push(McpServer { name, instructions: s.instructions.filter(|i| !i.is_empty()), tools: s.tools });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_capture_and_names_a_bad_file() {
        let env = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/shapes/cc-2.1.88/mcp-tools/env"));
        let servers = read(env).unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].name, "probe");
        assert!(servers[0].instructions.as_deref().is_some_and(|i| i.starts_with("Call inventory")));
        let names: Vec<&str> = servers[0].tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["inventory", "echo"]);
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        std::fs::write(dir.path().join("mcp.json"), "{\"servers\": ").unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("mcp.json"), "{err}");
        std::fs::write(dir.path().join("mcp.json"), r#"{"servers": {"x": {"tools": 3}}}"#).unwrap();
        assert!(read(dir.path()).unwrap_err().to_string().contains("mcp.json"));
    }
}
