//! How a release sends a session's MCP servers (`--mcp-config`), learned
//! by `profile extract` from a capture run with one (the `mcp` probe,
//! `tests/fixtures/shapes/cc-<v>/mcp-tools`). 2.1.88 appends each server's
//! tools to the tool list, in name order, as `{"name":
//! "mcp__<server>__<tool>", "description", "input_schema"}`; puts a section
//! of the servers' instructions among the prompt's dynamic sections; and
//! sends the system prompt without its static/dynamic boundary (three
//! blocks, no `global` cache scope). 2.1.328 and 2.1.332 defer the tools
//! (ToolSearch) and write the instructions as an attachment: the request's
//! tools and prompt do not change, and the style says so (no tool form, no
//! instructions).
//!
//! 2.1.100 – 2.1.275 send the instructions as an attachment too (the
//! transcript writes it, `mcp_instructions_delta`) but write it without its
//! text (2.1.100 – 2.1.250) or its role (2.1.275): the style's
//! [`McpAttachment`] holds what the transcript lacks (2.1.100, 2.1.150: a
//! user `<system-reminder>` text block; 2.1.198, 2.1.250: text of the
//! `role: "system"` turn; 2.1.275: the role only).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Variables of [`McpStyle::tool`]'s strings: the server's name and the
/// tool's own name.
pub const MCP_TOOL_VARS: &[&str] = &["server", "tool"];

/// See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct McpStyle {
    /// The tool as sent, from a server's tool definition: a JSON object in
    /// wire key order whose string values are templates of
    /// [`MCP_TOOL_VARS`] (`mcp__{{server}}__{{tool}}`), except a value
    /// `{{def.KEY}}`, which is the definition's `KEY` member verbatim
    /// (`{{def.inputSchema}}`). `None`: the tools are not in the request's
    /// tool list (deferred).
    #[serde(default)]
    pub tool: Option<Value>,
    /// The tools are sorted by their sent name (2.1.88); `false`: in the
    /// servers' order.
    #[serde(default)]
    pub sorted: bool,
    /// The instructions section, when the prompt carries one.
    #[serde(default)]
    pub instructions: Option<McpInstructions>,
    /// The default prompt keeps its static/dynamic boundary when the
    /// session has MCP servers (2.1.88 drops it: `false`).
    #[serde(default = "yes")]
    pub keeps_boundary: bool,
    /// The attachment of the instructions, when the transcript writes it
    /// without its text or role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<McpAttachment>,
}

/// How the attachment a transcript writes for the servers' instructions is
/// sent, as an [`AttachmentTemplate`](super::AttachmentTemplate) of the
/// session ([`McpAttachment::template`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpAttachment {
    /// Its `attachment.type`.
    pub kind: String,
    /// Who it speaks as: `user` or `system`.
    pub role: String,
    /// Its text (a `user` one whole, a `system` one without the reminder
    /// wrapper), `before` unused; `None`: the transcript writes its text
    /// (`rendered`), only the role is the style's.
    #[serde(default)]
    pub text: Option<McpInstructions>,
}

fn yes() -> bool {
    true
}

/// The prompt section of the servers' instructions: `head` + one `server`
/// per server with instructions (variables `name`, `instructions`) joined
/// by `joiner` + `tail`, put before the dynamic section `before`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpInstructions {
    /// Up to the first server.
    pub head: String,
    /// One server's part.
    pub server: String,
    /// Between two servers' parts (`\n\n`, as between sections, when a
    /// capture of one server cannot show it).
    pub joiner: String,
    /// After the last server.
    pub tail: String,
    /// The index among the dynamic sections it goes before.
    #[serde(default)]
    pub before: usize,
}

impl McpInstructions {
    /// The section for `servers` (`(name, instructions)`), `None` when
    /// none has instructions.
    pub fn render(&self, servers: &[(&str, &str)]) -> Option<String> {
        if servers.is_empty() {
            return None;
        }
        let parts: Vec<String> = servers
            .iter()
            .map(|(n, i)| super::template::render(&self.server, &[("name", Some(n)), ("instructions", Some(i))]))
            .collect();
        Some(format!("{}{}{}", self.head, parts.join(&self.joiner), self.tail))
    }
}

impl McpAttachment {
    /// The attachment template for a session whose servers are `servers`
    /// (`(name, instructions)`): the role, and the text rendered for them
    /// (none with instructions: `None`, nothing is sent).
    pub fn template(&self, servers: &[(&str, &str)]) -> Option<super::AttachmentTemplate> {
        let text = match &self.text {
            Some(ins) => ins.render(servers)?,
            None => String::new(),
        };
        Some(super::AttachmentTemplate {
            kind: self.kind.clone(),
            when: Default::default(),
            role: self.role.clone(),
            text,
        })
    }
}

impl McpStyle {
    /// The tool the release sends for `def` of server `server`, `None`
    /// when it sends none.
    pub fn render_tool(&self, server: &str, def: &Value) -> Option<Value> {
        let form = self.tool.as_ref()?.as_object()?;
        let tool = def.get("name").and_then(Value::as_str).unwrap_or("");
        let mut out = serde_json::Map::new();
        for (k, v) in form {
            let value = match v.as_str() {
                Some(s) => match s.strip_prefix("{{def.").and_then(|r| r.strip_suffix("}}")) {
                    Some(key) => match def.get(key) {
                        Some(x) => x.clone(),
                        None => continue,
                    },
                    None => {
                        Value::String(super::template::render(s, &[("server", Some(server)), ("tool", Some(tool))]))
                    }
                },
                None => v.clone(),
            };
            out.insert(k.clone(), value);
        }
        Some(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_and_the_instructions_from_their_templates() {
        let style = McpStyle {
            tool: Some(json!({"name": "mcp__{{server}}__{{tool}}", "description": "{{def.description}}",
                              "input_schema": "{{def.inputSchema}}"})),
            sorted: true,
            instructions: Some(McpInstructions {
                head: "# H\n\n".into(),
                server: "## {{name}}\n{{instructions}}".into(),
                joiner: "\n\n".into(),
                tail: String::new(),
                before: 3,
            }),
            keeps_boundary: false,
            attachment: None,
        };
        let def =
            json!({"name": "echo", "description": "Repeat.", "inputSchema": {"type": "object", "properties": {}}});
        let t = style.render_tool("probe", &def).unwrap();
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"name":"mcp__probe__echo","description":"Repeat.","input_schema":{"type":"object","properties":{}}}"#
        );
        let i = style.instructions.as_ref().unwrap();
        assert_eq!(i.render(&[("a", "A."), ("b", "B.")]).unwrap(), "# H\n\n## a\nA.\n\n## b\nB.");
        assert_eq!(i.render(&[]), None);
        assert_eq!(McpStyle::default().render_tool("probe", &def), None);
    }

    #[test]
    fn the_attachment_template_is_rendered_for_the_servers() {
        let ins = McpInstructions {
            head: "<r>\n# H\n\n".into(),
            server: "## {{name}}\n{{instructions}}".into(),
            joiner: "\n\n".into(),
            tail: "\n</r>".into(),
            before: 0,
        };
        let a = McpAttachment { kind: "delta".into(), role: "user".into(), text: Some(ins) };
        let t = a.template(&[("a", "A."), ("b", "B.")]).unwrap();
        assert_eq!((t.kind.as_str(), t.role.as_str()), ("delta", "user"));
        assert_eq!(t.text, "<r>\n# H\n\n## a\nA.\n\n## b\nB.\n</r>");
        assert!(t.when.is_empty());
        assert_eq!(a.template(&[]), None);
        // The role only: an empty text (the transcript writes it).
        let role = McpAttachment { kind: "delta".into(), role: "system".into(), text: None };
        assert_eq!(role.template(&[]).unwrap().text, "");
        // Written without `before`, read back.
        let back: McpAttachment = serde_json::from_value(json!({"kind": "delta", "role": "user",
            "text": {"head": "<r>\n", "server": "{{name}}", "joiner": "\n\n", "tail": "\n</r>"}}))
        .unwrap();
        assert_eq!(back.text.unwrap().before, 0);
    }
}
