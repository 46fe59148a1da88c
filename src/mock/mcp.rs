//! `ctxasm mock-mcp`: a small stdio MCP server for captures and probes.
//!
//! Newline-delimited JSON-RPC 2.0 on stdin/stdout, the transport Claude
//! Code's `--mcp-config` stdio servers use. It answers `initialize` (with
//! server instructions), `tools/list` (two tools), `tools/call` and `ping`;
//! notifications (no `id`) get no answer; any other method gets the
//! JSON-RPC "method not found" error. The text is this project's own.
//!
//! [`describe`] is what a client receives from `initialize` and
//! `tools/list`, in the form the environment snapshot keeps it
//! (`env/mcp.json`, see `crate::env::mcp`).

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// The server's name in its `serverInfo` (a config may name it otherwise).
pub const SERVER_NAME: &str = "probe";
/// The instructions `initialize` returns.
pub const INSTRUCTIONS: &str = "Call inventory before anything else; echo repeats a message.";

fn tools() -> Value {
    json!([
        {"name": "inventory", "description": "List the items this probe server knows.",
         "inputSchema": {"type": "object", "properties": {}, "required": []}},
        {"name": "echo", "description": "Repeat a message back.",
         "inputSchema": {"type": "object", "properties": {"message": {"type": "string", "description": "What to repeat."}},
                         "required": ["message"]}}
    ])
}

/// The server as a client sees it: `{"instructions", "tools"}`.
pub fn describe() -> Value {
    json!({"instructions": INSTRUCTIONS, "tools": tools()})
}

/// The answer to one request, or `None` for a notification.
pub fn answer(req: &Value) -> Option<Value> {
    let id = req.get("id")?.clone();
    let params = req.get("params").cloned().unwrap_or(Value::Null);
    let result = match req.get("method").and_then(Value::as_str).unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": params.get("protocolVersion").and_then(Value::as_str).unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
            "instructions": INSTRUCTIONS,
        }),
        "tools/list" => json!({"tools": tools()}),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            let args = params.get("arguments");
            match name {
                "inventory" => json!({"content": [{"type": "text", "text": "apples: 3\npears: 5"}]}),
                "echo" => {
                    let msg = args.and_then(|a| a.get("message")).and_then(Value::as_str).unwrap_or("");
                    json!({"content": [{"type": "text", "text": msg}]})
                }
                other => {
                    json!({"content": [{"type": "text", "text": format!("no such tool: {other}")}], "isError": true})
                }
            }
        }
        "ping" => json!({}),
        other => {
            return Some(json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": format!("method not found: {other}")}}));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serve until stdin closes. A line that is not JSON is skipped (a client
/// never sends one; a person typing at it should not kill it).
pub fn serve(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        let Ok(req) = serde_json::from_str::<Value>(&line) else { continue };
        if let Some(ans) = answer(&req) {
            serde_json::to_writer(&mut output, &ans)?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn handshake_list_call_and_errors() {
        let out = run(concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\nnot json\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
            "\n"
        ));
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(out[0]["result"]["instructions"], INSTRUCTIONS);
        assert_eq!(out[1]["result"]["tools"], describe()["tools"]);
        assert_eq!(out[2]["result"]["content"][0]["text"], "hi");
        assert_eq!(out[3]["error"]["code"], -32601);
    }
}
