//! The what-if comparison: one bar per scenario against the modeled
//! baseline (cheaper green, dearer red) and the table of their totals.
//!
//! Reads the report's what-if results; simulating them is `modeled`'s.

use super::chart::{Swatch, legend, nice_axis, svg_open, x_axis_usd};
use super::page::{row, section};
use super::text::{C, E, clip};
use super::{BASE, CHEAPER, DEARER, W, finite, totals_hit};
use crate::cost::format::{int, opt_pct, signed_pct, signed_usd, usd};
use crate::cost::modeled::CostReport;
use std::fmt::Write as _;

/// The label of a what-if bar: its cost and the delta against the baseline.
pub fn what_if_label(modeled_usd: f64, delta_usd: f64, delta_pct: f64) -> String {
    format!("{} ({}, {})", usd(modeled_usd), signed_usd(delta_usd), signed_pct(delta_pct))
}

pub(super) fn what_if_section(o: &mut String, r: &CostReport) {
    section(o, "what-if", "What-if comparison");
    if r.what_if.is_empty() {
        o.push_str(
            "<p id=\"what-if-none\">No what-if scenario in this report (add <code>--what-if</code>, e.g. \
             <code>--what-if ttl=1h</code>).</p>\n</section>\n",
        );
        return;
    }
    let base = r.modeled.cost_usd;
    // In the payer's terms first: the bill each what-if would have made.
    let bill = r.recorded.cost_usd;
    if bill > 0.0 {
        o.push_str("<ul id=\"what-if-paid\">\n");
        for w in r.what_if.iter().filter(|w| w.not_applicable.is_none()) {
            w!(
                o,
                "<li><code>{}</code>: you would have paid <b>{}</b> instead of {} ({})</li>\n",
                E(&w.what_if),
                usd(crate::cost::format::would_have_paid(bill, w.delta_usd)),
                usd(bill),
                signed_pct(w.delta_pct)
            );
        }
        o.push_str(
            "</ul>\n<p class=\"note\">The recorded bill plus the change the model gives each scenario; the \
             chart and the table show the model's own figures.</p>\n",
        );
    }
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
            Some(_) if k > 0 && r.what_if[k - 1].not_applicable.is_some() => {
                r.what_if[k - 1].not_applicable.clone().unwrap_or_default()
            }
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
    o.push_str("</svg>\n");
    what_if_table(o, r);
    o.push_str("</tbody></table>\n</section>\n");
}

/// The table of the baseline and every what-if.
fn what_if_table(o: &mut String, r: &CostReport) {
    let base = r.modeled.cost_usd;
    // The recorded bill plus each what-if's modeled change (none without a
    // recorded bill).
    let bill = Some(r.recorded.cost_usd).filter(|b| *b > 0.0);
    let paid = |delta: f64| bill.map(|b| usd(crate::cost::format::would_have_paid(b, delta))).unwrap_or_default();
    o.push_str("<table id=\"what-if-table\"><thead><tr><th>Scenario</th><th>Modeled USD</th><th>Δ USD</th><th>Δ %</th><th>You'd have paid</th><th>Cache read tokens</th><th>Cache write tokens</th><th>Hit ratio</th></tr></thead><tbody>\n");
    let m = &r.modeled;
    row(
        o,
        &[
            "baseline (modeled)",
            &usd(base),
            "",
            "",
            &bill.map(|b| format!("{} (the bill)", usd(b))).unwrap_or_default(),
            &int(m.cache_read_input_tokens),
            &int(m.cache_creation_input_tokens),
            &opt_pct(totals_hit(m)),
        ],
    );
    for wi in &r.what_if {
        let t = &wi.modeled;
        if let Some(why) = &wi.not_applicable {
            row(o, &[&wi.what_if, why, "", "", "", "", "", ""]);
            continue;
        }
        row(
            o,
            &[
                &wi.what_if,
                &usd(t.cost_usd),
                &signed_usd(wi.delta_usd),
                &signed_pct(wi.delta_pct),
                &paid(wi.delta_usd),
                &int(t.cache_read_input_tokens),
                &int(t.cache_creation_input_tokens),
                &opt_pct(totals_hit(t)),
            ],
        );
    }
}
