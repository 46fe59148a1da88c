//! What a capture run with `--mcp-config` shows (its environment's
//! `env/mcp.json` says which servers answered, with what): the profile's
//! [`McpStyle`]. Learned against the profile made from the other captures,
//! the way [`super::prompt_variant`] learns a custom prompt's prefix:
//! - the tool form: each server tool found in the captured tool list (a
//!   name holding the server's and the tool's names, not a profile tool)
//!   gives the name template and, per member, the definition member it
//!   carries verbatim (2.1.88: `mcp__{{server}}__{{tool}}`,
//!   `description`, `inputSchema` as `input_schema`); their order says
//!   whether they are sorted by name; none found: deferred (2.1.328);
//! - the block split: a profile with the dynamic boundary whose capture
//!   has no `global` block drops the boundary with MCP (2.1.88);
//! - the instructions: the text the captured prompt has that the profile's
//!   rendering lacks, holding a server's instructions, templated around the
//!   server's name and instructions, at the dynamic section it goes before
//!   (each place tried, the rendering compared with the capture);
//! - the instructions attachment: where the transcripts beside the capture
//!   write the instructions as an attachment without `renderedRole`, what
//!   the request shows of it ([`attachment_form`]): its role (`system` when
//!   its `rendered` text is in a system turn, 2.1.275) and, without
//!   `rendered`, its text: the user text block holding the instructions
//!   (2.1.100, 2.1.150), or the part of the system turn holding them between
//!   the neighbouring attachments' texts as the profile renders them
//!   (2.1.198, 2.1.250: after the agent listing, before the skills),
//!   templated around each server's block of the attachment (`addedBlocks`:
//!   `## <name>\n<instructions>`).

use super::capture::{from_wire, transcripts_beside};
use super::templates::capture_facts;
use super::{err, is_messages_request};
use crate::assemble::pipeline::attachments::attachment_vars;
use crate::assemble::pipeline::contexts;
use crate::assemble::pipeline::system_blocks::{self, system_blocks};
use crate::assemble::pipeline::system_prompt::{PromptChoice, cli_prefix, effective_system_prompt};
use crate::env::SessionEnv;
use crate::json::Json;
use crate::profile::mcp::McpAttachment;
use crate::profile::{AttachmentTemplate, McpInstructions, McpStyle, Profile, ProfileError, template};
use serde_json::{Map, Value};
use std::path::Path;

/// Learn `into.mcp` from the capture at `path` run with the servers of
/// `env` (see the module docs).
pub(super) fn learn(into: &mut Profile, path: &Path, env: &SessionEnv) -> Result<(), ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.into(), source })?;
    let lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
    let req = conversation_request(&lines).ok_or_else(|| err(path, "no /v1/messages request"))?;
    let cap = from_wire(path, req)?;
    if cap.version != into.version {
        return Err(err(
            path,
            format!("is a capture of {}, not {}: one profile is one release", cap.version, into.version),
        ));
    }
    let mut env = env.clone();
    if env.date.is_none() {
        env.date = capture_facts(Some(&env), &cap.texts).date;
    }
    let (tool, sorted) = tool_form(into, &cap.tools, &env);
    let global = cap.system.iter().any(|b| b["cache_control"]["scope"] == "global");
    let keeps_boundary = !into.layout.dynamic_boundary || global;
    let held = transcripts_beside(path);
    let attachment = attachment_form(&into.attachments, req, &held, &env);
    let mut style = McpStyle { tool, sorted, instructions: None, keeps_boundary, attachment };
    let render = |p: &Profile| {
        let (_, sys_ctx) = contexts::contexts(p, &env, None);
        let sections = effective_system_prompt(p, &env, &cap.model, &PromptChoice::default(), &sys_ctx);
        system_blocks::to_json(&system_blocks("", cli_prefix(p, true, false), &sections, p))
    };
    let want = Value::Array(cap.system.clone());
    let mut trial = into.clone();
    trial.mcp = Some(style.clone());
    let got = render(&trial);
    if got != want {
        let found = instructions_text(&got, &want).and_then(|x| template(&x, &env)).and_then(|ins| {
            places(&into.prompt.dynamic_sections).into_iter().find_map(|(sections, before)| {
                let ins = McpInstructions { before, ..ins.clone() };
                trial.prompt.dynamic_sections.clone_from(&sections);
                trial.mcp = Some(McpStyle { instructions: Some(ins.clone()), ..style.clone() });
                (render(&trial) == want).then_some((sections, ins))
            })
        });
        let Some((sections, ins)) = found else {
            return Err(err(
                path,
                "the capture's system prompt with MCP servers is not the profile's with their instructions in one \
                 section: no MCP style learned",
            ));
        };
        // The section the instructions go into the middle of is two
        // sections from now on (joined by `\n\n` as before), in the model
        // variants' prompts too.
        let old = std::mem::replace(&mut into.prompt.dynamic_sections, sections.clone());
        for v in &mut into.model_variants {
            if v.prompt.dynamic_sections == old {
                v.prompt.dynamic_sections.clone_from(&sections);
            }
        }
        style.instructions = Some(ins);
    }
    into.mcp = Some(style);
    if let Some(p) = into.extracted_from.take() {
        into.extracted_from = Some(format!("{p}, {}", path.display()));
    }
    Ok(())
}

/// The servers of `env` that have instructions, as `(name, instructions)`.
fn with_instructions(env: &SessionEnv) -> Vec<(&str, &str)> {
    env.mcp.iter().filter_map(|s| s.instructions.as_deref().map(|i| (s.name.as_str(), i))).collect()
}

/// The style's attachment (see the module docs): `None` when no attachment
/// of the transcripts `held` holds the first server's instructions, when it
/// is written with its role, or when the request `req` does not show it as
/// the form learned renders it.
fn attachment_form(
    templates: &[AttachmentTemplate],
    req: &Value,
    held: &[String],
    env: &SessionEnv,
) -> Option<McpAttachment> {
    let servers = with_instructions(env);
    let &(_, first) = servers.first()?;
    let lines: Vec<Value> = held.iter().flat_map(|t| t.lines()).filter_map(|l| serde_json::from_str(l).ok()).collect();
    let at = lines.iter().position(|v| v["type"] == "attachment" && holds(&v["attachment"], first))?;
    let line = &lines[at];
    if line.get("renderedRole").is_some() {
        return None;
    }
    let kind = line.pointer("/attachment/type").and_then(Value::as_str)?.to_string();
    let messages = req.pointer("/body/messages").and_then(Value::as_array)?;
    let texts_of = |m: &Value| -> Vec<String> {
        match &m["content"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(blocks) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string)).collect()
            }
            _ => Vec::new(),
        }
    };
    let user: Vec<String> = messages.iter().filter(|m| m["role"] == "user").flat_map(texts_of).collect();
    let system: Vec<String> = messages.iter().filter(|m| m["role"] == "system").map(|m| texts_of(m).concat()).collect();
    if line.get("rendered").is_some() {
        let sent = line.pointer("/rendered/0/content").and_then(Value::as_str)?;
        let inner = sent.strip_prefix("<system-reminder>\n").and_then(|t| t.strip_suffix("\n</system-reminder>"));
        let role = if inner.is_some_and(|i| system.iter().any(|t| t.contains(i))) {
            "system"
        } else if user.iter().any(|t| t == sent) {
            "user"
        } else {
            return None;
        };
        return Some(McpAttachment { kind, role: role.into(), text: None });
    }
    let blocks = string_items(&line["attachment"]);
    let (role, x) = match user.iter().find(|t| t.contains(first)) {
        // Without the "\n" the merge of user messages appends to a block
        // ending one.
        Some(t) => ("user", t.strip_suffix('\n').filter(|x| x.ends_with("</system-reminder>")).unwrap_or(t.as_str())),
        None => {
            let turn = system.iter().find(|t| t.contains(first))?;
            ("system", system_span(turn, first, &neighbour_texts(templates, &lines, at))?)
        }
    };
    let text = template_from_blocks(x, &servers, &blocks).or_else(|| template(x, env))?;
    (text.render(&servers).as_deref() == Some(x)).then(|| McpAttachment { kind, role: role.into(), text: Some(text) })
}

/// Whether a string inside `v` contains `s`.
fn holds(v: &Value, s: &str) -> bool {
    match v {
        Value::String(t) => t.contains(s),
        Value::Array(items) => items.iter().any(|i| holds(i, s)),
        Value::Object(m) => m.values().any(|i| holds(i, s)),
        _ => false,
    }
}

/// The strings of the lists among `v`'s members.
fn string_items(v: &Value) -> Vec<String> {
    let lists = v.as_object().into_iter().flat_map(|m| m.values()).filter_map(Value::as_array);
    lists.flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// The texts the other attachments of `lines` (not the one at `skip`, not
/// written with `rendered`) send, as the profile's `templates` render them.
fn neighbour_texts(templates: &[AttachmentTemplate], lines: &[Value], skip: usize) -> Vec<String> {
    let bump = bumpalo::Bump::new();
    let mut out = Vec::new();
    for (i, v) in lines.iter().enumerate() {
        if i == skip || v["type"] != "attachment" || v.get("rendered").is_some() {
            continue;
        }
        let Some(kind) = v.pointer("/attachment/type").and_then(Value::as_str) else { continue };
        let vars = attachment_vars(&Json::from_serde(&bump, &v["attachment"]));
        let bound: Vec<template::Var<'_>> = vars.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
        for t in templates.iter().filter(|t| t.kind == kind && !t.text.is_empty()) {
            out.push(template::render(&t.text, &bound));
        }
    }
    out
}

/// The part of the system turn `turn` that holds `ins`: from the end of the
/// last neighbour text before it to the start of the first one after it,
/// without the `\n\n` that joins them (the turn's start and end when there
/// is none).
fn system_span<'t>(turn: &'t str, ins: &str, neighbours: &[String]) -> Option<&'t str> {
    let i_at = turn.find(ins)?;
    let i_end = i_at + ins.len();
    let (mut start, mut end) = (0, turn.len());
    for n in neighbours.iter().filter(|n| !n.is_empty()) {
        for (p, _) in turn.match_indices(n.as_str()) {
            let after = p + n.len();
            if after <= i_at && turn[after..].starts_with("\n\n") {
                start = start.max(after + 2);
            } else if p >= i_end && turn[..p].ends_with("\n\n") {
                end = end.min(p - 2);
            }
        }
    }
    turn.get(start..end)
}

/// The text `x` as a template around the servers' blocks: each server's
/// block of the attachment (`blocks`: the one holding its name, then its
/// instructions) found in `x` in the servers' order; the first one gives the
/// server part, what is between the first two the joiner (one server:
/// `\n\n`).
fn template_from_blocks(x: &str, servers: &[(&str, &str)], blocks: &[String]) -> Option<McpInstructions> {
    let mut found: Vec<(usize, &str)> = Vec::new();
    let mut from = 0;
    for &(name, ins) in servers {
        let block = blocks.iter().find(|b| b.find(ins).is_some_and(|i| b[..i].contains(name)))?;
        let at = from + x.get(from..)?.find(block.as_str())?;
        found.push((at, block.as_str()));
        from = at + block.len();
    }
    let &(first_at, block) = found.first()?;
    let &(name, ins) = servers.first()?;
    let i_at = block.find(ins)?;
    let n_at = block[..i_at].rfind(name)?;
    let server = format!(
        "{}{{{{name}}}}{}{{{{instructions}}}}{}",
        &block[..n_at],
        &block[n_at + name.len()..i_at],
        &block[i_at + ins.len()..]
    );
    let joiner = match found.get(1) {
        Some(&(next, _)) => x.get(first_at + block.len()..next)?.to_string(),
        None => "\n\n".to_string(),
    };
    Some(McpInstructions { head: x[..first_at].to_string(), server, joiner, tail: x[from..].to_string(), before: 0 })
}

/// The capture's first conversation request: the first Messages request
/// with tools (1.0.128 asks its side calls, tool-less, first: the git
/// history question), else the first Messages request.
fn conversation_request(lines: &[Value]) -> Option<&Value> {
    let mut requests = lines.iter().filter(|v| is_messages_request(v));
    let has_tools = |v: &&Value| v.pointer("/body/tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
    requests.clone().find(has_tools).or_else(|| requests.next())
}

/// Where a section can go among `sections`: before each one (or last),
/// then at each paragraph break (`\n\n`) inside one, which splits it.
fn places(sections: &[String]) -> Vec<(Vec<String>, usize)> {
    let mut out: Vec<(Vec<String>, usize)> = (0..=sections.len()).map(|i| (sections.to_vec(), i)).collect();
    for (k, s) in sections.iter().enumerate() {
        for (at, _) in s.match_indices("\n\n") {
            let (a, b) = (&s[..at], &s[at + 2..]);
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let mut v = sections[..k].to_vec();
            v.extend([a.to_string(), b.to_string()]);
            v.extend(sections[k + 1..].iter().cloned());
            out.push((v, k + 1));
        }
    }
    out
}

/// The tool form and whether the tools are sorted, from the captured tools
/// that are the servers' (none: `(None, false)`).
fn tool_form(into: &Profile, captured: &[Value], env: &SessionEnv) -> (Option<Value>, bool) {
    let name_of = |t: &Value| t.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let own: Vec<String> = into.tools.iter().map(name_of).collect();
    let mut found: Vec<(usize, &str, &Value, &Value)> = Vec::new();
    for srv in &env.mcp {
        for def in &srv.tools {
            let tool = def.get("name").and_then(Value::as_str).unwrap_or("");
            let hit = captured.iter().enumerate().find(|(_, t)| {
                let n = name_of(t);
                !tool.is_empty()
                    && n.ends_with(tool)
                    && n[..n.len() - tool.len()].contains(&srv.name)
                    && !own.contains(&n)
            });
            if let Some((i, t)) = hit {
                found.push((i, srv.name.as_str(), def, t));
            }
        }
    }
    let Some(&(_, server, def, sent)) = found.first() else { return (None, false) };
    let mut form = Map::new();
    let Some(obj) = sent.as_object() else { return (None, false) };
    for (k, v) in obj {
        let from_def = def.as_object().and_then(|d| d.iter().find(|(_, dv)| *dv == v).map(|(dk, _)| dk.clone()));
        let value = if k == "name" {
            let name = name_of(sent);
            let tool = def.get("name").and_then(Value::as_str).unwrap_or("");
            let head = &name[..name.len() - tool.len()];
            Value::String(format!("{}{{{{tool}}}}", head.replacen(server, "{{server}}", 1)))
        } else if let Some(dk) = from_def {
            Value::String(format!("{{{{def.{dk}}}}}"))
        } else {
            v.clone()
        };
        form.insert(k.clone(), value);
    }
    let style = McpStyle { tool: Some(Value::Object(form)), ..McpStyle::default() };
    // The form renders every server tool found as sent, or none is learned.
    if found.iter().any(|(_, s, d, t)| style.render_tool(s, d).as_ref() != Some(*t)) {
        return (None, false);
    }
    let mut by_index = found.clone();
    by_index.sort_by_key(|f| f.0);
    let order: Vec<String> = by_index.iter().map(|f| name_of(f.3)).collect();
    let servers_order: Vec<String> = found.iter().map(|f| name_of(f.3)).collect();
    let mut names = order.clone();
    names.sort();
    (style.tool, order == names && order != servers_order)
}

/// The text the capture's prompt has that the rendering lacks, without
/// the `\n\n` that joins it to its neighbour.
fn instructions_text(got: &Value, want: &Value) -> Option<String> {
    let join = |v: &Value| -> String {
        v.as_array()
            .into_iter()
            .flatten()
            .skip(1)
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let (g, w) = (join(got), join(want));
    if w.len() <= g.len() {
        return None;
    }
    let pre = g.bytes().zip(w.bytes()).take_while(|(a, b)| a == b).count();
    let suf = g.bytes().rev().zip(w.bytes().rev()).take(g.len() - pre).take_while(|(a, b)| a == b).count();
    let inserted = w.get(pre..w.len() - suf)?;
    let x = inserted.strip_prefix("\n\n").or_else(|| inserted.strip_suffix("\n\n")).unwrap_or(inserted);
    Some(x.to_string())
}

/// The section `x` as a template of the servers' names and instructions.
fn template(x: &str, env: &SessionEnv) -> Option<McpInstructions> {
    let servers: Vec<(&str, &str)> =
        env.mcp.iter().filter_map(|s| s.instructions.as_deref().map(|i| (s.name.as_str(), i))).collect();
    let (name, ins) = servers.first()?;
    let i_at = x.find(ins)?;
    let n_at = x[..i_at].rfind(name)?;
    let head = x[..n_at].to_string();
    let server = format!("{{{{name}}}}{}{{{{instructions}}}}", &x[n_at + name.len()..i_at]);
    let after = &x[i_at + ins.len()..];
    let (joiner, tail) = match servers.get(1) {
        Some((n2, _)) => {
            let j_end = after.find(n2)?;
            let joiner = &after[..j_end];
            let last = servers.last().map(|(_, i)| *i).unwrap_or("");
            let tail_at = x.rfind(last).map(|p| p + last.len())?;
            (joiner.to_string(), x[tail_at..].to_string())
        }
        None => ("\n\n".to_string(), after.to_string()),
    };
    Some(McpInstructions { head, server, joiner, tail, before: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_probe_of_2_1_88_teaches_the_style() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/probes/cc-2.1.88"));
        let env_of = |p: &str| SessionEnv::from_dir(&root.join(p).join("env")).unwrap();
        let hello = env_of("hello");
        let mut p = super::super::extract(&root.join("hello/wire.jsonl"), Some(&hello)).unwrap();
        let rendered_before = p.prompt.dynamic_sections.join("\n\n");
        learn(&mut p, &root.join("mcp/wire.jsonl"), &env_of("mcp")).unwrap();
        let style = p.mcp.clone().unwrap();
        assert_eq!(style.tool.as_ref().unwrap()["name"], "mcp__{{server}}__{{tool}}");
        assert_eq!(style.tool.as_ref().unwrap()["input_schema"], "{{def.inputSchema}}");
        assert!(style.sorted || env_of("mcp").mcp[0].tools.len() == 1);
        assert!(!style.keeps_boundary);
        let ins = style.instructions.unwrap();
        assert_eq!(ins.server, "{{name}}\n{{instructions}}");
        assert!(ins.head.ends_with("## "), "{:?}", ins.head);
        // A split section joins back to the same text.
        assert_eq!(p.prompt.dynamic_sections.join("\n\n"), rendered_before);
        // 2.1.328 defers the tools and keeps its prompt.
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/probes/cc-2.1.328"));
        let env_of = |p: &str| SessionEnv::from_dir(&root.join(p).join("env")).unwrap();
        let mut p = super::super::extract(&root.join("hello/wire.jsonl"), Some(&env_of("hello"))).unwrap();
        learn(&mut p, &root.join("mcp/wire.jsonl"), &env_of("mcp")).unwrap();
        assert_eq!(p.mcp, Some(McpStyle { keeps_boundary: true, ..McpStyle::default() }));
    }

    #[test]
    fn the_conversation_request_is_the_first_with_tools() {
        let line = |path: &str, tools: Value| serde_json::json!({"path": path, "body": {"messages": [{"role": "user", "content": "x"}], "tools": tools}});
        let lines = vec![
            line("/v1/messages/count_tokens", serde_json::json!([{"name": "mcp__probe__echo"}])),
            line("/v1/messages?beta=true", serde_json::json!([])),
            line("/v1/messages?beta=true", serde_json::json!([{"name": "Bash"}])),
        ];
        assert_eq!(conversation_request(&lines), Some(&lines[2]));
        // No request with tools: the first Messages request.
        assert_eq!(conversation_request(&lines[..2]), Some(&lines[1]));
        assert_eq!(conversation_request(&lines[..1]), None);
    }

    fn probe_env() -> SessionEnv {
        let server = crate::env::mcp::McpServer {
            name: "probe".into(),
            instructions: Some("Call inventory first.".into()),
            tools: Vec::new(),
        };
        SessionEnv { mcp: vec![server], ..SessionEnv::default() }
    }

    const DELTA: &str = r###"{"type":"attachment","attachment":{"type":"mcp_instructions_delta","addedNames":["probe"],"addedBlocks":["## probe\nCall inventory first."],"removedNames":[]}}"###;

    fn request(messages: Value) -> Value {
        serde_json::json!({"path": "/v1/messages", "body": {"messages": messages, "tools": [{"name": "Bash"}]}})
    }

    #[test]
    fn a_user_reminder_of_the_instructions_is_learned_around_the_servers_blocks() {
        // 2.1.150: the reminder is the first text block of the first user
        // message, before the skills listing (which got the merge's "\n").
        let held = vec![[r#"{"type":"user","message":{"role":"user","content":"hi"}}"#, DELTA, SKILLS].join("\n")];
        let req = request(serde_json::json!([{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\n# I\n\nServers:\n\n## probe\nCall inventory first.\n</system-reminder>"},
            {"type": "text", "text": "<system-reminder>\nSkills:\n\n- s: a skill\n</system-reminder>\n"},
            {"type": "text", "text": "hi"}]}]));
        let a = attachment_form(&[], &req, &held, &probe_env()).unwrap();
        assert_eq!((a.kind.as_str(), a.role.as_str()), ("mcp_instructions_delta", "user"));
        assert_eq!(
            a.text,
            Some(McpInstructions {
                head: "<system-reminder>\n# I\n\nServers:\n\n".into(),
                server: "## {{name}}\n{{instructions}}".into(),
                joiner: "\n\n".into(),
                tail: "\n</system-reminder>".into(),
                before: 0,
            })
        );
    }

    const AGENTS: &str =
        r#"{"type":"attachment","attachment":{"type":"agent_listing_delta","addedLines":["- a: an agent"]}}"#;
    const SKILLS: &str = r#"{"type":"attachment","attachment":{"type":"skill_listing","content":"- s: a skill"}}"#;

    #[test]
    fn a_system_turn_part_is_cut_between_the_neighbours_texts() {
        // 2.1.198: agent listing, instructions, skills in one system turn.
        let held = vec![[AGENTS, DELTA, SKILLS].join("\n")];
        let t = |kind: &str, text: &str| AttachmentTemplate {
            kind: kind.into(),
            when: Default::default(),
            role: "system".into(),
            text: text.into(),
        };
        let templates = [
            t("agent_listing_delta", "Agents:\n{{addedLines}}\n\nNote."),
            t("skill_listing", "Skills:\n\n{{content}}"),
        ];
        let turn = "Agents:\n- a: an agent\n\nNote.\n\n# I\n\nServers:\n\n## probe\nCall inventory first.\n\nSkills:\n\n- s: a skill";
        let req = request(serde_json::json!([{"role": "user", "content": "hi"}, {"role": "system", "content": turn}]));
        let a = attachment_form(&templates, &req, &held, &probe_env()).unwrap();
        assert_eq!(a.role, "system");
        let text = a.text.unwrap();
        assert_eq!((text.head.as_str(), text.tail.as_str()), ("# I\n\nServers:\n\n", ""));
        assert_eq!(
            text.render(&[("probe", "Call inventory first.")]).unwrap(),
            "# I\n\nServers:\n\n## probe\nCall inventory first."
        );
        // The neighbours as the profile renders them bound the part; without
        // them it is the whole turn (their texts taken for its own).
        let lines: Vec<Value> = held[0].lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            neighbour_texts(&templates, &lines, 1),
            ["Agents:\n- a: an agent\n\nNote.", "Skills:\n\n- s: a skill"]
        );
        assert_eq!(system_span(turn, "Call inventory", &[]), Some(turn));
    }

    #[test]
    fn a_rendered_attachment_without_its_role_teaches_the_role() {
        // 2.1.275: `rendered` but no `renderedRole`; its text in the system turn.
        let rendered = r###"{"type":"attachment","attachment":{"type":"mcp_instructions_delta","addedBlocks":["## probe\nCall inventory first."]},"rendered":[{"content":"<system-reminder>\n# I\n\n## probe\nCall inventory first.\n</system-reminder>"}]}"###;
        let req = request(serde_json::json!([{"role": "user", "content": "hi"},
            {"role": "system", "content": "Agents.\n\n# I\n\n## probe\nCall inventory first."}]));
        let a = attachment_form(&[], &req, &[rendered.to_string()], &probe_env()).unwrap();
        assert_eq!(a, McpAttachment { kind: "mcp_instructions_delta".into(), role: "system".into(), text: None });
        // As a user text block: `user`.
        let req = request(serde_json::json!([{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\n# I\n\n## probe\nCall inventory first.\n</system-reminder>"}]}]));
        assert_eq!(attachment_form(&[], &req, &[rendered.to_string()], &probe_env()).unwrap().role, "user");
        // Written with its role (2.1.300 on): nothing to learn; nor without servers.
        let with_role = rendered.replace(r#","rendered":"#, r#","renderedRole":"system","rendered":"#);
        assert_eq!(attachment_form(&[], &req, &[with_role], &probe_env()), None);
        assert_eq!(attachment_form(&[], &req, &[rendered.to_string()], &SessionEnv::default()), None);
    }

    #[test]
    fn two_servers_blocks_give_the_joiner() {
        let servers = [("a", "Do A."), ("b", "Do B.")];
        let blocks = ["## a\nDo A.".to_string(), "## b\nDo B.".to_string()];
        let x = "<r>\n# I\n\n## a\nDo A.\n\n## b\nDo B.\n</r>";
        let t = template_from_blocks(x, &servers, &blocks).unwrap();
        assert_eq!((t.head.as_str(), t.server.as_str()), ("<r>\n# I\n\n", "## {{name}}\n{{instructions}}"));
        assert_eq!((t.joiner.as_str(), t.tail.as_str()), ("\n\n", "\n</r>"));
        assert_eq!(t.render(&servers).as_deref(), Some(x));
        // A server without its block: none.
        assert_eq!(template_from_blocks(x, &servers, &blocks[..1]), None);
    }

    #[test]
    fn places_split_paragraphs() {
        let s: Vec<String> = ["a\n\nb", "c"].map(String::from).to_vec();
        let p = places(&s);
        assert_eq!(p.len(), 4);
        assert_eq!(p[3], (vec!["a".to_string(), "b".into(), "c".into()], 1));
    }
}
