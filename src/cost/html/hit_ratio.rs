//! The cache hit ratio per turn: one small panel per session (up to
//! [`MAX_PANELS`], those with the most requests), modeled against recorded,
//! sampled to at most [`MAX_POINTS`] points per series.
//!
//! Reads the report's turns and sessions; writes SVG only.

use super::chart::{Swatch, legend, nice_axis, sample, svg_open};
use super::page::section;
use super::text::{C, E, clip};
use super::{MAX_PANELS, MAX_POINTS, MODL, REC, W, hit};
use crate::cost::format::int;
use crate::cost::modeled::{CostReport, TurnRow};
use std::fmt::Write as _;

/// Sessions shown: up to [`MAX_PANELS`] with the most requests (ties: the
/// earlier session), in session order; with each its turns in order.
pub(super) fn panels(r: &CostReport) -> Vec<(usize, Vec<&TurnRow>)> {
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

pub(super) fn path_of(o: &mut String, pts: &[Option<(f64, f64)>], color: &str, dashed: bool) {
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

pub(super) fn hit_ratio_chart(o: &mut String, r: &CostReport) {
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
        panel(o, r, *si, turns, (px, py, pw, ph));
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

/// One session's panel in the frame `(x, y, width, height)`.
fn panel(o: &mut String, r: &CostReport, si: usize, turns: &[&TurnRow], frame: (f64, f64, f64, f64)) {
    let (px, py, pw, ph) = frame;
    let (x0, x1, y0, y1) = (px + 44.0, px + pw - 14.0, py + 38.0, py + ph - 30.0);
    let s = r.sessions.get(si);
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
    for i in x_ticks(n) {
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

/// The request indices labelled on a panel's x axis of `n` requests: the
/// first, the last, and a nice step between.
fn x_ticks(n: usize) -> Vec<usize> {
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
    ticks
}
