//! The two cost bar charts: the [`MAX_BARS`] sessions with the highest
//! modeled cost (recorded beside modeled), and the cost by category over
//! the compared requests, with its table.
//!
//! Reads the report's sessions and category sums; writes SVG and a table.

use super::chart::{Swatch, legend, nice_axis, svg_open, usd_tick, x_axis_usd};
use super::page::{row, section};
use super::text::{C, E, clip};
use super::{MAX_BARS, MODL, REC, W, finite};
use crate::cost::format::{int, usd};
use crate::cost::modeled::{CostReport, SessionCost};
use std::fmt::Write as _;

pub(super) fn top_sessions(r: &CostReport) -> Vec<&SessionCost> {
    let mut v: Vec<&SessionCost> = r.sessions.iter().collect();
    v.sort_by(|a, b| finite(b.modeled_cost_usd).total_cmp(&finite(a.modeled_cost_usd)));
    v.truncate(MAX_BARS);
    v
}

pub(super) fn cost_by_session_chart(o: &mut String, r: &CostReport) {
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

pub(super) fn category_chart(o: &mut String, r: &CostReport) {
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
