//! The reports of `ctxasm cost`: terminal tables and the HTML page.
//!
//! Returns strings (the CLI prints them); the formatting of numbers is
//! `cost::format`'s, the page is `cost::html`'s.

use super::format::{count, pause, plain_pct, plain_signed_pct, plain_signed_usd, plain_tokens};
use super::modeled::{Accuracy, CostReport};
use super::usage::{PricingInfo, RecordedReport, Totals, Unpriced, UsageSum, UsageView, ViewKind, ViewRow};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `cost --recorded-only`: the recorded totals.
pub fn recorded_table(report: &RecordedReport) -> String {
    let t = &report.totals;
    let mut o = String::new();
    let _ = writeln!(o, "{:<28}{:>16}", "requests", t.requests);
    let _ = writeln!(o, "{:<28}{:>16}", "input tokens", t.input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "cache write tokens", t.cache_creation_input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "cache read tokens", t.cache_read_input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "output tokens", t.output_tokens);
    let _ = writeln!(o, "{:<28}{:>16.4}", "cost (USD)", t.cost_usd);
    let _ = writeln!(o, "{:<28}{:>16}", "unpriced requests", report.unpriced_requests);
    if !report.unpriced.is_empty() {
        let _ = writeln!(o, "{}", unpriced_heading(&report.pricing));
        for u in &report.unpriced {
            let _ = writeln!(o, "  {:<30} {}", u.model, requests_and_tokens(u));
        }
    }
    let _ = writeln!(o, "{}", prices_line(&report.pricing));
    o
}

/// A view of the bill (`cost daily|monthly|session|blocks`) as a table:
/// a row per period, session or block (`desc`: newest first), each model's
/// own row under it with `breakdown`, then the total and the prices. Token
/// counts with thousands separators, cost in USD to the cent.
pub fn view_table(view: &UsageView, breakdown: bool, desc: bool) -> String {
    let first = match view.view {
        ViewKind::Daily => "date",
        ViewKind::Monthly => "month",
        ViewKind::Session => "session",
        ViewKind::Blocks => "block (start, UTC)",
    };
    let mut o = String::new();
    let mut scope = vec![format!("time zone {}", view.timezone)];
    if let Some(s) = &view.since {
        scope.push(format!("since {s}"));
    }
    if let Some(u) = &view.until {
        scope.push(format!("until {u}"));
    }
    if let Some(p) = &view.project {
        scope.push(format!("project {p}"));
    }
    let _ = writeln!(o, "recorded usage, {} ({})", first_word(view.view), scope.join(", "));
    let model_rows = |r: &ViewRow| breakdown && r.by_model.len() > 1;
    let wide = view
        .rows
        .iter()
        .flat_map(|r| {
            let models = r.by_model.keys().filter(|_| model_rows(r)).map(|m| m.chars().count() + 2);
            std::iter::once(row_label(view.view, r).chars().count()).chain(models)
        })
        .max()
        .unwrap_or(0)
        .max(first.len());
    let _ = writeln!(
        o,
        "{first:<wide$}  {:>9} {:>13} {:>11} {:>11} {:>15} {:>11}  models",
        "requests", "input", "output", "cache write", "cache read", "cost (USD)"
    );
    let line = |o: &mut String, label: &str, u: &UsageSum, models: &str| {
        let t = &u.totals;
        let row = format!(
            "{label:<wide$}  {:>9} {:>13} {:>11} {:>11} {:>15} {:>11}  {models}",
            super::format::int(t.requests),
            super::format::int(t.input_tokens),
            super::format::int(t.output_tokens),
            super::format::int(t.cache_creation_input_tokens),
            super::format::int(t.cache_read_input_tokens),
            format!("${:.2}", t.cost_usd),
        );
        let _ = writeln!(o, "{}", row.trim_end());
    };
    let rows: Vec<&ViewRow> = if desc { view.rows.iter().rev().collect() } else { view.rows.iter().collect() };
    for r in rows {
        line(&mut o, &row_label(view.view, r), &r.usage, &r.models.join(", "));
        if model_rows(r) {
            for (model, u) in &r.by_model {
                line(&mut o, &format!("  {model}"), u, "");
            }
        }
    }
    line(&mut o, "total", &view.total, "");
    if view.without_timestamp > 0 {
        let _ = writeln!(o, "{} without a timestamp left out (no date)", count(view.without_timestamp, "request"));
    }
    let unpriced = view.total.unpriced_requests;
    if unpriced > 0 {
        let _ = writeln!(o, "{} of a model without a price: not in the cost", count(unpriced, "request"));
    }
    let _ = writeln!(o, "{}", prices_line(&view.pricing));
    o
}

fn first_word(kind: ViewKind) -> &'static str {
    match kind {
        ViewKind::Daily => "per day",
        ViewKind::Monthly => "per month",
        ViewKind::Session => "per session",
        ViewKind::Blocks => "per 5-hour billing block",
    }
}

/// A row's first column: the key; a session with its project; a block with
/// its last request (or `gap until …`, or `active`).
fn row_label(kind: ViewKind, r: &ViewRow) -> String {
    match (kind, &r.block) {
        (ViewKind::Session, _) => format!("{} {}", r.project.as_deref().unwrap_or(""), r.key),
        (ViewKind::Blocks, Some(b)) if b.gap => format!("gap {} .. {}", short_instant(&b.start), short_instant(&b.end)),
        (ViewKind::Blocks, Some(b)) => {
            let last = b.actual_end.as_deref().map(short_instant).unwrap_or_default();
            format!("{} .. {last}{}", short_instant(&b.start), if b.active { " (active)" } else { "" })
        }
        _ => r.key.clone(),
    }
}

/// `2025-06-14T23:00:00.000Z` as `2025-06-14 23:00`.
fn short_instant(s: &str) -> String {
    let s = s.strip_prefix("gap-").unwrap_or(s);
    match (s.get(..10), s.get(11..16)) {
        (Some(d), Some(t)) => format!("{d} {t}"),
        _ => s.to_string(),
    }
}

/// `prices: SOURCE (table dated DATE)`; the table's name when the file
/// gives no source.
fn prices_line(p: &PricingInfo) -> String {
    let mut o = format!("prices: {}", if p.source.is_empty() { &p.table } else { &p.source });
    if !p.date.is_empty() {
        let _ = write!(o, " (table dated {})", p.date);
    }
    o
}

/// The line above the list of unpriced models.
fn unpriced_heading(p: &PricingInfo) -> String {
    format!("unpriced models (no price in {}; not in the cost above):", p.table)
}

/// `3 requests, 12345 tokens`.
fn requests_and_tokens(u: &Unpriced) -> String {
    format!("{}, {}", count(u.requests, "request"), count(u.tokens, "token"))
}

/// Requests in a list of unpriced models.
fn unpriced_requests(list: &[Unpriced]) -> u64 {
    list.iter().map(|u| u.requests).sum()
}

/// The bill at a glance, the first lines of `cost`: what was spent, over
/// which days, on which models and projects (the largest first), per month.
fn headline_lines(o: &mut String, r: &CostReport) {
    let (t, b) = (&r.recorded, &r.bill);
    if t.requests == 0 {
        let _ = writeln!(o, "no recorded usage in these transcripts: the figures below are the model's only");
        let _ = writeln!(o);
        return;
    }
    let period = match (&b.first_day, &b.last_day) {
        (Some(a), Some(z)) if a == z => format!(" on {a}"),
        (Some(a), Some(z)) => format!(" from {a} to {z}"),
        _ => String::new(),
    };
    let _ = writeln!(o, "spent {:.2} USD on {}{period} (the recorded bill)", t.cost_usd, count(t.requests, "request"));
    // The largest `n` of `m` by cost, the rest summed.
    let top = |m: &BTreeMap<String, f64>, n: usize| {
        let mut v: Vec<(&String, f64)> = m.iter().map(|(k, c)| (k, *c)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let mut parts: Vec<String> = v.iter().take(n).map(|(k, c)| format!("{k} {c:.2}")).collect();
        if v.len() > n {
            let rest: f64 = v[n..].iter().map(|(_, c)| c).sum();
            parts.push(format!("{} more {rest:.2}", v.len() - n));
        }
        parts.join(", ")
    };
    let _ = writeln!(o, "  by model     {}", top(&b.by_model, 3));
    let _ = writeln!(o, "  by project   {}", top(&b.by_project, 3));
    // Months in order, the last six.
    let months: Vec<String> = b.by_month.iter().map(|(m, c)| format!("{m} {c:.2}")).collect();
    let skip = months.len().saturating_sub(6);
    let earlier = if skip > 0 { format!("({skip} earlier) ") } else { String::new() };
    let _ = writeln!(o, "  by month     {earlier}{}", months[skip..].join(", "));
    let cc = &b.cache_creation;
    let _ = writeln!(
        o,
        "  cache writes {} tokens at 5 minutes, {} at 1 hour",
        cc.ephemeral_5m_input_tokens, cc.ephemeral_1h_input_tokens
    );
    let total = r.context.total();
    if total > 0 {
        let parts: Vec<String> = r
            .context
            .shares()
            .iter()
            .map(|(name, n)| format!("{name} {:.0}%", 100.0 * *n as f64 / total as f64))
            .collect();
        let _ = writeln!(
            o,
            "  the requests carried {total} input tokens: {} (each request's: --per-request)",
            parts.join(", ")
        );
    }
    let m = &r.ttl_misses;
    if m.requests > 0 {
        let (short, long) =
            m.sessions.iter().fold((u64::MAX, 0), |(a, b), s| (a.min(s.shortest_pause_s), b.max(s.longest_pause_s)));
        let share = if t.cost_usd > 0.0 { 100.0 * m.extra_cost_usd / t.cost_usd } else { 0.0 };
        let pauses = match (pause(short), pause(long)) {
            (a, b) if a == b && m.requests == 1 => format!("a pause of {a}"),
            (a, b) if a == b => format!("pauses of {a}"),
            (a, b) => format!("pauses of {a} to {b}"),
        };
        let _ = writeln!(
            o,
            "  cache expired during pauses: {} wrote again {} tokens after {pauses}: {:.2} USD more than reading \
             them ({share:.1}% of the bill)",
            count(m.requests, "request"),
            m.tokens_rewritten,
            m.extra_cost_usd
        );
        for s in m.sessions.iter().take(3) {
            let _ = writeln!(o, "    {:>8.2} USD  {}", s.extra_cost_usd, session_name(r, &s.session_id, &s.project));
        }
    }
    let _ = writeln!(o);
}

/// The requests where the model and the bill disagree most (five; the
/// JSON has twenty).
fn worst_lines(o: &mut String, r: &CostReport) {
    if r.worst_requests.is_empty() {
        return;
    }
    let _ = writeln!(o, "  largest disagreements (modeled − recorded USD; --json lists {}):", r.worst_requests.len());
    for w in r.worst_requests.iter().take(5) {
        let _ = writeln!(
            o,
            "    {:+.4}  {}  read {} write {} recorded, read {} write {} modeled  {}",
            w.delta_usd(),
            w.at.get(..16).unwrap_or(&w.at).replacen('T', " ", 1),
            w.recorded.cache_read,
            w.recorded.cache_write(),
            w.modeled.cache_read,
            w.modeled.cache_write(),
            session_name(r, &w.session_id, &w.project)
        );
    }
}

/// A session as a person knows it: the start of its first prompt (else
/// its short id) and its project.
fn session_name(r: &CostReport, session_id: &str, project: &str) -> String {
    let title =
        r.sessions.iter().find(|s| s.session_id == session_id && s.project == project).and_then(|s| s.title.as_deref());
    let short = match title {
        Some(t) if t.chars().count() > 40 => format!("\"{}…\"", t.chars().take(39).collect::<String>().trim_end()),
        Some(t) => format!("\"{t}\""),
        None => session_id.get(..8).unwrap_or(session_id).to_string(),
    };
    format!("{short} ({project})")
}

/// `cost`: the bill at a glance, recorded against modeled, accuracy, the
/// what-ifs, then the estimator.
pub fn table(r: &CostReport) -> String {
    let mut o = String::new();
    headline_lines(&mut o, r);
    // The bill's requests beside the model's prediction of the same ones
    // (what the accuracy compares); the rest of what it modeled below.
    let same = if r.modeled_compared.requests > 0 { &r.modeled_compared } else { &r.modeled };
    let row = |o: &mut String, name: &str, f: &dyn Fn(&Totals) -> String| {
        let _ = writeln!(o, "{:<22}{:>18}{:>18}", name, f(&r.recorded), f(same));
    };
    let _ = writeln!(o, "{:<22}{:>18}{:>18}", "", "recorded", "modeled");
    row(&mut o, "requests", &|t| t.requests.to_string());
    row(&mut o, "input tokens", &|t| t.input_tokens.to_string());
    row(&mut o, "cache write tokens", &|t| t.cache_creation_input_tokens.to_string());
    row(&mut o, "cache read tokens", &|t| t.cache_read_input_tokens.to_string());
    row(&mut o, "output tokens", &|t| t.output_tokens.to_string());
    row(&mut o, "cost (USD)", &|t| format!("{:.4}", t.cost_usd));
    unpriced_lines(&mut o, r);
    let a = &r.accuracy;
    if r.recorded.requests > a.requests_compared && r.modeled_compared.requests > 0 {
        let n = r.recorded.requests - a.requests_compared;
        let _ = writeln!(
            o,
            "  not rebuilt: {} of the bill ({:.4} USD) matched no request the model rebuilt",
            count(n, "request"),
            (r.recorded.cost_usd - a.recorded_cost_usd).max(0.0)
        );
    }
    if r.modeled.requests > same.requests {
        let mut more = Vec::new();
        if a.requests_without_usage > 0 {
            more.push(format!("{} without recorded usage", count(a.requests_without_usage, "modeled request")));
        }
        if a.requests_copied > 0 {
            let n = a.requests_copied;
            let copies = if n == 1 { "copy of a request" } else { "copies of requests" };
            more.push(format!("{n} {copies} another session file holds"));
        }
        let _ = writeln!(
            o,
            "  not in the bill: {}; all {} modeled: {:.4} USD (the what-ifs' baseline)",
            more.join(", "),
            r.modeled.requests,
            r.modeled.cost_usd
        );
    }
    accuracy_lines(&mut o, &r.accuracy);
    worst_lines(&mut o, r);
    if !r.what_if.is_empty() {
        let _ = writeln!(o);
        // The bill a what-if gives: the recorded one plus the modeled
        // change (the model's own error is in both of its runs); without a
        // recorded bill, the modeled figures alone.
        let bill = Some(r.recorded.cost_usd).filter(|b| *b > 0.0);
        let paid = if bill.is_some() { "you'd have paid" } else { "" };
        let head = format!("{:<32}{:>14}{:>14}{:>10}{:>17}", "what-if", "modeled USD", "delta USD", "delta", paid);
        let _ = writeln!(o, "{}", head.trim_end());
        match bill {
            Some(b) => writeln!(o, "{:<32}{:>14.4}{:>41.4} (the bill)", "(baseline)", r.modeled.cost_usd, b),
            None => writeln!(o, "{:<32}{:>14.4}", "(baseline)", r.modeled.cost_usd),
        }
        .ok();
        for w in &r.what_if {
            if let Some(why) = &w.not_applicable {
                let _ = writeln!(o, "{:<32}{why}", w.what_if);
                continue;
            }
            let paid = bill
                .map(|b| format!("{:>17.4}", crate::cost::format::would_have_paid(b, w.delta_usd)))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "{:<32}{:>14.4}{:>14}{:>10}{paid}",
                w.what_if,
                w.modeled.cost_usd,
                plain_signed_usd(w.delta_usd),
                plain_signed_pct(w.delta_pct),
            );
        }
        if let Some(b) = bill {
            let _ = writeln!(o, "  you'd have paid: the recorded bill ({b:.4} USD) plus the what-if's modeled change");
        }
        // A delta over other requests than the baseline's says so.
        let base = unpriced_requests(&r.modeled_unpriced);
        for w in &r.what_if {
            let n = unpriced_requests(&w.unpriced);
            if n < base {
                let more = count(base - n, "request");
                let _ =
                    writeln!(o, "  {} prices {more} the baseline leaves unpriced: the delta includes them", w.what_if);
            } else if n > base {
                let more = count(n - base, "more request");
                let _ = writeln!(o, "  {} leaves {more} unpriced than the baseline: the delta lacks them", w.what_if);
            }
        }
    }
    let e = &r.estimator;
    let bpt: Vec<String> = e
        .bytes_per_token
        .iter()
        .filter(|(k, _)| **k != "image")
        .map(|(k, v)| match v {
            v if v.is_finite() => format!("{k} {v:.2}"),
            // A merge of shards that fitted their own.
            v if v.is_nan() => format!("{k} n/a"),
            _ => format!("{k} -"),
        })
        .collect();
    let _ = writeln!(
        o,
        "how the model counts tokens (estimator): {}, bytes/token {}; error median {} p90 {}; {} pinned to usage, {} estimated",
        count(e.samples, "sample"),
        bpt.join(", "),
        plain_pct(e.median_relative_error),
        plain_pct(e.p90_relative_error),
        count(e.blocks_pinned, "block"),
        e.blocks_estimated
    );
    let _ = writeln!(o, "sessions share a cache per {}; {}", r.account, prices_line(&r.pricing));
    o
}

/// After the totals of [`table`]: the requests of models without a price,
/// recorded and modeled, by model (nothing when every request is priced).
fn unpriced_lines(o: &mut String, r: &CostReport) {
    if r.recorded_unpriced.is_empty() && r.modeled_unpriced.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "{:<22}{:>18}{:>18}",
        "unpriced requests",
        unpriced_requests(&r.recorded_unpriced),
        unpriced_requests(&r.modeled_unpriced)
    );
    let _ = writeln!(o, "{}", unpriced_heading(&r.pricing));
    let mut by_model: BTreeMap<&str, [Option<&Unpriced>; 2]> = BTreeMap::new();
    for u in &r.recorded_unpriced {
        by_model.entry(&u.model).or_default()[0] = Some(u);
    }
    for u in &r.modeled_unpriced {
        by_model.entry(&u.model).or_default()[1] = Some(u);
    }
    let side = |u: Option<&Unpriced>| u.map_or_else(|| "none".to_string(), requests_and_tokens);
    for (model, [rec, m]) in by_model {
        let _ = writeln!(o, "  {:<30} recorded {}; modeled {}", model, side(rec), side(m));
    }
}

/// The accuracy lines of [`table`].
fn accuracy_lines(o: &mut String, a: &Accuracy) {
    let _ = writeln!(o);
    let _ = writeln!(o, "accuracy on the same {}:", count(a.requests_compared, "request"),);
    let _ = writeln!(
        o,
        "  cost                {:.4} recorded, {:.4} modeled: {:+.2}%",
        a.recorded_cost_usd, a.modeled_cost_usd, a.cost_error_pct
    );
    let _ = writeln!(
        o,
        "  cache read error    median {} p90 {} of recorded ({} read), median {} p90 {} tokens",
        plain_pct(a.cache_read.median_relative),
        plain_pct(a.cache_read.p90_relative),
        count(a.cache_read.relative_over, "request"),
        plain_tokens(a.cache_read.median_abs_tokens),
        plain_tokens(a.cache_read.p90_abs_tokens)
    );
    let _ = writeln!(
        o,
        "  cache write error   median {} p90 {} of recorded, median {} p90 {} tokens",
        plain_pct(a.cache_write.median_relative),
        plain_pct(a.cache_write.p90_relative),
        plain_tokens(a.cache_write.median_abs_tokens),
        plain_tokens(a.cache_write.p90_abs_tokens)
    );
    let h = &a.hits;
    let _ = writeln!(
        o,
        "  cache hit agreement {} both, {} recorded only, {} modeled only, {} neither",
        h.both, h.recorded_only, h.modeled_only, h.neither
    );
}

/// The self-contained HTML report.
pub fn html(r: &CostReport) -> String {
    super::html::render(r)
}
