//! The page skeleton and its summary section: the `<head>` (inline CSS,
//! the `Content-Security-Policy` that forbids every fetch), section and
//! table-row helpers, and the summary tables (totals, accuracy, estimator,
//! scope).
//!
//! No charts here (those are `chart` and the chart modules).

use super::text::E;
use super::{finite, ratio, totals_hit};
use crate::cost::format::{fixed, int, opt_pct, pause, pct, signed_pct, signed_usd, usd};
use crate::cost::modeled::CostReport;
use crate::cost::usage::Unpriced;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(super) const CSS: &str = "\
:root{--rec:#d9772b;--mod:#2f6db3;--fg:#1d1d1f;--mute:#666;--line:#ddd;--bg:#fff;--alt:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:980px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.note{color:var(--mute);margin:4px 0 10px}.sub{color:var(--mute)}#sessions-table td.t{overflow-wrap:anywhere}p.lead{font-size:17px;margin:6px 0 10px}
nav a{margin-right:12px;color:var(--mod)}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
td.t,th.t{text-align:left}
thead th{background:var(--alt);font-weight:600}
tbody tr:nth-child(even){background:var(--alt)}
.grid{display:flex;flex-wrap:wrap;gap:0 32px}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}\ntd.mono,td.nw{white-space:nowrap}\n.scroll{overflow-x:auto}
figure{margin:8px 0 16px}figcaption{color:var(--mute);font-size:13px}
svg{max-width:100%;height:auto;font-family:inherit}
svg text{fill:var(--fg);font-size:11px}
svg .ax{stroke:#999;stroke-width:1}svg .gr{stroke:#e6e6e6;stroke-width:1}
svg .lbl{fill:var(--mute)}
details{margin:8px 0}ul.diag{font-size:12px;max-height:420px;overflow:auto}
";

pub(super) fn head(o: &mut String) {
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str("<meta name=\"generator\" content=\"ctxasm cost --html\">\n");
    o.push_str("<title>ctxasm cost report</title>\n<style>\n");
    o.push_str(CSS);
    o.push_str("</style>\n</head>\n<body>\n<main>\n<h1>ctxasm cost report</h1>\n");
    o.push_str(
        "<p class=\"note\">Recorded usage from the transcripts against the prompt-cache simulator's model \
         of the assembled requests.</p>\n",
    );
}

pub(super) fn section(o: &mut String, id: &str, title: &str) {
    w!(o, "<section id=\"{id}\">\n<h2>{}</h2>\n", E(title));
}

pub(super) fn row(o: &mut String, cells: &[&str]) {
    o.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        w!(o, "<{tag}>{}</{tag}>", E(c));
    }
    o.push_str("</tr>\n");
}

/// The bill at a glance, first on the page: what was spent, over which
/// days, by model, month and project (the recorded usage).
pub(super) fn headline(o: &mut String, r: &CostReport) {
    section(o, "bill", "The bill");
    let (t, b) = (&r.recorded, &r.bill);
    if t.requests == 0 {
        o.push_str("<p class=\"lead\">No recorded usage in these transcripts: the figures below are the model's only.</p>\n</section>\n");
        return;
    }
    let period = match (&b.first_day, &b.last_day) {
        (Some(a), Some(z)) if a == z => format!(" on {a}"),
        (Some(a), Some(z)) => format!(" from {a} to {z}"),
        _ => String::new(),
    };
    w!(
        o,
        "<p class=\"lead\">Spent <b>{}</b> on {} request{}{} (the recorded bill).</p>\n<div class=\"grid\">\n",
        E(&usd(t.cost_usd)),
        int(t.requests),
        if t.requests == 1 { "" } else { "s" },
        E(&period)
    );
    // By cost, the largest first; `n` rows, the rest summed.
    let mut by_cost = |id: &str, title: &str, m: &BTreeMap<String, f64>, n: usize| {
        let mut v: Vec<(&String, f64)> = m.iter().map(|(k, c)| (k, *c)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        w!(o, "<div>\n<h3>{}</h3>\n<table id=\"{id}\"><tbody>\n", E(title));
        for (k, c) in v.iter().take(n) {
            row(o, &[k, &usd(*c)]);
        }
        if v.len() > n {
            let rest: f64 = v[n..].iter().map(|(_, c)| c).sum();
            row(o, &[&format!("{} more", v.len() - n), &usd(rest)]);
        }
        o.push_str("</tbody></table>\n</div>\n");
    };
    by_cost("bill-by-model", "By model", &b.by_model, 8);
    by_cost("bill-by-project", "By project", &b.by_project, 8);
    o.push_str("<div>\n<h3>By month (UTC)</h3>\n<table id=\"bill-by-month\"><tbody>\n");
    for (m, c) in &b.by_month {
        row(o, &[m, &usd(*c)]);
    }
    o.push_str("</tbody></table>\n</div>\n</div>\n");
    w!(
        o,
        "<p class=\"note\">Cache writes: {} tokens at the 5-minute TTL, {} at 1 hour. Per day: <code>ctxasm cost daily</code>; \
         per 5-hour billing block: <code>ctxasm cost blocks</code>.</p>\n",
        int(b.cache_creation.ephemeral_5m_input_tokens),
        int(b.cache_creation.ephemeral_1h_input_tokens)
    );
    context(o, r);
    ttl_misses(o, r);
    o.push_str("</section>\n");
}

/// What the requests carried, by part (the `/context` view, summed).
fn context(o: &mut String, r: &CostReport) {
    let total = r.context.total();
    if total == 0 {
        return;
    }
    w!(
        o,
        "<h3>What the requests carried</h3>\n<p>{} input tokens sent (read from the cache, written to it, or \
         uncached), by part; <code>--per-request</code> has each request's.</p>\n<table id=\"context\"><thead><tr>\
         <th>Part</th><th>Tokens</th><th>Share</th></tr></thead><tbody>\n",
        int(total)
    );
    for (name, n) in r.context.shares() {
        row(o, &[name, &int(n), &pct(n as f64 / total as f64)]);
    }
    o.push_str("</tbody></table>\n");
}

/// The sessions whose cache expired during pauses (the ten that paid most).
fn ttl_misses(o: &mut String, r: &CostReport) {
    let m = &r.ttl_misses;
    if m.requests == 0 {
        return;
    }
    let share = if r.recorded.cost_usd > 0.0 { 100.0 * m.extra_cost_usd / r.recorded.cost_usd } else { 0.0 };
    w!(
        o,
        "<h3>Cache expired during pauses</h3>\n<p>{} request{} wrote again {} tokens their session had cached, after a \
         pause longer than the cache's lifetime: <b>{}</b> more than reading them ({}% of the bill).</p>\n",
        int(m.requests),
        if m.requests == 1 { "" } else { "s" },
        int(m.tokens_rewritten),
        usd(m.extra_cost_usd),
        fixed(share, 1)
    );
    o.push_str(
        "<table id=\"ttl-misses\"><thead><tr><th>Project</th><th class=\"t\">Session</th><th>Requests</th>\
         <th>Pauses</th><th>Tokens written again</th><th>Extra USD</th></tr></thead><tbody>\n",
    );
    for s in m.sessions.iter().take(10) {
        let pauses = if s.shortest_pause_s / 60 == s.longest_pause_s / 60 {
            pause(s.longest_pause_s)
        } else {
            format!("{} – {}", pause(s.shortest_pause_s), pause(s.longest_pause_s))
        };
        let name = r
            .sessions
            .iter()
            .find(|c| c.session_id == s.session_id && c.project == s.project)
            .and_then(|c| c.title.clone())
            .unwrap_or_else(|| s.session_id.clone());
        w!(
            o,
            "<tr><th>{}</th><td class=\"t\"><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            E(&s.project),
            E(&super::tables::session_anchor(&s.session_id, &s.project)),
            E(&name),
            int(s.requests),
            E(&pauses),
            int(s.tokens_rewritten),
            E(&usd(s.extra_cost_usd))
        );
    }
    o.push_str("</tbody></table>\n");
}

pub(super) fn summary(o: &mut String, r: &CostReport) {
    section(o, "summary", "Summary");
    // The bill's requests beside the model's prediction of the same ones.
    let (rec, m) = (&r.recorded, if r.modeled_compared.requests > 0 { &r.modeled_compared } else { &r.modeled });
    o.push_str("<table id=\"summary-totals\">\n<thead><tr><th></th><th>Recorded</th><th>Modeled</th><th>Modeled − recorded</th></tr></thead>\n<tbody>\n");
    let delta = |a: u64, b: u64| {
        if b >= a { format!("+{}", int(b - a)) } else { format!("-{}", int(a - b)) }
    };
    let lines: [(&str, u64, u64); 5] = [
        ("Requests", rec.requests, m.requests),
        ("Input tokens", rec.input_tokens, m.input_tokens),
        ("Cache write tokens", rec.cache_creation_input_tokens, m.cache_creation_input_tokens),
        ("Cache read tokens", rec.cache_read_input_tokens, m.cache_read_input_tokens),
        ("Output tokens", rec.output_tokens, m.output_tokens),
    ];
    for (label, a, b) in lines {
        row(o, &[label, &int(a), &int(b), &delta(a, b)]);
    }
    row(
        o,
        &[
            "Cache write 5m / 1h",
            &format!(
                "{} / {}",
                int(r.bill.cache_creation.ephemeral_5m_input_tokens),
                int(r.bill.cache_creation.ephemeral_1h_input_tokens)
            ),
            &format!(
                "{} / {}",
                int(r.modeled_cache_creation.ephemeral_5m_input_tokens),
                int(r.modeled_cache_creation.ephemeral_1h_input_tokens)
            ),
            "",
        ],
    );
    row(o, &["Cache hit ratio", &opt_pct(totals_hit(rec)), &opt_pct(totals_hit(m)), ""]);
    row(o, &["Cost (USD)", &usd(rec.cost_usd), &usd(m.cost_usd), &signed_usd(m.cost_usd - rec.cost_usd)]);
    let unpriced = |l: &[Unpriced]| l.iter().map(|u| u.requests).sum::<u64>();
    let (ur, um) = (unpriced(&r.recorded_unpriced), unpriced(&r.modeled_unpriced));
    if ur + um > 0 {
        row(o, &["Unpriced requests (not in the cost)", &int(ur), &int(um), ""]);
    }
    o.push_str("</tbody>\n</table>\n");
    unpriced_models(o, r);
    o.push_str(
        "<p class=\"note\">Recorded: every request with usage in the transcripts, each once (the bill). Modeled: \
         the same requests through the cache simulator; the accuracy compares exactly these.</p>\n",
    );
    let a = &r.accuracy;
    if r.modeled.requests > m.requests {
        w!(
            o,
            "<p class=\"note\">Not in the bill: {} modeled request{} without recorded usage and {} cop{} of \
             requests another session file holds; all {} modeled requests: {} (the what-ifs' baseline).</p>\n",
            int(a.requests_without_usage),
            if a.requests_without_usage == 1 { "" } else { "s" },
            int(a.requests_copied),
            if a.requests_copied == 1 { "y" } else { "ies" },
            int(r.modeled.requests),
            usd(r.modeled.cost_usd)
        );
    }
    o.push_str("<div class=\"grid\">\n<div>\n<h3>Accuracy</h3>\n<table id=\"summary-accuracy\"><tbody>\n");
    summary_accuracy(o, r);
    o.push_str("</tbody></table>\n</div>\n<div>\n<h3>Estimator</h3>\n<table id=\"summary-estimator\"><tbody>\n");
    summary_estimator(o, r);
    o.push_str("</tbody></table>\n</div>\n<div>\n<h3>Scope</h3>\n<table id=\"summary-scope\"><tbody>\n");
    row(o, &["Price table", &r.pricing.table]);
    row(o, &["Pricing source", &r.pricing.source]);
    row(o, &["Pricing date", &r.pricing.date]);
    row(o, &["Account scope", &r.account]);
    row(o, &["Sessions", &int(r.sessions.len() as u64)]);
    row(o, &["Rejected requests (> 4 breakpoints)", &int(r.rejected_requests)]);
    row(o, &["Diagnostics", &int(r.diagnostics.len() as u64)]);
    o.push_str("</tbody></table>\n</div>\n</div>\n");
    worst_requests(o, r);
    o.push_str("</section>\n");
}

/// The requests where the model and the bill disagree most, each linked to
/// its session's row.
fn worst_requests(o: &mut String, r: &CostReport) {
    if r.worst_requests.is_empty() {
        return;
    }
    o.push_str(
        "<h3>Where the model and the bill disagree most</h3>\n<table id=\"worst-requests\"><thead><tr><th>When (UTC)</th>\
         <th class=\"t\">Session</th><th>Read / write, recorded</th><th>Read / write, modeled</th><th>Recorded USD</th>\
         <th>Modeled − recorded</th></tr></thead><tbody>\n",
    );
    for w in r.worst_requests.iter().take(10) {
        let name = r
            .sessions
            .iter()
            .find(|c| c.session_id == w.session_id && c.project == w.project)
            .and_then(|c| c.title.clone())
            .unwrap_or_else(|| w.session_id.clone());
        w!(
            o,
            "<tr><th>{}</th><td class=\"t\"><a href=\"#{}\" title=\"{}\">{}</a></td><td>{} / {}</td><td>{} / {}</td><td>{}</td><td>{}</td></tr>\n",
            E(&w.at.get(..16).unwrap_or(&w.at).replacen('T', " ", 1)),
            E(&super::tables::session_anchor(&w.session_id, &w.project)),
            E(&w.custom_id),
            E(&name),
            int(w.recorded.cache_read),
            int(w.recorded.cache_write()),
            int(w.modeled.cache_read),
            int(w.modeled.cache_write()),
            E(&usd(w.recorded_cost_usd)),
            E(&signed_usd(w.delta_usd()))
        );
    }
    o.push_str("</tbody></table>\n");
}

/// The rows of the accuracy table.
fn summary_accuracy(o: &mut String, r: &CostReport) {
    let a = &r.accuracy;
    row(o, &["Requests compared", &int(a.requests_compared)]);
    row(o, &["Requests without usage", &int(a.requests_without_usage)]);
    row(o, &["Recorded cost (compared)", &usd(a.recorded_cost_usd)]);
    row(o, &["Modeled cost (compared)", &usd(a.modeled_cost_usd)]);
    row(o, &["Cost error", &signed_pct(a.cost_error_pct)]);
    row(
        o,
        &[
            "Cache read: median / p90 relative error",
            &format!("{} / {}", pct(a.cache_read.median_relative), pct(a.cache_read.p90_relative)),
        ],
    );
    row(
        o,
        &[
            "Cache read: median / p90 error (tokens)",
            &format!(
                "{} / {}",
                fixed(finite(a.cache_read.median_abs_tokens), 0),
                fixed(finite(a.cache_read.p90_abs_tokens), 0)
            ),
        ],
    );
    row(
        o,
        &[
            "Cache write: median / p90 relative error",
            &format!("{} / {}", pct(a.cache_write.median_relative), pct(a.cache_write.p90_relative)),
        ],
    );
    row(
        o,
        &[
            "Cache write: median / p90 error (tokens)",
            &format!(
                "{} / {}",
                fixed(finite(a.cache_write.median_abs_tokens), 0),
                fixed(finite(a.cache_write.p90_abs_tokens), 0)
            ),
        ],
    );
    let h = &a.hits;
    let n = h.both + h.recorded_only + h.modeled_only + h.neither;
    row(o, &["Cache hit agreement", &opt_pct(ratio(h.both + h.neither, n))]);
    row(
        o,
        &[
            "Hits: both / recorded only / modeled only / neither",
            &format!("{} / {} / {} / {}", int(h.both), int(h.recorded_only), int(h.modeled_only), int(h.neither)),
        ],
    );
}

/// The models without a price and their requests, recorded and modeled
/// (nothing when every request is priced).
fn unpriced_models(o: &mut String, r: &CostReport) {
    if r.recorded_unpriced.is_empty() && r.modeled_unpriced.is_empty() {
        return;
    }
    w!(
        o,
        "<p class=\"note\" id=\"unpriced-note\">No price in {} for these models: their requests are counted \
         in the tokens above and left out of the cost.</p>\n<table id=\"unpriced-models\">\n<thead><tr><th>Model</th>\
         <th>Recorded requests</th><th>Recorded tokens</th><th>Modeled requests</th><th>Modeled tokens</th></tr></thead>\n<tbody>\n",
        E(&r.pricing.table)
    );
    let mut by_model: BTreeMap<&str, [(u64, u64); 2]> = BTreeMap::new();
    for (i, list) in [&r.recorded_unpriced, &r.modeled_unpriced].into_iter().enumerate() {
        for u in list {
            by_model.entry(&u.model).or_default()[i] = (u.requests, u.tokens);
        }
    }
    for (model, [(rr, rt), (mr, mt)]) in by_model {
        row(o, &[model, &int(rr), &int(rt), &int(mr), &int(mt)]);
    }
    o.push_str("</tbody>\n</table>\n");
}

/// The rows of the estimator table.
fn summary_estimator(o: &mut String, r: &CostReport) {
    let e = &r.estimator;
    row(o, &["Samples", &int(e.samples)]);
    row(
        o,
        &["Median / p90 relative error", &format!("{} / {}", pct(e.median_relative_error), pct(e.p90_relative_error))],
    );
    row(o, &["Blocks pinned / estimated", &format!("{} / {}", int(e.blocks_pinned), int(e.blocks_estimated))]);
    row(o, &["Inconsistent requests", &int(e.inconsistent_requests)]);
    row(o, &["Unseen prefix median (tokens)", &e.unseen_prefix_median.map_or_else(|| "–".into(), int)]);
    for (kind, v) in &e.bytes_per_token {
        let v = if v.is_finite() { fixed(*v, 2) } else { "n/a".into() };
        row(o, &[&format!("Bytes / token: {kind}"), &v]);
    }
}
