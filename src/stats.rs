//! `ctxasm stats`: counts over a corpus, and its diagnostics.
//!
//! Definitions (the fixtures' independent script follows the same rules):
//! `files` transcript files read; `subagent_files` those named `agent-*`;
//! `sessions` the others; `lines` non-blank lines; `bad_lines` lines that gave
//! no entry; `entries` entries by `type`; `attachments` attachment entries by
//! `attachment.type`; `assistant_messages` distinct `message.id` over all
//! assistant lines (a line without an id counts as one message);
//! `recorded_requests` `api-request` entries; `diagnostics` sorted by file,
//! line and kind.

use crate::corpus::{RunOptions, Session, for_each_session};
use crate::diag::Diagnostic;
use crate::input::discover::Discovery;
use crate::model::entry::EntryKind;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// The `stats --json` object.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub files: u64,
    pub sessions: u64,
    pub subagent_files: u64,
    pub lines: u64,
    pub bad_lines: u64,
    pub entries: BTreeMap<String, u64>,
    pub attachments: BTreeMap<String, u64>,
    pub assistant_messages: u64,
    pub recorded_requests: u64,
    pub diagnostics: Vec<Diagnostic>,
    /// Bytes read (shown in the table, not part of the JSON object).
    #[serde(skip)]
    pub bytes: u64,
}

/// What one session contributes.
#[derive(Default)]
struct Partial {
    files: u64,
    subagent_files: u64,
    lines: u64,
    bad_lines: u64,
    bytes: u64,
    entries: Vec<(String, u64)>,
    attachments: Vec<(String, u64)>,
    /// xxh3-128 of each assistant line's `message.id`.
    message_ids: Vec<u128>,
    idless_messages: u64,
    recorded_requests: u64,
    diagnostics: Vec<Diagnostic>,
}

fn bump_count<'a>(counts: &mut Vec<(&'a str, u64)>, key: &'a str) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key, 1)),
    }
}

fn count_session(s: &Session<'_, '_>) -> Partial {
    let mut p = Partial::default();
    let mut types: Vec<(&str, u64)> = Vec::new();
    let mut atts: Vec<(&str, u64)> = Vec::new();
    for f in s.files() {
        p.files += 1;
        p.subagent_files += u64::from(f.file.is_subagent());
        p.lines += u64::from(f.parsed.lines);
        p.bad_lines += u64::from(f.parsed.bad_lines);
        p.bytes += f.parsed.bytes;
        p.diagnostics.extend(f.parsed.diagnostics.iter().cloned());
        for e in &f.parsed.entries {
            bump_count(&mut types, e.type_name);
            match &e.kind {
                EntryKind::Attachment(a) => {
                    if let Some(t) = a.attachment_type {
                        bump_count(&mut atts, t);
                    }
                }
                EntryKind::Assistant(a) => match a.message_id {
                    Some(id) => p.message_ids.push(xxhash_rust::xxh3::xxh3_128(id.as_bytes())),
                    None => p.idless_messages += 1,
                },
                EntryKind::ApiRequest(_) => p.recorded_requests += 1,
                _ => {}
            }
        }
    }
    p.entries = types.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    p.attachments = atts.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    p
}

/// Count everything in `disc`.
pub fn collect(disc: &Discovery, opts: &RunOptions<'_>) -> Stats {
    let partials = for_each_session(disc, opts, count_session);
    let mut st = Stats { diagnostics: disc.diagnostics.clone(), ..Stats::default() };
    let mut ids: HashSet<u128> = HashSet::new();
    for (group, partial) in disc.groups.iter().zip(partials) {
        let p = match partial {
            Ok(p) => p,
            Err(diag) => {
                // The session could not be read: still count its files.
                let files: Vec<usize> = group.files().collect();
                Partial {
                    files: files.len() as u64,
                    subagent_files: files.iter().filter(|&&i| disc.files[i].is_subagent()).count() as u64,
                    diagnostics: vec![diag],
                    ..Partial::default()
                }
            }
        };
        st.files += p.files;
        st.subagent_files += p.subagent_files;
        st.sessions += p.files - p.subagent_files;
        st.lines += p.lines;
        st.bad_lines += p.bad_lines;
        st.bytes += p.bytes;
        for (k, n) in p.entries {
            *st.entries.entry(k).or_default() += n;
        }
        for (k, n) in p.attachments {
            *st.attachments.entry(k).or_default() += n;
        }
        ids.extend(p.message_ids);
        st.assistant_messages += p.idless_messages;
        st.recorded_requests += p.recorded_requests;
        st.diagnostics.extend(p.diagnostics);
    }
    st.assistant_messages += ids.len() as u64;
    st.diagnostics.sort_by(|a, b| (&a.file, a.line, a.kind).cmp(&(&b.file, b.line, b.kind)));
    st
}

/// The human table.
pub fn render_table(st: &Stats, elapsed_secs: f64, max_diagnostics: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let mb = st.bytes as f64 / 1e6;
    let _ = writeln!(o, "{:<20}{:>12}   ({mb:.1} MB in {elapsed_secs:.2} s)", "files", st.files);
    for (name, n) in [
        ("sessions", st.sessions),
        ("subagent files", st.subagent_files),
        ("lines", st.lines),
        ("bad lines", st.bad_lines),
        ("assistant messages", st.assistant_messages),
        ("recorded requests", st.recorded_requests),
        ("diagnostics", st.diagnostics.len() as u64),
    ] {
        let _ = writeln!(o, "{name:<20}{n:>12}");
    }
    let mut section = |title: &str, map: &BTreeMap<String, u64>| {
        if map.is_empty() {
            return;
        }
        let _ = writeln!(o, "\n{title}");
        let mut rows: Vec<(&String, &u64)> = map.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (k, n) in rows {
            let _ = writeln!(o, "  {k:<30}{n:>10}");
        }
    };
    section("entries by type", &st.entries);
    section("attachments by type", &st.attachments);
    if !st.diagnostics.is_empty() {
        let shown = st.diagnostics.len().min(max_diagnostics);
        let _ = writeln!(o, "\ndiagnostics ({} of {}; --json lists all)", shown, st.diagnostics.len());
        for d in st.diagnostics.iter().take(shown) {
            let _ = writeln!(o, "  {d}");
        }
    }
    o
}
