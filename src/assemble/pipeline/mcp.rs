//! The session's MCP servers in a rendered request (the profile's
//! [`McpStyle`], learned from a capture run with `--mcp-config`; the
//! servers from the environment snapshot's `env/mcp.json`). 2.1.88
//! (`tests/fixtures/shapes/cc-2.1.88/mcp-tools`) appends the servers' tools
//! to the tool list, puts their instructions in a section of the default
//! prompt and drops the prompt's static/dynamic boundary; a transcript holds
//! none of it, only the names of the calls. A session that calls `mcp__`
//! tools without servers in its snapshot (or with a profile that never saw
//! a capture with MCP) is built anyway, its tools named after the calls with
//! empty schemas, and said to be approximated ([`approximation`]).
//!
//! 2.1.100 – 2.1.275 send the instructions where the transcript writes
//! their attachment (`mcp_instructions_delta`, before the skills listing):
//! the style's attachment, rendered for the session's servers, is one more
//! attachment template of the session ([`attachment_template`]), so the
//! attachment stage sends it in the role the style says (2.1.100, 2.1.150: a
//! user reminder of the first message; 2.1.198 – 2.1.275: text of the
//! system turn).

use super::system_prompt::DYNAMIC_BOUNDARY;
use crate::corpus::Session;
use crate::env::SessionEnv;
use crate::model::content::BlockKind;
use crate::profile::{AttachmentTemplate, McpStyle, Profile};
use serde_json::{Value, json};

/// The prefix of the tool names the CLI gives MCP tools.
pub(super) const MCP_TOOL_PREFIX: &str = "mcp__";

fn style<'p>(profile: &'p Profile, env: &SessionEnv) -> Option<&'p McpStyle> {
    profile.mcp.as_ref().filter(|_| !env.mcp.is_empty())
}

/// The servers of `env` that have instructions, as `(name, instructions)`.
fn servers(env: &SessionEnv) -> Vec<(&str, &str)> {
    env.mcp.iter().filter_map(|s| s.instructions.as_deref().map(|i| (s.name.as_str(), i))).collect()
}

/// The session's template of the instructions attachment, when the style
/// has one: its role, and its text for the servers of `env` (one with the
/// role only when the transcript writes the text). `None` without servers
/// with instructions (nothing can be rendered: the attachment sends
/// nothing).
pub(super) fn attachment_template(profile: &Profile, env: &SessionEnv) -> Option<AttachmentTemplate> {
    profile.mcp.as_ref()?.attachment.as_ref()?.template(&servers(env))
}

/// Whether the default prompt keeps its static/dynamic boundary: always,
/// but for a session with MCP servers under a style that drops it.
pub(super) fn keeps_boundary(profile: &Profile, env: &SessionEnv) -> bool {
    style(profile, env).is_none_or(|s| s.keeps_boundary)
}

/// Put the instructions section among the default prompt's sections, the
/// dynamic ones starting at `dynamic_start`.
pub(super) fn insert_instructions(
    sections: &mut Vec<String>,
    dynamic_start: usize,
    profile: &Profile,
    env: &SessionEnv,
) {
    let Some(ins) = style(profile, env).and_then(|s| s.instructions.as_ref()) else { return };
    let Some(text) = ins.render(&servers(env)) else { return };
    let at = (dynamic_start + ins.before).min(sections.len());
    sections.insert(at, text);
    debug_assert!(sections.iter().filter(|s| *s == DYNAMIC_BOUNDARY).count() <= 1);
}

/// The tool list with the session's MCP tools, as the style sends them;
/// without servers or a style, a tool named after each `mcp__` call the
/// session makes that the list lacks, with an empty object schema.
pub(super) fn with_tools(
    mut tools: Vec<Value>,
    profile: &Profile,
    env: &SessionEnv,
    session: &Session<'_, '_>,
) -> Vec<Value> {
    if let Some(s) = style(profile, env) {
        let mut added: Vec<Value> =
            env.mcp.iter().flat_map(|srv| srv.tools.iter().filter_map(|d| s.render_tool(&srv.name, d))).collect();
        if s.sorted {
            added.sort_by(|a, b| a["name"].as_str().unwrap_or("").cmp(b["name"].as_str().unwrap_or("")));
        }
        tools.extend(added);
        return tools;
    }
    for name in called(session) {
        if !tools.iter().any(|t| t["name"] == name) {
            tools.push(json!({"name": name, "description": "", "input_schema": {"type": "object"}}));
        }
    }
    tools
}

/// The `mcp__` tools the session calls, in first-call order.
fn called<'a>(session: &Session<'a, '_>) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for f in session.files() {
        for e in &f.parsed.entries {
            let Some(a) = e.as_assistant() else { continue };
            for b in a.content.blocks() {
                if let BlockKind::ToolUse { name, .. } = b.kind
                    && name.starts_with(MCP_TOOL_PREFIX)
                    && !names.contains(&name)
                {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// Why a rendered request of `session` cannot carry its MCP servers as the
/// CLI sent them: it calls `mcp__` tools, and the snapshot has no servers
/// or the profile no MCP style.
pub(super) fn approximation(session: &Session<'_, '_>, profile: &Profile, env: &SessionEnv) -> Option<String> {
    let names = called(session);
    let first = names.first()?;
    if env.mcp.is_empty() {
        return Some(format!(
            "the session calls MCP tools ({first}, …) but its environment has no MCP servers (env/mcp.json): their \
             tools are named after the calls with empty schemas, their instructions left out"
        ));
    }
    if profile.mcp.is_none() {
        return Some(format!(
            "the session calls MCP tools ({first}, …) but profile {:?} never saw a capture with MCP servers (the \
             `mcp` probe of `ctxasm profile capture`): their tools are named after the calls with empty schemas",
            profile.name
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::mcp::McpServer;
    use crate::profile::McpInstructions;

    fn setup() -> (Profile, SessionEnv) {
        let mut p = Profile::load("seed").unwrap();
        p.mcp = Some(McpStyle {
            tool: Some(json!({"name": "mcp__{{server}}__{{tool}}", "input_schema": "{{def.inputSchema}}"})),
            sorted: true,
            instructions: Some(McpInstructions {
                head: "# I\n\n## ".into(),
                server: "{{name}}\n{{instructions}}".into(),
                joiner: "\n\n## ".into(),
                tail: String::new(),
                before: 1,
            }),
            keeps_boundary: false,
            attachment: None,
        });
        let server = |n: &str, i: Option<&str>| McpServer {
            name: n.into(),
            instructions: i.map(str::to_string),
            tools: vec![json!({"name": "zed", "inputSchema": {}}), json!({"name": "abc", "inputSchema": {}})],
        };
        let env = SessionEnv { mcp: vec![server("s", Some("Do.")), server("t", None)], ..SessionEnv::default() };
        (p, env)
    }

    #[test]
    fn instructions_go_among_the_dynamic_sections_and_the_boundary_goes() {
        let (p, env) = setup();
        assert!(!keeps_boundary(&p, &env));
        assert!(keeps_boundary(&p, &SessionEnv::default()));
        let mut sections: Vec<String> = ["S", "D0", "D1"].map(String::from).to_vec();
        insert_instructions(&mut sections, 1, &p, &env);
        assert_eq!(sections, ["S", "D0", "# I\n\n## s\nDo.", "D1"]);
        let mut none = sections.clone();
        insert_instructions(&mut none, 1, &p, &SessionEnv::default());
        assert_eq!(none, sections);
    }

    #[test]
    fn the_instructions_attachment_is_sent_in_the_styles_role() {
        use super::super::attachments::{AttachmentRole, render_with};
        use super::super::normalize::{self, Piece, Rules};
        use crate::profile::mcp::McpAttachment;
        let (mut p, env) = setup();
        let ins = McpInstructions {
            head: "<system-reminder>\n# I\n\n".into(),
            server: "## {{name}}\n{{instructions}}".into(),
            joiner: "\n\n".into(),
            tail: "\n</system-reminder>".into(),
            before: 0,
        };
        let user = McpAttachment { kind: "mcp_instructions_delta".into(), role: "user".into(), text: Some(ins) };
        p.mcp.as_mut().unwrap().attachment = Some(user.clone());
        let t = attachment_template(&p, &env).unwrap();
        // Only the servers with instructions.
        assert_eq!(
            (t.role.as_str(), t.text.as_str()),
            ("user", "<system-reminder>\n# I\n\n## s\nDo.\n</system-reminder>")
        );
        assert_eq!(attachment_template(&p, &SessionEnv::default()), None);
        // The transcript's attachment, then the skills listing, with the prompt
        // they came with: one first user message, the instructions first
        // (2.1.150).
        let bump = bumpalo::Bump::new();
        let lines = br###"{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}
{"type":"attachment","uuid":"a","parentUuid":"u","attachment":{"type":"mcp_instructions_delta","addedNames":["s"],"addedBlocks":["## s\nDo."],"removedNames":[]}}
{"type":"attachment","uuid":"b","parentUuid":"a","attachment":{"type":"skill_listing","content":"- k: a skill"}}
"###;
        let parsed = crate::input::parse_bytes(&bump, lines, "t", &crate::input::ReadOptions::default());
        let skills = AttachmentTemplate {
            kind: "skill_listing".into(),
            when: Default::default(),
            role: "user".into(),
            text: "<system-reminder>\nSkills:\n{{content}}\n</system-reminder>".into(),
        };
        let templates = [t, skills];
        let pieces: Vec<Piece> = parsed
            .entries
            .iter()
            .filter_map(|e| normalize::piece_of_entry_with(&bump, e, &templates, &Default::default()))
            .collect();
        let (msgs, _) = normalize::normalize(&bump, &pieces, &Rules::default());
        assert_eq!(msgs.len(), 1);
        let texts: Vec<&str> = msgs[0]
            .get("content")
            .and_then(|c| c.as_array())
            .unwrap()
            .iter()
            .filter_map(|b| b.get_str("text"))
            .collect();
        assert_eq!(
            texts,
            [
                "<system-reminder>\n# I\n\n## s\nDo.\n</system-reminder>",
                "<system-reminder>\nSkills:\n- k: a skill\n</system-reminder>\n",
                "hi"
            ]
        );
        // A system one is text of the system turn, the wrapper off (2.1.198);
        // a role-only one gives the role of a `rendered` text (2.1.275).
        let system = McpAttachment { role: "system".into(), ..user };
        let mut ins = system.text.clone().unwrap();
        (ins.head, ins.tail) = ("# I\n\n".into(), String::new());
        p.mcp.as_mut().unwrap().attachment = Some(McpAttachment { text: Some(ins), ..system.clone() });
        let r = render_with(&bump, &parsed.entries[1], &[attachment_template(&p, &env).unwrap()]).unwrap();
        assert_eq!(r.role, AttachmentRole::System);
        assert_eq!(r.texts.as_slice(), ["<system-reminder>\n# I\n\n## s\nDo.\n</system-reminder>"]);
        p.mcp.as_mut().unwrap().attachment = Some(McpAttachment { text: None, ..system });
        let line = br#"{"type":"attachment","uuid":"a","attachment":{"type":"mcp_instructions_delta"},"rendered":[{"content":"R"}]}"#;
        let parsed = crate::input::parse_bytes(&bump, line, "t", &crate::input::ReadOptions::default());
        let r = render_with(&bump, &parsed.entries[0], &[attachment_template(&p, &env).unwrap()]).unwrap();
        assert_eq!((r.role, r.texts.as_slice()), (AttachmentRole::System, &["R"][..]));
    }

    #[test]
    fn tools_are_appended_in_name_order() {
        let (p, env) = setup();
        let disc = crate::input::discover::discover(&[std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/shapes/cc-2.1.88/mcp-tools/transcripts"
        ))]);
        let opts = crate::corpus::RunOptions::default();
        let out = crate::corpus::for_each_session_of(&disc, &disc.groups, &opts, |_, s| {
            let tools = with_tools(vec![json!({"name": "Bash"})], &p, &env, s);
            let names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap_or("").to_string()).collect();
            // Without servers: the calls' names, with empty schemas, and why.
            let bare = with_tools(Vec::new(), &p, &SessionEnv::default(), s);
            (names, bare, approximation(s, &p, &SessionEnv::default()), approximation(s, &p, &env))
        });
        let (names, bare, why, none) = out.into_iter().next().unwrap().unwrap();
        assert_eq!(names, ["Bash", "mcp__s__abc", "mcp__s__zed", "mcp__t__abc", "mcp__t__zed"]);
        assert_eq!(bare.len(), 2);
        assert_eq!(
            bare[0],
            json!({"name": "mcp__probe__inventory", "description": "", "input_schema": {"type": "object"}})
        );
        assert!(why.is_some_and(|w| w.contains("env/mcp.json")));
        assert!(none.is_none());
    }
}
