//! Learning how a release renders the attachments its transcripts write
//! without `rendered` (before 2.1.270): each such attachment of the
//! transcripts beside a capture is looked for in the captured requests, and
//! the text around its longest field value becomes the profile's
//! [`AttachmentTemplate`] of its kind.
//!
//! A `role: "system"` turn holds the texts of consecutive system-role
//! attachments joined by `"\n\n"` (2.1.198: the agent listing, then the
//! skill listing; 2.1.250 adds the token count). Where two of them meet,
//! the cut is the last `"\n\n"` between their values that leaves the second
//! a head of its own (its `The following skills …:\n\n`), else the last
//! one. A user-role attachment is one whole text block (without the
//! newline the merge of user messages appends to a block ending in the
//! closing reminder tag). A template is kept
//! only when it renders its own attachment back to the captured text.

use crate::assemble::pipeline::attachments::attachment_vars;
use crate::json::Json;
use crate::profile::{AttachmentTemplate, template};
use bumpalo::Bump;
use serde_json::Value;
use std::collections::BTreeMap;

/// Field values shorter than this are not templated (a `type: "Project"`
/// would match anywhere).
const MIN_VALUE: usize = 6;

/// One attachment of a transcript, without `rendered`.
struct Seen {
    kind: String,
    when: BTreeMap<String, bool>,
    /// Its variables, longest value first.
    vars: Vec<(String, String)>,
}

/// The templates `wire_lines` (a capture) show for the attachments of
/// `held` (the transcripts beside it, as text), at most one per kind and
/// boolean fields.
pub(super) fn learn(wire_lines: &[Value], held: &[String]) -> Vec<AttachmentTemplate> {
    let seen = attachments_without_rendered(held);
    let texts = message_texts(wire_lines);
    let mut out = roles_of_rendered(held, &texts);
    if seen.is_empty() {
        return out;
    }
    if let Some(t) = constant_text(&seen, &texts, &rendered_texts(held)) {
        out.push(t);
    }
    for (role, text) in texts {
        let found: Vec<(usize, usize, &Seen)> = if role == "system" {
            let mut f: Vec<(usize, usize, &Seen)> = Vec::new();
            for s in &seen {
                if let Some((at, len)) = primary_at(&text, s)
                    && !f.iter().any(|(a, l, _)| at < a + l && *a < at + len)
                {
                    f.push((at, len, s));
                }
            }
            f.sort_by_key(|(at, _, _)| *at);
            f
        } else {
            seen.iter().filter_map(|s| primary_at(&text, s).map(|(at, len)| (at, len, s))).take(1).collect()
        };
        for (k, &(at, len, s)) in found.iter().enumerate() {
            let start = match k.checked_sub(1).and_then(|p| found.get(p)) {
                Some(&(pa, pl, ps)) => cut_between(&text, pa + pl, at, ps, s) + 2,
                None => 0,
            };
            let end = found.get(k + 1).map_or(text.len(), |&(na, _, ns)| cut_between(&text, at + len, na, s, ns));
            if out.iter().any(|t| t.kind == s.kind && t.when == s.when) {
                continue;
            }
            // A reminder block that ended a user message before the merge
            // of consecutive user messages got its `"\n"` there (2.1.198
            // Haiku sends the listings as user text).
            let end = match role == "user" && text[..end].ends_with("</system-reminder>\n") {
                true => end - 1,
                false => end,
            };
            if let Some(t) = template_of(&text[start..end], at - start, len, s, &role) {
                out.push(t);
            }
        }
    }
    out
}

/// An attachment with no field to find it by (2.1.198 `task_reminder`:
/// `content: []`, `itemCount: 0`) sends a constant text: the one system
/// turn no attachment's value explains, when exactly one such kind is in
/// the transcripts (a kind that sends nothing, `command_permissions`, then
/// learns nothing: no turn is left unexplained). A turn holding the text of
/// an attachment written with `rendered` is explained by it (2.1.275: a
/// skill session's `command_permissions` beside rendered listings).
fn constant_text(seen: &[Seen], texts: &[(String, String)], rendered: &[String]) -> Option<AttachmentTemplate> {
    let mut blank: Vec<&Seen> = seen.iter().filter(|s| s.vars.is_empty()).collect();
    blank.dedup_by(|a, b| a.kind == b.kind);
    let [only] = blank.as_slice() else { return None };
    let unexplained: Vec<&str> = texts
        .iter()
        .filter(|(r, t)| r == "system" && !seen.iter().any(|s| primary_at(t, s).is_some()))
        .filter(|(_, t)| !rendered.iter().any(|x| t.contains(x.as_str())))
        .map(|(_, t)| t.as_str())
        .collect();
    let first = *unexplained.first()?;
    unexplained.iter().all(|t| *t == first).then(|| AttachmentTemplate {
        kind: only.kind.clone(),
        when: only.when.clone(),
        role: "system".into(),
        text: first.to_string(),
    })
}

/// The texts of the attachments of `held` written with `rendered`, each
/// without its reminder wrapper.
fn rendered_texts(held: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in held.iter().flat_map(|t| t.lines()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let Some(parts) = v.get("rendered").and_then(Value::as_array).filter(|_| v["type"] == "attachment") else {
            continue;
        };
        for t in parts.iter().filter_map(|p| p.get("content").and_then(Value::as_str)) {
            let inner = t.strip_prefix("<system-reminder>\n").and_then(|i| i.strip_suffix("\n</system-reminder>"));
            let inner = inner.unwrap_or(t);
            if inner.len() >= MIN_VALUE && !out.iter().any(|x| x == inner) {
                out.push(inner.to_string());
            }
        }
    }
    out
}

/// The attachments of `held` written without `rendered`.
fn attachments_without_rendered(held: &[String]) -> Vec<Seen> {
    let bump = Bump::new();
    let mut out = Vec::new();
    for text in held {
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v["type"] != "attachment" || v.get("rendered").is_some() {
                continue;
            }
            let Some(kind) = v.pointer("/attachment/type").and_then(Value::as_str) else { continue };
            let att = Json::from_serde(&bump, &v["attachment"]);
            let mut vars: Vec<(String, String)> =
                attachment_vars(&att).into_iter().filter(|(k, v)| k != "type" && v.len() >= MIN_VALUE).collect();
            vars.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
            let when = v["attachment"]
                .as_object()
                .map(|o| o.iter().filter_map(|(k, b)| b.as_bool().map(|b| (k.clone(), b))).collect())
                .unwrap_or_default();
            out.push(Seen { kind: kind.to_string(), when, vars });
        }
    }
    out
}

/// The role of each kind written with `rendered` but no `renderedRole`
/// (2.1.27x): `system-reminder` when its text, reminder wrapper and all, is
/// in a system turn (2.1.275 Sonnet 5), `system` when it is there without
/// the wrapper, `user` when it is a user text block; an entry without text.
fn roles_of_rendered(held: &[String], texts: &[(String, String)]) -> Vec<AttachmentTemplate> {
    let mut out: Vec<AttachmentTemplate> = Vec::new();
    for line in held.iter().flat_map(|t| t.lines()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["type"] != "attachment" || v.get("renderedRole").is_some() {
            continue;
        }
        let Some(kind) = v.pointer("/attachment/type").and_then(Value::as_str) else { continue };
        let Some(first) = v.pointer("/rendered/0/content").and_then(Value::as_str) else { continue };
        if out.iter().any(|t| t.kind == kind) {
            continue;
        }
        let inner = first.strip_prefix("<system-reminder>\n").and_then(|t| t.strip_suffix("\n</system-reminder>"));
        let in_system = |x: &str| texts.iter().any(|(r, t)| r == "system" && t.contains(x));
        let role = if inner.is_some() && in_system(first) {
            "system-reminder"
        } else if inner.is_some_and(in_system) {
            "system"
        } else if texts.iter().any(|(r, t)| r == "user" && t == first) {
            "user"
        } else {
            continue;
        };
        out.push(AttachmentTemplate {
            kind: kind.into(),
            when: BTreeMap::new(),
            role: role.into(),
            text: String::new(),
        });
    }
    out
}

/// Each message text of the captured conversation requests: a system
/// turn's whole text, a user message's text blocks one by one.
fn message_texts(wire_lines: &[Value]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for m in super::capture::message_lists(wire_lines).flatten() {
        let role = m["role"].as_str().unwrap_or("");
        let texts: Vec<&str> = match &m["content"] {
            Value::String(s) => vec![s.as_str()],
            Value::Array(blocks) => blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect(),
            _ => Vec::new(),
        };
        let texts = if role == "system" { vec![texts.concat()] } else { texts.iter().map(|t| t.to_string()).collect() };
        for t in texts {
            if (role == "system" || role == "user") && !out.iter().any(|(r, x)| r == role && *x == t) {
                out.push((role.to_string(), t));
            }
        }
    }
    out
}

/// Where the longest value of `s` is in `text`, and its length.
fn primary_at(text: &str, s: &Seen) -> Option<(usize, usize)> {
    let (_, v) = s.vars.first()?;
    text.find(v.as_str()).map(|at| (at, v.len()))
}

/// Where two joined attachment texts meet between byte `from` (the end of
/// the first's value) and `to` (the start of the second's): the start of
/// the `"\n\n"` that joins them. Of the places a `"\n\n"` starts
/// (overlapping ones too: `"\n\n\n"` is a text ending in a newline), the
/// ones that keep the most of `a`'s and `b`'s other values whole on their
/// side; of those the last that leaves the second a head of its own, else
/// the last (see the module docs).
fn cut_between(text: &str, from: usize, to: usize, a: &Seen, b: &Seen) -> usize {
    let gap = text.get(from..to).unwrap_or("");
    let cuts: Vec<usize> = (0..gap.len().saturating_sub(1)).filter(|&i| gap[i..].starts_with("\n\n")).collect();
    let whole = |c: usize| {
        let left = &gap[..c];
        let right = gap.get(c + 2..).unwrap_or("");
        a.vars.iter().skip(1).filter(|(_, v)| left.contains(v.as_str())).count()
            + b.vars.iter().skip(1).filter(|(_, v)| right.contains(v.as_str())).count()
    };
    let best = cuts.iter().map(|&c| whole(c)).max().unwrap_or(0);
    let kept: Vec<usize> = cuts.into_iter().filter(|&c| whole(c) == best).collect();
    let with_head = kept.iter().rev().find(|&&i| i + 2 < gap.len());
    from + with_head.or(kept.last()).copied().unwrap_or(gap.len())
}

/// The template of one attachment's captured `span`, whose longest value
/// is at `at` (`len` bytes); `None` when it does not render back.
fn template_of(span: &str, at: usize, len: usize, s: &Seen, role: &str) -> Option<AttachmentTemplate> {
    let (name, _) = s.vars.first()?;
    let templatize = |part: &str| {
        let mut part = part.to_string();
        for (k, v) in s.vars.iter().skip(1) {
            part = part.replace(v.as_str(), &format!("{{{{{k}}}}}"));
        }
        part
    };
    let head = templatize(span.get(..at)?);
    let tail = templatize(span.get(at + len..)?);
    let text = format!("{head}{{{{{name}}}}}{tail}");
    let bound: Vec<template::Var<'_>> = s.vars.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
    (template::render(&text, &bound) == span).then(|| AttachmentTemplate {
        kind: s.kind.clone(),
        when: s.when.clone(),
        role: role.to_string(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(vars: &[(&str, &str)]) -> Seen {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Seen { kind: String::new(), when: BTreeMap::new(), vars }
    }

    #[test]
    fn joined_system_texts_are_cut_where_the_second_has_a_head() {
        let none = seen(&[]);
        let t = "A:\nx-lines\n\nNote.\n\nThe skills:\n\n- s1\n\n<n>5</n>";
        let a = t.find("x-lines").unwrap() + "x-lines".len();
        let b = t.find("- s1").unwrap();
        assert_eq!(&t[cut_between(t, a, b, &none, &none)..], "\n\nThe skills:\n\n- s1\n\n<n>5</n>");
        let c = t.find("<n>").unwrap();
        assert_eq!(&t[cut_between(t, b + 4, c, &none, &none)..], "\n\n<n>5</n>");
        // 2.1.250: a rule text ending in a newline, then the token count.
        let t = "Contents of /p/api.md:\n\nAPI rules apply.\n\n\n<n>5</n>";
        let rule = seen(&[("path", "/p/api.md"), ("content.content", "API rules apply.\n")]);
        let from = t.find(":\n\n").unwrap();
        let to = t.find("<n>").unwrap();
        assert_eq!(&t[cut_between(t, from, to, &rule, &none)..], "\n\n<n>5</n>");
    }

    #[test]
    fn a_constant_text_is_the_one_turn_nothing_explains() {
        let s = |kind: &str, vars: &[(&str, &str)]| Seen { kind: kind.into(), ..seen(vars) };
        let seen = [s("skill_listing", &[("content", "- s: a skill")]), s("task_reminder", &[])];
        let texts = |t: &[&str]| t.iter().map(|t| ("system".to_string(), t.to_string())).collect::<Vec<_>>();
        let t = constant_text(&seen, &texts(&["Skills:\n- s: a skill", "Tasks unused.\n"]), &[]).unwrap();
        assert_eq!((t.kind.as_str(), t.text.as_str()), ("task_reminder", "Tasks unused.\n"));
        // Every turn explained (the kind sends nothing), or two candidates: nothing learned.
        assert!(constant_text(&seen, &texts(&["Skills:\n- s: a skill"]), &[]).is_none());
        assert!(constant_text(&seen, &texts(&["A", "B"]), &[]).is_none());
        // A turn a rendered attachment's text is in is explained by it.
        let rendered = ["Environment: x".to_string()];
        assert!(
            constant_text(&seen, &texts(&["Skills:\n- s: a skill", "Environment: x\n\nDate."]), &rendered).is_none()
        );
    }

    #[test]
    fn a_rendered_kind_takes_the_role_its_text_is_sent_with() {
        let line = |kind: &str| {
            format!(
                r#"{{"type":"attachment","attachment":{{"type":"{kind}"}},"rendered":[{{"content":"<system-reminder>\nToday is {kind}.\n</system-reminder>"}}]}}"#
            )
        };
        let held = vec![[line("date"), line("model"), line("env")].join("\n")];
        let texts = vec![
            ("system".to_string(), "Today is date.".to_string()),
            // 2.1.275 Sonnet 5: the wrapper kept inside the system turn.
            ("system".to_string(), "<system-reminder>\nToday is model.\n</system-reminder>".to_string()),
            ("user".to_string(), "<system-reminder>\nToday is env.\n</system-reminder>".to_string()),
        ];
        let got: Vec<(String, String)> =
            roles_of_rendered(&held, &texts).into_iter().map(|t| (t.kind, t.role)).collect();
        let want = [("date", "system"), ("model", "system-reminder"), ("env", "user")];
        assert_eq!(got, want.map(|(k, r)| (k.to_string(), r.to_string())));
    }

    #[test]
    fn learned_from_a_capture_and_its_transcript() {
        let held = vec![
            [
                r#"{"type":"attachment","attachment":{"type":"agent_listing_delta","addedLines":["- a: one agent","- b: another"],"isInitial":true}}"#,
                r#"{"type":"attachment","attachment":{"type":"skill_listing","content":"- s: a skill here"}}"#,
                r#"{"type":"attachment","attachment":{"type":"nested_memory","path":"/p/rules/api.md","content":{"content":"API rules apply.\n"}}}"#,
            ]
            .join("\n"),
        ];
        let wire = vec![serde_json::json!({"body": {"messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "Agents:\n- a: one agent\n- b: another\n\nSkills:\n\n- s: a skill here"},
            {"role": "system", "content": [{"type": "text", "text": "Contents of /p/rules/api.md:\n\nAPI rules apply.\n"}]}
        ]}})];
        let got: Vec<(String, String, String)> =
            learn(&wire, &held).into_iter().map(|t| (t.kind, t.role, t.text)).collect();
        let want = [
            ("agent_listing_delta", "system", "Agents:\n{{addedLines}}"),
            ("skill_listing", "system", "Skills:\n\n{{content}}"),
            ("nested_memory", "system", "Contents of {{path}}:\n\n{{content.content}}"),
        ];
        let want: Vec<(String, String, String)> =
            want.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
        assert_eq!(got, want);
    }
}
