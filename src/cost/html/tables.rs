//! The closing sections: every session's row, and the diagnostics (at
//! most [`MAX_DIAGNOSTICS`] listed, the rest counted).
//!
//! Tables only, every string from the data escaped.

use super::MAX_DIAGNOSTICS;
use super::page::section;
use super::text::E;
use crate::cost::format::{int, opt_pct, pct, usd};
use crate::cost::modeled::CostReport;
use std::fmt::Write as _;

pub(super) fn sessions_table(o: &mut String, r: &CostReport) {
    section(o, "sessions", "Sessions");
    if r.sessions.is_empty() {
        o.push_str("<p>No sessions.</p>\n</section>\n");
        return;
    }
    o.push_str(
        "<div class=\"scroll\"><table id=\"sessions-table\"><thead><tr><th class=\"t\">Session (first prompt; id, start)</th><th class=\"t\">Project</th><th>Requests</th>\
         <th class=\"t\">Assembled by</th><th>Recorded USD</th><th>Modeled USD</th><th>Recorded hit ratio</th><th>Modeled hit ratio</th></tr></thead>\n<tbody>\n",
    );
    for s in &r.sessions {
        let by = match (s.by_pipeline, s.unseen_prompt) {
            (false, _) => "records",
            (true, false) => "pipeline",
            (true, true) => "pipeline (unseen prompt)",
        };
        w!(
            o,
            "<tr id=\"{}\"><td class=\"t\">{}<div class=\"mono sub\" title=\"{}\">{}</div></td><td class=\"t\">{}</td><td>{}</td><td class=\"t nw\">{by}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            E(&session_anchor(&s.session_id, &s.project)),
            E(s.title.as_deref().unwrap_or("(no prompt typed)")),
            E(&s.session_id),
            E(&id_and_start(&s.session_id, s.started.as_deref())),
            E(&s.project),
            int(s.requests),
            usd(s.recorded_cost_usd),
            usd(s.modeled_cost_usd),
            opt_pct(s.recorded_hit_ratio),
            pct(s.modeled_hit_ratio)
        );
    }
    o.push_str("</tbody></table></div>\n</section>\n");
}

pub(super) fn diagnostics(o: &mut String, r: &CostReport) {
    section(o, "diagnostics", "Diagnostics");
    if r.diagnostics.is_empty() {
        o.push_str("<p>None.</p>\n</section>\n");
        return;
    }
    w!(
        o,
        "<details><summary>{} diagnostic{}</summary>\n<ul class=\"diag mono\">\n",
        int(r.diagnostics.len() as u64),
        if r.diagnostics.len() == 1 { "" } else { "s" }
    );
    for d in r.diagnostics.iter().take(MAX_DIAGNOSTICS) {
        w!(o, "<li>{}</li>\n", E(&d.to_string()));
    }
    if r.diagnostics.len() > MAX_DIAGNOSTICS {
        w!(o, "<li>… and {} more</li>\n", int((r.diagnostics.len() - MAX_DIAGNOSTICS) as u64));
    }
    o.push_str("</ul>\n</details>\n</section>\n");
}

/// The id of a session's row in the sessions table (what other sections
/// link to).
pub(super) fn session_anchor(session_id: &str, project: &str) -> String {
    format!("session-{:016x}", xxhash_rust::xxh3::xxh3_64(format!("{project}/{session_id}").as_bytes()))
}

/// A session's short id and start (date and minute, UTC) under its name.
pub(super) fn id_and_start(session_id: &str, started: Option<&str>) -> String {
    let id = session_id.get(..8).unwrap_or(session_id);
    match started.and_then(|t| t.get(..16)) {
        Some(t) => format!("{id} · {}", t.replacen('T', " ", 1)),
        None => id.to_string(),
    }
}
