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
//!   (each place tried, the rendering compared with the capture).

use super::capture::from_wire;
use super::templates::capture_facts;
use super::{err, is_messages_request};
use crate::assemble::pipeline::contexts;
use crate::assemble::pipeline::system_blocks::{self, system_blocks};
use crate::assemble::pipeline::system_prompt::{PromptChoice, cli_prefix, effective_system_prompt};
use crate::env::SessionEnv;
use crate::profile::{McpInstructions, McpStyle, Profile, ProfileError};
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
    let mut style = McpStyle { tool, sorted, instructions: None, keeps_boundary };
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

    #[test]
    fn places_split_paragraphs() {
        let s: Vec<String> = ["a\n\nb", "c"].map(String::from).to_vec();
        let p = places(&s);
        assert_eq!(p.len(), 4);
        assert_eq!(p[3], (vec!["a".to_string(), "b".into(), "c".into()], 1));
    }
}
