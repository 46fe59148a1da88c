//! The HTML report of `ctxasm cost --html`: one self-contained HTML5 page.
//!
//! Nothing is loaded from anywhere: the CSS is inline, the charts are inline
//! `<svg>` drawn here, there is no script, and a `Content-Security-Policy`
//! meta tag forbids every fetch. Every string from the data (session ids,
//! projects, models, what-if names, diagnostics) is HTML-escaped.
//!
//! Sections: summary (recorded against modeled, accuracy, estimator,
//! pricing, account), the cache hit ratio per turn of up to
//! [`MAX_PANELS`] sessions, the cost of the [`MAX_BARS`] most expensive
//! sessions, the cost by category, the what-ifs, every session, the
//! diagnostics.
//!
//! The page is a pure function of the report (same report, same bytes).
//! Coordinates are written with one decimal and never non-finite; a series
//! longer than [`MAX_POINTS`] is sampled at evenly spaced requests.

use super::format::{fixed, int, opt_pct, pct, signed_pct, signed_usd, usd};
use super::modeled::{CostReport, SessionCost, TurnRow};
use super::tokens::TokenCounts;
use super::usage::Totals;
use std::fmt::{self, Write as _};

/// Sessions in the hit-ratio chart (those with the most requests).
pub const MAX_PANELS: usize = 12;
/// Points per series in the hit-ratio chart.
pub const MAX_POINTS: usize = 2000;
/// Sessions in the cost-by-session chart (by modeled cost).
pub const MAX_BARS: usize = 20;
/// Diagnostics listed (the rest are counted).
const MAX_DIAGNOSTICS: usize = 200;

const REC: &str = "#d9772b";
const MODL: &str = "#2f6db3";
const BASE: &str = "#7a7a7a";
const CHEAPER: &str = "#2e8b57";
const DEARER: &str = "#c0392b";

/// Width of every chart.
const W: f64 = 920.0;

/// `write!` into a `String`, which cannot fail.
macro_rules! w {
    ($o:expr, $($arg:tt)*) => {
        let _ = write!($o, $($arg)*);
    };
}

/// One self-contained page.
pub fn render(r: &CostReport) -> String {
    let mut o = String::with_capacity(32 * 1024 + r.sessions.len() * 400 + r.turns.len().min(50_000) * 24);
    head(&mut o);
    summary(&mut o, r);
    hit_ratio_chart(&mut o, r);
    cost_by_session_chart(&mut o, r);
    category_chart(&mut o, r);
    what_if_section(&mut o, r);
    sessions_table(&mut o, r);
    diagnostics(&mut o, r);
    o.push_str("</main>\n</body>\n</html>\n");
    o
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/// `s` escaped for HTML text and attribute values (also valid in SVG).
pub fn escape(s: &str) -> String {
    E(s).to_string()
}

/// Escaped text, for `{}` in `w!`.
struct E<'a>(&'a str);

impl fmt::Display for E<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut start = 0;
        for (i, c) in self.0.char_indices() {
            let rep = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&#39;",
                _ => continue,
            };
            f.write_str(&self.0[start..i])?;
            f.write_str(rep)?;
            start = i + c.len_utf8();
        }
        f.write_str(&self.0[start..])
    }
}

/// At most `n` characters of `s`, with `…` when cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A coordinate: one decimal, 0 when not finite.
struct C(f64);

impl fmt::Display for C {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() { (self.0 * 10.0).round() / 10.0 } else { 0.0 };
        let v = if v == 0.0 { 0.0 } else { v };
        write!(f, "{v:.1}")
    }
}

/// `a / b`, `None` when `b` is 0.
fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn hit(t: &TokenCounts) -> Option<f64> {
    ratio(t.cache_read, t.total_input())
}

fn totals_hit(t: &Totals) -> Option<f64> {
    ratio(t.cache_read_input_tokens, t.input_tokens + t.cache_creation_input_tokens + t.cache_read_input_tokens)
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

// ---------------------------------------------------------------------------
// Page
// ---------------------------------------------------------------------------

const CSS: &str = "\
:root{--rec:#d9772b;--mod:#2f6db3;--fg:#1d1d1f;--mute:#666;--line:#ddd;--bg:#fff;--alt:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:980px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.note{color:var(--mute);margin:4px 0 10px}
nav a{margin-right:12px;color:var(--mod)}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
td.t,th.t{text-align:left}
thead th{background:var(--alt);font-weight:600}
tbody tr:nth-child(even){background:var(--alt)}
.grid{display:flex;flex-wrap:wrap;gap:0 32px}
.ok{color:#2e7d32;font-weight:600}.miss{color:#c62828;font-weight:600}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}\ntd.mono,td.nw{white-space:nowrap}\n.scroll{overflow-x:auto}
figure{margin:8px 0 16px}figcaption{color:var(--mute);font-size:13px}
svg{max-width:100%;height:auto;font-family:inherit}
svg text{fill:var(--fg);font-size:11px}
svg .ax{stroke:#999;stroke-width:1}svg .gr{stroke:#e6e6e6;stroke-width:1}
svg .lbl{fill:var(--mute)}
details{margin:8px 0}ul.diag{font-size:12px;max-height:420px;overflow:auto}
";

fn head(o: &mut String) {
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

fn section(o: &mut String, id: &str, title: &str) {
    w!(o, "<section id=\"{id}\">\n<h2>{}</h2>\n", E(title));
}

fn row(o: &mut String, cells: &[&str]) {
    o.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        w!(o, "<{tag}>{}</{tag}>", E(c));
    }
    o.push_str("</tr>\n");
}

fn met(o: &mut String, label: &str, applies: bool, ok: bool) {
    let (class, text) = match (applies, ok) {
        (false, _) => ("", "n/a (no recorded usage)"),
        (true, true) => ("ok", "met"),
        (true, false) => ("miss", "missed"),
    };
    w!(o, "<tr><th>{}</th><td class=\"{class}\">{text}</td></tr>\n", E(label));
}

fn summary(o: &mut String, r: &CostReport) {
    section(o, "summary", "Summary");
    let (rec, m) = (&r.recorded, &r.modeled);
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
            "Cache write 5m / 1h (modeled)",
            "–",
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
    o.push_str("</tbody>\n</table>\n");
    o.push_str(
        "<p class=\"note\">Recorded: every request with usage in the transcripts. Modeled: every assembled \
         request through the cache simulator.</p>\n<div class=\"grid\">\n<div>\n<h3>Accuracy</h3>\n<table id=\"summary-accuracy\"><tbody>\n",
    );
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
    let applies = a.requests_compared > 0;
    met(o, "Target: cost within 2 %", applies, a.cost_within_2pct);
    met(o, "Target: median cache-read error ≤ 5 %", applies, a.median_read_error_within_5pct);
    o.push_str("</tbody></table>\n</div>\n<div>\n<h3>Estimator</h3>\n<table id=\"summary-estimator\"><tbody>\n");
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
    o.push_str("</tbody></table>\n</div>\n<div>\n<h3>Scope</h3>\n<table id=\"summary-scope\"><tbody>\n");
    row(o, &["Pricing source", &r.pricing.source]);
    row(o, &["Pricing date", &r.pricing.date]);
    row(o, &["Account scope", &r.account]);
    row(o, &["Sessions", &int(r.sessions.len() as u64)]);
    row(o, &["Rejected requests (> 4 breakpoints)", &int(r.rejected_requests)]);
    row(o, &["Diagnostics", &int(r.diagnostics.len() as u64)]);
    o.push_str("</tbody></table>\n</div>\n</div>\n</section>\n");
}

// ---------------------------------------------------------------------------
// Chart helpers
// ---------------------------------------------------------------------------

fn svg_open(o: &mut String, id: &str, h: f64, label: &str) {
    w!(
        o,
        "<svg id=\"{id}\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">\n<title>{}</title>\n",
        E(label),
        C(W),
        C(h),
        C(W),
        C(h),
        E(label)
    );
}

/// A step of 1, 2 or 5 × 10ⁿ giving about `n` intervals up to `max`, and
/// the axis top (a multiple of it, ≥ `max`). `(1, 0.25)` without data.
fn nice_axis(max: f64, n: usize) -> (f64, f64) {
    if !max.is_finite() || max <= 0.0 {
        return (1.0, 0.25);
    }
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let step = mag
        * if f <= 1.0 {
            1.0
        } else if f <= 2.0 {
            2.0
        } else if f <= 5.0 {
            5.0
        } else {
            10.0
        };
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    if step.is_finite() && step > 0.0 && top.is_finite() { (top, step) } else { (1.0, 0.25) }
}

/// A tick label in USD with as many decimals as `step` needs.
fn usd_tick(v: f64, step: f64) -> String {
    let d = if step >= 1.0 { 0 } else { (-step.log10().floor()).clamp(0.0, 8.0) as usize };
    format!("${}", fixed(v, d))
}

/// Legend items: label, colour, and `Swatch`.
#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    Box,
    Line,
    Dashed,
}

fn legend(o: &mut String, x: f64, y: f64, items: &[(&str, &str, Swatch)]) {
    let mut x = x;
    for &(label, color, swatch) in items {
        if swatch != Swatch::Box {
            let dash = if swatch == Swatch::Dashed { " stroke-dasharray=\"4 3\"" } else { "" };
            w!(
                o,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                C(x),
                C(y - 4.0),
                C(x + 18.0),
                C(y - 4.0)
            );
        } else {
            w!(o, "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{color}\"/>", C(x), C(y - 9.0));
        }
        w!(o, "<text x=\"{}\" y=\"{}\">{}</text>\n", C(x + 24.0), C(y), E(label));
        x += 34.0 + 7.0 * label.chars().count() as f64;
    }
}

/// Indices of at most `max` evenly spaced items of `n` (all when `n ≤ max`).
fn sample(n: usize, max: usize) -> Vec<usize> {
    if n <= max || max < 2 {
        return (0..n.min(max.max(1))).collect();
    }
    (0..max).map(|k| k * (n - 1) / (max - 1)).collect()
}

// ---------------------------------------------------------------------------
// Cache hit ratio per turn
// ---------------------------------------------------------------------------

/// Sessions shown: up to [`MAX_PANELS`] with the most requests (ties: the
/// earlier session), in session order; with each its turns in order.
fn panels(r: &CostReport) -> Vec<(usize, Vec<&TurnRow>)> {
    let mut by: Vec<Vec<&TurnRow>> = vec![Vec::new(); r.sessions.len()];
    for t in &r.turns {
        if let Some(v) = by.get_mut(t.session) {
            v.push(t);
        }
    }
    let mut order: Vec<usize> = (0..by.len()).filter(|&i| by.get(i).is_some_and(|v| !v.is_empty())).collect();
    order.sort_by(|&a, &b| {
        let (la, lb) = (by.get(a).map_or(0, Vec::len), by.get(b).map_or(0, Vec::len));
        lb.cmp(&la).then(a.cmp(&b))
    });
    order.truncate(MAX_PANELS);
    order.sort_unstable();
    order.into_iter().map(|i| (i, by.get_mut(i).map(std::mem::take).unwrap_or_default())).collect()
}

fn path_of(o: &mut String, pts: &[Option<(f64, f64)>], color: &str, dashed: bool) {
    let mut d = String::new();
    let mut pen = false;
    for p in pts {
        match p {
            Some((x, y)) => {
                w!(d, "{}{} {}", if pen { 'L' } else { 'M' }, C(*x), C(*y));
                pen = true;
            }
            None => pen = false,
        }
    }
    if d.is_empty() {
        return;
    }
    let dash = if dashed { " stroke-dasharray=\"4 3\"" } else { "" };
    w!(o, "<path d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"{dash}/>\n");
}

fn hit_ratio_chart(o: &mut String, r: &CostReport) {
    section(o, "hit-ratio", "Cache hit ratio per turn");
    let ps = panels(r);
    let (cols, pw, ph, top) = (3usize, 300.0, 200.0, 34.0);
    let rows = ps.len().div_ceil(cols).max(1);
    let h = top + rows as f64 * ph + 6.0;
    let label = format!(
        "Cache hit ratio (cache read / whole input) per request, modeled and recorded, for {} session{}",
        ps.len(),
        if ps.len() == 1 { "" } else { "s" }
    );
    svg_open(o, "chart-hit-ratio", h, &label);
    legend(o, 12.0, 20.0, &[("modeled", MODL, Swatch::Line), ("recorded", REC, Swatch::Dashed)]);
    w!(
        o,
        "<text x=\"{}\" y=\"20\" text-anchor=\"end\" class=\"lbl\">y: cache read / whole input · x: request # in session</text>\n",
        C(W - 10.0)
    );
    if ps.is_empty() {
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">No requests to plot.</text>\n",
            C(W / 2.0),
            C(top + ph / 2.0)
        );
    }
    for (k, (si, turns)) in ps.iter().enumerate() {
        let px = 10.0 + (k % cols) as f64 * pw;
        let py = top + (k / cols) as f64 * ph;
        let (x0, x1, y0, y1) = (px + 44.0, px + pw - 14.0, py + 38.0, py + ph - 30.0);
        let s = r.sessions.get(*si);
        let name = s.map_or_else(|| format!("session {si}"), |s| clip(&s.session_id, 12));
        let project = s.map_or(String::new(), |s| clip(&s.project, 22));
        let full = s.map_or_else(|| format!("session {si}"), |s| format!("{} ({})", s.session_id, s.project));
        w!(o, "<g class=\"panel\"><title>{}</title>\n", E(&full));
        w!(o, "<text x=\"{}\" y=\"{}\" font-weight=\"600\">{}</text>", C(px + 4.0), C(py + 14.0), E(&name));
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" class=\"lbl\">{} · {} req.</text>\n",
            C(px + 4.0),
            C(py + 27.0),
            E(&project),
            int(turns.len() as u64)
        );
        for (v, lbl) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
            let y = y1 - v * (y1 - y0);
            w!(o, "<line class=\"gr\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x0), C(y), C(x1), C(y));
            w!(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"lbl\">{lbl}</text>\n", C(x0 - 4.0), C(y + 4.0));
        }
        w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x0), C(y1), C(x1), C(y1));
        w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y0), C(x0), C(y1));
        let n = turns.len();
        let xat = |i: usize| if n <= 1 { (x0 + x1) / 2.0 } else { x0 + i as f64 / (n - 1) as f64 * (x1 - x0) };
        let yat = |v: f64| y1 - v.clamp(0.0, 1.0) * (y1 - y0);
        let mut ticks = vec![0usize];
        if n > 1 {
            let (_, step) = nice_axis(n as f64, 4);
            let step = (step as usize).max(1);
            let mut t = step;
            while t < n {
                if (t as f64) < n as f64 - step as f64 * 0.5 {
                    ticks.push(t - 1);
                }
                t += step;
            }
            ticks.push(n - 1);
        }
        for i in ticks {
            let x = xat(i);
            w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x), C(y1), C(x), C(y1 + 4.0));
            w!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">{}</text>\n",
                C(x),
                C(y1 + 16.0),
                int(i as u64 + 1)
            );
        }
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">request #</text>\n",
            C((x0 + x1) / 2.0),
            C(y1 + 27.0)
        );
        let idx = sample(n, MAX_POINTS);
        let modeled: Vec<Option<(f64, f64)>> =
            idx.iter().map(|&i| turns.get(i).and_then(|t| hit(&t.modeled)).map(|v| (xat(i), yat(v)))).collect();
        let recorded: Vec<Option<(f64, f64)>> = idx
            .iter()
            .map(|&i| turns.get(i).and_then(|t| t.recorded.as_ref()).and_then(hit).map(|v| (xat(i), yat(v))))
            .collect();
        path_of(o, &modeled, MODL, false);
        path_of(o, &recorded, REC, true);
        if idx.len() <= 80 {
            for (pts, color) in [(&modeled, MODL), (&recorded, REC)] {
                for (x, y) in pts.iter().flatten() {
                    w!(o, "<circle cx=\"{}\" cy=\"{}\" r=\"2.2\" fill=\"{color}\"/>", C(*x), C(*y));
                }
            }
            o.push('\n');
        }
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    let shown = ps.len();
    let total = r.sessions.len();
    w!(
        o,
        "<p class=\"note\">{} of {} sessions (those with the most requests), in report order; series longer than {} requests are sampled.</p>\n</section>\n",
        int(shown as u64),
        int(total as u64),
        int(MAX_POINTS as u64)
    );
}

// ---------------------------------------------------------------------------
// Cost by session
// ---------------------------------------------------------------------------

fn top_sessions(r: &CostReport) -> Vec<&SessionCost> {
    let mut v: Vec<&SessionCost> = r.sessions.iter().collect();
    v.sort_by(|a, b| finite(b.modeled_cost_usd).total_cmp(&finite(a.modeled_cost_usd)));
    v.truncate(MAX_BARS);
    v
}

/// The x axis of a horizontal bar chart: grid, ticks, labels.
fn x_axis_usd(o: &mut String, x0: f64, x1: f64, y0: f64, y1: f64, axis: (f64, f64)) {
    let (top, step) = axis;
    let n = (top / step).round().clamp(1.0, 20.0) as usize;
    for k in 0..=n {
        let v = step * k as f64;
        let x = x0 + v / top * (x1 - x0);
        w!(o, "<line class=\"gr\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x), C(y0), C(x), C(y1));
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">{}</text>\n",
            C(x),
            C(y1 + 15.0),
            E(&usd_tick(v, step))
        );
    }
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y1), C(x1), C(y1));
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y0), C(x0), C(y1));
    w!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">cost (USD)</text>\n",
        C((x0 + x1) / 2.0),
        C(y1 + 31.0)
    );
}

fn cost_by_session_chart(o: &mut String, r: &CostReport) {
    section(o, "cost-by-session", "Cost by session");
    let top = top_sessions(r);
    let (x0, x1, y0, rh) = (250.0, W - 110.0, 34.0, 32.0);
    let y1 = y0 + rh * top.len().max(1) as f64 + 6.0;
    let h = y1 + 42.0;
    let label = format!(
        "Recorded and modeled cost in USD of the {} session{} with the highest modeled cost",
        top.len(),
        if top.len() == 1 { "" } else { "s" }
    );
    svg_open(o, "chart-cost-by-session", h, &label);
    legend(o, 12.0, 20.0, &[("recorded", REC, Swatch::Box), ("modeled", MODL, Swatch::Box)]);
    let max = top.iter().map(|s| finite(s.recorded_cost_usd).max(finite(s.modeled_cost_usd))).fold(0.0, f64::max);
    let axis = nice_axis(max, 5);
    x_axis_usd(o, x0, x1, y0, y1, axis);
    if top.is_empty() {
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">No sessions.</text>\n",
            C((x0 + x1) / 2.0),
            C(y0 + 20.0)
        );
    }
    let xw = |v: f64| (finite(v).max(0.0) / axis.0 * (x1 - x0)).max(0.0);
    for (k, s) in top.iter().enumerate() {
        let y = y0 + 4.0 + rh * k as f64;
        w!(
            o,
            "<g><title>{} ({}): recorded {}, modeled {}</title>",
            E(&s.session_id),
            E(&s.project),
            usd(s.recorded_cost_usd),
            usd(s.modeled_cost_usd)
        );
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            C(x0 - 8.0),
            C(y + 11.0),
            E(&clip(&s.session_id, 13))
        );
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"lbl\">{}</text>\n",
            C(x0 - 8.0),
            C(y + 24.0),
            E(&clip(&s.project, 30))
        );
        for (j, (v, color)) in [(s.recorded_cost_usd, REC), (s.modeled_cost_usd, MODL)].into_iter().enumerate() {
            let by = y + j as f64 * 13.0;
            w!(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" fill=\"{color}\"/>", C(x0), C(by), C(xw(v)));
            w!(o, "<text x=\"{}\" y=\"{}\" class=\"lbl\">{}</text>", C(x0 + xw(v) + 4.0), C(by + 10.0), E(&usd(v)));
        }
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    w!(
        o,
        "<p class=\"note\">Top {} of {} sessions by modeled cost. Recorded cost counts the requests with recorded usage.</p>\n</section>\n",
        int(top.len() as u64),
        int(r.sessions.len() as u64)
    );
}

// ---------------------------------------------------------------------------
// Cost by category
// ---------------------------------------------------------------------------

fn category_chart(o: &mut String, r: &CostReport) {
    section(o, "cost-by-category", "Cost by category");
    let (rc, mc) = (&r.recorded_by_category, &r.modeled_by_category);
    let cats = [
        ("input", rc.input, mc.input),
        ("cache write 5m", rc.cache_write_5m, mc.cache_write_5m),
        ("cache write 1h", rc.cache_write_1h, mc.cache_write_1h),
        ("cache read", rc.cache_read, mc.cache_read),
        ("output", rc.output, mc.output),
    ];
    let h = 340.0;
    let (x0, x1, y0, y1) = (80.0, W - 20.0, 40.0, h - 50.0);
    svg_open(
        o,
        "chart-cost-by-category",
        h,
        "Cost in USD by category (input, cache writes 5m and 1h, cache reads, output), recorded and modeled, over the compared requests",
    );
    legend(o, 12.0, 20.0, &[("recorded", REC, Swatch::Box), ("modeled", MODL, Swatch::Box)]);
    let max = cats.iter().map(|c| finite(c.1).max(finite(c.2))).fold(0.0, f64::max);
    let (top, step) = nice_axis(max, 5);
    let n = (top / step).round().clamp(1.0, 20.0) as usize;
    for k in 0..=n {
        let v = step * k as f64;
        let y = y1 - v / top * (y1 - y0);
        w!(o, "<line class=\"gr\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x0), C(y), C(x1), C(y));
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"lbl\">{}</text>\n",
            C(x0 - 6.0),
            C(y + 4.0),
            E(&usd_tick(v, step))
        );
    }
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x0), C(y1), C(x1), C(y1));
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y0), C(x0), C(y1));
    w!(
        o,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\" class=\"lbl\">cost (USD)</text>\n",
        C((y0 + y1) / 2.0)
    );
    let gw = (x1 - x0) / cats.len() as f64;
    let bw = gw * 0.32;
    let yh = |v: f64| finite(v).max(0.0) / top * (y1 - y0);
    for (k, (name, rv, mv)) in cats.iter().enumerate() {
        let gx = x0 + gw * k as f64 + gw / 2.0;
        w!(o, "<g><title>{}: recorded {}, modeled {}</title>", E(name), usd(*rv), usd(*mv));
        for (j, (v, color)) in [(*rv, REC), (*mv, MODL)].into_iter().enumerate() {
            let bx = gx - bw - 2.0 + j as f64 * (bw + 4.0);
            let hh = yh(v);
            w!(
                o,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\"/>",
                C(bx),
                C(y1 - hh),
                C(bw),
                C(hh)
            );
            w!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">{}</text>",
                C(bx + bw / 2.0),
                C(y1 - hh - 4.0),
                E(&usd(v))
            );
        }
        w!(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>\n", C(gx), C(y1 + 18.0), E(name));
    }
    o.push_str("</svg>\n<table id=\"category-table\"><thead><tr><th>Category</th><th>Recorded</th><th>Modeled</th></tr></thead><tbody>\n");
    for (name, rv, mv) in cats {
        row(o, &[name, &usd(rv), &usd(mv)]);
    }
    o.push_str("</tbody></table>\n<p class=\"note\">Over the requests that have both recorded and modeled usage.</p>\n</section>\n");
}

// ---------------------------------------------------------------------------
// What-ifs
// ---------------------------------------------------------------------------

/// The label of a what-if bar: its cost and the delta against the baseline.
pub fn what_if_label(modeled_usd: f64, delta_usd: f64, delta_pct: f64) -> String {
    format!("{} ({}, {})", usd(modeled_usd), signed_usd(delta_usd), signed_pct(delta_pct))
}

fn what_if_section(o: &mut String, r: &CostReport) {
    section(o, "what-if", "What-if comparison");
    if r.what_if.is_empty() {
        o.push_str(
            "<p id=\"what-if-none\">No what-if scenario in this report (add <code>--what-if</code>, e.g. \
             <code>--what-if ttl=1h</code>).</p>\n</section>\n",
        );
        return;
    }
    let base = r.modeled.cost_usd;
    let (x0, x1, y0, rh) = (230.0, W - 230.0, 34.0, 26.0);
    let n = r.what_if.len() + 1;
    let y1 = y0 + rh * n as f64 + 4.0;
    let h = y1 + 42.0;
    svg_open(
        o,
        "chart-what-if",
        h,
        &format!(
            "Modeled cost in USD of the baseline and of {} what-if scenario{}, with the change against the baseline",
            r.what_if.len(),
            if r.what_if.len() == 1 { "" } else { "s" }
        ),
    );
    legend(
        o,
        12.0,
        20.0,
        &[("baseline", BASE, Swatch::Box), ("cheaper", CHEAPER, Swatch::Box), ("more expensive", DEARER, Swatch::Box)],
    );
    let max = r.what_if.iter().map(|w| finite(w.modeled.cost_usd)).fold(finite(base), f64::max);
    let axis = nice_axis(max, 5);
    x_axis_usd(o, x0, x1, y0, y1, axis);
    let xw = |v: f64| (finite(v).max(0.0) / axis.0 * (x1 - x0)).max(0.0);
    let bars = std::iter::once(("baseline (modeled)".to_string(), base, None))
        .chain(r.what_if.iter().map(|w| (w.what_if.clone(), w.modeled.cost_usd, Some((w.delta_usd, w.delta_pct)))));
    for (k, (name, v, delta)) in bars.enumerate() {
        let y = y0 + 4.0 + rh * k as f64;
        let color = match delta {
            None => BASE,
            Some((d, _)) if d < 0.0 => CHEAPER,
            Some((d, _)) if d > 0.0 => DEARER,
            Some(_) => BASE,
        };
        let text = match delta {
            None => usd(v),
            Some((d, p)) => what_if_label(v, d, p),
        };
        w!(o, "<g class=\"what-if\"><title>{}: {}</title>", E(&name), E(&text));
        w!(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", C(x0 - 8.0), C(y + 13.0), E(&clip(&name, 32)));
        w!(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"18\" fill=\"{color}\"/>", C(x0), C(y), C(xw(v)));
        w!(o, "<text x=\"{}\" y=\"{}\">{}</text></g>\n", C(x0 + xw(v) + 5.0), C(y + 13.0), E(&text));
    }
    let bx = x0 + xw(base);
    w!(
        o,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{BASE}\" stroke-dasharray=\"3 3\"/>\n",
        C(bx),
        C(y0),
        C(bx),
        C(y1)
    );
    o.push_str("</svg>\n<table id=\"what-if-table\"><thead><tr><th>Scenario</th><th>Modeled USD</th><th>Δ USD</th><th>Δ %</th><th>Cache read tokens</th><th>Cache write tokens</th><th>Hit ratio</th></tr></thead><tbody>\n");
    let m = &r.modeled;
    row(
        o,
        &[
            "baseline (modeled)",
            &usd(base),
            "",
            "",
            &int(m.cache_read_input_tokens),
            &int(m.cache_creation_input_tokens),
            &opt_pct(totals_hit(m)),
        ],
    );
    for wi in &r.what_if {
        let t = &wi.modeled;
        row(
            o,
            &[
                &wi.what_if,
                &usd(t.cost_usd),
                &signed_usd(wi.delta_usd),
                &signed_pct(wi.delta_pct),
                &int(t.cache_read_input_tokens),
                &int(t.cache_creation_input_tokens),
                &opt_pct(totals_hit(t)),
            ],
        );
    }
    o.push_str("</tbody></table>\n</section>\n");
}

// ---------------------------------------------------------------------------
// Sessions, diagnostics
// ---------------------------------------------------------------------------

fn sessions_table(o: &mut String, r: &CostReport) {
    section(o, "sessions", "Sessions");
    if r.sessions.is_empty() {
        o.push_str("<p>No sessions.</p>\n</section>\n");
        return;
    }
    o.push_str(
        "<div class=\"scroll\"><table id=\"sessions-table\"><thead><tr><th class=\"t\">Session</th><th class=\"t\">Project</th><th>Requests</th>\
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
            "<tr><td class=\"t mono\">{}</td><td class=\"t\">{}</td><td>{}</td><td class=\"t nw\">{by}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            E(&s.session_id),
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

fn diagnostics(o: &mut String, r: &CostReport) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(E("a<b").to_string(), "a&lt;b");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(C(f64::INFINITY).to_string(), "0.0");
        assert_eq!(C(-0.01).to_string(), "0.0");
    }

    #[test]
    fn axes_and_samples() {
        assert_eq!(nice_axis(0.0, 5), (1.0, 0.25));
        assert_eq!(nice_axis(f64::NAN, 5), (1.0, 0.25));
        let (top, step) = nice_axis(7.3, 5);
        assert_eq!(step, 2.0);
        assert_eq!(top, 8.0);
        assert_eq!(sample(5, 10), vec![0, 1, 2, 3, 4]);
        let s = sample(10_000, 2000);
        assert_eq!(s.len(), 2000);
        assert_eq!(s.first(), Some(&0));
        assert_eq!(s.last(), Some(&9999));
        assert!(sample(0, 10).is_empty());
    }
}
