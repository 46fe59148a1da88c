//! Attachments: what an `attachment` entry adds to the request.
//!
//! Since 2.1.270 Claude Code writes, next to each attachment, the text it
//! sends for it: `rendered` (a list of `{content}` parts, `null` when the
//! attachment sends nothing) and `renderedRole` (`user`, or `system` for the
//! mid-conversation system turns of 2.1.3xx). Those are used as written
//! (checked on all 14 scenarios of the 2.1.328 captures).
//!
//! Older attachments carry no `rendered`. A profile extracted from a
//! capture of the release holds how it renders each kind it saw
//! ([`AttachmentTemplate`]: its role and a template of the attachment's
//! fields; 2.1.198 and 2.1.250 send the agent and skill listings, the token
//! count and nested rules as `role: "system"` turns), and those are used
//! first ([`render_with`]). Without one, the common kinds found in the
//! public corpus are rendered here as `<system-reminder>` user text built
//! from their fields; that text is ctxasm's approximation, not a byte-exact
//! rebuild. Kinds that send nothing
//! or that ctxasm cannot render (`prompt_snapshot`, `hook_success` of a hook
//! that returned no context, unknown kinds) give `None`.

use crate::json::Json;
use crate::model::entry::Entry;
use crate::profile::AttachmentTemplate;
use crate::profile::template;
use bumpalo::Bump;
use smallvec::SmallVec;

/// Who an attachment speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentRole {
    User,
    System,
}

/// The text an attachment adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered<'a> {
    pub role: AttachmentRole,
    pub texts: SmallVec<[&'a str; 2]>,
    /// `renderedBesideToolResult`: written next to a tool result.
    pub beside_tool_result: bool,
    /// Rendered by ctxasm (the entry had no `rendered`).
    pub approximated: bool,
}

/// What `e` (an attachment entry) sends, if anything, without a profile's
/// templates.
pub fn render<'a>(bump: &'a Bump, e: &Entry<'a>) -> Option<Rendered<'a>> {
    render_with(bump, e, &[])
}

/// What `e` (an attachment entry) sends: its `rendered` text, else the
/// profile's template of its kind, else ctxasm's approximation.
pub fn render_with<'a>(bump: &'a Bump, e: &Entry<'a>, templates: &[AttachmentTemplate]) -> Option<Rendered<'a>> {
    let crate::model::entry::EntryKind::Attachment(a) = &e.kind else { return None };
    let role = match a.rendered_role {
        Some("system") => AttachmentRole::System,
        Some(_) => AttachmentRole::User,
        // 2.1.27x writes `rendered` without `renderedRole`: the role the
        // profile learned for the kind.
        None => match a.attachment_type.and_then(|k| templates.iter().find(|t| t.kind == k)) {
            Some(t) if t.role.starts_with("system") => AttachmentRole::System,
            _ => AttachmentRole::User,
        },
    };
    let beside_tool_result = e.raw.get_bool("renderedBesideToolResult").unwrap_or(false);
    if e.raw.get("rendered").is_some() {
        // Written by the client: `null` or `[]` means nothing is sent.
        let parts = a.rendered.and_then(Json::as_array).unwrap_or(&[]);
        let texts: SmallVec<[&'a str; 2]> = parts
            .iter()
            .filter_map(|p| match p {
                Json::Str(s) => Some(*s),
                _ => p.get_str("content"),
            })
            .collect();
        if texts.is_empty() {
            return None;
        }
        return Some(Rendered { role, texts, beside_tool_result, approximated: false });
    }
    let kind = a.attachment_type?;
    if let Some(t) = pick_template(templates, kind, a.attachment) {
        let text = render_template(t, a.attachment);
        // A system turn's text is stored without the reminder wrapper that
        // normalization takes off (a trailing newline of the text stays).
        let (role, text) = match t.role.as_str() {
            "system" | "system-reminder" => (AttachmentRole::System, reminder(&text)),
            _ => (AttachmentRole::User, text),
        };
        let text: &'a str = bump.alloc_str(&text);
        return Some(Rendered { role, texts: smallvec::smallvec![text], beside_tool_result, approximated: false });
    }
    let text = approximate(kind, a.attachment)?;
    let text: &'a str = bump.alloc_str(&text);
    Some(Rendered {
        role: AttachmentRole::User,
        texts: smallvec::smallvec![text],
        beside_tool_result,
        approximated: true,
    })
}

/// The template of `kind` whose boolean fields match the attachment's;
/// else the first of that kind.
fn pick_template<'t>(
    templates: &'t [AttachmentTemplate],
    kind: &str,
    att: &Json<'_>,
) -> Option<&'t AttachmentTemplate> {
    // An entry without text gives the role of `rendered` attachments only.
    let of_kind = || templates.iter().filter(|t| t.kind == kind && !t.text.is_empty());
    let matches = |t: &&AttachmentTemplate| t.when.iter().all(|(k, v)| att.get_bool(k) == Some(*v));
    of_kind().find(matches).or_else(|| of_kind().next())
}

/// An attachment's fields as template variables: strings as they are,
/// lists of strings joined by `\n`, strings one object deep as `a.b`.
pub fn attachment_vars(att: &Json<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(members) = att.as_object() else { return out };
    for (k, v) in members {
        match v {
            Json::Str(s) => out.push(((*k).to_string(), (*s).to_string())),
            Json::Arr(items) if !items.is_empty() && items.iter().all(|i| i.as_str().is_some()) => {
                let parts: Vec<&str> = items.iter().filter_map(Json::as_str).collect();
                out.push(((*k).to_string(), parts.join("\n")));
            }
            Json::Obj(inner) => {
                for (ik, iv) in inner.iter() {
                    if let Json::Str(s) = iv {
                        out.push((format!("{k}.{ik}"), (*s).to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn render_template(t: &AttachmentTemplate, att: &Json<'_>) -> String {
    let vars = attachment_vars(att);
    let bound: Vec<template::Var<'_>> = vars.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
    template::render(&t.text, &bound)
}

fn reminder(body: &str) -> String {
    format!("<system-reminder>\n{body}\n</system-reminder>")
}

/// ctxasm's rendering of an attachment written without `rendered`.
fn approximate(kind: &str, att: &Json<'_>) -> Option<String> {
    let joined = |key: &str| -> Option<String> {
        match att.get(key)? {
            Json::Str(s) => Some((*s).to_string()),
            Json::Arr(items) => {
                let parts: Vec<&str> = items.iter().filter_map(Json::as_str).collect();
                (!parts.is_empty()).then(|| parts.join("\n"))
            }
            _ => None,
        }
    };
    match kind {
        "hook_additional_context" => {
            let hook = att.get_str("hookName").unwrap_or("hook");
            Some(reminder(&format!("{hook} hook additional context: {}", joined("content")?)))
        }
        "hook_blocking_error" => {
            let hook = att.get_str("hookName").unwrap_or("hook");
            let err = att.get("blockingError").and_then(|b| b.get_str("blockingError")).unwrap_or("");
            Some(reminder(&format!("{hook} hook blocking error: {err}")))
        }
        "skill_listing" => Some(reminder(&format!(
            "The following skills are available for use with the Skill tool:\n\n{}",
            joined("content")?
        ))),
        "task_reminder" | "todo_reminder" => {
            let items = att.get("content").map(Json::to_compact_string).unwrap_or_default();
            Some(reminder(&format!("The task list: {items}")))
        }
        "deferred_tools_delta" => {
            let names = att.get("addedNames").and_then(Json::as_array)?;
            let names: Vec<&str> = names.iter().filter_map(Json::as_str).collect();
            (!names.is_empty()).then(|| {
                reminder(&format!(
                    "The following deferred tools are now available via ToolSearch:\n{}",
                    names.join("\n")
                ))
            })
        }
        "nested_memory" => {
            let path = att.get_str("path")?;
            let content = att.get("content").and_then(|c| c.get_str("content").or_else(|| c.as_str()))?;
            Some(reminder(&format!("Contents of {path}:\n\n{content}")))
        }
        // hook_success and the others send nothing ctxasm can rebuild.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};

    #[test]
    fn rendered_text_and_role_are_used_as_written() {
        let bump = Bump::new();
        let line = br#"{"type":"attachment","uuid":"a","parentUuid":"p","attachment":{"type":"date"},"rendered":[{"content":"<system-reminder>\nToday's date is 2026-11-30.\n</system-reminder>"}],"renderedRole":"system"}
{"type":"attachment","uuid":"b","parentUuid":"a","attachment":{"type":"prompt_snapshot"},"rendered":null}
{"type":"attachment","uuid":"c","parentUuid":"b","attachment":{"type":"remote_session_change"},"rendered":[{"content":"x"}],"renderedRole":"user","renderedBesideToolResult":true}
{"type":"attachment","uuid":"d","parentUuid":"c","attachment":{"type":"hook_success","content":"ok"}}
"#;
        let parsed = parse_bytes(&bump, line, "t", &ReadOptions::default());
        let r: Vec<Option<Rendered>> = parsed.entries.iter().map(|e| render(&bump, e)).collect();
        let date = r[0].as_ref().unwrap();
        assert_eq!(date.role, AttachmentRole::System);
        assert_eq!(date.texts.as_slice(), ["<system-reminder>\nToday's date is 2026-11-30.\n</system-reminder>"]);
        assert!(!date.approximated);
        assert_eq!(r[1], None);
        let remote = r[2].as_ref().unwrap();
        assert_eq!((remote.role, remote.beside_tool_result), (AttachmentRole::User, true));
        assert_eq!(r[3], None);
    }

    #[test]
    fn profile_templates_render_attachments_without_rendered() {
        let bump = Bump::new();
        let line = br#"{"type":"attachment","uuid":"a","attachment":{"type":"nested_memory","path":"/p/api.md","content":{"content":"API rules.\n"},"isInitial":true}}
{"type":"attachment","uuid":"b","attachment":{"type":"date"},"rendered":[{"content":"<system-reminder>\nd\n</system-reminder>"}]}
"#;
        let parsed = parse_bytes(&bump, line, "t", &ReadOptions::default());
        let t = |text: &str, when: bool| AttachmentTemplate {
            kind: "nested_memory".into(),
            when: [("isInitial".to_string(), when)].into_iter().collect(),
            role: "system".into(),
            text: text.into(),
        };
        let roles = AttachmentTemplate {
            kind: "date".into(),
            when: Default::default(),
            role: "system".into(),
            text: "".into(),
        };
        let templates = [t("other", false), t("Contents of {{path}}:\n\n{{content.content}}", true), roles];
        let r = render_with(&bump, &parsed.entries[0], &templates).unwrap();
        assert_eq!((r.role, r.approximated), (AttachmentRole::System, false));
        // Wrapped so that normalization's unwrapping gives the text back, its newline kept.
        assert_eq!(
            r.texts.as_slice(),
            ["<system-reminder>\nContents of /p/api.md:\n\nAPI rules.\n\n</system-reminder>"]
        );
        // `rendered` without `renderedRole`: the role the profile learned.
        assert_eq!(render_with(&bump, &parsed.entries[1], &templates).unwrap().role, AttachmentRole::System);
        assert_eq!(render(&bump, &parsed.entries[1]).unwrap().role, AttachmentRole::User);
    }

    #[test]
    fn older_kinds_are_approximated() {
        let bump = Bump::new();
        let line = br#"{"type":"attachment","uuid":"a","attachment":{"type":"hook_additional_context","hookName":"SessionStart","content":["be nice"]}}
"#;
        let parsed = parse_bytes(&bump, line, "t", &ReadOptions::default());
        let r = render(&bump, &parsed.entries[0]).unwrap();
        assert!(r.approximated);
        assert_eq!(
            r.texts.as_slice(),
            ["<system-reminder>\nSessionStart hook additional context: be nice\n</system-reminder>"]
        );
    }
}
